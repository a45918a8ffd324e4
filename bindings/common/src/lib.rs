//! `opensandbox-bindings`: the one op layer every language binding calls.
//!
//! A host (the conformance driver, the JVM, Python, Node, the C ABI) never calls the
//! core directly: it hands an op name and a JSON object of arguments to a [`Session`]
//! and gets back a JSON result in one dialect or one error payload. See README.md for
//! the calling convention, stated once.
//!
//! - [`Session`]: configuration, lazily built manager, one handle registry.
//! - [`ops`]: one typed async function per op; [`ops::dispatch`] by name.
//! - [`args`]: one serde struct per op, unknown keys rejected.
//! - [`stream`]: pull-based execution streams with the core-folded outcome.
//! - [`ops_manifest`]: every op, its argument fields and its result kind.
//! - No FFI, no host types, no runtime of its own: ops run on the caller's runtime.

pub mod args;
pub mod convert;
pub mod error;
pub mod manifest;
pub mod ops;
pub mod recorder;
pub mod session;
pub mod stream;
pub mod transfer;

pub use error::{ErrorPayload, OpError, OpResult};
pub use manifest::{FieldSpec, Manifest, OpSpec};
pub use session::Session;

use serde_json::Value;

/// Calls one op: parses `args` into the op's struct (unknown keys are an
/// `invalid_argument` error naming the op and the key) and runs it on the current
/// tokio runtime.
///
/// # Errors
/// The op's error payload.
pub async fn call(session: &Session, op: &str, args: Value) -> OpResult {
    ops::dispatch(session, op, args).await
}

/// Blocks this thread (not inside a runtime) until `fut`, the future of op `op`, is
/// done: an op of [`ops::RUN_IN_CALL`] runs on this thread's own runtime and
/// connections (`opensandbox_core::runtime::block_on_request_with`, no thread hand-off),
/// any other op on a worker of `home`, the shared runtime, where its runs, streams and
/// transfers keep going between calls.
///
/// # Errors
/// The task's `JoinError` when `fut` panicked on a worker.
pub fn block_on_op<F>(
    home: &tokio::runtime::Handle,
    session: &Session,
    op: &str,
    fut: F,
) -> Result<F::Output, tokio::task::JoinError>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    if ops::runs_in_call(op) {
        return opensandbox_core::runtime::block_on_request_with(home, fut);
    }
    if ops::opens_a_driven_body(op) {
        // The body is opened on a driver of its own, which the download keeps: its
        // reads through [`block_on_read`] then read the socket on the reading thread.
        if let Some(driver) = session.driver(home) {
            match driver.block_on(fut) {
                Ok(out) => return Ok(out),
                Err((_, fut)) => return home.block_on(home.spawn(fut)),
            }
        }
    }
    home.block_on(home.spawn(fut))
}

/// Blocks this thread (not inside a runtime) on `fut`, a read of download `handle`
/// (e.g. [`Session::download_read_parts`]): on the download's own driver when it was
/// opened by [`block_on_op`], so this thread reads the socket itself (no hand-off per
/// received chunk); else on `home`, the shared runtime.
pub fn block_on_read<F: std::future::Future>(
    home: &tokio::runtime::Handle,
    session: &Session,
    handle: u64,
    fut: F,
) -> F::Output {
    match session.download_driver(handle) {
        Some(driver) => match driver.block_on(fut) {
            Ok(out) => out,
            // The read drives the download from a blocking thread instead.
            Err((_, fut)) => home.block_on(fut),
        },
        None => home.block_on(fut),
    }
}

/// Whether `op` is a known op name.
pub fn is_op(op: &str) -> bool {
    ops::OPS.contains(&op)
}

/// The manifest of every op.
pub fn ops_manifest() -> Manifest {
    // The structs are probed by a unit test; a failure here is a bug of this crate.
    ops::manifest().unwrap_or(Manifest {
        version: 1,
        ops: Vec::new(),
    })
}

impl Session {
    /// [`call`] as a method.
    ///
    /// # Errors
    /// The op's error payload.
    pub async fn call(&self, op: &str, args: Value) -> OpResult {
        ops::dispatch(self, op, args).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn manifest_matches_the_dispatch_table() {
        let m = ops::manifest().unwrap();
        let names: Vec<&str> = m.ops.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ops::OPS);
        let unique: BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "duplicate op names");
        let s = Session::with_config(
            opensandbox_core::ConnectionConfig::new().with_domain("127.0.0.1:9"),
        );
        let rt = rt();
        for op in &m.ops {
            assert!(is_op(&op.name));
            assert!(!op.result.is_empty());
            // Every op is dispatchable and denies unknown keys before doing anything.
            let e = rt
                .block_on(s.call(&op.name, json!({"no_such_key": 1})))
                .unwrap_err();
            assert_eq!(e.kind, "invalid_argument", "{}: {e}", op.name);
            assert!(e.message.contains(&op.name), "{}: {}", op.name, e.message);
            assert!(
                e.message.contains("no_such_key"),
                "{}: {}",
                op.name,
                e.message
            );
            for f in &op.args {
                assert!(
                    !f.json_type.is_empty() && f.json_type != "any",
                    "{}.{} has no type",
                    op.name,
                    f.name
                );
                assert!(
                    f.name
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                    "{}",
                    f.name
                );
            }
            // Every sandbox-bound op takes a connection too.
            if op.args.iter().any(|f| f.name == "sandbox") {
                assert!(
                    op.args.iter().any(|f| f.name == "connection"),
                    "{}",
                    op.name
                );
            }
        }
        let v = serde_json::to_value(ops_manifest()).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(rt.block_on(s.call("manifest", Value::Null)).unwrap(), v);
        assert_eq!(v["ops"][0]["args"][0]["type"], "string");
    }

    /// Every op a conformance case sends (but the harness's own) is an op of this layer:
    /// the list is read from the cases, so a new case cannot outrun the layer unnoticed.
    #[test]
    fn every_op_of_the_conformance_cases_is_here() {
        fn collect(v: &Value, ops: &mut BTreeSet<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(op)) = m.get("op") {
                        ops.insert(op.clone());
                    }
                    m.values().for_each(|x| collect(x, ops));
                }
                Value::Array(a) => a.iter().for_each(|x| collect(x, ops)),
                _ => {}
            }
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/cases");
        let mut ops = BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                collect(&serde_json::from_str(&text).unwrap(), &mut ops);
            }
        }
        assert!(
            ops.len() > 50,
            "read {} ops from {}",
            ops.len(),
            dir.display()
        );
        // `pool.*` ops are the client-side pools, written in each host language over
        // the other ops (conformance/PROTOCOL.md §2.11): the op layer has none.
        for op in ops
            .iter()
            .filter(|op| !op.starts_with("harness.") && !op.starts_with("pool."))
        {
            assert!(
                is_op(op),
                "conformance op {op} is not an op of bindings/common"
            );
        }
    }

    #[test]
    fn unknown_ops_and_bad_args_are_invalid_argument() {
        let s = Session::new();
        let rt = rt();
        let e = rt
            .block_on(s.call("sandbox.explode", json!({})))
            .unwrap_err();
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.contains("sandbox.explode"));
        let e = rt
            .block_on(s.call("commands.run", json!({"sandbox": "x"})))
            .unwrap_err();
        // Parsed, then rejected before any request: neither command nor argv.
        assert!(
            e.kind == "invalid_argument" || e.kind == "connection",
            "{e}"
        );
        let e = rt
            .block_on(s.call("execution.next_batch", json!({"handle": 99})))
            .unwrap_err();
        assert!(e.message.contains("99"), "{}", e.message);
        let e = rt
            .block_on(s.call("release", json!({"handle": "x"})))
            .unwrap_err();
        assert!(e.message.starts_with("release:"), "{}", e.message);
        assert_eq!(
            rt.block_on(s.call("release", json!({"handle": 5})))
                .unwrap(),
            json!({"released": false})
        );
    }

    #[test]
    fn config_handles_round_trip() {
        let s = Session::new();
        let rt = rt();
        let h = rt
            .block_on(s.call(
                "config.new",
                json!({"domain": "example.test:8080", "api_key": "k", "protocol": "https"}),
            ))
            .unwrap()["handle"]
            .clone();
        let info = rt
            .block_on(s.call("config.info", json!({"connection": h})))
            .unwrap();
        assert_eq!(info["domain"], "example.test:8080");
        assert_eq!(info["api_key"], "k");
        assert!(info["base_url"].as_str().unwrap().starts_with("https://"));
        let e = rt
            .block_on(s.call("config.new", json!({"protocol": "gopher"})))
            .unwrap_err();
        assert_eq!(e.kind, "invalid_argument");
    }
}
