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
        let resp = self.http.execute(req).await?;
        let rid = response_request_id(resp.headers());
        let mut stream = EventStream::new(op, kind, body_stream(op, resp), rid);
        if interrupt_on_drop {
            let client = self.clone();
            stream.set_on_drop(Box::new(move |id| client.interrupt_detached(id, kind)));
        }
        Ok(stream)
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
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(fut);
            }
            Err(_) => {
                crate::runtime::runtime().spawn(fut);
            }
        }
    }

    fn command_request(
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
