//! Keyed execution creation (upstream execd's issue #1547) and the command inventory:
//! `GET /execution/instance`, `GET /execution/operation`, `POST /command/operations`,
//! `POST /pty/operations`, `GET /command`.
//!
//! A caller gets the instance, makes an operation id with
//! [`ExecutionInstance::new_operation_id`], saves it with its request, then creates.
//! After a lost answer it sends the same id and request again (or looks the id up):
//! the server answers the original handle and never starts a second process.

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Method;

use super::ExecdClient;
use crate::error::{Error, Result};
use crate::models::{
    ExecutionInstance, ExecutionOperation, ListCommandsPage, RunCommandOptions, RunCommandRequest,
};

/// The header naming the operation of `GET /execution/operation`.
pub const OPERATION_ID_HEADER: &str = "x-execd-operation-id";

/// Default page size of [`ExecdClient::list_commands`] (the official SDKs').
pub const DEFAULT_LIST_LIMIT: u32 = 50;

fn require_id(op: &'static str, operation_id: &str) -> Result<()> {
    if operation_id.trim().is_empty() {
        return Err(Error::invalid_argument(op, "operation id is required"));
    }
    Ok(())
}

/// The body of `POST /command/operations`: the run request plus `operation_id`.
#[derive(serde::Serialize)]
struct CommandOperationBody<'a> {
    operation_id: &'a str,
    #[serde(flatten)]
    request: &'a RunCommandRequest,
}

/// The body of `POST /pty/operations`.
#[derive(serde::Serialize)]
struct PtyOperationBody<'a> {
    operation_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<&'a str>,
}

impl ExecdClient {
    /// `GET /execution/instance`.
    pub async fn get_execution_instance(&self) -> Result<ExecutionInstance> {
        const OP: &str = "execution.get_instance";
        self.http
            .json(self.req(OP, Method::GET, "/execution/instance"))
            .await
    }

    /// `GET /execution/operation?kind=` with the id in `X-EXECD-OPERATION-ID`: the
    /// record of a keyed creation (`operation_not_found`, `operation_expired`,
    /// `operation_instance_mismatch` otherwise, as the error's code).
    pub async fn get_execution_operation(
        &self,
        kind: &str,
        operation_id: &str,
    ) -> Result<ExecutionOperation> {
        const OP: &str = "execution.get_operation";
        let value = HeaderValue::from_str(operation_id)
            .map_err(|_| Error::invalid_argument(OP, "operation id is not a header value"))?;
        let req = self
            .req(OP, Method::GET, "/execution/operation")
            .query("kind", kind)
            .header(HeaderName::from_static(OPERATION_ID_HEADER), value);
        self.http.json(req).await
    }

    /// `POST /command/operations`: starts `command` (or `argv`, no shell) at most once
    /// for `operation_id`. Foreground output is not streamed (choose background to
    /// read it from the logs); poll `get_command_status(result.id)`.
    pub async fn create_command_operation(
        &self,
        operation_id: &str,
        command: &str,
        argv: Option<&[String]>,
        opts: &RunCommandOptions,
    ) -> Result<ExecutionOperation> {
        const OP: &str = "execution.create_command";
        require_id(OP, operation_id)?;
        let request =
            Self::command_request(command, argv, opts).map_err(|e| e.with_operation(OP))?;
        let body = CommandOperationBody {
            operation_id,
            request: &request,
        };
        let req = self
            .req(OP, Method::POST, "/command/operations")
            .json(&body)?;
        self.http.json(req).await
    }

    /// `POST /pty/operations`: creates a dormant PTY session at most once for
    /// `operation_id`; attach to `result.id` as to any session.
    pub async fn create_pty_operation(
        &self,
        operation_id: &str,
        cwd: Option<&str>,
        command: Option<&str>,
    ) -> Result<ExecutionOperation> {
        const OP: &str = "execution.create_pty";
        require_id(OP, operation_id)?;
        let body = PtyOperationBody {
            operation_id,
            cwd: cwd.filter(|c| !c.is_empty()),
            command: command.filter(|c| !c.is_empty()),
        };
        let req = self.req(OP, Method::POST, "/pty/operations").json(&body)?;
        self.http.json(req).await
    }

    /// `GET /command?running=&limit=&cursor=`: a page of the command inventory,
    /// newest first. `limit` must be 1 to 100 (default 50).
    pub async fn list_commands(
        &self,
        running: Option<bool>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<ListCommandsPage> {
        const OP: &str = "commands.list";
        let limit = limit.unwrap_or(DEFAULT_LIST_LIMIT);
        if !(1..=100).contains(&limit) {
            return Err(Error::invalid_argument(
                OP,
                format!("limit must be between 1 and 100, got {limit}"),
            ));
        }
        let mut req = self.req(OP, Method::GET, "/command");
        if let Some(running) = running {
            req = req.query("running", running);
        }
        req = req.query("limit", limit);
        if let Some(cursor) = cursor {
            if cursor.trim().is_empty() {
                return Err(Error::invalid_argument(OP, "cursor must not be blank"));
            }
            req = req.query("cursor", cursor);
        }
        self.http.json(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_body_is_the_run_request_plus_the_id() {
        let opts = RunCommandOptions {
            background: true,
            ..RunCommandOptions::default()
        };
        let request = ExecdClient::command_request("echo hi", None, &opts).expect("request");
        let body = CommandOperationBody {
            operation_id: "i.1.token-0001",
            request: &request,
        };
        assert_eq!(
            serde_json::to_value(&body).expect("json"),
            serde_json::json!({"operation_id": "i.1.token-0001", "command": "echo hi", "background": true})
        );
        let pty = PtyOperationBody {
            operation_id: "x",
            cwd: None,
            command: Some("bash"),
        };
        assert_eq!(
            serde_json::to_value(&pty).expect("json"),
            serde_json::json!({"operation_id": "x", "command": "bash"})
        );
    }

    #[test]
    fn new_operation_ids_have_the_server_shape() {
        let instance = ExecutionInstance {
            instance_id: "0123456789abcdef0123456789abcdef".into(),
            issued_at: 1_700_000_000,
            retention_seconds: 86_400,
            capacity: 4096,
        };
        let id = instance.new_operation_id();
        let parts: Vec<&str> = id.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], instance.instance_id);
        assert_eq!(parts[1], "1700000000");
        assert_eq!(parts[2].len(), 32);
        assert_ne!(id, instance.new_operation_id());
    }
}
