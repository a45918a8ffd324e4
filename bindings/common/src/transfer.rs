//! Bytes that do not fit JSON, by handle: streamed uploads fed by the host
//! (`upload.open`, [`Session::upload_write`], `upload.finish` / `upload.abort`) and
//! pulled downloads (`download.open`, [`Session::download_read`], `download.close`),
//! plus whole-buffer reads and writes ([`Session::read_bytes`],
//! [`Session::write_bytes`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use futures_util::StreamExt;
use opensandbox_core::execd::BytesStream;
use opensandbox_core::{WriteData, WriteEntry};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::args::{parse, ReadArgs, UploadArgs, WriteFileArgs};
use crate::error::{OpError, OpResult};
use crate::ops::files::{read_options, write_entry};
use crate::session::{Entry, Session};

/// An open download.
pub struct Download {
    state: tokio::sync::Mutex<(BytesStream, Bytes)>,
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
    let h = s.insert(Entry::Download(std::sync::Arc::new(Download {
        state: tokio::sync::Mutex::new((stream, Bytes::new())),
    })));
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

    /// Up to `max` bytes of download `handle`; empty at the end.
    ///
    /// # Errors
    /// The download's error, or `invalid_argument` for a stale handle.
    pub async fn download_read(&self, handle: u64, max: usize) -> Result<Bytes, OpError> {
        let d = self.typed("download.read", handle, "download", |e| match e {
            Entry::Download(d) => Some(d.clone()),
            _ => None,
        })?;
        let mut g = d.state.lock().await;
        let (stream, pending) = &mut *g;
        while pending.is_empty() {
            match stream.next().await {
                Some(chunk) => *pending = chunk?,
                None => return Ok(Bytes::new()),
            }
        }
        let n = max.max(1).min(pending.len());
        Ok(pending.split_to(n))
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
