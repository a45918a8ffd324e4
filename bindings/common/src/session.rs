//! The session: the base connection configuration (environment or explicit), a lazily
//! built manager, and ONE handle registry for everything a host refers to between
//! calls: configs, managers, sandboxes, started runs, uploads and downloads. Sandboxes
//! are also found by id (the conformance protocol, §2.1): an id the session has not
//! seen is connected (without health check) on first use and kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use opensandbox_core::endpoint_cache::{DEFAULT_ENDPOINT_CACHE_SIZE, DEFAULT_ENDPOINT_CACHE_TTL};
use opensandbox_core::models::CodeContext;
use opensandbox_core::runtime::Driver;
use std::time::Duration;

use opensandbox_core::{
    ConnectOptions, ConnectionConfig, Protocol, RetryPolicy, Sandbox, SandboxManager,
};

use crate::args::{secs, Bound, ConnectionArgs, ConnectionRef, Managed, RetryArgs, SandboxRef};
use crate::error::OpError;
use crate::stream::Run;
use crate::transfer::{Download, Upload};

/// What a handle refers to.
#[derive(Clone)]
pub(crate) enum Entry {
    Config(Box<ConnectionConfig>),
    Manager(Box<SandboxManager>),
    Sandbox(Box<Sandbox>),
    Run(Arc<Run>),
    Upload(Arc<Upload>),
    Download(Arc<Download>),
    Pty(Arc<crate::ops::pty::PtyHandle>),
}

impl Entry {
    fn kind(&self) -> &'static str {
        match self {
            Entry::Config(_) => "config",
            Entry::Manager(_) => "manager",
            Entry::Sandbox(_) => "sandbox",
            Entry::Run(_) => "execution",
            Entry::Upload(_) => "upload",
            Entry::Download(_) => "download",
            Entry::Pty(_) => "pty",
        }
    }
}

/// One session of the op layer: thread-safe, shared by every call of a host process
/// (or of one conformance driver).
pub struct Session {
    base: ConnectionConfig,
    manager: OnceLock<SandboxManager>,
    handles: Mutex<HashMap<u64, Entry>>,
    by_id: Mutex<HashMap<String, u64>>,
    contexts: Mutex<HashMap<(String, String), CodeContext>>,
    next: AtomicU64,
    /// Drivers of finished downloads, kept for the next (see [`Session::driver`]).
    drivers: DriverPool,
}

/// Idle drivers of a session's downloads: a driver keeps its HTTP client and its idle
/// connection, so the next download a blocking host opens does not build a runtime and
/// a client and connect again (about 0.1–0.2 ms).
pub(crate) type DriverPool = Arc<Mutex<Vec<Arc<Driver>>>>;

/// Idle drivers a session keeps.
const IDLE_DRIVERS: usize = 4;

/// Gives `driver` back to `pool` (a download is done with it).
pub(crate) fn recycle_driver(pool: &DriverPool, driver: Arc<Driver>) {
    let mut idle = lock(pool);
    if idle.len() < IDLE_DRIVERS && driver.is_usable() {
        idle.push(driver);
    }
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // No map is ever left half-updated by a panic: recover the guard.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Applies `connection` overrides (or `config.new` fields) to `cfg`.
pub(crate) fn apply(
    op: &str,
    mut cfg: ConnectionConfig,
    c: &ConnectionArgs,
) -> Result<ConnectionConfig, OpError> {
    if let Some(d) = &c.domain {
        cfg = cfg.with_domain(d.clone());
    }
    if let Some(key) = &c.api_key {
        // An empty key means "no key" to the core, whatever the environment says.
        cfg = cfg.with_api_key(key.clone().unwrap_or_default());
    }
    if let Some(p) = &c.protocol {
        cfg = cfg.with_protocol(Protocol::parse(p)?);
    }
    if let Some(h) = &c.headers {
        for (k, v) in h {
            cfg = cfg.with_header(k.clone(), v.clone());
        }
    }
    if let Some(t) = c.request_timeout_s {
        cfg = cfg.with_request_timeout(secs(op, "request_timeout_s", t)?);
    }
    if let Some(ua) = &c.user_agent {
        cfg = cfg.with_user_agent(ua.clone());
    }
    if let Some(p) = c.use_server_proxy {
        cfg = cfg.with_use_server_proxy(p);
    }
    if let Some(t) = c.connect_timeout_s {
        cfg = cfg.with_connect_timeout(secs(op, "connect_timeout_s", t)?);
    }
    match &c.retry {
        None => {}
        Some(None) => cfg = cfg.with_retry(RetryPolicy::none()),
        Some(Some(r)) => cfg = cfg.with_retry(retry_policy(op, r)?),
    }
    if c.endpoint_cache_ttl_s.is_some() || c.endpoint_cache_size.is_some() {
        // One of the two alone on an "off" base takes the official default for the
        // other, so `{"endpoint_cache_ttl_s": 60}` alone turns the cache on.
        let (mut ttl, mut size) = cfg.endpoint_cache_settings();
        if let Some(t) = c.endpoint_cache_ttl_s {
            ttl = secs(op, "endpoint_cache_ttl_s", t)?;
        } else if ttl.is_zero() {
            ttl = DEFAULT_ENDPOINT_CACHE_TTL;
        }
        if let Some(n) = c.endpoint_cache_size {
            size = usize::try_from(n).unwrap_or(usize::MAX);
        } else if size == 0 {
            size = DEFAULT_ENDPOINT_CACHE_SIZE;
        }
        cfg = cfg.with_endpoint_cache(ttl, size);
    }
    Ok(cfg)
}

/// The core's default retry policy with the overrides of `r`.
fn retry_policy(op: &str, r: &RetryArgs) -> Result<RetryPolicy, OpError> {
    let mut p = RetryPolicy::default();
    if let Some(v) = r.max_retries {
        p.max_retries = v;
    }
    if let Some(v) = r.initial_backoff_ms {
        p.initial_backoff = Duration::from_millis(v);
    }
    if let Some(v) = r.max_backoff_ms {
        p.max_backoff = Duration::from_millis(v);
    }
    if let Some(v) = r.multiplier {
        if !(v.is_finite() && v >= 1.0) {
            return Err(OpError::invalid(
                op,
                format!("{op}: argument retry.multiplier must be a number >= 1"),
            ));
        }
        p.multiplier = v;
    }
    if let Some(v) = r.jitter {
        p.jitter = v;
    }
    if let Some(v) = &r.retryable_status_codes {
        p.retryable_statuses = v.clone();
    }
    Ok(p)
}

impl Session {
    /// A session over the default configuration (`OPEN_SANDBOX_DOMAIN`,
    /// `OPEN_SANDBOX_API_KEY`, ... as the core reads them).
    pub fn new() -> Session {
        Session::with_config(ConnectionConfig::new())
    }

    /// A session over `base`.
    pub fn with_config(base: ConnectionConfig) -> Session {
        Session {
            base,
            manager: OnceLock::new(),
            handles: Mutex::new(HashMap::new()),
            by_id: Mutex::new(HashMap::new()),
            contexts: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            drivers: DriverPool::default(),
        }
    }

    /// A driver for a download that a blocking host opens on `home`'s behalf: an idle
    /// one of this session's, or a new one (`None` when drivers are off).
    pub fn driver(&self, home: &tokio::runtime::Handle) -> Option<Arc<Driver>> {
        let idle = {
            let mut idle = lock(&self.drivers);
            idle.retain(|d| d.is_usable());
            idle.pop()
        };
        idle.or_else(|| Driver::new(home))
    }

    /// Where the drivers of this session's downloads go back to.
    pub(crate) fn driver_pool(&self) -> DriverPool {
        self.drivers.clone()
    }

    /// The base configuration.
    pub fn base_config(&self) -> &ConnectionConfig {
        &self.base
    }

    /// Number of live handles (all kinds).
    pub fn handle_count(&self) -> usize {
        lock(&self.handles).len()
    }

    pub(crate) fn insert(&self, e: Entry) -> u64 {
        let h = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        lock(&self.handles).insert(h, e);
        h
    }

    pub(crate) fn get(&self, op: &str, h: u64) -> Result<Entry, OpError> {
        lock(&self.handles)
            .get(&h)
            .cloned()
            .ok_or_else(|| OpError::invalid(op, format!("{op}: no handle {h} (released?)")))
    }

    fn wrong(op: &str, h: u64, want: &str, got: &Entry) -> OpError {
        OpError::invalid(
            op,
            format!(
                "{op}: handle {h} is a {} handle, not a {want} handle",
                got.kind()
            ),
        )
    }

    /// Frees a handle of any kind; `false` if it was not live. Releasing an unfinished
    /// run cancels it, an open upload aborts it.
    pub fn release(&self, h: u64) -> bool {
        let Some(e) = lock(&self.handles).remove(&h) else {
            return false;
        };
        match &e {
            Entry::Sandbox(_) => lock(&self.by_id).retain(|_, v| *v != h),
            Entry::Run(run) => run.cancel(),
            Entry::Upload(up) => up.abort(),
            Entry::Pty(p) => p.detach(),
            _ => {}
        }
        true
    }

    /// Removes and returns handle `h` when it is of the kind `pick` accepts.
    pub(crate) fn take<T>(
        &self,
        op: &str,
        h: u64,
        want: &str,
        pick: impl Fn(&Entry) -> Option<T>,
    ) -> Result<T, OpError> {
        let mut map = lock(&self.handles);
        let e = map
            .get(&h)
            .ok_or_else(|| OpError::invalid(op, format!("{op}: no handle {h} (released?)")))?;
        match pick(e) {
            Some(v) => {
                map.remove(&h);
                Ok(v)
            }
            None => Err(Self::wrong(op, h, want, e)),
        }
    }

    /// Handle `h` when it is of the kind `pick` accepts.
    pub(crate) fn typed<T>(
        &self,
        op: &str,
        h: u64,
        want: &str,
        pick: impl Fn(&Entry) -> Option<T>,
    ) -> Result<T, OpError> {
        let e = self.get(op, h)?;
        pick(&e).ok_or_else(|| Self::wrong(op, h, want, &e))
    }

    /// The configuration of a call: the base, the base with overrides, or a config
    /// handle. The flag tells whether it is the base (kept handles are found by id only
    /// for the base).
    pub fn config(
        &self,
        op: &str,
        c: Option<&ConnectionRef>,
    ) -> Result<(ConnectionConfig, bool), OpError> {
        match c {
            None => Ok((self.base.clone(), true)),
            Some(ConnectionRef::Overrides(o)) => Ok((apply(op, self.base.clone(), o)?, false)),
            Some(ConnectionRef::Handle(h)) => {
                let cfg = self.typed(op, *h, "config", |e| match e {
                    Entry::Config(c) => Some((**c).clone()),
                    _ => None,
                })?;
                Ok((cfg, false))
            }
        }
    }

    /// `config.new`: a config handle from the base plus `c`.
    pub fn new_config(&self, op: &str, c: &ConnectionArgs) -> Result<u64, OpError> {
        let cfg = apply(op, self.base.clone(), c)?;
        Ok(self.insert(Entry::Config(Box::new(cfg))))
    }

    /// The manager of a `manager.*` call: its `manager` handle, else one over its
    /// connection (the session's lazily built one for the base).
    pub fn manager(&self, op: &str, a: &impl Managed) -> Result<SandboxManager, OpError> {
        if let Some(h) = a.manager() {
            return self.typed(op, h, "manager", |e| match e {
                Entry::Manager(m) => Some((**m).clone()),
                _ => None,
            });
        }
        let (cfg, is_base) = self.config(op, a.connection())?;
        if !is_base {
            return Ok(SandboxManager::new(cfg)?);
        }
        if let Some(m) = self.manager.get() {
            return Ok(m.clone());
        }
        let m = SandboxManager::new(cfg)?;
        Ok(self.manager.get_or_init(|| m).clone())
    }

    /// `manager.new`: a manager handle over the call's connection.
    pub fn new_manager(&self, op: &str, c: Option<&ConnectionRef>) -> Result<u64, OpError> {
        let (cfg, _) = self.config(op, c)?;
        Ok(self.insert(Entry::Manager(Box::new(SandboxManager::new(cfg)?))))
    }

    /// Registers a sandbox; with `by_id`, later calls may also name it by id.
    pub fn keep(&self, s: &Sandbox, by_id: bool) -> u64 {
        let h = self.insert(Entry::Sandbox(Box::new(s.clone())));
        if by_id {
            lock(&self.by_id).insert(s.id().to_owned(), h);
        }
        h
    }

    /// Forgets the id → handle mapping of a killed sandbox (its handles stay valid
    /// until released).
    pub fn forget(&self, id: &str) {
        if let Some(h) = lock(&self.by_id).remove(id) {
            lock(&self.handles).remove(&h);
        }
    }

    /// The sandbox of a sandbox-bound call: a handle, a kept id, or a fresh `connect`
    /// (without health check) for an id this session has not seen. With connection
    /// overrides, an id is always connected afresh through that configuration.
    pub async fn sandbox(&self, op: &str, a: &impl Bound) -> Result<Sandbox, OpError> {
        let id = match a.sandbox() {
            SandboxRef::Handle(h) => {
                return self.typed(op, *h, "sandbox", |e| match e {
                    Entry::Sandbox(s) => Some((**s).clone()),
                    _ => None,
                })
            }
            SandboxRef::Id(id) => id,
        };
        let (cfg, is_base) = self.config(op, a.connection())?;
        let no_wait = ConnectOptions {
            skip_health_check: true,
            ..ConnectOptions::default()
        };
        if !is_base {
            return Ok(Sandbox::connect(cfg, id, no_wait).await?);
        }
        let kept = lock(&self.by_id).get(id).copied();
        if let Some(h) = kept {
            if let Some(Entry::Sandbox(s)) = lock(&self.handles).get(&h) {
                return Ok((**s).clone());
            }
        }
        let s = Sandbox::connect(cfg, id, no_wait).await?;
        self.keep(&s, true);
        Ok(s)
    }

    pub(crate) fn keep_context(&self, sandbox: &str, ctx: &CodeContext) {
        if let Some(id) = &ctx.id {
            lock(&self.contexts).insert((sandbox.to_owned(), id.clone()), ctx.clone());
        }
    }

    pub(crate) fn context(&self, sandbox: &str, id: &str) -> Option<CodeContext> {
        lock(&self.contexts)
            .get(&(sandbox.to_owned(), id.to_owned()))
            .cloned()
    }

    pub(crate) fn run(&self, op: &str, h: u64) -> Result<Arc<Run>, OpError> {
        self.typed(op, h, "execution", |e| match e {
            Entry::Run(r) => Some(r.clone()),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{parse, ListSandboxesArgs, SandboxArgs};
    use serde_json::json;

    #[test]
    fn handles_are_typed_and_released_once() {
        let s = Session::new();
        let c = ConnectionArgs {
            domain: Some("example.test:1".into()),
            ..Default::default()
        };
        let h = s.new_config("config.new", &c).unwrap();
        let (cfg, is_base) = s.config("t", Some(&ConnectionRef::Handle(h))).unwrap();
        assert_eq!(cfg.domain(), "example.test:1");
        assert!(!is_base);
        // A config handle is not a manager handle, nor a sandbox handle.
        let a: ListSandboxesArgs =
            parse("manager.list_sandbox_infos", json!({"manager": h})).unwrap();
        let e = s.manager("manager.list_sandbox_infos", &a).unwrap_err();
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.contains("config handle"), "{}", e.message);
        let a: SandboxArgs = parse("sandbox.get_info", json!({"sandbox": h})).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(rt.block_on(s.sandbox("sandbox.get_info", &a)).is_err());
        assert!(s.release(h));
        assert!(!s.release(h));
        assert!(s.config("t", Some(&ConnectionRef::Handle(h))).is_err());
        assert_eq!(s.handle_count(), 0);
    }

    #[test]
    fn overrides_apply_to_the_base() {
        let s = Session::with_config(ConnectionConfig::new().with_domain("base:1"));
        let o = ConnectionArgs {
            api_key: Some(None),
            headers: Some([("X-A".to_owned(), "1".to_owned())].into()),
            ..Default::default()
        };
        let (cfg, is_base) = s.config("t", Some(&ConnectionRef::Overrides(o))).unwrap();
        assert!(!is_base);
        assert_eq!(cfg.domain(), "base:1");
        assert_eq!(cfg.api_key(), None);
        assert_eq!(cfg.headers().get("X-A").map(String::as_str), Some("1"));
    }

    #[test]
    fn retry_and_connect_timeout_apply() {
        let s = Session::new();
        let o: ConnectionArgs = parse(
            "config.new",
            json!({"connect_timeout_s": 1.5,
                   "retry": {"max_retries": 7, "initial_backoff_ms": 10, "multiplier": 3.0,
                             "jitter": false, "retryable_status_codes": [503]}}),
        )
        .unwrap();
        let (cfg, _) = s.config("t", Some(&ConnectionRef::Overrides(o))).unwrap();
        assert_eq!(cfg.connect_timeout(), Duration::from_millis(1500));
        let r = cfg.retry();
        assert_eq!(r.max_retries, 7);
        assert_eq!(r.initial_backoff, Duration::from_millis(10));
        assert!(!r.jitter);
        assert_eq!(r.retryable_statuses, vec![503]);

        let o: ConnectionArgs = parse("config.new", json!({"retry": null})).unwrap();
        let (cfg, _) = s.config("t", Some(&ConnectionRef::Overrides(o))).unwrap();
        assert_eq!(cfg.retry().max_retries, 0);

        let bad: ConnectionArgs =
            parse("config.new", json!({"retry": {"multiplier": 0.5}})).unwrap();
        assert!(s.config("t", Some(&ConnectionRef::Overrides(bad))).is_err());
        assert!(parse::<ConnectionArgs>("config.new", json!({"retry": {"retries": 1}})).is_err());
    }

    #[test]
    fn endpoint_cache_settings_apply() {
        let base = ConnectionConfig::new();
        let o: ConnectionArgs = parse("config.new", json!({})).unwrap();
        let cfg = apply("config.new", base.clone(), &o).unwrap();
        assert_eq!(cfg.endpoint_cache_settings(), (Duration::ZERO, 0));
        let o: ConnectionArgs = parse(
            "config.new",
            json!({"endpoint_cache_ttl_s": 1.5, "endpoint_cache_size": 7}),
        )
        .unwrap();
        let cfg = apply("config.new", base.clone(), &o).unwrap();
        assert_eq!(
            cfg.endpoint_cache_settings(),
            (Duration::from_millis(1500), 7)
        );
        let o: ConnectionArgs = parse("config.new", json!({"endpoint_cache_ttl_s": 60})).unwrap();
        let cfg = apply("config.new", base.clone(), &o).unwrap();
        assert_eq!(
            cfg.endpoint_cache_settings(),
            (Duration::from_secs(60), 1024)
        );
        let o: ConnectionArgs = parse("config.new", json!({"endpoint_cache_size": 0})).unwrap();
        let cfg = apply("config.new", cfg, &o).unwrap();
        assert_eq!(cfg.endpoint_cache_settings(), (Duration::from_secs(60), 0));
        let o: ConnectionArgs = parse("config.new", json!({"endpoint_cache_ttl_s": -1})).unwrap();
        assert!(apply("config.new", base, &o).is_err());
    }
}
