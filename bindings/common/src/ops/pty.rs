//! PTY ops (`pty.*`) and the live follow of a background command's log
//! (`commands.follow_logs`). An attached PTY is one handle: its output is pulled with
//! `pty.read` (bytes as base64 plus offsets), its input goes through `pty.write`,
//! `pty.resize`, `pty.signal`; `pty.close` (or `release`) detaches.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use opensandbox_core::{
    PtyAttachOptions, PtyChannel, PtyConnection, PtyCreateRequest, PtyEvent, PtyMode, PtyWriter,
};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Mutex as AsyncMutex;

use crate::args::{Bound, ConnectionRef, SandboxRef};
use crate::error::{OpError, OpResult};
use crate::session::{Entry, Session};

/// Default and largest `max_bytes` of one `pty.read`.
const DEFAULT_READ_BYTES: u64 = 1024 * 1024;
const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// `pty.create`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtyCreateArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// Working directory (`$VAR` and `~` expanded, created if missing).
    #[serde(default)]
    pub cwd: Option<String>,
    /// `bash -c command` instead of an interactive shell.
    #[serde(default)]
    pub command: Option<String>,
}

/// `pty.get`, `pty.delete`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtySessionArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub session_id: String,
}

/// `pty.attach`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtyAttachArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub session_id: String,
    /// Replay from this byte offset (absent = 0: all that is still buffered).
    #[serde(default)]
    pub since: Option<u64>,
    /// `pty` (default) or `pipe`, if this attach starts the shell.
    #[serde(default)]
    pub mode: Option<String>,
    /// Evict a client holding the session instead of failing with 409.
    #[serde(default)]
    pub takeover: Option<bool>,
}

/// `pty.read`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtyReadArgs {
    pub handle: u64,
    /// Wait at most this long: for the first event, or with `until` for the whole
    /// read. Absent = until an event arrives (without `until`) / 30 s (with it);
    /// 0 = do not wait.
    #[serde(default)]
    pub wait_ms: Option<u64>,
    /// Keep reading until the output of this call contains this text (or the shell
    /// exits, the connection closes, or `wait_ms` passes: then `timed_out`).
    #[serde(default)]
    pub until: Option<String>,
    /// Keep reading until the shell exits or the connection closes (or `wait_ms`
    /// passes: then `timed_out`).
    #[serde(default)]
    pub until_exit: Option<bool>,
    /// Return at most about this many output bytes (default 1 MiB).
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// `pty.write`: exactly one of `data_b64` (bytes) and `text` (UTF-8).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtyWriteArgs {
    pub handle: u64,
    #[serde(default)]
    pub data_b64: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
}

/// `pty.resize`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtyResizeArgs {
    pub handle: u64,
    pub cols: u64,
    pub rows: u64,
}

/// `pty.signal`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtySignalArgs {
    pub handle: u64,
    pub signal: String,
}

/// `commands.follow_logs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowLogsArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// The background command's id.
    pub id: String,
    /// Start at this byte offset (default 0).
    #[serde(default)]
    pub cursor: Option<u64>,
    /// Poll interval while no new output arrives (default 200).
    #[serde(default)]
    pub interval_ms: Option<u64>,
}

macro_rules! bound {
    ($($t:ty),*) => {$(
        impl Bound for $t {
            fn sandbox(&self) -> &SandboxRef { &self.sandbox }
            fn connection(&self) -> Option<&ConnectionRef> { self.connection.as_ref() }
        }
    )*};
}
bound!(
    PtyCreateArgs,
    PtySessionArgs,
    PtyAttachArgs,
    FollowLogsArgs,
    FollowCollectArgs
);

/// An attached PTY behind a handle.
pub struct PtyHandle {
    session_id: String,
    conn: AsyncMutex<Reader>,
    writer: PtyWriter,
}

struct Reader {
    conn: PtyConnection,
    /// An event taken but not returned yet (the next read starts with it).
    pending: Option<PtyEvent>,
    /// Offset after the last byte returned to the host.
    next_offset: u64,
    closed: bool,
}

impl PtyHandle {
    /// Detaches without waiting (handle released).
    pub fn detach(&self) {
        let writer = self.writer.clone();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { writer.close().await });
        }
    }
}

fn pty(s: &Session, op: &str, h: u64) -> Result<Arc<PtyHandle>, OpError> {
    s.typed(op, h, "pty", |e| match e {
        Entry::Pty(p) => Some(p.clone()),
        _ => None,
    })
}

/// `pty.create` → `{session_id}`.
pub async fn create(s: &Session, a: PtyCreateArgs) -> OpResult {
    let sb = s.sandbox("pty.create", &a).await?;
    let request = PtyCreateRequest {
        cwd: a.cwd.clone(),
        command: a.command.clone(),
    };
    let id = sb.execd().create_pty_session(&request).await?;
    Ok(json!({ "session_id": id }))
}

/// `pty.get` → `{session_id, running, output_offset}`.
pub async fn get(s: &Session, a: PtySessionArgs) -> OpResult {
    let sb = s.sandbox("pty.get", &a).await?;
    let st = sb.execd().get_pty_session(&a.session_id).await?;
    Ok(json!({
        "session_id": st.session_id,
        "running": st.running,
        "output_offset": st.output_offset,
    }))
}

/// `pty.delete` → null.
pub async fn delete(s: &Session, a: PtySessionArgs) -> OpResult {
    let sb = s.sandbox("pty.delete", &a).await?;
    sb.execd().delete_pty_session(&a.session_id).await?;
    Ok(Value::Null)
}

/// `pty.attach` → `{handle, session_id, mode, since}`.
pub async fn attach(s: &Session, a: PtyAttachArgs) -> OpResult {
    const OP: &str = "pty.attach";
    let mode = match a.mode.as_deref() {
        None => PtyMode::Pty,
        Some(m) => PtyMode::parse(m).ok_or_else(|| {
            OpError::invalid(
                OP,
                format!("{OP}: mode must be \"pty\" or \"pipe\", got {m:?}"),
            )
        })?,
    };
    let sb = s.sandbox(OP, &a).await?;
    let options = PtyAttachOptions {
        mode,
        since: a.since,
        takeover: a.takeover.unwrap_or(false),
    };
    let conn = sb.execd().attach_pty(&a.session_id, &options).await?;
    let writer = conn.writer();
    let mode = conn.mode();
    let next_offset = conn.next_offset();
    let handle = Arc::new(PtyHandle {
        session_id: a.session_id.clone(),
        conn: AsyncMutex::new(Reader {
            conn,
            pending: None,
            next_offset: a.since.unwrap_or(0),
            closed: false,
        }),
        writer,
    });
    let h = s.insert(Entry::Pty(handle));
    Ok(json!({
        "handle": h,
        "session_id": a.session_id,
        "mode": mode.as_str(),
        "since": a.since.unwrap_or(0),
        "replay_end": next_offset,
    }))
}

/// `pty.read` → `{data_b64, output, channel, offset, next_offset, bytes, exit_code,
/// errors, closed, close_code, close_reason, timed_out, done}`.
pub async fn read(s: &Session, a: PtyReadArgs) -> OpResult {
    const OP: &str = "pty.read";
    let p = pty(s, OP, a.handle)?;
    let max = a
        .max_bytes
        .unwrap_or(DEFAULT_READ_BYTES)
        .clamp(1, MAX_READ_BYTES);
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let until_exit = a.until_exit.unwrap_or(false);
    // Waiting for something (a text or the end) reads across channels and batches.
    let waiting = a.until.is_some() || until_exit;
    let budget = match (waiting, a.wait_ms) {
        (_, Some(ms)) => Some(Duration::from_millis(ms)),
        (true, None) => Some(Duration::from_secs(30)),
        (false, None) => None,
    };
    let deadline = budget.map(|b| tokio::time::Instant::now() + b);
    let mut r = p.conn.lock().await;
    let mut data: Vec<u8> = Vec::new();
    let mut channel: Option<PtyChannel> = None;
    let mut offset: Option<u64> = None;
    let mut exit_code: Option<i32> = None;
    let mut errors = Vec::new();
    let mut close: Option<(Option<u16>, String)> = None;
    let mut timed_out = false;
    loop {
        if r.closed && r.pending.is_none() {
            break;
        }
        if let Some(until) = &a.until {
            if !until.is_empty() && memchr::memmem::find(&data, until.as_bytes()).is_some() {
                break;
            }
        }
        if data.len() >= max || (until_exit && exit_code.is_some() && r.closed) {
            break;
        }
        let got_something = !data.is_empty() || exit_code.is_some() || !errors.is_empty();
        let event = match r.pending.take() {
            Some(e) => Some(e),
            None => {
                // Without `until`, a batch returns what has arrived once it has something.
                let wait = if !waiting && got_something {
                    Some(tokio::time::Instant::now())
                } else {
                    deadline
                };
                match wait {
                    None => r.conn.next_event().await,
                    Some(at) => match tokio::time::timeout_at(at, r.conn.next_event()).await {
                        Ok(e) => e,
                        Err(_) => {
                            timed_out = waiting;
                            break;
                        }
                    },
                }
            }
        };
        let Some(event) = event else {
            r.closed = true;
            break;
        };
        match event {
            PtyEvent::Output {
                channel: ch,
                offset: at,
                data: bytes,
            } => {
                // One channel per batch (pipe mode keeps stdout and stderr apart),
                // unless the caller waits for a text across them.
                if !waiting && channel.is_some_and(|c| !same_stream(c, ch)) {
                    r.pending = Some(PtyEvent::Output {
                        channel: ch,
                        offset: at,
                        data: bytes,
                    });
                    break;
                }
                channel.get_or_insert(ch);
                offset.get_or_insert(at);
                data.extend_from_slice(&bytes);
                r.next_offset = at + bytes.len() as u64;
            }
            PtyEvent::Exit { exit_code: code } => exit_code = Some(code),
            PtyEvent::Error { code, message } => {
                errors.push(json!({"code": code, "message": message}));
            }
            PtyEvent::Closed { code, reason } => {
                r.closed = true;
                close = Some((code, reason));
            }
        }
    }
    let done = r.closed && r.pending.is_none();
    let (close_code, close_reason) = match close {
        Some((code, reason)) => (json!(code), json!(reason)),
        None => (Value::Null, Value::Null),
    };
    Ok(json!({
        "data_b64": base64::engine::general_purpose::STANDARD.encode(&data),
        "output": String::from_utf8_lossy(&data),
        "bytes": data.len(),
        "channel": channel.map(PtyChannel::as_str),
        "offset": offset,
        "next_offset": r.next_offset,
        "exit_code": exit_code,
        "errors": errors,
        "closed": close_code != Value::Null || close_reason != Value::Null,
        "close_code": close_code,
        "close_reason": close_reason,
        "timed_out": timed_out,
        "done": done,
    }))
}

fn same_stream(a: PtyChannel, b: PtyChannel) -> bool {
    // A replay holds terminal output (or both pipes unlabelled): it joins stdout.
    let norm = |c| match c {
        PtyChannel::Replay => PtyChannel::Stdout,
        other => other,
    };
    norm(a) == norm(b)
}

/// `pty.write` → null.
pub async fn write(s: &Session, a: PtyWriteArgs) -> OpResult {
    const OP: &str = "pty.write";
    let p = pty(s, OP, a.handle)?;
    let data = match (&a.data_b64, &a.text) {
        (Some(b64), None) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| OpError::invalid(OP, format!("{OP}: data_b64 is not base64: {e}")))?,
        (None, Some(text)) => text.as_bytes().to_vec(),
        _ => {
            return Err(OpError::invalid(
                OP,
                format!("{OP}: exactly one of data_b64 and text is required"),
            ))
        }
    };
    p.writer.write(data).await?;
    Ok(Value::Null)
}

/// `pty.resize` → null.
pub async fn resize(s: &Session, a: PtyResizeArgs) -> OpResult {
    const OP: &str = "pty.resize";
    let p = pty(s, OP, a.handle)?;
    let dim = |v: u64, name: &str| {
        u16::try_from(v).ok().filter(|v| *v > 0).ok_or_else(|| {
            OpError::invalid(OP, format!("{OP}: {name} must be in 1..65535, got {v}"))
        })
    };
    p.writer
        .resize(dim(a.cols, "cols")?, dim(a.rows, "rows")?)
        .await?;
    Ok(Value::Null)
}

/// `pty.signal` → null.
pub async fn signal(s: &Session, a: PtySignalArgs) -> OpResult {
    let p = pty(s, "pty.signal", a.handle)?;
    p.writer.signal(&a.signal).await?;
    Ok(Value::Null)
}

/// `pty.close` → `{session_id, next_offset}`: detaches (the shell keeps running) and
/// releases the handle; `next_offset` is the `since` that resumes exactly after the
/// last byte returned by `pty.read`.
pub async fn close(s: &Session, a: crate::args::HandleArgs) -> OpResult {
    const OP: &str = "pty.close";
    let p = s.take(OP, a.handle, "pty", |e| match e {
        Entry::Pty(p) => Some(p.clone()),
        _ => None,
    })?;
    p.writer.close().await?;
    // Wait until the server has let go, so that an attach right after this one is not
    // refused as a second client. Output that arrives meanwhile is not returned (the
    // offset stays after the last byte returned: a reattach replays it).
    let mut r = p.conn.lock().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !r.closed {
        match tokio::time::timeout_at(deadline, r.conn.next_event()).await {
            Ok(Some(PtyEvent::Closed { .. })) | Ok(None) | Err(_) => r.closed = true,
            Ok(Some(_)) => {}
        }
    }
    let next_offset = r.next_offset;
    Ok(json!({"session_id": p.session_id, "next_offset": next_offset}))
}

/// `commands.follow_background_command_logs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowCollectArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// The background command's id.
    pub id: String,
    /// Start at this byte offset (default 0).
    #[serde(default)]
    pub cursor: Option<u64>,
    /// Poll interval while no new output arrives (default 200).
    #[serde(default)]
    pub interval_ms: Option<u64>,
    /// Stop once at least this many bytes were collected (default: follow to the end).
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// `commands.follow_background_command_logs` → `{content, content_b64, first_offset,
/// cursor, chunks, contiguous, ended}`: follows the log from `cursor` until the command
/// finished and its log is drained (`ended`) or `max_bytes` were collected; `cursor`
/// resumes exactly after the last byte; `contiguous` says each chunk began where the
/// previous ended.
pub async fn follow_collect(s: &Session, a: FollowCollectArgs) -> OpResult {
    const OP: &str = "commands.follow_background_command_logs";
    let sb = s.sandbox(OP, &a).await?;
    if a.id.trim().is_empty() {
        return Err(OpError::invalid(OP, format!("{OP}: id must not be empty")));
    }
    let start = a.cursor.unwrap_or(0);
    let mut follower = sb.execd().follow_background_command_logs(
        &a.id,
        start,
        a.interval_ms.map(Duration::from_millis),
    );
    let max = a.max_bytes.and_then(|m| usize::try_from(m).ok());
    let mut content = Vec::new();
    let mut first_offset = None;
    let mut expected = start;
    let mut contiguous = true;
    let mut chunks = 0u64;
    let ended = loop {
        if max.is_some_and(|m| content.len() >= m) {
            break false;
        }
        match follower.next().await? {
            Some(chunk) => {
                chunks += 1;
                first_offset.get_or_insert(chunk.offset);
                contiguous &= chunk.offset == expected;
                expected = chunk.offset + chunk.data.len() as u64;
                content.extend_from_slice(&chunk.data);
            }
            None => break true,
        }
    };
    Ok(json!({
        "content": String::from_utf8_lossy(&content),
        "content_b64": base64::engine::general_purpose::STANDARD.encode(&content),
        "first_offset": first_offset,
        "cursor": follower.cursor(),
        "chunks": chunks,
        "contiguous": contiguous,
        "ended": ended,
    }))
}

/// `commands.follow_logs` → `{handle}`: a pulled stream (`execution.next_batch`) of
/// `{"type": "log", "offset", "data_b64", "text"}` items, each starting where the
/// previous ended, then the end item once the command finished and its log is drained.
pub async fn follow_logs(s: &Session, a: FollowLogsArgs) -> OpResult {
    const OP: &str = "commands.follow_logs";
    let sb = s.sandbox(OP, &a).await?;
    if a.id.trim().is_empty() {
        return Err(OpError::invalid(OP, format!("{OP}: id must not be empty")));
    }
    let follower = sb.execd().follow_background_command_logs(
        &a.id,
        a.cursor.unwrap_or(0),
        a.interval_ms.map(Duration::from_millis),
    );
    let items = futures_util::stream::unfold(follower, |mut f| async move {
        match f.next().await {
            Ok(Some(chunk)) => Some((
                Ok(json!({
                    "type": "log",
                    "offset": chunk.offset,
                    "next_offset": chunk.offset + chunk.data.len() as u64,
                    "data_b64": base64::engine::general_purpose::STANDARD.encode(&chunk.data),
                    "text": String::from_utf8_lossy(&chunk.data),
                })),
                f,
            )),
            Ok(None) => None,
            Err(e) => Some((Err(OpError::from(e)), f)),
        }
    });
    // The stream ends after an error item: the follower would repeat it.
    let items = futures_util::StreamExt::scan(items, false, |failed, item| {
        let out = if *failed {
            None
        } else {
            *failed = item.is_err();
            Some(item)
        };
        std::future::ready(out)
    });
    let run = crate::stream::Run::items(items);
    let h = s.insert(Entry::Run(Arc::new(run)));
    Ok(json!({"handle": h}))
}
