//! Keyed creation (`/execution/*`, `POST /command/operations`, `POST /pty/operations`)
//! and the command inventory (`GET /command`) over HTTP, against a real agent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::exec_support;

use std::time::{Duration, Instant};

use exec_support::{start, Agent, WAIT};
use serde_json::{json, Value};

async fn instance(agent: &Agent) -> Value {
    let response = agent.get("/execution/instance").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    response.json().await.unwrap()
}

async fn new_id(agent: &Agent, token: &str) -> String {
    let i = instance(agent).await;
    format!(
        "{}.{}.{token}",
        i["instance_id"].as_str().unwrap(),
        i["issued_at"]
    )
}

/// POST and return (status, no-store header present, body).
async fn post(agent: &Agent, path: &str, body: Value) -> (u16, Value) {
    let response = agent.post(path, body).await;
    let status = response.status().as_u16();
    assert_eq!(response.headers()["cache-control"], "no-store", "{path}");
    (status, response.json().await.unwrap())
}

async fn lookup(agent: &Agent, kind: &str, id: &str) -> (u16, Value) {
    let response = agent
        .client
        .get(agent.url(&format!("/execution/operation?kind={kind}")))
        .header("X-EXECD-OPERATION-ID", id)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    assert_eq!(response.headers()["cache-control"], "no-store");
    (status, response.json().await.unwrap())
}

async fn status_of(agent: &Agent, id: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let status: Value = agent
            .get(&format!("/command/status/{id}"))
            .await
            .json()
            .await
            .unwrap();
        if status["running"] == false || Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn instance_has_the_upstream_shape() {
    let agent = start().await;
    let i = instance(&agent).await;
    assert_eq!(i["instance_id"].as_str().unwrap().len(), 32);
    assert!(i["issued_at"].as_i64().unwrap() > 1_600_000_000);
    assert_eq!(i["retention_seconds"], 86_400);
    assert_eq!(i["capacity"], 4096);
}

#[tokio::test]
async fn a_retried_command_runs_once() {
    let agent = start().await;
    for background in [false, true] {
        let marker = agent.workdir.join(format!("starts-{background}"));
        let id = new_id(&agent, &format!("once-{background}")).await;
        let body = json!({"operation_id": id, "command": format!("echo $$ >> {}", marker.display()),
                          "background": background, "envs": {}});
        let (status, first) = post(&agent, "/command/operations", body.clone()).await;
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["kind"], "command");
        assert_eq!(first["state"], "created");
        assert!(first["expires_at"].as_str().unwrap().ends_with('Z'));
        let handle = first["id"].as_str().unwrap().to_owned();
        // Retries, concurrent ones included, answer the same handle.
        let retries = futures::future::join_all(
            (0..8).map(|_| post(&agent, "/command/operations", body.clone())),
        )
        .await;
        for (status, again) in retries {
            assert_eq!(status, 200);
            assert_eq!(again["id"], handle.as_str());
        }
        let status = status_of(&agent, &handle).await;
        assert_eq!(status["exit_code"], 0, "{status}");
        assert_eq!(status["content"], "", "keyed status hides the command");
        // An empty env map equals none; after the end a retry still starts nothing.
        let mut same = body.clone();
        same.as_object_mut().unwrap().remove("envs");
        let (_, again) = post(&agent, "/command/operations", same).await;
        assert_eq!(again["id"], handle.as_str());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let starts = std::fs::read_to_string(&marker).unwrap();
        assert_eq!(starts.lines().count(), 1, "{starts}");
        let (status, found) = lookup(&agent, "command", &id).await;
        assert_eq!((status, found["id"].as_str()), (200, Some(handle.as_str())));
        let (status, other) = lookup(&agent, "pty", &id).await;
        assert_eq!(
            (status, other["code"].as_str()),
            (404, Some("operation_not_found"))
        );
    }
}

#[tokio::test]
async fn background_output_goes_to_the_logs() {
    let agent = start().await;
    let id = new_id(&agent, "logs-0001").await;
    let (_, op) = post(
        &agent,
        "/command/operations",
        json!({"operation_id": id, "command": "echo out; echo err >&2", "background": true}),
    )
    .await;
    let handle = op["id"].as_str().unwrap();
    status_of(&agent, handle).await;
    let logs = agent
        .get(&format!("/command/{handle}/logs"))
        .await
        .text()
        .await
        .unwrap();
    assert!(logs.contains("out\n") && logs.contains("err\n"), "{logs}");
}

#[tokio::test]
async fn hostile_requests_are_refused_before_anything_runs() {
    let agent = start().await;
    let marker = agent.workdir.join("never");
    let command = format!("touch {}", marker.display());
    let id = new_id(&agent, "hostile-01").await;
    let cases = [
        (
            json!({"operation_id": id, "command": command, "surprise": 1}),
            400,
            "INVALID_REQUEST_BODY",
        ),
        (json!({"command": command}), 400, "INVALID_REQUEST_BODY"),
        (
            json!({"operation_id": "", "command": command}),
            400,
            "INVALID_REQUEST_BODY",
        ),
        (
            json!({"operation_id": 7, "command": command}),
            400,
            "INVALID_REQUEST_BODY",
        ),
        (
            json!({"operation_id": "bad", "command": command}),
            400,
            "invalid_operation_id",
        ),
        (
            json!({"operation_id": id, "command": "  "}),
            400,
            "INVALID_REQUEST_BODY",
        ),
        (
            json!({"operation_id": id, "command": command, "timeout": -1}),
            400,
            "INVALID_REQUEST_BODY",
        ),
        (
            json!({"operation_id": id, "command": command, "argv": ["x"]}),
            400,
            "INVALID_REQUEST_BODY",
        ),
        (json!([1, 2]), 400, "INVALID_REQUEST_BODY"),
    ];
    for (body, status, code) in cases {
        let (got, error) = post(&agent, "/command/operations", body.clone()).await;
        assert_eq!(
            (got, error["code"].as_str()),
            (status, Some(code)),
            "{body}"
        );
        assert!(
            !error["message"].as_str().unwrap().contains("touch"),
            "{error}"
        );
    }
    // Trailing data and oversized bodies.
    for raw in [
        format!("{{\"operation_id\":\"{id}\",\"command\":\"true\"}} {{}}"),
        "x".repeat(2 << 20),
    ] {
        let response = agent
            .client
            .post(agent.url("/command/operations"))
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        assert!([400, 413].contains(&response.status().as_u16()));
        assert_eq!(response.headers()["cache-control"], "no-store");
    }
    // Nothing was claimed either: the id is still free.
    let (status, _) = lookup(&agent, "command", &id).await;
    assert_eq!(status, 404);
    assert!(!marker.exists());
}

#[tokio::test]
async fn conflicts_mismatches_and_unknown_ids() {
    let agent = start().await;
    let id = new_id(&agent, "conflict-1").await;
    let (status, _) = post(
        &agent,
        "/command/operations",
        json!({"operation_id": id, "command": "true"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, error) = post(
        &agent,
        "/command/operations",
        json!({"operation_id": id, "command": "echo secret-value"}),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (409, Some("operation_conflict"))
    );
    let text = error.to_string();
    assert!(
        !text.contains("secret-value") && !text.contains(&id),
        "{text}"
    );

    let other = start().await;
    let foreign = new_id(&other, "foreign-01").await;
    let (status, error) = post(
        &agent,
        "/command/operations",
        json!({"operation_id": foreign, "command": "true"}),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (409, Some("operation_instance_mismatch"))
    );
    let (status, error) = lookup(&agent, "command", &foreign).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (409, Some("operation_instance_mismatch"))
    );

    let i = instance(&agent).await;
    let future = format!(
        "{}.{}.future-01",
        i["instance_id"].as_str().unwrap(),
        i["issued_at"].as_i64().unwrap() + 3600
    );
    let (status, error) = post(
        &agent,
        "/command/operations",
        json!({"operation_id": future, "command": "true"}),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("invalid_operation_id"))
    );
    let expired = format!(
        "{}.{}.expired-1",
        i["instance_id"].as_str().unwrap(),
        i["issued_at"].as_i64().unwrap() - 86_401
    );
    let (status, error) = post(
        &agent,
        "/command/operations",
        json!({"operation_id": expired, "command": "true"}),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (410, Some("operation_expired"))
    );
    let (status, error) = lookup(&agent, "command", &expired).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (410, Some("operation_expired"))
    );

    let unknown = new_id(&agent, "unknown-01").await;
    let (status, error) = lookup(&agent, "command", &unknown).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (404, Some("operation_not_found"))
    );
    let (status, error) = lookup(&agent, "shell", &unknown).await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("invalid_operation_kind"))
    );
    let response = agent.get("/execution/operation?kind=command").await;
    assert_eq!(response.status(), 400);
}

#[tokio::test]
async fn a_command_that_cannot_start_is_a_failed_operation() {
    let agent = start().await;
    let id = new_id(&agent, "failed-01").await;
    let body =
        json!({"operation_id": id, "command": "true", "cwd": "/does-not-exist-operation-test"});
    let (status, op) = post(&agent, "/command/operations", body.clone()).await;
    assert_eq!((status, op["state"].as_str()), (200, Some("failed")));
    let handle = op["id"].as_str().unwrap();
    let status = status_of(&agent, handle).await;
    assert_eq!(status["exit_code"], 255);
    // The same id never retries it.
    let (_, again) = post(&agent, "/command/operations", body).await;
    assert_eq!(
        (again["id"].as_str(), again["state"].as_str()),
        (Some(handle), Some("failed"))
    );
}

#[tokio::test]
async fn pty_creation_is_keyed() {
    let agent = start().await;
    let id = new_id(&agent, "pty-00001").await;
    let body = json!({"operation_id": id, "cwd": "sub", "command": "echo hi"});
    let (status, op) = post(&agent, "/pty/operations", body.clone()).await;
    assert_eq!(
        (status, op["kind"].as_str(), op["state"].as_str()),
        (200, Some("pty"), Some("created"))
    );
    let handle = op["id"].as_str().unwrap();
    let (_, again) = post(&agent, "/pty/operations", body).await;
    assert_eq!(again["id"].as_str(), Some(handle));
    let session: Value = agent
        .get(&format!("/pty/{handle}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(session["running"], false, "a dormant session: {session}");
    let (status, error) = post(
        &agent,
        "/pty/operations",
        json!({"operation_id": id, "cwd": "other"}),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (409, Some("operation_conflict"))
    );
    let (status, error) = post(
        &agent,
        "/pty/operations",
        json!({"operation_id": id, "shell": "zsh"}),
    )
    .await;
    assert_eq!(
        (status, error["code"].as_str()),
        (400, Some("INVALID_REQUEST_BODY"))
    );
}

#[tokio::test]
async fn inventory_lists_filters_and_pages() {
    let agent = start().await;
    let (_, done) = agent.stream("/command", json!({"command": "true"})).await;
    let done_id = done[0]["text"].as_str().unwrap().to_owned();
    let mut running = agent
        .open_stream(
            "/command",
            json!({"command": "sleep 30", "background": true}),
        )
        .await;
    let running_id = running.next().await.unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();

    let page = |query: &'static str| {
        let agent = &agent;
        async move {
            let response = agent.get(&format!("/command{query}")).await;
            let status = response.status().as_u16();
            assert_eq!(response.headers()["cache-control"], "no-store");
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let (status, all) = page("").await;
    assert_eq!(status, 200);
    assert_eq!(all["pagination"], json!({"limit": 50}));
    let sessions: Vec<&str> = all["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["session"].as_str().unwrap())
        .collect();
    assert_eq!(
        sessions,
        [running_id.as_str(), done_id.as_str()],
        "newest first"
    );
    let first = &all["commands"][0];
    assert_eq!(first["running"], true);
    assert_eq!(first["background"], true);
    assert!(
        first.get("exit_code").is_none() && first.get("finished_at").is_none(),
        "{first}"
    );
    let second = &all["commands"][1];
    assert_eq!(second["exit_code"], 0);
    assert!(
        second["finished_at"].is_string() && second.get("error").is_none(),
        "{second}"
    );

    let (_, only_running) = page("?running=true").await;
    assert_eq!(only_running["commands"].as_array().unwrap().len(), 1);
    let (_, only_done) = page("?running=false").await;
    assert_eq!(only_done["commands"][0]["session"], done_id.as_str());

    let (_, p1) = page("?limit=1").await;
    assert_eq!(p1["commands"][0]["session"], running_id.as_str());
    let cursor = p1["pagination"]["nextCursor"].as_str().unwrap().to_owned();
    let response = agent
        .get(&format!("/command?limit=1&cursor={cursor}"))
        .await;
    let p2: Value = response.json().await.unwrap();
    assert_eq!(p2["commands"][0]["session"], done_id.as_str());
    assert!(p2["pagination"].get("nextCursor").is_none(), "{p2}");
    // A cursor is bound to its filter.
    let response = agent
        .get(&format!("/command?running=true&cursor={cursor}"))
        .await;
    let error = Agent::expect_error(response, 400).await;
    assert_eq!(error["message"], "invalid cursor");
    for bad in [
        "?limit=0",
        "?limit=101",
        "?running=yes",
        "?x=1",
        "?limit=1&limit=2",
        "?&",
    ] {
        let (status, error) = page(bad).await;
        assert_eq!(
            (status, error["code"].as_str()),
            (400, Some("INVALID_QUERY")),
            "{bad}"
        );
    }
    let _ = agent.delete(&format!("/command?id={running_id}")).await;
}
