//! Conformance driver of the Rust SDK (`opensandbox-core`).
//!
//! Speaks the driver protocol of `conformance/PROTOCOL.md`: a handshake line, then one
//! JSON request per stdin line and one JSON response per stdout line. Every operation
//! goes through the core's public API only, exactly as a Rust user would call it, so
//! the conformance matrix shows what users of this SDK get.

mod args;
mod convert;
mod ops;
mod protocol;
mod recorder;
mod state;

use std::io::Write;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::protocol::Failure;
use crate::state::State;

fn write_line(value: &Value) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    out.write_all(b"\n")?;
    out.flush()
}

fn handshake() -> Value {
    json!({
        "hello": "opensandbox-conformance",
        "protocol": 1,
        "language": "rust",
        "sdk": "opensandbox-core",
        "sdk_version": env!("CARGO_PKG_VERSION"),
        "ops": ops::OPS,
    })
}

/// One response line for one request line. A line that is not a request still gets
/// an answer (with a null id) so the harness sees the problem instead of waiting.
async fn answer(state: &mut State, line: &str) -> Value {
    let request: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return protocol::response(
                Value::Null,
                Err(Failure::Driver(format!("request is not JSON: {e}"))),
            )
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let Some(op) = request.get("op").and_then(Value::as_str) else {
        return protocol::response(id, Err(Failure::Driver("request has no op".into())));
    };
    let args = request.get("args").cloned().unwrap_or_else(|| json!({}));
    let result = ops::dispatch(state, op, args::Args::new(op, args)).await;
    protocol::response(id, result)
}

async fn serve() -> std::io::Result<()> {
    write_line(&handshake())?;
    let mut state = State::new();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let response = answer(&mut state, &line).await;
        write_line(&response)?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("opensandbox-conformance-rust: cannot start the runtime: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match runtime.block_on(serve()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("opensandbox-conformance-rust: stdin/stdout failed: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
