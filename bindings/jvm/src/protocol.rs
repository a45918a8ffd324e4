//! Outcomes of native operations and their JSON form for the Java side, which turns an
//! error object into the matching `SandboxException` subclass.

use serde_json::{json, Value};

/// Why an operation did not produce a result.
#[derive(Debug)]
pub enum Failure {
    /// The core reported an error.
    Sdk(opensandbox_core::Error),
    /// The arguments from Java were unusable (reported as `invalid_argument`).
    Driver(String),
    /// Unknown operation (a version mismatch between jar and library).
    Unsupported(String),
}

impl From<opensandbox_core::Error> for Failure {
    fn from(e: opensandbox_core::Error) -> Self {
        Failure::Sdk(e)
    }
}

pub type OpResult = Result<Value, Failure>;

/// The error object: kind, status, server code, request id, message, operation.
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
        Failure::Driver(message) => json!({"kind": "invalid_argument", "message": message}),
        Failure::Unsupported(op) => json!({
            "kind": "internal",
            "message": format!("the native library does not implement {op} (jar and library versions differ?)"),
        }),
    }
}

pub fn internal(message: impl Into<String>) -> Failure {
    Failure::Sdk(opensandbox_core::Error::internal("jni", message))
}

impl From<jni::errors::Error> for Failure {
    fn from(e: jni::errors::Error) -> Self {
        internal(format!("JNI: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opensandbox_core::{Error, ErrorKind};

    #[test]
    fn error_json_keeps_kind_status_code_and_request_id() {
        let e = Error::new(ErrorKind::NotFound, "sandbox.get_info", "gone")
            .with_status(404)
            .with_code("SANDBOX::NOT_FOUND")
            .with_request_id(Some("r1".into()));
        let v = error_json(&Failure::Sdk(e));
        assert_eq!(v["kind"], "not_found");
        assert_eq!(v["status"], 404);
        assert_eq!(v["code"], "SANDBOX::NOT_FOUND");
        assert_eq!(v["request_id"], "r1");
        assert_eq!(v["message"], "gone");
        assert_eq!(
            error_json(&Failure::Driver("bad".into()))["kind"],
            "invalid_argument"
        );
        assert_eq!(
            error_json(&Failure::Unsupported("x".into()))["kind"],
            "internal"
        );
    }
}
