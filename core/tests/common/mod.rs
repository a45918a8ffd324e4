//! A small fault-injecting OpenSandbox server for tests: it speaks enough of the
//! lifecycle and execd protocol to drive the core, and does on purpose what a healthy
//! server never does (reset mid-stream, 503 then success, slow headers, malformed
//! frames, streams that stop without a terminal event).
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Multipart, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

pub const TOKEN_HEADER: &str = "x-stub-token";
pub const TOKEN: &str = "stub-secret";

#[derive(Default)]
pub struct StubState {
    pub addr: Mutex<Option<SocketAddr>>,
    /// Calls per route label.
    pub calls: Mutex<HashMap<String, usize>>,
    /// Ids passed to `DELETE /command`.
    pub interrupted: Mutex<Vec<String>>,
    /// Streams whose client went away before the stream ended.
    pub disconnects: AtomicUsize,
    /// Deleted sandbox ids.
    pub killed: Mutex<Vec<String>>,
    /// sha256 + length of each uploaded file, by path.
    pub uploads: Mutex<HashMap<String, (String, u64)>>,
    /// sha256 of the last generated big stdout.
    pub big_sha: Mutex<Option<String>>,
    /// Pings answered 503 before the first 200.
    pub unready_pings: AtomicUsize,
    /// Headers of the last create request.
    pub create_headers: Mutex<Option<HeaderMap>>,
}

impl StubState {
    pub fn count(&self, label: &str) -> usize {
        self.calls
            .lock()
            .map(|c| c.get(label).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    fn hit(&self, label: &str) -> usize {
        let mut c = self.calls.lock().expect("lock");
        let n = c.entry(label.to_owned()).or_insert(0);
        *n += 1;
        *n
    }
}

pub struct Stub {
    pub addr: SocketAddr,
    pub state: Arc<StubState>,
}

impl Stub {
    pub fn domain(&self) -> String {
        self.addr.to_string()
    }

    pub fn config(&self) -> opensandbox_core::ConnectionConfig {
        opensandbox_core::ConnectionConfig::new()
            .with_domain(self.domain())
            .with_api_key("stub-key")
    }
}

fn rid(headers: &HeaderMap) -> String {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_else(|| "stub-generated-id".to_owned())
}

fn error(status: StatusCode, code: &str, msg: &str, headers: &HeaderMap) -> Response {
    (
        status,
        [("x-request-id", rid(headers))],
        Json(json!({"code": code, "message": msg})),
    )
        .into_response()
}

fn sandbox_json(id: &str) -> Value {
    json!({
        "id": id,
        "status": {"state": "Running", "reason": "CONTAINER_RUNNING"},
        "entrypoint": ["tail", "-f", "/dev/null"],
        "createdAt": "2026-01-01T00:00:00Z",
        "expiresAt": "2026-01-01T00:10:00Z",
        "metadata": {},
        "someFutureField": [1, 2, 3]
    })
}

async fn create(
    State(st): State<Arc<StubState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    st.hit("create");
    *st.create_headers.lock().expect("lock") = Some(headers.clone());
    if headers
        .get("open-sandbox-api-key")
        .and_then(|v| v.to_str().ok())
        != Some("stub-key")
    {
        return error(
            StatusCode::UNAUTHORIZED,
            "INVALID_API_KEY",
            "bad key",
            &headers,
        );
    }
    let image = body["image"]["uri"].as_str().unwrap_or("");
    if image == "fail-503" {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "BUSY",
            "try later",
            &headers,
        );
    }
    let id = if image == "never-ready" {
        "never-ready".to_owned()
    } else {
        format!("sbx-{}", st.count("create"))
    };
    if image == "slow-ready" {
        st.unready_pings.store(3, Ordering::SeqCst);
    }
    (
        StatusCode::ACCEPTED,
        [("x-request-id", rid(&headers))],
        Json(sandbox_json(&id)),
    )
        .into_response()
}

async fn get_sandbox(
    State(st): State<Arc<StubState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let n = st.hit(&format!("get:{id}"));
    match id.as_str() {
        "missing" => error(
            StatusCode::NOT_FOUND,
            "STUB::SANDBOX_NOT_FOUND",
            "no such sandbox",
            &headers,
        ),
        "flaky" if n <= 2 => (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "0")],
            "busy",
        )
            .into_response(),
        "always-503" => (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response(),
        "slow-headers" => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Json(sandbox_json(&id)).into_response()
        }
        _ => ([("x-request-id", rid(&headers))], Json(sandbox_json(&id))).into_response(),
    }
}

async fn kill(State(st): State<Arc<StubState>>, Path(id): Path<String>) -> StatusCode {
    st.hit("kill");
    st.killed.lock().expect("lock").push(id);
    StatusCode::NO_CONTENT
}

async fn endpoint(
    State(st): State<Arc<StubState>>,
    Path((id, port)): Path<(String, u16)>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    st.hit("endpoint");
    let addr = st.addr.lock().expect("lock").expect("addr");
    let body = Json(json!({
        "endpoint": format!("{addr}/sandboxes/{id}/proxy/{port}"),
        "headers": {TOKEN_HEADER: TOKEN, "x-proxy-flag": q.get("use_server_proxy").cloned().unwrap_or_default()}
    }));
    // As upstream: `fsb-*` sandboxes are template-backed (protocol.md §2.6).
    if id.starts_with("fsb-") {
        return ([("OPEN-SANDBOX-ORIGIN", "Template")], body).into_response();
    }
    body.into_response()
}

/// `/v1/sandboxes/{id}/networkpolicy` (GET/PATCH/DELETE): counts each method and
/// answers a fixed policy.
async fn network_policy(
    State(st): State<Arc<StubState>>,
    method: axum::http::Method,
    Path(_id): Path<String>,
) -> Response {
    st.hit(&format!("networkpolicy {method}"));
    Json(json!({"status": "ok", "mode": "enforcing",
                "policy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}}))
    .into_response()
}

fn authorized(headers: &HeaderMap) -> bool {
    headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok()) == Some(TOKEN)
}

async fn ping(
    State(st): State<Arc<StubState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    st.hit("ping");
    if !authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "missing token"})),
        )
            .into_response();
    }
    if id == "never-ready" {
        return StatusCode::BAD_GATEWAY.into_response();
    }
    let left = st.unready_pings.load(Ordering::SeqCst);
    if left > 0 {
        st.unready_pings.store(left - 1, Ordering::SeqCst);
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    StatusCode::OK.into_response()
}

fn frame(v: Value) -> Bytes {
    let mut s = v.to_string();
    s.push_str("\n\n");
    Bytes::from(s)
}

fn event_response(rx: mpsc::Receiver<Result<Bytes, std::io::Error>>) -> Response {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("x-request-id", "stream-rid")
        .body(Body::from_stream(stream))
        .expect("response")
}

/// Deterministic content of the big stdout: line `i` of roughly 100 bytes.
pub fn big_line(i: usize) -> String {
    format!(
        "{i:010} the quick brown fox jumps over the lazy dog {:048x}",
        (i as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    )
}

async fn command(
    State(st): State<Arc<StubState>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    st.hit("command");
    if !authorized(&headers) {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": "missing token"})),
        )
            .into_response();
    }
    // The lifecycle API key must never leak to a sandbox endpoint.
    if headers.contains_key("open-sandbox-api-key") {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"code": "LEAK", "message": "api key sent to execd"})),
        )
            .into_response();
    }
    let cmd = body["command"].as_str().unwrap_or("").to_owned();
    let background = body["background"].as_bool().unwrap_or(false);
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    let id = format!("cmd-{}", st.count("command"));
    let state = st.clone();
    tokio::spawn(async move {
        let t = 1_700_000_000_000i64;
        let send = |b: Bytes| {
            let tx = tx.clone();
            async move { tx.send(Ok(b)).await.is_ok() }
        };
        if !send(frame(json!({"type": "init", "text": id, "timestamp": t}))).await {
            return;
        }
        let _ = send(frame(
            json!({"type": "ping", "text": "pong", "timestamp": t}),
        ))
        .await;
        if background {
            let _ = send(frame(
                json!({"type": "execution_complete", "execution_time": 1, "timestamp": t}),
            ))
            .await;
            return;
        }
        let mut parts = cmd.splitn(2, ' ');
        let verb = parts.next().unwrap_or("");
        let arg = parts.next().unwrap_or("");
        match verb {
            "echo" => {
                for (i, line) in arg.split(';').enumerate() {
                    let ty = if line.starts_with('!') {
                        "stderr"
                    } else {
                        "stdout"
                    };
                    let text = line.trim_start_matches('!');
                    send(frame(
                        json!({"type": ty, "text": text, "timestamp": t + i as i64}),
                    ))
                    .await;
                }
                send(frame(json!({"type": "execution_complete", "execution_time": 7, "timestamp": t + 100}))).await;
                // Like execd: keep the connection open for a while after the terminal event.
                tokio::time::sleep(Duration::from_secs(30)).await;
                send(frame(
                    json!({"type": "ping", "text": "pong", "timestamp": t + 200}),
                ))
                .await;
            }
            "exit" => {
                send(frame(
                    json!({"type": "stderr", "text": "oops", "timestamp": t}),
                ))
                .await;
                send(frame(json!({"type": "error", "error": {"ename": "CommandExecError", "evalue": arg, "traceback": [format!("exit status {arg}")]}, "timestamp": t}))).await;
            }
            "big" => {
                let megabytes: usize = arg.parse().unwrap_or(1);
                let target = megabytes * 1024 * 1024;
                let mut sha = Sha256::new();
                let (mut total, mut i) = (0usize, 0usize);
                let mut chunk = String::with_capacity(1 << 16);
                while total < target {
                    let line = big_line(i);
                    sha.update(line.as_bytes());
                    sha.update(b"\n");
                    total += line.len() + 1;
                    chunk.push_str(
                        &json!({"type": "stdout", "text": line, "timestamp": t}).to_string(),
                    );
                    chunk.push_str("\n\n");
                    i += 1;
                    if chunk.len() >= 60_000 {
                        if !send(Bytes::from(std::mem::take(&mut chunk))).await {
                            return;
                        }
                        chunk.reserve(1 << 16);
                    }
                }
                *state.big_sha.lock().expect("lock") = Some(hex(&sha.finalize()));
                chunk.push_str(
                    &json!({"type": "execution_complete", "execution_time": 1, "timestamp": t})
                        .to_string(),
                );
                chunk.push_str("\n\n");
                send(Bytes::from(chunk)).await;
            }
            "forever" => {
                // Heartbeats until the client leaves or an interrupt arrives.
                loop {
                    if state
                        .interrupted
                        .lock()
                        .expect("lock")
                        .iter()
                        .any(|x| x == &id)
                    {
                        send(frame(json!({"type": "error", "error": {"ename": "CommandExecError", "evalue": "-1", "traceback": ["signal: terminated"]}, "timestamp": t}))).await;
                        return;
                    }
                    if !send(frame(
                        json!({"type": "ping", "text": "pong", "timestamp": t}),
                    ))
                    .await
                    {
                        state.disconnects.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            "reset" => {
                send(frame(
                    json!({"type": "stdout", "text": "before reset", "timestamp": t}),
                ))
                .await;
                let _ = tx
                    .send(Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "injected reset",
                    )))
                    .await;
            }
            "truncated" => {
                send(frame(
                    json!({"type": "stdout", "text": "partial", "timestamp": t}),
                ))
                .await;
            }
            "malformed" => {
                send(Bytes::from_static(
                    b"{\"type\":\"stdout\",\"text\":\"ok\"}\n\n{this is not json}\n\n",
                ))
                .await;
                send(frame(
                    json!({"type": "execution_complete", "execution_time": 1, "timestamp": t}),
                ))
                .await;
            }
            "inband" => {
                send(frame(json!({"code": "RUNTIME_ERROR", "message": "error running codes session is busy"}))).await;
            }
            "sse" => {
                send(Bytes::from_static(b": hello\r\nevent: message\r\ndata: {\"type\":\"stdout\",\"text\":\"via sse\",\"timestamp\":1}\r\n\r\n")).await;
                send(Bytes::from_static(b"data:{\"type\":\"brand_new_type\"}\n\ndata: {\"type\":\"execution_complete\",\"execution_time\":2}\n\n")).await;
            }
            _ => {
                send(frame(
                    json!({"type": "execution_complete", "execution_time": 0, "timestamp": t}),
                ))
                .await;
            }
        }
    });
    event_response(rx)
}

async fn interrupt(
    State(st): State<Arc<StubState>>,
    Query(q): Query<HashMap<String, String>>,
) -> StatusCode {
    st.hit("interrupt");
    if let Some(id) = q.get("id") {
        st.interrupted.lock().expect("lock").push(id.clone());
    }
    StatusCode::OK
}

async fn upload(State(st): State<Arc<StubState>>, mut mp: Multipart) -> Response {
    st.hit("upload");
    let mut pending_path: Option<String> = None;
    loop {
        let field = match mp.next_field().await {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
        };
        match field.name() {
            Some("metadata") => {
                if field.file_name().is_none() {
                    return (StatusCode::BAD_REQUEST, Json(json!({"code": "INVALID_FILE_METADATA", "message": "metadata file is missing"}))).into_response();
                }
                let b = field.bytes().await.unwrap_or_default();
                let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
                pending_path = v["path"].as_str().map(str::to_owned);
            }
            Some("file") => {
                let Some(path) = pending_path.take() else {
                    return (StatusCode::BAD_REQUEST, "file before metadata").into_response();
                };
                let mut field = field;
                let mut sha = Sha256::new();
                let mut len = 0u64;
                loop {
                    match field.chunk().await {
                        Ok(Some(c)) => {
                            len += c.len() as u64;
                            sha.update(&c);
                        }
                        Ok(None) => break,
                        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
                    }
                }
                st.uploads
                    .lock()
                    .expect("lock")
                    .insert(path, (hex(&sha.finalize()), len));
            }
            _ => {}
        }
    }
    StatusCode::OK.into_response()
}

/// Deterministic pseudo-random content: byte stream of `len` bytes from `seed`.
pub struct Gen {
    state: u64,
    left: u64,
}

impl Gen {
    pub fn new(seed: u64, len: u64) -> Self {
        Gen {
            state: seed | 1,
            left: len,
        }
    }

    /// Fills up to `buf.len()` bytes; returns how many.
    pub fn fill(&mut self, buf: &mut [u8]) -> usize {
        let n = (buf.len() as u64).min(self.left) as usize;
        for word in buf[..n].chunks_mut(8) {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            let b = self.state.to_le_bytes();
            word.copy_from_slice(&b[..word.len()]);
        }
        self.left -= n as u64;
        n
    }
}

impl tokio::io::AsyncRead for Gen {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let want = buf.remaining().min(1 << 20);
        let mut tmp = vec![0u8; want];
        let n = self.fill(&mut tmp);
        buf.put_slice(&tmp[..n]);
        std::task::Poll::Ready(Ok(()))
    }
}

/// sha256 of a generated stream (what uploads and downloads must match).
pub fn gen_sha(seed: u64, len: u64) -> String {
    let mut g = Gen::new(seed, len);
    let mut sha = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = g.fill(&mut buf);
        if n == 0 {
            break;
        }
        sha.update(&buf[..n]);
    }
    hex(&sha.finalize())
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `GET /files/download?path=/gen/<seed>/<len>` serves generated bytes, honouring a
/// `Range: bytes=a-b` header; `offset`/`limit` serve numbered lines.
async fn download(
    State(st): State<Arc<StubState>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    st.hit("download");
    let path = q.get("path").cloned().unwrap_or_default();
    if let (Some(off), Some(lim)) = (q.get("offset"), q.get("limit")) {
        let off: usize = off.parse().unwrap_or(1);
        let lim: usize = lim.parse().unwrap_or(1);
        let lines: Vec<String> = (off..off + lim).map(|i| format!("line {i}")).collect();
        return (
            [("content-type", "text/plain; charset=utf-8")],
            lines.join("\n"),
        )
            .into_response();
    }
    let parts: Vec<&str> = path.trim_start_matches("/gen/").split('/').collect();
    let (Some(seed), Some(len)) = (
        parts.first().and_then(|s| s.parse::<u64>().ok()),
        parts.get(1).and_then(|s| s.parse::<u64>().ok()),
    ) else {
        return error(
            StatusCode::NOT_FOUND,
            "FILE_NOT_FOUND",
            "no such file",
            &headers,
        );
    };
    let (start, end) = match headers.get("range").and_then(|v| v.to_str().ok()) {
        Some(r) => {
            let r = r.trim_start_matches("bytes=");
            let mut it = r.split('-');
            let a: u64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            let b: u64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(len - 1);
            (a, b.min(len - 1) + 1)
        }
        None => (0, len),
    };
    let mut g = Gen::new(seed, end);
    // Skip to `start` (the generator is sequential).
    let mut skip = start;
    let mut scratch = vec![0u8; 1 << 16];
    while skip > 0 {
        let n = (skip as usize).min(scratch.len());
        g.fill(&mut scratch[..n]);
        skip -= n as u64;
    }
    let stream = futures_util::stream::unfold(g, |mut g| async move {
        let mut buf = vec![0u8; 256 * 1024];
        let n = g.fill(&mut buf);
        if n == 0 {
            return None;
        }
        buf.truncate(n);
        Some((Ok::<_, std::io::Error>(Bytes::from(buf)), g))
    });
    let status = if headers.contains_key("range") {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    Response::builder()
        .status(status)
        .header("content-type", "application/octet-stream")
        .header("content-length", (end - start).to_string())
        .body(Body::from_stream(stream))
        .expect("response")
}

async fn logs(headers: HeaderMap, Query(q): Query<HashMap<String, String>>) -> Response {
    let full = "line one\nline two\n";
    let cursor: usize = q
        .get("cursor")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
        .min(full.len());
    let _ = headers;
    (
        [("EXECD-COMMANDS-TAIL-CURSOR", full.len().to_string())],
        full[cursor..].to_owned(),
    )
        .into_response()
}

async fn metrics_watch() -> Response {
    let body = "{\"cpu_count\":2,\"cpu_used_pct\":1.5,\"mem_total_mib\":100,\"mem_used_mib\":10,\"timestamp\":1}\n{\"error\":\"sample failed\"}\n{\"cpu_count\":2,\"cpu_used_pct\":2.5,\"mem_total_mib\":100,\"mem_used_mib\":11,\"timestamp\":2}\n";
    ([("content-type", "text/event-stream")], body).into_response()
}

pub async fn start() -> Stub {
    let state = Arc::new(StubState::default());
    let execd = Router::new()
        .route("/ping", get(ping))
        .route("/command", post(command).delete(interrupt))
        .route(
            "/command/{cid}/logs",
            get(|h: HeaderMap, q: Query<HashMap<String, String>>| logs(h, q)),
        )
        .route("/files/upload", post(upload))
        .route("/files/download", get(download))
        .route("/metrics/watch", get(metrics_watch));
    let app = Router::new()
        .route("/v1/sandboxes", post(create))
        .route("/v1/sandboxes/{id}", get(get_sandbox).delete(kill))
        .route("/v1/sandboxes/{id}/endpoints/{port}", get(endpoint))
        .route(
            "/v1/sandboxes/{id}/networkpolicy",
            get(network_policy)
                .patch(network_policy)
                .delete(network_policy),
        )
        .nest("/sandboxes/{id}/proxy/44772", execd)
        .route("/unused", delete(|| async { StatusCode::OK }))
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    *state.addr.lock().expect("lock") = Some(addr);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Stub { addr, state }
}

/// Waits (generously) until `cond` holds.
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}
