//! Schedules of periodic lifecycle hooks (protocol.md §2.1 `PeriodicLifecycleHook`):
//! five-field cron expressions and the descriptors upstream's execd accepts
//! (robfig/cron's standard parser): `@yearly`/`@annually`, `@monthly`, `@weekly`,
//! `@daily`/`@midnight`, `@hourly` and `@every DURATION` (whole seconds, at least 1).
//!
//! Times are UTC: a `TZ=`/`CRON_TZ=` prefix is accepted for `UTC` only and any other
//! zone is refused, never silently run in another zone.

use chrono::{DateTime, Datelike, Duration, DurationRound, Timelike, Utc};

/// A parsed schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Schedule {
    /// `@every`: a fixed period from the previous run.
    Every(std::time::Duration),
    Cron(Cron),
}

/// The five fields as bit sets of the allowed values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u64,
    days_of_month: u64,
    months: u64,
    days_of_week: u64,
    /// Whether day-of-month / day-of-week were `*` (or `?`): cron matches a day when
    /// both match if either is a star, and when either matches otherwise.
    dom_star: bool,
    dow_star: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// How far ahead the next run is searched (a valid expression like `0 0 30 2 *` never
/// fires; five years covers every leap-day schedule).
const SEARCH_DAYS: i64 = 5 * 366;

impl Schedule {
    /// Parses `spec`; the error says what is wrong, for a 400.
    pub fn parse(spec: &str) -> Result<Schedule, String> {
        let mut spec = spec.trim();
        for prefix in ["TZ=", "CRON_TZ="] {
            if let Some(rest) = spec.strip_prefix(prefix) {
                let (zone, rest) = rest
                    .split_once(' ')
                    .ok_or_else(|| format!("{prefix}ZONE must be followed by a schedule"))?;
                if !matches!(zone, "UTC" | "Etc/UTC") {
                    return Err(format!(
                        "time zone {zone:?} is not supported (schedules run in UTC)"
                    ));
                }
                spec = rest.trim();
            }
        }
        if let Some(period) = spec.strip_prefix("@every ") {
            let period = parse_go_duration(period.trim())?;
            if period < std::time::Duration::from_secs(1) || period.subsec_nanos() != 0 {
                return Err("@every needs a whole number of seconds, at least 1s".into());
            }
            return Ok(Schedule::Every(period));
        }
        let fields = match spec {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(format!("unknown schedule descriptor {other:?}"))
            }
            other => other,
        };
        let parts: Vec<&str> = fields.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(format!(
                "a cron schedule has 5 fields (minute hour day-of-month month day-of-week), \
                 got {}",
                parts.len()
            ));
        }
        Ok(Schedule::Cron(Cron {
            minutes: field(parts[0], 0, 59, &[], "minute")?,
            hours: field(parts[1], 0, 23, &[], "hour")?,
            days_of_month: field(parts[2], 1, 31, &[], "day of month")?,
            months: field(parts[3], 1, 12, &MONTHS, "month")?,
            days_of_week: field(parts[4], 0, 6, &DAYS, "day of week")?,
            dom_star: matches!(parts[2], "*" | "?"),
            dow_star: matches!(parts[4], "*" | "?"),
        }))
    }

    /// The first run strictly after `after`; `None` if the schedule never fires.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Schedule::Every(period) => after.checked_add_signed(Duration::from_std(*period).ok()?),
            Schedule::Cron(cron) => cron.next_after(after),
        }
    }
}

impl Cron {
    fn day_matches(&self, t: &DateTime<Utc>) -> bool {
        let dom = bit(self.days_of_month, t.day());
        let dow = bit(self.days_of_week, t.weekday().num_days_from_sunday());
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let mut t = after
            .duration_trunc(Duration::minutes(1))
            .ok()?
            .checked_add_signed(Duration::minutes(1))?;
        let limit = after.checked_add_signed(Duration::days(SEARCH_DAYS))?;
        while t <= limit {
            if !bit(self.months, t.month()) || !self.day_matches(&t) {
                // Next day, 00:00.
                t = t
                    .duration_trunc(Duration::days(1))
                    .ok()?
                    .checked_add_signed(Duration::days(1))?;
                continue;
            }
            if !bit(self.hours, t.hour()) {
                t = t
                    .duration_trunc(Duration::hours(1))
                    .ok()?
                    .checked_add_signed(Duration::hours(1))?;
                continue;
            }
            if !bit(self.minutes, t.minute()) {
                t = t.checked_add_signed(Duration::minutes(1))?;
                continue;
            }
            return Some(t);
        }
        None
    }
}

fn bit(set: u64, value: u32) -> bool {
    value < 64 && set & (1u64 << value) != 0
}

/// One cron field: `*`, `?`, and comma-separated `N`, `A-B`, with an optional `/STEP`
/// (`*/S`, `A-B/S`, `A/S` = from A to the maximum); names where `names` has them.
fn field(raw: &str, min: u32, max: u32, names: &[&str], what: &str) -> Result<u64, String> {
    let bad = |why: &str| format!("{what} field {raw:?}: {why}");
    let value = |s: &str| -> Result<u32, String> {
        let lower = s.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            // Names count from `min` (JAN = 1, SUN = 0).
            return Ok(min + i as u32);
        }
        let n: u32 = s
            .parse()
            .map_err(|_| bad(&format!("{s:?} is not a number")))?;
        if n < min || n > max {
            return Err(bad(&format!("{n} is outside {min}-{max}")));
        }
        Ok(n)
    };
    let mut set = 0u64;
    for part in raw.split(',') {
        if part.is_empty() {
            return Err(bad("empty list item"));
        }
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s.parse().map_err(|_| bad("the step is not a number"))?;
                if step == 0 {
                    return Err(bad("the step must be at least 1"));
                }
                (r, Some(step))
            }
            None => (part, None),
        };
        let (from, to) = match range {
            "*" | "?" => (min, max),
            r => match r.split_once('-') {
                Some((a, b)) => (value(a)?, value(b)?),
                None => {
                    let a = value(r)?;
                    (a, if step.is_some() { max } else { a })
                }
            },
        };
        if from > to {
            return Err(bad(&format!("the range {from}-{to} is backwards")));
        }
        let mut v = from;
        while v <= to {
            set |= 1u64 << v;
            v += step.unwrap_or(1);
        }
    }
    Ok(set)
}

/// Go's `time.ParseDuration` grammar (`1h30m`, `90s`, `1.5m`, `500ms`).
pub fn parse_go_duration(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("{s:?} is not a duration like 30s, 5m or 1h30m");
    if s.is_empty() {
        return Err(bad());
    }
    let mut total_nanos: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let number: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total_nanos += number * nanos_per;
    }
    // Far beyond any sensible period; also keeps the conversion below exact enough.
    if !total_nanos.is_finite() || total_nanos > 1e18 {
        return Err(bad());
    }
    Ok(std::time::Duration::from_nanos(total_nanos.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).single().unwrap()
    }

    #[test]
    fn descriptors_and_fields() {
        let t = at(2026, 12, 2, 14, 7);
        let hourly = Schedule::parse("@hourly").unwrap();
        assert_eq!(hourly.next_after(t), Some(at(2026, 12, 2, 15, 0)));
        let every = Schedule::parse("@every 30s").unwrap();
        assert_eq!(every.next_after(t), Some(t + Duration::seconds(30)));
        let five = Schedule::parse("*/5 * * * *").unwrap();
        assert_eq!(five.next_after(t), Some(at(2026, 12, 2, 14, 10)));
        let monday = Schedule::parse("30 9 * * MON").unwrap();
        assert_eq!(monday.next_after(t), Some(at(2026, 12, 7, 9, 30)));
        let leap = Schedule::parse("0 0 29 2 *").unwrap();
        assert_eq!(leap.next_after(t), Some(at(2028, 2, 29, 0, 0)));
        // Both day fields restricted: either matches.
        let either = Schedule::parse("0 0 1 * FRI").unwrap();
        assert_eq!(either.next_after(t), Some(at(2026, 12, 4, 0, 0)));
        assert_eq!(Schedule::parse("0 0 31 2 *").unwrap().next_after(t), None);
        assert!(Schedule::parse("TZ=UTC @daily").is_ok());
    }

    #[test]
    fn bad_schedules_say_why() {
        for (spec, why) in [
            ("* * * *", "5 fields"),
            ("61 * * * *", "outside"),
            ("*/0 * * * *", "step"),
            ("5-1 * * * *", "backwards"),
            ("@every 1500ms", "whole number"),
            ("@every 0s", "whole number"),
            ("@every soon", "duration"),
            ("@fortnightly", "descriptor"),
            ("TZ=Europe/Paris @daily", "time zone"),
            ("a b c d e", "not a number"),
        ] {
            let err = Schedule::parse(spec).unwrap_err();
            assert!(err.contains(why), "{spec}: {err}");
        }
        assert_eq!(
            parse_go_duration("1h30m").unwrap(),
            std::time::Duration::from_secs(5400)
        );
    }
}
