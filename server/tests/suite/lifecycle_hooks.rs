//! Lifecycle hooks on the real server binary: `preStart` before Running (a failure
//! fails the create), `periodic` on its schedule, both visible in diagnostics.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{body, Server};
use serde_json::{json, Value};

async fn diagnostics(server: &Server, id: &str, kind: &str) -> String {
    let (status, v) = body(
        server
            .get(&format!("/v1/sandboxes/{id}/diagnostics/{kind}?scope=all"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    v["content"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn pre_start_runs_before_running_and_periodic_hooks_repeat() {
    let server = Server::start(&[]);
    let created = server
        .create(json!({
            "image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"],
            "lifecycle": {
                "preStart": {"command": ["sh", "-c", "echo prepared > /tmp/pre; echo pre-out"], "timeoutSeconds": 30},
                "periodic": [{"name": "tick", "schedule": "@every 1s",
                              "command": ["sh", "-c", "date +%s >> /tmp/ticks; echo tick-out"]}],
            },
        }))
        .await;
    assert_eq!(created["status"]["state"], "Running", "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    // preStart ran before the answer.
    let (out, _) = server.run(&id, "cat /tmp/pre").await;
    assert_eq!(out, vec!["prepared"]);
    // The periodic hook runs every second.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (out, _) = server
            .run(&id, "wc -l < /tmp/ticks 2>/dev/null || echo 0")
            .await;
        let n: u32 = out.first().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
        if n >= 3 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {n} ticks\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let logs = diagnostics(&server, &id, "logs").await;
    assert!(
        logs.contains("[lifecycle preStart] stdout: pre-out"),
        "{logs}"
    );
    assert!(
        logs.contains("[lifecycle preStart] exited with code 0"),
        "{logs}"
    );
    assert!(
        logs.contains("[lifecycle periodic tick] stdout: tick-out"),
        "{logs}"
    );
    let events = diagnostics(&server, &id, "events").await;
    assert!(events.contains("reason=HOOK_PRESTART"), "{events}");
    assert!(events.contains("reason=HOOK_PERIODIC"), "{events}");
    // Paused: no run; deleted: the hook stops.
    let resp = server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 204);
}

#[tokio::test]
async fn a_failing_pre_start_fails_the_create() {
    let server = Server::start(&[]);
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({
                "image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"],
                "lifecycle": {"preStart": {"command": ["sh", "-c", "echo cannot-prepare >&2; exit 7"]}},
            }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 500, "{v}");
    assert_eq!(v["code"], "SANDBOX::PRESTART_FAILED");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains("exited with code 7") && message.contains("cannot-prepare"),
        "{message}"
    );
    // The sandbox stays, Failed, with the hook's output in its diagnostics.
    let list: Value = server
        .get("/v1/sandboxes")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sb = &list["items"][0];
    assert_eq!(sb["status"]["state"], "Failed", "{sb}");
    assert_eq!(sb["status"]["reason"], "PRESTART_FAILED");
    let id = sb["id"].as_str().unwrap();
    let logs = diagnostics(&server, id, "logs").await;
    assert!(
        logs.contains("[lifecycle preStart] stderr: cannot-prepare"),
        "{logs}"
    );
}

#[tokio::test]
async fn a_pre_start_that_times_out_fails_the_create() {
    let server = Server::start(&[]);
    let started = std::time::Instant::now();
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({
                "image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"],
                "lifecycle": {"preStart": {"command": ["sleep", "100"], "timeoutSeconds": 1}},
            }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 500, "{v}");
    assert!(v["message"].as_str().unwrap().contains("timed out"), "{v}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test]
async fn bad_hooks_are_refused() {
    let server = Server::start(&[]);
    for (lifecycle, why) in [
        (json!({"preStart": {"command": []}}), "program"),
        (
            json!({"preStart": {"command": ["true"], "timeoutSeconds": 0}}),
            "timeoutSeconds",
        ),
        (
            json!({"periodic": [{"name": "a", "schedule": "every minute", "command": ["true"]}]}),
            "schedule",
        ),
        (
            json!({"periodic": [{"name": "a", "schedule": "@every 1s", "command": ["true"], "timeoutSeconds": 301}]}),
            "300",
        ),
        (
            json!({"periodic": [{"name": "a", "schedule": "@hourly", "command": ["x"]}, {"name": "a", "schedule": "@hourly", "command": ["y"]}]}),
            "twice",
        ),
        (json!({"postStop": {"command": ["true"]}}), "postStop"),
    ] {
        let (status, v) = body(
            server
                .post("/v1/sandboxes")
                .json(&json!({"image": {"uri": "host"}, "entrypoint": ["true"], "lifecycle": lifecycle}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 400, "{why}: {v}");
        assert!(v["message"].as_str().unwrap().contains(why), "{why}: {v}");
    }
    let list: Value = server
        .get("/v1/sandboxes")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["pagination"]["totalItems"], 0);
}
