//! The lifecycle API client (the Python SDK's `SandboxManager`): every route of the
//! lifecycle, snapshot and diagnostics APIs, without readiness logic.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use reqwest::Method;

use crate::config::ConnectionConfig;
use crate::error::{Error, Result};
use crate::http::{decode_json, Http, Req, Target};
use crate::models::{
    CreateSandboxRequest, DiagnosticContent, Endpoint, MetricsEvent, NetworkPolicy, NetworkRule,
    PagedSandboxInfos, PagedSnapshotInfos, PolicyStatus, RenewResponse, SandboxFilter, SandboxInfo,
    SnapshotFilter, SnapshotInfo,
};

/// (1.1) Endpoint lookup response header naming what backs the sandbox.
pub const ORIGIN_HEADER: &str = "OPEN-SANDBOX-ORIGIN";

/// Client of the lifecycle API. Cheap to clone; clones share the connection pool.
#[derive(Clone, Debug)]
pub struct SandboxManager {
    http: Http,
    base: String,
}

/// Percent-encodes one path segment (ids come from users and servers alike).
pub(crate) fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) fn require_id(op: &'static str, what: &str, id: &str) -> Result<()> {
    if id.trim().is_empty() {
        return Err(Error::invalid_argument(
            op,
            format!("{what} must not be empty"),
        ));
    }
    Ok(())
}

impl SandboxManager {
    /// A manager for the server in `config`.
    pub fn new(config: ConnectionConfig) -> Result<Self> {
        let base = config.base_url();
        Ok(SandboxManager {
            http: Http::new(config)?,
            base,
        })
    }

    pub(crate) fn http(&self) -> &Http {
        &self.http
    }

    /// The connection config.
    pub fn config(&self) -> &ConnectionConfig {
        self.http.config()
    }

    pub(crate) fn req(&self, op: &'static str, method: Method, path: &str) -> Req {
        Req::new(
            op,
            method,
            format!("{}{}", self.base, path),
            Target::Lifecycle,
        )
    }

    fn sandbox_req(&self, op: &'static str, method: Method, id: &str, rest: &str) -> Result<Req> {
        require_id(op, "sandbox id", id)?;
        Ok(self.req(op, method, &format!("/sandboxes/{}{}", seg(id), rest)))
    }

    /// `POST /sandboxes`. Validates that exactly one of image and snapshot is given.
    pub async fn create_sandbox(&self, request: &CreateSandboxRequest) -> Result<SandboxInfo> {
        const OP: &str = "create_sandbox";
        let sources = [
            request.image.is_some(),
            request.snapshot_id.is_some(),
            request.template_id.is_some(),
        ];
        match sources.iter().filter(|s| **s).count() {
            0 if !request.extensions.contains_key("poolRef") => {
                return Err(Error::invalid_argument(
                    OP,
                    "an image, a snapshot id or a template id is required",
                ))
            }
            0 | 1 => {}
            _ => {
                return Err(Error::invalid_argument(
                    OP,
                    "give one of an image, a snapshot id and a template id",
                ))
            }
        }
        let req = self.req(OP, Method::POST, "/sandboxes");
        let req = if request.template_id.is_some() {
            // Template mode sends only what may accompany the template (the official
            // SDK's body): no empty `resourceLimits` or `entrypoint`.
            let mut body = serde_json::to_value(request)
                .map_err(|e| Error::invalid_argument(OP, format!("encoding the request: {e}")))?;
            if let Some(obj) = body.as_object_mut() {
                for key in ["resourceLimits", "entrypoint"] {
                    let empty = obj.get(key).is_some_and(|v| {
                        v.as_object().is_some_and(|o| o.is_empty())
                            || v.as_array().is_some_and(|a| a.is_empty())
                    });
                    if empty {
                        obj.remove(key);
                    }
                }
            }
            req.json(&body)?
        } else {
            req.json(request)?
        };
        self.http.json(req).await
    }

    /// `GET /sandboxes` with filters.
    pub async fn list_sandbox_infos(&self, filter: &SandboxFilter) -> Result<PagedSandboxInfos> {
        let mut req = self.req("list_sandboxes", Method::GET, "/sandboxes");
        for s in &filter.states {
            req = req.query("state", s);
        }
        if !filter.metadata.is_empty() {
            // One parameter whose value is itself a query string (protocol §2.4); keys
            // and values are escaped inside it so `&` or `=` in them survive.
            let inner = filter
                .metadata
                .iter()
                .map(|(k, v)| format!("{}={}", seg(k), seg(v)))
                .collect::<Vec<_>>()
                .join("&");
            req = req.query("metadata", inner);
        }
        if let Some(p) = filter.page {
            req = req.query("page", p);
        }
        if let Some(p) = filter.page_size {
            req = req.query("pageSize", p);
        }
        self.http.json(req).await
    }

    /// `GET /sandboxes/{id}`.
    pub async fn get_sandbox_info(&self, id: &str) -> Result<SandboxInfo> {
        self.http
            .json(self.sandbox_req("get_sandbox", Method::GET, id, "")?)
            .await
    }

    /// `DELETE /sandboxes/{id}`.
    pub async fn kill_sandbox(&self, id: &str) -> Result<()> {
        self.config().endpoint_cache().invalidate(id);
        self.http
            .empty(self.sandbox_req("kill_sandbox", Method::DELETE, id, "")?)
            .await
    }

    /// `PATCH /sandboxes/{id}/metadata` (JSON merge patch: `None` deletes a key).
    pub async fn patch_sandbox_metadata(
        &self,
        id: &str,
        patch: &BTreeMap<String, Option<String>>,
    ) -> Result<SandboxInfo> {
        let req = self
            .sandbox_req("patch_metadata", Method::PATCH, id, "/metadata")?
            .json(patch)?;
        self.http.json(req).await
    }

    /// `POST /sandboxes/{id}/pause`.
    pub async fn pause_sandbox(&self, id: &str) -> Result<()> {
        self.config().endpoint_cache().invalidate(id);
        self.http
            .empty(self.sandbox_req("pause_sandbox", Method::POST, id, "/pause")?)
            .await
    }

    /// `POST /sandboxes/{id}/resume` (no readiness wait; see `Sandbox::resume`).
    pub async fn resume_sandbox(&self, id: &str) -> Result<()> {
        self.config().endpoint_cache().invalidate(id);
        self.http
            .empty(self.sandbox_req("resume_sandbox", Method::POST, id, "/resume")?)
            .await
    }

    /// Renews the expiry to now + `duration` (computed on the client, like the
    /// official SDKs).
    pub async fn renew_sandbox(&self, id: &str, duration: Duration) -> Result<RenewResponse> {
        let delta = chrono::Duration::from_std(duration)
            .map_err(|_| Error::invalid_argument("renew_sandbox", "duration too large"))?;
        self.renew_sandbox_until(id, Utc::now() + delta).await
    }

    /// `POST /sandboxes/{id}/renew-expiration` with an absolute expiry.
    pub async fn renew_sandbox_until(
        &self,
        id: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<RenewResponse> {
        let body = serde_json::json!({
            "expiresAt": expires_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        });
        let req = self
            .sandbox_req("renew_sandbox", Method::POST, id, "/renew-expiration")?
            .json(&body)?;
        self.http.json(req).await
    }

    /// `GET /sandboxes/{id}/endpoints/{port}`; `use_server_proxy` defaults to the
    /// config's setting and is always sent explicitly. Answers come from the config's
    /// endpoint cache when it is on ([`ConnectionConfig::with_endpoint_cache`]).
    pub async fn get_endpoint(
        &self,
        id: &str,
        port: u16,
        use_server_proxy: Option<bool>,
    ) -> Result<Endpoint> {
        let proxy = use_server_proxy.unwrap_or(self.config().use_server_proxy());
        let cache = self.config().endpoint_cache();
        let (hit, generation) = cache.get(id, port, proxy);
        if let Some(endpoint) = hit {
            return Ok(endpoint);
        }
        let endpoint = self.endpoint_inner(id, port, Some(proxy), None).await?;
        cache.put(id, port, proxy, &endpoint, generation);
        Ok(endpoint)
    }

    /// A signed endpoint valid until `expires` (Unix seconds).
    pub async fn get_signed_endpoint(&self, id: &str, port: u16, expires: i64) -> Result<Endpoint> {
        self.endpoint_inner(id, port, None, Some(expires)).await
    }

    async fn endpoint_inner(
        &self,
        id: &str,
        port: u16,
        use_server_proxy: Option<bool>,
        expires: Option<i64>,
    ) -> Result<Endpoint> {
        const OP: &str = "get_endpoint";
        if port == 0 {
            return Err(Error::invalid_argument(OP, "port must be 1-65535"));
        }
        let proxy = use_server_proxy.unwrap_or(self.config().use_server_proxy());
        let mut req = self
            .sandbox_req(OP, Method::GET, id, &format!("/endpoints/{port}"))?
            .query("use_server_proxy", proxy);
        if let Some(e) = expires {
            req = req.query("expires", e);
        }
        let (headers, body) = self.http.bytes(req).await?;
        let mut endpoint: Endpoint = decode_json(OP, &headers, &body)?;
        endpoint.origin = headers
            .get(ORIGIN_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase())
            .filter(|v| !v.is_empty());
        Ok(endpoint)
    }

    /// `POST /sandboxes/{id}/snapshots`.
    pub async fn create_snapshot(&self, id: &str, name: Option<&str>) -> Result<SnapshotInfo> {
        let body = match name {
            Some(n) => serde_json::json!({ "name": n }),
            None => serde_json::json!({}),
        };
        let req = self
            .sandbox_req("create_snapshot", Method::POST, id, "/snapshots")?
            .json(&body)?;
        self.http.json(req).await
    }

    /// `GET /snapshots/{id}`.
    pub async fn get_snapshot(&self, snapshot_id: &str) -> Result<SnapshotInfo> {
        const OP: &str = "get_snapshot";
        require_id(OP, "snapshot id", snapshot_id)?;
        let req = self.req(OP, Method::GET, &format!("/snapshots/{}", seg(snapshot_id)));
        self.http.json(req).await
    }

    /// `GET /snapshots` with filters.
    pub async fn list_snapshots(&self, filter: &SnapshotFilter) -> Result<PagedSnapshotInfos> {
        let mut req = self.req("list_snapshots", Method::GET, "/snapshots");
        if let Some(s) = &filter.sandbox_id {
            req = req.query("sandboxId", s);
        }
        if let Some(n) = &filter.name {
            req = req.query("name", n);
        }
        for s in &filter.states {
            req = req.query("state", s);
        }
        if let Some(p) = filter.page {
            req = req.query("page", p);
        }
        if let Some(p) = filter.page_size {
            req = req.query("pageSize", p);
        }
        self.http.json(req).await
    }

    /// `DELETE /snapshots/{id}`.
    pub async fn delete_snapshot(&self, snapshot_id: &str) -> Result<()> {
        const OP: &str = "delete_snapshot";
        require_id(OP, "snapshot id", snapshot_id)?;
        let req = self.req(
            OP,
            Method::DELETE,
            &format!("/snapshots/{}", seg(snapshot_id)),
        );
        self.http.empty(req).await
    }

    /// `GET /sandboxes/{id}/diagnostics/logs?scope=`.
    pub async fn get_diagnostic_logs(&self, id: &str, scope: &str) -> Result<DiagnosticContent> {
        self.diagnostics("get_diagnostic_logs", id, "logs", scope)
            .await
    }

    /// `GET /sandboxes/{id}/diagnostics/events?scope=`.
    pub async fn get_diagnostic_events(&self, id: &str, scope: &str) -> Result<DiagnosticContent> {
        self.diagnostics("get_diagnostic_events", id, "events", scope)
            .await
    }

    /// (1.1) `GET /sandboxes/{id}/networkpolicy`: the policy through the lifecycle
    /// server (for sandboxes without an egress sidecar endpoint).
    pub async fn get_network_policy(&self, id: &str) -> Result<PolicyStatus> {
        let req = self.sandbox_req("get_network_policy", Method::GET, id, "/networkpolicy")?;
        self.http.json(req).await
    }

    /// (1.1) `PUT /sandboxes/{id}/networkpolicy`: replaces `defaultAction` and every rule.
    pub async fn replace_network_policy(
        &self,
        id: &str,
        policy: &NetworkPolicy,
    ) -> Result<PolicyStatus> {
        let req = self
            .sandbox_req("replace_network_policy", Method::PUT, id, "/networkpolicy")?
            .json(policy)?;
        self.http.json(req).await
    }

    /// (1.1) `PATCH /sandboxes/{id}/networkpolicy`: merges rules (same target → replaced).
    pub async fn patch_network_policy(
        &self,
        id: &str,
        rules: &[NetworkRule],
    ) -> Result<PolicyStatus> {
        const OP: &str = "patch_network_policy";
        if rules.is_empty() {
            return Err(Error::invalid_argument(OP, "at least one rule is required"));
        }
        let req = self
            .sandbox_req(OP, Method::PATCH, id, "/networkpolicy")?
            .json(rules)?;
        self.http.json(req).await
    }

    /// (1.1) `DELETE /sandboxes/{id}/networkpolicy` with the targets as the JSON body.
    pub async fn delete_network_policy_rules(
        &self,
        id: &str,
        targets: &[String],
    ) -> Result<PolicyStatus> {
        const OP: &str = "delete_network_policy_rules";
        if targets.is_empty() {
            return Err(Error::invalid_argument(
                OP,
                "at least one target is required",
            ));
        }
        let req = self
            .sandbox_req(OP, Method::DELETE, id, "/networkpolicy")?
            .json(targets)?;
        self.http.json(req).await
    }

    /// (1.1) `POST /metrics/events`. Telemetry is best effort: callers that fire and
    /// forget should ignore the error (a server without the route answers 404).
    pub async fn send_metrics_event(&self, event: &MetricsEvent) -> Result<()> {
        let req = self
            .req("send_metrics_event", Method::POST, "/metrics/events")
            .json(event)?;
        self.http.empty(req).await
    }

    async fn diagnostics(
        &self,
        op: &'static str,
        id: &str,
        kind: &str,
        scope: &str,
    ) -> Result<DiagnosticContent> {
        require_id(op, "scope", scope)?;
        let req = self
            .sandbox_req(op, Method::GET, id, &format!("/diagnostics/{kind}"))?
            .query("scope", scope);
        self.http.json(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::seg;

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(seg("abc-123_x.y~"), "abc-123_x.y~");
        assert_eq!(seg("a/b?c d"), "a%2Fb%3Fc%20d");
    }
}
