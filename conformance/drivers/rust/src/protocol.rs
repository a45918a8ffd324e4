//! Responses of the driver protocol and the mapping of failures to `error` objects.

use serde_json::{json, Value};

/// Why an operation did not produce a result.
#[derive(Debug)]
pub enum Failure {
    /// The SDK reported an error: its kind is what the case checks.
    Sdk(opensandbox_core::Error),
    /// The request itself was unusable (missing or mistyped argument).
    Driver(String),
    /// The driver does not implement the op.
    Unsupported(String),
}

impl From<opensandbox_core::Error> for Failure {
    fn from(e: opensandbox_core::Error) -> Self {
        Failure::Sdk(e)
    }
}

/// The outcome of one operation.
pub type OpResult = Result<Value, Failure>;

/// The `error` object of a failed response.
pub fn error_json(failure: &Failure) -> Value {
    match failure {
        Failure::Sdk(e) => json!({
            "kind": e.kind().as_str(),
            "status": e.status(),
            "code": e.code(),
            "request_id": e.request_id(),
            "message": e.message(),
            "operation": e.operation(),
        }),
        Failure::Driver(message) => json!({"kind": "driver_error", "message": message}),
        Failure::Unsupported(op) => json!({
            "kind": "unsupported_op",
            "message": format!("the rust driver does not implement {op}"),
        }),
    }
}

/// The response line for request `id`.
pub fn response(id: Value, result: OpResult) -> Value {
    match result {
        Ok(result) => json!({"id": id, "ok": true, "result": result}),
        Err(failure) => json!({"id": id, "ok": false, "error": error_json(&failure)}),
    }
}
