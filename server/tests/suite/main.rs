//! The server's integration tests, one module per area, in one test binary: one link
//! and one copy of the generic code instead of one per file (this cut `make test`'s
//! build by minutes). A test that needs a process of its own (process-wide settings,
//! signals, memory peaks) goes in `tests/<name>.rs` beside this directory instead.
//! Run one area with `cargo test -p opensandbox-server --test suite hardening::`.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

mod control_api;
mod control_sandbox;
mod credential_vault;
mod hardening;
mod isolated_runc;
mod isolation;
mod lifecycle_11;
mod lifecycle_hooks;
mod oci_registry;
mod oci_runc;
mod openapi_contract;
mod pvc_cleanup;
mod templates;
