//! Shared harness of the `files_*` tests: an agent on 127.0.0.1:0 with a temporary root.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use opensandbox_agent::{router, AgentConfig};

pub struct Agent {
    pub base: String,
    /// Host path of the sandbox root (canonical).
    pub root: PathBuf,
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Agent {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Host path of a sandbox path.
    pub fn host(&self, sandbox: &str) -> PathBuf {
        self.root.join(sandbox.trim_start_matches('/'))
    }

    pub fn write(&self, sandbox: &str, data: &[u8]) {
        let p = self.host(sandbox);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }
}

pub async fn start() -> Agent {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let workdir = root.join("workspace");
    std::fs::create_dir_all(&workdir).unwrap();
    let app = router(AgentConfig {
        root: root.clone(),
        workdir,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Agent {
        base: format!("http://{addr}"),
        root,
        client: reqwest::Client::new(),
        _dir: dir,
    }
}

/// Asserts an error response: status and `code` of the `{code, message}` body.
pub async fn expect_error(resp: reqwest::Response, status: u16, code: &str) {
    let got = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    assert_eq!(got, status, "body: {text}");
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    assert_eq!(v["code"], code, "body: {text}");
}

/// A metadata part as the official SDKs send it (a file part named `metadata`).
pub fn metadata_part(json: serde_json::Value) -> reqwest::multipart::Part {
    reqwest::multipart::Part::bytes(json.to_string().into_bytes())
        .file_name("metadata")
        .mime_str("application/json")
        .unwrap()
}

pub fn file_part(data: Vec<u8>, name: &str) -> reqwest::multipart::Part {
    reqwest::multipart::Part::bytes(data)
        .file_name(name.to_string())
        .mime_str("application/octet-stream")
        .unwrap()
}

pub async fn upload(agent: &Agent, files: &[(&str, &[u8])]) -> reqwest::Response {
    let mut form = reqwest::multipart::Form::new();
    for (path, data) in files {
        let name = Path::new(path)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        form = form
            .part(
                "metadata",
                metadata_part(serde_json::json!({ "path": path })),
            )
            .part("file", file_part(data.to_vec(), &name));
    }
    agent
        .client
        .post(agent.url("/files/upload"))
        .multipart(form)
        .send()
        .await
        .unwrap()
}

/// Deterministic pseudo-random bytes (xorshift64*), generated chunk by chunk.
pub struct Noise {
    state: u64,
}

impl Noise {
    pub fn new(seed: u64) -> Self {
        Self { state: seed | 1 }
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            self.state ^= self.state >> 12;
            self.state ^= self.state << 25;
            self.state ^= self.state >> 27;
            let v = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}
