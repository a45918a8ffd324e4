//! The streamed event model of execd (protocol.md §4) and its wire framing.
//!
//! A streaming route validates its input first (errors then leave as ordinary JSON
//! 4xx/5xx), then calls [`event_stream`], which commits a 200 response whose body is
//! fed from a bounded channel: `init` and a `ping` go out at once, then whatever the
//! route sends through its [`EventSink`], with a `ping` every 3 s while the route is
//! quiet. The stream ends when the last sink is dropped. A full channel makes the
//! sender wait, so a slow client slows the producer instead of growing a buffer.

use std::convert::Infallible;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use bytes::BytesMut;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};

/// Heartbeat period of every event stream (upstream execd: 3 s).
pub const PING_INTERVAL: Duration = Duration::from_secs(3);

/// Frames buffered between a producer and the HTTP body. Small on purpose: this is
/// the only buffer between a process's pipe and the socket.
const CHANNEL_FRAMES: usize = 64;

/// Frames already waiting in the channel are written together up to this size, so a
/// fast producer does not cost one socket write per line.
const COALESCE_BYTES: usize = 64 * 1024;

/// The `type` of a [`ServerStreamEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventType {
    Init,
    Status,
    Error,
    Stdout,
    Stderr,
    Result,
    ExecutionComplete,
    ExecutionCount,
    Ping,
}

/// The `error` member of an event: an exception name, its value and traceback lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventError {
    pub ename: String,
    pub evalue: String,
    pub traceback: Vec<String>,
}

/// One event of a command, session or code stream. Every member but `type` and
/// `timestamp` is omitted when empty, as upstream's Go `omitempty` does; the member
/// order matches upstream's wire examples (timestamp last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStreamEvent {
    #[serde(rename = "type")]
    pub kind: EventType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_time: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<EventError>,
    /// Unix time in milliseconds.
    pub timestamp: i64,
}

impl EventType {
    /// The wire name, as serde spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Init => "init",
            Self::Status => "status",
            Self::Error => "error",
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
            Self::Result => "result",
            Self::ExecutionComplete => "execution_complete",
            Self::ExecutionCount => "execution_count",
            Self::Ping => "ping",
        }
    }
}

impl ServerStreamEvent {
    /// An event of `kind` stamped now, with no other member.
    pub fn new(kind: EventType) -> Self {
        Self {
            kind,
            text: None,
            execution_count: None,
            execution_time: None,
            results: None,
            error: None,
            timestamp: now_ms(),
        }
    }

    fn with_text(kind: EventType, text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::new(kind)
        }
    }

    /// `init`: `id` is what a client uses for interrupt, status and logs.
    pub fn init(id: &str) -> Self {
        Self::with_text(EventType::Init, id)
    }

    pub fn ping() -> Self {
        Self::with_text(EventType::Ping, "pong")
    }

    pub fn stdout(text: impl Into<String>) -> Self {
        Self::with_text(EventType::Stdout, text)
    }

    pub fn stderr(text: impl Into<String>) -> Self {
        Self::with_text(EventType::Stderr, text)
    }

    pub fn status(text: impl Into<String>) -> Self {
        Self::with_text(EventType::Status, text)
    }

    pub fn execution_count(count: u64) -> Self {
        Self {
            execution_count: Some(count),
            ..Self::new(EventType::ExecutionCount)
        }
    }

    /// `result` with a `text` representation (upstream renames `text/plain` to `text`).
    pub fn result_text(repr: impl Into<String>) -> Self {
        let mut results = serde_json::Map::new();
        results.insert("text".into(), serde_json::Value::String(repr.into()));
        Self {
            results: Some(results),
            ..Self::new(EventType::Result)
        }
    }

    pub fn complete(elapsed: Duration) -> Self {
        Self {
            execution_time: Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)),
            ..Self::new(EventType::ExecutionComplete)
        }
    }

    pub fn error(
        ename: impl Into<String>,
        evalue: impl Into<String>,
        traceback: Vec<String>,
    ) -> Self {
        Self {
            error: Some(EventError {
                ename: ename.into(),
                evalue: evalue.into(),
                traceback,
            }),
            ..Self::new(EventType::Error)
        }
    }

    /// The frame as written on the wire: compact JSON and a blank line, no `data:`.
    pub fn to_frame(&self) -> Bytes {
        match serde_json::to_vec(self) {
            Ok(mut json) => {
                json.extend_from_slice(b"\n\n");
                Bytes::from(json)
            }
            // Only reachable if serde_json rejected a value we built; say so in-band.
            Err(err) => failure_frame("RUNTIME_ERROR", &format!("cannot encode event: {err}")),
        }
    }
}

/// Append the frame of a text-only event to `out`, byte for byte what
/// `ServerStreamEvent::to_frame` writes for it, without building the event: the
/// output pumps frame every line, so this skips an allocation and serde per line.
pub(crate) fn push_text_frame(out: &mut Vec<u8>, kind: EventType, text: &str, timestamp: i64) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_str().as_bytes());
    out.extend_from_slice(b"\",\"text\":");
    push_json_string(out, text);
    out.extend_from_slice(b",\"timestamp\":");
    out.extend_from_slice(timestamp.to_string().as_bytes());
    out.extend_from_slice(b"}\n\n");
}

/// Append `text` as a JSON string literal, escaped exactly as serde_json does
/// (short escapes where JSON has them, `\u00xx` with lowercase hex otherwise,
/// everything else verbatim), so the fast path and serde frames cannot differ.
fn push_json_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none needs escaping: the common case.
        if let Some(word) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes([
                word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
            ]);
            if !needs_escape(word) {
                i += 8;
                continue;
            }
        }
        let byte = bytes[i];
        if byte >= 0x20 && byte != b'"' && byte != b'\\' {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]),
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

const LOW_BITS: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `word` is below 0x20, `"` or `\\`. The classic SWAR tests
/// ("has a zero byte", "has a byte less than n") are exact as to whether any byte
/// matches, which is all this needs.
fn needs_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(LOW_BITS * 0x20) & !word & HIGH_BITS;
    below_space
        | zero_bytes(word ^ (LOW_BITS * u64::from(b'"')))
        | zero_bytes(word ^ (LOW_BITS * u64::from(b'\\')))
        != 0
}

/// The high bit of each zero byte of `word` is set, and possibly of bytes above
/// (in little-endian order) a zero byte; the lowest set bit is always exact.
pub(crate) fn zero_bytes(word: u64) -> u64 {
    word.wrapping_sub(LOW_BITS) & !word & HIGH_BITS
}

/// How a process run ended, as the stream and the status route report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitOutcome {
    /// Exited normally with this code.
    Exited(i32),
    /// Killed by this signal number.
    Signaled(i32),
    /// Never started, or could not be waited for; the text says why.
    Failed(String),
}

impl ExitOutcome {
    pub fn from_status(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Signaled(signal),
            (None, None) => Self::Failed(format!("unknown exit status {status}")),
        }
    }

    /// The exit code clients infer: the code itself, -1 for a signal, 255 for a
    /// process that never ran (upstream's values).
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Exited(code) => *code,
            Self::Signaled(_) => -1,
            Self::Failed(_) => 255,
        }
    }

    /// Go's `exec.ExitError` text, which upstream puts in tracebacks and status.
    /// `None` for success.
    pub fn error_text(&self) -> Option<String> {
        match self {
            Self::Exited(0) => None,
            Self::Exited(code) => Some(format!("exit status {code}")),
            Self::Signaled(signal) => Some(format!("signal: {}", signal_name(*signal))),
            Self::Failed(text) => Some(text.clone()),
        }
    }

    /// The terminal event of a command or session run (protocol.md §4.2): success is
    /// `execution_complete`; anything else is a `CommandExecError` whose `evalue`
    /// carries the exit code, `-1` for a signal, or the OS error text if the process
    /// never started.
    pub fn terminal_event(&self, elapsed: Duration) -> ServerStreamEvent {
        let text = match self.error_text() {
            None => return ServerStreamEvent::complete(elapsed),
            Some(text) => text,
        };
        let evalue = match self {
            Self::Exited(code) => code.to_string(),
            Self::Signaled(_) => "-1".to_string(),
            Self::Failed(text) => text.clone(),
        };
        ServerStreamEvent::error("CommandExecError", evalue, vec![text])
    }
}

/// Go's `syscall.Signal.String()` names, so tracebacks read as upstream's do.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "hangup",
        libc::SIGINT => "interrupt",
        libc::SIGQUIT => "quit",
        libc::SIGILL => "illegal instruction",
        libc::SIGTRAP => "trace/breakpoint trap",
        libc::SIGABRT => "aborted",
        libc::SIGBUS => "bus error",
        libc::SIGFPE => "floating point exception",
        libc::SIGKILL => "killed",
        libc::SIGUSR1 => "user defined signal 1",
        libc::SIGSEGV => "segmentation fault",
        libc::SIGUSR2 => "user defined signal 2",
        libc::SIGPIPE => "broken pipe",
        libc::SIGALRM => "alarm clock",
        libc::SIGTERM => "terminated",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

/// The typeless late-failure frame (protocol.md §7.18): how a failure is reported
/// once `init` has committed the 200 response.
pub fn failure_frame(code: &str, message: &str) -> Bytes {
    let json = serde_json::json!({ "code": code, "message": message });
    let mut frame = json.to_string().into_bytes();
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The client went away: the body was dropped. Producers should keep draining their
/// process (upstream does not kill a command whose client disconnected).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnected;

/// The producing end of an event stream. Cheap to clone; the stream ends when every
/// clone is dropped.
#[derive(Clone, Debug)]
pub struct EventSink {
    tx: mpsc::Sender<Bytes>,
}

impl EventSink {
    /// A sink nobody reads: for a run whose output goes elsewhere (every send fails
    /// at once, as for a client that left).
    pub fn discard() -> Self {
        let (tx, _) = mpsc::channel(1);
        Self { tx }
    }

    /// Queue one event, waiting while the client is behind.
    pub async fn send(&self, event: ServerStreamEvent) -> Result<(), Disconnected> {
        self.tx
            .send(event.to_frame())
            .await
            .map_err(|_| Disconnected)
    }

    /// Queue bytes holding whole frames (e.g. several lines framed together).
    pub(crate) async fn send_frames(&self, frames: Bytes) -> Result<(), Disconnected> {
        self.tx.send(frames).await.map_err(|_| Disconnected)
    }

    /// Queue the typeless `{code, message}` late-failure frame.
    pub async fn fail(&self, code: &str, message: &str) -> Result<(), Disconnected> {
        self.tx
            .send(failure_frame(code, message))
            .await
            .map_err(|_| Disconnected)
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves once the client has gone (the body was dropped).
    pub async fn closed(&self) {
        self.tx.closed().await;
    }
}

/// Commit a 200 event stream that starts with `init` (text `init_id`) and a `ping`.
pub fn event_stream(init_id: &str) -> (EventSink, Response) {
    let (tx, rx) = mpsc::channel::<Bytes>(CHANNEL_FRAMES);
    // The channel is empty and larger than two frames, so these cannot fail.
    let _ = tx.try_send(ServerStreamEvent::init(init_id).to_frame());
    let _ = tx.try_send(ServerStreamEvent::ping().to_frame());

    let mut ticker = tokio::time::interval_at(Instant::now() + PING_INTERVAL, PING_INTERVAL);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let body = futures::stream::unfold((rx, ticker), |(mut rx, mut ticker)| async move {
        let chunk = tokio::select! {
            // Events first: a ping only goes out when the producer is quiet, and never
            // after the last sink was dropped with its terminal event queued.
            biased;
            frame = rx.recv() => coalesce(frame?, &mut rx),
            _ = ticker.tick() => ServerStreamEvent::ping().to_frame(),
        };
        Some((Ok::<_, Infallible>(chunk), (rx, ticker)))
    });

    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    (EventSink { tx }, response)
}

/// Join `first` with frames already waiting, up to [`COALESCE_BYTES`]. A chunk that
/// is already large goes out as it is: copying it would cost more than the write.
fn coalesce(first: Bytes, rx: &mut mpsc::Receiver<Bytes>) -> Bytes {
    if first.len() >= COALESCE_BYTES / 2 {
        return first;
    }
    let next = match rx.try_recv() {
        Ok(next) => next,
        Err(_) => return first,
    };
    let mut joined = BytesMut::with_capacity(COALESCE_BYTES.max(first.len() + next.len()));
    joined.extend_from_slice(&first);
    joined.extend_from_slice(&next);
    while joined.len() < COALESCE_BYTES {
        match rx.try_recv() {
            Ok(frame) => joined.extend_from_slice(&frame),
            Err(_) => break,
        }
    }
    joined.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_compact_json_with_blank_line_and_timestamp_last() {
        let mut event =
            ServerStreamEvent::error("CommandExecError", "3", vec!["exit status 3".into()]);
        event.timestamp = 1718000100103;
        let frame = event.to_frame();
        assert_eq!(
            &frame[..],
            br#"{"type":"error","error":{"ename":"CommandExecError","evalue":"3","traceback":["exit status 3"]},"timestamp":1718000100103}

"#
        );
    }

    #[test]
    fn empty_members_are_omitted() {
        let mut event = ServerStreamEvent::complete(Duration::from_millis(104));
        event.timestamp = 7;
        assert_eq!(
            &event.to_frame()[..],
            b"{\"type\":\"execution_complete\",\"execution_time\":104,\"timestamp\":7}\n\n"
        );
    }

    #[test]
    fn exit_outcomes_map_to_upstream_terminal_events() {
        let ok = ExitOutcome::Exited(0).terminal_event(Duration::ZERO);
        assert_eq!(ok.kind, EventType::ExecutionComplete);

        let failed = ExitOutcome::Exited(3).terminal_event(Duration::ZERO);
        let error = failed.error.expect("error member");
        assert_eq!(
            (error.evalue.as_str(), error.traceback[0].as_str()),
            ("3", "exit status 3")
        );

        let killed = ExitOutcome::Signaled(libc::SIGKILL).terminal_event(Duration::ZERO);
        let error = killed.error.expect("error member");
        assert_eq!(
            (error.evalue.as_str(), error.traceback[0].as_str()),
            ("-1", "signal: killed")
        );
        assert_eq!(ExitOutcome::Signaled(libc::SIGTERM).exit_code(), -1);
        assert_eq!(ExitOutcome::Failed("no such file".into()).exit_code(), 255);
    }

    #[test]
    fn text_frames_match_serde_byte_for_byte() {
        let mut texts: Vec<String> = (0u32..0x80)
            .filter_map(char::from_u32)
            .map(|c| format!("a{c}b"))
            .collect();
        texts.extend(
            [
                "",
                "\n",
                "plain",
                "quote\"back\\slash",
                "é ü 日本 😀 \u{2028}",
                "\u{7f}\u{1b}[0m",
            ]
            .map(String::from),
        );
        for kind in [EventType::Stdout, EventType::Stderr, EventType::Ping] {
            for text in &texts {
                let mut event = ServerStreamEvent::with_text(kind, text.as_str());
                event.timestamp = 1718000000102;
                let mut fast = Vec::new();
                push_text_frame(&mut fast, kind, text, event.timestamp);
                assert_eq!(fast, &event.to_frame()[..], "text {text:?}");
            }
        }
    }

    #[test]
    fn failure_frame_has_no_type() {
        let frame = failure_frame("RUNTIME_ERROR", "error running codes session is busy");
        assert_eq!(
            &frame[..],
            b"{\"code\":\"RUNTIME_ERROR\",\"message\":\"error running codes session is busy\"}\n\n"
        );
    }
}
