//! Core errors → napi errors. The reason is a marker plus a JSON payload the JS layer
//! (`lib/errors.js`) decodes into the official exception classes; nothing is lost
//! (kind, HTTP status, server code, request id, message, raw body, operation, cause).

use opensandbox_core::Error;

/// Prefix of an encoded error reason (a JS `Error` message starting with it is ours).
pub const MARKER: &str = "\u{1}OSB";

/// Encodes a core error.
pub fn to_napi(e: Error) -> napi::Error {
    let cause = std::error::Error::source(&e).map(|s| s.to_string());
    let payload = serde_json::json!({
        "kind": e.kind().as_str(),
        "status": e.status(),
        "code": e.code(),
        "requestId": e.request_id(),
        "message": e.message(),
        "body": e.body(),
        "operation": e.operation(),
        "cause": cause,
    });
    napi::Error::new(napi::Status::GenericFailure, format!("{MARKER}{payload}"))
}
