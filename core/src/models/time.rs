//! Lenient timestamp decoding: servers send RFC 3339, sometimes without an offset
//! (meaning UTC) or with a space instead of `T`.

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::{Deserialize, Deserializer};

pub(crate) fn parse(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    let t = s.replace(' ', "T");
    if let Ok(t) = DateTime::parse_from_rfc3339(&t) {
        return Some(t.with_timezone(&Utc));
    }
    let naive = t.trim_end_matches('Z');
    NaiveDateTime::parse_from_str(naive, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|n| n.and_utc())
}

/// `Option<DateTime<Utc>>` that tolerates absent, null and offset-less values; an
/// unparseable string is an error (better than silently losing the field).
pub(crate) fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    let v: Option<String> = Option::deserialize(d)?;
    match v {
        None => Ok(None),
        Some(s) if s.trim().is_empty() => Ok(None),
        Some(s) => parse(&s)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("invalid timestamp {s:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_common_forms() {
        for s in [
            "2025-11-16T14:30:45Z",
            "2025-11-16T14:30:45.123+00:00",
            "2025-11-16 14:30:45",
            "2025-11-16T14:30:45.5",
        ] {
            assert!(parse(s).is_some(), "{s}");
        }
        assert!(parse("yesterday").is_none());
    }
}
