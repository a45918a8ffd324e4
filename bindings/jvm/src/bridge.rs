//! The JVM side of the bridge: the `JavaVM`, the `NativeBridge` class (a global
//! reference to a class, never to a user object) and the completion of Java futures by
//! id. There is no runtime here: every op runs on the core's shared runtime
//! (`opensandbox_core::runtime`). A runtime worker that completes a future attaches to
//! the JVM on first use (as a daemon, named `opensandbox-jvm`) and stays attached: the
//! core's workers live as long as the process. Completion hands the result to Java,
//! which runs every user continuation off the runtime (`ForkJoinPool`); execution
//! events are pulled by Java threads in batches (`execution.next_batch`), so no user
//! code ever runs on a runtime worker.

use std::cell::Cell;
use std::sync::OnceLock;

use jni::objects::{GlobalRef, JClass, JObject, JValue};
use jni::{JNIEnv, JavaVM};
use opensandbox_bindings::OpResult;

static VM: OnceLock<JavaVM> = OnceLock::new();
static CLASS: OnceLock<GlobalRef> = OnceLock::new();

thread_local! {
    static NAMED: Cell<bool> = const { Cell::new(false) };
}

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

fn class() -> jni::errors::Result<&'static JClass<'static>> {
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

/// Runs `f` with the JNIEnv of the current (runtime worker) thread, attaching it on
/// first use.
fn with_env<T>(f: impl FnOnce(&mut JNIEnv) -> jni::errors::Result<T>) -> jni::errors::Result<T> {
    let vm = VM
        .get()
        .ok_or(jni::errors::Error::NullPtr("JavaVM not initialised"))?;
    let mut env = vm.attach_current_thread_as_daemon()?;
    // Local references made here are dropped with the frame: a worker never returns
    // to Java, so nothing else would free them.
    env.with_local_frame(16, |env| {
        if !NAMED.with(Cell::get) {
            NAMED.with(|n| n.set(true));
            let _ = name_thread(env);
        }
        let r = f(env);
        if env.exception_check().unwrap_or(false) {
            let _ = env.exception_describe();
            let _ = env.exception_clear();
        }
        r
    })
}

/// Completes the Java future `id` with a JSON result or a JSON error payload.
pub fn complete(id: i64, outcome: OpResult) {
    let (ok, err) = match outcome {
        Ok(v) => (Some(v.to_string()), None),
        Err(e) => (None, Some(e.to_json().to_string())),
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
        env.call_static_method(
            class()?,
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

/// Completes the Java future `id` with a byte array (a batch in `Batch::encode`'s form)
/// or a JSON error payload.
pub fn complete_bytes(id: i64, outcome: Result<Vec<u8>, opensandbox_bindings::OpError>) {
    let err = outcome.as_ref().err().map(|e| e.to_json().to_string());
    let r = with_env(|env| {
        let ok = match &outcome {
            Ok(b) => JObject::from(env.byte_array_from_slice(b)?),
            Err(_) => JObject::null(),
        };
        let err = match &err {
            Some(s) => JObject::from(env.new_string(s)?),
            None => JObject::null(),
        };
        env.call_static_method(
            class()?,
            "completeBytes",
            "(J[BLjava/lang/String;)V",
            &[JValue::Long(id), JValue::Object(&ok), JValue::Object(&err)],
        )?;
        Ok(())
    });
    if let Err(e) = r {
        eprintln!("opensandbox-jvm: cannot complete future {id}: {e}");
    }
}
