//! C ABI over `opensandbox-core`, used by the Go and .NET packages.
//!
//! Every export is a thin shim: it checks its arguments, runs core code under
//! `catch_unwind`, and reports through an `OsbError` or a completion callback. The
//! contract (handles, ownership of every pointer, callbacks, cancellation, streams)
//! is in `API.md`; the header `include/opensandbox.h` is generated from this source
//! by cbindgen (`tests/header.rs` fails when the committed header drifts).
#![deny(missing_docs)]

use std::ffi::c_char;

mod cancel;
mod config;
mod error;
mod ops;
mod sandbox;
mod session;
mod stream;
mod transfer;
mod util;

pub use cancel::*;
pub use config::*;
pub use error::*;
pub use ops::{MANAGER_OPS, SANDBOX_OPS};
pub use sandbox::*;
pub use session::*;
pub use stream::*;
pub use transfer::*;
pub use util::OsbCallback;

/// Version of this C ABI. Bumped only for incompatible changes (none so far).
pub const OSB_ABI_VERSION: u32 = 1;

/// The package version, e.g. `0.1.0`. Static string (never freed).
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

/// Frees an owned `char *` returned by this library (JSON results, `*_to_json`,
/// `*_describe`). NULL is a no-op. Never pass a string this library did not allocate,
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
