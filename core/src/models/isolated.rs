//! (1.1) Isolated sessions (`/v1/isolated/*`, protocol.md §3.5): snake_case on the wire,
//! as the official 1.1.1 models (`opensandbox.models.isolated`). Requests skip absent
//! fields; responses tolerate missing and unknown ones (older execd builds omit the
//! creation-parameter echo).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The legacy single workspace (`workspace`): sugar for a first overlay entry.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedWorkspaceSpec {
    /// Directory of the sandbox.
    pub path: String,
    /// `rw`, `overlay` or `ro`; `None` = the server's default (`overlay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// One mount of the session's namespace.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedOverlaySpec {
    /// Absolute, clean, unique path.
    pub path: String,
    /// `overlay` (default), `rw` or `ro`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Overlay mode only: a disk upper layer (`true`, default) or a tmpfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persist: Option<bool>,
}

/// Which environment variables of the sandbox reach the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPassthroughSpec {
    /// `deny` (default) or `allow`.
    #[serde(default = "deny")]
    pub mode: String,
    /// The keys to deny or allow.
    #[serde(default)]
    pub keys: Vec<String>,
}

fn deny() -> String {
    "deny".into()
}

impl Default for EnvPassthroughSpec {
    fn default() -> Self {
        Self {
            mode: deny(),
            keys: Vec::new(),
        }
    }
}

/// A sandbox path bound into the session.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BindMount {
    /// Sandbox path (inside the server's writable allowlist).
    pub source: String,
    /// Path in the session; `None` = `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dest: Option<String>,
    /// Read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
}

/// `POST /v1/isolated/session`. At least one of `workspace` and `overlays`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CreateIsolatedSessionRequest {
    /// Legacy single workspace (prepended to `overlays`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<IsolatedWorkspaceSpec>,
    /// The mounts, applied shallow-first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlays: Option<Vec<IsolatedOverlaySpec>>,
    /// `strict` or `balanced`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Sandbox paths bound read-write at the same path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_writable: Option<Vec<String>>,
    /// Explicit binds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binds: Option<Vec<BindMount>>,
    /// Share the sandbox's network namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_net: Option<bool>,
    /// Environment passthrough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_passthrough: Option<EnvPassthroughSpec>,
    /// uid inside the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// gid inside the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
    /// `setpriv` or `userns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid_mode: Option<String>,
    /// Destroy after this many idle seconds (0 = never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<u64>,
}

/// The echo of a session's creation parameters (each `None` when the server omits it).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedSessionParams {
    /// Profile.
    #[serde(default)]
    pub profile: Option<String>,
    /// The legacy workspace (single-overlay sessions).
    #[serde(default)]
    pub workspace: Option<IsolatedWorkspaceSpec>,
    /// The effective mounts.
    #[serde(default)]
    pub overlays: Option<Vec<IsolatedOverlaySpec>>,
    /// Extra writable paths.
    #[serde(default)]
    pub extra_writable: Option<Vec<String>>,
    /// Binds.
    #[serde(default)]
    pub binds: Option<Vec<BindMount>>,
    /// Shared network.
    #[serde(default)]
    pub share_net: Option<bool>,
    /// Environment passthrough.
    #[serde(default)]
    pub env_passthrough: Option<EnvPassthroughSpec>,
    /// uid.
    #[serde(default)]
    pub uid: Option<u32>,
    /// gid.
    #[serde(default)]
    pub gid: Option<u32>,
    /// uid mode.
    #[serde(default)]
    pub uid_mode: Option<String>,
    /// Idle timeout (0 = none).
    #[serde(default)]
    pub idle_timeout_seconds: Option<u64>,
}

/// A session handle's description: the create answer, or what `attach` rebuilds from
/// the session's state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedSessionInfo {
    /// Session id (a UUID).
    pub session_id: String,
    /// Creation time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub created_at: Option<DateTime<Utc>>,
    /// Creation parameters, when known.
    #[serde(flatten)]
    pub params: IsolatedSessionParams,
}

/// `GET /v1/isolated/session/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedSessionState {
    /// `active`, `dead` or `destroyed`.
    #[serde(default)]
    pub status: String,
    /// Creation time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub created_at: Option<DateTime<Utc>>,
    /// Last run start or end.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub last_run_at: Option<DateTime<Utc>>,
    /// Seconds until the idle timeout (`None` without one).
    #[serde(default)]
    pub idle_remaining_seconds: Option<u64>,
    /// Creation parameters.
    #[serde(flatten)]
    pub params: IsolatedSessionParams,
}

/// One entry of `GET /v1/isolated/sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedSessionSummary {
    /// Session id.
    pub session_id: String,
    /// `active`, `dead` or `destroyed`.
    #[serde(default)]
    pub status: String,
    /// Creation time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub created_at: Option<DateTime<Utc>>,
    /// Last run.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub last_run_at: Option<DateTime<Utc>>,
    /// Seconds until the idle timeout.
    #[serde(default)]
    pub idle_remaining_seconds: Option<u64>,
}

/// Options of one run (the official `IsolatedRunOpts`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IsolatedRunOptions {
    /// Variables exported for this run only.
    pub envs: BTreeMap<String, String>,
    /// Server-side limit of a foreground run, whole seconds (`None` = none).
    pub timeout_seconds: Option<u64>,
}

/// Body of `POST .../run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IsolatedRunRequest {
    /// Shell code.
    pub code: String,
    /// Environment for this run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub envs: BTreeMap<String, String>,
    /// Foreground limit in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// Detached run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
}

/// The handle of a background run (`202`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedBackgroundRun {
    /// Session id.
    pub session_id: String,
    /// Run id.
    pub run_id: String,
    /// Start time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub started_at: Option<DateTime<Utc>>,
}

/// `GET .../runs/{runId}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedRunStatus {
    /// Session id.
    #[serde(default)]
    pub session_id: String,
    /// Run id.
    #[serde(default)]
    pub run_id: String,
    /// Still running.
    #[serde(default)]
    pub running: bool,
    /// Exit code once finished (`None` when the session died under it).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Why it ended without a code (e.g. `session terminated`).
    #[serde(default)]
    pub error: Option<String>,
    /// Start time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub started_at: Option<DateTime<Utc>>,
    /// End time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub finished_at: Option<DateTime<Utc>>,
}

/// A slice of a background run's output and the cursor to continue from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedRunLogs {
    /// Output from the requested cursor.
    pub text: String,
    /// Cursor of the next read (`EXECD-ISOLATED-TAIL-CURSOR`, else cursor + bytes read).
    pub cursor: u64,
}

/// Whether one hardening layer is enforced.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HardeningLayerState {
    /// `active`, `disabled`, `degraded` or `unsupported`.
    #[serde(default)]
    pub state: Option<String>,
    /// Why not active.
    #[serde(default)]
    pub message: Option<String>,
}

/// execd's init mode and workload hardening.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HardeningStatus {
    /// `pid1`, `subreaper` or `none`.
    #[serde(default)]
    pub init_mode: Option<String>,
    /// PID 1 signal shield.
    #[serde(default)]
    pub signal_shield: bool,
    /// Capability reduction.
    #[serde(default)]
    pub cap_drop: Option<HardeningLayerState>,
    /// Seccomp floor.
    #[serde(default)]
    pub seccomp: Option<HardeningLayerState>,
    /// Landlock.
    #[serde(default)]
    pub landlock: Option<HardeningLayerState>,
    /// eBPF observation.
    #[serde(default)]
    pub ebpf: Option<HardeningLayerState>,
}

/// `GET /v1/isolated/capabilities`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct IsolatedCapabilities {
    /// Sessions can be made.
    #[serde(default)]
    pub available: bool,
    /// The isolator's name.
    #[serde(default)]
    pub isolator: Option<String>,
    /// Its version.
    #[serde(default)]
    pub version: Option<String>,
    /// Why unavailable.
    #[serde(default)]
    pub message: Option<String>,
    /// setpriv uid mode works.
    #[serde(default)]
    pub setpriv_available: bool,
    /// userns uid mode works.
    #[serde(default)]
    pub userns_available: bool,
    /// `commit` implemented.
    #[serde(default)]
    pub commit_supported: bool,
    /// `diff` implemented.
    #[serde(default)]
    pub diff_supported: bool,
    /// Hardening report.
    #[serde(default)]
    pub hardening: Option<HardeningStatus>,
}
