//! (1.1) Isolated sessions (`/v1/isolated/*`) and the scoped file clients: the file
//! routes as a given user (`/v1/filesystem/{uid}/{gid}`) and inside an isolated
//! session's mounts (`/v1/isolated/session/{id}`).
//!
//! A scoped file client is an [`ExecdClient`] whose base URL ends in the prefix, as the
//! official SDKs build theirs: every file and directory method works on it unchanged;
//! other methods through it reach no route (404). It never falls back to the default
//! identity.

use std::time::Duration;

use reqwest::Method;

use super::commands::{require, run_with_deadline};
use super::ExecdClient;
use crate::error::{Error, Result};
use crate::lifecycle::seg;
use crate::models::{
    CreateIsolatedSessionRequest, IsolatedBackgroundRun, IsolatedCapabilities, IsolatedRunLogs,
    IsolatedRunOptions, IsolatedRunRequest, IsolatedRunStatus, IsolatedSessionInfo,
    IsolatedSessionState, IsolatedSessionSummary,
};
use crate::stream::{EventStream, Execution, ExecutionHandlers, ExecutionKind};

/// The header carrying the next byte cursor of a background run's log.
pub const ISOLATED_TAIL_CURSOR_HEADER: &str = "EXECD-ISOLATED-TAIL-CURSOR";

/// Largest uid/gid the identity routes take (`(uid_t)-1` means "unchanged").
pub const MAX_IDENTITY: u32 = 4_294_967_294;

#[derive(serde::Deserialize)]
struct SessionList {
    #[serde(default)]
    sessions: Vec<IsolatedSessionSummary>,
}

fn session_path(session_id: &str) -> String {
    format!("/v1/isolated/session/{}", seg(session_id))
}

impl ExecdClient {
    /// A client of the same execd whose base URL ends in `prefix` (no trailing `/`).
    fn scoped(&self, prefix: &str) -> ExecdClient {
        ExecdClient {
            http: self.http.clone(),
            base: format!("{}{prefix}", self.base).into(),
            headers: self.headers.clone(),
        }
    }

    /// (1.1) A file client whose operations run as `uid:gid` on the server
    /// (`/v1/filesystem/{uid}/{gid}`). Only the file and directory methods apply.
    pub fn with_identity(&self, uid: u32, gid: u32) -> Result<ExecdClient> {
        const OP: &str = "files_with_identity";
        for (name, id) in [("uid", uid), ("gid", gid)] {
            if id > MAX_IDENTITY {
                return Err(Error::invalid_argument(
                    OP,
                    format!("{name} must be an integer between 0 and {MAX_IDENTITY}"),
                ));
            }
        }
        Ok(self.scoped(&format!("/v1/filesystem/{uid}/{gid}")))
    }

    /// (1.1) A file client for the files of isolated session `session_id`, resolved
    /// inside the session's mounts. Only the file and directory methods apply.
    pub fn isolated_session_files(&self, session_id: &str) -> Result<ExecdClient> {
        require("isolation.files", session_id)?;
        Ok(self.scoped(&session_path(session_id)))
    }

    /// `GET /v1/isolated/capabilities`.
    pub async fn isolated_capabilities(&self) -> Result<IsolatedCapabilities> {
        let req = self.req(
            "isolation.capabilities",
            Method::GET,
            "/v1/isolated/capabilities",
        );
        self.http.json(req).await
    }

    /// `POST /v1/isolated/session` (201).
    pub async fn create_isolated_session(
        &self,
        request: &CreateIsolatedSessionRequest,
    ) -> Result<IsolatedSessionInfo> {
        const OP: &str = "isolation.create";
        if request.workspace.is_none() && request.overlays.as_ref().is_none_or(Vec::is_empty) {
            return Err(Error::invalid_argument(
                OP,
                "workspace or overlays is required",
            ));
        }
        let req = self
            .req(OP, Method::POST, "/v1/isolated/session")
            .no_retry()
            .json(request)?;
        self.http.json(req).await
    }

    /// `GET /v1/isolated/session/{id}`.
    pub async fn get_isolated_session(&self, session_id: &str) -> Result<IsolatedSessionState> {
        const OP: &str = "isolation.get";
        require(OP, session_id)?;
        let req = self.req(OP, Method::GET, &session_path(session_id));
        self.http.json(req).await
    }

    /// A handle description rebuilt from the session's state (the official `attach`).
    pub async fn attach_isolated_session(&self, session_id: &str) -> Result<IsolatedSessionInfo> {
        let state = self.get_isolated_session(session_id).await?;
        Ok(IsolatedSessionInfo {
            session_id: session_id.to_owned(),
            created_at: state.created_at,
            params: state.params,
        })
    }

    /// `GET /v1/isolated/sessions`.
    pub async fn list_isolated_sessions(&self) -> Result<Vec<IsolatedSessionSummary>> {
        let req = self.req("isolation.list", Method::GET, "/v1/isolated/sessions");
        let list: SessionList = self.http.json(req).await?;
        Ok(list.sessions)
    }

    /// `DELETE /v1/isolated/session/{id}`.
    pub async fn delete_isolated_session(&self, session_id: &str) -> Result<()> {
        const OP: &str = "isolation.delete";
        require(OP, session_id)?;
        let req = self.req(OP, Method::DELETE, &session_path(session_id));
        self.http.empty(req).await
    }

    fn run_request(
        op: &'static str,
        code: &str,
        opts: &IsolatedRunOptions,
        background: bool,
    ) -> Result<IsolatedRunRequest> {
        if code.trim().is_empty() {
            return Err(Error::invalid_argument(op, "code must not be blank"));
        }
        Ok(IsolatedRunRequest {
            code: code.to_owned(),
            envs: opts.envs.clone(),
            // Foreground only: never sent for background runs (upstream).
            timeout_seconds: if background {
                None
            } else {
                opts.timeout_seconds.filter(|t| *t > 0)
            },
            background,
        })
    }

    /// `POST .../run` in the foreground, as a stream of events. The server interrupts
    /// the run when the stream is dropped before its end (a closed connection), so
    /// no separate interrupt call is made.
    pub async fn run_in_isolated_session_stream(
        &self,
        session_id: &str,
        code: &str,
        opts: &IsolatedRunOptions,
    ) -> Result<EventStream> {
        const OP: &str = "isolation.run";
        require(OP, session_id)?;
        let body = Self::run_request(OP, code, opts, false)?;
        let req = self
            .req(
                OP,
                Method::POST,
                &format!("{}/run", session_path(session_id)),
            )
            .json(&body)?;
        self.open_stream(req, ExecutionKind::Session, false).await
    }

    /// A foreground run to completion. `deadline` is a client-side bound on the
    /// whole run (the stream is dropped when it passes, which interrupts the run).
    pub async fn run_in_isolated_session(
        &self,
        session_id: &str,
        code: &str,
        opts: &IsolatedRunOptions,
        deadline: Option<Duration>,
        handlers: &mut (impl ExecutionHandlers + ?Sized),
    ) -> Result<Execution> {
        let stream = self
            .run_in_isolated_session_stream(session_id, code, opts)
            .await?;
        run_with_deadline("isolation.run", stream, deadline, handlers).await
    }

    /// `POST .../run` with `background: true` (202).
    pub async fn run_in_isolated_session_background(
        &self,
        session_id: &str,
        code: &str,
        opts: &IsolatedRunOptions,
    ) -> Result<IsolatedBackgroundRun> {
        const OP: &str = "isolation.run_background";
        require(OP, session_id)?;
        let body = Self::run_request(OP, code, opts, true)?;
        let req = self
            .req(
                OP,
                Method::POST,
                &format!("{}/run", session_path(session_id)),
            )
            .no_retry()
            .json(&body)?;
        self.http.json(req).await
    }

    /// `GET .../runs/{runId}`.
    pub async fn get_isolated_run_status(
        &self,
        session_id: &str,
        run_id: &str,
    ) -> Result<IsolatedRunStatus> {
        const OP: &str = "isolation.run_status";
        require(OP, session_id)?;
        require(OP, run_id)?;
        let req = self.req(
            OP,
            Method::GET,
            &format!("{}/runs/{}", session_path(session_id), seg(run_id)),
        );
        self.http.json(req).await
    }

    /// `GET .../runs/{runId}/logs?cursor=`: the output from `cursor`, and the next
    /// cursor (the header, else `cursor` + bytes read, as the official SDK does).
    pub async fn get_isolated_run_logs(
        &self,
        session_id: &str,
        run_id: &str,
        cursor: u64,
    ) -> Result<IsolatedRunLogs> {
        const OP: &str = "isolation.run_logs";
        require(OP, session_id)?;
        require(OP, run_id)?;
        let mut req = self.req(
            OP,
            Method::GET,
            &format!("{}/runs/{}/logs", session_path(session_id), seg(run_id)),
        );
        if cursor > 0 {
            req = req.query("cursor", cursor);
        }
        let (headers, body) = self.http.bytes(req).await?;
        let next = headers
            .get(ISOLATED_TAIL_CURSOR_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(cursor + body.len() as u64);
        Ok(IsolatedRunLogs {
            text: String::from_utf8_lossy(&body).into_owned(),
            cursor: next,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::Endpoint;
    use crate::ConnectionConfig;

    fn client() -> ExecdClient {
        ExecdClient::new(
            ConnectionConfig::new().with_domain("h:1"),
            &Endpoint {
                endpoint: "h:1/sandboxes/s/proxy/44772".into(),
                headers: Default::default(),
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn scoped_clients_end_in_their_prefix() {
        let c = client();
        let id = c
            .with_identity(1000, 1000)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            id.base_url(),
            "http://h:1/sandboxes/s/proxy/44772/v1/filesystem/1000/1000"
        );
        assert!(c.with_identity(u32::MAX, 0).is_err());
        assert!(c.with_identity(0, u32::MAX).is_err());
        let s = c
            .isolated_session_files("a b")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.base_url().ends_with("/v1/isolated/session/a%20b"));
        assert!(c.isolated_session_files(" ").is_err());
    }

    #[test]
    fn background_runs_never_send_a_timeout() {
        let opts = IsolatedRunOptions {
            timeout_seconds: Some(5),
            ..Default::default()
        };
        let bg =
            ExecdClient::run_request("x", "true", &opts, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bg.timeout_seconds, None);
        let fg =
            ExecdClient::run_request("x", "true", &opts, false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fg.timeout_seconds, Some(5));
        assert!(ExecdClient::run_request("x", " ", &opts, false).is_err());
    }
}
