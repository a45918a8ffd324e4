//! The execution event stream: framing, parsing, terminal-event rules, and the
//! `Execution` that a run-to-completion builds from the events.
//!
//! Framing is deliberately tolerant (protocol §4.1, §7.1): raw JSON lines and SSE
//! `data:` lines are both accepted, blank lines, `:` comments and `event:`/`id:`/
//! `retry:` fields are skipped, and frames may be split across chunks or span many.
//! Semantics are strict: a typeless `{code, message}` frame is an error (§7.18) and a
//! stream that ends before its terminal event is an error, never a silent success.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use futures_util::Stream;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

/// Largest single frame accepted. execd emits one event per output line, so only a
/// pathological single line gets near this; the cap keeps memory bounded.
pub const MAX_FRAME_BYTES: usize = 256 * 1024 * 1024;

// ---------------------------------------------------------------------------------
// Framing

/// Splits a byte stream into logical frames (one JSON document each).
///
/// Chunks given with [`push_bytes`](Self::push_bytes) are read in place: a line that
/// lies wholly inside one chunk is never copied. Only the unfinished tail of a chunk
/// (a line split across chunks) is copied into an internal buffer.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    /// Copied input: the start of an unfinished line, or whole lines given with
    /// [`push`](Self::push). `buf[..start]` is consumed. Always precedes `cur`.
    buf: BytesMut,
    start: usize,
    /// `buf[start..scanned]` is known to hold no newline, so each byte is scanned once.
    scanned: usize,
    /// The latest chunk from `push_bytes`, read in place from `off`.
    cur: Bytes,
    off: usize,
}

/// Where a line lies: in the copy buffer or in the current chunk.
#[derive(Debug, Clone, Copy)]
enum LineAt {
    Buf(usize, usize),
    Cur(usize, usize),
}

impl FrameDecoder {
    /// A new, empty decoder.
    pub fn new() -> Self {
        FrameDecoder::default()
    }

    /// Appends received bytes (copied).
    pub fn push(&mut self, chunk: &[u8]) {
        self.spill();
        self.compact();
        self.buf.extend_from_slice(chunk);
    }

    /// Appends a received chunk without copying it: lines wholly inside it are read in
    /// place. Preferred over [`push`](Self::push) when the chunk is already `Bytes`.
    pub fn push_bytes(&mut self, chunk: Bytes) {
        self.spill();
        if chunk.is_empty() {
            return;
        }
        self.cur = chunk;
        self.off = 0;
    }

    /// Bytes buffered but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start + self.cur.len() - self.off
    }

    /// Moves the unread rest of `cur` behind `buf` so that `buf` holds all input.
    fn spill(&mut self) {
        if self.off < self.cur.len() {
            self.compact();
            self.buf.extend_from_slice(&self.cur[self.off..]);
        }
        self.cur = Bytes::new();
        self.off = 0;
    }

    /// Drops the consumed head of `buf` (O(1); the space is reclaimed on growth).
    fn compact(&mut self) {
        if self.start == self.buf.len() {
            self.buf.clear();
        } else if self.start > 0 {
            self.buf.advance(self.start);
            self.scanned -= self.start;
        }
        self.start = 0;
        if self.scanned > self.buf.len() {
            self.scanned = self.buf.len();
        }
    }

    /// Input that ends no line yet, after the cut: `Err` when it exceeds the cap.
    fn incomplete(&mut self) -> std::result::Result<Option<LineAt>, usize> {
        self.spill();
        self.scanned = self.buf.len();
        let pending = self.buf.len() - self.start;
        if pending > MAX_FRAME_BYTES {
            return Err(pending);
        }
        Ok(None)
    }

    /// The next complete line, newline included.
    fn next_line(&mut self) -> std::result::Result<Option<LineAt>, usize> {
        if self.start < self.buf.len() {
            if let Some(p) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let (s, e) = (self.start, self.scanned + p + 1);
                self.start = e;
                self.scanned = e;
                return Ok(Some(LineAt::Buf(s, e)));
            }
            self.scanned = self.buf.len();
            // The line started in `buf` ends, if anywhere, in `cur`.
            let Some(p) = memchr::memchr(b'\n', &self.cur[self.off..]) else {
                return self.incomplete();
            };
            self.compact();
            let end = self.off + p + 1;
            self.buf.extend_from_slice(&self.cur[self.off..end]);
            self.off = end;
            let (s, e) = (self.start, self.buf.len());
            self.start = e;
            self.scanned = e;
            return Ok(Some(LineAt::Buf(s, e)));
        }
        if !self.buf.is_empty() {
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
        }
        let Some(p) = memchr::memchr(b'\n', &self.cur[self.off..]) else {
            return self.incomplete();
        };
        let s = self.off;
        self.off += p + 1;
        Ok(Some(LineAt::Cur(s, self.off)))
    }

    fn line(&self, at: LineAt) -> &[u8] {
        match at {
            LineAt::Buf(s, e) => &self.buf[s..e],
            LineAt::Cur(s, e) => &self.cur[s..e],
        }
    }

    /// The next frame's payload as a borrowed slice, skipping lines without data.
    pub(crate) fn next_payload(&mut self) -> std::result::Result<Option<&[u8]>, usize> {
        let (at, range) = loop {
            let Some(at) = self.next_line()? else {
                return Ok(None);
            };
            if let Some(range) = payload_range(self.line(at)) {
                break (at, range);
            }
        };
        Ok(Some(&self.line(at)[range]))
    }

    /// The next complete frame's payload, skipping blank and non-data lines.
    /// `Err` when a single line exceeds [`MAX_FRAME_BYTES`].
    pub fn next_frame(&mut self) -> std::result::Result<Option<Bytes>, usize> {
        loop {
            let Some(at) = self.next_line()? else {
                return Ok(None);
            };
            if let Some(r) = payload_range(self.line(at)) {
                return Ok(Some(match at {
                    LineAt::Cur(s, _) => self.cur.slice(s + r.start..s + r.end),
                    LineAt::Buf(s, _) => Bytes::copy_from_slice(&self.buf[s + r.start..s + r.end]),
                }));
            }
        }
    }

    /// At end of input: the unterminated last line, if it carries data.
    pub fn finish(&mut self) -> Option<Bytes> {
        self.spill();
        let rest = &self.buf[self.start..];
        let out = payload_range(rest).map(|r| Bytes::copy_from_slice(&rest[r]));
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        out
    }
}

/// Where the data of one line lies, or `None` for lines that carry none.
fn payload_range(line: &[u8]) -> Option<std::ops::Range<usize>> {
    // The two lines execd writes: a JSON frame and the blank line after it.
    match line {
        [b'\n'] => return None,
        [b'{', .., b'}', b'\n'] => return Some(0..line.len() - 1),
        _ => {}
    }
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let mut start = 0;
    while start < end && line[start].is_ascii_whitespace() {
        start += 1;
    }
    let l = &line[start..end];
    if l.is_empty() || l[0] == b':' {
        return None;
    }
    if l.starts_with(b"data:") {
        start += 5;
        if line.get(start) == Some(&b' ') && start < end {
            start += 1;
        }
        return (!line[start..end].iter().all(u8::is_ascii_whitespace)).then_some(start..end);
    }
    if l.starts_with(b"event:") || l.starts_with(b"id:") || l.starts_with(b"retry:") {
        return None;
    }
    Some(start..end)
}

// ---------------------------------------------------------------------------------
// Events

/// One line of command or code output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputMessage {
    /// The text (command lines arrive without their newline).
    pub text: String,
    /// Unix ms.
    pub timestamp: i64,
    /// Whether it came from stderr.
    pub is_error: bool,
}

/// A code result (the value of a cell's last expression).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    /// The `text/plain` representation (`text` on the wire).
    pub text: Option<String>,
    /// Unix ms.
    pub timestamp: i64,
    /// Every MIME representation as sent (`text`, `text/html`, `image/png`, ...).
    pub raw: serde_json::Map<String, serde_json::Value>,
}

/// The error that ended an execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionError {
    /// `ename`, e.g. `CommandExecError` or `ZeroDivisionError`.
    pub name: String,
    /// `evalue`; for commands the exit code as a decimal string.
    pub value: String,
    /// Unix ms.
    pub timestamp: i64,
    /// Traceback lines.
    pub traceback: Vec<String>,
}

/// Successful end of an execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionComplete {
    /// Unix ms.
    pub timestamp: i64,
    /// Server-measured duration in ms.
    pub execution_time_ms: i64,
}

/// A typed execution event. Pings and unknown event types never appear here.
///
/// Serializes as `{"type": "<wire type>", ...fields}` for bindings that pass events
/// across an FFI boundary as JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerEvent {
    /// First event: the execution (command, context or session) id.
    Init {
        /// Id to use for interrupt, status and logs.
        id: String,
        /// Unix ms.
        timestamp: i64,
    },
    /// stdout output.
    Stdout(OutputMessage),
    /// stderr output.
    Stderr(OutputMessage),
    /// A code result.
    Result(ExecutionResult),
    /// Jupyter execution counter.
    ExecutionCount {
        /// The counter.
        count: i64,
        /// Unix ms.
        timestamp: i64,
    },
    /// Status text (in practice only `error`, right before a Jupyter error).
    Status {
        /// The text.
        text: String,
        /// Unix ms.
        timestamp: i64,
    },
    /// Failure (terminal for commands).
    Error(ExecutionError),
    /// Success (terminal).
    #[serde(rename = "execution_complete")]
    Complete(ExecutionComplete),
}

impl ServerEvent {
    /// The wire `type` of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            ServerEvent::Init { .. } => "init",
            ServerEvent::Stdout(_) => "stdout",
            ServerEvent::Stderr(_) => "stderr",
            ServerEvent::Result(_) => "result",
            ServerEvent::ExecutionCount { .. } => "execution_count",
            ServerEvent::Status { .. } => "status",
            ServerEvent::Error(_) => "error",
            ServerEvent::Complete(_) => "execution_complete",
        }
    }
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    // Borrowed: the type name is needed only to dispatch, so it costs no allocation.
    #[serde(rename = "type", default, borrow)]
    ty: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default)]
    execution_count: Option<i64>,
    #[serde(default)]
    execution_time: Option<i64>,
    #[serde(default)]
    results: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
}

/// Parses one frame. `Ok(None)` for frames to ignore (ping, unknown types).
pub fn parse_event(op: &str, frame: &[u8]) -> Result<Option<ServerEvent>> {
    if let Some(ev) = parse_output_fast(frame) {
        return Ok(Some(ev));
    }
    parse_event_slow(op, frame)
}

/// The hot path: an output line exactly as execd writes it,
/// `{"type":"stdout"|"stderr","text":"...","timestamp":N}`, decoded without a
/// general JSON parser. `None` for anything else (other types or member orders,
/// whitespace, escapes that are not valid JSON, invalid UTF-8, big numbers...): the
/// caller then uses serde_json, so the result never differs from the general path.
fn parse_output_fast(frame: &[u8]) -> Option<ServerEvent> {
    const STDOUT: &[u8] = b"{\"type\":\"stdout\",\"text\":";
    const STDERR: &[u8] = b"{\"type\":\"stderr\",\"text\":";
    let is_error = if frame.starts_with(STDOUT) {
        false
    } else if frame.starts_with(STDERR) {
        true
    } else {
        return None;
    };
    let (text, rest) = json_string_fast(&frame[STDOUT.len()..])?;
    let digits = rest.strip_prefix(b",\"timestamp\":")?.strip_suffix(b"}")?;
    let timestamp = small_int(digits)?;
    let msg = OutputMessage {
        text,
        timestamp,
        is_error,
    };
    Some(if is_error {
        ServerEvent::Stderr(msg)
    } else {
        ServerEvent::Stdout(msg)
    })
}

/// A JSON string token at the start of `s`: its decoded value and the bytes after it.
fn json_string_fast(s: &[u8]) -> Option<(String, &[u8])> {
    let body = s.strip_prefix(b"\"")?;
    let q = memchr::memchr2(b'"', b'\\', body)?;
    if body[q] == b'"' {
        let raw = &body[..q];
        // JSON forbids raw control characters; such text goes to serde_json's verdict.
        if has_control_byte(raw) {
            return None;
        }
        let text = std::str::from_utf8(raw).ok()?.to_owned();
        return Some((text, &body[q + 1..]));
    }
    // Escapes: find the closing quote, let serde_json decode the token.
    let mut i = q;
    loop {
        i += 2; // the backslash and the escaped byte
        i += memchr::memchr2(b'"', b'\\', body.get(i..)?)?;
        if body[i] == b'"' {
            break;
        }
    }
    let text: String = serde_json::from_slice(&s[..i + 2]).ok()?;
    Some((text, &body[i + 1..]))
}

/// Whether any byte is below 0x20, eight bytes at a time.
fn has_control_byte(s: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut words = s.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        let x = u64::from_ne_bytes(a);
        // Exact test for "some byte < 0x20" (valid for any bound up to 0x80).
        if x.wrapping_sub(ONES * 0x20) & !x & HIGH != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b < 0x20)
}

/// A decimal integer of at most 18 digits (so it cannot overflow), optionally
/// negative, no leading zeros (as JSON demands).
fn small_int(d: &[u8]) -> Option<i64> {
    let (neg, d) = match d.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, d),
    };
    if d.is_empty() || d.len() > 18 || (d.len() > 1 && d[0] == b'0') {
        return None;
    }
    let mut v: i64 = 0;
    for &b in d {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(b - b'0');
    }
    Some(if neg { -v } else { v })
}

/// The general path: any event, via serde_json.
fn parse_event_slow(op: &str, frame: &[u8]) -> Result<Option<ServerEvent>> {
    let raw: RawEvent = serde_json::from_slice(frame).map_err(|e| {
        let shown = String::from_utf8_lossy(&frame[..frame.len().min(200)]).into_owned();
        Error::stream(op.to_owned(), format!("malformed event frame: {shown:?}")).with_source(e)
    })?;
    let ts = raw.timestamp.unwrap_or(0);
    let Some(ty) = raw.ty else {
        // Late failure written into a 200 stream (protocol §7.18).
        if let Some(code) = raw.code {
            let code = match code {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            let msg = raw
                .message
                .unwrap_or_else(|| "server reported an error inside the stream".into());
            return Err(Error::stream(op.to_owned(), msg).with_code(code));
        }
        return Ok(None);
    };
    let text = raw.text.unwrap_or_default();
    let ev = match ty.as_ref() {
        "init" => ServerEvent::Init {
            id: text,
            timestamp: ts,
        },
        "stdout" => ServerEvent::Stdout(OutputMessage {
            text,
            timestamp: ts,
            is_error: false,
        }),
        "stderr" => ServerEvent::Stderr(OutputMessage {
            text,
            timestamp: ts,
            is_error: true,
        }),
        "result" => {
            let raw_map = raw.results.unwrap_or_default();
            let text = raw_map
                .get("text")
                .or_else(|| raw_map.get("text/plain"))
                .map(|v| match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
            ServerEvent::Result(ExecutionResult {
                text,
                timestamp: ts,
                raw: raw_map,
            })
        }
        "execution_count" => ServerEvent::ExecutionCount {
            count: raw.execution_count.unwrap_or(0),
            timestamp: ts,
        },
        "execution_complete" => ServerEvent::Complete(ExecutionComplete {
            timestamp: ts,
            execution_time_ms: raw.execution_time.unwrap_or(0),
        }),
        "status" => ServerEvent::Status {
            text,
            timestamp: ts,
        },
        "error" => ServerEvent::Error(parse_error(raw.error, ts)),
        _ => return Ok(None),
    };
    Ok(Some(ev))
}

fn parse_error(v: Option<serde_json::Value>, ts: i64) -> ExecutionError {
    let str_of = |v: Option<&serde_json::Value>| match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    match v {
        Some(serde_json::Value::Object(m)) => ExecutionError {
            name: str_of(m.get("ename")),
            value: str_of(m.get("evalue")),
            timestamp: ts,
            traceback: match m.get("traceback") {
                Some(serde_json::Value::Array(a)) => a.iter().map(|x| str_of(Some(x))).collect(),
                Some(serde_json::Value::String(s)) => vec![s.clone()],
                _ => Vec::new(),
            },
        },
        other => ExecutionError {
            name: "Error".into(),
            value: str_of(other.as_ref()),
            timestamp: ts,
            traceback: Vec::new(),
        },
    }
}

// ---------------------------------------------------------------------------------
// The event stream

/// Which endpoint produced a stream; it decides the terminal rules and exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionKind {
    /// Foreground `/command`: first of error/complete is terminal; exit code inferred.
    Command,
    /// Background `/command`: ends at complete; no exit code.
    BackgroundCommand,
    /// `/session/{id}/run`: like a foreground command.
    Session,
    /// `/code`: complete is terminal; an error may be followed by complete; no exit code.
    Code,
}

/// A body as a stream of chunks; transport errors already mapped to core errors.
pub(crate) type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// Called with the execution id when a stream is dropped before its terminal event.
pub(crate) type DropHook = Box<dyn FnOnce(String) + Send>;

/// A `Stream` of typed events from one execution. Dropping it closes the connection;
/// if it was created with interrupt-on-drop, the server-side execution is interrupted
/// too.
pub struct EventStream {
    op: &'static str,
    kind: ExecutionKind,
    body: Option<ByteStream>,
    decoder: FrameDecoder,
    queued: VecDeque<ServerEvent>,
    execution_id: Option<String>,
    saw_error: bool,
    done: bool,
    request_id: Option<String>,
    on_drop: Option<DropHook>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("op", &self.op)
            .field("kind", &self.kind)
            .field("execution_id", &self.execution_id)
            .field("done", &self.done)
            .finish()
    }
}

impl EventStream {
    pub(crate) fn new(
        op: &'static str,
        kind: ExecutionKind,
        body: ByteStream,
        request_id: Option<String>,
    ) -> Self {
        EventStream {
            op,
            kind,
            body: Some(body),
            decoder: FrameDecoder::new(),
            queued: VecDeque::new(),
            execution_id: None,
            saw_error: false,
            done: false,
            request_id,
            on_drop: None,
        }
    }

    /// Builds a stream over any byte stream (used by tests and by bindings that bring
    /// their own transport).
    pub fn from_bytes<S>(op: &'static str, kind: ExecutionKind, body: S) -> Self
    where
        S: Stream<Item = std::result::Result<Bytes, std::io::Error>> + Send + 'static,
    {
        use futures_util::StreamExt;
        let body = body.map(move |r| {
            r.map_err(|e| Error::new(ErrorKind::Connection, op, "body read failed").with_source(e))
        });
        EventStream::new(op, kind, Box::pin(body), None)
    }

    pub(crate) fn set_on_drop(&mut self, hook: DropHook) {
        self.on_drop = Some(hook);
    }

    /// The execution id from the `init` event, once it has arrived.
    pub fn execution_id(&self) -> Option<&str> {
        self.execution_id.as_deref()
    }

    /// The kind of execution this stream belongs to.
    pub fn kind(&self) -> ExecutionKind {
        self.kind
    }

    fn err(&self, e: Error) -> Error {
        e.with_request_id(self.request_id.clone())
    }

    fn ended_without_terminal(&self) -> Error {
        self.err(Error::stream(
            self.op,
            "event stream ended without a terminal event (execution_complete or error)",
        ))
    }

    /// Handles one parsed event; returns it when it should be yielded.
    fn accept(&mut self, ev: ServerEvent) -> ServerEvent {
        match &ev {
            ServerEvent::Init { id, .. } if self.execution_id.is_none() => {
                self.execution_id = Some(id.clone());
            }
            ServerEvent::Complete(_) => self.finish(),
            ServerEvent::Error(_) => {
                self.saw_error = true;
                if self.kind != ExecutionKind::Code {
                    self.finish();
                }
            }
            _ => {}
        }
        ev
    }

    /// Terminal event seen: stop reading. Dropping the body closes the connection, so
    /// the server's post-terminal grace period (§7.7) never delays the caller.
    fn finish(&mut self) {
        self.done = true;
        self.body = None;
        self.on_drop = None;
    }

    fn next_from_buffer(&mut self) -> Option<Result<ServerEvent>> {
        loop {
            let parsed = match self.decoder.next_payload() {
                Ok(Some(frame)) => parse_event(self.op, frame),
                Ok(None) => return None,
                Err(len) => {
                    self.finish();
                    return Some(Err(self.err(Error::stream(
                        self.op,
                        format!("event frame larger than {MAX_FRAME_BYTES} bytes ({len} buffered)"),
                    ))));
                }
            };
            match parsed {
                Ok(Some(ev)) => return Some(Ok(self.accept(ev))),
                Ok(None) => continue,
                Err(e) => {
                    self.finish();
                    return Some(Err(self.err(e)));
                }
            }
        }
    }

    fn at_eof(&mut self) -> Option<Result<ServerEvent>> {
        if let Some(frame) = self.decoder.finish() {
            match parse_event(self.op, &frame) {
                Ok(Some(ev)) => return Some(Ok(self.accept(ev))),
                Ok(None) => {}
                Err(e) => {
                    self.finish();
                    return Some(Err(self.err(e)));
                }
            }
        }
        let ok = self.done || (self.kind == ExecutionKind::Code && self.saw_error);
        self.finish();
        if ok {
            None
        } else {
            Some(Err(self.ended_without_terminal()))
        }
    }
}

impl Stream for EventStream {
    type Item = Result<ServerEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(ev) = this.queued.pop_front() {
            return Poll::Ready(Some(Ok(ev)));
        }
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(item) = this.next_from_buffer() {
                return Poll::Ready(Some(item));
            }
            let Some(body) = this.body.as_mut() else {
                return Poll::Ready(this.at_eof());
            };
            match body.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => this.decoder.push_bytes(chunk),
                Poll::Ready(Some(Err(err))) => {
                    this.finish();
                    return Poll::Ready(Some(Err(this.err(
                        Error::new(
                            ErrorKind::Connection,
                            this.op,
                            "connection broke in the middle of the event stream",
                        )
                        .with_source(err),
                    ))));
                }
                Poll::Ready(None) => {
                    this.body = None;
                    return Poll::Ready(this.at_eof());
                }
            }
        }
    }
}

/// How long a stream dropped before `init` is read on for it (see `Drop`).
const INIT_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Drop for EventStream {
    fn drop(&mut self) {
        let Some(hook) = self.on_drop.take() else {
            return;
        };
        if let Some(id) = self.execution_id.take() {
            hook(id);
            return;
        }
        // Dropped before `init` named the execution (a cancel right after the request
        // went out, or while the server's answer was still on its way): the command may
        // be running already, and a closed connection does not stop it (protocol
        // §7.17). So the rest of the body is read on, in a task of the runtime the
        // connection lives on, until `init` names it; then it is interrupted.
        let Some(body) = self.body.take() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let rest = EventStream {
            op: self.op,
            kind: self.kind,
            body: Some(body),
            decoder: std::mem::replace(&mut self.decoder, FrameDecoder::new()),
            queued: std::mem::take(&mut self.queued),
            execution_id: None,
            saw_error: false,
            done: false,
            request_id: None,
            on_drop: None,
        };
        rt.spawn(async move {
            if let Ok(Some(id)) = tokio::time::timeout(INIT_WAIT, first_id(rest)).await {
                hook(id);
            }
        });
    }
}

/// The execution id of `stream`'s `init`, reading it until that arrives; `None` when
/// the stream fails or ends first.
async fn first_id(mut stream: EventStream) -> Option<String> {
    use futures_util::StreamExt;
    while let Some(ev) = stream.next().await {
        ev.ok()?;
        if let Some(id) = stream.execution_id() {
            return Some(id.to_owned());
        }
    }
    None
}

// ---------------------------------------------------------------------------------
// Execution

/// stdout and stderr of an execution.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExecutionLogs {
    /// stdout messages in arrival order.
    pub stdout: Vec<OutputMessage>,
    /// stderr messages in arrival order.
    pub stderr: Vec<OutputMessage>,
}

/// Everything an execution produced (the Python SDK's `Execution`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Execution {
    /// Execution id (`init` text).
    pub id: Option<String>,
    /// Jupyter execution counter.
    pub execution_count: Option<i64>,
    /// Output.
    pub logs: ExecutionLogs,
    /// Code results.
    pub result: Vec<ExecutionResult>,
    /// The error, if the execution failed.
    pub error: Option<ExecutionError>,
    /// Completion, if it succeeded.
    pub complete: Option<ExecutionComplete>,
    /// Exit code: foreground commands only — 0 on complete, `int(error.value)` on
    /// error, `None` otherwise.
    pub exit_code: Option<i32>,
}

impl Execution {
    /// The stdout texts assembled as [`assemble_output`] does, then the result texts,
    /// one per line (the Python SDK's `.text`). `logs.stdout[i].text` stays raw.
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        let stdout = assemble_output(self.logs.stdout.iter().map(|m| m.text.as_str()));
        if !stdout.is_empty() {
            parts.push(stdout.as_str());
        }
        parts.extend(
            self.result
                .iter()
                .filter_map(|r| r.text.as_deref())
                .map(|text| text.trim_end_matches('\n'))
                .filter(|text| !text.is_empty()),
        );
        parts.join("\n")
    }

    /// The stderr texts assembled as [`assemble_output`] does.
    pub fn stderr_text(&self) -> String {
        assemble_output(self.logs.stderr.iter().map(|m| m.text.as_str()))
    }
}

/// One stream's output from its event texts, read the way the 1.1.1 Python SDK does
/// (protocol.md §4.2) so that both server framings give the same text: line-framed
/// events (`"a"`, `"b"`) and kept endings (`"a\n"`, `"b\n"`) both become `"a\nb"`.
/// A `\n` goes between two texts only when neither side already has a line ending
/// there; then CRLF and lone CR become `\n` and trailing newlines are dropped.
pub fn assemble_output<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let mut joined = String::new();
    for text in texts {
        // Empty texts neither get nor cause a separator.
        let ends = joined.is_empty() || joined.ends_with(['\n', '\r']);
        if !text.is_empty() && !ends && !text.starts_with(['\n', '\r']) {
            joined.push('\n');
        }
        joined.push_str(text);
    }
    let mut out = joined.replace("\r\n", "\n").replace('\r', "\n");
    let kept = out.trim_end_matches('\n').len();
    out.truncate(kept);
    out
}

/// Callbacks invoked in event order while an execution runs (the Python SDK's
/// `ExecutionHandlers`). Every method defaults to doing nothing; an `Err` aborts the
/// run with that error.
pub trait ExecutionHandlers: Send {
    /// `init` arrived.
    fn on_init(&mut self, _id: &str, _timestamp: i64) -> Result<()> {
        Ok(())
    }
    /// stdout output arrived.
    fn on_stdout(&mut self, _msg: &OutputMessage) -> Result<()> {
        Ok(())
    }
    /// stderr output arrived.
    fn on_stderr(&mut self, _msg: &OutputMessage) -> Result<()> {
        Ok(())
    }
    /// A result arrived.
    fn on_result(&mut self, _result: &ExecutionResult) -> Result<()> {
        Ok(())
    }
    /// The execution completed.
    fn on_execution_complete(&mut self, _complete: &ExecutionComplete) -> Result<()> {
        Ok(())
    }
    /// The execution failed.
    fn on_error(&mut self, _error: &ExecutionError) -> Result<()> {
        Ok(())
    }
    /// When true, stdout/stderr are passed to the handlers but not kept in `logs`
    /// (for outputs too large to hold).
    fn skip_accumulation(&self) -> bool {
        false
    }
}

/// The no-op handler set.
impl ExecutionHandlers for () {}

/// Folds events into an [`Execution`], calling handlers as it goes. Bindings whose
/// handlers are async drive this themselves, one event at a time.
#[derive(Debug)]
pub struct ExecutionBuilder {
    kind: ExecutionKind,
    execution: Execution,
    skip_accumulation: bool,
}

impl ExecutionBuilder {
    /// A builder for an execution of `kind`.
    pub fn new(kind: ExecutionKind) -> Self {
        ExecutionBuilder {
            kind,
            execution: Execution::default(),
            skip_accumulation: false,
        }
    }

    /// Do not keep stdout/stderr in `logs`.
    pub fn skip_accumulation(mut self, skip: bool) -> Self {
        self.skip_accumulation = skip;
        self
    }

    /// The execution so far.
    pub fn execution(&self) -> &Execution {
        &self.execution
    }

    /// Records one event and calls the matching handler.
    pub fn apply(
        &mut self,
        event: ServerEvent,
        handlers: &mut (impl ExecutionHandlers + ?Sized),
    ) -> Result<()> {
        let ex = &mut self.execution;
        match event {
            ServerEvent::Init { id, timestamp } => {
                handlers.on_init(&id, timestamp)?;
                ex.id = Some(id);
            }
            ServerEvent::Stdout(m) => {
                handlers.on_stdout(&m)?;
                if !self.skip_accumulation {
                    ex.logs.stdout.push(m);
                }
            }
            ServerEvent::Stderr(m) => {
                handlers.on_stderr(&m)?;
                if !self.skip_accumulation {
                    ex.logs.stderr.push(m);
                }
            }
            ServerEvent::Result(r) => {
                handlers.on_result(&r)?;
                ex.result.push(r);
            }
            ServerEvent::ExecutionCount { count, .. } => ex.execution_count = Some(count),
            ServerEvent::Status { .. } => {}
            ServerEvent::Error(e) => {
                handlers.on_error(&e)?;
                if matches!(self.kind, ExecutionKind::Command | ExecutionKind::Session) {
                    ex.exit_code = e.value.trim().parse::<i32>().ok();
                }
                ex.error = Some(e);
            }
            ServerEvent::Complete(c) => {
                handlers.on_execution_complete(&c)?;
                if matches!(self.kind, ExecutionKind::Command | ExecutionKind::Session)
                    && ex.error.is_none()
                {
                    ex.exit_code = Some(0);
                }
                ex.complete = Some(c);
            }
        }
        Ok(())
    }

    /// [`apply`](Self::apply) for a borrowed event: for bindings that hand the event
    /// on after folding it. With `skip_accumulation`, output lines are not copied.
    pub fn observe(
        &mut self,
        event: &ServerEvent,
        handlers: &mut (impl ExecutionHandlers + ?Sized),
    ) -> Result<()> {
        match event {
            ServerEvent::Stdout(m) if self.skip_accumulation => handlers.on_stdout(m),
            ServerEvent::Stderr(m) if self.skip_accumulation => handlers.on_stderr(m),
            other => self.apply(other.clone(), handlers),
        }
    }

    /// The finished execution.
    pub fn finish(self) -> Execution {
        self.execution
    }
}

/// Drains `stream` into an [`Execution`], calling `handlers` in event order.
pub async fn collect_execution(
    mut stream: EventStream,
    handlers: &mut (impl ExecutionHandlers + ?Sized),
) -> Result<Execution> {
    use futures_util::StreamExt;
    let mut builder =
        ExecutionBuilder::new(stream.kind()).skip_accumulation(handlers.skip_accumulation());
    while let Some(ev) = stream.next().await {
        builder.apply(ev?, handlers)?;
    }
    Ok(builder.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assemble_output_reads_both_framings_alike() {
        // printf 'a\nb\r\nc' in each framing.
        assert_eq!(assemble_output(["a", "b", "c"]), "a\nb\nc");
        assert_eq!(assemble_output(["a\n", "b\r\n", "c"]), "a\nb\nc");
        assert_eq!(assemble_output(["hello\n", "world\n"]), "hello\nworld");
        assert_eq!(assemble_output(["hello", "world"]), "hello\nworld");
        // A CRLF split over two events, a lone CR, an empty stream.
        assert_eq!(assemble_output(["a\r", "\n", "b\rc"]), "a\nb\nc");
        assert_eq!(assemble_output(Vec::<&str>::new()), "");
        assert_eq!(assemble_output(["", "x", "", "y"]), "x\ny");
    }
    use futures_util::StreamExt;

    fn frames(input: &[u8], split: usize) -> Vec<String> {
        let mut d = FrameDecoder::new();
        let mut out = Vec::new();
        for chunk in input.chunks(split.max(1)) {
            d.push(chunk);
            while let Some(f) = d.next_frame().expect("frame") {
                out.push(String::from_utf8(f.to_vec()).expect("utf8"));
            }
        }
        if let Some(f) = d.finish() {
            out.push(String::from_utf8(f.to_vec()).expect("utf8"));
        }
        out
    }

    /// A stream dropped before its `init` arrived reads on for it and then calls the
    /// drop hook (which interrupts the command) with its id; one whose body ends
    /// without `init` never calls it.
    #[test]
    fn dropped_before_init_still_interrupts_once_init_arrives() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            for (body, want) in [
                (
                    r#"{"type":"init","text":"ex-9","timestamp":1}"#,
                    Some("ex-9"),
                ),
                (r#"{"type":"ping","text":"pong","timestamp":1}"#, None),
            ] {
                let (tx, rx) = tokio::sync::oneshot::channel::<String>();
                let late = futures_util::stream::once(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    Ok::<_, std::io::Error>(Bytes::from(format!("{body}\n\n")))
                });
                let mut st = EventStream::from_bytes("test", ExecutionKind::Command, late);
                st.set_on_drop(Box::new(move |id| {
                    let _ = tx.send(id);
                }));
                drop(st);
                let got = tokio::time::timeout(std::time::Duration::from_secs(5), rx).await;
                match want {
                    Some(id) => assert_eq!(got.expect("hook called").expect("an id"), id),
                    // The hook was dropped uncalled: the channel closed without a value.
                    None => assert!(got.expect("task ended").is_err()),
                }
            }
        });
    }

    #[test]
    fn framer_handles_every_split_and_framing() {
        let input = b": comment\r\n\r\n{\"a\":1}\n\ndata: {\"b\":2}\r\n\r\nevent: x\nid: 3\nretry: 5\ndata:{\"c\":3}\n\n  \n{\"d\":4}";
        for split in 1..input.len() + 1 {
            let got = frames(input, split);
            assert_eq!(got.len(), 4, "split {split}: {got:?}");
            assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "{\"d\":4}"]);
        }
    }

    /// A command's wire output: every kind of text the fast path must carry intact.
    fn tricky_wire() -> (Vec<u8>, Vec<(bool, String)>) {
        let lines: Vec<(bool, String)> = vec![
            (false, "plain ascii".into()),
            (false, String::new()),
            (true, "stderr between".into()),
            (false, "trailing CR\r".into()),
            (false, "tab\tquote\"backslash\\slash/".into()),
            (false, "\u{1b}[31mANSI\u{1b}[0m".into()),
            (true, "héllo wörld — ✓ 𝄞 日本語".into()),
            (false, "emoji 👍🏽 and \u{7f} DEL".into()),
            (false, "  spaces  ".into()),
            (false, "data: not a field".into()),
            (false, "\u{0}nul\u{1}".into()),
        ];
        let mut wire = b"{\"type\":\"init\",\"text\":\"id9\",\"timestamp\":1}\n\n".to_vec();
        for (i, (err, text)) in lines.iter().enumerate() {
            let ty = if *err { "stderr" } else { "stdout" };
            let text = serde_json::to_string(text).expect("json");
            // Alternate the server's compact framing with SSE framing and CRLF.
            if i % 3 == 2 {
                wire.extend_from_slice(
                    format!(
                        "data: {{\"type\":\"{ty}\",\"text\":{text},\"timestamp\":{i}}}\r\n\r\n"
                    )
                    .as_bytes(),
                );
            } else {
                wire.extend_from_slice(
                    format!("{{\"type\":\"{ty}\",\"text\":{text},\"timestamp\":{i}}}\n\n")
                        .as_bytes(),
                );
            }
        }
        wire.extend_from_slice(b"{\"type\":\"execution_complete\",\"execution_time\":2}\n\n");
        (wire, lines)
    }

    fn output_of(events: &[ServerEvent]) -> Vec<(bool, String)> {
        events
            .iter()
            .filter_map(|e| match e {
                ServerEvent::Stdout(m) | ServerEvent::Stderr(m) => {
                    Some((m.is_error, m.text.clone()))
                }
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn every_line_survives_a_split_at_every_byte_offset() {
        let (wire, want) = tricky_wire();
        let wire = Bytes::from(wire);
        for cut in 0..=wire.len() {
            let chunks: Vec<std::result::Result<Bytes, std::io::Error>> =
                vec![Ok(wire.slice(..cut)), Ok(wire.slice(cut..))];
            let st = EventStream::from_bytes(
                "t",
                ExecutionKind::Command,
                futures_util::stream::iter(chunks),
            );
            let events: Vec<ServerEvent> = st.map(|r| r.expect("event")).collect::<Vec<_>>().await;
            assert!(
                matches!(events.first(), Some(ServerEvent::Init { .. })),
                "cut {cut}"
            );
            assert!(
                matches!(events.last(), Some(ServerEvent::Complete(_))),
                "cut {cut}"
            );
            assert_eq!(output_of(&events), want, "cut {cut}");
        }
        // Three-way splits and one-byte chunks too.
        for (a, b) in [(1, 2), (37, 38), (100, 180), (150, 151)] {
            let chunks: Vec<std::result::Result<Bytes, std::io::Error>> = vec![
                Ok(wire.slice(..a)),
                Ok(wire.slice(a..b)),
                Ok(wire.slice(b..)),
            ];
            let st = EventStream::from_bytes(
                "t",
                ExecutionKind::Command,
                futures_util::stream::iter(chunks),
            );
            let ex = collect_execution(st, &mut ()).await.expect("run");
            assert_eq!(ex.logs.stdout.len() + ex.logs.stderr.len(), want.len());
        }
        let chunks: Vec<std::result::Result<Bytes, std::io::Error>> = wire
            .chunks(1)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let st = EventStream::from_bytes(
            "t",
            ExecutionKind::Command,
            futures_util::stream::iter(chunks),
        );
        let events: Vec<ServerEvent> = st.map(|r| r.expect("event")).collect::<Vec<_>>().await;
        assert_eq!(output_of(&events), want);
    }

    #[test]
    fn copied_and_in_place_pushes_mix() {
        let (wire, _) = tricky_wire();
        let want = frames(&wire, wire.len());
        for split in [1, 2, 3, 5, 8, 13, 64] {
            let mut d = FrameDecoder::new();
            let mut got = Vec::new();
            for (i, c) in wire.chunks(split).enumerate() {
                if i % 2 == 0 {
                    d.push(c);
                } else {
                    d.push_bytes(Bytes::copy_from_slice(c));
                }
                // Drain only every third chunk so that both buffers hold several lines.
                if i % 3 == 0 {
                    while let Some(f) = d.next_frame().expect("frame") {
                        got.push(String::from_utf8(f.to_vec()).expect("utf8"));
                    }
                }
            }
            while let Some(f) = d.next_frame().expect("frame") {
                got.push(String::from_utf8(f.to_vec()).expect("utf8"));
            }
            assert_eq!(d.finish(), None);
            assert_eq!(d.buffered(), 0);
            assert_eq!(got, want, "split {split}");
        }
    }

    #[test]
    fn control_byte_test_is_exact() {
        for len in 0..20 {
            for pos in 0..len {
                for b in 0..=255u8 {
                    let mut v = vec![b'a'; len];
                    v[pos] = b;
                    // Neighbours that could borrow into or carry from the tested byte.
                    if pos > 0 {
                        v[pos - 1] = 0xff;
                    }
                    assert_eq!(
                        has_control_byte(&v),
                        b < 0x20,
                        "len {len} pos {pos} byte {b}"
                    );
                }
            }
        }
        assert!(!has_control_byte("ünïcödé ✓ 𝄞 \u{7f}".as_bytes()));
    }

    #[test]
    fn consumed_input_is_released() {
        // A long-lived stream (metrics watch) whose chunks end mid-line and hold whole
        // lines too: what was returned must not stay buffered.
        let wire = b"{\"cpu\":1}\n\n".repeat(10_000);
        for in_place in [false, true] {
            let mut d = FrameDecoder::new();
            let mut n = 0;
            for chunk in wire.chunks(17) {
                if in_place {
                    d.push_bytes(Bytes::copy_from_slice(chunk));
                } else {
                    d.push(chunk);
                }
                while d.next_frame().expect("frame").is_some() {
                    n += 1;
                }
                assert!(d.buf.len() <= 64, "buffer grew to {}", d.buf.len());
            }
            assert_eq!(n, 10_000);
        }
    }

    #[test]
    fn fast_path_agrees_with_serde_json() {
        let cases: Vec<Vec<u8>> = [
            r#"{"type":"stdout","text":"hi","timestamp":1718000000102}"#,
            r#"{"type":"stderr","text":"","timestamp":0}"#,
            r#"{"type":"stdout","text":"a\"b\\c\/d\n\r\t\b\f","timestamp":-5}"#,
            r#"{"type":"stdout","text":"\u00e9\ud834\udd1e\u001b","timestamp":3}"#,
            r#"{"type":"stdout","text":"end\\","timestamp":3}"#,
            r#"{"type":"stdout","text":"\\\"","timestamp":3}"#,
            r#"{"type":"stdout","text":"bad \x escape","timestamp":3}"#,
            r#"{"type":"stdout","text":"lone \ud800 surrogate","timestamp":3}"#,
            r#"{"type":"stdout","text":"unterminated\","timestamp":3}"#,
            r#"{"type":"stdout","text":"x","timestamp":01}"#,
            r#"{"type":"stdout","text":"x","timestamp":99999999999999999999}"#,
            r#"{"type":"stdout","text":"x","timestamp":123456789012345678}"#,
            r#"{"type":"stdout","text":"x","timestamp":1.5}"#,
            r#"{"type":"stdout","text":"x","timestamp":}"#,
            r#"{"type":"stdout","text":"x","timestamp":1,"extra":2}"#,
            r#"{"type":"stdout","text":"x","timestamp":1}}"#,
            r#"{"type":"stdout","text":"x","timestamp":1} "#,
            r#"{"type":"stdout","text":"x"}"#,
            r#"{"type":"stdout","text":null,"timestamp":1}"#,
            r#"{"type":"stdout","text":"x" ,"timestamp":1}"#,
            r#"{"type":"stdout", "text":"x","timestamp":1}"#,
            r#"{"type":"stdout","timestamp":1,"text":"x"}"#,
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .chain([
            b"{\"type\":\"stdout\",\"text\":\"raw\ttab\",\"timestamp\":1}".to_vec(),
            b"{\"type\":\"stdout\",\"text\":\"bad \xff utf8\",\"timestamp\":1}".to_vec(),
            b"{\"type\":\"stdout\",\"text\":\"cut \xe6\x97\",\"timestamp\":1}".to_vec(),
            "{\"type\":\"stdout\",\"text\":\"日本\",\"timestamp\":1}"
                .as_bytes()
                .to_vec(),
        ])
        .collect();
        for c in &cases {
            let fast = parse_event("t", c).map_err(|e| e.kind());
            let slow = parse_event_slow("t", c).map_err(|e| e.kind());
            assert_eq!(fast, slow, "{:?}", String::from_utf8_lossy(c));
        }
        // The fast path itself took the well-formed ones.
        assert!(parse_output_fast(cases[0].as_slice()).is_some());
        assert!(parse_output_fast(cases[3].as_slice()).is_some());
        assert!(parse_output_fast(cases[9].as_slice()).is_none());
        assert!(parse_output_fast(cases[22].as_slice()).is_none());
    }

    #[test]
    fn framer_handles_frames_larger_than_chunks() {
        let big = "x".repeat(1 << 20);
        let input = format!("{{\"type\":\"stdout\",\"text\":\"{big}\"}}\n\n");
        let got = frames(input.as_bytes(), 4096);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].len(), big.len() + 27);
    }

    #[test]
    fn parses_every_event_type() {
        let p = |s: &str| parse_event("t", s.as_bytes()).expect("parse");
        assert!(matches!(p(r#"{"type":"init","text":"abc","timestamp":1}"#),
            Some(ServerEvent::Init { id, timestamp: 1 }) if id == "abc"));
        assert!(p(r#"{"type":"ping","text":"pong","timestamp":1}"#).is_none());
        assert!(p(r#"{"type":"brand_new","x":1}"#).is_none());
        assert!(p(r#"{"hello":"world"}"#).is_none());
        let Some(ServerEvent::Result(r)) =
            p(r#"{"type":"result","results":{"text":"2","text/html":"<b>2</b>"},"timestamp":5}"#)
        else {
            panic!("result")
        };
        assert_eq!(r.text.as_deref(), Some("2"));
        assert_eq!(r.raw.len(), 2);
        let Some(ServerEvent::Error(e)) = p(
            r#"{"type":"error","error":{"ename":"CommandExecError","evalue":"3","traceback":["exit status 3"]},"timestamp":9}"#,
        ) else {
            panic!("error")
        };
        assert_eq!(
            (e.name.as_str(), e.value.as_str()),
            ("CommandExecError", "3")
        );
        assert!(matches!(
            p(r#"{"type":"execution_complete","execution_time":104,"timestamp":1}"#),
            Some(ServerEvent::Complete(ExecutionComplete {
                execution_time_ms: 104,
                ..
            }))
        ));
        assert!(matches!(
            p(r#"{"type":"execution_count","execution_count":7}"#),
            Some(ServerEvent::ExecutionCount { count: 7, .. })
        ));
    }

    #[test]
    fn events_serialize_with_their_wire_type() {
        let ev = parse_event("t", br#"{"type":"execution_complete","execution_time":3}"#)
            .expect("parse")
            .expect("event");
        let v = serde_json::to_value(&ev).expect("json");
        assert_eq!(v["type"], "execution_complete");
        assert_eq!(v["execution_time_ms"], 3);
        let ev = ServerEvent::Stdout(OutputMessage {
            text: "x".into(),
            timestamp: 1,
            is_error: false,
        });
        assert_eq!(
            serde_json::to_value(&ev).expect("json")["type"],
            ev.type_name()
        );
    }

    #[test]
    fn typeless_code_frame_is_a_stream_error() {
        let e = parse_event(
            "t",
            br#"{"code":"RUNTIME_ERROR","message":"error running codes session is busy"}"#,
        )
        .expect_err("must fail");
        assert_eq!(e.kind(), ErrorKind::Stream);
        assert_eq!(e.code(), Some("RUNTIME_ERROR"));
        assert!(e.message().contains("busy"));
        let e = parse_event("t", b"{not json").expect_err("must fail");
        assert_eq!(e.kind(), ErrorKind::Stream);
    }

    fn stream_of(kind: ExecutionKind, text: &'static str, split: usize) -> EventStream {
        let chunks: Vec<std::result::Result<Bytes, std::io::Error>> = text
            .as_bytes()
            .chunks(split)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        EventStream::from_bytes("test", kind, futures_util::stream::iter(chunks))
    }

    const OK: &str = "{\"type\":\"init\",\"text\":\"id1\",\"timestamp\":1}\n\n{\"type\":\"ping\",\"text\":\"pong\"}\n\n{\"type\":\"stdout\",\"text\":\"hello\",\"timestamp\":2}\n\n{\"type\":\"stderr\",\"text\":\"warn\",\"timestamp\":3}\n\n{\"type\":\"execution_complete\",\"execution_time\":5,\"timestamp\":4}\n\n{\"type\":\"ping\",\"text\":\"pong\"}\n\n";

    #[tokio::test]
    async fn command_success_builds_execution_with_exit_zero() {
        for split in [1, 7, 4096] {
            let ex = collect_execution(stream_of(ExecutionKind::Command, OK, split), &mut ())
                .await
                .expect("run");
            assert_eq!(ex.id.as_deref(), Some("id1"));
            assert_eq!(ex.logs.stdout[0].text, "hello");
            assert!(ex.logs.stderr[0].is_error);
            assert_eq!(ex.exit_code, Some(0));
            assert_eq!(ex.complete.as_ref().map(|c| c.execution_time_ms), Some(5));
        }
    }

    #[tokio::test]
    async fn command_error_is_terminal_and_sets_exit_code() {
        let s = "{\"type\":\"init\",\"text\":\"x\"}\n\n{\"type\":\"error\",\"error\":{\"ename\":\"CommandExecError\",\"evalue\":\"3\",\"traceback\":[\"exit status 3\"]}}\n\n{\"type\":\"execution_complete\"}\n\n";
        let ex = collect_execution(stream_of(ExecutionKind::Command, s, 5), &mut ())
            .await
            .expect("run");
        assert_eq!(ex.exit_code, Some(3));
        assert!(
            ex.complete.is_none(),
            "complete after error must not be read"
        );
        let s = "{\"type\":\"init\",\"text\":\"x\"}\n\n{\"type\":\"error\",\"error\":{\"ename\":\"E\",\"evalue\":\"fork failed\",\"traceback\":[]}}\n\n";
        let ex = collect_execution(stream_of(ExecutionKind::Command, s, 5), &mut ())
            .await
            .expect("run");
        assert_eq!(ex.exit_code, None);
    }

    #[tokio::test]
    async fn code_error_may_be_followed_by_complete_and_has_no_exit_code() {
        let s = "{\"type\":\"init\",\"text\":\"ctx\"}\n\n{\"type\":\"status\",\"text\":\"error\"}\n\n{\"type\":\"error\",\"error\":{\"ename\":\"ZeroDivisionError\",\"evalue\":\"division by zero\",\"traceback\":[]}}\n\n{\"type\":\"execution_complete\",\"execution_time\":12}\n\n";
        let ex = collect_execution(stream_of(ExecutionKind::Code, s, 3), &mut ())
            .await
            .expect("run");
        assert!(ex.error.is_some() && ex.complete.is_some());
        assert_eq!(ex.exit_code, None);
        let s_no_complete = "{\"type\":\"init\",\"text\":\"ctx\"}\n\n{\"type\":\"error\",\"error\":{\"ename\":\"E\",\"evalue\":\"v\"}}\n\n";
        let ex = collect_execution(stream_of(ExecutionKind::Code, s_no_complete, 3), &mut ())
            .await
            .expect("run");
        assert!(ex.error.is_some());
    }

    #[tokio::test]
    async fn stream_without_terminal_event_is_an_error() {
        let s =
            "{\"type\":\"init\",\"text\":\"x\"}\n\n{\"type\":\"stdout\",\"text\":\"partial\"}\n\n";
        let err = collect_execution(stream_of(ExecutionKind::Command, s, 4), &mut ())
            .await
            .expect_err("must fail");
        assert_eq!(err.kind(), ErrorKind::Stream);
        assert!(err.message().contains("terminal"));
    }

    #[tokio::test]
    async fn in_band_error_frame_fails_the_stream() {
        let s = "{\"type\":\"init\",\"text\":\"x\"}\n\n{\"code\":\"RUNTIME_ERROR\",\"message\":\"session is busy\"}\n\n";
        let mut st = stream_of(ExecutionKind::Code, s, 64);
        assert!(matches!(
            st.next().await,
            Some(Ok(ServerEvent::Init { .. }))
        ));
        let err = st.next().await.expect("item").expect_err("error");
        assert_eq!(err.code(), Some("RUNTIME_ERROR"));
        assert!(st.next().await.is_none());
    }

    #[tokio::test]
    async fn observe_folds_like_apply() {
        for skip in [false, true] {
            let events: Vec<ServerEvent> = stream_of(ExecutionKind::Command, OK, 11)
                .map(|r| r.expect("event"))
                .collect()
                .await;
            let mut by_value =
                ExecutionBuilder::new(ExecutionKind::Command).skip_accumulation(skip);
            let mut by_ref = ExecutionBuilder::new(ExecutionKind::Command).skip_accumulation(skip);
            for ev in &events {
                by_ref.observe(ev, &mut ()).expect("observe");
                by_value.apply(ev.clone(), &mut ()).expect("apply");
            }
            let (a, b) = (by_value.finish(), by_ref.finish());
            assert_eq!(a, b);
            assert_eq!(b.exit_code, Some(0));
            assert_eq!(b.logs.stdout.len(), usize::from(!skip));
        }
    }

    #[tokio::test]
    async fn handlers_see_events_in_order_and_can_abort() {
        #[derive(Default)]
        struct Rec(Vec<String>, bool);
        impl ExecutionHandlers for Rec {
            fn on_init(&mut self, id: &str, _: i64) -> Result<()> {
                self.0.push(format!("init:{id}"));
                Ok(())
            }
            fn on_stdout(&mut self, m: &OutputMessage) -> Result<()> {
                self.0.push(format!("out:{}", m.text));
                if self.1 {
                    return Err(Error::new(ErrorKind::Cancelled, "handler", "stop"));
                }
                Ok(())
            }
            fn on_stderr(&mut self, m: &OutputMessage) -> Result<()> {
                self.0.push(format!("err:{}", m.text));
                Ok(())
            }
            fn on_execution_complete(&mut self, _: &ExecutionComplete) -> Result<()> {
                self.0.push("complete".into());
                Ok(())
            }
            fn skip_accumulation(&self) -> bool {
                true
            }
        }
        let mut rec = Rec::default();
        let ex = collect_execution(stream_of(ExecutionKind::Command, OK, 9), &mut rec)
            .await
            .expect("run");
        assert_eq!(rec.0, ["init:id1", "out:hello", "err:warn", "complete"]);
        assert!(
            ex.logs.stdout.is_empty(),
            "skip_accumulation keeps logs empty"
        );
        let mut rec = Rec(Vec::new(), true);
        let err = collect_execution(stream_of(ExecutionKind::Command, OK, 9), &mut rec)
            .await
            .expect_err("abort");
        assert_eq!(err.kind(), ErrorKind::Cancelled);
    }
}
