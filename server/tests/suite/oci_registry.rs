//! Registries end to end: `opensandbox-server images push` feeds a loopback
//! `docker-registry`, `images pull|ls|rm` manage the cache, and a create request's
//! `image.auth` pulls from a registry that asks for credentials.
//!
//! Gated like `oci_runc`: each test prints why and passes when this machine cannot
//! run it (not root, no `docker-registry`, no `htpasswd`, no local image: build it with
//! `scripts/build-image.sh`).

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// `#[test]` functions only, not in the helpers they share).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::runc::registry_layout;
use common::Server;
use serde_json::{json, Value};

macro_rules! need {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(why) => {
                eprintln!("SKIPPED (registry): {why}");
                return;
            }
        }
    };
}

/// The manifest digest of the layout's `latest` tag, from its index.
fn layout_digest(layout: &Path) -> String {
    let index: Value =
        serde_json::from_slice(&std::fs::read(layout.join("index.json")).expect("index"))
            .expect("index json");
    index["manifests"]
        .as_array()
        .and_then(|ms| {
            ms.iter()
                .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == "latest")
        })
        .and_then(|m| m["digest"].as_str())
        .expect("latest tag")
        .to_string()
}

/// `docker-registry serve` on a free loopback port, killed on drop.
struct Registry {
    child: std::process::Child,
    addr: String,
    _tmp: tempfile::TempDir,
}

impl Registry {
    async fn start(htpasswd: Option<(&str, &str)>) -> Result<Self, String> {
        let tmp = tempfile::tempdir().expect("tmp");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            tmp.path().join("data").display()
        );
        if let Some((user, password)) = htpasswd {
            let out = Command::new("htpasswd")
                .args(["-Bbn", user, password])
                .output()
                .map_err(|e| format!("htpasswd is missing (apt-get install apache2-utils): {e}"))?;
            let file = tmp.path().join("htpasswd");
            std::fs::write(&file, &out.stdout).expect("htpasswd file");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: opensandbox-test\n    path: {}\n",
                file.display()
            ));
        }
        let path = tmp.path().join("config.yml");
        std::fs::write(&path, config).expect("config");
        let child = Command::new("/usr/bin/docker-registry")
            .arg("serve")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry");
        let registry = Self {
            child,
            addr: format!("127.0.0.1:{port}"),
            _tmp: tmp,
        };
        let client = reqwest::Client::new();
        for _ in 0..100 {
            // 200, or 401 when it asks for credentials: either way it is up.
            if let Ok(r) = client
                .get(format!("http://{}/v2/", registry.addr))
                .send()
                .await
            {
                if r.status().is_success() || r.status().as_u16() == 401 {
                    return Ok(registry);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err("docker-registry did not come up".into())
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `opensandbox-server images ARGS`: (success, stdout, stderr).
fn images(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(common::server_bin())
        .arg("images")
        .args(args)
        .env_remove("OPENSANDBOX_REGISTRY_USERNAME")
        .env_remove("OPENSANDBOX_REGISTRY_PASSWORD")
        .envs(env.iter().copied())
        .output()
        .expect("run images");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The digest an `images push|pull` printed (its first word).
fn printed_digest(stdout: &str) -> String {
    stdout
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn push_then_pull_by_tag_and_by_digest() {
    let layout = need!(registry_layout());
    let registry = need!(Registry::start(None).await);
    let expected = layout_digest(&layout);
    let source = format!("oci:{}:latest", layout.display());
    let dest = format!("{}/test/debian-python:v1", registry.addr);

    let t0 = Instant::now();
    let (ok, out, err) = images(&["push", &source, &dest], &[]);
    assert!(ok, "push: {out}{err}");
    eprintln!("push: {out} ({:?})", t0.elapsed());
    assert_eq!(printed_digest(&out), expected);
    // A second push finds every blob there already.
    let (ok, out, err) = images(&["push", &source, &dest], &[]);
    assert!(
        ok && out.contains("0 blobs uploaded"),
        "re-push: {out}{err}"
    );

    // The registry serves the manifest under the same digest.
    let resp = reqwest::Client::new()
        .head(format!(
            "http://{}/v2/test/debian-python/manifests/v1",
            registry.addr
        ))
        .header("Accept", "application/vnd.oci.image.manifest.v1+json")
        .send()
        .await
        .expect("HEAD manifest");
    assert_eq!(
        resp.headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok()),
        Some(expected.as_str())
    );

    let data = tempfile::tempdir().expect("data");
    let data_dir = data.path().to_string_lossy().into_owned();
    let by_digest = format!("{}/test/debian-python@{expected}", registry.addr);
    for reference in [dest.as_str(), by_digest.as_str()] {
        let t0 = Instant::now();
        let (ok, out, err) = images(&["pull", reference, "--data-dir", &data_dir], &[]);
        assert!(ok, "pull {reference}: {out}{err}");
        eprintln!("pull: {out} ({:?})", t0.elapsed());
        assert_eq!(printed_digest(&out), expected, "{reference}");
    }
    let (ok, out, err) = images(&["ls", "--data-dir", &data_dir], &[]);
    assert!(ok, "ls: {err}");
    let rows: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "one image, two references: {out}");
    assert!(rows[0].starts_with(&expected), "{out}");
    assert!(
        rows[0].contains(&dest) && rows[0].contains(&by_digest),
        "{out}"
    );
    assert!(rows[0].contains(" MB"), "size shown: {out}");
    let unpacked = data
        .path()
        .join("images/sha256")
        .join(expected.trim_start_matches("sha256:"));
    assert!(unpacked.join("rootfs/usr/bin").is_dir());

    // A digest that is nowhere, then removal by a short digest.
    let (ok, _, err) = images(&["rm", "sha256:0123456789ab", "--data-dir", &data_dir], &[]);
    assert!(!ok && err.contains("no cached image"), "{err}");
    let short = &expected["sha256:".len().."sha256:".len() + 12];
    let (ok, out, err) = images(&["rm", short, "--data-dir", &data_dir], &[]);
    assert!(ok, "rm: {out}{err}");
    assert!(!unpacked.exists());
    let (_, out, _) = images(&["ls", "--data-dir", &data_dir], &[]);
    assert_eq!(out.lines().count(), 1, "empty after rm: {out}");

    // A pull of a tag the registry lacks says what the registry said.
    let missing = format!("{}/test/debian-python:nope", registry.addr);
    let (ok, _, err) = images(&["pull", &missing, "--data-dir", &data_dir], &[]);
    assert!(!ok && err.contains("MANIFEST_UNKNOWN"), "{err}");
}

/// Deletes every sandbox of the server and removes runc containers and mounts left.
async fn cleanup(server: &Server) {
    if let Ok(resp) = server.get("/v1/sandboxes?pageSize=200").send().await {
        if let Ok(v) = resp.json::<Value>().await {
            for item in v["items"].as_array().into_iter().flatten() {
                if let Some(id) = item["id"].as_str() {
                    let _ = server.delete(&format!("/v1/sandboxes/{id}")).send().await;
                }
            }
        }
    }
}

#[tokio::test]
async fn image_auth_pulls_from_a_private_registry() {
    let layout = need!(registry_layout());
    let registry = need!(Registry::start(Some(("osb", "s3cret-pass"))).await);
    let source = format!("oci:{}:latest", layout.display());
    let dest = format!("{}/private/python:3.11", registry.addr);

    // Without credentials the registry refuses the push, and says why.
    let (ok, _, err) = images(&["push", &source, &dest], &[]);
    assert!(
        !ok && err.contains("needs credentials") && err.contains("401"),
        "{err}"
    );
    let (ok, out, err) = images(
        &["push", &source, &dest, "--username", "osb"],
        &[("OPENSANDBOX_REGISTRY_PASSWORD", "s3cret-pass")],
    );
    assert!(ok, "push with credentials: {out}{err}");

    let server = Server::start(&["--isolation", "auto", "--runtime", "runc"]);
    let create = |auth: Value| {
        let body = json!({
            "image": {"uri": dest, "auth": auth},
            "entrypoint": ["sleep", "infinity"],
            "timeout": 600,
        });
        server.post("/v1/sandboxes").json(&body).send()
    };
    for (auth, what) in [
        (Value::Null, "no credentials"),
        (
            json!({"username": "osb", "password": "wrong"}),
            "a wrong password",
        ),
    ] {
        let resp = create(auth).await.expect("create");
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.expect("json");
        assert_eq!(status, 400, "{what}: {v}");
        assert_eq!(v["code"], "SANDBOX::IMAGE_PULL_FAILED", "{what}: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("UNAUTHORIZED") && message.contains("authentication required"),
            "{what}: the registry's reason: {message}"
        );
        assert!(
            !message.contains("wrong"),
            "the password never shows: {message}"
        );
    }

    let resp = create(json!({"username": "osb", "password": "s3cret-pass"}))
        .await
        .expect("create");
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.expect("json");
    assert_eq!(status, 202, "{v}\n{}", server.log());
    assert_eq!(v["status"]["state"], "Running", "{v}");
    assert!(
        v["image"].get("auth").is_none(),
        "auth is never echoed: {v}"
    );
    let id = v["id"].as_str().expect("id").to_string();
    let (lines, code) = server.run(&id, "python3 --version").await;
    assert_eq!(code, Some(0), "{lines:?}");
    assert!(lines.join("\n").starts_with("Python 3."), "{lines:?}");
    let db = std::fs::read(server.data_dir.join("opensandbox.db")).unwrap_or_default();
    assert!(
        !db.windows(b"s3cret-pass".len())
            .any(|w| w == b"s3cret-pass"),
        "the password is not stored"
    );
    cleanup(&server).await;
}

/// A TCP proxy to `upstream` that sends the answers at about `bytes_per_sec`, so a
/// pull from the loopback registry lasts long enough to be watched.
async fn throttled_proxy(upstream: String, bytes_per_sec: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("proxy bind");
    let addr = listener.local_addr().expect("proxy addr").to_string();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                    let _ = sw.shutdown().await;
                });
                let chunk = (bytes_per_sec / 50).max(1024);
                let mut buf = vec![0u8; chunk];
                loop {
                    match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if cw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
                let _ = cw.shutdown().await;
            });
        }
    });
    addr
}

/// While its image is pulled a sandbox is Pending with the pull's progress as its
/// status message; concurrent creates of one image download it once.
#[tokio::test]
async fn pull_shows_as_pending_and_happens_once() {
    let layout = need!(registry_layout());
    let registry = need!(Registry::start(None).await);
    let source = format!("oci:{}:latest", layout.display());
    let (ok, out, err) = images(
        &[
            "push",
            &source,
            &format!("{}/library/python:3.11", registry.addr),
        ],
        &[],
    );
    assert!(ok, "push: {out}{err}");
    // About 25 MB/s: a pull of the local image takes a few seconds.
    let proxy = throttled_proxy(registry.addr.clone(), 25 << 20).await;
    let server = std::sync::Arc::new(Server::start(&[
        "--isolation",
        "auto",
        "--runtime",
        "runc",
        "--registry-mirror",
        &proxy,
    ]));
    let body = json!({
        "image": {"uri": "python:3.11"},
        "entrypoint": ["sleep", "infinity"],
        "timeout": 600,
    });
    let t0 = Instant::now();
    let creates: Vec<_> = (0..3)
        .map(|_| {
            let server = std::sync::Arc::clone(&server);
            let body = body.clone();
            tokio::spawn(async move {
                let resp = server
                    .post("/v1/sandboxes")
                    .json(&body)
                    .send()
                    .await
                    .expect("create");
                let status = resp.status().as_u16();
                (status, resp.json::<Value>().await.expect("json"))
            })
        })
        .collect();

    // Watch the list until a Pending sandbox reports how far its pull is.
    let mut seen = None;
    while seen.is_none() && t0.elapsed() < Duration::from_secs(60) {
        let v: Value = server
            .get("/v1/sandboxes?pageSize=50")
            .send()
            .await
            .expect("list")
            .json()
            .await
            .expect("json");
        for item in v["items"].as_array().into_iter().flatten() {
            let status = &item["status"];
            let message = status["message"].as_str().unwrap_or_default();
            if status["state"] == "Pending"
                && status["reason"] == "PULLING_IMAGE"
                && message.contains(" MB")
                && !message.contains(": 0/")
            {
                seen = Some(message.to_string());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut ids = Vec::new();
    for create in creates {
        let (status, v) = create.await.expect("join");
        assert_eq!(status, 202, "{v}\n{}", server.log());
        assert_eq!(v["status"]["state"], "Running", "{v}");
        ids.push(v["id"].as_str().expect("id").to_string());
    }
    eprintln!("3 creates through a throttled registry: {:?}", t0.elapsed());
    let seen =
        seen.unwrap_or_else(|| panic!("no Pending sandbox with a pull progress\n{}", server.log()));
    eprintln!("seen while pulling: {seen}");
    assert!(seen.starts_with("pulling image python:3.11: "), "{seen}");
    let log = server.log();
    assert_eq!(
        log.matches("pulled image").count(),
        1,
        "one download for three creates:\n{log}"
    );
    let (lines, code) = server.run(&ids[2], "python3 --version").await;
    assert_eq!(code, Some(0), "{lines:?}");
    cleanup(&server).await;
}

/// A registry that wants a bearer token from its own token service, which wants the
/// user's password (what Docker Hub, ghcr.io and Harbor do for private images),
/// serving the local layout's manifest and blobs.
async fn token_registry(layout: PathBuf, user: &'static str, password: &'static str) -> String {
    use axum::extract::{Path as UrlPath, State};
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use axum::routing::get;

    #[derive(Clone)]
    struct Mock {
        layout: PathBuf,
        addr: String,
        basic: String,
    }
    const TOKEN: &str = "mock-token-1";
    fn unauthorized(m: &Mock) -> Response {
        (
            StatusCode::UNAUTHORIZED,
            [(
                "www-authenticate",
                format!(
                    r#"Bearer realm="http://{}/token",service="mock",scope="repository:private/python:pull""#,
                    m.addr
                ),
            )],
            r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
        )
            .into_response()
    }
    async fn token(State(m): State<Mock>, headers: HeaderMap) -> Response {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if auth != m.basic {
            return (
                StatusCode::UNAUTHORIZED,
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"incorrect username or password"}]}"#,
            )
                .into_response();
        }
        axum::Json(json!({"token": TOKEN})).into_response()
    }
    async fn object(
        State(m): State<Mock>,
        UrlPath((kind, reference)): UrlPath<(String, String)>,
        headers: HeaderMap,
    ) -> Response {
        if headers.get("authorization").and_then(|v| v.to_str().ok())
            != Some(&format!("Bearer {TOKEN}"))
        {
            return unauthorized(&m);
        }
        let index: Value =
            serde_json::from_slice(&std::fs::read(m.layout.join("index.json")).unwrap()).unwrap();
        let digest = match (kind.as_str(), reference.as_str()) {
            ("manifests", "3.11") => index["manifests"][0]["digest"]
                .as_str()
                .unwrap()
                .to_string(),
            (_, d) => d.to_string(),
        };
        let path = m
            .layout
            .join("blobs/sha256")
            .join(digest.trim_start_matches("sha256:"));
        match std::fs::read(path) {
            Ok(bytes) if kind == "manifests" => (
                [("content-type", "application/vnd.oci.image.manifest.v1+json")],
                bytes,
            )
                .into_response(),
            Ok(bytes) => bytes.into_response(),
            Err(_) => StatusCode::NOT_FOUND.into_response(),
        }
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let basic = {
        // Base64 of "user:password", by hand: no base64 crate in this test.
        const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let raw = format!("{user}:{password}").into_bytes();
        let mut out = String::new();
        for c in raw.chunks(3) {
            let n = (c[0] as u32) << 16
                | (*c.get(1).unwrap_or(&0) as u32) << 8
                | *c.get(2).unwrap_or(&0) as u32;
            for i in 0..4 {
                if i <= c.len() {
                    out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        format!("Basic {out}")
    };
    let app = axum::Router::new()
        .route("/token", get(token))
        .route("/v2/private/python/{kind}/{reference}", get(object))
        .with_state(Mock {
            layout,
            addr: addr.clone(),
            basic,
        });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

// Multi-threaded: the mock registry keeps serving while the test waits for the CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_auth_uses_the_credentials() {
    let layout = need!(registry_layout());
    let addr = token_registry(layout, "osb", "t0ken-pass").await;
    let reference = format!("{addr}/private/python:3.11");
    let data = tempfile::tempdir().expect("data");
    let data_dir = data.path().to_string_lossy().into_owned();
    let (ok, _, err) = images(&["pull", &reference, "--data-dir", &data_dir], &[]);
    // Anonymous: the token service refuses, and its reason is passed on.
    assert!(
        !ok && err.contains("token request") && err.contains("401"),
        "{err}"
    );
    let (ok, _, err) = images(
        &[
            "pull",
            &reference,
            "--data-dir",
            &data_dir,
            "--username",
            "osb",
        ],
        &[("OPENSANDBOX_REGISTRY_PASSWORD", "wrong")],
    );
    assert!(
        !ok && err.contains("incorrect username or password"),
        "the token service's reason: {err}"
    );
    let (ok, out, err) = images(
        &[
            "pull",
            &reference,
            "--data-dir",
            &data_dir,
            "--username",
            "osb",
        ],
        &[("OPENSANDBOX_REGISTRY_PASSWORD", "t0ken-pass")],
    );
    assert!(ok, "{out}{err}");
    assert!(out.starts_with("sha256:"), "{out}");
}
