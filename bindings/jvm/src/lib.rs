//! JNI library of the JVM package (`com.alibaba.opensandbox:sandbox`).
//!
//! Every `Java_..._NativeBridge_*` export is a thin shim: it converts its arguments,
//! calls a function returning `Result`, and turns an `Err` (or a caught panic) into a
//! `NativeError` carrying the error as JSON (kind, status, server code, request id,
//! message), which the Java side maps onto the `SandboxException` hierarchy. Operations
//! take and return JSON (`ops`), objects are native handles (`state`), bytes travel as
//! `byte[]` (`transfer`), execution events go to Java by consumer id (`handlers`), and
//! `CompletableFuture`s are completed by id (`bridge::complete`). Rust never keeps a
//! reference to a Java object between calls.

mod args;
mod bridge;
mod convert;
mod handlers;
mod ops;
mod protocol;
mod state;
mod transfer;

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

use futures_util::FutureExt;
use jni::objects::{JByteArray, JClass, JString};
use jni::sys::{jbyteArray, jint, jlong, jstring};
use jni::JNIEnv;
use opensandbox_core::{ConnectionConfig, Protocol};
use serde_json::{json, Value};

use crate::args::Args;
use crate::protocol::{error_json, internal, Failure, OpResult};
use crate::state::STATE;

const ERROR_CLASS: &str = "com/alibaba/opensandbox/sandbox/internal/NativeError";

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}

fn throw(env: &mut JNIEnv, failure: &Failure) {
    if env.exception_check().unwrap_or(false) {
        // A Java exception (from a callback) is already pending: let it propagate.
        return;
    }
    let _ = env.throw_new(ERROR_CLASS, error_json(failure).to_string());
}

/// Runs `f`, throwing its error or panic as a Java exception; `default` is returned
/// to the JVM in that case (and ignored by it).
fn shim<'local, T>(
    env: &mut JNIEnv<'local>,
    default: T,
    f: impl FnOnce(&mut JNIEnv<'local>) -> Result<T, Failure>,
) -> T {
    match catch_unwind(AssertUnwindSafe(|| f(env))) {
        Ok(Ok(v)) => v,
        Ok(Err(failure)) => {
            throw(env, &failure);
            default
        }
        Err(p) => {
            throw(
                env,
                &internal(format!(
                    "panic in the native library: {}",
                    panic_message(&*p)
                )),
            );
            default
        }
    }
}

/// Blocks the calling Java thread on `f`. Refused on a runtime worker (an async
/// callback calling a blocking method), where it would deadlock.
fn block_on<F: Future>(f: F) -> Result<F::Output, Failure> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Failure::Driver(
            "a blocking SDK call was made from an async callback; use the *Async variant".into(),
        ));
    }
    Ok(bridge::runtime()?.block_on(f))
}

fn string(env: &mut JNIEnv, s: &JString) -> Result<String, Failure> {
    if s.is_null() {
        return Ok(String::new());
    }
    Ok(env.get_string(s)?.into())
}

fn json_args(env: &mut JNIEnv, s: &JString) -> Result<Value, Failure> {
    let text = string(env, s)?;
    if text.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text).map_err(|e| Failure::Driver(format!("arguments are not JSON: {e}")))
}

/// `config.new`: a connection configuration from the Java builder's fields. Absent
/// fields keep the core defaults (which read `OPEN_SANDBOX_*`).
fn new_config(args: &Args) -> Result<ConnectionConfig, Failure> {
    let mut cfg = ConnectionConfig::new();
    if args.has("api_key") {
        // null = send no key, whatever the environment says.
        cfg = cfg.with_api_key(args.opt_str("api_key")?.unwrap_or_default());
    }
    if let Some(d) = args.opt_str("domain")? {
        cfg = cfg.with_domain(d);
    }
    if let Some(p) = args.opt_str("protocol")? {
        cfg = cfg.with_protocol(Protocol::parse(&p)?);
    }
    if let Some(t) = args.opt_secs("request_timeout_s")? {
        cfg = cfg.with_request_timeout(t);
    }
    let headers = args.str_map("headers")?;
    if !headers.is_empty() {
        cfg = cfg.with_headers(headers);
    }
    if let Some(ua) = args.opt_str("user_agent")? {
        cfg = cfg.with_user_agent(ua);
    }
    if args.has("use_server_proxy") {
        cfg = cfg.with_use_server_proxy(args.bool("use_server_proxy")?);
    }
    Ok(cfg)
}

/// One JSON operation.
async fn run_op(op: String, args: Value) -> OpResult {
    let args = Args::new(&op, args);
    match op.as_str() {
        "config.new" => Ok(json!({"handle": STATE.keep_config(new_config(&args)?)})),
        "config.info" => {
            let cfg = STATE.config(&args)?;
            Ok(
                json!({"domain": cfg.domain(), "base_url": cfg.base_url(), "api_key": cfg.api_key()}),
            )
        }
        "manager.new" => {
            let m = opensandbox_core::SandboxManager::new(STATE.config(&args)?)?;
            Ok(json!({"handle": STATE.keep_manager(m)}))
        }
        "release" => {
            let h = args
                .opt_i64("handle")?
                .ok_or_else(|| Failure::Driver("handle is required".into()))?;
            Ok(json!({"released": STATE.release(h)}))
        }
        "upload.finish" => {
            let h = args.opt_i64("upload")?.unwrap_or_default();
            let task = transfer::take_upload(h)?;
            match task.await {
                Ok(r) => r.map(|()| Value::Null).map_err(Failure::from),
                Err(e) => Err(internal(format!("upload task failed: {e}"))),
            }
        }
        _ => ops::dispatch(&STATE, &op, args).await,
    }
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_init<'l>(
    mut env: JNIEnv<'l>,
    class: JClass<'l>,
) {
    shim(&mut env, (), |env| Ok(bridge::init(env, &class)?))
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
        let value = block_on(run_op(op, args))??;
        Ok(env.new_string(value.to_string())?.into_raw())
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
        let rt = bridge::runtime()?;
        rt.spawn(async move {
            let outcome = match AssertUnwindSafe(run_op(op, args)).catch_unwind().await {
                Ok(r) => r,
                Err(p) => Err(internal(format!(
                    "panic in the native library: {}",
                    panic_message(&*p)
                ))),
            };
            bridge::complete(future, outcome);
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
        let args = Args::new("files.read_bytes", json_args(env, &args)?);
        let data = block_on(transfer::read_all(&args))??;
        Ok(env.byte_array_from_slice(&data)?.into_raw())
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
        let args = Args::new("files.write_file", json_args(env, &args)?);
        let data = env.convert_byte_array(&data)?;
        block_on(transfer::write_bytes(&args, data))??;
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_downloadOpen<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    args: JString<'l>,
) -> jlong {
    shim(&mut env, 0, |env| {
        let args = Args::new("files.read_stream", json_args(env, &args)?);
        block_on(transfer::open_download(&args))?
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_downloadRead<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jint {
    shim(&mut env, -1, |env| {
        let max = usize::try_from(len).unwrap_or(0);
        if max == 0 {
            return Ok(0);
        }
        let chunk = block_on(transfer::read_chunk(handle, max))??;
        if chunk.is_empty() {
            return Ok(-1);
        }
        // SAFETY: u8 and i8 have the same size and alignment.
        let signed: &[i8] =
            unsafe { std::slice::from_raw_parts(chunk.as_ptr().cast::<i8>(), chunk.len()) };
        env.set_byte_array_region(&buf, off, signed)?;
        Ok(i32::try_from(chunk.len()).unwrap_or(i32::MAX))
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_downloadClose<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    shim(&mut env, (), |_| {
        transfer::close_download(handle);
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadOpen<'l>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    args: JString<'l>,
) -> jlong {
    shim(&mut env, 0, |env| {
        let args = Args::new("files.write_file", json_args(env, &args)?);
        let rt = bridge::runtime()?;
        block_on(async move {
            // The upload task is spawned on the runtime from inside it.
            let _guard = rt.enter();
            transfer::open_upload(&args).await
        })?
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadWrite<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
    buf: JByteArray<'l>,
    off: jint,
    len: jint,
) -> jni::sys::jboolean {
    shim(&mut env, 0, |env| {
        let n = usize::try_from(len).unwrap_or(0);
        let mut chunk = vec![0i8; n];
        env.get_byte_array_region(&buf, off, &mut chunk)?;
        // SAFETY: i8 -> u8 of the same length; the allocation is reinterpreted as is.
        let chunk: Vec<u8> = chunk.into_iter().map(|b| b as u8).collect();
        Ok(u8::from(transfer::upload_write(handle, chunk)?))
    })
}

#[no_mangle]
pub extern "system" fn Java_com_alibaba_opensandbox_sandbox_internal_NativeBridge_uploadAbort<
    'l,
>(
    mut env: JNIEnv<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    shim(&mut env, (), |_| {
        transfer::abort_upload(handle);
        Ok(())
    })
}
