//! `code.*`: code-interpreter contexts and runs.

use std::sync::Arc;

use opensandbox_core::models::CodeContext;
use opensandbox_core::Sandbox;
use serde_json::{json, Value};

use crate::args::*;
use crate::convert;
use crate::error::{OpError, OpResult};
use crate::recorder::Recorder;
use crate::session::{Entry, Session};
use crate::stream::{self, Run};

/// The context a run targets: a known context object (as a user holds the one
/// `create_context` returned), fetched once for ids the session has not seen, or a
/// language's default context.
async fn target(s: &Session, sandbox: &Sandbox, a: &CodeRunArgs) -> Result<CodeContext, OpError> {
    if let Some(id) = &a.context_id {
        if let Some(ctx) = s.context(sandbox.id(), id) {
            return Ok(ctx);
        }
        let ctx = sandbox.execd().get_context(id).await?;
        s.keep_context(sandbox.id(), &ctx);
        return Ok(ctx);
    }
    Ok(CodeContext {
        id: None,
        language: a.language.clone().unwrap_or_else(|| "python".to_owned()),
        cwd: None,
    })
}

/// `code.create_context` → `{id, language, cwd}`.
pub async fn create_context(s: &Session, a: CreateContextArgs) -> OpResult {
    let sb = s.sandbox("code.create_context", &a).await?;
    let ctx = sb
        .execd()
        .create_context(&a.language, a.cwd.as_deref())
        .await?;
    s.keep_context(sb.id(), &ctx);
    Ok(convert::context(&ctx))
}

/// `code.get_context` → `{id, language, cwd}`.
pub async fn get_context(s: &Session, a: ContextIdArgs) -> OpResult {
    let sb = s.sandbox("code.get_context", &a).await?;
    Ok(convert::context(
        &sb.execd().get_context(&a.context_id).await?,
    ))
}

/// `code.list_contexts` → `[{id, language, cwd}]`.
pub async fn list_contexts(s: &Session, a: LanguageArgs) -> OpResult {
    let sb = s.sandbox("code.list_contexts", &a).await?;
    let list = sb.execd().list_contexts(a.language.as_deref()).await?;
    Ok(Value::Array(list.iter().map(convert::context).collect()))
}

/// `code.delete_context` → null.
pub async fn delete_context(s: &Session, a: ContextIdArgs) -> OpResult {
    let sb = s.sandbox("code.delete_context", &a).await?;
    sb.execd().delete_context(&a.context_id).await?;
    Ok(Value::Null)
}

/// `code.delete_contexts` → null.
pub async fn delete_contexts(s: &Session, a: DeleteContextsArgs) -> OpResult {
    let sb = s.sandbox("code.delete_contexts", &a).await?;
    sb.execd().delete_contexts(&a.language).await?;
    Ok(Value::Null)
}

/// `code.run` → Execution.
pub async fn run(s: &Session, a: CodeRunArgs) -> OpResult {
    let sb = s.sandbox("code.run", &a).await?;
    let ctx = target(s, &sb, &a).await?;
    let mut recorder = Recorder::new(a.handlers, false, a.skip_accumulation);
    let st = sb
        .execd()
        .run_code_stream(&a.code, Some(&ctx), super::commands::started())
        .await?;
    let ex = stream::run_to_end(st, &mut recorder).await?;
    Ok(convert::execution(&ex, recorder.into_extra()))
}

/// `code.start` → `{handle, id}`.
pub async fn start(s: &Session, a: CodeRunArgs) -> OpResult {
    let sb = s.sandbox("code.start", &a).await?;
    let ctx = target(s, &sb, &a).await?;
    let execd = sb.execd().clone();
    let code = a.code.clone();
    let control = super::commands::started();
    let open = async move { execd.run_code_stream(&code, Some(&ctx), control).await };
    let run = Run::start(open, a.skip_accumulation, a.handlers).await?;
    let id = run.id.clone();
    let handle = s.insert(Entry::Run(Arc::new(run)));
    Ok(json!({"handle": handle, "id": id}))
}

/// `code.interrupt` → null.
pub async fn interrupt(s: &Session, a: ExecIdArgs) -> OpResult {
    let sb = s.sandbox("code.interrupt", &a).await?;
    sb.execd().interrupt_code(&a.id).await?;
    Ok(Value::Null)
}
