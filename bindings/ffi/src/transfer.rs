//! `OsbChunk`: one chunk of a download pulled with `osb_session_download_next`, handed to
//! the host as an owned buffer.

use bytes::Bytes;

use crate::util::guard;

/// One chunk of a download (opaque). Freed with `osb_chunk_free`.
pub struct OsbChunk {
    data: Bytes,
}

impl OsbChunk {
    pub(crate) fn new(data: Bytes) -> OsbChunk {
        OsbChunk { data }
    }
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
