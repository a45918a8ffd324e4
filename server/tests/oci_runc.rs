//! The standard-OCI-runtime backend under runc: the image really runs, and the
//! sandbox cannot undo its isolation (capabilities, id mapping, remount, limits,
//! freezer, cleanup).
//!
//! Gated: each test prints why and passes when this machine cannot run it (not root,
//! no `runc`, or no local image: build it with `scripts/build-image.sh`; another
//! layout can be named with `OSB_TEST_IMAGE=oci:/abs/layout:tag`).

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::Server;
use serde_json::{json, Value};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The image URI to test with, or why these tests cannot run here.
fn runc_image() -> Result<String, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not root (runc with cgroup limits needs root)".into());
    }
    let has_runc = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("runc").is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin/runc").is_file();
    if !has_runc {
        return Err("runc is not installed (apt-get install runc)".into());
    }
    if let Ok(uri) = std::env::var("OSB_TEST_IMAGE") {
        return Ok(uri);
    }
    let layout = repo_root().join(".work/images/debian-python");
    if !layout.join("index.json").is_file() {
        return Err(format!(
            "no local image at {} (run scripts/build-image.sh)",
            layout.display()
        ));
    }
    Ok(format!("oci:{}:latest", layout.display()))
}

macro_rules! need_runc {
    () => {
        match runc_image() {
            Ok(uri) => uri,
            Err(why) => {
                eprintln!("SKIPPED (runc backend): {why}");
                return;
            }
        }
    };
}

/// A server on the runc backend; on drop, removes any container and mount left.
struct RuncServer {
    server: Server,
    image: String,
}

impl RuncServer {
    fn start(image: &str) -> Self {
        Self::start_with(image, &[])
    }

    fn start_with(image: &str, extra: &[&str]) -> Self {
        let mut args = vec!["--isolation", "auto", "--runtime", "runc"];
        args.extend_from_slice(extra);
        let server = Server::start(&args);
        Self {
            server,
            image: image.to_string(),
        }
    }

    async fn create_with(&self, extra: Value) -> Value {
        let mut body = json!({
            "image": {"uri": self.image},
            "entrypoint": ["sleep", "infinity"],
            "timeout": 600,
        });
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        let resp = self
            .server
            .post("/v1/sandboxes")
            .json(&body)
            .send()
            .await
            .expect("create");
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.expect("json");
        assert_eq!(status, 202, "create: {v}\n{}", self.server.log());
        assert_eq!(
            v["status"]["state"],
            "Running",
            "{v}\n{}",
            self.server.log()
        );
        v
    }

    async fn create(&self, extra: Value) -> String {
        self.create_with(extra).await["id"]
            .as_str()
            .expect("id")
            .to_string()
    }

    /// Runs a command; stdout joined by newlines and the exit code.
    async fn sh(&self, id: &str, command: &str) -> (String, Option<i64>) {
        let (lines, code) = self.server.run(id, command).await;
        (lines.join("\n"), code)
    }

    fn cgroup_file(&self, controller: &str, id: &str, file: &str) -> PathBuf {
        PathBuf::from(format!(
            "/sys/fs/cgroup/{controller}/opensandbox/{id}/{file}"
        ))
    }
}

impl Drop for RuncServer {
    fn drop(&mut self) {
        let state = self.server.data_dir.join("oci/state");
        if let Ok(entries) = std::fs::read_dir(&state) {
            for e in entries.flatten() {
                let _ = std::process::Command::new("runc")
                    .arg("--root")
                    .arg(&state)
                    .args(["delete", "--force"])
                    .arg(e.file_name())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
        }
        let needle = self.server.data_dir.to_string_lossy().into_owned();
        if let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") {
            for line in mounts.lines() {
                if let Some(target) = line.split(' ').nth(1) {
                    if target.starts_with(&needle) {
                        let _ = std::process::Command::new("umount")
                            .args(["-l", target])
                            .status();
                    }
                }
            }
        }
    }
}

/// Host pids of the processes in a sandbox's cgroup (v1 `pids` controller).
fn cgroup_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}

#[tokio::test]
async fn runc_runs_the_image_and_keeps_root_unprivileged() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;

    // The image's Python, not the host's; the host's tree is not visible.
    let (out, code) = s.sh(&id, "python3 --version").await;
    assert_eq!(code, Some(0));
    assert!(out.starts_with("Python 3."), "{out}");
    let (out, _) = s
        .sh(
            &id,
            "test -e /work && echo HOST-VISIBLE; grep -c bookworm /etc/os-release",
        )
        .await;
    assert!(!out.contains("HOST-VISIBLE"), "{out}");

    // Root inside is an unprivileged host id, with Docker's default capabilities.
    let (out, _) = s.sh(&id, "cat /proc/self/uid_map").await;
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(fields.first(), Some(&"0"), "{out}");
    assert_ne!(fields.get(1), Some(&"0"), "root is host root: {out}");
    assert_eq!(fields.get(2), Some(&"65536"), "{out}");
    let (out, _) = s
        .sh(&id, "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status")
        .await;
    assert!(out.contains("CapEff:\t00000000a80425fb"), "{out}");
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    // A non-root user of the image has no capabilities at all.
    let (out, _) = s
        .sh(
            &id,
            "python3 -c \"import os; os.setgid(65534); os.setuid(65534); \
             print([l for l in open('/proc/self/status') if l.startswith('CapEff')][0].strip())\"",
        )
        .await;
    assert_eq!(out, "CapEff:\t0000000000000000");
    // chown to any user of the image works (a full 65536-id range is mapped).
    let (out, code) = s
        .sh(
            &id,
            "touch /tmp/f && chown 1234:5678 /tmp/f && stat -c %u:%g /tmp/f",
        )
        .await;
    assert_eq!((out.as_str(), code), ("1234:5678", Some(0)));

    // The sandbox cannot undo its mounts nor write kernel settings.
    let (_, code) = s.sh(&id, "mount -o remount,rw /").await;
    assert_ne!(code, Some(0), "remount of / succeeded");
    let (_, code) = s.sh(&id, "mount -o remount,bind,rw /workspace").await;
    assert_ne!(code, Some(0), "remount of /workspace succeeded");
    let (_, code) = s.sh(&id, "echo x > /proc/sys/kernel/core_pattern").await;
    assert_ne!(code, Some(0), "wrote /proc/sys");
    let (_, code) = s
        .sh(&id, "cat /etc/shadow >/dev/null && mknod /tmp/sda b 8 0")
        .await;
    assert_ne!(code, Some(0), "mknod of a block device succeeded");

    // A setuid file made inside is not setuid-root on the host.
    let (_, code) = s
        .sh(
            &id,
            "cp /bin/true /workspace/su && chmod 4755 /workspace/su",
        )
        .await;
    assert_eq!(code, Some(0));
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(s.server.sandbox_fs(&id).join("workspace/su")).expect("su");
    assert_ne!(
        meta.uid(),
        0,
        "a sandbox made a root-owned file on the host"
    );

    let resp = s
        .server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
}

#[tokio::test]
async fn runc_pids_and_memory_limits_hold() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s
        .create(json!({"resourceLimits": {"memory": "128Mi", "pids": "64", "cpu": "500m"}}))
        .await;
    let limit = std::fs::read_to_string(s.cgroup_file("memory", &id, "memory.limit_in_bytes"))
        .or_else(|_| std::fs::read_to_string(format!("/sys/fs/cgroup/opensandbox/{id}/memory.max")))
        .unwrap_or_default();
    assert_eq!(limit.trim(), (128u64 << 20).to_string());

    // A fork bomb stops at the pids limit; the sandbox and the server stay usable.
    let bomb = "python3 -c \"
import os, time
n = 0
try:
    while n < 10000:
        if os.fork() == 0:
            time.sleep(3); os._exit(0)
        n += 1
except OSError as e:
    print('stopped', n, e.errno)
\"";
    let started = Instant::now();
    let (out, _) = s.sh(&id, bomb).await;
    let n: i64 = out
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(i64::MAX);
    assert!(out.starts_with("stopped") && n < 64, "fork bomb: {out}");
    assert!(started.elapsed() < Duration::from_secs(15));
    let health = s.server.get("/health").send().await.expect("health");
    assert!(health.status().is_success());
    // Let the sleepers end, then allocate past the memory limit: the command is
    // killed, the sandbox and the server survive.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (_, code) = s
        .sh(
            &id,
            "python3 -c \"b = b'x' * (512 * 1024 * 1024); print(len(b))\"",
        )
        .await;
    assert_ne!(
        code,
        Some(0),
        "allocating 512 MiB under a 128 MiB limit succeeded"
    );
    let (out, code) = s.sh(&id, "echo still-here").await;
    assert_eq!((out.as_str(), code), ("still-here", Some(0)));
    let sb = s.server.sandbox(&id).await;
    assert_eq!(sb["status"]["state"], "Running");
    // cgroup v1 counts the kill in memory.oom_control.
    if let Ok(oom) = std::fs::read_to_string(s.cgroup_file("memory", &id, "memory.oom_control")) {
        let kills: u64 = oom
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        assert!(kills >= 1, "no OOM kill recorded: {oom}");
    }
}

#[tokio::test]
async fn runc_runs_a_docker_archive() {
    let image = need_runc!();
    let Some(layout) = image.strip_prefix("oci:") else {
        eprintln!("SKIPPED: OSB_TEST_IMAGE is not an oci: layout");
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let archive = tmp.path().join("image.tar");
    let made = std::process::Command::new("skopeo")
        .arg("copy")
        .arg(format!("oci:{layout}"))
        .arg(format!("docker-archive:{}", archive.display()))
        .stdout(std::process::Stdio::null())
        .status();
    if !made.map(|s| s.success()).unwrap_or(false) {
        eprintln!("SKIPPED (docker-archive): skopeo is missing or failed (apt-get install skopeo)");
        return;
    }
    let s = RuncServer::start(&format!("docker-archive:{}", archive.display()));
    let id = s.create(json!({})).await;
    let (out, code) = s.sh(&id, "python3 --version").await;
    assert_eq!(code, Some(0));
    assert!(out.starts_with("Python 3."), "{out}");
}

#[tokio::test]
async fn runc_pause_freezes_and_delete_leaves_nothing() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let (_, code) = s.sh(&id, "nohup sleep 4242 >/dev/null 2>&1 &").await;
    assert_eq!(code, Some(0));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let procs = s.cgroup_file("pids", &id, "cgroup.procs");
    assert!(!cgroup_pids(&procs).is_empty());

    let resp = s
        .server
        .post(&format!("/v1/sandboxes/{id}/pause"))
        .send()
        .await
        .expect("pause");
    assert_eq!(resp.status().as_u16(), 202);
    let state =
        std::fs::read_to_string(s.cgroup_file("freezer", &id, "freezer.state")).unwrap_or_default();
    assert_eq!(state.trim(), "FROZEN");
    for pid in cgroup_pids(&procs) {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        assert!(
            stat.contains("State:\tD") || stat.contains("State:\tS") || stat.contains("State:\tT"),
            "{stat}"
        );
    }
    let resp = s
        .server
        .post(&format!("/v1/sandboxes/{id}/resume"))
        .send()
        .await
        .expect("resume");
    assert_eq!(resp.status().as_u16(), 202);
    let state =
        std::fs::read_to_string(s.cgroup_file("freezer", &id, "freezer.state")).unwrap_or_default();
    assert_eq!(state.trim(), "THAWED");
    let (out, _) = s.sh(&id, "echo thawed").await;
    assert_eq!(out, "thawed");

    assert!(!processes_mentioning("sleep 4242").is_empty());
    let resp = s
        .server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        processes_mentioning("sleep 4242").is_empty(),
        "a background process outlived DELETE"
    );
    assert!(!procs.exists(), "the sandbox's cgroup outlived DELETE");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    assert!(
        !mounts.contains(&id),
        "the sandbox's rootfs is still mounted"
    );
}

#[tokio::test]
async fn runc_entrypoint_exit_kills_background_processes() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let v = s
        .create_with(json!({"entrypoint": ["sh", "-c", "sleep 4343 & sleep 1; exit 3"]}))
        .await;
    let id = v["id"].as_str().expect("id").to_string();
    let sb = s
        .server
        .wait_for(&id, "the entrypoint's end", |v| {
            v["status"]["state"] == "Failed" || v["status"]["state"] == "Terminated"
        })
        .await;
    assert_eq!(sb["status"]["state"], "Failed", "{sb}");
    let msg = sb["status"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("code 3"), "{sb}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        processes_mentioning("sleep 4343").is_empty(),
        "a background process outlived its entrypoint"
    );
}

#[tokio::test]
async fn runc_image_errors_are_image_pull_failed() {
    let _ = need_runc!();
    let s = RuncServer::start("unused");
    // A registry that refuses connections, a layout that does not exist.
    for uri in [
        "127.0.0.1:1/nothing:latest",
        "oci:/nonexistent/layout:latest",
    ] {
        let resp = s
            .server
            .post("/v1/sandboxes")
            .json(&json!({"image": {"uri": uri}, "entrypoint": ["true"]}))
            .send()
            .await
            .expect("create");
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.expect("json");
        assert_eq!(status, 400, "{uri}: {v}");
        assert_eq!(v["code"], "SANDBOX::IMAGE_PULL_FAILED", "{uri}: {v}");
    }
    let resp = s
        .server
        .post("/v1/sandboxes")
        .json(&json!({"image": {"uri": "oci:/x"}, "entrypoint": ["true"],
                      "resourceLimits": {"memory": "lots"}}))
        .send()
        .await
        .expect("create");
    assert_eq!(
        resp.status().as_u16(),
        400,
        "an invalid memory limit was accepted"
    );
}

#[tokio::test]
async fn runc_sandbox_survives_a_server_restart() {
    let image = need_runc!();
    let mut s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    s.server.kill_server_only();
    let data_dir = s.server.data_dir.clone();
    let extra: Vec<String> = s.server.extra_args.clone();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let restarted = Server::start_in(&data_dir, &extra);
    let old = std::mem::replace(&mut s.server, restarted);
    // The old handle owns the temp dir: keep it alive until the end of the test.
    let (out, code) = s.sh(&id, "echo adopted").await;
    assert_eq!((out.as_str(), code), ("adopted", Some(0)));
    let resp = s
        .server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    drop(s);
    drop(old);
}

/// Create → first command latency from a cached image (printed; the target is
/// ≤ 50 ms p50).
#[tokio::test]
async fn runc_create_to_first_command_latency() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    // Warm the cache (first unpack).
    let id = s.create(json!({})).await;
    let _ = s.server.delete(&format!("/v1/sandboxes/{id}")).send().await;
    let mut samples = Vec::new();
    for _ in 0..15 {
        let t0 = Instant::now();
        let id = s.create(json!({})).await;
        let (out, code) = s.sh(&id, "echo ready").await;
        samples.push(t0.elapsed());
        assert_eq!((out.as_str(), code), ("ready", Some(0)));
        let _ = s.server.delete(&format!("/v1/sandboxes/{id}")).send().await;
    }
    samples.sort();
    let p = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    eprintln!(
        "runc create -> first command: p50 {:?}, p95 {:?}, min {:?}, max {:?} ({} samples)",
        p(0.5),
        p(0.95),
        samples[0],
        samples[samples.len() - 1],
        samples.len()
    );
}

/// A sandbox whose recorded process is gone when the server starts again (as after a
/// crash during create, before the pid was stored) is found by its container id and
/// deleted: nothing of it keeps running.
#[tokio::test]
async fn runc_lost_sandbox_is_deleted_on_restart() {
    let image = need_runc!();
    let mut s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let procs = s.cgroup_file("pids", &id, "cgroup.procs");
    s.server.kill_server_only();
    // Kill the runtime process the record points at; the container itself lives on.
    for pid in processes_mentioning(&format!("--preserve-fds 2 {id}")) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !cgroup_pids(&procs).is_empty(),
        "the container died with its runtime process"
    );
    let data_dir = s.server.data_dir.clone();
    let extra: Vec<String> = s.server.extra_args.clone();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let restarted = Server::start_in(&data_dir, &extra);
    let old = std::mem::replace(&mut s.server, restarted);
    let sb = s.server.sandbox(&id).await;
    assert_eq!(sb["status"]["state"], "Failed", "{sb}");
    assert_eq!(sb["status"]["reason"], "SERVER_RESTARTED", "{sb}");
    assert!(
        !procs.exists() || cgroup_pids(&procs).is_empty(),
        "processes of a lost sandbox still run after the restart"
    );
    drop(s);
    drop(old);
}

/// Pulls through the registry API from a loopback `docker-registry` (Debian package),
/// fed by skopeo from the local layout: by its own name, and as a Docker Hub name
/// through `--registry-mirror`.
#[tokio::test]
async fn runc_pulls_from_a_loopback_registry() {
    let image = need_runc!();
    let Some(layout) = image.strip_prefix("oci:") else {
        eprintln!("SKIPPED: OSB_TEST_IMAGE is not an oci: layout");
        return;
    };
    if !Path::new("/usr/bin/docker-registry").is_file() {
        eprintln!("SKIPPED (registry): docker-registry is not installed (apt-get install docker-registry)");
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port");
    let tmp = tempfile::tempdir().expect("tmp");
    let config = tmp.path().join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            tmp.path().join("data").display()
        ),
    )
    .expect("config");
    let mut registry = std::process::Command::new("/usr/bin/docker-registry")
        .arg("serve")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("docker-registry");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let client = reqwest::Client::new();
    let mut up = false;
    for _ in 0..100 {
        if client
            .get(format!("http://127.0.0.1:{port}/v2/"))
            .send()
            .await
            .map(|r| r.status().is_success())
            .unwrap_or(false)
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !up {
        let _ = registry.kill();
        panic!("docker-registry did not come up");
    }
    let registry = Kill(registry);
    let pushed = std::process::Command::new("skopeo")
        .args(["copy", "--dest-tls-verify=false"])
        .arg(format!("oci:{layout}"))
        .arg(format!(
            "docker://127.0.0.1:{port}/library/debian-python:latest"
        ))
        .stdout(std::process::Stdio::null())
        .status();
    if !pushed.map(|s| s.success()).unwrap_or(false) {
        eprintln!("SKIPPED (registry): skopeo is missing or could not push");
        return;
    }
    let mirror = format!("127.0.0.1:{port}");
    let s = RuncServer::start_with("unused", &["--registry-mirror", &mirror]);
    for uri in [
        format!("127.0.0.1:{port}/library/debian-python:latest"),
        "debian-python:latest".to_string(),
    ] {
        let t0 = Instant::now();
        let v = s.create_with(json!({"image": {"uri": uri}})).await;
        eprintln!("create from {uri}: {:?}", t0.elapsed());
        let id = v["id"].as_str().expect("id").to_string();
        let (out, code) = s.sh(&id, "python3 --version").await;
        assert_eq!(code, Some(0), "{uri}");
        assert!(out.starts_with("Python 3."), "{uri}: {out}");
    }
    drop(s);
    drop(registry);
}
