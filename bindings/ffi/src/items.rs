//! The binary layout of `osb_session_next_items_blocking` (API.md §4): a run's pulled
//! items for hosts that would otherwise decode a JSON object per output line. Output
//! lines travel as their raw text; every other item as its op-layer JSON object.
//!
//! ```text
//! u8 done (1 when the run's end item is in this batch or was pulled before)
//! then per item, in order:
//!   u8  kind       0 = JSON object, 1 = stdout line, 2 = stderr line
//!   i64 timestamp  (little-endian; milliseconds; 0 for kind 0)
//!   u32 length     (little-endian) of the bytes that follow
//!   [length] UTF-8 text (kinds 1, 2) or the item's JSON object (kind 0)
//! ```

use opensandbox_bindings::stream::Batch;
use opensandbox_bindings::OpError;

/// `batch` in the layout above (the op layer's `Batch::encode`, which the JNI library
/// hands Java in the same form; its byte-by-byte test is in bindings/common/src/stream.rs).
pub(crate) fn encode(op: &str, batch: &Batch) -> Result<Vec<u8>, OpError> {
    batch.encode(op)
}
