//! The wire models of `/v1/isolated/*` (protocol.md §3.5, upstream OSEP-0013): snake_case
//! JSON, and the validation of a create request into an effective [`SessionSpec`].
//!
//! Unknown request members are ignored, as upstream's Go decoder does; every known
//! member with a bad value is a 400 `INVALID_REQUEST_BODY` naming it.

use serde::{Deserialize, Serialize};

use crate::error::ApiError;

/// At most this many mounts per session, `workspace` included (upstream's limit).
pub const MAX_OVERLAYS: usize = 16;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("INVALID_REQUEST_BODY", message)
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CreateRequest {
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub workspace: Option<WorkspaceSpec>,
    #[serde(default)]
    pub overlays: Option<Vec<OverlaySpec>>,
    #[serde(default)]
    pub extra_writable: Option<Vec<String>>,
    #[serde(default)]
    pub binds: Option<Vec<BindSpec>>,
    #[serde(default)]
    pub share_net: Option<bool>,
    #[serde(default)]
    pub env_passthrough: Option<EnvPassthrough>,
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
    #[serde(default)]
    pub uid_mode: Option<String>,
    #[serde(default)]
    pub idle_timeout_seconds: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct WorkspaceSpec {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct OverlaySpec {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persist: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct BindSpec {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readonly: Option<bool>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct EnvPassthrough {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default)]
    pub keys: Vec<String>,
}

/// How a mount entry shows its directory inside the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MountMode {
    /// Copy-on-write over the sandbox's directory.
    Overlay,
    /// The sandbox's directory itself, writable.
    Rw,
    /// The sandbox's directory, read-only.
    Ro,
}

impl MountMode {
    fn parse(what: &str, value: Option<&str>) -> Result<Self, ApiError> {
        match value {
            None | Some("") | Some("overlay") => Ok(Self::Overlay),
            Some("rw") => Ok(Self::Rw),
            Some("ro") => Ok(Self::Ro),
            Some(other) => Err(invalid(format!(
                "invalid {what} mode {other:?}: must be \"rw\", \"overlay\" or \"ro\""
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Overlay => "overlay",
            Self::Rw => "rw",
            Self::Ro => "ro",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// A private `/tmp` (tmpfs).
    Strict,
    /// The sandbox's `/tmp`, shared and writable.
    Balanced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UidMode {
    /// Real `setresuid`/`setresgid` to the requested ids (mapped as themselves).
    Setpriv,
    /// A user namespace where the requested ids stand for the agent's (root).
    Userns,
}

/// One effective mount entry (workspace first, then `overlays`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub path: String,
    pub mode: MountMode,
    /// Overlay mode only: a disk upper directory (`true`) or a tmpfs.
    pub persist: bool,
}

/// A validated create request: what the session is.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    pub profile: Profile,
    pub mounts: Vec<Mount>,
    /// Whether the request used the legacy `workspace` alone (echoed back as such).
    pub legacy_workspace: Option<WorkspaceSpec>,
    pub extra_writable: Vec<String>,
    pub binds: Vec<BindSpec>,
    pub share_net: bool,
    pub env_passthrough: Option<EnvPassthrough>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub uid_mode: UidMode,
    pub idle_timeout_seconds: u64,
}

/// An absolute path without `.`/`..` segments, repeated or trailing `/` (`/` itself
/// is clean).
pub fn is_clean_absolute(path: &str) -> bool {
    if path == "/" {
        return true;
    }
    path.starts_with('/')
        && !path.ends_with('/')
        && !path.contains('\0')
        && path[1..]
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

impl CreateRequest {
    pub fn validate(self) -> Result<SessionSpec, ApiError> {
        let profile = match self.profile.as_deref() {
            None | Some("") | Some("strict") => Profile::Strict,
            Some("balanced") => Profile::Balanced,
            Some(other) => {
                return Err(invalid(format!(
                    "unknown isolation profile {other:?}: must be \"strict\" or \"balanced\""
                )))
            }
        };
        let uid_mode = match self.uid_mode.as_deref() {
            None | Some("") | Some("setpriv") => UidMode::Setpriv,
            Some("userns") => UidMode::Userns,
            Some(other) => {
                return Err(invalid(format!(
                    "invalid uid_mode {other:?}: must be \"setpriv\" or \"userns\""
                )))
            }
        };
        if self.workspace.is_none() && self.overlays.as_ref().is_none_or(Vec::is_empty) {
            return Err(invalid("workspace or overlays is required"));
        }
        let mut mounts = Vec::new();
        if let Some(ws) = &self.workspace {
            let mode = MountMode::parse("workspace", ws.mode.as_deref())?;
            mounts.push(Mount {
                path: ws.path.clone(),
                mode,
                persist: true,
            });
        }
        for (i, overlay) in self.overlays.iter().flatten().enumerate() {
            let mode = MountMode::parse(&format!("overlays[{i}]"), overlay.mode.as_deref())?;
            if overlay.persist.is_some() && mode != MountMode::Overlay {
                return Err(invalid(format!(
                    "overlays[{i}].persist applies to overlay mode only (mode is {})",
                    mode.as_str()
                )));
            }
            mounts.push(Mount {
                path: overlay.path.clone(),
                mode,
                persist: overlay.persist.unwrap_or(true),
            });
        }
        if mounts.len() > MAX_OVERLAYS {
            return Err(invalid(format!(
                "at most {MAX_OVERLAYS} mounts per session (workspace included), got {}",
                mounts.len()
            )));
        }
        for (i, m) in mounts.iter().enumerate() {
            if !is_clean_absolute(&m.path) {
                return Err(invalid(format!(
                    "mount path {:?} must be absolute and clean (no trailing slash, no . or .. segments)",
                    m.path
                )));
            }
            if mounts[..i].iter().any(|other| other.path == m.path) {
                return Err(invalid(format!("mount path {:?} is given twice", m.path)));
            }
        }
        let extra_writable = self.extra_writable.unwrap_or_default();
        for p in &extra_writable {
            if !p.starts_with('/') || p.contains('\0') {
                return Err(invalid(format!(
                    "extra_writable path {p:?} must be an absolute path"
                )));
            }
        }
        let binds = self.binds.unwrap_or_default();
        for (i, b) in binds.iter().enumerate() {
            if b.source.is_empty() {
                return Err(invalid(format!("binds[{i}].source is required")));
            }
            if !b.source.starts_with('/') || b.source.contains('\0') {
                return Err(invalid(format!(
                    "binds[{i}].source {:?} must be an absolute path",
                    b.source
                )));
            }
            if let Some(dest) = &b.dest {
                if !dest.is_empty() && !is_clean_absolute(dest) {
                    return Err(invalid(format!(
                        "binds[{i}].dest {dest:?} must be an absolute, clean path"
                    )));
                }
            }
        }
        if let Some(env) = &self.env_passthrough {
            match env.mode.as_deref() {
                None | Some("") | Some("deny") | Some("allow") => {}
                Some(other) => {
                    return Err(invalid(format!(
                        "invalid env_passthrough mode {other:?}: must be \"deny\" or \"allow\""
                    )))
                }
            }
        }
        let idle_timeout_seconds = match self.idle_timeout_seconds {
            None => 0,
            Some(n) if n < 0 => {
                return Err(invalid(format!(
                    "idle_timeout_seconds must be >= 0, got {n}"
                )))
            }
            Some(n) => n.unsigned_abs(),
        };
        let legacy_workspace = match (&self.workspace, &self.overlays) {
            (Some(ws), None) => Some(ws.clone()),
            (Some(ws), Some(o)) if o.is_empty() => Some(ws.clone()),
            _ => None,
        };
        Ok(SessionSpec {
            profile,
            mounts,
            legacy_workspace,
            extra_writable,
            binds,
            // Upstream shares the sandbox's network unless asked not to.
            share_net: self.share_net.unwrap_or(true),
            env_passthrough: self.env_passthrough,
            uid: self.uid,
            gid: self.gid,
            uid_mode,
            idle_timeout_seconds,
        })
    }
}

#[derive(Debug, Serialize)]
pub struct CreateResponse {
    pub session_id: String,
    pub created_at: String,
}

/// `GET /v1/isolated/session/{id}`: the state and an echo of the creation parameters.
#[derive(Debug, Serialize)]
pub struct SessionState {
    pub status: &'static str,
    pub created_at: String,
    pub last_run_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_remaining_seconds: Option<u64>,
    pub profile: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceSpec>,
    pub overlays: Vec<OverlaySpec>,
    pub extra_writable: Vec<String>,
    pub binds: Vec<BindSpec>,
    pub share_net: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_passthrough: Option<EnvPassthrough>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
    pub uid_mode: &'static str,
    pub idle_timeout_seconds: u64,
}

#[derive(Debug, Serialize)]
pub struct SessionSummary {
    pub session_id: String,
    pub status: &'static str,
    pub created_at: String,
    pub last_run_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_remaining_seconds: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct ListResponse {
    pub sessions: Vec<SessionSummary>,
}

#[derive(Debug, Deserialize)]
pub struct RunRequest {
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub envs: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    pub timeout_seconds: Option<i64>,
    #[serde(default)]
    pub background: bool,
}

impl RunRequest {
    /// Checks the request; returns the foreground time limit (none for background runs).
    pub fn validate(&self) -> Result<Option<std::time::Duration>, ApiError> {
        if self.code.trim().is_empty() {
            return Err(invalid("code is required"));
        }
        if self.code.contains('\0') {
            return Err(invalid("code contains a NUL byte"));
        }
        for (key, value) in self.envs.iter().flatten() {
            let valid_key = !key.is_empty()
                && !key.starts_with(|c: char| c.is_ascii_digit())
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid_key {
                return Err(invalid(format!(
                    "envs key {key:?} is not a shell variable name"
                )));
            }
            if value.contains('\0') {
                return Err(invalid(format!("envs value of {key} contains a NUL byte")));
            }
        }
        match self.timeout_seconds {
            Some(n) if n < 0 => Err(invalid(format!("timeout_seconds must be >= 0, got {n}"))),
            // Foreground only: background runs are not time-limited (upstream).
            Some(n) if n > 0 && !self.background => {
                // At most a century, like the command timeouts.
                let n = n.min(100 * 365 * 86_400).unsigned_abs();
                Ok(Some(std::time::Duration::from_secs(n)))
            }
            _ => Ok(None),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct BackgroundRunResponse {
    pub session_id: String,
    pub run_id: String,
    pub started_at: String,
}

#[derive(Debug, Serialize, Clone)]
pub struct RunStatus {
    pub session_id: String,
    pub run_id: String,
    pub running: bool,
    pub exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Serialize, Default)]
pub struct HardeningLayer {
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Serialize, Default)]
pub struct Hardening {
    pub init_mode: &'static str,
    pub signal_shield: bool,
    pub cap_drop: HardeningLayer,
    pub seccomp: HardeningLayer,
    pub landlock: HardeningLayer,
    pub ebpf: HardeningLayer,
}

#[derive(Debug, Serialize)]
pub struct Capabilities {
    pub available: bool,
    pub isolator: &'static str,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub setpriv_available: bool,
    pub userns_available: bool,
    pub commit_supported: bool,
    pub diff_supported: bool,
    pub hardening: Hardening,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: serde_json::Value) -> Result<SessionSpec, ApiError> {
        serde_json::from_value::<CreateRequest>(json)
            .unwrap_or_else(|e| panic!("{e}"))
            .validate()
    }

    #[test]
    fn workspace_is_sugar_for_the_first_overlay() {
        let spec = req(serde_json::json!({
            "workspace": {"path": "/workspace"},
            "overlays": [{"path": "/data", "mode": "rw"}]
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.mounts.len(), 2);
        assert_eq!(spec.mounts[0].path, "/workspace");
        assert_eq!(spec.mounts[0].mode, MountMode::Overlay);
        assert_eq!(spec.mounts[1].mode, MountMode::Rw);
        assert!(spec.legacy_workspace.is_none());
        assert_eq!(spec.profile, Profile::Strict);
        assert!(spec.share_net);
    }

    #[test]
    fn bad_requests_name_the_member() {
        let cases = [
            (serde_json::json!({}), "workspace or overlays"),
            (serde_json::json!({"overlays": []}), "workspace or overlays"),
            (
                serde_json::json!({"workspace": {"path": "rel"}}),
                "absolute",
            ),
            (serde_json::json!({"workspace": {"path": "/a/"}}), "clean"),
            (
                serde_json::json!({"workspace": {"path": "/a/../b"}}),
                "clean",
            ),
            (
                serde_json::json!({"workspace": {"path": "/a", "mode": "rwx"}}),
                "workspace mode",
            ),
            (
                serde_json::json!({"overlays": [{"path": "/a"}, {"path": "/a"}]}),
                "twice",
            ),
            (
                serde_json::json!({"overlays": [{"path": "/a", "mode": "rw", "persist": true}]}),
                "persist",
            ),
            (
                serde_json::json!({"workspace": {"path": "/a"}, "profile": "lax"}),
                "profile",
            ),
            (
                serde_json::json!({"workspace": {"path": "/a"}, "uid_mode": "x"}),
                "uid_mode",
            ),
            (
                serde_json::json!({"workspace": {"path": "/a"}, "binds": [{"source": "x"}]}),
                "binds[0].source",
            ),
            (
                serde_json::json!({"workspace": {"path": "/a"}, "env_passthrough": {"mode": "x"}}),
                "env_passthrough",
            ),
            (
                serde_json::json!({"workspace": {"path": "/a"}, "idle_timeout_seconds": -1}),
                "idle_timeout_seconds",
            ),
        ];
        for (json, needle) in cases {
            let err = req(json.clone()).unwrap_err();
            assert_eq!(err.code, "INVALID_REQUEST_BODY", "{json}");
            assert!(err.message.contains(needle), "{json}: {}", err.message);
        }
        let many: Vec<_> = (0..17)
            .map(|i| serde_json::json!({"path": format!("/d{i}")}))
            .collect();
        assert!(req(serde_json::json!({ "overlays": many })).is_err());
    }

    #[test]
    fn clean_paths() {
        for ok in ["/", "/a", "/a/b.c", "/a/..b"] {
            assert!(is_clean_absolute(ok), "{ok}");
        }
        for bad in ["", "a", "/a/", "//a", "/a/./b", "/a/..", "/a//b"] {
            assert!(!is_clean_absolute(bad), "{bad}");
        }
    }

    #[test]
    fn run_requests_need_code_and_sane_envs() {
        let run = |json: serde_json::Value| {
            serde_json::from_value::<RunRequest>(json)
                .unwrap_or_else(|e| panic!("{e}"))
                .validate()
        };
        assert!(run(serde_json::json!({"code": "  "})).is_err());
        assert!(run(serde_json::json!({"code": "x", "envs": {"A-B": "1"}})).is_err());
        assert!(run(serde_json::json!({"code": "x", "timeout_seconds": -1})).is_err());
        let limit = run(serde_json::json!({"code": "x", "timeout_seconds": 5}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(limit, Some(std::time::Duration::from_secs(5)));
        let bg = run(serde_json::json!({"code": "x", "timeout_seconds": 5, "background": true}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bg, None);
    }
}
