//! `/command` with kept framing (the 1.1 execd's default): each `stdout`/`stderr`
//! event keeps its line ending, a stream's texts concatenate to its output exactly,
//! and sessions stay line-framed. The line framing is covered by exec_commands.rs.
//! One framing per test binary: it is a per-agent-process setting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "suite/exec_support/mod.rs"]
mod exec_support;

use exec_support::{kinds, start_with_framing, texts};
use opensandbox_agent::commands::OutputFraming;
use serde_json::json;

#[tokio::test]
async fn kept_framing_keeps_line_endings() {
    let agent = start_with_framing(OutputFraming::Kept).await;
    let (_, frames) = agent
        .stream("/command", json!({"command": r"printf 'a\nb\r\nc'"}))
        .await;
    assert_eq!(texts(&frames, "stdout"), ["a\n", "b\r\n", "c"]);
    assert_eq!(
        kinds(&frames).last().map(String::as_str),
        Some("execution_complete")
    );

    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": r"printf 'a\n\nb\r\nc\rd\n\r\ntail'; printf 'e1\ne2' >&2"}),
        )
        .await;
    let out = texts(&frames, "stdout");
    assert_eq!(out, ["a\n", "\n", "b\r\n", "c\r", "d\n", "\r\n", "tail"]);
    assert_eq!(out.concat(), "a\n\nb\r\nc\rd\n\r\ntail");
    assert_eq!(texts(&frames, "stderr"), ["e1\n", "e2"]);
}

#[tokio::test]
async fn kept_framing_big_output_concatenates_exactly() {
    let agent = start_with_framing(OutputFraming::Kept).await;
    // 20000 numbered lines, some CRLF, no trailing newline.
    let (_, frames) = agent
        .stream(
            "/command",
            json!({"command": r"i=0; while [ $i -lt 20000 ]; do printf '%d\r\n%d\n' $i $i; i=$((i+1)); done; printf end"}),
        )
        .await;
    let mut expected = String::new();
    for i in 0..20000 {
        expected.push_str(&format!("{i}\r\n{i}\n"));
    }
    expected.push_str("end");
    let out = texts(&frames, "stdout");
    assert_eq!(out.concat(), expected);
    assert!(out[..out.len() - 1]
        .iter()
        .all(|t| t.ends_with('\n') || t.ends_with('\r')));
}

#[tokio::test]
async fn sessions_stay_line_framed_under_kept_framing() {
    let agent = start_with_framing(OutputFraming::Kept).await;
    let created = agent.post("/session", json!({})).await;
    assert!(created.status().is_success(), "{}", created.status());
    let body: serde_json::Value = created.json().await.expect("session json");
    let id = body["session_id"]
        .as_str()
        .or_else(|| body["id"].as_str())
        .expect("session id")
        .to_string();
    let (_, frames) = agent
        .stream(
            &format!("/session/{id}/run"),
            json!({"command": r"printf 'a\nb\n'"}),
        )
        .await;
    assert_eq!(texts(&frames, "stdout"), ["a", "b"]);
}
