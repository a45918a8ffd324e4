//! Connection settings shared by the lifecycle, execd and egress clients.
//!
//! A `ConnectionConfig` owns one lazily built HTTP connection pool; clones of a config
//! share it, and every `with_*` change starts a fresh one so that a pool never serves a
//! config it was not built for.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::endpoint_cache::EndpointCache;
use crate::error::{Error, ErrorKind, Result};
use crate::retry::RetryPolicy;

/// Environment variable holding the API key.
pub const ENV_API_KEY: &str = "OPEN_SANDBOX_API_KEY";
/// Environment variable holding the server domain (`host[:port]`, optionally with scheme).
pub const ENV_DOMAIN: &str = "OPEN_SANDBOX_DOMAIN";
/// Environment variable holding the protocol (`http` or `https`).
pub const ENV_PROTOCOL: &str = "OPEN_SANDBOX_PROTOCOL";
/// Domain used when neither the caller nor the environment names one.
pub const DEFAULT_DOMAIN: &str = "localhost:8080";
/// Default time one ordinary request may take (official SDKs: 30 s).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Default time to establish a TCP/TLS connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Header carrying the lifecycle API key.
pub const API_KEY_HEADER: &str = "OPEN-SANDBOX-API-KEY";
/// Header carrying the request id.
pub const REQUEST_ID_HEADER: &str = "X-Request-ID";

/// Longest a calling thread's own connection stays pooled between two calls (see
/// `ConnectionConfig::local_pool_idle_timeout`).
pub(crate) const LOCAL_POOL_IDLE_MAX: Duration = Duration::from_secs(2);

/// URL scheme used to reach the server and the sandbox endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Protocol {
    /// Plain HTTP (the default).
    #[default]
    Http,
    /// HTTP over TLS.
    Https,
}

impl Protocol {
    /// `"http"` or `"https"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Http => "http",
            Protocol::Https => "https",
        }
    }

    /// Parses `http`/`https` (case-insensitive).
    pub fn parse(s: &str) -> Result<Protocol> {
        match s.trim().to_ascii_lowercase().as_str() {
            "http" => Ok(Protocol::Http),
            "https" => Ok(Protocol::Https),
            other => Err(Error::invalid_argument(
                "connection_config",
                format!("protocol must be http or https, got {other:?}"),
            )),
        }
    }
}

/// How to reach an OpenSandbox server. Cheap to clone; clones share one connection pool.
#[derive(Clone)]
pub struct ConnectionConfig {
    api_key: Option<String>,
    domain: Option<String>,
    protocol: Option<Protocol>,
    request_timeout: Duration,
    connect_timeout: Duration,
    headers: BTreeMap<String, String>,
    user_agent: String,
    use_server_proxy: bool,
    retry: RetryPolicy,
    pool_max_idle_per_host: usize,
    pool_idle_timeout: Duration,
    pool: Arc<OnceLock<reqwest::Client>>,
    endpoint_cache_ttl: Duration,
    endpoint_cache_size: usize,
    endpoint_cache: Arc<EndpointCache>,
}

impl std::fmt::Debug for ConnectionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The API key never appears in logs.
        f.debug_struct("ConnectionConfig")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("domain", &self.domain())
            .field("protocol", &self.protocol())
            .field("request_timeout", &self.request_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("user_agent", &self.user_agent)
            .field("use_server_proxy", &self.use_server_proxy)
            .field("retry", &self.retry)
            .field("endpoint_cache_ttl", &self.endpoint_cache_ttl)
            .field("endpoint_cache_size", &self.endpoint_cache_size)
            .finish()
    }
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig::new()
    }
}

impl ConnectionConfig {
    /// Defaults of the official SDKs; the API key, domain and protocol fall back to the
    /// environment when not set explicitly.
    pub fn new() -> Self {
        ConnectionConfig {
            api_key: None,
            domain: None,
            protocol: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            headers: BTreeMap::new(),
            user_agent: format!("OpenSandbox-Rust-SDK/{}", env!("CARGO_PKG_VERSION")),
            use_server_proxy: false,
            retry: RetryPolicy::default(),
            pool_max_idle_per_host: 20,
            pool_idle_timeout: Duration::from_secs(30),
            pool: Arc::new(OnceLock::new()),
            endpoint_cache_ttl: Duration::ZERO,
            endpoint_cache_size: 0,
            endpoint_cache: Arc::new(EndpointCache::new(Duration::ZERO, 0)),
        }
    }

    fn changed(mut self) -> Self {
        self.pool = Arc::new(OnceLock::new());
        // A changed config may reach other servers or other endpoints: fresh cache.
        self.endpoint_cache = Arc::new(EndpointCache::new(
            self.endpoint_cache_ttl,
            self.endpoint_cache_size,
        ));
        self
    }

    /// Sets the API key (otherwise `OPEN_SANDBOX_API_KEY`).
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self.changed()
    }

    /// Sets the domain, `host[:port]`; a leading `http://`/`https://` overrides the protocol.
    pub fn with_domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self.changed()
    }

    /// Sets the protocol.
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self.changed()
    }

    /// Sets the per-request timeout for ordinary (non-streaming) calls. Streams use it
    /// only to wait for response headers: a long-running stream is never cut off by it.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self.changed()
    }

    /// Sets the TCP/TLS connect timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self.changed()
    }

    /// Adds a header sent on every request (lifecycle, execd and egress).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self.changed()
    }

    /// Replaces all extra headers.
    pub fn with_headers(mut self, headers: BTreeMap<String, String>) -> Self {
        self.headers = headers;
        self.changed()
    }

    /// Sets the `User-Agent` (bindings stamp their own package name and version).
    pub fn with_user_agent(mut self, ua: impl Into<String>) -> Self {
        self.user_agent = ua.into();
        self.changed()
    }

    /// Asks the server for proxied endpoints (`{domain}/sandboxes/{id}/proxy/{port}`).
    pub fn with_use_server_proxy(mut self, on: bool) -> Self {
        self.use_server_proxy = on;
        self.changed()
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self.changed()
    }

    /// (1.1) Caches resolved sandbox endpoints for `ttl`, up to `size` entries (the
    /// official SDKs' `endpointCacheTtl`/`endpointCacheSize`, defaults
    /// [`crate::endpoint_cache::DEFAULT_ENDPOINT_CACHE_TTL`] and `_SIZE`). Off unless
    /// set; a zero TTL or size turns it off. Clones of the resulting config share the
    /// cache; killing, pausing or resuming a sandbox through it drops that sandbox's
    /// entries.
    pub fn with_endpoint_cache(mut self, ttl: Duration, size: usize) -> Self {
        self.endpoint_cache_ttl = ttl;
        self.endpoint_cache_size = size;
        self.changed()
    }

    /// Tunes the connection pool: idle connections kept per host and how long.
    pub fn with_pool(mut self, max_idle_per_host: usize, idle_timeout: Duration) -> Self {
        self.pool_max_idle_per_host = max_idle_per_host;
        self.pool_idle_timeout = idle_timeout;
        self.changed()
    }

    /// The API key: explicit, else `OPEN_SANDBOX_API_KEY`, else none.
    pub fn api_key(&self) -> Option<String> {
        self.api_key
            .clone()
            .or_else(|| std::env::var(ENV_API_KEY).ok())
            .filter(|k| !k.is_empty())
    }

    fn raw_domain(&self) -> String {
        self.domain
            .clone()
            .or_else(|| std::env::var(ENV_DOMAIN).ok())
            .filter(|d| !d.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_DOMAIN.to_owned())
    }

    /// The domain without scheme or trailing slash, e.g. `localhost:8080`.
    pub fn domain(&self) -> String {
        let raw = self.raw_domain();
        let (_, rest) = split_scheme(raw.trim());
        rest.trim_end_matches('/').to_owned()
    }

    /// The effective protocol: a scheme in the domain wins, then the explicit setting,
    /// then `OPEN_SANDBOX_PROTOCOL`, then http.
    pub fn protocol(&self) -> Protocol {
        let raw = self.raw_domain();
        if let (Some(scheme), _) = split_scheme(raw.trim()) {
            return scheme;
        }
        if let Some(p) = self.protocol {
            return p;
        }
        std::env::var(ENV_PROTOCOL)
            .ok()
            .and_then(|p| Protocol::parse(&p).ok())
            .unwrap_or_default()
    }

    /// The lifecycle API base URL, `{protocol}://{domain}/v1`.
    pub fn base_url(&self) -> String {
        let domain = self.domain();
        let domain = domain.strip_suffix("/v1").unwrap_or(&domain);
        format!("{}://{}/v1", self.protocol().as_str(), domain)
    }

    /// The per-request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The connect timeout.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// Extra headers sent on every request.
    pub fn headers(&self) -> &BTreeMap<String, String> {
        &self.headers
    }

    /// The `User-Agent`.
    pub fn user_agent(&self) -> &str {
        &self.user_agent
    }

    /// Whether endpoints are resolved through the server proxy.
    pub fn use_server_proxy(&self) -> bool {
        self.use_server_proxy
    }

    /// The retry policy.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The endpoint cache's TTL and size (zero = off).
    pub fn endpoint_cache_settings(&self) -> (Duration, usize) {
        (self.endpoint_cache_ttl, self.endpoint_cache_size)
    }

    /// The endpoint cache shared by clones of this config.
    pub(crate) fn endpoint_cache(&self) -> &EndpointCache {
        &self.endpoint_cache
    }

    /// The HTTP client (connection pool) of this config, built on first use: the shared
    /// one, or inside a `runtime::block_on_request` call the calling thread's own (whose
    /// connections only that thread's runtime drives). Fetched per request, never kept.
    pub(crate) fn http_client(&self) -> Result<reqwest::Client> {
        let local = crate::runtime::local_client(&self.pool, |home| {
            self.build_client(Some(crate::runtime::HomeResolver(home.clone())))
        });
        if let Some(c) = local {
            return c;
        }
        if let Some(c) = self.pool.get() {
            return Ok(c.clone());
        }
        let client = self.build_client(None)?;
        Ok(self.pool.get_or_init(|| client).clone())
    }

    /// The idle timeout of a calling thread's own pool (`runtime::block_on_request`):
    /// at most [`LOCAL_POOL_IDLE_MAX`]. Nothing drives such a pool between calls, so a
    /// connection the server closed meanwhile still looks open at the next call, and a
    /// POST sent on it fails (it is not retried: it may have been received). A pool
    /// entry idle longer than its timeout is dropped at checkout, without being polled,
    /// so the cap keeps every reused connection younger than the keep-alive timeouts
    /// servers commonly use (uvicorn, which serves the official server, and Node: 5 s;
    /// Apache: 5 s; nginx: 75 s). The shared pool keeps the configured timeout: its
    /// connections see the server's close as it happens.
    pub(crate) fn local_pool_idle_timeout(&self) -> Duration {
        self.pool_idle_timeout.min(LOCAL_POOL_IDLE_MAX)
    }

    fn build_client(
        &self,
        resolver: Option<crate::runtime::HomeResolver>,
    ) -> Result<reqwest::Client> {
        // No client-wide total timeout: each call sets its own, and streams must not
        // inherit one (see `with_request_timeout`).
        let mut b = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .pool_max_idle_per_host(self.pool_max_idle_per_host)
            .pool_idle_timeout(if resolver.is_some() {
                self.local_pool_idle_timeout()
            } else {
                self.pool_idle_timeout
            })
            .tcp_nodelay(true)
            .user_agent(self.user_agent.clone());
        if let Some(r) = resolver {
            b = b.dns_resolver(Arc::new(r));
        }
        b.build().map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                "connection_config",
                "cannot build HTTP client",
            )
            .with_source(e)
        })
    }
}

fn split_scheme(s: &str) -> (Option<Protocol>, &str) {
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    if lower.starts_with("https://") {
        (Some(Protocol::Https), &s[8..])
    } else if lower.starts_with("http://") {
        (Some(Protocol::Http), &s[7..])
    } else {
        (None, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_in_domain_overrides_protocol() {
        let c = ConnectionConfig::new()
            .with_domain("https://example.com:9000/")
            .with_protocol(Protocol::Http);
        assert_eq!(c.protocol(), Protocol::Https);
        assert_eq!(c.domain(), "example.com:9000");
        assert_eq!(c.base_url(), "https://example.com:9000/v1");
    }

    #[test]
    fn explicit_values_and_defaults() {
        let c = ConnectionConfig::new()
            .with_domain("10.0.0.1:8080")
            .with_protocol(Protocol::Https)
            .with_api_key("k");
        assert_eq!(c.base_url(), "https://10.0.0.1:8080/v1");
        assert_eq!(c.api_key().as_deref(), Some("k"));
        assert_eq!(c.request_timeout(), Duration::from_secs(30));
        assert!(!c.use_server_proxy());
        assert!(format!("{c:?}").contains("<redacted>"));
        assert!(!format!("{c:?}").contains("\"k\""));
    }

    #[test]
    fn clones_share_a_pool_and_changes_do_not() {
        let a = ConnectionConfig::new().with_domain("127.0.0.1:1");
        let b = a.clone();
        let _ = a.http_client();
        assert!(b.pool.get().is_some());
        let c = b.with_header("x", "y");
        assert!(c.pool.get().is_none());
    }

    #[test]
    fn endpoint_cache_is_off_by_default_shared_by_clones_and_reset_by_changes() {
        let ep = crate::models::Endpoint {
            endpoint: "h:1".into(),
            headers: Default::default(),
            origin: None,
        };
        let off = ConnectionConfig::new();
        assert_eq!(off.endpoint_cache_settings(), (Duration::ZERO, 0));
        assert!(!off.endpoint_cache().enabled());
        let a = ConnectionConfig::new().with_endpoint_cache(Duration::from_secs(60), 4);
        let b = a.clone();
        let g = a.endpoint_cache().get("s", 1, false).1;
        a.endpoint_cache().put("s", 1, false, &ep, g);
        assert!(
            b.endpoint_cache().get("s", 1, false).0.is_some(),
            "clones share"
        );
        let c = b.with_header("x", "y");
        assert!(
            c.endpoint_cache().get("s", 1, false).0.is_none(),
            "a change starts afresh"
        );
        assert_eq!(c.endpoint_cache_settings(), (Duration::from_secs(60), 4));
    }

    #[test]
    fn protocol_parse_rejects_junk() {
        assert_eq!(Protocol::parse("HTTPS").ok(), Some(Protocol::Https));
        assert_eq!(
            Protocol::parse("ftp").err().map(|e| e.kind()),
            Some(ErrorKind::InvalidArgument)
        );
    }
}
