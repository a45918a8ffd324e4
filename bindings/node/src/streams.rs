//! Pull-based streams for the JS layer's async iterators (execution events, downloads,
//! metrics) and push-based uploads. Nothing here holds a threadsafe function or a
//! libuv handle, so an idle client never keeps the Node process alive.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use opensandbox_core::execd::BytesStream;
use opensandbox_core::models::{CodeContext, RunCommandOptions};
use opensandbox_core::{
    Error, EventStream, MetricsStream, Result as CoreResult, RunControl, Sandbox, WriteData,
    WriteEntry,
};
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_util::sync::CancellationToken;

use crate::convert::{metrics, parse_args, seconds};
use crate::error::to_napi;

/// Most events handed to JS per `next` call, and most JSON bytes.
const BATCH_EVENTS: usize = 8192;
const BATCH_BYTES: usize = 4 << 20;
/// Downloads hand JS chunks of up to this many bytes.
const CHUNK_BYTES: usize = 4 << 20;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RunArgs {
    command: Option<String>,
    background: bool,
    working_directory: Option<String>,
    timeout_seconds: Option<f64>,
    uid: Option<u32>,
    gid: Option<u32>,
    envs: Option<std::collections::BTreeMap<String, String>>,
    session_id: Option<String>,
    code: Option<String>,
    context: Option<CodeContext>,
    interrupt_on_drop: bool,
}

fn timeout(v: Option<f64>) -> CoreResult<Option<Duration>> {
    v.map(|t| seconds("timeoutSeconds", t)).transpose()
}

/// Opens an event stream of `kind` (`command`, `session`, `code`).
async fn open_events(s: Arc<Sandbox>, kind: &str, args: &str) -> CoreResult<EventStream> {
    let a: RunArgs = parse_args(kind, args)?;
    let control = RunControl {
        deadline: None,
        interrupt_on_drop: a.interrupt_on_drop,
    };
    let x = s.execd();
    let stream = match kind {
        "command" => {
            let opts = RunCommandOptions {
                background: a.background,
                working_directory: a.working_directory,
                timeout: timeout(a.timeout_seconds)?,
                uid: a.uid,
                gid: a.gid,
                envs: a.envs.unwrap_or_default(),
            };
            x.run_command_stream(a.command.as_deref().unwrap_or(""), &opts, control)
                .await?
        }
        "session" => {
            let sid = a.session_id.unwrap_or_default();
            x.run_in_session_stream(
                &sid,
                a.command.as_deref().unwrap_or(""),
                a.working_directory.as_deref(),
                timeout(a.timeout_seconds)?,
                control,
            )
            .await?
        }
        "code" => {
            x.run_code_stream(a.code.as_deref().unwrap_or(""), a.context.as_ref(), control)
                .await?
        }
        other => {
            return Err(Error::invalid_argument(
                "node",
                format!("unknown stream kind {other}"),
            ))
        }
    };
    Ok(stream)
}

/// Batches produced ahead of the consumer: while JS handles one batch, the next ones
/// are read and decoded on the runtime (bounded, so a slow consumer still applies
/// backpressure down to the socket).
const READ_AHEAD: usize = 4;

type Batch<T> = std::result::Result<T, Error>;

/// The consumer side shared by the event and byte streams: `next` pulls the next
/// batch, `close` stops the producer (which drops the stream and so the connection).
struct Feed<T> {
    rx: Arc<Mutex<mpsc::Receiver<Batch<T>>>>,
    cancel: CancellationToken,
}

impl<T: Send + 'static> Feed<T> {
    fn new() -> (Feed<T>, mpsc::Sender<Batch<T>>, CancellationToken) {
        let (tx, rx) = mpsc::channel(READ_AHEAD);
        let cancel = CancellationToken::new();
        (
            Feed {
                rx: Arc::new(Mutex::new(rx)),
                cancel: cancel.clone(),
            },
            tx,
            cancel,
        )
    }

    async fn next(&self) -> Result<Option<T>> {
        let rx = self.rx.clone();
        let mut rx = rx.lock().await;
        match rx.recv().await {
            None => Ok(None),
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(e)) => Err(to_napi(e)),
        }
    }

    fn close(&self) {
        self.cancel.cancel();
    }
}

/// Sends `v` unless the consumer is gone or closed the stream; false = stop.
async fn deliver<T>(tx: &mpsc::Sender<Batch<T>>, cancel: &CancellationToken, v: Batch<T>) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => false,
        r = tx.send(v) => r.is_ok(),
    }
}

/// One batch of events for JS. Output lines (by far the most events) are not JSON:
/// their texts are concatenated in `text` and `meta` holds `[1|2, timestamp, length]`
/// (stdout|stderr, length in UTF-16 units, so JS slices `text`); every other event is
/// its JSON object in `meta`. `last` = the stream ended after this batch.
#[napi(object)]
pub struct EventBatch {
    /// JSON array: `[kind, timestamp, length]` for output, objects for other events.
    pub meta: String,
    /// The output texts, concatenated.
    pub text: String,
    /// No batch follows.
    pub last: bool,
}

struct BatchBuilder {
    meta: String,
    text: String,
    n: usize,
}

impl BatchBuilder {
    fn new() -> Self {
        BatchBuilder {
            meta: String::with_capacity(256),
            text: String::new(),
            n: 0,
        }
    }

    fn full(&self) -> bool {
        self.n >= BATCH_EVENTS || self.meta.len() + self.text.len() >= BATCH_BYTES
    }

    fn push(&mut self, ev: &opensandbox_core::ServerEvent) -> CoreResult<()> {
        use opensandbox_core::ServerEvent;
        use std::fmt::Write as _;
        self.meta.push(if self.n == 0 { '[' } else { ',' });
        self.n += 1;
        match ev {
            ServerEvent::Stdout(m) | ServerEvent::Stderr(m) => {
                let kind = if matches!(ev, ServerEvent::Stdout(_)) {
                    1
                } else {
                    2
                };
                let len = if m.text.is_ascii() {
                    m.text.len()
                } else {
                    m.text.encode_utf16().count()
                };
                self.text.push_str(&m.text);
                let _ = write!(self.meta, "[{kind},{},{len}]", m.timestamp);
            }
            other => {
                let s = serde_json::to_string(other)
                    .map_err(|e| Error::internal("node", format!("encode event: {e}")))?;
                self.meta.push_str(&s);
            }
        }
        Ok(())
    }

    fn finish(mut self, last: bool) -> EventBatch {
        self.meta.push(']');
        EventBatch {
            meta: self.meta,
            text: self.text,
            last,
        }
    }
}

/// Drives an event stream: each batch holds one or more events (all that are decoded
/// when the first one arrives, within limits). An error is delivered after the events
/// before it, and ends the stream.
async fn produce_events(
    mut stream: EventStream,
    tx: mpsc::Sender<Batch<EventBatch>>,
    cancel: CancellationToken,
) {
    loop {
        let first = tokio::select! {
            _ = cancel.cancelled() => return,
            ev = stream.next() => ev,
        };
        let mut batch = BatchBuilder::new();
        let mut after: Option<Error> = None;
        let mut ended = false;
        match first {
            None => return,
            Some(Err(e)) => {
                deliver(&tx, &cancel, Err(e)).await;
                return;
            }
            Some(Ok(ev)) => {
                if let Err(e) = batch.push(&ev) {
                    deliver(&tx, &cancel, Err(e)).await;
                    return;
                }
            }
        }
        while !batch.full() {
            match stream.next().now_or_never() {
                Some(Some(Ok(ev))) => {
                    if let Err(e) = batch.push(&ev) {
                        after = Some(e);
                        break;
                    }
                }
                Some(Some(Err(e))) => {
                    after = Some(e);
                    break;
                }
                Some(None) => {
                    ended = true;
                    break;
                }
                None => break,
            }
        }
        if !deliver(&tx, &cancel, Ok(batch.finish(ended))).await {
            return;
        }
        if let Some(e) = after {
            deliver(&tx, &cancel, Err(e)).await;
            return;
        }
        if ended {
            return;
        }
    }
}

/// Events of one execution, handed to JS in batches.
#[napi]
pub struct NativeEventStream {
    feed: Feed<EventBatch>,
}

impl NativeEventStream {
    /// Starts the request and the producer at once and returns without waiting: an
    /// error opening the stream is what the first `next` reports. (One JS↔runtime
    /// round trip less per run than awaiting the open first.)
    pub fn start(s: Arc<Sandbox>, kind: String, args: String) -> Self {
        let (feed, tx, cancel) = Feed::new();
        napi::bindgen_prelude::spawn(async move {
            let opened = tokio::select! {
                _ = cancel.cancelled() => return,
                r = open_events(s, &kind, &args) => r,
            };
            match opened {
                Ok(stream) => produce_events(stream, tx, cancel).await,
                Err(e) => {
                    deliver(&tx, &cancel, Err(e)).await;
                }
            }
        });
        NativeEventStream { feed }
    }
}

#[napi]
impl NativeEventStream {
    /// The next batch, or `null` at the end. An error ends the stream.
    #[napi]
    pub async fn next(&self) -> Result<Option<EventBatch>> {
        self.feed.next().await
    }

    /// Closes the connection (a pending `next` resolves with `null`).
    #[napi]
    pub fn close(&self) {
        self.feed.close();
    }
}

/// Drives a download: joins the chunks available at once into blocks of up to
/// `CHUNK_BYTES`.
async fn produce_bytes(
    mut stream: BytesStream,
    tx: mpsc::Sender<Batch<Buffer>>,
    cancel: CancellationToken,
) {
    loop {
        let first = tokio::select! {
            _ = cancel.cancelled() => return,
            c = stream.next() => c,
        };
        let first = match first {
            None => return,
            Some(Err(e)) => {
                deliver(&tx, &cancel, Err(e)).await;
                return;
            }
            Some(Ok(c)) => c,
        };
        let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_BYTES.max(first.len()));
        buf.extend_from_slice(&first);
        let mut after: Option<Error> = None;
        let mut ended = false;
        while buf.len() < CHUNK_BYTES {
            match stream.next().now_or_never() {
                Some(Some(Ok(c))) => buf.extend_from_slice(&c),
                Some(Some(Err(e))) => {
                    after = Some(e);
                    break;
                }
                Some(None) => {
                    ended = true;
                    break;
                }
                None => break,
            }
        }
        if !deliver(&tx, &cancel, Ok(Buffer::from(buf))).await {
            return;
        }
        if let Some(e) = after {
            deliver(&tx, &cancel, Err(e)).await;
            return;
        }
        if ended {
            return;
        }
    }
}

/// A download as chunks, read ahead of the consumer.
#[napi]
pub struct NativeByteStream {
    feed: Feed<Buffer>,
}

impl NativeByteStream {
    pub fn new(s: BytesStream) -> Self {
        let (feed, tx, cancel) = Feed::new();
        napi::bindgen_prelude::spawn(produce_bytes(s, tx, cancel));
        NativeByteStream { feed }
    }
}

#[napi]
impl NativeByteStream {
    /// The next chunk (several network chunks joined, up to 4 MiB), or `null` at the end.
    #[napi]
    pub async fn next(&self) -> Result<Option<Buffer>> {
        self.feed.next().await
    }

    /// Closes the download.
    #[napi]
    pub fn close(&self) {
        self.feed.close();
    }
}

/// `GET /metrics/watch` samples.
#[napi]
pub struct NativeMetricsStream {
    inner: Arc<Mutex<Option<MetricsStream>>>,
    cancel: CancellationToken,
}

impl NativeMetricsStream {
    pub fn new(s: MetricsStream) -> Self {
        NativeMetricsStream {
            inner: Arc::new(Mutex::new(Some(s))),
            cancel: CancellationToken::new(),
        }
    }
}

#[napi]
impl NativeMetricsStream {
    /// The next sample as JSON, or `null` at the end.
    #[napi]
    pub async fn next(&self) -> Result<Option<String>> {
        let inner = self.inner.clone();
        let cancel = self.cancel.clone();
        let mut guard = inner.lock().await;
        let Some(stream) = guard.as_mut() else {
            return Ok(None);
        };
        let item = tokio::select! {
            _ = cancel.cancelled() => { *guard = None; return Ok(None); }
            m = stream.next() => m,
        };
        match item {
            None => {
                *guard = None;
                Ok(None)
            }
            Some(Err(e)) => {
                *guard = None;
                Err(to_napi(e))
            }
            Some(Ok(m)) => Ok(Some(metrics(&m).to_string())),
        }
    }

    /// Closes the watch.
    #[napi]
    pub fn close(&self) {
        self.cancel.cancel();
        if let Ok(mut g) = self.inner.try_lock() {
            *g = None;
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UploadMeta {
    path: String,
    mode: Option<u32>,
    owner: Option<String>,
    group: Option<String>,
    #[serde(default)]
    streamed: bool,
}

type Chunk = std::io::Result<Bytes>;
type UploadResult = std::result::Result<(), Error>;

/// One multipart upload in flight: in-memory entries were handed over at start,
/// streamed entries are fed chunk by chunk (bounded channel = backpressure).
#[napi]
pub struct NativeUpload {
    senders: Arc<StdMutex<Vec<Option<mpsc::Sender<Chunk>>>>>,
    done: Arc<Mutex<Option<oneshot::Receiver<UploadResult>>>>,
}

impl NativeUpload {
    pub fn start(
        s: Arc<Sandbox>,
        meta: &str,
        buffers: Vec<Option<Buffer>>,
    ) -> CoreResult<NativeUpload> {
        let metas: Vec<UploadMeta> = parse_args("files.write_files", meta)?;
        if metas.len() != buffers.len() {
            return Err(Error::invalid_argument(
                "files.write_files",
                "one buffer slot per entry expected",
            ));
        }
        let mut entries = Vec::with_capacity(metas.len());
        let mut senders = Vec::with_capacity(metas.len());
        for (m, b) in metas.into_iter().zip(buffers) {
            let data = if m.streamed {
                let (tx, rx) = mpsc::channel::<Chunk>(8);
                senders.push(Some(tx));
                let st = futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|c| (c, rx))
                });
                WriteData::Stream(Box::pin(st))
            } else {
                senders.push(None);
                let bytes = b.map(|b| Bytes::copy_from_slice(&b)).unwrap_or_default();
                WriteData::Bytes(bytes)
            };
            let mut e = WriteEntry::new(m.path, data);
            e.mode = m.mode;
            e.owner = m.owner;
            e.group = m.group;
            entries.push(e);
        }
        let (tx, rx) = oneshot::channel::<UploadResult>();
        napi::bindgen_prelude::spawn(async move {
            let _ = tx.send(s.execd().write_files(entries).await);
        });
        Ok(NativeUpload {
            senders: Arc::new(StdMutex::new(senders)),
            done: Arc::new(Mutex::new(Some(rx))),
        })
    }

    fn sender(&self, index: u32) -> Option<mpsc::Sender<Chunk>> {
        self.senders
            .lock()
            .ok()
            .and_then(|v| v.get(index as usize).cloned().flatten())
    }
}

#[napi]
impl NativeUpload {
    /// Feeds one chunk of streamed entry `index`; resolves once the chunk is queued.
    /// Resolves `false` when the request already ended (call `finish` for its error).
    #[napi]
    pub async fn write(&self, index: u32, chunk: Buffer) -> Result<bool> {
        let bytes = Bytes::copy_from_slice(&chunk);
        drop(chunk);
        match self.sender(index) {
            Some(tx) => Ok(tx.send(Ok(bytes)).await.is_ok()),
            None => Ok(false),
        }
    }

    /// Ends streamed entry `index`.
    #[napi]
    pub fn end(&self, index: u32) {
        if let Ok(mut v) = self.senders.lock() {
            if let Some(slot) = v.get_mut(index as usize) {
                *slot = None;
            }
        }
    }

    /// Aborts the upload: every streamed entry fails, so the request is cut.
    #[napi]
    pub fn abort(&self, reason: String) {
        let senders: Vec<_> = match self.senders.lock() {
            Ok(mut v) => v.iter_mut().filter_map(Option::take).collect(),
            Err(_) => Vec::new(),
        };
        for tx in senders {
            let _ = tx.try_send(Err(std::io::Error::other(reason.clone())));
        }
    }

    /// Waits for the request to finish.
    #[napi]
    pub async fn finish(&self) -> Result<()> {
        let done = self.done.clone();
        let handle = done.lock().await.take();
        match handle {
            None => Ok(()),
            Some(h) => match h.await {
                Ok(r) => r.map_err(to_napi),
                Err(_) => Err(to_napi(Error::internal(
                    "files.write_files",
                    "upload task ended without a result",
                ))),
            },
        }
    }
}
