//! Isolated sessions, `/v1/isolated/*` (protocol.md §3.5, upstream OSEP-0013): nested
//! sandboxes inside the sandbox. Each session is a persistent bash in its own user,
//! mount, PID, UTS, IPC and cgroup namespaces (and network, unless `share_net`), whose
//! root is the sandbox's tree read-only with the requested overlays, binds and
//! writable paths, whose shell has no capability and the sandbox's seccomp filter,
//! and which runs as the requested uid/gid.
//!
//! Submodules: [`model`] (wire models, validation), [`plan`] (request → mount plan),
//! [`launcher`] (the process that builds the namespaces; `opensandbox-server
//! isolated-launch`), [`session`] (one session: shell, runs, state), [`runs`]
//! (background runs and their logs). The session's files are served by the ordinary
//! file handlers in the session's scope (`crate::files::scope`).
//!
//! Availability is checked once, on the first request: the agent must be a sandbox's
//! (its root is `/`) and the launcher's probe (namespaces, tmpfs, overlayfs) must
//! pass. Otherwise `/v1/isolated/capabilities` says `available: false` with the reason
//! (200, as upstream) and every other route answers 503 `SERVICE_UNAVAILABLE`.
//! `commit` and `diff` are 503 `NOT_SUPPORTED`, as upstream documents them.

pub mod launcher;
pub mod model;
pub mod plan;
pub mod runs;
pub mod session;

pub use launcher::LauncherArgs;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{RawPathParams, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio_util::io::ReaderStream;

use self::model::{
    BackgroundRunResponse, Capabilities, CreateRequest, CreateResponse, Hardening, HardeningLayer,
    ListResponse, RunRequest,
};
use self::session::IsolatedSession;
use crate::error::{ApiError, ApiResult};
use crate::extract::{AnyTypeJson, QueryPairs};
use crate::files::scope::Scope;
use crate::SharedState;

/// The isolated-session routes (files routes in [`crate::files::SESSION_ROUTES`]).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/v1/isolated/capabilities"),
    ("GET", "/v1/isolated/sessions"),
    ("POST", "/v1/isolated/session"),
    ("GET", "/v1/isolated/session/{sessionId}"),
    ("DELETE", "/v1/isolated/session/{sessionId}"),
    ("POST", "/v1/isolated/session/{sessionId}/run"),
    ("GET", "/v1/isolated/session/{sessionId}/runs/{runId}"),
    ("GET", "/v1/isolated/session/{sessionId}/runs/{runId}/logs"),
    ("POST", "/v1/isolated/session/{sessionId}/commit"),
    ("GET", "/v1/isolated/session/{sessionId}/diff"),
];

/// The next byte cursor of a run's log (upstream's header, unlike `/command`'s).
pub const TAIL_CURSOR_HEADER: &str = "EXECD-ISOLATED-TAIL-CURSOR";

/// A dead session stays listed this long (its runs' status and logs readable), then
/// it is removed.
const DEAD_RETENTION: Duration = Duration::from_secs(60);
/// How often idle and dead sessions are looked for.
const GC_PERIOD: Duration = Duration::from_secs(1);

/// Whether this agent can make isolated sessions, and why not.
#[derive(Debug, Clone)]
enum Availability {
    Available,
    Unavailable(String),
}

/// Every isolated session of this agent.
#[derive(Default)]
pub struct Registry {
    sessions: Mutex<HashMap<String, Arc<IsolatedSession>>>,
    availability: tokio::sync::OnceCell<Availability>,
    gc: OnceLock<()>,
}

/// The agent's isolated state: session directories (uppers, run pipes, logs). Below
/// `/tmp/.execd`, which every session has covered.
pub fn state_root() -> PathBuf {
    std::env::temp_dir().join(".execd").join("isolated")
}

/// [`state_root`], created private to the sandbox's root: a session's upper layers
/// are its files, not the sandbox's other users'.
fn ensure_state_root() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let root = state_root();
    std::fs::create_dir_all(&root)?;
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700))?;
    Ok(root)
}

fn unavailable(why: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "SERVICE_UNAVAILABLE",
        format!("isolation unavailable: {why}"),
    )
}

fn session_not_found() -> ApiError {
    ApiError::not_found("SESSION_NOT_FOUND", "session not found")
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<IsolatedSession>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, id: &str) -> Option<Arc<IsolatedSession>> {
        self.lock().get(id).cloned()
    }

    async fn availability(&self, state: &SharedState) -> Availability {
        self.availability.get_or_init(|| probe(state)).await.clone()
    }

    /// 503 unless sessions can be made here.
    async fn require(&self, state: &SharedState) -> ApiResult<()> {
        match self.availability(state).await {
            Availability::Available => Ok(()),
            Availability::Unavailable(why) => Err(unavailable(&why)),
        }
    }

    async fn remove(&self, id: &str) -> Option<Arc<IsolatedSession>> {
        let session = self.lock().remove(id)?;
        session.destroy().await;
        Some(session)
    }

    /// Deletes sessions past their idle timeout and sessions dead for a while.
    fn start_gc(&self, state: &SharedState) {
        if self.gc.set(()).is_err() {
            return;
        }
        let state = Arc::clone(state);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(GC_PERIOD);
            loop {
                ticker.tick().await;
                let doomed: Vec<String> = state
                    .isolated
                    .lock()
                    .values()
                    .filter(|s| {
                        s.dead_for().is_some_and(|d| d > DEAD_RETENTION) || s.idle_expired()
                    })
                    .map(|s| s.id.clone())
                    .collect();
                for id in doomed {
                    tracing::info!(session = id, "removing an idle or dead isolated session");
                    state.isolated.remove(&id).await;
                }
            }
        });
    }
}

/// The one-time availability check (see the module comment).
async fn probe(state: &SharedState) -> Availability {
    if state.config.root != std::path::Path::new("/") {
        return Availability::Unavailable(format!(
            "the agent is not inside an isolated sandbox (its root is {}; the server runs \
             with --isolation none)",
            state.config.root.display()
        ));
    }
    let dir = state_root().join(format!("probe-{}", uuid::Uuid::new_v4().simple()));
    let outcome = async {
        let root =
            ensure_state_root().map_err(|e| format!("cannot create the isolated state: {e}"))?;
        // No session of this agent exists before this check: whatever is here was left
        // by an earlier one (a sandbox restored from a snapshot keeps its /tmp).
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let (read, write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| format!("pipe: {e}"))?;
        let mut command = launcher::self_command().map_err(|e| e.to_string())?;
        command
            .arg("--probe")
            .arg(&dir)
            .arg("--status-fd")
            .arg("3")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let fd = std::os::fd::AsRawFd::as_raw_fd(&write);
        // SAFETY: fcntl/dup2/close between fork and exec, on plain integers.
        unsafe {
            command.pre_exec(move || {
                let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
                if high < 0 || libc::dup2(high, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(high);
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start the launcher: {e}"))?;
        drop(write);
        let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
            .await
            .map_err(|_| "the launcher's probe did not finish in 10 s".to_string())?
            .map_err(|e| e.to_string())?;
        let mut report = String::new();
        let _ = std::io::Read::read_to_string(&mut std::fs::File::from(read), &mut report);
        let value: serde_json::Value = serde_json::from_str(report.trim()).unwrap_or_default();
        if value.get("ok").and_then(serde_json::Value::as_bool) == Some(true) {
            return Ok(());
        }
        Err(value
            .get("error")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| {
                format!(
                    "the launcher failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                )
            }))
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(()) => Availability::Available,
        Err(why) => {
            tracing::info!(reason = %why, "isolated sessions are unavailable");
            Availability::Unavailable(format!(
                "this sandbox cannot create nested namespaces: {why}"
            ))
        }
    }
}

pub fn routes(state: SharedState) -> Router<SharedState> {
    let files = crate::files::handlers_at("/v1/isolated/session/{sessionId}").route_layer(
        axum::middleware::from_fn_with_state(Arc::clone(&state), session_scope),
    );
    Router::new()
        .route("/v1/isolated/capabilities", get(capabilities))
        .route("/v1/isolated/sessions", get(list))
        .route("/v1/isolated/session", post(create))
        .route(
            "/v1/isolated/session/{sessionId}",
            get(get_session).delete(delete_session),
        )
        .route("/v1/isolated/session/{sessionId}/run", post(run))
        .route(
            "/v1/isolated/session/{sessionId}/runs/{runId}",
            get(run_status),
        )
        .route(
            "/v1/isolated/session/{sessionId}/runs/{runId}/logs",
            get(run_logs),
        )
        .route("/v1/isolated/session/{sessionId}/commit", post(commit))
        .route("/v1/isolated/session/{sessionId}/diff", get(diff))
        .merge(files)
}

fn param<'a>(params: &'a RawPathParams, name: &str) -> &'a str {
    params
        .iter()
        .find(|(key, _)| *key == name)
        .map_or("", |(_, value)| value)
}

/// Puts the session's [`Scope`] on a request for its files, or answers for it.
async fn session_scope(
    State(state): State<SharedState>,
    params: RawPathParams,
    mut request: Request,
    next: Next,
) -> Response {
    let found = async {
        state.isolated.require(&state).await?;
        let session = state
            .isolated
            .get(param(&params, "sessionId"))
            .ok_or_else(session_not_found)?;
        if session.is_dead() {
            return Err(ApiError::bad_request(
                "INVALID_REQUEST_BODY",
                format!("isolated session {} is not active", session.id),
            ));
        }
        Ok(session)
    }
    .await;
    match found {
        Ok(session) => {
            request
                .extensions_mut()
                .insert(Scope::Session(session.root.clone()));
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
}

fn version() -> String {
    format!("opensandbox-agent {}", env!("CARGO_PKG_VERSION"))
}

async fn capabilities(State(state): State<SharedState>) -> Json<Capabilities> {
    let availability = state.isolated.availability(&state).await;
    let (available, message) = match availability {
        Availability::Available => (true, None),
        Availability::Unavailable(why) => (false, Some(why)),
    };
    let layer = |on: bool, message: &str| HardeningLayer {
        state: if on { "active" } else { "unsupported" },
        message: (!on).then(|| message.to_string()),
    };
    Json(Capabilities {
        available,
        isolator: "opensandbox-userns",
        version: version(),
        message,
        setpriv_available: available,
        userns_available: available,
        commit_supported: false,
        diff_supported: false,
        hardening: Hardening {
            init_mode: "pid1",
            signal_shield: available,
            cap_drop: layer(available, "isolation unavailable"),
            seccomp: layer(available, "isolation unavailable"),
            landlock: layer(false, "not implemented"),
            ebpf: layer(false, "not implemented"),
        },
    })
}

async fn list(State(state): State<SharedState>) -> ApiResult<Json<ListResponse>> {
    state.isolated.require(&state).await?;
    let mut sessions: Vec<_> = state
        .isolated
        .lock()
        .values()
        .map(|s| s.summary())
        .collect();
    sessions.sort_by(|a, b| a.created_at.cmp(&b.created_at));
    Ok(Json(ListResponse { sessions }))
}

async fn create(
    State(state): State<SharedState>,
    AnyTypeJson(request): AnyTypeJson<CreateRequest>,
) -> ApiResult<Response> {
    state.isolated.require(&state).await?;
    let spec = request.validate()?;
    let id = uuid::Uuid::new_v4().to_string();
    let root = ensure_state_root()
        .map_err(|e| ApiError::runtime(format!("cannot create the isolated state: {e}")))?;
    let session = IsolatedSession::launch(id.clone(), spec, &root).await?;
    let created_at = runs::rfc3339(session.created_at);
    state.isolated.lock().insert(id.clone(), session);
    state.isolated.start_gc(&state);
    tracing::info!(session = id, "isolated session created");
    let mut response = (
        StatusCode::CREATED,
        Json(CreateResponse {
            session_id: id,
            created_at,
        }),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn find(state: &SharedState, params: &RawPathParams) -> ApiResult<Arc<IsolatedSession>> {
    state.isolated.require(state).await?;
    state
        .isolated
        .get(param(params, "sessionId"))
        .ok_or_else(session_not_found)
}

async fn get_session(
    State(state): State<SharedState>,
    params: RawPathParams,
) -> ApiResult<Json<model::SessionState>> {
    Ok(Json(find(&state, &params).await?.state()))
}

async fn delete_session(State(state): State<SharedState>, params: RawPathParams) -> ApiResult<()> {
    state.isolated.require(&state).await?;
    match state.isolated.remove(param(&params, "sessionId")).await {
        Some(_) => Ok(()),
        None => Err(session_not_found()),
    }
}

async fn run(
    State(state): State<SharedState>,
    params: RawPathParams,
    AnyTypeJson(request): AnyTypeJson<RunRequest>,
) -> ApiResult<Response> {
    let session = find(&state, &params).await?;
    let timeout = request.validate()?;
    let envs: Vec<(String, String)> = request
        .envs
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    if !request.background {
        return session.run_foreground(request.code, envs, timeout);
    }
    let run = session.run_background(request.code, envs).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(BackgroundRunResponse {
            session_id: session.id.clone(),
            run_id: run.id.clone(),
            started_at: runs::rfc3339(run.started_at),
        }),
    )
        .into_response())
}

fn run_not_found() -> ApiError {
    ApiError::not_found("SESSION_NOT_FOUND", "run not found")
}

async fn run_status(
    State(state): State<SharedState>,
    params: RawPathParams,
) -> ApiResult<Json<model::RunStatus>> {
    let session = find(&state, &params).await?;
    session
        .run_status(param(&params, "runId"))
        .map(Json)
        .ok_or_else(run_not_found)
}

async fn run_logs(
    State(state): State<SharedState>,
    params: RawPathParams,
    query: QueryPairs,
) -> ApiResult<Response> {
    let invalid = |message: &str| ApiError::bad_request("INVALID_REQUEST_BODY", message);
    let cursor = match query.first("cursor").filter(|c| !c.is_empty()) {
        None => 0,
        Some(raw) => match raw.parse::<i64>() {
            Err(_) => return Err(invalid("cursor must be an integer")),
            Ok(c) if c < 0 => return Err(invalid("cursor cannot be negative")),
            Ok(c) => c.unsigned_abs(),
        },
    };
    let session = find(&state, &params).await?;
    let run = session
        .run(param(&params, "runId"))
        .ok_or_else(run_not_found)?;
    let (file, len, next) = crate::logcap::read_window(&run.log, cursor, runs::MAX_LOG_READ)
        .await
        .map_err(|e| ApiError::runtime(format!("cannot read the log of run {}: {e}", run.id)))?;
    let body = Body::from_stream(ReaderStream::new(tokio::io::AsyncReadExt::take(file, len)));
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    headers.insert(TAIL_CURSOR_HEADER, HeaderValue::from(next));
    Ok(response)
}

fn not_supported(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "NOT_SUPPORTED",
        format!("{what} not implemented yet (upstream documents it as a 503 stub)"),
    )
}

async fn commit() -> ApiError {
    not_supported("commit")
}

async fn diff() -> ApiError {
    not_supported("diff")
}
