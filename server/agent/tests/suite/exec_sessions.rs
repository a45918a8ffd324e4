//! Persistent bash sessions over HTTP.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::exec_support;

use exec_support::{kinds, start, texts, Agent};
use serde_json::{json, Value};

async fn create_session(agent: &Agent, body: Option<Value>) -> String {
    let request = agent.client.post(agent.url("/session"));
    let request = match body {
        Some(body) => request.json(&body),
        None => request,
    };
    let response = request.send().await.expect("create session");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    body["session_id"].as_str().expect("session_id").to_string()
}

#[tokio::test]
async fn state_persists_between_runs() {
    let agent = start().await;
    let id = create_session(&agent, None).await;
    let run = format!("/session/{id}/run");
    let dir = tempfile::tempdir().expect("dir");
    let dir_path = dir.path().canonicalize().expect("canonical");

    let (_, frames) = agent
        .stream(&run, json!({"command": format!("cd '{}' && export A=1; B=2; f() {{ echo fn$1; }}", dir_path.display())}))
        .await;
    assert_eq!(
        frames[0]["text"],
        id.as_str(),
        "init text is the session id"
    );
    assert_eq!(kinds(&frames), ["init", "execution_complete"]);

    let (_, frames) = agent
        .stream(&run, json!({"command": "pwd -P; echo $A $B; f 7"}))
        .await;
    assert_eq!(
        texts(&frames, "stdout"),
        [dir_path.display().to_string(), "1 2".into(), "fn7".into()]
    );
}

#[tokio::test]
async fn stderr_is_merged_and_blank_lines_dropped() {
    let agent = start().await;
    let id = create_session(&agent, Some(json!({}))).await;
    let (_, frames) = agent
        .stream(
            &format!("/session/{id}/run"),
            json!({"command": "echo out; echo err >&2; printf 'a\\n\\n\\nb\\n'; printf 'no newline'"}),
        )
        .await;
    assert_eq!(
        texts(&frames, "stdout"),
        ["out", "err", "a", "b", "no newline"]
    );
    assert!(texts(&frames, "stderr").is_empty());
}

#[tokio::test]
async fn exit_codes_are_signalled_like_commands() {
    let agent = start().await;
    let id = create_session(&agent, None).await;
    let run = format!("/session/{id}/run");

    let (_, frames) = agent.stream(&run, json!({"command": "(exit 3)"})).await;
    assert_eq!(kinds(&frames), ["init", "error"]);
    assert_eq!(
        frames.last().expect("terminal")["error"],
        json!({"ename": "CommandExecError", "evalue": "3", "traceback": ["exit status 3"]})
    );

    // A syntax error is an ordinary failure; the session lives on.
    let (_, frames) = agent
        .stream(&run, json!({"command": "echo 'unterminated"}))
        .await;
    assert_eq!(kinds(&frames).last().map(String::as_str), Some("error"));
    let (_, frames) = agent.stream(&run, json!({"command": "echo alive"})).await;
    assert_eq!(texts(&frames, "stdout"), ["alive"]);
    assert_eq!(
        kinds(&frames).last().map(String::as_str),
        Some("execution_complete")
    );

    // `exit` ends the shell: the run reports its code and the session is gone.
    let (_, frames) = agent
        .stream(&run, json!({"command": "echo bye; exit 4"}))
        .await;
    assert_eq!(texts(&frames, "stdout"), ["bye"]);
    assert_eq!(frames.last().expect("terminal")["error"]["evalue"], "4");
    Agent::expect_error(agent.post(&run, json!({"command": "true"})).await, 404).await;
}

#[tokio::test]
async fn timeout_interrupts_but_keeps_the_session() {
    let agent = start().await;
    let id = create_session(&agent, None).await;
    let run = format!("/session/{id}/run");
    let (_, frames) = agent
        .stream(&run, json!({"command": "X=kept; sleep 30", "timeout": 300}))
        .await;
    assert_eq!(
        frames.last().expect("terminal")["error"],
        json!({"ename": "CommandExecError", "evalue": "-1", "traceback": ["signal: killed"]})
    );
    let (_, frames) = agent.stream(&run, json!({"command": "echo $X"})).await;
    assert_eq!(texts(&frames, "stdout"), ["kept"]);
}

/// Regression: the first run's timeout fired before bash had read `trap : INT`, so the
/// SIGINT killed the shell and the next run got a 404 (seen under load in CI). A 1 ms
/// timeout on a brand-new session hits that window every time without the fix.
#[tokio::test]
async fn a_timeout_before_the_shell_is_ready_keeps_the_session() {
    let agent = start().await;
    for _ in 0..5 {
        let id = create_session(&agent, None).await;
        let run = format!("/session/{id}/run");
        let (_, frames) = agent
            .stream(&run, json!({"command": "sleep 5", "timeout": 1}))
            .await;
        assert_eq!(frames.last().expect("terminal")["error"]["evalue"], "-1");
        let (_, frames) = agent.stream(&run, json!({"command": "echo alive"})).await;
        assert_eq!(texts(&frames, "stdout"), ["alive"]);
    }
}

#[tokio::test]
async fn run_cwd_and_create_cwd() {
    let agent = start().await;
    let dir = tempfile::tempdir().expect("dir");
    let dir_path = dir.path().canonicalize().expect("canonical");
    let id = create_session(&agent, Some(json!({"cwd": dir_path}))).await;
    let run = format!("/session/{id}/run");
    let (_, frames) = agent.stream(&run, json!({"command": "pwd -P"})).await;
    assert_eq!(texts(&frames, "stdout"), [dir_path.display().to_string()]);

    let other = tempfile::tempdir().expect("dir");
    let other_path = other.path().canonicalize().expect("canonical");
    let (_, frames) = agent
        .stream(&run, json!({"command": "pwd -P", "cwd": other_path}))
        .await;
    assert_eq!(texts(&frames, "stdout"), [other_path.display().to_string()]);

    Agent::expect_error(
        agent.post("/session", json!({"cwd": "/not/a/dir"})).await,
        400,
    )
    .await;
    Agent::expect_error(
        agent
            .post(&run, json!({"command": "pwd", "cwd": "/not/a/dir"}))
            .await,
        400,
    )
    .await;
}

#[tokio::test]
async fn delete_and_interrupt_close_sessions() {
    let agent = start().await;
    let id = create_session(&agent, None).await;
    assert_eq!(agent.delete(&format!("/session/{id}")).await.status(), 200);
    let body = Agent::expect_error(agent.delete(&format!("/session/{id}")).await, 404).await;
    assert_eq!(body["code"], "CONTEXT_NOT_FOUND");
    Agent::expect_error(
        agent
            .post(&format!("/session/{id}/run"), json!({"command": "true"}))
            .await,
        404,
    )
    .await;

    // DELETE /command?id=<session> ends a running command by closing the session.
    let id = create_session(&agent, None).await;
    let mut reader = agent
        .open_stream(
            &format!("/session/{id}/run"),
            json!({"command": "echo go; sleep 30"}),
        )
        .await;
    loop {
        let frame = reader.next().await.expect("frame");
        if frame["type"] == "stdout" {
            break;
        }
    }
    assert_eq!(
        agent.delete(&format!("/command?id={id}")).await.status(),
        200
    );
    let rest = reader.rest().await;
    let terminal = rest
        .iter()
        .rfind(|f| f["type"] != "ping")
        .expect("terminal");
    assert_eq!(terminal["error"]["evalue"], "-1");
    Agent::expect_error(agent.delete(&format!("/session/{id}")).await, 404).await;
}

#[tokio::test]
async fn bad_session_requests() {
    let agent = start().await;
    let id = create_session(&agent, None).await;
    let run = format!("/session/{id}/run");
    for bad in [
        json!({}),
        json!({"command": "true", "timeout": -1}),
        json!({"command": 5}),
    ] {
        let body = Agent::expect_error(agent.post(&run, bad).await, 400).await;
        assert_eq!(body["code"], "INVALID_REQUEST_BODY");
    }
    let response = agent
        .client
        .post(agent.url("/session"))
        .body("{oops")
        .send()
        .await
        .expect("send");
    Agent::expect_error(response, 400).await;
}

/// A command that ignores SIGINT still ends at its timeout: SIGINT is sent a few times
/// within the grace (one may land before the shell forks the command), then the
/// session is taken down rather than the run hanging.
#[tokio::test]
async fn timeout_of_a_command_ignoring_sigint_ends_the_run() {
    let agent = start().await;
    let id = create_session(&agent, None).await;
    let run = format!("/session/{id}/run");
    let started = std::time::Instant::now();
    let (_, frames) = agent
        .stream(
            &run,
            json!({"command": "trap '' INT; sleep 30", "timeout": 300}),
        )
        .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the run outlived its timeout by {:?}",
        started.elapsed()
    );
    assert_eq!(
        frames.last().expect("terminal")["error"]["evalue"],
        json!("-1")
    );
}
