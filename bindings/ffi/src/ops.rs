//! The JSON ops of `osb_manager_call` and `osb_sandbox_call` (API.md §6): arguments
//! in snake_case, results in the core models' wire shapes.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use opensandbox_core::models::{
    CodeContext, ContentReplaceEntry, MoveEntry, NetworkRule, PathPermission, ReadOptions,
    RunCommandOptions, SandboxFilter, SnapshotFilter,
};
use opensandbox_core::{
    Error, ExecutionHandlers, Result, RunControl, Sandbox, SandboxManager, WriteEntry,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::util::{invalid, Payload};

fn args<T: DeserializeOwned>(op: &str, v: &Value) -> Result<T> {
    let v = if v.is_null() {
        Value::Object(Default::default())
    } else {
        v.clone()
    };
    serde_json::from_value(v).map_err(|e| invalid(op, format!("bad arguments: {e}")))
}

fn ms(v: Option<u64>) -> Option<Duration> {
    v.map(Duration::from_millis)
}

fn null() -> Result<Payload> {
    Ok(Payload::Json("null".to_owned()))
}

// ---------------------------------------------------------------------------------
// Argument shapes

#[derive(Deserialize)]
struct SandboxId {
    sandbox_id: String,
}

#[derive(Deserialize)]
struct SnapshotId {
    snapshot_id: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListSandboxes {
    states: Vec<String>,
    metadata: BTreeMap<String, String>,
    page: Option<u32>,
    page_size: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ListSnapshots {
    sandbox_id: Option<String>,
    states: Vec<String>,
    page: Option<u32>,
    page_size: Option<u32>,
}

#[derive(Deserialize)]
struct Renew {
    #[serde(default)]
    sandbox_id: String,
    timeout_s: f64,
}

#[derive(Deserialize)]
struct Patch {
    #[serde(default)]
    sandbox_id: String,
    patch: BTreeMap<String, Option<String>>,
}

#[derive(Deserialize)]
struct EndpointArgs {
    #[serde(default)]
    sandbox_id: String,
    port: u16,
    #[serde(default)]
    use_server_proxy: Option<bool>,
    #[serde(default)]
    expires: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named {
    sandbox_id: String,
    name: Option<String>,
}

#[derive(Deserialize)]
struct Scope {
    #[serde(default)]
    sandbox_id: String,
    scope: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Ready {
    timeout_ms: Option<u64>,
    polling_interval_ms: Option<u64>,
}

#[derive(Deserialize)]
struct Rules {
    rules: Vec<NetworkRule>,
}

#[derive(Deserialize)]
struct Targets {
    targets: Vec<String>,
}

/// `commands.run` (call and stream).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct RunArgs {
    pub command: String,
    pub background: bool,
    pub working_directory: Option<String>,
    pub timeout_ms: Option<u64>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub envs: BTreeMap<String, String>,
    pub deadline_ms: Option<u64>,
    pub skip_accumulation: bool,
    pub interrupt_on_drop: bool,
}

impl RunArgs {
    pub(crate) fn options(&self) -> RunCommandOptions {
        RunCommandOptions {
            background: self.background,
            working_directory: self.working_directory.clone(),
            timeout: ms(self.timeout_ms),
            uid: self.uid,
            gid: self.gid,
            envs: self.envs.clone(),
        }
    }

    pub(crate) fn control(&self) -> RunControl {
        RunControl {
            deadline: ms(self.deadline_ms),
            interrupt_on_drop: self.interrupt_on_drop,
        }
    }
}

/// `commands.run_in_session` (call and stream).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct SessionRunArgs {
    pub session_id: String,
    pub command: String,
    pub working_directory: Option<String>,
    pub timeout_ms: Option<u64>,
    pub deadline_ms: Option<u64>,
    pub skip_accumulation: bool,
    pub interrupt_on_drop: bool,
}

/// `code.run` (call and stream).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct CodeRunArgs {
    pub code: String,
    pub context_id: Option<String>,
    pub language: Option<String>,
    pub deadline_ms: Option<u64>,
    pub skip_accumulation: bool,
    pub interrupt_on_drop: bool,
}

impl CodeRunArgs {
    pub(crate) fn context(&self) -> Option<CodeContext> {
        if self.context_id.is_none() && self.language.is_none() {
            return None;
        }
        Some(CodeContext {
            id: self.context_id.clone(),
            language: self.language.clone().unwrap_or_default(),
            cwd: None,
        })
    }
}

#[derive(Deserialize)]
struct ExecutionId {
    execution_id: String,
}

#[derive(Deserialize)]
struct Logs {
    execution_id: String,
    #[serde(default)]
    cursor: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WorkingDir {
    working_directory: Option<String>,
}

#[derive(Deserialize)]
struct SessionId {
    session_id: String,
}

#[derive(Deserialize)]
struct NewContext {
    language: String,
    #[serde(default)]
    cwd: Option<String>,
}

#[derive(Deserialize)]
struct ContextId {
    context_id: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Language {
    language: Option<String>,
}

#[derive(Deserialize)]
struct Paths {
    paths: Vec<String>,
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    data_b64: Option<String>,
    #[serde(default)]
    mode: Option<u32>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    group: Option<String>,
}

#[derive(Deserialize)]
struct WriteFiles {
    entries: Vec<WriteArgs>,
}

/// `files.read_*` and `osb_sandbox_download`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct ReadArgs {
    pub path: String,
    pub range: Option<String>,
    pub offset: Option<u64>,
    pub limit: Option<u64>,
}

impl ReadArgs {
    pub(crate) fn options(&self) -> ReadOptions {
        ReadOptions {
            range: self.range.clone(),
            offset: self.offset,
            limit: self.limit,
        }
    }
}

#[derive(Deserialize)]
struct Moves {
    entries: Vec<MoveEntry>,
}

#[derive(Deserialize)]
struct PermArgs {
    path: String,
    #[serde(default)]
    mode: Option<u32>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    group: Option<String>,
}

#[derive(Deserialize)]
struct Perms {
    entries: Vec<PermArgs>,
}

#[derive(Deserialize)]
struct ReplaceArgs {
    path: String,
    old_content: String,
    new_content: String,
}

#[derive(Deserialize)]
struct Replaces {
    entries: Vec<ReplaceArgs>,
}

#[derive(Deserialize)]
struct Search {
    path: String,
    #[serde(default)]
    pattern: Option<String>,
}

#[derive(Deserialize)]
struct ListDir {
    path: String,
    #[serde(default)]
    depth: Option<u32>,
}

/// Handlers for the run-to-completion call ops: nothing to call, maybe no logs kept.
pub(crate) struct Accumulate(pub bool);

impl ExecutionHandlers for Accumulate {
    fn skip_accumulation(&self) -> bool {
        self.0
    }
}

fn secs(op: &str, s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| invalid(op, "timeout_s must be a non-negative number"))
}

fn decode_data(op: &str, w: &WriteArgs) -> Result<bytes::Bytes> {
    match (&w.data, &w.data_b64) {
        (Some(t), None) => Ok(bytes::Bytes::from(t.clone().into_bytes())),
        (None, Some(b)) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .map(bytes::Bytes::from)
            .map_err(|e| invalid(op, format!("data_b64 is not base64: {e}"))),
        (None, None) => Ok(bytes::Bytes::new()),
        (Some(_), Some(_)) => Err(invalid(op, "give data or data_b64, not both")),
    }
}

fn perms(entries: Vec<PermArgs>) -> Vec<PathPermission> {
    entries
        .into_iter()
        .map(|p| PathPermission {
            path: p.path,
            owner: p.owner,
            group: p.group,
            mode: p.mode,
        })
        .collect()
}

fn replaces(entries: Vec<ReplaceArgs>) -> Vec<ContentReplaceEntry> {
    entries
        .into_iter()
        .map(|r| ContentReplaceEntry {
            path: r.path,
            old_content: r.old_content,
            new_content: r.new_content,
        })
        .collect()
}

fn unknown(kind: &str, op: &str) -> Error {
    invalid(kind, format!("unknown op {op:?}"))
}

// ---------------------------------------------------------------------------------
// Manager ops

/// Runs one `osb_manager_call` op.
pub(crate) async fn manager_op(m: SandboxManager, op: String, v: Value) -> Result<Payload> {
    let op = op.as_str();
    match op {
        "list_sandbox_infos" => {
            let a: ListSandboxes = args(op, &v)?;
            let filter = SandboxFilter {
                states: a.states,
                metadata: a.metadata,
                page: a.page,
                page_size: a.page_size,
            };
            Payload::json(op, &m.list_sandbox_infos(&filter).await?)
        }
        "get_sandbox_info" => {
            let a: SandboxId = args(op, &v)?;
            Payload::json(op, &m.get_sandbox_info(&a.sandbox_id).await?)
        }
        "kill_sandbox" => {
            let a: SandboxId = args(op, &v)?;
            m.kill_sandbox(&a.sandbox_id).await?;
            null()
        }
        "pause_sandbox" => {
            let a: SandboxId = args(op, &v)?;
            m.pause_sandbox(&a.sandbox_id).await?;
            null()
        }
        "resume_sandbox" => {
            let a: SandboxId = args(op, &v)?;
            m.resume_sandbox(&a.sandbox_id).await?;
            null()
        }
        "renew_sandbox" => {
            let a: Renew = args(op, &v)?;
            let d = secs(op, a.timeout_s)?;
            Payload::json(op, &m.renew_sandbox(&a.sandbox_id, d).await?)
        }
        "patch_sandbox_metadata" => {
            let a: Patch = args(op, &v)?;
            Payload::json(
                op,
                &m.patch_sandbox_metadata(&a.sandbox_id, &a.patch).await?,
            )
        }
        "get_endpoint" => {
            let a: EndpointArgs = args(op, &v)?;
            let e = m
                .get_endpoint(&a.sandbox_id, a.port, a.use_server_proxy)
                .await?;
            Payload::json(op, &e)
        }
        "get_signed_endpoint" => {
            let a: EndpointArgs = args(op, &v)?;
            let expires = a
                .expires
                .ok_or_else(|| invalid(op, "expires is required"))?;
            Payload::json(
                op,
                &m.get_signed_endpoint(&a.sandbox_id, a.port, expires)
                    .await?,
            )
        }
        "create_snapshot" => {
            let a: Named = args(op, &v)?;
            Payload::json(
                op,
                &m.create_snapshot(&a.sandbox_id, a.name.as_deref()).await?,
            )
        }
        "get_snapshot" => {
            let a: SnapshotId = args(op, &v)?;
            Payload::json(op, &m.get_snapshot(&a.snapshot_id).await?)
        }
        "delete_snapshot" => {
            let a: SnapshotId = args(op, &v)?;
            m.delete_snapshot(&a.snapshot_id).await?;
            null()
        }
        "list_snapshots" => {
            let a: ListSnapshots = args(op, &v)?;
            let filter = SnapshotFilter {
                sandbox_id: a.sandbox_id,
                states: a.states,
                page: a.page,
                page_size: a.page_size,
            };
            Payload::json(op, &m.list_snapshots(&filter).await?)
        }
        "get_diagnostic_logs" => {
            let a: Scope = args(op, &v)?;
            Payload::json(op, &m.get_diagnostic_logs(&a.sandbox_id, &a.scope).await?)
        }
        "get_diagnostic_events" => {
            let a: Scope = args(op, &v)?;
            Payload::json(op, &m.get_diagnostic_events(&a.sandbox_id, &a.scope).await?)
        }
        _ => Err(unknown("manager.call", op)),
    }
}

// ---------------------------------------------------------------------------------
// Sandbox ops

/// Runs one `osb_sandbox_call` op.
pub(crate) async fn sandbox_op(sb: Sandbox, op: String, v: Value) -> Result<Payload> {
    let op = op.as_str();
    let x = sb.execd();
    match op {
        "get_info" => Payload::json(op, &sb.get_info().await?),
        "is_healthy" => Payload::json(op, &sb.is_healthy().await),
        "ping" => {
            x.ping(sb.config().request_timeout()).await?;
            null()
        }
        "wait_until_ready" => {
            let a: Ready = args(op, &v)?;
            sb.wait_until_ready(
                ms(a.timeout_ms).unwrap_or(Duration::from_secs(30)),
                ms(a.polling_interval_ms).unwrap_or(Duration::from_millis(200)),
                None,
            )
            .await?;
            null()
        }
        "renew" => {
            let a: Renew = args(op, &v)?;
            Payload::json(op, &sb.renew(secs(op, a.timeout_s)?).await?)
        }
        "patch_metadata" => {
            let a: Patch = args(op, &v)?;
            Payload::json(op, &sb.patch_metadata(&a.patch).await?)
        }
        "pause" => {
            sb.pause().await?;
            null()
        }
        "kill" => {
            sb.kill().await?;
            null()
        }
        "get_endpoint" => {
            let a: EndpointArgs = args(op, &v)?;
            Payload::json(op, &sb.get_endpoint(a.port).await?)
        }
        "get_signed_endpoint" => {
            let a: EndpointArgs = args(op, &v)?;
            let expires = a
                .expires
                .ok_or_else(|| invalid(op, "expires is required"))?;
            Payload::json(op, &sb.get_signed_endpoint(a.port, expires).await?)
        }
        "get_metrics" => Payload::json(op, &sb.get_metrics().await?),
        "create_snapshot" => {
            let a: Named = args(op, &v)?;
            Payload::json(op, &sb.create_snapshot(a.name.as_deref()).await?)
        }
        "get_diagnostic_logs" => {
            let a: Scope = args(op, &v)?;
            Payload::json(op, &sb.get_diagnostic_logs(&a.scope).await?)
        }
        "get_diagnostic_events" => {
            let a: Scope = args(op, &v)?;
            Payload::json(op, &sb.get_diagnostic_events(&a.scope).await?)
        }
        "get_egress_policy" => Payload::json(op, &sb.get_egress_policy().await?),
        "egress.get_policy" => Payload::json(op, &sb.egress().await?.get_policy().await?),
        "patch_egress_rules" => {
            let a: Rules = args(op, &v)?;
            Payload::json(op, &sb.patch_egress_rules(&a.rules).await?)
        }
        "delete_egress_rules" => {
            let a: Targets = args(op, &v)?;
            let refs: Vec<&str> = a.targets.iter().map(String::as_str).collect();
            Payload::json(op, &sb.delete_egress_rules(&refs).await?)
        }
        "commands.run" => {
            let a: RunArgs = args(op, &v)?;
            let mut h = Accumulate(a.skip_accumulation);
            let ex = x
                .run_command(&a.command, &a.options(), a.control(), &mut h)
                .await?;
            Payload::json(op, &ex)
        }
        "commands.interrupt" => {
            let a: ExecutionId = args(op, &v)?;
            x.interrupt(&a.execution_id).await?;
            null()
        }
        "commands.get_command_status" => {
            let a: ExecutionId = args(op, &v)?;
            Payload::json(op, &x.get_command_status(&a.execution_id).await?)
        }
        "commands.get_background_command_logs" => {
            let a: Logs = args(op, &v)?;
            let l = x
                .get_background_command_logs(&a.execution_id, a.cursor)
                .await?;
            Payload::json(op, &json!({"content": l.content, "cursor": l.cursor}))
        }
        "commands.create_session" => {
            let a: WorkingDir = args(op, &v)?;
            let id = x.create_session(a.working_directory.as_deref()).await?;
            Payload::json(op, &json!({ "session_id": id }))
        }
        "commands.run_in_session" => {
            let a: SessionRunArgs = args(op, &v)?;
            let mut h = Accumulate(a.skip_accumulation);
            let control = RunControl {
                deadline: ms(a.deadline_ms),
                interrupt_on_drop: a.interrupt_on_drop,
            };
            let ex = x
                .run_in_session(
                    &a.session_id,
                    &a.command,
                    a.working_directory.as_deref(),
                    ms(a.timeout_ms),
                    control,
                    &mut h,
                )
                .await?;
            Payload::json(op, &ex)
        }
        "commands.delete_session" => {
            let a: SessionId = args(op, &v)?;
            x.delete_session(&a.session_id).await?;
            null()
        }
        "code.create_context" => {
            let a: NewContext = args(op, &v)?;
            Payload::json(op, &x.create_context(&a.language, a.cwd.as_deref()).await?)
        }
        "code.get_context" => {
            let a: ContextId = args(op, &v)?;
            Payload::json(op, &x.get_context(&a.context_id).await?)
        }
        "code.list_contexts" => {
            let a: Language = args(op, &v)?;
            Payload::json(op, &x.list_contexts(a.language.as_deref()).await?)
        }
        "code.delete_context" => {
            let a: ContextId = args(op, &v)?;
            x.delete_context(&a.context_id).await?;
            null()
        }
        "code.delete_contexts" => {
            let a: Language = args(op, &v)?;
            let lang = a
                .language
                .ok_or_else(|| invalid(op, "language is required"))?;
            x.delete_contexts(&lang).await?;
            null()
        }
        "code.run" => {
            let a: CodeRunArgs = args(op, &v)?;
            let mut h = Accumulate(a.skip_accumulation);
            let control = RunControl {
                deadline: ms(a.deadline_ms),
                interrupt_on_drop: a.interrupt_on_drop,
            };
            let ex = x
                .run_code(&a.code, a.context().as_ref(), control, &mut h)
                .await?;
            Payload::json(op, &ex)
        }
        "code.interrupt" => {
            let a: ExecutionId = args(op, &v)?;
            x.interrupt_code(&a.execution_id).await?;
            null()
        }
        "files.get_file_info" => {
            let a: Paths = args(op, &v)?;
            let refs: Vec<&str> = a.paths.iter().map(String::as_str).collect();
            Payload::json(op, &x.get_file_info(&refs).await?)
        }
        "files.write_files" => {
            let a: WriteFiles = args(op, &v)?;
            let mut entries = Vec::with_capacity(a.entries.len());
            for w in a.entries {
                let data = decode_data(op, &w)?;
                entries.push(WriteEntry {
                    path: w.path,
                    data: data.into(),
                    mode: w.mode,
                    owner: w.owner,
                    group: w.group,
                });
            }
            x.write_files(entries).await?;
            null()
        }
        "files.read_file" => {
            let a: ReadArgs = args(op, &v)?;
            Payload::json(op, &x.read_file(&a.path, &a.options()).await?)
        }
        "files.read_bytes" => {
            let a: ReadArgs = args(op, &v)?;
            let b = x.read_bytes(&a.path, &a.options()).await?;
            Payload::json(op, &base64::engine::general_purpose::STANDARD.encode(&b))
        }
        "files.delete_files" => {
            let a: Paths = args(op, &v)?;
            let refs: Vec<&str> = a.paths.iter().map(String::as_str).collect();
            x.delete_files(&refs).await?;
            null()
        }
        "files.delete_directories" => {
            let a: Paths = args(op, &v)?;
            let refs: Vec<&str> = a.paths.iter().map(String::as_str).collect();
            x.delete_directories(&refs).await?;
            null()
        }
        "files.move_files" => {
            let a: Moves = args(op, &v)?;
            x.move_files(&a.entries).await?;
            null()
        }
        "files.set_permissions" => {
            let a: Perms = args(op, &v)?;
            x.set_permissions(&perms(a.entries)).await?;
            null()
        }
        "files.create_directories" => {
            let a: Perms = args(op, &v)?;
            x.create_directories(&perms(a.entries)).await?;
            null()
        }
        "files.replace_contents" => {
            let a: Replaces = args(op, &v)?;
            x.replace_contents(&replaces(a.entries)).await?;
            null()
        }
        "files.replace_contents_detailed" => {
            let a: Replaces = args(op, &v)?;
            let r = x.replace_contents_detailed(&replaces(a.entries)).await?;
            let v: Vec<Value> = r
                .iter()
                .map(|r| json!({"path": r.path, "replaced_count": r.replaced_count}))
                .collect();
            Payload::json(op, &v)
        }
        "files.search" => {
            let a: Search = args(op, &v)?;
            Payload::json(op, &x.search(&a.path, a.pattern.as_deref()).await?)
        }
        "files.list_directory" => {
            let a: ListDir = args(op, &v)?;
            Payload::json(op, &x.list_directory(&a.path, a.depth).await?)
        }
        _ => Err(unknown("sandbox.call", op)),
    }
}

/// Every op name `osb_manager_call` accepts.
pub const MANAGER_OPS: &[&str] = &[
    "list_sandbox_infos",
    "get_sandbox_info",
    "kill_sandbox",
    "pause_sandbox",
    "resume_sandbox",
    "renew_sandbox",
    "patch_sandbox_metadata",
    "get_endpoint",
    "get_signed_endpoint",
    "create_snapshot",
    "get_snapshot",
    "delete_snapshot",
    "list_snapshots",
    "get_diagnostic_logs",
    "get_diagnostic_events",
];

/// Every op name `osb_sandbox_call` accepts.
pub const SANDBOX_OPS: &[&str] = &[
    "get_info",
    "is_healthy",
    "ping",
    "wait_until_ready",
    "renew",
    "patch_metadata",
    "pause",
    "kill",
    "get_endpoint",
    "get_signed_endpoint",
    "get_metrics",
    "create_snapshot",
    "get_diagnostic_logs",
    "get_diagnostic_events",
    "get_egress_policy",
    "egress.get_policy",
    "patch_egress_rules",
    "delete_egress_rules",
    "commands.run",
    "commands.interrupt",
    "commands.get_command_status",
    "commands.get_background_command_logs",
    "commands.create_session",
    "commands.run_in_session",
    "commands.delete_session",
    "code.create_context",
    "code.get_context",
    "code.list_contexts",
    "code.delete_context",
    "code.delete_contexts",
    "code.run",
    "code.interrupt",
    "files.get_file_info",
    "files.write_files",
    "files.read_file",
    "files.read_bytes",
    "files.delete_files",
    "files.delete_directories",
    "files.move_files",
    "files.set_permissions",
    "files.create_directories",
    "files.replace_contents",
    "files.replace_contents_detailed",
    "files.search",
    "files.list_directory",
];
