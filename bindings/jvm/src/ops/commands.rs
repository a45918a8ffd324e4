//! `commands.*`: foreground and background runs, status, logs, interrupt, sessions
//! (the Java side builds `runAsync`/start-and-wait on top of these).

use opensandbox_core::models::RunCommandOptions;
use opensandbox_core::RunControl;
use serde_json::{json, Value};

use crate::args::Args;
use crate::convert;
use crate::handlers::JavaHandlers;
use crate::protocol::{Failure, OpResult};
use crate::state::State;

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

pub async fn run(state: &State, op: &str, args: &Args) -> OpResult {
    match op {
        "commands.run" => {
            let s = state.sandbox(args).await?;
            let command = args.str("command")?;
            let mut recorder = JavaHandlers::from_args(args)?;
            let execution = s
                .execd()
                .run_command(
                    &command,
                    &command_options(args)?,
                    RunControl::default(),
                    &mut recorder,
                )
                .await?;
            Ok(convert::execution(&execution, serde_json::Map::new()))
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
            let mut recorder = JavaHandlers::from_args(args)?;
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
            Ok(convert::execution(&execution, serde_json::Map::new()))
        }
        "commands.delete_session" => {
            let s = state.sandbox(args).await?;
            s.execd().delete_session(&args.str("session_id")?).await?;
            Ok(Value::Null)
        }
        _ => Err(Failure::Unsupported(op.to_owned())),
    }
}
