//! The binary layout of `osb_session_next_items_blocking` (src/items.rs, API.md §4),
//! checked byte by byte: kinds 0 = JSON object, 1 = stdout line, 2 = stderr line.

// A test crate: a failed unwrap/expect is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use opensandbox_bindings::stream::{Batch, Item};
use opensandbox_ffi::items::encode;
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
    assert_eq!((k, ts), (0, 0));
    let v: serde_json::Value = serde_json::from_slice(&d).unwrap();
    assert_eq!(v["type"], "init");
    assert_eq!(next(), (1, 7, "héllo".as_bytes().to_vec()));
    assert_eq!(next(), (2, -1, vec![]));
    assert_eq!(at, b.len());
}
