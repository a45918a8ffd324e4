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

use opensandbox_bindings::stream::{Batch, Item};
use opensandbox_bindings::OpError;

/// Item kinds of the layout.
pub(crate) const KIND_JSON: u8 = 0;
pub(crate) const KIND_STDOUT: u8 = 1;
pub(crate) const KIND_STDERR: u8 = 2;

/// `batch` in the layout above.
pub fn encode(op: &str, batch: &Batch) -> Result<Vec<u8>, OpError> {
    let text: usize = batch
        .events
        .iter()
        .map(|i| match i {
            Item::Output { text, .. } => text.len(),
            Item::Json(_) => 256,
        })
        .sum();
    let mut out = Vec::with_capacity(1 + text + batch.events.len() * 13);
    out.push(u8::from(batch.done));
    for item in &batch.events {
        match item {
            Item::Output {
                stderr,
                text,
                timestamp,
            } => {
                let kind = if *stderr { KIND_STDERR } else { KIND_STDOUT };
                push(op, &mut out, kind, *timestamp, text.as_bytes())?;
            }
            Item::Json(v) => {
                let json = serde_json::to_vec(v)
                    .map_err(|e| OpError::internal(op, format!("cannot encode an item: {e}")))?;
                push(op, &mut out, KIND_JSON, 0, &json)?;
            }
        }
    }
    Ok(out)
}

fn push(op: &str, out: &mut Vec<u8>, kind: u8, ts: i64, data: &[u8]) -> Result<(), OpError> {
    let len = u32::try_from(data.len())
        .map_err(|_| OpError::internal(op, "an item is larger than 4 GiB"))?;
    out.push(kind);
    out.extend_from_slice(&ts.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(data);
    Ok(())
}
