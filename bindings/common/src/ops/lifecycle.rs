//! `config.*`, `manager.new`, `release`, `sandbox.*` and `manager.*`: configuration
//! handles, creation, readiness, lifecycle calls, endpoints, snapshots, egress and
//! diagnostics.

use opensandbox_core::models::{
    CredentialProxyConfig, HostVolume, ImageAuth, ImageSpec, LifecycleHook, NetworkPolicy,
    NetworkRule, OssfsVolume, PeriodicLifecycleHook, PlatformSpec, PvcVolume, SandboxFilter,
    SandboxLifecycle, SnapshotFilter, Volume,
};
use opensandbox_core::{ConnectOptions, Sandbox, SandboxCreateOptions};
use serde_json::{json, Value};

use crate::args::*;
use crate::convert;
use crate::error::{OpError, OpResult};
use crate::session::Session;

fn rules(r: &[RuleArgs]) -> Vec<NetworkRule> {
    r.iter()
        .map(|r| NetworkRule {
            action: r.action.clone(),
            target: r.target.clone(),
        })
        .collect()
}

fn volume(op: &str, v: &VolumeArgs) -> Result<Volume, OpError> {
    let backends = [v.host.is_some(), v.pvc.is_some(), v.ossfs.is_some()];
    if backends.iter().filter(|b| **b).count() != 1 {
        return Err(OpError::invalid(
            op,
            format!(
                "{op}: volume `{}` needs exactly one of host, pvc, ossfs",
                v.name
            ),
        ));
    }
    Ok(Volume {
        name: v.name.clone(),
        mount_path: v.mount_path.clone(),
        read_only: v.read_only,
        sub_path: v.sub_path.clone(),
        host: v.host.as_ref().map(|h| HostVolume {
            path: h.path.clone(),
        }),
        pvc: v.pvc.as_ref().map(|p| PvcVolume {
            claim_name: p.claim_name.clone(),
            create_if_not_exists: p.create_if_not_exists,
            delete_on_sandbox_termination: p.delete_on_sandbox_termination,
            storage_class: p.storage_class.clone(),
            storage: p.storage.clone(),
            access_modes: p.access_modes.clone(),
        }),
        ossfs: v.ossfs.as_ref().map(|o| OssfsVolume {
            bucket: o.bucket.clone(),
            endpoint: o.endpoint.clone(),
            access_key_id: o.access_key_id.clone(),
            access_key_secret: o.access_key_secret.clone(),
            version: o.version.clone(),
            options: o.options.clone(),
        }),
    })
}

fn create_options(op: &str, a: &CreateArgs) -> Result<SandboxCreateOptions, OpError> {
    let mut opts = SandboxCreateOptions::default();
    if a.image_auth.is_some() && a.image.is_none() {
        return Err(OpError::invalid(
            op,
            format!("{op}: `image_auth` needs `image`"),
        ));
    }
    if let Some(uri) = &a.image {
        opts.image = Some(ImageSpec {
            uri: uri.clone(),
            auth: a.image_auth.as_ref().map(|x| ImageAuth {
                username: x.username.clone(),
                password: x.password.clone(),
            }),
        });
    }
    opts.platform = a.platform.as_ref().map(|p| PlatformSpec {
        os: p.os.clone(),
        arch: p.arch.clone(),
    });
    opts.credential_proxy = a
        .credential_proxy
        .as_ref()
        .map(|c| CredentialProxyConfig { enabled: c.enabled });
    opts.volumes = a
        .volumes
        .iter()
        .map(|v| volume(op, v))
        .collect::<Result<_, _>>()?;
    opts.snapshot_id = a.snapshot_id.clone();
    if let Some(e) = &a.entrypoint {
        opts.entrypoint = e.clone();
    }
    if let Some(t) = a.timeout_s {
        // Present and null = manual cleanup; absent = the SDK default.
        opts.timeout = t.map(|t| secs(op, "timeout_s", t)).transpose()?;
    }
    if let Some(t) = a.ready_timeout_s {
        opts.ready_timeout = secs(op, "ready_timeout_s", t)?;
    }
    if let Some(t) = a.health_check_polling_interval_s {
        opts.health_check_polling_interval = secs(op, "health_check_polling_interval_s", t)?;
    }
    opts.env = a.env.clone();
    opts.metadata = a.metadata.clone();
    if let Some(r) = &a.resource {
        opts.resource = r.clone();
    }
    opts.extensions = a.extensions.clone();
    if let Some(p) = &a.network_policy {
        opts.network_policy = Some(NetworkPolicy {
            default_action: p.default_action.clone(),
            egress: rules(&p.egress),
        });
    }
    opts.secure_access = a.secure_access;
    opts.skip_health_check = a.skip_health_check;
    opts.resource_requests = a.resource_requests.clone();
    opts.template_id = a.template_id.clone();
    opts.lifecycle = a.lifecycle.as_ref().map(|l| SandboxLifecycle {
        pre_start: l.pre_start.as_ref().map(|h| LifecycleHook {
            command: h.command.clone(),
            timeout_seconds: h.timeout_seconds,
        }),
        periodic: l
            .periodic
            .iter()
            .map(|h| PeriodicLifecycleHook {
                name: h.name.clone(),
                schedule: h.schedule.clone(),
                command: h.command.clone(),
                timeout_seconds: h.timeout_seconds,
            })
            .collect(),
    });
    if opts.template_id.is_some() {
        // The template fixes the entrypoint and the limits: the SDK defaults would only
        // be refused by the server.
        if a.entrypoint.is_some() || a.resource.is_some() {
            return Err(OpError::invalid(
                op,
                format!("{op}: `entrypoint` and `resource` cannot go with `template_id`"),
            ));
        }
        opts.entrypoint = Vec::new();
        opts.resource = Default::default();
    }
    Ok(opts)
}

fn connect_options(
    op: &str,
    timeout: Option<f64>,
    polling: Option<f64>,
    skip: bool,
) -> Result<ConnectOptions, OpError> {
    let mut opts = ConnectOptions::default();
    if let Some(t) = timeout {
        opts.timeout = secs(op, "timeout", t)?;
    }
    if let Some(t) = polling {
        opts.health_check_polling_interval = secs(op, "health_check_polling_interval_s", t)?;
    }
    opts.skip_health_check = skip;
    Ok(opts)
}

fn opened(s: &Session, sandbox: &Sandbox, is_base: bool) -> Value {
    let handle = s.keep(sandbox, is_base);
    json!({"id": sandbox.id(), "handle": handle, "origin": sandbox.origin()})
}

fn renewed(r: &opensandbox_core::models::RenewResponse) -> Value {
    json!({"expires_at": r.expires_at.map(|t| t.to_rfc3339())})
}

/// PolicyStatus: `{status, mode}` (PROTOCOL.md) plus `enforcement_mode`, `reason` and
/// `policy` (added 2026-12-01; `policy` is set by GETs only).
fn policy_status(p: &opensandbox_core::models::PolicyStatus) -> Value {
    json!({
        "status": p.status,
        "mode": p.mode,
        "enforcement_mode": p.enforcement_mode,
        "reason": p.reason,
        "policy": p.policy.as_ref().map(convert::network_policy),
    })
}

/// `config.new` → `{handle}`.
pub async fn config_new(s: &Session, a: ConnectionArgs) -> OpResult {
    Ok(json!({"handle": s.new_config("config.new", &a)?}))
}

/// `config.info` → `{domain, base_url, api_key}`.
pub async fn config_info(s: &Session, a: ConnectionOnly) -> OpResult {
    let (cfg, _) = s.config("config.info", a.connection.as_ref())?;
    Ok(json!({"domain": cfg.domain(), "base_url": cfg.base_url(), "api_key": cfg.api_key()}))
}

/// `manager.new` → `{handle}`.
pub async fn manager_new(s: &Session, a: ConnectionOnly) -> OpResult {
    Ok(json!({"handle": s.new_manager("manager.new", a.connection.as_ref())?}))
}

/// `manifest` → the ops manifest (as `ops_manifest()`), for hosts whose tests check
/// the ops and keys they send.
pub async fn manifest(_s: &Session, _a: NoArgs) -> OpResult {
    let m = super::manifest().map_err(|e| OpError::internal("manifest", e))?;
    serde_json::to_value(m).map_err(|e| OpError::internal("manifest", e.to_string()))
}

/// `release` → `{released}`.
pub async fn release(s: &Session, a: ReleaseArgs) -> OpResult {
    Ok(json!({"released": s.release(a.handle)}))
}

/// `sandbox.create` → `{id, handle}`.
pub async fn sandbox_create(s: &Session, a: CreateArgs) -> OpResult {
    const OP: &str = "sandbox.create";
    let (cfg, is_base) = s.config(OP, a.connection.as_ref())?;
    let sandbox = Sandbox::create(cfg, create_options(OP, &a)?).await?;
    Ok(opened(s, &sandbox, is_base))
}

/// `sandbox.connect` → `{id, handle}`.
pub async fn sandbox_connect(s: &Session, a: ConnectArgs) -> OpResult {
    const OP: &str = "sandbox.connect";
    let (cfg, is_base) = s.config(OP, a.connection.as_ref())?;
    let opts = connect_options(
        OP,
        a.connect_timeout_s,
        a.health_check_polling_interval_s,
        a.skip_health_check,
    )?;
    let sandbox = Sandbox::connect(cfg, &a.sandbox_id, opts).await?;
    Ok(opened(s, &sandbox, is_base))
}

/// `sandbox.resume` (server resume + readiness) → `{id, handle}`.
pub async fn sandbox_resume(s: &Session, a: ResumeArgs) -> OpResult {
    const OP: &str = "sandbox.resume";
    let (cfg, is_base) = s.config(OP, a.connection.as_ref())?;
    let opts = connect_options(
        OP,
        a.resume_timeout_s,
        a.health_check_polling_interval_s,
        a.skip_health_check,
    )?;
    let sandbox = Sandbox::resume(cfg, &a.sandbox_id, opts).await?;
    Ok(opened(s, &sandbox, is_base))
}

/// `sandbox.info` → `{id}` (no request).
pub async fn sandbox_info(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.info", &a).await?;
    Ok(json!({"id": sb.id()}))
}

/// `sandbox.get_info` → SandboxInfo.
pub async fn sandbox_get_info(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_info", &a).await?;
    Ok(convert::sandbox_info(&sb.get_info().await?))
}

/// `sandbox.is_healthy` → `{healthy}`.
pub async fn sandbox_is_healthy(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.is_healthy", &a).await?;
    Ok(json!({"healthy": sb.is_healthy().await}))
}

/// `sandbox.renew` → `{expires_at}`.
pub async fn sandbox_renew(s: &Session, a: RenewArgs) -> OpResult {
    const OP: &str = "sandbox.renew";
    let sb = s.sandbox(OP, &a).await?;
    Ok(renewed(&sb.renew(secs(OP, "seconds", a.seconds)?).await?))
}

/// `sandbox.patch_metadata` → SandboxInfo.
pub async fn sandbox_patch_metadata(s: &Session, a: PatchMetadataArgs) -> OpResult {
    let sb = s.sandbox("sandbox.patch_metadata", &a).await?;
    Ok(convert::sandbox_info(&sb.patch_metadata(&a.patch).await?))
}

/// `sandbox.pause` → null.
pub async fn sandbox_pause(s: &Session, a: SandboxArgs) -> OpResult {
    s.sandbox("sandbox.pause", &a).await?.pause().await?;
    Ok(Value::Null)
}

/// `sandbox.kill` → null. A sandbox named by id is forgotten.
pub async fn sandbox_kill(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.kill", &a).await?;
    sb.kill().await?;
    if matches!(a.sandbox, SandboxRef::Id(_)) && a.connection.is_none() {
        s.forget(sb.id());
    }
    Ok(Value::Null)
}

/// `sandbox.get_endpoint` → `{endpoint, headers}`.
pub async fn sandbox_get_endpoint(s: &Session, a: EndpointArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_endpoint", &a).await?;
    Ok(convert::endpoint(&sb.get_endpoint(a.port).await?))
}

/// `sandbox.get_signed_endpoint` → `{endpoint, headers}`.
pub async fn sandbox_get_signed_endpoint(s: &Session, a: SignedEndpointArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_signed_endpoint", &a).await?;
    Ok(convert::endpoint(
        &sb.get_signed_endpoint(a.port, a.expires).await?,
    ))
}

/// `sandbox.get_metrics` → Metrics.
pub async fn sandbox_get_metrics(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_metrics", &a).await?;
    Ok(convert::metrics(&sb.get_metrics().await?))
}

/// `sandbox.create_snapshot` → SnapshotInfo.
pub async fn sandbox_create_snapshot(s: &Session, a: CreateSnapshotArgs) -> OpResult {
    let sb = s.sandbox("sandbox.create_snapshot", &a).await?;
    Ok(convert::snapshot(
        &sb.create_snapshot(a.name.as_deref()).await?,
    ))
}

/// `sandbox.get_egress_policy` → `{default_action, egress}`.
pub async fn sandbox_get_egress_policy(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_egress_policy", &a).await?;
    Ok(convert::network_policy(&sb.get_egress_policy().await?))
}

/// `sandbox.get_egress_status` → PolicyStatus with the current `policy` (the egress
/// sidecar's full answer; `sandbox.get_egress_policy` returns the policy alone).
pub async fn sandbox_get_egress_status(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_egress_status", &a).await?;
    Ok(policy_status(&sb.egress().await?.get_policy().await?))
}

/// `sandbox.ping` → null once execd answers (one request, no retries, bounded by the
/// request timeout).
pub async fn sandbox_ping(s: &Session, a: SandboxArgs) -> OpResult {
    let sb = s.sandbox("sandbox.ping", &a).await?;
    sb.execd().ping(sb.config().request_timeout()).await?;
    Ok(Value::Null)
}

/// `sandbox.wait_until_ready` → null once execd answers; `ready_timeout` after
/// `timeout_s` (default 30 s) of failed checks `polling_interval_s` (default 0.2 s)
/// apart.
pub async fn sandbox_wait_until_ready(s: &Session, a: ReadyArgs) -> OpResult {
    const OP: &str = "sandbox.wait_until_ready";
    let sb = s.sandbox(OP, &a).await?;
    let timeout = secs(OP, "timeout_s", a.timeout_s.unwrap_or(30.0))?;
    let interval = secs(
        OP,
        "polling_interval_s",
        a.polling_interval_s.unwrap_or(0.2),
    )?;
    sb.wait_until_ready(timeout, interval, None).await?;
    Ok(Value::Null)
}

/// `sandbox.patch_egress_rules` → `{status, mode}`.
pub async fn sandbox_patch_egress_rules(s: &Session, a: PatchRulesArgs) -> OpResult {
    let sb = s.sandbox("sandbox.patch_egress_rules", &a).await?;
    Ok(policy_status(
        &sb.patch_egress_rules(&rules(&a.rules)).await?,
    ))
}

/// `sandbox.delete_egress_rules` → `{status, mode}`.
pub async fn sandbox_delete_egress_rules(s: &Session, a: DeleteRulesArgs) -> OpResult {
    let sb = s.sandbox("sandbox.delete_egress_rules", &a).await?;
    let refs: Vec<&str> = a.targets.iter().map(String::as_str).collect();
    Ok(policy_status(&sb.delete_egress_rules(&refs).await?))
}

/// `sandbox.get_diagnostic_logs` → DiagnosticContent.
pub async fn sandbox_get_diagnostic_logs(s: &Session, a: DiagnosticArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_diagnostic_logs", &a).await?;
    Ok(convert::diagnostic(
        &sb.get_diagnostic_logs(&a.scope).await?,
    ))
}

/// `sandbox.get_diagnostic_events` → DiagnosticContent.
pub async fn sandbox_get_diagnostic_events(s: &Session, a: DiagnosticArgs) -> OpResult {
    let sb = s.sandbox("sandbox.get_diagnostic_events", &a).await?;
    Ok(convert::diagnostic(
        &sb.get_diagnostic_events(&a.scope).await?,
    ))
}

/// `manager.list_sandbox_infos` → `{sandbox_infos, pagination}`.
pub async fn manager_list_sandbox_infos(s: &Session, a: ListSandboxesArgs) -> OpResult {
    let m = s.manager("manager.list_sandbox_infos", &a)?;
    let filter = SandboxFilter {
        states: a.states,
        metadata: a.metadata,
        page: a.page,
        page_size: a.page_size,
    };
    let page = m.list_sandbox_infos(&filter).await?;
    Ok(json!({
        "sandbox_infos": page.items.iter().map(convert::sandbox_info).collect::<Vec<_>>(),
        "pagination": convert::pagination(&page.pagination),
    }))
}

/// `manager.get_sandbox_info` → SandboxInfo.
pub async fn manager_get_sandbox_info(s: &Session, a: SandboxIdArgs) -> OpResult {
    let m = s.manager("manager.get_sandbox_info", &a)?;
    Ok(convert::sandbox_info(
        &m.get_sandbox_info(&a.sandbox_id).await?,
    ))
}

/// `manager.kill_sandbox` → null (the id is forgotten).
pub async fn manager_kill_sandbox(s: &Session, a: SandboxIdArgs) -> OpResult {
    s.manager("manager.kill_sandbox", &a)?
        .kill_sandbox(&a.sandbox_id)
        .await?;
    s.forget(&a.sandbox_id);
    Ok(Value::Null)
}

/// `manager.pause_sandbox` → null.
pub async fn manager_pause_sandbox(s: &Session, a: SandboxIdArgs) -> OpResult {
    s.manager("manager.pause_sandbox", &a)?
        .pause_sandbox(&a.sandbox_id)
        .await?;
    Ok(Value::Null)
}

/// `manager.resume_sandbox` → null (server resume only, no readiness wait).
pub async fn manager_resume_sandbox(s: &Session, a: SandboxIdArgs) -> OpResult {
    s.manager("manager.resume_sandbox", &a)?
        .resume_sandbox(&a.sandbox_id)
        .await?;
    Ok(Value::Null)
}

/// `manager.renew_sandbox` → `{expires_at}`.
pub async fn manager_renew_sandbox(s: &Session, a: ManagerRenewArgs) -> OpResult {
    const OP: &str = "manager.renew_sandbox";
    let m = s.manager(OP, &a)?;
    Ok(renewed(
        &m.renew_sandbox(&a.sandbox_id, secs(OP, "seconds", a.seconds)?)
            .await?,
    ))
}

/// `manager.patch_sandbox_metadata` → SandboxInfo.
pub async fn manager_patch_sandbox_metadata(s: &Session, a: ManagerPatchArgs) -> OpResult {
    let m = s.manager("manager.patch_sandbox_metadata", &a)?;
    Ok(convert::sandbox_info(
        &m.patch_sandbox_metadata(&a.sandbox_id, &a.patch).await?,
    ))
}

/// `manager.get_endpoint` → `{endpoint, headers}`.
pub async fn manager_get_endpoint(s: &Session, a: ManagerEndpointArgs) -> OpResult {
    let m = s.manager("manager.get_endpoint", &a)?;
    Ok(convert::endpoint(
        &m.get_endpoint(&a.sandbox_id, a.port, None).await?,
    ))
}

/// `manager.create_snapshot` → SnapshotInfo.
pub async fn manager_create_snapshot(s: &Session, a: ManagerSnapshotArgs) -> OpResult {
    let m = s.manager("manager.create_snapshot", &a)?;
    Ok(convert::snapshot(
        &m.create_snapshot(&a.sandbox_id, a.name.as_deref()).await?,
    ))
}

/// `manager.get_diagnostic_logs` → DiagnosticContent.
pub async fn manager_get_diagnostic_logs(s: &Session, a: ManagerDiagnosticArgs) -> OpResult {
    let m = s.manager("manager.get_diagnostic_logs", &a)?;
    Ok(convert::diagnostic(
        &m.get_diagnostic_logs(&a.sandbox_id, &a.scope).await?,
    ))
}

/// `manager.get_diagnostic_events` → DiagnosticContent.
pub async fn manager_get_diagnostic_events(s: &Session, a: ManagerDiagnosticArgs) -> OpResult {
    let m = s.manager("manager.get_diagnostic_events", &a)?;
    Ok(convert::diagnostic(
        &m.get_diagnostic_events(&a.sandbox_id, &a.scope).await?,
    ))
}

/// `manager.get_snapshot` → SnapshotInfo.
pub async fn manager_get_snapshot(s: &Session, a: SnapshotIdArgs) -> OpResult {
    let m = s.manager("manager.get_snapshot", &a)?;
    Ok(convert::snapshot(&m.get_snapshot(&a.snapshot_id).await?))
}

/// `manager.delete_snapshot` → null.
pub async fn manager_delete_snapshot(s: &Session, a: SnapshotIdArgs) -> OpResult {
    s.manager("manager.delete_snapshot", &a)?
        .delete_snapshot(&a.snapshot_id)
        .await?;
    Ok(Value::Null)
}

/// `manager.list_snapshots` → `{snapshot_infos, pagination}`.
pub async fn manager_list_snapshots(s: &Session, a: ListSnapshotsArgs) -> OpResult {
    let m = s.manager("manager.list_snapshots", &a)?;
    let filter = SnapshotFilter {
        sandbox_id: a.sandbox_id,
        name: None,
        states: a.states,
        page: a.page,
        page_size: a.page_size,
    };
    let page = m.list_snapshots(&filter).await?;
    Ok(json!({
        "snapshot_infos": page.items.iter().map(convert::snapshot).collect::<Vec<_>>(),
        "pagination": convert::pagination(&page.pagination),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::parse;

    const OP: &str = "sandbox.create";

    #[test]
    fn create_passes_volumes_platform_credential_proxy_and_image_auth() {
        let a: CreateArgs = parse(
            OP,
            json!({
                "image": "python:3.12",
                "image_auth": {"username": "u", "password": "p"},
                "platform": {"os": "linux", "arch": "arm64"},
                "credential_proxy": {"enabled": true},
                "volumes": [
                    {"name": "data", "mount_path": "/data", "read_only": true,
                     "host": {"path": "/srv/data"}},
                    {"name": "claim", "mount_path": "/c", "sub_path": "x",
                     "pvc": {"claim_name": "c1", "storage": "1Gi", "access_modes": ["ReadWriteOnce"]}},
                    {"name": "oss", "mount_path": "/o",
                     "ossfs": {"bucket": "b", "endpoint": "e", "access_key_id": "i",
                               "access_key_secret": "s", "version": "2.0"}},
                ],
            }),
        )
        .unwrap();
        let o = create_options(OP, &a).unwrap();
        let img = o.image.unwrap();
        assert_eq!(img.uri, "python:3.12");
        assert_eq!(img.auth.unwrap().username, "u");
        assert_eq!(o.platform.unwrap().arch, "arm64");
        assert!(o.credential_proxy.unwrap().enabled);
        assert_eq!(o.volumes.len(), 3);
        assert!(o.volumes[0].read_only);
        assert_eq!(o.volumes[0].host.as_ref().unwrap().path, "/srv/data");
        assert_eq!(o.volumes[1].pvc.as_ref().unwrap().claim_name, "c1");
        assert_eq!(o.volumes[1].sub_path.as_deref(), Some("x"));
        assert_eq!(
            o.volumes[2].ossfs.as_ref().unwrap().version.as_deref(),
            Some("2.0")
        );
        // The core's wire names (camelCase) come from its models.
        let wire = serde_json::to_value(&o.volumes[1]).unwrap();
        assert_eq!(wire["mountPath"], "/c");
        assert_eq!(wire["pvc"]["claimName"], "c1");

        // Absent / null: the defaults.
        let a: CreateArgs =
            parse(OP, json!({"image": "x", "volumes": null, "platform": null})).unwrap();
        let o = create_options(OP, &a).unwrap();
        assert!(o.volumes.is_empty() && o.platform.is_none() && o.credential_proxy.is_none());
        assert!(o.image.unwrap().auth.is_none());
    }

    #[test]
    fn create_rejects_bad_volumes_auth_and_unknown_nested_keys() {
        let bad = |v: Value| {
            let e = parse::<CreateArgs>(OP, v.clone())
                .and_then(|a| create_options(OP, &a))
                .err()
                .unwrap_or_else(|| panic!("accepted {v}"));
            assert_eq!(e.kind, "invalid_argument");
            e.message.clone()
        };
        let m = bad(json!({"image": "x", "volumes": [{"name": "v", "mount_path": "/v"}]}));
        assert!(m.contains("exactly one of host, pvc, ossfs"), "{m}");
        bad(
            json!({"image": "x", "volumes": [{"name": "v", "mount_path": "/v",
                   "host": {"path": "/a"}, "pvc": {"claim_name": "c"}}]}),
        );
        let m = bad(json!({"image": "x", "volumes": [{"name": "v", "mountPath": "/v"}]}));
        assert!(m.contains("mountPath"), "{m}");
        let m = bad(json!({"image": "x", "platform": {"os": "linux", "arch": "amd64", "cpu": 1}}));
        assert!(m.contains("cpu"), "{m}");
        let m = bad(json!({"image": "x", "credential_proxy": {"on": true}}));
        assert!(m.contains("on"), "{m}");
        let m = bad(json!({"snapshot_id": "s", "image_auth": {"username": "u", "password": "p"}}));
        assert!(m.contains("image_auth"), "{m}");
        bad(json!({"image": "x", "image_auth": {"username": "u"}}));
    }
}
