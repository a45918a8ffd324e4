//! (1.1) `sandbox.open_endpoints`: a sandbox handle over endpoints the caller already
//! knows, for the official SDKs' low-level clients (`ExecdClient(baseURL, token)`,
//! `EgressClient(baseURL, token)`), which talk to one execd or egress sidecar without
//! the lifecycle API. Every sandbox-bound op then works on the handle.

use std::collections::BTreeMap;

use opensandbox_core::models::Endpoint;
use opensandbox_core::Sandbox;
use serde::Deserialize;
use serde_json::json;

use crate::args::{null_default, ConnectionRef};
use crate::error::{OpError, OpResult};
use crate::session::Session;

/// One endpoint: `{endpoint, headers}` (`endpoint` may carry a scheme; without one
/// the connection's protocol is used).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointArgs {
    pub endpoint: String,
    #[serde(default, deserialize_with = "null_default")]
    pub headers: BTreeMap<String, String>,
}

/// `sandbox.open_endpoints`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenEndpointsArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// A label for the handle (`sandbox.info`); default: the execd endpoint.
    #[serde(default)]
    pub id: Option<String>,
    /// The execd endpoint (commands, code, files, metrics, PTY, isolation).
    pub execd: EndpointArgs,
    /// The egress sidecar endpoint (policy, credential vault); absent = resolved
    /// through the lifecycle API on first use, like any sandbox.
    #[serde(default)]
    pub egress: Option<EndpointArgs>,
}

fn endpoint(op: &str, key: &str, e: EndpointArgs) -> Result<Endpoint, OpError> {
    if e.endpoint.trim().is_empty() {
        return Err(OpError::invalid(
            op,
            format!("{key}.endpoint must not be empty"),
        ));
    }
    Ok(Endpoint {
        endpoint: e.endpoint,
        headers: e.headers,
        origin: None,
    })
}

/// `sandbox.open_endpoints` → `{id, handle}` (no request is made).
pub async fn open_endpoints(s: &Session, a: OpenEndpointsArgs) -> OpResult {
    const OP: &str = "sandbox.open_endpoints";
    let (cfg, _) = s.config(OP, a.connection.as_ref())?;
    let execd = endpoint(OP, "execd", a.execd)?;
    let egress = a.egress.map(|e| endpoint(OP, "egress", e)).transpose()?;
    let id = a.id.unwrap_or_else(|| execd.endpoint.clone());
    let sandbox = Sandbox::from_endpoints(cfg, &id, execd, egress)?;
    // Not kept by id: the label is not a lifecycle id.
    let handle = s.keep(&sandbox, false);
    Ok(json!({"id": sandbox.id(), "handle": handle}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn call(s: &Session, op: &str, args: Value) -> Result<Value, OpError> {
        opensandbox_core::runtime::runtime().block_on(s.call(op, args))
    }

    #[test]
    fn a_handle_over_known_endpoints_needs_no_request() {
        let s = Session::new();
        // Nothing listens there: opening makes no request, and the handle works as
        // any sandbox handle (sandbox.info answers without one either).
        let opened = call(
            &s,
            "sandbox.open_endpoints",
            json!({"execd": {"endpoint": "http://127.0.0.1:9", "headers": {"X-EXECD-ACCESS-TOKEN": "t"}},
                   "egress": {"endpoint": "127.0.0.1:9"}}),
        )
        .unwrap();
        assert_eq!(opened["id"], "http://127.0.0.1:9");
        let info = call(&s, "sandbox.info", json!({"sandbox": opened["handle"]})).unwrap();
        assert_eq!(info["id"], "http://127.0.0.1:9");
        let labelled = call(
            &s,
            "sandbox.open_endpoints",
            json!({"id": "sb-1", "execd": {"endpoint": "h:1"}}),
        )
        .unwrap();
        assert_eq!(labelled["id"], "sb-1");
        // The label is not a lifecycle id: it is not kept by id.
        assert!(s.release(labelled["handle"].as_u64().unwrap()));
    }

    #[test]
    fn bad_endpoints_are_invalid_arguments() {
        let s = Session::new();
        for bad in [
            json!({}),
            json!({"execd": {"endpoint": " "}}),
            json!({"execd": {"endpoint": "h:1"}, "egress": {"endpoint": ""}}),
            json!({"execd": {"endpoint": "h:1", "token": "x"}}),
        ] {
            let e = call(&s, "sandbox.open_endpoints", bad.clone())
                .err()
                .unwrap_or_else(|| panic!("accepted {bad}"));
            assert_eq!(e.kind, "invalid_argument", "{bad}: {}", e.message);
        }
    }
}
