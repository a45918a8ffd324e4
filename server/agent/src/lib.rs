//! The execd agent of the OpenSandbox reference server.
//!
//! It runs inside each sandbox (`opensandbox-server agent ...`), so every command and
//! every file operation happens in the sandbox's own view of the filesystem. The
//! control plane reaches it over a Unix socket and forwards the execd API to it.
//!
//! Module map (one concept each):
//! - [`error`]: the `{code, message}` error shape.
//! - [`events`]: the streamed event model and its wire framing (protocol.md §4).
//! - [`commands`]: foreground/background commands, status, logs, interrupt.
//! - [`envfile`]: the sandbox env file (`$EXECD_ENVS`) every process started gets.
//! - [`warm_shell`]: a bash started ahead of the next default foreground command.
//! - [`sessions`]: persistent bash sessions.
//! - [`code`]: code-interpreter contexts (python, javascript, bash) and code runs.
//! - [`pty`]: interactive terminal sessions over a WebSocket (`/pty`).
//! - [`operations`]: keyed command/PTY creation (`/execution/*`, `POST
//!   /command/operations`, `POST /pty/operations`): a retry never starts twice.
//! - [`paths`]: confinement of user paths to the sandbox root.
//! - [`files`]: file and directory operations, upload and download, each in a scope
//!   (as the agent, as a given user, or inside an isolated session).
//! - [`identity`]: the file routes under `/v1/filesystem/{uid}/{gid}`.
//! - [`isolated`]: isolated sessions (`/v1/isolated/*`), nested sandboxes.
//! - [`confine`]: the seccomp filter the agent puts on the processes it starts.
//! - [`metrics`]: resource metrics and the metrics watch stream.
//! - [`logcap`]: size-capped sandbox and background-command logs.
//! - [`extract`]: `ApiJson` / `ApiQuery` / `QueryPairs` extractors whose rejections are
//!   400 `{code, message}` instead of axum's plain-text 415/422. Use them in every route.
//! - [`serve`]: the agent process (`AgentArgs`, [`run`]): Unix socket + entrypoint.
//! - [`start`]: the start message a warm sandbox's agent waits for (`--start-fd`).
//!
//! Body size: the router caps buffered bodies (JSON) at [`JSON_BODY_LIMIT`]; the upload
//! route reads its body as a stream and is not capped.

pub mod code;
pub mod commands;
pub mod confine;
pub mod envfile;
pub mod error;
pub mod events;
pub mod extract;
pub mod files;
pub mod identity;
pub mod isolated;
pub mod logcap;
pub mod metrics;
pub mod operations;
pub mod paths;
pub mod pty;
pub mod serve;
pub mod sessions;
pub mod start;
pub mod warm_shell;

pub use serve::{run, AgentArgs};

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::Router;

/// Largest buffered request body (JSON requests). Uploads stream and ignore it.
pub const JSON_BODY_LIMIT: usize = 10 * 1024 * 1024;

/// How the agent sees its sandbox.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Every user-supplied path is resolved inside this directory and may not leave
    /// it. `/` inside an isolated sandbox (the mount namespace already confines us);
    /// the sandbox's directory on the host under `--isolation none`.
    pub root: PathBuf,
    /// Default working directory of commands, sessions and code contexts.
    pub workdir: PathBuf,
}

/// State shared by every route of one agent.
pub struct AgentState {
    pub config: AgentConfig,
    pub commands: commands::Registry,
    pub sessions: sessions::Registry,
    pub code: code::Registry,
    pub pty: pty::Registry,
    pub isolated: isolated::Registry,
    pub operations: operations::Registry,
}

impl AgentState {
    pub fn new(config: AgentConfig) -> Self {
        Self {
            config,
            commands: commands::Registry::default(),
            sessions: sessions::Registry::default(),
            code: code::Registry::default(),
            pty: pty::Registry::default(),
            isolated: isolated::Registry::default(),
            operations: operations::Registry::default(),
        }
    }
}

pub type SharedState = Arc<AgentState>;

/// Every (method, path) the agent serves, spelled as in `openapi/execd.yaml`.
/// The OpenAPI contract test compares this table with the spec and probes each row.
pub fn routes_table() -> Vec<(&'static str, &'static str)> {
    let mut all = vec![("GET", "/ping")];
    all.extend_from_slice(commands::ROUTES);
    all.extend_from_slice(sessions::ROUTES);
    all.extend_from_slice(code::ROUTES);
    all.extend_from_slice(files::ROUTES);
    all.extend_from_slice(files::IDENTITY_ROUTES);
    all.extend_from_slice(isolated::ROUTES);
    all.extend_from_slice(files::SESSION_ROUTES);
    all.extend_from_slice(metrics::ROUTES);
    all.extend_from_slice(pty::ROUTES);
    all.extend_from_slice(operations::ROUTES);
    all
}

/// How much of a refused request's body is read before the answer. Replying and
/// closing while the client is still writing makes its write fail (EPIPE) before it
/// reads the answer: the server's proxy turned a 405 into a 502 that way.
const REFUSED_BODY_DRAIN: usize = 1024 * 1024;

async fn drain_body(request: axum::extract::Request) {
    let _ = axum::body::to_bytes(request.into_body(), REFUSED_BODY_DRAIN).await;
}

async fn method_not_allowed(request: axum::extract::Request) -> error::ApiError {
    let message = format!(
        "method {} is not allowed on {}",
        request.method(),
        request.uri().path()
    );
    drain_body(request).await;
    error::ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        message,
    )
}

async fn route_not_found(request: axum::extract::Request) -> error::ApiError {
    drain_body(request).await;
    error::ApiError::not_found("ROUTE_NOT_FOUND", "no such execd route")
}

/// The execd API as an axum router (no transport): served over a Unix socket in a
/// sandbox, and over TCP by tests.
pub fn router(config: AgentConfig) -> Router {
    let state: SharedState = Arc::new(AgentState::new(config));
    Router::new()
        .route("/ping", axum::routing::get(|| async { "" }))
        .merge(commands::routes())
        .merge(sessions::routes())
        .merge(code::routes())
        .merge(files::routes())
        .merge(identity::routes())
        .merge(isolated::routes(Arc::clone(&state)))
        .merge(metrics::routes())
        .merge(pty::routes())
        .merge(operations::routes())
        .method_not_allowed_fallback(method_not_allowed)
        .fallback(route_not_found)
        .layer(DefaultBodyLimit::max(JSON_BODY_LIMIT))
        .with_state(state)
}
