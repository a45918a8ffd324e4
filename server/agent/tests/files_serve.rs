//! The agent process: Unix socket serving and entrypoint supervision.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use clap::Parser;
use opensandbox_agent::AgentArgs;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    agent: AgentArgs,
}

fn args(socket: &Path, root: &Path, status: &Path, entrypoint: &[&str]) -> AgentArgs {
    let mut argv = vec![
        "agent".to_string(),
        "--socket".into(),
        socket.display().to_string(),
        "--root".into(),
        root.display().to_string(),
        "--status-file".into(),
        status.display().to_string(),
        "--".into(),
    ];
    argv.extend(entrypoint.iter().map(|s| s.to_string()));
    Cli::try_parse_from(argv).unwrap().agent
}

async fn http_over_unix(socket: &Path, request: &str) -> String {
    let mut stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

async fn wait_for_socket(socket: &Path) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while tokio::net::UnixStream::connect(socket).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("agent socket did not come up");
}

#[tokio::test]
async fn serves_over_the_socket_and_reports_the_entrypoint_exit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let socket = dir.path().join("run/execd.sock");
    let status = dir.path().join("run/status.json");
    // The entrypoint runs in the workdir and exits 3 once the test drops a file there.
    let a = args(
        &socket,
        &root,
        &status,
        &[
            "sh",
            "-c",
            "while [ ! -f stop ]; do sleep 0.05; done; exit 3",
        ],
    );
    assert_eq!(a.workdir, Path::new("/workspace"));
    let agent = tokio::spawn(opensandbox_agent::run(a));
    wait_for_socket(&socket).await;

    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let meta = std::fs::metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    let ping = http_over_unix(
        &socket,
        "GET /ping HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(ping.starts_with("HTTP/1.1 200"), "{ping}");

    // The workdir was created under the root, and file routes see it as /workspace.
    std::fs::write(root.join("workspace/hello.txt"), b"hi").unwrap();
    let info = http_over_unix(
        &socket,
        "GET /files/info?path=hello.txt HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(info.contains("\"path\":\"/workspace/hello.txt\""), "{info}");

    std::fs::write(root.join("workspace/stop"), b"").unwrap();
    let code = tokio::time::timeout(Duration::from_secs(30), agent)
        .await
        .expect("agent did not exit after its entrypoint")
        .unwrap()
        .unwrap();
    assert_eq!(code, 3);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&status).unwrap()).unwrap();
    assert_eq!(v["exit_code"], 3);
    assert!(v["signal"].is_null());
    assert!(chrono::DateTime::parse_from_rfc3339(v["finished_at"].as_str().unwrap()).is_ok());
    assert!(!socket.exists(), "socket is removed on exit");
}

#[tokio::test]
async fn a_missing_entrypoint_binary_ends_the_agent_with_127() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("s.sock");
    let status = dir.path().join("status.json");
    // A stale socket file from an earlier run is replaced.
    let stale = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    drop(stale);
    let a = args(&socket, dir.path(), &status, &["/definitely/not/here"]);
    let code = tokio::time::timeout(Duration::from_secs(30), opensandbox_agent::run(a))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code, 127);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&status).unwrap()).unwrap();
    assert_eq!(v["exit_code"], 127);
}
