//! JSON arguments from the JS layer → core option types, and core values → the JSON
//! the JS layer turns into the official shapes (camelCase, RFC 3339 times).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use opensandbox_core::models::{
    CredentialProxyConfig, EntryInfo, ImageSpec, NetworkPolicy, PlatformSpec, ReadOptions,
    SandboxInfo, SandboxMetrics, SnapshotInfo, Volume,
};
use opensandbox_core::{Error, Result, SandboxCreateOptions};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// Parses the JSON arguments of `op`; malformed input is an `invalid_argument` error.
pub fn parse_args<T: DeserializeOwned>(op: &str, args: &str) -> Result<T> {
    let args = if args.trim().is_empty() { "{}" } else { args };
    serde_json::from_str(args)
        .map_err(|e| Error::invalid_argument(op.to_owned(), format!("invalid arguments: {e}")))
}

/// A non-negative, finite number of seconds.
pub fn seconds(name: &str, v: f64) -> Result<Duration> {
    if !v.is_finite() || !(0.0..=1.0e12).contains(&v) {
        return Err(Error::invalid_argument(
            "node",
            format!("{name} must be a non-negative number of seconds, got {v}"),
        ));
    }
    Ok(Duration::from_secs_f64(v))
}

/// A non-negative, finite number of milliseconds.
pub fn millis(name: &str, v: f64) -> Result<Duration> {
    seconds(name, v / 1000.0)
}

/// RFC 3339 with milliseconds, or null.
pub fn time(t: &Option<DateTime<Utc>>) -> Value {
    match t {
        Some(t) => Value::String(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        None => Value::Null,
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ImageArg {
    Uri(String),
    Spec(ImageSpec),
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct CreateArgs {
    image: Option<ImageArg>,
    snapshot_id: Option<String>,
    entrypoint: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    metadata: Option<BTreeMap<String, String>>,
    network_policy: Option<NetworkPolicy>,
    credential_proxy: Option<CredentialProxyConfig>,
    volumes: Option<Vec<Volume>>,
    extensions: Option<BTreeMap<String, Value>>,
    platform: Option<PlatformSpec>,
    secure_access: Option<bool>,
    resource: Option<BTreeMap<String, String>>,
    /// Absent = default 600 s; `manualCleanup: true` = no TTL (`timeoutSeconds: null`).
    timeout_seconds: Option<f64>,
    manual_cleanup: bool,
    skip_health_check: bool,
    ready_timeout_seconds: Option<f64>,
    health_check_polling_interval: Option<f64>,
}

/// `Sandbox.create` options.
pub fn create_options(args: &str) -> Result<SandboxCreateOptions> {
    const OP: &str = "sandbox.create";
    let a: CreateArgs = parse_args(OP, args)?;
    let mut o = SandboxCreateOptions {
        image: a.image.map(|i| match i {
            ImageArg::Uri(uri) => ImageSpec { uri, auth: None },
            ImageArg::Spec(s) => s,
        }),
        snapshot_id: a.snapshot_id,
        ..SandboxCreateOptions::default()
    };
    if o.image.is_some() == o.snapshot_id.is_some() {
        return Err(Error::invalid_argument(
            OP,
            "exactly one of image or snapshotId must be given",
        ));
    }
    if let Some(e) = a.entrypoint {
        o.entrypoint = e;
    }
    o.env = a.env.unwrap_or_default();
    o.metadata = a.metadata.unwrap_or_default();
    o.network_policy = a.network_policy;
    o.credential_proxy = a.credential_proxy;
    o.volumes = a.volumes.unwrap_or_default();
    o.extensions = a
        .extensions
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => (k, s),
            other => (k, other.to_string()),
        })
        .collect();
    o.platform = a.platform;
    o.secure_access = a.secure_access.unwrap_or(false);
    if let Some(r) = a.resource {
        o.resource = r;
    }
    if a.manual_cleanup {
        o.timeout = None;
    } else if let Some(t) = a.timeout_seconds {
        o.timeout = Some(seconds("timeoutSeconds", t)?);
    }
    o.skip_health_check = a.skip_health_check;
    if let Some(t) = a.ready_timeout_seconds {
        o.ready_timeout = seconds("readyTimeoutSeconds", t)?;
    }
    if let Some(ms) = a.health_check_polling_interval {
        o.health_check_polling_interval = millis("healthCheckPollingInterval", ms)?;
    }
    Ok(o)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ReadArgs {
    range: Option<String>,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// Options of a file read.
pub fn read_options(args: &str) -> Result<ReadOptions> {
    let a: ReadArgs = parse_args("files.read", args)?;
    Ok(ReadOptions {
        range: a.range,
        offset: a.offset,
        limit: a.limit,
    })
}

/// `SandboxInfo` in the official camelCase shape (times as strings; JS makes Dates).
pub fn sandbox_info(i: &SandboxInfo) -> Value {
    json!({
        "id": i.id,
        "status": {
            "state": i.status.state.to_string(),
            "reason": i.status.reason,
            "message": i.status.message,
            "lastTransitionAt": time(&i.status.last_transition_at),
        },
        "entrypoint": i.entrypoint,
        "expiresAt": time(&i.expires_at),
        "createdAt": time(&i.created_at),
        "image": i.image,
        "snapshotId": i.snapshot_id,
        "platform": i.platform,
        "metadata": i.metadata,
        "extensions": i.extensions,
    })
}

/// `SnapshotInfo`.
pub fn snapshot_info(s: &SnapshotInfo) -> Value {
    json!({
        "id": s.id,
        "sandboxId": s.sandbox_id,
        "name": s.name,
        "status": {
            "state": s.status.state.to_string(),
            "reason": s.status.reason,
            "message": s.status.message,
            "lastTransitionAt": time(&s.status.last_transition_at),
        },
        "createdAt": time(&s.created_at),
    })
}

/// `FileInfo`.
pub fn entry_info(e: &EntryInfo) -> Value {
    let t = serde_json::to_value(e.entry_type).unwrap_or(Value::Null);
    json!({
        "path": e.path,
        "type": t,
        "size": e.size,
        "mode": e.mode,
        "owner": e.owner,
        "group": e.group,
        "modifiedAt": time(&e.modified_at),
        "createdAt": time(&e.created_at),
    })
}

/// `SandboxMetrics` in the official shape.
pub fn metrics(m: &SandboxMetrics) -> Value {
    json!({
        "cpuCount": m.cpu_count,
        "cpuUsedPercentage": m.cpu_used_percentage,
        "memoryTotalMiB": m.memory_total_in_mib,
        "memoryUsedMiB": m.memory_used_in_mib,
        "timestamp": m.timestamp,
    })
}
