//! The core's tests against the fault-injecting stub server, in one test binary (one
//! link instead of one per file). Tests that measure the process's memory
//! (`real_server`, `transfer_1gb`) or set environment variables (`config_env`) stay
//! in `tests/<name>.rs`, each its own process.
//! Run one area with `cargo test -p opensandbox-core --test suite stub::`.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod endpoint_cache;
mod stub;
