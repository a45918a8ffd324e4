//! The control plane: lifecycle API, store, isolation, proxy, egress policy.
//!
//! Module map (one concept each):
//! - [`config`]: flags and environment of serve mode.
//! - [`error`]: the `{code, message}` error shape and rejection-mapping extractors.
//! - [`models`]: wire models and stored records.
//! - [`store`]: SQLite persistence.
//! - [`runtime`]: isolation (bubblewrap or none), process trees, freeze/thaw/kill.
//! - [`manager`]: the sandbox lifecycle, expiry, restart recovery.
//! - [`snapshots`]: snapshot copies and restore.
//! - [`agent_client`]: HTTP to a sandbox's agent over its Unix socket.
//! - [`proxy`]: the per-sandbox proxy route.
//! - [`egress`]: the egress policy API.
//! - [`diagnostics`]: logs and events of a sandbox.
//! - [`api`]: lifecycle HTTP handlers.
//! - [`http`]: request ids, API-key auth, fallbacks.

pub mod agent_client;
pub mod api;
pub mod config;
pub mod diagnostics;
pub mod egress;
pub mod error;
pub mod http;
pub mod manager;
pub mod models;
pub mod proxy;
pub mod runtime;
pub mod snapshots;
pub mod store;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, patch, post};
use axum::serve::ListenerExt;
use axum::Router;
use tower_http::cors::CorsLayer;

pub use config::ServeArgs;
use runtime::{Isolation, Runtime};
use store::Store;

/// JSON bodies of the lifecycle API; the proxy route has no limit.
const JSON_BODY_LIMIT: usize = 10 * 1024 * 1024;
/// How long open connections may delay the exit after SIGINT/SIGTERM.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Shared state of the control plane.
pub struct Control {
    pub store: Store,
    pub runtime: Runtime,
    pub api_key: Option<String>,
    pub public_host: Option<String>,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub min_timeout: u64,
    pub max_timeout: Option<u64>,
    pub registry: manager::Registry,
}

/// Every (METHOD, path) the control plane serves, spelled as in `openapi/`: the
/// lifecycle API without its `/v1` prefix (also served at `/`), the diagnostics
/// routes, `/health`, and the egress API (reached through the proxy route on port
/// 18080) prefixed with `egress:`. The OpenAPI contract test compares it with the spec.
pub fn routes_table() -> Vec<(&'static str, &'static str)> {
    let mut table = vec![
        ("GET", "/health"),
        ("POST", "/sandboxes"),
        ("GET", "/sandboxes"),
        ("GET", "/sandboxes/{sandboxId}"),
        ("DELETE", "/sandboxes/{sandboxId}"),
        ("PATCH", "/sandboxes/{sandboxId}/metadata"),
        ("POST", "/sandboxes/{sandboxId}/pause"),
        ("POST", "/sandboxes/{sandboxId}/resume"),
        ("POST", "/sandboxes/{sandboxId}/renew-expiration"),
        ("GET", "/sandboxes/{sandboxId}/endpoints/{port}"),
        ("POST", "/sandboxes/{sandboxId}/snapshots"),
        ("GET", "/snapshots"),
        ("GET", "/snapshots/{snapshotId}"),
        ("DELETE", "/snapshots/{snapshotId}"),
        ("GET", "/sandboxes/{sandboxId}/diagnostics/logs"),
        ("GET", "/sandboxes/{sandboxId}/diagnostics/events"),
    ];
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
        table.push((method, "/sandboxes/{sandboxId}/proxy/{port}/{path}"));
    }
    for method in ["GET", "PATCH", "DELETE", "POST", "PUT"] {
        table.push((method, "egress:/policy"));
    }
    table.push(("GET", "egress:/healthz"));
    table
}

/// The routes of one prefix (`/` or `/v1`).
fn api_routes(control: &Arc<Control>) -> Router<Arc<Control>> {
    let lifecycle = Router::new()
        .route(
            "/sandboxes",
            post(api::create_sandbox).get(api::list_sandboxes),
        )
        .route(
            "/sandboxes/{sandbox_id}",
            get(api::get_sandbox).delete(api::delete_sandbox),
        )
        .route(
            "/sandboxes/{sandbox_id}/metadata",
            patch(api::patch_metadata),
        )
        .route("/sandboxes/{sandbox_id}/pause", post(api::pause_sandbox))
        .route("/sandboxes/{sandbox_id}/resume", post(api::resume_sandbox))
        .route(
            "/sandboxes/{sandbox_id}/renew-expiration",
            post(api::renew_expiration),
        )
        .route(
            "/sandboxes/{sandbox_id}/endpoints/{port}",
            get(api::get_endpoint),
        )
        .route(
            "/sandboxes/{sandbox_id}/snapshots",
            post(api::create_snapshot),
        )
        .route("/snapshots", get(api::list_snapshots))
        .route(
            "/snapshots/{snapshot_id}",
            get(api::get_snapshot).delete(api::delete_snapshot),
        )
        .route(
            "/sandboxes/{sandbox_id}/diagnostics/logs",
            get(api::diagnostic_logs),
        )
        .route(
            "/sandboxes/{sandbox_id}/diagnostics/events",
            get(api::diagnostic_events),
        )
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(control),
            http::require_api_key,
        ))
        .layer(DefaultBodyLimit::max(JSON_BODY_LIMIT));
    let proxy = Router::new()
        .route("/sandboxes/{sandbox_id}/proxy/{port}", any(proxy::proxy))
        .route("/sandboxes/{sandbox_id}/proxy/{port}/", any(proxy::proxy))
        .route(
            "/sandboxes/{sandbox_id}/proxy/{port}/{*path}",
            any(proxy::proxy),
        );
    Router::new()
        .route("/health", get(api::health))
        .merge(lifecycle)
        .merge(proxy)
        .method_not_allowed_fallback(http::method_not_allowed)
}

/// The whole HTTP application.
pub fn router(control: Arc<Control>) -> Router {
    let routes = api_routes(&control);
    Router::new()
        .merge(routes.clone())
        .nest("/v1", routes)
        .fallback(http::route_not_found)
        .layer(CorsLayer::very_permissive())
        .layer(axum::middleware::from_fn(http::request_id))
        .with_state(control)
}

/// Serve mode: check the configuration, recover state, serve until SIGINT/SIGTERM.
/// Sandboxes keep running when the server stops; the next start adopts them.
pub async fn serve(args: ServeArgs) -> Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating the data directory {}", args.data_dir.display()))?;
    let data_dir = std::fs::canonicalize(&args.data_dir)
        .with_context(|| format!("resolving the data directory {}", args.data_dir.display()))?;
    let runtime = Runtime::from_args(&args, &data_dir)?;
    let db_path = args.db_path();
    let store = Store::open(&db_path)?;
    let api_key = args.effective_api_key();
    if api_key.is_none() {
        tracing::warn!(
            "NO API KEY CONFIGURED: authentication is DISABLED; anyone who can reach {} can \
             create and control sandboxes (set --api-key or OPENSANDBOX_API_KEY)",
            args.listen
        );
    }
    if runtime.isolation == Isolation::None {
        tracing::warn!(
            "ISOLATION DISABLED (--isolation none): sandboxes run as plain processes on this \
             host, with its network and its files; use only for development"
        );
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let listen = listener.local_addr().context("reading the bound address")?;
    let control = Arc::new(Control {
        store,
        runtime,
        api_key,
        public_host: args.public_host.clone(),
        listen,
        data_dir: data_dir.clone(),
        min_timeout: args.min_sandbox_timeout,
        max_timeout: args.max_sandbox_timeout,
        registry: manager::Registry::default(),
    });
    control
        .recover()
        .await
        .context("recovering the sandboxes of a previous run")?;
    tokio::spawn(Arc::clone(&control).expire_loop());
    tracing::info!(
        listen = %listen,
        data_dir = %data_dir.display(),
        db = %db_path.display(),
        isolation = control.runtime.isolation.name(),
        "opensandbox-server ready"
    );
    // A fixed line on stdout tells scripts and tests the bound port (`--listen :0`).
    println!("opensandbox-server listening on {listen}");
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    // Without TCP_NODELAY a stream's small terminal event waits for the client's delayed
    // ACK (Nagle), adding ~40 ms to every command on a reused connection.
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("could not set TCP_NODELAY: {err}");
        }
    });
    let server = axum::serve(listener, router(control)).with_graceful_shutdown(async move {
        shutdown_signal().await;
        let _ = stopping_tx.send(());
    });
    // Open streams (a metrics watch, a long command) would hold a graceful shutdown
    // forever: they get a short grace, then the process exits anyway.
    let grace = async move {
        if stopping_rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        served = server => served.context("serving HTTP"),
        _ = grace => Ok(()),
    }
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
    tracing::info!("shutting down; sandboxes keep running and are adopted at the next start");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_table_has_no_duplicates() {
        let table = routes_table();
        let mut seen = std::collections::HashSet::new();
        for row in &table {
            assert!(seen.insert(*row), "duplicate row {row:?}");
        }
        assert!(table.contains(&("GET", "egress:/policy")));
        assert!(table.contains(&("GET", "/health")));
    }
}
