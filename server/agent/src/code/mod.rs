//! Code-interpreter contexts: `POST /code/context`, `GET|DELETE /code/contexts`,
//! `GET|DELETE /code/contexts/{contextId}`, `POST /code`, `DELETE /code?id=`.
//!
//! A python or javascript context is a long-lived interpreter running a small driver
//! program (`python_driver.py`, `node_driver.js`, embedded here). The driver reads one
//! JSON request per line on stdin and answers with JSON event lines on fd 3, a pipe
//! of its own, so nothing the user's code prints can corrupt the protocol; what the
//! interpreter's subprocesses write to the real stdout/stderr is forwarded to the
//! running cell as raw chunks. A bash context is a [`Session`] whose lines keep their
//! newlines. One cell runs at a time per context: a concurrent call gets `init`,
//! `ping` and the typeless busy frame, as upstream's Jupyter bridge does.
//!
//! Event shapes follow protocol.md §4.5: output chunks keep newlines; a cell whose
//! last statement is an expression with a value ends with `execution_count` and
//! `result {"text": repr}`; a failing cell sends `status "error"` and `error`; every
//! cell that ran ends with `execution_complete`. An interpreter that dies mid-cell
//! ends the stream with the late-failure frame and its context is removed.
//!
//! Decisions: `POST /code/context` without a language creates a python context; an
//! unknown language is a 400 when creating or running, and simply matches nothing
//! when listing or deleting by language; an unknown context id is 404.

use std::collections::HashMap;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{Path as UrlPath, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use nix::fcntl::OFlag;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::sync::{watch, Mutex as AsyncMutex, OwnedMutexGuard};

use crate::commands::{new_id, resolve_cwd, run_foreground, signal_group, CommandSpec};
use crate::error::{ApiError, ApiResult};
use crate::events::{event_stream, EventSink, ExitOutcome, ServerStreamEvent};
use crate::extract::QueryPairs;
use crate::extract::{AnyTypeJson, AnyTypeJsonOrEmpty};
use crate::sessions::{LineMode, Session};
use crate::SharedState;

pub const ROUTES: &[(&str, &str)] = &[
    ("POST", "/code"),
    ("DELETE", "/code"),
    ("POST", "/code/context"),
    ("GET", "/code/contexts"),
    ("DELETE", "/code/contexts"),
    ("GET", "/code/contexts/{contextId}"),
    ("DELETE", "/code/contexts/{contextId}"),
];

const PYTHON_DRIVER: &str = include_str!("python_driver.py");
const NODE_DRIVER: &str = include_str!("node_driver.js");

/// The in-stream message upstream sends when a context is already running a cell.
const BUSY_MESSAGE: &str = "error running codes session is busy";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Language {
    Python,
    Javascript,
    Bash,
}

impl Language {
    fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "python" | "python3" => Some(Self::Python),
            "javascript" | "js" | "node" | "nodejs" => Some(Self::Javascript),
            "bash" | "shell" | "sh" => Some(Self::Bash),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Javascript => "javascript",
            Self::Bash => "bash",
        }
    }

    fn unknown(name: &str) -> ApiError {
        ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            format!("unsupported language {name:?} (supported: python, javascript, bash)"),
        )
    }
}

/// Every context of this agent, and the per-language default ones.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Contexts>,
}

#[derive(Default)]
struct Contexts {
    by_id: HashMap<String, Arc<Context>>,
    defaults: HashMap<Language, String>,
    next_seq: u64,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Contexts> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, id: &str) -> Option<Arc<Context>> {
        self.lock().by_id.get(id).cloned()
    }

    fn create(
        &self,
        language: Language,
        cwd: &Path,
        requested_cwd: Option<String>,
    ) -> io::Result<Arc<Context>> {
        let kernel = match language {
            Language::Bash => Kernel::Bash(Session::spawn(cwd)?),
            Language::Python | Language::Javascript => {
                Kernel::Driver(Driver::spawn(language, cwd)?)
            }
        };
        let mut contexts = self.lock();
        contexts.next_seq += 1;
        let context = Arc::new(Context {
            id: new_id(),
            language,
            cwd: requested_cwd,
            seq: contexts.next_seq,
            kernel,
        });
        contexts
            .by_id
            .insert(context.id.clone(), Arc::clone(&context));
        Ok(context)
    }

    /// The default context of `language`, created on first use.
    fn default_for(&self, language: Language, workdir: &Path) -> io::Result<Arc<Context>> {
        {
            let contexts = self.lock();
            if let Some(context) = contexts
                .defaults
                .get(&language)
                .and_then(|id| contexts.by_id.get(id))
            {
                return Ok(Arc::clone(context));
            }
        }
        let context = self.create(language, workdir, None)?;
        let mut contexts = self.lock();
        // Two first calls may race; the later one's context stays usable by id.
        contexts.defaults.insert(language, context.id.clone());
        Ok(context)
    }

    fn remove(&self, id: &str) -> Option<Arc<Context>> {
        let context = self.lock().by_id.remove(id)?;
        context.kernel.shutdown();
        Some(context)
    }

    /// Forget `context` if it is still registered (its interpreter died).
    fn forget(&self, context: &Arc<Context>) {
        let mut contexts = self.lock();
        if contexts
            .by_id
            .get(&context.id)
            .is_some_and(|current| Arc::ptr_eq(current, context))
        {
            contexts.by_id.remove(&context.id);
        }
        drop(contexts);
        context.kernel.shutdown();
    }

    fn list(&self, language: Option<&str>) -> Vec<Arc<Context>> {
        let filter = language.map(Language::parse);
        let mut all: Vec<_> = self
            .lock()
            .by_id
            .values()
            .filter(|context| filter.is_none_or(|wanted| wanted == Some(context.language)))
            .cloned()
            .collect();
        all.sort_by_key(|context| context.seq);
        all
    }

    /// Interrupt the running cell of context `id` (the context survives); false if
    /// there is no such context.
    pub(crate) fn interrupt(&self, id: &str) -> bool {
        match self.get(id) {
            Some(context) => {
                context.kernel.interrupt();
                true
            }
            None => false,
        }
    }
}

struct Context {
    id: String,
    language: Language,
    cwd: Option<String>,
    seq: u64,
    kernel: Kernel,
}

enum Kernel {
    Driver(Driver),
    Bash(Arc<Session>),
}

impl Kernel {
    fn interrupt(&self) {
        match self {
            // Only the interpreter: the drivers turn SIGINT into an exception in the
            // cell and ignore it between cells.
            Self::Driver(driver) => driver.interrupt(),
            Self::Bash(session) => session.interrupt(),
        }
    }

    fn shutdown(&self) {
        match self {
            Self::Driver(driver) => {
                if let Some(pid) = driver.pid {
                    if driver.exit.borrow().is_none() {
                        signal_group(pid, Signal::SIGKILL);
                    }
                }
            }
            Self::Bash(session) => session.terminate(),
        }
    }
}

/// A python or node interpreter running its driver.
struct Driver {
    /// Also its process group id.
    pid: Option<i32>,
    io: Arc<AsyncMutex<DriverIo>>,
    /// Where the interpreter's raw stdout/stderr go: the running cell's stream.
    passthrough: Arc<Mutex<Option<EventSink>>>,
    exit: watch::Receiver<Option<ExitOutcome>>,
    /// Where the current cell is: an interrupt is delivered only to a cell the
    /// driver has started (its SIGINT handler is in place and armed).
    phase: watch::Sender<CellPhase>,
}

/// Where a driver's current cell is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CellPhase {
    /// No cell: an interrupt has nothing to stop.
    Idle,
    /// Sent to the interpreter, which may still be starting up or reading it: a SIGINT
    /// now would kill an interpreter whose handler is not installed yet, or be
    /// ignored between cells. An interrupt waits for `Started`.
    Sent,
    /// The driver said it runs the cell (`{"type":"started"}`): SIGINT becomes an
    /// exception in it.
    Started,
}

/// How long an interrupt waits for a sent cell to start (interpreter start-up).
const INTERRUPT_WAIT: Duration = Duration::from_secs(60);

struct DriverIo {
    stdin: ChildStdin,
    events: BufReader<pipe::Receiver>,
}

impl Driver {
    fn spawn(language: Language, cwd: &Path) -> io::Result<Driver> {
        let (events_read, events_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let events_fd = events_write.as_raw_fd();
        let mut command = match language {
            Language::Javascript => {
                let mut command = tokio::process::Command::new("node");
                command.arg("-e").arg(NODE_DRIVER);
                command
            }
            _ => {
                let mut command = tokio::process::Command::new("python3");
                command.arg("-u").arg("-c").arg(PYTHON_DRIVER);
                command
            }
        };
        command
            .current_dir(cwd)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        crate::envfile::apply(&mut command);
        // SAFETY: runs in the forked child before exec and only calls fcntl/dup2,
        // which are async-signal-safe; it allocates nothing and takes no lock.
        unsafe {
            command.pre_exec(move || install_events_fd(events_fd));
        }
        crate::confine::apply(&mut command);
        let mut child = command.spawn()?;
        drop(command);
        drop(events_write);

        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("interpreter has no stdin pipe"))?;
        let events = BufReader::new(pipe::Receiver::from_owned_fd(events_read)?);
        let passthrough: Arc<Mutex<Option<EventSink>>> = Arc::default();
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(forward_raw(
                stdout,
                Arc::clone(&passthrough),
                ServerStreamEvent::stdout,
            ));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(forward_raw(
                stderr,
                Arc::clone(&passthrough),
                ServerStreamEvent::stderr,
            ));
        }
        let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let outcome = match child.wait().await {
                Ok(status) => ExitOutcome::from_status(status),
                Err(err) => ExitOutcome::Failed(format!("cannot wait for the interpreter: {err}")),
            };
            let _ = exit_tx.send(Some(outcome));
        });
        Ok(Driver {
            pid,
            io: Arc::new(AsyncMutex::new(DriverIo { stdin, events })),
            passthrough,
            exit,
            phase: watch::Sender::new(CellPhase::Idle),
        })
    }

    /// Interrupts the running cell: at once when the driver has started it, as soon
    /// as it starts when it was only sent (never a SIGINT the driver cannot take).
    fn interrupt(&self) {
        let Some(pid) = self.pid else {
            return;
        };
        let sigint = move || {
            let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
        };
        match *self.phase.borrow() {
            CellPhase::Started => return sigint(),
            CellPhase::Idle => return,
            CellPhase::Sent => {}
        }
        let mut phase = self.phase.subscribe();
        tokio::spawn(async move {
            let started =
                tokio::time::timeout(INTERRUPT_WAIT, phase.wait_for(|p| *p != CellPhase::Sent))
                    .await;
            if matches!(started, Ok(Ok(p)) if *p == CellPhase::Started) {
                sigint();
            }
        });
    }

    fn set_passthrough(&self, sink: Option<EventSink>) {
        *self.passthrough.lock().unwrap_or_else(|p| p.into_inner()) = sink;
    }

    /// Run one cell; `Err` carries why the interpreter is gone.
    async fn run(&self, io: &mut DriverIo, code: &str, sink: &EventSink) -> Result<(), String> {
        self.set_passthrough(Some(sink.clone()));
        self.phase.send_replace(CellPhase::Sent);
        let result = self.exchange(io, code, sink).await;
        self.phase.send_replace(CellPhase::Idle);
        self.set_passthrough(None);
        result
    }

    async fn exchange(
        &self,
        io: &mut DriverIo,
        code: &str,
        sink: &EventSink,
    ) -> Result<(), String> {
        let mut request = serde_json::json!({ "code": code }).to_string();
        request.push('\n');
        if let Err(err) = io.stdin.write_all(request.as_bytes()).await {
            return Err(format!("the interpreter is not running: {err}"));
        }
        let mut line = Vec::new();
        let mut connected = true;
        loop {
            line.clear();
            match io.events.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return Err(self.death_message().await),
                Ok(_) => {}
            }
            let message: DriverMessage = match serde_json::from_slice(&line) {
                Ok(message) => message,
                // Not ours to interpret: show it rather than lose it.
                Err(_) => DriverMessage::Stderr {
                    text: String::from_utf8_lossy(&line).into_owned(),
                },
            };
            match message {
                DriverMessage::Done => return Ok(()),
                DriverMessage::Started => {
                    self.phase.send_replace(CellPhase::Started);
                    continue;
                }
                _ => {}
            }
            for event in message.into_events() {
                if connected && sink.send(event).await.is_err() {
                    connected = false;
                }
            }
        }
    }

    /// Why the interpreter is gone. Its pipe closes just before it is reaped, so
    /// the exit status gets a moment to arrive.
    async fn death_message(&self) -> String {
        let mut exit = self.exit.clone();
        let reason = match tokio::time::timeout(
            Duration::from_secs(1),
            exit.wait_for(Option::is_some),
        )
        .await
        {
            Ok(Ok(outcome)) => outcome.as_ref().and_then(ExitOutcome::error_text),
            _ => None,
        };
        match reason {
            Some(reason) => format!("the interpreter exited ({reason})"),
            None => "the interpreter exited".to_string(),
        }
    }
}

/// Make `fd` the child's fd 3, inheritable across exec.
fn install_events_fd(fd: i32) -> io::Result<()> {
    const EVENTS_FD: i32 = 3;
    // SAFETY: plain fd syscalls on descriptors this child owns.
    let ok = unsafe {
        if fd == EVENTS_FD {
            let flags = libc::fcntl(EVENTS_FD, libc::F_GETFD);
            flags >= 0 && libc::fcntl(EVENTS_FD, libc::F_SETFD, flags & !libc::FD_CLOEXEC) >= 0
        } else {
            libc::dup2(fd, EVENTS_FD) >= 0
        }
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Forward an interpreter's raw output to whichever cell is running; drop it between
/// cells.
async fn forward_raw<R, F>(mut pipe: R, target: Arc<Mutex<Option<EventSink>>>, make: F)
where
    R: AsyncRead + Unpin,
    F: Fn(String) -> ServerStreamEvent,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let sink = target.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(sink) = sink {
            let _ = sink
                .send(make(String::from_utf8_lossy(&buf[..n]).into_owned()))
                .await;
        }
    }
}

/// One line a driver writes on fd 3.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DriverMessage {
    Stdout {
        text: String,
    },
    Stderr {
        text: String,
    },
    Result {
        count: u64,
        text: String,
    },
    Error {
        ename: String,
        evalue: String,
        #[serde(default)]
        traceback: Vec<String>,
    },
    /// The driver runs the cell now (its SIGINT handler is armed).
    Started,
    Done,
}

impl DriverMessage {
    fn into_events(self) -> Vec<ServerStreamEvent> {
        match self {
            Self::Stdout { text } => vec![ServerStreamEvent::stdout(text)],
            Self::Stderr { text } => vec![ServerStreamEvent::stderr(text)],
            Self::Result { count, text } => vec![
                ServerStreamEvent::execution_count(count),
                ServerStreamEvent::result_text(text),
            ],
            Self::Error {
                ename,
                evalue,
                traceback,
            } => vec![
                ServerStreamEvent::status("error"),
                ServerStreamEvent::error(ename, evalue, traceback),
            ],
            Self::Started | Self::Done => Vec::new(),
        }
    }
}

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/code", post(run_code).delete(interrupt_code))
        .route("/code/context", post(create_context))
        .route(
            "/code/contexts",
            get(list_contexts).delete(delete_contexts_by_language),
        )
        .route(
            "/code/contexts/{contextId}",
            get(get_context).delete(delete_context),
        )
}

#[derive(Debug, Default, Deserialize)]
struct CreateContextRequest {
    #[serde(default)]
    language: Option<String>,
    #[serde(default)]
    cwd: Option<String>,
}

#[derive(Debug, Serialize)]
struct ContextInfo {
    id: String,
    language: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
}

impl ContextInfo {
    fn of(context: &Context, with_cwd: bool) -> Self {
        Self {
            id: context.id.clone(),
            language: context.language.name(),
            cwd: context.cwd.clone().filter(|_| with_cwd),
        }
    }
}

#[derive(Debug, Deserialize)]
struct RunCodeRequest {
    code: String,
    #[serde(default)]
    context: Option<ContextRef>,
}

#[derive(Debug, Default, Deserialize)]
struct ContextRef {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    language: Option<String>,
}

async fn create_context(
    State(state): State<SharedState>,
    AnyTypeJsonOrEmpty(request): AnyTypeJsonOrEmpty<CreateContextRequest>,
) -> ApiResult<Json<ContextInfo>> {
    let name = request.language.unwrap_or_default();
    let language = if name.trim().is_empty() {
        Language::Python
    } else {
        Language::parse(&name).ok_or_else(|| Language::unknown(&name))?
    };
    let requested_cwd = request.cwd.filter(|cwd| !cwd.is_empty());
    let cwd: PathBuf = resolve_cwd(requested_cwd.as_deref(), &state.config.workdir)?;
    let context = state
        .code
        .create(language, &cwd, requested_cwd)
        .map_err(|err| start_failed(language, &err))?;
    Ok(Json(ContextInfo::of(&context, true)))
}

fn start_failed(language: Language, err: &io::Error) -> ApiError {
    ApiError::runtime(format!(
        "cannot start a {} interpreter: {err}",
        language.name()
    ))
}

async fn list_contexts(
    State(state): State<SharedState>,
    query: QueryPairs,
) -> Json<Vec<ContextInfo>> {
    let language = query.first("language").filter(|name| !name.is_empty());
    Json(
        state
            .code
            .list(language)
            .iter()
            .map(|context| ContextInfo::of(context, false))
            .collect(),
    )
}

async fn delete_contexts_by_language(
    State(state): State<SharedState>,
    query: QueryPairs,
) -> ApiResult<()> {
    let language = query.required("language")?;
    for context in state.code.list(Some(language)) {
        state.code.remove(&context.id);
    }
    Ok(())
}

async fn get_context(
    State(state): State<SharedState>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<Json<ContextInfo>> {
    let context = state.code.get(&id).ok_or_else(|| context_not_found(&id))?;
    Ok(Json(ContextInfo::of(&context, false)))
}

async fn delete_context(
    State(state): State<SharedState>,
    UrlPath(id): UrlPath<String>,
) -> ApiResult<()> {
    state
        .code
        .remove(&id)
        .map(|_| ())
        .ok_or_else(|| context_not_found(&id))
}

fn context_not_found(id: &str) -> ApiError {
    ApiError::not_found("CONTEXT_NOT_FOUND", format!("context {id} not found"))
}

/// `DELETE /code?id=`: interrupt a context's cell; a command id (from a context-less
/// `POST /code`) is interrupted like `DELETE /command`.
async fn interrupt_code(State(state): State<SharedState>, query: QueryPairs) -> ApiResult<()> {
    let id = query.required("id")?;
    if state.code.interrupt(id) {
        return Ok(());
    }
    if let Some(result) = state.commands.interrupt(id) {
        return result;
    }
    Err(context_not_found(id))
}

async fn run_code(
    State(state): State<SharedState>,
    AnyTypeJson(request): AnyTypeJson<RunCodeRequest>,
) -> ApiResult<Response> {
    let reference = request.context.unwrap_or_default();
    let id = reference.id.filter(|id| !id.is_empty());
    let language = reference.language.filter(|name| !name.trim().is_empty());
    let context = match (id, language) {
        (Some(id), _) => state.code.get(&id).ok_or_else(|| context_not_found(&id))?,
        (None, Some(name)) => {
            let language = Language::parse(&name).ok_or_else(|| Language::unknown(&name))?;
            state
                .code
                .default_for(language, &state.config.workdir)
                .map_err(|err| start_failed(language, &err))?
        }
        // No context at all: the code is a shell command (upstream behaviour).
        (None, None) => {
            let spec = CommandSpec::shell(request.code, &state.config.workdir)?;
            return Ok(run_foreground(&state, spec));
        }
    };

    let (sink, response) = event_stream(&context.id);
    match &context.kernel {
        Kernel::Driver(driver) => match Arc::clone(&driver.io).try_lock_owned() {
            Ok(io) => {
                tokio::spawn(run_driver_cell(state, context, io, request.code, sink));
            }
            Err(_) => busy(sink),
        },
        Kernel::Bash(session) => match session.try_begin() {
            Some(io) => {
                let session = Arc::clone(session);
                tokio::spawn(run_bash_cell(
                    state,
                    context,
                    session,
                    io,
                    request.code,
                    sink,
                ));
            }
            None => busy(sink),
        },
    }
    Ok(response)
}

fn busy(sink: EventSink) {
    tokio::spawn(async move {
        let _ = sink.fail("RUNTIME_ERROR", BUSY_MESSAGE).await;
    });
}

async fn run_driver_cell(
    state: SharedState,
    context: Arc<Context>,
    mut io: OwnedMutexGuard<DriverIo>,
    code: String,
    sink: EventSink,
) {
    let Kernel::Driver(driver) = &context.kernel else {
        return;
    };
    let started = Instant::now();
    match driver.run(&mut io, &code, &sink).await {
        Ok(()) => {
            let _ = sink
                .send(ServerStreamEvent::complete(started.elapsed()))
                .await;
        }
        Err(reason) => {
            drop(io);
            state.code.forget(&context);
            let _ = sink.fail("RUNTIME_ERROR", &reason).await;
        }
    }
}

async fn run_bash_cell(
    state: SharedState,
    context: Arc<Context>,
    session: Arc<Session>,
    mut io: OwnedMutexGuard<crate::sessions::SessionIo>,
    code: String,
    sink: EventSink,
) {
    let started = Instant::now();
    let end = session
        .run(&mut io, &code, None, None, &sink, LineMode::Code)
        .await;
    drop(io);
    if end.session_ended {
        state.code.forget(&context);
    }
    if let Some(text) = end.outcome.error_text() {
        let evalue = match &end.outcome {
            ExitOutcome::Exited(code) => code.to_string(),
            ExitOutcome::Signaled(_) => "-1".to_string(),
            ExitOutcome::Failed(reason) => reason.clone(),
        };
        let _ = sink.send(ServerStreamEvent::status("error")).await;
        let _ = sink
            .send(ServerStreamEvent::error(
                "CommandExecError",
                evalue,
                vec![text],
            ))
            .await;
    }
    let _ = sink
        .send(ServerStreamEvent::complete(started.elapsed()))
        .await;
}
