//! Request extractors whose rejections use the execd error shape.
//!
//! axum's own `Json`/`Query` reject with plain-text 415/422 bodies; execd clients expect
//! `400 {"code","message"}`. Routes take [`ApiJson`], [`ApiQuery`] or [`QueryPairs`]
//! instead.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body; any rejection (bad content type, syntax, shape, size) → 400
/// `INVALID_REQUEST_BODY` (413 stays 413 for an over-long body).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    let status = rejection.status();
    let message = rejection.body_text();
    if status == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(status, "INVALID_REQUEST_BODY", message);
    }
    ApiError::bad_request("INVALID_REQUEST_BODY", message)
}

/// A typed query string; rejections → 400 `MISSING_QUERY` when a field is absent,
/// `INVALID_REQUEST_BODY` otherwise.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Self(v)),
            Err(rejection) => Err(query_rejection(rejection)),
        }
    }
}

fn query_rejection(rejection: QueryRejection) -> ApiError {
    let message = rejection.body_text();
    if message.contains("missing field") {
        ApiError::bad_request("MISSING_QUERY", message)
    } else {
        ApiError::bad_request("INVALID_REQUEST_BODY", message)
    }
}

/// The raw query as decoded `(key, value)` pairs, for parameters that may repeat
/// (`?path=a&path=b`), which serde's urlencoded format cannot express.
#[derive(Debug, Clone, Default)]
pub struct QueryPairs(pub Vec<(String, String)>);

impl QueryPairs {
    /// Every value of `key`, in request order.
    pub fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The first value of `key`.
    pub fn first(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first value of `key`, or 400 `MISSING_QUERY` if absent or empty.
    pub fn required(&self, key: &str) -> Result<&str, ApiError> {
        match self.first(key) {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(ApiError::bad_request(
                "MISSING_QUERY",
                format!("missing query parameter {key:?}"),
            )),
        }
    }

    /// The first value of `key` parsed as an integer, or 400 if it is not one.
    pub fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.first(key) {
            None | Some("") => Ok(None),
            Some(v) => v.trim().parse::<i64>().map(Some).map_err(|_| {
                ApiError::bad_request(
                    "INVALID_REQUEST_BODY",
                    format!("query parameter {key:?} must be an integer, got {v:?}"),
                )
            }),
        }
    }

    /// The first value of `key` as a boolean (`true`/`1`/`yes`, case-insensitive).
    pub fn flag(&self, key: &str) -> bool {
        matches!(
            self.first(key).map(str::to_ascii_lowercase).as_deref(),
            Some("true" | "1" | "yes")
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        Ok(Self(
            url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_kept_in_order() {
        let q = QueryPairs(
            url::form_urlencoded::parse(b"path=%2Fa&x=1&path=b%20c")
                .into_owned()
                .collect(),
        );
        assert_eq!(q.all("path"), vec!["/a".to_string(), "b c".to_string()]);
        assert_eq!(q.int("x").unwrap(), Some(1));
        assert!(q.required("nope").is_err());
    }

    #[test]
    fn non_integer_is_a_client_error() {
        let q = QueryPairs(vec![("depth".into(), "two".into())]);
        let err = q.int("depth").unwrap_err();
        assert_eq!(err.status, axum::http::StatusCode::BAD_REQUEST);
    }
}
