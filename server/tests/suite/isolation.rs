//! Break-out attempts against a sandbox under runc: each test tries one way out and
//! asserts it fails (and, where it matters, that the host shows no trace of it).
//!
//! Gated like `oci_runc.rs`: each test prints why and passes when this machine
//! cannot run it (not root, no `runc`, or no local image: build it with
//! `scripts/build-image.sh`; another layout: `OSB_TEST_IMAGE=oci:/abs/layout:tag`).

// Test helpers panic on purpose: a failed request is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::runc::RuncServer;
use common::EXECD_PORT;
use serde_json::json;

/// `errno` of a raw syscall made by Python inside the sandbox (0: it succeeded).
fn syscall_py(nr: i64, args: &str) -> String {
    format!(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
         r = libc.syscall({nr}{args})\nprint(0 if r >= 0 else ctypes.get_errno())"
    )
}

#[tokio::test]
async fn capabilities_are_zero_for_non_root_and_the_safe_set_for_root() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let (out, _) = s
        .sh(&id, "grep -E '^Cap(Eff|Prm|Bnd|Inh|Amb)' /proc/self/status")
        .await;
    // Docker's default set less CAP_NET_RAW; nothing inheritable or ambient.
    assert!(out.contains("CapEff:\t00000000a80405fb"), "{out}");
    assert!(out.contains("CapBnd:\t00000000a80405fb"), "{out}");
    assert!(out.contains("CapInh:\t0000000000000000"), "{out}");
    assert!(out.contains("CapAmb:\t0000000000000000"), "{out}");
    let out = s
        .py(
            &id,
            "import os\nos.setgroups([]); os.setgid(1000); os.setuid(1000)\n\
             print([l.strip() for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm'))])",
        )
        .await;
    assert_eq!(
        out,
        "['CapPrm:\\t0000000000000000', 'CapEff:\\t0000000000000000']"
    );
}

#[tokio::test]
async fn remounts_and_new_mounts_fail() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    s.must_fail(&id, "mount -o remount,rw /").await;
    // /etc/hosts is a read-only bind, /workspace a nosuid one.
    s.must_fail(&id, "mount -o remount,bind,rw /etc/hosts")
        .await;
    s.must_fail(&id, "echo x >> /etc/hosts").await;
    s.must_fail(&id, "mount -o remount,bind,suid /workspace")
        .await;
    s.must_fail(&id, "mount -t tmpfs none /mnt").await;
    s.must_fail(&id, "mount --bind /workspace /mnt").await;
    s.must_fail(&id, "mount -o remount,rw /sys").await;
    s.must_fail(&id, "mount -t proc proc /mnt").await;
    // The agent's binary is read-only.
    s.must_fail(&id, "echo x >> /.opensandbox/opensandbox-server")
        .await;
    let (out, _) = s.sh(&id, "grep ' /workspace ' /proc/self/mounts").await;
    assert!(out.contains("nosuid") && out.contains("nodev"), "{out}");
}

#[tokio::test]
async fn mknod_of_devices_fails() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    s.must_fail(&id, "mknod /tmp/sda b 8 0").await;
    s.must_fail(&id, "mknod /tmp/mem c 1 1").await;
    s.must_fail(&id, "mknod /workspace/kmsg c 1 11").await;
    // A FIFO is no device: allowed.
    let (_, code) = s.sh(&id, "mkfifo /tmp/fifo").await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn raw_and_packet_sockets_fail() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let out = s
        .py(
            &id,
            "import socket\nfor fam, typ, proto in [(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),\n\
             (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW), (socket.AF_PACKET, socket.SOCK_RAW, 0)]:\n\
             \x20   try:\n        socket.socket(fam, typ, proto); print('OPENED')\n\
             \x20   except PermissionError as e:\n        print('denied', e.errno)",
        )
        .await;
    assert_eq!(out, "denied 1\ndenied 1\ndenied 1", "{out}");
    // Only loopback.
    let (out, _) = s.sh(&id, "ls /sys/class/net").await;
    assert_eq!(out, "lo");
}

#[tokio::test]
async fn processes_outside_are_invisible_and_the_agent_cannot_be_traced() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let me = std::process::id();
    let (out, _) = s
        .sh(
            &id,
            &format!("test -e /proc/{me} && echo VISIBLE; kill -0 {me} 2>&1; echo $?"),
        )
        .await;
    assert!(!out.contains("VISIBLE"), "{out}");
    // PID 1 is the agent; nothing of the host's process tree is there.
    let (out, _) = s.sh(&id, "tr '\\0' ' ' </proc/1/cmdline").await;
    assert!(out.contains("opensandbox-server agent"), "{out}");
    let (out, _) = s.sh(&id, "ls /proc | grep -c '^[0-9]'").await;
    let n: u32 = out.trim().parse().unwrap_or(u32::MAX);
    assert!(n < 20, "{n} processes visible");
    // PTRACE_ATTACH (16) to the agent: not dumpable, so refused.
    let out = s.py(&id, &syscall_py(101, ", 16, 1, 0, 0")).await;
    assert_eq!(out, "1", "ptrace of the agent: errno {out}");
    s.must_fail(&id, "ls -l /proc/1/fd").await;
    s.must_fail(&id, "cat /proc/1/environ").await;
}

#[tokio::test]
async fn writes_to_proc_sys_sysrq_and_sys_fail() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let before = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
    s.must_fail(&id, "echo '|/tmp/x' > /proc/sys/kernel/core_pattern")
        .await;
    s.must_fail(&id, "echo 1 > /proc/sys/kernel/sysrq").await;
    s.must_fail(&id, "echo 1 > /proc/sys/vm/drop_caches").await;
    s.must_fail(&id, "echo h > /proc/sysrq-trigger").await;
    s.must_fail(&id, "echo 1500 > /sys/class/net/lo/mtu").await;
    s.must_fail(
        &id,
        "echo never > /sys/kernel/mm/transparent_hugepage/enabled",
    )
    .await;
    s.must_fail(&id, "cat /proc/kcore | head -c1 | wc -c | grep -q 1")
        .await;
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default(),
        before
    );
}

#[tokio::test]
async fn keyrings_and_module_loading_are_refused() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    if !cfg!(target_arch = "x86_64") {
        eprintln!("SKIPPED: syscall numbers below are x86_64's");
        return;
    }
    // add_key(248), keyctl(250) KEYCTL_GET_KEYRING_ID, request_key(249).
    let out = s
        .py(&id, &syscall_py(248, ", b'user', b'k', b'v', 1, -2"))
        .await;
    assert_eq!(out, "1", "add_key: errno {out}");
    let out = s.py(&id, &syscall_py(250, ", 0, -3, 0")).await;
    assert_eq!(out, "1", "keyctl: errno {out}");
    let out = s
        .py(&id, &syscall_py(249, ", b'user', b'k', None, 0"))
        .await;
    assert_eq!(out, "1", "request_key: errno {out}");
    // init_module(175), finit_module(313), delete_module(176).
    let out = s.py(&id, &syscall_py(175, ", b'\\0' * 64, 64, b''")).await;
    assert_eq!(out, "1", "init_module: errno {out}");
    let out = s
        .py(
            &id,
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n\
             fd = os.open('/bin/true', os.O_RDONLY)\nr = libc.syscall(313, fd, b'', 0)\n\
             print(0 if r >= 0 else ctypes.get_errno())",
        )
        .await;
    assert_eq!(out, "1", "finit_module: errno {out}");
    let out = s.py(&id, &syscall_py(176, ", b'ext4', 0")).await;
    assert_eq!(out, "1", "delete_module: errno {out}");
}

#[tokio::test]
async fn another_sandboxs_files_and_the_data_dir_are_out_of_reach() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let a = s.create(json!({})).await;
    let b = s.create(json!({})).await;
    let (_, code) = s
        .sh(
            &a,
            "echo topsecret > /workspace/a-secret-file && echo x > /a-secret-root",
        )
        .await;
    assert_eq!(code, Some(0));
    let data = s.server.data_dir.display().to_string();
    let out = s
        .sh(
            &b,
            &format!(
                "find / -xdev \\( -path /proc -o -path /sys \\) -prune -o -name 'a-secret-*' -print 2>/dev/null; \
                 ls {data} 2>&1 >/dev/null | head -1; ls /proc/*/root/workspace 2>/dev/null | head -1"
            ),
        )
        .await
        .0;
    assert!(!out.contains("a-secret"), "{out}");
    s.must_fail(&b, &format!("ls {data}/sandboxes/{a}")).await;
    s.must_fail(&b, &format!("cat {data}/opensandbox.db")).await;
    // The host sees A's file where expected, owned by A's unprivileged root.
    let meta =
        std::fs::metadata(s.server.sandbox_fs(&a).join("workspace/a-secret-file")).expect("file");
    assert_eq!(meta.uid(), 1_000_000);
}

#[tokio::test]
async fn a_setuid_file_made_inside_is_not_setuid_root_on_the_host() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let (_, code) = s
        .sh(
            &id,
            "cp /bin/true /workspace/su && chmod 4755 /workspace/su && chown 0:0 /workspace/su && chmod 4755 /workspace/su \
             && cp /bin/true /usr/local/bin/su2 && chmod 6755 /usr/local/bin/su2",
        )
        .await;
    assert_eq!(code, Some(0));
    let upper = s
        .server
        .data_dir
        .join(format!("sandboxes/{id}/oci/layer/upper/usr/local/bin/su2"));
    for host in [s.server.sandbox_fs(&id).join("workspace/su"), upper] {
        let meta = std::fs::metadata(&host).unwrap_or_else(|e| panic!("{}: {e}", host.display()));
        // Setuid, but to the sandbox's root: an unprivileged host id.
        assert_ne!(
            meta.uid(),
            0,
            "{} is setuid root on the host",
            host.display()
        );
        assert_ne!(
            meta.gid(),
            0,
            "{} is setgid root on the host",
            host.display()
        );
        assert!(
            meta.uid() >= 1_000_000,
            "{}: uid {}",
            host.display(),
            meta.uid()
        );
    }
    // Inside, nosuid and no_new_privs: running it as a user does not make root.
    let (out, _) = s
        .sh(&id, "cp /usr/bin/id /workspace/myid && chmod 4755 /workspace/myid && setpriv --reuid=1000 --regid=1000 --clear-groups /workspace/myid -u")
        .await;
    assert_eq!(out, "1000", "{out}");
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_pids_limit_and_the_server_still_answers() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({"resourceLimits": {"pids": "64"}})).await;
    let (url, headers) = s.server.endpoint(&id, EXECD_PORT).await;
    let mut req = s.server.client.post(format!("{url}/command"));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let bomb = req
        .json(&json!({"command": "bomb() { bomb | bomb & }; bomb; sleep 5", "background": true}))
        .send()
        .await
        .expect("bomb");
    assert_eq!(bomb.status().as_u16(), 200);
    let mut worst = Duration::ZERO;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let t0 = Instant::now();
        let health = s.server.get("/health").send().await.expect("health");
        assert!(health.status().is_success());
        let v = s
            .server
            .get(&format!("/v1/sandboxes/{id}"))
            .send()
            .await
            .expect("get");
        assert!(v.status().is_success());
        worst = worst.max(t0.elapsed());
    }
    eprintln!("server answer time during a fork bomb: worst {worst:?}");
    assert!(worst < Duration::from_secs(1), "{worst:?}");
    let procs = format!("/sys/fs/cgroup/pids/opensandbox/{id}/pids.current");
    if let Ok(n) = std::fs::read_to_string(&procs) {
        let n: i64 = n.trim().parse().unwrap_or(i64::MAX);
        assert!(n <= 64, "pids.current {n}");
    }
    let max = std::fs::read_to_string(format!("/sys/fs/cgroup/pids/opensandbox/{id}/pids.max"))
        .or_else(|_| std::fs::read_to_string(format!("/sys/fs/cgroup/opensandbox/{id}/pids.max")))
        .unwrap_or_default();
    assert_eq!(max.trim(), "64");
}

#[tokio::test]
async fn allocating_past_the_memory_limit_is_an_oom_kill_and_everything_else_survives() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s
        .create(json!({"resourceLimits": {"memory": "128Mi"}}))
        .await;
    let events = s
        .events(
            &id,
            "python3 -c \"b = bytearray(512 * 1024 * 1024); print(len(b))\"",
        )
        .await;
    let error = events
        .iter()
        .find(|e| e["type"] == "error")
        .unwrap_or_else(|| panic!("no error event: {events:?}"));
    let traceback = error["error"]["traceback"].to_string();
    assert!(
        traceback.contains("OOM") && traceback.contains("128 MiB"),
        "{error}"
    );
    let (out, code) = s.sh(&id, "echo still-here").await;
    assert_eq!((out.as_str(), code), ("still-here", Some(0)));
    assert_eq!(s.server.sandbox(&id).await["status"]["state"], "Running");
    assert!(s
        .server
        .get("/health")
        .send()
        .await
        .expect("health")
        .status()
        .is_success());
    // No swap to hide in: memsw == memory (v1) or swap.max 0 (v2).
    let memsw = std::fs::read_to_string(format!(
        "/sys/fs/cgroup/memory/opensandbox/{id}/memory.memsw.limit_in_bytes"
    ));
    if let Ok(v) = memsw {
        assert_eq!(v.trim(), (128u64 << 20).to_string());
    }
}

/// Symlinks and FIFOs planted on the paths the server touches: the snapshot source,
/// the files API's download and upload targets, the agent's binary.
#[tokio::test]
async fn symlink_and_fifo_tricks_fail_safely() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let secret = s.server.data_dir.join("host-secret");
    std::fs::write(&secret, "HOST-SECRET").expect("secret");
    let (_, code) = s
        .sh(
            &id,
            &format!(
                "ln -s {} /workspace/link && ln -s /proc/1/root/etc/shadow /workspace/l2 \
                 && mkfifo /workspace/fifo && ln -s /.opensandbox/opensandbox-server /workspace/agent",
                secret.display()
            ),
        )
        .await;
    assert_eq!(code, Some(0));

    // Download of a FIFO answers (an error) instead of hanging.
    let (url, headers) = s.server.endpoint(&id, EXECD_PORT).await;
    let mut req = s
        .server
        .client
        .get(format!("{url}/files/download"))
        .query(&[("path", "/workspace/fifo")]);
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let resp = tokio::time::timeout(Duration::from_secs(5), req.send())
        .await
        .expect("download of a FIFO hung")
        .expect("download");
    assert!(!resp.status().is_success(), "a FIFO was downloaded");
    // Download through a symlink to a host path: resolved inside, so absent.
    let mut req = s
        .server
        .client
        .get(format!("{url}/files/download"))
        .query(&[("path", "/workspace/link")]);
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let body = req
        .send()
        .await
        .expect("download")
        .text()
        .await
        .unwrap_or_default();
    assert!(!body.contains("HOST-SECRET"), "{body}");
    // Upload through a symlink to the agent's binary: the binary is unchanged.
    let exe = PathBuf::from(common::server_bin());
    let before = std::fs::metadata(&exe).map(|m| (m.len(), m.mtime())).ok();
    let form = reqwest::multipart::Form::new()
        .part(
            "metadata",
            reqwest::multipart::Part::text(json!({"path": "/workspace/agent"}).to_string()),
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(b"PWNED".to_vec()).file_name("f"),
        );
    let mut req = s
        .server
        .client
        .post(format!("{url}/files/upload"))
        .multipart(form);
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let _ = req.send().await.expect("upload");
    assert_eq!(
        std::fs::metadata(&exe).map(|m| (m.len(), m.mtime())).ok(),
        before
    );

    // A snapshot copies the links as links, never the host file behind them, and the
    // FIFO does not hang it.
    s.server.snapshot(&id, Duration::from_secs(30)).await;
    let found = std::process::Command::new("grep")
        .args(["-rl", "HOST-SECRET"])
        .arg(s.server.data_dir.join("snapshots"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(
        found.trim().is_empty(),
        "the host file got into a snapshot: {found}"
    );
    // The sandbox log is not reachable from inside at all.
    let (out, _) = s
        .sh(
            &id,
            "find / -xdev -name 'sandbox.log' 2>/dev/null | head -1",
        )
        .await;
    assert!(out.is_empty(), "{out}");
}
