//! Shell commands: `POST /command` (foreground stream or detached background run),
//! `GET /command/status/{id}`, `GET /command/{id}/logs`, `DELETE /command?id=`.
//!
//! Foreground output is read straight from the child's pipes and turned into
//! `stdout`/`stderr` events (protocol.md §4.2) framed per [`OutputFraming`]: the pipes are the only buffer, and the bounded event
//! channel pushes back on the child when the client reads slowly, so any amount of
//! output streams in constant memory. Background output goes to one log file per
//! command in the agent's state directory; the logs route serves byte ranges of it.
//!
//! Decisions where upstream is vague or unhelpful:
//! - A `cwd` that is not a directory is a `400` before the stream starts.
//! - Any other spawn failure (e.g. `uid` not permitted) is an `error` event whose
//!   `evalue` is the OS error text (foreground) or the typeless late-failure frame
//!   (background, as upstream); the status then reports exit code 255.
//! - Interrupting an unknown id is `404`, a finished one `409` (upstream: 500).
//! - A line longer than 1 MiB is cut into 1 MiB events so memory stays bounded. Under
//!   kept framing those pieces are the only unterminated events besides the last one
//!   (the 1.1.1 SDK's join then adds a `\n` there; the price of bounded memory).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, SecondsFormat, Utc};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio_util::io::ReaderStream;

use crate::error::{ApiError, ApiResult};
use crate::events::{
    event_stream, now_ms, push_text_frame, zero_bytes, EventSink, EventType, ExitOutcome,
    ServerStreamEvent,
};
use crate::extract::AnyTypeJson;
use crate::extract::QueryPairs;
use crate::SharedState;

pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/command"),
    ("POST", "/command"),
    ("DELETE", "/command"),
    ("GET", "/command/status/{id}"),
    ("GET", "/command/{id}/logs"),
];

/// How long an interrupted process group gets between SIGTERM and SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(3);

/// After the child exits, a pipe that stays empty this long is considered finished:
/// a backgrounded grandchild may hold it open forever.
const DRAIN_IDLE: Duration = Duration::from_millis(100);

const READ_CHUNK: usize = 64 * 1024;

/// Pipe capacity requested for foreground output (see [`widen_pipe`]).
const PIPE_BYTES: libc::c_int = 1024 * 1024;

/// Longest line emitted as one event; longer lines are cut.
pub(crate) const MAX_LINE: usize = 1024 * 1024;

/// How foreground `/command` output is cut into events (protocol.md §4.2). Sessions
/// are line-framed whatever this says; background logs are raw bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFraming {
    /// The 1.1 execd: each event keeps its terminator (`\n`, `\r`, `\r\n`), so a
    /// stream's texts concatenate to its output byte for byte.
    #[default]
    Kept,
    /// The June 2026 execd: one event per line without its terminator, an empty
    /// line as `"\n"`.
    Lines,
}

/// The agent's framing: one per process, because each sandbox has its own agent and
/// the server picks the framing per sandbox when it starts it (`--output-framing`).
static LINES_FRAMING: AtomicBool = AtomicBool::new(false);

/// Set the framing of this agent's foreground commands (at start-up).
pub fn set_output_framing(framing: OutputFraming) {
    LINES_FRAMING.store(framing == OutputFraming::Lines, Ordering::Relaxed);
}

/// The framing of this agent's foreground commands.
pub fn output_framing() -> OutputFraming {
    if LINES_FRAMING.load(Ordering::Relaxed) {
        OutputFraming::Lines
    } else {
        OutputFraming::Kept
    }
}

/// `RunCommandRequest` (protocol.md §3.1). Exactly one of `command` and `argv`.
#[derive(Debug, Default, Deserialize)]
pub struct RunCommandRequest {
    #[serde(default)]
    pub command: Option<String>,
    /// Executable and literal arguments, run without a shell (newer upstream field).
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub background: bool,
    /// Milliseconds; absent or 0 = no limit.
    #[serde(default)]
    pub timeout: Option<i64>,
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
    #[serde(default)]
    pub envs: Option<HashMap<String, String>>,
}

/// Every command this agent started, foreground or background.
#[derive(Default)]
pub struct Registry {
    commands: Mutex<HashMap<String, Arc<CommandRecord>>>,
    state_dir: OnceLock<PathBuf>,
    /// The shell started ahead of the next default foreground command.
    warm: Arc<crate::warm_shell::WarmShells>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<CommandRecord>>> {
        // A panic elsewhere cannot leave the map half-updated: recover it.
        self.commands
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn get(&self, id: &str) -> Option<Arc<CommandRecord>> {
        self.lock().get(id).cloned()
    }

    fn insert(&self, record: Arc<CommandRecord>) {
        self.lock().insert(record.id.clone(), record);
    }

    /// Whether command `id` is known and still running.
    pub(crate) fn is_running(&self, id: &str) -> bool {
        self.get(id).is_some_and(|r| r.state().outcome.is_none())
    }

    /// Records a command that could not start (exit code 255, `message` as error).
    fn insert_failed(&self, id: String, background: bool, message: String) {
        let record = Arc::new(CommandRecord::new(String::new(), background, None, id));
        record.finish(ExitOutcome::Failed(message));
        self.insert(record);
    }

    /// Where background logs go: private to this agent instance, created on first use.
    fn state_dir(&self) -> io::Result<&Path> {
        if let Some(dir) = self.state_dir.get() {
            return Ok(dir);
        }
        let dir = std::env::temp_dir()
            .join(".execd")
            .join(uuid::Uuid::new_v4().simple().to_string());
        std::fs::create_dir_all(&dir)?;
        Ok(self.state_dir.get_or_init(|| dir))
    }

    /// SIGTERM the command's process group, SIGKILL after [`KILL_GRACE`].
    /// `None` if the id is unknown.
    pub(crate) fn interrupt(&self, id: &str) -> Option<ApiResult<()>> {
        let record = self.get(id)?;
        let pgid = match record.running_pgid() {
            Some(pgid) => pgid,
            None => {
                return Some(Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "RUNTIME_ERROR",
                    format!("command {id} is not running"),
                )))
            }
        };
        signal_group(pgid, Signal::SIGTERM);
        tokio::spawn(async move {
            tokio::time::sleep(KILL_GRACE).await;
            // Checked again so a recycled process group id is never hit.
            if let Some(pgid) = record.running_pgid() {
                signal_group(pgid, Signal::SIGKILL);
            }
        });
        Some(Ok(()))
    }
}

impl Drop for Registry {
    /// Logs are only reachable through this agent: they go with it.
    fn drop(&mut self) {
        if let Some(dir) = self.state_dir.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// One command's identity and lifecycle.
struct CommandRecord {
    id: String,
    content: String,
    background: bool,
    log_path: Option<PathBuf>,
    started_at: DateTime<Utc>,
    state: Mutex<RunState>,
}

#[derive(Default)]
struct RunState {
    /// Process group id while the process runs.
    pgid: Option<i32>,
    outcome: Option<ExitOutcome>,
    finished_at: Option<DateTime<Utc>>,
}

impl CommandRecord {
    fn new(content: String, background: bool, log_path: Option<PathBuf>, id: String) -> Self {
        Self {
            id,
            content,
            background,
            log_path,
            started_at: Utc::now(),
            state: Mutex::new(RunState::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the process never started.
    fn launch_failed(&self) -> bool {
        let state = self.state();
        state.pgid.is_none() && matches!(state.outcome, Some(ExitOutcome::Failed(_)))
    }

    fn running_pgid(&self) -> Option<i32> {
        let state = self.state();
        state.outcome.is_none().then_some(state.pgid).flatten()
    }

    fn set_pgid(&self, pgid: Option<i32>) {
        self.state().pgid = pgid;
    }

    fn finish(&self, outcome: ExitOutcome) {
        let mut state = self.state();
        state.outcome = Some(outcome);
        state.finished_at = Some(Utc::now());
    }

    fn status(&self) -> CommandStatus {
        let state = self.state();
        CommandStatus {
            id: self.id.clone(),
            content: self.content.clone(),
            running: state.outcome.is_none(),
            exit_code: state.outcome.as_ref().map(ExitOutcome::exit_code),
            error: state.outcome.as_ref().and_then(ExitOutcome::error_text),
            started_at: rfc3339(self.started_at),
            finished_at: state.finished_at.map(rfc3339),
        }
    }
}

/// `CommandStatus` (protocol.md §3.1): `exit_code`/`finished_at` are omitted, not
/// null, while running.
#[derive(Debug, Serialize)]
struct CommandStatus {
    id: String,
    content: String,
    running: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    finished_at: Option<String>,
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route(
            "/command",
            post(run_command)
                .delete(interrupt_command)
                .get(list_commands),
        )
        .route("/command/status/{id}", get(command_status))
        .route("/command/{id}/logs", get(command_logs))
}

async fn run_command(
    State(state): State<SharedState>,
    AnyTypeJson(request): AnyTypeJson<RunCommandRequest>,
) -> ApiResult<Response> {
    let spec = CommandSpec::from_request(request, &state.config.workdir)?;
    if spec.background {
        run_background(&state, spec)
    } else {
        if spec.default_shell.is_some() {
            state.commands.warm.settle().await;
        }
        Ok(run_foreground(&state, spec))
    }
}

/// A validated command request.
pub(crate) struct CommandSpec {
    /// What status reports as `content`.
    content: String,
    program: Vec<String>,
    cwd: PathBuf,
    background: bool,
    timeout: Option<Duration>,
    uid: Option<u32>,
    gid: Option<u32>,
    envs: HashMap<String, String>,
    /// The command text when nothing but the text was asked for (shell form, default
    /// cwd, no env, uid or gid): what a ready shell can run.
    default_shell: Option<String>,
}

impl CommandSpec {
    /// What `request` runs, as status `content` and a program, and its timeout: the
    /// caller's mistakes, found without touching the filesystem.
    fn program(request: &RunCommandRequest) -> ApiResult<(String, Vec<String>, Option<Duration>)> {
        let invalid = |message: String| ApiError::bad_request("INVALID_REQUEST_BODY", message);
        let (content, program) = match (&request.command, &request.argv) {
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err(invalid("command must not be empty".into()));
                }
                (command.clone(), shell_program(command.clone()))
            }
            (None, Some(argv)) => {
                if argv.first().is_none_or(|first| first.is_empty()) {
                    return Err(invalid("argv[0] must be a non-empty program".into()));
                }
                (argv.join(" "), argv.clone())
            }
            (Some(_), Some(_)) => return Err(invalid("command and argv are exclusive".into())),
            (None, None) => return Err(invalid("command is required".into())),
        };
        if program.iter().any(|arg| arg.contains('\0')) {
            return Err(invalid("command contains a NUL byte".into()));
        }
        let timeout = match request.timeout {
            None | Some(0) => None,
            Some(ms) if ms < 0 => return Err(invalid(format!("timeout must be >= 0, got {ms}"))),
            Some(ms) => Some(Duration::from_millis(ms.unsigned_abs())),
        };
        if request.gid.is_some() && request.uid.is_none() {
            return Err(invalid("gid requires uid".into()));
        }
        if request.cwd.as_deref().is_some_and(|c| c.contains('\0')) {
            return Err(invalid("cwd contains a NUL byte".into()));
        }
        Ok((content, program, timeout))
    }

    fn from_request(request: RunCommandRequest, workdir: &Path) -> ApiResult<Self> {
        let (content, program, timeout) = Self::program(&request)?;
        let plain = request.cwd.as_deref().is_none_or(str::is_empty)
            && request.uid.is_none()
            && request.envs.as_ref().is_none_or(HashMap::is_empty)
            && program.first().map(String::as_str) == Some("bash")
            && program.get(1).map(String::as_str) == Some("-c")
            && program.len() == 3;
        let default_shell = plain.then(|| content.clone());
        Ok(Self {
            content,
            program,
            cwd: resolve_cwd(request.cwd.as_deref(), workdir)?,
            background: request.background,
            timeout,
            uid: request.uid,
            gid: request.gid,
            envs: request.envs.unwrap_or_default(),
            default_shell,
        })
    }

    /// A foreground shell command with defaults, for `POST /code` without a context.
    pub(crate) fn shell(command: String, workdir: &Path) -> ApiResult<Self> {
        Self::from_request(
            RunCommandRequest {
                command: Some(command),
                ..RunCommandRequest::default()
            },
            workdir,
        )
    }

    fn build(&self, program: &str, file_vars: &crate::envfile::Vars) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(program);
        command.args(&self.program[1..]).current_dir(&self.cwd);
        // The agent's environment < the env file < the request's variables.
        crate::envfile::apply_vars(&mut command, file_vars);
        command
            .envs(&self.envs)
            // Own process group, so interrupt and timeout reach every descendant.
            .process_group(0)
            .stdin(Stdio::null());
        if let Some(uid) = self.uid {
            command.uid(uid);
        }
        if let Some(gid) = self.gid {
            command.gid(gid);
        }
        crate::confine::apply(&mut command);
        command
    }

    /// Spawn with the configured stdio; a missing `bash` falls back to `sh`.
    fn spawn(
        &self,
        file_vars: &crate::envfile::Vars,
        stdout: impl Fn() -> io::Result<Stdio>,
        stderr: impl Fn() -> io::Result<Stdio>,
    ) -> io::Result<tokio::process::Child> {
        let first = self.program[0].as_str();
        let mut command = self.build(first, file_vars);
        command.stdout(stdout()?).stderr(stderr()?);
        match command.spawn() {
            Err(err) if err.kind() == io::ErrorKind::NotFound && first == "bash" => {
                let mut command = self.build("sh", file_vars);
                command.stdout(stdout()?).stderr(stderr()?);
                command.spawn()
            }
            other => other,
        }
    }
}

fn shell_program(command: String) -> Vec<String> {
    vec!["bash".into(), "-c".into(), command]
}

/// The working directory of a process: `requested` if given (it must be a directory;
/// a relative one is taken from the workdir), else the agent's workdir.
pub(crate) fn resolve_cwd(requested: Option<&str>, workdir: &Path) -> ApiResult<PathBuf> {
    let cwd = match requested {
        None | Some("") => workdir.to_path_buf(),
        Some(dir) => workdir.join(dir),
    };
    if !cwd.is_dir() {
        return Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            format!("working directory {} does not exist", cwd.display()),
        ));
    }
    Ok(cwd)
}

/// Run `spec` in the foreground and stream its output. Never fails once validated:
/// a spawn failure becomes the stream's `error` event.
pub(crate) fn run_foreground(state: &SharedState, spec: CommandSpec) -> Response {
    launch_foreground(state, spec, new_id()).0
}

/// [`run_foreground`] under the id `id`; also returns the command's record.
fn launch_foreground(
    state: &SharedState,
    spec: CommandSpec,
    id: String,
) -> (Response, Arc<CommandRecord>) {
    let record = Arc::new(CommandRecord::new(
        spec.content.clone(),
        false,
        None,
        id.clone(),
    ));
    state.commands.insert(Arc::clone(&record));
    let started = Instant::now();
    // To tell an OOM kill from any other SIGKILL: the cgroup's counter moves.
    let ooms_before = crate::metrics::oom_kills();
    // Read once per command: what `set_env` wrote before it.
    let file_vars = crate::envfile::load();
    // Dropped once this command's terminal event is queued: the next ready shell
    // starts then (see `warm_shell`), not beside this command.
    let (handed, refill) = warm_handover(state, &spec, &file_vars);
    let spawned = match handed {
        Some(handed) => Ok(handed),
        None => spec
            .spawn(&file_vars, || Ok(Stdio::piped()), || Ok(Stdio::piped()))
            .map(|mut child| {
                let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
                stdout.iter().for_each(|pipe| widen_pipe(pipe.as_raw_fd()));
                stderr.iter().for_each(|pipe| widen_pipe(pipe.as_raw_fd()));
                crate::warm_shell::Handed {
                    child,
                    stdout,
                    stderr,
                }
            }),
    };
    let (sink, response) = event_stream(&id);

    let crate::warm_shell::Handed {
        mut child,
        stdout,
        stderr,
    } = match spawned {
        Ok(handed) => handed,
        Err(err) => {
            let outcome = ExitOutcome::Failed(format!("cannot start command: {err}"));
            record.finish(outcome.clone());
            tokio::spawn(async move {
                let _ = sink.send(outcome.terminal_event(started.elapsed())).await;
            });
            return (response, record);
        }
    };
    let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
    record.set_pgid(pgid);
    let timeout = spec.timeout;
    let framing = output_framing();

    let kept = Arc::clone(&record);
    tokio::spawn(async move {
        let (exited_tx, exited_rx) = watch::channel(false);
        let pumps = [
            stdout.map(|pipe| {
                tokio::spawn(pump_lines(
                    pipe,
                    sink.clone(),
                    exited_rx.clone(),
                    EventType::Stdout,
                    framing,
                ))
            }),
            stderr.map(|pipe| {
                tokio::spawn(pump_lines(
                    pipe,
                    sink.clone(),
                    exited_rx,
                    EventType::Stderr,
                    framing,
                ))
            }),
        ];
        let outcome = wait_child(&mut child, timeout, pgid).await;
        let _ = exited_tx.send(true);
        for pump in pumps.into_iter().flatten() {
            let _ = pump.await;
        }
        // Status first, so a client reacting to the terminal event sees it final.
        record.finish(outcome.clone());
        let mut event = outcome.terminal_event(started.elapsed());
        if let (Some(note), Some(error)) = (oom_note(&outcome, ooms_before), event.error.as_mut()) {
            error.traceback.push(note);
        }
        let _ = sink.send(event).await;
        drop(refill);
    });
    (response, kept)
}

/// The default foreground command `spec` running in the ready shell, if it is one a
/// ready shell can take and one is ready (see `warm_shell`). For such a command, the
/// start of the next shell: dropping it starts the shell (the caller drops it once the
/// command's terminal event is queued).
fn warm_handover(
    state: &SharedState,
    spec: &CommandSpec,
    file_vars: &crate::envfile::Vars,
) -> (
    Option<crate::warm_shell::Handed>,
    Option<crate::warm_shell::Refill>,
) {
    let Some(command) = spec.default_shell.as_deref() else {
        return (None, None);
    };
    let Ok(cwd) = std::fs::metadata(&spec.cwd) else {
        return (None, None);
    };
    let warm = &state.commands.warm;
    let handed = warm.run(command, &cwd, file_vars);
    let refill = warm.refill_later(spec.cwd.clone(), widen_pipe);
    (handed, Some(refill))
}

/// "OOM: ..." when `outcome` is a SIGKILL (or a shell's 137) and the sandbox's cgroup
/// counted an OOM kill since `before`.
fn oom_note(outcome: &ExitOutcome, before: Option<u64>) -> Option<String> {
    let killed = matches!(
        outcome,
        ExitOutcome::Signaled(libc::SIGKILL) | ExitOutcome::Exited(137)
    );
    if !killed || crate::metrics::oom_kills()? <= before? {
        return None;
    }
    Some(match crate::metrics::memory_limit() {
        Some(limit) => format!(
            "OOM: killed by the kernel's out-of-memory killer at the sandbox's memory limit of {} MiB",
            limit >> 20
        ),
        None => "OOM: killed by the kernel's out-of-memory killer".to_string(),
    })
}

/// How long a finished background command's status waits for its log to drain.
const LOG_DRAIN: Duration = Duration::from_millis(500);

fn run_background(state: &SharedState, spec: CommandSpec) -> ApiResult<Response> {
    launch_background(state, spec, new_id()).map(|(response, _)| response)
}

/// [`run_background`] under the id `id`; also returns the command's record.
fn launch_background(
    state: &SharedState,
    spec: CommandSpec,
    id: String,
) -> ApiResult<(Response, Arc<CommandRecord>)> {
    let dir = state.commands.state_dir().map_err(|err| {
        ApiError::runtime(format!("cannot create the agent state directory: {err}"))
    })?;
    let log_path = dir.join(format!("{id}.log"));
    // Readable too: the cap keeps the log's tail by reading it back.
    let log = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&log_path)
        .map_err(|err| ApiError::runtime(format!("cannot create {}: {err}", log_path.display())))?;
    let record = Arc::new(CommandRecord::new(
        spec.content.clone(),
        true,
        Some(log_path),
        id.clone(),
    ));
    state.commands.insert(Arc::clone(&record));
    let started = Instant::now();
    // Through a pipe and a pump capped at --log-cap: the command never holds the
    // file, so it cannot write past the cap.
    let (out, err, drained) = crate::logcap::capped_pipe(log, id.clone())
        .map_err(|err| ApiError::runtime(format!("cannot set up the log of {id}: {err}")))?;
    let spawned = spec.spawn(
        &crate::envfile::load(),
        || Ok(Stdio::from(out.try_clone()?)),
        || Ok(Stdio::from(err.try_clone()?)),
    );
    // Only the child keeps the write ends: the pump ends when the command's
    // processes have all exited.
    drop((out, err));
    let (sink, response) = event_stream(&id);
    let kept = Arc::clone(&record);

    match spawned {
        Ok(mut child) => {
            let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
            record.set_pgid(pgid);
            let timeout = spec.timeout;
            tokio::spawn(async move {
                let outcome = wait_child(&mut child, timeout, pgid).await;
                // Let the pump write what the command printed last, so the log is
                // complete when the status says finished; a process the command left
                // behind may hold the pipe open, so don't wait for it long.
                let _ = tokio::time::timeout(LOG_DRAIN, drained).await;
                record.finish(outcome);
            });
            tokio::spawn(async move {
                let _ = sink
                    .send(ServerStreamEvent::complete(started.elapsed()))
                    .await;
            });
        }
        Err(err) => {
            let message = format!("cannot start command: {err}");
            record.finish(ExitOutcome::Failed(message.clone()));
            tokio::spawn(async move {
                let _ = sink.fail("RUNTIME_ERROR", &message).await;
            });
        }
    }
    Ok((response, kept))
}

/// The caller's mistakes in `request` (`POST /command/operations` refuses them before
/// claiming the operation id).
pub(crate) fn check_request(request: &RunCommandRequest) -> ApiResult<()> {
    CommandSpec::program(request).map(|_| ())
}

/// Starts a keyed command (`POST /command/operations`) under `id`, foreground or
/// background, without a stream: its output is read and dropped (foreground) or
/// logged (background). Returns whether the process started; when it did not, the
/// command's status says why (exit code 255). Its status shows no `content`, as
/// upstream's keyed commands.
pub(crate) fn launch_keyed(state: &SharedState, request: RunCommandRequest, id: String) -> bool {
    let background = request.background;
    let mut spec = match CommandSpec::from_request(request, &state.config.workdir) {
        Ok(spec) => spec,
        Err(err) => {
            state.commands.insert_failed(id, background, err.message);
            return false;
        }
    };
    spec.content = String::new();
    let record = if spec.background {
        match launch_background(state, spec, id.clone()) {
            Ok((_, record)) => record,
            Err(err) => {
                state.commands.insert_failed(id, true, err.message);
                return false;
            }
        }
    } else {
        launch_foreground(state, spec, id).1
    };
    !record.launch_failed()
}

/// Wait for `child`, SIGKILLing its group when `timeout` passes (Go's
/// `CommandContext` does the same, hence "signal: killed").
async fn wait_child(
    child: &mut tokio::process::Child,
    timeout: Option<Duration>,
    pgid: Option<i32>,
) -> ExitOutcome {
    let waited = match timeout {
        None => child.wait().await,
        Some(limit) => match tokio::time::timeout(limit, child.wait()).await {
            Ok(waited) => waited,
            Err(_) => {
                if let Some(pgid) = pgid {
                    signal_group(pgid, Signal::SIGKILL);
                }
                child.wait().await
            }
        },
    };
    match waited {
        Ok(status) => ExitOutcome::from_status(status),
        Err(err) => ExitOutcome::Failed(format!("cannot wait for command: {err}")),
    }
}

/// Read `pipe` to its end and send each line as a `kind` event, framed per `framing`. Once `exited` turns
/// true the pipe is read only while it keeps delivering data. A disconnected client
/// does not stop the reading: the child must never block on a full pipe.
///
/// The lines of one read are framed together into chunks of about [`BATCH_BYTES`],
/// one channel message each, so a fast writer costs a few sends per pipe read
/// instead of one per line; the order and bytes of the frames are unchanged.
async fn pump_lines<R>(
    mut pipe: R,
    sink: EventSink,
    mut exited: watch::Receiver<bool>,
    kind: EventType,
    framing: OutputFraming,
) where
    R: AsyncRead + Unpin,
{
    let mut buf = vec![0u8; READ_CHUNK];
    let mut splitter = LineSplitter::new(framing);
    let mut batch = FrameBatch::new(kind);
    let mut connected = true;
    let mut child_gone = *exited.borrow();
    loop {
        let read = if child_gone {
            match tokio::time::timeout(DRAIN_IDLE, pipe.read(&mut buf)).await {
                Ok(read) => read,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                read = pipe.read(&mut buf) => read,
                _ = exited.changed() => {
                    child_gone = true;
                    continue;
                }
            }
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        batch.stamp();
        splitter.push_each(&buf[..n], |line| batch.push_line(line));
        connected = batch.send(&sink, connected).await;
    }
    if let Some(rest) = splitter.finish() {
        batch.stamp();
        batch.push_line(&rest);
    }
    batch.send(&sink, connected).await;
}

/// Chunk size the output pumps aim for: large enough to amortise a channel send and
/// a socket write, small enough that the bounded channel stays a small buffer.
const BATCH_BYTES: usize = 64 * 1024;

/// Line frames of one output stream, accumulated between two sends.
struct FrameBatch {
    kind: EventType,
    timestamp: i64,
    current: Vec<u8>,
    /// Full chunks, oldest first, waiting for [`FrameBatch::send`].
    full: Vec<Bytes>,
}

impl FrameBatch {
    fn new(kind: EventType) -> Self {
        Self {
            kind,
            timestamp: now_ms(),
            current: Vec::new(),
            full: Vec::new(),
        }
    }

    /// Lines read from now on carry the current time.
    fn stamp(&mut self) {
        self.timestamp = now_ms();
    }

    /// Frame one `/command` line. Line framing: without its terminator, an empty line
    /// as `"\n"`. Kept framing never hands over an empty line (each has its terminator).
    fn push_line(&mut self, line: &[u8]) {
        let text = if line.is_empty() {
            Cow::Borrowed("\n")
        } else {
            // `from_utf8` has a faster all-ASCII path than the lossy decoder.
            std::str::from_utf8(line).map_or_else(|_| String::from_utf8_lossy(line), Cow::Borrowed)
        };
        if self.current.capacity() == 0 {
            self.current.reserve(BATCH_BYTES + 1024);
        }
        push_text_frame(&mut self.current, self.kind, &text, self.timestamp);
        if self.current.len() >= BATCH_BYTES {
            self.full
                .push(Bytes::from(std::mem::take(&mut self.current)));
        }
    }

    /// Send everything framed so far, in order; returns whether the client is still
    /// connected (once it is gone, frames are dropped).
    async fn send(&mut self, sink: &EventSink, mut connected: bool) -> bool {
        if !self.current.is_empty() {
            self.full
                .push(Bytes::from(std::mem::take(&mut self.current)));
        }
        for chunk in self.full.drain(..) {
            if connected && sink.send_frames(chunk).await.is_err() {
                connected = false;
            }
        }
        connected
    }
}

/// Splits a byte stream into lines: `\n`, `\r` and `\r\n` each end one line.
/// A line longer than [`MAX_LINE`] is cut (at a UTF-8 boundary when possible).
///
/// With `keep` the terminator stays on each line, so the lines concatenate to the
/// input exactly. A `\r` at the very end of a read is handed over at once (a
/// progress bar must show now, not on its next update), so a CRLF split between two
/// reads becomes `"…\r"` then `"\n"`: still exact, and still read as one line ending
/// by the 1.1.1 SDK's joining rule (protocol.md §4.2).
#[derive(Default)]
pub(crate) struct LineSplitter {
    partial: Vec<u8>,
    /// The previous chunk ended in `\r`: a leading `\n` completes that CRLF.
    after_cr: bool,
    keep: bool,
}

impl LineSplitter {
    pub(crate) fn new(framing: OutputFraming) -> Self {
        Self {
            keep: framing == OutputFraming::Kept,
            ..Self::default()
        }
    }

    pub(crate) fn push(&mut self, data: &[u8], out: &mut Vec<Vec<u8>>) {
        self.push_each(data, |line| out.push(line.to_vec()));
    }

    /// Like [`LineSplitter::push`], but hands each line to `line` as a borrowed slice,
    /// so lines that do not straddle two chunks are never copied.
    pub(crate) fn push_each(&mut self, mut data: &[u8], mut line: impl FnMut(&[u8])) {
        if self.after_cr {
            self.after_cr = false;
            // Kept framing already handed over the `\r`; the `\n` goes out on its own.
            if !self.keep {
                if let Some(rest) = data.strip_prefix(b"\n") {
                    data = rest;
                }
            }
        }
        while let Some(pos) = find_line_end(data) {
            let mut end = pos + 1;
            if data[pos] == b'\r' {
                match data.get(end) {
                    Some(b'\n') => end += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let body = if self.keep {
                &data[..end]
            } else {
                &data[..pos]
            };
            if self.partial.is_empty() {
                line(body);
            } else {
                self.partial.extend_from_slice(body);
                line(&self.partial);
                self.partial.clear();
            }
            data = &data[end..];
        }
        self.partial.extend_from_slice(data);
        while self.partial.len() > MAX_LINE {
            let cut = utf8_cut(&self.partial, MAX_LINE);
            line(&self.partial[..cut]);
            self.partial.drain(..cut);
        }
    }

    /// The unterminated tail, if any.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        self.after_cr = false;
        (!self.partial.is_empty()).then(|| std::mem::take(&mut self.partial))
    }
}

/// The position of the first `\n` or `\r` in `data`, eight bytes at a time.
fn find_line_end(data: &[u8]) -> Option<usize> {
    const LF: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    const CR: u64 = 0x0d0d_0d0d_0d0d_0d0d;
    let mut words = data.chunks_exact(8);
    let mut offset = 0;
    for word in words.by_ref() {
        let word = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        // The lowest flagged byte is always a real match (see `zero_bytes`).
        let found = zero_bytes(word ^ LF) | zero_bytes(word ^ CR);
        if found != 0 {
            return Some(offset + found.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map(|pos| offset + pos)
}

/// A cut position at or below `max` that does not split a UTF-8 sequence (falls back
/// to `max` for data that is not UTF-8).
fn utf8_cut(data: &[u8], max: usize) -> usize {
    (max.saturating_sub(3)..=max)
        .rev()
        .find(|&i| i == data.len() || data.get(i).is_some_and(|b| (b & 0xC0) != 0x80))
        .filter(|&i| i > 0)
        .unwrap_or(max)
}

/// Ask for a [`PIPE_BYTES`] pipe: a fast writer then blocks less often, and each
/// wake-up of the pump finds more to read. Best effort: the kernel may refuse
/// (`/proc/sys/fs/pipe-max-size`), and the default 64 KiB pipe still works.
fn widen_pipe(fd: RawFd) {
    // SAFETY: F_SETPIPE_SZ takes an int and touches no memory of ours; `fd` is a
    // pipe end owned by the caller for the duration of the call.
    let _ = unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES) };
}

/// Send `signal` to process group `pgid`; a group that is already gone is fine.
pub(crate) fn signal_group(pgid: i32, signal: Signal) {
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// A fresh 32-hex id, the shape upstream uses for commands.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

async fn command_status(
    State(state): State<SharedState>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let record = state.commands.get(&id).ok_or_else(|| {
        ApiError::not_found("INVALID_REQUEST_BODY", format!("command {id} not found"))
    })?;
    serde_json::to_value(record.status())
        .map(Json)
        .map_err(|err| ApiError::runtime(format!("cannot encode status: {err}")))
}

async fn command_logs(
    State(state): State<SharedState>,
    UrlPath(id): UrlPath<String>,
    query: QueryPairs,
) -> ApiResult<Response> {
    let invalid = |message: String| ApiError::bad_request("INVALID_REQUEST_BODY", message);
    let cursor = match query.int("cursor")? {
        None => 0,
        Some(cursor) => u64::try_from(cursor)
            .map_err(|_| invalid(format!("cursor must be a byte offset >= 0, got {cursor}")))?,
    };
    let record = state
        .commands
        .get(&id)
        .ok_or_else(|| invalid(format!("command {id} not found")))?;
    let path = match (&record.log_path, record.background) {
        (Some(path), true) => path.clone(),
        _ => {
            return Err(invalid(format!(
                "command {id} is not running in background"
            )))
        }
    };
    let (file, len, tail) = crate::logcap::read_window(&path, cursor, u64::MAX)
        .await
        .map_err(|err| ApiError::runtime(format!("cannot read the log of {id}: {err}")))?;
    let body = Body::from_stream(ReaderStream::new(file.take(len)));
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    headers.insert("EXECD-COMMANDS-TAIL-CURSOR", HeaderValue::from(tail));
    Ok(response)
}

/// Default and largest `limit` of `GET /command`.
const INVENTORY_DEFAULT_LIMIT: usize = 50;
const INVENTORY_MAX_LIMIT: usize = 100;
/// Longest cursor accepted.
const INVENTORY_CURSOR_MAX: usize = 256;

/// Which commands `GET /command` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InventoryFilter {
    All,
    Running,
    Terminal,
}

impl InventoryFilter {
    fn tag(self) -> &'static str {
        match self {
            Self::All => "a",
            Self::Running => "r",
            Self::Terminal => "t",
        }
    }
}

/// A parsed `GET /command` query.
#[derive(Debug, PartialEq, Eq)]
struct InventoryQuery {
    filter: InventoryFilter,
    limit: usize,
    cursor: Option<String>,
}

/// Parses the inventory query as upstream does: only `running` (`true`/`false`),
/// `limit` (1–100) and `cursor`, each at most once, no empty components; an empty
/// cursor is `invalid cursor`, anything else wrong `invalid query parameter`.
fn inventory_query(raw: Option<&str>) -> Result<InventoryQuery, &'static str> {
    const QUERY: &str = "invalid query parameter";
    const CURSOR: &str = "invalid cursor";
    let mut query = InventoryQuery {
        filter: InventoryFilter::All,
        limit: INVENTORY_DEFAULT_LIMIT,
        cursor: None,
    };
    let Some(raw) = raw.filter(|r| !r.is_empty()) else {
        return Ok(query);
    };
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(&part.replace('+', " "))
            .decode_utf8()
            .map(|c| c.into_owned())
            .ok()
            .filter(|_| {
                // A `%` not followed by two hex digits is malformed.
                let bytes = part.as_bytes();
                bytes.iter().enumerate().all(|(i, b)| {
                    *b != b'%'
                        || (bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
                })
            })
    };
    let (mut invalid, mut empty_cursor) = (false, false);
    let mut seen = [false; 3];
    for component in raw.split('&') {
        if component.is_empty() {
            invalid = true;
            continue;
        }
        let (raw_key, raw_value, has_value) = match component.split_once('=') {
            Some((k, v)) => (k, v, true),
            None => (component, "", false),
        };
        let (Some(key), Some(value)) = (decode(raw_key), decode(raw_value)) else {
            invalid = true;
            continue;
        };
        if key == "cursor" && (!has_value || value.trim().is_empty()) {
            empty_cursor = true;
            continue;
        }
        let slot = match key.as_str() {
            "running" => 0,
            "limit" => 1,
            "cursor" => 2,
            _ => {
                invalid = true;
                continue;
            }
        };
        if !has_value || seen[slot] || value.trim().is_empty() {
            invalid = true;
            continue;
        }
        seen[slot] = true;
        match slot {
            0 => match value.as_str() {
                "true" => query.filter = InventoryFilter::Running,
                "false" => query.filter = InventoryFilter::Terminal,
                _ => invalid = true,
            },
            1 => match value.parse::<usize>() {
                Ok(limit)
                    if value.bytes().all(|b| b.is_ascii_digit())
                        && (1..=INVENTORY_MAX_LIMIT).contains(&limit) =>
                {
                    query.limit = limit
                }
                _ => invalid = true,
            },
            _ => query.cursor = Some(value),
        }
    }
    if empty_cursor {
        return Err(CURSOR);
    }
    if invalid {
        return Err(QUERY);
    }
    Ok(query)
}

/// One command of the inventory, sorted by (started, id) descending.
struct InventoryItem {
    started_nanos: i64,
    id: String,
    summary: serde_json::Value,
}

/// An opaque cursor: `1-<instance>-<filter>-<started nanos>-<id>`, valid only in this
/// agent lifetime, for the same filter.
fn encode_cursor(instance: &str, filter: InventoryFilter, nanos: i64, id: &str) -> String {
    format!("1-{instance}-{}-{nanos}-{id}", filter.tag())
}

fn decode_cursor(cursor: &str, instance: &str, filter: InventoryFilter) -> Option<(i64, String)> {
    if cursor.len() > INVENTORY_CURSOR_MAX
        || !cursor
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return None;
    }
    let rest = cursor.strip_prefix("1-")?.strip_prefix(instance)?;
    let rest = rest.strip_prefix('-')?.strip_prefix(filter.tag())?;
    let (nanos, id) = rest.strip_prefix('-')?.split_once('-')?;
    let nanos = nanos
        .parse::<i64>()
        .ok()
        .filter(|n| n.to_string() == nanos)?;
    (!id.is_empty()).then(|| (nanos, id.to_owned()))
}

/// `GET /command?running=&limit=&cursor=`: a page of the command inventory, newest
/// first (`{commands: [...], pagination: {limit, nextCursor?}}`), `no-store`.
async fn list_commands(
    State(state): State<SharedState>,
    axum::extract::RawQuery(raw): axum::extract::RawQuery,
) -> Response {
    let mut response = match list_commands_inner(&state, raw.as_deref()) {
        Ok(page) => Json(page).into_response(),
        Err(err) => err.into_response(),
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn list_commands_inner(state: &SharedState, raw: Option<&str>) -> ApiResult<serde_json::Value> {
    let query = inventory_query(raw).map_err(|m| ApiError::bad_request("INVALID_QUERY", m))?;
    let instance = state.operations.instance_id();
    let frontier = match &query.cursor {
        None => None,
        Some(cursor) => Some(
            decode_cursor(cursor, instance, query.filter)
                .ok_or_else(|| ApiError::bad_request("INVALID_QUERY", "invalid cursor"))?,
        ),
    };
    let records: Vec<Arc<CommandRecord>> = state.commands.lock().values().cloned().collect();
    let mut items: Vec<InventoryItem> = records
        .iter()
        .filter_map(|record| {
            let status = record.state();
            let running = status.outcome.is_none();
            let wanted = match query.filter {
                InventoryFilter::All => true,
                InventoryFilter::Running => running,
                InventoryFilter::Terminal => !running,
            };
            if !wanted {
                return None;
            }
            let started_nanos = record.started_at.timestamp_nanos_opt().unwrap_or(0);
            let mut summary = serde_json::json!({
                "session": record.id,
                "running": running,
                "background": record.background,
                "started_at": rfc3339(record.started_at),
            });
            if let (Some(map), Some(outcome)) = (summary.as_object_mut(), &status.outcome) {
                map.insert("finished_at".into(), status.finished_at.map(rfc3339).into());
                map.insert("exit_code".into(), outcome.exit_code().into());
                if let Some(error) = outcome.error_text() {
                    map.insert("error".into(), error.into());
                }
            }
            Some(InventoryItem {
                started_nanos,
                id: record.id.clone(),
                summary,
            })
        })
        .filter(|item| {
            frontier
                .as_ref()
                .is_none_or(|(nanos, id)| (item.started_nanos, &item.id) < (*nanos, id))
        })
        .collect();
    items.sort_by(|a, b| (b.started_nanos, &b.id).cmp(&(a.started_nanos, &a.id)));
    let more = items.len() > query.limit;
    items.truncate(query.limit);
    let mut pagination = serde_json::json!({ "limit": query.limit });
    if let (true, Some(last), Some(map)) = (more, items.last(), pagination.as_object_mut()) {
        map.insert(
            "nextCursor".into(),
            encode_cursor(instance, query.filter, last.started_nanos, &last.id).into(),
        );
    }
    let commands: Vec<serde_json::Value> = items.into_iter().map(|i| i.summary).collect();
    Ok(serde_json::json!({ "commands": commands, "pagination": pagination }))
}

/// `DELETE /command?id=`: a command, else a bash session (closed), else a code
/// context (its running cell interrupted).
async fn interrupt_command(State(state): State<SharedState>, query: QueryPairs) -> ApiResult<()> {
    let id = query.required("id")?;
    if let Some(result) = state.commands.interrupt(id) {
        return result;
    }
    if state.sessions.close(id) {
        return Ok(());
    }
    if state.code.interrupt(id) {
        return Ok(());
    }
    Err(ApiError::not_found(
        "INVALID_REQUEST_BODY",
        format!("no command, session or context with id {id}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let mut splitter = LineSplitter::default();
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut out);
        }
        out.extend(splitter.finish());
        out.into_iter()
            .map(|line| String::from_utf8_lossy(&line).into_owned())
            .collect()
    }

    #[test]
    fn lf_cr_and_crlf_each_end_one_line() {
        assert_eq!(split(&[b"a\nb\r\nc\rd"]), ["a", "b", "c", "d"]);
        assert_eq!(split(&[b"\n\nx\n"]), ["", "", "x"]);
        assert_eq!(split(&[b"a\r\rb"]), ["a", "", "b"]);
    }

    #[test]
    fn line_ends_are_found_at_every_offset() {
        for len in 0..40 {
            for end in [b'\n', b'\r'] {
                let mut data = vec![b'x'; len];
                assert_eq!(find_line_end(&data), None);
                for at in 0..len {
                    data[at] = end;
                    // A later terminator must not hide this one.
                    if let Some(last) = data.last_mut().filter(|_| at + 1 < len) {
                        *last = b'\r';
                    }
                    assert_eq!(find_line_end(&data), Some(at), "len {len} at {at}");
                    data.iter_mut().for_each(|b| *b = b'x');
                }
            }
        }
        assert_eq!(find_line_end("é\u{a0a}\n".as_bytes()), Some(5));
    }

    #[test]
    fn crlf_split_across_chunks_is_one_terminator() {
        assert_eq!(split(&[b"a\r", b"\nb\n"]), ["a", "b"]);
        assert_eq!(split(&[b"a", b"b\r", b"c"]), ["ab", "c"]);
    }

    #[test]
    fn long_lines_are_cut_at_char_boundaries() {
        let mut data = vec![b'x'; MAX_LINE - 1];
        data.extend_from_slice("é".as_bytes());
        data.extend_from_slice("tail".repeat(READ_CHUNK).as_bytes());
        data.push(b'\n');
        // Lines arrive in pipe-sized chunks; the cut applies to what is buffered.
        let chunks: Vec<&[u8]> = data.chunks(READ_CHUNK).collect();
        let lines = split(&chunks);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), MAX_LINE - 1);
        assert!(lines[1].starts_with("étail"));
        assert_eq!(lines.concat().len() + 1, data.len());
    }

    fn split_kept(chunks: &[&[u8]]) -> Vec<String> {
        let mut splitter = LineSplitter::new(OutputFraming::Kept);
        let mut out = Vec::new();
        for chunk in chunks {
            splitter.push(chunk, &mut out);
        }
        out.extend(splitter.finish());
        out.into_iter()
            .map(|line| String::from_utf8_lossy(&line).into_owned())
            .collect()
    }

    #[test]
    fn kept_framing_keeps_each_terminator() {
        assert_eq!(split_kept(&[b"a\nb\r\nc"]), ["a\n", "b\r\n", "c"]);
        assert_eq!(split_kept(&[b"a\nb\r\nc\rd"]), ["a\n", "b\r\n", "c\r", "d"]);
        assert_eq!(split_kept(&[b"a\r\rb\n"]), ["a\r", "\r", "b\n"]);
    }

    #[test]
    fn kept_framing_empty_lines_and_no_trailing_newline() {
        assert_eq!(split_kept(&[b"\n\nx\n"]), ["\n", "\n", "x\n"]);
        assert_eq!(split_kept(&[b"tail"]), ["tail"]);
        assert_eq!(split_kept(&[b""]), Vec::<String>::new());
        assert_eq!(split_kept(&[b"a", b"b", b"\n", b"c"]), ["ab\n", "c"]);
    }

    #[test]
    fn kept_framing_crlf_split_across_chunks_stays_exact() {
        // The `\r` goes out with its read; the `\n` follows on its own.
        assert_eq!(split_kept(&[b"a\r", b"\nb\n"]), ["a\r", "\n", "b\n"]);
        assert_eq!(split_kept(&[b"a", b"b\r", b"c"]), ["ab\r", "c"]);
        assert_eq!(split_kept(&[b"a\r", b"\r\n"]), ["a\r", "\r\n"]);
    }

    #[test]
    fn kept_framing_concatenates_to_the_input_at_every_chunking() {
        let data: &[u8] = b"one\ntwo\r\nthree\rfour\n\n\r\r\nfive";
        for cut in 0..=data.len() {
            let (head, tail) = data.split_at(cut);
            let lines = split_kept(&[head, tail]);
            assert_eq!(lines.concat().as_bytes(), data, "cut at {cut}");
            // Only the final event may be unterminated.
            for line in &lines[..lines.len() - 1] {
                assert!(line.ends_with('\n') || line.ends_with('\r'), "{lines:?}");
            }
        }
    }

    #[test]
    fn kept_framing_cuts_long_lines_and_stays_exact() {
        // The cut applies to what is buffered when a read ends without a terminator.
        let long = vec![b'x'; MAX_LINE + 10];
        let lines = split_kept(&[&long, b"\nend\r\n"]);
        let mut data = long.clone();
        data.extend_from_slice(b"\nend\r\n");
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0].len(), MAX_LINE);
        assert_eq!(lines[1], "x".repeat(10) + "\n");
        assert_eq!(lines[2], "end\r\n");
        assert_eq!(lines.concat().as_bytes(), &data[..]);
    }

    /// The texts of the frames a pump sends for `input`, in order.
    async fn pumped(input: &'static [u8], framing: OutputFraming) -> Vec<String> {
        let (sink, response) = event_stream("id");
        let (_exited_tx, exited_rx) = watch::channel(true);
        pump_lines(input, sink, exited_rx, EventType::Stdout, framing).await;
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        String::from_utf8_lossy(&body)
            .split("\n\n")
            .filter(|frame| !frame.is_empty())
            .map(|frame| serde_json::from_str::<ServerStreamEvent>(frame).expect("frame"))
            .filter(|event| event.kind == EventType::Stdout)
            .filter_map(|event| event.text)
            .collect()
    }

    #[tokio::test]
    async fn pump_emits_printf_output_in_both_framings() {
        // printf 'a\nb\r\nc'
        assert_eq!(
            pumped(b"a\nb\r\nc", OutputFraming::Kept).await,
            ["a\n", "b\r\n", "c"]
        );
        assert_eq!(
            pumped(b"a\nb\r\nc", OutputFraming::Lines).await,
            ["a", "b", "c"]
        );
        assert_eq!(
            pumped(b"x\n\ny\n", OutputFraming::Lines).await,
            ["x", "\n", "y"]
        );
        assert_eq!(
            pumped(b"x\n\ny\n", OutputFraming::Kept).await,
            ["x\n", "\n", "y\n"]
        );
    }

    #[test]
    fn inventory_query_is_strict() {
        let ok = |q: &str| inventory_query(Some(q)).expect(q);
        assert_eq!(inventory_query(None).unwrap().limit, 50);
        assert_eq!(ok("running=true").filter, InventoryFilter::Running);
        assert_eq!(ok("running=false&limit=25").limit, 25);
        assert_eq!(ok("cursor=abc").cursor.as_deref(), Some("abc"));
        assert_eq!(ok("limit=100").limit, 100);
        for bad in [
            "unknown=value",
            "limit=1&limit=2",
            "running=true&running=false",
            "cursor=one&cursor=two",
            "running=",
            "limit=",
            "running=%20",
            "running=TRUE",
            "limit=0",
            "limit=101",
            "limit=+5",
            "limit=-1",
            "limit=99999999999999999999999",
            "&running=true",
            "running=true&",
            "&&",
            "running=true&&limit=25",
            "running=%zz",
            "running",
        ] {
            assert_eq!(
                inventory_query(Some(bad)),
                Err("invalid query parameter"),
                "{bad}"
            );
        }
        for bad in [
            "cursor=",
            "cursor",
            "cursor=&running=",
            "running=&cursor=",
            "&&cursor=",
            "cursor=%20",
        ] {
            assert_eq!(inventory_query(Some(bad)), Err("invalid cursor"), "{bad}");
        }
    }

    #[test]
    fn inventory_cursors_round_trip_and_refuse_others() {
        let inst = "0123456789abcdef0123456789abcdef";
        let c = encode_cursor(inst, InventoryFilter::Running, 1_700_000_000_123, "abc");
        assert_eq!(
            decode_cursor(&c, inst, InventoryFilter::Running),
            Some((1_700_000_000_123, "abc".into()))
        );
        assert_eq!(decode_cursor(&c, inst, InventoryFilter::All), None);
        assert_eq!(
            decode_cursor(&c, &inst.replace('0', "1"), InventoryFilter::Running),
            None
        );
        let bad = [
            String::new(),
            "x".into(),
            "1-".into(),
            c.replace("-abc", "-"),
            c.replace("-r-", "-r-01"),
            "a".repeat(300),
            "1-a b".into(),
        ];
        for bad in &bad {
            assert_eq!(
                decode_cursor(bad, inst, InventoryFilter::Running),
                None,
                "{bad}"
            );
        }
    }

    #[test]
    fn request_validation() {
        let dir = std::env::temp_dir();
        let parse = |json: &str| {
            let request: RunCommandRequest = serde_json::from_str(json).expect("json");
            CommandSpec::from_request(request, &dir)
                .map(|_| ())
                .map_err(|e| e.status.as_u16())
        };
        assert_eq!(parse(r#"{"command":"true"}"#), Ok(()));
        assert_eq!(parse(r#"{"command":"true","timeout":-1}"#), Err(400));
        assert_eq!(parse(r#"{"command":"true","gid":5}"#), Err(400));
        assert_eq!(
            parse(r#"{"command":"true","cwd":"/no/such/dir"}"#),
            Err(400)
        );
        assert_eq!(parse(r#"{}"#), Err(400));
        assert_eq!(parse(r#"{"argv":["true"]}"#), Ok(()));
    }
}
