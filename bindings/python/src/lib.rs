//! `opensandbox._native`: the pyo3 extension module under the Python package
//! `opensandbox`. Transport only: every operation is an op of the one op layer
//! (`opensandbox-bindings`, see bindings/common/README.md), called by name with a
//! Python dict of arguments in the op layer's spelling, its result handed back as
//! Python values.
//!
//! - A [`Client`] is one op-layer `Session` over one connection configuration.
//! - `call` runs an op blocking (the GIL released while it waits); `call_async` runs
//!   it on the core's runtime and calls `done(ok, value)` when it ends. The returned
//!   [`Task`]'s `cancel()` drops the Rust future, which closes its connection.
//! - Executions are the op layer's started runs: the Python layer pulls batches with
//!   `execution.next_batch` and reads the folded outcome (exit code, ...) from the
//!   final `end` item; user handlers run on the caller's thread, never on a runtime
//!   worker.
//! - Bytes that do not fit JSON: `read_bytes`, `read_chunks` (of a `download.open`
//!   handle, `download.rs`), `write_files` data from bytes / str / file objects (streamed), and
//!   the metrics watch.
//!
//! Errors of the op layer become `NativeError(kind, message, status, code,
//! request_id, operation)`.

mod convert;
mod download;
mod events;
mod interpreter;

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use opensandbox_bindings::args::{
    parse, ConnectionArgs, ConnectionRef, SandboxArgs, WriteFilesArgs,
};
use opensandbox_bindings::{OpError, Session};
use opensandbox_core::{runtime, WriteData, WriteEntry};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyType};
use serde_json::Value;
use tokio::sync::Mutex as AsyncMutex;

pyo3::create_exception!(
    _native,
    NativeError,
    PyException,
    "An error of the op layer: args are (kind, message, status, code, request_id, operation)."
);

/// Chunk size when reading a Python file-like object for an upload.
const READ_CHUNK: usize = 1024 * 1024;

fn op_err(e: OpError) -> PyErr {
    let e = *e.0;
    NativeError::new_err((
        e.kind,
        e.message,
        e.status,
        e.code,
        e.request_id,
        e.operation.unwrap_or_default(),
    ))
}

/// What an async call hands back: a JSON result, bytes, or bytes in parts.
enum Out {
    Json(Value),
    Bytes(Bytes),
    /// A download read handed over as `bytes` of `size` each (`download::ReadChunks`).
    Chunks {
        data: Vec<u8>,
        size: usize,
    },
}

fn out_to_py(py: Python<'_>, out: Out) -> PyResult<Py<PyAny>> {
    match out {
        Out::Json(v) => convert::to_py(py, &v),
        Out::Bytes(b) => Ok(PyBytes::new(py, &b).into_any().unbind()),
        Out::Chunks { data, size } => {
            Ok(Py::new(py, download::ReadChunks::new(data, size))?.into_any())
        }
    }
}

/// Calls `done(ok, value)` with the value `make` builds, from a runtime thread; a failing
/// callback is reported, never propagated into the runtime. Once the interpreter is
/// exiting nothing is called (`interpreter::attach`).
fn deliver(done: Py<PyAny>, make: impl for<'py> FnOnce(Python<'py>) -> PyResult<Py<PyAny>>) {
    interpreter::attach(|py| {
        let (ok, value) = match make(py) {
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
    F: Future<Output = Result<Out, OpError>> + Send + 'static,
{
    let handle = runtime::runtime().spawn(async move {
        let result = fut.await;
        deliver(done, |py| {
            result.map_err(op_err).and_then(|out| out_to_py(py, out))
        });
    });
    Task {
        abort: handle.abort_handle(),
    }
}

/// Waits for op `op`'s future `fut` with the GIL released: on this thread's own runtime when the op
/// finishes everything within the call, else on a runtime worker next to its
/// connection, this thread woken once, at the end (`opensandbox_bindings::block_on_op`).
fn block_request<F>(py: Python<'_>, session: &Session, op: &str, fut: F) -> PyResult<Py<PyAny>>
where
    F: Future<Output = Result<Out, OpError>> + Send + 'static,
{
    let out = py
        .detach(|| opensandbox_bindings::block_on_op(runtime::runtime().handle(), session, op, fut))
        .map_err(|e| {
            op_err(OpError::internal(
                "call",
                format!("the call's task failed: {e}"),
            ))
        })?
        .map_err(op_err)?;
    out_to_py(py, out)
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
fn blob_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Option<WriteData>> {
    if obj.is_none() {
        return Ok(None);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Some(WriteData::Text(s.extract::<String>()?)));
    }
    if let Ok(b) = obj.extract::<Cow<'_, [u8]>>() {
        return Ok(Some(WriteData::Bytes(Bytes::copy_from_slice(&b))));
    }
    if obj.hasattr("read")? {
        if let Some(data) = os_file(obj) {
            return Ok(Some(data));
        }
        let len = remaining_len(obj);
        let reader: Py<PyAny> = obj.clone().unbind();
        return Ok(Some(reader_stream(reader, len)));
    }
    Err(op_err(OpError::invalid(
        "files.write_files",
        "file data must be str, bytes or a readable file object",
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
            interpreter::attach(|py| -> PyResult<(Bytes, Py<PyAny>)> {
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
        let read = read.map(|r| {
            r.unwrap_or_else(|| {
                Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "the interpreter is exiting",
                ))
            })
        });
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

/// `files.write_files` with the entries' data taken from Python objects: entry `i`
/// (path, mode, owner, group, or inline `data`) gets `blobs[i]` when given, so bytes
/// and file objects stream without a JSON copy. The arguments, the sandbox and the
/// error payload are the op layer's.
async fn write_files(
    session: Arc<Session>,
    args: Value,
    mut blobs: Vec<Option<WriteData>>,
) -> Result<Out, OpError> {
    const OP: &str = "files.write_files";
    let a: WriteFilesArgs = parse(OP, args)?;
    // The sandbox's file client, or its identity / isolated-session one (1.1).
    let execd = opensandbox_bindings::ops::files::files_client(&session, OP, &a).await?;
    let mut entries = Vec::with_capacity(a.entries.len());
    for (i, e) in a.entries.into_iter().enumerate() {
        let data = match blobs.get_mut(i).and_then(Option::take) {
            Some(d) => d,
            None => WriteData::Text(e.data.unwrap_or_default()),
        };
        let mut w = WriteEntry::new(e.path, data);
        w.mode = e.mode;
        w.owner = e.owner;
        w.group = e.group;
        entries.push(w);
    }
    execd.write_files(entries).await?;
    Ok(Out::Json(Value::Null))
}

/// One op-layer session over one connection configuration, shared by every handle
/// made from that configuration.
#[pyclass(frozen, module = "opensandbox._native")]
struct Client {
    session: Arc<Session>,
}

impl Client {
    /// The future of `op` (`files.write_files` with `blobs` takes the Python data).
    fn prepare(
        &self,
        op: String,
        args: &Bound<'_, PyAny>,
        blobs: Option<&Bound<'_, PyList>>,
    ) -> PyResult<impl Future<Output = Result<Out, OpError>> + Send + 'static> {
        let args = convert::to_value(args)
            .map_err(|e| op_err(OpError::invalid(&op, format!("{op}: {e}"))))?;
        let session = self.session.clone();
        let data = match blobs {
            Some(list) if op == "files.write_files" => Some(
                list.iter()
                    .map(|item| blob_from_py(&item))
                    .collect::<PyResult<Vec<_>>>()?,
            ),
            Some(_) => {
                return Err(op_err(OpError::invalid(
                    &op,
                    format!("{op}: takes no data objects"),
                )))
            }
            None => None,
        };
        Ok(async move {
            match data {
                Some(data) => write_files(session, args, data).await,
                None => session.call(&op, args).await.map(Out::Json),
            }
        })
    }

    fn read_bytes_fut(
        &self,
        args: &Bound<'_, PyAny>,
    ) -> PyResult<impl Future<Output = Result<Out, OpError>> + Send + 'static> {
        let args = convert::to_value(args)?;
        let session = self.session.clone();
        Ok(async move { session.read_bytes(args).await.map(Out::Bytes) })
    }

    fn read_chunks_fut(
        &self,
        handle: u64,
        max: usize,
        size: usize,
    ) -> impl Future<Output = Result<Out, OpError>> + Send + 'static {
        let session = self.session.clone();
        async move {
            download::read_vec(&session, handle, max)
                .await
                .map(|data| Out::Chunks { data, size })
        }
    }

    fn watch_fut(
        &self,
        args: &Bound<'_, PyAny>,
    ) -> PyResult<
        impl Future<Output = Result<opensandbox_core::MetricsStream, OpError>> + Send + 'static,
    > {
        const OP: &str = "metrics.watch";
        let a: SandboxArgs = parse(OP, convert::to_value(args)?).map_err(op_err)?;
        let session = self.session.clone();
        Ok(async move {
            let sb = session.sandbox(OP, &a).await?;
            Ok(sb.execd().watch_metrics().await?)
        })
    }
}

#[pymethods]
impl Client {
    /// A session over `config` (`config.new` arguments of the op layer: domain,
    /// api_key, protocol, request_timeout_s, headers, user_agent, use_server_proxy;
    /// absent keys fall back to the environment and the core's defaults).
    #[new]
    fn new(config: &Bound<'_, PyAny>) -> PyResult<Self> {
        const OP: &str = "config.new";
        let c: ConnectionArgs = parse(OP, convert::to_value(config)?).map_err(op_err)?;
        // The op layer applies the overrides: a config handle of a scratch session,
        // whose configuration becomes this session's base.
        let scratch = Session::new();
        let h = scratch.new_config(OP, &c).map_err(op_err)?;
        let (cfg, _) = scratch
            .config(OP, Some(&ConnectionRef::Handle(h)))
            .map_err(op_err)?;
        Ok(Client {
            session: Arc::new(Session::with_config(cfg)),
        })
    }

    /// Runs `op` and waits for it with the GIL released.
    #[pyo3(signature = (op, args, blobs=None))]
    fn call(
        &self,
        py: Python<'_>,
        op: String,
        args: &Bound<'_, PyAny>,
        blobs: Option<&Bound<'_, PyList>>,
    ) -> PyResult<Py<PyAny>> {
        let name = op.clone();
        let fut = self.prepare(op, args, blobs)?;
        block_request(py, &self.session, &name, fut)
    }

    /// Starts `op` on the core's runtime; `done(ok, value)` is called when it ends.
    #[pyo3(signature = (op, args, done, blobs=None))]
    fn call_async(
        &self,
        op: String,
        args: &Bound<'_, PyAny>,
        done: Py<PyAny>,
        blobs: Option<&Bound<'_, PyList>>,
    ) -> PyResult<Task> {
        let fut = self.prepare(op, args, blobs)?;
        Ok(spawn_with_callback(fut, done))
    }

    /// The bytes of a file (`files.read_bytes` arguments), blocking.
    fn read_bytes(&self, py: Python<'_>, args: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let fut = self.read_bytes_fut(args)?;
        block_request(py, &self.session, "files.read_bytes", fut)
    }

    /// The bytes of a file, as a task.
    fn read_bytes_async(&self, args: &Bound<'_, PyAny>, done: Py<PyAny>) -> PyResult<Task> {
        Ok(spawn_with_callback(self.read_bytes_fut(args)?, done))
    }

    /// Up to `max` bytes of download `handle` (`download.open`) as a list of `bytes` of
    /// `size` each, the last shorter only at the end; empty at the end. Blocking, read
    /// straight into the `bytes` with the GIL released (`download::read_chunks`).
    fn read_chunks(
        &self,
        py: Python<'_>,
        handle: u64,
        max: usize,
        size: usize,
    ) -> PyResult<Py<PyList>> {
        download::read_chunks(py, &self.session, handle, max, size)
    }

    /// [`Client::read_chunks`] as a task: the list is built in the callback.
    fn read_chunks_async(&self, handle: u64, max: usize, size: usize, done: Py<PyAny>) -> Task {
        spawn_with_callback(self.read_chunks_fut(handle, max, size), done)
    }

    /// Pulls the next batch of a started run (blocking, the GIL released while it
    /// waits) and calls its handlers in item order on this thread: `on_stdout` /
    /// `on_stderr` (None: that stream's lines are dropped unbuilt) with each line's
    /// `OutputMessage` of class `cls`, `on_other` with every other item's dict
    /// (`events::dispatch`). Returns whether the run's end was in the batch.
    #[pyo3(signature = (handle, max, cls, on_stdout, on_stderr, on_other))]
    #[allow(clippy::too_many_arguments)]
    fn dispatch_events<'py>(
        &self,
        py: Python<'py>,
        handle: u64,
        max: usize,
        cls: &Bound<'py, PyType>,
        on_stdout: Option<Bound<'py, PyAny>>,
        on_stderr: Option<Bound<'py, PyAny>>,
        on_other: &Bound<'py, PyAny>,
    ) -> PyResult<bool> {
        let session = self.session.clone();
        let batch = py
            .detach(|| runtime::block_on(session.next_items(handle, max, None)))
            .map_err(op_err)?;
        events::dispatch(
            py,
            batch,
            cls,
            on_stdout.as_ref(),
            on_stderr.as_ref(),
            on_other,
        )
    }

    /// The next items of run `handle` (`execution.next_batch`) for an async run, as a
    /// task: `done(ok, (groups, done))` with `groups` as `events::to_groups` makes them
    /// (`cls` is the `OutputMessage` class to build; output of a stream whose flag is
    /// false is dropped).
    #[pyo3(signature = (handle, max, cls, stdout, stderr, done))]
    fn next_events_async(
        &self,
        handle: u64,
        max: usize,
        cls: Py<PyType>,
        stdout: bool,
        stderr: bool,
        done: Py<PyAny>,
    ) -> Task {
        let session = self.session.clone();
        let task = runtime::runtime().spawn(async move {
            let batch = session.next_items(handle, max, None).await;
            deliver(done, |py| {
                let batch = batch.map_err(op_err)?;
                events::to_groups(py, batch, cls.bind(py), stdout, stderr)
                    .map(|t| t.into_any().unbind())
            });
        });
        Task {
            abort: task.abort_handle(),
        }
    }

    /// Opens the metrics watch of a sandbox (`{sandbox}`), blocking.
    fn watch_metrics(&self, py: Python<'_>, args: &Bound<'_, PyAny>) -> PyResult<Watch> {
        let fut = self.watch_fut(args)?;
        let stream = py.detach(|| runtime::block_on(fut)).map_err(op_err)?;
        Ok(Watch::spawn(stream))
    }

    /// Opens the metrics watch as a task; `done(ok, Watch)`.
    fn watch_metrics_async(&self, args: &Bound<'_, PyAny>, done: Py<PyAny>) -> PyResult<Task> {
        let fut = self.watch_fut(args)?;
        let handle = runtime::runtime().spawn(async move {
            let result = fut.await;
            deliver(done, |py| match result {
                Ok(stream) => Py::new(py, Watch::spawn(stream)).map(Py::into_any),
                Err(e) => Err(op_err(e)),
            });
        });
        Ok(Task {
            abort: handle.abort_handle(),
        })
    }

    /// Drops the kept handle of a sandbox id.
    fn forget(&self, sandbox_id: &str) {
        self.session.forget(sandbox_id);
    }
}

type Receiver<T> = Arc<AsyncMutex<tokio::sync::mpsc::Receiver<T>>>;

/// A metrics watch: samples (op-layer `Metrics` dicts) fetched one at a time.
/// Dropping it (or `close()`) closes the connection.
#[pyclass(frozen, module = "opensandbox._native")]
struct Watch {
    rx: Receiver<Result<Value, OpError>>,
    abort: tokio::task::AbortHandle,
}

impl Watch {
    fn spawn(mut stream: opensandbox_core::MetricsStream) -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let handle = runtime::runtime().spawn(async move {
            while let Some(item) = stream.next().await {
                let msg = item
                    .map(|m| opensandbox_bindings::convert::metrics(&m))
                    .map_err(OpError::from);
                let last = msg.is_err();
                if tx.send(msg).await.is_err() || last {
                    return;
                }
            }
        });
        Watch {
            rx: Arc::new(AsyncMutex::new(rx)),
            abort: handle.abort_handle(),
        }
    }
}

fn sample_to_py(py: Python<'_>, msg: Option<Result<Value, OpError>>) -> PyResult<Py<PyAny>> {
    match msg {
        None => Ok(py.None()),
        Some(Ok(v)) => convert::to_py(py, &v),
        Some(Err(e)) => Err(op_err(e)),
    }
}

#[pymethods]
impl Watch {
    /// Blocks (GIL released) for the next sample; `None` at the end.
    fn next_item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let rx = self.rx.clone();
        let msg = py.detach(|| runtime::block_on(async move { rx.lock().await.recv().await }));
        sample_to_py(py, msg)
    }

    /// Fetches the next sample on the runtime and calls `done(ok, value)`.
    fn next_item_async(&self, done: Py<PyAny>) -> Task {
        let rx = self.rx.clone();
        let handle = runtime::runtime().spawn(async move {
            let msg = rx.lock().await.recv().await;
            deliver(done, |py| sample_to_py(py, msg));
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

impl Drop for Watch {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

/// The op layer's manifest: `{"version", "ops": [{"name", "args": [{"name", "type",
/// "required", "nullable"}], "result"}]}`.
/// `[cls(text=t, timestamp=ts, is_error=is_error) for t, ts in zip(texts, stamps)]`
/// built as `model_construct` would, without validation (`events::messages`).
#[pyfunction]
fn output_messages<'py>(
    cls: &Bound<'py, PyType>,
    texts: &Bound<'py, PyList>,
    stamps: &Bound<'py, PyList>,
    is_error: bool,
) -> PyResult<Bound<'py, PyList>> {
    events::messages(cls, texts, stamps, is_error)
}

#[pyfunction]
fn ops_manifest(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let m = serde_json::to_value(opensandbox_bindings::ops_manifest())
        .map_err(|e| op_err(OpError::internal("ops_manifest", e.to_string())))?;
    convert::to_py(py, &m)
}

/// The module `opensandbox._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Client>()?;
    m.add_class::<Task>()?;
    m.add_class::<Watch>()?;
    m.add_class::<download::ReadChunks>()?;
    m.add_function(wrap_pyfunction!(ops_manifest, m)?)?;
    m.add_function(wrap_pyfunction!(output_messages, m)?)?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    interpreter::register(m)?;
    Ok(())
}
