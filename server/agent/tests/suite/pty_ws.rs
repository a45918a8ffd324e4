//! PTY sessions (`/pty`, shared docs pty.md) against the agent served in-process: the
//! REST routes, the WebSocket attach through the core's client (`ExecdClient`), and
//! the frame-level rules (409 before the upgrade, takeover with 4001, replay before
//! `connected`, exact `since` replay) with a raw WebSocket.

// A test crate: a failed unwrap/expect is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::exec_support;

use std::collections::BTreeMap;
use std::time::Duration;

use exec_support::{start, Agent, WAIT};
use futures::{SinkExt, StreamExt};
use opensandbox_core::models::Endpoint;
use opensandbox_core::{
    ConnectionConfig, ExecdClient, PtyAttachOptions, PtyConnection, PtyEvent, PtyMode,
};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

fn client(agent: &Agent) -> ExecdClient {
    let endpoint = Endpoint {
        endpoint: agent.base.trim_start_matches("http://").to_string(),
        headers: BTreeMap::new(),
        origin: None,
    };
    ExecdClient::new(ConnectionConfig::new(), &endpoint).unwrap()
}

async fn create(agent: &Agent, body: Value) -> String {
    let r = agent.post("/pty", body).await;
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    v["session_id"].as_str().unwrap().to_string()
}

/// Reads events until the output read so far contains `needle` (panics on timeout or
/// on the end of the connection). Returns all output bytes read.
async fn read_until(conn: &mut PtyConnection, needle: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !String::from_utf8_lossy(&out).contains(needle) {
        let ev = tokio::time::timeout_at(deadline, conn.next_event())
            .await
            .unwrap_or_else(|_| panic!("no {needle:?} in {:?}", String::from_utf8_lossy(&out)))
            .expect("connection ended");
        match ev {
            PtyEvent::Output { data, .. } => out.extend_from_slice(&data),
            PtyEvent::Closed { .. } => panic!(
                "closed before {needle:?}: {:?}",
                String::from_utf8_lossy(&out)
            ),
            _ => {}
        }
    }
    out
}

/// Reads until the connection closes: (output, exit code, close code).
async fn read_to_end(conn: &mut PtyConnection) -> (Vec<u8>, Option<i32>, Option<u16>) {
    let mut out = Vec::new();
    let mut exit = None;
    loop {
        let ev = tokio::time::timeout(WAIT, conn.next_event())
            .await
            .expect("no end")
            .expect("events ended without Closed");
        match ev {
            PtyEvent::Output { data, .. } => out.extend_from_slice(&data),
            PtyEvent::Exit { exit_code } => exit = Some(exit_code),
            PtyEvent::Closed { code, .. } => return (out, exit, code),
            PtyEvent::Error { code, message } => panic!("error frame {code}: {message}"),
        }
    }
}

#[tokio::test]
async fn rest_routes_create_lazily_and_delete() {
    let agent = start().await;
    // An empty body is fine.
    let r = agent.client.post(agent.url("/pty")).send().await.unwrap();
    assert_eq!(r.status(), 201);
    let id = r.json::<Value>().await.unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(id.len(), 36, "a uuid4 with hyphens: {id}");
    let st: Value = agent.get(&format!("/pty/{id}")).await.json().await.unwrap();
    assert_eq!(
        st,
        json!({"session_id": id, "running": false, "output_offset": 0})
    );
    assert_eq!(agent.delete(&format!("/pty/{id}")).await.status(), 200);
    let gone = agent.get(&format!("/pty/{id}")).await;
    assert_eq!(gone.status(), 404);
    assert_eq!(
        gone.json::<Value>().await.unwrap()["code"],
        "CONTEXT_NOT_FOUND"
    );
    assert_eq!(agent.delete(&format!("/pty/{id}")).await.status(), 404);
    // Malformed JSON and unknown fields are 400; an undefined variable in cwd is 500.
    let bad = agent
        .client
        .post(agent.url("/pty"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let r = agent
        .post("/pty", json!({"cwd": "$OSB_PTY_TEST_UNDEFINED/x"}))
        .await;
    assert_eq!(r.status(), 500);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "RUNTIME_ERROR");
}

#[tokio::test]
async fn cwd_is_created_and_used() {
    let agent = start().await;
    let id = create(&agent, json!({"cwd": "deep/er", "command": "pwd"})).await;
    assert!(agent.workdir.join("deep/er").is_dir());
    let mut conn = client(&agent)
        .attach_pty(&id, &PtyAttachOptions::default())
        .await
        .unwrap();
    let (out, exit, close) = read_to_end(&mut conn).await;
    let expected = format!("{}\r\n", agent.workdir.join("deep/er").display());
    assert_eq!(String::from_utf8_lossy(&out), expected);
    assert_eq!((exit, close), (Some(0), Some(1000)));
}

#[tokio::test]
async fn interactive_shell_types_resizes_and_exits() {
    let agent = start().await;
    let execd = client(&agent);
    let id = execd.create_pty_session(&Default::default()).await.unwrap();
    let mut conn = execd
        .attach_pty(&id, &PtyAttachOptions::default())
        .await
        .unwrap();
    assert_eq!(conn.mode(), PtyMode::Pty);
    let w = conn.writer();
    // Type the line only once `read` owns the terminal: bytes that arrive while
    // readline is still reading the command line are slurped into readline's own
    // type-ahead buffer (rl_gather_tyi) and reach the next prompt, not `read`
    // (regression: this test failed under load when both were written at once).
    w.write("echo read\"y\"; read -r L && echo \"got:[$L]\"\r")
        .await
        .unwrap();
    read_until(&mut conn, "ready\r\n").await;
    w.write("typed line\r").await.unwrap();
    read_until(&mut conn, "got:[typed line]").await;
    w.write("stty size | sed 's/^/sz=/'\r").await.unwrap();
    read_until(&mut conn, "sz=24 80").await;
    w.resize(100, 30).await.unwrap();
    w.write("stty size | sed 's/^/sz=/'\r").await.unwrap();
    read_until(&mut conn, "sz=30 100").await;
    let status = execd.get_pty_session(&id).await.unwrap();
    assert!(status.running);
    w.write("exit 7\r").await.unwrap();
    let (_, exit, close) = read_to_end(&mut conn).await;
    assert_eq!((exit, close), (Some(7), Some(1000)));
    // The shell was reaped; the session stays, and the next attach starts a new shell.
    let deadline = tokio::time::Instant::now() + WAIT;
    while execd.get_pty_session(&id).await.unwrap().running {
        assert!(tokio::time::Instant::now() < deadline, "still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let end = execd.get_pty_session(&id).await.unwrap().output_offset;
    let mut again = execd
        .attach_pty(
            &id,
            &PtyAttachOptions {
                since: Some(end),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    again
        .writer()
        .write("echo second-$((2+3))\r")
        .await
        .unwrap();
    read_until(&mut again, "second-5").await;
    execd.delete_pty_session(&id).await.unwrap();
    // Deleting the session ends the attached client with exit -1 and close 1000.
    let (_, exit, close) = read_to_end(&mut again).await;
    assert_eq!((exit, close), (Some(-1), Some(1000)));
}

#[tokio::test]
async fn reattach_since_replays_exactly_the_missed_bytes() {
    let agent = start().await;
    let execd = client(&agent);
    let id = execd.create_pty_session(&Default::default()).await.unwrap();
    let mut a = execd
        .attach_pty(&id, &PtyAttachOptions::default())
        .await
        .unwrap();
    a.writer().write("echo a-$((1+1))\r").await.unwrap();
    let seen = read_until(&mut a, "a-2").await;
    // Let the prompt arrive, then bookmark exactly what was consumed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut consumed = seen.clone();
    while let Ok(Some(PtyEvent::Output { data, .. })) = a.try_next_event() {
        consumed.extend_from_slice(&data);
    }
    let mark = a.next_offset();
    assert_eq!(mark, consumed.len() as u64);
    a.writer()
        .write("sleep 0.5; for i in 1 2 3; do echo away-$i; done\r")
        .await
        .unwrap();
    a.writer().close().await.unwrap();
    drop(a);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let st = execd.get_pty_session(&id).await.unwrap();
        // The echoed command line (52 bytes with its CRLF), then 3 lines of 8 bytes.
        if st.output_offset >= mark + 76 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            break;
        }
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let total = execd.get_pty_session(&id).await.unwrap().output_offset;
    let mut b = execd
        .attach_pty(
            &id,
            &PtyAttachOptions {
                since: Some(mark),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // The first event is the replay, starting exactly at the mark, up to the end.
    match tokio::time::timeout(WAIT, b.next_event()).await.unwrap() {
        Some(PtyEvent::Output {
            channel,
            offset,
            data,
        }) => {
            assert_eq!(channel, opensandbox_core::PtyChannel::Replay);
            assert_eq!(offset, mark);
            assert_eq!(offset + data.len() as u64, total);
            assert!(String::from_utf8_lossy(&data).contains("away-3"));
            // And the whole buffer is what A consumed followed by this replay.
            let mut c = execd
                .attach_pty(
                    &id,
                    &PtyAttachOptions {
                        since: Some(0),
                        takeover: true,
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            match tokio::time::timeout(WAIT, c.next_event()).await.unwrap() {
                Some(PtyEvent::Output {
                    offset: 0,
                    data: all,
                    ..
                }) => {
                    let mut joined = consumed.clone();
                    joined.extend_from_slice(&data);
                    assert_eq!(all.as_ref(), &joined[..]);
                }
                other => panic!("expected a replay from 0, got {other:?}"),
            }
        }
        other => panic!("expected a replay, got {other:?}"),
    }
    execd.delete_pty_session(&id).await.unwrap();
}

#[tokio::test]
async fn pipe_mode_keeps_stderr_apart() {
    let agent = start().await;
    let execd = client(&agent);
    let id = create(
        &agent,
        json!({"command": "echo out; sleep 0.2; echo err >&2; exit 4"}),
    )
    .await;
    let mut conn = execd
        .attach_pty(
            &id,
            &PtyAttachOptions {
                mode: PtyMode::Pipe,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(conn.mode(), PtyMode::Pipe);
    let mut seen = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, conn.next_event())
            .await
            .unwrap()
            .unwrap()
        {
            PtyEvent::Output { channel, data, .. } => {
                seen.push((channel, String::from_utf8_lossy(&data).into_owned()))
            }
            PtyEvent::Exit { exit_code } => assert_eq!(exit_code, 4),
            PtyEvent::Closed { code, .. } => {
                assert_eq!(code, Some(1000));
                break;
            }
            PtyEvent::Error { code, .. } => panic!("{code}"),
        }
    }
    use opensandbox_core::PtyChannel::{Stderr, Stdout};
    assert_eq!(
        seen,
        vec![(Stdout, "out\n".to_string()), (Stderr, "err\n".to_string())]
    );
}

type Raw =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn raw(
    agent: &Agent,
    id: &str,
    query: &str,
) -> Result<Raw, tokio_tungstenite::tungstenite::Error> {
    let url = format!(
        "{}/pty/{id}/ws{query}",
        agent.base.replace("http://", "ws://")
    );
    tokio_tungstenite::connect_async(url).await.map(|(s, _)| s)
}

async fn next_text(ws: &mut Raw) -> Value {
    loop {
        match tokio::time::timeout(WAIT, ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
            Message::Binary(_) | Message::Ping(_) | Message::Pong(_) => continue,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn one_client_at_a_time_and_takeover_evicts_with_4001() {
    let agent = start().await;
    let id = create(&agent, json!({})).await;
    // Unknown session: 404 before any upgrade.
    match raw(&agent, "nope", "").await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 404),
        other => panic!("expected a 404, got {other:?}"),
    }
    let mut first = raw(&agent, &id, "").await.unwrap();
    assert_eq!(next_text(&mut first).await["type"], "connected");
    // A second client: 409 ALREADY_CONNECTED; a plain GET with takeover=1 evicts nobody.
    match raw(&agent, &id, "").await {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            assert_eq!(r.status(), 409);
            let body: Value = serde_json::from_slice(r.body().as_ref().unwrap()).unwrap();
            assert_eq!(body["code"], "ALREADY_CONNECTED");
        }
        other => panic!("expected a 409, got {other:?}"),
    }
    let plain = agent.get(&format!("/pty/{id}/ws?takeover=1")).await;
    assert_eq!(plain.status(), 409);
    // Text frames: ping → pong, unknown type → INVALID_FRAME, non-JSON ignored.
    first.send(Message::Text("not json".into())).await.unwrap();
    first
        .send(Message::Text(r#"{"type":"ping"}"#.into()))
        .await
        .unwrap();
    assert_eq!(next_text(&mut first).await, json!({"type": "pong"}));
    first
        .send(Message::Text(r#"{"type":"bogus"}"#.into()))
        .await
        .unwrap();
    let err = next_text(&mut first).await;
    assert_eq!(err["code"], "INVALID_FRAME");
    assert_eq!(err["error"], "unknown frame type \"bogus\"");
    // Takeover: the new client attaches, the old one is closed with 4001 TAKEN_OVER.
    let mut second = raw(&agent, &id, "?takeover=1&since=0").await.unwrap();
    let closed = loop {
        match tokio::time::timeout(WAIT, first.next()).await.unwrap() {
            Some(Ok(Message::Close(frame))) => break frame,
            Some(Ok(_)) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    };
    let closed = closed.expect("a close frame with a code");
    assert_eq!(u16::from(closed.code), 4001);
    assert_eq!(closed.reason.as_str(), "TAKEN_OVER");
    // The replay (binary 0x03 + offset) comes before `connected`.
    let mut saw_replay = false;
    loop {
        match tokio::time::timeout(WAIT, second.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Message::Binary(b) => {
                assert_eq!(b[0], 0x03, "the first binary frame is the replay");
                assert_eq!(u64::from_be_bytes(b[1..9].try_into().unwrap()), 0);
                saw_replay = true;
            }
            Message::Text(t) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                assert_eq!(v["type"], "connected");
                assert_eq!(v["mode"], "pty");
                break;
            }
            _ => {}
        }
    }
    assert!(saw_replay, "the first client's prompt is replayed");
    // Stdin frames drive the same shell.
    second
        .send(Message::Binary(
            b"\x00echo taken-$((3*3))\r".to_vec().into(),
        ))
        .await
        .unwrap();
    let mut out = Vec::new();
    while !String::from_utf8_lossy(&out).contains("taken-9") {
        if let Message::Binary(b) = tokio::time::timeout(WAIT, second.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            assert_eq!(b[0], 0x01);
            out.extend_from_slice(&b[1..]);
        }
    }
    // A non-WebSocket request to a free session is refused (400) and evicts nobody.
    drop(second);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let r = agent.get(&format!("/pty/{id}/ws")).await;
        if r.status() == 400 {
            break;
        }
        assert_eq!(r.status(), 409, "held until the dropped client is noticed");
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn full_screen_escape_sequences_round_trip_byte_for_byte() {
    let agent = start().await;
    let script = r"printf '\033[?1049h\033[2J\033[H~\033[24;70Hx\033[7m r \033[0m\342\224\200\033[?1049l\377'";
    let id = create(&agent, json!({"command": script})).await;
    let mut conn = client(&agent)
        .attach_pty(&id, &PtyAttachOptions::default())
        .await
        .unwrap();
    let (out, exit, _) = read_to_end(&mut conn).await;
    assert_eq!(exit, Some(0));
    let expected: &[u8] =
        b"\x1b[?1049h\x1b[2J\x1b[H~\x1b[24;70Hx\x1b[7m r \x1b[0m\xe2\x94\x80\x1b[?1049l\xff";
    assert_eq!(out, expected);
}

#[tokio::test]
async fn sessions_are_capped() {
    let agent = start().await;
    let mut ids = Vec::new();
    for _ in 0..opensandbox_agent::pty::MAX_SESSIONS {
        ids.push(create(&agent, json!({})).await);
    }
    let r = agent.post("/pty", json!({})).await;
    assert_eq!(r.status(), 429);
    assert_eq!(
        r.json::<Value>().await.unwrap()["code"],
        "PTY_SESSION_LIMIT"
    );
    assert_eq!(
        agent.delete(&format!("/pty/{}", ids[0])).await.status(),
        200
    );
    create(&agent, json!({})).await;
}

#[tokio::test]
async fn a_slow_reader_keeps_memory_bounded_and_loses_nothing() {
    let agent = start().await;
    // 4 MiB of output, more than the replay buffer: the reader takes it all, in order,
    // while the shell waits for it.
    let id = create(
        &agent,
        json!({"command": "head -c 4194304 /dev/zero | tr '\\0' 'a'; echo END"}),
    )
    .await;
    let mut conn = client(&agent)
        .attach_pty(&id, &PtyAttachOptions::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (out, exit, _) = read_to_end(&mut conn).await;
    assert_eq!(exit, Some(0));
    assert_eq!(out.len(), 4 * 1024 * 1024 + "END\r\n".len());
    assert!(out.ends_with(b"aEND\r\n"));
    let st: Value = agent.get(&format!("/pty/{id}")).await.json().await.unwrap();
    assert_eq!(st["output_offset"], out.len() as u64);
}

/// A keyed session (`POST /pty/operations`) starts its shell once: attaching after the
/// shell exited replays its output and reports the same exit instead of starting
/// another shell (upstream execd's rule for keyed sessions; unkeyed ones restart).
#[tokio::test]
async fn a_keyed_session_launches_once() {
    let agent = start().await;
    let execd = client(&agent);
    let instance = execd.get_execution_instance().await.unwrap();
    let marker = agent.workdir.join("pty-starts");
    let command = format!("echo $$ >> {}; echo keyed-out; exit 7", marker.display());
    let op = execd
        .create_pty_operation(&instance.new_operation_id(), None, Some(&command))
        .await
        .unwrap();
    assert_eq!((op.kind.as_str(), op.state.as_str()), ("pty", "created"));
    let mut conn = execd
        .attach_pty(&op.id, &PtyAttachOptions::default())
        .await
        .unwrap();
    let (out, exit, _) = read_to_end(&mut conn).await;
    assert!(String::from_utf8_lossy(&out).contains("keyed-out"));
    assert_eq!(exit, Some(7));
    for _ in 0..2 {
        let mut again = execd
            .attach_pty(&op.id, &PtyAttachOptions::default())
            .await
            .unwrap();
        let (replayed, exit, close) = read_to_end(&mut again).await;
        assert!(String::from_utf8_lossy(&replayed).contains("keyed-out"));
        assert_eq!((exit, close), (Some(7), Some(1000)));
    }
    let starts = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(starts.lines().count(), 1, "{starts}");
    let status: Value = agent
        .get(&format!("/pty/{}", op.id))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(status["running"], false);
}
