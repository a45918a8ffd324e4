//! Persistent bash sessions.

use std::time::Duration;

use reqwest::Method;
use serde::Deserialize;

use super::commands::{ms, require, run_with_deadline, RunControl};
use super::ExecdClient;
use crate::error::{Error, Result};
use crate::lifecycle::seg;
use crate::models::RunInSessionRequest;
use crate::stream::{EventStream, Execution, ExecutionHandlers, ExecutionKind};

#[derive(Deserialize)]
struct CreateSessionResponse {
    session_id: String,
}

impl ExecdClient {
    /// `POST /session`: a bash session whose state (cwd, variables) persists across runs.
    pub async fn create_session(&self, working_directory: Option<&str>) -> Result<String> {
        let body = match working_directory {
            Some(cwd) => serde_json::json!({ "cwd": cwd }),
            None => serde_json::json!({}),
        };
        let req = self
            .req("commands.create_session", Method::POST, "/session")
            .json(&body)?;
        let r: CreateSessionResponse = self.http.json(req).await?;
        Ok(r.session_id)
    }

    /// `POST /session/{id}/run` as a stream.
    pub async fn run_in_session_stream(
        &self,
        session_id: &str,
        command: &str,
        working_directory: Option<&str>,
        timeout: Option<Duration>,
        control: RunControl,
    ) -> Result<EventStream> {
        const OP: &str = "commands.run_in_session";
        require(OP, session_id)?;
        if command.trim().is_empty() {
            return Err(Error::invalid_argument(OP, "command must not be blank"));
        }
        let body = RunInSessionRequest {
            command: command.to_owned(),
            cwd: working_directory.map(str::to_owned),
            timeout: ms(OP, timeout)?,
        };
        let req = self
            .req(
                OP,
                Method::POST,
                &format!("/session/{}/run", seg(session_id)),
            )
            .json(&body)?;
        self.open_stream(
            req,
            ExecutionKind::Session,
            control.interrupt_on_drop || control.deadline.is_some(),
        )
        .await
    }

    /// Runs a command in a session to completion.
    pub async fn run_in_session(
        &self,
        session_id: &str,
        command: &str,
        working_directory: Option<&str>,
        timeout: Option<Duration>,
        control: RunControl,
        handlers: &mut (impl ExecutionHandlers + ?Sized),
    ) -> Result<Execution> {
        let stream = self
            .run_in_session_stream(session_id, command, working_directory, timeout, control)
            .await?;
        run_with_deadline(
            "commands.run_in_session",
            stream,
            control.deadline,
            handlers,
        )
        .await
    }

    /// `DELETE /session/{id}`.
    pub async fn delete_session(&self, session_id: &str) -> Result<()> {
        const OP: &str = "commands.delete_session";
        require(OP, session_id)?;
        let req = self.req(OP, Method::DELETE, &format!("/session/{}", seg(session_id)));
        self.http.empty(req).await
    }
}
