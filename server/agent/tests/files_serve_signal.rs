//! SIGTERM to the agent is forwarded to the entrypoint. In its own test binary because
//! the signal goes to the whole test process.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use clap::Parser;
use opensandbox_agent::AgentArgs;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    agent: AgentArgs,
}

#[tokio::test]
async fn sigterm_is_forwarded_and_the_entrypoint_outcome_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let socket = root.join("execd.sock");
    let status = root.join("status.json");
    let ready = root.join("workspace/ready");
    let args = Cli::try_parse_from([
        "agent",
        "--socket",
        socket.to_str().unwrap(),
        "--root",
        root.to_str().unwrap(),
        "--status-file",
        status.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "trap 'exit 7' TERM; touch ready; while :; do sleep 0.05; done",
    ])
    .unwrap()
    .agent;
    let agent = tokio::spawn(opensandbox_agent::run(args));
    tokio::time::timeout(Duration::from_secs(20), async {
        while !ready.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("entrypoint did not start");

    nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGTERM).unwrap();
    let code = tokio::time::timeout(Duration::from_secs(30), agent)
        .await
        .expect("agent did not stop on SIGTERM")
        .unwrap()
        .unwrap();
    assert_eq!(code, 7);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&status).unwrap()).unwrap();
    assert_eq!(v["exit_code"], 7);
}
