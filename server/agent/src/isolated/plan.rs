//! From a validated request to the launcher's mount plan ([`LaunchSpec`]).
//!
//! The agent plans; the launcher ([`super::launcher`]) only executes. Planning needs
//! the sandbox's own mount table, because a mount namespace made inside a user
//! namespace *locks* every mount it inherits: a locked mount cannot be unmounted, and
//! overlayfs refuses a lower directory with locked mounts below it. So:
//! - the session's root is the sandbox's tree bound recursively and remounted
//!   read-only, unless an entry says otherwise for `/`;
//! - an overlay at a path with sandbox mounts below it (`/`, or `/etc` which holds the
//!   bound `/etc/hosts`) takes its lower layer from the sandbox's root filesystem view
//!   (`/.opensandbox/rootfs`, a plain read-only bind of the image's root the OCI
//!   runtime backend adds) and the mounts below are bound back on top, read-only;
//!   elsewhere (a path inside `/workspace` with a volume below) it is a 400;
//! - `/proc`, `/dev`, `/tmp` and `/run` are the session's own (see the launcher), and
//!   the agent's state below `/tmp/.execd` is covered in every session.
//!
//! Sources of `extra_writable` and `binds` must exist and resolve (symlinks followed)
//! inside [`ALLOWED_WRITABLE`] (upstream's default allowlist); the resolved path is
//! what gets mounted.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::model::{MountMode, Profile, SessionSpec, UidMode};
use crate::error::ApiError;

/// Where `extra_writable` and `binds` sources may come from.
pub const ALLOWED_WRITABLE: [&str; 4] = ["/workspace", "/mnt", "/media", "/data"];

/// The sandbox's root filesystem without the mounts on top of it (set up by the OCI
/// runtime backend; absent elsewhere).
pub const ROOTFS_VIEW: &str = "/.opensandbox/rootfs";

/// Inside every session: the directory background runs write their output and exit
/// code to (bound from the session's state directory).
pub const RUNS_DIR_INSIDE: &str = "/run/opensandbox";

/// Environment variables never passed into a session unless listed in an `allow`
/// passthrough (upstream's strict blacklist; matched case-insensitively).
const ENV_BLACKLIST: [&str; 9] = [
    "*_API_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*_PASSWORD",
    "AWS_*",
    "ALI_*",
    "ALIYUN_*",
    "K8S_*",
    "KUBE_*",
];

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("INVALID_REQUEST_BODY", message)
}

/// Where an overlay's upper and work directories live.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum Upper {
    /// Directories in the session's state (on the sandbox's `/tmp` filesystem).
    Dir { upper: PathBuf, work: PathBuf },
    /// A tmpfs the launcher mounts here, gone with the session.
    Tmpfs { mount: PathBuf },
}

/// How the session's `/` is made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum RootStep {
    /// The sandbox's tree, read-only.
    ReadOnly,
    /// The sandbox's tree as it is (an `rw` entry for `/`).
    Writable,
    /// Copy-on-write over the sandbox's root filesystem.
    Overlay { lower: PathBuf, upper: Upper },
}

/// One mount, made after the root; `target` is a path inside the session.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum Step {
    Overlay {
        target: PathBuf,
        lower: PathBuf,
        upper: Upper,
    },
    /// A recursive bind of a sandbox path.
    Bind {
        source: PathBuf,
        target: PathBuf,
        readonly: bool,
    },
    Tmpfs {
        target: PathBuf,
        mode: u32,
    },
    /// The session's `/proc` (see the launcher).
    Proc,
    /// The session's `/dev`.
    Dev,
    /// An empty read-only tmpfs over `target`, when it exists in the session.
    Cover {
        target: PathBuf,
    },
}

/// Everything the launcher needs, as JSON on its command line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// An empty directory (in the sandbox) the new root is built on.
    pub new_root: PathBuf,
    pub root: RootStep,
    pub steps: Vec<Step>,
    pub share_net: bool,
    pub hostname: String,
    /// `/proc/PID/uid_map` and `gid_map` of the session, written by the launcher.
    pub uid_map: String,
    pub gid_map: String,
    /// The ids the shell runs as, inside the session's user namespace.
    pub uid: u32,
    pub gid: u32,
    pub workdir: PathBuf,
    pub env: Vec<String>,
}

/// The sandbox facts a plan depends on (read by the agent; fixed in tests).
#[derive(Debug, Clone)]
pub struct Host {
    /// Every mount point of the sandbox, as the agent sees it.
    pub mounts: Vec<PathBuf>,
    /// `/proc/self/uid_map` and `gid_map` of the agent: `(inside, outside, count)`.
    pub uid_ranges: Vec<(u32, u32, u32)>,
    pub gid_ranges: Vec<(u32, u32, u32)>,
    /// The agent's own uid and gid.
    pub uid: u32,
    pub gid: u32,
    pub env: Vec<(String, String)>,
    /// Where the agent keeps isolated state (`/tmp/.execd/...`), covered in sessions.
    pub state_root: PathBuf,
}

impl Host {
    /// The live facts of this agent.
    pub fn read(state_root: &Path) -> Result<Host, ApiError> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| ApiError::runtime(format!("cannot read the mount table: {e}")))?;
        let ranges = |file: &str| -> Result<Vec<(u32, u32, u32)>, ApiError> {
            let text = std::fs::read_to_string(file)
                .map_err(|e| ApiError::runtime(format!("cannot read {file}: {e}")))?;
            Ok(parse_id_map(&text))
        };
        Ok(Host {
            mounts: parse_mountinfo(&mountinfo),
            uid_ranges: ranges("/proc/self/uid_map")?,
            gid_ranges: ranges("/proc/self/gid_map")?,
            // SAFETY: getuid/getgid have no preconditions.
            uid: unsafe { libc::getuid() },
            // SAFETY: as above.
            gid: unsafe { libc::getgid() },
            env: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            state_root: state_root.to_path_buf(),
        })
    }

    fn is_mount(&self, path: &Path) -> bool {
        self.mounts.iter().any(|m| m == path)
    }
}

/// Mount points from `/proc/self/mountinfo` (field 5, octal escapes decoded).
pub fn parse_mountinfo(text: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = text
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape_octal(field)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `\040` and friends, as the kernel escapes mount points.
pub fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let value = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                if let Ok(value) = u8::try_from(value) {
                    out.push(value);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `inside outside count` lines of a uid/gid map.
pub fn parse_id_map(text: &str) -> Vec<(u32, u32, u32)> {
    text.lines()
        .filter_map(|line| {
            let mut it = line.split_whitespace().map(|f| f.parse::<u32>().ok());
            Some((it.next()??, it.next()??, it.next()??))
        })
        .collect()
}

fn mapped(ranges: &[(u32, u32, u32)], id: u32) -> bool {
    ranges.iter().any(|&(inside, _, count)| {
        id >= inside && u64::from(id) < u64::from(inside) + u64::from(count)
    })
}

/// The identity map of every id the agent has (so owners read the same inside).
fn identity_map(ranges: &[(u32, u32, u32)]) -> String {
    ranges
        .iter()
        .map(|&(inside, _, count)| format!("{inside} {inside} {count}\n"))
        .collect()
}

fn is_under(path: &Path, dir: &Path) -> bool {
    path != dir && path.starts_with(dir)
}

/// The mounts below `path` not themselves below another of them.
fn top_children(host: &Host, path: &Path) -> Vec<PathBuf> {
    let below: Vec<&PathBuf> = host.mounts.iter().filter(|m| is_under(m, path)).collect();
    below
        .iter()
        .filter(|m| !below.iter().any(|other| is_under(m, other)))
        .map(|m| (*m).clone())
        .collect()
}

/// Sandbox mounts the session replaces or must not see: never bound back.
fn replaced(path: &Path, host: &Host) -> bool {
    ["/proc", "/dev", "/tmp", "/run", ROOTFS_VIEW]
        .iter()
        .any(|special| path.starts_with(special))
        || path.starts_with(&host.state_root)
}

/// The lower directory of an overlay at `path`, and the sandbox mounts to bind back
/// over it.
fn overlay_lower(host: &Host, path: &Path) -> Result<(PathBuf, Vec<PathBuf>), ApiError> {
    let children = top_children(host, path);
    if children.is_empty() {
        return Ok((path.to_path_buf(), Vec::new()));
    }
    let containing = host
        .mounts
        .iter()
        .filter(|m| path.starts_with(m))
        .max_by_key(|m| m.as_os_str().len())
        .cloned()
        .unwrap_or_else(|| PathBuf::from("/"));
    let view = Path::new(ROOTFS_VIEW);
    if containing != Path::new("/") || !host.is_mount(view) {
        let names: Vec<String> = children.iter().map(|c| c.display().to_string()).collect();
        return Err(invalid(format!(
            "cannot overlay {}: the sandbox has mounts below it ({}); overlay a directory \
             without mounts below it, or bind it with mode rw/ro",
            path.display(),
            names.join(", ")
        )));
    }
    let relative = path.strip_prefix("/").unwrap_or(path);
    let rebinds = children
        .into_iter()
        .filter(|c| !replaced(c, host))
        .collect();
    Ok((view.join(relative), rebinds))
}

/// A source path of `extra_writable`/`binds`: existing, resolved, inside the allowlist.
fn allowed_source(what: &str, source: &str) -> Result<PathBuf, ApiError> {
    let resolved = std::fs::canonicalize(source)
        .map_err(|e| invalid(format!("{what} {source:?} must be an existing path: {e}")))?;
    let allowed = ALLOWED_WRITABLE.iter().any(|dir| {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| PathBuf::from(dir));
        resolved.starts_with(&dir)
    });
    if !allowed {
        return Err(invalid(format!(
            "{what} {source:?} (resolved to {}) is not in allowlist ({})",
            resolved.display(),
            ALLOWED_WRITABLE.join(", ")
        )));
    }
    Ok(resolved)
}

fn env_blacklisted(key: &str) -> bool {
    let key = key.to_ascii_uppercase();
    ENV_BLACKLIST.iter().any(|pattern| {
        if let Some(suffix) = pattern.strip_prefix('*') {
            key.ends_with(suffix)
        } else if let Some(prefix) = pattern.strip_suffix('*') {
            key.starts_with(prefix)
        } else {
            key == *pattern
        }
    })
}

/// The session's environment from the agent's, per `env_passthrough`.
pub fn session_env(spec: &SessionSpec, agent_env: &[(String, String)]) -> Vec<String> {
    let keep: Box<dyn Fn(&str) -> bool> = match &spec.env_passthrough {
        Some(p) if p.mode.as_deref() == Some("allow") => {
            let keys = p.keys.clone();
            Box::new(move |k| keys.iter().any(|key| key == k))
        }
        Some(p) if !p.keys.is_empty() => {
            let keys = p.keys.clone();
            Box::new(move |k| !keys.iter().any(|key| key == k))
        }
        _ => Box::new(|k| !env_blacklisted(k)),
    };
    agent_env
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

fn depth(path: &str) -> usize {
    path.split('/').filter(|s| !s.is_empty()).count()
}

/// The launch plan of `spec` in `state_dir` (this session's directory, created).
pub fn plan(spec: &SessionSpec, host: &Host, state_dir: &Path) -> Result<LaunchSpec, ApiError> {
    let new_root = state_dir.join("root");
    let upper_for = |index: usize, persist: bool| {
        let base = state_dir.join(format!("overlay-{index}"));
        if persist {
            Upper::Dir {
                upper: base.join("upper"),
                work: base.join("work"),
            }
        } else {
            Upper::Tmpfs { mount: base }
        }
    };

    let mut steps = Vec::new();
    let root_entry = spec.mounts.iter().position(|m| m.path == "/");
    let root = match root_entry.map(|i| (i, &spec.mounts[i])) {
        None => RootStep::ReadOnly,
        Some((_, m)) if m.mode == MountMode::Ro => RootStep::ReadOnly,
        Some((_, m)) if m.mode == MountMode::Rw => RootStep::Writable,
        Some((i, m)) => {
            let (lower, rebinds) = overlay_lower(host, Path::new("/"))?;
            for child in rebinds {
                steps.push(Step::Bind {
                    source: child.clone(),
                    target: child,
                    readonly: true,
                });
            }
            RootStep::Overlay {
                lower,
                upper: upper_for(i, m.persist),
            }
        }
    };

    steps.push(Step::Proc);
    steps.push(Step::Dev);
    steps.push(match spec.profile {
        Profile::Strict => Step::Tmpfs {
            target: "/tmp".into(),
            mode: 0o1777,
        },
        Profile::Balanced => Step::Bind {
            source: "/tmp".into(),
            target: "/tmp".into(),
            readonly: false,
        },
    });
    steps.push(Step::Tmpfs {
        target: "/run".into(),
        mode: 0o755,
    });
    steps.push(Step::Bind {
        source: state_dir.join("runs"),
        target: RUNS_DIR_INSIDE.into(),
        readonly: false,
    });

    // Shallow first, so a nested entry shadows its ancestor (upstream's order).
    let mut order: Vec<usize> = (0..spec.mounts.len())
        .filter(|&i| Some(i) != root_entry)
        .collect();
    order.sort_by_key(|&i| depth(&spec.mounts[i].path));
    for i in order {
        let m = &spec.mounts[i];
        let path = PathBuf::from(&m.path);
        match m.mode {
            MountMode::Overlay => {
                let (lower, rebinds) = overlay_lower(host, &path)?;
                steps.push(Step::Overlay {
                    target: path,
                    lower,
                    upper: upper_for(i, m.persist),
                });
                for child in rebinds {
                    steps.push(Step::Bind {
                        source: child.clone(),
                        target: child,
                        readonly: true,
                    });
                }
            }
            MountMode::Rw | MountMode::Ro => steps.push(Step::Bind {
                source: path.clone(),
                target: path,
                readonly: m.mode == MountMode::Ro,
            }),
        }
    }
    for p in &spec.extra_writable {
        let resolved = allowed_source("extra_writable path", p)?;
        steps.push(Step::Bind {
            source: resolved.clone(),
            target: resolved,
            readonly: false,
        });
    }
    for (i, b) in spec.binds.iter().enumerate() {
        let resolved = allowed_source(&format!("binds[{i}].source"), &b.source)?;
        let target = match b.dest.as_deref() {
            Some(dest) if !dest.is_empty() => PathBuf::from(dest),
            _ => resolved.clone(),
        };
        steps.push(Step::Bind {
            source: resolved,
            target,
            readonly: b.readonly.unwrap_or(false),
        });
    }
    // Whatever the entries exposed, the agent's state stays out of sight.
    if let Some(top) = host
        .state_root
        .ancestors()
        .find(|a| a.parent() == Some(Path::new("/tmp")))
    {
        steps.push(Step::Cover {
            target: top.to_path_buf(),
        });
    }

    let (uid, gid, uid_map, gid_map) = identities(spec, host)?;
    let workdir = spec
        .mounts
        .first()
        .map(|m| PathBuf::from(&m.path))
        .unwrap_or_else(|| PathBuf::from("/"));
    Ok(LaunchSpec {
        new_root,
        root,
        steps,
        share_net: spec.share_net,
        hostname: "sandbox".into(),
        uid_map,
        gid_map,
        uid,
        gid,
        workdir,
        env: session_env(spec, &host.env),
    })
}

/// The ids inside the session and the maps that give them (503 `NOT_SUPPORTED` when
/// the sandbox cannot represent them, as upstream answers an impossible switch).
fn identities(spec: &SessionSpec, host: &Host) -> Result<(u32, u32, String, String), ApiError> {
    let uid = spec.uid.unwrap_or(host.uid);
    let gid = spec.gid.unwrap_or(host.gid);
    let not_supported = |what: &str, id: u32| {
        ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "NOT_SUPPORTED",
            format!(
                "{what} {id} is not mapped in this sandbox, so the session cannot switch to it"
            ),
        )
    };
    match spec.uid_mode {
        UidMode::Setpriv => {
            if !mapped(&host.uid_ranges, uid) {
                return Err(not_supported("uid", uid));
            }
            if !mapped(&host.gid_ranges, gid) {
                return Err(not_supported("gid", gid));
            }
            Ok((
                uid,
                gid,
                identity_map(&host.uid_ranges),
                identity_map(&host.gid_ranges),
            ))
        }
        // The requested ids stand for the agent's own, as bubblewrap's --uid/--gid do.
        UidMode::Userns => Ok((
            uid,
            gid,
            format!("{uid} {} 1\n", host.uid),
            format!("{gid} {} 1\n", host.gid),
        )),
    }
}

/// The owner the files routes give new files of this session (the agent's ids in
/// `userns` mode, where the session's ids stand for them).
pub fn file_owner(spec: &SessionSpec, host: &Host) -> (u32, u32) {
    match spec.uid_mode {
        UidMode::Setpriv => (spec.uid.unwrap_or(host.uid), spec.gid.unwrap_or(host.gid)),
        UidMode::Userns => (host.uid, host.gid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isolated::model::CreateRequest;

    fn host() -> Host {
        Host {
            mounts: [
                "/",
                "/proc",
                "/dev",
                "/dev/pts",
                "/sys",
                "/tmp",
                "/root",
                "/workspace",
                "/workspace/vol",
                "/etc/hosts",
                "/.opensandbox/opensandbox-server",
                ROOTFS_VIEW,
            ]
            .iter()
            .map(PathBuf::from)
            .collect(),
            uid_ranges: vec![(0, 1_000_000, 65536)],
            gid_ranges: vec![(0, 1_000_000, 65536)],
            uid: 0,
            gid: 0,
            env: vec![
                ("PATH".into(), "/bin".into()),
                ("OPENAI_API_KEY".into(), "k".into()),
                ("AWS_REGION".into(), "x".into()),
                ("HOME".into(), "/root".into()),
            ],
            state_root: PathBuf::from("/tmp/.execd/isolated"),
        }
    }

    fn spec(json: serde_json::Value) -> SessionSpec {
        serde_json::from_value::<CreateRequest>(json)
            .unwrap_or_else(|e| panic!("{e}"))
            .validate()
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_workspace_overlay_over_a_plain_directory_uses_it_as_lower() {
        let s = spec(serde_json::json!({"workspace": {"path": "/srv/app"}}));
        let p = plan(&s, &host(), Path::new("/tmp/.execd/isolated/s1"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.root, RootStep::ReadOnly);
        assert!(p.steps.contains(&Step::Overlay {
            target: "/srv/app".into(),
            lower: "/srv/app".into(),
            upper: Upper::Dir {
                upper: "/tmp/.execd/isolated/s1/overlay-0/upper".into(),
                work: "/tmp/.execd/isolated/s1/overlay-0/work".into(),
            },
        }));
        assert_eq!(
            p.steps.last(),
            Some(&Step::Cover {
                target: "/tmp/.execd".into()
            })
        );
        assert_eq!(p.workdir, Path::new("/srv/app"));
        assert_eq!(p.uid_map, "0 0 65536\n");
        assert!(p.env.contains(&"PATH=/bin".to_string()));
        assert!(!p
            .env
            .iter()
            .any(|e| e.starts_with("OPENAI_API_KEY") || e.starts_with("AWS_")));
    }

    #[test]
    fn an_overlay_with_mounts_below_comes_from_the_rootfs_view_or_is_refused() {
        let h = host();
        let s = spec(
            serde_json::json!({"overlays": [{"path": "/etc"}, {"path": "/", "persist": false}]}),
        );
        let p = plan(&s, &h, Path::new("/st")).unwrap_or_else(|e| panic!("{e}"));
        match &p.root {
            RootStep::Overlay { lower, upper } => {
                assert_eq!(lower, Path::new(ROOTFS_VIEW));
                assert_eq!(
                    upper,
                    &Upper::Tmpfs {
                        mount: "/st/overlay-1".into()
                    }
                );
            }
            other => panic!("{other:?}"),
        }
        // /workspace and /etc/hosts come back read-only; /proc, /dev, /tmp, the view do not.
        let binds: Vec<&PathBuf> = p
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Bind {
                    target,
                    readonly: true,
                    ..
                } => Some(target),
                _ => None,
            })
            .collect();
        assert!(binds.contains(&&PathBuf::from("/workspace")));
        assert!(binds.contains(&&PathBuf::from("/etc/hosts")));
        assert!(!binds
            .iter()
            .any(|b| b.starts_with("/proc") || b.starts_with("/tmp")));
        assert!(p
            .steps
            .iter()
            .any(|s| matches!(s, Step::Overlay { target, lower, .. }
            if target == Path::new("/etc") && lower == &Path::new(ROOTFS_VIEW).join("etc"))));

        let refused = plan(
            &spec(serde_json::json!({"workspace": {"path": "/workspace"}})),
            &h,
            Path::new("/st"),
        )
        .unwrap_err();
        assert!(
            refused.message.contains("/workspace/vol"),
            "{}",
            refused.message
        );
    }

    #[test]
    fn setpriv_needs_mapped_ids_and_userns_maps_them_to_the_agent() {
        let h = host();
        let err = plan(
            &spec(serde_json::json!({"workspace": {"path": "/w"}, "uid": 70000})),
            &h,
            Path::new("/st"),
        )
        .unwrap_err();
        assert_eq!(err.status.as_u16(), 503);
        assert_eq!(err.code, "NOT_SUPPORTED");
        let p = plan(
            &spec(serde_json::json!({"workspace": {"path": "/w"}, "uid": 1000, "gid": 1000, "uid_mode": "userns"})),
            &h,
            Path::new("/st"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((p.uid, p.gid), (1000, 1000));
        assert_eq!(p.uid_map, "1000 0 1\n");
    }

    #[test]
    fn sources_outside_the_allowlist_are_refused() {
        let err = plan(
            &spec(serde_json::json!({"workspace": {"path": "/w"}, "extra_writable": ["/etc"]})),
            &host(),
            Path::new("/st"),
        )
        .unwrap_err();
        assert!(err.message.contains("not in allowlist"), "{}", err.message);
        let err = plan(
            &spec(serde_json::json!({"workspace": {"path": "/w"}, "binds": [{"source": "/nonexistent-x"}]})),
            &host(),
            Path::new("/st"),
        )
        .unwrap_err();
        assert!(err.message.contains("existing path"), "{}", err.message);
    }

    #[test]
    fn env_passthrough_modes() {
        let h = host();
        let allow = spec(serde_json::json!({"workspace": {"path": "/w"},
            "env_passthrough": {"mode": "allow", "keys": ["AWS_REGION"]}}));
        assert_eq!(
            session_env(&allow, &h.env),
            vec!["AWS_REGION=x".to_string()]
        );
        let deny = spec(serde_json::json!({"workspace": {"path": "/w"},
            "env_passthrough": {"mode": "deny", "keys": ["HOME"]}}));
        let env = session_env(&deny, &h.env);
        assert!(!env.iter().any(|e| e.starts_with("HOME=")));
        assert!(env.iter().any(|e| e.starts_with("OPENAI_API_KEY=")));
    }

    #[test]
    fn mountinfo_and_id_maps_parse() {
        let info = "22 27 0:21 / /proc rw - proc proc rw\n30 27 0:40 / /a\\040b rw - tmpfs t rw\n";
        assert_eq!(
            parse_mountinfo(info),
            vec![PathBuf::from("/a b"), PathBuf::from("/proc")]
        );
        assert_eq!(
            parse_id_map("         0    1000000      65536\n"),
            vec![(0, 1_000_000, 65536)]
        );
    }
}
