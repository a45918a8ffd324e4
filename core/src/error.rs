//! The one error type of the core.
//!
//! Every binding maps [`ErrorKind`] onto its language's exception classes, so the kinds
//! are a stable contract: new kinds may be added, existing ones never change meaning.

use std::fmt;

/// Stable classification of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The server answered with an error status not covered by a more specific kind.
    Api,
    /// The server answered 404.
    NotFound,
    /// The server answered 401 or 403.
    Unauthorized,
    /// A client-side timeout (connect, request or command deadline) elapsed.
    Timeout,
    /// The sandbox did not become healthy before the ready timeout.
    ReadyTimeout,
    /// The server could not be reached or the connection broke.
    Connection,
    /// An event stream was malformed, carried an in-band error, or ended early.
    Stream,
    /// The caller passed an argument the client rejects before any request.
    InvalidArgument,
    /// The operation was cancelled by the caller.
    Cancelled,
    /// A bug or an unexpected response shape in the client.
    Internal,
}

impl ErrorKind {
    /// The stable snake_case name bindings expose (`"not_found"`, `"ready_timeout"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Api => "api",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::Timeout => "timeout",
            ErrorKind::ReadyTimeout => "ready_timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Stream => "stream",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Internal => "internal",
        }
    }

    /// Maps an HTTP error status to the kind a caller should see.
    pub fn from_status(status: u16) -> ErrorKind {
        match status {
            401 | 403 => ErrorKind::Unauthorized,
            404 => ErrorKind::NotFound,
            _ => ErrorKind::Api,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed operation: its kind, the operation name, and whatever the server told us.
///
/// Boxed inside so that `Result<T, Error>` stays one pointer wide on the happy path.
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    operation: String,
    message: String,
    status: Option<u16>,
    code: Option<String>,
    request_id: Option<String>,
    body: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

/// A `Result` whose error is the core [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Creates an error of `kind` for `operation` with a human-readable message.
    pub fn new(kind: ErrorKind, operation: impl Into<String>, message: impl Into<String>) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                operation: operation.into(),
                message: message.into(),
                status: None,
                code: None,
                request_id: None,
                body: None,
                source: None,
            }),
        }
    }

    /// Shorthand for an [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(operation: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, operation, message)
    }

    /// Shorthand for an [`ErrorKind::Stream`] error.
    pub fn stream(operation: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Stream, operation, message)
    }

    /// Shorthand for an [`ErrorKind::Internal`] error.
    pub fn internal(operation: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Internal, operation, message)
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.inner.status = Some(status);
        self
    }

    /// Sets the server's error code (opaque, e.g. `DOCKER::SANDBOX_NOT_FOUND`).
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.inner.code = Some(code.into());
        self
    }

    /// Sets the request id the failure belongs to.
    pub fn with_request_id(mut self, request_id: Option<String>) -> Self {
        if request_id.is_some() {
            self.inner.request_id = request_id;
        }
        self
    }

    /// Keeps the raw response body (bindings expose it as `raw_body`).
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.inner.body = Some(body.into());
        self
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.inner.source = Some(Box::new(source));
        self
    }

    /// Replaces the operation name, used when a low-level call is reported as part of a
    /// higher-level one (e.g. an endpoint lookup during `create`).
    pub fn with_operation(mut self, operation: impl Into<String>) -> Self {
        self.inner.operation = operation.into();
        self
    }

    /// The stable kind.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The operation that failed, e.g. `"get_sandbox"` or `"commands.run"`.
    pub fn operation(&self) -> &str {
        &self.inner.operation
    }

    /// The message: the server's when it sent one, ours otherwise.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        self.inner.status
    }

    /// The server's error code, when its body carried one.
    pub fn code(&self) -> Option<&str> {
        self.inner.code.as_deref()
    }

    /// The `X-Request-ID` of the failed request (the server's echo, or the one we sent).
    pub fn request_id(&self) -> Option<&str> {
        self.inner.request_id.as_deref()
    }

    /// The raw error body, when the server sent one.
    pub fn body(&self) -> Option<&str> {
        self.inner.body.as_deref()
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind)
            .field("operation", &self.inner.operation)
            .field("message", &self.inner.message);
        if let Some(s) = self.inner.status {
            d.field("status", &s);
        }
        if let Some(c) = &self.inner.code {
            d.field("code", c);
        }
        if let Some(r) = &self.inner.request_id {
            d.field("request_id", r);
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed ({}", self.inner.operation, self.inner.kind)?;
        if let Some(s) = self.inner.status {
            write!(f, ", HTTP {s}")?;
        }
        if let Some(c) = &self.inner.code {
            write!(f, ", code {c}")?;
        }
        if let Some(r) = &self.inner.request_id {
            write!(f, ", request id {r}")?;
        }
        write!(f, "): {}", self.inner.message)?;
        if let Some(s) = &self.inner.source {
            write!(f, ": {s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|s| s.as_ref() as &(dyn std::error::Error + 'static))
    }
}

/// Builds an error from a non-success HTTP response body, understanding every error
/// shape the protocol uses: `{code, message}`, execd's `{error}`, FastAPI's
/// `{detail: [...]}`, and the egress sidecar's plain text.
pub(crate) fn from_response_body(
    operation: &str,
    status: u16,
    request_id: Option<String>,
    body: &[u8],
) -> Error {
    let text = String::from_utf8_lossy(body);
    let trimmed = text.trim();
    let mut code = None;
    let mut message = None;
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(trimmed) {
        code = map.get("code").and_then(|v| v.as_str()).map(str::to_owned);
        message = map
            .get("message")
            .or_else(|| map.get("error"))
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        if message.is_none() {
            message = map.get("detail").map(|d| match d {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
    }
    let message = message
        .filter(|m| !m.is_empty())
        .or_else(|| (!trimmed.is_empty()).then(|| truncate(trimmed, 512)))
        .unwrap_or_else(|| format!("HTTP {status}"));
    let mut err = Error::new(ErrorKind::from_status(status), operation, message)
        .with_status(status)
        .with_request_id(request_id);
    if let Some(c) = code {
        err = err.with_code(c);
    }
    if !trimmed.is_empty() {
        err = err.with_body(truncate(trimmed, 64 * 1024));
    }
    err
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_error_response_shape() {
        let e = from_response_body(
            "get_sandbox",
            404,
            Some("abc".into()),
            br#"{"code":"DOCKER::SANDBOX_NOT_FOUND","message":"no such sandbox"}"#,
        );
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.code(), Some("DOCKER::SANDBOX_NOT_FOUND"));
        assert_eq!(e.message(), "no such sandbox");
        assert_eq!(e.request_id(), Some("abc"));
        assert_eq!(e.status(), Some(404));
        assert!(e.to_string().contains("get_sandbox"));
    }

    #[test]
    fn parses_execd_fastapi_and_plain_shapes() {
        let e = from_response_body("ping", 401, None, br#"{"error":"Unauthorized: x"}"#);
        assert_eq!(e.kind(), ErrorKind::Unauthorized);
        assert_eq!(e.message(), "Unauthorized: x");
        let e = from_response_body("create", 422, None, br#"{"detail":[{"loc":["body"]}]}"#);
        assert_eq!(e.kind(), ErrorKind::Api);
        assert!(e.message().contains("loc"));
        let e = from_response_body("policy", 401, None, b"unauthorized\n");
        assert_eq!(e.message(), "unauthorized");
        let e = from_response_body("download", 416, None, br#"{"code":"UNKNOWN"}"#);
        assert_eq!(e.code(), Some("UNKNOWN"));
        assert!(e.message().contains("UNKNOWN"));
        let e = from_response_body("x", 500, None, b"");
        assert_eq!(e.message(), "HTTP 500");
    }
}
