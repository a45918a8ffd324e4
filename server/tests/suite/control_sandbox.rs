//! The sandbox side through the real server: the proxy route (auth with per-sandbox
//! secrets, commands streamed, 100 MB up and down) and isolation (files, host home,
//! DATA_DIR, network).

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Server, EXECD_PORT, KEY};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

fn with_headers(
    mut req: reqwest::RequestBuilder,
    headers: &[(String, String)],
) -> reqwest::RequestBuilder {
    for (k, v) in headers {
        req = req.header(k, v);
    }
    req
}

#[tokio::test]
async fn proxy_requires_the_sandboxes_own_secret() {
    let server = Server::start(&[]);
    let a = server.create_idle(json!({})).await;
    let b = server.create_idle(json!({})).await;
    let (a_url, a_headers) = server.endpoint(&a, EXECD_PORT).await;
    let (b_url, _) = server.endpoint(&b, EXECD_PORT).await;

    // With the right secret the agent answers, on both prefixes.
    let resp = with_headers(server.client.get(format!("{a_url}/ping")), &a_headers)
        .send()
        .await
        .expect("ping");
    assert_eq!(resp.status().as_u16(), 200);
    assert!(resp.headers().contains_key("x-request-id"));
    let v1_url = a_url.replacen("/sandboxes/", "/v1/sandboxes/", 1);
    let resp = with_headers(server.client.get(format!("{v1_url}/ping")), &a_headers)
        .header("X-Request-ID", "proxied-1")
        .send()
        .await
        .expect("ping");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["x-request-id"], "proxied-1");

    // No secret, a wrong one, the API key instead, A's secret on B: all 401 JSON.
    let attempts = vec![
        server.client.get(format!("{a_url}/ping")),
        server
            .client
            .get(format!("{a_url}/ping"))
            .header("X-EXECD-ACCESS-TOKEN", "0".repeat(64)),
        server
            .client
            .get(format!("{a_url}/ping"))
            .header("OPEN-SANDBOX-API-KEY", KEY),
        with_headers(server.client.get(format!("{b_url}/ping")), &a_headers),
    ];
    for req in attempts {
        let resp = req.send().await.expect("ping");
        assert_eq!(resp.status().as_u16(), 401);
        assert!(resp.headers().contains_key("x-request-id"));
        let v: Value = resp.json().await.expect("json");
        assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
    }

    // Other ports are not reachable; unknown sandboxes are 404.
    let other = a_url.replace(&format!("/proxy/{EXECD_PORT}"), "/proxy/8080");
    let resp = with_headers(server.client.get(format!("{other}/")), &a_headers)
        .send()
        .await
        .expect("other port");
    assert_eq!(resp.status().as_u16(), 502);
    let v: Value = resp.json().await.expect("json");
    assert_eq!(v["code"], "SANDBOX::PORT_NOT_REACHABLE");
    let resp = server
        .client
        .get(server.url("/sandboxes/nope/proxy/44772/ping"))
        .send()
        .await
        .expect("unknown");
    assert_eq!(resp.status().as_u16(), 404);

    // A deleted sandbox is gone for the proxy too.
    server
        .delete(&format!("/v1/sandboxes/{a}"))
        .send()
        .await
        .expect("delete");
    let resp = with_headers(server.client.get(format!("{a_url}/ping")), &a_headers)
        .send()
        .await
        .expect("ping");
    assert_eq!(resp.status().as_u16(), 404);
}

#[tokio::test]
async fn command_streams_through_the_proxy() {
    let server = Server::start(&[]);
    let id = server
        .create_idle(json!({"env": {"GREETING": "hello-env"}}))
        .await;
    let (stdout, code) = server.run(&id, "echo hello; echo $GREETING; pwd").await;
    assert_eq!(code, Some(0), "{stdout:?}");
    assert_eq!(stdout[..2], ["hello", "hello-env"]);
    // Without isolation the workspace is a host directory ending in `workspace`.
    assert!(stdout[2].ends_with("/workspace"), "{stdout:?}");
    let (_, code) = server.run(&id, "exit 3").await;
    assert_eq!(code, Some(3));

    // The stream is not buffered: the first event arrives while the command runs.
    let (url, headers) = server.endpoint(&id, EXECD_PORT).await;
    let mut resp = with_headers(server.client.post(format!("{url}/command")), &headers)
        .json(&json!({"command": "echo first; sleep 3; echo second"}))
        .send()
        .await
        .expect("command");
    let started = std::time::Instant::now();
    let mut seen = String::new();
    while !seen.contains("first") {
        let chunk = resp
            .chunk()
            .await
            .expect("chunk")
            .expect("stream ended early");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    // Generous bound: only a proxy that buffers the whole body would wait 3 s.
    assert!(
        started.elapsed() < std::time::Duration::from_millis(2500),
        "stream was buffered"
    );
    while let Some(chunk) = resp.chunk().await.expect("chunk") {
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("second"));
}

#[tokio::test]
async fn upload_and_download_100_mb_through_the_proxy() {
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let (url, headers) = server.endpoint(&id, EXECD_PORT).await;

    let size = 100 * 1024 * 1024;
    let data: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
    let want = hex(&Sha256::digest(&data));
    let form = reqwest::multipart::Form::new()
        .part(
            "metadata",
            reqwest::multipart::Part::bytes(br#"{"path": "/workspace/big.bin"}"#.to_vec())
                .file_name("metadata")
                .mime_str("application/json")
                .expect("mime"),
        )
        .part(
            "file",
            reqwest::multipart::Part::bytes(data)
                .file_name("big.bin")
                .mime_str("application/octet-stream")
                .expect("mime"),
        );
    let resp = with_headers(server.client.post(format!("{url}/files/upload")), &headers)
        .multipart(form)
        .send()
        .await
        .expect("upload");
    assert_eq!(resp.status().as_u16(), 200, "{:?}", resp.text().await);

    // The file landed inside the sandbox.
    let on_host = server.sandbox_fs(&id).join("workspace/big.bin");
    assert_eq!(
        std::fs::metadata(&on_host).expect("uploaded").len(),
        size as u64
    );

    let mut resp = with_headers(server.client.get(format!("{url}/files/download")), &headers)
        .query(&[("path", "/workspace/big.bin")])
        .send()
        .await
        .expect("download");
    assert_eq!(resp.status().as_u16(), 200);
    let mut hasher = Sha256::new();
    let mut got = 0usize;
    while let Some(chunk) = resp.chunk().await.expect("chunk") {
        got += chunk.len();
        hasher.update(&chunk);
    }
    assert_eq!(got, size);
    assert_eq!(hex(&hasher.finalize()), want);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn sandboxes_are_isolated_from_each_other_and_the_host() {
    if !common::bwrap_usable() {
        eprintln!("SKIPPED: bubblewrap cannot create namespaces on this machine; isolation is not testable");
        return;
    }
    let server = Server::start(&[]);
    let a = server.create_idle(json!({})).await;
    let b = server.create_idle(json!({})).await;

    // B's files are not visible from A (same paths, different directories).
    let (_, code) = server
        .run(
            &b,
            "echo secret-of-b > /workspace/b-only.txt && echo x > /tmp/b-tmp",
        )
        .await;
    assert_eq!(code, Some(0));
    let (out, _) = server
        .run(
            &a,
            "ls -a /workspace /tmp; test -e /workspace/b-only.txt && echo VISIBLE",
        )
        .await;
    assert!(
        !out.iter()
            .any(|l| l.contains("VISIBLE") || l.contains("b-only") || l.contains("b-tmp")),
        "{out:?}"
    );

    // Neither the data directory nor the host's home is mounted.
    let marker = format!("/root/.osb-isolation-marker-{}", std::process::id());
    std::fs::write(&marker, b"host").expect("host marker");
    let data_dir = server.data_dir.to_string_lossy().into_owned();
    let (out, _) = server
        .run(
            &a,
            &format!(
                "test -e {marker} && echo HOST_HOME_VISIBLE; test -e {data_dir} && echo DATA_DIR_VISIBLE; \
                 test -e /.opensandbox/run/../../sandboxes && echo SANDBOXES_VISIBLE; echo done"
            ),
        )
        .await;
    let _ = std::fs::remove_file(&marker);
    assert_eq!(out, vec!["done"], "{out:?}");

    // Only loopback in the network namespace.
    let (out, code) = server
        .run(
            &a,
            "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '",
        )
        .await;
    assert_eq!(code, Some(0));
    assert_eq!(out, vec!["lo"]);

    // A port the test opens on the host's loopback cannot be reached.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (out, _) = server
        .run(
            &a,
            &format!(
                "(echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED || echo refused"
            ),
        )
        .await;
    assert_eq!(out, vec!["refused"]);

    // Its own hostname, and root inside so files keep their owner.
    let (out, _) = server.run(&a, "hostname; id -u").await;
    assert_eq!(out, vec![format!("sandbox-{}", &a[..8]), "0".to_string()]);

    // System directories are read-only.
    let (out, _) = server
        .run(
            &a,
            "touch /usr/osb-test 2>/dev/null && echo WRITABLE || echo readonly",
        )
        .await;
    assert_eq!(out, vec!["readonly"]);
}

#[tokio::test]
async fn host_volumes_are_mounted_and_read_only_is_honoured() {
    if !common::bwrap_usable() {
        eprintln!("SKIPPED: bubblewrap cannot create namespaces on this machine; volumes need it");
        return;
    }
    let shared = tempfile::tempdir().expect("tmp");
    std::fs::write(shared.path().join("in.txt"), b"from host").expect("write");
    let path = shared.path().to_string_lossy().into_owned();
    let server = Server::start(&["--allowed-host-path", &path]);
    let id = server
        .create_idle(json!({"volumes": [
            {"name": "rw", "mountPath": "/data", "host": {"path": path}},
            {"name": "ro", "mountPath": "/ro", "readOnly": true, "host": {"path": path}},
        ]}))
        .await;
    let (out, code) = server
        .run(&id, "cat /data/in.txt; echo; echo written > /data/out.txt; touch /ro/x 2>/dev/null && echo RO_WRITABLE || echo ro-ok")
        .await;
    assert_eq!(code, Some(0));
    assert_eq!(out, vec!["from host", "ro-ok"]);
    assert_eq!(
        std::fs::read(shared.path().join("out.txt")).expect("out"),
        b"written\n"
    );
}
