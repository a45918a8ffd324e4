//! `GET /pty/{id}/ws`: one client at a time drives the session's shell over a
//! WebSocket (pty.md §3–§7).
//!
//! Order of an attach: 404 / 409 before the upgrade; after it, a takeover evicts the
//! holder (close 4001) and waits for it to let go; the shell starts if it is not
//! running; then the replay frame (0x03 + offset, from the snapshot taken together
//! with the live registration), the `connected` frame, and live traffic.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::shell::{self, Mode, Stdin};
use super::{not_found, Holder, Live, PtySession, LIVE_QUEUE};
use crate::error::ApiError;
use crate::SharedState;

/// Keep-alive ping interval and the read deadline it renews (pty.md §7).
const PING_EVERY: Duration = Duration::from_secs(30);
const READ_DEADLINE: Duration = Duration::from_secs(60);
/// Budget of every server write.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// Budget of the 4001 close sent to an evicted client.
const EVICT_CLOSE_BUDGET: Duration = Duration::from_millis(200);
/// How long a takeover waits for the evicted client to let go, polling.
const TAKEOVER_WAIT: Duration = Duration::from_secs(5);
const TAKEOVER_POLL: Duration = Duration::from_millis(10);
/// Client close codes.
const CLOSE_TAKEN_OVER: u16 = 4001;
const CLOSE_NORMAL: u16 = 1000;
/// Channel bytes.
const CLIENT_STDIN: u8 = 0x00;
const REPLAY: u8 = 0x03;
/// Stdin chunks queued for the shell before the connection stops reading frames.
const STDIN_QUEUE: usize = 64;
/// How long input queued when a client leaves may take to reach the shell.
const STDIN_DRAIN: Duration = Duration::from_secs(2);

/// The attach's query (pty.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub mode: Mode,
    pub since: u64,
    pub takeover: bool,
}

impl Params {
    /// Upstream's leniency: `pty=0` is pipe mode, anything else PTY; an unparsable or
    /// negative `since` is 0; `takeover` only when exactly `1`.
    pub fn parse(query: Option<&str>) -> Params {
        let mut p = Params {
            mode: Mode::Pty,
            since: 0,
            takeover: false,
        };
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match k.as_ref() {
                "pty" => p.mode = if v == "0" { Mode::Pipe } else { Mode::Pty },
                "since" => p.since = v.parse::<i64>().ok().map_or(0, |s| s.max(0).unsigned_abs()),
                "takeover" => p.takeover = v == "1",
                _ => {}
            }
        }
        p
    }
}

/// A client's hold on a session; dropping it lets go (if it still holds it).
pub struct Attachment {
    session: Arc<PtySession>,
    id: u64,
    live: mpsc::Receiver<Live>,
    evicted: oneshot::Receiver<()>,
    replay: Option<(u64, Vec<u8>)>,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        let mut inner = self.session.lock();
        if inner.holder.as_ref().is_some_and(|h| h.id == self.id) {
            inner.holder = None;
        }
    }
}

impl PtySession {
    /// Takes the session if nobody holds it: registers the live feed and snapshots the
    /// replay from `since` under one lock.
    fn claim(self: &Arc<Self>, since: u64) -> Option<Attachment> {
        let mut inner = self.lock();
        if inner.holder.is_some() || inner.deleted {
            return None;
        }
        inner.clients += 1;
        let id = inner.clients;
        let (live_tx, live) = mpsc::channel(LIVE_QUEUE);
        let (evict_tx, evicted) = oneshot::channel();
        inner.holder = Some(Holder {
            id,
            live: live_tx,
            evict: Some(evict_tx),
        });
        let replay = inner.buffer.since(since);
        drop(inner);
        Some(Attachment {
            session: Arc::clone(self),
            id,
            live,
            evicted,
            replay,
        })
    }
}

enum Plan {
    Attached(Attachment),
    TakeOver,
}

pub async fn attach(
    State(state): State<SharedState>,
    UrlPath(id): UrlPath<String>,
    RawQuery(query): RawQuery,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Response {
    let Some(session) = state.pty.get(&id) else {
        return not_found(&id).into_response();
    };
    let params = Params::parse(query.as_deref());
    let held = session.lock().holder.is_some();
    if held && !(params.takeover && upgrade.is_ok()) {
        return already_connected(&id).into_response();
    }
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            return ApiError::bad_request(
                "INVALID_REQUEST",
                format!("GET /pty/{id}/ws needs a WebSocket upgrade: {rejection}"),
            )
            .into_response()
        }
    };
    let plan = match session.claim(params.since) {
        Some(attachment) => Plan::Attached(attachment),
        None if params.takeover => Plan::TakeOver,
        None => return already_connected(&id).into_response(),
    };
    upgrade.on_upgrade(move |socket| async move {
        let attachment = match plan {
            Plan::Attached(attachment) => attachment,
            Plan::TakeOver => match take_over(&session, params.since).await {
                Some(attachment) => attachment,
                None => {
                    let message = format!("takeover timed out for pty session {}", session.id);
                    let mut socket = socket;
                    let _ = send(&mut socket, error_frame("ALREADY_CONNECTED", &message)).await;
                    return;
                }
            },
        };
        serve(socket, attachment, params.mode).await;
    })
}

fn already_connected(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "ALREADY_CONNECTED",
        format!("another client is already connected to pty session {id}"),
    )
}

/// Evicts the holder and waits for it to let go.
async fn take_over(session: &Arc<PtySession>, since: u64) -> Option<Attachment> {
    let deadline = Instant::now() + TAKEOVER_WAIT;
    loop {
        if let Some(attachment) = session.claim(since) {
            return Some(attachment);
        }
        {
            let mut inner = session.lock();
            if inner.deleted {
                return None;
            }
            if let Some(evict) = inner.holder.as_mut().and_then(|h| h.evict.take()) {
                let _ = evict.send(());
            }
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(TAKEOVER_POLL).await;
    }
}

fn text(value: Value) -> Message {
    Message::Text(value.to_string().into())
}

fn error_frame(code: &str, message: &str) -> Message {
    text(json!({"type": "error", "code": code, "error": message}))
}

fn close(code: u16, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

async fn send(socket: &mut WebSocket, message: Message) -> bool {
    matches!(
        tokio::time::timeout(WRITE_DEADLINE, socket.send(message)).await,
        Ok(Ok(()))
    )
}

fn framed(channel: u8, data: &[u8]) -> Message {
    let mut frame = Vec::with_capacity(data.len() + 1);
    frame.push(channel);
    frame.extend_from_slice(data);
    Message::Binary(frame.into())
}

async fn serve(mut socket: WebSocket, mut attachment: Attachment, mode: Mode) {
    let session = Arc::clone(&attachment.session);
    let (mode, exited) = match session.ensure_started(mode) {
        Ok(super::Launch::Running(mode)) => (mode, None),
        Ok(super::Launch::Exited(mode, code)) => (mode, Some(code)),
        Err(err) => {
            let message = format!("cannot start bash: {err}");
            let _ = send(&mut socket, error_frame("START_FAILED", &message)).await;
            return;
        }
    };
    if let Some((offset, bytes)) = attachment.replay.take() {
        let mut frame = Vec::with_capacity(bytes.len() + 9);
        frame.push(REPLAY);
        frame.extend_from_slice(&offset.to_be_bytes());
        frame.extend_from_slice(&bytes);
        if !send(&mut socket, Message::Binary(frame.into())).await {
            return;
        }
    }
    let connected = json!({"type": "connected", "session_id": session.id, "mode": mode.as_str()});
    if !send(&mut socket, text(connected)).await {
        return;
    }
    if let Some(code) = exited {
        // A keyed session's shell ran once: report its end, start nothing.
        let _ = send(
            &mut socket,
            text(json!({"type": "exit", "exit_code": code})),
        )
        .await;
        let _ = send(&mut socket, close(CLOSE_NORMAL, "process exited")).await;
        return;
    }

    let (stdin_tx, stdin_rx) = mpsc::channel::<Bytes>(STDIN_QUEUE);
    let (stdin_failed_tx, mut stdin_failed) = oneshot::channel::<String>();
    let writer = tokio::spawn(write_stdin(Arc::clone(&session), stdin_rx, stdin_failed_tx));

    let mut ping = tokio::time::interval_at(Instant::now() + PING_EVERY, PING_EVERY);
    let mut last_heard = Instant::now();
    loop {
        tokio::select! {
            biased;
            evicted = &mut attachment.evicted => {
                match evicted {
                    // Taken over: tell this client, best effort, and let go.
                    Ok(()) => {
                        let _ = tokio::time::timeout(
                            EVICT_CLOSE_BUDGET,
                            socket.send(close(CLOSE_TAKEN_OVER, "TAKEN_OVER")),
                        )
                        .await;
                    }
                    // The session was deleted: its shell is killed.
                    Err(_) => {
                        let _ = send(&mut socket, text(json!({"type": "exit", "exit_code": -1}))).await;
                        let _ = send(&mut socket, close(CLOSE_NORMAL, "process exited")).await;
                    }
                }
                break;
            }
            failed = &mut stdin_failed => {
                if let Ok(message) = failed {
                    let _ = send(&mut socket, error_frame("STDIN_WRITE_FAILED", &message)).await;
                }
                break;
            }
            live = attachment.live.recv() => match live {
                Some(Live::Output(channel, data)) => {
                    if !send(&mut socket, framed(channel, &data)).await {
                        break;
                    }
                }
                Some(Live::Exit(code)) => {
                    let _ = send(&mut socket, text(json!({"type": "exit", "exit_code": code}))).await;
                    let _ = send(&mut socket, close(CLOSE_NORMAL, "process exited")).await;
                    break;
                }
                None => break,
            },
            message = socket.recv() => {
                last_heard = Instant::now();
                let Some(Ok(message)) = message else { break };
                match message {
                    Message::Binary(data) => {
                        if data.first() == Some(&CLIENT_STDIN)
                            && data.len() > 1
                            && stdin_tx.send(data.slice(1..)).await.is_err()
                        {
                            break;
                        }
                    }
                    Message::Text(t) => {
                        if let Some(reply) = control_frame(&session, t.as_str(), &stdin_tx).await {
                            if !send(&mut socket, reply).await {
                                break;
                            }
                        }
                    }
                    Message::Close(_) => break,
                    Message::Ping(_) | Message::Pong(_) => {}
                }
            }
            _ = ping.tick() => {
                if !send(&mut socket, Message::Ping(Bytes::new())).await {
                    break;
                }
            }
            () = tokio::time::sleep_until(last_heard + READ_DEADLINE) => break,
        }
    }
    // Let go of the session first (a new client may attach at once), then let input
    // the client sent before it went away still reach the shell (a client typing a
    // command and detaching at once), unless the shell stopped reading.
    drop(attachment);
    drop(stdin_tx);
    let mut writer = writer;
    if tokio::time::timeout(STDIN_DRAIN, &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
}

/// Feeds client input to the shell, in order, off the connection's loop (a shell
/// that does not read its input must not stop its output from being forwarded).
async fn write_stdin(
    session: Arc<PtySession>,
    mut chunks: mpsc::Receiver<Bytes>,
    failed: oneshot::Sender<String>,
) {
    while let Some(chunk) = chunks.recv().await {
        let stdin: Option<Arc<Stdin>> = session.stdin();
        let result = match stdin {
            Some(stdin) => stdin.write_all(&chunk).await.map_err(|e| e.to_string()),
            None => Err("the shell is not running".to_owned()),
        };
        if let Err(message) = result {
            let _ = failed.send(message);
            return;
        }
    }
}

/// Handles one text frame; returns the reply, if any. Text that is not JSON is
/// ignored, as upstream does.
async fn control_frame(
    session: &PtySession,
    frame: &str,
    stdin: &mpsc::Sender<Bytes>,
) -> Option<Message> {
    let value: Value = serde_json::from_str(frame).ok()?;
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "stdin" => {
            let data = value.get("data").and_then(Value::as_str).unwrap_or("");
            if !data.is_empty() {
                let _ = stdin.send(Bytes::copy_from_slice(data.as_bytes())).await;
            }
            None
        }
        "resize" => {
            let dim = |k: &str| {
                value
                    .get(k)
                    .and_then(Value::as_i64)
                    .and_then(|v| u16::try_from(v).ok())
                    .filter(|v| *v > 0)
            };
            if let (Some(cols), Some(rows)) = (dim("cols"), dim("rows")) {
                session.resize(cols, rows);
            }
            None
        }
        "signal" => {
            let name = value.get("signal").and_then(Value::as_str).unwrap_or("");
            if let Some(signal) = shell::signal_named(name) {
                session.signal(signal);
            }
            None
        }
        "ping" => Some(text(json!({"type": "pong"}))),
        other => Some(error_frame(
            "INVALID_FRAME",
            &format!("unknown frame type {}", Value::String(other.to_owned())),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_is_read_leniently() {
        let p = Params::parse(None);
        assert_eq!((p.mode, p.since, p.takeover), (Mode::Pty, 0, false));
        let p = Params::parse(Some("pty=0&since=42&takeover=1"));
        assert_eq!((p.mode, p.since, p.takeover), (Mode::Pipe, 42, true));
        let p = Params::parse(Some("pty=false&since=-5&takeover=true"));
        assert_eq!((p.mode, p.since, p.takeover), (Mode::Pty, 0, false));
        assert_eq!(Params::parse(Some("since=abc")).since, 0);
    }
}
