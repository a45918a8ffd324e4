//! `/command` over HTTP: framing, ordering, exit codes, timeout, interrupt, big
//! output, background logs and status.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::exec_support;

use std::time::Duration;

use exec_support::{kinds, of_type, parse_frames, start, texts, Agent, WAIT};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

#[tokio::test]
async fn success_stream_has_exact_framing_and_order() {
    let agent = start().await;
    let response = agent
        .post("/command", json!({"command": "echo hello; echo world"}))
        .await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "text/event-stream");
    assert_eq!(headers["cache-control"], "no-cache");
    assert_eq!(headers["x-accel-buffering"], "no");
    let raw = response.bytes().await.expect("body").to_vec();

    // No SSE "data:" prefix: every frame is compact JSON then a blank line.
    let text = String::from_utf8(raw.clone()).expect("utf-8");
    assert!(!text.contains("data:"));
    let frames = parse_frames(&raw);
    for (line, frame) in text.split("\n\n").zip(&frames) {
        assert!(
            !line.contains(": ") && !line.contains(", "),
            "frame is not compact: {line}"
        );
        assert!(!line.contains('\n'), "frame spans lines: {line}");
        assert!(frame["timestamp"].as_i64().expect("timestamp") > 1_600_000_000_000);
    }

    assert_eq!(frames[0]["type"], "init");
    let id = frames[0]["text"].as_str().expect("init text");
    assert_eq!(id.len(), 32);
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(
        frames[1],
        json!({"type": "ping", "text": "pong", "timestamp": frames[1]["timestamp"]})
    );
    assert_eq!(
        kinds(&frames),
        ["init", "stdout", "stdout", "execution_complete"]
    );
    assert_eq!(texts(&frames, "stdout"), ["hello", "world"]);
    let complete = frames.last().expect("terminal");
    assert!(complete["execution_time"].is_u64());
    assert!(complete.get("text").is_none() && complete.get("error").is_none());
}

#[tokio::test]
async fn failure_reports_exit_code_and_status() {
    let agent = start().await;
    let (_, frames) = agent
        .stream("/command", json!({"command": "echo oops >&2; exit 3"}))
        .await;
    assert_eq!(kinds(&frames), ["init", "stderr", "error"]);
    assert_eq!(texts(&frames, "stderr"), ["oops"]);
    let error = &frames.last().expect("terminal")["error"];
    assert_eq!(
        error,
        &json!({"ename": "CommandExecError", "evalue": "3", "traceback": ["exit status 3"]})
    );

    let id = frames[0]["text"].as_str().expect("id");
    let status: Value = agent
        .get(&format!("/command/status/{id}"))
        .await
        .json()
        .await
        .expect("status");
    assert_eq!(status["id"], id);
    assert_eq!(status["content"], "echo oops >&2; exit 3");
    assert_eq!(status["running"], false);
    assert_eq!(status["exit_code"], 3);
    assert_eq!(status["error"], "exit status 3");
    assert!(status["started_at"].is_string() && status["finished_at"].is_string());
}

#[tokio::test]
async fn blank_lines_cr_and_partial_lines() {
    let agent = start().await;
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": r"printf 'a\n\nb\r\nc\rd\n\r\ntail'"}),
        )
        .await;
    assert_eq!(
        texts(&frames, "stdout"),
        ["a", "\n", "b", "c", "d", "\n", "tail"]
    );
    assert_eq!(
        kinds(&frames).last().map(String::as_str),
        Some("execution_complete")
    );
}

#[tokio::test]
async fn stdout_and_stderr_stay_separate_and_ordered() {
    let agent = start().await;
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "for i in 1 2 3 4 5; do echo out$i; echo err$i >&2; done"}),
        )
        .await;
    assert_eq!(
        texts(&frames, "stdout"),
        ["out1", "out2", "out3", "out4", "out5"]
    );
    assert_eq!(
        texts(&frames, "stderr"),
        ["err1", "err2", "err3", "err4", "err5"]
    );
}

#[tokio::test]
async fn envs_and_cwd_apply() {
    let agent = start().await;
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path().canonicalize().expect("canonical");
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "echo $GREETING; pwd -P", "envs": {"GREETING": "hi there"}, "cwd": cwd}),
        )
        .await;
    assert_eq!(
        texts(&frames, "stdout"),
        ["hi there".to_string(), cwd.display().to_string()]
    );

    // Default working directory is the agent's workdir.
    let (_, frames) = agent.stream("/command", json!({"command": "pwd -P"})).await;
    let workdir = agent.workdir.canonicalize().expect("canonical");
    assert_eq!(texts(&frames, "stdout"), [workdir.display().to_string()]);
}

#[tokio::test]
async fn timeout_kills_with_minus_one() {
    let agent = start().await;
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "echo before; sleep 30", "timeout": 300}),
        )
        .await;
    assert_eq!(kinds(&frames), ["init", "stdout", "error"]);
    assert_eq!(
        frames.last().expect("terminal")["error"],
        json!({"ename": "CommandExecError", "evalue": "-1", "traceback": ["signal: killed"]})
    );
}

#[tokio::test]
async fn interrupt_terminates_running_command() {
    let agent = start().await;
    let mut reader = agent
        .open_stream("/command", json!({"command": "echo started; sleep 30"}))
        .await;
    let init = reader.next().await.expect("init");
    let id = init["text"].as_str().expect("id").to_string();
    // Wait until the command really runs.
    loop {
        let frame = reader.next().await.expect("frame");
        if frame["type"] == "stdout" {
            break;
        }
    }
    let status: Value = agent
        .get(&format!("/command/status/{id}"))
        .await
        .json()
        .await
        .expect("status");
    assert_eq!(status["running"], true);
    assert!(status.get("exit_code").is_none() && status.get("finished_at").is_none());

    let response = agent.delete(&format!("/command?id={id}")).await;
    assert_eq!(response.status(), 200);
    let rest = reader.rest().await;
    let terminal = rest
        .iter()
        .rfind(|f| f["type"] != "ping")
        .expect("terminal");
    assert_eq!(
        terminal["error"],
        json!({"ename": "CommandExecError", "evalue": "-1", "traceback": ["signal: terminated"]})
    );
    let status: Value = agent
        .get(&format!("/command/status/{id}"))
        .await
        .json()
        .await
        .expect("status");
    assert_eq!(status["running"], false);
    assert_eq!(status["exit_code"], -1);

    // Finished now: interrupting again is a conflict, an unknown id is not found.
    Agent::expect_error(agent.delete(&format!("/command?id={id}")).await, 409).await;
    Agent::expect_error(agent.delete("/command?id=nope").await, 404).await;
    let body = Agent::expect_error(agent.delete("/command").await, 400).await;
    assert_eq!(body["code"], "MISSING_QUERY");
}

/// 100 MB of numbered 1000-byte lines, hashed on both sides while streaming.
#[tokio::test]
async fn hundred_megabytes_of_stdout_arrive_intact() {
    const LINES: usize = 100_000;
    let mut expected = Sha256::new();
    for i in 1..=LINES {
        expected.update(format!("{i:0999}\n").as_bytes());
    }
    let expected = expected.finalize();

    let agent = start().await;
    let started = std::time::Instant::now();
    let mut reader = agent
        .open_stream(
            "/command",
            json!({"command": format!("seq -f '%0999g' 1 {LINES}")}),
        )
        .await;
    let mut actual = Sha256::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut lines = 0usize;
    let mut last_type = String::new();
    let mut bytes_on_wire = 0usize;
    while let Some(chunk) = reader.chunk().await {
        bytes_on_wire += chunk.len();
        buf.extend_from_slice(&chunk);
        let mut consumed = 0;
        while let Some(pos) = buf[consumed..].windows(2).position(|w| w == b"\n\n") {
            let frame: Value =
                serde_json::from_slice(&buf[consumed..consumed + pos]).expect("frame");
            consumed += pos + 2;
            if frame["type"] == "stdout" {
                let text = frame["text"].as_str().expect("text");
                if text != "\n" {
                    actual.update(text.as_bytes());
                }
                actual.update(b"\n");
                lines += 1;
            }
            if frame["type"] != "ping" {
                last_type = frame["type"].as_str().unwrap_or("").to_string();
            }
        }
        buf.drain(..consumed);
        // Constant memory on the client side too: at most one partial frame is held.
        assert!(buf.len() < 4 * 1024 * 1024);
    }
    let elapsed = started.elapsed();
    assert_eq!(lines, LINES);
    assert_eq!(last_type, "execution_complete");
    assert_eq!(actual.finalize(), expected);
    eprintln!(
        "100 MB stdout: {bytes_on_wire} bytes of frames in {:.2?} ({:.0} MB/s of payload)",
        elapsed,
        100.0 / elapsed.as_secs_f64()
    );
}

#[tokio::test]
async fn background_command_logs_and_status() {
    let agent = start().await;
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "echo start; echo err >&2; sleep 1; echo end", "background": true}),
        )
        .await;
    assert_eq!(kinds(&frames), ["init", "execution_complete"]);
    assert_eq!(of_type(&frames, "ping").len(), 1);
    let id = frames[0]["text"].as_str().expect("id").to_string();

    let mut cursor = 0u64;
    let mut content = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let status: Value = agent
            .get(&format!("/command/status/{id}"))
            .await
            .json()
            .await
            .expect("status");
        let response = agent
            .get(&format!("/command/{id}/logs?cursor={cursor}"))
            .await;
        assert_eq!(response.status(), 200);
        assert!(response.headers()["content-type"]
            .to_str()
            .expect("ct")
            .starts_with("text/plain"));
        let next: u64 = response.headers()["EXECD-COMMANDS-TAIL-CURSOR"]
            .to_str()
            .expect("cursor header")
            .parse()
            .expect("cursor number");
        let body = response.bytes().await.expect("logs");
        assert_eq!(next, cursor + body.len() as u64, "cursor is a byte offset");
        content.extend_from_slice(&body);
        cursor = next;
        if status["running"] == false {
            assert_eq!(status["exit_code"], 0);
            assert!(status.get("error").is_none());
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "background command never finished"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The last status said finished, but logs were read before it: read the tail.
    let response = agent
        .get(&format!("/command/{id}/logs?cursor={cursor}"))
        .await;
    content.extend_from_slice(&response.bytes().await.expect("tail"));
    assert_eq!(String::from_utf8_lossy(&content), "start\nerr\nend\n");

    // Reading from 0 again returns everything; past the end returns nothing.
    let full = agent
        .get(&format!("/command/{id}/logs"))
        .await
        .bytes()
        .await
        .expect("full");
    assert_eq!(&full[..], b"start\nerr\nend\n");
    let response = agent.get(&format!("/command/{id}/logs?cursor=9999")).await;
    assert_eq!(response.headers()["EXECD-COMMANDS-TAIL-CURSOR"], "9999");
    assert!(response.bytes().await.expect("empty").is_empty());
}

#[tokio::test]
async fn background_interrupt_and_timeout() {
    let agent = start().await;
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "sleep 30", "background": true}),
        )
        .await;
    let id = frames[0]["text"].as_str().expect("id").to_string();
    assert_eq!(
        agent.delete(&format!("/command?id={id}")).await.status(),
        200
    );
    let status = wait_finished(&agent, &id).await;
    assert_eq!(status["exit_code"], -1);
    assert_eq!(status["error"], "signal: terminated");

    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "sleep 30", "background": true, "timeout": 200}),
        )
        .await;
    let id = frames[0]["text"].as_str().expect("id").to_string();
    let status = wait_finished(&agent, &id).await;
    assert_eq!(status["exit_code"], -1);
    assert_eq!(status["error"], "signal: killed");
}

async fn wait_finished(agent: &Agent, id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let status: Value = agent
            .get(&format!("/command/status/{id}"))
            .await
            .json()
            .await
            .expect("status");
        if status["running"] == false {
            return status;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "command never finished"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn bad_requests_are_clean_4xx() {
    let agent = start().await;
    let malformed = agent
        .client
        .post(agent.url("/command"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    let body = Agent::expect_error(malformed, 400).await;
    assert_eq!(body["code"], "INVALID_REQUEST_BODY");

    for bad in [
        json!({}),
        json!({"command": "true", "timeout": -5}),
        json!({"command": "true", "gid": 1000}),
        json!({"command": "true", "cwd": "/definitely/not/here"}),
        json!({"command": 42}),
    ] {
        let body = Agent::expect_error(agent.post("/command", bad.clone()).await, 400).await;
        assert_eq!(body["code"], "INVALID_REQUEST_BODY", "for {bad}");
    }

    let body = Agent::expect_error(agent.get("/command/status/unknown").await, 404).await;
    assert_eq!(body["code"], "INVALID_REQUEST_BODY");
    Agent::expect_error(agent.get("/command/unknown/logs").await, 400).await;

    // A foreground command has no logs.
    let (_, frames) = agent.stream("/command", json!({"command": "true"})).await;
    let id = frames[0]["text"].as_str().expect("id");
    Agent::expect_error(agent.get(&format!("/command/{id}/logs")).await, 400).await;
    Agent::expect_error(
        agent.get(&format!("/command/{id}/logs?cursor=-1")).await,
        400,
    )
    .await;
}

#[tokio::test]
async fn spawn_failure_is_an_error_event() {
    let agent = start().await;
    let (_, frames) = agent
        .stream("/command", json!({"argv": ["/definitely/not/a/program"]}))
        .await;
    assert_eq!(kinds(&frames), ["init", "error"]);
    let error = &frames.last().expect("terminal")["error"];
    assert_eq!(error["ename"], "CommandExecError");
    assert!(error["evalue"]
        .as_str()
        .expect("evalue")
        .parse::<i64>()
        .is_err());
    let id = frames[0]["text"].as_str().expect("id");
    let status: Value = agent
        .get(&format!("/command/status/{id}"))
        .await
        .json()
        .await
        .expect("status");
    assert_eq!(status["exit_code"], 255);
}

#[tokio::test]
async fn argv_runs_without_a_shell() {
    let agent = start().await;
    let (_, frames) = agent
        .stream("/command", json!({"argv": ["echo", "$HOME", "a  b"]}))
        .await;
    assert_eq!(texts(&frames, "stdout"), ["$HOME a  b"]);
}

/// `uid` switches user when the agent may (root); otherwise the failure to switch
/// is a clean `error` event, never a 5xx.
#[tokio::test]
async fn uid_switch_or_clean_error() {
    let agent = start().await;
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "id -u; id -g", "uid": 65534, "gid": 65534}),
        )
        .await;
    let am_root = nix::unistd::geteuid().is_root();
    if am_root {
        assert_eq!(texts(&frames, "stdout"), ["65534", "65534"]);
        assert_eq!(
            kinds(&frames).last().map(String::as_str),
            Some("execution_complete")
        );
    } else {
        assert_eq!(kinds(&frames), ["init", "error"]);
        let evalue = frames.last().expect("terminal")["error"]["evalue"].clone();
        assert!(evalue.as_str().expect("evalue").parse::<i64>().is_err());
    }
}

/// A quiet stream gets a `ping` right after `init` and another every 3 s.
#[tokio::test]
async fn quiet_streams_are_pinged() {
    let agent = start().await;
    let (_, frames) = agent
        .stream("/command", json!({"command": "sleep 4; echo done"}))
        .await;
    assert_eq!(frames[1]["type"], "ping");
    assert!(of_type(&frames, "ping").len() >= 2, "{frames:?}");
    assert_eq!(kinds(&frames), ["init", "stdout", "execution_complete"]);
    // No ping after the terminal event: the stream closes right away.
    assert_eq!(
        frames.last().expect("terminal")["type"],
        "execution_complete"
    );
}

/// Runs default commands until one runs in the ready shell (its `/proc/$$/cmdline` is
/// the bootstrap): later default commands then take that path.
async fn wait_for_ready_shell(agent: &Agent) {
    for _ in 0..100 {
        let (_, frames) = agent
            .stream(
                "/command",
                json!({"command": "tr '\\0' ' ' < /proc/$$/cmdline"}),
            )
            .await;
        if texts(&frames, "stdout").concat().contains("__osb_c") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no command ran in a ready shell");
}

/// The ready shell (warm_shell.rs) must behave as `bash -c`: every case below runs
/// after one command already ran in it, so each of them does too.
#[tokio::test]
async fn ready_shell_runs_commands_as_bash_c() {
    let agent = start().await;
    wait_for_ready_shell(&agent).await;
    let run = |command: &'static str| {
        let agent = &agent;
        async move {
            wait_for_ready_shell(agent).await;
            agent
                .stream("/command", json!({"command": command}))
                .await
                .1
        }
    };

    let frames = run("echo out; echo err >&2; exit 3").await;
    assert_eq!(texts(&frames, "stdout"), ["out"]);
    assert_eq!(texts(&frames, "stderr"), ["err"]);
    assert_eq!(frames.last().unwrap()["error"]["evalue"], "3");

    // The shell's own variables are gone; bash -c's are there; stdin is /dev/null.
    let frames = run(
        "echo \"${__osb_c-unset} ${__osb_n-unset} $0 $SECONDS [$BASH_EXECUTION_STRING]\"; cat; pwd -P",
    )
    .await;
    let workdir = agent.workdir.canonicalize().unwrap();
    assert_eq!(
        texts(&frames, "stdout"),
        [
            "unset unset bash 0 [echo \"${__osb_c-unset} ${__osb_n-unset} $0 $SECONDS [$BASH_EXECUTION_STRING]\"; cat; pwd -P]".to_string(),
            workdir.display().to_string()
        ]
    );
    assert_eq!(frames.last().unwrap()["type"], "execution_complete");

    // A simple command replaces the shell as under bash -c: a signal that kills the
    // program is reported as the signal (as for an OOM kill), not as 137.
    let frames = run("python3 -c \"import os; os.kill(os.getpid(), 9)\"").await;
    assert_eq!(
        frames.last().unwrap()["error"],
        json!({"ename": "CommandExecError", "evalue": "-1", "traceback": ["signal: killed"]})
    );

    // Multi-line commands, quotes and long commands keep their text.
    let frames = run("for i in 1 2; do\n  echo \"line $i\"\ndone").await;
    assert_eq!(texts(&frames, "stdout"), ["line 1", "line 2"]);
    let long = format!("echo {}", "x".repeat(100_000));
    let (_, frames) = agent.stream("/command", json!({"command": long})).await;
    assert_eq!(texts(&frames, "stdout"), ["x".repeat(100_000)]);

    // Options a ready shell was not started with go the ordinary way.
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "echo $X; pwd", "envs": {"X": "from-env"}, "cwd": "/"}),
        )
        .await;
    assert_eq!(texts(&frames, "stdout"), ["from-env", "/"]);

    // Timeout and process group: the whole group is killed.
    wait_for_ready_shell(&agent).await;
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": "sleep 30 & sleep 30", "timeout": 300}),
        )
        .await;
    assert_eq!(
        frames.last().unwrap()["error"]["traceback"],
        json!(["signal: killed"])
    );
}
