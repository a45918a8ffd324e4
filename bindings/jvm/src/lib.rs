//! JNI library of the JVM package (`com.alibaba.opensandbox:sandbox`): transport only.
//!
//! Every op, argument key, result shape, handle and error payload is the shared op
//! layer's (`opensandbox-bindings`, see bindings/common/README.md). This crate converts
//! JNI values, runs ops on the core's shared runtime (blocking the calling Java thread,
//! or completing a `CompletableFuture` by id), and moves bytes that do not fit JSON
//! (`byte[]` reads and writes, download and upload streams). Every export is a thin
//! shim: an `Err` (or a caught panic) becomes a `NativeError` carrying the error
//! payload as JSON, which the Java side maps onto the `SandboxException` hierarchy.
//! Execution events are pulled by Java in batches (`execution.next_batch`, one JNI
//! call per batch) and dispatched to user handlers on Java threads.

mod bridge;

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::LazyLock;

use bytes::Bytes;
use futures_util::FutureExt;
use jni::objects::{JByteArray, JClass, JString};
use jni::sys::{jbyteArray, jint, jlong, jstring};
use jni::JNIEnv;
use opensandbox_bindings::{OpError, Session};
use serde_json::{json, Value};

const ERROR_CLASS: &str = "com/alibaba/opensandbox/sandbox/internal/NativeError";

/// The process-wide session: one handle registry for every Java object.
static SESSION: LazyLock<Session> = LazyLock::new(Session::new);

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

fn jni_error(e: jni::errors::Error) -> OpError {
    OpError::internal("jni", format!("JNI: {e}"))
}

fn throw(env: &mut JNIEnv, e: &OpError) {
    if env.exception_check().unwrap_or(false) {
        // A Java exception is already pending: let it propagate.
        return;
    }
    let _ = env.throw_new(ERROR_CLASS, e.to_json().to_string());
}

/// Runs `f`, throwing its error or panic as a Java exception; `default` is returned
/// to the JVM in that case (and ignored by it).
fn shim<'local, T>(
    env: &mut JNIEnv<'local>,
    default: T,
    f: impl FnOnce(&mut JNIEnv<'local>) -> Result<T, OpError>,
) -> T {
    match catch_unwind(AssertUnwindSafe(|| f(env))) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            throw(env, &e);
            default
        }
        Err(p) => {
            let e = OpError::internal(
                "jni",
                format!("panic in the native library: {}", panic_message(&*p)),
            );
            throw(env, &e);
            default
        }
    }
}

/// Blocks the calling Java thread on `f` on the core's runtime. Refused on a runtime
/// worker, where it would deadlock (no user code runs there, so this is a bug guard).
fn block_on<F: Future>(f: F) -> Result<F::Output, OpError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(OpError::invalid(
            "jni",
            "a blocking SDK call was made from a runtime thread; use the *Async variant",
        ));
    }
    Ok(opensandbox_core::runtime::block_on(f))
}

/// [`block_on_worker`] for op `op`: on the Java thread's own runtime when the op
/// finishes everything within the call (`opensandbox_bindings::block_on_op`).
fn block_on_op<F>(op: &str, f: F) -> Result<F::Output, OpError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(OpError::invalid(
            "jni",
            "a blocking SDK call was made from a runtime thread; use the *Async variant",
        ));
    }
    opensandbox_bindings::block_on_op(
        opensandbox_core::runtime::runtime().handle(),
        &SESSION,
        op,
        f,
    )
    .map_err(|e| OpError::internal("jni", format!("the call's task failed: {e}")))
}

/// [`block_on`] for a request: it runs on a runtime worker next to its connection, and
/// the Java thread is woken once, at the end (see `runtime::block_on_worker`).
fn block_on_worker<F>(f: F) -> Result<F::Output, OpError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(OpError::invalid(
            "jni",
            "a blocking SDK call was made from a runtime thread; use the *Async variant",
        ));
    }
    opensandbox_core::runtime::block_on_worker(f)
        .map_err(|e| OpError::internal("jni", format!("the call's task failed: {e}")))
}

fn string(env: &mut JNIEnv, s: &JString) -> Result<String, OpError> {
    if s.is_null() {
        return Ok(String::new());
    }
    Ok(env.get_string(s).map_err(jni_error)?.into())
}

fn json_args(env: &mut JNIEnv, s: &JString) -> Result<Value, OpError> {
    let text = string(env, s)?;
    if text.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text)
        .map_err(|e| OpError::invalid("jni", format!("arguments are not JSON: {e}")))
}

fn handle(h: jlong) -> Result<u64, OpError> {
    u64::try_from(h).map_err(|_| OpError::invalid("jni", format!("bad handle {h}")))
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_init<'l>(
    mut env: JNIEnv<'l>,
    class: JClass<'l>,
) {
    shim(&mut env, (), |env| {
        bridge::init(env, &class).map_err(jni_error)
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_call<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    op: JString<'l>,
    args: JString<'l>,
) -> jstring {
    shim(&mut env, std::ptr::null_mut(), |env| {
        let op = string(env, &op)?;
        let args = json_args(env, &args)?;
        let name = op.clone();
        let value = block_on_op(&name, async move { SESSION.call(&op, args).await })??;
        Ok(env
            .new_string(value.to_string())
            .map_err(jni_error)?
            .into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_callAsync<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    future: jlong,
    op: JString<'l>,
    args: JString<'l>,
) {
    shim(&mut env, (), |env| {
        let op = string(env, &op)?;
        let args = json_args(env, &args)?;
        opensandbox_core::runtime::runtime().spawn(async move {
            let outcome = match AssertUnwindSafe(SESSION.call(&op, args))
                .catch_unwind()
                .await
            {
                Ok(r) => r,
                Err(p) => Err(OpError::internal(
                    "jni",
                    format!("panic in the native library: {}", panic_message(&*p)),
                )),
            };
            bridge::complete(future, outcome);
        });
        Ok(())
    })
}

/// The op name of event pulls (in errors).
const NEXT: &str = "execution.next_batch";

/// `execution.next_batch` of run `h` in the binary layout of `Batch::encode` (one
/// `byte[]` per batch, no JSON for output lines): waits for the first item, returns
/// up to `max` already-arrived ones. The wait is a channel receive (the run's task
/// reads the connection), so it runs on this thread.
#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_nextEvents<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    max: jint,
) -> jbyteArray {
    shim(&mut env, std::ptr::null_mut(), |env| {
        let max = usize::try_from(max).unwrap_or(1);
        let batch = block_on(SESSION.next_items(handle(h)?, max, None))??;
        Ok(env
            .byte_array_from_slice(&batch.encode(NEXT)?)
            .map_err(jni_error)?
            .into_raw())
    })
}

/// `nextEvents` without blocking: the batch completes the Java future `future` (on a
/// `ForkJoinPool` thread, as every async call).
#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_nextEventsAsync<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    future: jlong,
    h: jlong,
    max: jint,
) {
    shim(&mut env, (), |_| {
        let h = handle(h)?;
        let max = usize::try_from(max).unwrap_or(1);
        opensandbox_core::runtime::runtime().spawn(async move {
            let outcome = match SESSION.next_items(h, max, None).await {
                Ok(b) => b.encode(NEXT),
                Err(e) => Err(e),
            };
            bridge::complete_bytes(future, outcome);
        });
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_readBytes<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    args: JString<'l>,
) -> jbyteArray {
    shim(&mut env, std::ptr::null_mut(), |env| {
        let args = json_args(env, &args)?;
        let data = block_on_worker(SESSION.read_bytes(args))??;
        Ok(env
            .byte_array_from_slice(&data)
            .map_err(jni_error)?
            .into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_writeBytes<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    args: JString<'l>,
    data: JByteArray<'l>,
) {
    shim(&mut env, (), |env| {
        let args = json_args(env, &args)?;
        let data = env.convert_byte_array(&data).map_err(jni_error)?;
        block_on(SESSION.write_bytes(args, Bytes::from(data)))??;
        Ok(())
    })
}

/// Opens a download or an upload. A download is opened on a driver of its own
/// (`opensandbox_bindings::block_on_op`), so the Java thread that reads it reads the
/// socket itself (`downloadRead`) instead of waiting for a runtime worker to hand over
/// each chunk (256 MiB: client CPU 125 -> 70 ms, 79 -> 93 % of curl; docs/architecture.md
/// "Downloads").
fn open(env: &mut JNIEnv, op: &str, args: &JString) -> Result<jlong, OpError> {
    let args = json_args(env, args)?;
    let name = op.to_owned();
    let r = block_on_op(op, async move { SESSION.call(&name, args).await })??;
    r["handle"]
        .as_i64()
        .ok_or_else(|| OpError::internal(op, "no handle in the result"))
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_downloadOpen<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    args: JString<'l>,
) -> jlong {
    shim(&mut env, 0, |env| open(env, "download.open", &args))
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_downloadRead<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jint {
    shim(&mut env, -1, |env| {
        let max = usize::try_from(len).unwrap_or(0);
        if max == 0 {
            return Ok(0);
        }
        let h = handle(h)?;
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(OpError::invalid(
                "jni",
                "a blocking SDK call was made from a runtime thread; use the *Async variant",
            ));
        }
        // What has already arrived (up to `len`), each slice copied into the array as the
        // read takes it, so the connection reads on into the same memory
        // (`transfer::ReadSink`). On this thread when a blocking call opened the download
        // (it reads the socket); the sink never leaves this thread either way.
        let into = IntoArray {
            env,
            buf: &buf,
            at: off,
            end: off.saturating_add(len),
            failed: None,
        };
        let into = opensandbox_bindings::block_on_read(
            opensandbox_core::runtime::runtime().handle(),
            &SESSION,
            h,
            SESSION.download_read_into(h, max, opensandbox_bindings::transfer::READ_FILL, into),
        )?;
        if let Some(e) = into.failed {
            return Err(jni_error(e));
        }
        if into.at == off {
            return Ok(-1);
        }
        Ok(into.at - off)
    })
}

/// The sink of `downloadRead`: each slice copied into the Java array from `at` on, never
/// past `end`. A failed copy (an index out of the array's bounds: Java has an exception
/// pending) stops it, and the read reports it.
struct IntoArray<'a, 'l> {
    env: &'a mut JNIEnv<'l>,
    buf: &'a JByteArray<'l>,
    at: jint,
    end: jint,
    failed: Option<jni::errors::Error>,
}

impl opensandbox_bindings::transfer::ReadSink for IntoArray<'_, '_> {
    fn put(&mut self, part: Bytes) {
        if self.failed.is_some() {
            return;
        }
        let room = usize::try_from(self.end.saturating_sub(self.at)).unwrap_or(0);
        let n = part.len().min(room);
        // SAFETY: u8 and i8 have the same size and alignment, and `part` outlives the
        // borrowed slice.
        let signed: &[i8] = unsafe { std::slice::from_raw_parts(part.as_ptr().cast::<i8>(), n) };
        match self.env.set_byte_array_region(self.buf, self.at, signed) {
            // n <= room, which fits in a jint.
            Ok(()) => self.at += jint::try_from(n).unwrap_or(0),
            Err(e) => self.failed = Some(e),
        }
    }
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_downloadClose<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) {
    shim(&mut env, (), |_| {
        SESSION.release(handle(h)?);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadOpen<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    args: JString<'l>,
) -> jlong {
    shim(&mut env, 0, |env| open(env, "upload.open", &args))
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadWrite<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jni::sys::jboolean {
    shim(&mut env, 0, |env| {
        let n = usize::try_from(len).unwrap_or(0);
        // One copy, straight from the array into the chunk the request sends (an `i8`
        // buffer mapped to `u8` afterwards was two copies and two allocations a chunk).
        let mut chunk = vec![0u8; n];
        // SAFETY: u8 and i8 have the same size and alignment; the slice borrows `chunk`
        // only for this call.
        let signed: &mut [i8] =
            unsafe { std::slice::from_raw_parts_mut(chunk.as_mut_ptr().cast::<i8>(), n) };
        env.get_byte_array_region(&buf, off, signed)
            .map_err(jni_error)?;
        let sent = block_on(SESSION.upload_write(handle(h)?, Bytes::from(chunk)))??;
        Ok(u8::from(sent))
    })
}

/// Uploads the rest of the regular file open as `fd` (a `java.io.FileDescriptor`, from
/// a `FileInputStream`): the library reads the file itself from a duplicate of the
/// descriptor, so no chunk crosses JNI (`Session::upload_file`). Returns false, having
/// done nothing, when the descriptor is not an open regular file (a pipe, a device, a
/// closed stream): the caller then streams it chunk by chunk. Afterwards the stream's
/// position is the file's end, where reading it whole leaves it, or back where it was
/// when the upload failed.
#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadFile<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    args: JString<'l>,
    fd: jni::objects::JObject<'l>,
) -> jni::sys::jboolean {
    shim(&mut env, 0, |env| {
        let args = json_args(env, &args)?;
        // JNI reads the private field whatever the module rules: it is the descriptor
        // the stream reads from (-1 once closed).
        let raw = env
            .get_field(&fd, "fd", "I")
            .and_then(|v| v.i())
            .map_err(jni_error)?;
        upload_descriptor(args, raw).map(u8::from)
    })
}

/// [`Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadFile`] past JNI.
#[cfg(unix)]
fn upload_descriptor(args: Value, raw: i32) -> Result<bool, OpError> {
    use std::io::{Seek, SeekFrom};
    use std::os::fd::BorrowedFd;
    if raw < 0 {
        return Ok(false);
    }
    // SAFETY: `raw` is the open descriptor of the caller's stream, which stays open for
    // this call (the caller holds the stream); it is only duplicated here.
    let borrowed = unsafe { BorrowedFd::borrow_raw(raw) };
    // F_DUPFD_CLOEXEC: the duplicate shares the stream's offset and is closed by the
    // library when the upload ends.
    let Ok(dup) = borrowed.try_clone_to_owned() else {
        return Ok(false);
    };
    let mut file = std::fs::File::from(dup);
    let Ok(meta) = file.metadata() else {
        return Ok(false);
    };
    if !meta.is_file() {
        return Ok(false);
    }
    let Ok(offset) = file.stream_position() else {
        return Ok(false);
    };
    // Past the end a read gives nothing: an empty file part.
    let len = meta.len().saturating_sub(offset);
    // A second duplicate to put the shared offset right afterwards (upload_file consumes
    // its own).
    let mut restore = file.try_clone().map_err(|e| {
        OpError::internal(
            "upload.file",
            format!("cannot duplicate the descriptor: {e}"),
        )
    })?;
    let r = block_on_worker(async move { SESSION.upload_file(args, file, offset, len).await })?;
    let at = if r.is_ok() { offset + len } else { offset };
    let _ = restore.seek(SeekFrom::Start(at));
    r.map(|()| true)
}

/// Descriptors are a Unix notion: elsewhere every stream goes chunk by chunk.
#[cfg(not(unix))]
fn upload_descriptor(_args: Value, _raw: i32) -> Result<bool, OpError> {
    Ok(false)
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadAbort<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    h: jlong,
) {
    shim(&mut env, (), |_| {
        SESSION.release(handle(h)?);
        Ok(())
    })
}
