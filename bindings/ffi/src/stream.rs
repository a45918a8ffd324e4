//! `OsbStream` and `OsbEvent`: pull iteration over execution and metrics streams.

use std::ffi::c_char;
use std::sync::Arc;

use futures_util::StreamExt;
use opensandbox_core::execd::MetricsStream;
use opensandbox_core::models::SandboxMetrics;
use opensandbox_core::{EventStream, Result, RunControl, ServerEvent};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::cancel::OsbCancel;
use crate::error::OsbError;
use crate::ops::{CodeRunArgs, RunArgs, SessionRunArgs};
use crate::sandbox::OsbSandbox;
use crate::util::{
    block, cancelled, guard, guard_result, internal, into_c_string, invalid, opt_str, parse_args,
    req_str, start, token, Completion, OsbCallback, Payload,
};

/// `init`: `text` is the execution id.
pub const OSB_EVENT_INIT: i32 = 0;
/// `stdout`: `text` is one line (without its newline).
pub const OSB_EVENT_STDOUT: i32 = 1;
/// `stderr`: `text` is one line.
pub const OSB_EVENT_STDERR: i32 = 2;
/// `result`: a code result; read it with `osb_event_json`.
pub const OSB_EVENT_RESULT: i32 = 3;
/// `execution_count`: read the count with `osb_event_json`.
pub const OSB_EVENT_EXECUTION_COUNT: i32 = 4;
/// `status`: `text` is the status text.
pub const OSB_EVENT_STATUS: i32 = 5;
/// `error`: read name/value/traceback with `osb_event_json`.
pub const OSB_EVENT_ERROR: i32 = 6;
/// `execution_complete`: read `execution_time_ms` with `osb_event_json`.
pub const OSB_EVENT_EXECUTION_COMPLETE: i32 = 7;
/// A metrics sample (`metrics.watch`); read it with `osb_event_json`.
pub const OSB_EVENT_METRICS: i32 = 8;

enum Source {
    Exec(EventStream),
    Metrics(MetricsStream),
}

/// An open execution or metrics stream (opaque). Freed with `osb_stream_free`.
pub struct OsbStream {
    state: Arc<tokio::sync::Mutex<Option<Source>>>,
    closed: CancellationToken,
}

impl Drop for OsbStream {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

enum EventData {
    Server(ServerEvent),
    Metrics(SandboxMetrics),
}

/// One event (opaque). Owned by the host; freed with `osb_event_free`.
pub struct OsbEvent {
    data: EventData,
}

/// A borrowed view of an event's common fields (filled by `osb_event_view`).
#[repr(C)]
pub struct OsbEventView {
    /// One of the `OSB_EVENT_*` constants.
    pub event_type: i32,
    /// UTF-8 text, borrowed from the event (valid until `osb_event_free`): the
    /// execution id for `init`, the line for `stdout`/`stderr`, the text for `status`;
    /// NULL for the other types.
    pub text: *const u8,
    /// Length of `text` in bytes.
    pub text_len: libc::size_t,
    /// Unix milliseconds.
    pub timestamp: i64,
}

impl OsbEvent {
    fn event_type(&self) -> i32 {
        match &self.data {
            EventData::Metrics(_) => OSB_EVENT_METRICS,
            EventData::Server(e) => match e {
                ServerEvent::Init { .. } => OSB_EVENT_INIT,
                ServerEvent::Stdout(_) => OSB_EVENT_STDOUT,
                ServerEvent::Stderr(_) => OSB_EVENT_STDERR,
                ServerEvent::Result(_) => OSB_EVENT_RESULT,
                ServerEvent::ExecutionCount { .. } => OSB_EVENT_EXECUTION_COUNT,
                ServerEvent::Status { .. } => OSB_EVENT_STATUS,
                ServerEvent::Error(_) => OSB_EVENT_ERROR,
                ServerEvent::Complete(_) => OSB_EVENT_EXECUTION_COMPLETE,
            },
        }
    }

    fn text(&self) -> Option<&str> {
        match &self.data {
            EventData::Server(ServerEvent::Init { id, .. }) => Some(id),
            EventData::Server(ServerEvent::Stdout(m) | ServerEvent::Stderr(m)) => Some(&m.text),
            EventData::Server(ServerEvent::Status { text, .. }) => Some(text),
            _ => None,
        }
    }

    fn timestamp(&self) -> i64 {
        match &self.data {
            EventData::Metrics(m) => m.timestamp,
            EventData::Server(e) => match e {
                ServerEvent::Init { timestamp, .. }
                | ServerEvent::ExecutionCount { timestamp, .. }
                | ServerEvent::Status { timestamp, .. } => *timestamp,
                ServerEvent::Stdout(m) | ServerEvent::Stderr(m) => m.timestamp,
                ServerEvent::Result(r) => r.timestamp,
                ServerEvent::Error(e) => e.timestamp,
                ServerEvent::Complete(c) => c.timestamp,
            },
        }
    }

    fn to_json(&self) -> Result<String> {
        let v = match &self.data {
            EventData::Server(e) => serde_json::to_value(e),
            EventData::Metrics(m) => serde_json::to_value(m).map(|mut v| {
                if let Value::Object(o) = &mut v {
                    o.insert("type".to_owned(), Value::String("metrics".to_owned()));
                }
                v
            }),
        };
        v.map(|v| v.to_string())
            .map_err(|e| internal("event.json", format!("cannot encode the event: {e}")))
    }
}

fn open(
    sb: opensandbox_core::Sandbox,
    op: String,
    json: Option<String>,
) -> Result<impl std::future::Future<Output = Result<Payload>> + Send + 'static> {
    let json = json.as_deref();
    enum Req {
        Cmd(RunArgs),
        Session(SessionRunArgs),
        Code(CodeRunArgs),
        Metrics,
    }
    let req = match op.as_str() {
        "commands.run" => Req::Cmd(parse_args(&op, json)?),
        "commands.run_in_session" => Req::Session(parse_args(&op, json)?),
        "code.run" => Req::Code(parse_args(&op, json)?),
        "metrics.watch" => Req::Metrics,
        _ => return Err(invalid("sandbox.open_stream", format!("unknown op {op:?}"))),
    };
    Ok(async move {
        let x = sb.execd();
        let source = match req {
            Req::Cmd(a) => Source::Exec(
                x.run_command_stream(&a.command, &a.options(), a.control())
                    .await?,
            ),
            Req::Session(a) => {
                let control = RunControl {
                    deadline: a.deadline_ms.map(std::time::Duration::from_millis),
                    interrupt_on_drop: a.interrupt_on_drop,
                };
                Source::Exec(
                    x.run_in_session_stream(
                        &a.session_id,
                        &a.command,
                        a.working_directory.as_deref(),
                        a.timeout_ms.map(std::time::Duration::from_millis),
                        control,
                    )
                    .await?,
                )
            }
            Req::Code(a) => {
                let control = RunControl {
                    deadline: a.deadline_ms.map(std::time::Duration::from_millis),
                    interrupt_on_drop: a.interrupt_on_drop,
                };
                Source::Exec(
                    x.run_code_stream(&a.code, a.context().as_ref(), control)
                        .await?,
                )
            }
            Req::Metrics => Source::Metrics(x.watch_metrics().await?),
        };
        Ok(Payload::handle(OsbStream {
            state: Arc::new(tokio::sync::Mutex::new(Some(source))),
            closed: CancellationToken::new(),
        }))
    })
}

/// Opens an execution stream (`commands.run`, `commands.run_in_session`, `code.run`)
/// or a metrics stream (`metrics.watch`) with `args_json` (API.md §6.4). The callback's
/// result is an owned `OsbStream *` (free with `osb_stream_free`), delivered once the
/// response headers arrived.
///
/// # Safety
/// `s` is a live `OsbSandbox`; `op`/`args_json` are NULL or NUL-terminated (borrowed
/// for the call); `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_open_stream(
    s: *const OsbSandbox,
    op: *const c_char,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "sandbox.open_stream";
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start(OP, unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let s = unsafe { s.as_ref() }.ok_or_else(|| invalid(OP, "sandbox must not be NULL"))?;
        // SAFETY: caller contract.
        let op = unsafe { req_str(OP, "op", op) }?.to_owned();
        // SAFETY: caller contract.
        let json = unsafe { opt_str(OP, "args_json", args_json) }?.map(str::to_owned);
        open(s.sandbox.clone(), op, json)
    });
}

/// The future of one `next`: the event, or `None` at the end.
fn next_future(
    s: &OsbStream,
) -> Result<impl std::future::Future<Output = Result<Option<OsbEvent>>> + Send + 'static> {
    const OP: &str = "stream.next";
    let guard = s
        .state
        .clone()
        .try_lock_owned()
        .map_err(|_| invalid(OP, "another next() is already in flight on this stream"))?;
    let closed = s.closed.clone();
    Ok(async move {
        let mut guard = guard;
        let item = {
            let Some(source) = guard.as_mut() else {
                return Ok(None);
            };
            let fut = async {
                match source {
                    Source::Exec(st) => st.next().await.map(|r| {
                        r.map(|e| OsbEvent {
                            data: EventData::Server(e),
                        })
                    }),
                    Source::Metrics(st) => st.next().await.map(|r| {
                        r.map(|m| OsbEvent {
                            data: EventData::Metrics(m),
                        })
                    }),
                }
            };
            tokio::select! {
                biased;
                _ = closed.cancelled() => return Err(cancelled(OP)),
                item = fut => item,
            }
        };
        match item {
            Some(Ok(ev)) => Ok(Some(ev)),
            Some(Err(e)) => {
                *guard = None;
                Err(e)
            }
            None => {
                *guard = None;
                Ok(None)
            }
        }
    })
}

/// Waits for the next event. The callback's result is an owned `OsbEvent *` (free
/// with `osb_event_free`), or NULL at the end of the stream (also for every call after
/// the end or after an error). One `next` at a time per stream.
///
/// # Safety
/// `s` is a live `OsbStream`; `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_stream_next(
    s: *mut OsbStream,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start("stream.next", unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let s = unsafe { s.as_ref() }
            .ok_or_else(|| invalid("stream.next", "stream must not be NULL"))?;
        let fut = next_future(s)?;
        Ok(async move {
            Ok(match fut.await? {
                Some(ev) => Payload::handle(ev),
                None => Payload::Null,
            })
        })
    });
}

/// Blocking `next`: returns an owned `OsbEvent *`, or NULL at the end (`*error_out`
/// NULL) or on error (`*error_out` set). Not callable from a library callback.
///
/// # Safety
/// `s` is a live `OsbStream`; `cancel` is NULL or a live `OsbCancel`; `error_out` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_stream_next_blocking(
    s: *mut OsbStream,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> *mut OsbEvent {
    const OP: &str = "stream.next";
    // SAFETY: caller contract.
    unsafe {
        guard_result(OP, error_out, std::ptr::null_mut(), || {
            let s = s
                .as_ref()
                .ok_or_else(|| invalid(OP, "stream must not be NULL"))?;
            let fut = next_future(s)?;
            Ok(match block(OP, token(cancel), fut)? {
                Some(ev) => Box::into_raw(Box::new(ev)),
                None => std::ptr::null_mut(),
            })
        })
    }
}

/// Closes the stream: the connection is dropped, and an execution opened with
/// `interrupt_on_drop` that has not ended is interrupted on the server. A `next` in
/// flight completes with a `cancelled` error. NULL is a no-op.
///
/// # Safety
/// `s` is NULL or an `OsbStream` this library handed out, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_stream_free(s: *mut OsbStream) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(s) }
}

/// Fills `out` with the event's type, text and timestamp. The text is borrowed from
/// `e`. Does nothing when `e` or `out` is NULL.
///
/// # Safety
/// `e` is NULL or a live `OsbEvent`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_event_view(e: *const OsbEvent, out: *mut OsbEventView) {
    guard((), || {
        // SAFETY: caller contract.
        let (Some(e), false) = (unsafe { e.as_ref() }, out.is_null()) else {
            return;
        };
        let (text, text_len) = e
            .text()
            .map_or((std::ptr::null(), 0), |t| (t.as_ptr(), t.len()));
        let view = OsbEventView {
            event_type: e.event_type(),
            text,
            text_len,
            timestamp: e.timestamp(),
        };
        // SAFETY: caller contract.
        unsafe { out.write(view) };
    })
}

/// The whole event as JSON (shapes in API.md §4). Owned: free with `osb_string_free`.
/// NULL when `e` is NULL.
///
/// # Safety
/// `e` is NULL or a live `OsbEvent`.
#[no_mangle]
pub unsafe extern "C" fn osb_event_json(e: *const OsbEvent) -> *mut c_char {
    guard(std::ptr::null_mut(), || {
        // SAFETY: caller contract.
        match unsafe { e.as_ref() }.map(OsbEvent::to_json) {
            Some(Ok(s)) => into_c_string(s),
            _ => std::ptr::null_mut(),
        }
    })
}

/// Frees an event. NULL is a no-op.
///
/// # Safety
/// `e` is NULL or an `OsbEvent` this library handed out, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_event_free(e: *mut OsbEvent) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(e) }
}
