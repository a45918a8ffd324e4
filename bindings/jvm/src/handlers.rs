//! Execution handlers that forward each event to the Java `NativeBridge.onEvent`
//! dispatcher by consumer id. Rust keeps no Java object: the consumer (the user's
//! `ExecutionHandlers`) stays in a Java map keyed by that id.

use jni::objects::JValue;
use opensandbox_core::{
    Error, ExecutionComplete, ExecutionError, ExecutionHandlers, ExecutionResult, OutputMessage,
    Result,
};

use crate::args::Args;
use crate::bridge;
use crate::protocol::Failure;

pub const INIT: i32 = 0;
pub const STDOUT: i32 = 1;
pub const STDERR: i32 = 2;
pub const RESULT: i32 = 3;
pub const COMPLETE: i32 = 4;
pub const ERROR: i32 = 5;

pub struct JavaHandlers {
    consumer: Option<i64>,
    skip: bool,
}

impl JavaHandlers {
    /// `consumer` (the Java consumer id, absent = no handlers) and `skip_accumulation`.
    pub fn from_args(args: &Args) -> std::result::Result<JavaHandlers, Failure> {
        Ok(JavaHandlers {
            consumer: args.opt_i64("consumer")?,
            skip: args.bool("skip_accumulation")?,
        })
    }

    fn send(&self, kind: i32, text: Option<&str>, ts: i64, a: Option<&str>, b: i64) -> Result<()> {
        let Some(id) = self.consumer else {
            return Ok(());
        };
        let outcome = bridge::with_env(|env| {
            let text = match text {
                Some(t) => env.new_string(t)?.into(),
                None => jni::objects::JObject::null(),
            };
            let a = match a {
                Some(t) => env.new_string(t)?.into(),
                None => jni::objects::JObject::null(),
            };
            let cls = bridge::class(env)?;
            let r = env.call_static_method(
                cls,
                "onEvent",
                "(JILjava/lang/String;JLjava/lang/String;J)Z",
                &[
                    JValue::Long(id),
                    JValue::Int(kind),
                    JValue::Object(&text),
                    JValue::Long(ts),
                    JValue::Object(&a),
                    JValue::Long(b),
                ],
            );
            env.delete_local_ref(text)?;
            env.delete_local_ref(a)?;
            r?.z()
        });
        match outcome {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::new(
                opensandbox_core::ErrorKind::Cancelled,
                "handlers",
                "an execution handler threw; the run was stopped",
            )),
            Err(e) => Err(Error::internal(
                "handlers",
                format!("JNI callback failed: {e}"),
            )),
        }
    }
}

impl ExecutionHandlers for JavaHandlers {
    fn on_init(&mut self, id: &str, timestamp: i64) -> Result<()> {
        self.send(INIT, Some(id), timestamp, None, 0)
    }
    fn on_stdout(&mut self, msg: &OutputMessage) -> Result<()> {
        self.send(STDOUT, Some(&msg.text), msg.timestamp, None, 0)
    }
    fn on_stderr(&mut self, msg: &OutputMessage) -> Result<()> {
        self.send(STDERR, Some(&msg.text), msg.timestamp, None, 0)
    }
    fn on_result(&mut self, r: &ExecutionResult) -> Result<()> {
        let raw = serde_json::Value::Object(r.raw.clone()).to_string();
        self.send(RESULT, r.text.as_deref(), r.timestamp, Some(&raw), 0)
    }
    fn on_execution_complete(&mut self, c: &ExecutionComplete) -> Result<()> {
        self.send(COMPLETE, None, c.timestamp, None, c.execution_time_ms)
    }
    fn on_error(&mut self, e: &ExecutionError) -> Result<()> {
        let detail = serde_json::json!({"value": e.value, "traceback": e.traceback}).to_string();
        self.send(ERROR, Some(&e.name), e.timestamp, Some(&detail), 0)
    }
    fn skip_accumulation(&self) -> bool {
        self.skip
    }
}
