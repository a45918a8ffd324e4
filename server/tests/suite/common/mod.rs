//! Shared helpers of the control-plane integration tests: start the real server
//! binary on a free port with a temporary data directory, talk to it, clean up every
//! sandbox process it started.

#![allow(dead_code)]
// Test helpers: a failed unwrap/expect is a failed test (so in every test crate that
// includes this module, whether or not its root allows them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
pub mod runc;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

pub const KEY: &str = "test-api-key";
pub const EXECD_PORT: u16 = 44772;
pub const EGRESS_PORT: u16 = 18080;

/// True if bubblewrap can create the sandboxes this server makes. Tests that are
/// about isolation itself skip (with a printed reason) only when it cannot.
pub fn bwrap_usable() -> bool {
    if std::env::var("OSB_TEST_ISOLATION").as_deref() == Ok("none") {
        return false;
    }
    Command::new("bwrap")
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--uid",
            "0",
            "--gid",
            "0",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--",
            "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The isolation the test servers use: bwrap when usable; `OSB_TEST_ISOLATION=none`
/// runs the suite against the unisolated mode too.
pub fn isolation() -> &'static str {
    if std::env::var("OSB_TEST_ISOLATION").as_deref() == Ok("none") {
        return "none";
    }
    if bwrap_usable() {
        "bwrap"
    } else {
        "none"
    }
}

/// The server binary under test: this build's, or `OSB_TEST_SERVER_BIN` (to check
/// that a regression test fails on another build).
pub fn server_bin() -> String {
    std::env::var("OSB_TEST_SERVER_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_opensandbox-server").to_string())
}

pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub data_dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    pub client: reqwest::Client,
    pub extra_args: Vec<String>,
}

impl Server {
    /// Starts a server with its own data directory.
    pub fn start(extra: &[&str]) -> Server {
        let tmp = tempfile::Builder::new()
            .prefix("osb")
            .tempdir()
            .expect("tempdir");
        let data_dir = tmp.path().to_path_buf();
        let mut server = Self::start_in(&data_dir, extra);
        server._tmp = Some(tmp);
        server
    }

    /// Starts a server on an existing data directory (restart tests).
    pub fn start_in(data_dir: &Path, extra: &[&str]) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data_dir.join("server.log"))
            .expect("server log");
        let mut child = Command::new(server_bin())
            .args([
                "--listen",
                "127.0.0.1:0",
                "--api-key",
                KEY,
                "--isolation",
                isolation(),
                "--log-level",
                "info,opensandbox_server=debug",
            ])
            .arg("--data-dir")
            .arg(data_dir)
            .args(extra)
            .env_remove("OPENSANDBOX_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start opensandbox-server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("opensandbox-server listening on ") {
                    let _ = tx.send(addr.to_string());
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let log = std::fs::read_to_string(data_dir.join("server.log")).unwrap_or_default();
                panic!("server did not start; log:\n{log}");
            }
        };
        Server {
            child: Some(child),
            base: format!("http://{addr}"),
            data_dir: data_dir.to_path_buf(),
            _tmp: None,
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client"),
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Kills the server process only (SIGKILL): its sandboxes keep running.
    pub fn kill_server_only(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits for the server to exit; returns its exit status.
    pub fn terminate_server(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data_dir.join("server.log")).unwrap_or_default()
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .get(self.url(path))
            .header("OPEN-SANDBOX-API-KEY", KEY)
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .post(self.url(path))
            .header("OPEN-SANDBOX-API-KEY", KEY)
    }

    pub fn delete(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .delete(self.url(path))
            .header("OPEN-SANDBOX-API-KEY", KEY)
    }

    pub fn patch(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .patch(self.url(path))
            .header("OPEN-SANDBOX-API-KEY", KEY)
    }

    /// Creates a sandbox and returns the create response.
    pub async fn create(&self, body: Value) -> Value {
        let resp = self
            .post("/v1/sandboxes")
            .json(&body)
            .send()
            .await
            .expect("create");
        let status = resp.status();
        let value: Value = resp.json().await.expect("create json");
        assert_eq!(status.as_u16(), 202, "create answered {status}: {value}");
        value
    }

    /// A sandbox running `tail -f /dev/null`, with extra fields merged in.
    pub async fn create_idle(&self, extra: Value) -> String {
        let mut body = json!({
            "image": {"uri": "host"},
            "entrypoint": ["tail", "-f", "/dev/null"],
            "resourceLimits": {"cpu": "1", "memory": "1Gi"},
        });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        let created = self.create(body).await;
        assert_eq!(created["status"]["state"], "Running", "{created}");
        created["id"].as_str().expect("id").to_string()
    }

    pub async fn sandbox(&self, id: &str) -> Value {
        self.get(&format!("/v1/sandboxes/{id}"))
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json")
    }

    /// Polls the sandbox until `pred` holds (generous deadline, no timing assertion).
    pub async fn wait_for(&self, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let sb = self.sandbox(id).await;
            if pred(&sb) {
                return sb;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("sandbox {id} never reached {what}: {sb}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The endpoint response for `port`: (base URL with scheme, headers).
    pub async fn endpoint(&self, id: &str, port: u16) -> (String, Vec<(String, String)>) {
        let ep: Value = self
            .get(&format!(
                "/v1/sandboxes/{id}/endpoints/{port}?use_server_proxy=true"
            ))
            .send()
            .await
            .expect("endpoint")
            .json()
            .await
            .expect("json");
        let url = format!(
            "http://{}",
            ep["endpoint"].as_str().expect("endpoint string")
        );
        let headers = ep["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        (url, headers)
    }

    /// Runs a shell command through the proxy; returns (stdout lines, exit code).
    pub async fn run(&self, id: &str, command: &str) -> (Vec<String>, Option<i64>) {
        let (url, headers) = self.endpoint(id, EXECD_PORT).await;
        let mut req = self.client.post(format!("{url}/command"));
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        let resp = req
            .json(&json!({ "command": command }))
            .send()
            .await
            .expect("command");
        assert_eq!(resp.status().as_u16(), 200, "command {command:?} rejected");
        let text = resp.text().await.expect("stream");
        let events = parse_events(&text);
        // The server's default framing keeps line endings (1.1): the stream's texts
        // concatenated are the output; its lines are what the tests compare.
        let output: String = events
            .iter()
            .filter(|e| e["type"] == "stdout")
            .map(|e| e["text"].as_str().unwrap_or_default())
            .collect();
        let stdout = split_lines(&output);
        let mut code = None;
        for e in &events {
            if e["type"] == "execution_complete" {
                code = Some(0);
            }
            if e["type"] == "error" {
                code = e["error"]["evalue"].as_str().and_then(|v| v.parse().ok());
            }
        }
        (stdout, code)
    }

    /// Takes a snapshot of sandbox `id` and waits (up to `wait`) until it is no longer
    /// `Creating`; returns the snapshot as the server last showed it.
    pub async fn snapshot(&self, id: &str, wait: Duration) -> Value {
        let resp = self
            .post(&format!("/v1/sandboxes/{id}/snapshots"))
            .json(&json!({}))
            .send()
            .await
            .expect("snapshot");
        assert_eq!(resp.status().as_u16(), 202);
        let v: Value = resp.json().await.expect("json");
        let sid = v["id"].as_str().expect("id").to_string();
        let deadline = std::time::Instant::now() + wait;
        loop {
            let v: Value = self
                .get(&format!("/v1/snapshots/{sid}"))
                .send()
                .await
                .expect("get")
                .json()
                .await
                .expect("json");
            if v["status"]["state"] != "Creating" {
                return v;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "snapshot {sid} still Creating after {wait:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Paths of the sandbox's writable dirs on the host.
    pub fn sandbox_fs(&self, id: &str) -> PathBuf {
        self.data_dir.join("sandboxes").join(id).join("fs")
    }
}

/// Lines of `output`, each without its terminator (`\n`, `\r\n` or `\r`); a last
/// line without one counts too.
pub fn split_lines(output: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = output;
    while !rest.is_empty() {
        match rest.find(['\n', '\r']) {
            Some(i) => {
                lines.push(rest[..i].to_string());
                let skip = if rest[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = &rest[i + skip..];
            }
            None => {
                lines.push(rest.to_string());
                break;
            }
        }
    }
    lines
}

/// A response's status and its body as JSON (or as a JSON string when it is not JSON).
pub async fn body(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Parses an execd event stream (raw JSON frames, optional `data:` prefix).
pub fn parse_events(text: &str) -> Vec<Value> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Kills every process whose command line mentions `dir` (the sandboxes of a test
/// server run in their own sessions and outlive it by design).
pub fn kill_processes_mentioning(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() as i32 {
            continue;
        }
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill_server_only();
        if self._tmp.is_some() {
            kill_processes_mentioning(&self.data_dir);
        }
    }
}
