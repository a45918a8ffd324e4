//! Bytes that do not fit JSON, by handle: streamed uploads fed by the host
//! (`upload.open`, [`Session::upload_write`], `upload.finish` / `upload.abort`) and
//! pulled downloads (`download.open`, [`Session::download_read`], `download.close`),
//! plus whole-buffer reads and writes ([`Session::read_bytes`],
//! [`Session::write_bytes`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use opensandbox_core::execd::BytesStream;
use opensandbox_core::runtime::Driver;
use opensandbox_core::{WriteData, WriteEntry};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::args::{parse, ReadArgs, UploadArgs, WriteFileArgs};
use crate::error::{OpError, OpResult};
use crate::ops::files::{read_options, write_entry};
use crate::session::{recycle_driver, DriverPool, Entry, Session};

/// A read waits until this much (or the host's whole `max`, if smaller) has arrived or
/// the body has ended. Handing over whatever had arrived made a 256 MiB download cross
/// into Python about 1,200 times (one wake-up, one `bytes`, one loop turn each, at
/// ~220 KB); with this floor a 1 MiB read crosses about 300 times. A slow body still
/// flows: the wait is for bytes, never for a timer.
pub const READ_FILL: usize = 512 * 1024;

/// An open download: each read polls the response body itself and takes what has
/// arrived, up to the host's size, in one crossing.
///
/// There is no read-ahead task and no queue of chunks: the socket's receive buffer
/// (megabytes on loopback and on any fast link) already keeps the transfer going while
/// the host handles the previous read. A queue of 32 received chunks (~10 MiB) used to
/// sit here; it kept every chunk alive past hyper's next read, so each read of the
/// connection got freshly allocated memory (page faults, cold caches) where a chunk
/// taken and dropped at once lets hyper reuse its buffer: measured on a 256 MiB
/// download through the server proxy, the 1 MiB-read host path went from about 55 %
/// of curl's rate, with ~6,000-22,000 page faults, to the core's own rate
/// (bench_download; figures in docs/architecture.md).
pub struct Download {
    state: tokio::sync::Mutex<Body>,
    /// The runtime the body was opened on when a blocking host opened it
    /// (`crate::block_on_op`): only calls on it make the body progress.
    driver: Option<Arc<Driver>>,
    /// Where `driver` goes back to when the download is dropped.
    pool: Option<DriverPool>,
}

impl Drop for Download {
    fn drop(&mut self) {
        // The body first: its connection goes back to the driver's pool (read to the
        // end) or is closed, before another download may take the driver.
        let body = self.state.get_mut();
        body.stream = Box::pin(futures_util::stream::empty());
        body.pending = Bytes::new();
        if let (Some(driver), Some(pool)) = (self.driver.take(), self.pool.take()) {
            recycle_driver(&pool, driver);
        }
    }
}

struct Body {
    stream: BytesStream,
    /// The unread rest of the last chunk taken.
    pending: Bytes,
    /// An error that arrived after data of the same read: the next read reports it.
    failed: Option<OpError>,
    done: bool,
}

impl Download {
    fn start(
        stream: BytesStream,
        driver: Option<Arc<Driver>>,
        pool: Option<DriverPool>,
    ) -> Download {
        Download {
            state: tokio::sync::Mutex::new(Body {
                stream,
                pending: Bytes::new(),
                failed: None,
                done: false,
            }),
            driver,
            pool,
        }
    }

    /// [`Download::read_into`] a `Vec` from anywhere: a body on a driver that this
    /// thread is not driving is driven for the read on a blocking thread.
    async fn read(self: Arc<Self>, max: usize, fill: usize) -> Result<Vec<Bytes>, OpError> {
        match self.driver.clone() {
            // Read where nothing drives the body (an async read of a download a
            // blocking host opened): drive it on a blocking thread for this read.
            Some(driver) if !driver.is_current() => {
                let read = tokio::task::spawn_blocking(move || {
                    driver
                        .block_on(self.read_into(max, fill, Vec::new()))
                        .unwrap_or_else(|(e, _)| {
                            Err(OpError::invalid(
                                "download.read",
                                format!("download.read: {e}"),
                            ))
                        })
                });
                read.await.unwrap_or_else(|e| {
                    Err(OpError::internal(
                        "download.read",
                        format!("the read failed: {e}"),
                    ))
                })
            }
            _ => self.read_into(max, fill, Vec::new()).await,
        }
    }

    /// [`Download::read_into`] from anywhere, as [`Download::read`]; where the read
    /// must run on a blocking thread, `sink` gets the slices after it (the sink stays
    /// on this thread: it may borrow the caller's memory).
    async fn read_to<S: ReadSink>(
        self: Arc<Self>,
        max: usize,
        fill: usize,
        mut sink: S,
    ) -> Result<S, OpError> {
        let elsewhere = matches!(&self.driver, Some(driver) if !driver.is_current());
        if elsewhere {
            for part in self.read(max, fill).await? {
                sink.put(part);
            }
            return Ok(sink);
        }
        self.read_into(max, fill, sink).await
    }

    /// Up to `max` bytes as one or more slices of the received chunks, waiting until
    /// `min(max, READ_FILL)` bytes have arrived or the body has ended: empty at the end.
    /// The body must be progressing: on the runtime this task runs on, or on the driver
    /// this thread drives.
    #[cfg(test)]
    async fn read_parts(&self, max: usize) -> Result<Vec<Bytes>, OpError> {
        self.read_into(max, READ_FILL, Vec::new()).await
    }

    /// Up to `max` bytes handed to `sink` slice by slice, in order, waiting until
    /// `min(max, fill)` bytes have arrived or the body has ended (nothing at the end).
    async fn read_into<S: ReadSink>(
        &self,
        max: usize,
        fill: usize,
        mut sink: S,
    ) -> Result<S, OpError> {
        let max = max.max(1);
        let fill = max.min(fill);
        let mut g = self.state.lock().await;
        let mut got = 0usize;
        if let Some(e) = g.failed.take() {
            return Err(e);
        }
        while got < max {
            if g.pending.is_empty() {
                if g.done {
                    break;
                }
                let next = if got < fill {
                    g.stream.next().await
                } else {
                    // Past the fill: only what is already there, no waiting.
                    match g.stream.next().now_or_never() {
                        Some(next) => next,
                        None => break,
                    }
                };
                match next {
                    Some(Ok(chunk)) => g.pending = chunk,
                    Some(Err(e)) => {
                        g.done = true;
                        if got == 0 {
                            return Err(e.into());
                        }
                        // What arrived before the error goes first.
                        g.failed = Some(e.into());
                        break;
                    }
                    None => {
                        g.done = true;
                        break;
                    }
                }
                continue;
            }
            let n = (max - got).min(g.pending.len());
            let part = g.pending.split_to(n);
            got += n;
            sink.put(part);
        }
        Ok(sink)
    }
}

/// Where a download read puts the received slices, in order, as it takes them.
///
/// A slice is a piece of hyper's read buffer, which hyper can reuse only once every
/// slice cut from it is dropped; a read that keeps its slices until it returns
/// (`Vec<Bytes>`, for hosts that copy them afterwards) makes hyper read the next ones
/// into fresh memory. A sink that copies each slice and drops it
/// ([`Session::download_read_into`]) lets the connection read into the same memory
/// again. A sink may borrow the caller's memory: it is only used on the thread that
/// awaits the read.
pub trait ReadSink {
    /// The next received slice (never empty).
    fn put(&mut self, part: Bytes);
}

impl ReadSink for Vec<Bytes> {
    fn put(&mut self, part: Bytes) {
        self.push(part);
    }
}

/// An open upload.
pub struct Upload {
    tx: Mutex<Option<mpsc::Sender<std::io::Result<Bytes>>>>,
    task: Mutex<Option<JoinHandle<opensandbox_core::Result<()>>>>,
    /// `size` of `upload.open`: `upload.finish` fails the upload on another count.
    declared: Option<u64>,
    written: AtomicU64,
}

impl Upload {
    /// Ends the upload with an error and stops its request.
    pub fn abort(&self) {
        if let Some(tx) = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.try_send(Err(std::io::Error::other("upload aborted")));
        }
        if let Some(t) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            t.abort();
        }
    }
}

/// `download.open`.
pub async fn download_open(s: &Session, a: ReadArgs) -> OpResult {
    const OP: &str = "download.open";
    let fs = crate::ops::files::files_client(s, OP, &a).await?;
    let stream = fs.read_bytes_stream(&a.path, &read_options(&a)).await?;
    let download = Download::start(stream, Driver::current(), Some(s.driver_pool()));
    let h = s.insert(Entry::Download(Arc::new(download)));
    Ok(json!({"handle": h}))
}

/// `download.close`.
pub async fn download_close(s: &Session, a: crate::args::HandleArgs) -> OpResult {
    s.take("download.close", a.handle, "download", |e| match e {
        Entry::Download(_) => Some(()),
        _ => None,
    })?;
    Ok(Value::Null)
}

/// `upload.open`: must run inside the runtime (the request is spawned on it).
pub async fn upload_open(s: &Session, a: UploadArgs) -> OpResult {
    const OP: &str = "upload.open";
    let execd = crate::ops::files::files_client(s, OP, &a).await?;
    let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(8);
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut e = WriteEntry::new(a.path.clone(), WriteData::Stream(Box::pin(stream)));
    e.mode = a.mode;
    e.owner = a.owner.clone();
    e.group = a.group.clone();
    let task = tokio::spawn(async move { execd.write_files(vec![e]).await });
    let h = s.insert(Entry::Upload(std::sync::Arc::new(Upload {
        tx: Mutex::new(Some(tx)),
        task: Mutex::new(Some(task)),
        declared: a.size,
        written: AtomicU64::new(0),
    })));
    Ok(json!({"handle": h}))
}

/// `upload.finish`: closes the data and waits for the request's outcome.
pub async fn upload_finish(s: &Session, a: crate::args::HandleArgs) -> OpResult {
    const OP: &str = "upload.finish";
    let up = s.take(OP, a.handle, "upload", |e| match e {
        Entry::Upload(u) => Some(u.clone()),
        _ => None,
    })?;
    let tx = up.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    let written = up.written.load(Ordering::SeqCst);
    if let (Some(want), Some(tx)) = (up.declared, tx) {
        if want != written {
            // Fail the request rather than store a file of the wrong length.
            let _ = tx
                .send(Err(std::io::Error::other("upload size mismatch")))
                .await;
            drop(tx);
            let task = up.task.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(t) = task {
                let _ = t.await;
            }
            return Err(OpError::invalid(
                OP,
                format!("{OP}: size was declared as {want} bytes but {written} were written"),
            ));
        }
    }
    let task = up.task.lock().unwrap_or_else(|e| e.into_inner()).take();
    match task {
        Some(t) => match t.await {
            Ok(r) => r.map(|()| Value::Null).map_err(OpError::from),
            Err(e) => Err(OpError::internal(OP, format!("upload task failed: {e}"))),
        },
        None => Err(OpError::new("cancelled", OP, "the upload was aborted")),
    }
}

/// `len` bytes of the regular file `file` from `offset` as the data of one upload entry,
/// read by the library (as [`Session::upload_file`] reads it), for a host that builds a
/// multipart request of several entries itself (Node's `writeFiles`). A file that ends
/// before `len` bytes fails the request rather than store a short file.
///
/// # Errors
/// A file that is not a regular file (`invalid_argument`), or one that cannot be
/// stat'ed or sought.
pub fn file_data(
    op: &str,
    mut file: std::fs::File,
    offset: u64,
    len: u64,
) -> Result<WriteData, OpError> {
    use std::io::{Seek, SeekFrom};
    let meta = file
        .metadata()
        .map_err(|e| OpError::invalid(op, format!("{op}: cannot stat the file: {e}")))?;
    if !meta.is_file() {
        return Err(OpError::invalid(op, format!("{op}: not a regular file")));
    }
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| OpError::invalid(op, format!("{op}: cannot seek to {offset}: {e}")))?;
    use tokio::io::AsyncReadExt;
    let reader = ExactLen {
        inner: tokio::fs::File::from_std(file).take(len),
        left: len,
    };
    Ok(WriteData::Reader {
        reader: Box::new(reader),
        len: Some(len),
    })
}

/// `upload.abort`.
pub async fn upload_abort(s: &Session, a: crate::args::HandleArgs) -> OpResult {
    let up = s.take("upload.abort", a.handle, "upload", |e| match e {
        Entry::Upload(u) => Some(u.clone()),
        _ => None,
    })?;
    up.abort();
    Ok(Value::Null)
}

impl Session {
    /// An upload whose data is `len` bytes of the regular file `file` from `offset`
    /// (`args` as `upload.open`; a `size`, when given, must be `len`): the library reads
    /// the file itself, so no chunk crosses the host boundary. `file` is consumed; when
    /// it shares its open file description with the host (a duplicated descriptor), the
    /// shared offset ends at `offset + len`, where a full read by the host would leave it.
    ///
    /// # Errors
    /// `invalid_argument` for bad arguments, a file that is not a regular file, or a
    /// `size` other than `len`; the request's error otherwise (a file that shrank below
    /// `len` fails the request rather than store a short file).
    pub async fn upload_file(
        &self,
        args: Value,
        file: std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<(), OpError> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        const OP: &str = "upload.file";
        let a: UploadArgs = parse(OP, args)?;
        if let Some(size) = a.size {
            if size != len {
                return Err(OpError::invalid(
                    OP,
                    format!("{OP}: size is {size} bytes but the file part is {len} bytes"),
                ));
            }
        }
        let meta = file
            .metadata()
            .map_err(|e| OpError::invalid(OP, format!("{OP}: cannot stat the file: {e}")))?;
        if !meta.is_file() {
            return Err(OpError::invalid(
                OP,
                format!("{OP}: the descriptor is not a regular file"),
            ));
        }
        let execd = crate::ops::files::files_client(self, OP, &a).await?;
        let mut file = tokio::fs::File::from_std(file);
        file.seek(std::io::SeekFrom::Start(offset))
            .await
            .map_err(|e| OpError::invalid(OP, format!("{OP}: cannot seek to {offset}: {e}")))?;
        let reader = ExactLen {
            inner: file.take(len),
            left: len,
        };
        let mut e = WriteEntry::new(
            a.path.clone(),
            WriteData::Reader {
                reader: Box::new(reader),
                len: Some(len),
            },
        );
        e.mode = a.mode;
        e.owner = a.owner.clone();
        e.group = a.group.clone();
        execd.write_files(vec![e]).await.map_err(OpError::from)
    }

    /// Sends one chunk of upload `handle` (waits while its queue is full). `false` when
    /// the upload already ended: `upload.finish` reports why.
    ///
    /// # Errors
    /// `invalid_argument` for a handle that is not an open upload.
    pub async fn upload_write(&self, handle: u64, chunk: Bytes) -> Result<bool, OpError> {
        let up = self.typed("upload.write", handle, "upload", |e| match e {
            Entry::Upload(u) => Some(u.clone()),
            _ => None,
        })?;
        let tx = up.tx.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let n = chunk.len() as u64;
        match tx {
            Some(tx) => {
                let queued = tx.send(Ok(chunk)).await.is_ok();
                if queued {
                    up.written.fetch_add(n, Ordering::SeqCst);
                }
                Ok(queued)
            }
            None => Ok(false),
        }
    }

    /// Up to `max` bytes of download `handle`: what has already arrived once
    /// `min(max, 512 KiB)` has (or the body has ended); empty at the end. One chunk is handed over as it is; several
    /// are joined (hosts that copy anyway use [`Session::download_read_parts`]).
    ///
    /// # Errors
    /// The download's error, or `invalid_argument` for a stale handle.
    pub async fn download_read(&self, handle: u64, max: usize) -> Result<Bytes, OpError> {
        let parts = self.download_read_parts(handle, max).await?;
        Ok(match parts.len() {
            0 => Bytes::new(),
            1 => parts.into_iter().next().unwrap_or_default(),
            _ => {
                let mut joined = bytes::BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
                for p in &parts {
                    joined.extend_from_slice(p);
                }
                joined.freeze()
            }
        })
    }

    /// [`Session::download_read`] as the received slices, in order (at most `max`
    /// bytes in all; none at the end), for a host that copies them straight into its
    /// own buffer.
    ///
    /// # Errors
    /// As [`Session::download_read`].
    pub async fn download_read_parts(
        &self,
        handle: u64,
        max: usize,
    ) -> Result<Vec<Bytes>, OpError> {
        let d = self.typed("download.read", handle, "download", |e| match e {
            Entry::Download(d) => Some(d.clone()),
            _ => None,
        })?;
        d.read(max, READ_FILL).await
    }

    /// The driver of download `handle`, when a blocking host opened it
    /// (`crate::block_on_read` reads on it).
    pub fn download_driver(&self, handle: u64) -> Option<Arc<Driver>> {
        self.typed("download.read", handle, "download", |e| match e {
            Entry::Download(d) => Some(d.driver.clone()),
            _ => None,
        })
        .ok()
        .flatten()
    }

    /// [`Session::download_read_parts`] waiting for `min(max, fill)` bytes instead of
    /// 512 KiB: a host whose every crossing costs more than a copy (Node: a hop to
    /// the runtime and back to the JS thread, a GC-tracked `Buffer`) takes fewer,
    /// larger reads.
    ///
    /// # Errors
    /// As [`Session::download_read`].
    pub async fn download_read_parts_fill(
        &self,
        handle: u64,
        max: usize,
        fill: usize,
    ) -> Result<Vec<Bytes>, OpError> {
        self.download_read_into(handle, max, fill, Vec::new()).await
    }

    /// [`Session::download_read_parts_fill`] into `sink`, which gets each received
    /// slice as the read takes it (see [`ReadSink`]) and is given back at the end of
    /// the read.
    ///
    /// # Errors
    /// As [`Session::download_read`]. An error comes before any slice (one that ends
    /// the body after some data is reported by the next read), and `sink` is dropped.
    pub async fn download_read_into<S: ReadSink>(
        &self,
        handle: u64,
        max: usize,
        fill: usize,
        sink: S,
    ) -> Result<S, OpError> {
        let d = self.typed("download.read", handle, "download", |e| match e {
            Entry::Download(d) => Some(d.clone()),
            _ => None,
        })?;
        d.read_to(max, fill, sink).await
    }

    /// The bytes of a file (`args` as `files.read_bytes`).
    ///
    /// # Errors
    /// As the op.
    pub async fn read_bytes(&self, args: Value) -> Result<Bytes, OpError> {
        const OP: &str = "files.read_bytes";
        let a: ReadArgs = parse(OP, args)?;
        let fs = crate::ops::files::files_client(self, OP, &a).await?;
        Ok(fs.read_bytes(&a.path, &read_options(&a)).await?)
    }

    /// Writes `data` to a file (`args` as `files.write_file` without data).
    ///
    /// # Errors
    /// As the op.
    pub async fn write_bytes(&self, args: Value, data: Bytes) -> Result<(), OpError> {
        const OP: &str = "files.write_file";
        let a: WriteFileArgs = parse(OP, args)?;
        let fs = crate::ops::files::files_client(self, OP, &a).await?;
        let mut e = write_entry(&a.entry())?;
        e.data = WriteData::Bytes(data);
        Ok(fs.write_files(vec![e]).await?)
    }
}

/// A reader of exactly `left` more bytes: an early end is an error (the request then
/// fails instead of storing a file shorter than its Content-Length said).
struct ExactLen<R> {
    inner: R,
    left: u64,
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for ExactLen<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match std::pin::Pin::new(&mut this.inner).poll_read(cx, buf) {
            std::task::Poll::Ready(Ok(())) => {
                let n = (buf.filled().len() - before) as u64;
                if n == 0 && this.left > 0 && buf.remaining() > 0 {
                    return std::task::Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("the file ended {} bytes early", this.left),
                    )));
                }
                this.left = this.left.saturating_sub(n);
                std::task::Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap()
    }

    fn download(chunks: Vec<opensandbox_core::Result<Bytes>>) -> Download {
        Download::start(Box::pin(futures_util::stream::iter(chunks)), None, None)
    }

    async fn settle() {
        // Time in which a read-ahead (there is none) could have pulled chunks.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    #[test]
    fn file_data_reads_its_slice_and_fails_a_short_file() {
        use tokio::io::AsyncReadExt;
        let dir = std::env::temp_dir().join(format!("osb-file-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        std::fs::write(&path, b"0123456789").unwrap();
        rt().block_on(async {
            let read = |offset, len| {
                let f = std::fs::File::open(&path).unwrap();
                match file_data("t", f, offset, len).unwrap() {
                    WriteData::Reader { reader, len: l } => (reader, l),
                    _ => panic!("not a reader"),
                }
            };
            let (mut r, l) = read(2, 5);
            assert_eq!(l, Some(5));
            let mut got = Vec::new();
            r.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"23456");
            // Fewer bytes than declared (a file that shrank): an error, not a short part.
            let (mut r, _) = read(8, 5);
            let mut got = Vec::new();
            let e = r.read_to_end(&mut got).await.unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
        });
        // A directory is no regular file.
        let d = std::fs::File::open(&dir).unwrap();
        let e = file_data("t", d, 0, 0).err().unwrap();
        assert_eq!(e.0.kind, "invalid_argument");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_chunk_is_pulled_before_a_read_needs_it() {
        // Regression: a read-ahead queue kept up to 32 received chunks alive, so hyper
        // could never reuse its read buffer and every read of the connection touched
        // fresh memory (~10,000 page faults per 256 MiB). Chunks are pulled only by a
        // read, and only as far as that read needs.
        rt().block_on(async {
            let pulled = std::sync::Arc::new(AtomicU64::new(0));
            let seen = pulled.clone();
            let chunks = (0..64).map(move |_| {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(Bytes::from_static(b"abcd"))
            });
            let d = Download::start(Box::pin(futures_util::stream::iter(chunks)), None, None);
            settle().await;
            assert_eq!(pulled.load(Ordering::SeqCst), 0);
            // 6 bytes: two chunks, the rest of the second one kept for the next read.
            assert_eq!(d.read_parts(6).await.unwrap().concat(), b"abcdab");
            settle().await;
            assert_eq!(pulled.load(Ordering::SeqCst), 2);
            assert_eq!(d.read_parts(2).await.unwrap().concat(), b"cd");
            assert_eq!(pulled.load(Ordering::SeqCst), 2);
            // Dropping the download drops the body (the connection) with it.
            drop(d);
        });
    }

    #[test]
    fn reads_gather_what_arrived_up_to_max_in_order() {
        rt().block_on(async {
            let d = download(vec![
                Ok(Bytes::from_static(b"abc")),
                Ok(Bytes::from_static(b"defg")),
                Ok(Bytes::from_static(b"h")),
            ]);
            settle().await;
            let parts = d.read_parts(5).await.unwrap();
            assert_eq!(parts.concat(), b"abcde");
            let parts = d.read_parts(100).await.unwrap();
            assert_eq!(parts.concat(), b"fgh");
            assert!(d.read_parts(100).await.unwrap().is_empty());
            assert!(d.read_parts(100).await.unwrap().is_empty());
        });
    }

    #[test]
    fn a_sink_gets_each_slice_as_the_read_takes_it() {
        /// Records each slice's bytes and whether the read still shared it when it
        /// was handed over, then drops it, as a copying sink does.
        #[derive(Default)]
        struct Recorder {
            got: Vec<u8>,
            shared: Vec<bool>,
        }
        impl ReadSink for Recorder {
            fn put(&mut self, part: Bytes) {
                self.got.extend_from_slice(&part);
                self.shared.push(!part.is_unique());
            }
        }
        rt().block_on(async {
            let d = download(vec![
                Ok(Bytes::from(b"abc".to_vec())),
                Ok(Bytes::from(b"defg".to_vec())),
                Ok(Bytes::from(b"h".to_vec())),
            ]);
            settle().await;
            let r = d.read_into(5, 5, Recorder::default()).await.unwrap();
            assert_eq!(r.got, b"abcde");
            // A whole chunk is handed over with no reference left in the read (the
            // memory it came from can be reused once the sink drops it); the rest of
            // a chunk cut at `max` stays for the next read.
            assert_eq!(r.shared, [false, true]);
            let r = d.read_into(100, 100, Recorder::default()).await.unwrap();
            assert_eq!(r.got, b"fgh");
            assert_eq!(r.shared, [false, false]);
            let r = d.read_into(100, 100, Recorder::default()).await.unwrap();
            assert!(r.got.is_empty() && r.shared.is_empty());
        });
    }

    #[test]
    fn a_read_waits_for_its_fill_but_not_past_the_end() {
        rt().block_on(async {
            // A body that arrives in small pieces over time: one read still returns
            // READ_FILL bytes (not the first piece), and the short tail at the end.
            let (tx, rx) = mpsc::channel::<opensandbox_core::Result<Bytes>>(4);
            let d = Download::start(Box::pin(tokio_stream_of(rx)), None, None);
            let piece = vec![7u8; 64 * 1024];
            let n = READ_FILL / piece.len() + 2;
            let feed = tokio::spawn(async move {
                for _ in 0..n {
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    if tx.send(Ok(Bytes::from(piece.clone()))).await.is_err() {
                        return;
                    }
                }
            });
            let first: usize = d
                .read_parts(4 << 20)
                .await
                .unwrap()
                .iter()
                .map(Bytes::len)
                .sum();
            assert!(first >= READ_FILL, "{first}");
            let rest: usize = d
                .read_parts(4 << 20)
                .await
                .unwrap()
                .iter()
                .map(Bytes::len)
                .sum();
            assert_eq!(first + rest, n * 64 * 1024);
            assert!(d.read_parts(4 << 20).await.unwrap().is_empty());
            feed.await.unwrap();
            // A small `max` is served as soon as it has arrived.
            let d = download(vec![
                Ok(Bytes::from_static(b"ab")),
                Ok(Bytes::from_static(b"cd")),
            ]);
            assert_eq!(d.read_parts(3).await.unwrap().concat(), b"abc");
        });
    }

    #[test]
    fn a_read_with_its_own_fill_waits_for_that_much() {
        rt().block_on(async {
            // Node reads with fill = max = 2 MiB: one read, not one per 512 KiB.
            let (tx, rx) = mpsc::channel::<opensandbox_core::Result<Bytes>>(4);
            let d = Download::start(Box::pin(tokio_stream_of(rx)), None, None);
            let piece = vec![7u8; 64 * 1024];
            let fill = 4 * READ_FILL;
            let n = fill / piece.len() + 3;
            let feed = tokio::spawn(async move {
                for _ in 0..n {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                    if tx.send(Ok(Bytes::from(piece.clone()))).await.is_err() {
                        return;
                    }
                }
            });
            let len = |p: Vec<Bytes>| p.iter().map(Bytes::len).sum::<usize>();
            assert_eq!(
                len(d.read_into(fill, fill, Vec::new()).await.unwrap()),
                fill
            );
            assert_eq!(
                len(d.read_into(fill, fill, Vec::new()).await.unwrap()),
                3 * 64 * 1024
            );
            assert!(d
                .read_into(fill, fill, Vec::new())
                .await
                .unwrap()
                .is_empty());
            feed.await.unwrap();
        });
    }

    fn tokio_stream_of(
        mut rx: mpsc::Receiver<opensandbox_core::Result<Bytes>>,
    ) -> impl futures_util::Stream<Item = opensandbox_core::Result<Bytes>> + Send {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }

    #[test]
    fn an_error_after_data_comes_with_the_next_read() {
        rt().block_on(async {
            let cut = opensandbox_core::Error::new(
                opensandbox_core::ErrorKind::Connection,
                "files.read",
                "cut",
            );
            let d = download(vec![Ok(Bytes::from_static(b"abc")), Err(cut)]);
            settle().await;
            assert_eq!(d.read_parts(100).await.unwrap().concat(), b"abc");
            let e = d.read_parts(100).await.unwrap_err();
            assert_eq!(e.kind, "connection");
            assert!(d.read_parts(100).await.unwrap().is_empty());
        });
    }

    /// A download that a blocking host opened lives on a driver of its own: a blocking
    /// read drives it on the reading thread, and a read from async code (where nothing
    /// drives it) drives it on a blocking thread instead of waiting forever.
    #[test]
    fn a_driven_download_is_read_from_threads_and_from_async_code() {
        let home = rt();
        let driver = Driver::new(home.handle()).unwrap();
        // A body whose chunks come from a task on the driver: it progresses only while
        // the driver is driven, like a connection opened on it.
        let stream: BytesStream = driver
            .block_on(async {
                let (tx, rx) = mpsc::channel(1);
                tokio::spawn(async move {
                    for i in 0..8u8 {
                        if tx.send(Ok(Bytes::from(vec![i; 3]))).await.is_err() {
                            return;
                        }
                    }
                });
                futures_util::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|item| (item, rx))
                })
                .boxed()
            })
            .ok()
            .unwrap();
        let s = Session::new();
        let h = s.insert(Entry::Download(Arc::new(Download::start(
            stream,
            Some(driver.clone()),
            Some(s.driver_pool()),
        ))));
        assert!(s.download_driver(h).is_some());
        let async_read = home.block_on(async {
            let read = s.download_read_parts(h, 12);
            tokio::time::timeout(std::time::Duration::from_secs(10), read).await
        });
        let parts = async_read.expect("the async read stalled").unwrap();
        assert_eq!(parts.concat(), [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
        let rest = std::thread::scope(|t| {
            t.spawn(|| crate::block_on_read(home.handle(), &s, h, s.download_read_parts(h, 100)))
                .join()
                .unwrap()
        });
        assert_eq!(rest.unwrap().concat(), [4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7]);
        // Released from async code: the driver goes back to the session, which hands
        // it to the next download.
        home.block_on(async { s.take("release", h, "download", |_| Some(())) })
            .unwrap();
        let next = s.driver(home.handle()).unwrap();
        assert!(Arc::ptr_eq(&next, &driver), "the driver was not reused");
        // Dropped from async code: it shuts down without blocking.
        drop(next);
        home.block_on(async move { drop(driver) });
    }
}
