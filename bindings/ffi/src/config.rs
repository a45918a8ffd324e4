//! `OsbConfig`: a `ConnectionConfig` built from JSON options.

use std::collections::BTreeMap;
use std::ffi::c_char;
use std::time::Duration;

use opensandbox_core::{ConnectionConfig, Protocol, Result, RetryPolicy};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::OsbError;
use crate::util::{guard, guard_result, into_c_string, invalid, opt_str, parse_args};

/// Connection settings (opaque). Freed with `osb_config_free`.
pub struct OsbConfig {
    pub(crate) config: ConnectionConfig,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RetryArgs {
    max_retries: Option<u32>,
    initial_backoff_ms: Option<u64>,
    max_backoff_ms: Option<u64>,
    multiplier: Option<f64>,
    jitter: Option<bool>,
    retryable_status_codes: Option<Vec<u16>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ConfigArgs {
    domain: Option<String>,
    /// Absent = environment; present and null = no key at all.
    #[serde(deserialize_with = "present")]
    api_key: Option<Option<String>>,
    protocol: Option<String>,
    request_timeout_ms: Option<u64>,
    connect_timeout_ms: Option<u64>,
    headers: BTreeMap<String, String>,
    user_agent: Option<String>,
    use_server_proxy: Option<bool>,
    /// Absent = default policy; null = no retries.
    #[serde(deserialize_with = "present")]
    retry: Option<Option<RetryArgs>>,
}

/// Tells "present and null" (`Some(None)`) from "absent" (`None`, via `default`).
fn present<'de, D, T>(d: D) -> std::result::Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

pub(crate) fn build_config(json: Option<&str>) -> Result<ConnectionConfig> {
    const OP: &str = "config.new";
    let a: ConfigArgs = parse_args(OP, json)?;
    let mut cfg = ConnectionConfig::new();
    if let Some(d) = a.domain {
        cfg = cfg.with_domain(d);
    }
    match a.api_key {
        None => {}
        Some(key) => cfg = cfg.with_api_key(key.unwrap_or_default()),
    }
    if let Some(p) = a.protocol {
        cfg = cfg.with_protocol(Protocol::parse(&p)?);
    }
    if let Some(ms) = a.request_timeout_ms {
        cfg = cfg.with_request_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = a.connect_timeout_ms {
        cfg = cfg.with_connect_timeout(Duration::from_millis(ms));
    }
    if !a.headers.is_empty() {
        cfg = cfg.with_headers(a.headers);
    }
    if let Some(ua) = a.user_agent {
        cfg = cfg.with_user_agent(ua);
    }
    if let Some(on) = a.use_server_proxy {
        cfg = cfg.with_use_server_proxy(on);
    }
    match a.retry {
        None => {}
        Some(None) => cfg = cfg.with_retry(RetryPolicy::none()),
        Some(Some(r)) => {
            let mut p = RetryPolicy::default();
            if let Some(v) = r.max_retries {
                p.max_retries = v;
            }
            if let Some(v) = r.initial_backoff_ms {
                p.initial_backoff = Duration::from_millis(v);
            }
            if let Some(v) = r.max_backoff_ms {
                p.max_backoff = Duration::from_millis(v);
            }
            if let Some(v) = r.multiplier {
                if !(v.is_finite() && v >= 1.0) {
                    return Err(invalid(OP, "retry.multiplier must be >= 1"));
                }
                p.multiplier = v;
            }
            if let Some(v) = r.jitter {
                p.jitter = v;
            }
            if let Some(v) = r.retryable_status_codes {
                p.retryable_statuses = v;
            }
            cfg = cfg.with_retry(p);
        }
    }
    Ok(cfg)
}

pub(crate) fn describe(cfg: &ConnectionConfig) -> Value {
    json!({
        "domain": cfg.domain(),
        "protocol": cfg.protocol().as_str(),
        "base_url": cfg.base_url(),
        "api_key_set": cfg.api_key().is_some(),
        "request_timeout_ms": u64::try_from(cfg.request_timeout().as_millis()).unwrap_or(u64::MAX),
        "connect_timeout_ms": u64::try_from(cfg.connect_timeout().as_millis()).unwrap_or(u64::MAX),
        "headers": cfg.headers(),
        "user_agent": cfg.user_agent(),
        "use_server_proxy": cfg.use_server_proxy(),
    })
}

/// Builds a connection configuration from `options_json` (NULL = `{}`; keys in
/// API.md §4: `domain`, `api_key`, `protocol`, `request_timeout_ms`,
/// `connect_timeout_ms`, `headers`, `user_agent`, `use_server_proxy`, `retry`).
/// Unset values fall back to `OPEN_SANDBOX_*` environment variables and defaults.
/// Returns an owned handle (free with `osb_config_free`), or NULL with `*error_out` set.
///
/// # Safety
/// `options_json` is NULL or a NUL-terminated string; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_config_new(
    options_json: *const c_char,
    error_out: *mut *mut OsbError,
) -> *mut OsbConfig {
    // SAFETY: caller contract.
    unsafe {
        guard_result("config.new", error_out, std::ptr::null_mut(), || {
            let json = opt_str("config.new", "options_json", options_json)?;
            let config = build_config(json)?;
            Ok(Box::into_raw(Box::new(OsbConfig { config })))
        })
    }
}

/// The resolved settings as JSON (`domain`, `protocol`, `base_url`, `api_key_set`,
/// `request_timeout_ms`, `connect_timeout_ms`, `headers`, `user_agent`,
/// `use_server_proxy`). Owned: free with `osb_string_free`. NULL when `c` is NULL.
///
/// # Safety
/// `c` is NULL or a live `OsbConfig`.
#[no_mangle]
pub unsafe extern "C" fn osb_config_describe(c: *const OsbConfig) -> *mut c_char {
    guard(std::ptr::null_mut(), || {
        // SAFETY: caller contract.
        match unsafe { c.as_ref() } {
            Some(c) => into_c_string(describe(&c.config).to_string()),
            None => std::ptr::null_mut(),
        }
    })
}

/// Frees a configuration. Handles created from it stay valid. NULL is a no-op.
///
/// # Safety
/// `c` is NULL or an `OsbConfig` from `osb_config_new`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_config_free(c: *mut OsbConfig) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(c) }
}
