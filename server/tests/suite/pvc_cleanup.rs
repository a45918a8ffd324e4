//! pvc claims and the end of a sandbox: TTL expiry removes `deleteOnSandboxTermination`
//! claims it made (as DELETE does), and a create that fails leaves no claim it made.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{body, Server};
use serde_json::json;

#[tokio::test]
async fn ttl_expiry_removes_the_claims_a_sandbox_made() {
    let server = Server::start(&["--min-sandbox-timeout", "1"]);
    let id = server
        .create_idle(json!({"timeout": 1, "volumes": [
            {"name": "made", "mountPath": "/made", "pvc": {"claimName": "ttl-made", "deleteOnSandboxTermination": true}},
            {"name": "kept", "mountPath": "/kept", "pvc": {"claimName": "ttl-kept"}},
        ]}))
        .await;
    let claims = server.data_dir.join("volumes");
    assert!(claims.join("ttl-made").is_dir() && claims.join("ttl-kept").is_dir());
    server
        .wait_for(&id, "TTL expiry", |s| {
            s["status"]["reason"] == "TTL_EXPIRED"
        })
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while claims.join("ttl-made").exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "claim still there after expiry"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        claims.join("ttl-kept").is_dir(),
        "a claim without deleteOnSandboxTermination stays"
    );
    // Made again by another sandbox: deleting the expired one leaves it.
    let other = server
        .create_idle(json!({"volumes": [{"name": "v", "mountPath": "/v", "pvc": {"claimName": "ttl-made"}}]}))
        .await;
    let resp = server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 204);
    assert!(
        claims.join("ttl-made").is_dir(),
        "another sandbox's claim was removed"
    );
    let _ = other;
}

#[tokio::test]
async fn a_failed_create_leaves_no_claim_it_made() {
    let server = Server::start(&[]);
    std::fs::create_dir_all(server.data_dir.join("volumes/existing")).unwrap();
    // Refused after the first claim was resolved: a later volume is invalid.
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(
                &json!({"image": {"uri": "host"}, "entrypoint": ["true"], "volumes": [
                    {"name": "a", "mountPath": "/a", "pvc": {"claimName": "fresh-one"}},
                    {"name": "b", "mountPath": "/b", "pvc": {"claimName": "existing"}},
                    {"name": "c", "mountPath": "/c", "pvc": {"claimName": "Bad_Name"}},
                ]}),
            )
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{v}");
    assert!(!server.data_dir.join("volumes/fresh-one").exists());
    assert!(server.data_dir.join("volumes/existing").is_dir());
    // Failed after validation: a preStart that fails.
    let (status, v) = body(
        server
            .post("/v1/sandboxes")
            .json(
                &json!({"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"],
                "volumes": [{"name": "a", "mountPath": "/a", "pvc": {"claimName": "fresh-two"}}],
                "lifecycle": {"preStart": {"command": ["false"]}}}),
            )
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 500, "{v}");
    assert!(!server.data_dir.join("volumes/fresh-two").exists());
}
