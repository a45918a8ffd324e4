//! Persistent bash sessions: `POST /session`, `POST /session/{sessionId}/run`,
//! `DELETE /session/{sessionId}`.
//!
//! A session is one long-lived `bash --noprofile --norc` reading its script from a
//! stdin pipe, with stdout and stderr on one pipe, so the working directory, exported
//! and plain shell variables, functions and aliases all persist between runs. Each run
//! writes the command as a single-quoted `eval` argument (a syntax error in it cannot
//! swallow what follows) with stdin from `/dev/null`, followed by a `printf` of a
//! per-session random marker and `$?`; output up to the marker belongs to the run and
//! the number after it is the exit code. The shell ignores SIGINT (`trap : INT`) while
//! its children do not, so a timeout interrupts the running command and keeps the
//! session; a command that exits the shell itself (`exit 3`) ends the run with that
//! code and closes the session.
//!
//! Decisions: runs on one session are serialised (a second run waits); an unknown
//! session is `404 CONTEXT_NOT_FOUND`; a timeout ends the run with the same
//! `error` as a timed-out command (`-1`, `signal: killed`).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{delete, post};
use axum::{Json, Router};
use nix::fcntl::OFlag;
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::sync::{watch, Mutex as AsyncMutex, OwnedMutexGuard};

use crate::commands::{new_id, resolve_cwd, signal_group, LineSplitter, KILL_GRACE};
use crate::error::{ApiError, ApiResult};
use crate::events::{event_stream, EventSink, ExitOutcome, ServerStreamEvent};
use crate::extract::{AnyTypeJson, AnyTypeJsonOrEmpty};
use crate::SharedState;

pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/session"),
    ("POST", "/session/{sessionId}/run"),
    ("DELETE", "/session/{sessionId}"),
];

/// How long an interrupted run may take to reach its marker before the whole
/// session is killed, and how often SIGINT is sent in that time: a SIGINT that lands
/// before the shell has forked the command is lost (the shell ignores it), so a
/// single one would take a slow machine's session down for a command that would
/// have stopped.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
const INTERRUPT_TRIES: u32 = 4;

/// Once the shell has exited, a silent output pipe is considered drained after this.
const DRAIN_IDLE: Duration = Duration::from_millis(100);

/// Every open session of this agent.
#[derive(Default)]
pub struct Registry {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Remove and terminate session `id`; false if there is none.
    pub(crate) fn close(&self, id: &str) -> bool {
        let session = self.lock().remove(id);
        match session {
            Some(session) => {
                session.terminate();
                true
            }
            None => false,
        }
    }

    /// Forget `session` if it is still registered (it ended on its own).
    fn forget(&self, session: &Arc<Session>) {
        let mut sessions = self.lock();
        if sessions
            .get(&session.id)
            .is_some_and(|current| Arc::ptr_eq(current, session))
        {
            sessions.remove(&session.id);
        }
    }
}

/// How a run's output lines become events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineMode {
    /// `/session/{id}/run`: line text without terminator, blank lines dropped.
    Session,
    /// A bash code context: lines keep their `\n`, blank lines kept.
    Code,
}

/// One run's result: how the command ended, and whether the shell is gone.
pub(crate) struct RunEnd {
    pub(crate) outcome: ExitOutcome,
    pub(crate) session_ended: bool,
}

/// A live bash process and the pipes to drive it.
pub(crate) struct Session {
    pub(crate) id: String,
    pgid: Option<i32>,
    marker: String,
    io: Arc<AsyncMutex<SessionIo>>,
    exit: watch::Receiver<Option<ExitOutcome>>,
}

/// The session's pipes; holding it means owning the session for one run.
pub(crate) struct SessionIo {
    stdin: ChildStdin,
    output: pipe::Receiver,
    splitter: LineSplitter,
    pending: VecDeque<Vec<u8>>,
    primed: bool,
    eof: bool,
}

impl Session {
    /// Start a shell in `cwd`.
    pub(crate) fn spawn(cwd: &Path) -> io::Result<Arc<Session>> {
        let mut command = tokio::process::Command::new("bash");
        command.args(["--noprofile", "--norc"]).current_dir(cwd);
        // The env file as it is now: a running session keeps its environment.
        crate::envfile::apply(&mut command);
        crate::confine::apply(&mut command);
        Self::start(command)
    }

    /// Start `command` as a session's shell: its stdin a pipe, its stdout and stderr
    /// one other pipe, in a process group of its own. The command must end up running
    /// a shell that reads its script from stdin (bash itself, or the isolated-session
    /// launcher, which runs bash in the session's namespaces).
    pub(crate) fn start(mut command: tokio::process::Command) -> io::Result<Arc<Session>> {
        let (read_end, write_end) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let mut child = {
            command
                .process_group(0)
                .stdin(Stdio::piped())
                .stdout(Stdio::from(write_end.try_clone()?))
                .stderr(Stdio::from(write_end))
                .kill_on_drop(true);
            command.spawn()?
            // `command` drops here, closing our copies of the write end: the pipe
            // then reaches EOF when the shell and its children are gone.
        };
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("the session shell has no stdin pipe"))?;
        let output = pipe::Receiver::from_owned_fd(read_end)?;
        let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let outcome = match child.wait().await {
                Ok(status) => ExitOutcome::from_status(status),
                Err(err) => {
                    ExitOutcome::Failed(format!("cannot wait for the session shell: {err}"))
                }
            };
            let _ = exit_tx.send(Some(outcome));
        });
        Ok(Arc::new(Session {
            id: new_id(),
            pgid,
            marker: format!("__OSB_DONE_{}__", new_id()),
            io: Arc::new(AsyncMutex::new(SessionIo {
                stdin,
                output,
                splitter: LineSplitter::default(),
                pending: VecDeque::new(),
                primed: false,
                eof: false,
            })),
            exit,
        }))
    }

    /// The process group of the shell (its pid).
    pub(crate) fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// How the shell ended, once it has.
    pub(crate) fn exit_status(&self) -> Option<ExitOutcome> {
        self.exited()
    }

    /// Resolves once the shell has exited.
    pub(crate) async fn wait_exit(&self) {
        let mut exit = self.exit.clone();
        let _ = exit.wait_for(Option::is_some).await;
    }

    /// SIGKILL the whole process group at once.
    pub(crate) fn kill(&self) {
        if let (Some(pgid), None) = (self.pgid, self.exited()) {
            signal_group(pgid, Signal::SIGKILL);
        }
    }

    /// Own the session for one run, waiting for a run in progress.
    pub(crate) async fn begin(&self) -> OwnedMutexGuard<SessionIo> {
        Arc::clone(&self.io).lock_owned().await
    }

    /// Own the session for one run, or `None` if it is busy.
    pub(crate) fn try_begin(&self) -> Option<OwnedMutexGuard<SessionIo>> {
        Arc::clone(&self.io).try_lock_owned().ok()
    }

    /// SIGINT the running command (the shell itself ignores it).
    pub(crate) fn interrupt(&self) {
        if let Some(pgid) = self.pgid {
            signal_group(pgid, Signal::SIGINT);
        }
    }

    fn exited(&self) -> Option<ExitOutcome> {
        self.exit.borrow().clone()
    }

    /// SIGTERM the session's process group, SIGKILL after [`KILL_GRACE`].
    pub(crate) fn terminate(&self) {
        let pgid = match self.pgid {
            Some(pgid) if self.exited().is_none() => pgid,
            _ => return,
        };
        signal_group(pgid, Signal::SIGTERM);
        let mut exit = self.exit.clone();
        tokio::spawn(async move {
            let exited = tokio::time::timeout(KILL_GRACE, exit.wait_for(Option::is_some)).await;
            if exited.is_err() {
                signal_group(pgid, Signal::SIGKILL);
            }
        });
    }

    /// Run `command` (optionally in `cwd`, bounded by `timeout`), sending its output
    /// to `sink` as `mode` says. The caller sends the terminal event.
    pub(crate) async fn run(
        &self,
        io: &mut SessionIo,
        command: &str,
        cwd: Option<&Path>,
        timeout: Option<Duration>,
        sink: &EventSink,
        mode: LineMode,
    ) -> RunEnd {
        self.run_with(io, command, cwd, timeout, sink, mode, false)
            .await
    }

    /// [`Self::run`], interrupting the command (as a timeout would) when the client
    /// goes away: upstream's isolated runs end with their request.
    pub(crate) async fn run_until_disconnect(
        &self,
        io: &mut SessionIo,
        command: &str,
        timeout: Option<Duration>,
        sink: &EventSink,
        mode: LineMode,
    ) -> RunEnd {
        self.run_with(io, command, None, timeout, sink, mode, true)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_with(
        &self,
        io: &mut SessionIo,
        command: &str,
        cwd: Option<&Path>,
        timeout: Option<Duration>,
        sink: &EventSink,
        mode: LineMode,
        cancel_on_disconnect: bool,
    ) -> RunEnd {
        if !io.primed && !self.prime(io).await {
            return self.ended(io, sink, mode, false).await;
        }
        let mut script = String::new();
        if let Some(cwd) = cwd {
            script.push_str("cd -- ");
            script.push_str(&shell_quote(&cwd.to_string_lossy()));
            script.push_str(" && ");
        }
        script.push_str("eval ");
        script.push_str(&shell_quote(command));
        script.push_str(" </dev/null\nprintf '%s%d\\n' ");
        script.push_str(&shell_quote(&self.marker));
        script.push_str(" \"$?\"\n");
        if io.eof || io.stdin.write_all(script.as_bytes()).await.is_err() {
            return self.ended(io, sink, mode, false).await;
        }

        let mut emitter = Emitter {
            sink,
            mode,
            connected: true,
        };
        let mut buf = vec![0u8; 64 * 1024];
        let mut deadline = timeout.and_then(|limit| tokio::time::Instant::now().checked_add(limit));
        let mut timed_out = false;
        let mut interrupts = 0u32;
        let mut exit = self.exit.clone();
        let mut shell_gone = exit.borrow().is_some();
        let mut watch_client = cancel_on_disconnect;
        loop {
            while let Some(line) = io.pending.pop_front() {
                if let Some(pos) = find(&line, self.marker.as_bytes()) {
                    emitter.partial(&line[..pos]).await;
                    let code = std::str::from_utf8(&line[pos + self.marker.len()..])
                        .ok()
                        .and_then(|rest| rest.trim().parse::<i32>().ok())
                        .unwrap_or(-1);
                    let outcome = if timed_out {
                        ExitOutcome::Signaled(libc::SIGKILL)
                    } else {
                        ExitOutcome::Exited(code)
                    };
                    return RunEnd {
                        outcome,
                        session_ended: false,
                    };
                }
                emitter.line(&line).await;
            }
            let read = if shell_gone {
                match tokio::time::timeout(DRAIN_IDLE, io.output.read(&mut buf)).await {
                    Ok(read) => read,
                    Err(_) => Ok(0),
                }
            } else {
                let sleep_until = deadline.unwrap_or_else(far_future);
                tokio::select! {
                    read = io.output.read(&mut buf) => read,
                    _ = exit.changed() => {
                        shell_gone = true;
                        continue;
                    }
                    _ = sink.closed(), if watch_client => {
                        // Interrupt as a timeout does, starting now.
                        watch_client = false;
                        deadline = Some(tokio::time::Instant::now());
                        continue;
                    }
                    _ = tokio::time::sleep_until(sleep_until), if deadline.is_some() => {
                        timed_out = true;
                        if interrupts < INTERRUPT_TRIES {
                            interrupts += 1;
                            self.interrupt();
                            deadline = Some(tokio::time::Instant::now() + INTERRUPT_GRACE / INTERRUPT_TRIES);
                        } else {
                            // The command ignored every SIGINT: take the session down.
                            if let Some(pgid) = self.pgid {
                                signal_group(pgid, Signal::SIGKILL);
                            }
                            deadline = None;
                        }
                        continue;
                    }
                }
            };
            match read {
                Ok(0) | Err(_) => {
                    io.eof = true;
                    return self.ended(io, sink, mode, timed_out).await;
                }
                Ok(n) => {
                    let mut lines = Vec::new();
                    io.splitter.push(&buf[..n], &mut lines);
                    io.pending.extend(lines);
                }
            }
        }
    }

    /// Before the first run: make the shell ignore SIGINT (`trap : INT`) and wait until
    /// it has said so, so that a timeout's SIGINT can only reach the command. Sending
    /// the trap in front of the first command was not enough: on a loaded machine a
    /// short timeout fired before bash had read its first line, and the SIGINT killed
    /// the shell and the session with it. False when the shell is gone.
    async fn prime(&self, io: &mut SessionIo) -> bool {
        let script = format!(
            "trap : INT\nprintf '%s%d\\n' {} 0\n",
            shell_quote(&self.marker)
        );
        if io.eof || io.stdin.write_all(script.as_bytes()).await.is_err() {
            return false;
        }
        let mut buf = vec![0u8; 4096];
        loop {
            while let Some(line) = io.pending.pop_front() {
                if find(&line, self.marker.as_bytes()).is_some() {
                    io.primed = true;
                    return true;
                }
                // Nothing runs before the trap, but whatever bash printed (a warning)
                // is not any run's output.
            }
            match io.output.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    io.eof = true;
                    return false;
                }
                Ok(n) => {
                    let mut lines = Vec::new();
                    io.splitter.push(&buf[..n], &mut lines);
                    io.pending.extend(lines);
                }
            }
        }
    }

    /// The shell is gone: flush what it wrote and report how it ended.
    async fn ended(
        &self,
        io: &mut SessionIo,
        sink: &EventSink,
        mode: LineMode,
        timed_out: bool,
    ) -> RunEnd {
        let mut emitter = Emitter {
            sink,
            mode,
            connected: true,
        };
        while let Some(line) = io.pending.pop_front() {
            emitter.line(&line).await;
        }
        if let Some(rest) = io.splitter.finish() {
            emitter.partial(&rest).await;
        }
        let mut exit = self.exit.clone();
        let outcome = match tokio::time::timeout(KILL_GRACE, exit.wait_for(Option::is_some)).await {
            Ok(Ok(done)) => done.clone().unwrap_or(ExitOutcome::Exited(-1)),
            _ => ExitOutcome::Failed("the session shell closed its output".into()),
        };
        let outcome = if timed_out {
            ExitOutcome::Signaled(libc::SIGKILL)
        } else {
            outcome
        };
        RunEnd {
            outcome,
            session_ended: true,
        }
    }
}

/// Turns output lines into events for one run, and stops sending (but keeps
/// consuming) once the client is gone.
struct Emitter<'a> {
    sink: &'a EventSink,
    mode: LineMode,
    connected: bool,
}

impl Emitter<'_> {
    async fn line(&mut self, line: &[u8]) {
        let text = match self.mode {
            LineMode::Session if line.is_empty() => return,
            LineMode::Session => String::from_utf8_lossy(line).into_owned(),
            LineMode::Code => format!("{}\n", String::from_utf8_lossy(line)),
        };
        self.send(text).await;
    }

    /// An unterminated line (right before the marker, or at the end of output).
    async fn partial(&mut self, line: &[u8]) {
        if !line.is_empty() {
            self.send(String::from_utf8_lossy(line).into_owned()).await;
        }
    }

    async fn send(&mut self, text: String) {
        if self.connected
            && self
                .sink
                .send(ServerStreamEvent::stdout(text))
                .await
                .is_err()
        {
            self.connected = false;
        }
    }
}

fn far_future() -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_secs(86_400 * 365)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// `text` as one single-quoted shell word.
pub(crate) fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/session", post(create_session))
        .route("/session/{sessionId}/run", post(run_in_session))
        .route("/session/{sessionId}", delete(delete_session))
}

#[derive(Debug, Default, Deserialize)]
struct CreateSessionRequest {
    #[serde(default)]
    cwd: Option<String>,
}

#[derive(Debug, Serialize)]
struct CreateSessionResponse {
    session_id: String,
}

#[derive(Debug, Deserialize)]
struct RunInSessionRequest {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout: Option<i64>,
}

async fn create_session(
    State(state): State<SharedState>,
    AnyTypeJsonOrEmpty(request): AnyTypeJsonOrEmpty<CreateSessionRequest>,
) -> ApiResult<Json<CreateSessionResponse>> {
    let cwd = resolve_cwd(request.cwd.as_deref(), &state.config.workdir)?;
    let session = Session::spawn(&cwd)
        .map_err(|err| ApiError::runtime(format!("cannot start a bash session: {err}")))?;
    let session_id = session.id.clone();
    state.sessions.lock().insert(session_id.clone(), session);
    Ok(Json(CreateSessionResponse { session_id }))
}

async fn run_in_session(
    State(state): State<SharedState>,
    UrlPath(session_id): UrlPath<String>,
    AnyTypeJson(request): AnyTypeJson<RunInSessionRequest>,
) -> ApiResult<Response> {
    let timeout = validate_timeout(request.timeout)?;
    let cwd = match request.cwd.as_deref() {
        None | Some("") => None,
        Some(dir) => Some(resolve_cwd(Some(dir), &state.config.workdir)?),
    };
    if request.command.contains('\0') {
        return Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            "command contains a NUL byte",
        ));
    }
    let session = state
        .sessions
        .get(&session_id)
        .ok_or_else(|| not_found(&session_id))?;
    let (sink, response) = event_stream(&session.id);
    tokio::spawn(async move {
        let started = Instant::now();
        let mut io = session.begin().await;
        let end = session
            .run(
                &mut io,
                &request.command,
                cwd.as_deref(),
                timeout,
                &sink,
                LineMode::Session,
            )
            .await;
        drop(io);
        if end.session_ended {
            state.sessions.forget(&session);
        }
        let _ = sink
            .send(end.outcome.terminal_event(started.elapsed()))
            .await;
    });
    Ok(response)
}

async fn delete_session(
    State(state): State<SharedState>,
    UrlPath(session_id): UrlPath<String>,
) -> ApiResult<()> {
    if state.sessions.close(&session_id) {
        Ok(())
    } else {
        Err(not_found(&session_id))
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found("CONTEXT_NOT_FOUND", format!("session {id} not found"))
}

/// A run timeout in milliseconds: absent or 0 = none, negative = 400.
pub(crate) fn validate_timeout(timeout: Option<i64>) -> ApiResult<Option<Duration>> {
    match timeout {
        None | Some(0) => Ok(None),
        Some(ms) if ms < 0 => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_REQUEST_BODY",
            format!("timeout must be >= 0, got {ms}"),
        )),
        Some(ms) => Ok(Some(Duration::from_millis(ms.unsigned_abs()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn marker_is_found_after_a_partial_line() {
        assert_eq!(find(b"abc__M__0", b"__M__"), Some(3));
        assert_eq!(find(b"abc", b"__M__"), None);
    }
}
