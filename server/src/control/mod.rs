//! The control plane: lifecycle API, store, isolation, proxy, egress policy.
//!
//! Module map (one concept each):
//! - [`config`]: flags and environment of serve mode.
//! - [`error`]: the `{code, message}` error shape and rejection-mapping extractors.
//! - [`models`]: wire models and stored records.
//! - [`store`]: SQLite persistence.
//! - [`runtime`]: isolation (bubblewrap or none), process trees, freeze/thaw/kill.
//! - [`oci`]: the standard-OCI-runtime backend (runc, crun, runsc): images, bundles,
//!   cgroup limits.
//! - [`manager`]: the sandbox lifecycle, expiry, restart recovery.
//! - [`warm`]: containers started ahead of the create requests that take them.
//! - [`snapshots`]: snapshot copies and restore.
//! - [`agent_client`]: HTTP to a sandbox's agent over its Unix socket.
//! - [`proxy`]: the per-sandbox proxy route.
//! - [`egress`]: the egress policy API.
//! - [`vault`]: the credential vault on the egress API (stored, not enforced).
//! - [`templates`]: `/templates` and template builds (image snapshots).
//! - [`hooks`]: lifecycle hooks (`preStart`, `periodic`) run through the agent;
//!   [`schedule`]: their cron schedules.
//! - [`diagnostics`]: logs and events of a sandbox.
//! - [`api`]: lifecycle HTTP handlers.
//! - [`http`]: request ids, API-key auth, fallbacks.
//! - [`security`]: the API key, per-sandbox tokens, no-follow reads of sandbox files.
//! - [`listener`]: the HTTP accept loop (header read timeout, connection limit).

pub mod agent_client;
pub mod api;
pub mod config;
pub mod diagnostics;
pub mod egress;
pub mod error;
pub mod hooks;
pub mod http;
pub mod listener;
pub mod manager;
pub mod metrics;
pub mod models;
pub mod networkpolicy;
pub mod oci;
pub mod proxy;
pub mod resources;
pub mod runtime;
pub mod schedule;
pub mod security;
pub mod snapshots;
pub mod store;
pub mod templates;
pub mod vault;
pub mod volumes;
pub mod warm;
pub mod ws_relay;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, patch, post};
use axum::Router;
use tower_http::cors::{AllowOrigin, CorsLayer};

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
    /// `None` only with an explicit `--no-auth` on a loopback address.
    pub api_key: Option<String>,
    /// Derives the per-sandbox access tokens (only their hashes are stored).
    pub token_key: security::TokenKey,
    /// Canonical host directories under which host volumes may be mounted.
    pub allowed_host_paths: Vec<PathBuf>,
    pub public_host: Option<String>,
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub min_timeout: u64,
    pub max_timeout: Option<u64>,
    pub registry: manager::Registry,
    /// Containers started ahead of the create requests that will use them.
    pub warm: warm::WarmPool,
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
        ("GET", "/sandboxes/{sandboxId}/networkpolicy"),
        ("PUT", "/sandboxes/{sandboxId}/networkpolicy"),
        ("PATCH", "/sandboxes/{sandboxId}/networkpolicy"),
        ("DELETE", "/sandboxes/{sandboxId}/networkpolicy"),
        ("POST", "/metrics/events"),
        ("POST", "/templates"),
        ("GET", "/templates"),
        ("GET", "/templates/{templateId}"),
        ("DELETE", "/templates/{templateId}"),
    ];
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
        table.push((method, "/sandboxes/{sandboxId}/proxy/{port}/{path}"));
    }
    for method in ["GET", "PATCH", "DELETE", "POST", "PUT"] {
        table.push((method, "egress:/policy"));
    }
    table.push(("GET", "egress:/healthz"));
    for method in ["POST", "GET", "PATCH", "DELETE"] {
        table.push((method, "egress:/credential-vault"));
    }
    for path in [
        "egress:/credential-vault/credentials",
        "egress:/credential-vault/credentials/{credential_name}",
        "egress:/credential-vault/bindings",
        "egress:/credential-vault/bindings/{binding_name}",
    ] {
        table.push(("GET", path));
    }
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
        .route(
            "/sandboxes/{sandbox_id}/networkpolicy",
            get(networkpolicy::get_policy)
                .put(networkpolicy::put_policy)
                .patch(networkpolicy::patch_policy)
                .delete(networkpolicy::delete_policy),
        )
        .route("/metrics/events", post(metrics::post_event))
        .route("/templates", post(templates::create).get(templates::list))
        .route(
            "/templates/{template_id}",
            get(templates::get).delete(templates::delete),
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

/// The CORS layer for `--cors-origin`: exact origins, no credentials. `None` (no CORS
/// headers at all) without origins.
pub fn cors_layer(origins: &[String]) -> Result<Option<CorsLayer>> {
    if origins.is_empty() {
        return Ok(None);
    }
    let mut values = Vec::new();
    for origin in origins {
        let parsed = url::Url::parse(origin)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .filter(|u| u.path() == "/" && u.query().is_none() && !origin.ends_with('/'))
            .filter(|u| u.username().is_empty() && u.password().is_none());
        if parsed.is_none() {
            anyhow::bail!(
                "--cors-origin {origin:?} is not an origin like https://app.example.com \
                 (scheme, host and optional port; no path, no wildcard)"
            );
        }
        values.push(
            axum::http::HeaderValue::from_str(origin)
                .with_context(|| format!("--cors-origin {origin:?}"))?,
        );
    }
    use axum::http::{header, Method};
    Ok(Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(values))
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
                Method::HEAD,
                Method::OPTIONS,
            ])
            .allow_headers([
                header::CONTENT_TYPE,
                header::ACCEPT,
                header::RANGE,
                axum::http::HeaderName::from_static("open-sandbox-api-key"),
                axum::http::HeaderName::from_static("x-execd-access-token"),
                axum::http::HeaderName::from_static("opensandbox-egress-auth"),
                axum::http::HeaderName::from_static("x-request-id"),
            ])
            .expose_headers([axum::http::HeaderName::from_static("x-request-id")])
            .allow_credentials(false),
    ))
}

/// The whole HTTP application; `cors` from [`cors_layer`].
pub fn router(control: Arc<Control>, cors: Option<CorsLayer>) -> Router {
    let routes = api_routes(&control);
    let app = Router::new()
        .merge(routes.clone())
        .nest("/v1", routes)
        .fallback(http::route_not_found);
    let app = match cors {
        Some(cors) => app.layer(cors),
        None => app,
    };
    app.layer(axum::middleware::from_fn(http::request_id))
        .with_state(control)
}

/// Canonical forms of `--allowed-host-path`, each an existing absolute directory.
fn allowed_host_paths(given: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in given {
        if !path.is_absolute() {
            anyhow::bail!("--allowed-host-path {} must be absolute", path.display());
        }
        let canonical = std::fs::canonicalize(path)
            .with_context(|| format!("--allowed-host-path {}", path.display()))?;
        if !canonical.is_dir() {
            anyhow::bail!("--allowed-host-path {} is not a directory", path.display());
        }
        out.push(canonical);
    }
    Ok(out)
}

/// Makes the database and its WAL/SHM files readable by their owner only (SQLite
/// creates the WAL and SHM files with the database's mode).
fn private_db_files(db_path: &std::path::Path) -> Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Some(parent) = db_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating the directory of {}", db_path.display()))?;
    }
    // Create it 0600 before SQLite does (it would use 0644 under the usual umask).
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(db_path)
        .with_context(|| format!("opening the database {}", db_path.display()))?;
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = db_path.as_os_str().to_owned();
        name.push(suffix);
        let path = PathBuf::from(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                if meta.permissions().mode() & 0o077 != 0 {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                        .with_context(|| format!("setting mode 0600 on {}", path.display()))?;
                }
            }
            Ok(_) => anyhow::bail!("{} is not a regular file", path.display()),
            Err(_) => {}
        }
    }
    Ok(())
}

/// Serve mode: check the configuration, recover state, serve until SIGINT/SIGTERM.
/// Sandboxes keep running when the server stops; the next start adopts them.
pub async fn serve(args: ServeArgs) -> Result<()> {
    // Sandboxes' files (a setuid file made inside one included), snapshots, the store
    // and the keys all live below the data directory: only its owner may enter it.
    security::private_dir(&args.data_dir)
        .with_context(|| format!("preparing the data directory {}", args.data_dir.display()))?;
    let data_dir = std::fs::canonicalize(&args.data_dir)
        .with_context(|| format!("resolving the data directory {}", args.data_dir.display()))?;
    for sub in ["sandboxes", "snapshots"] {
        security::private_dir(&data_dir.join(sub))?;
    }
    let cors = cors_layer(&args.cors_origins)?;
    let allowed_host_paths = allowed_host_paths(&args.allowed_host_paths)?;
    let runtime = Runtime::from_args(&args, &data_dir)?;
    let api_key = match security::resolve_api_key(
        args.effective_api_key(),
        args.no_auth,
        args.listen,
        &data_dir,
    )? {
        None => {
            tracing::warn!(
                "--no-auth: authentication is DISABLED; every local user and process that can \
                 reach {} can create and control sandboxes",
                args.listen
            );
            None
        }
        Some((key, security::ApiKeySource::Generated)) => {
            let file = data_dir.join(security::API_KEY_FILE);
            // Printed this once only; later starts read it from the file.
            eprintln!(
                "opensandbox-server: generated an API key (stored in {}, mode 0600); send it \
                 in the OPEN-SANDBOX-API-KEY header:\n{key}",
                file.display()
            );
            Some(key)
        }
        Some((key, security::ApiKeySource::Stored)) => {
            tracing::info!(
                file = %data_dir.join(security::API_KEY_FILE).display(),
                "using the API key generated at an earlier start"
            );
            Some(key)
        }
        Some((key, security::ApiKeySource::Given)) => Some(key),
    };
    let token_key = security::token_key(&data_dir)?;
    let db_path = args.db_path();
    private_db_files(&db_path)?;
    let store = Store::open(&db_path)?;
    private_db_files(&db_path)?;
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
    // Warm containers are an OCI runtime's: bubblewrap starts in a few milliseconds.
    let warm_per_image = match runtime.isolation {
        Isolation::Oci(_) => args.warm_pool as usize,
        _ => 0,
    };
    let control = Arc::new(Control {
        store,
        runtime,
        api_key,
        token_key,
        allowed_host_paths,
        public_host: args.public_host.clone(),
        listen,
        data_dir: data_dir.clone(),
        min_timeout: args.min_sandbox_timeout,
        max_timeout: args.max_sandbox_timeout,
        registry: manager::Registry::default(),
        warm: warm::WarmPool::new(warm_per_image, args.warm_images as usize),
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
    let limits = listener::Limits {
        header_read_timeout: args.header_read_timeout,
        max_connections: args.max_connections as usize,
    };
    let shutdown_control = Arc::clone(&control);
    let server = listener::serve(listener, router(control, cors), limits, async move {
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
    let result = tokio::select! {
        served = server => served.context("serving HTTP"),
        _ = grace => Ok(()),
    };
    // Sandboxes outlive the server; warm containers are no sandbox yet.
    shutdown_control.release_all_warm();
    result
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
