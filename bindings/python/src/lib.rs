//! `opensandbox._native`: the pyo3 extension module under the Python package
//! `opensandbox`.
//!
//! A deliberately small surface: a [`Client`] (one connection configuration) runs
//! named operations of `opensandbox-core` ([`ops::dispatch`]) either blocking (the GIL
//! is released while it waits) or as a task on the core's runtime that calls a Python
//! callback when it ends ([`Task::cancel`] aborts the Rust future, which closes its
//! connection). Executions, downloads and metrics watches come back as stream
//! objects whose items are fetched in batches the same two ways. The Python layer
//! (`opensandbox/_bridge.py`) turns this into the official SDK's classes.
//!
//! Every `#[pymethods]` function returns `PyResult`; errors of the core become
//! `NativeError(kind, message, status, code, request_id, operation)`.

mod args;
mod convert;
mod ops;

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use opensandbox_core::{runtime, ExecutionBuilder, ServerEvent};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use serde_json::Value;
use tokio::sync::Mutex as AsyncMutex;

use crate::ops::{Blob, Failure, Out, State};

pyo3::create_exception!(
    _native,
    NativeError,
    PyException,
    "An error of the client core: args are (kind, message, status, code, request_id, operation)."
);

/// Most events handed to Python in one batch.
const MAX_BATCH: usize = 4096;
/// Chunk size when reading a Python file-like object for an upload.
const READ_CHUNK: usize = 1024 * 1024;

fn failure_to_pyerr(f: Failure) -> PyErr {
    match f {
        Failure::Sdk(e) => NativeError::new_err((
            e.kind().as_str(),
            e.message().to_owned(),
            e.status(),
            e.code().map(str::to_owned),
            e.request_id().map(str::to_owned),
            e.operation().to_owned(),
        )),
        Failure::Driver(m) => NativeError::new_err((
            "invalid_argument",
            m,
            None::<u16>,
            None::<String>,
            None::<String>,
            "",
        )),
    }
}

fn core_err(e: opensandbox_core::Error) -> PyErr {
    failure_to_pyerr(Failure::Sdk(e))
}

fn parse_json(text: &str, what: &str) -> PyResult<Value> {
    serde_json::from_str(text)
        .map_err(|e| failure_to_pyerr(Failure::Driver(format!("{what} is not valid JSON: {e}"))))
}

/// An operation's result as a Python object: JSON text, bytes, None or a stream.
fn out_to_py(py: Python<'_>, out: Out) -> PyResult<Py<PyAny>> {
    Ok(match out {
        Out::Null => py.None(),
        Out::Json(v) => PyString::new(py, &v.to_string()).into_any().unbind(),
        Out::Bytes(b) => PyBytes::new(py, &b).into_any().unbind(),
        Out::Exec(stream, kind) => Py::new(py, ExecStream::spawn(stream, kind))?.into_any(),
        Out::Read(stream) => Py::new(py, Chunks::spawn(stream))?.into_any(),
        Out::Metrics(stream) => Py::new(py, Chunks::spawn_metrics(stream))?.into_any(),
    })
}

/// Calls `done(ok, value)` with the GIL held; a failing callback is reported, never
/// propagated into the runtime.
fn complete(done: Py<PyAny>, result: PyResult<Py<PyAny>>) {
    Python::attach(|py| {
        let (ok, value) = match result {
            Ok(v) => (true, v),
            Err(e) => (false, e.into_value(py).into_any()),
        };
        if let Err(e) = done.call1(py, (ok, value)) {
            e.print(py);
        }
    });
}

/// Runs `fut` on the core's runtime and reports its outcome through `done`.
fn spawn_with_callback<F>(fut: F, done: Py<PyAny>) -> Task
where
    F: Future<Output = PyResult<Out>> + Send + 'static,
{
    let handle = runtime::runtime().spawn(async move {
        let result = fut.await;
        let converted = Python::attach(|py| result.and_then(|out| out_to_py(py, out)));
        complete(done, converted);
    });
    Task {
        abort: handle.abort_handle(),
    }
}

/// A running asynchronous call. `cancel()` aborts the Rust future (dropping it closes
/// the request's connection); the callback is then never called.
#[pyclass(frozen, module = "opensandbox._native")]
struct Task {
    abort: tokio::task::AbortHandle,
}

#[pymethods]
impl Task {
    /// Aborts the call.
    fn cancel(&self) {
        self.abort.abort();
    }
}

/// Takes the upload data of `files.write_files` entries from Python objects: bytes-like,
/// str (UTF-8) or an object with `read(n)`, streamed chunk by chunk.
fn blob_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Option<Blob>> {
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Some(Blob::Text(s.extract::<String>()?)));
    }
    if let Ok(b) = obj.extract::<Cow<'_, [u8]>>() {
        return Ok(Some(Blob::Bytes(Bytes::copy_from_slice(&b))));
    }
    if obj.hasattr("read")? {
        if let Some(data) = os_file(obj) {
            return Ok(Some(Blob::Stream(data)));
        }
        let len = remaining_len(obj);
        let reader: Py<PyAny> = obj.clone().unbind();
        return Ok(Some(Blob::Stream(reader_stream(reader, len))));
    }
    Err(failure_to_pyerr(Failure::Driver(
        "file data must be str, bytes or a readable file object".into(),
    )))
}

/// A binary Python file object backed by a regular file on disk (`open(path, "rb")`):
/// read by Rust directly from its current position, without the GIL. `None` for
/// anything else (pipes, sockets, in-memory buffers, text files).
fn os_file(obj: &Bound<'_, PyAny>) -> Option<opensandbox_core::WriteData> {
    use std::io::{Seek, SeekFrom};
    if !obj.hasattr("fileno").unwrap_or(false) || obj.hasattr("encoding").unwrap_or(true) {
        return None;
    }
    let name = obj.getattr("name").ok()?.extract::<String>().ok()?;
    let pos = obj.call_method0("tell").ok()?.extract::<u64>().ok()?;
    let mut file = std::fs::File::open(&name).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    file.seek(SeekFrom::Start(pos)).ok()?;
    // Leave the Python object where a full read would: at the end.
    obj.call_method1("seek", (0, 2)).ok()?;
    Some(opensandbox_core::WriteData::Reader {
        reader: Box::new(tokio::fs::File::from_std(file)),
        len: Some(meta.len().saturating_sub(pos)),
    })
}

/// The bytes left in a seekable binary file object (`None` when unknown). A known
/// length gives the upload a Content-Length instead of a chunked body.
fn remaining_len(obj: &Bound<'_, PyAny>) -> Option<u64> {
    let seekable = obj
        .call_method0("seekable")
        .and_then(|v| v.extract::<bool>())
        .unwrap_or(false);
    // Text files count characters, not bytes: their length is unknown.
    let binary = !obj
        .getattr("encoding")
        .map(|e| !e.is_none())
        .unwrap_or(false);
    if !seekable || !binary {
        return None;
    }
    let pos = obj.call_method0("tell").ok()?.extract::<u64>().ok()?;
    let end = obj
        .call_method1("seek", (0, 2))
        .ok()?
        .extract::<u64>()
        .ok()?;
    obj.call_method1("seek", (pos,)).ok()?;
    end.checked_sub(pos)
}

/// Reads `reader.read(READ_CHUNK)` on a blocking thread until it returns an empty
/// value; str chunks are encoded as UTF-8. With `len`, the data is sent with a
/// Content-Length.
fn reader_stream(reader: Py<PyAny>, len: Option<u64>) -> opensandbox_core::WriteData {
    let stream = futures_util::stream::unfold(Some(reader), |state| async move {
        let reader = state?;
        let read = tokio::task::spawn_blocking(move || {
            Python::attach(|py| -> PyResult<(Bytes, Py<PyAny>)> {
                let chunk = reader.call_method1(py, "read", (READ_CHUNK,))?;
                let chunk = chunk.bind(py);
                let data = if let Ok(s) = chunk.cast::<PyString>() {
                    Bytes::from(s.extract::<String>()?.into_bytes())
                } else {
                    Bytes::copy_from_slice(&chunk.extract::<Cow<'_, [u8]>>()?)
                };
                Ok((data, reader))
            })
        })
        .await;
        match read {
            Ok(Ok((data, _))) if data.is_empty() => None,
            Ok(Ok((data, reader))) => Some((Ok(data), Some(reader))),
            Ok(Err(e)) => Some((Err(std::io::Error::other(e.to_string())), None)),
            Err(e) => Some((Err(std::io::Error::other(e.to_string())), None)),
        }
    });
    match len {
        Some(len) => opensandbox_core::WriteData::Reader {
            reader: Box::new(tokio_util::io::StreamReader::new(Box::pin(stream))),
            len: Some(len),
        },
        None => opensandbox_core::WriteData::Stream(Box::pin(stream)),
    }
}

/// One connection configuration and the sandbox handles made through it.
#[pyclass(frozen, module = "opensandbox._native")]
struct Client {
    state: Arc<State>,
}

impl Client {
    fn prepare(
        &self,
        op: String,
        args: &str,
        blobs: Option<&Bound<'_, PyList>>,
    ) -> PyResult<impl Future<Output = PyResult<Out>> + Send + 'static> {
        let args = parse_json(args, "args")?;
        let mut data = Vec::new();
        if let Some(list) = blobs {
            for item in list.iter() {
                data.push(blob_from_py(&item)?);
            }
        }
        let state = self.state.clone();
        Ok(async move {
            ops::dispatch(state, op, args, data)
                .await
                .map_err(failure_to_pyerr)
        })
    }
}

#[pymethods]
impl Client {
    /// A client over `config` (JSON: domain, api_key, protocol, request_timeout_s,
    /// headers, user_agent, use_server_proxy).
    #[new]
    fn new(config: &str) -> PyResult<Self> {
        let cfg = parse_json(config, "config")?;
        let state = State::new(&cfg).map_err(failure_to_pyerr)?;
        Ok(Client {
            state: Arc::new(state),
        })
    }

    /// Runs `op` and waits for it with the GIL released.
    #[pyo3(signature = (op, args, blobs=None))]
    fn call(
        &self,
        py: Python<'_>,
        op: String,
        args: &str,
        blobs: Option<&Bound<'_, PyList>>,
    ) -> PyResult<Py<PyAny>> {
        let fut = self.prepare(op, args, blobs)?;
        let out = py.detach(|| runtime::block_on(fut))?;
        out_to_py(py, out)
    }

    /// Starts `op` on the core's runtime; `done(ok, value)` is called when it ends.
    #[pyo3(signature = (op, args, done, blobs=None))]
    fn call_async(
        &self,
        op: String,
        args: &str,
        done: Py<PyAny>,
        blobs: Option<&Bound<'_, PyList>>,
    ) -> PyResult<Task> {
        let fut = self.prepare(op, args, blobs)?;
        Ok(spawn_with_callback(fut, done))
    }

    /// Drops the kept handle of a sandbox.
    fn forget(&self, sandbox_id: &str) {
        self.state.forget(sandbox_id);
    }
}

/// One event as a tuple for Python.
fn event_to_py(py: Python<'_>, ev: &ServerEvent) -> PyResult<Py<PyAny>> {
    let t = match ev {
        ServerEvent::Init { id, timestamp } => {
            ("init", id.as_str(), *timestamp).into_pyobject(py)?
        }
        ServerEvent::Stdout(m) => ("stdout", m.text.as_str(), m.timestamp).into_pyobject(py)?,
        ServerEvent::Stderr(m) => ("stderr", m.text.as_str(), m.timestamp).into_pyobject(py)?,
        ServerEvent::Result(r) => (
            "result",
            r.text.as_deref(),
            r.timestamp,
            Value::Object(r.raw.clone()).to_string(),
        )
            .into_pyobject(py)?,
        ServerEvent::ExecutionCount { count, timestamp } => {
            ("count", *count, *timestamp).into_pyobject(py)?
        }
        ServerEvent::Status { text, timestamp } => {
            ("status", text.as_str(), *timestamp).into_pyobject(py)?
        }
        ServerEvent::Error(e) => (
            "error",
            e.name.as_str(),
            e.value.as_str(),
            e.timestamp,
            e.traceback.clone(),
        )
            .into_pyobject(py)?,
        ServerEvent::Complete(c) => {
            ("complete", c.timestamp, c.execution_time_ms).into_pyobject(py)?
        }
    };
    Ok(t.into_any().unbind())
}

enum ExecMsg {
    Events(Vec<ServerEvent>),
    /// The exit code per the official rules, after the last event.
    End(Option<i32>),
    Failed(opensandbox_core::Error),
}

type Receiver<T> = Arc<AsyncMutex<tokio::sync::mpsc::Receiver<T>>>;

/// The events of one execution, in order, fetched in batches. Dropping it (or
/// `close()`) aborts the reader, which closes the connection.
#[pyclass(frozen, module = "opensandbox._native")]
struct ExecStream {
    rx: Receiver<ExecMsg>,
    abort: tokio::task::AbortHandle,
}

impl ExecStream {
    fn spawn(
        mut stream: opensandbox_core::EventStream,
        kind: opensandbox_core::ExecutionKind,
    ) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(8);
        let handle = runtime::runtime().spawn(async move {
            let mut builder = ExecutionBuilder::new(kind).skip_accumulation(true);
            loop {
                let first = match stream.next().await {
                    None => break,
                    Some(Err(e)) => {
                        let _ = tx.send(ExecMsg::Failed(e)).await;
                        return;
                    }
                    Some(Ok(ev)) => ev,
                };
                let mut batch = vec![first];
                let mut failed = None;
                while batch.len() < MAX_BATCH {
                    match stream.next().now_or_never() {
                        Some(Some(Ok(ev))) => batch.push(ev),
                        Some(Some(Err(e))) => {
                            failed = Some(e);
                            break;
                        }
                        _ => break,
                    }
                }
                for ev in &batch {
                    // Only the exit-code bookkeeping: no handlers on this side.
                    if let Err(e) = builder.apply(ev.clone(), &mut ()) {
                        failed = Some(e);
                    }
                }
                if tx.send(ExecMsg::Events(batch)).await.is_err() {
                    return;
                }
                if let Some(e) = failed {
                    let _ = tx.send(ExecMsg::Failed(e)).await;
                    return;
                }
            }
            let _ = tx.send(ExecMsg::End(builder.finish().exit_code)).await;
        });
        ExecStream {
            rx: Arc::new(AsyncMutex::new(rx)),
            abort: handle.abort_handle(),
        }
    }
}

/// Next message as a Python value: a list of event tuples, `("end", exit_code)`, or
/// `None` after the end.
fn exec_msg_to_py(py: Python<'_>, msg: Option<ExecMsg>) -> PyResult<Py<PyAny>> {
    match msg {
        None => Ok(py.None()),
        Some(ExecMsg::Events(batch)) => {
            let items = batch
                .iter()
                .map(|e| event_to_py(py, e))
                .collect::<PyResult<Vec<_>>>()?;
            Ok(PyList::new(py, items)?.into_any().unbind())
        }
        Some(ExecMsg::End(code)) => Ok(PyTuple::new(
            py,
            [
                "end".into_pyobject(py)?.into_any(),
                code.into_pyobject(py)?.into_any(),
            ],
        )?
        .into_any()
        .unbind()),
        Some(ExecMsg::Failed(e)) => Err(core_err(e)),
    }
}

#[pymethods]
impl ExecStream {
    /// Blocks (GIL released) for the next batch; see `exec_msg_to_py`.
    fn next_batch(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let rx = self.rx.clone();
        let msg = py.detach(|| runtime::block_on(async move { rx.lock().await.recv().await }));
        exec_msg_to_py(py, msg)
    }

    /// Fetches the next batch on the runtime and calls `done(ok, value)`.
    fn next_batch_async(&self, done: Py<PyAny>) -> Task {
        let rx = self.rx.clone();
        let handle = runtime::runtime().spawn(async move {
            let msg = rx.lock().await.recv().await;
            let value = Python::attach(|py| exec_msg_to_py(py, msg));
            complete(done, value);
        });
        Task {
            abort: handle.abort_handle(),
        }
    }

    /// Stops reading and closes the connection.
    fn close(&self) {
        self.abort.abort();
    }
}

impl Drop for ExecStream {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

/// Most bytes handed to Python as one download chunk.
const MAX_CHUNK: usize = 1024 * 1024;

/// What [`coalesce`] found after the chunks that were ready.
enum After {
    More,
    End,
    Failed(opensandbox_core::Error),
}

/// `first` plus the chunks that have already arrived (never waiting), up to
/// [`MAX_CHUNK`]: fewer, larger items for Python.
fn coalesce(first: Bytes, stream: &mut opensandbox_core::execd::BytesStream) -> (Bytes, After) {
    if first.len() >= MAX_CHUNK {
        return (first, After::More);
    }
    let mut buf: Option<bytes::BytesMut> = None;
    let mut after = After::More;
    while buf.as_ref().map_or(first.len(), |b| b.len()) < MAX_CHUNK {
        match stream.next().now_or_never() {
            Some(Some(Ok(next))) => buf
                .get_or_insert_with(|| {
                    let mut b = bytes::BytesMut::with_capacity(MAX_CHUNK);
                    b.extend_from_slice(&first);
                    b
                })
                .extend_from_slice(&next),
            Some(Some(Err(e))) => {
                after = After::Failed(e);
                break;
            }
            Some(None) => {
                after = After::End;
                break;
            }
            None => break,
        }
    }
    (buf.map_or(first, bytes::BytesMut::freeze), after)
}

enum ChunkMsg {
    Data(Bytes),
    Metrics(Value),
    Failed(opensandbox_core::Error),
}

/// A download (bytes chunks) or a metrics watch (JSON samples), fetched one item at a
/// time. Dropping it closes the connection.
#[pyclass(frozen, module = "opensandbox._native")]
struct Chunks {
    rx: Receiver<ChunkMsg>,
    abort: tokio::task::AbortHandle,
}

impl Chunks {
    fn spawn(mut stream: opensandbox_core::execd::BytesStream) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let handle = runtime::runtime().spawn(async move {
            while let Some(item) = stream.next().await {
                let first = match item {
                    Ok(b) => b,
                    Err(e) => {
                        let _ = tx.send(ChunkMsg::Failed(e)).await;
                        return;
                    }
                };
                let (data, after) = coalesce(first, &mut stream);
                if tx.send(ChunkMsg::Data(data)).await.is_err() {
                    return;
                }
                match after {
                    After::More => {}
                    After::End => return,
                    After::Failed(e) => {
                        let _ = tx.send(ChunkMsg::Failed(e)).await;
                        return;
                    }
                }
            }
        });
        Chunks {
            rx: Arc::new(AsyncMutex::new(rx)),
            abort: handle.abort_handle(),
        }
    }

    fn spawn_metrics(mut stream: opensandbox_core::MetricsStream) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let handle = runtime::runtime().spawn(async move {
            while let Some(item) = stream.next().await {
                let msg = match item {
                    Ok(m) => ChunkMsg::Metrics(convert::metrics(&m)),
                    Err(e) => ChunkMsg::Failed(e),
                };
                let last = matches!(msg, ChunkMsg::Failed(_));
                if tx.send(msg).await.is_err() || last {
                    return;
                }
            }
        });
        Chunks {
            rx: Arc::new(AsyncMutex::new(rx)),
            abort: handle.abort_handle(),
        }
    }
}

fn chunk_to_py(py: Python<'_>, msg: Option<ChunkMsg>) -> PyResult<Py<PyAny>> {
    match msg {
        None => Ok(py.None()),
        Some(ChunkMsg::Data(b)) => Ok(PyBytes::new(py, &b).into_any().unbind()),
        Some(ChunkMsg::Metrics(v)) => Ok(PyString::new(py, &v.to_string()).into_any().unbind()),
        Some(ChunkMsg::Failed(e)) => Err(core_err(e)),
    }
}

#[pymethods]
impl Chunks {
    /// Blocks (GIL released) for the next item; `None` at the end.
    fn next_item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let rx = self.rx.clone();
        let msg = py.detach(|| runtime::block_on(async move { rx.lock().await.recv().await }));
        chunk_to_py(py, msg)
    }

    /// Fetches the next item on the runtime and calls `done(ok, value)`.
    fn next_item_async(&self, done: Py<PyAny>) -> Task {
        let rx = self.rx.clone();
        let handle = runtime::runtime().spawn(async move {
            let msg = rx.lock().await.recv().await;
            let value = Python::attach(|py| chunk_to_py(py, msg));
            complete(done, value);
        });
        Task {
            abort: handle.abort_handle(),
        }
    }

    /// Stops reading and closes the connection.
    fn close(&self) {
        self.abort.abort();
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

/// The module `opensandbox._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Client>()?;
    m.add_class::<Task>()?;
    m.add_class::<ExecStream>()?;
    m.add_class::<Chunks>()?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
