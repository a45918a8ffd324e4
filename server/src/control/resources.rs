//! `resourceRequests` (protocol.md §2.1, 1.1): the same map shape as `resourceLimits`
//! and the same quantity grammar. This server reserves nothing (a request is a
//! Kubernetes scheduling hint), so requests are validated, stored and echoed only.

use std::collections::BTreeMap;

use super::error::{ApiError, ApiResult};
use super::oci::cgroups::{parse_cpu, parse_memory, KNOWN_KEYS};

/// One quantity in the unit its key compares in: millicores, bytes, or a count.
fn quantity(key: &str, raw: &str) -> ApiResult<u64> {
    let parsed = match key {
        "cpu" => parse_cpu(raw),
        "memory" | "disk" => parse_memory(raw),
        _ => raw
            .trim()
            .parse::<u64>()
            .map_err(|e| anyhow::anyhow!("not a whole number: {e}")),
    };
    parsed.map_err(|e| ApiError::invalid(format!("resourceRequests.{key} {raw:?}: {e:#}")))
}

/// Checks `requests` against the grammar of `resourceLimits` and, for the keys both
/// maps set, that no request exceeds its limit (Kubernetes rejects that too).
pub fn validate_requests(
    requests: &BTreeMap<String, String>,
    limits: &BTreeMap<String, String>,
) -> ApiResult<()> {
    for (key, raw) in requests {
        if !KNOWN_KEYS.contains(&key.as_str()) {
            return Err(ApiError::invalid(format!(
                "resourceRequests.{key} is not supported by this server (it knows {})",
                KNOWN_KEYS.join(", ")
            )));
        }
        let wanted = quantity(key, raw)?;
        let Some(limit_raw) = limits.get(key) else {
            continue;
        };
        // An unparsable limit is reported by the limits' own validation.
        let Ok(limit) = quantity(key, limit_raw) else {
            continue;
        };
        if wanted > limit {
            return Err(ApiError::invalid(format!(
                "resourceRequests.{key} {raw:?} is above resourceLimits.{key} {limit_raw:?}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn requests_follow_the_limits_grammar() {
        let limits = map(&[("cpu", "1"), ("memory", "512Mi")]);
        assert!(validate_requests(&map(&[("cpu", "500m"), ("memory", "256Mi")]), &limits).is_ok());
        assert!(validate_requests(&map(&[("pids", "64"), ("disk", "1Gi")]), &limits).is_ok());
        assert!(validate_requests(&map(&[("gpu", "1")]), &limits).is_err());
        assert!(validate_requests(&map(&[("cpu", "lots")]), &limits).is_err());
        assert!(validate_requests(&map(&[("pids", "-1")]), &limits).is_err());
    }

    #[test]
    fn a_request_may_not_exceed_its_limit() {
        let limits = map(&[("cpu", "500m")]);
        assert!(validate_requests(&map(&[("cpu", "1")]), &limits).is_err());
        assert!(validate_requests(&map(&[("cpu", "500m")]), &limits).is_ok());
    }
}
