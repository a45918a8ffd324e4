//! The sandbox handle: create / connect / resume with readiness, and every per-sandbox
//! operation (lifecycle calls bound to the id, execd, egress).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::ConnectionConfig;
use crate::egress::{EgressClient, DEFAULT_EGRESS_PORT};
use crate::error::{Error, ErrorKind, Result};
use crate::execd::{ExecdClient, DEFAULT_EXECD_PORT};
use crate::lifecycle::SandboxManager;
use crate::models::{
    CreateSandboxRequest, CredentialProxyConfig, DiagnosticContent, Endpoint, ImageSpec,
    NetworkPolicy, NetworkRule, PlatformSpec, PolicyStatus, RenewResponse, SandboxInfo,
    SandboxLifecycle, SandboxMetrics, SnapshotInfo, Volume, ORIGIN_TEMPLATE,
};

/// Default sandbox TTL (official SDKs: 10 minutes).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Default time to wait for a new sandbox to become healthy.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Default interval between health checks.
pub const DEFAULT_HEALTH_CHECK_POLLING_INTERVAL: Duration = Duration::from_millis(200);
/// Default entrypoint.
pub const DEFAULT_ENTRYPOINT: [&str; 3] = ["tail", "-f", "/dev/null"];

/// Default resource limits: 1 CPU, 2 GiB.
pub fn default_resource_limits() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("cpu".to_owned(), "1".to_owned()),
        ("memory".to_owned(), "2Gi".to_owned()),
    ])
}

/// A user-supplied readiness check replacing the execd ping.
pub type HealthCheck =
    Arc<dyn Fn(Sandbox) -> Pin<Box<dyn Future<Output = Result<bool>> + Send>> + Send + Sync>;

/// Options of [`Sandbox::create`], with the official SDKs' defaults.
#[derive(Clone)]
pub struct SandboxCreateOptions {
    /// Image (exclusive with `snapshot_id`).
    pub image: Option<ImageSpec>,
    /// Snapshot to restore (exclusive with `image`).
    pub snapshot_id: Option<String>,
    /// Entry process; default `tail -f /dev/null`.
    pub entrypoint: Vec<String>,
    /// TTL; `None` = manual cleanup. Default 600 s.
    pub timeout: Option<Duration>,
    /// How long to wait for readiness. Default 30 s.
    pub ready_timeout: Duration,
    /// Interval between health checks. Default 200 ms.
    pub health_check_polling_interval: Duration,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
    /// Resource limits; default `{cpu: "1", memory: "2Gi"}`.
    pub resource: BTreeMap<String, String>,
    /// (1.1) Resource requests (same keys and grammar as `resource`); default none.
    pub resource_requests: BTreeMap<String, String>,
    /// Platform.
    pub platform: Option<PlatformSpec>,
    /// Egress policy.
    pub network_policy: Option<NetworkPolicy>,
    /// Credential proxy.
    pub credential_proxy: Option<CredentialProxyConfig>,
    /// Secure access.
    pub secure_access: bool,
    /// Volumes.
    pub volumes: Vec<Volume>,
    /// Opaque extensions.
    pub extensions: BTreeMap<String, String>,
    /// (1.1) Create from this `Succeeded` template instead of an image or snapshot:
    /// only `timeout` (required), `metadata`, `network_policy` and `extensions` go with
    /// it (the template fixes the rest).
    pub template_id: Option<String>,
    /// (1.1) Lifecycle hooks.
    pub lifecycle: Option<SandboxLifecycle>,
    /// Do not wait for readiness.
    pub skip_health_check: bool,
    /// Custom readiness check (replaces the execd ping).
    pub health_check: Option<HealthCheck>,
}

impl std::fmt::Debug for SandboxCreateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxCreateOptions")
            .field("image", &self.image)
            .field("snapshot_id", &self.snapshot_id)
            .field("timeout", &self.timeout)
            .field("ready_timeout", &self.ready_timeout)
            .field("skip_health_check", &self.skip_health_check)
            .finish_non_exhaustive()
    }
}

impl Default for SandboxCreateOptions {
    fn default() -> Self {
        SandboxCreateOptions {
            image: None,
            snapshot_id: None,
            entrypoint: DEFAULT_ENTRYPOINT.iter().map(|s| s.to_string()).collect(),
            timeout: Some(DEFAULT_TIMEOUT),
            ready_timeout: DEFAULT_READY_TIMEOUT,
            health_check_polling_interval: DEFAULT_HEALTH_CHECK_POLLING_INTERVAL,
            env: BTreeMap::new(),
            metadata: BTreeMap::new(),
            resource: default_resource_limits(),
            resource_requests: BTreeMap::new(),
            platform: None,
            network_policy: None,
            credential_proxy: None,
            secure_access: false,
            volumes: Vec::new(),
            extensions: BTreeMap::new(),
            template_id: None,
            lifecycle: None,
            skip_health_check: false,
            health_check: None,
        }
    }
}

impl SandboxCreateOptions {
    /// Defaults plus an image.
    pub fn image(uri: impl Into<String>) -> Self {
        SandboxCreateOptions {
            image: Some(ImageSpec {
                uri: uri.into(),
                auth: None,
            }),
            ..Default::default()
        }
    }

    /// The wire request these options describe.
    pub fn to_request(&self) -> Result<CreateSandboxRequest> {
        const OP: &str = "create_sandbox";
        // Sub-second TTLs round up rather than to zero.
        let timeout = self
            .timeout
            .map(|t| t.as_secs().max(u64::from(t.subsec_nanos() > 0)));
        if let Some(template_id) = &self.template_id {
            return self.template_request(template_id, timeout);
        }
        if self.entrypoint.is_empty() {
            return Err(Error::invalid_argument(OP, "entrypoint must not be empty"));
        }
        Ok(CreateSandboxRequest {
            image: self.image.clone(),
            snapshot_id: self.snapshot_id.clone(),
            entrypoint: self.entrypoint.clone(),
            timeout,
            resource_limits: self.resource.clone(),
            resource_requests: self.resource_requests.clone(),
            env: self.env.clone(),
            metadata: self.metadata.clone(),
            platform: self.platform.clone(),
            network_policy: self.network_policy.clone(),
            credential_proxy: self.credential_proxy.clone(),
            secure_access: self.secure_access,
            volumes: self.volumes.clone(),
            extensions: self.extensions.clone(),
            template_id: None,
            lifecycle: self.lifecycle.clone(),
        })
    }

    /// Template mode (the official `create_from_template`): the template id, the TTL
    /// and what may accompany it; anything the template fixes is refused here rather
    /// than dropped.
    fn template_request(
        &self,
        template_id: &str,
        timeout: Option<u64>,
    ) -> Result<CreateSandboxRequest> {
        const OP: &str = "create_sandbox";
        if template_id.trim().is_empty() {
            return Err(Error::invalid_argument(OP, "template_id must not be blank"));
        }
        if self.image.is_some() || self.snapshot_id.is_some() {
            return Err(Error::invalid_argument(
                OP,
                "give one of image, snapshot_id and template_id",
            ));
        }
        let Some(timeout) = timeout else {
            return Err(Error::invalid_argument(
                OP,
                "timeout is required when creating from a template",
            ));
        };
        let fixed = [
            ("env", !self.env.is_empty()),
            ("resource_requests", !self.resource_requests.is_empty()),
            ("platform", self.platform.is_some()),
            ("credential_proxy", self.credential_proxy.is_some()),
            ("secure_access", self.secure_access),
            ("volumes", !self.volumes.is_empty()),
            ("lifecycle", self.lifecycle.is_some()),
        ];
        if let Some((name, _)) = fixed.iter().find(|(_, set)| *set) {
            return Err(Error::invalid_argument(
                OP,
                format!(
                    "{name} cannot be set when creating from a template (the template fixes it)"
                ),
            ));
        }
        Ok(CreateSandboxRequest {
            template_id: Some(template_id.to_owned()),
            timeout: Some(timeout),
            metadata: self.metadata.clone(),
            network_policy: self.network_policy.clone(),
            extensions: self.extensions.clone(),
            ..Default::default()
        })
    }
}

/// Options of [`Sandbox::connect`] and [`Sandbox::resume`].
#[derive(Clone)]
pub struct ConnectOptions {
    /// How long to wait for readiness. Default 30 s.
    pub timeout: Duration,
    /// Interval between health checks. Default 200 ms.
    pub health_check_polling_interval: Duration,
    /// Do not wait for readiness.
    pub skip_health_check: bool,
    /// Custom readiness check.
    pub health_check: Option<HealthCheck>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            timeout: DEFAULT_READY_TIMEOUT,
            health_check_polling_interval: DEFAULT_HEALTH_CHECK_POLLING_INTERVAL,
            skip_health_check: false,
            health_check: None,
        }
    }
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("timeout", &self.timeout)
            .field("skip_health_check", &self.skip_health_check)
            .finish_non_exhaustive()
    }
}

/// A live sandbox. Cheap to clone; clones share connections and the egress endpoint.
#[derive(Clone)]
pub struct Sandbox {
    id: Arc<str>,
    manager: SandboxManager,
    execd: ExecdClient,
    execd_endpoint: Arc<Endpoint>,
    egress: Arc<tokio::sync::OnceCell<EgressClient>>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("id", &self.id)
            .field("execd", &self.execd.base_url())
            .finish()
    }
}

/// Kills a sandbox whose creation did not finish, including when the create future is
/// dropped (cancelled) half-way: a sandbox nobody holds must not linger until its TTL.
struct ZombieGuard {
    manager: SandboxManager,
    id: Option<String>,
}

impl ZombieGuard {
    fn disarm(&mut self) {
        self.id = None;
    }
}

impl Drop for ZombieGuard {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let manager = self.manager.clone();
        let fut = async move {
            if let Err(e) = manager.kill_sandbox(&id).await {
                tracing::warn!(sandbox = %id, error = %e, "cleanup of unready sandbox failed");
            }
        };
        // Not on a calling thread's local runtime, where it would wait for its next call.
        crate::runtime::spawn_detached(fut);
    }
}

impl Sandbox {
    /// Creates a sandbox and waits until its execd answers (unless skipped). If it
    /// never becomes ready, or anything fails after the server created it, the sandbox
    /// is deleted before the error is returned.
    pub async fn create(config: ConnectionConfig, opts: SandboxCreateOptions) -> Result<Sandbox> {
        let manager = SandboxManager::new(config)?;
        let request = opts.to_request()?;
        let info = manager.create_sandbox(&request).await?;
        let mut guard = ZombieGuard {
            manager: manager.clone(),
            id: Some(info.id.clone()),
        };
        let ready = async {
            let sandbox =
                Sandbox::attach(manager.clone(), &info.id, opts.template_id.is_some()).await?;
            if !opts.skip_health_check {
                sandbox
                    .wait_until_ready(
                        opts.ready_timeout,
                        opts.health_check_polling_interval,
                        opts.health_check.clone(),
                    )
                    .await?;
            }
            Ok::<_, Error>(sandbox)
        }
        .await;
        // On failure the deletion is awaited here, so it is done when the error reaches
        // the caller; the guard covers cancellation, including during this deletion.
        match ready {
            Ok(sandbox) => {
                guard.disarm();
                Ok(sandbox)
            }
            Err(e) => {
                if let Err(kill_err) = manager.kill_sandbox(&info.id).await {
                    tracing::warn!(
                        sandbox = %info.id,
                        error = %kill_err,
                        "cleanup of unready sandbox failed"
                    );
                }
                guard.disarm();
                Err(e)
            }
        }
    }

    /// Connects to an existing sandbox and waits until it is ready.
    pub async fn connect(
        config: ConnectionConfig,
        id: &str,
        opts: ConnectOptions,
    ) -> Result<Sandbox> {
        let manager = SandboxManager::new(config)?;
        let sandbox = Sandbox::attach(manager, id, false).await?;
        if !opts.skip_health_check {
            sandbox
                .wait_until_ready(
                    opts.timeout,
                    opts.health_check_polling_interval,
                    opts.health_check.clone(),
                )
                .await?;
        }
        Ok(sandbox)
    }

    /// Resumes a paused sandbox on the server, then connects to it.
    pub async fn resume(
        config: ConnectionConfig,
        id: &str,
        opts: ConnectOptions,
    ) -> Result<Sandbox> {
        let manager = SandboxManager::new(config.clone())?;
        manager.resume_sandbox(id).await?;
        Sandbox::connect(config, id, opts).await
    }

    /// Resolves the execd endpoint and builds the handle (no readiness check). A
    /// sandbox created from a template is template-backed whatever the lookup says
    /// (protocol.md §2.6: the official SDKs decide the same way).
    async fn attach(manager: SandboxManager, id: &str, from_template: bool) -> Result<Sandbox> {
        let mut endpoint = manager.get_endpoint(id, DEFAULT_EXECD_PORT, None).await?;
        if from_template && endpoint.origin.is_none() {
            endpoint.origin = Some(ORIGIN_TEMPLATE.to_owned());
        }
        let execd = ExecdClient::from_http(manager.http().clone(), &endpoint);
        Ok(Sandbox {
            id: id.into(),
            manager,
            execd,
            execd_endpoint: Arc::new(endpoint),
            egress: Arc::new(tokio::sync::OnceCell::new()),
        })
    }

    /// A handle over endpoints the caller already knows (the official SDKs' low-level
    /// `ExecdClient` / `EgressClient`, built from a URL and a token): no lifecycle
    /// request is made. `id` only labels the handle. Without `egress`, egress calls
    /// resolve the sidecar through the lifecycle API as usual.
    pub fn from_endpoints(
        config: ConnectionConfig,
        id: &str,
        execd: Endpoint,
        egress: Option<Endpoint>,
    ) -> Result<Sandbox> {
        let manager = SandboxManager::new(config)?;
        let execd_client = ExecdClient::from_http(manager.http().clone(), &execd);
        let egress_client = egress.map(|ep| EgressClient::from_http(manager.http().clone(), &ep));
        let egress_cell = tokio::sync::OnceCell::new_with(egress_client);
        Ok(Sandbox {
            id: id.into(),
            manager,
            execd: execd_client,
            execd_endpoint: Arc::new(execd),
            egress: Arc::new(egress_cell),
        })
    }

    /// Polls the health check every `interval` until it passes or `timeout` elapses
    /// ([`ErrorKind::ReadyTimeout`]).
    pub async fn wait_until_ready(
        &self,
        timeout: Duration,
        interval: Duration,
        health_check: Option<HealthCheck>,
    ) -> Result<()> {
        let start = Instant::now();
        let mut last_error: Option<Error> = None;
        loop {
            let remaining = timeout.saturating_sub(start.elapsed());
            let healthy = match &health_check {
                Some(check) => match check(self.clone()).await {
                    Ok(ok) => ok,
                    Err(e) => {
                        last_error = Some(e);
                        false
                    }
                },
                None => {
                    let per_ping = self
                        .config()
                        .request_timeout()
                        .min(remaining)
                        .max(Duration::from_millis(100));
                    match self.execd.ping(per_ping).await {
                        Ok(()) => true,
                        Err(e) => {
                            last_error = Some(e);
                            false
                        }
                    }
                }
            };
            if healthy {
                return Ok(());
            }
            let remaining = timeout.saturating_sub(start.elapsed());
            if remaining.is_zero() {
                let cfg = self.config();
                let mut msg = format!(
                    "sandbox {} did not become healthy within {timeout:?} (domain {}, \
                     use_server_proxy={}). Hint: if the server cannot route to the sandbox \
                     directly (remote server, Docker bridge network), set use_server_proxy",
                    self.id,
                    cfg.domain(),
                    cfg.use_server_proxy()
                );
                if let Some(e) = &last_error {
                    msg.push_str(&format!("; last health check error: {e}"));
                }
                return Err(Error::new(ErrorKind::ReadyTimeout, "wait_until_ready", msg));
            }
            tokio::time::sleep(interval.min(remaining)).await;
        }
    }

    /// Sandbox id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The connection config.
    pub fn config(&self) -> &ConnectionConfig {
        self.manager.config()
    }

    /// The lifecycle client this sandbox uses.
    pub fn manager(&self) -> &SandboxManager {
        &self.manager
    }

    /// The execd client: commands, sessions, code, files, metrics.
    pub fn execd(&self) -> &ExecdClient {
        &self.execd
    }

    /// The resolved execd endpoint.
    pub fn execd_endpoint(&self) -> &Endpoint {
        &self.execd_endpoint
    }

    /// (1.1) What backs the sandbox, from the `OPEN-SANDBOX-ORIGIN` header of its execd
    /// endpoint lookup (`template`), or `None` when the server did not say.
    pub fn origin(&self) -> Option<&str> {
        self.execd_endpoint.origin.as_deref()
    }

    /// (1.1) A template-backed sandbox has no egress sidecar: its policy lives on the
    /// lifecycle server (`/sandboxes/{id}/networkpolicy`) and it has no credential vault.
    pub fn is_template_backed(&self) -> bool {
        self.origin() == Some(ORIGIN_TEMPLATE)
    }

    /// The egress sidecar client for the credential vault routes; refused for a
    /// template-backed sandbox, as the official SDKs refuse it.
    pub async fn credential_vault(&self) -> Result<&EgressClient> {
        if self.is_template_backed() {
            return Err(Error::invalid_argument(
                "credential_vault",
                format!(
                    "sandbox {} is template-backed: it has no egress sidecar, so no credential vault",
                    self.id
                ),
            ));
        }
        self.egress().await
    }

    /// The egress sidecar client (endpoint resolved on first use).
    pub async fn egress(&self) -> Result<&EgressClient> {
        self.egress
            .get_or_try_init(|| async {
                let ep = self
                    .manager
                    .get_endpoint(&self.id, DEFAULT_EGRESS_PORT, None)
                    .await?;
                Ok(EgressClient::from_http(self.manager.http().clone(), &ep))
            })
            .await
    }

    /// Whether execd answers its ping.
    pub async fn is_healthy(&self) -> bool {
        self.execd.is_healthy().await
    }

    /// `GET /sandboxes/{id}`.
    pub async fn get_info(&self) -> Result<SandboxInfo> {
        self.manager.get_sandbox_info(&self.id).await
    }

    /// Endpoint of another port of this sandbox.
    pub async fn get_endpoint(&self, port: u16) -> Result<Endpoint> {
        self.manager.get_endpoint(&self.id, port, None).await
    }

    /// Signed endpoint valid until `expires` (Unix seconds).
    pub async fn get_signed_endpoint(&self, port: u16, expires: i64) -> Result<Endpoint> {
        self.manager
            .get_signed_endpoint(&self.id, port, expires)
            .await
    }

    /// Resource metrics.
    pub async fn get_metrics(&self) -> Result<SandboxMetrics> {
        self.execd.get_metrics().await
    }

    /// Sets the expiry to now + `duration`.
    pub async fn renew(&self, duration: Duration) -> Result<RenewResponse> {
        self.manager.renew_sandbox(&self.id, duration).await
    }

    /// Merge-patches metadata (`None` deletes a key).
    pub async fn patch_metadata(
        &self,
        patch: &BTreeMap<String, Option<String>>,
    ) -> Result<SandboxInfo> {
        self.manager.patch_sandbox_metadata(&self.id, patch).await
    }

    /// Takes a snapshot.
    pub async fn create_snapshot(&self, name: Option<&str>) -> Result<SnapshotInfo> {
        self.manager.create_snapshot(&self.id, name).await
    }

    /// Pauses the sandbox (no waiting).
    pub async fn pause(&self) -> Result<()> {
        self.manager.pause_sandbox(&self.id).await
    }

    /// Deletes the sandbox on the server.
    pub async fn kill(&self) -> Result<()> {
        self.manager.kill_sandbox(&self.id).await
    }

    /// Diagnostic logs.
    pub async fn get_diagnostic_logs(&self, scope: &str) -> Result<DiagnosticContent> {
        self.manager.get_diagnostic_logs(&self.id, scope).await
    }

    /// Diagnostic events.
    pub async fn get_diagnostic_events(&self, scope: &str) -> Result<DiagnosticContent> {
        self.manager.get_diagnostic_events(&self.id, scope).await
    }

    /// The egress policy (template-backed: through the lifecycle server).
    pub async fn get_egress_policy(&self) -> Result<NetworkPolicy> {
        if self.is_template_backed() {
            let status = self.manager.get_network_policy(&self.id).await?;
            return Ok(status.policy.unwrap_or_default());
        }
        self.egress().await?.get_network_policy().await
    }

    /// Merges egress rules (template-backed: through the lifecycle server).
    pub async fn patch_egress_rules(&self, rules: &[NetworkRule]) -> Result<PolicyStatus> {
        if self.is_template_backed() {
            return self.manager.patch_network_policy(&self.id, rules).await;
        }
        self.egress().await?.patch_rules(rules).await
    }

    /// Removes egress rules by target (template-backed: through the lifecycle server).
    pub async fn delete_egress_rules(&self, targets: &[&str]) -> Result<PolicyStatus> {
        if self.is_template_backed() {
            let targets: Vec<String> = targets.iter().map(|t| (*t).to_owned()).collect();
            return self
                .manager
                .delete_network_policy_rules(&self.id, &targets)
                .await;
        }
        self.egress().await?.delete_rules(targets).await
    }
}
