//! Retry policy: which failures are retried and how long to wait between attempts.
//!
//! Only idempotent requests are retried on server answers; a non-idempotent request is
//! retried only when the failure proves it never left the client (a connect error).

use std::time::Duration;

use rand::Rng;

/// How transient failures are retried. `RetryPolicy::none()` turns retries off.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = no retries).
    pub max_retries: u32,
    /// Wait before the first retry.
    pub initial_backoff: Duration,
    /// Cap on any single wait, including a server's `Retry-After`.
    pub max_backoff: Duration,
    /// Growth factor of the wait per attempt.
    pub multiplier: f64,
    /// Randomise each wait in `[wait/2, wait]` so clients do not retry in lockstep.
    pub jitter: bool,
    /// HTTP statuses that count as transient for idempotent requests.
    pub retryable_statuses: Vec<u16>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            multiplier: 2.0,
            jitter: true,
            retryable_statuses: vec![429, 502, 503, 504],
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `attempt` (1-based), honouring a server-provided
    /// `Retry-After` when it is given, always capped by `max_backoff`.
    pub fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.max_backoff);
        }
        let exp = self
            .multiplier
            .max(1.0)
            .powi(attempt.saturating_sub(1) as i32);
        let base = self.initial_backoff.as_secs_f64() * exp;
        let capped = base.min(self.max_backoff.as_secs_f64()).max(0.0);
        let wait = if self.jitter && capped > 0.0 {
            rand::thread_rng().gen_range(capped / 2.0..=capped)
        } else {
            capped
        };
        Duration::from_secs_f64(wait)
    }

    /// Whether an HTTP status is worth retrying for an idempotent request.
    pub fn is_retryable_status(&self, status: u16) -> bool {
        self.retryable_statuses.contains(&status)
    }
}

/// Parses a `Retry-After` header: either delta-seconds or an HTTP date.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = v.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs));
        }
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p = RetryPolicy {
            jitter: false,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        assert_eq!(p.backoff(1, None), Duration::from_millis(100));
        assert_eq!(p.backoff(2, None), Duration::from_millis(200));
        assert_eq!(p.backoff(3, None), Duration::from_millis(350));
        assert_eq!(
            p.backoff(1, Some(Duration::from_secs(60))),
            Duration::from_millis(350)
        );
    }

    #[test]
    fn jitter_stays_within_half_to_full() {
        let p = RetryPolicy::default();
        for attempt in 1..5 {
            let full = RetryPolicy {
                jitter: false,
                ..p.clone()
            }
            .backoff(attempt, None);
            let w = p.backoff(attempt, None);
            assert!(w <= full && w >= full / 2, "{w:?} vs {full:?}");
        }
    }

    #[test]
    fn parses_retry_after_forms() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
