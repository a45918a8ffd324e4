//! The JSON operations (shapes of conformance/PROTOCOL.md §2), one module per area,
//! and the dispatch table. Objects are native handles (`handle`, `config`).

mod code;
mod commands;
mod files;
mod lifecycle;

use crate::args::Args;
use crate::protocol::{Failure, OpResult};
use crate::state::State;

pub async fn dispatch(state: &State, op: &str, args: Args) -> OpResult {
    match op.split_once('.') {
        Some(("sandbox" | "manager", _)) => lifecycle::run(state, op, &args).await,
        Some(("commands" | "execution", _)) => commands::run(state, op, &args).await,
        Some(("code", _)) => code::run(state, op, &args).await,
        Some(("files" | "metrics", _)) => files::run(state, op, &args).await,
        _ => Err(Failure::Unsupported(op.to_owned())),
    }
}
