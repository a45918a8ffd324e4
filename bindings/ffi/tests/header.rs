//! The committed header must equal what cbindgen generates from the source (build.rs
//! runs cbindgen into `$OUT_DIR`).
//! `OPENSANDBOX_BLESS=1 cargo test -p opensandbox-ffi --test header` rewrites it.

// A test crate: a failed unwrap/expect is a failed test, and every unsafe call passes
// handles this file just created (the contracts are in bindings/ffi/API.md).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::undocumented_unsafe_blocks
)]

use std::path::PathBuf;

/// What build.rs generated from the current source.
fn generate() -> String {
    include_str!(concat!(env!("OUT_DIR"), "/opensandbox.h")).to_owned()
}

#[test]
fn header_matches_source() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("include/opensandbox.h");
    let fresh = generate();
    if std::env::var_os("OPENSANDBOX_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write header");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/opensandbox.h is stale: run `OPENSANDBOX_BLESS=1 cargo test -p opensandbox-ffi --test header`"
    );
}

#[test]
fn every_export_is_declared() {
    // Every #[no_mangle] function in the source appears in the header (guards against
    // cbindgen silently skipping one).
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let header = generate();
    let mut count = 0;
    for entry in std::fs::read_dir(src).expect("src dir") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if line.trim() == "#[no_mangle]" {
                let sig = lines.next().unwrap_or_default();
                let name = sig
                    .split("fn ")
                    .nth(1)
                    .and_then(|s| s.split('(').next())
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                assert!(
                    !name.is_empty(),
                    "cannot parse export after #[no_mangle]: {sig}"
                );
                let declared = header.match_indices(&format!("{name}(")).any(|(i, _)| {
                    header[..i]
                        .chars()
                        .last()
                        .is_some_and(|c| c == ' ' || c == '*')
                });
                assert!(declared, "{name} is exported but missing from the header");
                count += 1;
            }
        }
    }
    // 31 since ABI 2 (the op-layer session and its plumbing only).
    assert!(count >= 31, "expected at least 31 exports, found {count}");
}
