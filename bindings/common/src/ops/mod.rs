//! The op table: one line per op (name, argument struct, async function, result
//! kind). The dispatcher, the list of op names and the manifest are all generated
//! from it, so they cannot disagree.

pub mod code;
pub mod commands;
pub mod direct;
pub mod execution;
pub mod files;
pub mod isolation;
pub mod lifecycle;
pub mod pty;
pub mod templates;
pub mod vault;

use serde_json::Value;

use crate::args::{self, *};
use crate::error::{OpError, OpResult};
use crate::manifest::{fields_of, Manifest, OpSpec};
use crate::session::Session;
use crate::transfer;

macro_rules! op_table {
    ($( $name:literal => $args:ty, $func:path, $result:literal; )*) => {
        /// Every op name, in table order.
        pub const OPS: &[&str] = &[$($name),*];

        /// Parses `args` for `op` and runs it.
        pub async fn dispatch(s: &Session, op: &str, args: Value) -> OpResult {
            match op {
                $( $name => {
                    let a: $args = args::parse(op, args)?;
                    $func(s, a).await
                } )*
                _ => Err(OpError::invalid(op, format!("unknown op {op}"))),
            }
        }

        /// The manifest of every op (see `manifest`).
        ///
        /// # Errors
        /// Never for the structs of this crate (a unit test probes them all).
        pub fn manifest() -> Result<Manifest, String> {
            let ops = vec![$( OpSpec {
                name: $name.to_owned(),
                args: fields_of::<$args>()?,
                result: $result.to_owned(),
            } ),*];
            Ok(Manifest { version: 1, ops })
        }
    };
}

op_table! {
    "config.new" => ConnectionArgs, lifecycle::config_new, "Handle";
    "config.info" => ConnectionOnly, lifecycle::config_info, "ConfigInfo";
    "manager.new" => ConnectionOnly, lifecycle::manager_new, "Handle";
    "release" => ReleaseArgs, lifecycle::release, "Released";
    "manifest" => NoArgs, lifecycle::manifest, "Manifest";
    "sandbox.create" => CreateArgs, lifecycle::sandbox_create, "Opened";
    "sandbox.connect" => ConnectArgs, lifecycle::sandbox_connect, "Opened";
    "sandbox.resume" => ResumeArgs, lifecycle::sandbox_resume, "Opened";
    "sandbox.info" => SandboxArgs, lifecycle::sandbox_info, "SandboxId";
    "sandbox.get_info" => SandboxArgs, lifecycle::sandbox_get_info, "SandboxInfo";
    "sandbox.is_healthy" => SandboxArgs, lifecycle::sandbox_is_healthy, "Healthy";
    "sandbox.renew" => RenewArgs, lifecycle::sandbox_renew, "Renewed";
    "sandbox.patch_metadata" => PatchMetadataArgs, lifecycle::sandbox_patch_metadata, "SandboxInfo";
    "sandbox.pause" => SandboxArgs, lifecycle::sandbox_pause, "null";
    "sandbox.kill" => SandboxArgs, lifecycle::sandbox_kill, "null";
    "sandbox.get_endpoint" => EndpointArgs, lifecycle::sandbox_get_endpoint, "Endpoint";
    "sandbox.get_signed_endpoint" => SignedEndpointArgs, lifecycle::sandbox_get_signed_endpoint, "Endpoint";
    "sandbox.get_metrics" => SandboxArgs, lifecycle::sandbox_get_metrics, "Metrics";
    "sandbox.create_snapshot" => CreateSnapshotArgs, lifecycle::sandbox_create_snapshot, "SnapshotInfo";
    "sandbox.get_egress_policy" => SandboxArgs, lifecycle::sandbox_get_egress_policy, "NetworkPolicy";
    "sandbox.get_egress_status" => SandboxArgs, lifecycle::sandbox_get_egress_status, "PolicyStatus";
    "sandbox.ping" => SandboxArgs, lifecycle::sandbox_ping, "null";
    "sandbox.wait_until_ready" => ReadyArgs, lifecycle::sandbox_wait_until_ready, "null";
    "sandbox.open_endpoints" => direct::OpenEndpointsArgs, direct::open_endpoints, "Opened";
    "sandbox.patch_egress_rules" => PatchRulesArgs, lifecycle::sandbox_patch_egress_rules, "PolicyStatus";
    "sandbox.delete_egress_rules" => DeleteRulesArgs, lifecycle::sandbox_delete_egress_rules, "PolicyStatus";
    "sandbox.get_diagnostic_logs" => DiagnosticArgs, lifecycle::sandbox_get_diagnostic_logs, "DiagnosticContent";
    "sandbox.get_diagnostic_events" => DiagnosticArgs, lifecycle::sandbox_get_diagnostic_events, "DiagnosticContent";
    "manager.list_sandbox_infos" => ListSandboxesArgs, lifecycle::manager_list_sandbox_infos, "PagedSandboxInfos";
    "manager.get_sandbox_info" => SandboxIdArgs, lifecycle::manager_get_sandbox_info, "SandboxInfo";
    "manager.kill_sandbox" => SandboxIdArgs, lifecycle::manager_kill_sandbox, "null";
    "manager.pause_sandbox" => SandboxIdArgs, lifecycle::manager_pause_sandbox, "null";
    "manager.resume_sandbox" => SandboxIdArgs, lifecycle::manager_resume_sandbox, "null";
    "manager.renew_sandbox" => ManagerRenewArgs, lifecycle::manager_renew_sandbox, "Renewed";
    "manager.patch_sandbox_metadata" => ManagerPatchArgs, lifecycle::manager_patch_sandbox_metadata, "SandboxInfo";
    "manager.get_endpoint" => ManagerEndpointArgs, lifecycle::manager_get_endpoint, "Endpoint";
    "manager.create_snapshot" => ManagerSnapshotArgs, lifecycle::manager_create_snapshot, "SnapshotInfo";
    "manager.get_diagnostic_logs" => ManagerDiagnosticArgs, lifecycle::manager_get_diagnostic_logs, "DiagnosticContent";
    "manager.get_diagnostic_events" => ManagerDiagnosticArgs, lifecycle::manager_get_diagnostic_events, "DiagnosticContent";
    "manager.get_snapshot" => SnapshotIdArgs, lifecycle::manager_get_snapshot, "SnapshotInfo";
    "manager.delete_snapshot" => SnapshotIdArgs, lifecycle::manager_delete_snapshot, "null";
    "manager.list_snapshots" => ListSnapshotsArgs, lifecycle::manager_list_snapshots, "PagedSnapshotInfos";
    "manager.create_template" => templates::CreateTemplateArgs, templates::create_template, "TemplateInfo";
    "manager.get_template" => templates::TemplateIdArgs, templates::get_template, "TemplateInfo";
    "manager.list_templates" => templates::ListTemplatesArgs, templates::list_templates, "PagedTemplateInfos";
    "manager.delete_template" => templates::TemplateIdArgs, templates::delete_template, "null";
    "credential_vault.create" => vault::CreateVaultArgs, vault::create, "CredentialVaultState";
    "credential_vault.get" => SandboxArgs, vault::get, "CredentialVaultState";
    "credential_vault.patch" => vault::PatchVaultArgs, vault::patch, "CredentialVaultState";
    "credential_vault.delete" => SandboxArgs, vault::delete, "null";
    "credential_vault.list_credentials" => SandboxArgs, vault::list_credentials, "CredentialMetadata[]";
    "credential_vault.get_credential" => vault::VaultItemArgs, vault::get_credential, "CredentialMetadata";
    "credential_vault.list_bindings" => SandboxArgs, vault::list_bindings, "CredentialBindingMetadata[]";
    "credential_vault.get_binding" => vault::VaultItemArgs, vault::get_binding, "CredentialBindingMetadata";
    "commands.run" => RunArgs, commands::run, "Execution";
    "commands.start" => RunArgs, commands::start, "RunHandle";
    "commands.run_in_session" => SessionRunArgs, commands::run_in_session, "Execution";
    "commands.start_in_session" => SessionRunArgs, commands::start_in_session, "RunHandle";
    "execution.next_batch" => NextBatchArgs, commands::next_batch, "Batch";
    "execution.wait" => HandleArgs, commands::wait, "Execution";
    "execution.cancel" => HandleArgs, commands::cancel, "null";
    "commands.interrupt" => ExecIdArgs, commands::interrupt, "null";
    "commands.get_command_status" => ExecIdArgs, commands::get_command_status, "CommandStatus";
    "commands.set_env" => SetEnvArgs, commands::set_env, "null";
    "commands.get_background_command_logs" => LogsArgs, commands::get_background_command_logs, "CommandLogs";
    "commands.create_session" => CreateSessionArgs, commands::create_session, "SessionId";
    "commands.delete_session" => SessionIdArgs, commands::delete_session, "null";
    "commands.list" => execution::ListCommandsArgs, execution::list, "ListCommandsPage";
    "execution.get_instance" => SandboxArgs, execution::get_instance, "ExecutionInstance";
    "execution.get_operation" => execution::GetOperationArgs, execution::get_operation, "ExecutionOperation";
    "execution.create_command" => execution::CreateCommandArgs, execution::create_command, "ExecutionOperation";
    "execution.create_pty" => execution::CreatePtyArgs, execution::create_pty, "ExecutionOperation";
    "code.create_context" => CreateContextArgs, code::create_context, "CodeContext";
    "code.get_context" => ContextIdArgs, code::get_context, "CodeContext";
    "code.list_contexts" => LanguageArgs, code::list_contexts, "CodeContext[]";
    "code.delete_context" => ContextIdArgs, code::delete_context, "null";
    "code.delete_contexts" => DeleteContextsArgs, code::delete_contexts, "null";
    "code.run" => CodeRunArgs, code::run, "Execution";
    "code.start" => CodeRunArgs, code::start, "RunHandle";
    "code.interrupt" => ExecIdArgs, code::interrupt, "null";
    "files.write_file" => WriteFileArgs, files::write_file, "null";
    "files.write_files" => WriteFilesArgs, files::write_files, "null";
    "files.read_file" => ReadArgs, files::read_file, "Text";
    "files.read_bytes" => ReadArgs, files::read_bytes, "Bytes";
    "files.read_bytes_stream" => ReadArgs, files::read_bytes_stream, "Digest";
    "files.get_file_info" => PathsArgs, files::get_file_info, "EntryInfoMap";
    "files.delete_files" => PathsArgs, files::delete_files, "null";
    "files.delete_directories" => PathsArgs, files::delete_directories, "null";
    "files.move_files" => MoveFilesArgs, files::move_files, "null";
    "files.set_permissions" => PermissionsArgs, files::set_permissions, "null";
    "files.create_directories" => PermissionsArgs, files::create_directories, "null";
    "files.replace_contents" => ReplaceContentsArgs, files::replace_contents, "null";
    "files.replace_contents_detailed" => ReplaceContentsArgs, files::replace_contents_detailed, "ReplaceResult[]";
    "files.search" => SearchArgs, files::search, "EntryInfo[]";
    "files.list_directory" => ListDirArgs, files::list_directory, "EntryInfo[]";
    "metrics.watch" => WatchArgs, files::watch, "Metrics[]";
    "metrics.start" => SandboxArgs, files::watch_start, "Handle";
    "upload.open" => UploadArgs, transfer::upload_open, "Handle";
    "upload.finish" => HandleArgs, transfer::upload_finish, "null";
    "upload.abort" => HandleArgs, transfer::upload_abort, "null";
    "download.open" => ReadArgs, transfer::download_open, "Handle";
    "download.close" => HandleArgs, transfer::download_close, "null";
    "commands.follow_logs" => pty::FollowLogsArgs, pty::follow_logs, "Handle";
    "commands.follow_background_command_logs" => pty::FollowCollectArgs, pty::follow_collect, "FollowedLogs";
    "pty.create" => pty::PtyCreateArgs, pty::create, "PtySessionId";
    "pty.get" => pty::PtySessionArgs, pty::get, "PtySessionStatus";
    "pty.delete" => pty::PtySessionArgs, pty::delete, "null";
    "pty.attach" => pty::PtyAttachArgs, pty::attach, "PtyAttached";
    "pty.read" => pty::PtyReadArgs, pty::read, "PtyRead";
    "pty.write" => pty::PtyWriteArgs, pty::write, "null";
    "pty.resize" => pty::PtyResizeArgs, pty::resize, "null";
    "pty.signal" => pty::PtySignalArgs, pty::signal, "null";
    "pty.close" => HandleArgs, pty::close, "PtyClosed";
    "isolation.capabilities" => SandboxArgs, isolation::capabilities_op, "IsolatedCapabilities";
    "isolation.create" => IsolationCreateArgs, isolation::create, "IsolatedSessionInfo";
    "isolation.attach" => IsolationSessionArgs, isolation::attach, "IsolatedSessionInfo";
    "isolation.get" => IsolationSessionArgs, isolation::get, "IsolatedSessionState";
    "isolation.list" => SandboxArgs, isolation::list, "IsolatedSessionSummary[]";
    "isolation.delete" => IsolationSessionArgs, isolation::delete, "null";
    "isolation.run" => IsolationRunArgs, isolation::run, "Execution";
    "isolation.start" => IsolationRunArgs, isolation::start, "RunHandle";
    "isolation.run_background" => IsolationRunArgs, isolation::run_background, "IsolatedBackgroundRun";
    "isolation.run_status" => IsolationRunIdArgs, isolation::run_status_op, "IsolatedRunStatus";
    "isolation.run_logs" => IsolationRunIdArgs, isolation::run_logs, "IsolatedRunLogs";
}

/// Ops that finish everything they start within the call: one or a few requests whose
/// responses are read to their end, no handle to a run, transfer, stream or PTY kept
/// for later calls, no task spawned that must progress afterwards. A blocking host may
/// run these on its calling thread's own runtime and connections
/// (`opensandbox_core::runtime::block_on_request`, docs/architecture.md "Per-call
/// cost"); every other op on the shared runtime. An allowlist: an op added to the table
/// runs on the shared runtime until it is added here.
pub const RUN_IN_CALL: &[&str] = &[
    "sandbox.get_info",
    "sandbox.is_healthy",
    "sandbox.renew",
    "sandbox.patch_metadata",
    "sandbox.pause",
    "sandbox.kill",
    "sandbox.get_endpoint",
    "sandbox.get_signed_endpoint",
    "sandbox.get_metrics",
    "sandbox.get_egress_policy",
    "sandbox.get_egress_status",
    "sandbox.ping",
    "sandbox.patch_egress_rules",
    "sandbox.delete_egress_rules",
    "manager.list_sandbox_infos",
    "manager.get_sandbox_info",
    "manager.kill_sandbox",
    "manager.renew_sandbox",
    "manager.patch_sandbox_metadata",
    "manager.get_endpoint",
    "credential_vault.get",
    "credential_vault.list_credentials",
    "credential_vault.get_credential",
    "credential_vault.list_bindings",
    "credential_vault.get_binding",
    "commands.run",
    "commands.run_in_session",
    "commands.interrupt",
    "commands.get_command_status",
    "commands.set_env",
    "commands.get_background_command_logs",
    "commands.create_session",
    "commands.delete_session",
    "commands.list",
    "execution.get_instance",
    "execution.get_operation",
    "code.create_context",
    "code.get_context",
    "code.list_contexts",
    "code.delete_context",
    "code.run",
    "code.interrupt",
    "files.write_file",
    "files.write_files",
    "files.read_file",
    "files.read_bytes",
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
    "isolation.get",
    "isolation.list",
    "isolation.run",
    "isolation.run_status",
    "isolation.run_logs",
];

/// Ops that open a response body which later calls read (a download): a blocking host
/// opens it on a driver of its own (`opensandbox_core::runtime::Driver`), read by the
/// thread that asks for the next bytes (docs/architecture.md "Downloads").
pub const DRIVEN_BY_READS: &[&str] = &["download.open"];

/// Whether `op` is in [`DRIVEN_BY_READS`].
pub fn opens_a_driven_body(op: &str) -> bool {
    DRIVEN_BY_READS.contains(&op)
}

/// Ops that run an execution to its end (`commands.run`, ...): dropped unfinished, they
/// interrupt it, which may need their stream read on after the drop (core `stream.rs`).
pub const RUNS_TO_END: &[&str] = &[
    "commands.run",
    "commands.run_in_session",
    "code.run",
    "isolation.run",
];

/// Whether `op` is in [`RUNS_TO_END`].
pub fn runs_to_end(op: &str) -> bool {
    RUNS_TO_END.contains(&op)
}

/// Whether `op` is in [`RUN_IN_CALL`].
pub fn runs_in_call(op: &str) -> bool {
    RUN_IN_CALL.contains(&op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_run_in_call_exist_and_keep_nothing_for_later_calls() {
        let m = manifest().unwrap();
        for op in RUN_IN_CALL {
            let spec = m.ops.iter().find(|s| s.name == *op);
            let spec = spec.unwrap_or_else(|| panic!("{op} is not an op"));
            // A handle result means something lives on after the call: a run, an
            // upload, a download, a PTY, a followed log.
            assert!(
                !spec.result.contains("Handle") && spec.result != "Opened",
                "{op} returns {}",
                spec.result
            );
            assert!(
                !op.starts_with("pty.")
                    && !op.starts_with("upload.")
                    && !op.starts_with("download.")
            );
        }
        assert!(!runs_in_call("commands.start"));
        assert!(!runs_in_call("execution.next_batch"));
        assert!(runs_in_call("files.get_file_info"));
    }
}
