//! `make bench-server`: starts the real server (release build) and measures, all
//! through the proxy route:
//! - create → first command latency (p50/p95 over 50 sandboxes),
//! - `true` command round trip (p50),
//! - stdout streaming throughput (100 MiB),
//! - upload and download throughput (256 MiB).
//!
//! Run: `cargo bench -p opensandbox-server --bench server`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

const KEY: &str = "bench-key";
const SANDBOXES: usize = 50;
const ROUND_TRIPS: usize = 200;
const STREAM_BYTES: usize = 100 * 1024 * 1024;
const FILE_BYTES: usize = 256 * 1024 * 1024;

struct Bench {
    client: reqwest::Client,
    base: String,
}

impl Bench {
    async fn create(&self) -> Result<String> {
        let resp = self
            .client
            .post(format!("{}/v1/sandboxes", self.base))
            .header("OPEN-SANDBOX-API-KEY", KEY)
            .json(&json!({"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"]}))
            .send()
            .await?;
        let v: Value = resp.json().await?;
        v["id"]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("create failed: {v}"))
    }

    async fn endpoint(&self, id: &str) -> Result<(String, String)> {
        let v: Value = self
            .client
            .get(format!(
                "{}/v1/sandboxes/{id}/endpoints/44772?use_server_proxy=true",
                self.base
            ))
            .header("OPEN-SANDBOX-API-KEY", KEY)
            .send()
            .await?
            .json()
            .await?;
        let url = format!("http://{}", v["endpoint"].as_str().context("endpoint")?);
        let token = v["headers"]["X-EXECD-ACCESS-TOKEN"]
            .as_str()
            .context("token")?
            .to_string();
        Ok((url, token))
    }

    /// Runs a command; returns stdout bytes seen, once the terminal event arrives
    /// (execd keeps the stream open a moment after it; that is not latency).
    async fn run(&self, url: &str, token: &str, command: &str) -> Result<usize> {
        let mut resp = self
            .client
            .post(format!("{url}/command"))
            .header("X-EXECD-ACCESS-TOKEN", token)
            .json(&json!({ "command": command }))
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("command answered {}", resp.status());
        }
        let mut buf: Vec<u8> = Vec::new();
        let mut stdout = 0usize;
        while let Some(chunk) = resp.chunk().await? {
            buf.extend_from_slice(&chunk);
            while let Some(pos) = buf.windows(2).position(|w| w == b"\n\n") {
                let frame: Vec<u8> = buf.drain(..pos + 2).collect();
                let text = String::from_utf8_lossy(&frame);
                let text = text.trim().trim_start_matches("data:").trim();
                if text.is_empty() {
                    continue;
                }
                let event: Value = serde_json::from_str(text).context("event")?;
                match event["type"].as_str() {
                    Some("stdout") => stdout += event["text"].as_str().map_or(0, str::len) + 1,
                    Some("execution_complete") => return Ok(stdout),
                    Some("error") => bail!("command failed: {event}"),
                    _ => {}
                }
            }
        }
        Ok(stdout)
    }

    async fn delete(&self, id: &str) {
        let _ = self
            .client
            .delete(format!("{}/v1/sandboxes/{id}", self.base))
            .header("OPEN-SANDBOX-API-KEY", KEY)
            .send()
            .await;
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn mbps(bytes: usize, d: Duration) -> String {
    format!("{:.0} MB/s", bytes as f64 / 1e6 / d.as_secs_f64())
}

fn bwrap_usable() -> bool {
    Command::new("bwrap")
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--",
            "true",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[tokio::main]
async fn main() -> Result<()> {
    let data = tempfile::Builder::new().prefix("osb-bench").tempdir()?;
    let isolation = if bwrap_usable() { "bwrap" } else { "none" };
    let mut server = Command::new(env!("CARGO_BIN_EXE_opensandbox-server"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            KEY,
            "--isolation",
            isolation,
            "--log-level",
            "warn",
        ])
        .arg("--data-dir")
        .arg(data.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the server")?;
    let stdout = server.stdout.take().context("stdout")?;
    let mut addr = String::new();
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if let Some(a) = line.strip_prefix("opensandbox-server listening on ") {
            addr = a.to_string();
            break;
        }
    }
    if addr.is_empty() {
        bail!("the server did not start");
    }
    let bench = Bench {
        client: reqwest::Client::builder().no_proxy().build()?,
        base: format!("http://{addr}"),
    };
    println!("opensandbox-server benchmark (isolation: {isolation}, all traffic through the proxy route)");
    let result = run_all(&bench).await;
    let _ = server.kill();
    let _ = server.wait();
    // Sandboxes run in their own sessions: end whatever the deletes missed.
    let needle = data.path().to_string_lossy().into_owned();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
                if String::from_utf8_lossy(&cmd).contains(&needle) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
    }
    result
}

async fn run_all(bench: &Bench) -> Result<()> {
    // 1. Create → first command (and, for attribution, create alone).
    let mut latencies = Vec::new();
    let mut creates = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..SANDBOXES {
        let start = Instant::now();
        let id = bench.create().await?;
        creates.push(start.elapsed());
        let (url, token) = bench.endpoint(&id).await?;
        bench.run(&url, &token, "true").await?;
        latencies.push(start.elapsed());
        ids.push(id);
    }
    latencies.sort();
    creates.sort();
    println!(
        "create -> first command: p50 {}  p95 {}  (n={SANDBOXES}; target p50 <= 50 ms)",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.95))
    );
    println!(
        "  of which create (202 Running): p50 {}  p95 {}",
        ms(percentile(&creates, 0.5)),
        ms(percentile(&creates, 0.95))
    );
    let keep = ids.remove(0);
    for id in &ids {
        bench.delete(id).await;
    }

    // 2. `true` round trip on a warm sandbox.
    let (url, token) = bench.endpoint(&keep).await?;
    let mut trips = Vec::new();
    for _ in 0..ROUND_TRIPS {
        let start = Instant::now();
        bench.run(&url, &token, "true").await?;
        trips.push(start.elapsed());
    }
    trips.sort();
    println!(
        "`true` round trip: p50 {}  p95 {}  (n={ROUND_TRIPS})",
        ms(percentile(&trips, 0.5)),
        ms(percentile(&trips, 0.95))
    );

    // The proxy's own cost: GET /ping through it.
    let mut pings = Vec::new();
    for _ in 0..ROUND_TRIPS {
        let start = Instant::now();
        let resp = bench
            .client
            .get(format!("{url}/ping"))
            .header("X-EXECD-ACCESS-TOKEN", &token)
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("ping answered {}", resp.status());
        }
        pings.push(start.elapsed());
    }
    pings.sort();
    println!(
        "ping through the proxy: p50 {}  p95 {}  (n={ROUND_TRIPS})",
        ms(percentile(&pings, 0.5)),
        ms(percentile(&pings, 0.95))
    );

    // 3. stdout streaming: 100 MiB as 1 KiB lines.
    let line = "a".repeat(1023);
    let lines = STREAM_BYTES / 1024;
    let start = Instant::now();
    let seen = bench
        .run(&url, &token, &format!("yes {line} | head -n {lines}"))
        .await?;
    let took = start.elapsed();
    println!(
        "stdout streaming: {} ({} MiB of stdout in {}; target >= 100 MB/s)",
        mbps(seen, took),
        seen / (1024 * 1024),
        ms(took)
    );

    // 4. Upload 256 MiB.
    let data: Vec<u8> = (0..FILE_BYTES).map(|i| (i % 251) as u8).collect();
    let form = reqwest::multipart::Form::new()
        .part(
            "metadata",
            reqwest::multipart::Part::bytes(br#"{"path":"/workspace/bench.bin"}"#.to_vec())
                .file_name("metadata")
                .mime_str("application/json")?,
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(data)
                .file_name("bench.bin")
                .mime_str("application/octet-stream")?,
        );
    let start = Instant::now();
    let resp = bench
        .client
        .post(format!("{url}/files/upload"))
        .header("X-EXECD-ACCESS-TOKEN", &token)
        .multipart(form)
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!("upload answered {}", resp.status());
    }
    let took = start.elapsed();
    println!(
        "upload: {} (256 MiB in {}; target >= 200 MB/s)",
        mbps(FILE_BYTES, took),
        ms(took)
    );

    // 5. Download 256 MiB.
    let start = Instant::now();
    let mut resp = bench
        .client
        .get(format!("{url}/files/download"))
        .header("X-EXECD-ACCESS-TOKEN", &token)
        .query(&[("path", "/workspace/bench.bin")])
        .send()
        .await?;
    let mut got = 0usize;
    while let Some(chunk) = resp.chunk().await? {
        got += chunk.len();
    }
    let took = start.elapsed();
    if got != FILE_BYTES {
        bail!("download returned {got} bytes");
    }
    println!(
        "download: {} (256 MiB in {}; target >= 200 MB/s)",
        mbps(got, took),
        ms(took)
    );
    bench.delete(&keep).await;
    Ok(())
}
