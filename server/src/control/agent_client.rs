//! HTTP/1.1 over a sandbox agent's Unix socket.
//!
//! One connection per request: connecting to a local socket costs microseconds, and a
//! fresh connection can never be stuck behind a long-running stream of another call.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::body::Body;
use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

/// Sends one request to the agent and returns its response as soon as the head
/// arrives; the body streams afterwards.
pub async fn send(socket: &Path, request: Request<Body>) -> Result<http::Response<Incoming>> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .with_context(|| format!("connecting to the sandbox agent at {}", socket.display()))?;
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .context("starting HTTP with the sandbox agent")?;
    tokio::spawn(async move {
        if let Err(err) = connection.with_upgrades().await {
            tracing::debug!(error = %err, "agent connection ended with an error");
        }
    });
    sender
        .send_request(request)
        .await
        .context("sending a request to the sandbox agent")
}

/// True if the agent answers `GET /ping` with a 2xx within a second.
pub async fn ping(socket: &Path) -> bool {
    let request = match Request::get("/ping")
        .header(http::header::HOST, "sandbox")
        .body(Body::empty())
    {
        Ok(r) => r,
        Err(_) => return false,
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(1), send(socket, request)).await,
        Ok(Ok(resp)) if resp.status().is_success()
    )
}
