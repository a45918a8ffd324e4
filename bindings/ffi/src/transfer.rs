//! `OsbDownload` (pull iteration of a file's bytes) and `OsbUpload` (a file's body fed
//! by chunked writes).

use std::ffi::c_char;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use opensandbox_core::execd::BytesStream;
use opensandbox_core::{Error, ErrorKind, Result, WriteData, WriteEntry};
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::cancel::OsbCancel;
use crate::error::OsbError;
use crate::ops::ReadArgs;
use crate::sandbox::OsbSandbox;
use crate::util::{
    block, cancelled, guard, guard_result, invalid, opt_str, parse_args, start, token, Completion,
    OsbCallback, Payload,
};

// ---------------------------------------------------------------------------------
// Download

struct DownloadState {
    body: Option<BytesStream>,
    /// Rest of a chunk not yet copied out by `osb_download_read`.
    pending: Bytes,
    /// An error met while filling a buffer, reported by the next call.
    failed: Option<Error>,
}

/// An open download (opaque). Freed with `osb_download_free`.
pub struct OsbDownload {
    state: Arc<tokio::sync::Mutex<DownloadState>>,
    closed: CancellationToken,
}

impl Drop for OsbDownload {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// One chunk of a download (opaque). Freed with `osb_chunk_free`.
pub struct OsbChunk {
    data: Bytes,
}

impl OsbChunk {
    pub(crate) fn new(data: Bytes) -> OsbChunk {
        OsbChunk { data }
    }
}

/// Starts `GET /files/download` (`{path, range, offset, limit}`). The callback's
/// result is an owned `OsbDownload *` (free with `osb_download_free`), delivered once
/// the response headers arrived (a missing file fails here).
///
/// # Safety
/// `s` is a live `OsbSandbox`; `args_json` is NULL or NUL-terminated (borrowed for the
/// call); `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_download(
    s: *const OsbSandbox,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "sandbox.download";
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start(OP, unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let s = unsafe { s.as_ref() }.ok_or_else(|| invalid(OP, "sandbox must not be NULL"))?;
        // SAFETY: caller contract.
        let a: ReadArgs = parse_args(OP, unsafe { opt_str(OP, "args_json", args_json) }?)?;
        let sb = s.sandbox.clone();
        Ok(async move {
            let body = sb.execd().read_bytes_stream(&a.path, &a.options()).await?;
            Ok(Payload::handle(OsbDownload {
                state: Arc::new(tokio::sync::Mutex::new(DownloadState {
                    body: Some(body),
                    pending: Bytes::new(),
                    failed: None,
                })),
                closed: CancellationToken::new(),
            }))
        })
    });
}

/// The next non-empty chunk, or `None` at the end.
async fn next_chunk(
    state: &mut DownloadState,
    closed: &CancellationToken,
) -> Result<Option<Bytes>> {
    const OP: &str = "download.next";
    if !state.pending.is_empty() {
        return Ok(Some(std::mem::take(&mut state.pending)));
    }
    if let Some(e) = state.failed.take() {
        return Err(e);
    }
    loop {
        let Some(body) = state.body.as_mut() else {
            return Ok(None);
        };
        let item = tokio::select! {
            biased;
            _ = closed.cancelled() => return Err(cancelled(OP)),
            item = body.next() => item,
        };
        match item {
            Some(Ok(b)) if b.is_empty() => continue,
            Some(Ok(b)) => return Ok(Some(b)),
            Some(Err(e)) => {
                state.body = None;
                return Err(e);
            }
            None => {
                state.body = None;
                return Ok(None);
            }
        }
    }
}

fn lock_download(d: &OsbDownload) -> Result<tokio::sync::OwnedMutexGuard<DownloadState>> {
    d.state.clone().try_lock_owned().map_err(|_| {
        invalid(
            "download.next",
            "another read is already in flight on this download",
        )
    })
}

/// Waits for the next chunk. The callback's result is an owned `OsbChunk *` (free with
/// `osb_chunk_free`), or NULL at the end. One call at a time per download.
///
/// # Safety
/// `d` is a live `OsbDownload`; `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_download_next(
    d: *mut OsbDownload,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "download.next";
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start(OP, unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let d = unsafe { d.as_ref() }.ok_or_else(|| invalid(OP, "download must not be NULL"))?;
        let mut guard = lock_download(d)?;
        let closed = d.closed.clone();
        Ok(async move {
            Ok(match next_chunk(&mut guard, &closed).await? {
                Some(data) => Payload::handle(OsbChunk { data }),
                None => Payload::Null,
            })
        })
    });
}

/// Blocking read into the caller's buffer: copies up to `cap` bytes to `buf` and
/// returns the count; 0 at the end; -1 on error (`*error_out` set). The rest of a
/// chunk is kept for the next call. Not callable from a library callback.
///
/// # Safety
/// `d` is a live `OsbDownload`; `buf` points to `cap` writable bytes (may be NULL when
/// `cap` is 0); `cancel` is NULL or a live `OsbCancel`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_download_read(
    d: *mut OsbDownload,
    buf: *mut u8,
    cap: libc::size_t,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> i64 {
    const OP: &str = "download.read";
    // SAFETY: caller contract.
    unsafe {
        guard_result(OP, error_out, -1, || {
            let d = d
                .as_ref()
                .ok_or_else(|| invalid(OP, "download must not be NULL"))?;
            if cap == 0 {
                return Ok(0);
            }
            if buf.is_null() {
                return Err(invalid(OP, "buf must not be NULL"));
            }
            let mut guard = lock_download(d)?;
            let closed = d.closed.clone();
            let chunk = if guard.pending.is_empty() {
                block(OP, token(cancel), async {
                    next_chunk(&mut guard, &closed).await
                })?
            } else {
                Some(std::mem::take(&mut guard.pending))
            };
            let Some(mut chunk) = chunk else {
                return Ok(0);
            };
            let cap = cap.min(i64::MAX as usize);
            let mut n = 0;
            loop {
                let take = chunk.len().min(cap - n);
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), buf.add(n), take);
                n += take;
                guard.pending = chunk.split_off(take);
                if n == cap || !guard.pending.is_empty() {
                    break;
                }
                // Fill the rest of the buffer with chunks that are already there,
                // without waiting (fewer calls across the boundary).
                match next_chunk(&mut guard, &closed).now_or_never() {
                    Some(Ok(Some(next))) => chunk = next,
                    // An error is reported by the next call, after these bytes.
                    Some(Err(e)) => {
                        guard.failed = Some(e);
                        break;
                    }
                    // Not ready yet, or the end.
                    _ => break,
                }
            }
            Ok(n as i64)
        })
    }
}

/// Closes the download (drops the connection). A call in flight completes with a
/// `cancelled` error. NULL is a no-op.
///
/// # Safety
/// `d` is NULL or an `OsbDownload` this library handed out, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_download_free(d: *mut OsbDownload) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(d) }
}

/// The chunk's bytes, borrowed until `osb_chunk_free(c)`; stores the length in
/// `*len_out` (when not NULL). NULL (and length 0) when `c` is NULL.
///
/// # Safety
/// `c` is NULL or a live `OsbChunk`; `len_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_chunk_data(
    c: *const OsbChunk,
    len_out: *mut libc::size_t,
) -> *const u8 {
    guard(std::ptr::null(), || {
        // SAFETY: caller contract.
        let (p, n) = unsafe { c.as_ref() }
            .map_or((std::ptr::null(), 0), |c| (c.data.as_ptr(), c.data.len()));
        if !len_out.is_null() {
            // SAFETY: caller contract.
            unsafe { *len_out = n };
        }
        p
    })
}

/// Frees a chunk. NULL is a no-op.
///
/// # Safety
/// `c` is NULL or an `OsbChunk` this library handed out, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_chunk_free(c: *mut OsbChunk) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(c) }
}

// ---------------------------------------------------------------------------------
// Upload

/// Chunks queued between the host and the request body.
const UPLOAD_QUEUE: usize = 4;

#[derive(Deserialize, Default)]
#[serde(default)]
struct UploadArgs {
    path: String,
    mode: Option<u32>,
    owner: Option<String>,
    group: Option<String>,
    size: Option<u64>,
}

type ChunkSender = mpsc::Sender<std::io::Result<Bytes>>;

struct UploadInner {
    tx: Option<ChunkSender>,
    result: Option<oneshot::Receiver<Result<()>>>,
    written: u64,
    size: Option<u64>,
}

/// An upload in progress (opaque). Freed with `osb_upload_free`.
pub struct OsbUpload {
    inner: Arc<Mutex<UploadInner>>,
    /// Aborts the request when the handle is freed before `finish` completed.
    abort: CancellationToken,
}

impl Drop for OsbUpload {
    fn drop(&mut self) {
        // Not finished (the sender is still here): abort. After `finish` the request
        // completes on its own and reports to the finish callback.
        let unfinished = self.inner.lock().map_or(true, |i| i.tx.is_some());
        if unfinished {
            self.abort.cancel();
        }
    }
}

fn upload_failed(op: &str) -> Error {
    Error::new(
        ErrorKind::Stream,
        op.to_owned(),
        "the upload request already ended",
    )
}

/// Starts `POST /files/upload` of one file (`{path, mode, owner, group, size}`) whose
/// content is fed by `osb_upload_write*` and ended by `osb_upload_finish`. Returns an
/// owned handle (free with `osb_upload_free`), or NULL with `*error_out` set.
///
/// # Safety
/// `s` is a live `OsbSandbox`; `args_json` is NULL or NUL-terminated (borrowed);
/// `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_upload(
    s: *const OsbSandbox,
    args_json: *const c_char,
    error_out: *mut *mut OsbError,
) -> *mut OsbUpload {
    const OP: &str = "sandbox.upload";
    // SAFETY: caller contract.
    unsafe {
        guard_result(OP, error_out, std::ptr::null_mut(), || {
            let s = s
                .as_ref()
                .ok_or_else(|| invalid(OP, "sandbox must not be NULL"))?;
            let a: UploadArgs = parse_args(OP, opt_str(OP, "args_json", args_json)?)?;
            if a.path.trim().is_empty() {
                return Err(invalid(OP, "path is required"));
            }
            let (tx, mut rx) = mpsc::channel::<std::io::Result<Bytes>>(UPLOAD_QUEUE);
            let (done_tx, done_rx) = oneshot::channel();
            let abort = CancellationToken::new();
            let body = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
            let entry = WriteEntry {
                path: a.path,
                data: WriteData::Stream(Box::pin(body)),
                mode: a.mode,
                owner: a.owner,
                group: a.group,
            };
            let execd = s.sandbox.execd().clone();
            let stop = abort.clone();
            let rt = std::panic::catch_unwind(opensandbox_core::runtime::runtime)
                .map_err(|_| crate::util::internal(OP, "cannot start the runtime"))?;
            rt.spawn(async move {
                let r = tokio::select! {
                    biased;
                    _ = stop.cancelled() => Err(cancelled(OP)),
                    r = execd.write_files(vec![entry]) => r,
                };
                let _ = done_tx.send(r);
            });
            Ok(Box::into_raw(Box::new(OsbUpload {
                inner: Arc::new(Mutex::new(UploadInner {
                    tx: Some(tx),
                    result: Some(done_rx),
                    written: 0,
                    size: a.size,
                })),
                abort,
            })))
        })
    }
}

/// Takes what a write needs: the sender and (for error reporting) the result receiver
/// stays in place.
fn prepare_write(
    u: &OsbUpload,
    data: *const u8,
    len: libc::size_t,
) -> Result<(ChunkSender, Bytes, Arc<Mutex<UploadInner>>)> {
    const OP: &str = "upload.write";
    if data.is_null() && len > 0 {
        return Err(invalid(OP, "data must not be NULL"));
    }
    let chunk = if len == 0 {
        Bytes::new()
    } else {
        // SAFETY: the caller promised `len` readable bytes at `data`; copied here,
        // before the export returns.
        Bytes::copy_from_slice(unsafe { std::slice::from_raw_parts(data, len) })
    };
    let mut inner = u
        .inner
        .lock()
        .map_err(|_| crate::util::internal(OP, "upload state poisoned"))?;
    let tx = inner
        .tx
        .clone()
        .ok_or_else(|| invalid(OP, "the upload was already finished"))?;
    inner.written += len as u64;
    Ok((tx, chunk, u.inner.clone()))
}

async fn send_chunk(tx: ChunkSender, chunk: Bytes, inner: Arc<Mutex<UploadInner>>) -> Result<()> {
    const OP: &str = "upload.write";
    if chunk.is_empty() {
        return Ok(());
    }
    if tx.send(Ok(chunk)).await.is_ok() {
        return Ok(());
    }
    // The request ended early: report its error.
    let rx = inner.lock().ok().and_then(|mut i| i.result.take());
    match rx {
        Some(rx) => match rx.await {
            Ok(Err(e)) => Err(e),
            _ => Err(upload_failed(OP)),
        },
        None => Err(upload_failed(OP)),
    }
}

/// Queues `len` bytes from `data` (copied before returning). The callback's result is
/// NULL once the chunk is queued (at most 4 chunks wait), or an error if the request
/// already failed. One write at a time.
///
/// # Safety
/// `u` is a live `OsbUpload`; `data` points to `len` readable bytes (NULL when `len` is
/// 0); `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_upload_write(
    u: *mut OsbUpload,
    data: *const u8,
    len: libc::size_t,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "upload.write";
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start(OP, unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let u = unsafe { u.as_ref() }.ok_or_else(|| invalid(OP, "upload must not be NULL"))?;
        let (tx, chunk, inner) = prepare_write(u, data, len)?;
        Ok(async move {
            send_chunk(tx, chunk, inner).await?;
            Ok(Payload::Null)
        })
    });
}

/// Blocking write: 0 once the chunk is queued, -1 on error (`*error_out` set). Not
/// callable from a library callback.
///
/// # Safety
/// As `osb_upload_write`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_upload_write_blocking(
    u: *mut OsbUpload,
    data: *const u8,
    len: libc::size_t,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> i32 {
    const OP: &str = "upload.write";
    // SAFETY: caller contract.
    unsafe {
        guard_result(OP, error_out, -1, || {
            let u = u
                .as_ref()
                .ok_or_else(|| invalid(OP, "upload must not be NULL"))?;
            let (tx, chunk, inner) = prepare_write(u, data, len)?;
            // Fast path: room in the queue, no need to enter the runtime.
            let chunk = match tx.try_send(Ok(chunk)) {
                Ok(()) => return Ok(0),
                Err(mpsc::error::TrySendError::Full(Ok(c))) => c,
                Err(mpsc::error::TrySendError::Full(Err(_))) => Bytes::new(),
                Err(mpsc::error::TrySendError::Closed(Ok(c))) => c,
                Err(mpsc::error::TrySendError::Closed(Err(_))) => Bytes::new(),
            };
            block(OP, token(cancel), send_chunk(tx, chunk, inner))?;
            Ok(0)
        })
    }
}

/// Ends the body and waits for the server's answer. The callback's result is NULL on
/// success. When `size` was given and a different number of bytes was written, the
/// request is failed (nothing is stored) and the error is `invalid_argument`.
///
/// # Safety
/// `u` is a live `OsbUpload`; `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_upload_finish(
    u: *mut OsbUpload,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "upload.finish";
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start(OP, unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let u = unsafe { u.as_ref() }.ok_or_else(|| invalid(OP, "upload must not be NULL"))?;
        let (tx, rx, mismatch) = {
            let mut inner = u
                .inner
                .lock()
                .map_err(|_| crate::util::internal(OP, "upload state poisoned"))?;
            let mismatch = inner
                .size
                .filter(|s| *s != inner.written)
                .map(|s| (s, inner.written));
            (inner.tx.take(), inner.result.take(), mismatch)
        };
        let rx = rx.ok_or_else(|| upload_failed(OP))?;
        Ok(async move {
            if let Some(tx) = tx {
                if mismatch.is_some() {
                    // Fail the body so the server stores nothing.
                    let _ = tx
                        .send(Err(std::io::Error::other("upload size mismatch")))
                        .await;
                }
                drop(tx);
            }
            let r = rx.await.map_err(|_| upload_failed(OP))?;
            if let Some((want, got)) = mismatch {
                return Err(invalid(
                    OP,
                    format!("size was declared as {want} bytes but {got} were written"),
                ));
            }
            r?;
            Ok(Payload::Null)
        })
    });
}

/// Frees the upload; if it was not finished, the request is aborted. NULL is a no-op.
///
/// # Safety
/// `u` is NULL or an `OsbUpload` this library handed out, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_upload_free(u: *mut OsbUpload) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(u) }
}
