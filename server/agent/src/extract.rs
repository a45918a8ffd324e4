//! Request extractors whose rejections use the execd error shape.
//!
//! axum's own `Json`/`Query` reject with plain-text 415/422 bodies; execd clients expect
//! `400 {"code","message"}`. Routes take [`ApiJson`], [`ApiQuery`] or [`QueryPairs`]
//! instead; the streaming routes, which upstream lets a body arrive without a content
//! type, take [`AnyTypeJson`] / [`AnyTypeJsonOrEmpty`]. All of them share one body
//! reader and one JSON error mapping.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A JSON body sent with a JSON content type; every failure (wrong or missing content
/// type, unreadable body, bad JSON, missing or mistyped field) is
/// `400 INVALID_REQUEST_BODY`, except an over-long body, which stays `413`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        require_json_content_type(&req)?;
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// Like [`ApiJson`] without the content-type check: the streaming routes accept a
/// body sent without one, as upstream execd does.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyTypeJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for AnyTypeJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(AnyTypeJson)
    }
}

/// Like [`AnyTypeJson`], but an empty body stands for `T::default()` (e.g. `POST /session`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AnyTypeJsonOrEmpty<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for AnyTypeJsonOrEmpty<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(AnyTypeJsonOrEmpty(T::default()));
        }
        parse_json(&bytes).map(AnyTypeJsonOrEmpty)
    }
}

/// `application/json` or any `application/*+json`, parameters allowed.
fn require_json_content_type(req: &Request) -> Result<(), ApiError> {
    let essence = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .map(|essence| essence.trim().to_ascii_lowercase());
    match essence
        .as_deref()
        .and_then(|e| e.strip_prefix("application/"))
    {
        Some(subtype) if subtype == "json" || subtype.ends_with("+json") => Ok(()),
        _ => Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            "expected a request with `Content-Type: application/json`",
        )),
    }
}

async fn read_body<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|rejection| {
        let status = rejection.status();
        let message = format!("cannot read the request body: {}", rejection.body_text());
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(status, "INVALID_REQUEST_BODY", message)
        } else {
            ApiError::bad_request("INVALID_REQUEST_BODY", message)
        }
    })
}

fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|err| {
        ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            format!("invalid request body: {err}"),
        )
    })
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

    /// Every value of `key`, or 400 `MISSING_QUERY` if there is none.
    pub fn required_all(&self, key: &str) -> Result<Vec<String>, ApiError> {
        let values = self.all(key);
        if values.is_empty() {
            return Err(ApiError::bad_request(
                "MISSING_QUERY",
                format!("missing query parameter {key:?}"),
            ));
        }
        Ok(values)
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
