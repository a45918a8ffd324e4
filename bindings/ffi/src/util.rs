//! Plumbing shared by every export: panic guards, string conversion, the completion
//! callback and the spawn-with-cancellation helper.

use std::ffi::{c_char, c_void, CStr, CString};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

use futures_util::FutureExt;
use opensandbox_core::{Error, ErrorKind, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::error::OsbError;

/// Completion callback of every async function.
///
/// Called exactly once with the caller's `user_data`. On success `error` is NULL and
/// `result` is what the function documents (possibly NULL); on failure `error` is
/// non-NULL and owned by the callee (free it with `osb_error_free`) and `result` is
/// NULL. Ownership of a non-NULL `result` passes to the callee as well.
pub type OsbCallback =
    Option<unsafe extern "C" fn(user_data: usize, result: *mut c_void, error: *mut OsbError)>;

/// The value an async operation hands to its callback.
pub(crate) enum Payload {
    /// No value (`result == NULL`).
    Null,
    /// A JSON text, passed as an owned `char *`.
    Json(String),
    /// A pointer from `Box::into_raw`, with the function that frees it when there is
    /// no callback to take it.
    Ptr(*mut c_void, unsafe fn(*mut c_void)),
}

// SAFETY: `Ptr` holds a uniquely owned heap object of a `Send` type (every handle type
// of this crate is `Send`); it is only moved, never shared.
unsafe impl Send for Payload {}

impl Payload {
    /// Boxes a handle.
    pub(crate) fn handle<T: Send + 'static>(value: T) -> Payload {
        unsafe fn drop_box<T>(p: *mut c_void) {
            // SAFETY: `p` came from `Box::into_raw(Box<T>)` in `Payload::handle::<T>`.
            drop(unsafe { Box::from_raw(p.cast::<T>()) });
        }
        Payload::Ptr(
            Box::into_raw(Box::new(value)).cast::<c_void>(),
            drop_box::<T>,
        )
    }

    /// Serializes a value as a JSON payload.
    pub(crate) fn json<T: Serialize + ?Sized>(op: &str, value: &T) -> Result<Payload> {
        serde_json::to_string(value)
            .map(Payload::Json)
            .map_err(|e| internal(op, format!("cannot encode the result: {e}")))
    }
}

/// Where an async operation reports to.
#[derive(Clone, Copy)]
pub(crate) struct Completion {
    callback: OsbCallback,
    user_data: usize,
}

impl Completion {
    pub(crate) fn new(callback: OsbCallback, user_data: usize) -> Self {
        Completion {
            callback,
            user_data,
        }
    }

    /// Calls the callback once with the outcome (or frees the outcome when there is no
    /// callback).
    pub(crate) fn complete(self, outcome: Result<Payload>) {
        let Some(cb) = self.callback else {
            if let Ok(Payload::Ptr(p, free)) = outcome {
                // SAFETY: `free` is the destructor paired with `p` by `Payload::handle`.
                unsafe { free(p) };
            }
            return;
        };
        let (result, error): (*mut c_void, *mut OsbError) = match outcome {
            Ok(Payload::Null) => (std::ptr::null_mut(), std::ptr::null_mut()),
            Ok(Payload::Json(s)) => (into_c_string(s).cast::<c_void>(), std::ptr::null_mut()),
            Ok(Payload::Ptr(p, _)) => (p, std::ptr::null_mut()),
            Err(e) => (std::ptr::null_mut(), OsbError::into_raw(e)),
        };
        // SAFETY: the host promised a callable function pointer; the arguments follow
        // the documented ownership rules.
        unsafe { cb(self.user_data, result, error) };
    }

    /// [`complete`](Self::complete) with an error payload of the op layer.
    pub(crate) fn complete_op(
        self,
        outcome: std::result::Result<Payload, opensandbox_bindings::OpError>,
    ) {
        let Some(cb) = self.callback else {
            if let Ok(Payload::Ptr(p, free)) = outcome {
                // SAFETY: `free` is the destructor paired with `p` by `Payload::handle`.
                unsafe { free(p) };
            }
            return;
        };
        let (result, error): (*mut c_void, *mut OsbError) = match outcome {
            Ok(Payload::Null) => (std::ptr::null_mut(), std::ptr::null_mut()),
            Ok(Payload::Json(s)) => (into_c_string(s).cast::<c_void>(), std::ptr::null_mut()),
            Ok(Payload::Ptr(p, _)) => (p, std::ptr::null_mut()),
            Err(e) => (std::ptr::null_mut(), OsbError::from_op(&e)),
        };
        // SAFETY: as in `complete`.
        unsafe { cb(self.user_data, result, error) };
    }
}

// SAFETY: a plain function pointer and an integer.
unsafe impl Send for Completion {}

pub(crate) fn internal(op: &str, msg: impl Into<String>) -> Error {
    Error::internal(op.to_owned(), msg)
}

pub(crate) fn invalid(op: &str, msg: impl Into<String>) -> Error {
    Error::invalid_argument(op.to_owned(), msg)
}

pub(crate) fn cancelled(op: &str) -> Error {
    Error::new(
        ErrorKind::Cancelled,
        op.to_owned(),
        "the operation was cancelled",
    )
}

fn panic_message(op: &str, payload: Box<dyn std::any::Any + Send>) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    internal(op, format!("panic inside the library: {what}"))
}

/// Runs `f` under `catch_unwind`; a panic yields `fallback`.
pub(crate) fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Runs a fallible synchronous export: on error (or panic) stores the error in
/// `*error_out` (when not NULL) and returns `fallback`.
///
/// # Safety
/// `error_out` is NULL or points to writable storage for one pointer.
pub(crate) unsafe fn guard_result<T>(
    op: &str,
    error_out: *mut *mut OsbError,
    fallback: T,
    f: impl FnOnce() -> Result<T>,
) -> T {
    if !error_out.is_null() {
        // SAFETY: caller contract.
        unsafe { *error_out = std::ptr::null_mut() };
    }
    let r = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_message(op, p)));
    match r {
        Ok(v) => v,
        Err(e) => {
            if !error_out.is_null() {
                // SAFETY: caller contract.
                unsafe { *error_out = OsbError::into_raw(e) };
            }
            fallback
        }
    }
}

/// Starts an async export: `prepare` runs synchronously (argument checks) and returns
/// the future; the future runs on the shared runtime, raced against `cancel`, and its
/// outcome goes to the callback. Errors of `prepare` are reported synchronously.
pub(crate) fn start<F, Fut>(
    op: &'static str,
    cancel: Option<CancellationToken>,
    done: Completion,
    prepare: F,
) where
    F: FnOnce() -> Result<Fut>,
    Fut: Future<Output = Result<Payload>> + Send + 'static,
{
    let prepared = catch_unwind(AssertUnwindSafe(prepare));
    let fut = match prepared {
        Ok(Ok(fut)) => fut,
        Ok(Err(e)) => return done.complete(Err(e)),
        Err(p) => return done.complete(Err(panic_message(op, p))),
    };
    let task = async move {
        let fut = AssertUnwindSafe(fut).catch_unwind();
        let outcome = match cancel {
            Some(token) => {
                tokio::select! {
                    biased;
                    _ = token.cancelled() => Err(cancelled(op)),
                    r = fut => r.unwrap_or_else(|p| Err(panic_message(op, p))),
                }
            }
            None => fut.await.unwrap_or_else(|p| Err(panic_message(op, p))),
        };
        done.complete(outcome);
    };
    let spawned = catch_unwind(AssertUnwindSafe(|| {
        opensandbox_core::runtime::runtime().spawn(task);
    }));
    if let Err(p) = spawned {
        // The runtime could not be built: the task (and its callback) never ran.
        done.complete(Err(panic_message(op, p)));
    }
}

/// Runs a future to completion on the calling thread (the `*_blocking` exports).
pub(crate) fn block<T>(
    op: &'static str,
    cancel: Option<CancellationToken>,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(invalid(
            op,
            "blocking call from a runtime thread (e.g. inside a callback)",
        ));
    }
    let rt = catch_unwind(opensandbox_core::runtime::runtime).map_err(|p| panic_message(op, p))?;
    rt.block_on(async move {
        match cancel {
            Some(token) => {
                tokio::select! {
                    biased;
                    _ = token.cancelled() => Err(cancelled(op)),
                    r = fut => r,
                }
            }
            None => fut.await,
        }
    })
}

/// A borrowed NUL-terminated UTF-8 argument; NULL = absent.
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string alive for `'a`.
pub(crate) unsafe fn opt_str<'a>(
    op: &str,
    name: &str,
    p: *const c_char,
) -> Result<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: caller contract.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str()
        .map(Some)
        .map_err(|_| invalid(op, format!("{name} is not valid UTF-8")))
}

/// A required borrowed string argument.
///
/// # Safety
/// As [`opt_str`].
pub(crate) unsafe fn req_str<'a>(op: &str, name: &str, p: *const c_char) -> Result<&'a str> {
    // SAFETY: caller contract.
    unsafe { opt_str(op, name, p) }?.ok_or_else(|| invalid(op, format!("{name} must not be NULL")))
}

/// Parses an optional JSON argument into `T` (NULL, empty or `null` = `T::default()`).
pub(crate) fn parse_args<T: DeserializeOwned + Default>(op: &str, json: Option<&str>) -> Result<T> {
    match json.map(str::trim) {
        None | Some("") | Some("null") => Ok(T::default()),
        Some(s) => {
            serde_json::from_str(s).map_err(|e| invalid(op, format!("bad arguments JSON: {e}")))
        }
    }
}

/// Moves a Rust string to an owned C string (interior NULs, impossible in JSON and in
/// our messages, are dropped rather than failing).
pub(crate) fn into_c_string(s: String) -> *mut c_char {
    let c = CString::new(s).unwrap_or_else(|e| {
        let mut bytes = e.into_vec();
        bytes.retain(|b| *b != 0);
        CString::new(bytes).unwrap_or_default()
    });
    c.into_raw()
}

/// A C string kept alongside a handle for borrowed returns.
pub(crate) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

/// Clones the token behind a borrowed `OsbCancel *` (NULL = none).
///
/// # Safety
/// `p` is NULL or a live `OsbCancel`.
pub(crate) unsafe fn token(p: *const crate::cancel::OsbCancel) -> Option<CancellationToken> {
    // SAFETY: caller contract.
    unsafe { p.as_ref() }.map(|c| c.token.clone())
}

/// Frees an owned handle from `Box::into_raw` (NULL is a no-op), under a panic guard.
///
/// # Safety
/// `p` is NULL or came from `Box::into_raw(Box<T>)` and is not used afterwards.
pub(crate) unsafe fn free_box<T>(p: *mut T) {
    if p.is_null() {
        return;
    }
    guard((), || {
        // SAFETY: caller contract.
        drop(unsafe { Box::from_raw(p) });
    });
}
