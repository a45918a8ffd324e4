//! `/templates` on the real server binary: the build (Pending → Building →
//! Succeeded | Failed), sandboxes created from a template, hostile input, restarts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::runc::RuncServer;
use common::{body, Server};
use serde_json::{json, Value};

async fn create_template(server: &Server, req: Value) -> (u16, Value) {
    body(
        server
            .post("/v1/templates")
            .json(&req)
            .send()
            .await
            .expect("post"),
    )
    .await
}

async fn get_template(server: &Server, id: &str) -> Value {
    let (status, v) = body(
        server
            .get(&format!("/v1/templates/{id}"))
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    v
}

/// Polls until the build ends; returns the template.
async fn wait_built(server: &Server, id: &str, within: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let t = get_template(server, id).await;
        let phase = t["status"]["phase"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if phase == "Succeeded" || phase == "Failed" {
            return t;
        }
        assert!(
            ["Pending", "Building"].contains(&phase.as_str()),
            "unknown phase: {t}"
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "build still {phase}: {t}\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_template_builds_and_backs_sandboxes_with_its_env_and_files() {
    let server = Server::start(&[]);
    let (status, t) = create_template(
        &server,
        json!({
            "image": "host", "publish": "s3://bucket/publish",
            "entrypoint": ["sh", "-c", "echo warm > /tmp/warmed; sleep 1; touch /tmp/ready; exec tail -f /dev/null"],
            "env": {"GREETING": "hello from the template", "QUOTED": "it's"},
            "metadata": {"team": "a"},
            "readiness": {"probe": "cmd://test -f /tmp/ready", "warmupSeconds": 30},
        }),
    )
    .await;
    assert_eq!(status, 201, "{t}");
    let id = t["templateId"].as_str().unwrap().to_string();
    assert!(id.starts_with("tpl_") && id.len() == 40, "{id}");
    assert_eq!(t["status"]["phase"], "Pending");
    assert_eq!(t["format"], "overlaybd");
    assert_eq!(t["publish"], "s3://bucket/publish");
    assert!(t["createdAt"].is_string() && t["updatedAt"].is_string());
    let built = wait_built(&server, &id, Duration::from_secs(60)).await;
    assert_eq!(
        built["status"]["phase"],
        "Succeeded",
        "{built}\n{}",
        server.log()
    );
    let manifest = built["status"]["manifestRef"].as_str().unwrap();
    assert!(
        manifest.starts_with(&format!("local:templates/{id}")),
        "{manifest}"
    );
    // The build sandbox is gone.
    let list: Value = server
        .get("/v1/sandboxes")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["pagination"]["totalItems"], 0, "{list}");

    // A sandbox from the template: its env, and the files the warm-up wrote.
    let created = server
        .create(
            json!({"templateId": id, "timeout": 600, "secureAccess": false,
                       "metadata": {"from": "template"}}),
        )
        .await;
    assert_eq!(created["status"]["state"], "Running", "{created}");
    let sid = created["id"].as_str().unwrap().to_string();
    let (out, code) = server
        .run(
            &sid,
            "echo \"$GREETING\"; cat /tmp/warmed; echo \"$QUOTED\"",
        )
        .await;
    assert_eq!(code, Some(0));
    assert_eq!(out, vec!["hello from the template", "warm", "it's"]);
    let info = server.sandbox(&sid).await;
    assert_eq!(info["metadata"]["from"], "template");
    assert_eq!(info["entrypoint"][0], "sh");
    // (1.1) Its endpoint lookups say it is template-backed; a plain sandbox's do not.
    let origin = |resp: reqwest::Response| {
        resp.headers()
            .get("OPEN-SANDBOX-ORIGIN")
            .map(|v| v.to_str().unwrap().to_string())
    };
    let resp = server
        .get(&format!("/v1/sandboxes/{sid}/endpoints/44772"))
        .send()
        .await
        .unwrap();
    assert_eq!(origin(resp), Some("template".to_string()));
    let plain = server.create_idle(json!({})).await;
    let resp = server
        .get(&format!("/v1/sandboxes/{plain}/endpoints/44772"))
        .send()
        .await
        .unwrap();
    assert_eq!(origin(resp), None);

    // Listing with the metadata filter and pagination.
    let (s, page) = body(
        server
            .get("/v1/templates?metadata=team%3Da&pageSize=1")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(page["items"][0]["templateId"], id.as_str());
    assert_eq!(page["pagination"]["totalItems"], 1);
    let (_, none) = body(
        server
            .get("/v1/templates?metadata=team%3Db")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(none["pagination"]["totalItems"], 0);

    // Deleting the template leaves its sandbox running; later creates get 404.
    let resp = server
        .delete(&format!("/v1/templates/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 204);
    assert!(!server.data_dir.join("templates").join(&id).exists());
    let (_, code) = server.run(&sid, "true").await;
    assert_eq!(code, Some(0));
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({"templateId": id, "timeout": 600}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404, "{v}");
    assert_eq!(v["code"], "TEMPLATE::NOT_FOUND");
    let resp = server
        .delete(&format!("/v1/templates/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
}

#[tokio::test]
async fn template_mode_creates_are_checked_like_upstream() {
    let server = Server::start(&[]);
    let (_, t) = create_template(&server, json!({"image": "host", "publish": "s3://b/p"})).await;
    let id = t["templateId"].as_str().unwrap().to_string();
    assert_eq!(
        wait_built(&server, &id, Duration::from_secs(30)).await["status"]["phase"],
        "Succeeded"
    );
    for (extra, why) in [
        (json!({"entrypoint": ["sh"]}), "entrypoint"),
        (json!({"env": {"A": "1"}}), "env"),
        (json!({"resourceLimits": {"cpu": "1"}}), "resourceLimits"),
        (
            json!({"lifecycle": {"preStart": {"command": ["true"]}}}),
            "lifecycle",
        ),
        (json!({"secureAccess": true}), "secureAccess"),
        (json!({"image": {"uri": "host"}}), "exactly one"),
    ] {
        let mut req = json!({"templateId": id, "timeout": 600});
        for (k, v) in extra.as_object().unwrap() {
            req[k] = v.clone();
        }
        let (status, v) = body(
            server
                .post("/v1/sandboxes")
                .json(&req)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 400, "{req} → {v}");
        assert!(v["message"].as_str().unwrap().contains(why), "{v}");
    }
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({"templateId": id}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{v}");
    assert!(v["message"].as_str().unwrap().contains("timeout"));
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({"templateId": "tpl_missing", "timeout": 600}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404, "{v}");
}

#[tokio::test]
async fn hostile_template_requests_are_refused() {
    let server = Server::start(&[]);
    let mut huge_env = serde_json::Map::new();
    huge_env.insert("A".repeat(100_000), json!("x"));
    let huge_env = Value::Object(huge_env);
    for (req, why) in [
        (json!({"image": "host"}), "publish"),
        (json!({"publish": "s3://b/p"}), "image"),
        (json!({"image": " ", "publish": "s3://b/p"}), "image"),
        (
            json!({"image": "host", "publish": "s3://b/p", "env": {"1BAD": "x"}}),
            "not a valid variable name",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "env": {"A-B": "x"}}),
            "not a valid variable name",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "env": huge_env}),
            "not a valid variable name",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "env": {"A": "x\ny"}}),
            "newlines",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "resourceLimits": {"gpu": "1"}}),
            "gpu",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "format": "qcow2"}),
            "format",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "readiness": {"probe": "http://x"}}),
            "probe",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "metadata": {"opensandbox.io/x": "1"}}),
            "reserved",
        ),
        (
            json!({"image": "host", "publish": "s3://b/p", "kernel": "vmlinux"}),
            "kernel",
        ),
    ] {
        let (status, v) = create_template(&server, req.clone()).await;
        assert_eq!(status, 400, "{why}: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{why}: {message}");
        assert!(message.len() < 2000, "the huge name is not echoed back");
    }
    let (_, list) = body(server.get("/v1/templates").send().await.unwrap()).await;
    assert_eq!(list["pagination"]["totalItems"], 0, "{list}");
}

#[tokio::test]
async fn a_build_whose_probe_never_passes_fails_with_the_reason() {
    let server = Server::start(&[]);
    let (_, t) = create_template(
        &server,
        json!({"image": "host", "publish": "s3://b/p",
               "readiness": {"probe": "cmd://exit 3", "warmupSeconds": 2}}),
    )
    .await;
    let id = t["templateId"].as_str().unwrap().to_string();
    let built = wait_built(&server, &id, Duration::from_secs(30)).await;
    assert_eq!(built["status"]["phase"], "Failed", "{built}");
    let message = built["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("readiness probe") && message.contains("code 3"),
        "{message}"
    );
    assert!(built["status"].get("manifestRef").is_none());
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({"templateId": id, "timeout": 600}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404, "{v}");
    assert!(v["message"].as_str().unwrap().contains("Failed"), "{v}");
}

#[tokio::test]
async fn a_build_interrupted_by_a_restart_is_failed() {
    let mut server = Server::start(&[]);
    let (_, t) = create_template(
        &server,
        json!({"image": "host", "publish": "s3://b/p", "readiness": {"warmupSeconds": 600}}),
    )
    .await;
    let id = t["templateId"].as_str().unwrap().to_string();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while get_template(&server, &id).await["status"]["phase"] != "Building" {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.kill_server_only();
    let data_dir = server.data_dir.clone();
    let restarted = Server::start_in(&data_dir, &[]);
    let t = get_template(&restarted, &id).await;
    assert_eq!(t["status"]["phase"], "Failed", "{t}");
    assert!(
        t["status"]["message"].as_str().unwrap().contains("restart"),
        "{t}"
    );
    drop(restarted);
    drop(server);
}

#[tokio::test]
async fn runc_templates_pull_bake_the_env_file_and_fail_on_a_bad_image() {
    let image = need_runc!();
    let rs = RuncServer::start(&image);
    let server = &rs.server;
    let (status, t) = create_template(
        server,
        json!({"image": "oci:/nonexistent/layout:latest", "publish": "s3://b/p"}),
    )
    .await;
    assert_eq!(status, 201, "{t}");
    let bad = t["templateId"].as_str().unwrap().to_string();
    let failed = wait_built(server, &bad, Duration::from_secs(60)).await;
    assert_eq!(failed["status"]["phase"], "Failed", "{failed}");
    let message = failed["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("pulling image oci:/nonexistent/layout:latest"),
        "{message}"
    );

    let (_, t) = create_template(
        server,
        json!({"image": image, "publish": "s3://b/p", "entrypoint": ["sleep", "infinity"],
               "env": {"MODE": "baked"}, "resourceLimits": {"cpu": "500m", "memory": "256Mi"}}),
    )
    .await;
    let id = t["templateId"].as_str().unwrap().to_string();
    let built = wait_built(server, &id, Duration::from_secs(120)).await;
    assert_eq!(
        built["status"]["phase"],
        "Succeeded",
        "{built}\n{}",
        server.log()
    );
    let manifest = built["status"]["manifestRef"].as_str().unwrap();
    assert!(manifest.contains("@sha256:"), "{manifest}");
    let created = server
        .create(json!({"templateId": id, "timeout": 600}))
        .await;
    let sid = created["id"].as_str().unwrap().to_string();
    let (out, code) = rs
        .sh(&sid, "cat /etc/sandbox-init.env; echo \"$MODE\"")
        .await;
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out, "MODE='baked'\nbaked");
    // The template's limits apply.
    let quota = std::fs::read_to_string(rs.cgroup_file("cpu", &sid, "cpu.cfs_quota_us"))
        .unwrap_or_default();
    assert_eq!(quota.trim(), "50000", "cpu 500m over a 100 ms period");
}
