//! Confinement of user paths to the sandbox root.
//!
//! Clients name files by *sandbox paths*: absolute (`/workspace/a.txt`), relative to the
//! working directory (`a.txt`), or under the home directory (`~/a.txt`). The agent maps
//! them onto *host paths* below `config.root` and guarantees the result cannot leave
//! the root: `..` is normalised lexically and every symlink met on the way is resolved
//! component by component, an absolute link target being read relative to the root
//! (chroot semantics). Anything that would climb above the root is refused with
//! `INVALID_PATH`.
//!
//! When the root is `/` (the agent inside an isolated sandbox) this degenerates to
//! ordinary Linux path semantics, including `/..` being `/`.
//!
//! The check is done at resolution time; a process inside the sandbox racing to swap a
//! directory for a symlink between resolution and use is not defended against. That
//! only matters under `--isolation none` (root ≠ `/`), where the control plane already
//! warns that isolation is off.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use axum::http::StatusCode;

use crate::error::ApiError;
use crate::AgentConfig;

/// Upper bound of symlinks followed while resolving one path (Linux uses 40 too).
const MAX_SYMLINKS: usize = 40;

/// A user path mapped into the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The path on this machine's filesystem, below the root.
    pub host: PathBuf,
    /// The same path as the sandbox sees it: absolute, normalised, symlinks resolved
    /// (except possibly the last component). Safe to show to clients.
    pub sandbox: PathBuf,
}

/// Whether a symlink in the last component is followed (download, listing target)
/// or reported as itself (stat for `/files/info`, delete, rename).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Last {
    Follow,
    NoFollow,
}

fn invalid_path(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("INVALID_PATH", message)
}

fn escape_error(user_path: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "INVALID_PATH",
        format!("path {user_path:?} leaves the sandbox"),
    )
}

/// Whether the root is the whole filesystem, in which case `..` above it clamps like
/// the kernel does instead of being an error.
fn root_is_slash(config: &AgentConfig) -> bool {
    config.root == Path::new("/")
}

/// The sandbox path of a host path below the root, or `None` if it is outside.
pub fn host_to_sandbox(root: &Path, host: &Path) -> Option<PathBuf> {
    let rest = host.strip_prefix(root).ok()?;
    Some(Path::new("/").join(rest))
}

/// The working directory as the sandbox sees it (falls back to `/` when the configured
/// host workdir is not below the root).
pub fn sandbox_workdir(config: &AgentConfig) -> PathBuf {
    host_to_sandbox(&config.root, &config.workdir).unwrap_or_else(|| PathBuf::from("/"))
}

/// The home directory as the sandbox sees it: `$HOME` when it lies inside the sandbox,
/// the working directory otherwise (e.g. under `--isolation none`, where `$HOME` is the
/// host user's home).
pub fn sandbox_home(config: &AgentConfig) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match home {
        Some(h) if h.is_absolute() => {
            if root_is_slash(config) {
                h
            } else {
                host_to_sandbox(&config.root, &h).unwrap_or_else(|| sandbox_workdir(config))
            }
        }
        _ => sandbox_workdir(config),
    }
}

/// Lexically normalises `path` (absolute) into components below `/`.
/// `..` above the top clamps when `clamp` is set, else it is an escape.
fn push_normalised(
    parts: &mut Vec<OsString>,
    path: &Path,
    clamp: bool,
    user_path: &str,
) -> Result<(), ApiError> {
    for comp in path.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) => parts.clear(),
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() && !clamp {
                    return Err(escape_error(user_path));
                }
            }
            Component::Normal(name) => parts.push(name.to_os_string()),
        }
    }
    Ok(())
}

/// Turns the client's spelling into an absolute, lexically normalised sandbox path
/// (no filesystem access).
pub fn lexical(config: &AgentConfig, user_path: &str) -> Result<PathBuf, ApiError> {
    if user_path.is_empty() {
        return Err(invalid_path("path is empty"));
    }
    if user_path.contains('\0') {
        return Err(invalid_path("path contains a NUL byte"));
    }
    let absolute = if user_path == "~" {
        sandbox_home(config)
    } else if let Some(rest) = user_path.strip_prefix("~/") {
        sandbox_home(config).join(rest)
    } else if user_path.starts_with('/') {
        PathBuf::from(user_path)
    } else {
        sandbox_workdir(config).join(user_path)
    };
    let mut parts = Vec::new();
    push_normalised(&mut parts, &absolute, root_is_slash(config), user_path)?;
    Ok(parts_to_path(&parts))
}

fn parts_to_path(parts: &[OsString]) -> PathBuf {
    let mut p = PathBuf::from("/");
    for part in parts {
        p.push(part);
    }
    p
}

fn host_of(root: &Path, parts: &[OsString]) -> PathBuf {
    let mut p = root.to_path_buf();
    for part in parts {
        p.push(part);
    }
    p
}

/// Resolves a client path to a host path inside the root, following symlinks
/// component by component (the last one only with [`Last::Follow`]).
///
/// Components that do not exist yet are kept as spelled, so the result can name a file
/// about to be created.
pub fn resolve(config: &AgentConfig, user_path: &str, last: Last) -> Result<Resolved, ApiError> {
    let start = lexical(config, user_path)?;
    let clamp = root_is_slash(config);
    let root = config.root.as_path();

    // Components still to walk, front first; a symlink splices its target in front.
    let mut pending: Vec<OsString> = start
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            _ => None,
        })
        .collect();
    pending.reverse();
    let mut done: Vec<OsString> = Vec::new();
    let mut hops = 0usize;
    let mut missing = false;

    while let Some(name) = pending.pop() {
        if name == ".." {
            if done.pop().is_none() && !clamp {
                return Err(escape_error(user_path));
            }
            continue;
        }
        if name == "." {
            continue;
        }
        done.push(name);
        let is_last = pending.is_empty();
        if missing || (is_last && last == Last::NoFollow) {
            continue;
        }
        let host = host_of(root, &done);
        let meta = match std::fs::symlink_metadata(&host) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Nothing below a missing component can be a symlink (yet).
                missing = true;
                continue;
            }
            // ENOTDIR and friends: leave it to the real operation to report.
            Err(_) => {
                missing = true;
                continue;
            }
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        hops += 1;
        if hops > MAX_SYMLINKS {
            return Err(invalid_path(format!(
                "too many levels of symbolic links in {user_path:?}"
            )));
        }
        let target = std::fs::read_link(&host)
            .map_err(|e| ApiError::runtime(format!("cannot read symlink in {user_path:?}: {e}")))?;
        done.pop();
        if target.is_absolute() {
            done.clear();
        }
        let mut spliced: Vec<OsString> = target
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect();
        spliced.reverse();
        pending.extend(spliced);
    }

    Ok(Resolved {
        host: host_of(root, &done),
        sandbox: parts_to_path(&done),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(root: &Path) -> AgentConfig {
        AgentConfig {
            root: root.to_path_buf(),
            workdir: root.join("workspace"),
        }
    }

    #[test]
    fn relative_paths_start_at_the_workdir() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path());
        let r = resolve(&c, "a/./b/../c.txt", Last::Follow).unwrap();
        assert_eq!(r.sandbox, Path::new("/workspace/a/c.txt"));
        assert_eq!(r.host, dir.path().join("workspace/a/c.txt"));
    }

    #[test]
    fn dotdot_above_a_non_slash_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path());
        let err = resolve(&c, "../../etc/passwd", Last::Follow).unwrap_err();
        assert_eq!(err.code, "INVALID_PATH");
        assert!(err.status.is_client_error());
        assert!(resolve(&c, "/../x", Last::Follow).is_err());
        // Staying inside is fine.
        let ok = resolve(&c, "../x", Last::Follow).unwrap();
        assert_eq!(ok.sandbox, Path::new("/x"));
    }

    #[test]
    fn dotdot_above_slash_clamps_like_the_kernel() {
        let c = AgentConfig {
            root: PathBuf::from("/"),
            workdir: PathBuf::from("/tmp"),
        };
        let r = resolve(&c, "/../../tmp", Last::NoFollow).unwrap();
        assert_eq!(r.host, Path::new("/tmp"));
        assert_eq!(r.sandbox, Path::new("/tmp"));
    }

    #[test]
    fn absolute_symlinks_are_read_relative_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path());
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("data/etc")).unwrap();
        let r = resolve(&c, "/data/etc/passwd", Last::Follow).unwrap();
        assert_eq!(r.host, dir.path().join("etc/passwd"));
        assert_eq!(r.sandbox, Path::new("/etc/passwd"));
    }

    #[test]
    fn relative_symlink_climbing_out_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path());
        std::fs::create_dir_all(dir.path().join("d")).unwrap();
        std::os::unix::fs::symlink("../../../../../etc", dir.path().join("d/up")).unwrap();
        let err = resolve(&c, "/d/up/passwd", Last::Follow).unwrap_err();
        assert_eq!(err.status, StatusCode::FORBIDDEN);
        // Not following the last component reports the link itself.
        let r = resolve(&c, "/d/up", Last::NoFollow).unwrap();
        assert_eq!(r.sandbox, Path::new("/d/up"));
    }

    #[test]
    fn symlink_loops_end_in_a_client_error() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path());
        std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
        let err = resolve(&c, "/a", Last::Follow).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn empty_and_nul_paths_are_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(dir.path());
        assert!(resolve(&c, "", Last::Follow).is_err());
        assert!(resolve(&c, "a\0b", Last::Follow).is_err());
    }
}
