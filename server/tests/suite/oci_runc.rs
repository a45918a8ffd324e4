//! The standard-OCI-runtime backend under runc: the image really runs, and the
//! sandbox cannot undo its isolation (capabilities, id mapping, remount, limits,
//! freezer, cleanup).
//!
//! Gated: each test prints why and passes when this machine cannot run it (not root,
//! no `runc`, or no local image: build it with `scripts/build-image.sh`; another
//! layout can be named with `OSB_TEST_IMAGE=oci:/abs/layout:tag`).

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::runc::RuncServer;
use common::Server;
use serde_json::{json, Value};

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
    // Docker's default set less CAP_NET_RAW (bit 13).
    assert!(out.contains("CapEff:\t00000000a80405fb"), "{out}");
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

/// `resourceLimits.disk`: the writable layer and the bound directories live on a
/// loop-mounted ext4 of that size; writing past it is ENOSPC inside, the host's file
/// stays at the limit, and the sandbox keeps working.
#[tokio::test]
async fn runc_disk_limit_caps_the_writable_storage() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({"resourceLimits": {"disk": "64Mi"}})).await;
    let (out, _) = s
        .sh(&id, "dd if=/dev/zero of=/workspace/big bs=1M count=200 2>&1 | grep -o 'No space left'; df -k /workspace | tail -1")
        .await;
    assert!(out.contains("No space left"), "{out}");
    let (out, _) = s
        .sh(
            &id,
            "dd if=/dev/zero of=/usr/big2 bs=1M count=200 2>&1 | grep -o 'No space left'",
        )
        .await;
    assert!(out.contains("No space left"), "writable layer: {out}");
    let (out, _) = s
        .sh(
            &id,
            "dd if=/dev/zero of=/tmp/big3 bs=1M count=200 2>&1 | grep -o 'No space left'",
        )
        .await;
    assert!(out.contains("No space left"), "/tmp: {out}");
    let img = s
        .server
        .data_dir
        .join(format!("sandboxes/{id}/oci/disk.img"));
    let meta = std::fs::metadata(&img).expect("disk.img");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(meta.len(), 64 << 20);
    assert!(meta.blocks() * 512 <= 64 << 20);
    // The host-side view (snapshots, files API) still sees the sandbox's files.
    assert!(s.server.sandbox_fs(&id).join("workspace/big").is_file());
    let (out, code) = s
        .sh(&id, "rm /workspace/big /usr/big2 /tmp/big3 && echo ok")
        .await;
    assert_eq!((out.as_str(), code), ("ok", Some(0)));
    let resp = s
        .server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    assert!(!mounts.contains(&id), "a disk mount outlived DELETE");
}

/// Defaults from flags; a request above a maximum is a 400 naming the limit.
#[tokio::test]
async fn runc_default_and_maximum_limits() {
    let image = need_runc!();
    let s = RuncServer::start_with(
        &image,
        &[
            "--default-memory",
            "200Mi",
            "--default-pids",
            "77",
            "--max-cpu",
            "1",
            "--max-memory",
            "300Mi",
        ],
    );
    let id = s.create(json!({})).await;
    let limit = std::fs::read_to_string(s.cgroup_file("memory", &id, "memory.limit_in_bytes"))
        .unwrap_or_default();
    assert_eq!(limit.trim(), (200u64 << 20).to_string());
    let pids = std::fs::read_to_string(s.cgroup_file("pids", &id, "pids.max")).unwrap_or_default();
    assert_eq!(pids.trim(), "77");
    let quota =
        std::fs::read_to_string(s.cgroup_file("cpu", &id, "cpu.cfs_quota_us")).unwrap_or_default();
    assert_eq!(quota.trim(), "100000");
    for (limits, named) in [
        (json!({"cpu": "2"}), "resourceLimits.cpu"),
        (json!({"memory": "1Gi"}), "resourceLimits.memory"),
        (json!({"gpu": "1"}), "resourceLimits.gpu"),
    ] {
        let resp = s
            .server
            .post("/v1/sandboxes")
            .json(&json!({"image": {"uri": s.image}, "entrypoint": ["true"], "resourceLimits": limits}))
            .send()
            .await
            .expect("create");
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.expect("json");
        assert_eq!(status, 400, "{v}");
        assert!(
            v["message"].as_str().unwrap_or_default().contains(named),
            "{v}"
        );
    }
}

/// `/metrics` under runc is the sandbox's cgroup: its memory limit and use, its CPU
/// allowance and use; not the host's.
#[tokio::test]
async fn runc_metrics_are_the_sandboxs_own() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s
        .create(json!({"resourceLimits": {"memory": "256Mi", "cpu": "500m"}}))
        .await;
    let (url, headers) = s.server.endpoint(&id, common::EXECD_PORT).await;
    let get = |path: &str| {
        let mut req = s.server.client.get(format!("{url}{path}"));
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        req
    };
    let m: Value = get("/metrics")
        .send()
        .await
        .expect("metrics")
        .json()
        .await
        .expect("json");
    assert_eq!(m["mem_total_mib"], 256.0, "{m}");
    assert_eq!(m["cpu_count"], 0.5, "{m}");
    let idle_used = m["mem_used_mib"].as_f64().unwrap_or(-1.0);
    assert!((0.0..64.0).contains(&idle_used), "{m}");
    // Hold 100 MiB and burn CPU in the background: both show.
    let (_, code) = s
        .sh(&id, "nohup python3 -c \"b = bytearray(100 << 20)\nfor i in range(len(b) // 4096): b[i * 4096] = 1\nwhile True: pass\" >/dev/null 2>&1 &")
        .await;
    assert_eq!(code, Some(0));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let m: Value = get("/metrics")
        .send()
        .await
        .expect("metrics")
        .json()
        .await
        .expect("json");
    let used = m["mem_used_mib"].as_f64().unwrap_or(0.0);
    assert!(used > 90.0 && used < 256.0, "{m}");
    let cpu = m["cpu_used_pct"].as_f64().unwrap_or(0.0);
    // (Other work on this machine can starve it below its quota.)
    assert!(cpu > 30.0, "a busy loop at a 0.5-CPU quota: {m}");
    // The watch stream: the same numbers, frame by frame.
    let mut resp = get("/metrics/watch").send().await.expect("watch");
    let chunk = tokio::time::timeout(Duration::from_secs(5), resp.chunk())
        .await
        .expect("a frame")
        .expect("chunk")
        .unwrap_or_default();
    let frame: Value = serde_json::from_slice(chunk.trim_ascii()).expect("frame json");
    assert_eq!(frame["mem_total_mib"], 256.0, "{frame}");
    eprintln!("metrics under runc: {m}");
}

/// The sandbox log (entrypoint output) and a background command's log stay under
/// `--log-cap` however much is written, and their tails stay readable.
#[tokio::test]
async fn runc_logs_are_capped() {
    let image = need_runc!();
    let s = RuncServer::start_with(&image, &["--log-cap", "1Mi"]);
    let v = s
        .create_with(json!({"entrypoint": ["sh", "-c",
            "i=0; while [ $i -lt 200 ]; do head -c 1000000 /dev/zero | tr '\\0' 'x' | fold -w 99; i=$((i+1)); done; echo ENTRYPOINT-TAIL; sleep infinity"]}))
        .await;
    let id = v["id"].as_str().expect("id").to_string();
    let log = s
        .server
        .data_dir
        .join(format!("sandboxes/{id}/sandbox.log"));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let text = std::fs::read(&log).unwrap_or_default();
        if String::from_utf8_lossy(&text).contains("ENTRYPOINT-TAIL") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the entrypoint never finished writing"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The server's watcher cuts it within its interval (250 ms).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let text = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
    eprintln!("sandbox log after 200 MB written: {} bytes", text.len());
    assert!(text.trim_end().ends_with("ENTRYPOINT-TAIL"), "tail lost");
    assert!(text.len() <= 1 << 20, "{} bytes", text.len());
    assert!(
        text.contains("bytes of earlier output dropped"),
        "no marker"
    );
    // Background command: 200 MB through the logs route.
    let (url, headers) = s.server.endpoint(&id, common::EXECD_PORT).await;
    let mut req = s.server.client.post(format!("{url}/command"));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let text = req
        .json(&json!({"command": "head -c 200000000 /dev/zero | tr '\\0' 'y' | fold -w 99; echo BG-TAIL", "background": true}))
        .send()
        .await
        .expect("bg")
        .text()
        .await
        .unwrap_or_default();
    let cmd_id = common::parse_events(&text)
        .iter()
        .find_map(|e| {
            (e["type"] == "init")
                .then(|| e["text"].as_str().map(String::from))
                .flatten()
        })
        .expect("command id");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut req = s
            .server
            .client
            .get(format!("{url}/command/status/{cmd_id}"));
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        let st: Value = req
            .send()
            .await
            .expect("status")
            .json()
            .await
            .expect("json");
        if st["running"] == false {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the background command never ended"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut req = s.server.client.get(format!("{url}/command/{cmd_id}/logs"));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let body = req
        .send()
        .await
        .expect("logs")
        .text()
        .await
        .unwrap_or_default();
    eprintln!("background log after 200 MB written: {} bytes", body.len());
    assert!(body.len() <= 1 << 20, "{} bytes", body.len());
    assert!(
        body.starts_with("[opensandbox: "),
        "{}",
        &body[..80.min(body.len())]
    );
    assert!(
        body.trim_end().ends_with("BG-TAIL"),
        "tail: {:?}",
        &body[body.len().saturating_sub(80)..]
    );
}

/// TTL expiry kills every process of the sandbox, background ones included.
#[tokio::test]
async fn runc_ttl_expiry_leaves_nothing_running() {
    let image = need_runc!();
    let s = RuncServer::start_with(&image, &["--min-sandbox-timeout", "1"]);
    // A long timeout first, shortened once the sandbox runs: a create slowed down by a
    // loaded machine (the first unpack of the image) must not expire before the test
    // starts its background process.
    let id = s.create(json!({"timeout": 600})).await;
    let (_, code) = s.sh(&id, "nohup sleep 4545 >/dev/null 2>&1 &").await;
    assert_eq!(code, Some(0));
    let procs = s.cgroup_file("pids", &id, "cgroup.procs");
    // The command returns once its shell exits; the backgrounded child may not have
    // exec'd `sleep` yet (seen under load), so wait for it to show up first.
    let started = Instant::now() + Duration::from_secs(5);
    while processes_mentioning("sleep 4545").is_empty() {
        assert!(
            Instant::now() < started,
            "the background sleep never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(2)).to_rfc3339();
    let resp = s
        .server
        .post(&format!("/v1/sandboxes/{id}/renew-expiration"))
        .json(&json!({ "expiresAt": soon }))
        .send()
        .await
        .expect("renew");
    assert_eq!(resp.status().as_u16(), 200);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !processes_mentioning("sleep 4545").is_empty() {
        assert!(
            Instant::now() < deadline,
            "a background process outlived the TTL"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!procs.exists() || cgroup_pids(&procs).is_empty());
}

/// `kill -9` of the server while a create is in flight (the container already
/// started): the restarted server finds the container by its id and deletes it.
#[tokio::test]
async fn runc_server_killed_during_create_leaves_nothing_running() {
    let image = need_runc!();
    // The cold path (the runtime starts during the request); warm containers have
    // their own crash test below.
    let mut s = RuncServer::start_with(&image, &["--warm-pool", "0"]);
    // Warm the image cache so the create reaches the runtime quickly.
    let warm = s.create(json!({})).await;
    let _ = s
        .server
        .delete(&format!("/v1/sandboxes/{warm}"))
        .send()
        .await;
    let body = json!({"image": {"uri": s.image}, "entrypoint": ["sh", "-c", "sleep 4646; sleep 1"], "timeout": 600});
    let req = s.server.post("/v1/sandboxes").json(&body);
    let create = tokio::spawn(async move { req.send().await });
    // Kill as soon as the container's cgroup exists (the create not yet answered).
    let root = PathBuf::from("/sys/fs/cgroup/pids/opensandbox");
    let before: Vec<_> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        let new = std::fs::read_dir(&root)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name())
            // Ours (other tests' servers run containers too, and probes).
            .find(|n| !before.contains(n) && s.server.data_dir.join("sandboxes").join(n).is_dir());
        if let Some(n) = new {
            break n.to_string_lossy().into_owned();
        }
        assert!(Instant::now() < deadline, "no container appeared");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    s.server.kill_server_only();
    let answered = matches!(create.await, Ok(Ok(_)));
    eprintln!("server killed during create of {id}; create answered: {answered}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_mentioning("sleep 4646").is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let data_dir = s.server.data_dir.clone();
    let extra: Vec<String> = s.server.extra_args.clone();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let restarted = Server::start_in(&data_dir, &extra);
    let old = std::mem::replace(&mut s.server, restarted);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let running = !processes_mentioning("sleep 4646").is_empty();
        let sb = s.server.sandbox(&id).await;
        let state = sb["status"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // Either reaped as lost, or adopted as a live sandbox; never a running
        // container the server does not know about.
        if state == "Running" {
            eprintln!("adopted after the restart: deleting it");
            let _ = s.server.delete(&format!("/v1/sandboxes/{id}")).send().await;
        } else if !running {
            eprintln!("after the restart: {state} ({})", sb["status"]["reason"]);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "processes of {id} survive ({state}): {sb}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(s);
    drop(old);
}

/// A snapshot records its sandbox's image, so its restore runs on that image even on a
/// server without `--default-image` (which used to be the only image restores got),
/// and keeps what the sandbox changed in the image and its files' owners (both used to
/// be lost: only /root, /tmp, /workspace were copied, all as root).
#[tokio::test(flavor = "multi_thread")]
async fn runc_restore_runs_the_snapshots_image() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    // Files, owners, and changes to the image itself (a new file, a deleted one, a
    // directory emptied and refilled: an overlay whiteout and an opaque directory).
    let (out, code) = s
        .sh(
            &id,
            "echo kept > /workspace/note.txt && chown 1000:1000 /workspace/note.txt \
             && echo added > /etc/added.txt && rm /etc/debian_version \
             && rm -rf /opt && mkdir -p /opt/fresh && echo new > /opt/fresh/f",
        )
        .await;
    assert_eq!(code, Some(0), "{out}");
    let snap = s.server.snapshot(&id, Duration::from_secs(60)).await;
    assert_eq!(snap["status"]["state"], "Ready", "{snap}");
    let sid = snap["id"].as_str().expect("id").to_string();
    let resp = s
        .server
        .post("/v1/sandboxes")
        .json(&json!({"snapshotId": sid, "timeout": 600}))
        .send()
        .await
        .expect("restore");
    let restored: Value = resp.json().await.expect("json");
    assert_eq!(
        restored["status"]["state"],
        "Running",
        "{restored}\n{}",
        s.server.log()
    );
    let rid = restored["id"].as_str().expect("id");
    let got: Value = s
        .server
        .get(&format!("/v1/sandboxes/{rid}"))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(got["image"]["uri"], image.as_str(), "{got}");
    assert_eq!(got["snapshotId"], sid.as_str(), "{got}");
    let (out, code) = s
        .sh(
            rid,
            "cat /workspace/note.txt; stat -c %u:%g /workspace/note.txt; python3 --version; \
             cat /etc/added.txt; test -e /etc/debian_version && echo still-there; ls /opt",
        )
        .await;
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.first(), Some(&"kept"), "{out}");
    assert_eq!(lines.get(1), Some(&"1000:1000"), "{out}");
    assert!(
        lines.get(2).is_some_and(|l| l.starts_with("Python 3.")),
        "{out}"
    );
    assert_eq!(lines.get(3..), Some(&["added", "fresh"][..]), "{out}");
}

/// The sandbox directories of `s` other than `known`: its warm containers.
fn warm_ids(s: &RuncServer, known: &[&str]) -> Vec<String> {
    std::fs::read_dir(s.server.data_dir.join("sandboxes"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !known.contains(&n.as_str()))
        .collect()
}

/// Waits until `s` has a warm container (not in `known`) that the runtime has created
/// (and so the server offers: it polls the same state file every 5 ms).
async fn wait_warm(s: &RuncServer, known: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    let state = s.server.data_dir.join("oci/state");
    loop {
        if let Some(id) = warm_ids(s, known)
            .into_iter()
            .find(|id| state.join(id).join("state.json").is_file())
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
            return id;
        }
        assert!(
            Instant::now() < deadline,
            "no warm container started\n{}",
            s.server.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A create of an image used before takes a container started ahead of it, and that
/// container becomes exactly the sandbox asked for: its id, entrypoint, environment,
/// limits, hostname and output framing; deleting it leaves nothing, and the pool is
/// topped up again.
#[tokio::test(flavor = "multi_thread")]
async fn runc_warm_container_becomes_the_requested_sandbox() {
    let image = need_runc!();
    let s = RuncServer::start_with(&image, &["--warm-pool", "1"]);
    let t0 = Instant::now();
    let cold = s.create(json!({})).await;
    let _ = s.sh(&cold, "true").await;
    let cold_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let warm = wait_warm(&s, &[&cold]).await;

    let t0 = Instant::now();
    let id = s
        .create(json!({
            "env": {"FOO": "bar baz", "LANG": "C"},
            "entrypoint": ["sh", "-c", "echo started > /tmp/entry; exec sleep infinity"],
            "resourceLimits": {"memory": "256Mi", "cpu": "500m", "pids": "99"},
            "extensions": {"opensandbox.io/output-framing": "lines"},
        }))
        .await;
    let (out, code) = s.sh(&id, "echo ready").await;
    let warm_ms = t0.elapsed().as_secs_f64() * 1000.0;
    eprintln!("create -> first command: cold {cold_ms:.1} ms, warm {warm_ms:.1} ms");
    assert_eq!((out.as_str(), code), ("ready", Some(0)));
    assert_eq!(id, warm, "the create did not take the warm container");

    let (out, _) = s
        .sh(
            &id,
            "for i in 1 2 3 4 5 6 7 8 9 10; do [ -s /tmp/entry ] && break; sleep 0.1; done; \
             echo \"$FOO|$LANG|$OPENSANDBOX_ID\"; cat /tmp/entry; hostname",
        )
        .await;
    let short: String = id.chars().take(8).collect();
    // (This sandbox's "lines" framing drops the line endings `sh` would keep.)
    for part in [
        format!("bar baz|C|{id}"),
        "started".into(),
        format!("sandbox-{short}"),
    ] {
        assert!(
            out.contains(&part),
            "environment, entrypoint or hostname: {out:?}"
        );
    }
    let read = |controller: &str, file: &str| {
        std::fs::read_to_string(s.cgroup_file(controller, &id, file))
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    assert_eq!(read("memory", "memory.limit_in_bytes"), "268435456");
    assert_eq!(read("cpu", "cpu.cfs_quota_us"), "50000");
    assert_eq!(read("pids", "pids.max"), "99");
    // Framing "lines": one event per line, line endings stripped.
    let texts: Vec<Value> = s
        .events(&id, "printf 'x\\ny\\n'")
        .await
        .into_iter()
        .filter(|e| e["type"] == "stdout")
        .map(|e| e["text"].clone())
        .collect();
    assert_eq!(texts, [json!("x"), json!("y")]);

    let procs = s.cgroup_file("pids", &id, "cgroup.procs");
    let resp = s
        .server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    assert!(!procs.exists() || cgroup_pids(&procs).is_empty());
    // Taking it started a replacement.
    let next = wait_warm(&s, &[&cold, &id]).await;
    assert_ne!(next, id);
}

/// Warm containers are no sandbox: a server killed with them in its pool removes them
/// at its next start (and adopts the real sandbox), and one stopped normally removes
/// them on its way out. Nothing of them keeps running either way.
#[tokio::test(flavor = "multi_thread")]
async fn runc_warm_containers_never_outlive_their_server() {
    let image = need_runc!();
    let mut s = RuncServer::start_with(&image, &["--warm-pool", "2"]);
    let real = s.create(json!({})).await;
    let first = wait_warm(&s, &[&real]).await;
    let procs = s.cgroup_file("pids", &first, "cgroup.procs");
    s.server.kill_server_only();
    // Its start pipe closed with the server: the agent exits without starting anything.
    let deadline = Instant::now() + Duration::from_secs(10);
    while procs.exists() && !cgroup_pids(&procs).is_empty() {
        assert!(
            Instant::now() < deadline,
            "a warm container kept running after its server was killed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let data_dir = s.server.data_dir.clone();
    let extra: Vec<String> = s.server.extra_args.clone();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let restarted = Server::start_in(&data_dir, &extra);
    let old = std::mem::replace(&mut s.server, restarted);
    let sb = s.server.sandbox(&real).await;
    assert_eq!(sb["status"]["state"], "Running", "{sb}");
    // The restart removed the killed server's warm containers: files, mounts, runc state.
    assert_eq!(warm_ids(&s, &[&real]), Vec::<String>::new());
    assert!(!data_dir.join("oci/state").join(&first).exists());
    // Warm again, then a normal stop.
    let other = s.create(json!({})).await;
    let second = wait_warm(&s, &[&real, &other]).await;
    let procs = s.cgroup_file("pids", &second, "cgroup.procs");
    let status = s.server.terminate_server();
    assert!(status.is_some_and(|st| st.success()), "{status:?}");
    assert!(
        !procs.exists() || cgroup_pids(&procs).is_empty(),
        "a warm container outlived a normal stop"
    );
    assert!(!data_dir.join("sandboxes").join(&second).exists());
    drop(s);
    drop(old);
}

/// Creates back to back, each with limits that need `runc update` on a warm container:
/// the pool must only hand out containers the runtime has created. It used to offer one
/// as soon as `runc run` was spawned, and a create that came within those milliseconds
/// failed with "container does not exist" (seen in the conformance matrix).
#[tokio::test(flavor = "multi_thread")]
async fn runc_back_to_back_creates_never_take_an_unready_container() {
    let image = need_runc!();
    let s = RuncServer::start_with(&image, &["--warm-pool", "2"]);
    let mut ids = Vec::new();
    for _ in 0..5 {
        // `create` asserts 202 Running.
        let id = s
            .create(json!({"resourceLimits": {"memory": "300Mi", "cpu": "1"}}))
            .await;
        let (out, code) = s.sh(&id, "echo ok").await;
        assert_eq!((out.as_str(), code), ("ok", Some(0)));
        let limit = std::fs::read_to_string(s.cgroup_file("memory", &id, "memory.limit_in_bytes"))
            .unwrap_or_default();
        assert_eq!(limit.trim(), "314572800", "{id}");
        ids.push(id);
    }
    for id in ids {
        let _ = s.server.delete(&format!("/v1/sandboxes/{id}")).send().await;
    }
}
