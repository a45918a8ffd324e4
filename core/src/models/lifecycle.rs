//! Lifecycle API models (`/v1/sandboxes`, `/v1/snapshots`, diagnostics).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

macro_rules! open_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $wire:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $($(#[$vm])* $var,)*
            /// A value this client does not know (kept verbatim).
            Other(String),
        }

        impl $name {
            /// The wire spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$var => $wire,)*
                    $name::Other(s) => s,
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $($wire => $name::$var,)*
                    _ => $name::Other(s),
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name::from(s.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(s: $name) -> String {
                s.as_str().to_owned()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

open_enum! {
    /// Sandbox state; an open set (servers may add states such as `Unknown`).
    SandboxState {
        /// Being provisioned.
        Pending = "Pending",
        /// Running.
        Running = "Running",
        /// Pause in progress.
        Pausing = "Pausing",
        /// Paused.
        Paused = "Paused",
        /// Resume in progress.
        Resuming = "Resuming",
        /// Shutting down.
        Stopping = "Stopping",
        /// Gone.
        Terminated = "Terminated",
        /// Failed.
        Failed = "Failed",
        /// The server cannot tell.
        Unknown = "Unknown",
    }
}

open_enum! {
    /// Snapshot state; an open set.
    SnapshotState {
        /// Being taken.
        Creating = "Creating",
        /// Usable.
        Ready = "Ready",
        /// Failed.
        Failed = "Failed",
        /// Being deleted.
        Deleting = "Deleting",
    }
}

/// Registry credentials for a private image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageAuth {
    /// Registry user.
    pub username: String,
    /// Registry password or token.
    pub password: String,
}

/// A container image reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageSpec {
    /// Image URI, e.g. `python:3.12`.
    pub uri: String,
    /// Optional registry credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<ImageAuth>,
}

/// Platform constraint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlatformSpec {
    /// `linux` or `windows`.
    pub os: String,
    /// `amd64` or `arm64`.
    pub arch: String,
}

/// One egress rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRule {
    /// `allow` or `deny`.
    pub action: String,
    /// An FQDN or `*.wildcard` domain.
    pub target: String,
}

/// Egress policy of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicy {
    /// `allow` or `deny` for targets no rule matches (server default: deny).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_action: Option<String>,
    /// Rules, first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<NetworkRule>,
}

/// Credential proxy switch.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CredentialProxyConfig {
    /// Whether the egress credential proxy is on.
    #[serde(default)]
    pub enabled: bool,
}

/// Host path volume backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostVolume {
    /// Absolute host path.
    pub path: String,
}

/// Kubernetes PVC volume backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PvcVolume {
    /// Claim name.
    pub claim_name: String,
    /// Create the claim when missing (server default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create_if_not_exists: Option<bool>,
    /// Delete the claim with the sandbox (server default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_on_sandbox_termination: Option<bool>,
    /// Storage class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// Requested size, e.g. `1Gi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    /// Access modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_modes: Option<Vec<String>>,
}

/// Alibaba OSS (ossfs) volume backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OssfsVolume {
    /// Bucket.
    pub bucket: String,
    /// OSS endpoint.
    pub endpoint: String,
    /// Access key id.
    pub access_key_id: String,
    /// Access key secret.
    pub access_key_secret: String,
    /// ossfs version, `1.0` or `2.0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Extra mount options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
}

/// A volume mounted into the sandbox; exactly one backend must be set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    /// Volume name (DNS label).
    pub name: String,
    /// Absolute mount path inside the sandbox.
    pub mount_path: String,
    /// Mount read-only.
    #[serde(default)]
    pub read_only: bool,
    /// Sub-path of the backend to mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    /// Host path backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostVolume>,
    /// PVC backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc: Option<PvcVolume>,
    /// OSS backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ossfs: Option<OssfsVolume>,
}

/// (1.1) A lifecycle command (argv, no shell).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleHook {
    /// Program and arguments.
    pub command: Vec<String>,
    /// Seconds (server default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// (1.1) A named command run on a schedule while the sandbox runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeriodicLifecycleHook {
    /// Unique name.
    pub name: String,
    /// Five-field cron or `@hourly`, `@every 30s`, ...
    pub schedule: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Seconds (server default 60, at most 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// (1.1) Lifecycle hooks of a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxLifecycle {
    /// Runs before the sandbox is reported Running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_start: Option<LifecycleHook>,
    /// Scheduled hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub periodic: Vec<PeriodicLifecycleHook>,
}

/// (1.1) A confirmed pool allocation (`mode: pool`, `state: allocated`); servers
/// without pools never send it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxAllocation {
    /// `pool`.
    pub mode: String,
    /// The pool.
    #[serde(default)]
    pub pool_ref: String,
    /// `allocated`.
    #[serde(default)]
    pub state: String,
}

/// Body of `POST /sandboxes`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateSandboxRequest {
    /// Image to start from (exclusive with `snapshot_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    /// Snapshot to restore (exclusive with `image`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// Entry process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entrypoint: Vec<String>,
    /// TTL in seconds; `None` = manual cleanup (field omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Resource limits, e.g. `cpu: "1"`, `memory: "2Gi"`.
    #[serde(default)]
    pub resource_limits: BTreeMap<String, String>,
    /// (1.1) Resource requests, same shape as `resource_limits`; omitted when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_requests: BTreeMap<String, String>,
    /// Environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// User metadata (labels).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Platform constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformSpec>,
    /// Egress policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicy>,
    /// Credential proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_proxy: Option<CredentialProxyConfig>,
    /// Secure access (ingress gateway deployments).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secure_access: bool,
    /// Volumes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    /// Opaque server extensions.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, String>,
    /// (1.1) Create from a `Succeeded` template (exclusive with image and snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    /// (1.1) Lifecycle hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<SandboxLifecycle>,
}

/// Sandbox status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxStatus {
    /// State.
    pub state: SandboxState,
    /// Machine-readable reason, e.g. `CONTAINER_RUNNING`.
    #[serde(default)]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default)]
    pub message: Option<String>,
    /// When the state last changed.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub last_transition_at: Option<DateTime<Utc>>,
}

/// A sandbox record (`GET /sandboxes/{id}`, list items, create response).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInfo {
    /// Sandbox id.
    pub id: String,
    /// Status.
    pub status: SandboxStatus,
    /// Entry process (may be absent in create responses).
    #[serde(default, deserialize_with = "null_default")]
    pub entrypoint: Vec<String>,
    /// Expiry; `None` = manual cleanup.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub created_at: Option<DateTime<Utc>>,
    /// Image.
    #[serde(default)]
    pub image: Option<ImageSpec>,
    /// Snapshot it was restored from.
    #[serde(default)]
    pub snapshot_id: Option<String>,
    /// Platform.
    #[serde(default)]
    pub platform: Option<PlatformSpec>,
    /// Metadata.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: BTreeMap<String, String>,
    /// Extensions echoed by the server.
    #[serde(default, deserialize_with = "null_default")]
    pub extensions: BTreeMap<String, String>,
    /// (1.1) Pool allocation (pool-backed sandboxes only).
    #[serde(default)]
    pub allocation: Option<SandboxAllocation>,
}

fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Pagination of list responses.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginationInfo {
    /// 1-based page.
    #[serde(default)]
    pub page: u64,
    /// Items per page.
    #[serde(default)]
    pub page_size: u64,
    /// Total items.
    #[serde(default)]
    pub total_items: u64,
    /// Total pages.
    #[serde(default)]
    pub total_pages: u64,
    /// Whether another page follows.
    #[serde(default)]
    pub has_next_page: bool,
}

/// One page of sandboxes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagedSandboxInfos {
    /// Sandboxes.
    #[serde(default)]
    pub items: Vec<SandboxInfo>,
    /// Pagination.
    #[serde(default)]
    pub pagination: PaginationInfo,
}

/// Filter of `GET /sandboxes`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxFilter {
    /// States, ORed.
    pub states: Vec<String>,
    /// Metadata equality filters, ANDed.
    pub metadata: BTreeMap<String, String>,
    /// 1-based page.
    pub page: Option<u32>,
    /// Page size.
    pub page_size: Option<u32>,
}

/// An address for a port inside a sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// `host[:port][/path]`, without scheme.
    pub endpoint: String,
    /// Headers that must accompany every request to this endpoint.
    #[serde(default, deserialize_with = "null_default")]
    pub headers: BTreeMap<String, String>,
    /// (1.1) The `OPEN-SANDBOX-ORIGIN` response header of the lookup (`template` for a
    /// template-backed sandbox; absent = not known to be one). Not part of the body.
    #[serde(skip)]
    pub origin: Option<String>,
}

/// (1.1) The `OPEN-SANDBOX-ORIGIN` value of a template-backed sandbox.
pub const ORIGIN_TEMPLATE: &str = "template";

/// Body and response of `POST /sandboxes/{id}/renew-expiration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenewResponse {
    /// The new expiry.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// Snapshot status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotStatus {
    /// State.
    pub state: SnapshotState,
    /// Reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// Message.
    #[serde(default)]
    pub message: Option<String>,
    /// When the state last changed.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub last_transition_at: Option<DateTime<Utc>>,
}

/// A snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotInfo {
    /// Snapshot id.
    pub id: String,
    /// Source sandbox.
    #[serde(default)]
    pub sandbox_id: String,
    /// Name.
    #[serde(default)]
    pub name: Option<String>,
    /// Status.
    pub status: SnapshotStatus,
    /// Creation time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub created_at: Option<DateTime<Utc>>,
}

/// One page of snapshots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagedSnapshotInfos {
    /// Snapshots.
    #[serde(default)]
    pub items: Vec<SnapshotInfo>,
    /// Pagination.
    #[serde(default)]
    pub pagination: PaginationInfo,
}

/// Filter of `GET /snapshots`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotFilter {
    /// Only snapshots of this sandbox.
    pub sandbox_id: Option<String>,
    /// (1.1) Only snapshots with exactly this name.
    pub name: Option<String>,
    /// States, ORed.
    pub states: Vec<String>,
    /// 1-based page.
    pub page: Option<u32>,
    /// Page size.
    pub page_size: Option<u32>,
}

/// Diagnostic logs or events of a sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosticContent {
    /// Sandbox id.
    #[serde(default)]
    pub sandbox_id: String,
    /// `logs` or `events`.
    #[serde(default)]
    pub kind: String,
    /// Scope asked for.
    #[serde(default)]
    pub scope: String,
    /// `inline` or `url`.
    #[serde(default)]
    pub delivery: String,
    /// MIME type of the content.
    #[serde(default)]
    pub content_type: String,
    /// Whether the content was cut.
    #[serde(default)]
    pub truncated: bool,
    /// Inline content.
    #[serde(default)]
    pub content: Option<String>,
    /// Where to fetch the content (url delivery).
    #[serde(default)]
    pub content_url: Option<String>,
    /// Content size in bytes.
    #[serde(default)]
    pub content_length: Option<u64>,
    /// When `content_url` expires.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Warnings.
    #[serde(default, deserialize_with = "null_default")]
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_unknown_states_fields_and_nulls() {
        let v = serde_json::json!({
            "id": "s1",
            "status": {"state": "Hibernating", "reason": null},
            "entrypoint": null,
            "createdAt": "2025-01-01T00:00:00Z",
            "expiresAt": null,
            "metadata": null,
            "brandNewField": {"x": 1}
        });
        let s: SandboxInfo = serde_json::from_value(v).expect("decode");
        assert_eq!(s.status.state, SandboxState::Other("Hibernating".into()));
        assert_eq!(s.status.state.as_str(), "Hibernating");
        assert!(s.entrypoint.is_empty() && s.metadata.is_empty());
        assert!(s.expires_at.is_none() && s.created_at.is_some());
    }

    #[test]
    fn create_request_omits_unset_fields() {
        let r = CreateSandboxRequest {
            image: Some(ImageSpec {
                uri: "python:3.12".into(),
                auth: None,
            }),
            entrypoint: vec!["tail".into()],
            ..Default::default()
        };
        let v = serde_json::to_value(&r).expect("encode");
        assert_eq!(v["image"]["uri"], "python:3.12");
        assert!(v.get("timeout").is_none());
        assert!(v.get("snapshotId").is_none());
        assert!(v.get("secureAccess").is_none());
        assert!(v.get("resourceLimits").is_some());
    }

    #[test]
    fn known_state_round_trips() {
        let s: SandboxState = serde_json::from_str("\"Running\"").expect("decode");
        assert_eq!(s, SandboxState::Running);
        assert_eq!(serde_json::to_string(&s).expect("encode"), "\"Running\"");
    }
}

/// Body of `POST /metrics/events` (1.1): one SDK telemetry event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsEvent {
    /// `sandbox.create`, the only type of protocol 1.1.
    pub event_type: String,
    /// Milliseconds from create start to ready or failure.
    pub create_duration_ms: u64,
    /// Whether the create succeeded.
    pub success: bool,
    /// The sandbox, when one was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_id: Option<String>,
    /// Image URI, snapshot id, or `template:{id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

impl MetricsEvent {
    /// A `sandbox.create` event.
    pub fn sandbox_create(duration: std::time::Duration, success: bool) -> Self {
        MetricsEvent {
            event_type: "sandbox.create".to_owned(),
            create_duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            success,
            sandbox_id: None,
            image: None,
        }
    }
}

#[cfg(test)]
mod lifecycle_11_tests {
    use super::*;

    #[test]
    fn metrics_event_wire_shape() {
        let mut e = MetricsEvent::sandbox_create(std::time::Duration::from_millis(1500), false);
        let v = serde_json::to_value(&e).expect("encode");
        assert_eq!(
            v,
            serde_json::json!({"eventType": "sandbox.create", "createDurationMs": 1500,
                "success": false})
        );
        e.sandbox_id = Some("s1".into());
        let v = serde_json::to_value(&e).expect("encode");
        assert_eq!(v["sandboxId"], "s1");
    }

    #[test]
    fn resource_requests_are_omitted_when_empty() {
        let mut r = CreateSandboxRequest::default();
        let v = serde_json::to_value(&r).expect("encode");
        assert!(v.get("resourceRequests").is_none());
        r.resource_requests.insert("cpu".into(), "250m".into());
        let v = serde_json::to_value(&r).expect("encode");
        assert_eq!(v["resourceRequests"]["cpu"], "250m");
    }
}
