//! File and directory operations of the execd API (protocol.md §3, §3.1–§3.3).
//!
//! Every path a client sends goes through [`crate::paths`], so it is confined to the
//! sandbox root, and every path sent back is a sandbox path. Filesystem errors map to
//! the caller's mistakes where they are (404, 403, 409, 400); 5xx is left for faults of
//! the agent itself.
//!
//! Submodules: [`meta`] (FileInfo, modes, owners), [`ops`] (stat, delete, chmod, move,
//! search, replace, directories), [`upload`] and [`download`] (streamed bodies).

pub mod atomic;
pub mod download;
pub mod meta;
pub mod ops;
pub mod read_ahead;
pub mod upload;

use std::io;
use std::path::Path;

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;

use crate::error::ApiError;
use crate::SharedState;

pub use meta::FileInfo;

/// The file routes, spelled as in `openapi/execd.yaml`.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/files/info"),
    ("DELETE", "/files"),
    ("POST", "/files/permissions"),
    ("POST", "/files/mv"),
    ("GET", "/files/search"),
    ("POST", "/files/replace"),
    ("POST", "/files/upload"),
    ("GET", "/files/download"),
    ("GET", "/directories/list"),
    ("POST", "/directories"),
    ("DELETE", "/directories"),
];

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/files/info", get(ops::info))
        .route("/files", axum::routing::delete(ops::delete_files))
        .route("/files/permissions", post(ops::set_permissions))
        .route("/files/mv", post(ops::move_files))
        .route("/files/search", get(ops::search))
        .route("/files/replace", post(ops::replace))
        .route("/files/upload", post(upload::upload))
        .route("/files/download", get(download::download))
        .route("/directories/list", get(ops::list_directory))
        .route(
            "/directories",
            post(ops::make_directories).delete(ops::delete_directories),
        )
}

/// Maps a filesystem error on `sandbox_path` to the execd error shape. The message
/// names the sandbox path, never the host path.
pub fn io_error(err: &io::Error, action: &str, sandbox_path: &Path) -> ApiError {
    let message = format!("{action} {}: {err}", sandbox_path.display());
    let by_errno = err.raw_os_error().map(|errno| match errno {
        libc::ENOENT => (StatusCode::NOT_FOUND, "FILE_NOT_FOUND"),
        libc::EACCES | libc::EPERM | libc::EROFS => (StatusCode::FORBIDDEN, "PERMISSION_DENIED"),
        libc::EEXIST => (StatusCode::CONFLICT, "ALREADY_EXISTS"),
        libc::ENOTEMPTY => (StatusCode::CONFLICT, "DIRECTORY_NOT_EMPTY"),
        libc::ENOTDIR
        | libc::EISDIR
        | libc::EINVAL
        | libc::ENAMETOOLONG
        | libc::ELOOP
        | libc::EXDEV
        | libc::EBUSY => (StatusCode::BAD_REQUEST, "INVALID_PATH"),
        libc::ENOSPC | libc::EDQUOT => (StatusCode::INSUFFICIENT_STORAGE, "NO_SPACE"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "RUNTIME_ERROR"),
    });
    let (status, code) = by_errno.unwrap_or(match err.kind() {
        io::ErrorKind::NotFound => (StatusCode::NOT_FOUND, "FILE_NOT_FOUND"),
        io::ErrorKind::PermissionDenied => (StatusCode::FORBIDDEN, "PERMISSION_DENIED"),
        io::ErrorKind::AlreadyExists => (StatusCode::CONFLICT, "ALREADY_EXISTS"),
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => {
            (StatusCode::BAD_REQUEST, "INVALID_PATH")
        }
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "RUNTIME_ERROR"),
    });
    ApiError::new(status, code, message)
}

/// Runs blocking filesystem work off the async threads.
pub async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::runtime(format!("file operation task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_maps_to_client_statuses() {
        let p = Path::new("/x");
        let cases = [
            (libc::ENOENT, 404),
            (libc::EACCES, 403),
            (libc::EROFS, 403),
            (libc::EEXIST, 409),
            (libc::ENOTDIR, 400),
            (libc::EIO, 500),
        ];
        for (errno, status) in cases {
            let e = io_error(&io::Error::from_raw_os_error(errno), "open", p);
            assert_eq!(e.status.as_u16(), status, "errno {errno}");
            assert!(e.message.starts_with("open /x: "));
        }
    }
}
