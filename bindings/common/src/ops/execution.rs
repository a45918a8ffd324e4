//! Keyed execution creation (`execution.get_instance`, `execution.get_operation`,
//! `execution.create_command`, `execution.create_pty`) and the command inventory
//! (`commands.list`): upstream execd's `/execution/*`, `POST /command/operations`,
//! `POST /pty/operations` and `GET /command`.

use std::collections::BTreeMap;
use std::time::Duration;

use opensandbox_core::models::{
    CommandSummary, ExecutionInstance, ExecutionOperation, ListCommandsPage, RunCommandOptions,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::args::{null_default, Bound, ConnectionRef, SandboxArgs, SandboxRef};
use crate::error::{OpError, OpResult};
use crate::session::Session;

/// `execution.get_operation`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetOperationArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// `command` or `pty`.
    pub kind: String,
    pub operation_id: String,
}

/// `execution.create_command`: the arguments of `commands.run` plus `operation_id`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateCommandArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// `<instance_id>.<issued_at>.<token>`, saved before the first call.
    pub operation_id: String,
    /// Shell text; exactly one of `command` and `argv`.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    #[serde(default, deserialize_with = "null_default")]
    pub background: bool,
    #[serde(default)]
    pub working_directory: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "null_default")]
    pub envs: BTreeMap<String, String>,
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
}

/// `execution.create_pty`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreatePtyArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub operation_id: String,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub command: Option<String>,
}

/// `commands.list`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListCommandsArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// `true` running only, `false` finished only; absent = both.
    #[serde(default)]
    pub running: Option<bool>,
    /// 1 to 100 (default 50).
    #[serde(default)]
    pub limit: Option<u64>,
    /// `pagination.next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

macro_rules! bound {
    ($($t:ty),*) => {$(
        impl Bound for $t {
            fn sandbox(&self) -> &SandboxRef { &self.sandbox }
            fn connection(&self) -> Option<&ConnectionRef> { self.connection.as_ref() }
        }
    )*};
}

bound!(
    GetOperationArgs,
    CreateCommandArgs,
    CreatePtyArgs,
    ListCommandsArgs
);

/// An optional time as an RFC 3339 string or null (a macro keeps chrono's type out of
/// this crate's dependencies, as in `convert`).
macro_rules! time {
    ($t:expr) => {
        match &$t {
            Some(t) => Value::String(t.to_rfc3339()),
            None => Value::Null,
        }
    };
}

fn instance(i: &ExecutionInstance) -> Value {
    json!({
        "instance_id": i.instance_id,
        "issued_at": i.issued_at,
        "retention_seconds": i.retention_seconds,
        "capacity": i.capacity,
    })
}

fn operation(o: &ExecutionOperation) -> Value {
    json!({"id": o.id, "kind": o.kind, "state": o.state, "expires_at": time!(o.expires_at)})
}

fn summary(c: &CommandSummary) -> Value {
    json!({
        "session": c.session,
        "running": c.running,
        "background": c.background,
        "started_at": time!(c.started_at),
        "finished_at": time!(c.finished_at),
        "exit_code": c.exit_code,
        "error": c.error,
    })
}

fn page(p: &ListCommandsPage) -> Value {
    json!({
        "commands": p.commands.iter().map(summary).collect::<Vec<_>>(),
        "pagination": {"limit": p.pagination.limit, "next_cursor": p.pagination.next_cursor},
    })
}

/// `execution.get_instance` → `{instance_id, issued_at, retention_seconds, capacity}`.
pub async fn get_instance(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("execution.get_instance", &a).await?;
    Ok(instance(&sb.execd().get_execution_instance().await?))
}

/// `execution.get_operation` → `{id, kind, state, expires_at}`.
pub async fn get_operation(s: &Session, a: GetOperationArgs) -> OpResult {
    let sb = s.sandbox("execution.get_operation", &a).await?;
    Ok(operation(
        &sb.execd()
            .get_execution_operation(&a.kind, &a.operation_id)
            .await?,
    ))
}

/// `execution.create_command` → `{id, kind, state, expires_at}`.
pub async fn create_command(s: &Session, a: CreateCommandArgs) -> OpResult {
    const OP: &str = "execution.create_command";
    let (command, argv) = match (&a.command, &a.argv) {
        (Some(c), None) => (c.as_str(), None),
        (None, Some(v)) => ("", Some(v.as_slice())),
        _ => {
            return Err(OpError::invalid(
                OP,
                format!("{OP}: give exactly one of command and argv"),
            ))
        }
    };
    let opts = RunCommandOptions {
        background: a.background,
        working_directory: a.working_directory.clone(),
        timeout: a.timeout_ms.map(Duration::from_millis),
        uid: a.uid,
        gid: a.gid,
        envs: a.envs.clone(),
    };
    let sb = s.sandbox(OP, &a).await?;
    Ok(operation(
        &sb.execd()
            .create_command_operation(&a.operation_id, command, argv, &opts)
            .await?,
    ))
}

/// `execution.create_pty` → `{id, kind, state, expires_at}`.
pub async fn create_pty(s: &Session, a: CreatePtyArgs) -> OpResult {
    let sb = s.sandbox("execution.create_pty", &a).await?;
    Ok(operation(
        &sb.execd()
            .create_pty_operation(&a.operation_id, a.cwd.as_deref(), a.command.as_deref())
            .await?,
    ))
}

/// `commands.list` → `{commands: [...], pagination: {limit, next_cursor}}`.
pub async fn list(s: &Session, a: ListCommandsArgs) -> OpResult {
    const OP: &str = "commands.list";
    let limit = match a.limit {
        None => None,
        Some(l) => Some(
            u32::try_from(l)
                .ok()
                .filter(|l| (1..=100).contains(l))
                .ok_or_else(|| {
                    OpError::invalid(OP, format!("{OP}: limit must be 1 to 100, got {l}"))
                })?,
        ),
    };
    let sb = s.sandbox(OP, &a).await?;
    Ok(page(
        &sb.execd()
            .list_commands(a.running, limit, a.cursor.as_deref())
            .await?,
    ))
}
