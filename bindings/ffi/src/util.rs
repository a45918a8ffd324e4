//! Plumbing shared by every export: panic guards, string conversion and the completion
//! callback.

use std::ffi::{c_char, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

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
        // SAFETY: the host promised a callable function pointer; the arguments follow
        // the documented ownership rules.
        unsafe { cb(self.user_data, result, error) };
    }
}

// SAFETY: a plain function pointer and an integer.
unsafe impl Send for Completion {}

/// Runs `f` under `catch_unwind`; a panic yields `fallback`.
pub(crate) fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
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
