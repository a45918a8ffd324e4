//! `resourceLimits` (Kubernetes quantities: `cpu: "500m"`, `memory: "512Mi"`,
//! `pids: "256"`) as the `linux.resources` of an OCI bundle. The runtime turns them
//! into cgroup limits (v1 controllers here, v2 where the host has it).
//! Unset limits take the server's defaults; `disk` and other keys are not enforced
//! yet (ignored, like upstream's Docker runtime ignores what it cannot apply).

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// CFS period used for CPU quotas (100 ms, Docker's default).
const CPU_PERIOD_US: u64 = 100_000;

/// Limits applied when a request leaves them unset.
#[derive(Debug, Clone)]
pub struct Defaults {
    pub memory_bytes: u64,
    pub cpu_millis: u64,
    pub pids: i64,
}

impl Default for Defaults {
    fn default() -> Self {
        Self {
            memory_bytes: 1 << 30,
            cpu_millis: 1000,
            pids: 1024,
        }
    }
}

/// The limits of one sandbox, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub memory_bytes: u64,
    pub cpu_millis: u64,
    pub pids: i64,
}

impl Limits {
    pub fn from_request(req: &BTreeMap<String, String>, defaults: &Defaults) -> Result<Self> {
        let memory_bytes = match req.get("memory") {
            Some(v) => parse_memory(v).with_context(|| format!("resourceLimits.memory {v:?}"))?,
            None => defaults.memory_bytes,
        };
        let cpu_millis = match req.get("cpu") {
            Some(v) => parse_cpu(v).with_context(|| format!("resourceLimits.cpu {v:?}"))?,
            None => defaults.cpu_millis,
        };
        let pids = match req.get("pids") {
            Some(v) => v
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|p| *p > 0)
                .with_context(|| format!("resourceLimits.pids {v:?} is not a positive integer"))?,
            None => defaults.pids,
        };
        if memory_bytes < 16 << 20 {
            bail!("resourceLimits.memory must be at least 16Mi");
        }
        Ok(Self {
            memory_bytes,
            cpu_millis,
            pids,
        })
    }

    /// `linux.resources` of the bundle.
    pub fn to_resources(&self) -> Value {
        json!({
            "devices": [{"allow": false, "access": "rwm"}],
            // swap == limit: no swap beyond the memory limit (v1 memsw, v2 swap.max 0).
            "memory": {"limit": self.memory_bytes, "swap": self.memory_bytes},
            "cpu": {
                "quota": (self.cpu_millis * CPU_PERIOD_US / 1000) as i64,
                "period": CPU_PERIOD_US,
            },
            "pids": {"limit": self.pids},
        })
    }
}

/// `512Mi`, `1Gi`, `256M`, `1G`, `1024Ki`, `1e9`, `268435456`.
pub fn parse_memory(raw: &str) -> Result<u64> {
    let s = raw.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.trim().parse().context("not a number")?;
    let mult: f64 = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => bail!("unknown unit {other:?}"),
    };
    let bytes = value * mult;
    if !bytes.is_finite() || bytes <= 0.0 || bytes > 1e15 {
        bail!("out of range");
    }
    Ok(bytes as u64)
}

/// `1`, `0.5`, `500m`, `2` → millicores.
pub fn parse_cpu(raw: &str) -> Result<u64> {
    let s = raw.trim();
    let millis = if let Some(m) = s.strip_suffix('m') {
        m.trim().parse::<f64>().context("not a number")?
    } else {
        s.parse::<f64>().context("not a number")? * 1000.0
    };
    if !(10.0..=1024.0 * 1000.0).contains(&millis) {
        bail!("must be between 10m and 1024");
    }
    Ok(millis as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse() {
        assert_eq!(parse_memory("512Mi").ok(), Some(512 << 20));
        assert_eq!(parse_memory("1Gi").ok(), Some(1 << 30));
        assert_eq!(parse_memory("256M").ok(), Some(256_000_000));
        assert_eq!(parse_memory("1048576").ok(), Some(1 << 20));
        assert!(parse_memory("lots").is_err());
        assert!(parse_memory("-1Gi").is_err());
        assert_eq!(parse_cpu("500m").ok(), Some(500));
        assert_eq!(parse_cpu("1").ok(), Some(1000));
        assert_eq!(parse_cpu("0.25").ok(), Some(250));
        assert!(parse_cpu("0").is_err());
    }

    #[test]
    fn defaults_fill_unset_limits() {
        let mut req = BTreeMap::new();
        req.insert("memory".to_string(), "256Mi".to_string());
        let limits =
            Limits::from_request(&req, &Defaults::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(limits.memory_bytes, 256 << 20);
        assert_eq!(limits.cpu_millis, 1000);
        assert_eq!(limits.pids, 1024);
        let res = limits.to_resources();
        assert_eq!(res["cpu"]["quota"], 100_000);
        assert_eq!(res["pids"]["limit"], 1024);
    }
}
