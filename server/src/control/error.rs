//! The lifecycle error shape: every failure leaves the control plane as
//! `{"code": .., "message": ..}`, including the rejections of axum's own extractors,
//! which would otherwise answer with plain text (and 415/422 statuses clients don't
//! expect from this API).

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// An error returned by a control-plane route.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    /// Namespaced code, e.g. `SANDBOX::NOT_FOUND`. Clients key on the status; the
    /// code is for humans and for tests.
    pub code: &'static str,
    pub message: String,
}

pub type ApiResult<T> = Result<T, ApiError>;

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

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::bad_request("SANDBOX::INVALID_PARAMETER", message)
    }

    pub fn not_supported(message: impl Into<String>) -> Self {
        Self::bad_request("SANDBOX::API_NOT_SUPPORTED", message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    pub fn sandbox_not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "SANDBOX::NOT_FOUND",
            format!("sandbox {id} not found"),
        )
    }

    pub fn snapshot_not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "SNAPSHOT::NOT_FOUND",
            format!("snapshot {id} not found"),
        )
    }

    pub fn unauthorized(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "SERVER::INTERNAL_ERROR",
            message,
        )
    }

    /// For failures of the server itself (store, filesystem): the full context goes to
    /// the log, the client gets the same text.
    pub fn from_anyhow(err: anyhow::Error) -> Self {
        tracing::error!(error = format!("{err:#}"), "internal error");
        Self::internal(format!("{err:#}"))
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

impl From<anyhow::Error> for ApiError {
    fn from(err: anyhow::Error) -> Self {
        Self::from_anyhow(err)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "code": self.code, "message": self.message });
        (self.status, Json(body)).into_response()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        // Every body problem (syntax, shape, content type, size) is the caller's: 400,
        // except an oversized body, which keeps its 413.
        let status = match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_REQUEST,
        };
        Self::new(
            status,
            "SANDBOX::INVALID_REQUEST_BODY",
            rejection.body_text(),
        )
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        Self::bad_request("SANDBOX::INVALID_PARAMETER", rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        Self::bad_request("SANDBOX::INVALID_PARAMETER", rejection.body_text())
    }
}

/// `axum::Json` whose rejections are [`ApiError`]s.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `axum::extract::Query` whose rejections are [`ApiError`]s.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

/// `axum::extract::Path` whose rejections are [`ApiError`]s.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct ApiPath<T>(pub T);
