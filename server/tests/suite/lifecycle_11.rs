//! The 1.1 lifecycle surface of the real server binary: SDK metrics events, the
//! lifecycle-plane network policy routes, the snapshot `name` filter and
//! `resourceRequests`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{body, Server, KEY};
use serde_json::{json, Value};

fn put(server: &Server, path: &str) -> reqwest::RequestBuilder {
    server
        .client
        .put(server.url(path))
        .header("OPEN-SANDBOX-API-KEY", KEY)
}

#[tokio::test]
async fn metrics_events_are_validated_and_accepted() {
    let server = Server::start(&[]);
    for prefix in ["", "/v1"] {
        let resp = server
            .post(&format!("{prefix}/metrics/events"))
            .header("User-Agent", "OpenSandbox-Python-SDK/1.1.1")
            .json(
                &json!({"eventType": "sandbox.create", "createDurationMs": 812,
                "success": true, "sandboxId": "abc", "image": "python:3.12",
                "futureField": 1}),
            )
            .send()
            .await
            .expect("post");
        let (status, text) = body(resp).await;
        assert_eq!(status, 204, "{text}");
        assert_eq!(text, Value::String(String::new()));
    }
    // Only the required fields.
    let resp = server
        .post("/v1/metrics/events")
        .json(&json!({"eventType": "sandbox.create", "createDurationMs": 0, "success": false}))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 204);
    for bad in [
        json!({"eventType": "sandbox.delete", "createDurationMs": 1, "success": true}),
        json!({"eventType": "sandbox.create", "createDurationMs": -5, "success": true}),
        json!({"eventType": "sandbox.create", "success": true}),
        json!({"eventType": "sandbox.create", "createDurationMs": "fast", "success": true}),
        json!([1, 2]),
    ] {
        let (status, v) = body(
            server
                .post("/v1/metrics/events")
                .json(&bad)
                .send()
                .await
                .expect("post"),
        )
        .await;
        assert_eq!(status, 400, "{bad} → {v}");
        assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
    }
    // The API key is required.
    let resp = server
        .client
        .post(server.url("/v1/metrics/events"))
        .json(&json!({"eventType": "sandbox.create", "createDurationMs": 1, "success": true}))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn network_policy_routes_follow_sidecar_semantics() {
    let server = Server::start(&[]);
    let id = server
        .create_idle(json!({"networkPolicy": {"defaultAction": "deny",
            "egress": [{"action": "allow", "target": "a.com"}]}}))
        .await;
    let path = format!("/v1/sandboxes/{id}/networkpolicy");

    let (status, v) = body(server.get(&path).send().await.expect("get")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["mode"], "enforcing");
    assert_eq!(v["policy"]["defaultAction"], "deny");
    assert_eq!(v["policy"]["egress"][0]["target"], "a.com");
    // Honest: nothing is enforced, so no enforcementMode, and the reason says so.
    assert!(v.get("enforcementMode").is_none(), "{v}");
    assert!(v["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("not enforced"));

    // PATCH: the incoming rule replaces a.com in place, first duplicate wins, new rule added.
    let (status, v) = body(
        server
            .patch(&path)
            .json(&json!([{"action": "deny", "target": "a.com"},
                {"action": "allow", "target": "a.com"},
                {"action": "allow", "target": "b.com"}]))
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!((status, v["status"].as_str()), (200, Some("ok")), "{v}");
    let (_, v) = body(server.get(&path).send().await.expect("get")).await;
    let rules = v["policy"]["egress"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rules.len(), 2, "{v}");
    let a = rules
        .iter()
        .find(|r| r["target"] == "a.com")
        .expect("a.com");
    assert_eq!(a["action"], "deny");
    assert_eq!(v["policy"]["defaultAction"], "deny");

    // The sidecar route on port 18080 serves the same stored policy.
    let (_, headers) = server.endpoint(&id, 18080).await;
    let mut req = server
        .client
        .get(server.url(&format!("/v1/sandboxes/{id}/proxy/18080/policy")));
    for (k, val) in &headers {
        req = req.header(k, val);
    }
    let (status, sidecar) = body(req.send().await.expect("sidecar get")).await;
    assert_eq!(status, 200, "{sidecar}");
    assert_eq!(sidecar["policy"], v["policy"]);

    // DELETE: by exact target, idempotent, defaultAction kept.
    for (round, reason_has) in [(0, "not enforced"), (1, "no matching targets")] {
        let (status, v) = body(
            server
                .delete(&path)
                .json(&json!(["a.com"]))
                .send()
                .await
                .expect("delete"),
        )
        .await;
        assert_eq!(status, 200, "round {round}: {v}");
        assert!(
            v["reason"]
                .as_str()
                .unwrap_or_default()
                .contains(reason_has),
            "round {round}: {v}"
        );
    }
    let (_, v) = body(server.get(&path).send().await.expect("get")).await;
    assert_eq!(
        v["policy"]["egress"],
        json!([{"action": "allow", "target": "b.com"}])
    );
    assert_eq!(v["policy"]["defaultAction"], "deny");

    // PUT replaces defaultAction and every rule.
    let (status, v) = body(
        put(&server, &path)
            .json(&json!({"defaultAction": "allow", "egress": []}))
            .send()
            .await
            .expect("put"),
    )
    .await;
    assert_eq!(
        (status, v["mode"].as_str()),
        (200, Some("allow_all")),
        "{v}"
    );
    let (_, v) = body(server.get(&path).send().await.expect("get")).await;
    assert_eq!(v["policy"], json!({"defaultAction": "allow", "egress": []}));

    // Bad bodies → 400; unknown sandbox → 404.
    for (method, bad) in [
        ("PATCH", json!([])),
        ("PATCH", json!({"action": "allow"})),
        ("PATCH", json!([{"action": "maybe", "target": "x.com"}])),
        ("PATCH", json!([{"action": "allow", "target": ""}])),
        ("DELETE", json!([])),
        ("DELETE", json!("a.com")),
        ("PUT", json!({"defaultAction": "sometimes"})),
        (
            "PUT",
            json!({"egress": [{"action": "allow", "target": " "}]}),
        ),
    ] {
        let req = match method {
            "PATCH" => server.patch(&path),
            "DELETE" => server.delete(&path),
            _ => put(&server, &path),
        };
        let (status, v) = body(req.json(&bad).send().await.expect("send")).await;
        assert_eq!(status, 400, "{method} {bad} → {v}");
    }
    let (status, v) = body(
        server
            .get("/v1/sandboxes/no-such-sandbox/networkpolicy")
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, 404, "{v}");
    let resp = server
        .client
        .get(server.url(&path))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn a_sandbox_without_policy_reads_allow_all() {
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let (status, v) = body(
        server
            .get(&format!("/sandboxes/{id}/networkpolicy"))
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["mode"], "allow_all");
    assert_eq!(v["policy"], json!({"defaultAction": "allow"}));
}

async fn wait_ready(server: &Server, sid: &str) {
    for _ in 0..600 {
        let (_, s) = body(
            server
                .get(&format!("/v1/snapshots/{sid}"))
                .send()
                .await
                .expect("get"),
        )
        .await;
        if s["status"]["state"] == "Ready" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("snapshot {sid} never became Ready");
}

#[tokio::test]
async fn snapshot_list_filters_by_exact_name() {
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    let mut ids = Vec::new();
    for name in [Some("nightly"), Some("nightly-2"), None] {
        let req = server.post(&format!("/v1/sandboxes/{id}/snapshots"));
        let req = match name {
            Some(n) => req.json(&json!({ "name": n })),
            None => req,
        };
        let (status, snap) = body(req.send().await.expect("snapshot")).await;
        assert_eq!(status, 202, "{snap}");
        let sid = snap["id"].as_str().expect("id").to_string();
        wait_ready(&server, &sid).await;
        ids.push(sid);
    }
    let list = |q: &'static str| {
        let server = &server;
        async move {
            let (status, v) = body(
                server
                    .get(&format!("/v1/snapshots{q}"))
                    .send()
                    .await
                    .expect("list"),
            )
            .await;
            assert_eq!(status, 200, "{v}");
            v["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .filter_map(|s| s["id"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list("?name=nightly").await, vec![ids[0].clone()]);
    assert_eq!(
        list("?name=nightly-2&state=Ready").await,
        vec![ids[1].clone()]
    );
    assert!(list("?name=night").await.is_empty());
    assert!(list("?name=NIGHTLY").await.is_empty());
    assert_eq!(list("").await.len(), 3);
}

#[tokio::test]
async fn resource_requests_are_validated_stored_and_echoed() {
    let server = Server::start(&[]);
    let id = server
        .create_idle(json!({"resourceRequests": {"cpu": "250m", "memory": "256Mi"}}))
        .await;
    let got = server.sandbox(&id).await;
    assert_eq!(
        got["resourceRequests"],
        json!({"cpu": "250m", "memory": "256Mi"}),
        "{got}"
    );
    // Without requests the field is absent, as upstream.
    let plain = server.create_idle(json!({})).await;
    assert!(server
        .sandbox(&plain)
        .await
        .get("resourceRequests")
        .is_none());

    for bad in [
        json!({"gpu": "1"}),
        json!({"cpu": "many"}),
        json!({"memory": "2Gi"}),
        json!({"cpu": 1}),
    ] {
        let (status, v) = body(
            server
                .post("/v1/sandboxes")
                .json(&json!({"image": {"uri": "host"}, "entrypoint": ["true"],
                    "resourceLimits": {"cpu": "1", "memory": "1Gi"},
                    "resourceRequests": bad}))
                .send()
                .await
                .expect("create"),
        )
        .await;
        assert_eq!(status, 400, "{bad} → {v}");
    }
}

#[tokio::test]
async fn pvc_volumes_are_named_server_side_directories() {
    let server = Server::start(&[]);
    let claim = server.data_dir.join("volumes/shared-cache");
    let id = server
        .create_idle(json!({"volumes": [{"name": "cache", "mountPath": "/cache",
            "pvc": {"claimName": "shared-cache", "deleteOnSandboxTermination": true}}]}))
        .await;
    assert!(claim.is_dir(), "claim directory not made");
    if common::isolation() == "bwrap" {
        // Mounted at mountPath: a file written inside lands in the claim.
        let (_, code) = server.run(&id, "echo hi > /cache/note.txt").await;
        assert_eq!(code, Some(0));
        let note = std::fs::read_to_string(claim.join("note.txt")).expect("note");
        assert_eq!(note, "hi\n");
    }
    // A second sandbox reuses the claim; it did not create it, so never deletes it.
    let second = server
        .create_idle(json!({"volumes": [{"name": "cache", "mountPath": "/cache",
            "pvc": {"claimName": "shared-cache", "createIfNotExists": false,
                    "deleteOnSandboxTermination": true}}]}))
        .await;
    let resp = server
        .delete(&format!("/v1/sandboxes/{second}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    assert!(claim.is_dir());
    // The creator asked for deletion on termination.
    let resp = server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    assert!(
        !claim.exists(),
        "claim kept after its creator's termination"
    );

    for (volume, code) in [
        (
            json!({"name": "v", "mountPath": "/v",
                "pvc": {"claimName": "absent", "createIfNotExists": false}}),
            "VOLUME::PVC_NOT_FOUND",
        ),
        (
            json!({"name": "v", "mountPath": "/v", "pvc": {"claimName": "Not_A_Name"}}),
            "VOLUME::INVALID_PVC",
        ),
        (
            json!({"name": "v", "mountPath": "/v", "ossfs": {"bucket": "b",
                "endpoint": "oss.example.com", "accessKeyId": "k", "accessKeySecret": "s"}}),
            "SANDBOX::API_NOT_SUPPORTED",
        ),
    ] {
        let (status, v) = body(
            server
                .post("/v1/sandboxes")
                .json(&json!({"image": {"uri": "host"}, "entrypoint": ["true"],
                    "resourceLimits": {"cpu": "1", "memory": "1Gi"}, "volumes": [volume]}))
                .send()
                .await
                .expect("create"),
        )
        .await;
        assert_eq!((status, v["code"].as_str()), (400, Some(code)), "{v}");
    }
    assert!(!server.data_dir.join("volumes/absent").exists());
}

#[tokio::test]
async fn template_id_excludes_image_and_null_lifecycle_is_absent() {
    // Templates and hooks have their own suites (templates.rs, lifecycle_hooks.rs).
    let server = Server::start(&[]);
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(
                &json!({"image": {"uri": "host"}, "entrypoint": ["true"], "timeout": 600,
                "templateId": "tpl_00000000-0000-0000-0000-000000000000"}),
            )
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 400, "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap_or_default()
            .contains("exactly one"),
        "{v}"
    );
    // `lifecycle: null` is the same as absent.
    server.create_idle(json!({"lifecycle": null})).await;
}
