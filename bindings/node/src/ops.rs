//! The request/response operations: one JSON dispatcher for the manager and one for a
//! sandbox handle. Streams, uploads and downloads live in `streams.rs`.

use std::collections::BTreeMap;

use opensandbox_core::models::{
    ContentReplaceEntry, MoveEntry, NetworkRule, PathPermission, SandboxFilter, SnapshotFilter,
};
use opensandbox_core::{Error, Result, Sandbox, SandboxManager};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::convert::{entry_info, metrics, parse_args, sandbox_info, seconds, snapshot_info, time};

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Args {
    id: Option<String>,
    sandbox_id: Option<String>,
    snapshot_id: Option<String>,
    seconds: Option<f64>,
    patch: Option<BTreeMap<String, Option<String>>>,
    port: Option<u16>,
    use_server_proxy: Option<bool>,
    expires: Option<i64>,
    name: Option<String>,
    scope: Option<String>,
    states: Option<Vec<String>>,
    metadata: Option<BTreeMap<String, String>>,
    page: Option<u32>,
    page_size: Option<u32>,
    rules: Option<Vec<NetworkRule>>,
    targets: Option<Vec<String>>,
    cursor: Option<u64>,
    working_directory: Option<String>,
    session_id: Option<String>,
    language: Option<String>,
    cwd: Option<String>,
    paths: Option<Vec<String>>,
    path: Option<String>,
    pattern: Option<String>,
    depth: Option<u32>,
    entries: Option<Vec<EntryArg>>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", default)]
struct EntryArg {
    path: String,
    mode: Option<u32>,
    owner: Option<String>,
    group: Option<String>,
    src: String,
    dest: String,
    old_content: String,
    new_content: String,
}

fn need<T: Clone>(op: &str, name: &str, v: &Option<T>) -> Result<T> {
    v.clone()
        .ok_or_else(|| Error::invalid_argument(op.to_owned(), format!("{name} is required")))
}

fn to_string(v: Value) -> Result<String> {
    serde_json::to_string(&v).map_err(|e| Error::internal("node", format!("encode: {e}")))
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn renew_value(r: &opensandbox_core::models::RenewResponse) -> Value {
    json!({ "expiresAt": time(&r.expires_at) })
}

fn diag(d: &opensandbox_core::models::DiagnosticContent) -> Result<Value> {
    serde_json::to_value(d).map_err(|e| Error::internal("node", format!("encode: {e}")))
}

fn policy(p: &opensandbox_core::models::NetworkPolicy) -> Result<Value> {
    serde_json::to_value(p).map_err(|e| Error::internal("node", format!("encode: {e}")))
}

fn endpoint(e: &opensandbox_core::models::Endpoint) -> Value {
    json!({ "endpoint": e.endpoint, "headers": e.headers })
}

fn permissions(op: &str, entries: &Option<Vec<EntryArg>>) -> Result<Vec<PathPermission>> {
    Ok(need(op, "entries", entries)?
        .into_iter()
        .map(|e| PathPermission {
            path: e.path,
            owner: e.owner,
            group: e.group,
            mode: e.mode,
        })
        .collect())
}

/// Lifecycle operations of `SandboxManager`.
pub async fn manager_call(m: &SandboxManager, op: &str, args: &str) -> Result<String> {
    let a: Args = parse_args(op, args)?;
    let sid = || need(op, "sandboxId", &a.sandbox_id);
    let v = match op {
        "listSandboxInfos" => {
            let f = SandboxFilter {
                states: a.states.clone().unwrap_or_default(),
                metadata: a.metadata.clone().unwrap_or_default(),
                page: a.page,
                page_size: a.page_size,
            };
            let r = m.list_sandbox_infos(&f).await?;
            json!({
                "items": r.items.iter().map(sandbox_info).collect::<Vec<_>>(),
                "pagination": r.pagination,
            })
        }
        "getSandboxInfo" => sandbox_info(&m.get_sandbox_info(&sid()?).await?),
        "patchSandboxMetadata" => {
            let patch = need(op, "patch", &a.patch)?;
            sandbox_info(&m.patch_sandbox_metadata(&sid()?, &patch).await?)
        }
        "killSandbox" => {
            m.kill_sandbox(&sid()?).await?;
            Value::Null
        }
        "pauseSandbox" => {
            m.pause_sandbox(&sid()?).await?;
            Value::Null
        }
        "resumeSandbox" => {
            m.resume_sandbox(&sid()?).await?;
            Value::Null
        }
        "renewSandbox" => {
            let d = seconds("timeoutSeconds", need(op, "seconds", &a.seconds)?)?;
            renew_value(&m.renew_sandbox(&sid()?, d).await?)
        }
        "getEndpoint" => {
            let port = need(op, "port", &a.port)?;
            endpoint(&m.get_endpoint(&sid()?, port, a.use_server_proxy).await?)
        }
        "createSnapshot" => snapshot_info(&m.create_snapshot(&sid()?, a.name.as_deref()).await?),
        "getSnapshot" => snapshot_info(
            &m.get_snapshot(&need(op, "snapshotId", &a.snapshot_id)?)
                .await?,
        ),
        "deleteSnapshot" => {
            m.delete_snapshot(&need(op, "snapshotId", &a.snapshot_id)?)
                .await?;
            Value::Null
        }
        "listSnapshots" => {
            let f = SnapshotFilter {
                sandbox_id: a.sandbox_id.clone(),
                states: a.states.clone().unwrap_or_default(),
                page: a.page,
                page_size: a.page_size,
            };
            let r = m.list_snapshots(&f).await?;
            json!({
                "items": r.items.iter().map(snapshot_info).collect::<Vec<_>>(),
                "pagination": r.pagination,
            })
        }
        "getDiagnosticLogs" => diag(
            &m.get_diagnostic_logs(&sid()?, a.scope.as_deref().unwrap_or(""))
                .await?,
        )?,
        "getDiagnosticEvents" => diag(
            &m.get_diagnostic_events(&sid()?, a.scope.as_deref().unwrap_or(""))
                .await?,
        )?,
        _ => {
            return Err(Error::invalid_argument(
                "node",
                format!("unknown manager operation {op}"),
            ))
        }
    };
    to_string(v)
}

/// Operations bound to one sandbox (lifecycle by id, execd, egress).
pub async fn sandbox_call(s: &Sandbox, op: &str, args: &str) -> Result<String> {
    let a: Args = parse_args(op, args)?;
    let x = s.execd();
    let id = || need(op, "id", &a.id);
    let paths = || need(op, "paths", &a.paths);
    let v = match op {
        "getInfo" => sandbox_info(&s.get_info().await?),
        "isHealthy" => Value::Bool(s.is_healthy().await),
        "ping" => Value::Bool(x.is_healthy().await),
        "getMetrics" => metrics(&s.get_metrics().await?),
        "pause" => {
            s.pause().await?;
            Value::Null
        }
        "kill" => {
            s.kill().await?;
            Value::Null
        }
        "renew" => {
            let d = seconds("timeoutSeconds", need(op, "seconds", &a.seconds)?)?;
            renew_value(&s.renew(d).await?)
        }
        "patchMetadata" => sandbox_info(&s.patch_metadata(&need(op, "patch", &a.patch)?).await?),
        "getEndpoint" => {
            let port = need(op, "port", &a.port)?;
            match a.use_server_proxy {
                Some(p) => endpoint(&s.manager().get_endpoint(s.id(), port, Some(p)).await?),
                None => endpoint(&s.get_endpoint(port).await?),
            }
        }
        "getSignedEndpoint" => {
            let port = need(op, "port", &a.port)?;
            endpoint(
                &s.get_signed_endpoint(port, need(op, "expires", &a.expires)?)
                    .await?,
            )
        }
        "createSnapshot" => snapshot_info(&s.create_snapshot(a.name.as_deref()).await?),
        "getDiagnosticLogs" => diag(
            &s.get_diagnostic_logs(a.scope.as_deref().unwrap_or(""))
                .await?,
        )?,
        "getDiagnosticEvents" => diag(
            &s.get_diagnostic_events(a.scope.as_deref().unwrap_or(""))
                .await?,
        )?,
        "getEgressPolicy" => policy(&s.get_egress_policy().await?)?,
        "patchEgressRules" => {
            s.patch_egress_rules(&need(op, "rules", &a.rules)?).await?;
            Value::Null
        }
        "deleteEgressRules" => {
            let t = need(op, "targets", &a.targets)?;
            s.delete_egress_rules(&strs(&t)).await?;
            Value::Null
        }
        // commands and sessions
        "interrupt" => {
            x.interrupt(&id()?).await?;
            Value::Null
        }
        "getCommandStatus" => {
            let st = x.get_command_status(&id()?).await?;
            json!({
                "id": st.id, "content": st.content, "running": st.running,
                "exitCode": st.exit_code, "error": st.error,
                "startedAt": time(&st.started_at), "finishedAt": time(&st.finished_at),
            })
        }
        "getBackgroundCommandLogs" => {
            let l = x.get_background_command_logs(&id()?, a.cursor).await?;
            json!({ "content": l.content, "cursor": l.cursor })
        }
        "createSession" => Value::String(x.create_session(a.working_directory.as_deref()).await?),
        "deleteSession" => {
            x.delete_session(&need(op, "sessionId", &a.session_id)?)
                .await?;
            Value::Null
        }
        // code contexts
        "createContext" => {
            let lang = need(op, "language", &a.language)?;
            let c = x.create_context(&lang, a.cwd.as_deref()).await?;
            json!({ "id": c.id, "language": c.language, "cwd": c.cwd })
        }
        "getContext" => {
            let c = x.get_context(&id()?).await?;
            json!({ "id": c.id, "language": c.language, "cwd": c.cwd })
        }
        "listContexts" => {
            let cs = x.list_contexts(a.language.as_deref()).await?;
            Value::Array(
                cs.iter()
                    .map(|c| json!({ "id": c.id, "language": c.language, "cwd": c.cwd }))
                    .collect(),
            )
        }
        "deleteContext" => {
            x.delete_context(&id()?).await?;
            Value::Null
        }
        "deleteContexts" => {
            x.delete_contexts(&need(op, "language", &a.language)?)
                .await?;
            Value::Null
        }
        "interruptCode" => {
            x.interrupt_code(&id()?).await?;
            Value::Null
        }
        // files
        "getFileInfo" => {
            let p = paths()?;
            let m = x.get_file_info(&strs(&p)).await?;
            Value::Object(m.iter().map(|(k, e)| (k.clone(), entry_info(e))).collect())
        }
        "deleteFiles" => {
            x.delete_files(&strs(&paths()?)).await?;
            Value::Null
        }
        "deleteDirectories" => {
            x.delete_directories(&strs(&paths()?)).await?;
            Value::Null
        }
        "setPermissions" => {
            x.set_permissions(&permissions(op, &a.entries)?).await?;
            Value::Null
        }
        "createDirectories" => {
            x.create_directories(&permissions(op, &a.entries)?).await?;
            Value::Null
        }
        "moveFiles" => {
            let e: Vec<MoveEntry> = need(op, "entries", &a.entries)?
                .into_iter()
                .map(|e| MoveEntry {
                    src: e.src,
                    dest: e.dest,
                })
                .collect();
            x.move_files(&e).await?;
            Value::Null
        }
        "replaceContents" | "replaceContentsDetailed" => {
            let e: Vec<ContentReplaceEntry> = need(op, "entries", &a.entries)?
                .into_iter()
                .map(|e| ContentReplaceEntry {
                    path: e.path,
                    old_content: e.old_content,
                    new_content: e.new_content,
                })
                .collect();
            if op == "replaceContents" {
                x.replace_contents(&e).await?;
                Value::Null
            } else {
                let r = x.replace_contents_detailed(&e).await?;
                Value::Array(
                    r.iter()
                        .map(|r| json!({ "path": r.path, "replacedCount": r.replaced_count }))
                        .collect(),
                )
            }
        }
        "search" => {
            let p = need(op, "path", &a.path)?;
            let r = x.search(&p, a.pattern.as_deref()).await?;
            Value::Array(r.iter().map(entry_info).collect())
        }
        "listDirectory" => {
            let p = need(op, "path", &a.path)?;
            let r = x.list_directory(&p, a.depth).await?;
            Value::Array(r.iter().map(entry_info).collect())
        }
        "readFile" => {
            let p = need(op, "path", &a.path)?;
            let o = crate::convert::read_options(args)?;
            Value::String(x.read_file(&p, &o).await?)
        }
        _ => {
            return Err(Error::invalid_argument(
                "node",
                format!("unknown sandbox operation {op}"),
            ))
        }
    };
    to_string(v)
}
