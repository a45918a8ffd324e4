//! The execd error shape: every failure leaves the agent as `{code, message}` with a
//! status a client can act on (4xx for the caller's mistakes, 5xx only for ours).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// An error returned by an execd route, rendered as `{"code": .., "message": ..}`.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    /// Upstream execd code, e.g. `FILE_NOT_FOUND`, `INVALID_REQUEST_BODY`.
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "RUNTIME_ERROR", message)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "code": self.code, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
