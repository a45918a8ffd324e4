//! `commands.*` and `execution.wait`: foreground and background runs, runs started
//! now and awaited later, status, logs, interrupt, sessions.

use opensandbox_core::models::RunCommandOptions;
use opensandbox_core::{Execution, RunControl};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use crate::args::Args;
use crate::convert;
use crate::protocol::{Failure, OpResult};
use crate::recorder::Recorder;
use crate::state::{RunTask, State, START_TIMEOUT};

fn command_options(args: &Args) -> Result<RunCommandOptions, Failure> {
    Ok(RunCommandOptions {
        background: args.bool("background")?,
        working_directory: args.opt_str("working_directory")?,
        timeout: args.opt_millis("timeout_ms")?,
        uid: args.opt_u32("uid")?,
        gid: args.opt_u32("gid")?,
        envs: args.str_map("envs")?,
    })
}

/// Registers a run spawned with a recorder that reports `init` on `rx`, once the id
/// is known; a run that ends before `init` reports its own error instead.
pub async fn start(state: &mut State, task: RunTask, rx: oneshot::Receiver<String>) -> OpResult {
    match tokio::time::timeout(START_TIMEOUT, rx).await {
        Ok(Ok(id)) => {
            let handle = state.add_run(task);
            Ok(json!({"handle": handle, "id": id}))
        }
        Ok(Err(_)) => match task.await {
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(_)) => Err(Failure::Driver(
                "the run ended without an init event".into(),
            )),
            Err(e) => Err(Failure::Driver(format!("the run task failed: {e}"))),
        },
        Err(_) => {
            task.abort();
            Err(Failure::Driver(format!(
                "no init event within {START_TIMEOUT:?}"
            )))
        }
    }
}

fn finished(result: Result<(Execution, Recorder), opensandbox_core::Error>) -> OpResult {
    let (execution, recorder) = result?;
    Ok(convert::execution(&execution, recorder.into_extra()))
}

pub async fn run(state: &mut State, op: &str, args: &Args) -> OpResult {
    match op {
        "commands.run" => {
            let s = state.sandbox(args).await?;
            let command = args.str("command")?;
            let mut recorder = Recorder::new(args.bool("handlers")?, args.bool("digest")?);
            let execution = s
                .execd()
                .run_command(
                    &command,
                    &command_options(args)?,
                    RunControl::default(),
                    &mut recorder,
                )
                .await?;
            Ok(convert::execution(&execution, recorder.into_extra()))
        }
        "commands.start" => {
            let s = state.sandbox(args).await?;
            let command = args.str("command")?;
            let opts = command_options(args)?;
            let (tx, rx) = oneshot::channel();
            let mut recorder = Recorder::new(args.bool("handlers")?, false).notify_init(tx);
            let execd = s.execd().clone();
            let task = tokio::spawn(async move {
                let execution = execd
                    .run_command(&command, &opts, RunControl::default(), &mut recorder)
                    .await?;
                Ok((execution, recorder))
            });
            start(state, task, rx).await
        }
        "execution.wait" => {
            let handle = args.str("handle")?;
            let task = state
                .take_run(&handle)
                .ok_or_else(|| Failure::Driver(format!("no run with handle {handle}")))?;
            match task.await {
                Ok(result) => finished(result),
                Err(e) => Err(Failure::Driver(format!("the run task failed: {e}"))),
            }
        }
        "commands.interrupt" => {
            let s = state.sandbox(args).await?;
            s.execd().interrupt(&args.str("id")?).await?;
            Ok(Value::Null)
        }
        "commands.get_command_status" => {
            let s = state.sandbox(args).await?;
            Ok(convert::command_status(
                &s.execd().get_command_status(&args.str("id")?).await?,
            ))
        }
        "commands.get_background_command_logs" => {
            let s = state.sandbox(args).await?;
            let logs = s
                .execd()
                .get_background_command_logs(&args.str("id")?, args.opt_u64("cursor")?)
                .await?;
            Ok(convert::command_logs(&logs))
        }
        "commands.create_session" => {
            let s = state.sandbox(args).await?;
            let cwd = args.opt_str("working_directory")?;
            let id = s.execd().create_session(cwd.as_deref()).await?;
            Ok(json!({"session_id": id}))
        }
        "commands.run_in_session" => {
            let s = state.sandbox(args).await?;
            let cwd = args.opt_str("working_directory")?;
            let mut recorder = Recorder::new(args.bool("handlers")?, false);
            let execution = s
                .execd()
                .run_in_session(
                    &args.str("session_id")?,
                    &args.str("command")?,
                    cwd.as_deref(),
                    args.opt_millis("timeout_ms")?,
                    RunControl::default(),
                    &mut recorder,
                )
                .await?;
            Ok(convert::execution(&execution, recorder.into_extra()))
        }
        "commands.delete_session" => {
            let s = state.sandbox(args).await?;
            s.execd().delete_session(&args.str("session_id")?).await?;
            Ok(Value::Null)
        }
        _ => Err(Failure::Unsupported(op.to_owned())),
    }
}
