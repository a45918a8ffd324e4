//! Cross-cutting HTTP behaviour: the `X-Request-ID` on every response, API-key
//! authentication, and `{code, message}` answers for unknown routes and methods.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::security::constant_time_eq;
use super::Control;

pub const API_KEY_HEADER: &str = "OPEN-SANDBOX-API-KEY";
const REQUEST_ID_HEADER: &str = "x-request-id";

/// Echoes the client's `X-Request-ID` or makes one (32 hex chars, like upstream's
/// `uuid4().hex`), and puts it on the response whatever the response is.
pub async fn request_id(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .filter(|v| !v.is_empty() && v.len() <= 256)
        .cloned()
        .unwrap_or_else(|| {
            let fresh = uuid::Uuid::new_v4().simple().to_string();
            HeaderValue::from_str(&fresh).unwrap_or(HeaderValue::from_static("0"))
        });
    // The sandbox sees the same id, so its logs can be correlated.
    request.headers_mut().insert(REQUEST_ID_HEADER, id.clone());
    let mut response = next.run(request).await;
    response.headers_mut().insert(REQUEST_ID_HEADER, id);
    response
}

/// Requires the API key on the lifecycle routes (not on /health nor the proxy route).
pub async fn require_api_key(
    State(control): State<Arc<Control>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(expected) = &control.api_key {
        match request.headers().get(API_KEY_HEADER) {
            None => {
                return ApiError::unauthorized(
                    "MISSING_API_KEY",
                    format!("header {API_KEY_HEADER} is required"),
                )
                .into_response()
            }
            Some(given) if !api_key_matches(given.as_bytes(), expected) => {
                return ApiError::unauthorized("INVALID_API_KEY", "the API key is not valid")
                    .into_response()
            }
            Some(_) => {}
        }
    }
    next.run(request).await
}

/// Compares digests, so neither the key's bytes nor its length leak through timing.
fn api_key_matches(given: &[u8], expected: &str) -> bool {
    use sha2::{Digest, Sha256};
    constant_time_eq(&Sha256::digest(given), &Sha256::digest(expected.as_bytes()))
}

pub async fn route_not_found(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "ROUTE_NOT_FOUND",
        format!("no route for {} {}", request.method(), request.uri().path()),
    )
}

pub async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        format!(
            "method {} is not allowed on {}",
            request.method(),
            request.uri().path()
        ),
    )
}
