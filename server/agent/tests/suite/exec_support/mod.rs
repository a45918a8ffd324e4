//! Shared helpers of the exec_* tests: an agent on 127.0.0.1:0 and a reader of its
//! raw event streams.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use opensandbox_agent::commands::{set_output_framing, OutputFraming};
use opensandbox_agent::{router, AgentConfig};
use serde_json::Value;

/// Generous bound on any single wait: the test machine is shared and slow.
pub const WAIT: Duration = Duration::from_secs(60);

pub struct Agent {
    pub base: String,
    pub workdir: PathBuf,
    pub client: reqwest::Client,
    _root: tempfile::TempDir,
    _work: tempfile::TempDir,
}

/// An agent with line framing, the June 2026 execd's, which most exec tests assert.
pub async fn start() -> Agent {
    start_with_framing(OutputFraming::Lines).await
}

/// An agent with `framing`. The framing is per agent process, so one test binary
/// must use one framing throughout (exec_framing.rs uses `Kept`).
pub async fn start_with_framing(framing: OutputFraming) -> Agent {
    set_output_framing(framing);
    let root = tempfile::tempdir().expect("root tempdir");
    let work = tempfile::tempdir().expect("work tempdir");
    let app = router(AgentConfig {
        root: root.path().to_path_buf(),
        workdir: work.path().to_path_buf(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Agent {
        base: format!("http://{addr}"),
        workdir: work.path().to_path_buf(),
        client: reqwest::Client::new(),
        _root: root,
        _work: work,
    }
}

impl Agent {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        tokio::time::timeout(WAIT, self.client.post(self.url(path)).json(&body).send())
            .await
            .expect("request timed out")
            .expect("request failed")
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        tokio::time::timeout(WAIT, self.client.get(self.url(path)).send())
            .await
            .expect("request timed out")
            .expect("request failed")
    }

    pub async fn delete(&self, path: &str) -> reqwest::Response {
        tokio::time::timeout(WAIT, self.client.delete(self.url(path)).send())
            .await
            .expect("request timed out")
            .expect("request failed")
    }

    /// POST and read the whole event stream: (raw bytes, parsed frames).
    pub async fn stream(&self, path: &str, body: Value) -> (Vec<u8>, Vec<Value>) {
        let response = self.post(path, body).await;
        assert_eq!(response.status(), 200, "stream request failed");
        let raw = tokio::time::timeout(WAIT, response.bytes())
            .await
            .expect("stream did not end")
            .expect("stream body")
            .to_vec();
        let frames = parse_frames(&raw);
        (raw, frames)
    }

    /// POST and return an incremental reader of the stream.
    pub async fn open_stream(&self, path: &str, body: Value) -> EventReader {
        let response = self.post(path, body).await;
        assert_eq!(response.status(), 200, "stream request failed");
        EventReader {
            response,
            buf: Vec::new(),
        }
    }

    /// The `{code, message}` body of an error response, after checking its status.
    pub async fn expect_error(response: reqwest::Response, status: u16) -> Value {
        assert_eq!(response.status().as_u16(), status);
        let body: Value = response.json().await.expect("error body is JSON");
        assert!(body["code"].is_string(), "error without code: {body}");
        assert!(body["message"].is_string(), "error without message: {body}");
        body
    }
}

/// Split raw stream bytes into frames: each is one JSON object followed by "\n\n".
pub fn parse_frames(raw: &[u8]) -> Vec<Value> {
    assert!(
        raw.is_empty() || raw.ends_with(b"\n\n"),
        "stream does not end with a blank line"
    );
    raw.split(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .chunks(2)
        .filter(|pair| !(pair.len() == 1 && pair[0].is_empty()))
        .map(|pair| {
            assert!(
                pair.len() == 2 && pair[1].is_empty(),
                "frame not followed by a blank line"
            );
            let text = std::str::from_utf8(pair[0]).expect("utf-8 frame");
            assert!(text.starts_with('{'), "frame is not raw JSON: {text}");
            serde_json::from_str(text).expect("frame is JSON")
        })
        .collect()
}

/// The frames of one type.
pub fn of_type<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames.iter().filter(|f| f["type"] == kind).collect()
}

/// Texts of the stdout (or stderr) frames.
pub fn texts(frames: &[Value], kind: &str) -> Vec<String> {
    of_type(frames, kind)
        .iter()
        .map(|f| f["text"].as_str().expect("text").to_string())
        .collect()
}

/// Frame types in order, pings left out (their count depends on timing).
pub fn kinds(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["type"] != "ping")
        .map(|f| f["type"].as_str().unwrap_or("<typeless>").to_string())
        .collect()
}

/// Reads frames one at a time from a live stream.
pub struct EventReader {
    response: reqwest::Response,
    buf: Vec<u8>,
}

impl EventReader {
    /// The next frame, or None when the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let frame: Vec<u8> = self.buf.drain(..pos + 2).collect();
                return Some(serde_json::from_slice(&frame[..pos]).expect("frame is JSON"));
            }
            let chunk = tokio::time::timeout(WAIT, self.response.chunk())
                .await
                .expect("no frame in time")
                .expect("stream chunk");
            match chunk {
                Some(bytes) => self.buf.extend_from_slice(&bytes),
                None => {
                    assert!(self.buf.is_empty(), "stream ended mid-frame");
                    return None;
                }
            }
        }
    }

    /// Read until the stream ends, returning every remaining frame.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut frames = Vec::new();
        while let Some(frame) = self.next().await {
            frames.push(frame);
        }
        frames
    }

    /// Raw chunks, for streams too big to hold.
    pub async fn chunk(&mut self) -> Option<bytes::Bytes> {
        tokio::time::timeout(WAIT, self.response.chunk())
            .await
            .expect("no data in time")
            .expect("stream chunk")
    }
}
