//! Conformance driver of the Rust SDK: a thin stdin/stdout JSON-lines loop over the
//! shared op layer (`opensandbox-bindings`), which calls `opensandbox-core`.
//!
//! Speaks the driver protocol of `conformance/PROTOCOL.md`: a handshake line, then one
//! JSON request per stdin line and one JSON response per stdout line. The ops, their
//! argument keys, result shapes and error payloads are the op layer's own (its README),
//! so this column of the matrix shows what every binding built on it gets.

use std::io::Write;

use opensandbox_bindings::{ops, Session};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Ops of the op layer that are transport details, not conformance operations.
const HIDDEN: &[&str] = &[
    "config.new",
    "config.info",
    "manager.new",
    "release",
    "manifest",
    "upload.open",
    "upload.finish",
    "upload.abort",
    "download.open",
    "download.close",
];

fn write_line(value: &Value) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

fn handshake() -> Value {
    let ops: Vec<&str> = ops::OPS
        .iter()
        .copied()
        .filter(|op| !HIDDEN.contains(op))
        .collect();
    json!({
        "hello": "opensandbox-conformance",
        "protocol": 1,
        "language": "rust",
        "sdk": "opensandbox-core",
        "sdk_version": env!("CARGO_PKG_VERSION"),
        "ops": ops,
    })
}

fn failure(id: Value, kind: &str, message: String) -> Value {
    json!({"id": id, "ok": false, "error": {"kind": kind, "message": message}})
}

/// One response line for one request line. A line that is not a request still gets
/// an answer (with a null id) so the harness sees the problem instead of waiting.
async fn answer(session: &Session, line: &str) -> Value {
    let request: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return failure(
                Value::Null,
                "driver_error",
                format!("request is not JSON: {e}"),
            )
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let Some(op) = request.get("op").and_then(Value::as_str) else {
        return failure(id, "driver_error", "request has no op".into());
    };
    if !opensandbox_bindings::is_op(op) || HIDDEN.contains(&op) {
        return failure(
            id,
            "unsupported_op",
            format!("the rust driver does not implement {op}"),
        );
    }
    let args = request.get("args").cloned().unwrap_or_else(|| json!({}));
    match session.call(op, args).await {
        Ok(result) => json!({"id": id, "ok": true, "result": result}),
        Err(e) => json!({"id": id, "ok": false, "error": e.to_json()}),
    }
}

async fn serve() -> std::io::Result<()> {
    write_line(&handshake())?;
    let session = Session::new();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let response = answer(&session, &line).await;
        write_line(&response)?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    // The core's shared runtime: the driver runs on the same runtime every binding uses.
    match opensandbox_core::runtime::block_on(serve()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("opensandbox-conformance-rust: stdin/stdout failed: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
