//! Where, and as whom, a file route does its filesystem work.
//!
//! The same handlers serve three route families (protocol.md §3, §3.5, §3.6):
//! - `/files`, `/directories`: as the agent (the sandbox's root), on the blocking pool;
//! - `/v1/filesystem/{uid}/{gid}/...`: as that user. Each request runs on a thread of
//!   its own whose filesystem uid and gid are switched (`setfsuid`/`setfsgid`, and no
//!   supplementary group, as upstream's worker has none); the kernel then checks every
//!   open, create, rename and chown as it would for that user, and new files belong to
//!   it. These are per-thread credentials (raw syscalls, not glibc's process-wide
//!   wrappers), and the thread ends with the request, so no other work ever runs
//!   with them;
//! - `/v1/isolated/session/{id}/...`: inside an isolated session's mounts. The thread
//!   unshares its filesystem context and `chroot`s into the session's root
//!   (`/proc/PID/root` of its shell, opened and then checked against a pidfd so a
//!   recycled pid is never entered), so paths, symlinks and `..` resolve in the
//!   session's tree and cannot leave it, even if the session swaps a directory for a
//!   symlink mid-request. Files are created as the session's user; access is the
//!   agent's (upstream's merged view works the same way).
//!
//! Handlers take [`Fs`] and put their blocking work in [`Fs::run`]; every path they
//! touch is resolved and used inside that closure. A route family inserts its
//! [`Scope`] as a request extension; a file route without one is a 500, never the
//! agent's identity by default.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;

use crate::error::ApiError;
use crate::{AgentConfig, SharedState};

/// The identity and place of one request's file operations.
#[derive(Debug, Clone)]
pub enum Scope {
    /// As the agent.
    Agent,
    /// As `uid`/`gid` with no supplementary group.
    Identity { uid: u32, gid: u32 },
    /// Inside an isolated session's mount namespace.
    Session(SessionRoot),
}

/// What [`Scope::Session`] needs to enter a session's filesystem.
#[derive(Debug, Clone)]
pub struct SessionRoot {
    pub session_id: String,
    /// The session's shell, as this agent sees it.
    pub pid: i32,
    /// A pidfd of that shell: proves `/proc/{pid}` is still that process.
    pub pidfd: Arc<OwnedFd>,
    /// Working directory of relative paths, inside the session.
    pub workdir: PathBuf,
    /// Owner of the files the routes create.
    pub uid: u32,
    pub gid: u32,
}

/// A file route's view: the configuration user paths resolve against, and the scope
/// its blocking work runs in.
#[derive(Debug, Clone)]
pub struct Fs {
    pub config: AgentConfig,
    pub scope: Scope,
}

impl FromRequestParts<SharedState> for Fs {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &SharedState,
    ) -> Result<Self, Self::Rejection> {
        let scope = parts.extensions.get::<Scope>().cloned().ok_or_else(|| {
            ApiError::runtime("file route reached without a scope (route wiring bug)")
        })?;
        let config = match &scope {
            Scope::Session(root) => AgentConfig {
                root: PathBuf::from("/"),
                workdir: root.workdir.clone(),
            },
            _ => state.config.clone(),
        };
        Ok(Fs { config, scope })
    }
}

/// 503 `FILESYSTEM_IDENTITY_UNAVAILABLE`, upstream's answer when the identity switch
/// cannot be made.
pub fn identity_unavailable(message: impl Into<String>) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "FILESYSTEM_IDENTITY_UNAVAILABLE",
        message,
    )
}

impl Fs {
    /// Runs `work` in this scope: on the blocking pool as the agent, otherwise on a
    /// thread of its own that takes the scope's credentials (and root) first.
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        F: FnOnce(&AgentConfig) -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        let config = self.config.clone();
        if let Scope::Agent = self.scope {
            return tokio::task::spawn_blocking(move || work(&config))
                .await
                .map_err(|e| ApiError::runtime(format!("file operation task failed: {e}")))?;
        }
        let scope = self.scope.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("fs-scoped".into())
            .spawn(move || {
                let result = enter(&scope).and_then(|()| work(&config));
                let _ = tx.send(result);
            })
            .map_err(|e| ApiError::runtime(format!("cannot start a file operation thread: {e}")))?;
        rx.await
            .map_err(|_| ApiError::runtime("the file operation thread ended without an answer"))?
    }

    /// Runs `work` in this scope without waiting (cleanup from a `Drop`).
    pub fn run_detached<F>(&self, work: F)
    where
        F: FnOnce(&AgentConfig) + Send + 'static,
    {
        let fs = self.clone();
        let run = async move {
            let _ = fs
                .run(move |cfg| {
                    work(cfg);
                    Ok(())
                })
                .await;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(run);
            }
            Err(_) => tracing::warn!("no runtime to run a file cleanup on"),
        }
    }
}

/// Takes `scope`'s root and credentials on the calling thread (which must end with
/// the request: nothing here is undone).
fn enter(scope: &Scope) -> Result<(), ApiError> {
    match scope {
        Scope::Agent => Ok(()),
        Scope::Identity { uid, gid } => switch_credentials(*uid, *gid)
            .map_err(|e| identity_unavailable(format!("cannot act as uid {uid} gid {gid}: {e}"))),
        Scope::Session(root) => {
            enter_session_root(root)?;
            switch_credentials(root.uid, root.gid).map_err(|e| {
                ApiError::runtime(format!(
                    "cannot act as the session's user {}:{}: {e}",
                    root.uid, root.gid
                ))
            })?;
            // Access stays the agent's (as upstream's merged view); only ownership of
            // new files is the session user's. Changing the fsuid away from 0 dropped
            // the file capabilities from the effective set: raise them again.
            raise_effective_capabilities().map_err(|e| {
                ApiError::runtime(format!("cannot restore the agent's file access: {e}"))
            })
        }
    }
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// This thread's supplementary groups, fsgid and fsuid (per-thread syscalls; glibc's
/// `setgroups` would change every thread of the agent).
fn switch_credentials(uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: setgroups with a count of 0 reads no memory.
    if unsafe { libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) } != 0 {
        return Err(last_error());
    }
    // setfsuid/setfsgid answer the previous value and never fail loudly: set, then
    // set again and compare (an id not mapped in this user namespace is refused).
    // SAFETY: plain integer syscalls.
    unsafe {
        libc::syscall(libc::SYS_setfsgid, gid);
        if libc::syscall(libc::SYS_setfsgid, gid) as u32 != gid {
            return Err(io::Error::other(format!(
                "gid {gid} is not available in this sandbox (is it mapped?)"
            )));
        }
        libc::syscall(libc::SYS_setfsuid, uid);
        if libc::syscall(libc::SYS_setfsuid, uid) as u32 != uid {
            return Err(io::Error::other(format!(
                "uid {uid} is not available in this sandbox (is it mapped?)"
            )));
        }
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Effective := permitted, for this thread only.
fn raise_effective_capabilities() -> io::Result<()> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and two data structs, as capget(2) v3 expects.
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(last_error());
    }
    for d in &mut data {
        d.effective = d.permitted;
    }
    // SAFETY: as above; pid 0 is the calling thread.
    if unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) } != 0 {
        return Err(last_error());
    }
    Ok(())
}

fn session_gone(root: &SessionRoot) -> ApiError {
    ApiError::bad_request(
        "INVALID_REQUEST_BODY",
        format!("isolated session {} is not active", root.session_id),
    )
}

/// Unshares this thread's filesystem context and makes the session's root its root.
fn enter_session_root(root: &SessionRoot) -> Result<(), ApiError> {
    // SAFETY: plain integer syscall affecting only this thread's fs_struct.
    if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
        return Err(ApiError::runtime(format!(
            "cannot unshare the filesystem context: {}",
            last_error()
        )));
    }
    let path = std::ffi::CString::new(format!("/proc/{}/root", root.pid))
        .map_err(|_| ApiError::runtime("bad /proc path"))?;
    // SAFETY: NUL-terminated path; the result is checked.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(session_gone(root));
    }
    // SAFETY: `fd` was just opened and is owned here.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // The pidfd still names a live process: the root opened above is that process's
    // (a pid is only reused after its process is gone).
    // SAFETY: pidfd_send_signal with signal 0 only checks; no memory passed.
    let alive = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            root.pidfd.as_raw_fd(),
            0,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    } == 0;
    if !alive {
        return Err(session_gone(root));
    }
    let dot = c".";
    let slash = c"/";
    // SAFETY: fchdir on an owned fd, chroot/chdir on static NUL-terminated paths.
    let entered = unsafe {
        libc::fchdir(fd.as_raw_fd()) == 0
            && libc::chroot(dot.as_ptr()) == 0
            && libc::chdir(slash.as_ptr()) == 0
    };
    if !entered {
        return Err(ApiError::runtime(format!(
            "cannot enter the root of session {}: {}",
            root.session_id,
            last_error()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn root_only() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    fn fs_for(scope: Scope, root: &std::path::Path) -> Fs {
        Fs {
            config: AgentConfig {
                root: root.to_path_buf(),
                workdir: root.to_path_buf(),
            },
            scope,
        }
    }

    #[tokio::test]
    async fn identity_threads_create_files_as_the_user_and_leave_the_agent_alone() {
        if !root_only() {
            eprintln!("SKIPPED: needs root to switch identities");
            return;
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let fs = fs_for(
            Scope::Identity {
                uid: 1000,
                gid: 1000,
            },
            dir.path(),
        );
        let target = dir.path().join("made-by-1000");
        let t = target.clone();
        fs.run(move |_| std::fs::write(&t, b"x").map_err(|e| ApiError::runtime(e.to_string())))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let meta = std::fs::metadata(&target).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((meta.uid(), meta.gid()), (1000, 1000));

        // A root-only file is out of reach, and the error is the kernel's.
        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"s").unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap_or_else(|e| panic!("{e}"));
        let s = secret.clone();
        let denied = fs
            .run(move |_| std::fs::read(&s).map_err(|e| crate::files::io_error(&e, "read", &s)))
            .await
            .unwrap_err();
        assert_eq!(denied.status, StatusCode::FORBIDDEN, "{denied}");

        // The agent's own threads kept their identity.
        // SAFETY: plain integer syscalls returning the caller's fs ids.
        let (fsuid, fsgid) = unsafe {
            (
                libc::syscall(libc::SYS_setfsuid, u32::MAX) as u32,
                libc::syscall(libc::SYS_setfsgid, u32::MAX) as u32,
            )
        };
        assert_eq!((fsuid, fsgid), (0, 0));
        assert!(std::fs::read(&secret).is_ok());
    }

    #[tokio::test]
    async fn giving_a_file_away_is_refused_to_a_user() {
        if !root_only() {
            eprintln!("SKIPPED: needs root to switch identities");
            return;
        }
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let own = dir.path().join("own");
        std::fs::write(&own, b"x").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::chown(&own, Some(1000), Some(1000)).unwrap_or_else(|e| panic!("{e}"));
        let fs = fs_for(
            Scope::Identity {
                uid: 1000,
                gid: 1000,
            },
            dir.path(),
        );
        let o = own.clone();
        let err = fs
            .run(move |_| {
                std::os::unix::fs::chown(&o, Some(0), None)
                    .map_err(|e| crate::files::io_error(&e, "chown", &o))
            })
            .await
            .unwrap_err();
        assert_eq!(err.status, StatusCode::FORBIDDEN, "{err}");
        assert_eq!(
            std::fs::metadata(&own).map(|m| m.uid()).unwrap_or(u32::MAX),
            1000
        );
    }

    #[tokio::test]
    async fn a_route_without_a_scope_is_refused() {
        let state: SharedState = Arc::new(crate::AgentState::new(AgentConfig {
            root: PathBuf::from("/"),
            workdir: PathBuf::from("/"),
        }));
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        let err = Fs::from_request_parts(&mut parts, &state)
            .await
            .unwrap_err();
        assert_eq!(err.status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
