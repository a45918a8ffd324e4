//! What the driver keeps between requests: the connection configuration, the sandbox
//! handles it created or connected (by id), code contexts it learned, and runs
//! started with `commands.start` / `code.start`.

use std::collections::HashMap;
use std::time::Duration;

use opensandbox_core::models::CodeContext;
use opensandbox_core::{ConnectOptions, ConnectionConfig, Execution, Sandbox, SandboxManager};
use tokio::task::JoinHandle;

use crate::args::Args;
use crate::protocol::Failure;
use crate::recorder::Recorder;

/// A run continuing in the background of the driver.
pub type RunTask = JoinHandle<Result<(Execution, Recorder), opensandbox_core::Error>>;

pub struct State {
    /// From the environment (`OPEN_SANDBOX_DOMAIN`, `OPEN_SANDBOX_API_KEY`), the way a
    /// user's default configuration is.
    base: ConnectionConfig,
    manager: Option<SandboxManager>,
    sandboxes: HashMap<String, Sandbox>,
    contexts: HashMap<(String, String), CodeContext>,
    runs: HashMap<String, RunTask>,
    next_handle: u64,
}

impl State {
    pub fn new() -> State {
        State {
            base: ConnectionConfig::new(),
            manager: None,
            sandboxes: HashMap::new(),
            contexts: HashMap::new(),
            runs: HashMap::new(),
            next_handle: 0,
        }
    }

    /// The configuration for this request: the default, or the default with the
    /// request's `connection` overrides (PROTOCOL.md §2.1). `None` = no overrides.
    pub fn override_config(&self, args: &Args) -> Result<Option<ConnectionConfig>, Failure> {
        let Some(conn) = args.object("connection")? else {
            return Ok(None);
        };
        let mut cfg = self.base.clone();
        if let Some(domain) = conn.opt_str("domain")? {
            cfg = cfg.with_domain(domain);
        }
        if conn.has("api_key") {
            // An empty key means "no key" to the core, whatever the environment says.
            cfg = cfg.with_api_key(conn.opt_str("api_key")?.unwrap_or_default());
        }
        let headers = conn.str_map("headers")?;
        for (k, v) in headers {
            cfg = cfg.with_header(k, v);
        }
        if let Some(t) = conn.opt_secs("request_timeout_s")? {
            cfg = cfg.with_request_timeout(t);
        }
        if conn.has("use_server_proxy") {
            cfg = cfg.with_use_server_proxy(conn.bool("use_server_proxy")?);
        }
        Ok(Some(cfg))
    }

    pub fn config(&self, args: &Args) -> Result<ConnectionConfig, Failure> {
        Ok(self
            .override_config(args)?
            .unwrap_or_else(|| self.base.clone()))
    }

    pub fn manager(&mut self, args: &Args) -> Result<SandboxManager, Failure> {
        if let Some(cfg) = self.override_config(args)? {
            return Ok(SandboxManager::new(cfg)?);
        }
        if let Some(m) = &self.manager {
            return Ok(m.clone());
        }
        let m = SandboxManager::new(self.base.clone())?;
        self.manager = Some(m.clone());
        Ok(m)
    }

    /// The handle for the request's `sandbox` id: a kept one, or a fresh `connect`
    /// (without health check) for ids this driver process has not seen.
    pub async fn sandbox(&mut self, args: &Args) -> Result<Sandbox, Failure> {
        let id = args.str("sandbox")?;
        let no_wait = ConnectOptions {
            skip_health_check: true,
            ..ConnectOptions::default()
        };
        if let Some(cfg) = self.override_config(args)? {
            return Ok(Sandbox::connect(cfg, &id, no_wait).await?);
        }
        if let Some(s) = self.sandboxes.get(&id) {
            return Ok(s.clone());
        }
        let s = Sandbox::connect(self.base.clone(), &id, no_wait).await?;
        self.sandboxes.insert(id, s.clone());
        Ok(s)
    }

    pub fn keep(&mut self, sandbox: &Sandbox) {
        self.sandboxes
            .insert(sandbox.id().to_owned(), sandbox.clone());
    }

    pub fn forget(&mut self, id: &str) {
        self.sandboxes.remove(id);
    }

    pub fn keep_context(&mut self, sandbox: &str, ctx: &CodeContext) {
        if let Some(id) = &ctx.id {
            self.contexts
                .insert((sandbox.to_owned(), id.clone()), ctx.clone());
        }
    }

    pub fn context(&self, sandbox: &str, id: &str) -> Option<CodeContext> {
        self.contexts
            .get(&(sandbox.to_owned(), id.to_owned()))
            .cloned()
    }

    pub fn add_run(&mut self, task: RunTask) -> String {
        self.next_handle += 1;
        let handle = format!("run-{}", self.next_handle);
        self.runs.insert(handle.clone(), task);
        handle
    }

    pub fn take_run(&mut self, handle: &str) -> Option<RunTask> {
        self.runs.remove(handle)
    }
}

/// How long `commands.start` waits for the `init` event.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
