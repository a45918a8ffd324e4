//! Isolated sessions and identity file routes under runc (the agent's `/v1/isolated/*`
//! and `/v1/filesystem/{uid}/{gid}`), end to end through the server's proxy.
//!
//! The seccomp split is proved here: the sandbox's OCI filter lets the agent mount and
//! unshare (it builds nested namespaces), so every other process of the sandbox must
//! carry the agent's second filter (`Seccomp_filters: 2`) and be refused both. Then
//! a session tries every way out it has: writing outside its overlays, seeing or
//! signalling the sandbox's processes, reaching them through `/proc`, mounting,
//! unsharing, taking root back; and the session's files API is shown to stay inside
//! the session's tree whatever symlinks the session plants.
//!
//! Gated like `oci_runc.rs` (root, runc, the local image).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::runc::RuncServer;
use common::{parse_events, split_lines, EXECD_PORT};
use serde_json::{json, Value};

/// The execd of one sandbox, through the proxy.
struct Execd<'a> {
    s: &'a RuncServer,
    url: String,
    headers: Vec<(String, String)>,
}

impl<'a> Execd<'a> {
    async fn of(s: &'a RuncServer, id: &str) -> Execd<'a> {
        let (url, headers) = s.server.endpoint(id, EXECD_PORT).await;
        Execd { s, url, headers }
    }

    fn req(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self
            .s
            .server
            .client
            .request(method, format!("{}{path}", self.url));
        for (k, v) in &self.headers {
            r = r.header(k, v);
        }
        r
    }

    async fn json(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut r = self.req(method, path);
        if let Some(b) = body {
            r = r.json(&b);
        }
        common::body(r.send().await.expect("request")).await
    }

    /// Creates a session; returns its id.
    async fn session(&self, body: Value) -> String {
        let (status, v) = self
            .json(reqwest::Method::POST, "/v1/isolated/session", Some(body))
            .await;
        assert_eq!(status, 201, "create session: {v}\n{}", self.s.server.log());
        v["session_id"].as_str().expect("session_id").to_string()
    }

    /// A foreground run: (stdout lines, exit code, events).
    async fn run(&self, session: &str, code: &str) -> (Vec<String>, Option<i64>, Vec<Value>) {
        let text = self
            .req(
                reqwest::Method::POST,
                &format!("/v1/isolated/session/{session}/run"),
            )
            .json(&json!({ "code": code }))
            .send()
            .await
            .expect("run")
            .text()
            .await
            .expect("stream");
        let events = parse_events(&text);
        let lines = events
            .iter()
            .filter(|e| e["type"] == "stdout")
            .map(|e| e["text"].as_str().unwrap_or_default().to_string())
            .collect();
        let mut code = None;
        for e in &events {
            if e["type"] == "execution_complete" {
                code = Some(0);
            }
            if e["type"] == "error" {
                code = e["error"]["evalue"].as_str().and_then(|v| v.parse().ok());
            }
        }
        (lines, code, events)
    }
}

#[tokio::test]
async fn every_process_but_the_agent_carries_the_second_filter() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s
        .create(json!({"entrypoint": ["sh", "-c", "grep Seccomp_filters /proc/self/status > /tmp/entry.txt; exec sleep infinity"]}))
        .await;
    let filters = "grep Seccomp_filters /proc/self/status";
    // The agent: the OCI runtime's filter only.
    let (out, _) = s.sh(&id, "grep Seccomp_filters /proc/1/status").await;
    assert_eq!(out, "Seccomp_filters:\t1");
    // A command, the entrypoint, a background command, a bash session, a code context.
    assert_eq!(s.sh(&id, filters).await.0, "Seccomp_filters:\t2");
    assert_eq!(
        s.sh(&id, "cat /tmp/entry.txt").await.0,
        "Seccomp_filters:\t2"
    );
    let x = Execd::of(&s, &id).await;
    let (status, v) = x
        .json(reqwest::Method::POST, "/session", Some(json!({})))
        .await;
    assert_eq!(status, 200, "{v}");
    let session = v["session_id"].as_str().expect("session").to_string();
    let text = x
        .req(reqwest::Method::POST, &format!("/session/{session}/run"))
        .json(&json!({"command": format!("{filters}; unshare -U true 2>/dev/null && echo ALLOWED || echo refused")}))
        .send()
        .await
        .expect("run")
        .text()
        .await
        .expect("text");
    let out: Vec<String> = parse_events(&text)
        .iter()
        .filter(|e| e["type"] == "stdout")
        .map(|e| e["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(out, ["Seccomp_filters:\t2", "refused"]);
    let code = "print([l.strip() for l in open('/proc/self/status') if l.startswith('Seccomp_filters')][0])";
    let text = x
        .req(reqwest::Method::POST, "/code")
        .json(&json!({"code": code, "context": {"language": "python"}}))
        .send()
        .await
        .expect("code")
        .text()
        .await
        .expect("text");
    assert!(
        text.contains("Seccomp_filters:\\\\t2") || text.contains("Seccomp_filters:\\t2"),
        "{text}"
    );
    let resp = x
        .req(reqwest::Method::POST, "/command")
        .json(&json!({"command": format!("{filters} > /tmp/bg.txt"), "background": true}))
        .send()
        .await
        .expect("background");
    assert_eq!(resp.status().as_u16(), 200);
    let _ = resp.text().await;
    let mut bg = String::new();
    for _ in 0..50 {
        bg = s.sh(&id, "cat /tmp/bg.txt 2>/dev/null").await.0;
        if !bg.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(bg, "Seccomp_filters:\t2");
    // A foreground command handed to the agent's ready shell (warm_shell), several
    // in a row so that at least one is, and a PTY session's shell.
    for _ in 0..3 {
        assert_eq!(s.sh(&id, filters).await.0, "Seccomp_filters:\t2");
    }
    let (status, v) = x
        .json(
            reqwest::Method::POST,
            "/pty",
            Some(json!({"command": format!("{filters} > /tmp/pty.txt")})),
        )
        .await;
    assert!(status == 200 || status == 201, "{status} {v}");
    // The shell starts on the first attach.
    let pty_id = v["session_id"].as_str().expect("pty session id");
    let ws_url = format!("{}/pty/{pty_id}/ws?pty=1", x.url).replacen("http", "ws", 1);
    let mut request =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(ws_url)
            .expect("ws request");
    for (k, v) in &x.headers {
        request.headers_mut().insert(
            reqwest::header::HeaderName::from_bytes(k.as_bytes()).expect("name"),
            v.parse().expect("value"),
        );
    }
    let (_ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("attach the PTY");
    let mut pty = String::new();
    for _ in 0..50 {
        pty = s.sh(&id, "cat /tmp/pty.txt 2>/dev/null").await.0;
        if !pty.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(pty, "Seccomp_filters:\t2", "PTY shell");
    // And so each is refused the four calls the agent keeps.
    for attempt in [
        "unshare -U true",
        "unshare -m true",
        "mount -t tmpfs none /mnt",
        "mount -o remount,rw /",
    ] {
        s.must_fail(&id, attempt).await;
    }
    let errno = s
        .py(
            &id,
            "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n\
             print(libc.syscall(155, b'/', b'/'), ctypes.get_errno())",
        )
        .await;
    assert_eq!(errno, "-1 1", "pivot_root");
}

#[tokio::test]
async fn a_session_cannot_reach_the_sandbox() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    let (pid, _) = s
        .sh(&id, "mkdir -p /workspace/w && echo sandbox > /workspace/w/f && sleep 300 >/dev/null 2>&1 & echo $!")
        .await;
    let x = Execd::of(&s, &id).await;
    let session = x
        .session(json!({"workspace": {"path": "/workspace/w"}, "uid": 1000, "gid": 1000}))
        .await;

    // Writes: only the overlay (and the session's own tmpfs) take them, and the
    // overlay's writes never reach the sandbox.
    let (out, _, _) = x
        .run(
            &session,
            "for f in /etc/x /usr/x /root/x /workspace/x /tmp/../etc/y /.opensandbox/x /dev/x /proc/x /run/x /tmp/x; do (: > $f) 2>/dev/null && echo \"WROTE $f\" || echo refused; done",
        )
        .await;
    let mut expected = vec!["refused".to_string(); 9];
    expected.push("WROTE /tmp/x".into());
    assert_eq!(out, expected);
    let (out, code, _) = x
        .run(
            &session,
            "(echo changed > f) 2>/dev/null || echo refused-f; cat f",
        )
        .await;
    // The lower file is root's 644: uid 1000 cannot rewrite it, even in the overlay.
    assert_eq!(
        (out, code),
        (
            vec!["refused-f".to_string(), "sandbox".to_string()],
            Some(0)
        )
    );
    assert_eq!(s.sh(&id, "cat /workspace/w/f").await.0, "sandbox");

    // Processes: none of the sandbox's is visible or reachable.
    let (out, _, _) = x
        .run(
            &session,
            &format!(
                "ls /proc | grep -cE '^[0-9]+$'; ls /proc/{pid}/root 2>/dev/null && echo REACHED || echo hidden; \
                 kill -0 {pid} 2>/dev/null && echo SIGNALLED || echo alone; kill -9 -1 2>/dev/null; echo survived"
            ),
        )
        .await;
    assert_eq!(out, ["0", "hidden", "alone", "survived"]);
    assert_eq!(
        s.sh(&id, &format!("kill -0 {pid} && echo alive")).await.0,
        "alive"
    );

    // Mounts, namespaces, root: refused.
    let (out, _, _) = x
        .run(
            &session,
            "for m in 'mount -o remount,rw /' 'mount -t tmpfs t /tmp' 'umount -l /workspace/w' 'unshare -U true' 'unshare -r id'; do $m 2>/dev/null && echo \"ALLOWED $m\" || echo refused; done; \
             id -u; python3 -c 'import os; os.setuid(0)' 2>/dev/null && echo ROOT || echo refused; \
             python3 -c 'import os; os.setresuid(0,0,0)' 2>/dev/null && echo ROOT || echo refused",
        )
        .await;
    assert_eq!(
        out,
        ["refused", "refused", "refused", "refused", "refused", "1000", "refused", "refused"]
    );

    // Deleting the session kills what it started.
    let (out, _, _) = x.run(&session, "sleep 300 & echo started").await;
    assert_eq!(out, ["started"]);
    let (status, _) = x
        .json(
            reqwest::Method::DELETE,
            &format!("/v1/isolated/session/{session}"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (left, _) = s
        .sh(
            &id,
            "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 300 $'",
        )
        .await;
    assert_eq!(left.trim(), "1", "only the sandbox's own sleep remains");
}

#[tokio::test]
async fn session_files_stay_inside_the_session_whatever_it_links() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    s.sh(&id, "mkdir -p /workspace/w").await;
    let x = Execd::of(&s, &id).await;
    let session = x
        .session(json!({"workspace": {"path": "/workspace/w"}}))
        .await;
    // The session plants links to the sandbox's paths (absolute and climbing).
    let (_, code, _) = x
        .run(
            &session,
            "ln -s /root abs && ln -s ../../../../root up && mkdir d && ln -s / d/slash",
        )
        .await;
    assert_eq!(code, Some(0));
    let upload = |path: &str| {
        let form = reqwest::multipart::Form::new()
            .part(
                "metadata",
                reqwest::multipart::Part::bytes(
                    serde_json::to_vec(&json!({ "path": path })).unwrap_or_default(),
                )
                .file_name("metadata"),
            )
            .part(
                "file",
                reqwest::multipart::Part::bytes(b"planted".to_vec()).file_name("f"),
            );
        x.req(
            reqwest::Method::POST,
            &format!("/v1/isolated/session/{session}/files/upload"),
        )
        .multipart(form)
    };
    for path in [
        "/workspace/w/abs/planted",
        "/workspace/w/up/planted",
        "/workspace/w/d/slash/root/planted",
        "/root/planted",
    ] {
        let resp = upload(path).send().await.expect("upload");
        // Resolved in the session: its /root is the sandbox's, read-only.
        assert_eq!(
            resp.status().as_u16(),
            403,
            "{path}: {}",
            resp.text().await.unwrap_or_default()
        );
    }
    assert_eq!(
        s.sh(&id, "ls /root/planted 2>/dev/null || echo absent")
            .await
            .0,
        "absent"
    );
    // The files API and the session agree on what is where.
    let resp = upload("/workspace/w/d/in-session.txt")
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status().as_u16(), 200);
    let (out, _, _) = x.run(&session, "cat d/in-session.txt; echo").await;
    assert_eq!(out, ["planted"]);
    assert_eq!(
        s.sh(&id, "ls /workspace/w/d 2>/dev/null || echo absent")
            .await
            .0,
        "absent"
    );
    // A dead session's files are refused, not served from elsewhere.
    x.run(&session, "exit 0").await;
    let (status, v) = x
        .json(
            reqwest::Method::GET,
            &format!("/v1/isolated/session/{session}/files/info?path=/workspace/w"),
            None,
        )
        .await;
    assert_eq!(status, 400, "{v}");
}

#[tokio::test]
async fn identity_requests_switch_per_request_and_leave_the_agent_root() {
    let image = need_runc!();
    let s = RuncServer::start(&image);
    let id = s.create(json!({})).await;
    s.sh(&id, "mkdir -p /tmp/idt && chmod 1777 /tmp/idt && echo s > /tmp/idt/root-secret && chmod 600 /tmp/idt/root-secret")
        .await;
    let x = Execd::of(&s, &id).await;
    let mkdir = |uid: u32, n: usize| {
        let body = json!({ format!("/tmp/idt/d{n}"): {"mode": 700} });
        x.req(
            reqwest::Method::POST,
            &format!("/v1/filesystem/{uid}/{uid}/directories"),
        )
        .json(&body)
        .send()
    };
    let mut pending = Vec::new();
    for n in 0..12 {
        pending.push(mkdir(1001 + (n % 3) as u32, n));
    }
    for (n, r) in futures::future::join_all(pending)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(r.expect("mkdir").status().as_u16(), 200, "d{n}");
    }
    let (owners, _) = s
        .sh(&id, "cd /tmp/idt && stat -c '%n %u' d* | sort -V")
        .await;
    let expected: Vec<String> = (0..12).map(|n| format!("d{n} {}", 1001 + n % 3)).collect();
    assert_eq!(split_lines(&owners), expected);
    // Meanwhile the plain routes stayed the agent's (root).
    let (status, _) = x
        .json(
            reqwest::Method::GET,
            "/files/info?path=/tmp/idt/root-secret",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let resp = x
        .req(
            reqwest::Method::GET,
            "/files/download?path=/tmp/idt/root-secret",
        )
        .send()
        .await
        .expect("download");
    assert_eq!(resp.status().as_u16(), 200);
    let resp = x
        .req(
            reqwest::Method::GET,
            "/v1/filesystem/1001/1001/files/download?path=/tmp/idt/root-secret",
        )
        .send()
        .await
        .expect("download");
    assert_eq!(resp.status().as_u16(), 403);
    // Bad ids: 400 before any work; an id the sandbox does not map: 503.
    for (path, status) in [
        ("/v1/filesystem/-1/0/files/info?path=/tmp", 400),
        ("/v1/filesystem/4294967295/0/files/info?path=/tmp", 400),
        ("/v1/filesystem/1e3/0/files/info?path=/tmp", 400),
        ("/v1/filesystem/70000/0/files/info?path=/tmp", 503),
    ] {
        let (got, v) = x.json(reqwest::Method::GET, path, None).await;
        assert_eq!(got, status, "{path}: {v}");
    }
}

#[tokio::test]
async fn without_an_oci_runtime_isolation_is_unavailable() {
    // `--isolation none`: the agent is a host process; sessions are refused (503) and
    // capabilities say why (200, as upstream).
    let s = common::Server::start(&["--isolation", "none"]);
    let id = s.create_idle(json!({})).await;
    let (url, headers) = s.endpoint(&id, EXECD_PORT).await;
    let get = |path: &str| {
        let mut r = s.client.get(format!("{url}{path}"));
        for (k, v) in &headers {
            r = r.header(k, v);
        }
        r.send()
    };
    let (status, v) = common::body(get("/v1/isolated/capabilities").await.expect("caps")).await;
    assert_eq!(status, 200);
    assert_eq!(v["available"], false, "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or_default()
            .contains("isolation none"),
        "{v}"
    );
    let (status, v) = common::body(get("/v1/isolated/sessions").await.expect("list")).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["code"], "SERVICE_UNAVAILABLE");
}
