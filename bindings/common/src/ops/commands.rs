//! `commands.*` and `execution.*`: runs to completion, started runs pulled in batches
//! or awaited, status, logs, interrupt, sessions.

use std::sync::Arc;
use std::time::Duration;

use opensandbox_core::models::RunCommandOptions;
use opensandbox_core::RunControl;
use serde_json::{json, Value};

use crate::args::*;
use crate::convert;
use crate::error::{OpError, OpResult};
use crate::recorder::Recorder;
use crate::session::{Entry, Session};
use crate::stream::{self, Run, DEFAULT_BATCH};

/// What a run executes: shell text or an argv (no shell).
pub(crate) enum Program {
    Shell(String),
    Argv(Vec<String>),
}

/// The core's options of a run, and what it executes.
pub(crate) fn command_options(
    op: &str,
    a: &RunArgs,
) -> Result<(Program, RunCommandOptions), OpError> {
    let program = match (&a.command, &a.argv) {
        (Some(c), None) => Program::Shell(c.clone()),
        (None, Some(v)) => Program::Argv(v.clone()),
        (Some(_), Some(_)) => {
            return Err(OpError::invalid(
                op,
                format!("{op}: give one of command and argv, not both"),
            ))
        }
        (None, None) => {
            return Err(OpError::invalid(
                op,
                format!("{op}: one of command and argv is required"),
            ))
        }
    };
    let opts = RunCommandOptions {
        background: a.background,
        working_directory: a.working_directory.clone(),
        timeout: a.timeout_ms.map(Duration::from_millis),
        uid: a.uid,
        gid: a.gid,
        envs: a.envs.clone(),
    };
    Ok((program, opts))
}

async fn open(
    execd: &opensandbox_core::ExecdClient,
    program: &Program,
    opts: &RunCommandOptions,
    control: RunControl,
) -> opensandbox_core::Result<opensandbox_core::EventStream> {
    match program {
        Program::Shell(c) => execd.run_command_stream(c, opts, control).await,
        Program::Argv(v) => execd.run_argv_stream(v, opts, control).await,
    }
}

/// A run's control: dropping it early (a released started run, a cancelled run op)
/// interrupts the command on the server too, so cancellation means the same in every
/// host and on either path (a run op or a start and pulls).
pub(super) fn started() -> RunControl {
    RunControl {
        deadline: None,
        interrupt_on_drop: true,
    }
}

fn keep_run(s: &Session, run: Run) -> Value {
    let id = run.id.clone();
    let handle = s.insert(Entry::Run(Arc::new(run)));
    json!({"handle": handle, "id": id})
}

/// `commands.run` → Execution (+ `events` with `handlers`, `stdout_digest` with
/// `digest`).
pub async fn run(s: &Session, a: RunArgs) -> OpResult {
    const OP: &str = "commands.run";
    let sb = s.sandbox(OP, &a).await?;
    let (program, opts) = command_options(OP, &a)?;
    let mut recorder = Recorder::new(a.handlers, a.digest, a.skip_accumulation);
    let st = open(sb.execd(), &program, &opts, started()).await?;
    let ex = stream::run_to_end(st, &mut recorder).await?;
    Ok(convert::execution(&ex, recorder.into_extra()))
}

/// `commands.start` → `{handle, id}` once `init` arrived; the run continues.
pub async fn start(s: &Session, a: RunArgs) -> OpResult {
    const OP: &str = "commands.start";
    if a.digest {
        return Err(OpError::invalid(
            OP,
            format!("{OP}: digest is for commands.run"),
        ));
    }
    let sb = s.sandbox(OP, &a).await?;
    let (program, opts) = command_options(OP, &a)?;
    let execd = sb.execd().clone();
    let opening = async move { open(&execd, &program, &opts, started()).await };
    let run = Run::start(opening, a.skip_accumulation, a.handlers).await?;
    Ok(keep_run(s, run))
}

/// `commands.run_in_session` → Execution.
pub async fn run_in_session(s: &Session, a: SessionRunArgs) -> OpResult {
    const OP: &str = "commands.run_in_session";
    let sb = s.sandbox(OP, &a).await?;
    let mut recorder = Recorder::new(a.handlers, false, a.skip_accumulation);
    let st = sb
        .execd()
        .run_in_session_stream(
            &a.session_id,
            &a.command,
            a.working_directory.as_deref(),
            a.timeout_ms.map(Duration::from_millis),
            started(),
        )
        .await?;
    let ex = stream::run_to_end(st, &mut recorder).await?;
    Ok(convert::execution(&ex, recorder.into_extra()))
}

/// `commands.start_in_session` → `{handle, id}`.
pub async fn start_in_session(s: &Session, a: SessionRunArgs) -> OpResult {
    const OP: &str = "commands.start_in_session";
    let sb = s.sandbox(OP, &a).await?;
    let execd = sb.execd().clone();
    let open = async move {
        execd
            .run_in_session_stream(
                &a.session_id,
                &a.command,
                a.working_directory.as_deref(),
                a.timeout_ms.map(Duration::from_millis),
                started(),
            )
            .await
    };
    let run = Run::start(open, a.skip_accumulation, a.handlers).await?;
    Ok(keep_run(s, run))
}

/// `execution.next_batch` → `{events: [...], done}`; the last item of a run is its
/// `end` item.
pub async fn next_batch(s: &Session, a: NextBatchArgs) -> OpResult {
    let run = s.run("execution.next_batch", a.handle)?;
    let max = a
        .max
        .map(|m| usize::try_from(m).unwrap_or(usize::MAX))
        .unwrap_or(DEFAULT_BATCH);
    Ok(run
        .next_batch(max, a.wait_ms.map(Duration::from_millis))
        .await)
}

/// `execution.wait` → Execution; the handle is released.
pub async fn wait(s: &Session, a: HandleArgs) -> OpResult {
    const OP: &str = "execution.wait";
    let run = s.run(OP, a.handle)?;
    let r = run.wait().await;
    s.release(a.handle);
    r
}

/// `execution.cancel` → null: stops the run (closing its stream and interrupting the
/// command on the server); its end item then reports `cancelled`.
pub async fn cancel(s: &Session, a: HandleArgs) -> OpResult {
    let run = s.run("execution.cancel", a.handle)?;
    run.cancel();
    Ok(Value::Null)
}

/// `commands.interrupt` → null.
pub async fn interrupt(s: &Session, a: ExecIdArgs) -> OpResult {
    let sb = s.sandbox("commands.interrupt", &a).await?;
    sb.execd().interrupt(&a.id).await?;
    Ok(Value::Null)
}

/// `commands.set_env` → null: appends `key=value` to the sandbox env file
/// (`$EXECD_ENVS`) with a shell command, as the official SDKs do; later commands and
/// new sessions see it. A bad key or a NUL in the value is `invalid_argument`.
pub async fn set_env(s: &Session, a: SetEnvArgs) -> OpResult {
    // Checked before the sandbox is resolved: a bad key needs no connection.
    opensandbox_core::execd::set_env_command(&a.key, &a.value)?;
    let sb = s.sandbox("commands.set_env", &a).await?;
    sb.execd().set_env(&a.key, &a.value).await?;
    Ok(Value::Null)
}

/// `commands.get_command_status` → CommandStatus.
pub async fn get_command_status(s: &Session, a: ExecIdArgs) -> OpResult {
    let sb = s.sandbox("commands.get_command_status", &a).await?;
    Ok(convert::command_status(
        &sb.execd().get_command_status(&a.id).await?,
    ))
}

/// `commands.get_background_command_logs` → `{content, cursor}`.
pub async fn get_background_command_logs(s: &Session, a: LogsArgs) -> OpResult {
    let sb = s
        .sandbox("commands.get_background_command_logs", &a)
        .await?;
    Ok(convert::command_logs(
        &sb.execd()
            .get_background_command_logs(&a.id, a.cursor)
            .await?,
    ))
}

/// `commands.create_session` → `{session_id}`.
pub async fn create_session(s: &Session, a: CreateSessionArgs) -> OpResult {
    let sb = s.sandbox("commands.create_session", &a).await?;
    let id = sb
        .execd()
        .create_session(a.working_directory.as_deref())
        .await?;
    Ok(json!({"session_id": id}))
}

/// `commands.delete_session` → null.
pub async fn delete_session(s: &Session, a: SessionIdArgs) -> OpResult {
    let sb = s.sandbox("commands.delete_session", &a).await?;
    sb.execd().delete_session(&a.session_id).await?;
    Ok(Value::Null)
}
