//! Code interpreter contexts and code runs.

use reqwest::Method;

use super::commands::{require, run_with_deadline, RunControl};
use super::ExecdClient;
use crate::error::{Error, Result};
use crate::lifecycle::seg;
use crate::models::{CodeContext, RunCodeRequest};
use crate::stream::{EventStream, Execution, ExecutionHandlers, ExecutionKind};

impl ExecdClient {
    /// `POST /code/context`: a new interpreter of `language`.
    pub async fn create_context(&self, language: &str, cwd: Option<&str>) -> Result<CodeContext> {
        const OP: &str = "codes.create_context";
        let body = CodeContext {
            id: None,
            language: language.to_owned(),
            cwd: cwd.map(str::to_owned),
        };
        let req = self.req(OP, Method::POST, "/code/context").json(&body)?;
        self.http.json(req).await
    }

    /// `GET /code/contexts/{id}`.
    pub async fn get_context(&self, context_id: &str) -> Result<CodeContext> {
        const OP: &str = "codes.get_context";
        require(OP, context_id)?;
        let req = self.req(
            OP,
            Method::GET,
            &format!("/code/contexts/{}", seg(context_id)),
        );
        self.http.json(req).await
    }

    /// `GET /code/contexts[?language=]`; `None` lists every language.
    pub async fn list_contexts(&self, language: Option<&str>) -> Result<Vec<CodeContext>> {
        let mut req = self.req("codes.list_contexts", Method::GET, "/code/contexts");
        if let Some(l) = language {
            req = req.query("language", l);
        }
        let v: Option<Vec<CodeContext>> = self.http.json(req).await?;
        Ok(v.unwrap_or_default())
    }

    /// `DELETE /code/contexts/{id}`.
    pub async fn delete_context(&self, context_id: &str) -> Result<()> {
        const OP: &str = "codes.delete_context";
        require(OP, context_id)?;
        let req = self.req(
            OP,
            Method::DELETE,
            &format!("/code/contexts/{}", seg(context_id)),
        );
        self.http.empty(req).await
    }

    /// `DELETE /code/contexts?language=`: every context of a language.
    pub async fn delete_contexts(&self, language: &str) -> Result<()> {
        const OP: &str = "codes.delete_contexts";
        require(OP, language)?;
        let req = self
            .req(OP, Method::DELETE, "/code/contexts")
            .query("language", language);
        self.http.empty(req).await
    }

    /// `POST /code` as a stream. `context: None` runs the code as a shell command.
    pub async fn run_code_stream(
        &self,
        code: &str,
        context: Option<&CodeContext>,
        control: RunControl,
    ) -> Result<EventStream> {
        const OP: &str = "codes.run";
        if code.trim().is_empty() {
            return Err(Error::invalid_argument(OP, "code must not be blank"));
        }
        let body = RunCodeRequest {
            code: code.to_owned(),
            context: context.cloned(),
        };
        // Without a context execd runs the code as a foreground shell command, with
        // command semantics (§4.5).
        let kind = if context.is_some() {
            ExecutionKind::Code
        } else {
            ExecutionKind::Command
        };
        let req = self.req(OP, Method::POST, "/code").json(&body)?;
        self.open_stream(
            req,
            kind,
            control.interrupt_on_drop || control.deadline.is_some(),
        )
        .await
    }

    /// Runs code to completion.
    pub async fn run_code(
        &self,
        code: &str,
        context: Option<&CodeContext>,
        control: RunControl,
        handlers: &mut (impl ExecutionHandlers + ?Sized),
    ) -> Result<Execution> {
        let stream = self.run_code_stream(code, context, control).await?;
        run_with_deadline("codes.run", stream, control.deadline, handlers).await
    }

    /// `DELETE /code?id=`: interrupts the running cell of a context.
    pub async fn interrupt_code(&self, execution_id: &str) -> Result<()> {
        const OP: &str = "codes.interrupt";
        require(OP, execution_id)?;
        let req = self
            .req(OP, Method::DELETE, "/code")
            .query("id", execution_id);
        self.http.empty(req).await
    }
}
