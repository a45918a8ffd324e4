//! The sandbox env file (`$EXECD_ENVS`) end to end over HTTP: the official
//! `set_env` command appends to it, later commands (ready shell or not), background
//! commands and new sessions see it, and a broken file never stops a command.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "suite/exec_support/mod.rs"]
mod exec_support;

use std::path::{Path, PathBuf};

use exec_support::{start, texts, Agent};
use opensandbox_agent::envfile;
use serde_json::{json, Value};

struct Shared {
    agent: Agent,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

/// The env file's path is per agent process (`envfile::set_path`) and the agent lives in
/// the test's runtime: one test drives every part in turn, each with keys of its own.
#[tokio::test]
async fn env_file_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/envs");
    envfile::set_path(Some(path.clone()));
    let shared = Shared {
        agent: start().await,
        path,
        _dir: dir,
    };
    set_env_reaches_later_commands_sessions_and_background(&shared).await;
    the_ready_shell_never_runs_with_a_stale_file(&shared).await;
    a_broken_env_file_never_stops_a_command(&shared).await;
    set_env_command_fails_when_execd_envs_is_unset(&shared).await;
}

async fn run(agent: &Agent, command: &str) -> (Vec<String>, Vec<String>, Vec<Value>) {
    let (_, frames) = agent.stream("/command", json!({"command": command})).await;
    (texts(&frames, "stdout"), texts(&frames, "stderr"), frames)
}

fn succeeded(frames: &[Value]) -> bool {
    frames.iter().any(|f| f["type"] == "execution_complete")
}

async fn set_env(agent: &Agent, key: &str, value: &str) {
    let command = opensandbox_core::execd::set_env_command(key, value).unwrap();
    let (_, stderr, frames) = run(agent, &command).await;
    assert!(succeeded(&frames), "set_env {key}: {stderr:?} {frames:?}");
}

async fn session(agent: &Agent) -> String {
    let response = agent
        .client
        .post(agent.url("/session"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["session_id"].as_str().unwrap().to_string()
}

async fn set_env_reaches_later_commands_sessions_and_background(shared: &Shared) {
    let Shared { agent, path, .. } = shared;

    // Commands see where the file is.
    let (out, _, _) = run(agent, "echo \"$EXECD_ENVS\"").await;
    assert_eq!(out, [path.display().to_string()]);

    let before = session(agent).await;
    let hostile = "it's \"q\" $(touch /nonexistent/x) `id` ${HOME} \\ end";
    set_env(agent, "T1_PLAIN", "a b  c").await;
    set_env(agent, "T1_HOSTILE", hostile).await;
    set_env(agent, "T1_MULTI", "l1\nl2").await;
    let (out, _, _) = run(
        agent,
        "printf '[%s]\\n' \"$T1_PLAIN\" \"$T1_HOSTILE\" \"$T1_MULTI\"",
    )
    .await;
    // `${HOME}` in the double-quoted form expands (upstream's reader does the same).
    let home = std::env::var("HOME").unwrap_or_default();
    let expanded = hostile.replace("${HOME}", &home);
    assert_eq!(
        out,
        [
            "[a b  c]".to_string(),
            format!("[{expanded}]"),
            "[l1".into(),
            "l2]".into()
        ]
    );

    // The last write wins; the request's envs win over the file.
    set_env(agent, "T1_PLAIN", "second").await;
    let (out, _, _) = run(agent, "echo \"$T1_PLAIN\"").await;
    assert_eq!(out, ["second"]);
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "echo \"$T1_PLAIN\"", "envs": {"T1_PLAIN": "request"}}),
        )
        .await;
    assert_eq!(texts(&frames, "stdout"), ["request"]);

    // A new session sees it; one created before keeps the environment it had.
    let after = session(agent).await;
    let (_, frames) = agent
        .stream(
            &format!("/session/{after}/run"),
            json!({"command": "echo \"new:$T1_PLAIN\""}),
        )
        .await;
    assert_eq!(texts(&frames, "stdout"), ["new:second"]);
    let (_, frames) = agent
        .stream(
            &format!("/session/{before}/run"),
            json!({"command": "echo \"old:$T1_PLAIN\""}),
        )
        .await;
    assert_eq!(texts(&frames, "stdout"), ["old:"]);

    // A background command too.
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "echo \"bg:$T1_PLAIN\"", "background": true}),
        )
        .await;
    let id = frames
        .iter()
        .find(|f| f["type"] == "init")
        .and_then(|f| f["text"].as_str())
        .unwrap()
        .to_string();
    let mut logs = String::new();
    for _ in 0..200 {
        logs = agent
            .get(&format!("/command/{id}/logs"))
            .await
            .text()
            .await
            .unwrap();
        if logs.contains("bg:") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(logs.trim(), "bg:second");
}

/// Default commands go to the ready shell, started before the next command arrives:
/// one started before a `set_env` must not run the command after it.
async fn the_ready_shell_never_runs_with_a_stale_file(shared: &Shared) {
    let agent = &shared.agent;
    for i in 0..6 {
        // `true` leaves a ready shell behind; the set_env runs in it; the echo must
        // not run in the shell started meanwhile with the old file.
        let _ = run(agent, "true").await;
        set_env(agent, "T2_COUNT", &i.to_string()).await;
        let (out, _, _) = run(agent, "echo $T2_COUNT").await;
        assert_eq!(out, [i.to_string()], "round {i}");
    }
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    std::fs::write(path, bytes).unwrap();
}

/// Whatever the sandbox puts at the path, commands still run: garbage is skipped
/// entry by entry, odd files as a whole, and the agent never blocks on a FIFO.
async fn a_broken_env_file_never_stops_a_command(shared: &Shared) {
    let Shared { agent, path, .. } = shared;
    let saved = std::fs::read(path).unwrap_or_default();

    let mut junk = b"\xff\xfe\0garbage\n'unterminated\n\"also\nEXECD_ENVS=/elsewhere\n".to_vec();
    junk.extend_from_slice(b"OPENSANDBOX_ID=spoofed\nNUL='a\0b'\n1BAD=x\n");
    junk.extend_from_slice(format!("HUGE={}\n", "x".repeat(200_000)).as_bytes());
    junk.extend_from_slice(b"T3_OK=fine\n");
    write(path, &junk);
    let (out, _, frames) = run(
        agent,
        "echo \"$T3_OK|$EXECD_ENVS|${OPENSANDBOX_ID:-unset}|${#HUGE}|${NUL:-none}\"",
    )
    .await;
    assert!(succeeded(&frames), "{frames:?}");
    assert_eq!(out, [format!("fine|{}|unset|0|none", path.display())]);

    // Too big as a whole: ignored, the command runs without it.
    write(
        path,
        format!("T3_OK=big\n#{}\n", "x".repeat(envfile::MAX_FILE as usize)).as_bytes(),
    );
    let (out, _, _) = run(agent, "echo \"${T3_OK:-none}\"").await;
    assert_eq!(out, ["none"]);

    // A symlink (to a file the agent could read) is not followed.
    let target = path.with_file_name("target");
    std::fs::write(&target, "T3_OK=linked\n").unwrap();
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink(&target, path).unwrap();
    let (out, _, _) = run(agent, "echo \"${T3_OK:-none}\"").await;
    assert_eq!(out, ["none"]);

    // A FIFO nobody writes: neither the command nor the agent waits for it.
    let _ = std::fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (out, _, frames) = run(agent, "echo \"${T3_OK:-none}\"").await;
    assert!(succeeded(&frames));
    assert_eq!(out, ["none"]);

    // A directory: the same.
    let _ = std::fs::remove_file(path);
    std::fs::create_dir(path).unwrap();
    let (out, _, _) = run(agent, "echo \"${T3_OK:-none}\"").await;
    assert_eq!(out, ["none"]);
    std::fs::remove_dir(path).unwrap();

    write(path, &saved);
}

/// Without `$EXECD_ENVS` the official command fails with its message.
async fn set_env_command_fails_when_execd_envs_is_unset(shared: &Shared) {
    let agent = &shared.agent;
    let command = opensandbox_core::execd::set_env_command("T4", "v").unwrap();
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": format!("unset EXECD_ENVS; {command}")}),
        )
        .await;
    assert!(!succeeded(&frames));
    assert!(texts(&frames, "stderr")
        .concat()
        .contains("EXECD_ENVS is not set"));
}
