//! The egress sidecar client (`/policy`; the credential vault in `vault`), reached
//! through the endpoint of port 18080.

use std::collections::BTreeMap;
use std::sync::Arc;

use reqwest::Method;

use crate::error::{Error, Result};
use crate::execd::endpoint_url;
use crate::http::{Http, Req, Target};
use crate::models::{Endpoint, NetworkPolicy, NetworkRule, PolicyStatus};

/// The port the egress sidecar listens on inside a sandbox.
pub const DEFAULT_EGRESS_PORT: u16 = 18080;

/// Client of one sandbox's egress sidecar. Cheap to clone.
#[derive(Clone, Debug)]
pub struct EgressClient {
    http: Http,
    base: Arc<str>,
    headers: Arc<BTreeMap<String, String>>,
}

impl EgressClient {
    pub(crate) fn from_http(http: Http, endpoint: &Endpoint) -> Self {
        let base = endpoint_url(http.config().protocol(), &endpoint.endpoint);
        EgressClient {
            http,
            base: base.into(),
            headers: Arc::new(endpoint.headers.clone()),
        }
    }

    fn req(&self, op: &'static str, method: Method) -> Req {
        self.path_req(op, method, "/policy")
    }

    /// A request to `path` of the egress API, with the endpoint's headers.
    pub(crate) fn path_req(&self, op: &'static str, method: Method, path: &str) -> Req {
        Req::new(
            op,
            method,
            format!("{}{path}", self.base),
            Target::Endpoint(self.headers.clone()),
        )
    }

    pub(crate) fn http(&self) -> &Http {
        &self.http
    }

    /// `GET /policy`: the current policy and enforcement mode.
    pub async fn get_policy(&self) -> Result<PolicyStatus> {
        self.http
            .json(self.req("egress.get_policy", Method::GET))
            .await
    }

    /// The current policy alone (the Python SDK's `get_egress_policy`).
    pub async fn get_network_policy(&self) -> Result<NetworkPolicy> {
        Ok(self.get_policy().await?.policy.unwrap_or_default())
    }

    /// `PATCH /policy`: merges rules (incoming rules win; within one call the first rule
    /// per target wins).
    pub async fn patch_rules(&self, rules: &[NetworkRule]) -> Result<PolicyStatus> {
        const OP: &str = "egress.patch_rules";
        if rules.is_empty() {
            return Err(Error::invalid_argument(OP, "at least one rule is required"));
        }
        let req = self.req(OP, Method::PATCH).json(rules)?;
        self.http.json(req).await
    }

    /// `DELETE /policy` with the targets in the body (idempotent).
    pub async fn delete_rules(&self, targets: &[&str]) -> Result<PolicyStatus> {
        const OP: &str = "egress.delete_rules";
        if targets.is_empty() {
            return Err(Error::invalid_argument(
                OP,
                "at least one target is required",
            ));
        }
        let req = self.req(OP, Method::DELETE).json(targets)?;
        self.http.json(req).await
    }
}
