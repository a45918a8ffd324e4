//! napi-rs addon of the npm package `opensandbox` (drop-in for `@alibaba-group/opensandbox`).
//!
//! The addon is the thin native half: every export takes plain values (strings, JSON
//! strings, Buffers), calls `opensandbox-core` and returns a Promise. The JavaScript
//! layer (`bindings/node/lib/`) builds the official classes, shapes and exceptions on
//! top. Errors cross the boundary as a JSON payload (kind, status, code, request id,
//! message, body, operation) that the JS layer turns into the official exception
//! classes. No export panics: every fallible step returns `Result`.
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod convert;
mod error;
mod ops;
mod streams;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use opensandbox_core::{ConnectOptions, ConnectionConfig, Protocol, Sandbox, SandboxManager};

use crate::error::to_napi;

/// Connection settings as the JS layer resolved them (explicit values, env fallbacks
/// already applied by `ConnectionConfig` in JS, exactly like the official SDK).
#[napi(object)]
pub struct NativeConfigOptions {
    /// `host[:port]`, optionally with a scheme.
    pub domain: Option<String>,
    /// `http` or `https`.
    pub protocol: Option<String>,
    /// API key; empty = send none.
    pub api_key: Option<String>,
    /// Extra headers on every request.
    pub headers: Option<std::collections::HashMap<String, String>>,
    /// Whole-call timeout of ordinary requests, seconds.
    pub request_timeout_seconds: Option<f64>,
    /// Ask the server for proxied endpoints.
    pub use_server_proxy: Option<bool>,
    /// User-Agent header.
    pub user_agent: Option<String>,
}

/// One connection configuration with its pool (shared by the handles made from it).
#[napi]
pub struct NativeConfig {
    pub(crate) inner: ConnectionConfig,
}

fn build_config(o: NativeConfigOptions) -> opensandbox_core::Result<ConnectionConfig> {
    let mut c = ConnectionConfig::new();
    if let Some(d) = o.domain {
        c = c.with_domain(d);
    }
    if let Some(p) = o.protocol {
        c = c.with_protocol(Protocol::parse(&p)?);
    }
    // Always explicit: the JS layer applied the env fallback; "" means no key.
    c = c.with_api_key(o.api_key.unwrap_or_default());
    if let Some(h) = o.headers {
        c = c.with_headers(h.into_iter().collect());
    }
    if let Some(t) = o.request_timeout_seconds {
        c = c.with_request_timeout(convert::seconds("requestTimeoutSeconds", t)?);
    }
    if let Some(u) = o.use_server_proxy {
        c = c.with_use_server_proxy(u);
    }
    if let Some(ua) = o.user_agent {
        c = c.with_user_agent(ua);
    }
    Ok(c)
}

#[napi]
impl NativeConfig {
    /// Builds the configuration; invalid values throw an `invalid_argument` error.
    #[napi(constructor)]
    pub fn new(opts: NativeConfigOptions) -> Result<Self> {
        build_config(opts)
            .map(|inner| NativeConfig { inner })
            .map_err(to_napi)
    }

    /// `scheme://domain/v1`.
    #[napi]
    pub fn base_url(&self) -> String {
        self.inner.base_url()
    }
}

/// The lifecycle API (`SandboxManager`).
#[napi]
pub struct NativeManager {
    inner: SandboxManager,
}

#[napi]
impl NativeManager {
    /// A manager over `config`.
    #[napi(factory)]
    pub fn create(config: &NativeConfig) -> Result<Self> {
        SandboxManager::new(config.inner.clone())
            .map(|inner| NativeManager { inner })
            .map_err(to_napi)
    }

    /// Runs one lifecycle operation; `args` and the result are JSON.
    #[napi]
    pub async fn call(&self, op: String, args: String) -> Result<String> {
        let m = self.inner.clone();
        ops::manager_call(&m, &op, &args).await.map_err(to_napi)
    }
}

/// Options of create / connect / resume, as JSON from the JS layer.
#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ConnectArgs {
    skip_health_check: bool,
    ready_timeout_seconds: Option<f64>,
    health_check_polling_interval: Option<f64>,
}

fn connect_options(args: &str) -> opensandbox_core::Result<ConnectOptions> {
    let a: ConnectArgs = convert::parse_args("sandbox.connect", args)?;
    let mut o = ConnectOptions {
        skip_health_check: a.skip_health_check,
        ..ConnectOptions::default()
    };
    if let Some(t) = a.ready_timeout_seconds {
        o.timeout = convert::seconds("readyTimeoutSeconds", t)?;
    }
    if let Some(ms) = a.health_check_polling_interval {
        o.health_check_polling_interval = convert::millis("healthCheckPollingInterval", ms)?;
    }
    Ok(o)
}

/// A sandbox handle: lifecycle calls bound to its id plus its execd and egress.
#[napi]
pub struct NativeSandbox {
    pub(crate) inner: Arc<Sandbox>,
}

#[napi]
impl NativeSandbox {
    /// `Sandbox.create`: `opts` is JSON (see `convert::create_options`).
    #[napi]
    pub async fn create(config: &NativeConfig, opts: String) -> Result<NativeSandbox> {
        let cfg = config.inner.clone();
        let run = async move {
            let o = convert::create_options(&opts)?;
            Sandbox::create(cfg, o).await
        };
        run.await
            .map(|s| NativeSandbox { inner: Arc::new(s) })
            .map_err(to_napi)
    }

    /// `Sandbox.connect`.
    #[napi]
    pub async fn connect(config: &NativeConfig, id: String, opts: String) -> Result<NativeSandbox> {
        let cfg = config.inner.clone();
        let run = async move {
            let o = connect_options(&opts)?;
            Sandbox::connect(cfg, &id, o).await
        };
        run.await
            .map(|s| NativeSandbox { inner: Arc::new(s) })
            .map_err(to_napi)
    }

    /// `Sandbox.resume` (server resume, then connect).
    #[napi]
    pub async fn resume(config: &NativeConfig, id: String, opts: String) -> Result<NativeSandbox> {
        let cfg = config.inner.clone();
        let run = async move {
            let o = connect_options(&opts)?;
            Sandbox::resume(cfg, &id, o).await
        };
        run.await
            .map(|s| NativeSandbox { inner: Arc::new(s) })
            .map_err(to_napi)
    }

    /// The sandbox id.
    #[napi(getter)]
    pub fn id(&self) -> String {
        self.inner.id().to_owned()
    }

    /// Runs one operation bound to this sandbox; `args` and the result are JSON.
    #[napi]
    pub async fn call(&self, op: String, args: String) -> Result<String> {
        let s = self.inner.clone();
        ops::sandbox_call(&s, &op, &args).await.map_err(to_napi)
    }

    /// Reads a whole file (or a range of it) as bytes.
    #[napi]
    pub async fn read_bytes(&self, path: String, opts: String) -> Result<Buffer> {
        let s = self.inner.clone();
        let run = async move {
            let o = convert::read_options(&opts)?;
            s.execd().read_bytes(&path, &o).await
        };
        run.await.map(|b| Buffer::from(b.to_vec())).map_err(to_napi)
    }

    /// Opens a download as a pull stream of chunks.
    #[napi]
    pub async fn read_stream(
        &self,
        path: String,
        opts: String,
    ) -> Result<streams::NativeByteStream> {
        let s = self.inner.clone();
        let run = async move {
            let o = convert::read_options(&opts)?;
            s.execd().read_bytes_stream(&path, &o).await
        };
        run.await
            .map(streams::NativeByteStream::new)
            .map_err(to_napi)
    }

    /// Starts an execution and returns its event stream at once: `kind` is `command`,
    /// `session` or `code`; errors (including of the request) come from `next`.
    #[napi]
    pub fn run_stream(&self, kind: String, args: String) -> streams::NativeEventStream {
        streams::NativeEventStream::start(self.inner.clone(), kind, args)
    }

    /// Opens `GET /metrics/watch`.
    #[napi]
    pub async fn watch_metrics(&self) -> Result<streams::NativeMetricsStream> {
        let s = self.inner.clone();
        s.execd()
            .watch_metrics()
            .await
            .map(streams::NativeMetricsStream::new)
            .map_err(to_napi)
    }

    /// Starts an upload of several files in one request. `meta` is a JSON list of
    /// `{path, mode, owner, group, streamed}`; `buffers[i]` is the content of entry `i`
    /// when it is not streamed. Streamed entries are fed with `NativeUpload.write`.
    #[napi]
    pub fn upload(
        &self,
        meta: String,
        buffers: Vec<Option<Buffer>>,
    ) -> Result<streams::NativeUpload> {
        streams::NativeUpload::start(self.inner.clone(), &meta, buffers).map_err(to_napi)
    }
}

/// The native library's version (the workspace version).
#[napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
