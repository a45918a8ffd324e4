//! `POST /files/upload` (protocol.md §3.2): multipart pairs of a `metadata` JSON part and
//! a `file` part, the i-th metadata naming the destination of the i-th file.
//!
//! The body is parsed as a stream with `multer` and each file part goes straight to its
//! destination chunk by chunk, so a multi-gigabyte upload uses constant memory and is
//! not subject to the router's JSON body limit. Clients send `metadata` before its
//! `file` (all official SDKs do); a `file` that arrives before its metadata is spooled
//! to a temporary file and moved into place once the metadata comes.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};

use super::atomic::PendingFile;
use super::io_error;
use super::meta::{self, PermissionSpec};
use super::scope::{Fs, Scope};
use crate::error::ApiError;
use crate::paths::{self, Last};

/// Metadata JSON is tiny; anything bigger is not metadata.
const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Write buffer: large enough to turn small body frames into few syscalls.
const WRITE_BUFFER: usize = 1 << 20;

#[derive(Debug, Deserialize)]
struct RawMetadata {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    mode: Option<i64>,
}

#[derive(Debug)]
struct Metadata {
    path: String,
    spec: PermissionSpec,
}

fn invalid_file(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("INVALID_FILE", message)
}

fn invalid_metadata(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("INVALID_FILE_METADATA", message)
}

fn multipart_error(e: multer::Error) -> ApiError {
    invalid_file(format!("malformed multipart body: {e}"))
}

fn parse_metadata(bytes: &[u8]) -> Result<Metadata, ApiError> {
    let raw: RawMetadata = serde_json::from_slice(bytes)
        .map_err(|e| invalid_metadata(format!("metadata is not valid JSON: {e}")))?;
    let path = raw.path.unwrap_or_default();
    if path.is_empty() {
        return Err(invalid_metadata("metadata has an empty path"));
    }
    let spec = PermissionSpec {
        owner: raw.owner,
        group: raw.group,
        mode: raw.mode,
    };
    meta::validate(&spec, "INVALID_FILE_METADATA")?;
    Ok(Metadata { path, spec })
}

async fn read_metadata(mut field: multer::Field<'_>) -> Result<Metadata, ApiError> {
    let mut buf = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
        if buf.len() + chunk.len() > MAX_METADATA_BYTES {
            return Err(invalid_metadata("metadata part is larger than 64 KiB"));
        }
        buf.extend_from_slice(&chunk);
    }
    parse_metadata(&buf)
}

/// Copies one part's bytes into `out`, then flushes.
async fn copy_field<W: AsyncWrite + Unpin>(
    field: &mut multer::Field<'_>,
    out: &mut W,
    sandbox: &Path,
) -> Result<(), ApiError> {
    while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
        out.write_all(&chunk)
            .await
            .map_err(|e| io_error(&e, "write", sandbox))?;
    }
    out.flush()
        .await
        .map_err(|e| io_error(&e, "write", sandbox))
}

/// A temporary file next to a destination, made in the route's scope; removed (in
/// that scope, where its path means the same file) unless committed.
struct ScopedPending {
    fs: Fs,
    pending: Option<PendingFile>,
}

impl Drop for ScopedPending {
    fn drop(&mut self) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        match self.fs.scope {
            Scope::Agent => drop(pending),
            _ => self.fs.run_detached(move |_| drop(pending)),
        }
    }
}

/// chmod/chown of the complete temporary file, then the rename over the destination.
async fn finish(
    mut scoped: ScopedPending,
    sandbox: PathBuf,
    spec: PermissionSpec,
) -> Result<(), ApiError> {
    let Some(pending) = scoped.pending.take() else {
        return Err(ApiError::runtime("upload finished twice"));
    };
    scoped
        .fs
        .run(move |_| {
            meta::apply(pending.path(), &sandbox, &spec, "INVALID_FILE_METADATA")?;
            pending
                .commit()
                .map_err(|e| io_error(&e, "rename into", &sandbox))
        })
        .await
}

/// Resolves `user_path` and creates a temporary file next to it (parents created),
/// all in the route's scope.
async fn pending_file(
    fs: &Fs,
    user_path: String,
) -> Result<(ScopedPending, tokio::fs::File, PathBuf), ApiError> {
    let (pending, file, sandbox) = fs
        .run(move |cfg| {
            let r = paths::resolve(cfg, &user_path, Last::Follow)?;
            if let Some(parent) = r.host.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| io_error(&e, "create parent of", &r.sandbox))?;
            }
            let (pending, file) =
                PendingFile::create(&r.host).map_err(|e| io_error(&e, "open", &r.sandbox))?;
            Ok((pending, file, r.sandbox))
        })
        .await?;
    let scoped = ScopedPending {
        fs: fs.clone(),
        pending: Some(pending),
    };
    Ok((scoped, tokio::fs::File::from_std(file), sandbox))
}

/// Streams one file part to a temporary file next to its destination, fsyncs it,
/// applies chmod/chown, and renames it over the destination: an upload cut short
/// leaves the old file intact (the temporary file is removed when dropped).
async fn write_to_destination(
    fs: &Fs,
    field: &mut multer::Field<'_>,
    metadata: Metadata,
) -> Result<(), ApiError> {
    let (pending, file, sandbox) = pending_file(fs, metadata.path).await?;
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER, file);
    copy_field(field, &mut writer, &sandbox).await?;
    writer
        .into_inner()
        .sync_all()
        .await
        .map_err(|e| io_error(&e, "fsync", &sandbox))?;
    finish(pending, sandbox, metadata.spec).await
}

/// A file part received before its metadata, parked on disk.
struct Spooled {
    file: tempfile::TempPath,
}

async fn spool(field: &mut multer::Field<'_>) -> Result<Spooled, ApiError> {
    let named = tempfile::Builder::new()
        .prefix(".execd-upload-")
        .tempfile()
        .map_err(|e| ApiError::runtime(format!("cannot create spool file: {e}")))?;
    let (std_file, path) = named.into_parts();
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER, tokio::fs::File::from_std(std_file));
    copy_field(field, &mut writer, Path::new("(upload spool)")).await?;
    Ok(Spooled { file: path })
}

async fn place_spooled(fs: &Fs, spooled: Spooled, metadata: Metadata) -> Result<(), ApiError> {
    // Copy rather than rename: the spool may be on another filesystem. The copy goes
    // to a temporary file next to the destination, renamed over it once complete.
    // The spool is the agent's own file, opened as the agent.
    let mut src = tokio::fs::File::open(&spooled.file)
        .await
        .map_err(|e| ApiError::runtime(format!("cannot reopen spool file: {e}")))?;
    let (pending, dest, sandbox) = pending_file(fs, metadata.path).await?;
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER, dest);
    tokio::io::copy(&mut src, &mut writer)
        .await
        .map_err(|e| io_error(&e, "write", &sandbox))?;
    writer
        .flush()
        .await
        .map_err(|e| io_error(&e, "write", &sandbox))?;
    writer
        .into_inner()
        .sync_all()
        .await
        .map_err(|e| io_error(&e, "fsync", &sandbox))?;
    drop(spooled);
    finish(pending, sandbox, metadata.spec).await
}

/// `POST /files/upload`.
pub async fn upload(fs: Fs, request: Request) -> Result<Response, ApiError> {
    let content_type = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let boundary = multer::parse_boundary(&content_type).map_err(|_| {
        invalid_file(format!(
            "expected a multipart/form-data body with a boundary, got content type {content_type:?}"
        ))
    })?;
    let mut body = request.into_body().into_data_stream();
    let deadline = tokio::time::Instant::now() + DRAIN_TIME;
    let placed = {
        // multer borrows the body, so that what it leaves unread can be read below.
        let mut form = multer::Multipart::new(&mut body, boundary);
        let placed = place_parts(&fs, &mut form).await;
        if placed.is_err() {
            drain_form(&mut form, deadline).await;
        }
        placed
    };
    // multer stops at the closing delimiter; the bytes after it (its CRLF, an epilogue)
    // may not have been read yet. A body left unread when the answer goes out makes
    // hyper close the connection after it, without `Connection: close`, and the proxy
    // in front then closed its client's keep-alive connection the same way: the
    // client's next request on it failed ("request failed", 1 run in 4 after a refused
    // upload). So the body is always read to its end (within the bounds below).
    drain_body(&mut body, deadline).await;
    placed.map(|()| ().into_response())
}

/// How much of an upload an error cut short is still read before the answer (and how
/// long that may take, with the rest of the body): answering and closing while the
/// client still sends the body resets the connection, and the reset can overtake the
/// answer, which the server's proxy then reports as a 502 instead of the error (a write
/// refused as a user's was). Upstream's execd parses the whole form before it answers;
/// discarding runs at memory speed (about 1 s per GiB through the proxy here).
const DRAIN_BYTES: usize = 1 << 30;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads and discards what is left of `form`, within the bounds above.
async fn drain_form(form: &mut multer::Multipart<'_>, deadline: tokio::time::Instant) {
    let work = async {
        let mut left = DRAIN_BYTES;
        while let Ok(Some(mut field)) = form.next_field().await {
            while let Ok(Some(chunk)) = field.chunk().await {
                left = left.saturating_sub(chunk.len());
                if left == 0 {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout_at(deadline, work).await;
}

/// Reads and discards the rest of `body` (after the form's end), within the bounds above.
async fn drain_body(body: &mut axum::body::BodyDataStream, deadline: tokio::time::Instant) {
    use futures::StreamExt;
    let work = async {
        let mut left = DRAIN_BYTES;
        while let Some(Ok(chunk)) = body.next().await {
            left = left.saturating_sub(chunk.len());
            if left == 0 {
                return;
            }
        }
    };
    let _ = tokio::time::timeout_at(deadline, work).await;
}

/// Places every metadata/file pair of the form.
async fn place_parts(fs: &Fs, form: &mut multer::Multipart<'_>) -> Result<(), ApiError> {
    let mut waiting_metadata: VecDeque<Metadata> = VecDeque::new();
    let mut waiting_files: VecDeque<Spooled> = VecDeque::new();
    let (mut metadata_count, mut file_count) = (0usize, 0usize);

    while let Some(mut field) = form.next_field().await.map_err(multipart_error)? {
        match field.name() {
            Some("metadata") => {
                metadata_count += 1;
                let metadata = read_metadata(field).await?;
                match waiting_files.pop_front() {
                    Some(spooled) => place_spooled(fs, spooled, metadata).await?,
                    None => waiting_metadata.push_back(metadata),
                }
            }
            Some("file") => {
                file_count += 1;
                match waiting_metadata.pop_front() {
                    Some(metadata) => write_to_destination(fs, &mut field, metadata).await?,
                    None => waiting_files.push_back(spool(&mut field).await?),
                }
            }
            // Unknown parts are skipped by multer when the next field is requested.
            _ => {}
        }
    }

    if metadata_count == 0 && file_count == 0 {
        return Err(invalid_file("the form has no metadata and no file parts"));
    }
    if metadata_count == 0 {
        return Err(invalid_metadata("metadata file is missing"));
    }
    if file_count == 0 {
        return Err(ApiError::bad_request(
            "INVALID_FILE_CONTENT",
            "file is missing",
        ));
    }
    if metadata_count != file_count {
        return Err(invalid_file(format!(
            "{metadata_count} metadata parts but {file_count} file parts; they must pair up"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_accepts_nulls_and_rejects_empty_paths() {
        let m = parse_metadata(br#"{"path":"/a","owner":null,"group":null,"mode":644}"#).unwrap();
        assert_eq!(m.path, "/a");
        assert_eq!(m.spec.mode, Some(644));
        assert_eq!(
            parse_metadata(br#"{"path":""}"#).unwrap_err().code,
            "INVALID_FILE_METADATA"
        );
        assert_eq!(
            parse_metadata(b"{nope").unwrap_err().code,
            "INVALID_FILE_METADATA"
        );
        assert_eq!(
            parse_metadata(br#"{"path":"/a","mode":999}"#)
                .unwrap_err()
                .code,
            "INVALID_FILE_METADATA"
        );
    }
}
