//! Shell commands: streaming runs, run-to-completion, background commands, status,
//! logs and interrupt.

use std::time::Duration;

use reqwest::Method;

use super::ExecdClient;
use crate::error::{Error, ErrorKind, Result};
use crate::http::{body_stream, response_request_id, Req};
use crate::lifecycle::seg;
use crate::models::{CommandLogs, CommandStatus, RunCommandOptions, RunCommandRequest};
use crate::stream::{collect_execution, EventStream, Execution, ExecutionHandlers, ExecutionKind};

/// Response header carrying the next background-logs cursor.
pub const TAIL_CURSOR_HEADER: &str = "EXECD-COMMANDS-TAIL-CURSOR";

/// How a run is controlled on the client side. Nothing here has a default limit: a
/// command runs as long as it runs unless the caller asks otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunControl {
    /// Client-side deadline for the whole run; when it passes, the command is
    /// interrupted on the server and the run fails with [`ErrorKind::Timeout`].
    pub deadline: Option<Duration>,
    /// When the stream (or the run future) is dropped before the end, interrupt the
    /// command on the server too. Without it, only the connection is closed and the
    /// command keeps running (protocol §7.17).
    pub interrupt_on_drop: bool,
}

pub(crate) fn ms(op: &'static str, d: Option<Duration>) -> Result<Option<u64>> {
    match d {
        None => Ok(None),
        Some(d) if d.is_zero() => Ok(None),
        Some(d) => u64::try_from(d.as_millis())
            .map(|v| Some(v.max(1)))
            .map_err(|_| Error::invalid_argument(op, "timeout too large")),
    }
}

impl ExecdClient {
    /// Opens an event stream: sends `req`, checks the status, wraps the body.
    pub(crate) async fn open_stream(
        &self,
        req: Req,
        kind: ExecutionKind,
        interrupt_on_drop: bool,
    ) -> Result<EventStream> {
        let op = req.op;
        let req = req.stream().header(
            reqwest::header::ACCEPT,
            reqwest::header::HeaderValue::from_static("text/event-stream"),
        );
        let req = req.header(
            reqwest::header::CACHE_CONTROL,
            reqwest::header::HeaderValue::from_static("no-cache"),
        );
        if !interrupt_on_drop {
            let resp = self.http.execute(req).await?;
            let rid = response_request_id(resp.headers());
            return Ok(EventStream::new(op, kind, body_stream(op, resp), rid));
        }
        // The server starts the command before its answer (and `init`) reaches us. A
        // caller dropped in between (a cancel right after sending) would leave it
        // running with no id to interrupt it by, so the request goes out in a task of
        // its own, which a dropped caller leaves running (a dropped `JoinHandle`
        // detaches): it takes the answer and drops the stream, whose drop reads on for
        // `init` and interrupts the command (stream.rs).
        let client = self.clone();
        let sending = tokio::spawn(async move {
            let resp = client.http.execute(req).await?;
            let rid = response_request_id(resp.headers());
            let mut stream = EventStream::new(op, kind, body_stream(op, resp), rid);
            stream.set_on_drop(Box::new(move |id| client.interrupt_detached(id, kind)));
            Ok(stream)
        });
        sending
            .await
            .map_err(|e| Error::internal(op, format!("the request's task failed: {e}")))?
    }

    /// Fires an interrupt without waiting for it (used from `Drop`).
    pub(crate) fn interrupt_detached(&self, id: String, kind: ExecutionKind) {
        let client = self.clone();
        let fut = async move {
            let r = match kind {
                ExecutionKind::Code => client.interrupt_code(&id).await,
                _ => client.interrupt(&id).await,
            };
            if let Err(e) = r {
                tracing::debug!(error = %e, "interrupt after drop failed");
            }
        };
        // Not on a calling thread's local runtime, where it would wait for its next call.
        crate::runtime::spawn_detached(fut);
    }

    pub(crate) fn command_request(
        command: &str,
        argv: Option<&[String]>,
        opts: &RunCommandOptions,
    ) -> Result<RunCommandRequest> {
        const OP: &str = "commands.run";
        match argv {
            None if command.trim().is_empty() => {
                return Err(Error::invalid_argument(OP, "command must not be blank"));
            }
            Some(argv) if argv.first().is_none_or(|p| p.is_empty()) => {
                return Err(Error::invalid_argument(
                    OP,
                    "argv[0] must be a non-empty program",
                ));
            }
            _ => {}
        }
        if opts.gid.is_some() && opts.uid.is_none() {
            return Err(Error::invalid_argument(OP, "gid requires uid"));
        }
        Ok(RunCommandRequest {
            command: if argv.is_some() {
                String::new()
            } else {
                command.to_owned()
            },
            argv: argv.map(<[String]>::to_vec),
            cwd: opts.working_directory.clone(),
            background: opts.background,
            timeout: ms(OP, opts.timeout)?,
            uid: opts.uid,
            gid: opts.gid,
            envs: opts.envs.clone(),
        })
    }

    /// `POST /command` as a stream of typed events.
    pub async fn run_command_stream(
        &self,
        command: &str,
        opts: &RunCommandOptions,
        control: RunControl,
    ) -> Result<EventStream> {
        self.command_stream(command, None, opts, control).await
    }

    /// `POST /command` with `argv` (an executable and its literal arguments, no shell)
    /// instead of shell text, as a stream of typed events.
    pub async fn run_argv_stream(
        &self,
        argv: &[String],
        opts: &RunCommandOptions,
        control: RunControl,
    ) -> Result<EventStream> {
        self.command_stream("", Some(argv), opts, control).await
    }

    /// Runs `argv` (no shell) to completion, as [`run_command`](Self::run_command).
    pub async fn run_argv(
        &self,
        argv: &[String],
        opts: &RunCommandOptions,
        control: RunControl,
        handlers: &mut (impl ExecutionHandlers + ?Sized),
    ) -> Result<Execution> {
        let stream = self.run_argv_stream(argv, opts, control).await?;
        run_with_deadline("commands.run", stream, control.deadline, handlers).await
    }

    async fn command_stream(
        &self,
        command: &str,
        argv: Option<&[String]>,
        opts: &RunCommandOptions,
        control: RunControl,
    ) -> Result<EventStream> {
        let body = Self::command_request(command, argv, opts)?;
        let kind = if opts.background {
            ExecutionKind::BackgroundCommand
        } else {
            ExecutionKind::Command
        };
        let req = self
            .req("commands.run", Method::POST, "/command")
            .json(&body)?;
        self.open_stream(
            req,
            kind,
            control.interrupt_on_drop || control.deadline.is_some(),
        )
        .await
    }

    /// Runs a command to completion, calling `handlers` as events arrive, and returns
    /// the [`Execution`] (exit code per the official rules).
    pub async fn run_command(
        &self,
        command: &str,
        opts: &RunCommandOptions,
        control: RunControl,
        handlers: &mut (impl ExecutionHandlers + ?Sized),
    ) -> Result<Execution> {
        let stream = self.run_command_stream(command, opts, control).await?;
        run_with_deadline("commands.run", stream, control.deadline, handlers).await
    }

    /// `DELETE /command?id=`: SIGTERM, then SIGKILL after 3 s.
    pub async fn interrupt(&self, execution_id: &str) -> Result<()> {
        const OP: &str = "commands.interrupt";
        require(OP, execution_id)?;
        let req = self
            .req(OP, Method::DELETE, "/command")
            .query("id", execution_id);
        self.http.empty(req).await
    }

    /// `GET /command/status/{id}`.
    pub async fn get_command_status(&self, execution_id: &str) -> Result<CommandStatus> {
        const OP: &str = "commands.get_command_status";
        require(OP, execution_id)?;
        let req = self.req(
            OP,
            Method::GET,
            &format!("/command/status/{}", seg(execution_id)),
        );
        self.http.json(req).await
    }

    /// `GET /command/{id}/logs?cursor=`: output of a background command since `cursor`.
    pub async fn get_background_command_logs(
        &self,
        execution_id: &str,
        cursor: Option<u64>,
    ) -> Result<CommandLogs> {
        const OP: &str = "commands.get_background_command_logs";
        require(OP, execution_id)?;
        let mut req = self.req(
            OP,
            Method::GET,
            &format!("/command/{}/logs", seg(execution_id)),
        );
        if let Some(c) = cursor {
            req = req.query("cursor", c);
        }
        let (headers, body) = self.http.bytes(req).await?;
        let cursor = headers
            .get(TAIL_CURSOR_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        Ok(CommandLogs {
            content: String::from_utf8_lossy(&body).into_owned(),
            cursor,
        })
    }
}

/// Whether `key` may be persisted by [`ExecdClient::set_env`]:
/// `[A-Za-z_][A-Za-z0-9_]*`, as the official SDKs check.
pub fn valid_env_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// `s` as one POSIX shell word: `'...'` with each `'` written `'\''`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The env-file entry for `key=value` as the official writer makes it: `KEY='value'`
/// (read back literally) unless the value has a `'`; then `KEY="value"` with
/// `\ " \n \r \t` escaped (the reader expands `$NAME` in that form).
fn env_file_entry(key: &str, value: &str) -> String {
    if !value.contains('\'') {
        return format!("{key}='{value}'");
    }
    let escaped = value
        .replace('\\', r"\\")
        .replace('"', r#"\""#)
        .replace('\n', r"\n")
        .replace('\r', r"\r")
        .replace('\t', r"\t");
    format!("{key}=\"{escaped}\"")
}

/// The shell command `commands.set_env(key, value)` runs in the sandbox (the official
/// Python SDK's, byte for byte): it fails when `$EXECD_ENVS` is unset, else appends
/// one entry to that file. The entry reaches `printf` as one single-quoted word, so
/// nothing in the value is ever run by the shell. A newline is allowed (the file's
/// quoted forms keep it); a NUL or a key that is no variable name is
/// [`ErrorKind::InvalidArgument`].
pub fn set_env_command(key: &str, value: &str) -> Result<String> {
    const OP: &str = "commands.set_env";
    if !valid_env_key(key) {
        return Err(Error::invalid_argument(
            OP,
            format!("set_env key must match ^[A-Za-z_][A-Za-z0-9_]*$, got {key:?}"),
        ));
    }
    if value.contains('\0') {
        return Err(Error::invalid_argument(
            OP,
            "set_env value cannot contain NUL bytes",
        ));
    }
    let entry = env_file_entry(key, value);
    Ok([
        format!(
            r#"if [ -z "${{EXECD_ENVS:-}}" ]; then printf '%s\n' 'EXECD_ENVS is not set; cannot persist environment variable {key}' >&2; exit 1; fi"#
        ),
        r#"mkdir -p "$(dirname "$EXECD_ENVS")""#.to_string(),
        format!(r#"printf '%s\n' {} >> "$EXECD_ENVS""#, shell_quote(&entry)),
    ]
    .join("\n"))
}

impl ExecdClient {
    /// `commands.set_env`: persists `key=value` in the sandbox env file (`$EXECD_ENVS`)
    /// for later commands and new sessions, by running [`set_env_command`] in the
    /// foreground. Not a route: the command's failure (no `$EXECD_ENVS`, a file it
    /// cannot write, no confirmed exit 0) is an [`ErrorKind::Api`] error carrying its
    /// stderr.
    pub async fn set_env(&self, key: &str, value: &str) -> Result<()> {
        const OP: &str = "commands.set_env";
        let command = set_env_command(key, value)?;
        let execution = self
            .run_command(
                &command,
                &RunCommandOptions::default(),
                RunControl::default(),
                &mut (),
            )
            .await?;
        if execution.error.is_none() && execution.exit_code == Some(0) {
            return Ok(());
        }
        let stderr: String = execution
            .logs
            .stderr
            .iter()
            .map(|m| m.text.as_str())
            .collect();
        let detail = match stderr.trim() {
            "" => execution
                .error
                .as_ref()
                .map(|e| e.value.clone())
                .unwrap_or_default(),
            text => text.to_string(),
        };
        let mut message = format!("commands.set_env failed for '{key}'");
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(&detail);
        }
        Err(Error::new(ErrorKind::Api, OP, message))
    }
}

pub(crate) fn require(op: &'static str, id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::invalid_argument(op, "id must not be empty"));
    }
    Ok(())
}

/// Collects a stream, enforcing an optional client-side deadline. On expiry the stream
/// is dropped, which (streams opened with a deadline carry the hook) interrupts the
/// execution on the server.
pub(crate) async fn run_with_deadline(
    op: &'static str,
    stream: EventStream,
    deadline: Option<Duration>,
    handlers: &mut (impl ExecutionHandlers + ?Sized),
) -> Result<Execution> {
    match deadline {
        None => collect_execution(stream, handlers).await,
        Some(d) => match tokio::time::timeout(d, collect_execution(stream, handlers)).await {
            Ok(r) => r,
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                op,
                format!("execution exceeded its deadline of {d:?} and was interrupted"),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_env_command_matches_the_official_text() {
        let expected = concat!(
            r#"if [ -z "${EXECD_ENVS:-}" ]; then printf '%s\n' 'EXECD_ENVS is not set; cannot persist environment variable FOO' >&2; exit 1; fi"#,
            "\n",
            r#"mkdir -p "$(dirname "$EXECD_ENVS")""#,
            "\n",
            r#"printf '%s\n' 'FOO='\''bar baz'\''' >> "$EXECD_ENVS""#,
        );
        assert_eq!(set_env_command("FOO", "bar baz").unwrap(), expected);
        assert_eq!(env_file_entry("K", "it's"), r#"K="it's""#);
        assert_eq!(env_file_entry("K", "'\\\"\n\r\t$x"), r#"K="'\\\"\n\r\t$x""#);
    }

    #[test]
    fn set_env_refuses_bad_keys_and_nul() {
        for key in ["", "1A", "A-B", "A B", "A=B", "Ä", "A\n", "$(id)"] {
            let err = set_env_command(key, "v").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{key:?}");
        }
        let err = set_env_command("K", "a\0b").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(set_env_command("_k9", "").is_ok());
        assert!(set_env_command("K", "multi\nline").is_ok());
    }

    /// Hostile values go through a real shell into the file exactly as the official
    /// writer puts them: nothing in them runs, and each is one entry.
    #[test]
    fn set_env_quoting_survives_hostile_values() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub/envs");
        let canary = dir.path().join("pwned");
        let c = canary.display();
        let values = [
            format!("$(touch {c})"),
            format!("`touch {c}`"),
            format!("'; touch {c}; echo '"),
            format!("\"; touch {c}; echo \""),
            format!("a\nB=$(touch {c})\n"),
            format!("it's\n$(touch {c})"),
            "it's a \"test\" with \\ and\ttab\r".to_string(),
            "$HOME ${HOME} %s %n".to_string(),
            String::new(),
        ];
        let mut expected = String::new();
        for (i, v) in values.iter().enumerate() {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(set_env_command(&format!("K{i}"), v).unwrap())
                .env("EXECD_ENVS", &file)
                .output()
                .unwrap();
            assert!(out.status.success(), "{i}: {out:?}");
            expected.push_str(&env_file_entry(&format!("K{i}"), v));
            expected.push('\n');
        }
        assert!(!canary.exists(), "a value was run by the shell");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    }

    #[test]
    fn set_env_fails_without_execd_envs() {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(set_env_command("K", "v").unwrap())
            .env_remove("EXECD_ENVS")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("EXECD_ENVS is not set"));
    }

    #[test]
    fn argv_is_sent_only_when_set_and_replaces_command() {
        let opts = RunCommandOptions::default();
        let shell = ExecdClient::command_request("echo hi", None, &opts).expect("shell");
        let v = serde_json::to_value(&shell).expect("json");
        assert_eq!(v, serde_json::json!({"command": "echo hi"}));
        let argv = vec!["python3".to_owned(), "-c".to_owned(), "print(1)".to_owned()];
        let req = ExecdClient::command_request("", Some(&argv), &opts).expect("argv");
        let v = serde_json::to_value(&req).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"argv": ["python3", "-c", "print(1)"]})
        );
        let back: RunCommandRequest = serde_json::from_value(v).expect("back");
        assert_eq!(back.argv.as_deref(), Some(&argv[..]));
        assert!(ExecdClient::command_request("", Some(&[]), &opts).is_err());
        assert!(ExecdClient::command_request("", Some(&[String::new()]), &opts).is_err());
        assert!(ExecdClient::command_request("  ", None, &opts).is_err());
    }
}
