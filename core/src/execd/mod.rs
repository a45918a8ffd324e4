//! The execd client: everything served by the daemon inside a sandbox. One client type,
//! its methods grouped by area in the submodules (commands, sessions, code, files,
//! metrics, (1.1) isolated sessions with the scoped file clients, and keyed execution
//! creation with the command inventory).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;

use crate::config::{ConnectionConfig, Protocol};
use crate::error::Result;
use crate::http::{Http, Req, Target};
use crate::models::Endpoint;

mod code;
pub(crate) mod commands;
mod files;
mod follow;
mod isolated;
mod metrics;
mod operations;
mod sessions;

pub use commands::{set_env_command, valid_env_key, RunControl, TAIL_CURSOR_HEADER};
pub use files::{BytesStream, WriteData, WriteEntry};
pub use follow::{LogChunk, LogFollower};
pub use isolated::{ISOLATED_TAIL_CURSOR_HEADER, MAX_IDENTITY};
pub use metrics::MetricsStream;
pub use operations::{DEFAULT_LIST_LIMIT, OPERATION_ID_HEADER};

/// The port execd listens on inside a sandbox.
pub const DEFAULT_EXECD_PORT: u16 = 44772;

/// Client of one sandbox's execd. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ExecdClient {
    pub(crate) http: Http,
    pub(crate) base: Arc<str>,
    pub(crate) headers: Arc<BTreeMap<String, String>>,
}

/// The URL of an endpoint: endpoints come without a scheme, so the config's protocol is
/// prefixed, unless a (non-conforming) server already sent one.
pub fn endpoint_url(protocol: Protocol, endpoint: &str) -> String {
    let e = endpoint.trim().trim_end_matches('/');
    let lower = e.get(..8).unwrap_or(e).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        e.to_owned()
    } else {
        format!("{}://{}", protocol.as_str(), e)
    }
}

impl ExecdClient {
    /// A client for a resolved endpoint; every endpoint header is sent on every call.
    pub fn new(config: ConnectionConfig, endpoint: &Endpoint) -> Result<Self> {
        let base = endpoint_url(config.protocol(), &endpoint.endpoint);
        Ok(ExecdClient {
            http: Http::new(config)?,
            base: base.into(),
            headers: Arc::new(endpoint.headers.clone()),
        })
    }

    pub(crate) fn from_http(http: Http, endpoint: &Endpoint) -> Self {
        let base = endpoint_url(http.config().protocol(), &endpoint.endpoint);
        ExecdClient {
            http,
            base: base.into(),
            headers: Arc::new(endpoint.headers.clone()),
        }
    }

    /// The base URL (`scheme://endpoint`).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Headers forwarded on every call.
    pub fn endpoint_headers(&self) -> &BTreeMap<String, String> {
        &self.headers
    }

    pub(crate) fn req(&self, op: &'static str, method: Method, path: &str) -> Req {
        Req::new(
            op,
            method,
            format!("{}{}", self.base, path),
            Target::Endpoint(self.headers.clone()),
        )
    }

    /// `GET /ping`: `Ok` when execd answers 2xx. Not retried: callers poll.
    pub async fn ping(&self, timeout: Duration) -> Result<()> {
        let req = self
            .req("ping", Method::GET, "/ping")
            .no_retry()
            .timeout(timeout);
        self.http.empty(req).await
    }

    /// Whether execd answers its ping within the request timeout.
    pub async fn is_healthy(&self) -> bool {
        self.ping(self.http.config().request_timeout())
            .await
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_get_a_scheme_once() {
        assert_eq!(
            endpoint_url(Protocol::Http, "127.0.0.1:8080/sandboxes/x/proxy/44772/"),
            "http://127.0.0.1:8080/sandboxes/x/proxy/44772"
        );
        assert_eq!(
            endpoint_url(Protocol::Http, "https://gw.example/abc"),
            "https://gw.example/abc"
        );
        assert_eq!(endpoint_url(Protocol::Https, "h:1"), "https://h:1");
    }
}
