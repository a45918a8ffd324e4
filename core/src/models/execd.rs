//! execd models (commands, sessions, code contexts, files, metrics). execd speaks
//! snake_case on the wire.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Options of `commands.run` (the Python SDK's `RunCommandOpts`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunCommandOptions {
    /// Run detached; the stream ends right after the command starts.
    pub background: bool,
    /// Working directory (sent as `cwd`).
    pub working_directory: Option<String>,
    /// Server-side limit; the server kills the command after it. `None` = no limit.
    pub timeout: Option<Duration>,
    /// Run as this uid.
    pub uid: Option<u32>,
    /// Run as this gid (requires `uid`).
    pub gid: Option<u32>,
    /// Extra environment variables.
    pub envs: BTreeMap<String, String>,
}

/// Body of `POST /command`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCommandRequest {
    /// Shell command, run with `bash -c`; empty (and not sent) when `argv` is set.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// Executable and literal arguments, run without a shell (exclusive with
    /// `command`); sent only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Detach.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// Limit in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// gid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
    /// Environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub envs: BTreeMap<String, String>,
}

/// Body of `POST /session/{id}/run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInSessionRequest {
    /// Command.
    pub command: String,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Limit in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// Status of a command (`GET /command/status/{id}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandStatus {
    /// Command id.
    #[serde(default)]
    pub id: String,
    /// The command text.
    #[serde(default)]
    pub content: Option<String>,
    /// Still running.
    #[serde(default)]
    pub running: bool,
    /// Exit code once finished (255 spawn failure, -1 killed by a signal).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Error text, e.g. `exit status 3`.
    #[serde(default)]
    pub error: Option<String>,
    /// Start time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub started_at: Option<DateTime<Utc>>,
    /// End time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub finished_at: Option<DateTime<Utc>>,
}

/// A slice of background command output plus the cursor to continue from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLogs {
    /// Output since the cursor that was passed.
    pub content: String,
    /// Cursor for the next call (a byte offset on real servers).
    pub cursor: Option<u64>,
}

/// A code interpreter context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeContext {
    /// Context id (absent = the language's default context).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Language: python, bash, javascript, ...
    #[serde(default)]
    pub language: String,
    /// Working directory (reference implementation extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// Body of `POST /code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCodeRequest {
    /// Source code.
    pub code: String,
    /// Context; `None` runs the code as a shell command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CodeContext>,
}

/// File type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    /// Regular file.
    File,
    /// Directory.
    Directory,
    /// Symbolic link.
    Symlink,
    /// Anything else (and unknown values).
    #[default]
    #[serde(other)]
    Other,
}

/// Metadata of one file (`FileInfo` on the wire; `EntryInfo` in the Python SDK).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryInfo {
    /// Absolute path.
    pub path: String,
    /// Type.
    #[serde(rename = "type", default)]
    pub entry_type: EntryType,
    /// Size in bytes.
    #[serde(default)]
    pub size: u64,
    /// Octal mode written as a decimal integer (644, 755).
    #[serde(default)]
    pub mode: u32,
    /// Owner name.
    #[serde(default)]
    pub owner: String,
    /// Group name.
    #[serde(default)]
    pub group: String,
    /// Last modification.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub modified_at: Option<DateTime<Utc>>,
    /// Creation.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub created_at: Option<DateTime<Utc>>,
}

/// Ownership and mode to apply to a path (`mode: 0` = leave as is).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Permission {
    /// Owner name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Group name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Octal mode as decimal digits (755).
    #[serde(default)]
    pub mode: u32,
}

/// A path plus the permissions to give it (`set_permissions`, `create_directories`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathPermission {
    /// Path.
    pub path: String,
    /// Owner name.
    pub owner: Option<String>,
    /// Group name.
    pub group: Option<String>,
    /// Octal mode as decimal digits; `None` = 755 for directories, unchanged otherwise.
    pub mode: Option<u32>,
}

/// One rename (`POST /files/mv`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveEntry {
    /// Source path.
    pub src: String,
    /// Destination path.
    pub dest: String,
}

/// One string replacement in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentReplaceEntry {
    /// File.
    pub path: String,
    /// Text to find (non-empty).
    pub old_content: String,
    /// Replacement.
    pub new_content: String,
}

/// Result of a detailed replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentReplaceResult {
    /// File.
    pub path: String,
    /// Occurrences replaced.
    pub replaced_count: u64,
}

/// Sandbox resource usage (`GET /metrics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxMetrics {
    /// CPUs available.
    #[serde(default)]
    pub cpu_count: f64,
    /// CPU use in percent.
    #[serde(default, rename = "cpu_used_pct")]
    pub cpu_used_percentage: f64,
    /// Total memory in MiB.
    #[serde(default, rename = "mem_total_mib")]
    pub memory_total_in_mib: f64,
    /// Used memory in MiB.
    #[serde(default, rename = "mem_used_mib")]
    pub memory_used_in_mib: f64,
    /// Sample time, Unix ms.
    #[serde(default)]
    pub timestamp: i64,
}

/// Options of a file read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadOptions {
    /// Raw `Range` header value, e.g. `bytes=0-99` (exclusive with offset/limit).
    pub range: Option<String>,
    /// First line to return, 1-based.
    pub offset: Option<u64>,
    /// Number of lines to return.
    pub limit: Option<u64>,
}

/// `GET /execution/instance`: one execd lifetime and its recovery window (upstream
/// execd's keyed creation, issue #1547).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionInstance {
    /// 32 characters, new for each execd lifetime.
    pub instance_id: String,
    /// The server's Unix time (seconds) when it answered.
    pub issued_at: i64,
    /// How long a record is kept from its id's timestamp (86400).
    #[serde(default)]
    pub retention_seconds: i64,
    /// Most records kept at once (4096).
    #[serde(default)]
    pub capacity: i64,
}

impl ExecutionInstance {
    /// A new operation id, `<instance_id>.<issued_at>.<32 hex>`. Generate it once and
    /// save it (with the request) BEFORE calling a create method; on recovery, load
    /// the saved one, never generate another.
    pub fn new_operation_id(&self) -> String {
        format!(
            "{}.{}.{}",
            self.instance_id,
            self.issued_at,
            uuid::Uuid::new_v4().simple()
        )
    }
}

/// A keyed creation record (`POST /command/operations`, `POST /pty/operations`,
/// `GET /execution/operation`). `created` says the process (or dormant PTY session)
/// was created, nothing about how a command ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutionOperation {
    /// The command id (status, logs, interrupt) or PTY session id.
    pub id: String,
    /// `command` or `pty`.
    pub kind: String,
    /// `creating`, `created` or `failed` (open set).
    pub state: String,
    /// When the record may be dropped (the id's timestamp + 24 h).
    #[serde(default, deserialize_with = "super::time::opt")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// One command of the command inventory (`GET /command`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSummary {
    /// The command id.
    pub session: String,
    /// Still running (a running summary has no terminal fields).
    pub running: bool,
    /// Started with `background: true`.
    #[serde(default)]
    pub background: bool,
    /// Start time.
    #[serde(default, deserialize_with = "super::time::opt")]
    pub started_at: Option<DateTime<Utc>>,
    /// End time (finished commands).
    #[serde(default, deserialize_with = "super::time::opt")]
    pub finished_at: Option<DateTime<Utc>>,
    /// Exit code (finished commands; null when unknown).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Failure text (finished commands that failed).
    #[serde(default)]
    pub error: Option<String>,
}

/// Pagination of a command inventory page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandPagination {
    /// The page size the server used.
    pub limit: u32,
    /// The cursor of the next page; `None` on the last page.
    #[serde(default, rename = "nextCursor")]
    pub next_cursor: Option<String>,
}

/// A weakly consistent page of the command inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCommandsPage {
    /// The commands of this page, newest first.
    pub commands: Vec<CommandSummary>,
    /// Where the next page starts.
    pub pagination: CommandPagination,
}
