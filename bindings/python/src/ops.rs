//! The operations the Python layer calls, by name, with JSON arguments: each one is a
//! thin translation onto one public call of `opensandbox-core`. Results are JSON in
//! the shapes of `conformance/PROTOCOL.md` §2.2 (which the Python models parse), raw
//! bytes, or a stream object.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use opensandbox_core::models::{
    CodeContext, ContentReplaceEntry, ImageSpec, MoveEntry, NetworkPolicy, NetworkRule,
    PathPermission, ReadOptions, RunCommandOptions, SandboxFilter, SnapshotFilter,
};
use opensandbox_core::{
    ConnectOptions, ConnectionConfig, EventStream, MetricsStream, Protocol, RunControl, Sandbox,
    SandboxCreateOptions, SandboxManager, WriteData, WriteEntry,
};
use serde_json::{json, Map, Value};

use crate::args::Args;
use crate::convert;

/// Why an operation did not produce a result.
#[derive(Debug)]
pub enum Failure {
    /// The SDK reported an error.
    Sdk(opensandbox_core::Error),
    /// Unusable arguments from the Python layer (reported as `invalid_argument`).
    Driver(String),
}

impl From<opensandbox_core::Error> for Failure {
    fn from(e: opensandbox_core::Error) -> Self {
        Failure::Sdk(e)
    }
}

/// Data for one uploaded file, taken from Python objects.
pub enum Blob {
    /// `bytes` / `bytearray` / `memoryview`.
    Bytes(Bytes),
    /// `str`, encoded by the caller's encoding in Python (UTF-8 otherwise).
    Text(String),
    /// A stream built over a Python object with `read(n)`.
    Stream(WriteData),
}

/// What an operation returns.
pub enum Out {
    /// No result (`None`).
    Null,
    /// A JSON document.
    Json(Value),
    /// Raw bytes (downloads).
    Bytes(Bytes),
    /// An execution's events.
    Exec(EventStream, opensandbox_core::ExecutionKind),
    /// A download as chunks.
    Read(opensandbox_core::execd::BytesStream),
    /// Metrics samples.
    Metrics(MetricsStream),
}

/// One client: a connection configuration, its manager and the sandbox handles made
/// through it (by id, so that a handle survives across calls).
pub struct State {
    base: ConnectionConfig,
    manager: OnceLock<SandboxManager>,
    sandboxes: Mutex<HashMap<String, Sandbox>>,
}

impl State {
    /// A state over the configuration `cfg` (a JSON object; absent keys fall back to
    /// the environment and the core's defaults).
    pub fn new(cfg: &Value) -> Result<State, Failure> {
        let args = Args::new("ConnectionConfig", cfg.clone());
        let mut c = ConnectionConfig::new();
        if let Some(domain) = args.opt_str("domain")? {
            c = c.with_domain(domain);
        }
        if args.has("api_key") {
            if let Some(key) = args.opt_str("api_key")? {
                c = c.with_api_key(key);
            }
        }
        if let Some(p) = args.opt_str("protocol")? {
            c = c.with_protocol(Protocol::parse(&p)?);
        }
        if let Some(t) = args.opt_secs("request_timeout_s")? {
            c = c.with_request_timeout(t);
        }
        if let Some(ua) = args.opt_str("user_agent")? {
            c = c.with_user_agent(ua);
        }
        for (k, v) in args.str_map("headers")? {
            c = c.with_header(k, v);
        }
        c = c.with_use_server_proxy(args.bool("use_server_proxy")?);
        Ok(State {
            base: c,
            manager: OnceLock::new(),
            sandboxes: Mutex::new(HashMap::new()),
        })
    }

    fn manager(&self) -> Result<SandboxManager, Failure> {
        if let Some(m) = self.manager.get() {
            return Ok(m.clone());
        }
        let m = SandboxManager::new(self.base.clone())?;
        Ok(self.manager.get_or_init(|| m).clone())
    }

    fn cached(&self, id: &str) -> Option<Sandbox> {
        self.sandboxes.lock().ok()?.get(id).cloned()
    }

    fn keep(&self, sandbox: &Sandbox) {
        if let Ok(mut map) = self.sandboxes.lock() {
            map.insert(sandbox.id().to_owned(), sandbox.clone());
        }
    }

    /// Forgets a handle (after kill / close).
    pub fn forget(&self, id: &str) {
        if let Ok(mut map) = self.sandboxes.lock() {
            map.remove(id);
        }
    }

    /// The handle for `args.sandbox`: kept, or connected without a health check.
    async fn sandbox(&self, args: &Args) -> Result<Sandbox, Failure> {
        let id = args.str("sandbox")?;
        if let Some(s) = self.cached(&id) {
            return Ok(s);
        }
        let no_wait = ConnectOptions {
            skip_health_check: true,
            ..ConnectOptions::default()
        };
        let s = Sandbox::connect(self.base.clone(), &id, no_wait).await?;
        self.keep(&s);
        Ok(s)
    }
}

fn rules(args: &Args, name: &str) -> Result<Vec<NetworkRule>, Failure> {
    args.objects(name)?
        .iter()
        .map(|r| {
            Ok(NetworkRule {
                action: r.str("action")?,
                target: r.str("target")?,
            })
        })
        .collect()
}

fn create_options(args: &Args) -> Result<SandboxCreateOptions, Failure> {
    let mut opts = SandboxCreateOptions::default();
    if let Some(uri) = args.opt_str("image")? {
        opts.image = Some(ImageSpec { uri, auth: None });
    }
    opts.snapshot_id = args.opt_str("snapshot_id")?;
    if args.has("entrypoint") && !matches!(args.raw("entrypoint"), Some(Value::Null)) {
        opts.entrypoint = args.str_list("entrypoint")?;
    }
    if args.has("timeout_s") {
        opts.timeout = args.opt_secs("timeout_s")?;
    }
    if let Some(t) = args.opt_secs("ready_timeout_s")? {
        opts.ready_timeout = t;
    }
    if let Some(t) = args.opt_secs("polling_interval_s")? {
        opts.health_check_polling_interval = t;
    }
    opts.env = args.str_map("env")?;
    opts.metadata = args.str_map("metadata")?;
    if args.has("resource") && !matches!(args.raw("resource"), Some(Value::Null)) {
        opts.resource = args.str_map("resource")?;
    }
    opts.extensions = args.str_map("extensions")?;
    if let Some(policy) = args.object("network_policy")? {
        opts.network_policy = Some(NetworkPolicy {
            default_action: policy.opt_str("default_action")?,
            egress: rules(&policy, "egress")?,
        });
    }
    opts.skip_health_check = args.bool("skip_health_check")?;
    Ok(opts)
}

fn connect_options(args: &Args, timeout_arg: &str) -> Result<ConnectOptions, Failure> {
    let mut opts = ConnectOptions::default();
    if let Some(t) = args.opt_secs(timeout_arg)? {
        opts.timeout = t;
    }
    if let Some(t) = args.opt_secs("polling_interval_s")? {
        opts.health_check_polling_interval = t;
    }
    opts.skip_health_check = args.bool("skip_health_check")?;
    Ok(opts)
}

fn seconds(args: &Args) -> Result<Duration, Failure> {
    args.opt_secs("seconds")?
        .ok_or_else(|| Failure::Driver("argument seconds is required".into()))
}

fn command_options(args: &Args) -> Result<RunCommandOptions, Failure> {
    Ok(RunCommandOptions {
        background: args.bool("background")?,
        working_directory: args.opt_str("working_directory")?,
        timeout: args.opt_millis("timeout_ms")?,
        uid: args.opt_u32("uid")?,
        gid: args.opt_u32("gid")?,
        envs: args.str_map("envs")?,
    })
}

fn read_options(args: &Args) -> Result<ReadOptions, Failure> {
    Ok(ReadOptions {
        range: args.opt_str("range")?,
        offset: args.opt_u64("offset")?,
        limit: args.opt_u64("limit")?,
    })
}

fn permissions(args: &Args) -> Result<Vec<PathPermission>, Failure> {
    args.objects("entries")?
        .iter()
        .map(|e| {
            Ok(PathPermission {
                path: e.str("path")?,
                owner: e.opt_str("owner")?,
                group: e.opt_str("group")?,
                mode: e.opt_u32("mode")?,
            })
        })
        .collect()
}

fn replacements(args: &Args) -> Result<Vec<ContentReplaceEntry>, Failure> {
    args.objects("entries")?
        .iter()
        .map(|e| {
            Ok(ContentReplaceEntry {
                path: e.str("path")?,
                old_content: e.str("old_content")?,
                new_content: e.str("new_content")?,
            })
        })
        .collect()
}

fn info_page(items: Vec<Value>, key: &str, p: &opensandbox_core::models::PaginationInfo) -> Value {
    let mut m = Map::new();
    m.insert(key.to_owned(), Value::Array(items));
    m.insert("pagination".into(), convert::pagination(p));
    Value::Object(m)
}

/// Runs `op` with `args`; `blobs` hold the data of `files.write_files` entries
/// (entry `i` has `"blob": i`).
pub async fn dispatch(
    state: Arc<State>,
    op: String,
    args: Value,
    mut blobs: Vec<Option<Blob>>,
) -> Result<Out, Failure> {
    let args = Args::new(&op, args);
    let json = |v: Value| Ok(Out::Json(v));
    match op.as_str() {
        // ---- lifecycle -------------------------------------------------------------
        "sandbox.create" => {
            let s = Sandbox::create(state.base.clone(), create_options(&args)?).await?;
            state.keep(&s);
            json(json!({"id": s.id()}))
        }
        "sandbox.connect" => {
            let id = args.str("sandbox_id")?;
            let opts = connect_options(&args, "connect_timeout_s")?;
            let s = Sandbox::connect(state.base.clone(), &id, opts).await?;
            state.keep(&s);
            json(json!({"id": s.id()}))
        }
        "sandbox.resume" => {
            let id = args.str("sandbox_id")?;
            let opts = connect_options(&args, "resume_timeout_s")?;
            let s = Sandbox::resume(state.base.clone(), &id, opts).await?;
            state.keep(&s);
            json(json!({"id": s.id()}))
        }
        "sandbox.close" => {
            state.forget(&args.str("sandbox")?);
            Ok(Out::Null)
        }
        "sandbox.get_info" => json(convert::sandbox_info(
            &state.sandbox(&args).await?.get_info().await?,
        )),
        "sandbox.is_healthy" => json(json!(state.sandbox(&args).await?.is_healthy().await)),
        "sandbox.renew" => {
            let r = state.sandbox(&args).await?.renew(seconds(&args)?).await?;
            json(json!({"expires_at": r.expires_at.map(|t| t.to_rfc3339())}))
        }
        "sandbox.patch_metadata" => {
            let s = state.sandbox(&args).await?;
            json(convert::sandbox_info(
                &s.patch_metadata(&args.opt_str_map("patch")?).await?,
            ))
        }
        "sandbox.pause" => {
            state.sandbox(&args).await?.pause().await?;
            Ok(Out::Null)
        }
        "sandbox.kill" => {
            let s = state.sandbox(&args).await?;
            s.kill().await?;
            state.forget(s.id());
            Ok(Out::Null)
        }
        "sandbox.get_endpoint" => {
            let s = state.sandbox(&args).await?;
            json(convert::endpoint(
                &s.get_endpoint(args.port("port")?).await?,
            ))
        }
        "sandbox.get_signed_endpoint" => {
            let s = state.sandbox(&args).await?;
            let expires = i64::try_from(args.u64("expires")?)
                .map_err(|_| Failure::Driver("expires is too large".into()))?;
            json(convert::endpoint(
                &s.get_signed_endpoint(args.port("port")?, expires).await?,
            ))
        }
        "sandbox.get_metrics" => json(convert::metrics(
            &state.sandbox(&args).await?.get_metrics().await?,
        )),
        "sandbox.create_snapshot" => {
            let s = state.sandbox(&args).await?;
            let name = args.opt_str("name")?;
            json(convert::snapshot(
                &s.create_snapshot(name.as_deref()).await?,
            ))
        }
        "sandbox.get_egress_policy" => json(convert::network_policy(
            &state.sandbox(&args).await?.get_egress_policy().await?,
        )),
        "sandbox.patch_egress_rules" => {
            let s = state.sandbox(&args).await?;
            let st = s.patch_egress_rules(&rules(&args, "rules")?).await?;
            json(json!({"status": st.status, "mode": st.mode}))
        }
        "sandbox.delete_egress_rules" => {
            let s = state.sandbox(&args).await?;
            let targets = args.str_list("targets")?;
            let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
            let st = s.delete_egress_rules(&refs).await?;
            json(json!({"status": st.status, "mode": st.mode}))
        }
        "sandbox.get_diagnostic_logs" => {
            let s = state.sandbox(&args).await?;
            json(convert::diagnostic(
                &s.get_diagnostic_logs(&args.str("scope")?).await?,
            ))
        }
        "sandbox.get_diagnostic_events" => {
            let s = state.sandbox(&args).await?;
            json(convert::diagnostic(
                &s.get_diagnostic_events(&args.str("scope")?).await?,
            ))
        }
        "manager.list_sandbox_infos" => {
            let filter = SandboxFilter {
                states: args.str_list("states")?,
                metadata: args.str_map("metadata")?,
                page: args.opt_u32("page")?,
                page_size: args.opt_u32("page_size")?,
            };
            let page = state.manager()?.list_sandbox_infos(&filter).await?;
            let items = page.items.iter().map(convert::sandbox_info).collect();
            json(info_page(items, "sandbox_infos", &page.pagination))
        }
        "manager.get_sandbox_info" => json(convert::sandbox_info(
            &state
                .manager()?
                .get_sandbox_info(&args.str("sandbox_id")?)
                .await?,
        )),
        "manager.kill_sandbox" => {
            let id = args.str("sandbox_id")?;
            state.manager()?.kill_sandbox(&id).await?;
            state.forget(&id);
            Ok(Out::Null)
        }
        "manager.pause_sandbox" => {
            state
                .manager()?
                .pause_sandbox(&args.str("sandbox_id")?)
                .await?;
            Ok(Out::Null)
        }
        "manager.resume_sandbox" => {
            state
                .manager()?
                .resume_sandbox(&args.str("sandbox_id")?)
                .await?;
            Ok(Out::Null)
        }
        "manager.renew_sandbox" => {
            let r = state
                .manager()?
                .renew_sandbox(&args.str("sandbox_id")?, seconds(&args)?)
                .await?;
            json(json!({"expires_at": r.expires_at.map(|t| t.to_rfc3339())}))
        }
        "manager.patch_sandbox_metadata" => json(convert::sandbox_info(
            &state
                .manager()?
                .patch_sandbox_metadata(&args.str("sandbox_id")?, &args.opt_str_map("patch")?)
                .await?,
        )),
        "manager.get_endpoint" => json(convert::endpoint(
            &state
                .manager()?
                .get_endpoint(&args.str("sandbox_id")?, args.port("port")?, None)
                .await?,
        )),
        "manager.create_snapshot" => {
            let name = args.opt_str("name")?;
            json(convert::snapshot(
                &state
                    .manager()?
                    .create_snapshot(&args.str("sandbox_id")?, name.as_deref())
                    .await?,
            ))
        }
        "manager.get_snapshot" => json(convert::snapshot(
            &state
                .manager()?
                .get_snapshot(&args.str("snapshot_id")?)
                .await?,
        )),
        "manager.delete_snapshot" => {
            state
                .manager()?
                .delete_snapshot(&args.str("snapshot_id")?)
                .await?;
            Ok(Out::Null)
        }
        "manager.list_snapshots" => {
            let filter = SnapshotFilter {
                sandbox_id: args.opt_str("sandbox_id")?,
                states: args.str_list("states")?,
                page: args.opt_u32("page")?,
                page_size: args.opt_u32("page_size")?,
            };
            let page = state.manager()?.list_snapshots(&filter).await?;
            let items = page.items.iter().map(convert::snapshot).collect();
            json(info_page(items, "snapshot_infos", &page.pagination))
        }
        "manager.get_diagnostic_logs" => json(convert::diagnostic(
            &state
                .manager()?
                .get_diagnostic_logs(&args.str("sandbox_id")?, &args.str("scope")?)
                .await?,
        )),
        "manager.get_diagnostic_events" => json(convert::diagnostic(
            &state
                .manager()?
                .get_diagnostic_events(&args.str("sandbox_id")?, &args.str("scope")?)
                .await?,
        )),
        // ---- commands, sessions, code ------------------------------------------------
        "commands.run" => {
            let s = state.sandbox(&args).await?;
            let opts = command_options(&args)?;
            let kind = if opts.background {
                opensandbox_core::ExecutionKind::BackgroundCommand
            } else {
                opensandbox_core::ExecutionKind::Command
            };
            let stream = s
                .execd()
                .run_command_stream(&args.str("command")?, &opts, RunControl::default())
                .await?;
            Ok(Out::Exec(stream, kind))
        }
        "commands.run_in_session" => {
            let s = state.sandbox(&args).await?;
            let cwd = args.opt_str("working_directory")?;
            let stream = s
                .execd()
                .run_in_session_stream(
                    &args.str("session_id")?,
                    &args.str("command")?,
                    cwd.as_deref(),
                    args.opt_millis("timeout_ms")?,
                    RunControl::default(),
                )
                .await?;
            Ok(Out::Exec(stream, opensandbox_core::ExecutionKind::Session))
        }
        "commands.interrupt" => {
            let s = state.sandbox(&args).await?;
            s.execd().interrupt(&args.str("id")?).await?;
            Ok(Out::Null)
        }
        "commands.get_command_status" => {
            let s = state.sandbox(&args).await?;
            json(convert::command_status(
                &s.execd().get_command_status(&args.str("id")?).await?,
            ))
        }
        "commands.get_background_command_logs" => {
            let s = state.sandbox(&args).await?;
            let logs = s
                .execd()
                .get_background_command_logs(&args.str("id")?, args.opt_u64("cursor")?)
                .await?;
            json(convert::command_logs(&logs))
        }
        "commands.create_session" => {
            let s = state.sandbox(&args).await?;
            let cwd = args.opt_str("working_directory")?;
            json(json!(s.execd().create_session(cwd.as_deref()).await?))
        }
        "commands.delete_session" => {
            let s = state.sandbox(&args).await?;
            s.execd().delete_session(&args.str("session_id")?).await?;
            Ok(Out::Null)
        }
        "code.create_context" => {
            let s = state.sandbox(&args).await?;
            let cwd = args.opt_str("cwd")?;
            let ctx = s
                .execd()
                .create_context(&args.str("language")?, cwd.as_deref())
                .await?;
            json(convert::context(&ctx))
        }
        "code.get_context" => {
            let s = state.sandbox(&args).await?;
            json(convert::context(
                &s.execd().get_context(&args.str("context_id")?).await?,
            ))
        }
        "code.list_contexts" => {
            let s = state.sandbox(&args).await?;
            let language = args.opt_str("language")?;
            let list = s.execd().list_contexts(language.as_deref()).await?;
            json(Value::Array(list.iter().map(convert::context).collect()))
        }
        "code.delete_context" => {
            let s = state.sandbox(&args).await?;
            s.execd().delete_context(&args.str("context_id")?).await?;
            Ok(Out::Null)
        }
        "code.delete_contexts" => {
            let s = state.sandbox(&args).await?;
            s.execd().delete_contexts(&args.str("language")?).await?;
            Ok(Out::Null)
        }
        "code.run" => {
            let s = state.sandbox(&args).await?;
            let ctx = match args.object("context")? {
                Some(c) => Some(CodeContext {
                    id: c.opt_str("id")?,
                    language: c.opt_str("language")?.unwrap_or_else(|| "python".into()),
                    cwd: c.opt_str("cwd")?,
                }),
                None => None,
            };
            let kind = if ctx.is_some() {
                opensandbox_core::ExecutionKind::Code
            } else {
                opensandbox_core::ExecutionKind::Command
            };
            let stream = s
                .execd()
                .run_code_stream(&args.str("code")?, ctx.as_ref(), RunControl::default())
                .await?;
            Ok(Out::Exec(stream, kind))
        }
        "code.interrupt" => {
            let s = state.sandbox(&args).await?;
            s.execd().interrupt_code(&args.str("id")?).await?;
            Ok(Out::Null)
        }
        // ---- files and metrics ---------------------------------------------------------
        "files.write_files" => {
            let s = state.sandbox(&args).await?;
            let mut entries = Vec::new();
            for e in args.objects("entries")? {
                let data = match e.opt_u64("blob")? {
                    Some(i) => blobs
                        .get_mut(i as usize)
                        .and_then(Option::take)
                        .ok_or_else(|| Failure::Driver(format!("no data for entry {i}")))?,
                    None => Blob::Text(String::new()),
                };
                let data = match data {
                    Blob::Bytes(b) => WriteData::Bytes(b),
                    Blob::Text(t) => WriteData::Text(t),
                    Blob::Stream(w) => w,
                };
                let mut w = WriteEntry::new(e.str("path")?, data);
                w.mode = e.opt_u32("mode")?;
                w.owner = e.opt_str("owner")?;
                w.group = e.opt_str("group")?;
                entries.push(w);
            }
            s.execd().write_files(entries).await?;
            Ok(Out::Null)
        }
        "files.read_bytes" => {
            let s = state.sandbox(&args).await?;
            let data = s
                .execd()
                .read_bytes(&args.str("path")?, &read_options(&args)?)
                .await?;
            Ok(Out::Bytes(data))
        }
        "files.read_bytes_stream" => {
            let s = state.sandbox(&args).await?;
            let stream = s
                .execd()
                .read_bytes_stream(&args.str("path")?, &read_options(&args)?)
                .await?;
            Ok(Out::Read(stream))
        }
        "files.get_file_info" => {
            let s = state.sandbox(&args).await?;
            let paths = args.str_list("paths")?;
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            let infos = s.execd().get_file_info(&refs).await?;
            let map: Map<String, Value> = infos
                .iter()
                .map(|(k, v)| (k.clone(), convert::entry(v)))
                .collect();
            json(Value::Object(map))
        }
        "files.delete_files" | "files.delete_directories" => {
            let s = state.sandbox(&args).await?;
            let paths = args.str_list("paths")?;
            let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
            if op == "files.delete_files" {
                s.execd().delete_files(&refs).await?;
            } else {
                s.execd().delete_directories(&refs).await?;
            }
            Ok(Out::Null)
        }
        "files.move_files" => {
            let s = state.sandbox(&args).await?;
            let moves = args
                .objects("entries")?
                .iter()
                .map(|e| {
                    Ok(MoveEntry {
                        src: e.str("src")?,
                        dest: e.str("dest")?,
                    })
                })
                .collect::<Result<Vec<_>, Failure>>()?;
            s.execd().move_files(&moves).await?;
            Ok(Out::Null)
        }
        "files.set_permissions" => {
            let s = state.sandbox(&args).await?;
            s.execd().set_permissions(&permissions(&args)?).await?;
            Ok(Out::Null)
        }
        "files.create_directories" => {
            let s = state.sandbox(&args).await?;
            s.execd().create_directories(&permissions(&args)?).await?;
            Ok(Out::Null)
        }
        "files.replace_contents" => {
            let s = state.sandbox(&args).await?;
            s.execd().replace_contents(&replacements(&args)?).await?;
            Ok(Out::Null)
        }
        "files.replace_contents_detailed" => {
            let s = state.sandbox(&args).await?;
            let results = s
                .execd()
                .replace_contents_detailed(&replacements(&args)?)
                .await?;
            json(Value::Array(
                results
                    .iter()
                    .map(|r| json!({"path": r.path, "replaced_count": r.replaced_count}))
                    .collect(),
            ))
        }
        "files.search" => {
            let s = state.sandbox(&args).await?;
            let pattern = args.opt_str("pattern")?;
            let found = s
                .execd()
                .search(&args.str("path")?, pattern.as_deref())
                .await?;
            json(Value::Array(found.iter().map(convert::entry).collect()))
        }
        "files.list_directory" => {
            let s = state.sandbox(&args).await?;
            let listed = s
                .execd()
                .list_directory(&args.str("path")?, args.opt_u32("depth")?)
                .await?;
            json(Value::Array(listed.iter().map(convert::entry).collect()))
        }
        "metrics.watch" => {
            let s = state.sandbox(&args).await?;
            Ok(Out::Metrics(s.execd().watch_metrics().await?))
        }
        _ => Err(Failure::Driver(format!("unknown operation {op}"))),
    }
}
