//! `sandbox.*` and `manager.*`: creation, readiness, lifecycle calls, endpoints,
//! snapshots, egress and diagnostics.

use std::time::Duration;

use opensandbox_core::models::{
    ImageSpec, NetworkPolicy, NetworkRule, SandboxFilter, SnapshotFilter,
};
use opensandbox_core::{ConnectOptions, Sandbox, SandboxCreateOptions};
use serde_json::{json, Value};

use crate::args::Args;
use crate::convert;
use crate::protocol::{Failure, OpResult};
use crate::state::State;

fn rules(args: &Args, name: &str) -> Result<Vec<NetworkRule>, Failure> {
    args.objects(name)?
        .iter()
        .map(|r| {
            Ok(NetworkRule {
                action: r.str("action")?,
                target: r.str("target")?,
            })
        })
        .collect()
}

fn create_options(args: &Args) -> Result<SandboxCreateOptions, Failure> {
    let mut opts = SandboxCreateOptions::default();
    if let Some(uri) = args.opt_str("image")? {
        opts.image = Some(ImageSpec { uri, auth: None });
    }
    opts.snapshot_id = args.opt_str("snapshot_id")?;
    if args.has("entrypoint") {
        opts.entrypoint = args.str_list("entrypoint")?;
    }
    if args.has("timeout_s") {
        // Present and null = manual cleanup; absent = the SDK default.
        opts.timeout = args.opt_secs("timeout_s")?;
    }
    if let Some(t) = args.opt_secs("ready_timeout_s")? {
        opts.ready_timeout = t;
    }
    opts.env = args.str_map("env")?;
    opts.metadata = args.str_map("metadata")?;
    if args.has("resource") {
        opts.resource = args.str_map("resource")?;
    }
    opts.extensions = args.str_map("extensions")?;
    if let Some(policy) = args.object("network_policy")? {
        opts.network_policy = Some(NetworkPolicy {
            default_action: policy.opt_str("default_action")?,
            egress: rules(&policy, "egress")?,
        });
    }
    if let Some(t) = args.opt_secs("health_check_polling_interval_s")? {
        opts.health_check_polling_interval = t;
    }
    opts.secure_access = args.bool("secure_access")?;
    opts.skip_health_check = args.bool("skip_health_check")?;
    Ok(opts)
}

fn connect_options(args: &Args, timeout_arg: &str) -> Result<ConnectOptions, Failure> {
    let mut opts = ConnectOptions::default();
    if let Some(t) = args.opt_secs(timeout_arg)? {
        opts.timeout = t;
    }
    if let Some(t) = args.opt_secs("health_check_polling_interval_s")? {
        opts.health_check_polling_interval = t;
    }
    opts.skip_health_check = args.bool("skip_health_check")?;
    Ok(opts)
}

fn u32_arg(args: &Args, name: &str) -> Result<Option<u32>, Failure> {
    args.opt_u32(name)
}

fn seconds(args: &Args) -> Result<Duration, Failure> {
    args.opt_secs("seconds")?
        .ok_or_else(|| Failure::Driver("argument seconds is required".into()))
}

pub async fn run(state: &State, op: &str, args: &Args) -> OpResult {
    match op {
        "sandbox.create" => {
            let cfg = state.config(args)?;
            let sandbox = Sandbox::create(cfg, create_options(args)?).await?;
            let handle = state.keep(&sandbox);
            Ok(json!({"id": sandbox.id(), "handle": handle}))
        }
        "sandbox.connect" => {
            let cfg = state.config(args)?;
            let id = args.str("sandbox_id")?;
            let sandbox =
                Sandbox::connect(cfg, &id, connect_options(args, "connect_timeout_s")?).await?;
            let handle = state.keep(&sandbox);
            Ok(json!({"id": sandbox.id(), "handle": handle}))
        }
        "sandbox.resume" => {
            let cfg = state.config(args)?;
            let id = args.str("sandbox_id")?;
            let sandbox =
                Sandbox::resume(cfg, &id, connect_options(args, "resume_timeout_s")?).await?;
            let handle = state.keep(&sandbox);
            Ok(json!({"id": sandbox.id(), "handle": handle}))
        }
        "sandbox.get_info" => {
            let s = state.sandbox(args).await?;
            Ok(convert::sandbox_info(&s.get_info().await?))
        }
        "sandbox.is_healthy" => {
            let s = state.sandbox(args).await?;
            Ok(json!({"healthy": s.is_healthy().await}))
        }
        "sandbox.renew" => {
            let s = state.sandbox(args).await?;
            let r = s.renew(seconds(args)?).await?;
            Ok(json!({"expires_at": r.expires_at.map(|t| t.to_rfc3339())}))
        }
        "sandbox.patch_metadata" => {
            let s = state.sandbox(args).await?;
            let info = s.patch_metadata(&args.opt_str_map("patch")?).await?;
            Ok(convert::sandbox_info(&info))
        }
        "sandbox.pause" => {
            state.sandbox(args).await?.pause().await?;
            Ok(Value::Null)
        }
        "sandbox.kill" => {
            let s = state.sandbox(args).await?;
            s.kill().await?;
            Ok(Value::Null)
        }
        "sandbox.get_endpoint" => {
            let s = state.sandbox(args).await?;
            Ok(convert::endpoint(
                &s.get_endpoint(args.port("port")?).await?,
            ))
        }
        "sandbox.get_metrics" => {
            let s = state.sandbox(args).await?;
            Ok(convert::metrics(&s.get_metrics().await?))
        }
        "sandbox.create_snapshot" => {
            let s = state.sandbox(args).await?;
            let name = args.opt_str("name")?;
            Ok(convert::snapshot(
                &s.create_snapshot(name.as_deref()).await?,
            ))
        }
        "sandbox.get_egress_policy" => {
            let s = state.sandbox(args).await?;
            Ok(convert::network_policy(&s.get_egress_policy().await?))
        }
        "sandbox.patch_egress_rules" => {
            let s = state.sandbox(args).await?;
            let status = s.patch_egress_rules(&rules(args, "rules")?).await?;
            Ok(json!({"status": status.status, "mode": status.mode}))
        }
        "sandbox.delete_egress_rules" => {
            let s = state.sandbox(args).await?;
            let targets = args.str_list("targets")?;
            let refs: Vec<&str> = targets.iter().map(String::as_str).collect();
            let status = s.delete_egress_rules(&refs).await?;
            Ok(json!({"status": status.status, "mode": status.mode}))
        }
        "sandbox.get_diagnostic_logs" => {
            let s = state.sandbox(args).await?;
            Ok(convert::diagnostic(
                &s.get_diagnostic_logs(&args.str("scope")?).await?,
            ))
        }
        "sandbox.get_diagnostic_events" => {
            let s = state.sandbox(args).await?;
            Ok(convert::diagnostic(
                &s.get_diagnostic_events(&args.str("scope")?).await?,
            ))
        }
        "manager.list_sandbox_infos" => {
            let m = state.manager(args)?;
            let filter = SandboxFilter {
                states: args.str_list("states")?,
                metadata: args.str_map("metadata")?,
                page: u32_arg(args, "page")?,
                page_size: u32_arg(args, "page_size")?,
            };
            let page = m.list_sandbox_infos(&filter).await?;
            Ok(json!({
                "sandbox_infos": page.items.iter().map(convert::sandbox_info).collect::<Vec<_>>(),
                "pagination": convert::pagination(&page.pagination),
            }))
        }
        "manager.create_snapshot" => {
            let m = state.manager(args)?;
            let name = args.opt_str("name")?;
            Ok(convert::snapshot(
                &m.create_snapshot(&args.str("sandbox_id")?, name.as_deref())
                    .await?,
            ))
        }
        "manager.get_diagnostic_logs" => {
            let m = state.manager(args)?;
            Ok(convert::diagnostic(
                &m.get_diagnostic_logs(&args.str("sandbox_id")?, &args.str("scope")?)
                    .await?,
            ))
        }
        "manager.get_diagnostic_events" => {
            let m = state.manager(args)?;
            Ok(convert::diagnostic(
                &m.get_diagnostic_events(&args.str("sandbox_id")?, &args.str("scope")?)
                    .await?,
            ))
        }
        "sandbox.get_signed_endpoint" => {
            let s = state.sandbox(args).await?;
            let expires = args
                .opt_i64("expires")?
                .ok_or_else(|| Failure::Driver("argument expires is required".into()))?;
            Ok(convert::endpoint(
                &s.get_signed_endpoint(args.port("port")?, expires).await?,
            ))
        }
        "sandbox.info" => {
            let s = state.sandbox(args).await?;
            Ok(json!({"id": s.id()}))
        }
        "manager.get_sandbox_info" => {
            let m = state.manager(args)?;
            Ok(convert::sandbox_info(
                &m.get_sandbox_info(&args.str("sandbox_id")?).await?,
            ))
        }
        "manager.kill_sandbox" => {
            let id = args.str("sandbox_id")?;
            state.manager(args)?.kill_sandbox(&id).await?;
            Ok(Value::Null)
        }
        "manager.pause_sandbox" => {
            state
                .manager(args)?
                .pause_sandbox(&args.str("sandbox_id")?)
                .await?;
            Ok(Value::Null)
        }
        "manager.resume_sandbox" => {
            state
                .manager(args)?
                .resume_sandbox(&args.str("sandbox_id")?)
                .await?;
            Ok(Value::Null)
        }
        "manager.renew_sandbox" => {
            let m = state.manager(args)?;
            let r = m
                .renew_sandbox(&args.str("sandbox_id")?, seconds(args)?)
                .await?;
            Ok(json!({"expires_at": r.expires_at.map(|t| t.to_rfc3339())}))
        }
        "manager.patch_sandbox_metadata" => {
            let m = state.manager(args)?;
            let info = m
                .patch_sandbox_metadata(&args.str("sandbox_id")?, &args.opt_str_map("patch")?)
                .await?;
            Ok(convert::sandbox_info(&info))
        }
        "manager.get_endpoint" => {
            let m = state.manager(args)?;
            let ep = m
                .get_endpoint(&args.str("sandbox_id")?, args.port("port")?, None)
                .await?;
            Ok(convert::endpoint(&ep))
        }
        "manager.get_snapshot" => {
            let m = state.manager(args)?;
            Ok(convert::snapshot(
                &m.get_snapshot(&args.str("snapshot_id")?).await?,
            ))
        }
        "manager.delete_snapshot" => {
            state
                .manager(args)?
                .delete_snapshot(&args.str("snapshot_id")?)
                .await?;
            Ok(Value::Null)
        }
        "manager.list_snapshots" => {
            let m = state.manager(args)?;
            let filter = SnapshotFilter {
                sandbox_id: args.opt_str("sandbox_id")?,
                states: args.str_list("states")?,
                page: u32_arg(args, "page")?,
                page_size: u32_arg(args, "page_size")?,
            };
            let page = m.list_snapshots(&filter).await?;
            Ok(json!({
                "snapshot_infos": page.items.iter().map(convert::snapshot).collect::<Vec<_>>(),
                "pagination": convert::pagination(&page.pagination),
            }))
        }
        _ => Err(Failure::Unsupported(op.to_owned())),
    }
}
