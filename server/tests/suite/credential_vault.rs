//! The credential vault on a sandbox's egress endpoint (real server binary):
//! upstream's semantics, secrets never echoed, logged or stored in clear, and the
//! honest "stored, not enforced".

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{body, Server, EGRESS_PORT};
use serde_json::{json, Value};

const SECRET: &str = "ghp_TOPSECRET_value_4f9a";
const SECRET2: &str = "second-SECRET-9d1e";

struct Vault<'a> {
    server: &'a Server,
    url: String,
    headers: Vec<(String, String)>,
}

impl Vault<'_> {
    async fn open<'a>(server: &'a Server, id: &str) -> Vault<'a> {
        let (url, headers) = server.endpoint(id, EGRESS_PORT).await;
        Vault {
            server,
            url: format!("{url}/credential-vault"),
            headers,
        }
    }

    async fn call(
        &self,
        method: reqwest::Method,
        rest: &str,
        body_json: Option<Value>,
    ) -> (u16, Value, String) {
        let mut req = self
            .server
            .client
            .request(method, format!("{}{rest}", self.url));
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        if let Some(b) = body_json {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("vault call");
        let header = resp
            .headers()
            .get("opensandbox-credential-vault")
            .map(|v| v.to_str().unwrap_or_default().to_string())
            .unwrap_or_default();
        let (status, v) = body(resp).await;
        (status, v, header)
    }
}

fn policy() -> Value {
    json!({"defaultAction": "deny", "egress": [{"action": "allow", "target": "*.example.com"}]})
}

fn create_body() -> Value {
    json!({
        "credentials": [
            {"name": "gh", "source": {"type": "inline", "value": SECRET}},
        ],
        "bindings": [
            {"name": "api", "match": {"hosts": ["API.example.com"], "ports": [443]},
             "auth": {"type": "apiKey", "name": "private-token", "credential": "gh"}},
            {"name": "query", "match": {"hosts": ["q.example.com"], "schemes": ["http"]},
             "auth": {"type": "passthrough", "substitutions": [
                {"credential": "gh", "placeholder": "__GH__", "in": ["query", "header"]}]}},
        ],
    })
}

#[tokio::test]
async fn the_vault_follows_upstream_and_never_shows_a_secret() {
    let server = Server::start(&[]);
    let id = server
        .create_idle(json!({"networkPolicy": policy(), "credentialProxy": {"enabled": true}}))
        .await;
    let vault = Vault::open(&server, &id).await;
    let (status, v, _) = vault.call(reqwest::Method::GET, "", None).await;
    assert_eq!(status, 404, "no vault yet: {v}");

    let (status, state, header) = vault
        .call(reqwest::Method::POST, "", Some(create_body()))
        .await;
    assert_eq!(status, 201, "{state}");
    assert!(header.contains("not enforced"), "{header}");
    assert_eq!(state["revision"], 1);
    assert_eq!(
        state["credentials"],
        json!([{"name": "gh", "sourceType": "inline", "revision": 1}])
    );
    let api = &state["bindings"][0];
    assert_eq!(api["name"], "api");
    assert_eq!(api["match"]["hosts"], json!(["api.example.com"]));
    assert_eq!(api["match"]["schemes"], json!(["https"]));
    assert_eq!(api["match"]["paths"], json!(["/*"]));
    assert!(api["match"].get("ports").is_none());
    assert_eq!(
        api["auth"],
        json!({"type": "apiKey", "name": "Private-Token"})
    );
    assert_eq!(state["bindings"][1]["auth"], json!({"type": "passthrough"}));

    let (status, v, _) = vault
        .call(reqwest::Method::POST, "", Some(create_body()))
        .await;
    assert_eq!(status, 409, "a second create: {v}");

    // Stale revision → 409; a good patch bumps the revision.
    let patch = json!({"expectedRevision": 7, "credentials": {"add": [{"name": "two", "source": {"type": "inline", "value": SECRET2}}]}});
    let (status, v, _) = vault.call(reqwest::Method::PATCH, "", Some(patch)).await;
    assert_eq!(status, 409, "{v}");
    let patch = json!({"expectedRevision": 1,
        "credentials": {"add": [{"name": "two", "source": {"type": "inline", "value": SECRET2}}],
                        "replace": [{"name": "gh", "source": {"type": "inline", "value": "rotated"}}]},
        "bindings": {"delete": ["query"]}});
    let (status, state, _) = vault.call(reqwest::Method::PATCH, "", Some(patch)).await;
    assert_eq!(status, 200, "{state}");
    assert_eq!(state["revision"], 2);
    assert_eq!(
        state["credentials"][0],
        json!({"name": "gh", "sourceType": "inline", "revision": 2})
    );
    assert_eq!(state["bindings"].as_array().unwrap().len(), 1);

    // Sub-resources.
    let (s, list, _) = vault.call(reqwest::Method::GET, "/credentials", None).await;
    assert_eq!(s, 200);
    assert_eq!(list["revision"], 2);
    assert_eq!(list["credentials"].as_array().unwrap().len(), 2);
    let (s, one, _) = vault
        .call(reqwest::Method::GET, "/credentials/two", None)
        .await;
    assert_eq!((s, one["name"].as_str()), (200, Some("two")));
    let (s, b, _) = vault
        .call(reqwest::Method::GET, "/bindings/api", None)
        .await;
    assert_eq!((s, b["revision"].as_i64()), (200, Some(2)));
    let (s, _, _) = vault
        .call(reqwest::Method::GET, "/bindings/nope", None)
        .await;
    assert_eq!(s, 404);
    let (s, bl, _) = vault.call(reqwest::Method::GET, "/bindings", None).await;
    assert_eq!((s, bl["bindings"].as_array().map(Vec::len)), (200, Some(1)));

    // The lifecycle-plane policy says nothing is enforced, the vault included.
    let (_, p) = body(
        server
            .get(&format!("/v1/sandboxes/{id}/networkpolicy"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(
        p["reason"]
            .as_str()
            .unwrap()
            .contains("credential vault stored, not enforced"),
        "{p}"
    );

    // No secret anywhere: answers, the sandbox record, the log, the database in clear.
    let mut seen = String::new();
    for rest in ["", "/credentials", "/credentials/gh", "/bindings"] {
        seen.push_str(
            &vault
                .call(reqwest::Method::GET, rest, None)
                .await
                .1
                .to_string(),
        );
    }
    seen.push_str(&server.sandbox(&id).await.to_string());
    seen.push_str(
        &body(
            server
                .get(&format!("/v1/sandboxes/{id}/diagnostics/logs?scope=all"))
                .send()
                .await
                .unwrap(),
        )
        .await
        .1
        .to_string(),
    );
    seen.push_str(&server.log());
    for secret in [SECRET, SECRET2, "rotated"] {
        assert!(!seen.contains(secret), "{secret} leaked");
    }
    for entry in std::fs::read_dir(&server.data_dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".db") || name.contains(".db-") {
            let bytes = std::fs::read(entry.path()).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains(SECRET) && !text.contains(SECRET2),
                "{name} holds a secret in clear"
            );
            use std::os::unix::fs::PermissionsExt;
            let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{name}");
        }
    }

    let (s, _, _) = vault.call(reqwest::Method::DELETE, "", None).await;
    assert_eq!(s, 204);
    let (s, _, _) = vault.call(reqwest::Method::DELETE, "", None).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn bad_vault_requests_are_refused() {
    let server = Server::start(&[]);
    // Without credentialProxy: 412, as upstream's sidecar without its proxy.
    let plain = server.create_idle(json!({})).await;
    let vault = Vault::open(&server, &plain).await;
    let (s, v, _) = vault.call(reqwest::Method::GET, "", None).await;
    assert_eq!(s, 412, "{v}");
    // credentialProxy needs a policy.
    let (s, v) = body(
        server
            .post("/v1/sandboxes")
            .json(&json!({"image": {"uri": "host"}, "entrypoint": ["true"],
                          "credentialProxy": {"enabled": true}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 400, "{v}");

    let id = server
        .create_idle(json!({"networkPolicy": policy(), "credentialProxy": {"enabled": true}}))
        .await;
    let vault = Vault::open(&server, &id).await;
    let cred = json!({"name": "c", "source": {"type": "inline", "value": SECRET}});
    let bind =
        |host: &str, auth: Value| json!({"name": "b", "match": {"hosts": [host]}, "auth": auth});
    for (req, why) in [
        (
            json!({"credentials": [cred], "bindings": [bind("a.example.com", json!({"type": "bearer", "credential": "missing"}))]}),
            "unknown credential",
        ),
        (
            json!({"credentials": [cred], "bindings": [bind("evil.org", json!({"type": "bearer", "credential": "c"}))]}),
            "not allowed by the egress policy",
        ),
        (
            json!({"credentials": [cred], "bindings": [bind("a.example.com", json!({"type": "passthrough", "credential": "c"}))]}),
            "takes no `credential`",
        ),
        (
            json!({"credentials": [cred], "bindings": [bind("a.example.com", json!({"type": "bearer", "credential": "c", "substitutions": [{"credential": "c", "placeholder": "P", "in": ["cookie"]}]}))]}),
            "unsupported surface",
        ),
        (
            json!({"credentials": [cred], "bindings": [bind("10.1.2.3", json!({"type": "bearer", "credential": "c"}))]}),
            "IP address",
        ),
        (
            json!({"credentials": [cred, cred], "bindings": []}),
            "twice",
        ),
        (
            json!({"credentials": [{"name": "c", "source": {"type": "vault", "value": SECRET}}], "bindings": []}),
            "only inline",
        ),
        (
            json!({"credentials": [{"name": "c", "source": SECRET}], "bindings": []}),
            "malformed",
        ),
        (
            json!({"credentials": [cred], "bindings": [], "extra": 1}),
            "extra",
        ),
    ] {
        let (s, v, _) = vault.call(reqwest::Method::POST, "", Some(req)).await;
        assert_eq!(s, 400, "{why}: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{why}: {message}");
        assert!(!message.contains(SECRET), "the secret is echoed: {message}");
    }
    let (s, _, _) = vault.call(reqwest::Method::GET, "", None).await;
    assert_eq!(s, 404, "no refused create left a vault");
    assert!(!server.log().contains(SECRET));
}
