//! `make bench-server`: starts the real server (release build) once per runtime that
//! works on this machine and measures, all through the proxy route:
//! - create → first command latency (p50/p95) from a cached image,
//! - the memory one idle sandbox costs the host,
//! - `true` command round trip and `/ping` through the proxy (p50/p95),
//! - stdout streaming (100 MiB) and upload/download (256 MiB) throughput,
//!
//! and, with Debian's `docker-registry` on loopback, the first pull (download,
//! verification and unpack) of a 30 MB image and of the 74 MB test image.
//!
//! Runtimes (`BENCH_RUNTIMES`, comma-separated; default: every one found):
//! - `bwrap`: bubblewrap over the host's directories,
//! - `runc`: the image under runc, rootfs on overlayfs, with the warm pool (the
//!   default: creates take containers started ahead of them),
//! - `runc-cold`: the same with `--warm-pool 0` (the runtime starts during the create),
//! - `runc-copy`: the same with the image copied into each rootfs (the fallback where
//!   overlayfs cannot be mounted),
//! - `crun`, `runsc`: when installed (and when they start a container here).
//!
//! OCI rows need root and `.work/images/debian-python` (scripts/build-image.sh).
//! `BENCH_QUICK=1` cuts the sample counts and skips the transfers.
//! Run: `cargo bench -p opensandbox-server --bench server`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use sha2::Digest;

const KEY: &str = "bench-key";
const STREAM_BYTES: usize = 100 * 1024 * 1024;
const FILE_BYTES: usize = 256 * 1024 * 1024;
const PULL_BYTES: usize = 30 * 1000 * 1000;
const SERVER: &str = env!("CARGO_BIN_EXE_opensandbox-server");

struct Sizes {
    sandboxes: usize,
    round_trips: usize,
    idle: usize,
    transfers: bool,
}

/// One server on one runtime, killed (with everything it started) on drop.
struct ServerProc {
    child: Child,
    data: tempfile::TempDir,
    base: String,
}

impl ServerProc {
    fn start(args: &[String]) -> Result<Self> {
        let data = tempfile::Builder::new().prefix("osb-bench").tempdir()?;
        let mut child = Command::new(SERVER)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--api-key",
                KEY,
                "--log-level",
                "warn",
            ])
            .args(args)
            .arg("--data-dir")
            .arg(data.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the server")?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut addr = String::new();
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            if let Some(a) = line.strip_prefix("opensandbox-server listening on ") {
                addr = a.to_string();
                break;
            }
        }
        let server = Self {
            child,
            data,
            base: format!("http://{addr}"),
        };
        if addr.is_empty() {
            bail!("the server did not start (arguments {args:?})");
        }
        Ok(server)
    }

    fn rss_bytes(&self) -> u64 {
        rss_of(self.child.id())
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        // SIGTERM first: the server stops its containers and unmounts their rootfs.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Whatever the server did not stop: processes naming the data dir.
        let needle = self.data.path().to_string_lossy().into_owned();
        for pid in pids() {
            if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
                if String::from_utf8_lossy(&cmd).contains(&needle) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
        }
        // Overlay rootfs mounts under the data dir, innermost first.
        if let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") {
            let mut targets: Vec<&str> = mounts
                .lines()
                .filter_map(|l| l.split_whitespace().nth(1))
                .filter(|t| t.starts_with(&needle))
                .collect();
            targets.sort_by_key(|t| std::cmp::Reverse(t.len()));
            for t in targets {
                let _ = Command::new("umount").arg("-l").arg(t).status();
            }
        }
    }
}

fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

fn rss_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Sum of the proportional set sizes of every descendant of `root` (not `root`).
fn descendants_pss(root: i32) -> u64 {
    let parents: Vec<(i32, i32)> = pids()
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`: comm may hold spaces, so split after ')'.
            let rest = stat.rsplit_once(')')?.1;
            let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    tree.iter()
        .skip(1)
        .filter_map(|pid| {
            let s = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
            s.lines()
                .find_map(|l| l.strip_prefix("Pss:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .sum()
}

struct Bench {
    client: reqwest::Client,
    base: String,
    image: String,
}

impl Bench {
    async fn create(&self) -> Result<String> {
        let resp = self
            .client
            .post(format!("{}/v1/sandboxes", self.base))
            .header("OPEN-SANDBOX-API-KEY", KEY)
            .json(&json!({
                "image": {"uri": self.image},
                "entrypoint": ["tail", "-f", "/dev/null"],
                "timeout": 3600,
            }))
            .send()
            .await?;
        let v: Value = resp.json().await?;
        if v["status"]["state"] != "Running" {
            bail!("create did not answer Running: {v}");
        }
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

    /// Runs a command; returns the stdout bytes seen, once the terminal event arrives
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
                    // Either framing: lines without their terminator, or kept.
                    Some("stdout") => {
                        let t = event["text"].as_str().unwrap_or_default();
                        stdout += t.len() + usize::from(!t.ends_with('\n'));
                    }
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
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn p50_p95(mut v: Vec<Duration>) -> String {
    v.sort();
    format!(
        "p50 {}  p95 {}",
        ms(percentile(&v, 0.5)),
        ms(percentile(&v, 0.95))
    )
}

fn mbps(bytes: usize, d: Duration) -> String {
    format!("{:.0} MB/s", bytes as f64 / 1e6 / d.as_secs_f64())
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
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

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(name).is_file()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// A runtime to measure: its name, the server's flags, the image to create from.
struct Scenario {
    name: &'static str,
    args: Vec<String>,
    image: String,
}

fn scenarios() -> (Vec<Scenario>, Vec<String>) {
    let wanted: Option<Vec<String>> = std::env::var("BENCH_RUNTIMES")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let wants = |n: &str| wanted.as_ref().is_none_or(|w| w.iter().any(|x| x == n));
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    if wants("bwrap") {
        if bwrap_usable() {
            out.push(Scenario {
                name: "bwrap",
                args: vec!["--runtime".into(), "bwrap".into()],
                image: "python:3.11".into(),
            });
        } else {
            skipped.push("bwrap: bubblewrap cannot create namespaces here".into());
        }
    }
    let layout = repo_root().join(".work/images/debian-python");
    let oci_image = format!("oci:{}:latest", layout.display());
    let oci_ready = if !nix::unistd::geteuid().is_root() {
        Err("not root".to_string())
    } else if !layout.join("index.json").is_file() {
        Err(format!(
            "no image at {} (scripts/build-image.sh)",
            layout.display()
        ))
    } else {
        Ok(())
    };
    // (scenario, runtime, extra server flags): runc with its warm pool (the default),
    // runc starting every sandbox during its request, runc without overlayfs.
    let oci: [(&str, &str, &[&str]); 5] = [
        ("runc", "runc", &[]),
        ("runc-cold", "runc", &["--warm-pool", "0"]),
        ("runc-copy", "runc", &["--oci-copy-rootfs"]),
        ("crun", "crun", &[]),
        ("runsc", "runsc", &[]),
    ];
    for (name, runtime, extra) in oci {
        if !wants(name) {
            continue;
        }
        if let Err(why) = &oci_ready {
            skipped.push(format!("{name}: {why}"));
            continue;
        }
        if !on_path(runtime) {
            skipped.push(format!("{name}: {runtime} is not installed"));
            continue;
        }
        let mut args = vec!["--runtime".to_string(), runtime.to_string()];
        args.extend(extra.iter().map(|a| a.to_string()));
        out.push(Scenario {
            name,
            args,
            image: oci_image.clone(),
        });
    }
    (out, skipped)
}

#[tokio::main]
async fn main() -> Result<()> {
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let sizes = Sizes {
        sandboxes: if quick { 10 } else { 40 },
        round_trips: if quick { 50 } else { 200 },
        idle: if quick { 5 } else { 10 },
        transfers: !quick,
    };
    println!("opensandbox-server benchmark (release build, all traffic through the proxy route)");
    let (scenarios, skipped) = scenarios();
    for why in &skipped {
        println!("skipped {why}");
    }
    let mut failed = false;
    for s in &scenarios {
        println!("\n== runtime {} ({})", s.name, s.args.join(" "));
        match ServerProc::start(&s.args) {
            // A runtime that is installed but refuses this host (crun 1.8 on a hybrid
            // cgroup layout): a figure of this machine, not a failure of the bench.
            Err(err) => println!(
                "  not usable here (the server's start-up probe refused it, reason above): {err:#}"
            ),
            Ok(server) => {
                let bench = Bench {
                    client: reqwest::Client::builder().no_proxy().build()?,
                    base: server.base.clone(),
                    image: s.image.clone(),
                };
                if let Err(err) = measure(&bench, &server, &sizes).await {
                    println!("  FAILED: {err:#}");
                    failed = true;
                }
            }
        }
    }
    println!();
    if let Err(err) = pulls().await {
        println!("first pull: not measured: {err:#}");
    }
    if failed {
        bail!("some runtimes failed (above)");
    }
    Ok(())
}

async fn measure(bench: &Bench, server: &ServerProc, sizes: &Sizes) -> Result<()> {
    // The first create unpacks the image into the cache: not what is measured.
    let warm = bench.create().await?;
    bench.delete(&warm).await;

    // 1. Create → first command (and, for attribution, create alone).
    let mut latencies = Vec::new();
    let mut creates = Vec::new();
    for _ in 0..sizes.sandboxes {
        let start = Instant::now();
        let id = bench.create().await?;
        creates.push(start.elapsed());
        let (url, token) = bench.endpoint(&id).await?;
        bench.run(&url, &token, "true").await?;
        latencies.push(start.elapsed());
        bench.delete(&id).await;
    }
    println!(
        "  create -> first command: {}  (n={}; target p50 <= 50 ms)",
        p50_p95(latencies),
        sizes.sandboxes
    );
    println!("    of which create (202 Running): {}", p50_p95(creates));

    // 2. What an idle sandbox costs the host: the proportional set size of the
    // processes it adds (the runtime's, the agent's, the entrypoint's: every process
    // under the server), and the server's own growth.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server_pid = server.child.id() as i32;
    let (pss_before, rss_before) = (descendants_pss(server_pid), server.rss_bytes());
    let mut idle = Vec::new();
    for _ in 0..sizes.idle {
        idle.push(bench.create().await?);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (pss_after, rss_after) = (descendants_pss(server_pid), server.rss_bytes());
    let n = sizes.idle as f64;
    println!(
        "  memory per idle sandbox: {} (PSS of its processes on the host) + {} of server growth  (n={}, entrypoint `tail -f /dev/null`)",
        mib(pss_after.saturating_sub(pss_before) as f64 / n),
        mib(rss_after.saturating_sub(rss_before) as f64 / n),
        sizes.idle
    );
    let keep = idle.remove(0);
    for id in &idle {
        bench.delete(id).await;
    }

    // 3. `true` round trip on a warm sandbox, and the proxy's own cost.
    let (url, token) = bench.endpoint(&keep).await?;
    let mut trips = Vec::new();
    for _ in 0..sizes.round_trips {
        let start = Instant::now();
        bench.run(&url, &token, "true").await?;
        trips.push(start.elapsed());
    }
    println!(
        "  `true` round trip: {}  (n={})",
        p50_p95(trips),
        sizes.round_trips
    );
    let mut pings = Vec::new();
    for _ in 0..sizes.round_trips {
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
    println!(
        "  ping through the proxy: {}  (n={})",
        p50_p95(pings),
        sizes.round_trips
    );
    if sizes.transfers {
        transfers(bench, &url, &token).await?;
    }
    bench.delete(&keep).await;
    Ok(())
}

async fn transfers(bench: &Bench, url: &str, token: &str) -> Result<()> {
    // stdout streaming: 100 MiB as 1 KiB lines.
    let line = "a".repeat(1023);
    let lines = STREAM_BYTES / 1024;
    let start = Instant::now();
    let seen = bench
        .run(url, token, &format!("yes {line} | head -n {lines}"))
        .await?;
    let took = start.elapsed();
    println!(
        "  stdout streaming: {} ({} MiB in {}; target >= 100 MB/s)",
        mbps(seen, took),
        seen / (1024 * 1024),
        ms(took)
    );

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
        .header("X-EXECD-ACCESS-TOKEN", token)
        .multipart(form)
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!("upload answered {}", resp.status());
    }
    let took = start.elapsed();
    println!(
        "  upload: {} (256 MiB in {}; target >= 200 MB/s)",
        mbps(FILE_BYTES, took),
        ms(took)
    );

    let start = Instant::now();
    let mut resp = bench
        .client
        .get(format!("{url}/files/download"))
        .header("X-EXECD-ACCESS-TOKEN", token)
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
        "  download: {} (256 MiB in {}; target >= 200 MB/s)",
        mbps(got, took),
        ms(took)
    );
    Ok(())
}

/// The loopback registry of scripts/local-registry.sh, stopped on drop.
struct Registry {
    dir: tempfile::TempDir,
    addr: String,
}

impl Registry {
    fn start() -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("osb-bench-reg").tempdir()?;
        let out = Command::new(repo_root().join("scripts/local-registry.sh"))
            .arg("start")
            .arg(dir.path())
            .arg(SERVER)
            // One blank: no names to push (an empty value means the defaults).
            .env("REGISTRY_IMAGES", " ")
            .stderr(Stdio::inherit())
            .output()
            .context("running scripts/local-registry.sh")?;
        if !out.status.success() {
            bail!("scripts/local-registry.sh failed ({})", out.status);
        }
        let addr = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(Self { dir, addr })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = Command::new(repo_root().join("scripts/local-registry.sh"))
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}

fn write_blob(layout: &Path, bytes: &[u8]) -> Result<(String, usize)> {
    let hex = format!("{:x}", sha2::Sha256::digest(bytes));
    std::fs::write(layout.join("blobs/sha256").join(&hex), bytes)?;
    Ok((format!("sha256:{hex}"), bytes.len()))
}

/// An OCI layout whose one layer is a gzip'd tar of `bytes` of random data (random,
/// so the download really is that size).
fn synthetic_layout(dir: &Path, bytes: usize) -> Result<()> {
    use rand::RngCore;
    std::fs::create_dir_all(dir.join("blobs/sha256"))?;
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    let mut payload = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut payload);
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(payload.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "payload.bin", payload.as_slice())?;
    let tar = tar.into_inner()?;
    let diff_id = format!("sha256:{:x}", sha2::Sha256::digest(&tar));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar)?;
    let (layer, layer_size) = write_blob(dir, &gz.finish()?)?;
    let config = json!({
        "architecture": "amd64", "os": "linux",
        "config": {"Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    });
    let (config, config_size) = write_blob(dir, &serde_json::to_vec(&config)?)?;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config, "size": config_size},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": layer, "size": layer_size}],
    });
    let (manifest, manifest_size) = write_blob(dir, &serde_json::to_vec(&manifest)?)?;
    let index = json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest, "size": manifest_size,
            "annotations": {"org.opencontainers.image.ref.name": "latest"},
        }],
    });
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index)?)?;
    Ok(())
}

fn blobs_size(layout: &Path) -> u64 {
    std::fs::read_dir(layout.join("blobs/sha256"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// First pull (download, digest checks, unpack) into an empty cache, through
/// `opensandbox-server images pull`, as a create naming the image would do it.
async fn pulls() -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!("not root (unpacking shifts owners)");
    }
    if !on_path("docker-registry") {
        bail!("docker-registry is not installed (apt-get install docker-registry)");
    }
    let registry = Registry::start()?;
    let work = tempfile::Builder::new()
        .prefix("osb-bench-pull")
        .tempdir()?;
    let synthetic = work.path().join("synthetic");
    synthetic_layout(&synthetic, PULL_BYTES)?;
    let mut images = vec![("30 MB image (one random layer)", synthetic)];
    let test_image = repo_root().join(".work/images/debian-python");
    if test_image.join("index.json").is_file() {
        images.push(("debian-python test image", test_image));
    }
    for (label, layout) in images {
        let reference = format!("{}/bench/pull:{}", registry.addr, label.len());
        let pushed = Command::new(SERVER)
            .args(["images", "push"])
            .arg(format!("oci:{}:latest", layout.display()))
            .arg(&reference)
            .stdout(Stdio::null())
            .status()?;
        if !pushed.success() {
            bail!("pushing {label} failed ({pushed})");
        }
        let cache = work.path().join(format!("cache-{}", label.len()));
        let start = Instant::now();
        let pulled = Command::new(SERVER)
            .args(["images", "pull", &reference, "--data-dir"])
            .arg(&cache)
            .stdout(Stdio::null())
            .status()?;
        let took = start.elapsed();
        if !pulled.success() {
            bail!("pulling {label} failed ({pulled})");
        }
        let size = blobs_size(&layout) as usize;
        println!(
            "first pull of the {label}, {} compressed, from the loopback registry: {} ({})",
            mib(size as f64),
            ms(took),
            mbps(size, took)
        );
    }
    Ok(())
}
