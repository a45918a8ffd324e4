//! `isolation.*` (1.1): isolated sessions (`/v1/isolated/*`), as the official
//! `sandbox.isolation` service: capabilities, create / attach / get / list / delete,
//! foreground runs (to completion, or started and pulled like `commands.start`),
//! background runs with their status and logs. A session's files are the `files.*`
//! ops with `isolated_session`.

use std::sync::Arc;

use opensandbox_core::models::{
    BindMount, CreateIsolatedSessionRequest, EnvPassthroughSpec, IsolatedCapabilities,
    IsolatedOverlaySpec, IsolatedRunOptions, IsolatedRunStatus, IsolatedSessionInfo,
    IsolatedSessionParams, IsolatedSessionState, IsolatedWorkspaceSpec,
};
use serde_json::{json, Value};

use crate::args::*;
use crate::convert;
use crate::error::OpResult;
use crate::recorder::Recorder;
use crate::session::{Entry, Session};
use crate::stream::{self, Run};

fn request(a: &IsolationCreateArgs) -> CreateIsolatedSessionRequest {
    CreateIsolatedSessionRequest {
        workspace: a.workspace.as_ref().map(|w| IsolatedWorkspaceSpec {
            path: w.path.clone(),
            mode: w.mode.clone(),
        }),
        overlays: a.overlays.as_ref().map(|o| {
            o.iter()
                .map(|o| IsolatedOverlaySpec {
                    path: o.path.clone(),
                    mode: o.mode.clone(),
                    persist: o.persist,
                })
                .collect()
        }),
        profile: a.profile.clone(),
        extra_writable: a.extra_writable.clone(),
        binds: a.binds.as_ref().map(|b| {
            b.iter()
                .map(|b| BindMount {
                    source: b.source.clone(),
                    dest: b.dest.clone(),
                    readonly: b.readonly,
                })
                .collect()
        }),
        share_net: a.share_net,
        env_passthrough: a.env_passthrough.as_ref().map(|e| EnvPassthroughSpec {
            mode: e.mode.clone().unwrap_or_else(|| "deny".into()),
            keys: e.keys.clone(),
        }),
        uid: a.uid,
        gid: a.gid,
        uid_mode: a.uid_mode.clone(),
        idle_timeout_seconds: a.idle_timeout_seconds,
    }
}

fn options(a: &IsolationRunArgs) -> IsolatedRunOptions {
    IsolatedRunOptions {
        envs: a.envs.clone(),
        timeout_seconds: a.timeout_s,
    }
}

// The results are the wire models themselves (snake_case, RFC 3339 times): the
// official 1.1.1 models carry the same fields under the same names.
fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

fn params(p: &IsolatedSessionParams) -> Value {
    to_value(p)
}

fn info(i: &IsolatedSessionInfo) -> Value {
    let mut v = params(&i.params);
    if let Some(map) = v.as_object_mut() {
        map.insert("session_id".into(), json!(i.session_id));
        map.insert(
            "created_at".into(),
            json!(i.created_at.map(|t| t.to_rfc3339())),
        );
    }
    v
}

fn state(s: &IsolatedSessionState) -> Value {
    let mut v = params(&s.params);
    if let Some(map) = v.as_object_mut() {
        map.insert("status".into(), json!(s.status));
        map.insert(
            "created_at".into(),
            json!(s.created_at.map(|t| t.to_rfc3339())),
        );
        map.insert(
            "last_run_at".into(),
            json!(s.last_run_at.map(|t| t.to_rfc3339())),
        );
        map.insert(
            "idle_remaining_seconds".into(),
            json!(s.idle_remaining_seconds),
        );
    }
    v
}

fn run_status(s: &IsolatedRunStatus) -> Value {
    json!({
        "session_id": s.session_id,
        "run_id": s.run_id,
        "running": s.running,
        "exit_code": s.exit_code,
        "error": s.error,
        "started_at": s.started_at.map(|t| t.to_rfc3339()),
        "finished_at": s.finished_at.map(|t| t.to_rfc3339()),
    })
}

fn capabilities(c: &IsolatedCapabilities) -> Value {
    to_value(c)
}

/// `isolation.capabilities` → IsolatedCapabilities.
pub async fn capabilities_op(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("isolation.capabilities", &a).await?;
    Ok(capabilities(&sb.execd().isolated_capabilities().await?))
}

/// `isolation.create` → IsolatedSessionInfo (`{session_id, created_at, ...}`).
pub async fn create(s: &Session, a: IsolationCreateArgs) -> OpResult {
    let sb = s.sandbox("isolation.create", &a).await?;
    Ok(info(
        &sb.execd().create_isolated_session(&request(&a)).await?,
    ))
}

/// `isolation.attach` → IsolatedSessionInfo rebuilt from the session's state.
pub async fn attach(s: &Session, a: IsolationSessionArgs) -> OpResult {
    let sb = s.sandbox("isolation.attach", &a).await?;
    Ok(info(
        &sb.execd().attach_isolated_session(&a.session_id).await?,
    ))
}

/// `isolation.get` → IsolatedSessionState.
pub async fn get(s: &Session, a: IsolationSessionArgs) -> OpResult {
    let sb = s.sandbox("isolation.get", &a).await?;
    Ok(state(
        &sb.execd().get_isolated_session(&a.session_id).await?,
    ))
}

/// `isolation.list` → IsolatedSessionSummary[].
pub async fn list(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("isolation.list", &a).await?;
    let sessions = sb.execd().list_isolated_sessions().await?;
    Ok(Value::Array(
        sessions
            .iter()
            .map(|x| {
                json!({
                    "session_id": x.session_id,
                    "status": x.status,
                    "created_at": x.created_at.map(|t| t.to_rfc3339()),
                    "last_run_at": x.last_run_at.map(|t| t.to_rfc3339()),
                    "idle_remaining_seconds": x.idle_remaining_seconds,
                })
            })
            .collect(),
    ))
}

/// `isolation.delete` → null.
pub async fn delete(s: &Session, a: IsolationSessionArgs) -> OpResult {
    let sb = s.sandbox("isolation.delete", &a).await?;
    sb.execd().delete_isolated_session(&a.session_id).await?;
    Ok(Value::Null)
}

/// `isolation.run` → Execution (exit code folded as for a session run).
pub async fn run(s: &Session, a: IsolationRunArgs) -> OpResult {
    let sb = s.sandbox("isolation.run", &a).await?;
    let mut recorder = Recorder::new(a.handlers, false, a.skip_accumulation);
    let st = sb
        .execd()
        .run_in_isolated_session_stream(&a.session_id, &a.code, &options(&a))
        .await?;
    let ex = stream::run_to_end(st, &mut recorder).await?;
    Ok(convert::execution(&ex, recorder.into_extra()))
}

/// `isolation.start` → `{handle, id}` once `init` arrived. Cancelling (or releasing)
/// the handle closes the stream, and the server interrupts the run.
pub async fn start(s: &Session, a: IsolationRunArgs) -> OpResult {
    let sb = s.sandbox("isolation.start", &a).await?;
    let execd = sb.execd().clone();
    let opts = options(&a);
    let (session_id, code) = (a.session_id.clone(), a.code.clone());
    let open = async move {
        execd
            .run_in_isolated_session_stream(&session_id, &code, &opts)
            .await
    };
    let run = Run::start(open, a.skip_accumulation, a.handlers).await?;
    let id = run.id.clone();
    let handle = s.insert(Entry::Run(Arc::new(run)));
    Ok(json!({"handle": handle, "id": id}))
}

/// `isolation.run_background` → `{session_id, run_id, started_at}`.
pub async fn run_background(s: &Session, a: IsolationRunArgs) -> OpResult {
    let sb = s.sandbox("isolation.run_background", &a).await?;
    let r = sb
        .execd()
        .run_in_isolated_session_background(&a.session_id, &a.code, &options(&a))
        .await?;
    Ok(json!({
        "session_id": r.session_id,
        "run_id": r.run_id,
        "started_at": r.started_at.map(|t| t.to_rfc3339()),
    }))
}

/// `isolation.run_status` → IsolatedRunStatus.
pub async fn run_status_op(s: &Session, a: IsolationRunIdArgs) -> OpResult {
    let sb = s.sandbox("isolation.run_status", &a).await?;
    Ok(run_status(
        &sb.execd()
            .get_isolated_run_status(&a.session_id, &a.run_id)
            .await?,
    ))
}

/// `isolation.run_logs` → `{text, cursor}`.
pub async fn run_logs(s: &Session, a: IsolationRunIdArgs) -> OpResult {
    let sb = s.sandbox("isolation.run_logs", &a).await?;
    let logs = sb
        .execd()
        .get_isolated_run_logs(&a.session_id, &a.run_id, a.cursor.unwrap_or(0))
        .await?;
    Ok(json!({"text": logs.text, "cursor": logs.cursor}))
}
