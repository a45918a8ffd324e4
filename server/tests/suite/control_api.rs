//! Lifecycle API of the real server binary over plain HTTP: auth, request ids, error
//! shapes, create validation, list filters and pagination, metadata, renew,
//! endpoints, pause/resume, snapshots, entrypoint exit, TTL expiry, diagnostics,
//! restart survival.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{body, Server, EGRESS_PORT, EXECD_PORT, KEY};
use serde_json::{json, Value};

#[tokio::test]
async fn health_auth_request_ids_and_error_shapes() {
    let server = Server::start(&[]);
    let c = &server.client;

    // /health needs no key; a request id is generated (32 hex).
    let resp = c.get(server.url("/health")).send().await.expect("health");
    let rid = resp.headers()["x-request-id"]
        .to_str()
        .expect("rid")
        .to_string();
    assert_eq!(rid.len(), 32);
    assert!(rid.chars().all(|ch| ch.is_ascii_hexdigit()));
    assert_eq!(body(resp).await, (200, json!({"status": "healthy"})));
    let resp = c
        .get(server.url("/v1/health"))
        .send()
        .await
        .expect("health");
    assert_eq!(resp.status().as_u16(), 200);

    // Missing and wrong keys, on both prefixes; the request id is echoed on 401s.
    for prefix in ["", "/v1"] {
        let resp = c
            .get(server.url(&format!("{prefix}/sandboxes")))
            .header("X-Request-ID", "my-request-1")
            .send()
            .await
            .expect("list");
        assert_eq!(resp.headers()["x-request-id"], "my-request-1");
        let (status, v) = body(resp).await;
        assert_eq!((status, v["code"].as_str()), (401, Some("MISSING_API_KEY")));
        assert!(v["message"].is_string());
        let resp = c
            .get(server.url(&format!("{prefix}/sandboxes")))
            .header("OPEN-SANDBOX-API-KEY", "wrong")
            .send()
            .await
            .expect("list");
        assert!(resp.headers().contains_key("x-request-id"));
        let (status, v) = body(resp).await;
        assert_eq!((status, v["code"].as_str()), (401, Some("INVALID_API_KEY")));
        let (status, v) = body(
            server
                .get(&format!("{prefix}/sandboxes"))
                .send()
                .await
                .expect("list"),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["pagination"]["totalItems"], 0);
    }

    // Unknown route and wrong method: JSON, with request id.
    let resp = server.get("/v1/nope").send().await.expect("404");
    assert!(resp.headers().contains_key("x-request-id"));
    let (status, v) = body(resp).await;
    assert_eq!((status, v["code"].as_str()), (404, Some("ROUTE_NOT_FOUND")));
    let (status, v) = body(server.patch("/v1/sandboxes").send().await.expect("405")).await;
    assert_eq!(
        (status, v["code"].as_str()),
        (405, Some("METHOD_NOT_ALLOWED"))
    );

    // Unknown sandbox.
    let (status, v) = body(
        server
            .get("/v1/sandboxes/does-not-exist")
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, 404);
    assert!(v["code"].is_string());

    // Body problems are 400 in the error shape, not 415/422.
    let resp = server
        .post("/v1/sandboxes")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("bad json");
    let (status, v) = body(resp).await;
    assert_eq!(status, 400);
    assert!(v["code"].is_string() && v["message"].is_string(), "{v}");
    let resp = server
        .post("/v1/sandboxes")
        .body("{}")
        .send()
        .await
        .expect("no content type");
    assert_eq!(resp.status().as_u16(), 400);

    // No CORS without --cors-origin (tests/hardening.rs covers the flag).
    let resp = c
        .request(reqwest::Method::OPTIONS, server.url("/v1/sandboxes"))
        .header("Origin", "http://example.test")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .expect("preflight");
    assert!(!resp.headers().contains_key("access-control-allow-origin"));
}

#[tokio::test]
async fn create_validation() {
    let server = Server::start(&[]);
    let base = json!({"image": {"uri": "host"}, "entrypoint": ["tail", "-f", "/dev/null"]});
    let with = |extra: Value| {
        let mut b = base.clone();
        for (k, v) in extra.as_object().expect("object") {
            b[k] = v.clone();
        }
        b
    };
    let cases = vec![
        (
            json!({"entrypoint": ["true"]}),
            "SANDBOX::INVALID_PARAMETER",
        ),
        (
            with(json!({"snapshotId": "x"})),
            "SANDBOX::INVALID_PARAMETER",
        ),
        (
            json!({"image": {"uri": "host"}}),
            "SANDBOX::INVALID_PARAMETER",
        ),
        (
            with(json!({"entrypoint": []})),
            "SANDBOX::INVALID_PARAMETER",
        ),
        (with(json!({"timeout": 30})), "SANDBOX::INVALID_PARAMETER"),
        (
            with(json!({"metadata": {"opensandbox.io/x": "1"}})),
            "SANDBOX::INVALID_METADATA_LABEL",
        ),
        (
            with(json!({"secureAccess": true})),
            "SANDBOX::API_NOT_SUPPORTED",
        ),
        (
            with(
                json!({"volumes": [{"name": "v", "mountPath": "/data", "pvc": {"claimName": "c", "createIfNotExists": false}}]}),
            ),
            "VOLUME::PVC_NOT_FOUND",
        ),
        (
            with(
                json!({"volumes": [{"name": "v", "mountPath": "/data", "ossfs": {"bucket": "b"}}]}),
            ),
            "SANDBOX::API_NOT_SUPPORTED",
        ),
        (
            with(
                json!({"volumes": [{"name": "v", "mountPath": "/data", "host": {"path": "/does/not/exist"}}]}),
            ),
            // No --allowed-host-path: every host volume is refused.
            "VOLUME::HOST_PATH_NOT_ALLOWED",
        ),
        (
            with(json!({"extensions": {"poolRef": "p"}})),
            "SANDBOX::UNSUPPORTED_POOL_REF",
        ),
        (
            with(json!({"platform": {"os": "windows", "arch": "amd64"}})),
            "SANDBOX::API_NOT_SUPPORTED",
        ),
        (
            with(json!({"timeout": "sixty"})),
            "SANDBOX::INVALID_REQUEST_BODY",
        ),
        (
            json!({"snapshotId": "no-such-snapshot"}),
            "SNAPSHOT::NOT_FOUND",
        ),
    ];
    for (req, code) in cases {
        let (status, v) = body(
            server
                .post("/v1/sandboxes")
                .json(&req)
                .send()
                .await
                .expect("create"),
        )
        .await;
        assert!(status == 400 || status == 404, "{req} -> {status} {v}");
        assert_eq!(v["code"], code, "{req} -> {v}");
    }
    // Nothing was created by the rejected requests.
    let (_, list) = body(server.get("/v1/sandboxes").send().await.expect("list")).await;
    assert_eq!(list["pagination"]["totalItems"], 0);
}

#[tokio::test]
async fn lifecycle_list_metadata_renew_endpoints_delete() {
    let server = Server::start(&[]);
    let created = server
        .create(json!({
            "image": {"uri": "python:3.11", "auth": {"username": "u", "password": "secret"}},
            "entrypoint": ["tail", "-f", "/dev/null"],
            "timeout": 600,
            "resourceLimits": {"cpu": "500m", "memory": "512Mi"},
            "env": {"GREETING": "hi", "NULLED": null},
            "metadata": {"team": "a", "env": "prod"},
            "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
        }))
        .await;
    assert_eq!(created["status"]["state"], "Running");
    assert!(created["expiresAt"].is_string());
    assert!(created["createdAt"].is_string());
    assert_eq!(created["entrypoint"], json!(["tail", "-f", "/dev/null"]));
    let id = created["id"].as_str().expect("id").to_string();
    assert!(uuid_like(&id), "{id}");

    let sb = server.sandbox(&id).await;
    assert_eq!(sb["image"]["uri"], "python:3.11");
    assert!(
        sb["image"].get("auth").is_none(),
        "credentials must not be echoed: {sb}"
    );
    assert_eq!(sb["metadata"]["team"], "a");

    // More sandboxes for the filters.
    let b = server.create_idle(json!({"metadata": {"team": "b"}})).await;
    let c = server
        .create_idle(json!({"metadata": {"team": "a", "env": "dev"}}))
        .await;
    server
        .post(&format!("/v1/sandboxes/{c}/pause"))
        .send()
        .await
        .expect("pause");

    let list = |q: &'static str| {
        let server = &server;
        async move {
            let (status, v) = body(
                server
                    .get(&format!("/v1/sandboxes{q}"))
                    .send()
                    .await
                    .expect("list"),
            )
            .await;
            assert_eq!(status, 200, "{q}: {v}");
            v
        }
    };
    let ids = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|s| s["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let all = list("").await;
    assert_eq!(all["pagination"]["totalItems"], 3);
    let running = list("?state=Running").await;
    assert_eq!(running["pagination"]["totalItems"], 2);
    let either = list("?state=Running&state=Paused").await;
    assert_eq!(either["pagination"]["totalItems"], 3);
    let team_a = list("?metadata=team%3Da").await;
    let mut got = ids(&team_a);
    got.sort();
    let mut want = vec![id.clone(), c.clone()];
    want.sort();
    assert_eq!(got, want);
    let team_a_prod = list("?metadata=team%3Da%26env%3Dprod").await;
    assert_eq!(ids(&team_a_prod), vec![id.clone()]);
    let paused_a = list("?metadata=team%3Da&state=Paused").await;
    assert_eq!(ids(&paused_a), vec![c.clone()]);
    let (status, v) = body(
        server
            .get("/v1/sandboxes?metadata=team")
            .send()
            .await
            .expect("list"),
    )
    .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("INVALID_METADATA_FORMAT"))
    );
    let (status, _) = body(
        server
            .get("/v1/sandboxes?pageSize=201")
            .send()
            .await
            .expect("list"),
    )
    .await;
    assert_eq!(status, 400);

    // Pagination: 3 items, 2 per page.
    let p1 = list("?pageSize=2&page=1").await;
    assert_eq!(
        p1["pagination"],
        json!({"page": 1, "pageSize": 2, "totalItems": 3, "totalPages": 2, "hasNextPage": true})
    );
    assert_eq!(ids(&p1).len(), 2);
    let p2 = list("?pageSize=2&page=2").await;
    assert_eq!(ids(&p2).len(), 1);
    assert_eq!(p2["pagination"]["hasNextPage"], false);
    let mut pages: Vec<String> = ids(&p1).into_iter().chain(ids(&p2)).collect();
    pages.sort();
    let mut every = vec![id.clone(), b.clone(), c.clone()];
    every.sort();
    assert_eq!(pages, every);

    // Metadata merge patch: set, delete, keep.
    let (status, v) = body(
        server
            .patch(&format!("/v1/sandboxes/{id}/metadata"))
            .json(&json!({"env": null, "owner": "me"}))
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["metadata"], json!({"team": "a", "owner": "me"}));
    let (status, _) = body(
        server
            .patch(&format!("/v1/sandboxes/{id}/metadata"))
            .json(&json!({"opensandbox.io/x": "1"}))
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = body(
        server
            .patch(&format!("/v1/sandboxes/{id}/metadata"))
            .json(&json!({"n": 1}))
            .send()
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(status, 400);

    // Renew: future ok, past 400, sandbox without TTL 409.
    let future = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let (status, v) = body(
        server
            .post(&format!("/v1/sandboxes/{id}/renew-expiration"))
            .json(&json!({"expiresAt": future}))
            .send()
            .await
            .expect("renew"),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let renewed = chrono::DateTime::parse_from_rfc3339(v["expiresAt"].as_str().expect("expiresAt"))
        .expect("rfc3339");
    let wanted = chrono::DateTime::parse_from_rfc3339(&future).expect("rfc3339");
    assert!((renewed - wanted).num_milliseconds().abs() < 1000);
    assert_eq!(server.sandbox(&id).await["expiresAt"], v["expiresAt"]);
    let past = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let (status, _) = body(
        server
            .post(&format!("/v1/sandboxes/{id}/renew-expiration"))
            .json(&json!({"expiresAt": past}))
            .send()
            .await
            .expect("renew"),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = body(
        server
            .post(&format!("/v1/sandboxes/{b}/renew-expiration"))
            .json(&json!({"expiresAt": future}))
            .send()
            .await
            .expect("renew"),
    )
    .await;
    assert_eq!(status, 409);

    // Endpoints: scheme-less, through the server, with the per-sandbox header.
    for prefix in ["", "/v1"] {
        let (status, v) = body(
            server
                .get(&format!(
                    "{prefix}/sandboxes/{id}/endpoints/{EXECD_PORT}?use_server_proxy=false"
                ))
                .send()
                .await
                .expect("endpoint"),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        let host = server.base.trim_start_matches("http://");
        assert_eq!(
            v["endpoint"],
            format!("{host}/sandboxes/{id}/proxy/{EXECD_PORT}")
        );
        assert_eq!(
            v["headers"]["X-EXECD-ACCESS-TOKEN"].as_str().map(str::len),
            Some(64)
        );
    }
    let (_, egress) = body(
        server
            .get(&format!("/v1/sandboxes/{id}/endpoints/{EGRESS_PORT}"))
            .send()
            .await
            .expect("endpoint"),
    )
    .await;
    assert!(
        egress["headers"]["OPENSANDBOX-EGRESS-AUTH"].is_string(),
        "{egress}"
    );
    let (status, v) = body(
        server
            .get(&format!(
                "/v1/sandboxes/{id}/endpoints/{EXECD_PORT}?expires=1900000000"
            ))
            .send()
            .await
            .expect("endpoint"),
    )
    .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (400, Some("SANDBOX::API_NOT_SUPPORTED"))
    );
    let (status, _) = body(
        server
            .get(&format!("/v1/sandboxes/{id}/endpoints/70000"))
            .send()
            .await
            .expect("endpoint"),
    )
    .await;
    assert_eq!(status, 400);

    // Delete: 204, then the sandbox is gone (404), and deleting again is 404.
    let resp = server
        .delete(&format!("/v1/sandboxes/{b}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    let resp = server
        .get(&format!("/v1/sandboxes/{b}"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 404);
    let resp = server
        .delete(&format!("/v1/sandboxes/{b}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 404);
    assert_eq!(list("").await["pagination"]["totalItems"], 2);
    // Its files are removed.
    let gone = server.data_dir.join("sandboxes").join(&b);
    for _ in 0..100 {
        if !gone.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!gone.exists());
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

fn read_counter(server: &Server, id: &str) -> u64 {
    std::fs::read_to_string(server.sandbox_fs(id).join("workspace/counter"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

async fn wait_counter_above(server: &Server, id: &str, above: u64) -> u64 {
    for _ in 0..300 {
        let n = read_counter(server, id);
        if n > above {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("counter of {id} never passed {above}");
}

#[tokio::test]
async fn pause_freezes_the_process_tree_and_resume_thaws_it() {
    let server = Server::start(&[]);
    // Relative paths: the entrypoint starts in /workspace, which is the sandbox's
    // workspace directory with and without isolation.
    let created = server
        .create(json!({
            "image": {"uri": "host"},
            "entrypoint": ["sh", "-c", "i=0; while true; do i=$((i+1)); echo $i > counter.tmp; mv counter.tmp counter; sleep 0.05; done"],
        }))
        .await;
    let id = created["id"].as_str().expect("id").to_string();
    wait_counter_above(&server, &id, 2).await;

    // Resume of a running sandbox is a conflict.
    let (status, v) = body(
        server
            .post(&format!("/v1/sandboxes/{id}/resume"))
            .send()
            .await
            .expect("resume"),
    )
    .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("SANDBOX::NOT_PAUSED"))
    );

    let resp = server
        .post(&format!("/v1/sandboxes/{id}/pause"))
        .send()
        .await
        .expect("pause");
    assert_eq!(resp.status().as_u16(), 202);
    assert_eq!(server.sandbox(&id).await["status"]["state"], "Paused");
    let (status, v) = body(
        server
            .post(&format!("/v1/sandboxes/{id}/pause"))
            .send()
            .await
            .expect("pause"),
    )
    .await;
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("SANDBOX::NOT_RUNNING"))
    );
    // The proxy refuses a paused sandbox with a clear conflict.
    let (url, headers) = server.endpoint(&id, EXECD_PORT).await;
    let mut req = server.client.get(format!("{url}/ping"));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let (status, v) = body(req.send().await.expect("ping")).await;
    assert_eq!((status, v["code"].as_str()), (409, Some("SANDBOX::PAUSED")));

    // Frozen: the counter does not move.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let frozen = read_counter(&server, &id);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        read_counter(&server, &id),
        frozen,
        "counter advanced while paused"
    );

    let resp = server
        .post(&format!("/v1/sandboxes/{id}/resume"))
        .send()
        .await
        .expect("resume");
    assert_eq!(resp.status().as_u16(), 202);
    assert_eq!(server.sandbox(&id).await["status"]["state"], "Running");
    wait_counter_above(&server, &id, frozen).await;
}

#[tokio::test]
async fn entrypoint_exit_ends_the_sandbox() {
    let server = Server::start(&[]);
    let ok = server
        .create(json!({"image": {"uri": "host"}, "entrypoint": ["sh", "-c", "sleep 0.2; exit 0"]}))
        .await;
    let bad = server
        .create(json!({"image": {"uri": "host"}, "entrypoint": ["sh", "-c", "sleep 0.2; exit 3"]}))
        .await;
    let missing = server
        .create(json!({"image": {"uri": "host"}, "entrypoint": ["/no/such/program"]}))
        .await;
    let ok = server
        .wait_for(ok["id"].as_str().expect("id"), "Terminated", |s| {
            s["status"]["state"] == "Terminated"
        })
        .await;
    assert_eq!(ok["status"]["reason"], "ENTRYPOINT_EXITED");
    let bad = server
        .wait_for(bad["id"].as_str().expect("id"), "Failed", |s| {
            s["status"]["state"] == "Failed"
        })
        .await;
    assert_eq!(bad["status"]["reason"], "ENTRYPOINT_EXITED");
    assert!(
        bad["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains('3'),
        "{bad}"
    );
    server
        .wait_for(missing["id"].as_str().expect("id"), "Failed", |s| {
            s["status"]["state"] == "Failed"
        })
        .await;
    // An ended sandbox can't be paused, and is still listed until deleted.
    let id = bad["id"].as_str().expect("id");
    let resp = server
        .post(&format!("/v1/sandboxes/{id}/pause"))
        .send()
        .await
        .expect("pause");
    assert_eq!(resp.status().as_u16(), 409);
    let resp = server
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
}

#[tokio::test]
async fn ttl_expiry_kills_the_sandbox() {
    let server = Server::start(&["--min-sandbox-timeout", "1"]);
    let created = server
        .create(json!({
            "image": {"uri": "host"},
            "entrypoint": ["sh", "-c", "while true; do date +%s%N > alive; sleep 0.05; done"],
            "timeout": 2,
        }))
        .await;
    let id = created["id"].as_str().expect("id").to_string();
    let sb = server
        .wait_for(&id, "TTL expiry", |s| s["status"]["state"] == "Terminated")
        .await;
    assert_eq!(sb["status"]["reason"], "TTL_EXPIRED");
    // The process tree is gone: the heartbeat file stops changing.
    let alive = server.sandbox_fs(&id).join("workspace/alive");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = std::fs::read_to_string(&alive).unwrap_or_default();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(std::fs::read_to_string(&alive).unwrap_or_default(), before);
    // Renewing an ended sandbox is a conflict.
    let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let resp = server
        .post(&format!("/v1/sandboxes/{id}/renew-expiration"))
        .json(&json!({"expiresAt": future}))
        .send()
        .await
        .expect("renew");
    assert_eq!(resp.status().as_u16(), 409);
}

#[tokio::test]
async fn snapshot_and_restore() {
    let server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    std::fs::write(
        server.sandbox_fs(&id).join("workspace/note.txt"),
        b"from the source",
    )
    .expect("write");
    std::fs::create_dir_all(server.sandbox_fs(&id).join("root/.config")).expect("mkdir");
    std::fs::write(server.sandbox_fs(&id).join("root/.config/x"), b"home file").expect("write");

    let resp = server
        .post(&format!("/v1/sandboxes/{id}/snapshots"))
        .json(&json!({"name": "first"}))
        .send()
        .await
        .expect("snapshot");
    assert_eq!(resp.status().as_u16(), 202);
    let location = resp.headers()["location"]
        .to_str()
        .expect("location")
        .to_string();
    let (_, snap) = body(resp).await;
    let sid = snap["id"].as_str().expect("id").to_string();
    assert_eq!(location, format!("/v1/snapshots/{sid}"));
    assert_eq!(snap["sandboxId"], id.as_str());
    assert_eq!(snap["name"], "first");
    assert!(snap["status"]["state"] == "Creating" || snap["status"]["state"] == "Ready");

    let mut ready = Value::Null;
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
            ready = s;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        ready["status"]["state"], "Ready",
        "snapshot never became Ready"
    );

    // List with filters.
    let (_, list) = body(
        server
            .get(&format!("/v1/snapshots?sandboxId={id}&state=Ready"))
            .send()
            .await
            .expect("list"),
    )
    .await;
    assert_eq!(list["pagination"]["totalItems"], 1);
    let (_, list) = body(
        server
            .get("/v1/snapshots?sandboxId=other")
            .send()
            .await
            .expect("list"),
    )
    .await;
    assert_eq!(list["pagination"]["totalItems"], 0);

    // Restore into a new sandbox (default entrypoint).
    let restored = server.create(json!({"snapshotId": sid})).await;
    assert_eq!(restored["status"]["state"], "Running", "{restored}");
    let rid = restored["id"].as_str().expect("id").to_string();
    assert_eq!(restored["entrypoint"], json!(["tail", "-f", "/dev/null"]));
    assert_eq!(server.sandbox(&rid).await["snapshotId"], sid.as_str());
    assert_eq!(
        std::fs::read(server.sandbox_fs(&rid).join("workspace/note.txt")).expect("restored"),
        b"from the source"
    );
    assert_eq!(
        std::fs::read(server.sandbox_fs(&rid).join("root/.config/x")).expect("restored"),
        b"home file"
    );

    // Snapshot of an unknown sandbox, or of an ended one.
    let resp = server
        .post("/v1/sandboxes/nope/snapshots")
        .send()
        .await
        .expect("snapshot");
    assert_eq!(resp.status().as_u16(), 404);
    server
        .delete(&format!("/v1/sandboxes/{rid}"))
        .send()
        .await
        .expect("delete");
    let resp = server
        .post(&format!("/v1/sandboxes/{rid}/snapshots"))
        .send()
        .await
        .expect("snapshot");
    assert_eq!(resp.status().as_u16(), 404);

    // Delete the snapshot.
    let resp = server
        .delete(&format!("/v1/snapshots/{sid}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    let resp = server
        .get(&format!("/v1/snapshots/{sid}"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 404);
    let (status, _) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({"snapshotId": sid}))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn diagnostics_logs_and_events() {
    let server = Server::start(&[]);
    let created = server
        .create(json!({"image": {"uri": "host"}, "entrypoint": ["sh", "-c", "echo hello-from-entrypoint; exec tail -f /dev/null"]}))
        .await;
    let id = created["id"].as_str().expect("id").to_string();
    let mut logs = Value::Null;
    for _ in 0..200 {
        let (status, v) = body(
            server
                .get(&format!(
                    "/v1/sandboxes/{id}/diagnostics/logs?scope=container"
                ))
                .send()
                .await
                .expect("logs"),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        if v["content"]
            .as_str()
            .unwrap_or_default()
            .contains("hello-from-entrypoint")
        {
            logs = v;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        logs["kind"], "logs",
        "entrypoint output never appeared in the logs"
    );
    assert_eq!(logs["delivery"], "inline");
    assert_eq!(logs["sandboxId"], id.as_str());
    assert_eq!(logs["truncated"], false);

    let (status, events) = body(
        server
            .get(&format!(
                "/v1/sandboxes/{id}/diagnostics/events?scope=lifecycle"
            ))
            .send()
            .await
            .expect("events"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        events["content"]
            .as_str()
            .unwrap_or_default()
            .contains("Running"),
        "{events}"
    );

    let resp = server
        .get(&format!("/v1/sandboxes/{id}/diagnostics/logs?tail=5"))
        .send()
        .await
        .expect("legacy logs");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["deprecation"], "true");
    assert!(resp
        .text()
        .await
        .expect("text")
        .contains("hello-from-entrypoint"));
    let resp = server
        .get(&format!("/v1/sandboxes/{id}/diagnostics/events?limit=0"))
        .send()
        .await
        .expect("legacy events");
    assert_eq!(resp.status().as_u16(), 400);
    let resp = server
        .get("/v1/sandboxes/nope/diagnostics/logs?scope=all")
        .send()
        .await
        .expect("logs");
    assert_eq!(resp.status().as_u16(), 404);
}

#[tokio::test]
async fn egress_policy_api_through_the_proxy() {
    let server = Server::start(&[]);
    let id = server
        .create_idle(json!({"networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]}}))
        .await;
    let (url, headers) = server.endpoint(&id, EGRESS_PORT).await;
    let send = |method: reqwest::Method, path: &str, payload: Option<Value>| {
        let mut req = server.client.request(method, format!("{url}{path}"));
        for (k, v) in &headers {
            req = req.header(k, v);
        }
        if let Some(p) = payload {
            req = req.json(&p);
        }
        req.send()
    };
    let (status, v) = body(
        send(reqwest::Method::GET, "/policy", None)
            .await
            .expect("get"),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "ok");
    assert_eq!(v["mode"], "enforcing");
    assert_eq!(v["enforcementMode"], "dns");
    assert_eq!(v["policy"]["egress"][0]["target"], "pypi.org");

    let (status, v) = body(
        send(
            reqwest::Method::PATCH,
            "/policy",
            Some(json!([{"action": "deny", "target": "pypi.org"}, {"action": "allow", "target": "*.github.com"}])),
        )
        .await
        .expect("patch"),
    )
    .await;
    assert_eq!((status, v["mode"].as_str()), (200, Some("enforcing")));
    let (_, v) = body(
        send(reqwest::Method::GET, "/policy", None)
            .await
            .expect("get"),
    )
    .await;
    let rules = v["policy"]["egress"].as_array().expect("rules").clone();
    assert_eq!(rules.len(), 2);
    assert!(rules.contains(&json!({"action": "deny", "target": "pypi.org"})));

    let (status, v) = body(
        send(
            reqwest::Method::DELETE,
            "/policy",
            Some(json!(["pypi.org", "*.github.com"])),
        )
        .await
        .expect("delete"),
    )
    .await;
    assert_eq!((status, v["mode"].as_str()), (200, Some("deny_all")));
    let (_, v) = body(
        send(reqwest::Method::DELETE, "/policy", Some(json!(["x.org"])))
            .await
            .expect("delete"),
    )
    .await;
    assert_eq!(v["reason"], "no matching targets found");
    let (status, v) = body(
        send(
            reqwest::Method::PUT,
            "/policy",
            Some(json!({"defaultAction": "allow"})),
        )
        .await
        .expect("put"),
    )
    .await;
    assert_eq!((status, v["mode"].as_str()), (200, Some("allow_all")));
    let (status, _) = body(
        send(reqwest::Method::PATCH, "/policy", Some(json!([])))
            .await
            .expect("patch"),
    )
    .await;
    assert_eq!(status, 400);
    let resp = send(reqwest::Method::GET, "/healthz", None)
        .await
        .expect("healthz");
    assert_eq!(resp.status().as_u16(), 200);

    // The execd token does not open the egress API, and no token is 401.
    let (_, execd_headers) = server.endpoint(&id, EXECD_PORT).await;
    let mut req = server.client.get(format!("{url}/policy"));
    for (k, v) in &execd_headers {
        req = req.header(k, v);
    }
    let (status, v) = body(req.send().await.expect("get")).await;
    assert_eq!(status, 401, "{v}");
    let resp = server
        .client
        .get(format!("{url}/policy"))
        .header("OPEN-SANDBOX-API-KEY", KEY)
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn sandboxes_survive_a_server_restart() {
    let mut server = Server::start(&[]);
    let survivor = server
        .create_idle(json!({"metadata": {"who": "survivor"}}))
        .await;
    let victim = server.create_idle(json!({})).await;
    let victim_pid = pid_of_sandbox(&server, &victim);
    server.kill_server_only();
    // The victim's processes die while the server is down.
    if let Some(pid) = victim_pid {
        for p in tree(pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let restarted = Server::start_in(&server.data_dir, &[]);
    let sb = restarted.sandbox(&survivor).await;
    assert_eq!(sb["status"]["state"], "Running", "{sb}");
    assert_eq!(sb["metadata"]["who"], "survivor");
    let sb = restarted.sandbox(&victim).await;
    assert_eq!(sb["status"]["state"], "Failed", "{sb}");
    assert_eq!(sb["status"]["reason"], "SERVER_RESTARTED");
    // The adopted sandbox still serves its agent and can be deleted.
    let (url, headers) = restarted.endpoint(&survivor, EXECD_PORT).await;
    let mut req = restarted.client.get(format!("{url}/ping"));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    assert_eq!(req.send().await.expect("ping").status().as_u16(), 200);
    let resp = restarted
        .delete(&format!("/v1/sandboxes/{survivor}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
    drop(restarted);
}

fn pid_of_sandbox(server: &Server, id: &str) -> Option<i32> {
    // The store is the server's; the test finds the sandbox's root process by its
    // command line, which names the sandbox's directory.
    let needle = server.data_dir.join("sandboxes").join(id);
    let needle = needle.to_string_lossy().into_owned();
    let mut candidates = Vec::new();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmd).contains(&needle) {
            candidates.push(pid);
        }
    }
    candidates.into_iter().min()
}

fn tree(root: i32) -> Vec<i32> {
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<i32>().ok())
                else {
                    continue;
                };
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    continue;
                };
                let ppid = stat
                    .rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
                    .and_then(|p| p.parse::<i32>().ok());
                if ppid == Some(parent) && !all.contains(&pid) {
                    all.push(pid);
                }
            }
        }
        i += 1;
    }
    all
}

#[test]
fn bad_configuration_exits_non_zero_with_a_clear_message() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_opensandbox-server"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--isolation",
            "bwrap",
            "--bwrap",
            "/no/such/bwrap",
        ])
        .arg("--data-dir")
        .arg(tmp.path())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--isolation none"), "{stderr}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_opensandbox-server"))
        .args(["--listen", "not-an-address"])
        .output()
        .expect("run");
    assert!(!out.status.success());

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_opensandbox-server"))
        .arg("--help")
        .output()
        .expect("run");
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--listen",
        "--api-key",
        "--data-dir",
        "--db",
        "--isolation",
        "--public-host",
        "--bwrap",
        "--max-sandbox-timeout",
        "--log-level",
        "OPENSANDBOX_API_KEY",
        "--no-auth",
        "--cors-origin",
        "--allowed-host-path",
        "--header-read-timeout",
        "--max-connections",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}

#[tokio::test]
async fn sigterm_stops_the_server_and_sandboxes_are_adopted_after() {
    let mut server = Server::start(&[]);
    let id = server.create_idle(json!({})).await;
    // An open stream must not keep the server alive past its grace period.
    let (url, headers) = server.endpoint(&id, EXECD_PORT).await;
    let mut req = server.client.post(format!("{url}/command"));
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let stream = req
        .json(&json!({"command": "sleep 600"}))
        .send()
        .await
        .expect("command");
    assert_eq!(stream.status().as_u16(), 200);
    let status = server
        .terminate_server()
        .expect("server did not exit after SIGTERM");
    assert!(status.success(), "{status}");
    drop(stream);

    let restarted = Server::start_in(&server.data_dir, &[]);
    assert_eq!(restarted.sandbox(&id).await["status"]["state"], "Running");
    let resp = restarted
        .delete(&format!("/v1/sandboxes/{id}"))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status().as_u16(), 204);
}

#[tokio::test]
async fn json_bodies_are_limited_to_10_mb() {
    let server = Server::start(&[]);
    let big = format!(
        "{{\"metadata\": {{\"k\": \"{}\"}}}}",
        "x".repeat(11 * 1024 * 1024)
    );
    let resp = server
        .post("/v1/sandboxes")
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .expect("big body");
    assert_eq!(resp.status().as_u16(), 413);
    let (_, v) = body(resp).await;
    assert!(v["code"].is_string(), "{v}");
}
