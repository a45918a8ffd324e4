//! The one error payload of every op: `{kind, status, code, message, request_id,
//! operation}`, with the core's stable kinds (`api`, `not_found`, `unauthorized`,
//! `timeout`, `ready_timeout`, `connection`, `stream`, `invalid_argument`,
//! `cancelled`, `internal`).

use serde::Serialize;
use serde_json::Value;

/// Why an op did not produce a result. Serialises to the error payload; derefs to
/// its fields ([`ErrorPayload`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct OpError(pub Box<ErrorPayload>);

/// The fields of an [`OpError`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorPayload {
    /// One of the core's [`opensandbox_core::ErrorKind`] names.
    pub kind: String,
    /// HTTP status, when the server answered.
    pub status: Option<u16>,
    /// Server error code (`SANDBOX::NOT_FOUND`), when the server sent one.
    pub code: Option<String>,
    /// Human-readable message.
    pub message: String,
    /// `X-Request-ID` of the failed request, when known.
    pub request_id: Option<String>,
    /// The op (or core operation) that failed.
    pub operation: Option<String>,
    /// The server's raw response body, when the server answered with one (added
    /// 2026-12-01; hosts expose it as e.g. `rawBody`).
    pub body: Option<String>,
}

impl OpError {
    /// An error of `kind` raised by the op layer itself (no HTTP exchange).
    pub fn new(kind: &str, operation: &str, message: impl Into<String>) -> OpError {
        OpError(Box::new(ErrorPayload {
            kind: kind.to_owned(),
            status: None,
            code: None,
            message: message.into(),
            request_id: None,
            operation: Some(operation.to_owned()),
            body: None,
        }))
    }

    /// `invalid_argument` for `op`: a bad, missing or unknown argument, a stale handle.
    pub fn invalid(operation: &str, message: impl Into<String>) -> OpError {
        OpError::new("invalid_argument", operation, message)
    }

    /// `internal` for `op`.
    pub fn internal(operation: &str, message: impl Into<String>) -> OpError {
        OpError::new("internal", operation, message)
    }

    /// The payload as JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl std::fmt::Display for OpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for OpError {}

impl From<opensandbox_core::Error> for OpError {
    fn from(e: opensandbox_core::Error) -> Self {
        OpError(Box::new(ErrorPayload {
            kind: e.kind().as_str().to_owned(),
            status: e.status(),
            code: e.code().map(str::to_owned),
            message: e.message().to_owned(),
            request_id: e.request_id().map(str::to_owned),
            operation: Some(e.operation().to_owned()),
            body: e.body().map(str::to_owned),
        }))
    }
}

impl std::ops::Deref for OpError {
    type Target = ErrorPayload;
    fn deref(&self) -> &ErrorPayload {
        &self.0
    }
}

/// The outcome of one op: a JSON result in the one dialect, or the error payload.
pub type OpResult = Result<Value, OpError>;

#[cfg(test)]
mod tests {
    use super::*;
    use opensandbox_core::{Error, ErrorKind};

    #[test]
    fn payload_keeps_kind_status_code_request_id_and_operation() {
        let e = Error::new(ErrorKind::NotFound, "sandbox.get_info", "gone")
            .with_status(404)
            .with_code("SANDBOX::NOT_FOUND")
            .with_request_id(Some("r1".into()))
            .with_body(r#"{"code":"SANDBOX::NOT_FOUND"}"#);
        let v = OpError::from(e).to_json();
        assert_eq!(v["kind"], "not_found");
        assert_eq!(v["status"], 404);
        assert_eq!(v["code"], "SANDBOX::NOT_FOUND");
        assert_eq!(v["request_id"], "r1");
        assert_eq!(v["message"], "gone");
        assert_eq!(v["operation"], "sandbox.get_info");
        assert_eq!(v["body"], r#"{"code":"SANDBOX::NOT_FOUND"}"#);
        let bad = OpError::invalid("x.op", "bad").to_json();
        assert_eq!(bad["kind"], "invalid_argument");
        assert_eq!(bad["status"], serde_json::Value::Null);
        assert_eq!(bad["body"], serde_json::Value::Null);
    }
}
