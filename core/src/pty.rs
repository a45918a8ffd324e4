//! Interactive PTY sessions (`/pty`, shared docs pty.md): create, inspect and delete a
//! session over REST, and attach to it over a WebSocket as a typed duplex, an output
//! stream of bytes with their absolute offsets plus a writer for stdin, resize,
//! signals and close.
//!
//! Offsets: every output byte of a session has an absolute offset (replay buffer of
//! 1 MiB on the server). [`PtyConnection::next_offset`] is the offset after the last
//! byte received; attaching again with `since = next_offset` replays exactly the
//! bytes produced while away (when they are still in the buffer; a replay starting
//! later than `since` shows the gap in its offset).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use crate::config::REQUEST_ID_HEADER;
use crate::error::{from_response_body, Error, ErrorKind, Result};
use crate::execd::commands::require;
use crate::execd::ExecdClient;
use crate::lifecycle::seg;

/// Output chunks queued for the reader before the connection stops reading frames.
const OUTPUT_QUEUE: usize = 64;
/// Client commands queued before a writer waits.
const INPUT_QUEUE: usize = 64;
/// The server's replay frame is up to 1 MiB + 9 bytes; leave room.
const MAX_FRAME: usize = 4 * 1024 * 1024;

/// `POST /pty` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtyCreateRequest {
    /// Working directory (`$VAR`, `~` expanded and created by the server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Run `bash -c command` instead of an interactive shell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// `GET /pty/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PtySessionStatus {
    /// The session id.
    pub session_id: String,
    /// Whether its shell is alive (false before the first attach).
    pub running: bool,
    /// Total bytes ever produced: the offset the next byte will get.
    pub output_offset: u64,
}

/// How the shell is attached; only the attach that starts the shell chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PtyMode {
    /// A real terminal (echo, ANSI, resize), 80×24 at first.
    #[default]
    Pty,
    /// Plain pipes, stdout and stderr apart.
    Pipe,
}

impl PtyMode {
    /// `"pty"` or `"pipe"`, as in the `connected` frame.
    pub fn as_str(self) -> &'static str {
        match self {
            PtyMode::Pty => "pty",
            PtyMode::Pipe => "pipe",
        }
    }

    /// Parses `"pty"` / `"pipe"`.
    pub fn parse(s: &str) -> Option<PtyMode> {
        match s {
            "pty" => Some(PtyMode::Pty),
            "pipe" => Some(PtyMode::Pipe),
            _ => None,
        }
    }
}

/// Options of [`ExecdClient::attach_pty`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PtyAttachOptions {
    /// Mode, if this attach starts the shell.
    pub mode: PtyMode,
    /// Replay from this offset (absent = 0: everything still buffered).
    pub since: Option<u64>,
    /// Evict a client holding the session instead of failing with 409.
    pub takeover: bool,
}

/// Which stream an output chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtyChannel {
    /// Terminal output (PTY mode) or stdout (pipe mode).
    Stdout,
    /// Stderr (pipe mode).
    Stderr,
    /// Replayed bytes (stdout and stderr unlabelled).
    Replay,
}

impl PtyChannel {
    /// `"stdout"`, `"stderr"` or `"replay"`.
    pub fn as_str(self) -> &'static str {
        match self {
            PtyChannel::Stdout => "stdout",
            PtyChannel::Stderr => "stderr",
            PtyChannel::Replay => "replay",
        }
    }
}

/// What an attached connection receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PtyEvent {
    /// Output bytes starting at absolute `offset`.
    Output {
        /// Where they came from.
        channel: PtyChannel,
        /// Absolute offset of the first byte.
        offset: u64,
        /// The bytes (chunking is arbitrary: a UTF-8 or escape sequence may be split).
        data: Bytes,
    },
    /// The shell exited (`-1`: killed by a signal, or the session was deleted).
    Exit {
        /// Its exit code.
        exit_code: i32,
    },
    /// An `error` frame from the server (e.g. `STDIN_WRITE_FAILED`, `INVALID_FRAME`).
    Error {
        /// The server's code.
        code: String,
        /// The server's message.
        message: String,
    },
    /// The connection ended; always the last event.
    Closed {
        /// The close code, if the server sent one (1000 after exit, 4001 when another
        /// client took the session over: do not reconnect automatically on 4001).
        code: Option<u16>,
        /// The close reason.
        reason: String,
    },
}

/// What a writer can ask of the connection.
#[derive(Debug)]
enum Command {
    Stdin(Bytes),
    Resize { cols: u16, rows: u16 },
    Signal(String),
    Close,
}

/// The writing half of a PTY connection. Cheap to clone.
#[derive(Clone, Debug)]
pub struct PtyWriter {
    tx: mpsc::Sender<Command>,
    session_id: Arc<str>,
}

/// Close code a client sends when it detaches on purpose.
pub const CLOSE_NORMAL: u16 = 1000;
/// Close code of a session taken over by another client.
pub const CLOSE_TAKEN_OVER: u16 = 4001;

impl PtyWriter {
    async fn send(&self, op: &'static str, command: Command) -> Result<()> {
        self.tx.send(command).await.map_err(|_| {
            Error::new(
                ErrorKind::Connection,
                op,
                format!("pty session {} is no longer attached", self.session_id),
            )
        })
    }

    /// Writes bytes to the shell's stdin (in PTY mode they are typed keys: `\r` is
    /// Enter, `0x03` Ctrl-C, `0x04` Ctrl-D).
    pub async fn write(&self, data: impl Into<Bytes>) -> Result<()> {
        let data = data.into();
        if data.is_empty() {
            return Ok(());
        }
        self.send("pty.write", Command::Stdin(data)).await
    }

    /// Sets the terminal size (both must be > 0; no-op in pipe mode).
    pub async fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        if cols == 0 || rows == 0 {
            return Err(Error::invalid_argument(
                "pty.resize",
                format!("cols and rows must be > 0, got {cols}x{rows}"),
            ));
        }
        self.send("pty.resize", Command::Resize { cols, rows })
            .await
    }

    /// Sends a signal to the shell's process group: `SIGINT`, `SIGTERM`, `SIGKILL`,
    /// `SIGQUIT` or `SIGHUP`. (In PTY mode a foreground program has its own group:
    /// write `0x03` to interrupt it.)
    pub async fn signal(&self, name: &str) -> Result<()> {
        const NAMES: [&str; 5] = ["SIGINT", "SIGTERM", "SIGKILL", "SIGQUIT", "SIGHUP"];
        if !NAMES.contains(&name) {
            return Err(Error::invalid_argument(
                "pty.signal",
                format!("signal must be one of {NAMES:?}, got {name:?}"),
            ));
        }
        self.send("pty.signal", Command::Signal(name.to_owned()))
            .await
    }

    /// Detaches (close 1000); the shell keeps running on the server.
    pub async fn close(&self) -> Result<()> {
        // Already gone is closed enough.
        let _ = self.tx.send(Command::Close).await;
        Ok(())
    }
}

/// An attached PTY session: the reading half ([`PtyConnection::next_event`]) and a
/// [`PtyWriter`]. Dropping every writer and the connection detaches.
#[derive(Debug)]
pub struct PtyConnection {
    session_id: String,
    mode: PtyMode,
    events: mpsc::Receiver<PtyEvent>,
    writer: PtyWriter,
    next_offset: Arc<AtomicU64>,
}

impl PtyConnection {
    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The mode the shell really runs in (`connected.mode`).
    pub fn mode(&self) -> PtyMode {
        self.mode
    }

    /// A writer for stdin, resize, signals and close.
    pub fn writer(&self) -> PtyWriter {
        self.writer.clone()
    }

    /// The offset after the last byte received (pass it as `since` to reattach).
    pub fn next_offset(&self) -> u64 {
        self.next_offset.load(Ordering::SeqCst)
    }

    /// The next event, waiting for it; `None` after [`PtyEvent::Closed`].
    pub async fn next_event(&mut self) -> Option<PtyEvent> {
        self.events.recv().await
    }

    /// Like [`Self::next_event`] without waiting: `Ok(None)` when nothing has arrived,
    /// `Err(())` once the connection is over and drained.
    #[allow(clippy::result_unit_err)]
    pub fn try_next_event(&mut self) -> std::result::Result<Option<PtyEvent>, ()> {
        match self.events.try_recv() {
            Ok(e) => Ok(Some(e)),
            Err(mpsc::error::TryRecvError::Empty) => Ok(None),
            Err(mpsc::error::TryRecvError::Disconnected) => Err(()),
        }
    }
}

#[derive(Deserialize)]
struct CreateResponse {
    session_id: String,
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

impl ExecdClient {
    /// `POST /pty` → the new session's id. No shell starts before the first attach.
    pub async fn create_pty_session(&self, request: &PtyCreateRequest) -> Result<String> {
        let req = self.req("pty.create", Method::POST, "/pty").json(request)?;
        let r: CreateResponse = self.http.json(req).await?;
        Ok(r.session_id)
    }

    /// `GET /pty/{id}`.
    pub async fn get_pty_session(&self, session_id: &str) -> Result<PtySessionStatus> {
        const OP: &str = "pty.get";
        require(OP, session_id)?;
        let req = self.req(OP, Method::GET, &format!("/pty/{}", seg(session_id)));
        self.http.json(req).await
    }

    /// `DELETE /pty/{id}`: kills the shell and forgets the session.
    pub async fn delete_pty_session(&self, session_id: &str) -> Result<()> {
        const OP: &str = "pty.delete";
        require(OP, session_id)?;
        let req = self.req(OP, Method::DELETE, &format!("/pty/{}", seg(session_id)));
        self.http.empty(req).await
    }

    /// The WebSocket URL of an attach (`ws://` or `wss://`), with its query. Send
    /// [`ExecdClient::endpoint_headers`] on the handshake.
    pub fn pty_websocket_url(&self, session_id: &str, options: &PtyAttachOptions) -> String {
        let base = if let Some(rest) = self.base.strip_prefix("https://") {
            format!("wss://{rest}")
        } else if let Some(rest) = self.base.strip_prefix("http://") {
            format!("ws://{rest}")
        } else {
            self.base.to_string()
        };
        let mut url = format!("{base}/pty/{}/ws", seg(session_id));
        let mut query = Vec::new();
        if options.mode == PtyMode::Pipe {
            query.push("pty=0".to_owned());
        }
        if let Some(since) = options.since {
            query.push(format!("since={since}"));
        }
        if options.takeover {
            query.push("takeover=1".to_owned());
        }
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query.join("&"));
        }
        url
    }

    /// Attaches to a session over its WebSocket; returns once the server sent
    /// `connected` (a replay, if any, is the first event). A 404 is `not_found`, a
    /// session held by another client a 409 `api` error with code `ALREADY_CONNECTED`.
    pub async fn attach_pty(
        &self,
        session_id: &str,
        options: &PtyAttachOptions,
    ) -> Result<PtyConnection> {
        const OP: &str = "pty.attach";
        require(OP, session_id)?;
        let url = self.pty_websocket_url(session_id, options);
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| Error::invalid_argument(OP, format!("bad WebSocket URL {url}: {e}")))?;
        let config = self.http.config();
        let request_id = uuid::Uuid::new_v4().simple().to_string();
        {
            let headers = request.headers_mut();
            let pairs = config
                .headers()
                .iter()
                .chain(self.headers.iter())
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .chain([
                    ("user-agent", config.user_agent()),
                    (REQUEST_ID_HEADER, request_id.as_str()),
                ]);
            for (k, v) in pairs {
                let name = HeaderName::from_bytes(k.as_bytes())
                    .map_err(|e| Error::invalid_argument(OP, format!("header {k:?}: {e}")))?;
                let value = HeaderValue::from_str(v)
                    .map_err(|e| Error::invalid_argument(OP, format!("header {k:?}: {e}")))?;
                headers.insert(name, value);
            }
        }
        let mut ws_config = WebSocketConfig::default();
        ws_config.max_message_size = Some(MAX_FRAME);
        ws_config.max_frame_size = Some(MAX_FRAME);
        let connect = tokio_tungstenite::connect_async_with_config(request, Some(ws_config), true);
        let timeout = config.connect_timeout() + config.request_timeout();
        let (mut socket, _response) = match tokio::time::timeout(timeout, connect).await {
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    OP,
                    format!("no WebSocket handshake from {url} within {timeout:?}"),
                ))
            }
            Ok(Err(e)) => return Err(handshake_error(OP, &url, e, &request_id)),
            Ok(Ok(pair)) => pair,
        };

        // Until `connected`: the optional replay, or a refusal (error frame, close).
        let since = options.since.unwrap_or(0);
        let next_offset = Arc::new(AtomicU64::new(since));
        let mut early = Vec::new();
        let mode = loop {
            let frame = match tokio::time::timeout(timeout, socket.next()).await {
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        OP,
                        format!(
                            "pty session {session_id}: no `connected` frame within {timeout:?}"
                        ),
                    ))
                }
                Ok(frame) => frame,
            };
            match frame {
                Some(Ok(Message::Binary(data))) => {
                    if let Some(event) = decode_output(&data, &next_offset) {
                        early.push(event);
                    }
                }
                Some(Ok(Message::Text(text))) => {
                    let value: serde_json::Value = match serde_json::from_str(text.as_str()) {
                        Ok(v) => v,
                        Err(_) => continue,
                    };
                    match value.get("type").and_then(|t| t.as_str()) {
                        Some("connected") => {
                            let mode = value
                                .get("mode")
                                .and_then(|m| m.as_str())
                                .and_then(PtyMode::parse)
                                .unwrap_or(options.mode);
                            break mode;
                        }
                        Some("error") => {
                            let code = str_field(&value, "code");
                            let message = str_field(&value, "error");
                            let status = if code == "ALREADY_CONNECTED" {
                                409
                            } else {
                                500
                            };
                            return Err(Error::new(
                                ErrorKind::from_status(status),
                                OP,
                                format!("pty session {session_id}: {message}"),
                            )
                            .with_status(status)
                            .with_code(code)
                            .with_request_id(Some(request_id)));
                        }
                        _ => continue,
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    return Err(closed_early(OP, session_id, frame.as_ref(), &request_id))
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    return Err(Error::new(
                        ErrorKind::Connection,
                        OP,
                        format!(
                            "pty session {session_id}: WebSocket failed before `connected`: {e}"
                        ),
                    )
                    .with_request_id(Some(request_id)))
                }
                None => return Err(closed_early(OP, session_id, None, &request_id)),
            }
        };

        let (event_tx, events) = mpsc::channel(OUTPUT_QUEUE);
        let (tx, commands) = mpsc::channel(INPUT_QUEUE);
        for event in early {
            // Fits: at most one replay frame comes before `connected`.
            let _ = event_tx.try_send(event);
        }
        tokio::spawn(drive(socket, event_tx, commands, Arc::clone(&next_offset)));
        Ok(PtyConnection {
            session_id: session_id.to_owned(),
            mode,
            events,
            writer: PtyWriter {
                tx,
                session_id: session_id.into(),
            },
            next_offset,
        })
    }
}

fn str_field(value: &serde_json::Value, key: &str) -> String {
    value
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned()
}

/// A refused handshake (an HTTP answer instead of 101) as the error the REST calls
/// would give; anything else is a connection error.
fn handshake_error(op: &str, url: &str, e: WsError, request_id: &str) -> Error {
    match e {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            let body = response.body().clone().unwrap_or_default();
            from_response_body(op, status, Some(request_id.to_owned()), &body)
        }
        other => Error::new(
            ErrorKind::Connection,
            op,
            format!("WebSocket handshake with {url} failed: {other}"),
        )
        .with_request_id(Some(request_id.to_owned())),
    }
}

/// The connection closed before `connected`: a proxy's refusal (1008: the token, 1011:
/// the sandbox or its agent) or the server giving up.
fn closed_early(op: &str, session_id: &str, frame: Option<&CloseFrame>, request_id: &str) -> Error {
    let (code, reason) = match frame {
        Some(f) => (Some(u16::from(f.code)), f.reason.to_string()),
        None => (None, String::new()),
    };
    let kind = match code {
        Some(1008) => ErrorKind::Unauthorized,
        _ => ErrorKind::Connection,
    };
    let mut message =
        format!("pty session {session_id}: the server closed the WebSocket before `connected`");
    if let Some(code) = code {
        message.push_str(&format!(" (close {code}"));
        if !reason.is_empty() {
            message.push_str(&format!(": {reason}"));
        }
        message.push(')');
    }
    Error::new(kind, op, message).with_request_id(Some(request_id.to_owned()))
}

/// A server binary frame as an output event, advancing `next` (pty.md §6).
fn decode_output(frame: &[u8], next: &AtomicU64) -> Option<PtyEvent> {
    let (&channel, payload) = frame.split_first()?;
    let (channel, offset, data) = match channel {
        0x01 | 0x02 => {
            let offset = next.fetch_add(payload.len() as u64, Ordering::SeqCst);
            let channel = if channel == 0x01 {
                PtyChannel::Stdout
            } else {
                PtyChannel::Stderr
            };
            (channel, offset, payload)
        }
        0x03 => {
            let (header, data) = payload.split_at_checked(8)?;
            let offset = u64::from_be_bytes(header.try_into().ok()?);
            next.store(offset + data.len() as u64, Ordering::SeqCst);
            (PtyChannel::Replay, offset, data)
        }
        _ => return None,
    };
    Some(PtyEvent::Output {
        channel,
        offset,
        data: Bytes::copy_from_slice(data),
    })
}

/// Owns the socket: frames in become events, writer commands become frames out.
async fn drive(
    mut socket: Socket,
    events: mpsc::Sender<PtyEvent>,
    mut commands: mpsc::Receiver<Command>,
    next_offset: Arc<AtomicU64>,
) {
    let closed = loop {
        tokio::select! {
            frame = socket.next() => {
                let event = match frame {
                    Some(Ok(Message::Binary(data))) => decode_output(&data, &next_offset),
                    Some(Ok(Message::Text(text))) => text_event(text.as_str()),
                    Some(Ok(Message::Close(frame))) => break PtyEvent::Closed {
                        code: frame.as_ref().map(|f| u16::from(f.code)),
                        reason: frame.map(|f| f.reason.to_string()).unwrap_or_default(),
                    },
                    // Pings are answered by tungstenite on the next read or write.
                    Some(Ok(_)) => None,
                    Some(Err(e)) => break PtyEvent::Closed { code: None, reason: e.to_string() },
                    None => break PtyEvent::Closed { code: None, reason: "connection closed".into() },
                };
                if let Some(event) = event {
                    if events.send(event).await.is_err() {
                        // Nobody reads any more: detach.
                        let _ = socket.close(None).await;
                        return;
                    }
                }
            }
            command = commands.recv() => {
                let message = match command {
                    Some(Command::Stdin(data)) => {
                        let mut frame = Vec::with_capacity(data.len() + 1);
                        frame.push(0x00);
                        frame.extend_from_slice(&data);
                        Message::Binary(frame.into())
                    }
                    Some(Command::Resize { cols, rows }) => Message::Text(
                        serde_json::json!({"type": "resize", "cols": cols, "rows": rows})
                            .to_string()
                            .into(),
                    ),
                    Some(Command::Signal(name)) => Message::Text(
                        serde_json::json!({"type": "signal", "signal": name}).to_string().into(),
                    ),
                    Some(Command::Close) | None => {
                        let _ = socket
                            .close(Some(CloseFrame {
                                code: CloseCode::Normal,
                                reason: "client detached".into(),
                            }))
                            .await;
                        // Drain until the server's close (or give up after a moment).
                        let _ = tokio::time::timeout(Duration::from_secs(2), async {
                            while let Some(Ok(_)) = socket.next().await {}
                        })
                        .await;
                        break PtyEvent::Closed {
                            code: Some(CLOSE_NORMAL),
                            reason: "client detached".into(),
                        };
                    }
                };
                if let Err(e) = socket.send(message).await {
                    break PtyEvent::Closed { code: None, reason: e.to_string() };
                }
            }
        }
    };
    let _ = events.send(closed).await;
}

fn text_event(text: &str) -> Option<PtyEvent> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    match value.get("type")?.as_str()? {
        "exit" => Some(PtyEvent::Exit {
            exit_code: value
                .get("exit_code")
                .and_then(|c| c.as_i64())
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(-1),
        }),
        "error" => Some(PtyEvent::Error {
            code: str_field(&value, "code"),
            message: str_field(&value, "error"),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_replay_and_live_frames() {
        let next = AtomicU64::new(5);
        let mut replay = vec![0x03];
        replay.extend_from_slice(&7u64.to_be_bytes());
        replay.extend_from_slice(b"abc");
        assert_eq!(
            decode_output(&replay, &next),
            Some(PtyEvent::Output {
                channel: PtyChannel::Replay,
                offset: 7,
                data: Bytes::from_static(b"abc")
            })
        );
        assert_eq!(next.load(Ordering::SeqCst), 10);
        let live = decode_output(b"\x02de", &next);
        assert_eq!(
            live,
            Some(PtyEvent::Output {
                channel: PtyChannel::Stderr,
                offset: 10,
                data: Bytes::from_static(b"de")
            })
        );
        assert_eq!(next.load(Ordering::SeqCst), 12);
        assert_eq!(decode_output(b"\x03short", &next), None);
        assert_eq!(decode_output(b"\x09x", &next), None);
        assert_eq!(decode_output(b"", &next), None);
    }

    #[test]
    fn text_frames_become_events() {
        assert_eq!(
            text_event(r#"{"type":"exit","exit_code":3}"#),
            Some(PtyEvent::Exit { exit_code: 3 })
        );
        assert_eq!(
            text_event(r#"{"type":"error","code":"INVALID_FRAME","error":"x"}"#),
            Some(PtyEvent::Error {
                code: "INVALID_FRAME".into(),
                message: "x".into()
            })
        );
        assert_eq!(text_event(r#"{"type":"pong"}"#), None);
        assert_eq!(text_event("not json"), None);
    }
}
