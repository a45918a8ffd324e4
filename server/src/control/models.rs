//! Wire models of the lifecycle API (protocol.md §2.1, §2.2), camelCase on the wire,
//! and the records the store keeps.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

/// RFC 3339 with milliseconds and `Z`, the form every timestamp of the API takes.
pub fn rfc3339(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

mod rfc3339_ser {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::rfc3339(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let raw = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }

    pub mod option {
        use chrono::{DateTime, Utc};
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(
            t: &Option<DateTime<Utc>>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.serialize_str(&super::super::rfc3339(t)),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<DateTime<Utc>>, D::Error> {
            let raw = Option::<String>::deserialize(d)?;
            raw.map(|raw| {
                DateTime::parse_from_rfc3339(&raw)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(serde::de::Error::custom)
            })
            .transpose()
        }
    }
}

/// Sandbox states (protocol.md §2.3). Clients treat the set as open; the server only
/// produces these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SandboxState {
    Pending,
    Running,
    Pausing,
    Paused,
    Resuming,
    Stopping,
    Terminated,
    Failed,
}

impl SandboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Pausing => "Pausing",
            Self::Paused => "Paused",
            Self::Resuming => "Resuming",
            Self::Stopping => "Stopping",
            Self::Terminated => "Terminated",
            Self::Failed => "Failed",
        }
    }

    /// A sandbox in a terminal state has no processes left and never runs again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Terminated | Self::Failed)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxStatus {
    pub state: SandboxState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(
        with = "rfc3339_ser::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_transition_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageAuth {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageSpec {
    pub uri: String,
    /// Registry credentials for this create's pull only: never stored nor echoed.
    #[serde(default, skip_serializing)]
    pub auth: Option<ImageAuth>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlatformSpec {
    pub os: String,
    pub arch: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleAction {
    Allow,
    Deny,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRule {
    pub action: RuleAction,
    pub target: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_action: Option<RuleAction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<NetworkRule>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostVolume {
    pub path: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    pub mount_path: String,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostVolume>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pvc: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ossfs: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateSandboxRequest {
    pub image: Option<ImageSpec>,
    pub snapshot_id: Option<String>,
    pub entrypoint: Option<Vec<String>>,
    pub timeout: Option<i64>,
    pub resource_limits: Option<BTreeMap<String, String>>,
    /// (1.1) Validated and echoed only: see `resources`.
    pub resource_requests: Option<BTreeMap<String, String>>,
    /// Null values are tolerated like upstream and mean "unset".
    pub env: Option<BTreeMap<String, Option<String>>>,
    pub metadata: Option<BTreeMap<String, String>>,
    pub platform: Option<PlatformSpec>,
    pub network_policy: Option<NetworkPolicy>,
    pub credential_proxy: Option<serde_json::Value>,
    pub secure_access: Option<bool>,
    pub volumes: Option<Vec<Volume>>,
    pub extensions: Option<BTreeMap<String, String>>,
    /// (1.1) Create from a `Succeeded` template (`templates`).
    pub template_id: Option<String>,
    /// (1.1) Lifecycle hooks, checked by `hooks::parse`.
    pub lifecycle: Option<serde_json::Value>,
}

/// Everything the server knows about one sandbox; stored as JSON in the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SandboxRecord {
    pub id: String,
    pub image: Option<ImageSpec>,
    pub snapshot_id: Option<String>,
    pub entrypoint: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub metadata: BTreeMap<String, String>,
    pub extensions: BTreeMap<String, String>,
    pub resource_limits: BTreeMap<String, String>,
    /// (1.1) Absent in records of older servers.
    #[serde(default)]
    pub resource_requests: BTreeMap<String, String>,
    pub platform: Option<PlatformSpec>,
    pub network_policy: Option<NetworkPolicy>,
    pub volumes: Vec<Volume>,
    pub status: SandboxStatus,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    /// SHA-256 (hex) of the per-sandbox secret of the execd proxy route
    /// (`X-EXECD-ACCESS-TOKEN`); the secret itself is derived, never stored
    /// (see `security`). Empty in records of older servers: derived again then.
    #[serde(default)]
    pub execd_token_sha256: String,
    /// SHA-256 (hex) of the secret of the egress proxy route (`OPENSANDBOX-EGRESS-AUTH`).
    #[serde(default)]
    pub egress_token_sha256: String,
    /// Host pid of the sandbox's root process (bwrap, or the agent without isolation).
    pub pid: Option<i32>,
    /// Start time of `pid` (field 22 of /proc/pid/stat), so a recycled pid is never
    /// mistaken for the sandbox after a restart.
    pub pid_start: Option<u64>,
    /// `bwrap` or `none`.
    pub isolation: String,
    /// Deleted through the API: kept in the store for the record, hidden from the API.
    #[serde(default)]
    pub deleted: bool,
    /// Lifecycle events, served by the diagnostics routes.
    #[serde(default)]
    pub events: Vec<LifecycleEvent>,
    /// (1.1) The template this sandbox was created from (`templates`).
    #[serde(default)]
    pub template_id: Option<String>,
    /// (1.1) Its lifecycle hooks (`hooks`).
    #[serde(default)]
    pub lifecycle: Option<super::hooks::Lifecycle>,
    /// (1.1) Created with `credentialProxy.enabled`: the credential vault is open.
    #[serde(default)]
    pub credential_proxy: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LifecycleEvent {
    pub at: DateTime<Utc>,
    pub state: SandboxState,
    pub reason: Option<String>,
    pub message: Option<String>,
}

impl SandboxRecord {
    /// Moves the sandbox to `state` and records the transition as an event.
    pub fn transition(&mut self, state: SandboxState, reason: &str, message: Option<String>) {
        let now = Utc::now();
        let message = match (message, self.isolation.as_str()) {
            (Some(m), _) => Some(m),
            // Every sandbox started without isolation says so in its status.
            (None, "none") => Some("isolation disabled (--isolation none)".to_string()),
            (None, _) => None,
        };
        self.status = SandboxStatus {
            state,
            reason: Some(reason.to_string()),
            message: message.clone(),
            last_transition_at: Some(now),
        };
        self.events.push(LifecycleEvent {
            at: now,
            state,
            reason: Some(reason.to_string()),
            message,
        });
    }

    pub fn to_api(&self) -> Sandbox {
        Sandbox {
            id: self.id.clone(),
            image: self.image.clone(),
            snapshot_id: self.snapshot_id.clone(),
            entrypoint: self.entrypoint.clone(),
            status: self.status.clone(),
            created_at: self.created_at,
            expires_at: self.expires_at,
            metadata: self.metadata.clone(),
            extensions: self.extensions.clone(),
            platform: self.platform.clone(),
            resource_requests: self.resource_requests.clone(),
        }
    }

    pub fn to_create_response(&self) -> CreateSandboxResponse {
        CreateSandboxResponse {
            id: self.id.clone(),
            status: self.status.clone(),
            entrypoint: self.entrypoint.clone(),
            created_at: self.created_at,
            expires_at: self.expires_at,
            metadata: self.metadata.clone(),
            extensions: self.extensions.clone(),
            platform: self.platform.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sandbox {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    pub entrypoint: Vec<String>,
    pub status: SandboxStatus,
    #[serde(with = "rfc3339_ser")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "rfc3339_ser::option", skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformSpec>,
    /// (1.1) Echo of the create's `resourceRequests`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_requests: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateSandboxResponse {
    pub id: String,
    pub status: SandboxStatus,
    pub entrypoint: Vec<String>,
    #[serde(with = "rfc3339_ser")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "rfc3339_ser::option", skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<PlatformSpec>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginationInfo {
    pub page: u64,
    pub page_size: u64,
    pub total_items: u64,
    pub total_pages: u64,
    pub has_next_page: bool,
}

impl PaginationInfo {
    /// Slices `items` to the requested page and describes the slicing.
    pub fn paginate<T>(items: Vec<T>, page: u64, page_size: u64) -> (Vec<T>, Self) {
        let total_items = items.len() as u64;
        let total_pages = total_items.div_ceil(page_size);
        let start = (page - 1).saturating_mul(page_size);
        let slice: Vec<T> = items
            .into_iter()
            .skip(usize::try_from(start).unwrap_or(usize::MAX))
            .take(usize::try_from(page_size).unwrap_or(usize::MAX))
            .collect();
        let info = Self {
            page,
            page_size,
            total_items,
            total_pages,
            has_next_page: page < total_pages,
        };
        (slice, info)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ListResponse<T> {
    pub items: Vec<T>,
    pub pagination: PaginationInfo,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenewRequest {
    pub expires_at: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    pub endpoint: String,
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotState {
    Creating,
    Ready,
    Failed,
    Deleting,
}

impl SnapshotState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Creating => "Creating",
            Self::Ready => "Ready",
            Self::Failed => "Failed",
            Self::Deleting => "Deleting",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotStatus {
    pub state: SnapshotState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(
        with = "rfc3339_ser::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub last_transition_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub id: String,
    pub sandbox_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub status: SnapshotStatus,
    #[serde(with = "rfc3339_ser")]
    pub created_at: DateTime<Utc>,
}

impl Snapshot {
    pub fn set_state(&mut self, state: SnapshotState, reason: &str, message: Option<String>) {
        self.status = SnapshotStatus {
            state,
            reason: Some(reason.to_string()),
            message,
            last_transition_at: Some(Utc::now()),
        };
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CreateSnapshotRequest {
    pub name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pagination_slices_and_reports() {
        let (items, info) = PaginationInfo::paginate((1..=45).collect::<Vec<_>>(), 3, 20);
        assert_eq!(items, vec![41, 42, 43, 44, 45]);
        assert_eq!(info.total_items, 45);
        assert_eq!(info.total_pages, 3);
        assert!(!info.has_next_page);
        let (items, info) = PaginationInfo::paginate((1..=45).collect::<Vec<_>>(), 1, 20);
        assert_eq!(items.len(), 20);
        assert!(info.has_next_page);
        let (items, info) = PaginationInfo::paginate(Vec::<u8>::new(), 1, 20);
        assert!(items.is_empty());
        assert_eq!(info.total_pages, 0);
    }

    #[test]
    fn sandbox_serialises_camel_case() {
        let status = SandboxStatus {
            state: SandboxState::Running,
            reason: Some("RUNNING".into()),
            message: None,
            last_transition_at: None,
        };
        let json = serde_json::to_value(&status).unwrap_or_default();
        assert_eq!(json["state"], "Running");
        assert!(json.get("message").is_none());
        let policy: NetworkPolicy = serde_json::from_str(
            r#"{"defaultAction":"deny","egress":[{"action":"allow","target":"a.com"}]}"#,
        )
        .unwrap_or_default();
        assert_eq!(policy.default_action, Some(RuleAction::Deny));
    }
}
