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
/// hands Java in the same form).
pub(crate) fn encode(op: &str, batch: &Batch) -> Result<Vec<u8>, OpError> {
    batch.encode(op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opensandbox_bindings::stream::{Item, KIND_JSON, KIND_STDERR, KIND_STDOUT};
    use serde_json::json;

    #[test]
    fn items_are_laid_out_in_order() {
        let batch = Batch {
            events: vec![
                Item::Json(json!({"type": "init", "id": "x", "timestamp": 1})),
                Item::Output {
                    stderr: false,
                    text: "héllo".into(),
                    timestamp: 7,
                },
                Item::Output {
                    stderr: true,
                    text: String::new(),
                    timestamp: -1,
                },
            ],
            done: true,
        };
        let b = encode("t", &batch).unwrap();
        assert_eq!(b[0], 1);
        let mut at = 1;
        let mut next = || {
            let kind = b[at];
            let ts = i64::from_le_bytes(b[at + 1..at + 9].try_into().unwrap());
            let len = u32::from_le_bytes(b[at + 9..at + 13].try_into().unwrap()) as usize;
            let data = b[at + 13..at + 13 + len].to_vec();
            at += 13 + len;
            (kind, ts, data)
        };
        let (k, ts, d) = next();
        assert_eq!((k, ts), (KIND_JSON, 0));
        let v: serde_json::Value = serde_json::from_slice(&d).unwrap();
        assert_eq!(v["type"], "init");
        assert_eq!(next(), (KIND_STDOUT, 7, "héllo".as_bytes().to_vec()));
        assert_eq!(next(), (KIND_STDERR, -1, vec![]));
        assert_eq!(at, b.len());
    }
}
