//! `POST /metrics/events` (protocol.md §2.10): SDK telemetry, best effort. The
//! server validates each event, logs it and counts it; there is no exporter, so the
//! counters are all that is kept (SDKs send these fire-and-forget and ignore errors).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use serde::Deserialize;

use super::error::{ApiError, ApiJson, ApiResult};
use super::Control;

/// The only event type of protocol 1.1.
pub const SANDBOX_CREATE: &str = "sandbox.create";

/// One SDK event. Unknown fields are tolerated: SDKs may add some before servers.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsEvent {
    pub event_type: String,
    pub create_duration_ms: i64,
    pub success: bool,
    #[serde(default)]
    pub sandbox_id: Option<String>,
    #[serde(default)]
    pub image: Option<String>,
}

impl MetricsEvent {
    pub fn validate(&self) -> ApiResult<()> {
        if self.event_type != SANDBOX_CREATE {
            return Err(ApiError::invalid(format!(
                "`eventType` {:?} is not supported (only {SANDBOX_CREATE:?})",
                self.event_type
            )));
        }
        if self.create_duration_ms < 0 {
            return Err(ApiError::invalid("`createDurationMs` must not be negative"));
        }
        Ok(())
    }
}

/// Counts of accepted `sandbox.create` events, by outcome.
#[derive(Debug, Default)]
pub struct MetricsCounters {
    pub create_ok: AtomicU64,
    pub create_failed: AtomicU64,
}

impl MetricsCounters {
    fn record(&self, event: &MetricsEvent) {
        let counter = if event.success {
            &self.create_ok
        } else {
            &self.create_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Process-wide counters: telemetry must not need a field in [`Control`].
pub fn counters() -> &'static MetricsCounters {
    static COUNTERS: std::sync::OnceLock<MetricsCounters> = std::sync::OnceLock::new();
    COUNTERS.get_or_init(MetricsCounters::default)
}

pub async fn post_event(
    State(_control): State<Arc<Control>>,
    headers: HeaderMap,
    ApiJson(event): ApiJson<MetricsEvent>,
) -> ApiResult<StatusCode> {
    event.validate()?;
    counters().record(&event);
    // The SDK names itself in User-Agent, not in the body.
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    tracing::info!(
        event_type = %event.event_type,
        duration_ms = event.create_duration_ms,
        success = event.success,
        sandbox_id = event.sandbox_id.as_deref().unwrap_or("-"),
        image = event.image.as_deref().unwrap_or("-"),
        user_agent = agent,
        "sdk metrics event"
    );
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, ms: i64) -> MetricsEvent {
        MetricsEvent {
            event_type: kind.into(),
            create_duration_ms: ms,
            success: true,
            sandbox_id: None,
            image: None,
        }
    }

    #[test]
    fn only_sandbox_create_with_a_duration_is_valid() {
        assert!(event(SANDBOX_CREATE, 0).validate().is_ok());
        assert!(event("sandbox.delete", 5).validate().is_err());
        assert!(event(SANDBOX_CREATE, -1).validate().is_err());
    }

    #[test]
    fn counters_count_by_outcome() {
        let c = MetricsCounters::default();
        let mut e = event(SANDBOX_CREATE, 3);
        c.record(&e);
        e.success = false;
        c.record(&e);
        c.record(&e);
        assert_eq!(c.create_ok.load(Ordering::Relaxed), 1);
        assert_eq!(c.create_failed.load(Ordering::Relaxed), 2);
    }
}
