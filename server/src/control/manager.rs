//! The sandbox lifecycle: create, pause, resume, renew, delete, the watch on each
//! sandbox's process tree, TTL expiry and recovery after a server restart.
//!
//! Every state change of one sandbox happens under that sandbox's lock, and is
//! written to the store before the function returns. A sandbox deleted through the
//! API is killed, recorded as Terminated (reason DELETED) and then hidden: later
//! requests for it get 404, like upstream's Docker runtime. Sandboxes that end on
//! their own (entrypoint exit, TTL) stay visible as Terminated/Failed until deleted.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use super::error::{ApiError, ApiResult};
use super::models::{
    CreateSandboxRequest, SandboxRecord, SandboxState, SandboxStatus, SnapshotState,
};
use super::runtime::{self, Isolation};
use super::{agent_client, security, snapshots, Control};

const METADATA_RESERVED_PREFIX: &str = "opensandbox.io/";
const DEFAULT_SNAPSHOT_ENTRYPOINT: [&str; 3] = ["tail", "-f", "/dev/null"];
/// Status reason of a sandbox whose image is being pulled.
const PULLING_IMAGE: &str = "PULLING_IMAGE";

/// How long create waits for the agent to answer before returning `Pending`.
const READY_WAIT: Duration = Duration::from_secs(10);
/// How long a sandbox still Pending after `READY_WAIT` may take to become Running.
const LATE_READY_WAIT: Duration = Duration::from_secs(300);

/// Per-sandbox locks and expiry times; the store remains the source of truth.
#[derive(Default)]
pub struct Registry {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    expiries: Mutex<HashMap<String, DateTime<Utc>>>,
}

impl Registry {
    pub fn lock_for(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(id.to_string()).or_default().clone()
    }

    pub(super) fn set_expiry(&self, id: &str, at: Option<DateTime<Utc>>) {
        let mut map = self.expiries.lock().unwrap_or_else(|p| p.into_inner());
        match at {
            Some(at) => {
                map.insert(id.to_string(), at);
            }
            None => {
                map.remove(id);
            }
        }
    }

    fn due(&self, now: DateTime<Utc>) -> Vec<String> {
        let map = self.expiries.lock().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .filter(|(_, at)| **at <= now)
            .map(|(id, _)| id.clone())
            .collect()
    }
}

pub fn check_metadata_key(key: &str) -> ApiResult<()> {
    if key.is_empty() {
        return Err(ApiError::bad_request(
            "SANDBOX::INVALID_METADATA_LABEL",
            "metadata keys must not be empty",
        ));
    }
    if key.starts_with(METADATA_RESERVED_PREFIX) {
        return Err(ApiError::bad_request(
            "SANDBOX::INVALID_METADATA_LABEL",
            format!("metadata key {key:?} uses the reserved prefix {METADATA_RESERVED_PREFIX}"),
        ));
    }
    Ok(())
}

impl Control {
    /// The secret of sandbox `id`'s execd proxy route, handed out by the endpoint API.
    pub fn execd_token(&self, id: &str) -> String {
        self.token_key.token("execd", id)
    }

    /// The secret of sandbox `id`'s egress proxy route.
    pub fn egress_token(&self, id: &str) -> String {
        self.token_key.token("egress", id)
    }

    /// A sandbox visible through the API.
    pub fn sandbox(&self, id: &str) -> ApiResult<SandboxRecord> {
        match self.store.get_sandbox(id)? {
            Some(rec) if !rec.deleted => Ok(rec),
            _ => Err(ApiError::sandbox_not_found(id)),
        }
    }

    fn save(&self, record: &SandboxRecord) -> ApiResult<()> {
        self.store.put_sandbox(record)?;
        Ok(())
    }

    pub async fn create_sandbox(
        self: &Arc<Self>,
        req: CreateSandboxRequest,
    ) -> ApiResult<SandboxRecord> {
        // `image.auth` is used for the pull only: the record (stored, echoed) drops it.
        let auth = req.image.as_ref().and_then(|i| i.auth.clone());
        let record = self.validate_create(req)?;
        let id = record.id.clone();
        let mut volumes = record.volumes.clone();
        let launched = self.launch(record, auth).await;
        // A create that fails leaves no pvc claim it made behind.
        let failed = match &launched {
            Ok(r) => r.status.state == SandboxState::Failed,
            Err(_) => true,
        };
        if failed && !volumes.is_empty() {
            super::volumes::remove_created(&self.data_dir, &mut volumes);
            let lock = self.registry.lock_for(&id);
            let _guard = lock.lock().await;
            if let Ok(Some(mut stored)) = self.store.get_sandbox(&id) {
                stored.volumes = volumes;
                self.save(&stored)?;
            }
        }
        launched
    }

    /// Everything after validation: the image, the files, the runtime, readiness and
    /// the `preStart` hook.
    async fn launch(
        self: &Arc<Self>,
        mut record: SandboxRecord,
        auth: Option<super::models::ImageAuth>,
    ) -> ApiResult<SandboxRecord> {
        let started = std::time::Instant::now();
        let mut pull = record.clone();
        if let Some(image) = pull.image.as_mut() {
            image.auth = auth;
        }
        // A registry pull can take long: the sandbox is listed as Pending with the
        // pull's progress meanwhile (and a failed pull leaves no sandbox behind).
        let pulling = self.runtime.pulls_image(&record);
        let progress = match &pulling {
            Some(uri) => {
                record.transition(
                    SandboxState::Pending,
                    PULLING_IMAGE,
                    Some(format!("pulling image {uri}")),
                );
                self.save(&record)?;
                Some(self.pull_progress(&record.id, uri))
            }
            None => None,
        };
        let prepared = self.runtime.prepare_image(&pull, progress).await;
        drop(pull);
        if pulling.is_some() {
            let current = self.store.get_sandbox(&record.id)?;
            if let Err(err) = prepared {
                record.deleted = true;
                self.save(&record)?;
                return Err(err);
            }
            match current {
                // Deleted while its image was pulled.
                Some(r) if r.deleted => return Err(ApiError::sandbox_not_found(&record.id)),
                None => return Err(ApiError::sandbox_not_found(&record.id)),
                _ => {}
            }
        } else {
            prepared?;
        }
        // A container of this image started ahead of the request, if one is ready.
        if let Some(warm) = self.take_warm(&record) {
            let listed_as = pulling.is_some().then(|| record.id.clone());
            let record = self.start_warm(record, warm).await?;
            // The sandbox has the warm container's id: the record listed (Pending)
            // during the pull under the request's id goes.
            if let Some(old) = listed_as.and_then(|id| self.store.get_sandbox(&id).ok().flatten()) {
                let mut old = old;
                old.deleted = true;
                self.save(&old)?;
            }
            if record.status.state.is_terminal() {
                return Ok(record);
            }
            return self.until_ready(record, started).await;
        }
        let paths = self.runtime.paths(&record.id);
        self.runtime.prepare(&paths)?;
        if let Some(snapshot_id) = &record.snapshot_id {
            let from = self.snapshot_dir(snapshot_id);
            let to = paths.fs.clone();
            tokio::task::spawn_blocking(move || snapshots::restore(&from, &to))
                .await
                .context("restoring a snapshot")??;
        }
        if let Some(template_id) = &record.template_id {
            let from = self.template_dir(template_id);
            let to = paths.fs.clone();
            tokio::task::spawn_blocking(move || snapshots::restore(&from, &to))
                .await
                .context("copying a template's files")??;
        }
        let lock = self.registry.lock_for(&record.id);
        let guard = lock.lock().await;
        record.transition(SandboxState::Pending, "CREATING", None);
        self.save(&record)?;
        let child = match self.runtime.spawn(&record) {
            Ok(child) => child,
            Err(err) => {
                record.transition(
                    SandboxState::Failed,
                    "PROVISIONING_ERROR",
                    Some(format!("{err:#}")),
                );
                self.save(&record)?;
                return Ok(record);
            }
        };
        record.pid = child.id().and_then(|p| i32::try_from(p).ok());
        record.pid_start = record.pid.and_then(runtime::process_start_time);
        self.save(&record)?;
        self.registry.set_expiry(&record.id, record.expires_at);
        self.watch_child(record.id.clone(), child);
        drop(guard);
        self.until_ready(record, started).await
    }

    /// Waits for a started sandbox's agent: `Running` once it answers, else (after
    /// [`READY_WAIT`]) `Pending`, watched in the background for [`LATE_READY_WAIT`].
    async fn until_ready(
        self: &Arc<Self>,
        record: SandboxRecord,
        started: std::time::Instant,
    ) -> ApiResult<SandboxRecord> {
        let lock = self.registry.lock_for(&record.id);
        let spawned_ms = started.elapsed().as_secs_f64() * 1000.0;

        let ready = self.wait_ready(&record, READY_WAIT).await;
        // Where create latency goes: before the runtime runs, and until the agent answers.
        tracing::debug!(
            sandbox = record.id,
            spawned_ms,
            ready_ms = started.elapsed().as_secs_f64() * 1000.0,
            ready,
            "sandbox started"
        );
        if !ready {
            // Answer now with Pending, and keep watching so the sandbox still becomes
            // Running when a slow agent comes up (after its preStart hook).
            let control = Arc::clone(self);
            let pending = record.clone();
            tokio::spawn(async move {
                if control.wait_ready(&pending, LATE_READY_WAIT).await {
                    if let Err(reason) = control.run_pre_start(&pending).await {
                        control.fail_pre_start(&pending.id, &reason).await;
                        return;
                    }
                    if let Err(err) = control.mark_running(&pending).await {
                        tracing::error!(sandbox = pending.id, error = %err, "marking a sandbox Running");
                    }
                }
            });
            let _guard = lock.lock().await;
            return Ok(self.store.get_sandbox(&record.id)?.unwrap_or(record));
        }
        // Hooks run before the sandbox is reported Running; a failed preStart fails
        // the create (the record stays, Failed, with the hook's output in diagnostics).
        if let Err(reason) = self.run_pre_start(&record).await {
            self.fail_pre_start(&record.id, &reason).await;
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "SANDBOX::PRESTART_FAILED",
                format!("sandbox {}: {reason}", record.id),
            ));
        }
        let _guard = lock.lock().await;
        let mut record = self.store.get_sandbox(&record.id)?.unwrap_or(record);
        if record.status.state == SandboxState::Pending {
            record.transition(SandboxState::Running, "RUNNING", None);
            self.save(&record)?;
            self.start_periodic_hooks(&record);
        }
        Ok(record)
    }

    /// Stops a sandbox whose preStart hook failed and records why.
    async fn fail_pre_start(&self, id: &str, reason: &str) {
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let Ok(Some(mut record)) = self.store.get_sandbox(id) else {
            return;
        };
        self.terminate(&mut record, SandboxState::Failed, "PRESTART_FAILED", reason);
        if let Err(err) = self.save(&record) {
            tracing::error!(sandbox = id, error = %err, "recording a failed preStart");
        }
    }

    /// Writes a pull's progress into the Pending sandbox's status message.
    fn pull_progress(self: &Arc<Self>, id: &str, uri: &str) -> super::oci::registry::ProgressFn {
        let control = Arc::clone(self);
        let id = id.to_string();
        let uri = uri.to_string();
        Arc::new(move |p: super::oci::registry::Progress| {
            const MB: f64 = 1024.0 * 1024.0;
            let Ok(Some(mut record)) = control.store.get_sandbox(&id) else {
                return;
            };
            if record.deleted || record.status.reason.as_deref() != Some(PULLING_IMAGE) {
                return;
            }
            record.status.message = Some(format!(
                "pulling image {uri}: {:.0}/{:.0} MB",
                p.done as f64 / MB,
                p.total as f64 / MB
            ));
            if let Err(err) = control.store.put_sandbox(&record) {
                tracing::warn!(sandbox = id, error = %err, "recording a pull's progress");
            }
        })
    }

    async fn mark_running(self: &Arc<Self>, pending: &SandboxRecord) -> ApiResult<()> {
        let lock = self.registry.lock_for(&pending.id);
        let _guard = lock.lock().await;
        if let Some(mut record) = self.store.get_sandbox(&pending.id)? {
            if record.status.state == SandboxState::Pending {
                record.transition(SandboxState::Running, "RUNNING", None);
                self.save(&record)?;
                self.start_periodic_hooks(&record);
            }
        }
        Ok(())
    }

    fn validate_create(&self, req: CreateSandboxRequest) -> ApiResult<SandboxRecord> {
        let lifecycle = super::hooks::parse(req.lifecycle.as_ref())?;
        let template = match &req.template_id {
            Some(template_id) => Some(self.template_for_create_request(template_id, &req)?),
            None => None,
        };
        let mut req = req;
        if let Some(t) = &template {
            req.image = Some(super::models::ImageSpec {
                uri: t.image.clone(),
                auth: None,
            });
            req.entrypoint = Some(t.entrypoint.clone());
            req.env = Some(
                t.env
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone())))
                    .collect(),
            );
            req.resource_limits = Some(t.resource_limits.clone());
        }
        let entrypoint = match (&req.image, &req.snapshot_id) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(ApiError::invalid(
                    "exactly one of `image`, `snapshotId` and `templateId` must be given",
                ))
            }
            (Some(image), None) => {
                if image.uri.trim().is_empty() {
                    return Err(ApiError::invalid("`image.uri` must not be empty"));
                }
                req.entrypoint.clone().ok_or_else(|| {
                    ApiError::invalid("`entrypoint` is required when creating from an image")
                })?
            }
            (None, Some(snapshot_id)) => {
                let snapshot = self
                    .store
                    .get_snapshot(snapshot_id)?
                    .ok_or_else(|| ApiError::snapshot_not_found(snapshot_id))?;
                if snapshot.status.state != SnapshotState::Ready {
                    return Err(ApiError::bad_request(
                        "SNAPSHOT::NOT_READY",
                        format!(
                            "snapshot {snapshot_id} is {}, not Ready",
                            snapshot.status.state.as_str()
                        ),
                    ));
                }
                req.entrypoint.clone().unwrap_or_else(|| {
                    DEFAULT_SNAPSHOT_ENTRYPOINT
                        .iter()
                        .map(|s| s.to_string())
                        .collect()
                })
            }
        };
        if entrypoint.is_empty() || entrypoint[0].is_empty() {
            return Err(ApiError::invalid(
                "`entrypoint` must hold at least the program to run",
            ));
        }
        let expires_at = match req.timeout {
            None => None,
            Some(t) if t < self.min_timeout as i64 => {
                return Err(ApiError::invalid(format!(
                    "`timeout` must be at least {} seconds (or null for no expiry)",
                    self.min_timeout
                )))
            }
            Some(t) if self.max_timeout.is_some_and(|max| t as u64 > max) => {
                return Err(ApiError::invalid(format!(
                    "`timeout` {t} exceeds this server's maximum of {} seconds",
                    self.max_timeout.unwrap_or_default()
                )))
            }
            Some(t) => Some(expiry_after(t).ok_or_else(|| {
                ApiError::invalid(format!(
                    "`timeout` {t} is too large (at most {MAX_TIMEOUT_SECS} seconds)"
                ))
            })?),
        };
        let metadata = req.metadata.unwrap_or_default();
        for key in metadata.keys() {
            check_metadata_key(key)?;
        }
        if req.secure_access == Some(true) {
            return Err(ApiError::not_supported(
                "secureAccess is not supported by this server",
            ));
        }
        let credential_proxy = match &req.credential_proxy {
            None | Some(serde_json::Value::Null) => false,
            Some(value) => {
                #[derive(serde::Deserialize)]
                #[serde(deny_unknown_fields)]
                struct CredentialProxy {
                    #[serde(default)]
                    enabled: bool,
                }
                let parsed: CredentialProxy = serde_json::from_value(value.clone())
                    .map_err(|e| ApiError::invalid(format!("`credentialProxy`: {e}")))?;
                parsed.enabled
            }
        };
        // As upstream: the credential proxy works inside an egress policy.
        if credential_proxy && req.network_policy.is_none() {
            return Err(ApiError::invalid(
                "`credentialProxy.enabled` requires a `networkPolicy`",
            ));
        }
        let extensions = req.extensions.unwrap_or_default();
        if let Some(value) = extensions.get(super::runtime::OUTPUT_FRAMING_EXTENSION) {
            if super::runtime::parse_output_framing(value).is_none() {
                return Err(ApiError::invalid(format!(
                    "extension {}: {value:?} is not kept or lines",
                    super::runtime::OUTPUT_FRAMING_EXTENSION
                )));
            }
        }
        if extensions.contains_key("poolRef") {
            return Err(ApiError::bad_request(
                "SANDBOX::UNSUPPORTED_POOL_REF",
                "sandbox pools are not supported by this server",
            ));
        }
        if let Some(platform) = &req.platform {
            if platform.os != "linux" {
                return Err(ApiError::not_supported(format!(
                    "platform os {:?} is not supported (only linux)",
                    platform.os
                )));
            }
            if !matches!(platform.arch.as_str(), "amd64" | "arm64") {
                return Err(ApiError::invalid(format!(
                    "platform arch {:?} is not one of amd64, arm64",
                    platform.arch
                )));
            }
        }
        if let Some(policy) = &req.network_policy {
            for rule in policy.egress.iter().flatten() {
                if rule.target.trim().is_empty() {
                    return Err(ApiError::invalid("network rule targets must not be empty"));
                }
            }
        }
        let resource_requests = req.resource_requests.clone().unwrap_or_default();
        super::resources::validate_requests(
            &resource_requests,
            req.resource_limits.as_ref().unwrap_or(&BTreeMap::new()),
        )?;
        let env: BTreeMap<String, String> = req
            .env
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        if env.keys().any(|k| k.is_empty() || k.contains('=')) {
            return Err(ApiError::invalid(
                "env names must be non-empty and contain no `=`",
            ));
        }
        let mut image = req.image;
        if let Some(image) = image.as_mut() {
            image.auth = None;
        }
        // A restore runs on the image its snapshot's sandbox ran (the runtime's
        // `--default-image` only for snapshots that recorded none).
        if let Some(snapshot_id) = &req.snapshot_id {
            let recorded = snapshots::recorded_image(&self.snapshot_dir(snapshot_id))
                .with_context(|| format!("reading snapshot {snapshot_id}"))?;
            image = recorded.map(|uri| super::models::ImageSpec { uri, auth: None });
        }
        // Last: it may create pvc claims, which a later refusal would leave behind.
        let mut volumes = req.volumes.unwrap_or_default();
        if let Err(err) = self.validate_volumes(&mut volumes) {
            super::volumes::remove_created(&self.data_dir, &mut volumes);
            return Err(err);
        }
        let id = uuid::Uuid::new_v4().to_string();
        let execd_token_sha256 = security::sha256_hex(self.execd_token(&id).as_bytes());
        let egress_token_sha256 = security::sha256_hex(self.egress_token(&id).as_bytes());
        Ok(SandboxRecord {
            id,
            image,
            snapshot_id: req.snapshot_id,
            entrypoint,
            env,
            metadata,
            extensions,
            resource_limits: req.resource_limits.unwrap_or_default(),
            resource_requests,
            platform: req.platform,
            network_policy: req.network_policy,
            volumes,
            status: SandboxStatus {
                state: SandboxState::Pending,
                reason: None,
                message: None,
                last_transition_at: None,
            },
            created_at: Utc::now(),
            expires_at,
            execd_token_sha256,
            egress_token_sha256,
            pid: None,
            pid_start: None,
            isolation: self.runtime.isolation.name().to_string(),
            deleted: false,
            events: Vec::new(),
            template_id: template.map(|t| t.template_id),
            lifecycle,
            credential_proxy,
        })
    }

    /// Template mode (protocol.md §2.8): the template must be `Succeeded`, the request
    /// may name no other source nor anything the template fixes, and needs `timeout`.
    fn template_for_create_request(
        &self,
        template_id: &str,
        req: &CreateSandboxRequest,
    ) -> ApiResult<super::templates::TemplateRecord> {
        if req.image.is_some() || req.snapshot_id.is_some() {
            return Err(ApiError::invalid(
                "exactly one of `image`, `snapshotId` and `templateId` must be given",
            ));
        }
        let non_empty_map =
            |m: &Option<BTreeMap<String, String>>| m.as_ref().is_some_and(|m| !m.is_empty());
        let set = |v: &Option<serde_json::Value>| v.as_ref().is_some_and(|v| !v.is_null());
        let fixed = [
            (
                "entrypoint",
                req.entrypoint.as_ref().is_some_and(|e| !e.is_empty()),
            ),
            ("env", req.env.as_ref().is_some_and(|e| !e.is_empty())),
            ("resourceLimits", non_empty_map(&req.resource_limits)),
            ("resourceRequests", non_empty_map(&req.resource_requests)),
            (
                "volumes",
                req.volumes.as_ref().is_some_and(|v| !v.is_empty()),
            ),
            ("platform", req.platform.is_some()),
            ("credentialProxy", set(&req.credential_proxy)),
            ("secureAccess", req.secure_access == Some(true)),
            ("lifecycle", set(&req.lifecycle)),
        ];
        if let Some((field, _)) = fixed.iter().find(|(_, given)| *given) {
            return Err(ApiError::invalid(format!(
                "`{field}` cannot be set when creating from a template (`templateId`): the \
                 template fixes it"
            )));
        }
        if req.timeout.is_none() {
            return Err(ApiError::invalid(
                "`timeout` is required when creating from a template (`templateId`)",
            ));
        }
        self.template_for_create(template_id)
    }

    /// Checks every volume; host volumes get their resolved source as `host.path`
    /// (subPath folded in), so the mount uses the path that was checked.
    fn validate_volumes(&self, volumes: &mut [super::models::Volume]) -> ApiResult<()> {
        let mut names = std::collections::HashSet::new();
        for v in volumes.iter_mut() {
            if v.name.is_empty() || !names.insert(v.name.clone()) {
                return Err(ApiError::bad_request(
                    "VOLUME::INVALID_NAME",
                    format!("volume name {:?} is empty or used twice", v.name),
                ));
            }
            if !v.mount_path.starts_with('/') || v.mount_path.split('/').any(|s| s == "..") {
                return Err(ApiError::bad_request(
                    "VOLUME::INVALID_MOUNT_PATH",
                    format!("mountPath {:?} must be an absolute path", v.mount_path),
                ));
            }
            let backends = [v.host.is_some(), v.pvc.is_some(), v.ossfs.is_some()];
            if backends.iter().filter(|b| **b).count() != 1 {
                return Err(ApiError::bad_request(
                    "VOLUME::INVALID_BACKEND",
                    format!("volume {:?} needs exactly one of host, pvc, ossfs", v.name),
                ));
            }
            if v.ossfs.is_some() {
                return Err(super::volumes::ossfs_unsupported(&v.name));
            }
            if v.pvc.is_some() {
                if self.runtime.isolation == Isolation::None && v.read_only {
                    return Err(ApiError::not_supported(
                        "read-only volumes need isolation (the server runs with --isolation none)",
                    ));
                }
                super::volumes::resolve_pvc(&self.data_dir, v)?;
                continue;
            }
            let Some(host) = &v.host else {
                return Err(ApiError::not_supported(format!(
                    "volume {:?}: only host volumes are supported by this server",
                    v.name
                )));
            };
            if v.sub_path
                .as_deref()
                .is_some_and(|s| s.split('/').any(|p| p == ".."))
            {
                return Err(ApiError::bad_request(
                    "VOLUME::INVALID_SUB_PATH",
                    format!("volume {:?}: subPath must stay inside the volume", v.name),
                ));
            }
            let resolved = self.check_host_path(&v.name, &host.path, v.sub_path.as_deref())?;
            if self.runtime.isolation == Isolation::None && v.read_only {
                return Err(ApiError::not_supported(
                    "read-only volumes need isolation (the server runs with --isolation none)",
                ));
            }
            v.host = Some(super::models::HostVolume {
                path: resolved.to_string_lossy().into_owned(),
            });
            v.sub_path = None;
        }
        Ok(())
    }

    /// A host volume's source must be an absolute path without `.`/`..`, exist, and
    /// resolve (symlinks followed) to a path under one of `--allowed-host-path`.
    /// Returns the resolved path.
    pub fn check_host_path(
        &self,
        name: &str,
        path: &str,
        sub_path: Option<&str>,
    ) -> ApiResult<std::path::PathBuf> {
        if self.allowed_host_paths.is_empty() {
            return Err(ApiError::bad_request(
                "VOLUME::HOST_PATH_NOT_ALLOWED",
                format!(
                    "volume {name:?}: host volumes are disabled on this server (start it with \
                     --allowed-host-path DIR to allow host paths under DIR)"
                ),
            ));
        }
        let mut joined = path.to_string();
        if let Some(sub) = sub_path.filter(|s| !s.is_empty()) {
            joined = format!(
                "{}/{}",
                joined.trim_end_matches('/'),
                sub.trim_start_matches('/')
            );
        }
        let lexical = std::path::Path::new(&joined);
        let normal = joined.starts_with('/')
            && lexical.components().all(|c| {
                matches!(
                    c,
                    std::path::Component::RootDir | std::path::Component::Normal(_)
                )
            })
            && !joined.split('/').any(|s| s == "." || s == "..");
        if !normal {
            return Err(ApiError::bad_request(
                "VOLUME::INVALID_HOST_PATH",
                format!(
                    "volume {name:?}: host path {joined:?} must be absolute, without `.` or `..`"
                ),
            ));
        }
        let resolved = std::fs::canonicalize(lexical).map_err(|_| {
            ApiError::bad_request(
                "VOLUME::HOST_PATH_NOT_FOUND",
                format!("volume {name:?}: host path {joined} does not exist"),
            )
        })?;
        if !self
            .allowed_host_paths
            .iter()
            .any(|prefix| resolved.starts_with(prefix))
        {
            return Err(ApiError::bad_request(
                "VOLUME::HOST_PATH_NOT_ALLOWED",
                format!(
                    "volume {name:?}: host path {joined} (resolved: {}) is not under an \
                     --allowed-host-path of this server",
                    resolved.display()
                ),
            ));
        }
        Ok(resolved)
    }

    /// Pings the agent until it answers, the process dies, or the wait is over.
    async fn wait_ready(&self, record: &SandboxRecord, wait: Duration) -> bool {
        let socket = self.runtime.paths(&record.id).socket;
        let deadline = tokio::time::Instant::now() + wait;
        // A short fixed period: the agent is usually up within tens of milliseconds and
        // create latency is what clients feel; a failed connect costs microseconds.
        let delay = Duration::from_millis(2);
        while tokio::time::Instant::now() < deadline {
            if socket.exists() && agent_client::ping(&socket).await {
                return true;
            }
            if let Some(pid) = record.pid {
                if !runtime::is_alive(pid, record.pid_start) {
                    return false;
                }
            }
            tokio::time::sleep(delay).await;
        }
        false
    }

    /// Reaps our own child and records how the sandbox ended.
    pub(super) fn watch_child(self: &Arc<Self>, id: String, mut child: tokio::process::Child) {
        let control = Arc::clone(self);
        tokio::spawn(async move {
            let _ = child.wait().await;
            control.on_exit(&id).await;
        });
    }

    /// Watches a sandbox adopted after a restart (not our child: poll its pid).
    fn watch_adopted(self: &Arc<Self>, id: String, pid: i32, start: Option<u64>) {
        let control = Arc::clone(self);
        tokio::spawn(async move {
            while runtime::is_alive(pid, start) {
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            control.on_exit(&id).await;
        });
    }

    async fn on_exit(&self, id: &str) {
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let Ok(Some(mut record)) = self.store.get_sandbox(id) else {
            // A warm container that no create took (it ended, or was released).
            self.reap_warm(id);
            return;
        };
        self.registry.set_expiry(id, None);
        // Without a PID namespace, leftovers of the tree may still run.
        self.runtime.stop(id, record.pid.take());
        if !record.status.state.is_terminal() {
            let status_file = self.runtime.paths(id).status_file;
            match runtime::read_exit_status(&status_file) {
                Some(st) if st.exit_code == Some(0) => record.transition(
                    SandboxState::Terminated,
                    "ENTRYPOINT_EXITED",
                    Some("entrypoint exited with code 0".into()),
                ),
                Some(st) => {
                    let how = match (st.exit_code, st.signal) {
                        (Some(code), _) => format!("entrypoint exited with code {code}"),
                        (None, Some(sig)) => format!("entrypoint was killed by signal {sig}"),
                        (None, None) => "entrypoint exited".to_string(),
                    };
                    record.transition(SandboxState::Failed, "ENTRYPOINT_EXITED", Some(how));
                }
                None => record.transition(
                    SandboxState::Failed,
                    "SANDBOX_EXITED",
                    Some(
                        "the sandbox's processes exited unexpectedly (see diagnostics logs)".into(),
                    ),
                ),
            }
            tracing::info!(
                sandbox = id,
                state = record.status.state.as_str(),
                "sandbox ended"
            );
        }
        if let Err(err) = self.store.put_sandbox(&record) {
            tracing::error!(
                sandbox = id,
                error = format!("{err:#}"),
                "recording a sandbox's end"
            );
        }
    }

    /// Stops the sandbox's processes and records `state`/`reason`.
    fn terminate(
        &self,
        record: &mut SandboxRecord,
        state: SandboxState,
        reason: &str,
        message: &str,
    ) {
        if !record.status.state.is_terminal() {
            record.transition(state, reason, Some(message.to_string()));
        }
        self.runtime.stop(&record.id, record.pid.take());
        self.registry.set_expiry(&record.id, None);
    }

    pub async fn delete_sandbox(&self, id: &str) -> ApiResult<()> {
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let mut record = self.sandbox(id)?;
        self.terminate(
            &mut record,
            SandboxState::Terminated,
            "DELETED",
            "deleted through the API",
        );
        record.deleted = true;
        self.save(&record)?;
        super::volumes::cleanup(&self.data_dir, &mut record.volumes);
        if let Err(err) = self.store.delete_vault(id) {
            tracing::warn!(sandbox = id, error = %err, "removing a deleted sandbox's credential vault");
        }
        let base = self.runtime.paths(id).base;
        tokio::task::spawn_blocking(move || {
            if let Err(err) = std::fs::remove_dir_all(&base) {
                tracing::warn!(dir = %base.display(), error = %err, "removing a deleted sandbox's files");
            }
        });
        Ok(())
    }

    pub async fn pause_sandbox(&self, id: &str) -> ApiResult<()> {
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let mut record = self.sandbox(id)?;
        if record.status.state != SandboxState::Running {
            return Err(ApiError::conflict(
                "SANDBOX::NOT_RUNNING",
                format!(
                    "sandbox {id} is {}, not Running",
                    record.status.state.as_str()
                ),
            ));
        }
        self.runtime
            .freeze(id, record.pid, true)
            .map_err(ApiError::from_anyhow)?;
        record.transition(SandboxState::Paused, "PAUSED", None);
        self.save(&record)
    }

    pub async fn resume_sandbox(&self, id: &str) -> ApiResult<()> {
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let mut record = self.sandbox(id)?;
        if record.status.state != SandboxState::Paused {
            return Err(ApiError::conflict(
                "SANDBOX::NOT_PAUSED",
                format!(
                    "sandbox {id} is {}, not Paused",
                    record.status.state.as_str()
                ),
            ));
        }
        self.runtime
            .freeze(id, record.pid, false)
            .map_err(ApiError::from_anyhow)?;
        record.transition(SandboxState::Running, "RUNNING", None);
        self.save(&record)
    }

    pub async fn renew_sandbox(&self, id: &str, expires_at: &str) -> ApiResult<DateTime<Utc>> {
        let at = DateTime::parse_from_rfc3339(expires_at)
            .map_err(|e| {
                ApiError::invalid(format!("`expiresAt` {expires_at:?} is not RFC 3339: {e}"))
            })?
            .with_timezone(&Utc);
        let now = Utc::now();
        if at <= now {
            return Err(ApiError::bad_request(
                "SANDBOX::INVALID_EXPIRATION",
                "`expiresAt` must be in the future",
            ));
        }
        if let Some(max) = self.max_timeout {
            if expiry_after(i64::try_from(max).unwrap_or(i64::MAX)).is_some_and(|limit| at > limit)
            {
                return Err(ApiError::bad_request(
                    "SANDBOX::INVALID_EXPIRATION",
                    format!("`expiresAt` is more than {max} seconds away"),
                ));
            }
        }
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let mut record = self.sandbox(id)?;
        if record.status.state.is_terminal() {
            return Err(ApiError::conflict(
                "SANDBOX::NOT_RUNNING",
                format!("sandbox {id} has ended ({})", record.status.state.as_str()),
            ));
        }
        if record.expires_at.is_none() {
            return Err(ApiError::conflict(
                "SANDBOX::INVALID_EXPIRATION",
                format!("sandbox {id} was created without a timeout and never expires"),
            ));
        }
        record.expires_at = Some(at);
        self.save(&record)?;
        self.registry.set_expiry(id, Some(at));
        Ok(at)
    }

    pub async fn patch_metadata(
        &self,
        id: &str,
        patch: serde_json::Map<String, serde_json::Value>,
    ) -> ApiResult<SandboxRecord> {
        for (key, value) in &patch {
            check_metadata_key(key)?;
            if !(value.is_string() || value.is_null()) {
                return Err(ApiError::invalid(format!(
                    "metadata value of {key:?} must be a string or null"
                )));
            }
        }
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let mut record = self.sandbox(id)?;
        for (key, value) in patch {
            match value {
                serde_json::Value::String(v) => {
                    record.metadata.insert(key, v);
                }
                _ => {
                    record.metadata.remove(&key);
                }
            }
        }
        self.save(&record)?;
        Ok(record)
    }

    /// Kills sandboxes whose expiry has passed; runs for the life of the server.
    pub async fn expire_loop(self: Arc<Self>) {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            for id in self.registry.due(Utc::now()) {
                if let Err(err) = self.expire(&id).await {
                    tracing::error!(sandbox = id, error = %err, "expiring a sandbox");
                }
            }
        }
    }

    async fn expire(&self, id: &str) -> ApiResult<()> {
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let Some(mut record) = self.store.get_sandbox(id)? else {
            self.registry.set_expiry(id, None);
            return Ok(());
        };
        // Renewed meanwhile: the registry already holds the new time.
        if record.expires_at.is_some_and(|at| at > Utc::now()) {
            return Ok(());
        }
        tracing::info!(sandbox = id, "sandbox expired");
        self.terminate(
            &mut record,
            SandboxState::Terminated,
            "TTL_EXPIRED",
            "the sandbox's timeout expired",
        );
        // Expiry ends the sandbox like a delete does: its claims go too.
        super::volumes::cleanup(&self.data_dir, &mut record.volumes);
        self.save(&record)
    }

    /// Re-attaches to sandboxes that outlived a restart; records the others as failed.
    pub async fn recover(self: &Arc<Self>) -> anyhow::Result<()> {
        self.recover_warm()?;
        self.recover_templates()?;
        for mut record in self.store.all_sandboxes()? {
            if record.deleted || record.status.state.is_terminal() {
                continue;
            }
            let alive = record
                .pid
                .is_some_and(|pid| runtime::is_alive(pid, record.pid_start));
            let socket = self.runtime.paths(&record.id).socket;
            let answers = alive
                && (record.status.state == SandboxState::Paused
                    || agent_client::ping(&socket).await);
            match (alive, answers, record.pid) {
                (true, true, Some(pid)) => {
                    tracing::info!(sandbox = record.id, pid, "adopted a running sandbox");
                    if record.status.state == SandboxState::Pending {
                        record.transition(SandboxState::Running, "RUNNING", None);
                        self.store.put_sandbox(&record)?;
                    }
                    self.registry.set_expiry(&record.id, record.expires_at);
                    self.watch_adopted(record.id.clone(), pid, record.pid_start);
                    self.start_periodic_hooks(&record);
                }
                _ => {
                    // Also when no pid was recorded (the server died during create):
                    // an OCI runtime finds the container by the sandbox id.
                    self.runtime
                        .stop(&record.id, record.pid.take().filter(|_| alive));
                    record.transition(
                        SandboxState::Failed,
                        "SERVER_RESTARTED",
                        Some("sandbox processes did not survive the server restart".into()),
                    );
                    self.store.put_sandbox(&record)?;
                    tracing::warn!(sandbox = record.id, "sandbox lost across a restart");
                }
            }
        }
        Ok(())
    }

    pub fn snapshot_dir(&self, snapshot_id: &str) -> std::path::PathBuf {
        self.data_dir.join("snapshots").join(snapshot_id)
    }
}

/// Largest `timeout` accepted: 100 years, far below where time arithmetic overflows.
pub const MAX_TIMEOUT_SECS: i64 = 100 * 366 * 86_400;

/// Now plus `secs` seconds; `None` when out of range (negative or above
/// [`MAX_TIMEOUT_SECS`]), never a panic.
pub fn expiry_after(secs: i64) -> Option<DateTime<Utc>> {
    if !(0..=MAX_TIMEOUT_SECS).contains(&secs) {
        return None;
    }
    Utc::now().checked_add_signed(chrono::TimeDelta::try_seconds(secs)?)
}

/// 409 for a proxied request to a sandbox that cannot take it.
pub fn not_serving(record: &SandboxRecord) -> Option<ApiError> {
    match record.status.state {
        SandboxState::Running | SandboxState::Pending => None,
        SandboxState::Paused => Some(ApiError::new(
            StatusCode::CONFLICT,
            "SANDBOX::PAUSED",
            format!("sandbox {} is paused; resume it first", record.id),
        )),
        state => Some(ApiError::new(
            StatusCode::CONFLICT,
            "SANDBOX::NOT_RUNNING",
            format!("sandbox {} is {}", record.id, state.as_str()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_arithmetic_never_panics() {
        assert!(expiry_after(60).is_some());
        assert!(expiry_after(MAX_TIMEOUT_SECS).is_some());
        for secs in [
            -1,
            MAX_TIMEOUT_SECS + 1,
            9_000_000_000_000,
            i64::MAX,
            i64::MIN,
        ] {
            assert!(expiry_after(secs).is_none(), "{secs}");
        }
    }

    #[test]
    fn reserved_metadata_prefix_is_rejected() {
        assert!(check_metadata_key("team").is_ok());
        assert!(check_metadata_key("opensandbox.io/x").is_err());
        assert!(check_metadata_key("").is_err());
    }
}
