//! File and directory operations of the execd API (protocol.md §3, §3.1–§3.3).
//!
//! Every path a client sends goes through [`crate::paths`], so it is confined to the
//! sandbox root, and every path sent back is a sandbox path. Filesystem errors map to
//! the caller's mistakes where they are (404, 403, 409, 400); 5xx is left for faults of
//! the agent itself.
//!
//! Submodules: [`meta`] (FileInfo, modes, owners), [`ops`] (stat, delete, chmod, move,
//! search, replace, directories), [`upload`] and [`download`] (streamed bodies), and
//! [`scope`]: where and as whom each request's filesystem work runs. The same
//! handlers serve the plain routes (as the agent), `/v1/filesystem/{uid}/{gid}/...`
//! (as that user, `crate::identity`) and the files of an isolated session
//! (`crate::isolated`); each family sets its [`scope::Scope`] with a route layer.

pub mod atomic;
pub mod download;
pub mod meta;
pub mod ops;
pub mod read_ahead;
pub mod scope;
pub mod upload;

use std::io;
use std::path::Path;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;

use crate::error::ApiError;
use crate::SharedState;

pub use meta::FileInfo;

/// The file and directory routes below a prefix, spelled as in `openapi/execd.yaml`.
macro_rules! file_routes {
    ($prefix:literal) => {
        &[
            ("GET", concat!($prefix, "/files/info")),
            ("DELETE", concat!($prefix, "/files")),
            ("POST", concat!($prefix, "/files/permissions")),
            ("POST", concat!($prefix, "/files/mv")),
            ("GET", concat!($prefix, "/files/search")),
            ("POST", concat!($prefix, "/files/replace")),
            ("POST", concat!($prefix, "/files/upload")),
            ("GET", concat!($prefix, "/files/download")),
            ("GET", concat!($prefix, "/directories/list")),
            ("POST", concat!($prefix, "/directories")),
            ("DELETE", concat!($prefix, "/directories")),
        ]
    };
}

/// The plain file routes (as the agent).
pub const ROUTES: &[(&str, &str)] = file_routes!("");
/// `/v1/filesystem/{uid}/{gid}/...` (protocol.md §3.6).
pub const IDENTITY_ROUTES: &[(&str, &str)] = file_routes!("/v1/filesystem/{uid}/{gid}");
/// An isolated session's files (protocol.md §3.5).
pub const SESSION_ROUTES: &[(&str, &str)] = file_routes!("/v1/isolated/session/{sessionId}");

/// The plain file routes, served as the agent.
pub fn routes() -> Router<SharedState> {
    handlers_at("").route_layer(axum::middleware::from_fn(agent_scope))
}

async fn agent_scope(mut request: Request, next: Next) -> Response {
    request.extensions_mut().insert(scope::Scope::Agent);
    next.run(request).await
}

/// The file handlers below `prefix`, without a scope: the caller adds the route
/// layer that sets one (a request that reaches a handler without one is a 500).
pub fn handlers_at(prefix: &str) -> Router<SharedState> {
    let at = |path: &str| format!("{prefix}{path}");
    Router::new()
        .route(&at("/files/info"), get(ops::info))
        .route(&at("/files"), axum::routing::delete(ops::delete_files))
        .route(&at("/files/permissions"), post(ops::set_permissions))
        .route(&at("/files/mv"), post(ops::move_files))
        .route(&at("/files/search"), get(ops::search))
        .route(&at("/files/replace"), post(ops::replace))
        .route(&at("/files/upload"), post(upload::upload))
        .route(&at("/files/download"), get(download::download))
        .route(&at("/directories/list"), get(ops::list_directory))
        .route(
            &at("/directories"),
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
