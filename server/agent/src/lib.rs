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
//! - [`sessions`]: persistent bash sessions.
//! - [`code`]: code-interpreter contexts (python, javascript, bash) and code runs.
//! - [`paths`]: confinement of user paths to the sandbox root.
//! - [`files`]: file and directory operations, upload and download.
//! - [`metrics`]: resource metrics and the metrics watch stream.

pub mod code;
pub mod commands;
pub mod error;
pub mod events;
pub mod files;
pub mod metrics;
pub mod paths;
pub mod sessions;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;

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
    all.extend_from_slice(metrics::ROUTES);
    all
}

/// The execd API as an axum router (no transport): served over a Unix socket in a
/// sandbox, and over TCP by tests.
pub fn router(config: AgentConfig) -> Router {
    let state: SharedState = Arc::new(AgentState {
        config,
        commands: commands::Registry::default(),
        sessions: sessions::Registry::default(),
        code: code::Registry::default(),
    });
    Router::new()
        .route("/ping", axum::routing::get(|| async { "" }))
        .merge(commands::routes())
        .merge(sessions::routes())
        .merge(code::routes())
        .merge(files::routes())
        .merge(metrics::routes())
        .fallback(|| async {
            error::ApiError::not_found("ROUTE_NOT_FOUND", "no such execd route")
        })
        .with_state(state)
}
