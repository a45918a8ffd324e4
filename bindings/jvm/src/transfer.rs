//! Byte transfers that do not fit JSON: whole downloads as `byte[]`, pull-based
//! download streams (an `InputStream` on the Java side) and pushed uploads (an
//! `OutputStream`/`InputStream` copy on the Java side), all referred to by handle.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use bytes::Bytes;
use futures_util::StreamExt;
use opensandbox_core::execd::BytesStream;
use opensandbox_core::models::ReadOptions;
use opensandbox_core::{WriteData, WriteEntry};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::args::Args;
use crate::protocol::{internal, Failure};
use crate::state::STATE;

struct Download {
    stream: BytesStream,
    pending: Bytes,
}

struct Upload {
    tx: Option<mpsc::Sender<std::io::Result<Bytes>>>,
    task: JoinHandle<opensandbox_core::Result<()>>,
}

static NEXT: AtomicI64 = AtomicI64::new(0);
static DOWNLOADS: LazyLock<Mutex<HashMap<i64, Download>>> = LazyLock::new(Default::default);
static UPLOADS: LazyLock<Mutex<HashMap<i64, Upload>>> = LazyLock::new(Default::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn read_options(args: &Args) -> Result<ReadOptions, Failure> {
    Ok(ReadOptions {
        range: args.opt_str("range")?,
        offset: args.opt_u64("offset")?,
        limit: args.opt_u64("limit")?,
    })
}

pub async fn read_all(args: &Args) -> Result<Bytes, Failure> {
    let s = STATE.sandbox(args).await?;
    Ok(s.execd()
        .read_bytes(&args.str("path")?, &read_options(args)?)
        .await?)
}

pub async fn open_download(args: &Args) -> Result<i64, Failure> {
    let s = STATE.sandbox(args).await?;
    let stream = s
        .execd()
        .read_bytes_stream(&args.str("path")?, &read_options(args)?)
        .await?;
    let h = NEXT.fetch_add(1, Ordering::Relaxed) + 1;
    lock(&DOWNLOADS).insert(
        h,
        Download {
            stream,
            pending: Bytes::new(),
        },
    );
    Ok(h)
}

/// Up to `max` bytes of download `h`; empty at the end.
pub async fn read_chunk(h: i64, max: usize) -> Result<Bytes, Failure> {
    let mut d = lock(&DOWNLOADS)
        .remove(&h)
        .ok_or_else(|| internal(format!("no open download {h}")))?;
    let outcome = async {
        while d.pending.is_empty() {
            match d.stream.next().await {
                Some(chunk) => d.pending = chunk?,
                None => return Ok(Bytes::new()),
            }
        }
        let n = max.min(d.pending.len());
        Ok(d.pending.split_to(n))
    }
    .await;
    if outcome.is_ok() {
        lock(&DOWNLOADS).insert(h, d);
    }
    outcome
}

pub fn close_download(h: i64) {
    lock(&DOWNLOADS).remove(&h);
}

fn entry(args: &Args, data: WriteData) -> Result<WriteEntry, Failure> {
    let mut w = WriteEntry::new(args.str("path")?, data);
    w.mode = args.opt_u32("mode")?;
    w.owner = args.opt_str("owner")?;
    w.group = args.opt_str("group")?;
    Ok(w)
}

pub async fn write_bytes(args: &Args, data: Vec<u8>) -> Result<(), Failure> {
    let s = STATE.sandbox(args).await?;
    let e = entry(args, WriteData::Bytes(Bytes::from(data)))?;
    Ok(s.execd().write_files(vec![e]).await?)
}

/// Starts an upload fed by `upload_write`; must run inside the runtime.
pub async fn open_upload(args: &Args) -> Result<i64, Failure> {
    let s = STATE.sandbox(args).await?;
    let (tx, rx) = mpsc::channel::<std::io::Result<Bytes>>(8);
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let e = entry(args, WriteData::Stream(Box::pin(stream)))?;
    let execd = s.execd().clone();
    let task = tokio::spawn(async move { execd.write_files(vec![e]).await });
    let h = NEXT.fetch_add(1, Ordering::Relaxed) + 1;
    lock(&UPLOADS).insert(h, Upload { tx: Some(tx), task });
    Ok(h)
}

/// Sends one chunk (blocking the calling Java thread while the channel is full).
/// `Ok(false)` when the upload already ended: `finish_upload` reports why.
pub fn upload_write(h: i64, chunk: Vec<u8>) -> Result<bool, Failure> {
    let tx = lock(&UPLOADS)
        .get(&h)
        .and_then(|u| u.tx.clone())
        .ok_or_else(|| internal(format!("no open upload {h}")))?;
    Ok(tx.blocking_send(Ok(Bytes::from(chunk))).is_ok())
}

pub fn take_upload(h: i64) -> Result<JoinHandle<opensandbox_core::Result<()>>, Failure> {
    let mut u = lock(&UPLOADS)
        .remove(&h)
        .ok_or_else(|| internal(format!("no open upload {h}")))?;
    u.tx.take();
    Ok(u.task)
}

pub fn abort_upload(h: i64) {
    if let Some(mut u) = lock(&UPLOADS).remove(&h) {
        if let Some(tx) = u.tx.take() {
            let _ = tx.try_send(Err(std::io::Error::other("upload aborted")));
        }
        u.task.abort();
    }
}
