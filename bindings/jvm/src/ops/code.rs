//! `code.*`: code-interpreter contexts and runs.

use opensandbox_core::models::CodeContext;
use opensandbox_core::{RunControl, Sandbox};
use serde_json::Value;

use crate::args::Args;
use crate::convert;
use crate::handlers::JavaHandlers;
use crate::protocol::{Failure, OpResult};
use crate::state::State;

/// The context a run targets: a known context object (as a user holds the one
/// `create_context` returned), fetched once for ids this process has not seen, or a
/// language's default context.
async fn target(state: &State, sandbox: &Sandbox, args: &Args) -> Result<CodeContext, Failure> {
    if let Some(id) = args.opt_str("context_id")? {
        if let Some(ctx) = state.context(sandbox.id(), &id) {
            return Ok(ctx);
        }
        let ctx = sandbox.execd().get_context(&id).await?;
        state.keep_context(sandbox.id(), &ctx);
        return Ok(ctx);
    }
    let language = args
        .opt_str("language")?
        .unwrap_or_else(|| "python".to_owned());
    Ok(CodeContext {
        id: None,
        language,
        cwd: None,
    })
}

pub async fn run(state: &State, op: &str, args: &Args) -> OpResult {
    match op {
        "code.create_context" => {
            let s = state.sandbox(args).await?;
            let cwd = args.opt_str("cwd")?;
            let ctx = s
                .execd()
                .create_context(&args.str("language")?, cwd.as_deref())
                .await?;
            state.keep_context(s.id(), &ctx);
            Ok(convert::context(&ctx))
        }
        "code.get_context" => {
            let s = state.sandbox(args).await?;
            Ok(convert::context(
                &s.execd().get_context(&args.str("context_id")?).await?,
            ))
        }
        "code.list_contexts" => {
            let s = state.sandbox(args).await?;
            let language = args.opt_str("language")?;
            let list = s.execd().list_contexts(language.as_deref()).await?;
            Ok(Value::Array(list.iter().map(convert::context).collect()))
        }
        "code.delete_context" => {
            let s = state.sandbox(args).await?;
            s.execd().delete_context(&args.str("context_id")?).await?;
            Ok(Value::Null)
        }
        "code.delete_contexts" => {
            let s = state.sandbox(args).await?;
            s.execd().delete_contexts(&args.str("language")?).await?;
            Ok(Value::Null)
        }
        "code.run" => {
            let s = state.sandbox(args).await?;
            let ctx = target(state, &s, args).await?;
            let mut recorder = JavaHandlers::from_args(args)?;
            let execution = s
                .execd()
                .run_code(
                    &args.str("code")?,
                    Some(&ctx),
                    RunControl::default(),
                    &mut recorder,
                )
                .await?;
            Ok(convert::execution(&execution, serde_json::Map::new()))
        }
        "code.interrupt" => {
            let s = state.sandbox(args).await?;
            s.execd().interrupt_code(&args.str("id")?).await?;
            Ok(Value::Null)
        }
        _ => Err(Failure::Unsupported(op.to_owned())),
    }
}
