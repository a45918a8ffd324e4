//! WebSocket relay through the proxy route (the execd PTY attach, pty.md): a
//! `GET /sandboxes/{id}/proxy/44772/...` with `Upgrade: websocket` is forwarded to the
//! agent's Unix socket with its upgrade headers; when the agent answers `101`, both
//! upgraded connections are joined byte for byte (frames, pings and close codes pass
//! through untouched). An agent answer other than `101` (404, 409) goes back as is.
//!
//! Failures after the client asked to upgrade are reported the way upstream's proxy
//! does (protocol.md §2.7): the handshake is accepted and closed at once with 1008
//! (policy violation: missing or wrong per-sandbox token, unreachable port) or 1011
//! (the sandbox is not serving or its agent cannot be reached).

use std::sync::Arc;

use axum::extract::ws::{CloseFrame, Message, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use super::agent_client;
use super::api::{EXECD_PORT, EXECD_TOKEN_HEADER};
use super::error::ApiError;
use super::manager::not_serving;
use super::proxy::{check_secret, split_proxy_path, strip_headers, PRIVATE};
use super::Control;

/// WebSocket close code for a request refused by policy.
pub const CLOSE_POLICY: u16 = 1008;
/// WebSocket close code for a failure on the server's side.
pub const CLOSE_INTERNAL: u16 = 1011;

/// Whether the request asks for a WebSocket (`Connection: upgrade`, `Upgrade: websocket`).
pub fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .map(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
                .unwrap_or(false)
        })
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

/// Relays one WebSocket upgrade to the sandbox's agent.
pub async fn relay(control: Arc<Control>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    // Ours to join with the agent's side; the extractor takes its own copy, used only
    // to answer failures with a close code.
    let client_side = parts.extensions.get::<OnUpgrade>().cloned();
    let handshake = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(handshake) => handshake,
        Err(rejection) => return rejection.into_response(),
    };
    let refuse = |code: u16, err: ApiError| refuse(handshake, code, err);

    let path = parts.uri.path().to_string();
    let Some((id, port, rest)) = split_proxy_path(&path) else {
        return ApiError::invalid(format!("malformed proxy path {path}")).into_response();
    };
    let record = match control.sandbox(id) {
        Ok(record) => record,
        Err(err) => return err.into_response(),
    };
    if let Err(err) = check_secret(
        &parts.headers,
        EXECD_TOKEN_HEADER,
        &record.execd_token_sha256,
        || control.execd_token(id),
    ) {
        return refuse(CLOSE_POLICY, err);
    }
    if port != EXECD_PORT.to_string() {
        return refuse(
            CLOSE_POLICY,
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "SANDBOX::PORT_NOT_REACHABLE",
                format!("WebSockets of sandbox {id} are served on port {EXECD_PORT} only"),
            ),
        );
    }
    if let Some(err) = not_serving(&record) {
        return refuse(CLOSE_INTERNAL, err);
    }
    let Some(client_side) = client_side else {
        return refuse(
            CLOSE_INTERNAL,
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "SANDBOX::PROXY_ERROR",
                "this connection cannot be upgraded",
            ),
        );
    };

    let rest = if rest.is_empty() { "/" } else { rest };
    let path_and_query = match parts.uri.query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest.to_string(),
    };
    let mut headers = parts.headers.clone();
    strip_headers(&mut headers, &PRIVATE);
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Some(host) = parts.headers.get(header::HOST).cloned() {
        headers.entry("x-forwarded-host").or_insert(host);
    }
    headers
        .entry("x-forwarded-proto")
        .or_insert(HeaderValue::from_static("http"));
    headers.insert(header::HOST, HeaderValue::from_static("sandbox"));
    let mut upstream = match http::Request::builder()
        .method(http::Method::GET)
        .uri(&path_and_query)
        .body(axum::body::Body::new(body))
    {
        Ok(upstream) => upstream,
        Err(e) => {
            return ApiError::invalid(format!("cannot forward {path_and_query}: {e}"))
                .into_response()
        }
    };
    *upstream.headers_mut() = headers;

    let socket = control.runtime.paths(id).socket;
    let mut response = match agent_client::send(&socket, upstream).await {
        Ok(response) => response,
        Err(e) => {
            return refuse(
                CLOSE_INTERNAL,
                ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    "SANDBOX::AGENT_UNREACHABLE",
                    format!("the execd agent of sandbox {id} did not answer: {e:#}"),
                ),
            )
        }
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        // The agent's refusal (404 unknown session, 409 held) is the client's answer.
        let (mut head, body) = response.into_parts();
        strip_headers(&mut head.headers, &[]);
        return Response::from_parts(head, axum::body::Body::new(body));
    }
    let agent_side = hyper::upgrade::on(&mut response);
    let sandbox = id.to_string();
    tokio::spawn(async move {
        let (client, agent) = match tokio::try_join!(client_side, agent_side) {
            Ok(pair) => pair,
            Err(err) => {
                tracing::debug!(%sandbox, error = %err, "websocket relay: upgrade failed");
                return;
            }
        };
        let mut client = TokioIo::new(client);
        let mut agent = TokioIo::new(agent);
        if let Err(err) = tokio::io::copy_bidirectional(&mut client, &mut agent).await {
            tracing::debug!(%sandbox, error = %err, "websocket relay ended");
        }
    });
    // The agent's 101 with its handshake headers (`Sec-WebSocket-Accept`, and the
    // `Upgrade`/`Connection` pair that this hop must keep).
    let (head, _) = response.into_parts();
    Response::from_parts(head, axum::body::Body::empty())
}

/// Accepts the handshake and closes at once with `code` and the error as the reason
/// (at most 123 bytes, the close frame's limit).
fn refuse(handshake: WebSocketUpgrade, code: u16, err: ApiError) -> Response {
    let mut reason = format!("{}: {}", err.code, err.message);
    if reason.len() > 123 {
        let mut cut = 123;
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        reason.truncate(cut);
    }
    handshake.on_upgrade(move |mut socket| async move {
        let _ = socket
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upgrade_requests_are_recognised() {
        let mut h = HeaderMap::new();
        assert!(!is_websocket_upgrade(&h));
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        h.insert(header::UPGRADE, HeaderValue::from_static("WebSocket"));
        assert!(is_websocket_upgrade(&h));
        h.insert(header::UPGRADE, HeaderValue::from_static("h2c"));
        assert!(!is_websocket_upgrade(&h));
    }
}
