//! `/sandboxes/{id}/networkpolicy` (protocol.md §2.9): the sidecar `/policy` API on
//! the lifecycle plane, behind the API key, over the same stored policy that
//! [`super::egress`] serves on port 18080.
//!
//! This server has no sidecar to proxy to, and it enforces no policy (a sandbox's
//! network namespace holds only `lo`, so every egress is denied whatever is stored).
//! Like upstream's template-backed sandboxes, the answer is therefore the stored
//! *intent*: `enforcementMode` is omitted and `reason` says that nothing is enforced.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::egress::{effective, merge, mode, remove};
use super::error::{ApiError, ApiJson, ApiPath, ApiResult};
use super::models::{NetworkPolicy, NetworkRule};
use super::Control;

/// Why the answer carries no `enforcementMode`.
pub const NOT_ENFORCED: &str =
    "policy stored, not enforced: this server gives sandboxes no network (loopback only)";

fn status(policy: &NetworkPolicy, reason: String) -> Value {
    json!({"status": "ok", "mode": mode(policy), "reason": reason})
}

fn check_rules(rules: &[NetworkRule]) -> ApiResult<()> {
    if let Some(rule) = rules.iter().find(|r| r.target.trim().is_empty()) {
        return Err(ApiError::invalid(format!(
            "network rule targets must not be empty (got {:?})",
            rule.target
        )));
    }
    Ok(())
}

/// What a write does to the stored policy.
enum Write {
    Replace(NetworkPolicy),
    Merge(Vec<NetworkRule>),
    Remove(Vec<String>),
}

impl Control {
    /// Applies `write` to the sandbox's policy under its lock, stores it and answers.
    async fn write_policy(&self, id: &str, write: Write) -> ApiResult<Value> {
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let mut record = self.sandbox(id)?;
        let current = effective(record.network_policy.as_ref());
        let (updated, reason) = match write {
            Write::Replace(policy) => (policy, NOT_ENFORCED.to_string()),
            Write::Merge(rules) => (merge(&current, &rules), NOT_ENFORCED.to_string()),
            Write::Remove(targets) => {
                let (after, removed) = remove(&current, &targets);
                let reason = if removed {
                    NOT_ENFORCED.to_string()
                } else {
                    format!("no matching targets found; {NOT_ENFORCED}")
                };
                (after, reason)
            }
        };
        let reply = status(&effective(Some(&updated)), reason);
        record.network_policy = Some(updated);
        self.store.put_sandbox(&record)?;
        Ok(reply)
    }
}

type Shared = State<Arc<Control>>;

pub async fn get_policy(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let record = control.sandbox(&id)?;
    let current = effective(record.network_policy.as_ref());
    let mut reason = NOT_ENFORCED.to_string();
    if control.has_vault(&id) {
        reason.push_str(&format!(
            "; credential vault {}",
            super::vault::NOT_ENFORCED
        ));
    }
    let mut reply = status(&current, reason);
    reply["policy"] =
        serde_json::to_value(&current).map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Json(reply))
}

pub async fn put_policy(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    ApiJson(policy): ApiJson<NetworkPolicy>,
) -> ApiResult<Json<Value>> {
    check_rules(policy.egress.as_deref().unwrap_or_default())?;
    Ok(Json(
        control.write_policy(&id, Write::Replace(policy)).await?,
    ))
}

pub async fn patch_policy(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    ApiJson(rules): ApiJson<Vec<NetworkRule>>,
) -> ApiResult<Json<Value>> {
    if rules.is_empty() {
        return Err(ApiError::invalid("at least one network rule is required"));
    }
    check_rules(&rules)?;
    Ok(Json(control.write_policy(&id, Write::Merge(rules)).await?))
}

pub async fn delete_policy(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    ApiJson(targets): ApiJson<Vec<String>>,
) -> ApiResult<Json<Value>> {
    if targets.is_empty() {
        return Err(ApiError::invalid("at least one target is required"));
    }
    Ok(Json(
        control.write_policy(&id, Write::Remove(targets)).await?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::models::RuleAction;

    #[test]
    fn status_omits_enforcement_and_says_why() {
        let p = NetworkPolicy {
            default_action: Some(RuleAction::Deny),
            egress: Some(vec![NetworkRule {
                action: RuleAction::Allow,
                target: "a.com".into(),
            }]),
        };
        let v = status(&p, NOT_ENFORCED.to_string());
        assert_eq!(v["mode"], "enforcing");
        assert!(v.get("enforcementMode").is_none());
        assert!(v["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("not enforced"));
    }

    #[test]
    fn empty_targets_are_rejected() {
        let bad = [NetworkRule {
            action: RuleAction::Allow,
            target: " ".into(),
        }];
        assert!(check_rules(&bad).is_err());
        assert!(check_rules(&[]).is_ok());
    }
}
