//! Interactive PTY sessions (`/pty`, pty.md): a long-lived bash driven over one
//! WebSocket at a time, its output kept in a replay buffer addressed by byte offsets.
//!
//! - [`replay`]: the bounded replay buffer.
//! - [`shell`]: starting bash on a terminal or on pipes, and driving it.
//! - [`attach`]: the WebSocket attach (`GET /pty/{id}/ws`): frames, takeover,
//!   keep-alive.
//!
//! A session is created by `POST /pty`, but its shell starts on the first attach
//! (which picks PTY or pipe mode) and again on the first attach after it exited. A
//! keyed session (`POST /pty/operations`) starts once: a later attach replays its
//! output and reports its exit, and a failed start is not retried. Every
//! output byte goes through [`PtySession::publish`], which appends it to the buffer
//! and hands it to the attached client under one lock, so an attach's replay snapshot
//! and its live feed never overlap and never leave a gap.

pub mod attach;
pub mod replay;
pub mod shell;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot, watch};

use crate::commands::signal_group;
use crate::error::{ApiError, ApiResult};
use crate::extract::AnyTypeJsonOrEmpty;
use crate::SharedState;

use replay::ReplayBuffer;
use shell::{Mode, Output, Stdin};

/// Routes, spelled as in `openapi/execd.yaml`.
pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/pty"),
    ("GET", "/pty/{sessionId}"),
    ("DELETE", "/pty/{sessionId}"),
    ("GET", "/pty/{sessionId}/ws"),
];

/// Most sessions one agent keeps at once (upstream has no cap; each session may hold
/// a shell, a terminal and up to 1 MiB of replay).
pub const MAX_SESSIONS: usize = 64;
/// Largest live output frame payload (pty.md §7).
const READ_CHUNK: usize = 32 * 1024;
/// Live output chunks queued for a client before the shell's output waits for it.
const LIVE_QUEUE: usize = 16;
/// After the shell exits, how long the terminal (or a pipe) may stay silent before
/// its output is taken as ended: a background child may hold it open for good.
const DRAIN_GRACE: Duration = Duration::from_millis(300);
/// After the shell exits, at most this many more bytes are read from one output: what
/// the kernel can still hold (a terminal's or a pipe's buffer, tens of KiB) fits many
/// times over, and a background child that keeps writing cannot hold the exit back.
const DRAIN_MAX: usize = 1024 * 1024;

/// What the attached client is fed, in order.
#[derive(Debug)]
pub enum Live {
    Output(u8, Bytes),
    /// The shell exited (`-1`: killed by a signal) or the session was deleted.
    Exit(i32),
}

/// The client currently holding a session.
struct Holder {
    id: u64,
    live: mpsc::Sender<Live>,
    /// Fired to evict this client (takeover or delete).
    evict: Option<oneshot::Sender<()>>,
}

/// A running shell.
struct Running {
    generation: u64,
    mode: Mode,
    pgid: i32,
    stdin: Arc<Stdin>,
    master: Option<shell::Master>,
}

#[derive(Default)]
struct Inner {
    buffer: ReplayBuffer,
    shell: Option<Running>,
    holder: Option<Holder>,
    generations: u64,
    clients: u64,
    deleted: bool,
    /// A start was attempted (keyed sessions allow one).
    launch_attempted: bool,
    /// The mode and exit code of the last shell, once it exited.
    last_exit: Option<(Mode, i32)>,
}

/// What an attach finds after [`PtySession::ensure_started`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// The shell runs in this mode.
    Running(Mode),
    /// A keyed session whose one shell exited with this code: the attach replays the
    /// output and reports the exit instead of starting another shell.
    Exited(Mode, i32),
}

/// One PTY session.
pub struct PtySession {
    pub id: String,
    cwd: PathBuf,
    command: Option<String>,
    /// Created by `POST /pty/operations`: one launch, never restarted (upstream).
    keyed: bool,
    inner: Mutex<Inner>,
}

/// `GET /pty/{id}`.
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PtyStatus {
    pub session_id: String,
    pub running: bool,
    pub output_offset: u64,
}

impl PtySession {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> PtyStatus {
        let inner = self.lock();
        PtyStatus {
            session_id: self.id.clone(),
            running: inner.shell.is_some(),
            output_offset: inner.buffer.total(),
        }
    }

    /// Records output and hands it to the attached client (waiting while the client's
    /// queue is full: a slow client slows the shell rather than growing memory).
    async fn publish(&self, channel: u8, data: Bytes) {
        let live = {
            let mut inner = self.lock();
            inner.buffer.push(&data);
            inner.holder.as_ref().map(|h| h.live.clone())
        };
        if let Some(live) = live {
            let _ = live.send(Live::Output(channel, data)).await;
        }
    }

    /// Starts the shell unless it runs. A keyed session starts at most once: after its
    /// shell exited it reports that exit, and after a failed start it fails again.
    fn ensure_started(self: &Arc<Self>, mode: Mode) -> std::io::Result<Launch> {
        let mut inner = self.lock();
        if let Some(running) = &inner.shell {
            return Ok(Launch::Running(running.mode));
        }
        if self.keyed && inner.launch_attempted {
            return match inner.last_exit {
                Some((mode, code)) => Ok(Launch::Exited(mode, code)),
                None => Err(std::io::Error::other(
                    "this keyed session's one launch was already attempted",
                )),
            };
        }
        inner.launch_attempted = true;
        let started = shell::start(mode, &self.cwd, self.command.as_deref())?;
        inner.generations += 1;
        let generation = inner.generations;
        inner.shell = Some(Running {
            generation,
            mode,
            pgid: started.pgid,
            stdin: Arc::new(started.stdin),
            master: started.master,
        });
        drop(inner);
        self.supervise(generation, started.child, started.outputs);
        Ok(Launch::Running(mode))
    }

    /// Pumps the shell's output into the session and reaps the shell; when it exits,
    /// marks the session not running and tells the attached client.
    fn supervise(
        self: &Arc<Self>,
        generation: u64,
        mut child: tokio::process::Child,
        outputs: Vec<Output>,
    ) {
        let (exited_tx, exited) = watch::channel(false);
        let pumps: Vec<_> = outputs
            .into_iter()
            .map(|output| tokio::spawn(pump(Arc::clone(self), output, exited.clone())))
            .collect();
        let session = Arc::clone(self);
        tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(status) => status.code().unwrap_or(-1),
                Err(err) => {
                    tracing::warn!(session = %session.id, error = %err, "cannot wait for the pty shell");
                    -1
                }
            };
            // Output the shell wrote just before exiting is still in the terminal or
            // the pipes: every byte of it reaches the buffer (and the client) before
            // `exit`, however slowly the client reads. Each pump ends at the end of
            // its output, or once it stays silent for DRAIN_GRACE (a background child
            // holding the terminal), or after DRAIN_MAX more bytes (see `pump`). Not a
            // deadline on the whole drain: that dropped the terminal's last kilobytes
            // whenever the client was slower than the grace.
            let _ = exited_tx.send(true);
            for pump in pumps {
                let _ = pump.await;
            }
            let live = {
                let mut inner = session.lock();
                if let Some(running) = inner.shell.as_ref().filter(|r| r.generation == generation) {
                    inner.last_exit = Some((running.mode, code));
                    inner.shell = None;
                }
                inner.holder.as_ref().map(|h| h.live.clone())
            };
            if let Some(live) = live {
                let _ = live.send(Live::Exit(code)).await;
            }
        });
    }

    fn stdin(&self) -> Option<Arc<Stdin>> {
        self.lock().shell.as_ref().map(|r| Arc::clone(&r.stdin))
    }

    fn resize(&self, cols: u16, rows: u16) {
        let master = self.lock().shell.as_ref().and_then(|r| r.master.clone());
        if let Some(master) = master {
            if let Err(err) = shell::set_window_size(master.get_ref(), cols, rows) {
                tracing::debug!(session = %self.id, error = %err, "pty resize failed");
            }
        }
    }

    fn signal(&self, signal: Signal) {
        let pgid = self.lock().shell.as_ref().map(|r| r.pgid);
        if let Some(pgid) = pgid {
            signal_group(pgid, signal);
        }
    }

    /// Kills the shell and detaches the client (which is told `exit -1`).
    fn close(&self) {
        let (pgid, holder) = {
            let mut inner = self.lock();
            inner.deleted = true;
            (inner.shell.as_ref().map(|r| r.pgid), inner.holder.take())
        };
        if let Some(pgid) = pgid {
            signal_group(pgid, Signal::SIGKILL);
        }
        if let Some(holder) = holder {
            let _ = holder.live.try_send(Live::Exit(-1));
        }
    }
}

async fn pump(session: Arc<PtySession>, mut output: Output, mut exited: watch::Receiver<bool>) {
    let mut buf = vec![0u8; READ_CHUNK];
    let channel = output.channel();
    // Bytes read since the shell exited.
    let mut drained = 0usize;
    loop {
        let Some(read) = drain_read(output.read(&mut buf), &mut exited).await else {
            break;
        };
        match read {
            Ok(0) => break,
            Ok(n) => {
                if *exited.borrow() {
                    drained += n;
                }
                session
                    .publish(channel, Bytes::copy_from_slice(&buf[..n]))
                    .await;
                if drained >= DRAIN_MAX {
                    tracing::debug!(session = %session.id, "output still flowing after the shell exited: stopped reading");
                    break;
                }
            }
            Err(err) => {
                tracing::debug!(session = %session.id, error = %err, "pty output read failed");
                break;
            }
        }
    }
}

/// `read` while the shell runs; once it has exited (`exited` turns true, or its
/// sender is gone), `read` given at most [`DRAIN_GRACE`] to bring data: `None` when it
/// stays silent that long. Both reads are cancel-safe (readiness-based), so a read
/// interrupted by the exit loses nothing.
async fn drain_read<F>(
    read: F,
    exited: &mut watch::Receiver<bool>,
) -> Option<std::io::Result<usize>>
where
    F: std::future::Future<Output = std::io::Result<usize>>,
{
    tokio::pin!(read);
    if !*exited.borrow() {
        tokio::select! {
            r = &mut read => return Some(r),
            _ = exited.changed() => {}
        }
    }
    tokio::time::timeout(DRAIN_GRACE, read).await.ok()
}

/// Every PTY session of the agent.
#[derive(Default)]
pub struct Registry {
    sessions: Mutex<HashMap<String, Arc<PtySession>>>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<PtySession>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, id: &str) -> Option<Arc<PtySession>> {
        self.lock().get(id).cloned()
    }

    fn insert(&self, session: Arc<PtySession>) -> ApiResult<()> {
        let mut sessions = self.lock();
        if sessions.len() >= MAX_SESSIONS {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "PTY_SESSION_LIMIT",
                format!(
                    "this sandbox already has {MAX_SESSIONS} pty sessions; delete one \
                     (DELETE /pty/{{id}}) before creating another"
                ),
            ));
        }
        sessions.insert(session.id.clone(), session);
        Ok(())
    }

    fn remove(&self, id: &str) -> Option<Arc<PtySession>> {
        self.lock().remove(id)
    }

    /// Whether session `id` exists and its shell runs.
    pub(crate) fn is_running(&self, id: &str) -> bool {
        self.get(id).is_some_and(|s| s.lock().shell.is_some())
    }

    /// Drops session `id` unless its shell runs (a keyed session whose operation
    /// record expired).
    pub(crate) fn discard(&self, id: &str) {
        let mut sessions = self.lock();
        if sessions.get(id).is_some_and(|s| s.lock().shell.is_none()) {
            if let Some(session) = sessions.remove(id) {
                drop(sessions);
                session.close();
            }
        }
    }
}

/// Creates the dormant session `id` of a keyed creation (`POST /pty/operations`).
pub(crate) fn create_keyed(
    state: &SharedState,
    id: String,
    cwd: &str,
    command: &str,
) -> ApiResult<()> {
    let cwd = working_directory(Some(cwd), &state.config.workdir)?;
    let session = Arc::new(PtySession {
        id,
        cwd,
        command: Some(command.to_owned()).filter(|c| !c.is_empty()),
        keyed: true,
        inner: Mutex::new(Inner::default()),
    });
    state.pty.insert(session)
}

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/pty", post(create))
        .route("/pty/{sessionId}", get(status).delete(delete))
        .route("/pty/{sessionId}/ws", get(attach::attach))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    command: Option<String>,
}

#[derive(Debug, Serialize)]
struct CreateResponse {
    session_id: String,
}

pub(crate) fn not_found(id: &str) -> ApiError {
    ApiError::not_found("CONTEXT_NOT_FOUND", format!("pty session {id} not found"))
}

async fn create(
    State(state): State<SharedState>,
    AnyTypeJsonOrEmpty(request): AnyTypeJsonOrEmpty<CreateRequest>,
) -> ApiResult<(StatusCode, Json<CreateResponse>)> {
    if request.command.as_deref().is_some_and(|c| c.contains('\0')) {
        return Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            "command contains a NUL byte",
        ));
    }
    let cwd = working_directory(request.cwd.as_deref(), &state.config.workdir)?;
    let session = Arc::new(PtySession {
        id: uuid::Uuid::new_v4().to_string(),
        cwd,
        command: request.command.filter(|c| !c.is_empty()),
        keyed: false,
        inner: Mutex::new(Inner::default()),
    });
    let session_id = session.id.clone();
    state.pty.insert(session)?;
    Ok((StatusCode::CREATED, Json(CreateResponse { session_id })))
}

async fn status(
    State(state): State<SharedState>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<Json<PtyStatus>> {
    let session = state.pty.get(&id).ok_or_else(|| not_found(&id))?;
    Ok(Json(session.status()))
}

async fn delete(State(state): State<SharedState>, UrlPath(id): UrlPath<String>) -> ApiResult<()> {
    let session = state.pty.remove(&id).ok_or_else(|| not_found(&id))?;
    session.close();
    Ok(())
}

/// The session's working directory as upstream computes it: `$NAME` / `${NAME}`
/// expanded from the agent's environment (an undefined name is an error), a leading
/// `~` is the home directory, a relative path is taken from the workdir; created if
/// missing. Failures are 500 `RUNTIME_ERROR`, as upstream answers them.
fn working_directory(requested: Option<&str>, workdir: &std::path::Path) -> ApiResult<PathBuf> {
    let Some(requested) = requested.filter(|r| !r.is_empty()) else {
        return Ok(workdir.to_path_buf());
    };
    if requested.contains('\0') {
        return Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            "cwd contains a NUL byte",
        ));
    }
    let expanded = expand(requested, |name| std::env::var(name).ok())
        .map_err(|name| ApiError::runtime(format!("cwd {requested:?}: ${name} is not set")))?;
    let expanded = match expanded.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
            format!("{home}{rest}")
        }
        _ => expanded,
    };
    let cwd = workdir.join(expanded);
    std::fs::create_dir_all(&cwd)
        .map_err(|err| ApiError::runtime(format!("cannot create cwd {}: {err}", cwd.display())))?;
    Ok(cwd)
}

/// Expands `$NAME` and `${NAME}`; `Err(name)` for an undefined one. A `$` not
/// followed by a name is kept.
fn expand(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], &braced[end + 1..]),
                None => ("", after),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        out.push_str(&lookup(name).ok_or_else(|| name.to_owned())?);
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A session held by a client whose queue takes one item: the pump waits on it.
    fn held_session() -> (Arc<PtySession>, mpsc::Receiver<Live>) {
        let session = Arc::new(PtySession {
            id: "t".into(),
            cwd: PathBuf::from("/"),
            command: None,
            keyed: false,
            inner: Mutex::new(Inner::default()),
        });
        let (live, rx) = mpsc::channel(1);
        session.lock().holder = Some(Holder {
            id: 1,
            live,
            evict: None,
        });
        (session, rx)
    }

    /// Runs `true` as the shell with `output` as its one output; returns the output
    /// bytes the client gets and the exit it is told, reading only after `stall`.
    async fn drain(
        output: impl tokio::io::AsyncRead + Send + Unpin + 'static,
        stall: Duration,
    ) -> (usize, Option<i32>) {
        let child = tokio::process::Command::new("true").spawn().unwrap();
        drain_child(child, output, stall).await
    }

    /// [`drain`] with the shell given.
    async fn drain_child(
        child: tokio::process::Child,
        output: impl tokio::io::AsyncRead + Send + Unpin + 'static,
        stall: Duration,
    ) -> (usize, Option<i32>) {
        let (session, mut live) = held_session();
        session.supervise(
            1,
            child,
            vec![Output::Pipe(shell::STDOUT, Box::new(output))],
        );
        tokio::time::sleep(stall).await;
        let mut got = 0;
        loop {
            let item = tokio::time::timeout(Duration::from_secs(20), live.recv())
                .await
                .expect("no exit")
                .expect("feed ended without exit");
            match item {
                Live::Output(_, b) => got += b.len(),
                Live::Exit(code) => return (got, Some(code)),
            }
        }
    }

    /// Regression: the drain after the shell's exit had a deadline (DRAIN_GRACE) on
    /// the whole pump, so output still waiting behind a client slower than that was
    /// dropped (a 4 MiB PTY test lost its last 5 KiB under load).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn output_behind_a_slow_client_survives_the_shells_exit() {
        const TOTAL: usize = 256 * 1024;
        let (mut writer, reader) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            // Dropped at the end: the output's EOF.
            writer.write_all(&vec![b'a'; TOTAL]).await.unwrap();
        });
        let (got, exit) = drain(reader, DRAIN_GRACE * 3).await;
        assert_eq!((got, exit), (TOTAL, Some(0)));
    }

    /// A background child may hold the output open: silent, the drain ends after the
    /// grace; writing forever, after DRAIN_MAX bytes. Either way the exit is told.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_output_held_open_ends_the_drain() {
        let (silent, reader) = tokio::io::duplex(1024);
        let (got, exit) = drain(reader, Duration::ZERO).await;
        assert_eq!((got, exit), (0, Some(0)));
        drop(silent);

        // The writer starts once the shell is reaped, so (nearly) every byte is read
        // after the exit and counts against DRAIN_MAX: bytes read while the shell
        // still ran are not bounded, and a loaded machine (CI) read 300 KiB of them.
        let child = tokio::process::Command::new("true").spawn().unwrap();
        let pid = nix::unistd::Pid::from_raw(child.id().expect("pid") as i32);
        let (mut endless, reader) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            while nix::sys::signal::kill(pid, None).is_ok() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            while endless.write_all(&[b'y'; 4096]).await.is_ok() {}
        });
        let (got, exit) = drain_child(child, reader, Duration::ZERO).await;
        assert_eq!(exit, Some(0));
        assert!(got >= DRAIN_MAX, "{got}");
        assert!(got < DRAIN_MAX + 4 * READ_CHUNK + 64 * 1024, "{got}");
    }

    #[test]
    fn cwd_variables_expand_and_undefined_ones_fail() {
        let env = |n: &str| (n == "A").then(|| "x".to_owned());
        assert_eq!(expand("/t/$A/${A}y/$", env).unwrap(), "/t/x/xy/$");
        assert_eq!(expand("${B}", env), Err("B".into()));
        assert_eq!(expand("no vars", env).unwrap(), "no vars");
        assert_eq!(expand("a$-b", env).unwrap(), "a$-b");
    }
}
