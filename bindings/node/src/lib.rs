//! napi-rs addon of the npm package `opensandbox` (drop-in for `@alibaba-group/opensandbox`).
//!
//! Transport only, over the one op layer (`opensandbox-bindings`, calling convention in
//! bindings/common/README.md): a [`NativeConfig`] is one op-layer `Session` over one
//! connection configuration; `call(op, args)` runs any op with a JS object of
//! arguments in the op layer's spelling (napi's serde-json conversion, no JSON text)
//! and resolves with its result. Executions are the op layer's started runs, pulled in
//! batches ([`streams::NativeEventStream`]) whose final `end` item carries the outcome
//! the core folded; downloads, uploads and the metrics watch move bytes that do not
//! fit JSON. The JavaScript layer (`bindings/node/lib/`) builds the official classes,
//! shapes and exceptions on top. Errors cross as the op layer's error payload
//! (`error.rs`). No export panics: every fallible step returns `Result`.
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod chunks;
mod error;
mod streams;

use std::sync::Arc;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use opensandbox_bindings::args::{parse, ConnectionArgs, ConnectionRef};
use opensandbox_bindings::Session;
use serde_json::Value;

use crate::error::to_napi;

/// One connection configuration: an op-layer session (its pool, lazily built manager
/// and handle registry) shared by every sandbox and manager made from it.
#[napi]
pub struct NativeConfig {
    pub(crate) session: Arc<Session>,
}

#[napi]
impl NativeConfig {
    /// Builds the session from `config.new` arguments (domain, protocol, api_key,
    /// headers, request_timeout_s, use_server_proxy, user_agent); invalid values throw
    /// an `invalid_argument` error.
    #[napi(constructor)]
    pub fn new(opts: Value) -> Result<Self> {
        const OP: &str = "config.new";
        let c: ConnectionArgs = parse(OP, opts).map_err(to_napi)?;
        // The op layer applies the settings: a config handle of a scratch session,
        // whose configuration becomes this session's base.
        let scratch = Session::new();
        let h = scratch.new_config(OP, &c).map_err(to_napi)?;
        let (cfg, _) = scratch
            .config(OP, Some(&ConnectionRef::Handle(h)))
            .map_err(to_napi)?;
        Ok(NativeConfig {
            session: Arc::new(Session::with_config(cfg)),
        })
    }

    /// `scheme://domain/v1`.
    #[napi]
    pub fn base_url(&self) -> String {
        self.session.base_config().base_url()
    }

    /// Runs op `op` with `args`; resolves with its result.
    #[napi]
    pub async fn call(&self, op: String, args: Value) -> Result<Value> {
        let s = self.session.clone();
        s.call(&op, args).await.map_err(to_napi)
    }

    /// Releases a handle (`release` without a round trip through the runtime).
    #[napi]
    pub fn release(&self, handle: i64) -> bool {
        u64::try_from(handle).is_ok_and(|h| self.session.release(h))
    }

    /// A whole file (or a range of it) as bytes (`files.read_bytes` arguments).
    #[napi]
    pub async fn read_bytes(&self, args: Value) -> Result<Buffer> {
        let s = self.session.clone();
        s.read_bytes(args)
            .await
            .map(|b| Buffer::from(b.to_vec()))
            .map_err(to_napi)
    }

    /// Opens a download (`download.open` arguments) as a pull stream of chunks.
    #[napi]
    pub async fn read_stream(&self, args: Value) -> Result<streams::NativeByteStream> {
        let s = self.session.clone();
        streams::NativeByteStream::open(s, args)
            .await
            .map_err(to_napi)
    }

    /// Starts a run: `op` is `commands.start`, `commands.start_in_session` or
    /// `code.start`; resolves once it started, with its event stream.
    #[napi]
    pub async fn run_stream(&self, op: String, args: Value) -> Result<streams::NativeEventStream> {
        let s = self.session.clone();
        streams::NativeEventStream::start(s, op, args)
            .await
            .map_err(to_napi)
    }

    /// Opens `GET /metrics/watch` of a sandbox (`{sandbox}`).
    #[napi]
    pub async fn watch_metrics(&self, args: Value) -> Result<streams::NativeMetricsStream> {
        let s = self.session.clone();
        streams::NativeMetricsStream::open(s, args)
            .await
            .map_err(to_napi)
    }

    /// Starts an upload of several files in one request: `args` are `files.write_files`
    /// arguments without data; `buffers[i]` is the content of entry `i`, or null when
    /// it is streamed with `NativeUpload.write` or read by the library from the local
    /// file `files[i]`.
    #[napi]
    pub fn upload(
        &self,
        args: Value,
        buffers: Vec<Option<Buffer>>,
        files: Option<Vec<Option<streams::FileSlice>>>,
    ) -> Result<streams::NativeUpload> {
        streams::NativeUpload::start(self.session.clone(), args, buffers, files).map_err(to_napi)
    }
}

/// The op layer's manifest: `{version, ops: [{name, args: [{name, type, required,
/// nullable}], result}]}`.
#[napi]
pub fn ops_manifest() -> Result<Value> {
    serde_json::to_value(opensandbox_bindings::ops_manifest()).map_err(|e| {
        to_napi(opensandbox_bindings::OpError::internal(
            "ops_manifest",
            e.to_string(),
        ))
    })
}

/// How downloads' pool-sized reads were served: `{reused, allocated, pooled}`
/// (`chunks.rs`; for tests and benchmarks, not the package's API).
#[napi]
pub fn download_pool_stats() -> Value {
    chunks::stats()
}

/// The native library's version (the workspace version).
#[napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
