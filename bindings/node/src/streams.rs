//! Pull-based streams for the JS layer's async iterators (execution events, downloads,
//! metrics) and push-based uploads. Nothing here holds a threadsafe function or a
//! libuv handle, so an idle client never keeps the Node process alive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use bytes::Bytes;
use futures_util::StreamExt;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use opensandbox_bindings::args::{parse, SandboxArgs, WriteFilesArgs};
use opensandbox_bindings::stream::Item;
use opensandbox_bindings::{OpError, Session};
use opensandbox_core::{MetricsStream, WriteData, WriteEntry};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_util::sync::CancellationToken;

use crate::chunks;
use crate::error::to_napi;

/// Most events pulled per `next` call.
const BATCH_EVENTS: usize = 8192;

fn handle_of(op: &str, v: &Value) -> std::result::Result<u64, OpError> {
    v.get("handle")
        .and_then(Value::as_u64)
        .ok_or_else(|| OpError::internal(op, format!("{op}: no handle in the result")))
}

/// One batch of events for JS. Output lines (by far the most events) are not JSON:
/// their texts are concatenated in `text`, and `meta` holds one 13-byte record per item,
/// in order: `u8 kind` (1 stdout, 2 stderr, 0 any other item), `f64 timestamp` and
/// `u32 length` (of the text in UTF-16 units, so JS slices `text`), little-endian.
/// Every other item (kind 0, timestamp and length 0) is the next element of `other`, a
/// JSON array of op-layer objects, the run's final `end` item (the outcome the core
/// folded) included. `last` = the stream ended after this batch.
#[napi(object)]
pub struct EventBatch {
    /// 13 bytes per item: kind, timestamp, length.
    pub meta: Buffer,
    /// The output texts, concatenated.
    pub text: String,
    /// JSON array of the items that are not output lines.
    pub other: String,
    /// No batch follows.
    pub last: bool,
}

/// Bytes of one `meta` record.
const META: usize = 13;

fn encode(events: &[Item], last: bool) -> EventBatch {
    let text_len: usize = events
        .iter()
        .map(|i| match i {
            Item::Output { text, .. } => text.len(),
            Item::Json(_) => 0,
        })
        .sum();
    let mut meta = Vec::with_capacity(META * events.len());
    let mut text = String::with_capacity(text_len);
    let mut other = String::from("[");
    for ev in events {
        match ev {
            Item::Output {
                stderr,
                text: t,
                timestamp,
            } => {
                let len = if t.is_ascii() {
                    t.len()
                } else {
                    t.encode_utf16().count()
                };
                text.push_str(t);
                meta.push(if *stderr { 2 } else { 1 });
                // Milliseconds since the epoch: exact in an f64 (JS's number).
                #[allow(clippy::cast_precision_loss)]
                meta.extend_from_slice(&(*timestamp as f64).to_le_bytes());
                meta.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_le_bytes());
            }
            Item::Json(v) => {
                if other.len() > 1 {
                    other.push(',');
                }
                other.push_str(&v.to_string());
                meta.extend_from_slice(&[0; META]);
            }
        }
    }
    other.push(']');
    EventBatch {
        meta: meta.into(),
        text,
        other,
        last,
    }
}

/// Events of one started run (an `execution` handle of the session), in batches.
/// `close` releases the handle, which cancels an unfinished run.
#[napi]
pub struct NativeEventStream {
    session: Arc<Session>,
    handle: u64,
}

impl NativeEventStream {
    /// Runs the start op and keeps its handle.
    pub async fn start(
        session: Arc<Session>,
        op: String,
        args: Value,
    ) -> std::result::Result<Self, OpError> {
        let r = session.call(&op, args).await?;
        let handle = handle_of(&op, &r)?;
        Ok(NativeEventStream { session, handle })
    }
}

#[napi]
impl NativeEventStream {
    /// The execution id (from `init`) is in the first batch; this is the handle.
    #[napi(getter)]
    pub fn handle(&self) -> i64 {
        i64::try_from(self.handle).unwrap_or(i64::MAX)
    }

    /// The next batch, or `null` after the end. An error of the run is the `end` item.
    #[napi]
    pub async fn next(&self) -> Result<Option<EventBatch>> {
        // The items as queued (output lines typed): no JSON tree per line.
        let batch = match self
            .session
            .next_items(self.handle, BATCH_EVENTS, None)
            .await
        {
            Ok(b) => b,
            // Released (closed): the stream is over.
            Err(e) if e.kind == "invalid_argument" => return Ok(None),
            Err(e) => return Err(to_napi(e)),
        };
        if batch.events.is_empty() {
            return Ok(if batch.done {
                None
            } else {
                Some(encode(&[], false))
            });
        }
        Ok(Some(encode(&batch.events, batch.done)))
    }

    /// Releases the run (cancelling it when unfinished: the command is interrupted).
    #[napi]
    pub fn close(&self) {
        self.session.release(self.handle);
    }
}

/// A download (a `download` handle of the session) as chunks: each `next` joins the
/// chunks that have already arrived into one block of up to `chunks::BUF` bytes, in
/// memory recycled from earlier blocks JS no longer holds (`chunks.rs`).
///
/// After a full read the next one starts at once on the runtime (`ahead`), so the
/// socket is read and copied while the chunk crosses to JS and JS handles it; `next`
/// then only waits for what is left of it.
#[napi]
pub struct NativeByteStream {
    session: Arc<Session>,
    handle: u64,
    /// Counted among the open downloads (`chunks::opened`) until closed or collected.
    counted: AtomicBool,
    /// The read started ahead by the last `next`, if any.
    ahead: StdMutex<Option<tokio::task::JoinHandle<ReadResult>>>,
}

type ReadResult = std::result::Result<chunks::Filling, OpError>;

/// One read of download `handle`: up to `chunks::BUF` bytes, waiting for all of them
/// or the end.
async fn read_chunk(session: Arc<Session>, handle: u64) -> ReadResult {
    session
        .download_read_into(
            handle,
            chunks::BUF,
            chunks::FILL,
            chunks::Filling::default(),
        )
        .await
}

impl NativeByteStream {
    /// `download.open`.
    pub async fn open(session: Arc<Session>, args: Value) -> std::result::Result<Self, OpError> {
        let r = session.call("download.open", args).await?;
        let handle = handle_of("download.open", &r)?;
        chunks::opened();
        Ok(NativeByteStream {
            session,
            handle,
            counted: AtomicBool::new(true),
            ahead: StdMutex::new(None),
        })
    }

    fn uncount(&self) {
        if self.counted.swap(false, Ordering::AcqRel) {
            chunks::closed();
        }
    }

    /// Stops the read started ahead, if any (its buffer is dropped with it).
    fn stop_ahead(&self) {
        let pending = match self.ahead.lock() {
            Ok(mut g) => g.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(h) = pending {
            h.abort();
        }
    }
}

impl Drop for NativeByteStream {
    /// A stream JS dropped without closing it (an abandoned iterator) stops reading and
    /// keeping the pool's memory when it is collected.
    fn drop(&mut self) {
        self.stop_ahead();
        self.uncount();
    }
}

#[napi]
impl NativeByteStream {
    /// The next chunk (several network chunks joined, up to `chunks::BUF`), or `null` at
    /// the end.
    #[napi]
    pub async fn next(&self) -> Result<Option<chunks::Chunk>> {
        let pending = match self.ahead.lock() {
            Ok(mut g) => g.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        let read = match pending {
            Some(h) => h.await.unwrap_or_else(|e| {
                Err(OpError::internal(
                    "download.read",
                    format!("the read ahead ended: {e}"),
                ))
            }),
            None => read_chunk(self.session.clone(), self.handle).await,
        };
        match read {
            Ok(read) => {
                if read.is_full() {
                    let mut ahead = match self.ahead.lock() {
                        Ok(g) => g,
                        Err(poisoned) => poisoned.into_inner(),
                    };
                    // Already set only by another `next` at the same time (the JS
                    // iterator awaits each): that read stays, bytes it took are not lost.
                    if ahead.is_none() {
                        *ahead = Some(tokio::spawn(read_chunk(self.session.clone(), self.handle)));
                    }
                }
                Ok(read.finish())
            }
            Err(e) if e.kind == "invalid_argument" => Ok(None),
            Err(e) => Err(to_napi(e)),
        }
    }

    /// Closes the download (and stops the read started ahead).
    #[napi]
    pub fn close(&self) {
        self.stop_ahead();
        self.session.release(self.handle);
        self.uncount();
    }
}

/// `GET /metrics/watch` samples (op-layer `Metrics` objects).
#[napi]
pub struct NativeMetricsStream {
    inner: Arc<Mutex<Option<MetricsStream>>>,
    cancel: CancellationToken,
}

impl NativeMetricsStream {
    /// Opens the watch of the sandbox of `args` (`{sandbox}`).
    pub async fn open(session: Arc<Session>, args: Value) -> std::result::Result<Self, OpError> {
        const OP: &str = "metrics.watch";
        let a: SandboxArgs = parse(OP, args)?;
        let sb = session.sandbox(OP, &a).await?;
        let stream = sb.execd().watch_metrics().await?;
        Ok(NativeMetricsStream {
            inner: Arc::new(Mutex::new(Some(stream))),
            cancel: CancellationToken::new(),
        })
    }
}

#[napi]
impl NativeMetricsStream {
    /// The next sample, or `null` at the end.
    #[napi]
    pub async fn next(&self) -> Result<Option<Value>> {
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
                Err(to_napi(e.into()))
            }
            Some(Ok(m)) => Ok(Some(opensandbox_bindings::convert::metrics(&m))),
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

/// A file of the local file system as the data of an upload entry, read by the library
/// (`transfer::file_data`): an unread `fs.ReadStream`'s path, `start` and inclusive `end`.
#[napi(object)]
pub struct FileSlice {
    pub path: String,
    pub start: Option<i64>,
    pub end: Option<i64>,
}

impl FileSlice {
    fn data(self, op: &str) -> std::result::Result<WriteData, OpError> {
        let file = std::fs::File::open(&self.path)
            .map_err(|e| OpError::invalid(op, format!("{op}: cannot open {}: {e}", self.path)))?;
        let size = file
            .metadata()
            .map_err(|e| OpError::invalid(op, format!("{op}: cannot stat {}: {e}", self.path)))?
            .len();
        let start = u64::try_from(self.start.unwrap_or(0)).unwrap_or(0);
        // `end` is inclusive, as fs.createReadStream's; past the file's end, the end.
        let stop = match self.end.and_then(|e| u64::try_from(e).ok()) {
            Some(e) => e.saturating_add(1).min(size),
            None => size,
        };
        opensandbox_bindings::transfer::file_data(op, file, start, stop.saturating_sub(start))
    }
}

type Chunk = std::io::Result<Bytes>;
type UploadResult = std::result::Result<(), OpError>;

/// One multipart upload in flight: in-memory entries were handed over at start,
/// streamed entries are fed chunk by chunk (bounded channel = backpressure).
#[napi]
pub struct NativeUpload {
    senders: Arc<StdMutex<Vec<Option<mpsc::Sender<Chunk>>>>>,
    done: Arc<Mutex<Option<oneshot::Receiver<UploadResult>>>>,
}

impl NativeUpload {
    /// Parses `files.write_files` arguments (entries without data) and starts the
    /// request; entry `i` takes `buffers[i]`, or is streamed when it is null.
    pub fn start(
        session: Arc<Session>,
        args: Value,
        buffers: Vec<Option<Buffer>>,
        files: Option<Vec<Option<FileSlice>>>,
    ) -> std::result::Result<NativeUpload, OpError> {
        const OP: &str = "files.write_files";
        let a: WriteFilesArgs = parse(OP, args)?;
        let mut files = files.unwrap_or_default();
        if a.entries.len() != buffers.len() || files.len() > buffers.len() {
            return Err(OpError::invalid(
                OP,
                format!("{OP}: one buffer slot per entry expected"),
            ));
        }
        files.resize_with(buffers.len(), || None);
        let mut entries = Vec::with_capacity(a.entries.len());
        let mut senders = Vec::with_capacity(a.entries.len());
        for ((e, b), f) in a.entries.iter().zip(buffers).zip(files) {
            let data = match (b, f) {
                (_, Some(f)) => {
                    senders.push(None);
                    f.data(OP)?
                }
                (b, None) => match b {
                    Some(b) => {
                        senders.push(None);
                        // The Buffer itself, not a copy: the request reads the JS memory, kept
                        // alive by the Buffer's reference until the body is sent (napi drops it
                        // on the JS thread). The copy (256 MiB of fresh pages for a 256 MiB
                        // Buffer, on the JS thread before the request starts) cost a third of
                        // the upload's time. The caller's promise ends after the request, so
                        // the rule is Node's own for fs.write / socket.write: do not modify
                        // the data until the call resolves.
                        WriteData::Bytes(Bytes::from_owner(b))
                    }
                    None => {
                        let (tx, rx) = mpsc::channel::<Chunk>(8);
                        senders.push(Some(tx));
                        let st = futures_util::stream::unfold(rx, |mut rx| async move {
                            rx.recv().await.map(|c| (c, rx))
                        });
                        WriteData::Stream(Box::pin(st))
                    }
                },
            };
            let mut w = WriteEntry::new(e.path.clone(), data);
            w.mode = e.mode;
            w.owner = e.owner.clone();
            w.group = e.group.clone();
            entries.push(w);
        }
        let (tx, rx) = oneshot::channel::<UploadResult>();
        napi::bindgen_prelude::spawn(async move {
            let r = async {
                // The sandbox's file client, or its identity / isolated-session one.
                let execd =
                    opensandbox_bindings::ops::files::files_client(&session, OP, &a).await?;
                execd.write_files(entries).await.map_err(OpError::from)
            }
            .await;
            let _ = tx.send(r);
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
                Err(_) => Err(to_napi(OpError::internal(
                    "files.write_files",
                    "upload task ended without a result",
                ))),
            },
        }
    }
}
