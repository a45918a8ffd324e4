//! The egress policy API (protocol.md §5.2), served by the control plane itself for
//! `/sandboxes/{id}/proxy/18080/...` from the sandbox's stored network policy.
//!
//! The policy is stored and served faithfully, but this reference server enforces
//! none of it: a sandbox's network namespace holds only `lo`, so all egress is denied
//! whatever the policy says.

use axum::body::Body;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::error::{ApiError, ApiResult};
use super::models::{NetworkPolicy, NetworkRule, RuleAction};
use super::Control;

const MAX_BODY: usize = 1024 * 1024;

/// Upstream's mode names: no rules and default allow/deny, or rules being enforced.
pub fn mode(policy: &NetworkPolicy) -> &'static str {
    let has_rules = policy.egress.as_ref().is_some_and(|r| !r.is_empty());
    match (has_rules, policy.default_action) {
        (true, _) => "enforcing",
        (false, Some(RuleAction::Allow)) => "allow_all",
        (false, _) => "deny_all",
    }
}

/// A sandbox created without a policy gets upstream's allow-all sidecar default.
pub fn effective(policy: Option<&NetworkPolicy>) -> NetworkPolicy {
    match policy {
        Some(p)
            if p.default_action.is_some() || p.egress.as_ref().is_some_and(|e| !e.is_empty()) =>
        {
            p.clone()
        }
        _ => NetworkPolicy {
            default_action: Some(RuleAction::Allow),
            egress: None,
        },
    }
}

/// Incoming rules win over stored ones with the same target; within the incoming
/// list the first rule for a target wins.
pub fn merge(policy: &NetworkPolicy, incoming: &[NetworkRule]) -> NetworkPolicy {
    let mut rules: Vec<NetworkRule> = Vec::new();
    for rule in incoming {
        if !rules.iter().any(|r| r.target == rule.target) {
            rules.push(rule.clone());
        }
    }
    for rule in policy.egress.iter().flatten() {
        if !rules.iter().any(|r| r.target == rule.target) {
            rules.push(rule.clone());
        }
    }
    NetworkPolicy {
        default_action: policy.default_action,
        egress: Some(rules),
    }
}

/// Removes the rules for `targets`; tells whether any was there.
pub fn remove(policy: &NetworkPolicy, targets: &[String]) -> (NetworkPolicy, bool) {
    let before = policy.egress.clone().unwrap_or_default();
    let after: Vec<NetworkRule> = before
        .iter()
        .filter(|r| !targets.contains(&r.target))
        .cloned()
        .collect();
    let removed = after.len() != before.len();
    (
        NetworkPolicy {
            default_action: policy.default_action,
            egress: Some(after),
        },
        removed,
    )
}

fn status_body(policy: &NetworkPolicy) -> serde_json::Value {
    json!({"status": "ok", "mode": mode(policy), "enforcementMode": "dns"})
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> ApiResult<T> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("EGRESS::INVALID_REQUEST_BODY", format!("{what}: {e}")))
}

impl Control {
    pub async fn egress(
        &self,
        id: &str,
        method: Method,
        path: &str,
        body: Body,
    ) -> ApiResult<Response> {
        let path = path.trim_end_matches('/');
        match (method.as_str(), path) {
            ("GET", "/healthz") => return Ok((StatusCode::OK, "ok").into_response()),
            (_, "/policy") => {}
            (_, p) if p == "/credential-vault" || p.starts_with("/credential-vault/") => {
                return self.credential_vault(id, method, p, body).await
            }
            _ => {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "ROUTE_NOT_FOUND",
                    format!("no egress route {method} {path}"),
                ))
            }
        }
        let body = axum::body::to_bytes(body, MAX_BODY)
            .await
            .map_err(|e| ApiError::bad_request("EGRESS::INVALID_REQUEST_BODY", e.to_string()))?;
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let mut record = self.sandbox(id)?;
        let current = effective(record.network_policy.as_ref());
        let (updated, reply) = match method {
            Method::GET => {
                let mut reply = status_body(&current);
                reply["policy"] = serde_json::to_value(&current)
                    .map_err(|e| ApiError::internal(e.to_string()))?;
                return Ok(Json(reply).into_response());
            }
            Method::PATCH => {
                let rules: Vec<NetworkRule> = parse(&body, "expected an array of network rules")?;
                if rules.is_empty() {
                    return Err(ApiError::bad_request(
                        "EGRESS::INVALID_REQUEST_BODY",
                        "at least one rule is required",
                    ));
                }
                let merged = merge(&current, &rules);
                let reply = status_body(&merged);
                (merged, reply)
            }
            Method::DELETE => {
                let targets: Vec<String> = parse(&body, "expected an array of targets")?;
                if targets.is_empty() {
                    return Err(ApiError::bad_request(
                        "EGRESS::INVALID_REQUEST_BODY",
                        "at least one target is required",
                    ));
                }
                let (after, removed) = remove(&current, &targets);
                let mut reply = status_body(&after);
                if !removed {
                    reply["reason"] = json!("no matching targets found");
                }
                (after, reply)
            }
            Method::POST | Method::PUT => {
                let policy: NetworkPolicy = parse(&body, "expected a network policy")?;
                let reply = status_body(&effective(Some(&policy)));
                (policy, reply)
            }
            _ => {
                return Err(ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "METHOD_NOT_ALLOWED",
                    format!("{method} is not allowed on /policy"),
                ))
            }
        };
        record.network_policy = Some(updated);
        self.store.put_sandbox(&record)?;
        Ok(Json(reply).into_response())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(action: RuleAction, target: &str) -> NetworkRule {
        NetworkRule {
            action,
            target: target.into(),
        }
    }

    #[test]
    fn merge_lets_incoming_win_and_first_duplicate_win() {
        let stored = NetworkPolicy {
            default_action: Some(RuleAction::Deny),
            egress: Some(vec![
                rule(RuleAction::Allow, "a.com"),
                rule(RuleAction::Allow, "b.com"),
            ]),
        };
        let merged = merge(
            &stored,
            &[
                rule(RuleAction::Deny, "a.com"),
                rule(RuleAction::Allow, "a.com"),
                rule(RuleAction::Allow, "c.com"),
            ],
        );
        let rules = merged.egress.clone().unwrap_or_default();
        assert_eq!(rules.len(), 3);
        let a = rules.iter().find(|r| r.target == "a.com").map(|r| r.action);
        assert_eq!(a, Some(RuleAction::Deny));
        assert_eq!(mode(&merged), "enforcing");
    }

    #[test]
    fn modes_and_removal() {
        let open = effective(None);
        assert_eq!(mode(&open), "allow_all");
        let closed = NetworkPolicy {
            default_action: None,
            egress: Some(vec![]),
        };
        assert_eq!(mode(&closed), "deny_all");
        let p = NetworkPolicy {
            default_action: Some(RuleAction::Deny),
            egress: Some(vec![rule(RuleAction::Allow, "a.com")]),
        };
        let (after, removed) = remove(&p, &["a.com".to_string()]);
        assert!(removed);
        assert_eq!(mode(&after), "deny_all");
        let (_, removed) = remove(&after, &["zzz".to_string()]);
        assert!(!removed);
    }
}
