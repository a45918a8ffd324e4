//! Code contexts (python, javascript, bash) over HTTP.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::exec_support;

use std::time::Duration;

use exec_support::{kinds, of_type, start, texts, Agent};
use serde_json::{json, Value};

async fn create_context(agent: &Agent, language: &str) -> String {
    let response = agent
        .post("/code/context", json!({"language": language}))
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["language"], language);
    body["id"].as_str().expect("id").to_string()
}

async fn run(agent: &Agent, id: &str, code: &str) -> Vec<Value> {
    let (_, frames) = agent
        .stream("/code", json!({"code": code, "context": {"id": id}}))
        .await;
    assert_eq!(frames[0]["type"], "init");
    assert_eq!(frames[0]["text"], id, "init text is the context id");
    assert_eq!(frames[1]["type"], "ping");
    frames
}

fn result_text(frames: &[Value]) -> Option<String> {
    of_type(frames, "result").first().map(|f| {
        f["results"]["text"]
            .as_str()
            .expect("results.text")
            .to_string()
    })
}

#[tokio::test]
async fn python_keeps_state_and_returns_last_expression() {
    let agent = start().await;
    let id = create_context(&agent, "python").await;

    let frames = run(&agent, &id, "print(\"hi\")\n1+1").await;
    assert_eq!(
        kinds(&frames),
        [
            "init",
            "stdout",
            "execution_count",
            "result",
            "execution_complete"
        ]
    );
    assert_eq!(texts(&frames, "stdout"), ["hi\n"]);
    assert_eq!(result_text(&frames).as_deref(), Some("2"));
    assert_eq!(of_type(&frames, "execution_count")[0]["execution_count"], 1);

    run(
        &agent,
        &id,
        "import math\nx = 40\ndef add(a, b):\n    return a + b",
    )
    .await;
    let frames = run(&agent, &id, "add(x, 2), round(math.pi, 2)").await;
    assert_eq!(result_text(&frames).as_deref(), Some("(42, 3.14)"));
    assert_eq!(of_type(&frames, "execution_count")[0]["execution_count"], 3);

    // No value (None / a statement): no execution_count, no result.
    let frames = run(&agent, &id, "y = None\ny").await;
    assert_eq!(kinds(&frames), ["init", "execution_complete"]);

    let frames = run(&agent, &id, "import sys\nprint('warn', file=sys.stderr)").await;
    assert_eq!(texts(&frames, "stderr"), ["warn\n"]);
}

#[tokio::test]
async fn python_exception_reports_error() {
    let agent = start().await;
    let id = create_context(&agent, "python").await;
    let frames = run(&agent, &id, "print('before')\n1/0").await;
    assert_eq!(
        kinds(&frames),
        ["init", "stdout", "status", "error", "execution_complete"]
    );
    assert_eq!(of_type(&frames, "status")[0]["text"], "error");
    let error = &of_type(&frames, "error")[0]["error"];
    assert_eq!(error["ename"], "ZeroDivisionError");
    assert_eq!(error["evalue"], "division by zero");
    let traceback: Vec<&str> = error["traceback"]
        .as_array()
        .expect("traceback")
        .iter()
        .map(|l| l.as_str().expect("line"))
        .collect();
    assert!(traceback.iter().any(|l| l.contains("ZeroDivisionError")));

    let frames = run(&agent, &id, "def broken(:\n  pass").await;
    assert_eq!(
        of_type(&frames, "error")[0]["error"]["ename"],
        "SyntaxError"
    );
    // exit() must not kill the context.
    let frames = run(&agent, &id, "exit(2)").await;
    assert_eq!(of_type(&frames, "error")[0]["error"]["ename"], "SystemExit");
    let frames = run(&agent, &id, "'still here'").await;
    assert_eq!(result_text(&frames).as_deref(), Some("'still here'"));
}

#[tokio::test]
async fn javascript_keeps_state_and_awaits_promises() {
    let agent = start().await;
    let id = create_context(&agent, "javascript").await;
    let frames = run(&agent, &id, "let a = 2; console.log('hello'); a * 21").await;
    assert_eq!(
        kinds(&frames),
        [
            "init",
            "stdout",
            "execution_count",
            "result",
            "execution_complete"
        ]
    );
    assert_eq!(texts(&frames, "stdout"), ["hello\n"]);
    assert_eq!(result_text(&frames).as_deref(), Some("42"));

    let frames = run(&agent, &id, "function inc(v) { return v + 1 }\ninc(a)").await;
    assert_eq!(result_text(&frames).as_deref(), Some("3"));
    let frames = run(
        &agent,
        &id,
        "new Promise(r => setTimeout(() => r('later'), 50))",
    )
    .await;
    assert_eq!(result_text(&frames).as_deref(), Some("'later'"));

    let frames = run(&agent, &id, "null.boom").await;
    assert_eq!(
        kinds(&frames),
        ["init", "status", "error", "execution_complete"]
    );
    assert_eq!(of_type(&frames, "error")[0]["error"]["ename"], "TypeError");
}

#[tokio::test]
async fn bash_context_keeps_state() {
    let agent = start().await;
    let id = create_context(&agent, "bash").await;
    let frames = run(&agent, &id, "X=5\necho $X\necho").await;
    assert_eq!(texts(&frames, "stdout"), ["5\n", "\n"]);
    assert_eq!(
        kinds(&frames).last().map(String::as_str),
        Some("execution_complete")
    );
    let frames = run(&agent, &id, "echo $((X+1))").await;
    assert_eq!(texts(&frames, "stdout"), ["6\n"]);
    let frames = run(&agent, &id, "false").await;
    assert_eq!(
        kinds(&frames),
        ["init", "status", "error", "execution_complete"]
    );
    assert_eq!(of_type(&frames, "error")[0]["error"]["evalue"], "1");
}

#[tokio::test]
async fn default_context_per_language_and_no_context() {
    let agent = start().await;
    let (_, frames) = agent
        .stream(
            "/code",
            json!({"code": "z = 7", "context": {"language": "python"}}),
        )
        .await;
    let default_id = frames[0]["text"].as_str().expect("id").to_string();
    let (_, frames) = agent
        .stream(
            "/code",
            json!({"code": "z * 6", "context": {"language": "python"}}),
        )
        .await;
    assert_eq!(frames[0]["text"], default_id.as_str());
    assert_eq!(result_text(&frames).as_deref(), Some("42"));

    // No context: a shell command with /command's line framing.
    let (_, frames) = agent
        .stream("/code", json!({"code": "echo hi; exit 3"}))
        .await;
    assert_eq!(texts(&frames, "stdout"), ["hi"]);
    assert_eq!(frames.last().expect("terminal")["error"]["evalue"], "3");
}

#[tokio::test]
async fn busy_context_gets_the_typeless_frame() {
    let agent = start().await;
    let id = create_context(&agent, "python").await;
    let mut slow = agent
        .open_stream("/code", json!({"code": "import time\nprint('sleeping', flush=True)\ntime.sleep(2)\n'done'", "context": {"id": id}}))
        .await;
    loop {
        let frame = slow.next().await.expect("frame");
        if frame["type"] == "stdout" {
            break;
        }
    }
    let (_, frames) = agent
        .stream("/code", json!({"code": "1", "context": {"id": id}}))
        .await;
    assert_eq!(frames[0]["type"], "init");
    assert_eq!(frames[1]["type"], "ping");
    let last = frames.last().expect("busy frame");
    assert_eq!(
        last,
        &json!({"code": "RUNTIME_ERROR", "message": "error running codes session is busy"})
    );
    let rest = slow.rest().await;
    assert_eq!(result_text(&rest).as_deref(), Some("'done'"));
}

#[tokio::test]
async fn interrupt_stops_the_cell_and_keeps_the_context() {
    let agent = start().await;
    for (language, code, after, expected) in [
        (
            "python",
            "v = 1\nprint('loop', flush=True)\nwhile True:\n    pass",
            "v + 1",
            "2",
        ),
        (
            "javascript",
            "var v = 1; console.log('loop'); while (true) {}",
            "v + 1",
            "2",
        ),
    ] {
        let id = create_context(&agent, language).await;
        let mut reader = agent
            .open_stream("/code", json!({"code": code, "context": {"id": id}}))
            .await;
        loop {
            let frame = reader.next().await.expect("frame");
            if frame["type"] == "stdout" {
                break;
            }
        }
        // The loop is running: interrupt it (after a moment, so it is in the loop).
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(agent.delete(&format!("/code?id={id}")).await.status(), 200);
        let rest = reader.rest().await;
        let errors = of_type(&rest, "error");
        assert_eq!(errors.len(), 1, "{language}: {rest:?}");
        assert_eq!(
            kinds(&rest).last().map(String::as_str),
            Some("execution_complete")
        );
        let frames = run(&agent, &id, after).await;
        assert_eq!(
            result_text(&frames).as_deref(),
            Some(expected),
            "{language}"
        );
    }
}

/// An interrupt sent while the interpreter is still starting (the cell only queued)
/// used to arrive before the driver's SIGINT handler existed and kill the interpreter
/// ("the interpreter exited (signal: interrupt)"): it now waits for the cell to start
/// and then stops it, and the context survives. Seen in the conformance case
/// code/busy_context_rejects_second_cell on a loaded machine.
#[tokio::test]
async fn interrupt_during_interpreter_start_stops_the_cell() {
    let agent = start().await;
    for (language, code, after, expected) in [
        ("python", "import time\ntime.sleep(30)", "1 + 1", "2"),
        (
            "javascript",
            "await new Promise((r) => setTimeout(r, 30000))",
            "1 + 1",
            "2",
        ),
    ] {
        let id = create_context(&agent, language).await;
        let mut reader = agent
            .open_stream("/code", json!({"code": code, "context": {"id": id}}))
            .await;
        // No pause: the interpreter is still importing its driver.
        assert_eq!(agent.delete(&format!("/code?id={id}")).await.status(), 200);
        let started = std::time::Instant::now();
        let rest = tokio::time::timeout(Duration::from_secs(20), reader.rest())
            .await
            .expect("the cell was not interrupted");
        assert!(started.elapsed() < Duration::from_secs(20));
        let errors = of_type(&rest, "error");
        assert_eq!(errors.len(), 1, "{language}: {rest:?}");
        assert_eq!(
            kinds(&rest).last().map(String::as_str),
            Some("execution_complete"),
            "{language}: {rest:?}"
        );
        let frames = run(&agent, &id, after).await;
        assert_eq!(
            result_text(&frames).as_deref(),
            Some(expected),
            "{language}"
        );
    }
}

#[tokio::test]
async fn context_management_routes() {
    let agent = start().await;
    let py = create_context(&agent, "python").await;
    let js = create_context(&agent, "javascript").await;

    let dir = tempfile::tempdir().expect("dir");
    let response = agent
        .post(
            "/code/context",
            json!({"language": "python", "cwd": dir.path()}),
        )
        .await;
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["cwd"], dir.path().to_str().expect("utf-8 path"));
    let with_cwd = body["id"].as_str().expect("id").to_string();
    let frames = run(&agent, &with_cwd, "import os\nos.getcwd()").await;
    let cwd = dir.path().canonicalize().expect("canonical");
    assert_eq!(
        result_text(&frames),
        Some(format!("{:?}", cwd.display().to_string()).replace('"', "'"))
    );

    let all: Vec<Value> = agent
        .get("/code/contexts")
        .await
        .json()
        .await
        .expect("list");
    assert_eq!(all.len(), 3);
    let python: Vec<Value> = agent
        .get("/code/contexts?language=python")
        .await
        .json()
        .await
        .expect("list");
    assert_eq!(python.len(), 2);
    assert!(python.iter().all(|c| c["language"] == "python"));

    let one: Value = agent
        .get(&format!("/code/contexts/{js}"))
        .await
        .json()
        .await
        .expect("get");
    assert_eq!(one, json!({"id": js, "language": "javascript"}));

    assert_eq!(
        agent.delete(&format!("/code/contexts/{py}")).await.status(),
        200
    );
    let body = Agent::expect_error(agent.get(&format!("/code/contexts/{py}")).await, 404).await;
    assert_eq!(body["code"], "CONTEXT_NOT_FOUND");
    Agent::expect_error(agent.delete(&format!("/code/contexts/{py}")).await, 404).await;
    Agent::expect_error(
        agent
            .post("/code", json!({"code": "1", "context": {"id": py}}))
            .await,
        404,
    )
    .await;

    let body = Agent::expect_error(agent.delete("/code/contexts").await, 400).await;
    assert_eq!(body["code"], "MISSING_QUERY");
    assert_eq!(
        agent
            .delete("/code/contexts?language=javascript")
            .await
            .status(),
        200
    );
    let all: Vec<Value> = agent
        .get("/code/contexts")
        .await
        .json()
        .await
        .expect("list");
    assert_eq!(all.len(), 1);

    Agent::expect_error(
        agent
            .post("/code/context", json!({"language": "cobol"}))
            .await,
        400,
    )
    .await;
    Agent::expect_error(
        agent
            .post(
                "/code",
                json!({"code": "1", "context": {"language": "cobol"}}),
            )
            .await,
        400,
    )
    .await;
    Agent::expect_error(
        agent
            .post("/code", json!({"context": {"language": "python"}}))
            .await,
        400,
    )
    .await;
    let body = Agent::expect_error(agent.delete("/code").await, 400).await;
    assert_eq!(body["code"], "MISSING_QUERY");
    Agent::expect_error(agent.delete("/code?id=unknown").await, 404).await;
}

/// An interpreter that dies mid-cell ends the stream with the typeless failure frame
/// and its context is gone.
#[tokio::test]
async fn dead_interpreter_ends_stream_and_context() {
    let agent = start().await;
    let id = create_context(&agent, "python").await;
    let frames = run(&agent, &id, "import os\nos._exit(7)").await;
    let last = frames.last().expect("frame");
    assert!(
        last.get("type").is_none(),
        "expected the typeless frame, got {last}"
    );
    assert_eq!(last["code"], "RUNTIME_ERROR");
    assert!(last["message"]
        .as_str()
        .expect("message")
        .contains("exit status 7"));
    Agent::expect_error(agent.get(&format!("/code/contexts/{id}")).await, 404).await;
}
