//! `OsbError`: an error payload of the op layer (bindings/common) carried across the
//! boundary, read through accessors.

use std::ffi::{c_char, CString};
use std::ptr;

use serde_json::json;

use crate::util::{c_string, guard, into_c_string};

/// An error (opaque). Owned by whoever received it; freed with `osb_error_free`.
pub struct OsbError {
    kind: &'static str,
    status: u16,
    code: Option<CString>,
    message: CString,
    request_id: Option<CString>,
    operation: CString,
    body: Option<CString>,
    detail: String,
}

impl OsbError {
    /// An error payload of the op layer (bindings/common) as an owned handle.
    pub(crate) fn from_op(e: &opensandbox_bindings::OpError) -> *mut OsbError {
        let kind = kind_cstr(&e.kind).to_str().unwrap_or("internal");
        Box::into_raw(Box::new(OsbError {
            kind,
            status: e.status.unwrap_or(0),
            code: e.code.as_deref().map(c_string),
            message: c_string(&e.message),
            request_id: e.request_id.as_deref().map(c_string),
            operation: c_string(e.operation.as_deref().unwrap_or("")),
            body: e.body.as_deref().map(c_string),
            detail: e.to_string(),
        }))
    }
}

fn opt_ptr(s: &Option<CString>) -> *const c_char {
    s.as_ref().map_or(ptr::null(), |c| c.as_ptr())
}

/// The error kind, one of `api`, `not_found`, `unauthorized`, `timeout`,
/// `ready_timeout`, `connection`, `stream`, `invalid_argument`, `cancelled`, `internal`.
/// Static string (never freed); NULL only when `e` is NULL.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_kind(e: *const OsbError) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: caller contract.
        match unsafe { e.as_ref() } {
            // The kinds are ASCII literals; a static NUL-terminated copy of each:
            Some(e) => kind_cstr(e.kind).as_ptr(),
            None => ptr::null(),
        }
    })
}

fn kind_cstr(kind: &str) -> &'static std::ffi::CStr {
    match kind {
        "api" => c"api",
        "not_found" => c"not_found",
        "unauthorized" => c"unauthorized",
        "timeout" => c"timeout",
        "ready_timeout" => c"ready_timeout",
        "connection" => c"connection",
        "stream" => c"stream",
        "invalid_argument" => c"invalid_argument",
        "cancelled" => c"cancelled",
        _ => c"internal",
    }
}

/// HTTP status of the failed response, 0 when there was none.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_status(e: *const OsbError) -> u16 {
    // SAFETY: caller contract.
    guard(0, || unsafe { e.as_ref() }.map_or(0, |e| e.status))
}

/// Server error code (e.g. `SANDBOX::NOT_FOUND`), or NULL. Borrowed from `e`.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_code(e: *const OsbError) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: the caller passes NULL or a live handle (`# Safety` above);
        // `as_ref` turns NULL into None.
        unsafe { e.as_ref() }.map_or(ptr::null(), |e| opt_ptr(&e.code))
    })
}

/// Human-readable message (never NULL for a non-NULL `e`). Borrowed from `e`.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_message(e: *const OsbError) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: the caller passes NULL or a live handle (`# Safety` above);
        // `as_ref` turns NULL into None.
        unsafe { e.as_ref() }.map_or(ptr::null(), |e| e.message.as_ptr())
    })
}

/// The `X-Request-ID` of the failed request, or NULL. Borrowed from `e`.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_request_id(e: *const OsbError) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: the caller passes NULL or a live handle (`# Safety` above);
        // `as_ref` turns NULL into None.
        unsafe { e.as_ref() }.map_or(ptr::null(), |e| opt_ptr(&e.request_id))
    })
}

/// The core operation that failed (e.g. `commands.run`). Borrowed from `e`.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_operation(e: *const OsbError) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: the caller passes NULL or a live handle (`# Safety` above);
        // `as_ref` turns NULL into None.
        unsafe { e.as_ref() }.map_or(ptr::null(), |e| e.operation.as_ptr())
    })
}

/// The raw response body, or NULL. Borrowed from `e`.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_body(e: *const OsbError) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: the caller passes NULL or a live handle (`# Safety` above);
        // `as_ref` turns NULL into None.
        unsafe { e.as_ref() }.map_or(ptr::null(), |e| opt_ptr(&e.body))
    })
}

/// The whole error as JSON: `{"kind","status","code","message","request_id",
/// "operation","body","detail"}` (absent values `null`; `detail` adds the cause chain).
/// Owned: free with `osb_string_free`. NULL when `e` is NULL.
///
/// # Safety
/// `e` is NULL or a live `OsbError`.
#[no_mangle]
pub unsafe extern "C" fn osb_error_to_json(e: *const OsbError) -> *mut c_char {
    guard(ptr::null_mut(), || {
        // SAFETY: caller contract.
        let Some(e) = (unsafe { e.as_ref() }) else {
            return ptr::null_mut();
        };
        let s = |c: &Option<CString>| c.as_ref().map(|c| c.to_string_lossy().into_owned());
        let v = json!({
            "kind": e.kind,
            "status": (e.status != 0).then_some(e.status),
            "code": s(&e.code),
            "message": e.message.to_string_lossy(),
            "request_id": s(&e.request_id),
            "operation": e.operation.to_string_lossy(),
            "body": s(&e.body),
            "detail": e.detail,
        });
        into_c_string(v.to_string())
    })
}

/// Frees an error. NULL is a no-op.
///
/// # Safety
/// `e` is NULL or an `OsbError` this library handed out, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_error_free(e: *mut OsbError) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(e) }
}
