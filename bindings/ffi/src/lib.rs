//! C ABI over the op layer of `bindings/common` (`opensandbox-bindings`), used by the Go
//! and .NET packages.
//!
//! Every export is a thin shim: it checks its arguments, runs an op of an `OsbSession`
//! on the caller's explicit `OsbRuntime` under `catch_unwind`, and reports through an
//! `OsbError` or a completion callback. Op names, argument keys, result shapes and the
//! folded outcome of a run are the op layer's (bindings/common/README.md); the contract
//! of this ABI (ownership of every pointer, callbacks, cancellation, bytes) is in
//! `API.md`; the header `include/opensandbox.h` is generated from this source by
//! cbindgen (`tests/header.rs` fails when the committed header drifts).
#![deny(missing_docs)]

use std::ffi::c_char;

mod cancel;
mod error;
mod items;
mod session;
mod transfer;
mod util;

pub use cancel::*;
pub use error::*;
pub use session::*;
pub use transfer::*;
pub use util::OsbCallback;

/// Version of this C ABI. Bumped only for incompatible changes: 2 (2026-12-01) removed
/// the handle-based functions (`osb_config_*`, `osb_manager_*`, `osb_sandbox_*`,
/// `osb_stream_*`, `osb_event_*`, `osb_download_*`, `osb_upload_*`) and
/// `osb_runtime_default`; everything goes through `osb_session_*` ops.
pub const OSB_ABI_VERSION: u32 = 2;

/// The package version, e.g. `1.1.1`. Static string (never freed).
#[no_mangle]
pub extern "C" fn osb_version() -> *const c_char {
    static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

/// The ABI version (`OSB_ABI_VERSION`).
#[no_mangle]
pub extern "C" fn osb_abi_version() -> u32 {
    OSB_ABI_VERSION
}

/// Frees an owned `char *` returned by this library (JSON results, `*_to_json`). NULL is a no-op. Never pass a string this library did not allocate,
/// nor a borrowed one.
///
/// # Safety
/// `s` is NULL or an owned string from this library, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_string_free(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    util::guard((), || {
        // SAFETY: caller contract: `s` came from `CString::into_raw`.
        drop(unsafe { std::ffi::CString::from_raw(s) });
    });
}
