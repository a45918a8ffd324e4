//! The operations of PROTOCOL.md §2, one module per area, and the dispatch table.

mod code;
mod commands;
mod files;
mod lifecycle;

use crate::args::Args;
use crate::protocol::{Failure, OpResult};
use crate::state::State;

/// Every op this driver implements (announced in the handshake).
pub const OPS: &[&str] = &[
    "sandbox.create",
    "sandbox.connect",
    "sandbox.resume",
    "sandbox.get_info",
    "sandbox.is_healthy",
    "sandbox.renew",
    "sandbox.patch_metadata",
    "sandbox.pause",
    "sandbox.kill",
    "sandbox.get_endpoint",
    "sandbox.get_metrics",
    "sandbox.create_snapshot",
    "sandbox.get_egress_policy",
    "sandbox.patch_egress_rules",
    "sandbox.delete_egress_rules",
    "sandbox.get_diagnostic_logs",
    "sandbox.get_diagnostic_events",
    "manager.list_sandbox_infos",
    "manager.get_sandbox_info",
    "manager.kill_sandbox",
    "manager.pause_sandbox",
    "manager.resume_sandbox",
    "manager.renew_sandbox",
    "manager.patch_sandbox_metadata",
    "manager.get_endpoint",
    "manager.get_snapshot",
    "manager.delete_snapshot",
    "manager.list_snapshots",
    "commands.run",
    "commands.start",
    "execution.wait",
    "commands.interrupt",
    "commands.get_command_status",
    "commands.get_background_command_logs",
    "commands.create_session",
    "commands.run_in_session",
    "commands.delete_session",
    "code.create_context",
    "code.get_context",
    "code.list_contexts",
    "code.delete_context",
    "code.delete_contexts",
    "code.run",
    "code.start",
    "code.interrupt",
    "files.write_file",
    "files.write_files",
    "files.read_file",
    "files.read_bytes",
    "files.read_bytes_stream",
    "files.get_file_info",
    "files.delete_files",
    "files.delete_directories",
    "files.move_files",
    "files.set_permissions",
    "files.create_directories",
    "files.replace_contents",
    "files.replace_contents_detailed",
    "files.search",
    "files.list_directory",
    "metrics.watch",
];

pub async fn dispatch(state: &mut State, op: &str, args: Args) -> OpResult {
    match op.split_once('.') {
        Some(("sandbox" | "manager", _)) => lifecycle::run(state, op, &args).await,
        Some(("commands" | "execution", _)) => commands::run(state, op, &args).await,
        Some(("code", _)) => code::run(state, op, &args).await,
        Some(("files" | "metrics", _)) => files::run(state, op, &args).await,
        _ => Err(Failure::Unsupported(op.to_owned())),
    }
}
