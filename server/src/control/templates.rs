//! Templates (protocol.md §2.8): `/templates` CRUD and what `templateId` on create
//! runs.
//!
//! Upstream builds a fast-sandbox golden image (a microVM snapshot) on Kubernetes and
//! publishes it to S3. On this one-machine server a template is an image snapshot
//! under `DATA_DIR/templates/{tpl_<uuid>}/`, in the snapshot layout (`source.json`
//! naming the image, the writable directories, the overlay layer `rootfs-upper`), that
//! sandboxes are created from like a snapshot restore:
//!
//! 1. `POST /templates` stores the template `Pending` and answers 201; the build runs
//!    in the background: `Building`, then `Succeeded` (with `manifestRef`) or `Failed`
//!    (with `message`). A build interrupted by a server restart becomes `Failed`.
//! 2. The build pulls and unpacks the image (the OCI image cache; bubblewrap runs no
//!    image), bakes `env` as upstream does into `/etc/sandbox-init.env` (in the
//!    template's overlay layer, so OCI sandboxes on overlayfs see the file; every
//!    sandbox also gets the variables in its environment), and with `readiness` runs a
//!    build sandbox until the probe passes (`cmd://COMMAND` exits 0, or
//!    `tcp://127.0.0.1:44772`, the agent, answers; without a probe it runs
//!    `warmupSeconds`), then keeps what that sandbox wrote as the template's files.
//! 3. `manifestRef` names the result: `local:templates/{id}@sha256:<image digest>`
//!    under an OCI runtime (the unpacked image in the cache plus the template layer),
//!    `local:templates/{id}` under bubblewrap.
//! 4. `publish` is required as upstream (an S3 target) and recorded, **not uploaded**:
//!    this server has no object storage client.
//! 5. `templateId` on create: only a `Succeeded` template (else 404, as upstream,
//!    which does not tell a missing template from an unfinished one); the request may
//!    not set `entrypoint`, `env`, `resourceLimits`, `resourceRequests`, `volumes`,
//!    `platform`, `credentialProxy`, `secureAccess` or `lifecycle` (400, as upstream)
//!    and must set `timeout`. Deleting a template leaves its sandboxes running (each
//!    copied the template's files when it was created).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::error::{ApiError, ApiJson, ApiPath, ApiResult};
use super::models::{rfc3339, CreateSandboxRequest, ImageSpec, ListResponse, PaginationInfo};
use super::{agent_client, hooks, snapshots, Control};

pub const PENDING: &str = "Pending";
pub const BUILDING: &str = "Building";
pub const SUCCEEDED: &str = "Succeeded";
pub const FAILED: &str = "Failed";
/// Upstream's default entrypoint of a template.
const DEFAULT_ENTRYPOINT: [&str; 3] = ["tail", "-f", "/dev/null"];
/// Upstream accepts only these sizing keys for templates.
const RESOURCE_KEYS: [&str; 3] = ["cpu", "memory", "disk"];
/// Upstream's default warm-up window when `readiness` has no probe.
const DEFAULT_WARMUP_SECS: u64 = 60;
const MAX_WARMUP_SECS: u64 = 3600;
/// Bounds on the baked environment.
const MAX_ENV_VARS: usize = 1024;
const MAX_ENV_NAME: usize = 256;
const MAX_ENV_BYTES: usize = 1024 * 1024;
/// The file upstream's guest init reads the baked environment from.
pub const INIT_ENV_FILE: &str = "etc/sandbox-init.env";
const ENV_FILE_MODE: u32 = 0o644;
/// How often the readiness probe is retried during a build.
const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// `FsbTemplateReadiness`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Readiness {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_seconds: Option<u64>,
}

/// `CreateFsbTemplateRequest`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateTemplateRequest {
    pub image: Option<String>,
    pub publish: Option<String>,
    #[serde(default)]
    pub resource_limits: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub entrypoint: Option<Vec<String>>,
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub readiness: Option<Readiness>,
    #[serde(default)]
    pub format: Option<String>,
}

/// `FsbTemplateStatus`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateStatus {
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A template as stored (and, through [`TemplateRecord::to_api`], as served).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TemplateRecord {
    pub template_id: String,
    pub image: String,
    pub publish: String,
    pub format: String,
    pub resource_limits: BTreeMap<String, String>,
    pub entrypoint: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub metadata: BTreeMap<String, String>,
    pub readiness: Option<Readiness>,
    pub status: TemplateStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl TemplateRecord {
    /// `FsbTemplate`: optional request fields echoed when set.
    pub fn to_api(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "templateId": self.template_id,
            "image": self.image,
            "publish": self.publish,
            "format": self.format,
            "status": self.status,
            "createdAt": rfc3339(&self.created_at),
            "updatedAt": rfc3339(&self.updated_at),
            "entrypoint": self.entrypoint,
        });
        if !self.resource_limits.is_empty() {
            v["resourceLimits"] = serde_json::json!(self.resource_limits);
        }
        if !self.env.is_empty() {
            v["env"] = serde_json::json!(self.env);
        }
        if !self.metadata.is_empty() {
            v["metadata"] = serde_json::json!(self.metadata);
        }
        if let Some(r) = &self.readiness {
            v["readiness"] = serde_json::json!(r);
        }
        v
    }

    fn set_phase(&mut self, phase: &str, manifest_ref: Option<String>, message: Option<String>) {
        self.status = TemplateStatus {
            phase: phase.to_string(),
            manifest_ref,
            message,
        };
        self.updated_at = Utc::now();
    }
}

fn template_not_found(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "TEMPLATE::NOT_FOUND",
        format!("template {id} not found"),
    )
}

/// `[A-Za-z_][A-Za-z0-9_]*`, as upstream (and a shell) requires.
pub fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Checks an environment to bake: names, sizes, no NUL or newline in values (the
/// file has one `NAME=VALUE` line per variable).
pub fn check_env(env: &BTreeMap<String, String>) -> ApiResult<()> {
    if env.len() > MAX_ENV_VARS {
        return Err(ApiError::invalid(format!(
            "`env` holds at most {MAX_ENV_VARS} variables"
        )));
    }
    let mut total = 0;
    for (name, value) in env {
        if name.len() > MAX_ENV_NAME || !is_env_name(name) {
            let mut shown: String = name.chars().take(64).collect();
            if shown.len() < name.len() {
                shown.push('…');
            }
            return Err(ApiError::invalid(format!(
                "env name {shown:?} is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*, at \
                 most {MAX_ENV_NAME} bytes)"
            )));
        }
        if value.contains('\0') || value.contains('\n') {
            return Err(ApiError::invalid(format!(
                "env {name}: values may not contain NUL or newlines"
            )));
        }
        total += name.len() + value.len() + 2;
    }
    if total > MAX_ENV_BYTES {
        return Err(ApiError::invalid(format!(
            "`env` is larger than {MAX_ENV_BYTES} bytes"
        )));
    }
    Ok(())
}

/// The baked file: `NAME='VALUE'` lines, single-quoted for a POSIX shell.
pub fn init_env_file(env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (name, value) in env {
        out.push_str(&format!("{name}='{}'\n", value.replace('\'', r"'\''")));
    }
    out
}

/// The readiness probe: `cmd://COMMAND` or `tcp://HOST:PORT`.
enum Probe {
    Command(String),
    Tcp(String, u16),
}

fn parse_probe(probe: &str) -> ApiResult<Probe> {
    if let Some(cmd) = probe.strip_prefix("cmd://") {
        if cmd.trim().is_empty() || cmd.contains('\0') {
            return Err(ApiError::invalid("readiness probe cmd:// needs a command"));
        }
        return Ok(Probe::Command(cmd.to_string()));
    }
    if let Some(addr) = probe.strip_prefix("tcp://") {
        let parsed = addr
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h, p.parse::<u16>().ok().filter(|p| *p > 0)?)))
            .filter(|(h, _)| {
                !h.is_empty()
                    && h.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b".-".contains(&b))
            });
        return match parsed {
            Some((h, p)) => Ok(Probe::Tcp(h.to_string(), p)),
            None => Err(ApiError::invalid(format!(
                "readiness probe {probe:?}: tcp:// needs HOST:PORT"
            ))),
        };
    }
    Err(ApiError::invalid(format!(
        "readiness probe {probe:?} is neither cmd://COMMAND nor tcp://HOST:PORT"
    )))
}

impl Control {
    pub fn templates_dir(&self) -> PathBuf {
        self.data_dir.join("templates")
    }

    pub fn template_dir(&self, id: &str) -> PathBuf {
        self.templates_dir().join(id)
    }

    fn validate_template(&self, req: CreateTemplateRequest) -> ApiResult<TemplateRecord> {
        let image = req.image.unwrap_or_default().trim().to_string();
        let publish = req.publish.unwrap_or_default().trim().to_string();
        if image.is_empty() {
            return Err(ApiError::invalid(
                "`image` is required and must not be blank",
            ));
        }
        if publish.is_empty() {
            return Err(ApiError::invalid(
                "`publish` is required and must not be blank (e.g. s3://bucket/publish; \
                 recorded, not uploaded, by this server)",
            ));
        }
        let format = req.format.unwrap_or_else(|| "overlaybd".into());
        if !matches!(format.as_str(), "native" | "overlaybd") {
            return Err(ApiError::invalid(format!(
                "`format` {format:?} is not native or overlaybd"
            )));
        }
        let resource_limits = req.resource_limits.unwrap_or_default();
        let unsupported: Vec<&str> = resource_limits
            .keys()
            .map(String::as_str)
            .filter(|k| !RESOURCE_KEYS.contains(k))
            .collect();
        if !unsupported.is_empty() {
            return Err(ApiError::invalid(format!(
                "unsupported resourceLimits keys for templates: {}; supported: cpu, memory, disk",
                unsupported.join(", ")
            )));
        }
        let entrypoint = req
            .entrypoint
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| DEFAULT_ENTRYPOINT.map(String::from).to_vec());
        if entrypoint[0].trim().is_empty() {
            return Err(ApiError::invalid(
                "`entrypoint` must hold at least the program to run",
            ));
        }
        let env = req.env.unwrap_or_default();
        check_env(&env)?;
        let metadata = req.metadata.unwrap_or_default();
        for key in metadata.keys() {
            super::manager::check_metadata_key(key)?;
        }
        if let Some(r) = &req.readiness {
            if let Some(p) = &r.probe {
                parse_probe(p)?;
            }
            if r.warmup_seconds.is_some_and(|w| w > MAX_WARMUP_SECS) {
                return Err(ApiError::invalid(format!(
                    "readiness.warmupSeconds is at most {MAX_WARMUP_SECS}"
                )));
            }
        }
        let now = Utc::now();
        Ok(TemplateRecord {
            template_id: format!("tpl_{}", uuid::Uuid::new_v4()),
            image,
            publish,
            format,
            resource_limits,
            entrypoint,
            env,
            metadata,
            readiness: req.readiness,
            status: TemplateStatus {
                phase: PENDING.into(),
                manifest_ref: None,
                message: None,
            },
            created_at: now,
            updated_at: now,
        })
    }

    pub async fn create_template(
        self: &Arc<Self>,
        req: CreateTemplateRequest,
    ) -> ApiResult<TemplateRecord> {
        let record = self.validate_template(req)?;
        // The sizing must be one the runtime accepts (same grammar and maxima as a
        // sandbox's `resourceLimits`): refused now, not after a build.
        self.runtime.check_limits(&record.resource_limits)?;
        self.store.put_template(&record)?;
        let control = Arc::clone(self);
        let id = record.template_id.clone();
        tokio::spawn(async move { control.build_template(&id).await });
        Ok(record)
    }

    fn update_template(&self, id: &str, f: impl FnOnce(&mut TemplateRecord)) {
        match self.store.get_template(id) {
            Ok(Some(mut t)) => {
                f(&mut t);
                if let Err(err) = self.store.put_template(&t) {
                    tracing::error!(
                        template = id,
                        error = format!("{err:#}"),
                        "storing a template"
                    );
                }
            }
            // Deleted meanwhile: nothing to record.
            Ok(None) => {}
            Err(err) => tracing::error!(
                template = id,
                error = format!("{err:#}"),
                "reading a template"
            ),
        }
    }

    async fn build_template(self: &Arc<Self>, id: &str) {
        self.update_template(id, |t| t.set_phase(BUILDING, None, None));
        let result = self.build(id).await;
        match result {
            Ok(manifest_ref) => {
                tracing::info!(template = id, manifest_ref, "template built");
                self.update_template(id, |t| t.set_phase(SUCCEEDED, Some(manifest_ref), None));
            }
            Err(message) => {
                tracing::warn!(template = id, message, "template build failed");
                let dir = self.template_dir(id);
                let _ = std::fs::remove_dir_all(&dir);
                self.update_template(id, |t| t.set_phase(FAILED, None, Some(message)));
            }
        }
        // Deleted while building: leave no files behind.
        if matches!(self.store.get_template(id), Ok(None)) {
            let _ = std::fs::remove_dir_all(self.template_dir(id));
        }
    }

    /// Pulls, bakes and warms one template; the `manifestRef` on success, the reason
    /// on failure.
    async fn build(self: &Arc<Self>, id: &str) -> Result<String, String> {
        let template = match self.store.get_template(id) {
            Ok(Some(t)) => t,
            Ok(None) => return Err("template deleted during its build".into()),
            Err(e) => return Err(format!("{e:#}")),
        };
        let digest = self
            .runtime
            .prepare_image_uri(&template.image)
            .await
            .map_err(|e| format!("pulling image {}: {}", template.image, e.message))?;
        let dir = self.template_dir(id);
        super::security::private_dir(&self.templates_dir()).map_err(|e| format!("{e:#}"))?;
        super::security::private_dir(&dir).map_err(|e| format!("{e:#}"))?;
        if let Some(readiness) = &template.readiness {
            self.warm_up(&template, readiness, &dir).await?;
        }
        snapshots::write_source(&dir, Some(&template.image)).map_err(|e| format!("{e:#}"))?;
        if !template.env.is_empty() {
            let file = dir.join(super::oci::SNAPSHOT_UPPER).join(INIT_ENV_FILE);
            write_env_file(&file, &init_env_file(&template.env)).map_err(|e| format!("{e:#}"))?;
        }
        Ok(match digest {
            Some(d) => format!("local:templates/{id}@{d}"),
            None => format!("local:templates/{id}"),
        })
    }

    /// Runs a build sandbox of the template until its readiness probe passes (or for
    /// `warmupSeconds` without a probe), then keeps its files as the template's.
    async fn warm_up(
        self: &Arc<Self>,
        template: &TemplateRecord,
        readiness: &Readiness,
        dir: &std::path::Path,
    ) -> Result<(), String> {
        let window = Duration::from_secs(readiness.warmup_seconds.unwrap_or(DEFAULT_WARMUP_SECS));
        let probe = match &readiness.probe {
            Some(p) => Some(parse_probe(p).map_err(|e| e.message)?),
            None => None,
        };
        let request = CreateSandboxRequest {
            image: Some(ImageSpec {
                uri: template.image.clone(),
                auth: None,
            }),
            entrypoint: Some(template.entrypoint.clone()),
            // Bounded even if the build is lost (a server restart fails the build but
            // adopts the sandbox): it expires on its own.
            timeout: Some(self.build_sandbox_timeout(window)),
            resource_limits: Some(template.resource_limits.clone()),
            env: Some(
                template
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone())))
                    .collect(),
            ),
            ..Default::default()
        };
        let sandbox = self
            .create_sandbox(request)
            .await
            .map_err(|e| format!("starting the build sandbox: {}", e.message))?;
        let outcome = self.probe_until_ready(&sandbox.id, probe, window).await;
        let copied = match outcome {
            Ok(()) => self
                .copy_sandbox_files(&sandbox.id, dir)
                .await
                .map_err(|e| format!("keeping the build sandbox's files: {e:#}")),
            Err(e) => Err(e),
        };
        if let Err(err) = self.delete_sandbox(&sandbox.id).await {
            tracing::warn!(sandbox = sandbox.id, error = %err, "removing a template build sandbox");
        }
        copied
    }

    /// The TTL of a build sandbox: the warm-up window plus ten minutes, within the
    /// server's bounds.
    fn build_sandbox_timeout(&self, window: Duration) -> i64 {
        let mut secs = window.as_secs().saturating_add(600).max(self.min_timeout);
        if let Some(max) = self.max_timeout {
            secs = secs.min(max);
        }
        i64::try_from(secs).unwrap_or(i64::MAX / 2)
    }

    async fn probe_until_ready(
        &self,
        sandbox_id: &str,
        probe: Option<Probe>,
        window: Duration,
    ) -> Result<(), String> {
        let socket = self.runtime.paths(sandbox_id).socket;
        let deadline = tokio::time::Instant::now() + window;
        let Some(probe) = probe else {
            // No probe: the warm-up window itself, as upstream.
            tokio::time::sleep_until(deadline).await;
            return Ok(());
        };
        let mut last = String::from("the probe never ran");
        loop {
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let passed = match &probe {
                Probe::Tcp(host, port)
                    if *port == super::api::EXECD_PORT
                        && matches!(host.as_str(), "127.0.0.1" | "localhost") =>
                {
                    agent_client::ping(&socket).await
                }
                Probe::Tcp(host, port) => {
                    let script = format!("exec 3<>/dev/tcp/{host}/{port}");
                    let argv = ["bash", "-c", &script].map(String::from);
                    let run =
                        hooks::run(&socket, &argv, remaining.max(Duration::from_secs(1))).await;
                    last = run.summary();
                    run.succeeded()
                }
                Probe::Command(cmd) => {
                    let argv = ["sh", "-c", cmd].map(String::from);
                    let run =
                        hooks::run(&socket, &argv, remaining.max(Duration::from_secs(1))).await;
                    last = run.summary();
                    run.succeeded()
                }
            };
            if passed {
                return Ok(());
            }
            if tokio::time::Instant::now() + PROBE_INTERVAL >= deadline {
                return Err(format!(
                    "readiness probe did not pass within {} s (last run: {last})",
                    window.as_secs()
                ));
            }
            tokio::time::sleep(PROBE_INTERVAL).await;
        }
    }

    /// The template a create names, if it may back a sandbox: `Succeeded` only (any
    /// other template is a 404, as upstream).
    pub fn template_for_create(&self, id: &str) -> ApiResult<TemplateRecord> {
        match self.store.get_template(id)? {
            Some(t) if t.status.phase == SUCCEEDED => Ok(t),
            Some(t) => Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "TEMPLATE::NOT_FOUND",
                format!(
                    "template {id} cannot back a sandbox: its build is {} (only Succeeded \
                     templates can)",
                    t.status.phase
                ),
            )),
            None => Err(template_not_found(id)),
        }
    }

    /// After a restart: builds that were running cannot resume.
    pub fn recover_templates(&self) -> anyhow::Result<()> {
        for mut t in self.store.all_templates()? {
            if t.status.phase == PENDING || t.status.phase == BUILDING {
                t.set_phase(
                    FAILED,
                    None,
                    Some("the build was interrupted by a server restart".into()),
                );
                self.store.put_template(&t)?;
                let _ = std::fs::remove_dir_all(self.template_dir(&t.template_id));
                tracing::warn!(
                    template = t.template_id,
                    "template build lost across a restart"
                );
            }
        }
        Ok(())
    }
}

/// Writes the baked env file (parent directories 0755 as in an image, file 0644),
/// replacing it atomically.
fn write_env_file(path: &std::path::Path, body: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let parent = path
        .parent()
        .ok_or_else(|| anyhow::anyhow!("{} has no parent", path.display()))?;
    std::fs::create_dir_all(parent)?;
    let mut dir = parent.to_path_buf();
    // `etc` inside the layer must look like the image's: root-owned, 0755.
    for _ in 0..2 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        if !dir.pop() {
            break;
        }
    }
    let tmp = parent.join(".sandbox-init.env.tmp");
    std::fs::write(&tmp, body)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(ENV_FILE_MODE))?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

type Shared = State<Arc<Control>>;

pub async fn create(
    State(control): Shared,
    ApiJson(req): ApiJson<CreateTemplateRequest>,
) -> ApiResult<Response> {
    let record = control.create_template(req).await?;
    let mut response = (StatusCode::CREATED, Json(record.to_api())).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/templates/{}", record.template_id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

pub async fn list(
    State(control): Shared,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ListResponse<serde_json::Value>>> {
    let pairs = super::api::query_pairs(raw.as_deref());
    let (page, page_size) = super::api::page_params(&pairs)?;
    let metadata = match super::api::last(&pairs, "metadata") {
        Some(v) => super::api::parse_metadata_filter(v)?,
        None => Vec::new(),
    };
    let items: Vec<serde_json::Value> = control
        .store
        .all_templates()?
        .into_iter()
        .filter(|t| {
            metadata
                .iter()
                .all(|(k, v)| t.metadata.get(k).is_some_and(|have| have == v))
        })
        .map(|t| t.to_api())
        .collect();
    let (items, pagination) = PaginationInfo::paginate(items, page, page_size);
    Ok(Json(ListResponse { items, pagination }))
}

pub async fn get(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let t = control
        .store
        .get_template(&id)?
        .ok_or_else(|| template_not_found(&id))?;
    Ok(Json(t.to_api()))
}

pub async fn delete(State(control): Shared, ApiPath(id): ApiPath<String>) -> ApiResult<StatusCode> {
    if !control.store.delete_template(&id)? {
        return Err(template_not_found(&id));
    }
    // Sandboxes of the template copied its files when they were created.
    let dir = control.template_dir(&id);
    if dir.exists() {
        if let Ok(Err(err)) =
            tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir)).await
        {
            tracing::warn!(template = id, error = %err, "removing a deleted template's files");
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names_and_file() {
        assert!(is_env_name("LOG_LEVEL") && is_env_name("_x1"));
        for bad in ["", "1A", "A-B", "A B", "Ä"] {
            assert!(!is_env_name(bad), "{bad}");
        }
        let mut env = BTreeMap::new();
        env.insert("A".to_string(), "it's".to_string());
        assert_eq!(init_env_file(&env), "A='it'\\''s'\n");
        env.insert("x".repeat(300), "v".into());
        let err = check_env(&env).unwrap_err();
        assert!(err.message.contains("not a valid variable name"));
        assert!(err.message.len() < 300, "the name is not echoed whole");
        let mut env = BTreeMap::new();
        env.insert("A".to_string(), "a\nb".to_string());
        assert!(check_env(&env).is_err());
    }

    #[test]
    fn probes() {
        assert!(matches!(
            parse_probe("cmd://test -f /tmp/ready"),
            Ok(Probe::Command(_))
        ));
        assert!(matches!(
            parse_probe("tcp://127.0.0.1:44772"),
            Ok(Probe::Tcp(_, 44772))
        ));
        for bad in [
            "http://x",
            "tcp://x",
            "tcp://:1",
            "tcp://h:0",
            "cmd://  ",
            "tcp://a b:1",
        ] {
            assert!(parse_probe(bad).is_err(), "{bad}");
        }
    }
}
