//! `OsbRuntime` and `OsbSession`: the explicit tokio runtime, and the op layer of
//! `bindings/common` behind one name-dispatched entry point (API.md §7). This module is
//! transport only: C strings and buffers in and out, callbacks, cancellation tokens,
//! panic guards. Op names, argument keys, result shapes and the folded outcome of an
//! execution are `opensandbox-bindings`' (bindings/common/README.md).

use std::ffi::c_char;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use opensandbox_bindings::transfer::{ReadSink, READ_FILL};
use opensandbox_bindings::{OpError, Session};
use serde::Deserialize;
use serde_json::Value;
use tokio::runtime::{Handle, Runtime};
use tokio_util::sync::CancellationToken;

use crate::cancel::OsbCancel;
use crate::error::OsbError;
use crate::util::{guard, into_c_string, token, Completion, OsbCallback, Payload};

/// How long `osb_runtime_free` waits for the worker threads to end.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// A tokio runtime, shut down when the last reference (runtime handle, session, or an
/// operation in flight) goes away. The library starts no runtime of its own.
pub(crate) struct RuntimeBox {
    rt: Mutex<Option<Runtime>>,
    handle: Handle,
}

impl RuntimeBox {
    /// Runs `f` with the runtime entered (so that drops which spawn, such as an
    /// execution stream interrupting its command, find this runtime).
    fn enter<T>(&self, f: impl FnOnce() -> T) -> T {
        let _entered = self.handle.enter();
        f()
    }
}

impl Drop for RuntimeBox {
    fn drop(&mut self) {
        let rt = self.rt.get_mut().ok().and_then(Option::take);
        if let Some(rt) = rt {
            if Handle::try_current().is_ok() {
                // Dropped by a task of a runtime: blocking is not allowed here.
                rt.shutdown_background();
            } else {
                rt.shutdown_timeout(SHUTDOWN_WAIT);
            }
        }
    }
}

/// An explicit tokio runtime (opaque): every operation of the sessions made on it runs
/// on its worker threads, and nothing else in the library starts threads for them.
/// Created with `osb_runtime_new`, freed with `osb_runtime_free`.
pub struct OsbRuntime {
    inner: Arc<RuntimeBox>,
}

/// An op-layer session (opaque): one registry of the handles (configs, managers,
/// sandboxes, runs, uploads, downloads) that op arguments and results refer to by
/// integer. Created with `osb_session_new`, freed with `osb_session_free`.
pub struct OsbSession {
    session: Arc<Session>,
    rt: Arc<RuntimeBox>,
}

impl Drop for OsbSession {
    fn drop(&mut self) {
        // Whatever the registry still holds (streams that interrupt on drop) is dropped
        // with the runtime entered.
        let rt = self.rt.clone();
        let session = std::mem::replace(&mut self.session, Arc::new(Session::new()));
        rt.enter(move || drop(session));
    }
}

#[derive(Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RuntimeArgs {
    worker_threads: Option<usize>,
    thread_name: Option<String>,
}

fn invalid(op: &str, msg: impl Into<String>) -> OpError {
    OpError::invalid(op, msg)
}

fn panic_error(op: &str, p: Box<dyn std::any::Any + Send>) -> OpError {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    OpError::internal(op, format!("panic inside the library: {what}"))
}

fn cancelled(op: &str) -> OpError {
    OpError::new("cancelled", op, "the operation was cancelled")
}

/// A borrowed C string argument (NULL = absent).
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string alive for `'a`.
unsafe fn opt_str<'a>(op: &str, name: &str, p: *const c_char) -> Result<Option<&'a str>, OpError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: caller contract.
    let c = unsafe { std::ffi::CStr::from_ptr(p) };
    c.to_str()
        .map(Some)
        .map_err(|_| invalid(op, format!("{name} is not valid UTF-8")))
}

/// JSON arguments: NULL or empty = `{}`.
fn json_args(op: &str, s: Option<&str>) -> Result<Value, OpError> {
    match s.map(str::trim) {
        None | Some("") => Ok(Value::Object(Default::default())),
        Some(s) => serde_json::from_str(s)
            .map_err(|e| invalid(op, format!("{op}: bad arguments JSON: {e}"))),
    }
}

/// Stores `e` in `*error_out` (when not NULL).
///
/// # Safety
/// `error_out` is NULL or writable.
unsafe fn set_error(error_out: *mut *mut OsbError, e: OpError) {
    if !error_out.is_null() {
        // SAFETY: caller contract.
        unsafe { *error_out = OsbError::from_op(&e) };
    }
}

/// Runs a synchronous export body under `catch_unwind`, reporting errors through
/// `error_out`.
///
/// # Safety
/// `error_out` is NULL or writable.
unsafe fn sync_export<T>(
    op: &str,
    error_out: *mut *mut OsbError,
    fallback: T,
    f: impl FnOnce() -> Result<T, OpError>,
) -> T {
    if !error_out.is_null() {
        // SAFETY: caller contract.
        unsafe { *error_out = std::ptr::null_mut() };
    }
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_error(op, p)));
    match r {
        Ok(v) => v,
        Err(e) => {
            // SAFETY: caller contract.
            unsafe { set_error(error_out, e) };
            fallback
        }
    }
}

/// Races `fut` against `cancel` and a panic.
async fn guarded<T>(
    op: String,
    cancel: Option<CancellationToken>,
    fut: impl Future<Output = Result<T, OpError>>,
) -> Result<T, OpError> {
    let fut = AssertUnwindSafe(fut).catch_unwind();
    let r = match cancel {
        Some(token) => tokio::select! {
            biased;
            _ = token.cancelled() => return Err(cancelled(&op)),
            r = fut => r,
        },
        None => fut.await,
    };
    r.unwrap_or_else(|p| Err(panic_error(&op, p)))
}

/// Blocks the calling thread on `fut` (the `*_blocking` exports).
fn block<T>(
    rt: &RuntimeBox,
    op: &str,
    cancel: Option<CancellationToken>,
    fut: impl Future<Output = Result<T, OpError>>,
) -> Result<T, OpError> {
    if Handle::try_current().is_ok() {
        return Err(invalid(
            op,
            format!("{op}: blocking call from a runtime thread (e.g. inside a callback)"),
        ));
    }
    rt.handle.block_on(guarded(op.to_owned(), cancel, fut))
}

/// [`block`] for a future that can move. An op that finishes everything within the
/// call (`opensandbox_bindings::ops::RUN_IN_CALL`) runs on the calling thread's own
/// current-thread runtime and connections: no thread hand-off at all. Any other runs on
/// a worker thread, next to the connection tasks it talks to, and the calling thread
/// only waits for its outcome: one wake-up of the caller per call, instead of a
/// hand-off for every step of the exchange (request sent, head received, body read).
fn block_on_worker<T: Send + 'static>(
    rt: &RuntimeBox,
    session: &Session,
    op: &str,
    cancel: Option<CancellationToken>,
    fut: impl Future<Output = Result<T, OpError>> + Send + 'static,
) -> Result<T, OpError> {
    if Handle::try_current().is_ok() {
        return Err(invalid(
            op,
            format!("{op}: blocking call from a runtime thread (e.g. inside a callback)"),
        ));
    }
    let cancellable_run = cancel.is_some() && opensandbox_bindings::ops::runs_to_end(op);
    let fut = guarded(op.to_owned(), cancel, fut);
    let done = if cancellable_run {
        // A run op cancelled before its `init` arrived reads on for it after the drop,
        // to interrupt the command (core stream.rs): on the shared runtime that goes on
        // after this call returns; on this thread's own runtime it would wait for the
        // thread's next call.
        rt.handle.block_on(rt.handle.spawn(fut))
    } else {
        opensandbox_bindings::block_on_op(&rt.handle, session, op, fut)
    };
    done.unwrap_or_else(|e| {
        Err(OpError::internal(
            op,
            format!("the call's task failed: {e}"),
        ))
    })
}

/// Spawns `fut` on the runtime; its outcome goes to `done`. The task holds a reference
/// to the runtime, so freeing the session and the runtime while it is in flight does not
/// stop it (its callback still fires).
fn spawn(
    rt: &Arc<RuntimeBox>,
    op: String,
    cancel: Option<CancellationToken>,
    done: Completion,
    fut: impl Future<Output = Result<Payload, OpError>> + Send + 'static,
) {
    let keep = rt.clone();
    let task = async move {
        let r = guarded(op, cancel, fut).await;
        done.complete_op(r);
        drop(keep);
    };
    rt.handle.spawn(task);
}

/// Borrows a session argument.
///
/// # Safety
/// `s` is NULL or a live `OsbSession`.
unsafe fn session_ref<'a>(op: &str, s: *const OsbSession) -> Result<&'a OsbSession, OpError> {
    // SAFETY: caller contract.
    unsafe { s.as_ref() }.ok_or_else(|| invalid(op, format!("{op}: session must not be NULL")))
}

fn to_json_string(op: &str, v: &Value) -> Result<String, OpError> {
    serde_json::to_string(v)
        .map_err(|e| OpError::internal(op, format!("cannot encode the result: {e}")))
}

// ---------------------------------------------------------------------------------
// Runtime

/// A new multi-thread tokio runtime. `options_json` may be NULL (= `{}`); keys:
/// `worker_threads` (default: one per CPU), `thread_name` (default
/// `opensandbox-ffi-worker`). Unknown keys are an `invalid_argument`
/// error. Returns an owned handle (free with `osb_runtime_free`), or NULL with
/// `*error_out` set. Not usable in a `fork()`ed child.
///
/// # Safety
/// `options_json` is NULL or NUL-terminated (borrowed); `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_runtime_new(
    options_json: *const c_char,
    error_out: *mut *mut OsbError,
) -> *mut OsbRuntime {
    const OP: &str = "runtime.new";
    // SAFETY: caller contract.
    unsafe {
        sync_export(OP, error_out, std::ptr::null_mut(), || {
            let a: RuntimeArgs = match opt_str(OP, "options_json", options_json)?.map(str::trim) {
                None | Some("") => RuntimeArgs::default(),
                Some(s) => serde_json::from_str(s)
                    .map_err(|e| invalid(OP, format!("{OP}: bad options: {e}")))?,
            };
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.enable_all().thread_name(
                a.thread_name
                    .unwrap_or_else(|| "opensandbox-ffi-worker".to_owned()),
            );
            if let Some(n) = a.worker_threads {
                if n == 0 {
                    return Err(invalid(
                        OP,
                        format!("{OP}: worker_threads must be at least 1"),
                    ));
                }
                b.worker_threads(n);
            }
            b.on_thread_start(block_sigpipe);
            let rt = b
                .build()
                .map_err(|e| OpError::internal(OP, format!("cannot start the runtime: {e}")))?;
            let handle = rt.handle().clone();
            let inner = Arc::new(RuntimeBox {
                rt: Mutex::new(Some(rt)),
                handle,
            });
            Ok(Box::into_raw(Box::new(OsbRuntime { inner })))
        })
    }
}

/// Blocks SIGPIPE on the calling (runtime) thread. A write to a connection the peer
/// already closed (a server that rejects an upload before reading its body) raises
/// SIGPIPE on the writing thread when the write is vectored (`writev` has no
/// `MSG_NOSIGNAL`). Rust programs ignore SIGPIPE, but a host may not: Go forwards a
/// SIGPIPE of a non-Go thread to the default action, which ends the process. Blocked,
/// the write fails with `EPIPE` and the request reports it instead.
#[cfg(unix)]
fn block_sigpipe() {
    // SAFETY: plain libc calls on a local, initialised signal set; pthread_sigmask only
    // changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// SIGPIPE is a Unix notion.
#[cfg(not(unix))]
fn block_sigpipe() {}

/// Frees the caller's reference to the runtime. Sessions made on it and operations in
/// flight keep it running; when this was the last reference, the runtime is shut down
/// here and its worker threads end (waiting up to 2 s for running tasks). NULL is a
/// no-op. Must not be called from a runtime thread (a library callback).
///
/// # Safety
/// `rt` is NULL or an `OsbRuntime` from `osb_runtime_new`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_runtime_free(rt: *mut OsbRuntime) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(rt) }
}

// ---------------------------------------------------------------------------------
// Session

/// A new op-layer session on `rt`. Its base connection configuration is the core's
/// default (`OPEN_SANDBOX_DOMAIN`, `OPEN_SANDBOX_API_KEY`, ...); ops take a
/// `connection` (overrides or a `config.new` handle) to use another. The session keeps
/// its own reference to the runtime. Returns an owned handle (free with
/// `osb_session_free`), or NULL with `*error_out` set.
///
/// # Safety
/// `rt` is a live `OsbRuntime`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_session_new(
    rt: *const OsbRuntime,
    error_out: *mut *mut OsbError,
) -> *mut OsbSession {
    const OP: &str = "session.new";
    // SAFETY: caller contract.
    unsafe {
        sync_export(OP, error_out, std::ptr::null_mut(), || {
            let rt = rt
                .as_ref()
                .ok_or_else(|| invalid(OP, format!("{OP}: runtime must not be NULL")))?;
            let rt = rt.inner.clone();
            let session = rt.enter(|| Arc::new(Session::new()));
            Ok(Box::into_raw(Box::new(OsbSession { session, rt })))
        })
    }
}

/// Runs op `op` with `args_json` (a JSON object; NULL = `{}`) on the session's runtime
/// (ops, keys and results: bindings/common/README.md, and `osb_ops_manifest`). The
/// callback's result is an owned JSON `char *` (free with `osb_string_free`; `null`
/// for ops without a value); its error carries the op layer's payload. An unknown op or
/// argument key is an `invalid_argument` error.
///
/// # Safety
/// `s` is a live `OsbSession`; `op`/`args_json` are NULL or NUL-terminated (borrowed
/// for the call); `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_session_call(
    s: *const OsbSession,
    op: *const c_char,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "session.call";
    let done = Completion::new(callback, user_data);
    let prepared = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: caller contract.
        let s = unsafe { session_ref(OP, s) }?;
        // SAFETY: caller contract.
        let op = unsafe { opt_str(OP, "op", op) }?
            .ok_or_else(|| invalid(OP, format!("{OP}: op must not be NULL")))?
            .to_owned();
        // SAFETY: caller contract.
        let args = json_args(&op, unsafe { opt_str(&op, "args_json", args_json) }?)?;
        // SAFETY: caller contract.
        let cancel = unsafe { token(cancel) };
        Ok::<_, OpError>((s.session.clone(), s.rt.clone(), op, args, cancel))
    }))
    .unwrap_or_else(|p| Err(panic_error(OP, p)));
    let (session, rt, op, args, cancel) = match prepared {
        Ok(p) => p,
        Err(e) => return done.complete_op(Err(e)),
    };
    let name = op.clone();
    let fut = async move {
        let v = session.call(&op, args).await?;
        Ok(Payload::Json(to_json_string(&op, &v)?))
    };
    let spawned = catch_unwind(AssertUnwindSafe(|| spawn(&rt, name, cancel, done, fut)));
    if let Err(p) = spawned {
        done.complete_op(Err(panic_error(OP, p)));
    }
}

/// Blocking `osb_session_call`: runs the op on the calling thread and returns its owned
/// JSON result (free with `osb_string_free`), or NULL with `*error_out` set. Not
/// callable from a library callback. For hosts whose threads may block (Go).
///
/// # Safety
/// As `osb_session_call`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_session_call_blocking(
    s: *const OsbSession,
    op: *const c_char,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> *mut c_char {
    const OP: &str = "session.call";
    // SAFETY: caller contract.
    unsafe {
        sync_export(OP, error_out, std::ptr::null_mut(), || {
            let s = session_ref(OP, s)?;
            let op = opt_str(OP, "op", op)?
                .ok_or_else(|| invalid(OP, format!("{OP}: op must not be NULL")))?;
            let args = json_args(op, opt_str(op, "args_json", args_json)?)?;
            let session = s.session.clone();
            let name = op.to_owned();
            let v = block_on_worker(&s.rt, &s.session, op, token(cancel), async move {
                session.call(&name, args).await
            })?;
            Ok(into_c_string(to_json_string(op, &v)?))
        })
    }
}

/// Releases handle `handle` of the session (any kind; same as the `release` op, but
/// synchronous and callable from any thread, finalizers included): an unfinished run
/// is cancelled (which interrupts its command on the server), an open upload aborted.
/// Returns whether the handle was live. False when `s` is NULL.
///
/// # Safety
/// `s` is NULL or a live `OsbSession`.
#[no_mangle]
pub unsafe extern "C" fn osb_session_release(s: *const OsbSession, handle: u64) -> bool {
    guard(false, || {
        // SAFETY: caller contract.
        match unsafe { s.as_ref() } {
            Some(s) => s.rt.enter(|| s.session.release(handle)),
            None => false,
        }
    })
}

/// Number of live handles in the session (tests use it to prove nothing leaks).
///
/// # Safety
/// `s` is NULL or a live `OsbSession`.
#[no_mangle]
pub unsafe extern "C" fn osb_session_handle_count(s: *const OsbSession) -> u64 {
    guard(0, || {
        // SAFETY: the caller passes NULL or a live handle (`# Safety` above);
        // `as_ref` turns NULL into None.
        unsafe { s.as_ref() }.map_or(0, |s| s.session.handle_count() as u64)
    })
}

/// Frees the session: every handle it still holds is released (runs are cancelled,
/// uploads aborted). Operations in flight keep what they use and still complete.
/// NULL is a no-op.
///
/// # Safety
/// `s` is NULL or an `OsbSession` from `osb_session_new`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_session_free(s: *mut OsbSession) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(s) }
}

// ---------------------------------------------------------------------------------
// Bytes: uploads fed by the host, downloads pulled into the host's buffer

fn chunk_of(op: &str, data: *const u8, len: libc::size_t) -> Result<Bytes, OpError> {
    if data.is_null() && len > 0 {
        return Err(invalid(op, format!("{op}: data must not be NULL")));
    }
    if len == 0 {
        return Ok(Bytes::new());
    }
    // SAFETY: the caller promised `len` readable bytes at `data`; copied here, before
    // the export returns.
    Ok(Bytes::copy_from_slice(unsafe {
        std::slice::from_raw_parts(data, len)
    }))
}

/// Sends `len` bytes from `data` (copied before returning) to the upload `handle` (from
/// the `upload.open` op), blocking while its queue is full. Returns 0 when queued, 1
/// when the upload request already ended (the `upload.finish` op reports why), -1 on
/// error (`*error_out` set). Not callable from a library callback.
///
/// # Safety
/// `s` is a live `OsbSession`; `data` points to `len` readable bytes (NULL when `len`
/// is 0); `cancel` is NULL or a live `OsbCancel`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_session_upload_write_blocking(
    s: *const OsbSession,
    handle: u64,
    data: *const u8,
    len: libc::size_t,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> i32 {
    const OP: &str = "upload.write";
    // SAFETY: caller contract.
    unsafe {
        sync_export(OP, error_out, -1, || {
            let s = session_ref(OP, s)?;
            let chunk = chunk_of(OP, data, len)?;
            if chunk.is_empty() {
                return Ok(0);
            }
            let session = s.session.clone();
            let queued = block(
                &s.rt,
                OP,
                token(cancel),
                session.upload_write(handle, chunk),
            )?;
            Ok(if queued { 0 } else { 1 })
        })
    }
}

/// Async `osb_session_upload_write_blocking`: the callback's result is NULL once the
/// chunk is queued, or an owned JSON `"ended"` string when the upload request already
/// ended (the `upload.finish` op reports why). One write at a time per upload.
///
/// # Safety
/// As `osb_session_upload_write_blocking`, without `error_out`.
#[no_mangle]
pub unsafe extern "C" fn osb_session_upload_write(
    s: *const OsbSession,
    handle: u64,
    data: *const u8,
    len: libc::size_t,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "upload.write";
    let done = Completion::new(callback, user_data);
    let prepared = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: caller contract.
        let s = unsafe { session_ref(OP, s) }?;
        let chunk = chunk_of(OP, data, len)?;
        // SAFETY: caller contract.
        let cancel = unsafe { token(cancel) };
        Ok::<_, OpError>((s.session.clone(), s.rt.clone(), chunk, cancel))
    }))
    .unwrap_or_else(|p| Err(panic_error(OP, p)));
    let (session, rt, chunk, cancel) = match prepared {
        Ok(p) => p,
        Err(e) => return done.complete_op(Err(e)),
    };
    let fut = async move {
        if chunk.is_empty() || session.upload_write(handle, chunk).await? {
            Ok(Payload::Null)
        } else {
            Ok(Payload::Json("\"ended\"".to_owned()))
        }
    };
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| {
        spawn(&rt, OP.to_owned(), cancel, done, fut)
    })) {
        done.complete_op(Err(panic_error(OP, p)));
    }
}

/// Uploads `len` bytes of the regular file open as `fd`, from `offset`, to the sandbox
/// file described by `args_json` (as the `upload.open` op; a `size`, when given, must be
/// `len`): the library reads the file itself, with no copy through the host. Takes
/// ownership of `fd` in every case, also on error: pass a duplicate
/// (`dup`/`F_DUPFD_CLOEXEC`) of a descriptor the host keeps. The offset of the open file
/// description (shared with the host's descriptor) ends at `offset + len`. Blocks until
/// the request ends. Returns 0 when stored, -1 on error (`*error_out` set). Unix only
/// (elsewhere an `invalid_argument` error). Not callable from a library callback.
///
/// # Safety
/// `s` is a live `OsbSession`; `args_json` is NULL or NUL-terminated (borrowed); `fd` is
/// an open descriptor owned by nobody else; `cancel` is NULL or a live `OsbCancel`;
/// `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_session_upload_fd_blocking(
    s: *const OsbSession,
    args_json: *const c_char,
    fd: i32,
    offset: u64,
    len: u64,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> i32 {
    const OP: &str = "upload.file";
    // SAFETY: caller contract: `fd` is ours from here on, whatever happens next.
    let file = unsafe { owned_file(OP, fd) };
    // SAFETY: caller contract.
    unsafe {
        sync_export(OP, error_out, -1, || {
            let file = file?;
            let s = session_ref(OP, s)?;
            let args = json_args(OP, opt_str(OP, "args_json", args_json)?)?;
            let session = s.session.clone();
            block_on_worker(&s.rt, &s.session, OP, token(cancel), async move {
                session.upload_file(args, file, offset, len).await
            })?;
            Ok(0)
        })
    }
}

/// Takes ownership of the descriptor `fd` as a file.
///
/// # Safety
/// `fd` is an open descriptor owned by nobody else.
#[cfg(unix)]
unsafe fn owned_file(op: &str, fd: i32) -> Result<std::fs::File, OpError> {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return Err(invalid(
            op,
            format!("{op}: fd must be an open descriptor, got {fd}"),
        ));
    }
    // SAFETY: caller contract: an open descriptor that nothing else closes.
    Ok(unsafe { std::fs::File::from_raw_fd(fd) })
}

/// Descriptors are a Unix notion.
///
/// # Safety
/// None: nothing is taken.
#[cfg(not(unix))]
unsafe fn owned_file(op: &str, _fd: i32) -> Result<std::fs::File, OpError> {
    Err(invalid(
        op,
        format!("{op}: uploads from a descriptor need a Unix platform"),
    ))
}

/// The sink of `osb_session_download_read`: each slice copied into the caller's `buf`
/// (raw: the caller's memory need not be initialized).
struct IntoBuf {
    buf: *mut u8,
    cap: usize,
    filled: usize,
}

impl ReadSink for IntoBuf {
    fn put(&mut self, part: bytes::Bytes) {
        // The read asks for at most `cap` bytes; anything past it is cut, never written.
        let n = part.len().min(self.cap - self.filled);
        // SAFETY: `buf` has `cap` writable bytes (the export's contract) for as long as
        // the read runs, and [filled, filled + n) lies inside them.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), self.buf.add(self.filled), n) };
        self.filled += n;
    }
}

/// Copies up to `cap` bytes of the download `handle` (from the `download.open` op)
/// into `buf`, blocking until some arrived. Returns the count, 0 at the end, -1 on error
/// (`*error_out` set). Not callable from a library callback.
///
/// # Safety
/// `s` is a live `OsbSession`; `buf` points to `cap` writable bytes (may be NULL when
/// `cap` is 0); `cancel` is NULL or a live `OsbCancel`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_session_download_read(
    s: *const OsbSession,
    handle: u64,
    buf: *mut u8,
    cap: libc::size_t,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> i64 {
    const OP: &str = "download.read";
    // SAFETY: caller contract.
    unsafe {
        sync_export(OP, error_out, -1, || {
            let s = session_ref(OP, s)?;
            if cap == 0 {
                return Ok(0);
            }
            if buf.is_null() {
                return Err(invalid(OP, format!("{OP}: buf must not be NULL")));
            }
            let cap = cap.min(i64::MAX as usize);
            if Handle::try_current().is_ok() {
                return Err(invalid(
                    OP,
                    format!("{OP}: blocking call from a runtime thread (e.g. inside a callback)"),
                ));
            }
            let session = &s.session;
            // What has already arrived, up to `cap`, each received slice copied into
            // `buf` as the read takes it (so the connection reads on into the same
            // memory: `transfer::ReadSink`); read on this thread when the download was
            // opened by a blocking call. A cancelled read drops the sink with the
            // future, before this call returns.
            let into = IntoBuf {
                buf,
                cap,
                filled: 0,
            };
            let read = guarded(
                OP.to_owned(),
                token(cancel),
                session.download_read_into(handle, cap, READ_FILL, into),
            );
            let into = opensandbox_bindings::block_on_read(&s.rt.handle, session, handle, read)?;
            Ok(into.filled as i64)
        })
    }
}

/// The next items of run `handle` (as `execution.next_batch {handle, max}`: up to `max`
/// already-arrived items, waiting only for the first) in the binary layout of API.md
/// §4 "Executions": output lines as raw text, other items as JSON objects. Returns an
/// owned `OsbChunk *` (free with `osb_chunk_free`), or NULL with `*error_out` set. Not
/// callable from a library callback.
///
/// # Safety
/// `s` is a live `OsbSession`; `cancel` is NULL or a live `OsbCancel`; `error_out` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_session_next_items_blocking(
    s: *const OsbSession,
    handle: u64,
    max: libc::size_t,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> *mut crate::transfer::OsbChunk {
    const OP: &str = "execution.next_batch";
    // SAFETY: caller contract.
    unsafe {
        sync_export(OP, error_out, std::ptr::null_mut(), || {
            let s = session_ref(OP, s)?;
            let session = s.session.clone();
            let batch = block(
                &s.rt,
                OP,
                token(cancel),
                session.next_items(handle, max.max(1), None),
            )?;
            let bytes = crate::items::encode(OP, &batch)?;
            Ok(Box::into_raw(Box::new(crate::transfer::OsbChunk::new(
                Bytes::from(bytes),
            ))))
        })
    }
}

/// Async download read: the callback's result is an owned `OsbChunk *` of at most
/// `max` bytes (free with `osb_chunk_free`; read it with `osb_chunk_data`), or NULL at
/// the end. One read at a time per download.
///
/// # Safety
/// `s` is a live `OsbSession`; `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_session_download_next(
    s: *const OsbSession,
    handle: u64,
    max: libc::size_t,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "download.read";
    let done = Completion::new(callback, user_data);
    let prepared = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: caller contract.
        let s = unsafe { session_ref(OP, s) }?;
        // SAFETY: caller contract.
        let cancel = unsafe { token(cancel) };
        Ok::<_, OpError>((s.session.clone(), s.rt.clone(), cancel))
    }))
    .unwrap_or_else(|p| Err(panic_error(OP, p)));
    let (session, rt, cancel) = match prepared {
        Ok(p) => p,
        Err(e) => return done.complete_op(Err(e)),
    };
    let fut = async move {
        let chunk = session.download_read(handle, max.max(1)).await?;
        Ok(if chunk.is_empty() {
            Payload::Null
        } else {
            Payload::handle(crate::transfer::OsbChunk::new(chunk))
        })
    };
    if let Err(p) = catch_unwind(AssertUnwindSafe(|| {
        spawn(&rt, OP.to_owned(), cancel, done, fut)
    })) {
        done.complete_op(Err(panic_error(OP, p)));
    }
}

// ---------------------------------------------------------------------------------
// Manifest

/// The op layer's manifest as JSON: `{"version": 1, "ops": [{"name", "args": [{"name",
/// "type", "required"}], "result"}]}` — every op `osb_session_call` accepts and every
/// argument key of each. Owned: free with `osb_string_free`. NULL only on an internal
/// error.
#[no_mangle]
pub extern "C" fn osb_ops_manifest() -> *mut c_char {
    guard(std::ptr::null_mut(), || {
        match serde_json::to_string(&opensandbox_bindings::ops_manifest()) {
            Ok(s) => into_c_string(s),
            Err(_) => std::ptr::null_mut(),
        }
    })
}
