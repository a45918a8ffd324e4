//! `OsbCancel`: a cancellation token shared between the host and the operations it
//! was passed to.

use tokio_util::sync::CancellationToken;

use crate::util::guard;

/// A cancellation token (opaque). Created with `osb_cancel_new`, freed with
/// `osb_cancel_free`.
pub struct OsbCancel {
    pub(crate) token: CancellationToken,
}

/// A new, uncancelled token. Owned by the caller: free it with `osb_cancel_free`.
/// Returns NULL only if allocation panicked.
#[no_mangle]
pub extern "C" fn osb_cancel_new() -> *mut OsbCancel {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(OsbCancel {
            token: CancellationToken::new(),
        }))
    })
}

/// Cancels every operation the token was (or will be) passed to. Idempotent; callable
/// from any thread. NULL is a no-op.
///
/// # Safety
/// `c` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_cancel_cancel(c: *const OsbCancel) {
    guard((), || {
        // SAFETY: caller contract.
        if let Some(c) = unsafe { c.as_ref() } {
            c.token.cancel();
        }
    })
}

/// Whether `osb_cancel_cancel` was called on this token (false for NULL).
///
/// # Safety
/// `c` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_cancel_is_cancelled(c: *const OsbCancel) -> bool {
    guard(false, || {
        // SAFETY: the caller passes NULL or a live handle (`# Safety` above);
        // `as_ref` turns NULL into None.
        unsafe { c.as_ref() }.is_some_and(|c| c.token.is_cancelled())
    })
}

/// Frees the caller's reference. Does NOT cancel: operations that were given the token
/// keep their own reference. NULL is a no-op.
///
/// # Safety
/// `c` is NULL or an `OsbCancel` from `osb_cancel_new`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_cancel_free(c: *mut OsbCancel) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(c) }
}
