//! The JVM side of the bridge: the `JavaVM`, the `NativeBridge` class (a global
//! reference to a class, never to a user object), the runtime whose workers attach to
//! the JVM once and detach when they stop, and the completion of Java futures by id.

use std::sync::{LazyLock, OnceLock};

use jni::objects::{GlobalRef, JClass, JObject, JValue};
use jni::{JNIEnv, JavaVM};
use serde_json::Value;

use crate::protocol::{error_json, Failure};

static VM: OnceLock<JavaVM> = OnceLock::new();
static CLASS: OnceLock<GlobalRef> = OnceLock::new();

/// Records the VM and the bridge class (called from `NativeBridge`'s static initializer).
pub fn init(env: &mut JNIEnv, class: &JClass) -> jni::errors::Result<()> {
    if VM.get().is_none() {
        let _ = VM.set(env.get_java_vm()?);
    }
    if CLASS.get().is_none() {
        let _ = CLASS.set(env.new_global_ref(class)?);
    }
    Ok(())
}

/// The `NativeBridge` class.
pub fn class<'a>(_env: &JNIEnv<'a>) -> jni::errors::Result<&'static JClass<'static>> {
    match CLASS.get() {
        Some(g) => {
            let obj: &'static JObject<'static> = g.as_obj();
            Ok(<&JClass>::from(obj))
        }
        None => Err(jni::errors::Error::NullPtr(
            "NativeBridge class not initialised",
        )),
    }
}

/// Runs `f` with the JNIEnv of the current thread, attaching it (permanently) if it is
/// not attached yet: Java threads already are; runtime workers attach at start.
pub fn with_env<T>(
    f: impl FnOnce(&mut JNIEnv) -> jni::errors::Result<T>,
) -> jni::errors::Result<T> {
    let vm = VM
        .get()
        .ok_or(jni::errors::Error::NullPtr("JavaVM not initialised"))?;
    let mut env = vm.attach_current_thread_as_daemon()?;
    // Local references made here are dropped with the frame, also on worker threads
    // that never return to Java.
    env.with_local_frame(16, |env| {
        let r = f(env);
        if env.exception_check().unwrap_or(false) {
            let _ = env.exception_describe();
            let _ = env.exception_clear();
        }
        r
    })
}

/// The runtime of the JVM package: its workers attach once and detach on exit.
pub static RUNTIME: LazyLock<std::io::Result<tokio::runtime::Runtime>> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("opensandbox-jvm")
        .on_thread_start(|| {
            // Attached once, as a daemon (the JVM may exit while workers idle), and
            // named so that Java stack traces and thread dumps show what it is.
            if let Some(vm) = VM.get() {
                if let Ok(mut env) = vm.attach_current_thread_as_daemon() {
                    let _ = env.with_local_frame(4, name_thread);
                }
            }
        })
        .on_thread_stop(|| {
            if let Some(vm) = VM.get() {
                // SAFETY: the worker holds no JNI local reference past this point:
                // every callback runs inside its own local frame.
                unsafe { vm.detach_current_thread() };
            }
        })
        .build()
});

fn name_thread(env: &mut JNIEnv) -> jni::errors::Result<()> {
    let thread = env
        .call_static_method(
            "java/lang/Thread",
            "currentThread",
            "()Ljava/lang/Thread;",
            &[],
        )?
        .l()?;
    let name = JObject::from(env.new_string("opensandbox-jvm")?);
    env.call_method(
        &thread,
        "setName",
        "(Ljava/lang/String;)V",
        &[JValue::Object(&name)],
    )?;
    Ok(())
}

pub fn runtime() -> Result<&'static tokio::runtime::Runtime, Failure> {
    RUNTIME.as_ref().map_err(|e| {
        Failure::Sdk(opensandbox_core::Error::internal(
            "runtime",
            format!("cannot start the runtime: {e}"),
        ))
    })
}

/// Completes the Java future `id` with a JSON result or a JSON error.
pub fn complete(id: i64, outcome: Result<Value, Failure>) {
    let (ok, err) = match outcome {
        Ok(v) => (Some(v.to_string()), None),
        Err(f) => (None, Some(error_json(&f).to_string())),
    };
    let r = with_env(|env| {
        let ok = match &ok {
            Some(s) => JObject::from(env.new_string(s)?),
            None => JObject::null(),
        };
        let err = match &err {
            Some(s) => JObject::from(env.new_string(s)?),
            None => JObject::null(),
        };
        let cls = class(env)?;
        env.call_static_method(
            cls,
            "complete",
            "(JLjava/lang/String;Ljava/lang/String;)V",
            &[JValue::Long(id), JValue::Object(&ok), JValue::Object(&err)],
        )?;
        Ok(())
    });
    if let Err(e) = r {
        eprintln!("opensandbox-jvm: cannot complete future {id}: {e}");
    }
}
