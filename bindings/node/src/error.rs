//! Op-layer errors → napi errors. The reason is a marker plus a JSON payload the JS
//! layer (`lib/errors.js`) decodes into the official exception classes: the op layer's
//! one error payload (kind, HTTP status, server code, request id, message, operation, raw body).

use opensandbox_bindings::OpError;

/// Prefix of an encoded error reason (a JS `Error` message starting with it is ours).
pub const MARKER: &str = "\u{1}OSB";

/// Encodes an op-layer error.
pub fn to_napi(e: OpError) -> napi::Error {
    let payload = serde_json::json!({
        "kind": e.kind,
        "status": e.status,
        "code": e.code,
        "requestId": e.request_id,
        "message": e.message,
        "operation": e.operation,
        "body": e.body,
    });
    napi::Error::new(napi::Status::GenericFailure, format!("{MARKER}{payload}"))
}
