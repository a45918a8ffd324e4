//! Execution events as JSON, the recorder of a run made to completion, and pull-based
//! runs: `commands.start` / `code.start` / `commands.start_in_session` spawn the run on
//! the calling runtime and return a handle; the host pulls already-arrived events with
//! `execution.next_batch` (one call per batch, on a thread of its choosing, so user
//! handlers never run on a runtime worker) or waits for the outcome with
//! `execution.wait`. The last item of a run is `{"type": "end", ...}` with the outcome
//! folded by the core's `ExecutionBuilder` (exit code, execution count, error,
//! completion): hosts never re-derive it.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use opensandbox_core::{
    EventStream, Execution, ExecutionBuilder, ExecutionComplete, ExecutionError, ExecutionHandlers,
    ExecutionResult, OutputMessage, ServerEvent,
};
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::convert;
use crate::error::{OpError, OpResult};
use crate::recorder::Recorder;

/// Capacity of a started run's queue, in batches: a run whose events are not pulled
/// pauses (the connection applies backpressure to the server) instead of buffering
/// without bound. Each batch holds what one read of the connection brought, at most
/// [`BATCH_ITEMS`] items or about [`BATCH_BYTES`] of output.
pub const QUEUE: usize = 16;

/// Most items the pump puts in one queued batch.
pub const BATCH_ITEMS: usize = 4096;

/// Output text after which the pump queues its batch (a bound on memory, not a target:
/// a batch goes as soon as the connection has nothing more ready).
pub const BATCH_BYTES: usize = 1024 * 1024;

/// Default and largest `max` of `execution.next_batch`.
pub const DEFAULT_BATCH: usize = 256;

/// How long a start waits for the `init` event.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// One pulled item of a run, as queued: output lines stay typed (no JSON tree per line)
/// until a host converts them, every other item is its §5 JSON object.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `{"type": "stdout"|"stderr", "text", "timestamp"}`.
    Output {
        stderr: bool,
        text: String,
        timestamp: i64,
    },
    /// Any other item (init, result, error, completion, status, count, metrics, end).
    Json(Value),
}

impl Item {
    /// The item as its §5 JSON object.
    pub fn into_json(self) -> Value {
        match self {
            Item::Output {
                stderr,
                text,
                timestamp,
            } => json!({"type": if stderr { "stderr" } else { "stdout" }, "text": text,
                        "timestamp": timestamp}),
            Item::Json(v) => v,
        }
    }

    /// True for the run's last item.
    pub fn is_end(&self) -> bool {
        matches!(self, Item::Json(v) if v["type"] == "end")
    }

    /// Bytes of output text this item holds (what bounds a queued batch).
    fn weight(&self) -> usize {
        match self {
            Item::Output { text, .. } => text.len(),
            Item::Json(_) => 64,
        }
    }
}

impl serde::Serialize for Item {
    /// The §5 JSON object, written without building a tree first.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Item::Output {
                stderr,
                text,
                timestamp,
            } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("type", if *stderr { "stderr" } else { "stdout" })?;
                m.serialize_entry("text", text)?;
                m.serialize_entry("timestamp", timestamp)?;
                m.end()
            }
            Item::Json(v) => v.serialize(s),
        }
    }
}

/// One answer of `execution.next_batch`: the items and whether the run's end is among
/// them (or was already pulled).
#[derive(Debug, Default, serde::Serialize)]
pub struct Batch {
    pub events: Vec<Item>,
    pub done: bool,
}

impl Batch {
    /// `{"events": [...], "done"}`.
    pub fn into_json(self) -> Value {
        let events: Vec<Value> = self.events.into_iter().map(Item::into_json).collect();
        json!({"events": events, "done": self.done})
    }

    /// The batch in the binary layout hosts decode without a JSON parser (the C ABI's
    /// `osb_session_next_items_blocking`, bindings/ffi/API.md §4; the JNI library's
    /// `nextEvents`). Integers are little-endian:
    ///
    /// ```text
    /// u8 done (1 when the run's end item is in this batch or was pulled before)
    /// then per item, in order:
    ///   u8  kind       0 = JSON object, 1 = stdout line, 2 = stderr line
    ///   i64 timestamp  (milliseconds; 0 for kind 0)
    ///   u32 length     of the bytes that follow
    ///   [length] UTF-8 text (kinds 1, 2) or the item's JSON object (kind 0)
    /// ```
    ///
    /// One buffer crosses the boundary per batch, and output lines (nearly every item
    /// of a fast run) are sliced out of it as the host's strings.
    ///
    /// # Errors
    /// `internal` for an item of 4 GiB or more.
    pub fn encode(&self, op: &str) -> Result<Vec<u8>, OpError> {
        let text: usize = self.events.iter().map(Item::weight).sum();
        let mut out = Vec::with_capacity(1 + self.events.len() * ENCODED_HEADER + text);
        out.push(u8::from(self.done));
        for item in &self.events {
            match item {
                Item::Output {
                    stderr,
                    text,
                    timestamp,
                } => {
                    let kind = if *stderr { KIND_STDERR } else { KIND_STDOUT };
                    out.push(kind);
                    out.extend_from_slice(&timestamp.to_le_bytes());
                    out.extend_from_slice(&len_u32(op, text.len())?.to_le_bytes());
                    out.extend_from_slice(text.as_bytes());
                }
                Item::Json(v) => {
                    out.push(KIND_JSON);
                    out.extend_from_slice(&0i64.to_le_bytes());
                    let at = out.len();
                    out.extend_from_slice(&[0; 4]);
                    serde_json::to_writer(&mut out, v).map_err(|e| {
                        OpError::internal(op, format!("cannot encode an item: {e}"))
                    })?;
                    let len = len_u32(op, out.len() - at - 4)?;
                    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
                }
            }
        }
        Ok(out)
    }
}

/// Item kinds of [`Batch::encode`].
pub const KIND_JSON: u8 = 0;
pub const KIND_STDOUT: u8 = 1;
pub const KIND_STDERR: u8 = 2;

/// Bytes before each item's text in [`Batch::encode`].
const ENCODED_HEADER: usize = 1 + 8 + 4;

fn len_u32(op: &str, n: usize) -> Result<u32, OpError> {
    u32::try_from(n).map_err(|_| OpError::internal(op, "an item is larger than 4 GiB"))
}

pub fn init_event(id: &str, timestamp: i64) -> Value {
    json!({"type": "init", "id": id, "timestamp": timestamp})
}

pub fn output_event(kind: &str, m: &OutputMessage) -> Value {
    json!({"type": kind, "text": m.text, "timestamp": m.timestamp})
}

pub fn result_event(r: &ExecutionResult) -> Value {
    json!({"type": "result", "text": r.text, "timestamp": r.timestamp, "raw": r.raw})
}

pub fn error_event(e: &ExecutionError) -> Value {
    json!({"type": "error", "name": e.name, "value": e.value, "traceback": e.traceback,
           "timestamp": e.timestamp})
}

pub fn complete_event(c: &ExecutionComplete) -> Value {
    json!({"type": "execution_complete", "execution_time_ms": c.execution_time_ms,
           "timestamp": c.timestamp})
}

/// The final item of a run: `{"type": "end", "ok": true, "execution": Execution}` or
/// `{"type": "end", "ok": false, "error": <error payload>}`.
pub fn end_item(outcome: &Result<Execution, OpError>, extra: Map<String, Value>) -> Value {
    match outcome {
        Ok(ex) => json!({"type": "end", "ok": true, "execution": convert::execution(ex, extra)}),
        Err(e) => json!({"type": "end", "ok": false, "error": e.to_json()}),
    }
}

/// Collects the handler calls of one event as items.
#[derive(Default)]
struct Sink {
    events: Vec<Item>,
    init: Option<oneshot::Sender<String>>,
}

impl ExecutionHandlers for Sink {
    fn on_init(&mut self, id: &str, ts: i64) -> opensandbox_core::Result<()> {
        if let Some(tx) = self.init.take() {
            // The receiver is gone only when the start already gave up.
            let _ = tx.send(id.to_owned());
        }
        self.events.push(Item::Json(init_event(id, ts)));
        Ok(())
    }
    fn on_stdout(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
        self.events.push(output_item(false, m));
        Ok(())
    }
    fn on_stderr(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
        self.events.push(output_item(true, m));
        Ok(())
    }
    fn on_result(&mut self, r: &ExecutionResult) -> opensandbox_core::Result<()> {
        self.events.push(Item::Json(result_event(r)));
        Ok(())
    }
    fn on_execution_complete(&mut self, c: &ExecutionComplete) -> opensandbox_core::Result<()> {
        self.events.push(Item::Json(complete_event(c)));
        Ok(())
    }
    fn on_error(&mut self, e: &ExecutionError) -> opensandbox_core::Result<()> {
        self.events.push(Item::Json(error_event(e)));
        Ok(())
    }
}

fn output_item(stderr: bool, m: &OutputMessage) -> Item {
    Item::Output {
        stderr,
        text: m.text.clone(),
        timestamp: m.timestamp,
    }
}

/// Items on their way to the run's queue, sent as one batch.
struct Outbox {
    tx: mpsc::Sender<Vec<Item>>,
    batch: Vec<Item>,
    bytes: usize,
}

impl Outbox {
    fn new(tx: mpsc::Sender<Vec<Item>>) -> Self {
        Outbox {
            tx,
            batch: Vec::new(),
            bytes: 0,
        }
    }

    fn push(&mut self, item: Item) {
        self.bytes += item.weight();
        self.batch.push(item);
    }

    fn full(&self) -> bool {
        self.batch.len() >= BATCH_ITEMS || self.bytes >= BATCH_BYTES
    }

    /// Queues the batch (waiting while the queue is full); `false` once the host
    /// released the run.
    async fn flush(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        self.bytes = 0;
        let batch = std::mem::take(&mut self.batch);
        self.tx.send(batch).await.is_ok()
    }
}

/// Drives `stream` to its end, folding with the core's `ExecutionBuilder`, queueing
/// events (when `events`) and then the end item on `tx`. Events that are already
/// parsed when one arrives go out in the same batch: a fast stream costs one queue
/// send per network read, not one per line.
async fn pump(
    stream: EventStream,
    skip: bool,
    events: bool,
    init: oneshot::Sender<String>,
    tx: mpsc::Sender<Vec<Item>>,
) {
    let mut stream = stream;
    let mut builder = ExecutionBuilder::new(stream.kind()).skip_accumulation(skip);
    let mut sink = Sink {
        events: Vec::new(),
        init: Some(init),
    };
    let mut out = Outbox::new(tx);
    let released = || OpError::new("cancelled", "execution", "the run was released");
    let outcome: Result<Execution, OpError> = async {
        loop {
            // Wait only with nothing in hand; otherwise take what is ready and queue
            // the batch as soon as the stream would wait.
            let next = if out.batch.is_empty() {
                stream.next().await
            } else {
                match stream.next().now_or_never() {
                    Some(next) => next,
                    None => {
                        if !out.flush().await {
                            return Err(released());
                        }
                        continue;
                    }
                }
            };
            let Some(ev) = next else { break };
            let ev = ev?;
            match ev {
                // Output of a run that keeps none: the line moves into its item, no copy.
                ServerEvent::Stdout(m) | ServerEvent::Stderr(m) if skip && events => {
                    let stderr = m.is_error;
                    out.push(Item::Output {
                        stderr,
                        text: m.text,
                        timestamp: m.timestamp,
                    });
                }
                ev => {
                    // No handler of the core sees these two (they fold into nothing but
                    // the execution count): hosts with a raw-event API still get them.
                    match &ev {
                        ServerEvent::Status { text, timestamp } => sink.events.push(Item::Json(
                            json!({"type": "status", "text": text, "timestamp": timestamp}),
                        )),
                        ServerEvent::ExecutionCount { count, timestamp } => sink
                            .events
                            .push(Item::Json(json!({"type": "execution_count",
                                "count": count, "timestamp": timestamp}))),
                        _ => {}
                    }
                    builder.observe(&ev, &mut sink)?;
                    for e in sink.events.drain(..) {
                        if events {
                            out.push(e);
                        }
                    }
                }
            }
            if out.full() && !out.flush().await {
                return Err(released());
            }
        }
        Ok(builder.finish())
    }
    .await;
    drop(stream);
    if out.flush().await {
        out.push(Item::Json(end_item(&outcome, Map::new())));
        out.flush().await;
    }
}

/// Aborts the spawned task when dropped, unless [`AbortOnDrop::disarm`]ed.
struct AbortOnDrop(Option<JoinHandle<()>>);

impl AbortOnDrop {
    /// Hands the task over (it then runs on when dropped).
    fn disarm(&mut self) -> Option<JoinHandle<()>> {
        self.0.take()
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            t.abort();
        }
    }
}

/// A started run, referred to by handle.
pub struct Run {
    /// The execution id (from `init`).
    pub id: String,
    rx: tokio::sync::Mutex<RunRx>,
    task: Mutex<Option<JoinHandle<()>>>,
    /// `handlers` of the start: `execution.wait` then reports the unpulled events.
    events: bool,
}

struct RunRx {
    rx: mpsc::Receiver<Vec<Item>>,
    /// The rest of a queued batch that a smaller `max` left.
    pending: VecDeque<Item>,
    ended: bool,
}

impl RunRx {
    fn new(rx: mpsc::Receiver<Vec<Item>>) -> Self {
        RunRx {
            rx,
            pending: VecDeque::new(),
            ended: false,
        }
    }
}

impl Run {
    /// Spawns the run of `open` (which opens the event stream) on the current runtime
    /// and returns once `init` arrived; a run that fails before reports its error.
    pub async fn start<F>(open: F, skip: bool, events: bool) -> Result<Run, OpError>
    where
        F: std::future::Future<Output = opensandbox_core::Result<EventStream>> + Send + 'static,
    {
        let (tx, mut rx) = mpsc::channel(QUEUE);
        let (init_tx, init_rx) = oneshot::channel();
        let err_tx = tx.clone();
        // Aborts the run if this future is dropped before `init` (e.g. a host's
        // timeout or cancelled promise): nobody could ever pull or cancel it.
        let mut task = AbortOnDrop(Some(tokio::spawn(async move {
            match open.await {
                Ok(stream) => pump(stream, skip, events, init_tx, tx).await,
                Err(e) => {
                    let end = Item::Json(end_item(&Err(e.into()), Map::new()));
                    let _ = err_tx.send(vec![end]).await;
                }
            }
        })));
        match tokio::time::timeout(START_TIMEOUT, init_rx).await {
            Ok(Ok(id)) => Ok(Run {
                id,
                rx: tokio::sync::Mutex::new(RunRx::new(rx)),
                task: Mutex::new(task.disarm()),
                events,
            }),
            Ok(Err(_)) => {
                // Ended before init: its end item carries why.
                let end = rx.recv().await;
                if let Some(t) = task.0.as_mut() {
                    let _ = t.await;
                }
                let mut items = end.into_iter().flatten().collect::<Vec<_>>();
                while let Ok(v) = rx.try_recv() {
                    items.extend(v);
                }
                let end = items.into_iter().rev().find(Item::is_end);
                match end.map(Item::into_json) {
                    Some(v) if v["ok"] == false => Err(failure(&v["error"])),
                    _ => Err(OpError::new(
                        "stream",
                        "execution.start",
                        "the run ended without an init event",
                    )),
                }
            }
            Err(_) => {
                drop(task); // aborts
                Err(OpError::new(
                    "timeout",
                    "execution.start",
                    format!("no init event within {START_TIMEOUT:?}"),
                ))
            }
        }
    }

    /// A pulled stream of plain items (`metrics.start`): each item of `stream` as it
    /// arrives, then `{"type": "end", "ok": true, "execution": null}` (or `ok: false`
    /// with the stream's error). Must be called inside the runtime (it spawns).
    pub fn items<S>(stream: S) -> Run
    where
        S: futures_util::Stream<Item = Result<Value, OpError>> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(QUEUE);
        let task = tokio::spawn(async move {
            let mut stream = Box::pin(stream);
            let outcome = loop {
                match stream.next().await {
                    Some(Ok(v)) => {
                        if tx.send(vec![Item::Json(v)]).await.is_err() {
                            // Released: nobody pulls any more.
                            return;
                        }
                    }
                    Some(Err(e)) => break Err(e),
                    None => break Ok(()),
                }
            };
            drop(stream);
            let end = match outcome {
                Ok(()) => json!({"type": "end", "ok": true, "execution": null}),
                Err(e) => json!({"type": "end", "ok": false, "error": e.to_json()}),
            };
            let _ = tx.send(vec![Item::Json(end)]).await;
        });
        Run {
            id: String::new(),
            rx: tokio::sync::Mutex::new(RunRx::new(rx)),
            task: Mutex::new(Some(task)),
            events: true,
        }
    }

    /// Stops the run: the stream is dropped (closing the connection) at once.
    pub fn cancel(&self) {
        if let Some(t) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            t.abort();
        }
    }

    /// Up to `max` already-arrived items, waiting up to `wait` (None = until one
    /// arrives) for the first. `done` once the end item was returned.
    pub async fn next_batch(&self, max: usize, wait: Option<Duration>) -> Value {
        self.next_items(max, wait).await.into_json()
    }

    /// [`Run::next_batch`] with the items as they were queued, for hosts that convert
    /// them to their own values without a JSON tree.
    pub async fn next_items(&self, max: usize, wait: Option<Duration>) -> Batch {
        let mut g = self.rx.lock().await;
        let g = &mut *g;
        let max = max.max(1);
        let mut items = Vec::new();
        if g.ended {
            return Batch {
                events: items,
                done: true,
            };
        }
        let cancelled = || {
            Item::Json(json!({"type": "end", "ok": false,
                   "error": OpError::new("cancelled", "execution.next_batch", "the run was cancelled").to_json()}))
        };
        if g.pending.is_empty() {
            let first = match wait {
                None => g.rx.recv().await,
                Some(d) if d.is_zero() => g.rx.try_recv().ok(),
                Some(d) => tokio::time::timeout(d, g.rx.recv()).await.ok().flatten(),
            };
            match first {
                Some(batch) => g.pending.extend(batch),
                None if wait.is_none() || g.rx.is_closed() => g.pending.push_back(cancelled()),
                None => {}
            }
        }
        loop {
            while items.len() < max {
                let Some(item) = g.pending.pop_front() else {
                    break;
                };
                let end = item.is_end();
                items.push(item);
                if end {
                    g.pending.clear();
                    g.ended = true;
                    return Batch {
                        events: items,
                        done: true,
                    };
                }
            }
            if items.len() >= max || items.is_empty() {
                break;
            }
            match g.rx.try_recv() {
                Ok(batch) => g.pending.extend(batch),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => g.pending.push_back(cancelled()),
            }
        }
        Batch {
            events: items,
            done: false,
        }
    }

    /// Pulls everything to the end: the Execution (with `events`, the items not pulled
    /// before, when the run was started with `handlers`), or the run's error.
    pub async fn wait(&self) -> OpResult {
        let mut events = Vec::new();
        loop {
            let batch = self.next_items(BATCH_ITEMS, None).await;
            for item in batch.events {
                if item.is_end() {
                    return finish(item.into_json(), events, self.events);
                }
                if self.events {
                    events.push(item.into_json());
                }
            }
            if batch.done {
                break;
            }
        }
        Err(OpError::invalid(
            "execution.wait",
            "execution.wait: the run's outcome was already pulled",
        ))
    }
}

/// An error payload (from an end item) back as an [`OpError`].
pub fn failure(v: &Value) -> OpError {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    OpError(Box::new(crate::error::ErrorPayload {
        kind: s("kind").unwrap_or_else(|| "internal".into()),
        status: v
            .get("status")
            .and_then(Value::as_u64)
            .and_then(|x| u16::try_from(x).ok()),
        code: s("code"),
        message: s("message").unwrap_or_default(),
        request_id: s("request_id"),
        operation: s("operation"),
        body: s("body"),
    }))
}

fn finish(end: Value, events: Vec<Value>, with_events: bool) -> OpResult {
    if end["ok"] != true {
        return Err(failure(&end["error"]));
    }
    let mut ex = end.get("execution").cloned().unwrap_or(Value::Null);
    if with_events {
        if let Value::Object(m) = &mut ex {
            m.insert("events".into(), Value::Array(events));
        }
    }
    Ok(ex)
}

impl crate::session::Session {
    /// `execution.next_batch` of run `handle` with its items as queued (output lines
    /// typed, the rest as JSON objects): for hosts that build their own objects
    /// without a JSON tree per event.
    ///
    /// # Errors
    /// `invalid_argument` for a handle that is not a run.
    pub async fn next_items(
        &self,
        handle: u64,
        max: usize,
        wait: Option<Duration>,
    ) -> Result<Batch, OpError> {
        let run = self.run("execution.next_batch", handle)?;
        Ok(run.next_items(max, wait).await)
    }
}

/// Runs a stream to completion in the calling task with `recorder` (events, digest).
pub async fn run_to_end(
    stream: EventStream,
    recorder: &mut Recorder,
) -> Result<Execution, OpError> {
    Ok(opensandbox_core::stream::collect_execution(stream, recorder).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use opensandbox_core::ExecutionKind;

    fn body(lines: &[&str]) -> EventStream {
        let text = lines.join("\n\n") + "\n\n";
        let chunks = vec![Ok::<_, std::io::Error>(Bytes::from(text))];
        EventStream::from_bytes(
            "commands.run",
            ExecutionKind::Command,
            futures_util::stream::iter(chunks),
        )
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn item_streams_end_with_an_end_item_and_report_errors() {
        rt().block_on(async {
            let ok = futures_util::stream::iter(vec![Ok(json!({"type": "metrics", "n": 1}))]);
            let run = Run::items(ok);
            let b = run.next_batch(10, None).await;
            let mut items = b["events"].as_array().cloned().unwrap_or_default();
            if b["done"] != true {
                let more = run.next_batch(10, None).await;
                items.extend(more["events"].as_array().cloned().unwrap_or_default());
            }
            assert_eq!(items[0]["n"], 1);
            assert_eq!(items.last().unwrap()["type"], "end");
            assert_eq!(items.last().unwrap()["ok"], true);

            let bad = futures_util::stream::iter(vec![Err(OpError::new("stream", "m", "cut"))]);
            let run = Run::items(bad);
            let b = run.next_batch(10, None).await;
            assert_eq!(b["events"][0]["ok"], false);
            assert_eq!(b["events"][0]["error"]["kind"], "stream");
            assert_eq!(b["done"], true);
        });
    }

    const FAILED: &[&str] = &[
        r#"{"type":"init","text":"ex-1","timestamp":1}"#,
        r#"{"type":"stdout","text":"hi","timestamp":2}"#,
        r#"{"type":"stderr","text":"oops","timestamp":3}"#,
        r#"{"type":"error","error":{"ename":"CommandExecError","evalue":"3","traceback":[]},"timestamp":4}"#,
    ];

    #[test]
    fn encoded_batches_carry_lines_and_other_items() {
        let b = Batch {
            events: vec![
                Item::Output {
                    stderr: false,
                    text: "hé".into(),
                    timestamp: 7,
                },
                Item::Output {
                    stderr: true,
                    text: String::new(),
                    timestamp: -1,
                },
                Item::Json(json!({"type": "end", "ok": true})),
            ],
            done: true,
        };
        let e = b.encode("t").unwrap();
        let mut want = vec![1u8];
        want.extend([KIND_STDOUT]);
        want.extend(7i64.to_le_bytes());
        want.extend(3u32.to_le_bytes());
        want.extend("hé".as_bytes());
        want.extend([KIND_STDERR]);
        want.extend((-1i64).to_le_bytes());
        want.extend(0u32.to_le_bytes());
        let j = br#"{"ok":true,"type":"end"}"#;
        want.extend([KIND_JSON]);
        want.extend(0i64.to_le_bytes());
        want.extend(u32::try_from(j.len()).unwrap().to_le_bytes());
        want.extend(j);
        assert_eq!(e, want);
        assert_eq!(Batch::default().encode("t").unwrap(), vec![0]);
    }

    #[test]
    fn batches_end_with_the_folded_outcome() {
        rt().block_on(async {
            let run = Run::start(async { Ok(body(FAILED)) }, false, true)
                .await
                .unwrap();
            assert_eq!(run.id, "ex-1");
            let mut all = Vec::new();
            loop {
                let b = run.next_batch(2, None).await;
                assert!(b["events"].as_array().unwrap().len() <= 2);
                all.extend(b["events"].as_array().unwrap().iter().cloned());
                if b["done"] == true {
                    break;
                }
            }
            let types: Vec<&str> = all.iter().filter_map(|e| e["type"].as_str()).collect();
            assert_eq!(types, ["init", "stdout", "stderr", "error", "end"]);
            let end = all.last().unwrap();
            assert_eq!(end["ok"], true);
            // exit code folded by the core: int(error.value) for a failed command.
            assert_eq!(end["execution"]["exit_code"], 3);
            assert_eq!(end["execution"]["stdout"], json!(["hi"]));
            assert_eq!(end["execution"]["error"]["value"], "3");
            assert_eq!(end["execution"]["complete"], Value::Null);
            // Past the end: empty and done.
            let b = run.next_batch(10, Some(Duration::ZERO)).await;
            assert_eq!(b, json!({"events": [], "done": true}));
        });
    }

    #[test]
    fn wait_returns_the_execution_with_unpulled_events() {
        rt().block_on(async {
            let ok = [
                r#"{"type":"init","text":"ex-2","timestamp":1}"#,
                r#"{"type":"stdout","text":"a","timestamp":2}"#,
                r#"{"type":"execution_complete","execution_time":5,"timestamp":3}"#,
            ];
            let run = Run::start(async move { Ok(body(&ok)) }, true, true)
                .await
                .unwrap();
            let ex = run.wait().await.unwrap();
            assert_eq!(ex["exit_code"], 0);
            assert_eq!(ex["complete"]["execution_time_ms"], 5);
            // skip_accumulation: no stdout kept, but the event was delivered.
            assert_eq!(ex["stdout"], json!([]));
            let types: Vec<&str> = ex["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["type"].as_str())
                .collect();
            assert_eq!(types, ["init", "stdout", "execution_complete"]);
            assert!(run.wait().await.is_err());
        });
    }

    #[test]
    fn a_run_failing_before_init_reports_its_error() {
        rt().block_on(async {
            let e = Run::start(
                async {
                    Err(opensandbox_core::Error::new(
                        opensandbox_core::ErrorKind::NotFound,
                        "commands.run",
                        "no such sandbox",
                    ))
                },
                false,
                false,
            )
            .await
            .err()
            .unwrap();
            assert_eq!(e.kind, "not_found");
        });
    }

    #[test]
    fn dropping_a_start_before_init_aborts_the_run() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        struct Flag(Arc<AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        rt().block_on(async {
            let dropped = Arc::new(AtomicBool::new(false));
            let flag = Flag(dropped.clone());
            // A run whose stream never opens (so no init ever arrives).
            let open = async move {
                let _flag = flag;
                std::future::pending::<opensandbox_core::Result<EventStream>>().await
            };
            let started =
                tokio::time::timeout(Duration::from_millis(50), Run::start(open, false, false))
                    .await;
            assert!(started.is_err(), "the start must still be waiting for init");
            // The start future is dropped: the spawned task must be aborted (its future,
            // and so the flag, dropped) rather than left running.
            for _ in 0..100 {
                if dropped.load(Ordering::SeqCst) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            assert!(dropped.load(Ordering::SeqCst), "the run kept running");
        });
    }

    #[test]
    fn without_events_only_the_end_item_is_queued() {
        rt().block_on(async {
            let run = Run::start(async { Ok(body(FAILED)) }, false, false)
                .await
                .unwrap();
            let b = run.next_batch(100, None).await;
            assert_eq!(b["done"], true);
            assert_eq!(b["events"].as_array().unwrap().len(), 1);
            assert_eq!(b["events"][0]["execution"]["exit_code"], 3);
        });
    }

    #[test]
    fn cancel_ends_the_run_with_cancelled() {
        rt().block_on(async {
            let init = r#"{"type":"init","text":"ex-3","timestamp":1}"#.to_owned() + "\n\n";
            let body = futures_util::stream::iter(vec![Ok::<_, std::io::Error>(Bytes::from(init))])
                .chain(futures_util::stream::pending());
            let st = EventStream::from_bytes("commands.run", ExecutionKind::Command, body);
            let run = Run::start(async { Ok(st) }, false, true).await.unwrap();
            let b = run.next_batch(10, None).await;
            assert_eq!(b["events"][0]["type"], "init");
            assert_eq!(b["done"], false);
            // Nothing more arrives: a bounded wait returns an empty, unfinished batch.
            let b = run.next_batch(10, Some(Duration::from_millis(20))).await;
            assert_eq!(b, json!({"events": [], "done": false}));
            run.cancel();
            let b = run.next_batch(10, None).await;
            assert_eq!(b["done"], true);
            assert_eq!(b["events"][0]["type"], "end");
            assert_eq!(b["events"][0]["error"]["kind"], "cancelled");
            assert!(run.wait().await.is_err());
        });
    }
}
