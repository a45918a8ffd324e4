//! The agent's integration tests, one module per area, in one test binary: one link
//! and one copy of the generic code instead of one per file. Tests that set one of the
//! agent's process-wide settings (output framing, the env file's path) or signal the
//! process stay in `tests/<name>.rs`, each its own binary.
//! Run one area with `cargo test -p opensandbox-agent --test suite pty_ws::`.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod exec_support;
mod files_support;

mod exec_code;
mod exec_commands;
mod exec_operations;
mod exec_sessions;
mod files_big;
mod files_metrics;
mod files_routes;
mod pty_ws;
