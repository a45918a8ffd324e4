//! One isolated session: its shell (started through the launcher), its state
//! directory, its runs, and how a run ends on the wire.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::response::Response;
use chrono::{DateTime, Utc};
use tokio::io::AsyncBufReadExt;

use super::model::{
    BindSpec, OverlaySpec, Profile, RunStatus, SessionSpec, SessionState, SessionSummary, UidMode,
};
use super::plan::{self, Host, LaunchSpec};
use super::runs::{self, rfc3339, BackgroundRun};
use crate::error::ApiError;
use crate::events::{event_stream, EventSink, ExitOutcome, ServerStreamEvent};
use crate::files::scope::SessionRoot;
use crate::sessions::{LineMode, Session};

/// How long the launcher may take to report the session's shell.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug)]
struct Activity {
    last_run_at: DateTime<Utc>,
    last_run: Instant,
}

pub struct IsolatedSession {
    pub id: String,
    pub spec: SessionSpec,
    pub created_at: DateTime<Utc>,
    shell: Arc<Session>,
    pub root: SessionRoot,
    state_dir: PathBuf,
    activity: Mutex<Activity>,
    /// Background runs still going (they hold off the idle timeout).
    active_background: AtomicUsize,
    runs: Mutex<HashMap<String, Arc<BackgroundRun>>>,
    /// When the shell was first seen gone.
    dead_since: Mutex<Option<Instant>>,
}

fn launch_error(message: String) -> ApiError {
    ApiError::runtime(format!("cannot start the isolated session: {message}"))
}

/// Mount points the read-only tree must already have (it cannot be written to make
/// them): each entry's path and each bind's destination, made in the sandbox (as
/// upstream creates a missing workspace).
fn make_mount_points(launch: &LaunchSpec) -> Result<(), ApiError> {
    use super::plan::Step;
    let read_only_tree = |target: &Path| {
        !["/proc", "/dev", "/tmp", "/run"]
            .iter()
            .any(|special| target.starts_with(special))
    };
    for step in &launch.steps {
        let (target, file) = match step {
            Step::Overlay { target, .. } => (target, false),
            Step::Bind { source, target, .. } => (target, source.is_file()),
            _ => continue,
        };
        if !read_only_tree(target) || target.exists() {
            continue;
        }
        let made = if file {
            target
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(target)
                        .map(drop)
                })
        } else {
            std::fs::create_dir_all(target)
        };
        made.map_err(|e| {
            ApiError::bad_request(
                "INVALID_REQUEST_BODY",
                format!("cannot create mount point {}: {e}", target.display()),
            )
        })?;
    }
    Ok(())
}

fn pidfd_open(pid: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: pidfd_open with integer arguments; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new fd owned here.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The parent pid of `pid` (field 4 of `/proc/PID/stat`, after the `(comm)`).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

impl IsolatedSession {
    /// Plans, launches and waits for the session's shell.
    pub async fn launch(
        id: String,
        spec: SessionSpec,
        state_root: &Path,
    ) -> Result<Arc<IsolatedSession>, ApiError> {
        let host = Host::read(state_root)?;
        let state_dir = state_root.join(&id);
        let launch = plan::plan(&spec, &host, &state_dir)?;
        let owner = plan::file_owner(&spec, &host);
        let prepared = {
            let launch = launch.clone();
            let state_dir = state_dir.clone();
            tokio::task::spawn_blocking(move || -> Result<(), ApiError> {
                make_mount_points(&launch)?;
                for dir in ["root", "runs", "logs"] {
                    std::fs::create_dir_all(state_dir.join(dir)).map_err(|e| {
                        ApiError::runtime(format!("cannot create the session's state: {e}"))
                    })?;
                }
                // The session's user writes exit codes here.
                std::os::unix::fs::chown(state_dir.join("runs"), Some(owner.0), Some(owner.1))
                    .map_err(|e| {
                        ApiError::runtime(format!("cannot prepare the runs directory: {e}"))
                    })?;
                Ok(())
            })
            .await
            .map_err(|e| ApiError::runtime(format!("session preparation failed: {e}")))?
        };
        if let Err(e) = prepared {
            let _ = std::fs::remove_dir_all(&state_dir);
            return Err(e);
        }
        match Self::start_shell(&id, &launch).await {
            Ok((shell, pid, pidfd)) => Ok(Arc::new(IsolatedSession {
                root: SessionRoot {
                    session_id: id.clone(),
                    pid,
                    pidfd: Arc::new(pidfd),
                    workdir: launch.workdir.clone(),
                    uid: owner.0,
                    gid: owner.1,
                },
                id,
                spec,
                created_at: Utc::now(),
                shell,
                state_dir,
                activity: Mutex::new(Activity {
                    last_run_at: Utc::now(),
                    last_run: Instant::now(),
                }),
                active_background: AtomicUsize::new(0),
                runs: Mutex::new(HashMap::new()),
                dead_since: Mutex::new(None),
            })),
            Err(e) => {
                let dir = state_dir.clone();
                let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
                Err(e)
            }
        }
    }

    async fn start_shell(
        id: &str,
        launch: &LaunchSpec,
    ) -> Result<(Arc<Session>, i32, OwnedFd), ApiError> {
        let json = serde_json::to_string(launch)
            .map_err(|e| ApiError::runtime(format!("cannot encode the launch plan: {e}")))?;
        let (status_read, status_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| launch_error(format!("pipe: {e}")))?;
        let mut command =
            super::launcher::self_command().map_err(|e| launch_error(e.to_string()))?;
        command.arg("--spec").arg(json).arg("--status-fd").arg("3");
        let status_fd = status_write.as_raw_fd();
        // SAFETY: runs between fork and exec: fcntl/dup2/close on plain integers, no
        // allocation, no lock.
        unsafe {
            command.pre_exec(move || {
                let high = libc::fcntl(status_fd, libc::F_DUPFD_CLOEXEC, 100);
                if high < 0 || libc::dup2(high, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(high);
                Ok(())
            });
        }
        let shell = Session::start(command).map_err(|e| launch_error(e.to_string()))?;
        drop(status_write);
        let launcher_pid = shell.pgid().unwrap_or(0);
        let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(status_read)
            .map_err(|e| launch_error(e.to_string()))?;
        let mut line = String::new();
        let read = tokio::time::timeout(
            LAUNCH_TIMEOUT,
            tokio::io::BufReader::new(reader).read_line(&mut line),
        )
        .await;
        let report: serde_json::Value = match read {
            Ok(Ok(n)) if n > 0 => serde_json::from_str(line.trim()).unwrap_or_default(),
            Ok(_) => serde_json::json!({ "error": "the launcher exited without a report" }),
            Err(_) => {
                serde_json::json!({ "error": format!("no report within {LAUNCH_TIMEOUT:?}") })
            }
        };
        let pid = match report.get("pid").and_then(serde_json::Value::as_i64) {
            Some(pid) => i32::try_from(pid).unwrap_or(0),
            None => {
                shell.kill();
                let message = report
                    .get("error")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("unreadable launcher report")
                    .to_string();
                tracing::warn!(session = id, error = %message, "isolated session failed to start");
                return Err(launch_error(message));
            }
        };
        // The pidfd proves later that /proc/{pid} is still this shell; its parent
        // must be our launcher (which we have not reaped), so it is.
        let pidfd = pidfd_open(pid).map_err(|e| {
            shell.kill();
            launch_error(format!("pidfd_open({pid}): {e}"))
        })?;
        if parent_of(pid) != Some(launcher_pid) {
            shell.kill();
            return Err(launch_error(format!(
                "process {pid} is not the launcher's child"
            )));
        }
        Ok((shell, pid, pidfd))
    }

    pub fn is_dead(&self) -> bool {
        let dead = self.shell.exit_status().is_some();
        if dead {
            let mut since = self.dead_since.lock().unwrap_or_else(|p| p.into_inner());
            since.get_or_insert_with(Instant::now);
        }
        dead
    }

    pub fn dead_for(&self) -> Option<Duration> {
        self.is_dead();
        self.dead_since
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map(|t| t.elapsed())
    }

    fn activity(&self) -> MutexGuard<'_, Activity> {
        self.activity.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn touch(&self) {
        let mut a = self.activity();
        a.last_run_at = Utc::now();
        a.last_run = Instant::now();
    }

    fn status_word(&self) -> &'static str {
        if self.is_dead() {
            "dead"
        } else {
            "active"
        }
    }

    fn idle_remaining(&self) -> Option<u64> {
        let timeout = self.spec.idle_timeout_seconds;
        (timeout > 0).then(|| timeout.saturating_sub(self.activity().last_run.elapsed().as_secs()))
    }

    /// Whether the idle timeout has passed with nothing running.
    pub fn idle_expired(&self) -> bool {
        let timeout = self.spec.idle_timeout_seconds;
        if timeout == 0 || self.active_background.load(Ordering::SeqCst) > 0 {
            return false;
        }
        // A foreground run in progress holds the shell.
        let Some(_io) = self.shell.try_begin() else {
            return false;
        };
        self.activity().last_run.elapsed() > Duration::from_secs(timeout)
    }

    pub fn summary(&self) -> SessionSummary {
        let a = self.activity();
        let last = a.last_run_at;
        drop(a);
        SessionSummary {
            session_id: self.id.clone(),
            status: self.status_word(),
            created_at: rfc3339(self.created_at),
            last_run_at: rfc3339(last),
            idle_remaining_seconds: self.idle_remaining(),
        }
    }

    pub fn state(&self) -> SessionState {
        let s = &self.spec;
        let last = self.activity().last_run_at;
        SessionState {
            status: self.status_word(),
            created_at: rfc3339(self.created_at),
            last_run_at: rfc3339(last),
            idle_remaining_seconds: self.idle_remaining(),
            profile: match s.profile {
                Profile::Strict => "strict",
                Profile::Balanced => "balanced",
            },
            workspace: s.legacy_workspace.clone(),
            overlays: s
                .mounts
                .iter()
                .map(|m| OverlaySpec {
                    path: m.path.clone(),
                    mode: Some(m.mode.as_str().to_string()),
                    persist: (m.mode == super::model::MountMode::Overlay).then_some(m.persist),
                })
                .collect(),
            extra_writable: s.extra_writable.clone(),
            binds: s
                .binds
                .iter()
                .map(|b| BindSpec {
                    source: b.source.clone(),
                    dest: Some(
                        b.dest
                            .clone()
                            .filter(|d| !d.is_empty())
                            .unwrap_or_else(|| b.source.clone()),
                    ),
                    readonly: Some(b.readonly.unwrap_or(false)),
                })
                .collect(),
            share_net: s.share_net,
            env_passthrough: s.env_passthrough.clone(),
            uid: s.uid,
            gid: s.gid,
            uid_mode: match s.uid_mode {
                UidMode::Setpriv => "setpriv",
                UidMode::Userns => "userns",
            },
            idle_timeout_seconds: s.idle_timeout_seconds,
        }
    }

    fn not_active(&self) -> ApiError {
        ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            format!("isolated session {} is not active", self.id),
        )
    }

    /// `POST .../run`, foreground: the §4 event stream of the run.
    pub fn run_foreground(
        self: &Arc<Self>,
        code: String,
        envs: Vec<(String, String)>,
        timeout: Option<Duration>,
    ) -> Result<Response, ApiError> {
        if self.is_dead() {
            return Err(self.not_active());
        }
        let (sink, response) = event_stream(&self.id);
        let session = Arc::clone(self);
        tokio::spawn(async move {
            let started = Instant::now();
            let mut io = session.shell.begin().await;
            session.touch();
            let command = with_envs(&code, &envs);
            let end = session
                .shell
                .run_until_disconnect(&mut io, &command, timeout, &sink, LineMode::Session)
                .await;
            drop(io);
            session.touch();
            let event = terminal_event(&end.outcome, end.session_ended, timeout, started.elapsed());
            let _ = sink.send(event).await;
        });
        Ok(response)
    }

    /// `POST .../run`, background: starts the run and returns its record.
    pub async fn run_background(
        self: &Arc<Self>,
        code: String,
        envs: Vec<(String, String)>,
    ) -> Result<Arc<BackgroundRun>, ApiError> {
        if self.is_dead() {
            return Err(self.not_active());
        }
        let run_id = uuid::Uuid::new_v4().to_string();
        let run = {
            let runs_dir = self.state_dir.join("runs");
            let log = self.state_dir.join("logs").join(format!("{run_id}.log"));
            let (session_id, owner, id) = (
                self.id.clone(),
                (self.root.uid, self.root.gid),
                run_id.clone(),
            );
            tokio::task::spawn_blocking(move || {
                BackgroundRun::prepare(id, session_id, &runs_dir, log, owner)
            })
            .await
            .map_err(|e| ApiError::runtime(format!("run preparation failed: {e}")))??
        };
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(run_id.clone(), Arc::clone(&run));
        self.active_background.fetch_add(1, Ordering::SeqCst);
        let script = runs::wrapper(&run_id, &code, &envs, plan::RUNS_DIR_INSIDE);
        let mut io = self.shell.begin().await;
        self.touch();
        let end = self
            .shell
            .run(
                &mut io,
                &script,
                None,
                None,
                &EventSink::discard(),
                LineMode::Session,
            )
            .await;
        drop(io);
        if end.session_ended {
            run.finish(None, Some("session terminated".into()));
            self.active_background.fetch_sub(1, Ordering::SeqCst);
            return Err(self.not_active());
        }
        let session = Arc::clone(self);
        let watched = Arc::clone(&run);
        tokio::spawn(async move {
            let shell = Arc::clone(&session.shell);
            let gone = Box::pin(async move { shell.wait_exit().await });
            watched.watch(gone).await;
            // Anchor the idle clock at the end, before the run stops counting.
            session.touch();
            session.active_background.fetch_sub(1, Ordering::SeqCst);
        });
        Ok(run)
    }

    pub fn run(&self, run_id: &str) -> Option<Arc<BackgroundRun>> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(run_id)
            .cloned()
    }

    pub fn run_status(&self, run_id: &str) -> Option<RunStatus> {
        self.run(run_id).map(|r| r.status())
    }

    /// Kills every process of the session, waits for the shell, removes its state.
    pub async fn destroy(&self) {
        self.shell.kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.shell.wait_exit()).await;
        for run in self.runs.lock().unwrap_or_else(|p| p.into_inner()).values() {
            run.finish(None, Some("session terminated".into()));
        }
        let dir = self.state_dir.clone();
        let removed = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir)).await;
        if let Ok(Err(e)) = removed {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(session = self.id, error = %e, "cannot remove the session's state");
            }
        }
    }
}

/// The code, with `envs` exported in a subshell so they do not outlive the run
/// (upstream's form; without envs the code runs in the session's own shell, so `cd`
/// and variables persist).
pub fn with_envs(code: &str, envs: &[(String, String)]) -> String {
    if envs.is_empty() {
        return code.to_string();
    }
    let mut script = String::from("(\n");
    for (k, v) in envs {
        script.push_str(&format!("export {k}={}\n", crate::sessions::shell_quote(v)));
    }
    script.push_str(code);
    script.push_str("\n)");
    script
}

/// The terminal event of an isolated run, shaped as upstream's: success is
/// `execution_complete`; a non-zero exit is an `error` `ExitError` whose `evalue` is
/// the code; a timeout or a dead shell is a `RuntimeError` with a message.
pub fn terminal_event(
    outcome: &ExitOutcome,
    session_ended: bool,
    timeout: Option<Duration>,
    elapsed: Duration,
) -> ServerStreamEvent {
    let runtime_error = |text: String| {
        let mut event = ServerStreamEvent::error("RuntimeError", text.clone(), Vec::new());
        event.text = Some(text);
        event
    };
    if session_ended {
        return runtime_error(format!(
            "session process exited without end marker ({}); the session is dead",
            outcome
                .error_text()
                .unwrap_or_else(|| "exit status 0".to_string())
        ));
    }
    match outcome {
        ExitOutcome::Exited(0) => ServerStreamEvent::complete(elapsed),
        ExitOutcome::Exited(code) => {
            let mut event = ServerStreamEvent::error("ExitError", code.to_string(), Vec::new());
            event.text = Some(format!("command exited with code {code}"));
            event
        }
        ExitOutcome::Signaled(_) => runtime_error(format!(
            "context deadline exceeded: the run was interrupted after {}s (timeout_seconds)",
            timeout.map_or(0, |t| t.as_secs())
        )),
        ExitOutcome::Failed(text) => runtime_error(text.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventType;

    #[test]
    fn envs_run_in_a_subshell() {
        assert_eq!(with_envs("echo hi", &[]), "echo hi");
        assert_eq!(
            with_envs("echo $A", &[("A".into(), "1 2".into())]),
            "(\nexport A='1 2'\necho $A\n)"
        );
    }

    #[test]
    fn run_ends_read_as_upstream_writes_them() {
        let ok = terminal_event(&ExitOutcome::Exited(0), false, None, Duration::ZERO);
        assert_eq!(ok.kind, EventType::ExecutionComplete);
        let failed = terminal_event(&ExitOutcome::Exited(3), false, None, Duration::ZERO);
        let error = failed.error.clone().unwrap_or_else(|| panic!("no error"));
        assert_eq!(
            (error.ename.as_str(), error.evalue.as_str()),
            ("ExitError", "3")
        );
        let timed_out = terminal_event(
            &ExitOutcome::Signaled(libc::SIGKILL),
            false,
            Some(Duration::from_secs(2)),
            Duration::ZERO,
        );
        let error = timed_out.error.unwrap_or_else(|| panic!("no error"));
        assert_eq!(error.ename, "RuntimeError");
        assert!(error.evalue.contains("deadline"), "{}", error.evalue);
        let dead = terminal_event(&ExitOutcome::Exited(3), true, None, Duration::ZERO);
        assert!(dead.error.is_some_and(|e| e.evalue.contains("dead")));
    }
}
