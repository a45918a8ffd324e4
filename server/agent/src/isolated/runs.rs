//! Background runs of an isolated session (`POST .../run` with `background: true`),
//! their status and their logs.
//!
//! A background run is started through the session's shell, so it runs in the
//! session's namespaces and process group (a session-level SIGINT reaches it, as
//! upstream says):
//!
//! ```text
//! { export K=V; bash -c 'CODE' </dev/null >/run/opensandbox/ID.out 2>&1;
//!   echo $? >/run/opensandbox/ID.code; } >/dev/null 2>&1 &
//! ```
//!
//! `ID.out` is a FIFO the agent made and holds open for reading (and for writing, so
//! a run that has not opened it yet does not look finished): a thread pumps it into
//! the run's log, capped at [`RUN_LOG_CAP`] like background commands' logs (newest
//! half kept behind a marker line). That log lives in the agent's state, outside the
//! session. `ID.code` is written by the session itself, so it is read as hostile
//! input: no symlinks, regular files only, 64 bytes at most. Unlike upstream, whose
//! log lives in the first overlay, this works whatever the first mount's mode.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::model::RunStatus;
use crate::error::ApiError;

/// Each run keeps at most this much output (upstream: 16 MiB per run).
pub const RUN_LOG_CAP: u64 = 16 << 20;
/// A logs response carries at most this much (upstream: 16 MiB).
pub const MAX_LOG_READ: u64 = 16 << 20;
/// How often a running run's exit-code file is looked for.
const POLL: Duration = Duration::from_millis(200);

#[derive(Debug, Default)]
struct Outcome {
    running: bool,
    exit_code: Option<i32>,
    error: Option<String>,
    finished_at: Option<DateTime<Utc>>,
}

/// One background run.
#[derive(Debug)]
pub struct BackgroundRun {
    pub id: String,
    pub session_id: String,
    pub started_at: DateTime<Utc>,
    /// The capped log (agent state).
    pub log: PathBuf,
    /// The exit-code file, as the agent sees it.
    code_file: PathBuf,
    outcome: Mutex<Outcome>,
    /// The agent's write end of the FIFO, held until the run is known finished.
    hold: Mutex<Option<OwnedFd>>,
}

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
}

fn runtime(message: String) -> ApiError {
    ApiError::runtime(message)
}

fn cstr(path: &Path) -> Result<std::ffi::CString, ApiError> {
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| runtime(format!("NUL in {}", path.display())))
}

fn open_no_follow(path: &Path, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("NUL in path"))?;
    // SAFETY: NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just opened, owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl BackgroundRun {
    /// Makes the run's FIFO in `runs_dir` (owned by the session's user so its
    /// processes can open it), opens both ends, and starts the pump into `log`.
    pub fn prepare(
        id: String,
        session_id: String,
        runs_dir: &Path,
        log: PathBuf,
        owner: (u32, u32),
    ) -> Result<Arc<BackgroundRun>, ApiError> {
        let fifo = runs_dir.join(format!("{id}.out"));
        let fifo_c = cstr(&fifo)?;
        // SAFETY: NUL-terminated path.
        if unsafe { libc::mkfifo(fifo_c.as_ptr(), 0o600) } != 0 {
            return Err(runtime(format!(
                "cannot make the output pipe of run {id}: {}",
                std::io::Error::last_os_error()
            )));
        }
        let read = open_no_follow(&fifo, libc::O_RDONLY | libc::O_NONBLOCK)
            .map_err(|e| runtime(format!("cannot open the output pipe of run {id}: {e}")))?;
        let write = open_no_follow(&fifo, libc::O_WRONLY | libc::O_NONBLOCK)
            .map_err(|e| runtime(format!("cannot open the output pipe of run {id}: {e}")))?;
        let reader = std::fs::File::from(read);
        let meta = reader
            .metadata()
            .map_err(|e| runtime(format!("cannot check the output pipe of run {id}: {e}")))?;
        if !std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()) {
            return Err(runtime(format!("the output pipe of run {id} was replaced")));
        }
        // SAFETY: fchown on the fifo we opened.
        if unsafe { libc::fchown(reader.as_raw_fd(), owner.0, owner.1) } != 0 {
            return Err(runtime(format!(
                "cannot give the output pipe of run {id} to the session's user: {}",
                std::io::Error::last_os_error()
            )));
        }
        // Blocking reads from here on (the agent's own write end keeps EOF away).
        // SAFETY: fcntl on an fd we own.
        unsafe {
            let flags = libc::fcntl(reader.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(reader.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&log)
            .map_err(|e| runtime(format!("cannot create the log of run {id}: {e}")))?;
        let mut capped = crate::logcap::CappedLog::new(file, RUN_LOG_CAP)
            .map_err(|e| runtime(format!("cannot create the log of run {id}: {e}")))?;
        let name = format!("isolated run {id}");
        std::thread::Builder::new()
            .name(format!("log {id}"))
            .spawn(move || {
                if let Err(e) = crate::logcap::pump(reader, &mut capped) {
                    tracing::warn!(log = name, error = %e, "writing the log failed; output dropped");
                }
            })
            .map_err(|e| runtime(format!("cannot start the log pump of run {id}: {e}")))?;
        Ok(Arc::new(BackgroundRun {
            code_file: runs_dir.join(format!("{id}.code")),
            id,
            session_id,
            started_at: Utc::now(),
            log,
            outcome: Mutex::new(Outcome {
                running: true,
                ..Outcome::default()
            }),
            hold: Mutex::new(Some(write)),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Outcome> {
        self.outcome.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn running(&self) -> bool {
        self.lock().running
    }

    /// Records the end (once) and lets the pump reach EOF.
    pub fn finish(&self, exit_code: Option<i32>, error: Option<String>) {
        {
            let mut o = self.lock();
            if !o.running {
                return;
            }
            o.running = false;
            o.exit_code = exit_code;
            o.error = error;
            o.finished_at = Some(Utc::now());
        }
        self.hold.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    pub fn status(&self) -> RunStatus {
        let o = self.lock();
        RunStatus {
            session_id: self.session_id.clone(),
            run_id: self.id.clone(),
            running: o.running,
            exit_code: o.exit_code,
            error: o.error.clone(),
            started_at: rfc3339(self.started_at),
            finished_at: o.finished_at.map(rfc3339),
        }
    }

    /// The exit code the session wrote, once it has: a regular file (never followed
    /// through a symlink), a decimal number on its first line.
    pub fn read_exit_code(&self) -> Option<i32> {
        let fd = open_no_follow(&self.code_file, libc::O_RDONLY | libc::O_NONBLOCK).ok()?;
        let mut file = std::fs::File::from(fd);
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut buf = [0u8; 64];
        let n = file.read(&mut buf).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let line = text.split('\n').next()?.trim();
        // A partial write (the shell truncated, not yet written) reads as nothing.
        if !text.contains('\n') {
            return None;
        }
        line.parse().ok()
    }

    /// Watches for the exit-code file until the run ends or `session_gone` fires.
    pub async fn watch(
        self: Arc<Self>,
        mut session_gone: impl std::future::Future<Output = ()> + Unpin,
    ) {
        loop {
            tokio::select! {
                _ = &mut session_gone => {
                    // The shell took its jobs with it; a code may have landed first.
                    let code = self.read_exit_code();
                    let error = code.is_none().then(|| "session terminated".to_string());
                    self.finish(code, error);
                    return;
                }
                _ = tokio::time::sleep(POLL) => {
                    if let Some(code) = self.read_exit_code() {
                        self.finish(Some(code), None);
                        return;
                    }
                }
            }
        }
    }
}

/// The shell text that starts a background run (see the module comment).
pub fn wrapper(run_id: &str, code: &str, envs: &[(String, String)], runs_inside: &str) -> String {
    use crate::sessions::shell_quote;
    let mut script = String::from("{ ");
    for (k, v) in envs {
        script.push_str(&format!("export {k}={}; ", shell_quote(v)));
    }
    let out = shell_quote(&format!("{runs_inside}/{run_id}.out"));
    let code_file = shell_quote(&format!("{runs_inside}/{run_id}.code"));
    script.push_str(&format!(
        "bash -c {} </dev/null >{out} 2>&1; echo $? >{code_file}; }} >/dev/null 2>&1 &",
        shell_quote(code)
    ));
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_quotes_everything_the_client_sent() {
        let w = wrapper(
            "r1",
            "echo 'hi'; exit 3",
            &[("A".into(), "x y'z".into())],
            "/run/opensandbox",
        );
        assert_eq!(
            w,
            "{ export A='x y'\\''z'; bash -c 'echo '\\''hi'\\''; exit 3' </dev/null \
             >'/run/opensandbox/r1.out' 2>&1; echo $? >'/run/opensandbox/r1.code'; } \
             >/dev/null 2>&1 &"
        );
    }

    #[tokio::test]
    async fn a_run_reads_its_exit_code_and_never_follows_a_symlink() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let runs = dir.path().join("runs");
        std::fs::create_dir(&runs).unwrap_or_else(|e| panic!("{e}"));
        // SAFETY: getuid/getgid have no preconditions.
        let owner = unsafe { (libc::getuid(), libc::getgid()) };
        let run = BackgroundRun::prepare(
            "r1".into(),
            "s1".into(),
            &runs,
            dir.path().join("r1.log"),
            owner,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // Output written into the FIFO ends up in the log.
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .open(runs.join("r1.out"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::io::Write::write_all(&mut w, b"hello\n").unwrap_or_else(|e| panic!("{e}"));
        drop(w);
        // A symlinked code file is ignored.
        std::fs::write(dir.path().join("elsewhere"), b"7\n").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), runs.join("r1.code"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(run.read_exit_code(), None);
        std::fs::remove_file(runs.join("r1.code")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(runs.join("r1.code"), b"3\n").unwrap_or_else(|e| panic!("{e}"));
        let watched = tokio::spawn(Arc::clone(&run).watch(Box::pin(std::future::pending())));
        tokio::time::timeout(Duration::from_secs(5), watched)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|e| panic!("{e}"));
        let status = run.status();
        assert!(!status.running);
        assert_eq!(status.exit_code, Some(3));
        // The pump drains to EOF once the agent's write end is gone.
        let mut text = String::new();
        for _ in 0..50 {
            text = std::fs::read_to_string(&run.log).unwrap_or_default();
            if text == "hello\n" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(text, "hello\n");
    }
}
