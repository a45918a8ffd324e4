//! The HTTP layer: request building, request ids, timeouts, retries and error mapping.
//!
//! Every request of the core goes through [`Http::execute`], so the rules of the
//! protocol (which headers go where, what is retried, what each timeout covers) live
//! in this one place.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::config::{ConnectionConfig, API_KEY_HEADER, REQUEST_ID_HEADER};
use crate::error::{from_response_body, Error, ErrorKind, Result};
use crate::retry::{parse_retry_after, RetryPolicy};

/// Largest error body read into memory; the rest is not needed to explain a failure.
const MAX_ERROR_BODY: usize = 256 * 1024;

/// Where a request goes, which decides its authentication headers.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// The lifecycle API: gets the API key.
    Lifecycle,
    /// A sandbox endpoint (execd, egress): gets every header the endpoint API returned,
    /// never the API key.
    Endpoint(Arc<BTreeMap<String, String>>),
}

/// The body of a request.
pub(crate) enum ReqBody {
    Empty,
    Json(Bytes),
    /// A multipart form, possibly streaming from readers: it cannot be replayed, so a
    /// request carrying it is attempted exactly once.
    Multipart(Option<reqwest::multipart::Form>),
}

/// How the response body will be consumed, which decides what the request timeout covers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// Whole body read at once: the request timeout covers everything.
    Unary,
    /// Body consumed as a stream: the request timeout covers only the wait for headers.
    Stream,
    /// Bulk transfer (upload): no total timeout, only the connect timeout, so a large
    /// transfer is never cut off by a default it did not ask for.
    Transfer,
}

/// One logical request (possibly several attempts).
pub(crate) struct Req {
    pub op: &'static str,
    pub method: Method,
    pub url: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: ReqBody,
    pub target: Target,
    pub mode: Mode,
    pub timeout: Option<Duration>,
    pub retry: bool,
}

impl Req {
    pub fn new(op: &'static str, method: Method, url: String, target: Target) -> Self {
        Req {
            op,
            method,
            url,
            query: Vec::new(),
            headers: Vec::new(),
            body: ReqBody::Empty,
            target,
            mode: Mode::Unary,
            timeout: None,
            retry: true,
        }
    }

    pub fn query(mut self, k: &str, v: impl ToString) -> Self {
        self.query.push((k.to_owned(), v.to_string()));
        self
    }

    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    pub fn json<T: Serialize + ?Sized>(mut self, body: &T) -> Result<Self> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                self.op,
                "cannot encode request body",
            )
            .with_source(e)
        })?;
        self.body = ReqBody::Json(Bytes::from(bytes));
        Ok(self)
    }

    pub fn stream(mut self) -> Self {
        self.mode = Mode::Stream;
        self
    }

    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// Disables retries (for callers that poll on their own, like readiness checks).
    pub fn no_retry(mut self) -> Self {
        self.retry = false;
        self
    }

    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }

    fn idempotent(&self) -> bool {
        matches!(
            self.method,
            Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS
        )
    }
}

/// Why an attempt failed, as far as the retry rules care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The connection could not be established: the request provably never left.
    Connect,
    /// The request timed out: it may be running on the server.
    Timeout,
    /// The connection broke after the request may have been sent.
    Transport,
    /// The server answered with this error status.
    Status(u16),
}

/// The retry rule of the protocol: a connect failure may be replayed for any method
/// (nothing was sent); anything else only for idempotent methods, and for statuses
/// only those the policy lists. Timeouts are never replayed: the caller's time is up.
pub(crate) fn should_retry(policy: &RetryPolicy, idempotent: bool, failure: Failure) -> bool {
    match failure {
        Failure::Connect => true,
        Failure::Timeout => false,
        Failure::Transport => idempotent,
        Failure::Status(s) => idempotent && policy.is_retryable_status(s),
    }
}

/// The HTTP client of one connection config. Cheap to clone. The reqwest client is
/// fetched per request, not kept: which pool serves a request depends on the thread and
/// runtime it runs on (`runtime::block_on_request`).
#[derive(Clone, Debug)]
pub(crate) struct Http {
    config: ConnectionConfig,
}

impl Http {
    pub fn new(config: ConnectionConfig) -> Result<Self> {
        // Fails now, not at the first request, when no client can be built.
        config.http_client()?;
        Ok(Http { config })
    }

    pub fn config(&self) -> &ConnectionConfig {
        &self.config
    }

    /// Sends `req`, retrying per the config's policy, and returns a success response
    /// whose body is still unread. Non-2xx answers become typed errors.
    pub async fn execute(&self, mut req: Req) -> Result<Response> {
        let policy = self.config.retry().clone();
        let request_id = self.request_id();
        let mut attempt: u32 = 0;
        loop {
            let replayable = req.retry && !matches!(req.body, ReqBody::Multipart(..));
            let builder = self.build(&mut req, &request_id)?;
            let timeout = req.timeout.unwrap_or(self.config.request_timeout());
            let sent = match req.mode {
                Mode::Unary => builder.timeout(timeout).send().await,
                Mode::Transfer => builder.send().await,
                Mode::Stream => match tokio::time::timeout(timeout, builder.send()).await {
                    Ok(r) => r,
                    Err(_) => {
                        return Err(Error::new(
                            ErrorKind::Timeout,
                            req.op,
                            format!("no response headers within {timeout:?}"),
                        )
                        .with_request_id(Some(request_id)));
                    }
                },
            };
            let can_retry = attempt < policy.max_retries && replayable;
            match sent {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) => {
                    let status = resp.status();
                    let failure = Failure::Status(status.as_u16());
                    if can_retry && should_retry(&policy, req.idempotent(), failure) {
                        let retry_after = resp
                            .headers()
                            .get(reqwest::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok())
                            .and_then(parse_retry_after);
                        attempt += 1;
                        let wait = policy.backoff(attempt, retry_after);
                        tracing::debug!(op = req.op, %status, attempt, ?wait, "retrying");
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    return Err(error_from_response(req.op, resp, &request_id).await);
                }
                Err(e) => {
                    let failure = if e.is_connect() {
                        Failure::Connect
                    } else if e.is_timeout() {
                        Failure::Timeout
                    } else {
                        Failure::Transport
                    };
                    if can_retry && should_retry(&policy, req.idempotent(), failure) {
                        attempt += 1;
                        let wait = policy.backoff(attempt, None);
                        tracing::debug!(op = req.op, error = %e, attempt, ?wait, "retrying");
                        tokio::time::sleep(wait).await;
                        continue;
                    }
                    return Err(map_reqwest(req.op, e).with_request_id(Some(request_id)));
                }
            }
        }
    }

    /// Sends `req` and returns the whole body.
    pub async fn bytes(&self, req: Req) -> Result<(HeaderMap, Bytes)> {
        let op = req.op;
        let resp = self.execute(req).await?;
        let headers = resp.headers().clone();
        let rid = response_request_id(&headers);
        let body = resp
            .bytes()
            .await
            .map_err(|e| map_reqwest(op, e).with_request_id(rid))?;
        Ok((headers, body))
    }

    /// Sends `req` and ignores the (usually empty) body.
    pub async fn empty(&self, req: Req) -> Result<()> {
        self.bytes(req).await.map(|_| ())
    }

    /// Sends `req` and decodes the JSON body.
    pub async fn json<T: DeserializeOwned>(&self, req: Req) -> Result<T> {
        let op = req.op;
        let (headers, body) = self.bytes(req).await?;
        decode_json(op, &headers, &body)
    }

    fn request_id(&self) -> String {
        self.config
            .headers()
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(REQUEST_ID_HEADER))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string())
    }

    fn build(&self, req: &mut Req, request_id: &str) -> Result<reqwest::RequestBuilder> {
        let mut headers = HeaderMap::new();
        for (k, v) in self.config.headers() {
            insert_header(&mut headers, req.op, k, v)?;
        }
        match &req.target {
            Target::Lifecycle => {
                if let Some(key) = self.config.api_key() {
                    insert_header(&mut headers, req.op, API_KEY_HEADER, &key)?;
                }
            }
            Target::Endpoint(extra) => {
                for (k, v) in extra.iter() {
                    insert_header(&mut headers, req.op, k, v)?;
                }
            }
        }
        insert_header(&mut headers, req.op, REQUEST_ID_HEADER, request_id)?;
        for (k, v) in &req.headers {
            headers.insert(k.clone(), v.clone());
        }
        let mut b = self
            .config
            .http_client()?
            .request(req.method.clone(), &req.url)
            .headers(headers);
        if !req.query.is_empty() {
            b = b.query(&req.query);
        }
        b = match &mut req.body {
            ReqBody::Empty => b,
            ReqBody::Json(bytes) => b
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(bytes.clone()),
            ReqBody::Multipart(form) => {
                let form = form.take().ok_or_else(|| {
                    Error::internal(req.op, "multipart request body was already sent")
                })?;
                b.multipart(form)
            }
        };
        Ok(b)
    }
}

fn insert_header(headers: &mut HeaderMap, op: &str, k: &str, v: &str) -> Result<()> {
    let name = HeaderName::from_bytes(k.as_bytes()).map_err(|e| {
        Error::invalid_argument(op.to_owned(), format!("invalid header name {k:?}")).with_source(e)
    })?;
    let value = HeaderValue::from_str(v).map_err(|e| {
        Error::invalid_argument(op.to_owned(), format!("invalid value for header {k:?}"))
            .with_source(e)
    })?;
    headers.insert(name, value);
    Ok(())
}

/// The server's `X-Request-ID`, if it sent one.
pub(crate) fn response_request_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

pub(crate) fn decode_json<T: DeserializeOwned>(
    op: &'static str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<T> {
    // Success responses "without data" are empty bodies; let `()`-like targets accept them.
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"null"
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|e| {
        Error::internal(op, "unexpected response body")
            .with_source(e)
            .with_body(String::from_utf8_lossy(&body[..body.len().min(4096)]).into_owned())
            .with_request_id(response_request_id(headers))
    })
}

async fn error_from_response(op: &'static str, resp: Response, sent_id: &str) -> Error {
    let status: StatusCode = resp.status();
    let rid = response_request_id(resp.headers()).unwrap_or_else(|| sent_id.to_owned());
    let mut body = Vec::new();
    let mut resp = resp;
    // Bounded read: an error page must not be able to exhaust memory.
    while body.len() < MAX_ERROR_BODY {
        match resp.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    from_response_body(op, status.as_u16(), Some(rid), &body)
}

/// Maps a transport error to the core error kinds.
pub(crate) fn map_reqwest(op: &str, e: reqwest::Error) -> Error {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_builder() {
        ErrorKind::InvalidArgument
    } else if e.is_decode() {
        ErrorKind::Stream
    } else {
        ErrorKind::Connection
    };
    let msg = if e.is_connect() {
        "cannot connect to server"
    } else if e.is_timeout() {
        "request timed out"
    } else if e.is_body() || e.is_decode() {
        "connection broke while reading the response"
    } else {
        "request failed"
    };
    Error::new(kind, op.to_owned(), msg).with_source(e)
}

/// The response body as a chunk stream with errors mapped to core errors.
pub(crate) fn body_stream(op: &'static str, resp: Response) -> crate::stream::ByteStream {
    use futures_util::StreamExt;
    let rid = response_request_id(resp.headers());
    Box::pin(
        resp.bytes_stream()
            .map(move |r| r.map_err(|e| map_reqwest(op, e).with_request_id(rid.clone()))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_rules() {
        let p = RetryPolicy::default();
        // Idempotent requests: connect and transport errors, 429/502/503/504.
        for s in [429, 502, 503, 504] {
            assert!(should_retry(&p, true, Failure::Status(s)), "{s}");
        }
        for s in [400, 401, 404, 409, 500, 501] {
            assert!(!should_retry(&p, true, Failure::Status(s)), "{s}");
        }
        assert!(should_retry(&p, true, Failure::Transport));
        // POST: only when the request provably never left the client.
        assert!(should_retry(&p, false, Failure::Connect));
        assert!(!should_retry(&p, false, Failure::Transport));
        assert!(!should_retry(&p, false, Failure::Status(503)));
        assert!(!should_retry(&p, true, Failure::Timeout));
    }
}
