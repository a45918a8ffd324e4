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
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: BytesMut,
    /// Bytes of `buf` already known to hold no newline, so each byte is scanned once.
    scanned: usize,
}

impl FrameDecoder {
    /// A new, empty decoder.
    pub fn new() -> Self {
        FrameDecoder::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Bytes buffered but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next complete frame's payload, skipping blank and non-data lines.
    /// `Err` when a single line exceeds [`MAX_FRAME_BYTES`].
    pub fn next_frame(&mut self) -> std::result::Result<Option<Bytes>, usize> {
        loop {
            let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                if self.buf.len() > MAX_FRAME_BYTES {
                    return Err(self.buf.len());
                }
                return Ok(None);
            };
            let line = self.buf.split_to(self.scanned + pos + 1).freeze();
            self.scanned = 0;
            if let Some(payload) = payload_of(line) {
                return Ok(Some(payload));
            }
        }
    }

    /// At end of input: the unterminated last line, if it carries data.
    pub fn finish(&mut self) -> Option<Bytes> {
        self.scanned = 0;
        let rest = std::mem::take(&mut self.buf).freeze();
        payload_of(rest)
    }
}

/// The data carried by one line, or `None` for lines that carry none.
fn payload_of(mut line: Bytes) -> Option<Bytes> {
    while matches!(line.last(), Some(b'\n' | b'\r')) {
        line.truncate(line.len() - 1);
    }
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    line.advance(start);
    if line.is_empty() || line[0] == b':' {
        return None;
    }
    if line.starts_with(b"data:") {
        line.advance(5);
        if line.first() == Some(&b' ') {
            line.advance(1);
        }
        return (!line.iter().all(u8::is_ascii_whitespace)).then_some(line);
    }
    if line.starts_with(b"event:") || line.starts_with(b"id:") || line.starts_with(b"retry:") {
        return None;
    }
    Some(line)
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
            match self.decoder.next_frame() {
                Ok(Some(frame)) => match parse_event(self.op, &frame) {
                    Ok(Some(ev)) => return Some(Ok(self.accept(ev))),
                    Ok(None) => continue,
                    Err(e) => {
                        self.finish();
                        return Some(Err(self.err(e)));
                    }
                },
                Ok(None) => return None,
                Err(len) => {
                    self.finish();
                    return Some(Err(self.err(Error::stream(
                        self.op,
                        format!("event frame larger than {MAX_FRAME_BYTES} bytes ({len} buffered)"),
                    ))));
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
                Poll::Ready(Some(Ok(chunk))) => this.decoder.push(&chunk),
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

impl Drop for EventStream {
    fn drop(&mut self) {
        if let (Some(hook), Some(id)) = (self.on_drop.take(), self.execution_id.take()) {
            hook(id);
        }
    }
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
    /// stdout lines joined with `\n`, then result texts (the Python SDK's `.text`).
    pub fn text(&self) -> String {
        let mut parts: Vec<&str> = self.logs.stdout.iter().map(|m| m.text.as_str()).collect();
        parts.extend(self.result.iter().filter_map(|r| r.text.as_deref()));
        parts.join("\n")
    }
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

    #[test]
    fn framer_handles_every_split_and_framing() {
        let input = b": comment\r\n\r\n{\"a\":1}\n\ndata: {\"b\":2}\r\n\r\nevent: x\nid: 3\nretry: 5\ndata:{\"c\":3}\n\n  \n{\"d\":4}";
        for split in 1..input.len() + 1 {
            let got = frames(input, split);
            assert_eq!(got.len(), 4, "split {split}: {got:?}");
            assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}", "{\"d\":4}"]);
        }
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
