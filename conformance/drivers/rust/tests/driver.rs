//! The driver as the harness sees it: the built binary, one JSON request per stdin line
//! and one answer per stdout line (conformance/PROTOCOL.md). No server is needed: the
//! requests here are answered before any network call.

// A test crate: a failed unwrap/expect is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The handshake and the answers to `requests`, in order.
fn converse(requests: &[&str]) -> (Value, Vec<Value>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_opensandbox-conformance-rust"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    drop(stdin);
    let lines: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(child.wait().unwrap().success());
    let (hello, answers) = lines.split_first().unwrap();
    (hello.clone(), answers.to_vec())
}

#[test]
fn handshake_lists_the_conformance_ops_only() {
    let (hello, answers) = converse(&[]);
    assert_eq!(hello["hello"], "opensandbox-conformance");
    assert_eq!(hello["language"], "rust");
    let ops: Vec<&str> = hello["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(ops.contains(&"commands.run"));
    assert!(ops.contains(&"execution.wait"));
    assert!(!ops.contains(&"release"));
    assert!(answers.is_empty());
}

#[test]
fn bad_requests_get_an_answer() {
    let (_, answers) = converse(&[
        "not json",
        "",
        r#"{"id": 3, "op": "x.y"}"#,
        r#"{"id": 5, "op": "release"}"#,
        r#"{"id": 4, "op": "commands.run", "args": {"sandbox": "s", "comand": "ls"}}"#,
    ]);
    // The blank line gets no answer; every other line gets one, in order.
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!(answers[0]["id"], Value::Null);
    assert_eq!(answers[0]["error"]["kind"], "driver_error");
    assert_eq!(answers[1]["id"], 3);
    assert_eq!(answers[1]["error"]["kind"], "unsupported_op");
    assert_eq!(answers[2]["id"], 5);
    assert_eq!(answers[2]["error"]["kind"], "unsupported_op");
    assert_eq!(answers[3]["id"], 4);
    assert_eq!(answers[3]["error"]["kind"], "invalid_argument");
    assert!(answers[3]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("comand"));
}
