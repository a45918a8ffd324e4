//! Regression tests of the "hardened edges" findings (issue 12, item 4): each one
//! reproduces a way a sandbox, a web page or another local user got at the host, and
//! fails on a server without the fix.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, EGRESS_PORT, EXECD_PORT, KEY};
use serde_json::{json, Value};

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

/// A data directory the way a user makes one: `mkdir` under a world-readable parent.
fn open_data_dir() -> (tempfile::TempDir, PathBuf) {
    let parent = tempfile::Builder::new()
        .prefix("osbh")
        .tempdir()
        .expect("tmp");
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data = parent.path().join("data");
    std::fs::create_dir(&data).expect("mkdir");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (parent, data)
}

/// True if the user `nobody` can reach `path` (`test -e` as uid/gid 65534).
fn reachable_by_nobody(path: &Path) -> bool {
    Command::new("/bin/sh")
        .arg("-c")
        .arg("test -e \"$1\"")
        .arg("sh")
        .arg(path)
        .uid(65534)
        .gid(65534)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[tokio::test]
async fn data_dir_store_and_keys_are_private() {
    let (_parent, data) = open_data_dir();
    let server = Server::start_in(&data, &[]);
    let id = server.create_idle(json!({})).await;
    assert_eq!(mode(&data), 0o700, "data dir");
    assert_eq!(mode(&data.join("sandboxes")), 0o700);
    assert_eq!(mode(&data.join("snapshots")), 0o700);
    assert_eq!(mode(&data.join("sandboxes").join(&id)), 0o700);
    for file in [
        "opensandbox.db",
        "opensandbox.db-wal",
        "opensandbox.db-shm",
        "token-key",
    ] {
        let path = data.join(file);
        assert!(path.exists(), "{file} missing");
        assert_eq!(mode(&path), 0o600, "{file}");
    }
    assert!(!reachable_by_nobody(&data.join("opensandbox.db")));
    drop(server);
    common::kill_processes_mentioning(&data);
}

#[tokio::test]
async fn access_tokens_are_stored_hashed_and_checked() {
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let (url, headers) = server.endpoint(&id, EXECD_PORT).await;
    let (_, egress_headers) = server.endpoint(&id, EGRESS_PORT).await;
    let execd = headers[0].1.clone();
    let egress = egress_headers[0].1.clone();
    assert_eq!(execd.len(), 64);
    // The same token every time (derived, not stored).
    let (_, again) = server.endpoint(&id, EXECD_PORT).await;
    assert_eq!(again[0].1, execd);
    // Nowhere in the store's files, in clear.
    let mut stored = Vec::new();
    for file in ["opensandbox.db", "opensandbox.db-wal"] {
        if let Ok(bytes) = std::fs::read(server.data_dir.join(file)) {
            stored.extend(bytes);
        }
    }
    assert!(!stored.is_empty());
    for token in [&execd, &egress] {
        assert!(
            !stored.windows(token.len()).any(|w| w == token.as_bytes()),
            "a token is stored in clear"
        );
    }
    // And they still open the sandbox, while a wrong one does not.
    let ok = server
        .client
        .get(format!("{url}/ping"))
        .header("X-EXECD-ACCESS-TOKEN", &execd)
        .send()
        .await
        .expect("ping");
    assert_eq!(ok.status().as_u16(), 200);
    let mut wrong = execd.clone().into_bytes();
    wrong[0] = if wrong[0] == b'a' { b'b' } else { b'a' };
    let bad = server
        .client
        .get(format!("{url}/ping"))
        .header(
            "X-EXECD-ACCESS-TOKEN",
            String::from_utf8(wrong).expect("utf8"),
        )
        .send()
        .await
        .expect("ping");
    assert_eq!(bad.status().as_u16(), 401);
}

async fn preflight(server: &Server, origin: &str) -> reqwest::Response {
    server
        .client
        .request(reqwest::Method::OPTIONS, server.url("/v1/sandboxes"))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "open-sandbox-api-key,content-type",
        )
        .send()
        .await
        .expect("preflight")
}

#[tokio::test]
async fn no_cors_unless_origins_are_named() {
    let server = Server::start(&[]);
    let resp = preflight(&server, "https://evil.example").await;
    assert!(
        !resp.headers().contains_key("access-control-allow-origin"),
        "{:?}",
        resp.headers()
    );
    let resp = server
        .get("/v1/sandboxes")
        .header("Origin", "https://evil.example")
        .send()
        .await
        .expect("get");
    assert!(!resp.headers().contains_key("access-control-allow-origin"));
    assert!(!resp
        .headers()
        .contains_key("access-control-allow-credentials"));

    let server = Server::start(&[
        "--cors-origin",
        "https://app.example",
        "--cors-origin",
        "http://localhost:3000",
    ]);
    for origin in ["https://app.example", "http://localhost:3000"] {
        let resp = preflight(&server, origin).await;
        assert!(resp.status().is_success());
        assert_eq!(
            resp.headers()["access-control-allow-origin"],
            origin,
            "{:?}",
            resp.headers()
        );
        assert!(!resp
            .headers()
            .contains_key("access-control-allow-credentials"));
    }
    // Exact match: no suffix, prefix or scheme games.
    for origin in [
        "https://evil.example",
        "https://app.example.evil",
        "http://app.example",
        "null",
    ] {
        let resp = preflight(&server, origin).await;
        assert!(
            !resp.headers().contains_key("access-control-allow-origin"),
            "{origin}: {:?}",
            resp.headers()
        );
    }
    // A wildcard is not an origin.
    let tmp = tempfile::tempdir().expect("tmp");
    let out = Command::new(common::server_bin())
        .args([
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "k",
            "--isolation",
            "none",
        ])
        .args(["--cors-origin", "*", "--data-dir"])
        .arg(tmp.path())
        .output()
        .expect("run");
    assert!(!out.status.success());
}

/// A server started without `--api-key` (nor the variable): (child, address, stderr path).
fn start_keyless(data: &Path, extra: &[&str]) -> (std::process::Child, Option<String>, PathBuf) {
    let err = data.with_extension(format!("stderr-{}", uuid_like()));
    let mut child = Command::new(common::server_bin())
        .args(["--isolation", "none", "--log-level", "info"])
        .arg("--data-dir")
        .arg(data)
        .args(extra)
        .env_remove("OPENSANDBOX_API_KEY")
        .env_remove("OPENSANDBOX_NO_AUTH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(addr) = line.strip_prefix("opensandbox-server listening on ") {
                let _ = tx.send(addr.to_string());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).ok();
    (child, addr, err)
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    )
}

#[tokio::test]
async fn without_api_key_one_is_generated_stored_and_printed_once() {
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");

    let (mut child, addr, err) = start_keyless(&data, &["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("server did not start");
    let key_file = data.join("api-key");
    assert_eq!(mode(&key_file), 0o600);
    let key = std::fs::read_to_string(&key_file)
        .expect("key")
        .trim()
        .to_string();
    assert!(key.len() >= 32);
    let stderr = std::fs::read_to_string(&err).expect("stderr");
    assert_eq!(stderr.matches(&key).count(), 1, "{stderr}");
    let resp = client
        .get(format!("http://{addr}/v1/sandboxes"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 401);
    let resp = client
        .get(format!("http://{addr}/v1/sandboxes"))
        .header("OPEN-SANDBOX-API-KEY", &key)
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 200);
    let _ = child.kill();
    let _ = child.wait();

    // The next start reuses it and does not print it again.
    let (mut child, addr, err) = start_keyless(&data, &["--listen", "127.0.0.1:0"]);
    let addr = addr.expect("server did not restart");
    assert!(!std::fs::read_to_string(&err)
        .expect("stderr")
        .contains(&key));
    let resp = client
        .get(format!("http://{addr}/v1/sandboxes"))
        .header("OPEN-SANDBOX-API-KEY", &key)
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 200);
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn no_auth_only_explicitly_and_only_on_loopback() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = Command::new(common::server_bin())
        .args(["--isolation", "none", "--no-auth", "--listen", "0.0.0.0:0"])
        .arg("--data-dir")
        .arg(tmp.path().join("a"))
        .env_remove("OPENSANDBOX_API_KEY")
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("loopback"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (mut child, addr, _) = start_keyless(
        &tmp.path().join("b"),
        &["--no-auth", "--listen", "127.0.0.1:0"],
    );
    let addr = addr.expect("--no-auth on loopback must start");
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let resp = client
        .get(format!("http://{addr}/v1/sandboxes"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 200);
    assert!(!tmp.path().join("b/api-key").exists());
    let _ = child.kill();
    let _ = child.wait();
}

async fn create_status(server: &Server, body: Value) -> (u16, Value) {
    let resp = server
        .post("/v1/sandboxes")
        .json(&body)
        .send()
        .await
        .expect("create");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn with_volume(host: Value, sub_path: Option<&str>) -> Value {
    let mut volume = json!({"name": "v", "mountPath": "/data", "host": host});
    if let Some(sub) = sub_path {
        volume["subPath"] = json!(sub);
    }
    json!({
        "image": {"uri": "host"},
        "entrypoint": ["tail", "-f", "/dev/null"],
        "volumes": [volume],
    })
}

#[tokio::test]
async fn host_volumes_only_under_allowed_host_paths() {
    // None allowed by default: not even `/`, read-write.
    let server = Server::start(&[]);
    for path in ["/", "/etc", "/tmp"] {
        let (status, body) = create_status(&server, with_volume(json!({"path": path}), None)).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(body["code"], "VOLUME::HOST_PATH_NOT_ALLOWED", "{body}");
        assert!(body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("--allowed-host-path"));
    }
    drop(server);

    let allowed = tempfile::tempdir().expect("tmp");
    std::fs::create_dir(allowed.path().join("sub")).expect("mkdir");
    std::os::unix::fs::symlink("/", allowed.path().join("to-root")).expect("link");
    std::os::unix::fs::symlink("sub", allowed.path().join("to-sub")).expect("link");
    let root = allowed.path().to_string_lossy().into_owned();
    let server = Server::start(&["--allowed-host-path", &root]);
    let cases: Vec<(Value, Option<&str>, &str)> = vec![
        (json!({"path": "/"}), None, "VOLUME::HOST_PATH_NOT_ALLOWED"),
        (
            json!({"path": "/etc"}),
            None,
            "VOLUME::HOST_PATH_NOT_ALLOWED",
        ),
        (
            json!({"path": format!("{root}/../")}),
            None,
            "VOLUME::INVALID_HOST_PATH",
        ),
        (
            json!({"path": format!("{root}/sub/../..")}),
            None,
            "VOLUME::INVALID_HOST_PATH",
        ),
        (
            json!({"path": format!("{root}/./sub")}),
            None,
            "VOLUME::INVALID_HOST_PATH",
        ),
        (
            json!({"path": "relative/path"}),
            None,
            "VOLUME::INVALID_HOST_PATH",
        ),
        (
            json!({"path": format!("{root}/to-root")}),
            None,
            "VOLUME::HOST_PATH_NOT_ALLOWED",
        ),
        (
            json!({"path": root.clone()}),
            Some("to-root/etc"),
            "VOLUME::HOST_PATH_NOT_ALLOWED",
        ),
        (
            json!({"path": root.clone()}),
            Some("../x"),
            "VOLUME::INVALID_SUB_PATH",
        ),
        (
            json!({"path": format!("{root}/missing")}),
            None,
            "VOLUME::HOST_PATH_NOT_FOUND",
        ),
        // A sibling sharing the prefix as a string is not under it.
        (
            json!({"path": format!("{root}-other")}),
            None,
            "VOLUME::HOST_PATH_NOT_FOUND",
        ),
    ];
    for (host, sub, code) in cases {
        let (status, body) = create_status(&server, with_volume(host.clone(), sub)).await;
        assert_eq!(status, 400, "{host} {sub:?}: {body}");
        assert_eq!(body["code"], code, "{host} {sub:?}: {body}");
    }
    for (host, sub) in [
        (json!({"path": root.clone()}), None),
        (json!({"path": format!("{root}/sub")}), None),
        (json!({"path": root.clone()}), Some("sub")),
        (json!({"path": format!("{root}/to-sub")}), None),
    ] {
        let (status, body) = create_status(&server, with_volume(host.clone(), sub)).await;
        assert_eq!(status, 202, "{host} {sub:?}: {body}");
        let id = body["id"].as_str().expect("id").to_string();
        server
            .delete(&format!("/v1/sandboxes/{id}"))
            .send()
            .await
            .expect("delete");
    }
}

/// Sends `head` and `body_part` on a raw connection, then drops it mid-body.
fn interrupted_request(addr: &str, head: &str, body_part: &[u8]) {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.write_all(head.as_bytes()).expect("head");
    tcp.write_all(body_part).expect("body");
    tcp.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(300));
    drop(tcp);
}

async fn upload(server: &Server, id: &str, path: &str, content: Vec<u8>) -> u16 {
    let (url, headers) = server.endpoint(id, EXECD_PORT).await;
    let form = reqwest::multipart::Form::new()
        .part(
            "metadata",
            reqwest::multipart::Part::text(json!({"path": path}).to_string()),
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(content).file_name("f"),
        );
    let mut req = server
        .client
        .post(format!("{url}/files/upload"))
        .multipart(form);
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    req.send().await.expect("upload").status().as_u16()
}

async fn download(server: &Server, id: &str, path: &str) -> Vec<u8> {
    let (url, headers) = server.endpoint(id, EXECD_PORT).await;
    let mut req = server
        .client
        .get(format!("{url}/files/download"))
        .query(&[("path", path)]);
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let resp = req.send().await.expect("download");
    assert_eq!(resp.status().as_u16(), 200);
    resp.bytes().await.expect("bytes").to_vec()
}

#[tokio::test]
async fn an_interrupted_upload_leaves_the_old_file_intact() {
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let old: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    assert_eq!(
        upload(&server, &id, "/workspace/data.bin", old.clone()).await,
        200
    );

    // 40 MB announced, 8 MB sent, then the client is gone.
    let (url, headers) = server.endpoint(&id, EXECD_PORT).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let path = url
        .split_once(&addr)
        .map(|(_, p)| p)
        .expect("proxy path")
        .to_string();
    let boundary = "osbboundary";
    let preamble = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{}\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\nContent-Type: application/octet-stream\r\n\r\n",
        json!({"path": "/workspace/data.bin"})
    );
    let total = preamble.len() + 40 * 1024 * 1024 + 64;
    let mut head = format!(
        "POST {path}/files/upload HTTP/1.1\r\nHost: {addr}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {total}\r\n"
    );
    for (k, v) in &headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut body = preamble.into_bytes();
    body.extend(vec![b'N'; 8 * 1024 * 1024]);
    let head_for_thread = head.clone();
    tokio::task::spawn_blocking(move || interrupted_request(&addr, &head_for_thread, &body))
        .await
        .expect("interrupted upload");

    // The agent notices the cut within a moment; the file must be the old one then
    // and stay so (no partial file renamed in later).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let now = download(&server, &id, "/workspace/data.bin").await;
    assert_eq!(
        now.len(),
        old.len(),
        "the old file was replaced by a partial one"
    );
    assert!(now == old);
    // No temporary file is left behind.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let leftovers: Vec<String> = std::fs::read_dir(server.sandbox_fs(&id).join("workspace"))
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != "data.bin")
            .collect();
        if leftovers.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left behind: {leftovers:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The agent process of sandbox `id` on the host (its environment names the id).
fn agent_pid(id: &str) -> Option<i32> {
    let needle = format!("OPENSANDBOX_ID={id}");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.get(1) != Some(&&b"agent"[..]) {
            continue;
        }
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            return Some(pid);
        }
    }
    None
}

/// Peak resident memory of `pid`, in bytes (VmHWM).
fn peak_rss(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

async fn replace_in(server: &Server, id: &str, path: &str, old: &str, new: &str) -> (u16, Value) {
    let (url, headers) = server.endpoint(id, EXECD_PORT).await;
    let mut req = server
        .client
        .post(format!("{url}/files/replace?verbose=true"))
        .json(&json!({ path: {"old": old, "new": new} }));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let resp = req.send().await.expect("replace");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Replace on a sparse file of `size` bytes with one match at the end: the agent's
/// peak RSS must stay flat, and the file be replaced by a rename (mode kept).
async fn replace_peak_rss(size: u64) {
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let host = server.sandbox_fs(&id).join("workspace/big.txt");
    {
        let file = std::fs::File::create(&host).expect("create");
        file.set_len(size).expect("sparse");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&host)
            .expect("append");
        file.write_all(b"needle-at-the-end").expect("write");
    }
    std::fs::set_permissions(&host, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let inode_before = std::fs::metadata(&host).expect("meta").ino();
    let pid = agent_pid(&id).expect("agent process");
    let before = peak_rss(pid);
    let (status, body) = replace_in(&server, &id, "/workspace/big.txt", "needle", "NEEDLE").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["/workspace/big.txt"]["replacedCount"], 1, "{body}");
    let after = peak_rss(pid);
    // Streamed: a whole-file replace needs twice the file in memory, a streamed one
    // a couple of MiB.
    assert!(
        after < before + 32 * 1024 * 1024,
        "agent peak RSS went from {before} to {after} bytes"
    );
    let meta = std::fs::metadata(&host).expect("meta");
    assert_eq!(meta.len(), size + 17);
    // Written to a new file and renamed over the old one (mode kept).
    assert_ne!(meta.ino(), inode_before);
    assert_eq!(meta.mode() & 0o777, 0o640);
    let mut tail = vec![0u8; 17];
    let mut file = std::fs::File::open(&host).expect("open");
    std::io::Seek::seek(&mut file, std::io::SeekFrom::End(-17)).expect("seek");
    file.read_exact(&mut tail).expect("read");
    assert_eq!(tail, b"NEEDLE-at-the-end");
}

#[tokio::test]
async fn replace_streams_with_bounded_memory_and_renames_atomically() {
    // 96 MiB: a whole-file replace needs twice that; a streamed one a few MiB.
    replace_peak_rss(96 * 1024 * 1024).await;
}

#[tokio::test]
#[ignore = "writes and rewrites a 1 GB file; run with --ignored"]
async fn replace_on_a_1_gb_file_keeps_agent_memory_flat() {
    replace_peak_rss(1 << 30).await;
}

/// Every numeric field of the lifecycle and execd APIs, out of range: 4xx, never a
/// 5xx, a dropped connection or a dead server.
#[tokio::test]
async fn out_of_range_numbers_are_400s_not_panics() {
    let server = Server::start(&[]);
    let huge = [
        json!(9_000_000_000_000i64),
        json!(9e12),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(-1),
        json!(i64::MIN),
        json!(1e300),
        json!(-0.5),
    ];
    let base = json!({"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"]});
    for value in &huge {
        let mut body = base.clone();
        body["timeout"] = value.clone();
        let (status, reply) = create_status(&server, body).await;
        assert_eq!(status, 400, "timeout {value}: {reply}");
    }
    // Raw JSON numbers beyond every integer type.
    for raw in [
        "1e400",
        "99999999999999999999999999",
        "-99999999999999999999999999",
    ] {
        let body = format!(r#"{{"image":{{"uri":"host"}},"entrypoint":["true"],"timeout":{raw}}}"#);
        let resp = server
            .post("/v1/sandboxes")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("create");
        assert_eq!(resp.status().as_u16(), 400, "timeout {raw}");
    }
    let id = server.create_idle(json!({"timeout": 3600})).await;
    let lifecycle = [
        "/v1/sandboxes?page=18446744073709551616",
        "/v1/sandboxes?page=9223372036854775807",
        "/v1/sandboxes?pageSize=18446744073709551615",
        "/v1/sandboxes?page=-1",
        "/v1/snapshots?pageSize=99999999999999999999",
    ];
    for path in lifecycle {
        let status = server
            .get(path)
            .send()
            .await
            .expect("list")
            .status()
            .as_u16();
        assert!(
            (200..500).contains(&status) && status != 0,
            "{path}: {status}"
        );
    }
    for port in ["0", "-1", "65536", "99999999999999999999", "4294967296"] {
        let status = server
            .get(&format!("/v1/sandboxes/{id}/endpoints/{port}"))
            .send()
            .await
            .expect("endpoint")
            .status()
            .as_u16();
        assert_eq!(status, 400, "port {port}");
    }
    for q in [
        "tail=-1",
        "tail=18446744073709551616",
        "tail=1e9",
        "limit=99999999999999",
        "limit=-3",
    ] {
        let kind = if q.starts_with("limit") {
            "events"
        } else {
            "logs"
        };
        let status = server
            .get(&format!("/v1/sandboxes/{id}/diagnostics/{kind}?{q}"))
            .send()
            .await
            .expect("diag")
            .status()
            .as_u16();
        assert_eq!(status, 400, "diagnostics {q}");
    }
    for at in [
        "+275760-09-13T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "0000-01-01T00:00:00Z",
    ] {
        let status = server
            .post(&format!("/v1/sandboxes/{id}/renew-expiration"))
            .json(&json!({ "expiresAt": at }))
            .send()
            .await
            .expect("renew")
            .status()
            .as_u16();
        assert!((200..500).contains(&status), "renew {at}: {status}");
    }

    // The execd API through the proxy.
    let (url, headers) = server.endpoint(&id, EXECD_PORT).await;
    let send = |method: reqwest::Method, path: String, body: Option<Value>| {
        let mut req = server.client.request(method, format!("{url}{path}"));
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        req
    };
    let mut checks: Vec<(reqwest::Method, String, Option<Value>)> = Vec::new();
    for value in &huge {
        checks.push((
            reqwest::Method::POST,
            "/command".into(),
            Some(json!({"command": "true", "timeout": value})),
        ));
        checks.push((
            reqwest::Method::POST,
            "/command".into(),
            Some(json!({"command": "true", "uid": value})),
        ));
        checks.push((
            reqwest::Method::POST,
            "/command".into(),
            Some(json!({"command": "true", "uid": 0, "gid": value})),
        ));
        checks.push((
            reqwest::Method::POST,
            "/code".into(),
            Some(json!({"code": "1", "context": {"language": "bash"}, "timeout": value})),
        ));
        checks.push((
            reqwest::Method::POST,
            "/files/permissions".into(),
            Some(json!({"/workspace": {"mode": value}})),
        ));
        checks.push((
            reqwest::Method::POST,
            "/directories".into(),
            Some(json!({"/workspace/d": {"mode": value}})),
        ));
    }
    for q in [
        "cursor=9223372036854775807",
        "cursor=-1",
        "cursor=18446744073709551616",
    ] {
        checks.push((
            reqwest::Method::GET,
            format!("/command/nope/logs?{q}"),
            None,
        ));
    }
    for q in [
        "offset=9223372036854775807",
        "offset=-1",
        "limit=-5",
        "limit=9223372036854775807",
        "offset=18446744073709551616",
    ] {
        checks.push((
            reqwest::Method::GET,
            format!("/files/download?path=/etc/hostname&{q}"),
            None,
        ));
    }
    for q in [
        "depth=9223372036854775807",
        "depth=-1",
        "depth=99999999999999999999",
    ] {
        checks.push((
            reqwest::Method::GET,
            format!("/directories/list?path=/workspace&{q}"),
            None,
        ));
    }
    for q in ["interval=-1", "interval=9223372036854775807", "interval=0"] {
        checks.push((reqwest::Method::GET, format!("/metrics?{q}"), None));
    }
    for (method, path, body) in checks {
        let resp = send(method.clone(), path.clone(), body.clone())
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path} {body:?}: {e}"));
        let status = resp.status().as_u16();
        assert!(
            status < 500,
            "{method} {path} {body:?}: {status} {:?}",
            resp.text().await
        );
    }
    // Ranges beyond u64.
    for range in [
        "bytes=18446744073709551615-",
        "bytes=0-18446744073709551616",
        "bytes=-99999999999999999999",
    ] {
        let resp = send(
            reqwest::Method::GET,
            "/files/download?path=/etc/hostname".into(),
            None,
        )
        .header("Range", range)
        .send()
        .await
        .expect("range");
        assert!(resp.status().as_u16() < 500, "{range}: {}", resp.status());
    }
    // A session run with a huge timeout.
    let resp = send(reqwest::Method::POST, "/session".into(), Some(json!({})))
        .send()
        .await
        .expect("session");
    if resp.status().is_success() {
        let v: Value = resp.json().await.unwrap_or(Value::Null);
        if let Some(sid) = v["session_id"]
            .as_str()
            .or(v["sessionId"].as_str())
            .or(v["id"].as_str())
        {
            for value in &huge {
                let resp = send(
                    reqwest::Method::POST,
                    format!("/session/{sid}/run"),
                    Some(json!({"command": "true", "timeout": value})),
                )
                .send()
                .await
                .expect("session run");
                assert!(
                    resp.status().as_u16() < 500,
                    "session timeout {value}: {}",
                    resp.status()
                );
            }
        }
    }
    let health = server
        .client
        .get(server.url("/health"))
        .send()
        .await
        .expect("alive");
    assert_eq!(health.status().as_u16(), 200);
}

#[tokio::test]
async fn half_open_connections_are_closed_after_the_header_timeout() {
    let server = Server::start(&["--header-read-timeout", "1"]);
    let addr = server.base.trim_start_matches("http://").to_string();
    let started = Instant::now();
    let handles: Vec<_> = (0..50)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut tcp = TcpStream::connect(&addr).expect("connect");
                tcp.set_read_timeout(Some(Duration::from_secs(10)))
                    .expect("timeout");
                if i % 2 == 0 {
                    // Half a request; the other half of the connections send nothing.
                    tcp.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                        .expect("half");
                }
                let mut buf = [0u8; 1024];
                // Closed by the server: EOF (possibly after a 408), not our 10 s timeout.
                loop {
                    match tcp.read(&mut buf) {
                        Ok(0) => return Ok(()),
                        Ok(_) => continue,
                        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
                        Err(e) => return Err(e.to_string()),
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle
            .join()
            .expect("thread")
            .expect("connection was not closed by the server");
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    // A complete request is still served.
    let health = server
        .client
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status().as_u16(), 200);
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let server = Server::start(&["--max-connections", "2", "--header-read-timeout", "2"]);
    let addr = server.base.trim_start_matches("http://").to_string();
    // Two idle connections take both slots (the header timeout frees them after 2 s).
    let idle: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let health = client
        .get(server.url("/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status().as_u16(), 200);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1200),
        "served after {waited:?} despite the limit"
    );
    drop(idle);
}

#[tokio::test]
async fn the_agent_socket_and_status_file_are_out_of_the_sandboxs_reach() {
    if !common::bwrap_usable() {
        eprintln!("SKIPPED: bubblewrap cannot create namespaces here; this is about isolation");
        return;
    }
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let (out, _) = server
        .run(
            &id,
            "ls -A /.opensandbox; test -e /.opensandbox/run && echo RUN_VISIBLE; \
             find / -xdev \\( -name execd.sock -o -name status.json \\) 2>/dev/null | head -n 3; echo done",
        )
        .await;
    assert_eq!(out, vec!["opensandbox-server", "done"], "{out:?}");
    let run = server.data_dir.join("sandboxes").join(&id).join("run");
    assert_eq!(mode(&run), 0o700);
    assert_eq!(mode(&run.join("execd.sock")), 0o600);

    // The old attack: make the status file a FIFO (with its tmp name a directory so
    // the agent cannot replace it) and exit. The server must still record the exit.
    let created = server
        .create(json!({
            "image": {"uri": "host"},
            "entrypoint": ["sh", "-c",
                "d=/.opensandbox/run; mkdir -p $d 2>/dev/null; rm -f $d/status.json; \
                 mkdir -p $d/status.json.tmp 2>/dev/null; mkfifo $d/status.json 2>/dev/null; \
                 ln -sf /etc/shadow $d/execd.sock 2>/dev/null; sleep 0.5; exit 3"],
        }))
        .await;
    let id = created["id"].as_str().expect("id").to_string();
    let ended = server
        .wait_for(&id, "its end", |sb| sb["status"]["state"] == "Failed")
        .await;
    assert_eq!(ended["status"]["reason"], "ENTRYPOINT_EXITED", "{ended}");
    assert!(
        ended["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("code 3"),
        "{ended}"
    );
    // The server did not hang on anything.
    let list = server
        .get("/v1/sandboxes")
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("list");
    assert_eq!(list.status().as_u16(), 200);
}

#[tokio::test]
async fn a_setuid_file_made_in_a_sandbox_is_out_of_reach_of_other_users() {
    let (_parent, data) = open_data_dir();
    let server = Server::start_in(&data, &[]);
    let id = server.create_idle(json!({})).await;
    let (_, code) = server
        .run(&id, "cp /bin/sh ./rootshell && chmod 4755 ./rootshell")
        .await;
    assert_eq!(code, Some(0));
    let file = server.sandbox_fs(&id).join("workspace/rootshell");
    assert!(file.exists());
    assert!(
        !reachable_by_nobody(&file),
        "another user can reach {} (mode {:o})",
        file.display(),
        mode(&file)
    );
    if common::bwrap_usable() {
        let (out, _) = server
            .run(
                &id,
                "for m in /workspace /tmp /root; do grep \" $m \" /proc/self/mountinfo | grep -q nosuid.*nodev && echo $m-nosuid; done",
            )
            .await;
        assert_eq!(
            out,
            vec!["/workspace-nosuid", "/tmp-nosuid", "/root-nosuid"]
        );
    }
    drop(server);
    common::kill_processes_mentioning(&data);
}

/// The sandbox swaps `/workspace/d` between a directory and a symlink to a host
/// directory, and `/workspace/f` between a file and a symlink to a host file, as fast
/// as it can while snapshots are taken. No snapshot may hold the host file's content.
#[tokio::test]
async fn snapshots_never_follow_symlinks_on_the_host() {
    if !common::bwrap_usable() {
        eprintln!("SKIPPED: the race needs the sandbox's view of paths to differ from the host's");
        return;
    }
    let secret_dir = tempfile::Builder::new()
        .prefix("osbsecret")
        .tempdir()
        .expect("tmp");
    let secret = secret_dir.path().join("secret.txt");
    let marker = "HOST-ONLY-SECRET-4f1c";
    std::fs::write(&secret, marker).expect("secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let host_dir = secret_dir.path().display().to_string();
    let host_file = secret.display().to_string();
    // Static plants, plus a fast swapping loop in the background (perl: a syscall
    // per swap, so the copy's check-then-use windows are hit).
    let swapper = format!(
        r#"chdir "/workspace" or die; my ($hd, $hf) = ("{host_dir}", "{host_file}");
for my $i (0..9) {{ mkdir "d$i"; open(my $o, ">", "d$i/x") and close $o; open(my $p, ">", "f$i") and close $p; }}
while (1) {{ for my $i (0..9) {{
  rename "d$i", "d$i.old"; symlink $hd, "d$i"; unlink "d$i"; rename "d$i.old", "d$i";
  symlink $hf, "f$i.lnk"; rename "f$i.lnk", "f$i"; open(my $o, ">", "f$i.new") and close $o; rename "f$i.new", "f$i";
}} }}"#
    );
    std::fs::write(server.sandbox_fs(&id).join("workspace/swap.pl"), swapper).expect("swapper");
    let script = format!(
        "cd /workspace && ln -s {host_file} planted-file && ln -s {host_dir} planted-dir && \
         for i in $(seq 1 50); do echo $i > pad$i; done && \
         (perl swap.pl >/dev/null 2>&1 </dev/null &) ; echo started"
    );
    let (out, _) = server.run(&id, &script).await;
    assert_eq!(out, vec!["started"]);
    let mut snapshots = Vec::new();
    let mut states = Vec::new();
    for _ in 0..30 {
        let snap = server.snapshot(&id, Duration::from_secs(30)).await;
        states.push(snap["status"].clone());
        let sid = snap["id"].as_str().expect("id").to_string();
        snapshots.push(server.data_dir.join("snapshots").join(sid));
    }
    let mut leaked = Vec::new();
    for dir in &snapshots {
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let meta = std::fs::symlink_metadata(&path).expect("meta");
                if meta.is_dir() {
                    stack.push(path);
                } else if meta.is_file() {
                    let content = std::fs::read(&path).unwrap_or_default();
                    if content
                        .windows(marker.len())
                        .any(|w| w == marker.as_bytes())
                    {
                        leaked.push(path);
                    }
                }
            }
        }
    }
    assert!(
        leaked.is_empty(),
        "host file copied into snapshots: {leaked:?}"
    );
    // A tree changing under the copy is no reason to fail.
    for state in &states {
        assert_eq!(state["state"], "Ready", "{state}");
    }
    // The static plants are kept as the links they are.
    let planted = snapshots[0].join("workspace/planted-file");
    assert!(std::fs::symlink_metadata(&planted)
        .expect("planted")
        .file_type()
        .is_symlink());
    let _ = KEY;
}
