//! `resourceLimits` (Kubernetes quantities: `cpu: "500m"`, `memory: "512Mi"`,
//! `pids: "256"`, `disk: "1Gi"`) as the `linux.resources` of an OCI bundle, and the
//! sandbox's cgroup counters read back host-side for `/metrics`.
//!
//! The runtime turns `linux.resources` into cgroup limits: v1 controllers here
//! (`memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`, `cpu.cfs_quota_us`,
//! `pids.max`), v2 files on a unified host (`memory.max`, `memory.swap.max`,
//! `cpu.max`, `pids.max`); [`cgroup_files`] spells both out (and is what the tests
//! check the live cgroup against). `disk` is not a cgroup limit: it caps the
//! sandbox's writable storage (see `super::disk`).
//!
//! Unset limits take the server's defaults (`--default-cpu/-memory/-pids/-disk`); a
//! request above a server maximum (`--max-cpu/-memory/-pids/-disk`) is refused (400,
//! the limit named), as is any key this server cannot enforce: a limit is never
//! silently ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// CFS period used for CPU quotas (100 ms, Docker's default).
pub const CPU_PERIOD_US: u64 = 100_000;

/// The keys of `resourceLimits` this server enforces.
pub const KNOWN_KEYS: [&str; 4] = ["cpu", "memory", "pids", "disk"];

/// Smallest memory limit accepted (below it the agent itself cannot start).
const MIN_MEMORY: u64 = 16 << 20;
/// Smallest disk limit accepted (ext4 needs room for its own metadata).
const MIN_DISK: u64 = 16 << 20;

/// Limits applied when a request leaves them unset, and the largest a request may
/// ask for (`None`: no maximum; for disk: no default cap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub default_memory: u64,
    pub default_cpu_millis: u64,
    pub default_pids: i64,
    pub default_disk: Option<u64>,
    pub max_memory: Option<u64>,
    pub max_cpu_millis: Option<u64>,
    pub max_pids: Option<i64>,
    pub max_disk: Option<u64>,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            default_memory: 1 << 30,
            default_cpu_millis: 1000,
            default_pids: 1024,
            default_disk: None,
            max_memory: None,
            max_cpu_millis: None,
            max_pids: None,
            max_disk: None,
        }
    }
}

/// The same policy from the flags' text (`None`: flag not given).
#[derive(Debug, Clone, Default)]
pub struct PolicyFlags {
    pub default_cpu: Option<String>,
    pub default_memory: Option<String>,
    pub default_pids: Option<String>,
    pub default_disk: Option<String>,
    pub max_cpu: Option<String>,
    pub max_memory: Option<String>,
    pub max_pids: Option<String>,
    pub max_disk: Option<String>,
}

impl Policy {
    /// Parses the flags; a default above its maximum is a start-up error.
    pub fn from_flags(f: &PolicyFlags) -> Result<Self> {
        let d = Self::default();
        let mem = |v: &Option<String>, flag: &str| -> Result<Option<u64>> {
            v.as_deref()
                .map(|v| parse_memory(v).with_context(|| format!("--{flag} {v:?}")))
                .transpose()
        };
        let cpu = |v: &Option<String>, flag: &str| -> Result<Option<u64>> {
            v.as_deref()
                .map(|v| parse_cpu(v).with_context(|| format!("--{flag} {v:?}")))
                .transpose()
        };
        let pids = |v: &Option<String>, flag: &str| -> Result<Option<i64>> {
            v.as_deref()
                .map(|v| parse_pids(v).with_context(|| format!("--{flag} {v:?}")))
                .transpose()
        };
        let max_memory = mem(&f.max_memory, "max-memory")?;
        let max_cpu_millis = cpu(&f.max_cpu, "max-cpu")?;
        let max_pids = pids(&f.max_pids, "max-pids")?;
        let max_disk = mem(&f.max_disk, "max-disk")?;
        // An unset default under a lower maximum becomes the maximum, so that
        // `--max-memory 256Mi` alone still lets requests without limits through.
        let p = Self {
            default_memory: mem(&f.default_memory, "default-memory")?.unwrap_or_else(|| {
                max_memory.map_or(d.default_memory, |m| m.min(d.default_memory))
            }),
            default_cpu_millis: cpu(&f.default_cpu, "default-cpu")?.unwrap_or_else(|| {
                max_cpu_millis.map_or(d.default_cpu_millis, |m| m.min(d.default_cpu_millis))
            }),
            default_pids: pids(&f.default_pids, "default-pids")?
                .unwrap_or_else(|| max_pids.map_or(d.default_pids, |m| m.min(d.default_pids))),
            default_disk: mem(&f.default_disk, "default-disk")?.or(max_disk),
            max_memory,
            max_cpu_millis,
            max_pids,
            max_disk,
        };
        if p.default_memory < MIN_MEMORY {
            bail!("--default-memory must be at least 16Mi");
        }
        if p.default_disk.is_some_and(|b| b < MIN_DISK) {
            bail!("--default-disk must be at least 16Mi");
        }
        let over = |what: &str, d: bool| -> Result<()> {
            if d {
                bail!("--default-{what} is above --max-{what}");
            }
            Ok(())
        };
        over("memory", p.max_memory.is_some_and(|m| p.default_memory > m))?;
        over(
            "cpu",
            p.max_cpu_millis.is_some_and(|m| p.default_cpu_millis > m),
        )?;
        over("pids", p.max_pids.is_some_and(|m| p.default_pids > m))?;
        over(
            "disk",
            matches!((p.default_disk, p.max_disk), (Some(d), Some(m)) if d > m),
        )?;
        Ok(p)
    }
}

/// The limits of one sandbox, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub memory_bytes: u64,
    pub cpu_millis: u64,
    pub pids: i64,
    /// Size of the sandbox's writable storage; `None`: bounded by the host's disk.
    pub disk_bytes: Option<u64>,
}

impl Limits {
    /// The request's limits over the policy's defaults. Errors name the limit and are
    /// the create request's 400.
    pub fn from_request(req: &BTreeMap<String, String>, policy: &Policy) -> Result<Self> {
        if let Some(k) = req.keys().find(|k| !KNOWN_KEYS.contains(&k.as_str())) {
            bail!(
                "resourceLimits.{k} is not supported by this server (it enforces {})",
                KNOWN_KEYS.join(", ")
            );
        }
        let memory_bytes = match req.get("memory") {
            Some(v) => parse_memory(v).with_context(|| format!("resourceLimits.memory {v:?}"))?,
            None => policy.default_memory,
        };
        let cpu_millis = match req.get("cpu") {
            Some(v) => parse_cpu(v).with_context(|| format!("resourceLimits.cpu {v:?}"))?,
            None => policy.default_cpu_millis,
        };
        let pids = match req.get("pids") {
            Some(v) => parse_pids(v).with_context(|| format!("resourceLimits.pids {v:?}"))?,
            None => policy.default_pids,
        };
        let disk_bytes = match req.get("disk") {
            Some(v) => Some(parse_memory(v).with_context(|| format!("resourceLimits.disk {v:?}"))?),
            None => policy.default_disk,
        };
        if memory_bytes < MIN_MEMORY {
            bail!("resourceLimits.memory must be at least 16Mi");
        }
        if disk_bytes.is_some_and(|b| b < MIN_DISK) {
            bail!("resourceLimits.disk must be at least 16Mi");
        }
        if let Some(max) = policy.max_memory.filter(|m| memory_bytes > *m) {
            bail!("resourceLimits.memory {memory_bytes} bytes is above this server's maximum of {max} bytes (--max-memory)");
        }
        if let Some(max) = policy.max_cpu_millis.filter(|m| cpu_millis > *m) {
            bail!("resourceLimits.cpu {cpu_millis}m is above this server's maximum of {max}m (--max-cpu)");
        }
        if let Some(max) = policy.max_pids.filter(|m| pids > *m) {
            bail!(
                "resourceLimits.pids {pids} is above this server's maximum of {max} (--max-pids)"
            );
        }
        if let (Some(d), Some(max)) = (disk_bytes, policy.max_disk) {
            if d > max {
                bail!("resourceLimits.disk {d} bytes is above this server's maximum of {max} bytes (--max-disk)");
            }
        }
        Ok(Self {
            memory_bytes,
            cpu_millis,
            pids,
            disk_bytes,
        })
    }

    fn cpu_quota_us(&self) -> u64 {
        self.cpu_millis * CPU_PERIOD_US / 1000
    }

    /// The resources `runc update --resources` takes to move a running container to
    /// these limits (the bundle's, less the device rules, which do not change).
    pub fn to_update_resources(&self) -> Value {
        json!({
            "memory": {"limit": self.memory_bytes, "swap": self.memory_bytes},
            "cpu": {
                "quota": self.cpu_quota_us() as i64,
                "period": CPU_PERIOD_US,
            },
            "pids": {"limit": self.pids},
        })
    }

    /// `linux.resources` of the bundle.
    pub fn to_resources(&self) -> Value {
        json!({
            "devices": [{"allow": false, "access": "rwm"}],
            // swap == limit: no swap beyond the memory limit (v1 memsw, v2 swap.max 0).
            "memory": {"limit": self.memory_bytes, "swap": self.memory_bytes},
            "cpu": {
                "quota": self.cpu_quota_us() as i64,
                "period": CPU_PERIOD_US,
            },
            "pids": {"limit": self.pids},
        })
    }
}

/// Which cgroup layout the host's controllers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// One hierarchy per controller under `/sys/fs/cgroup/<controller>/` (hybrid or
    /// legacy hosts, as here).
    V1,
    /// The unified hierarchy at `/sys/fs/cgroup/`.
    V2,
}

impl CgroupVersion {
    /// The host's layout: v2 when `/sys/fs/cgroup` itself is the unified hierarchy.
    pub fn detect() -> Self {
        if Path::new("/sys/fs/cgroup/cgroup.controllers").is_file() {
            Self::V2
        } else {
            Self::V1
        }
    }
}

/// The cgroup files (relative to `/sys/fs/cgroup`) the runtime writes for these
/// limits under `cgroups_path`, with their values: what `runc`/`crun` do for
/// `linux.resources`, spelled out so that tests can check a live cgroup against it.
pub fn cgroup_files(
    limits: &Limits,
    version: CgroupVersion,
    cgroups_path: &str,
) -> Vec<(PathBuf, String)> {
    let rel = cgroups_path.trim_start_matches('/');
    let at = |controller: &str, file: &str| -> PathBuf {
        match version {
            CgroupVersion::V1 => Path::new(controller).join(rel).join(file),
            CgroupVersion::V2 => Path::new(rel).join(file),
        }
    };
    let quota = limits.cpu_quota_us();
    match version {
        CgroupVersion::V1 => vec![
            (
                at("memory", "memory.limit_in_bytes"),
                limits.memory_bytes.to_string(),
            ),
            // memory+swap equal to memory: no swap.
            (
                at("memory", "memory.memsw.limit_in_bytes"),
                limits.memory_bytes.to_string(),
            ),
            (at("cpu", "cpu.cfs_period_us"), CPU_PERIOD_US.to_string()),
            (at("cpu", "cpu.cfs_quota_us"), quota.to_string()),
            (at("pids", "pids.max"), limits.pids.to_string()),
        ],
        CgroupVersion::V2 => vec![
            (at("", "memory.max"), limits.memory_bytes.to_string()),
            // v2 counts swap on its own: memsw − memory = 0.
            (at("", "memory.swap.max"), "0".to_string()),
            (at("", "cpu.max"), format!("{quota} {CPU_PERIOD_US}")),
            (at("", "pids.max"), limits.pids.to_string()),
        ],
    }
}

/// A sandbox's usage and limits, read host-side from its cgroup.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub memory_used: u64,
    pub memory_limit: u64,
    /// Cumulative CPU time, nanoseconds.
    pub cpu_ns: u64,
    /// CPUs the quota allows (quota / period), or the host's count without a quota.
    pub cpu_count: f64,
}

fn read_u64(path: &Path) -> Result<u64> {
    // Kernel pseudo-files in a root-owned hierarchy the sandbox cannot write: small,
    // never FIFOs or symlinks planted by a sandbox.
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("{} is not a number: {:?}", path.display(), text.trim()))
}

fn host_cpus() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// Reads the usage of the cgroup at `cgroups_path` under `root` (`/sys/fs/cgroup`).
pub fn read_usage(root: &Path, version: CgroupVersion, cgroups_path: &str) -> Result<Usage> {
    let rel = cgroups_path.trim_start_matches('/');
    match version {
        CgroupVersion::V1 => {
            let mem = root.join("memory").join(rel);
            let cpu = root.join("cpu").join(rel);
            let cpuacct = root.join("cpuacct").join(rel);
            let quota = std::fs::read_to_string(cpu.join("cpu.cfs_quota_us"))
                .ok()
                .and_then(|q| q.trim().parse::<i64>().ok());
            let period = read_u64(&cpu.join("cpu.cfs_period_us")).unwrap_or(CPU_PERIOD_US);
            let inactive = stat_field(&mem.join("memory.stat"), "total_inactive_file");
            Ok(Usage {
                memory_used: read_u64(&mem.join("memory.usage_in_bytes"))?.saturating_sub(inactive),
                memory_limit: read_u64(&mem.join("memory.limit_in_bytes"))?,
                cpu_ns: read_u64(&cpuacct.join("cpuacct.usage"))?,
                cpu_count: match quota {
                    Some(q) if q > 0 && period > 0 => q as f64 / period as f64,
                    _ => host_cpus(),
                },
            })
        }
        CgroupVersion::V2 => {
            let dir = root.join(rel);
            let max = std::fs::read_to_string(dir.join("memory.max"))
                .with_context(|| format!("reading {}", dir.join("memory.max").display()))?;
            let stat = std::fs::read_to_string(dir.join("cpu.stat"))
                .with_context(|| format!("reading {}", dir.join("cpu.stat").display()))?;
            let cpu_max = std::fs::read_to_string(dir.join("cpu.max")).unwrap_or_default();
            let inactive = stat_field(&dir.join("memory.stat"), "inactive_file");
            Ok(Usage {
                memory_used: read_u64(&dir.join("memory.current"))?.saturating_sub(inactive),
                memory_limit: max.trim().parse().unwrap_or(u64::MAX),
                cpu_ns: parse_v2_cpu_usec(&stat)? * 1000,
                cpu_count: parse_v2_cpu_max(&cpu_max).unwrap_or_else(host_cpus),
            })
        }
    }
}

/// A counter of `memory.stat` (0 if absent): like Docker, memory "used" leaves out
/// the inactive page cache, which the kernel reclaims before it OOM-kills.
fn stat_field(path: &Path, name: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or(0)
}

fn parse_v2_cpu_usec(stat: &str) -> Result<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
        .context("no usage_usec in cpu.stat")
}

/// `"50000 100000"` → 0.5; `"max 100000"` → None (no quota).
fn parse_v2_cpu_max(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next()?.parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

/// `512Mi`, `1Gi`, `256M`, `1G`, `1024Ki`, `1e9`, `268435456`.
pub fn parse_memory(raw: &str) -> Result<u64> {
    let s = raw.trim();
    let split = s
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e')
        .unwrap_or(s.len());
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

/// A positive process count (at most 4194304, the kernel's `pid_max` ceiling).
pub fn parse_pids(raw: &str) -> Result<i64> {
    raw.trim()
        .parse::<i64>()
        .ok()
        .filter(|p| (1..=4_194_304).contains(p))
        .context("not an integer between 1 and 4194304")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn err(r: Result<Limits>) -> String {
        match r {
            Ok(l) => panic!("accepted: {l:?}"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn quantities_parse() {
        assert_eq!(parse_memory("512Mi").ok(), Some(512 << 20));
        assert_eq!(parse_memory("1Gi").ok(), Some(1 << 30));
        assert_eq!(parse_memory("256M").ok(), Some(256_000_000));
        assert_eq!(parse_memory("1048576").ok(), Some(1 << 20));
        assert_eq!(parse_memory("1e9").ok(), Some(1_000_000_000));
        assert!(parse_memory("lots").is_err());
        assert!(parse_memory("-1Gi").is_err());
        assert_eq!(parse_cpu("500m").ok(), Some(500));
        assert_eq!(parse_cpu("1").ok(), Some(1000));
        assert_eq!(parse_cpu("0.25").ok(), Some(250));
        assert!(parse_cpu("0").is_err());
        assert!(parse_pids("0").is_err());
        assert!(parse_pids("9e12").is_err());
    }

    #[test]
    fn defaults_fill_unset_limits() {
        let limits = Limits::from_request(&req(&[("memory", "256Mi")]), &Policy::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(limits.memory_bytes, 256 << 20);
        assert_eq!(limits.cpu_millis, 1000);
        assert_eq!(limits.pids, 1024);
        assert_eq!(limits.disk_bytes, None);
        let res = limits.to_resources();
        assert_eq!(res["cpu"]["quota"], 100_000);
        assert_eq!(res["pids"]["limit"], 1024);
        assert_eq!(res["memory"]["swap"], 256 << 20);
    }

    #[test]
    fn maxima_refuse_with_the_limit_named_and_unknown_keys_are_refused() {
        let policy = Policy::from_flags(&PolicyFlags {
            max_cpu: Some("2".into()),
            max_memory: Some("512Mi".into()),
            max_pids: Some("100".into()),
            max_disk: Some("1Gi".into()),
            ..Default::default()
        })
        .unwrap_or_else(|e| panic!("{e:#}"));
        // Unset defaults come down to the maxima.
        assert_eq!(policy.default_memory, 512 << 20);
        assert_eq!(policy.default_pids, 100);
        assert_eq!(policy.default_cpu_millis, 1000);
        assert_eq!(policy.default_disk, Some(1 << 30));
        let e = err(Limits::from_request(&req(&[("memory", "1Gi")]), &policy));
        assert!(
            e.contains("resourceLimits.memory") && e.contains("--max-memory"),
            "{e}"
        );
        let e = err(Limits::from_request(&req(&[("cpu", "3")]), &policy));
        assert!(
            e.contains("resourceLimits.cpu") && e.contains("--max-cpu"),
            "{e}"
        );
        let e = err(Limits::from_request(&req(&[("pids", "101")]), &policy));
        assert!(e.contains("resourceLimits.pids"), "{e}");
        let e = err(Limits::from_request(&req(&[("disk", "2Gi")]), &policy));
        assert!(
            e.contains("resourceLimits.disk") && e.contains("--max-disk"),
            "{e}"
        );
        let e = err(Limits::from_request(&req(&[("gpu", "1")]), &policy));
        assert!(e.contains("resourceLimits.gpu"), "{e}");
        let ok = Limits::from_request(&req(&[("cpu", "2"), ("pids", "100")]), &policy)
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!((ok.cpu_millis, ok.pids), (2000, 100));
        // A default above a maximum is a start-up error.
        assert!(Policy::from_flags(&PolicyFlags {
            default_memory: Some("1Gi".into()),
            max_memory: Some("512Mi".into()),
            ..Default::default()
        })
        .is_err());
    }

    #[test]
    fn cgroup_files_for_v1_and_v2() {
        let limits = Limits {
            memory_bytes: 128 << 20,
            cpu_millis: 500,
            pids: 64,
            disk_bytes: None,
        };
        let v1 = cgroup_files(&limits, CgroupVersion::V1, "/opensandbox/abc");
        let get = |files: &[(PathBuf, String)], p: &str| {
            files
                .iter()
                .find(|(f, _)| f == Path::new(p))
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("{p} not in {files:?}"))
        };
        assert_eq!(
            get(&v1, "memory/opensandbox/abc/memory.limit_in_bytes"),
            "134217728"
        );
        assert_eq!(
            get(&v1, "memory/opensandbox/abc/memory.memsw.limit_in_bytes"),
            "134217728"
        );
        assert_eq!(get(&v1, "cpu/opensandbox/abc/cpu.cfs_quota_us"), "50000");
        assert_eq!(get(&v1, "cpu/opensandbox/abc/cpu.cfs_period_us"), "100000");
        assert_eq!(get(&v1, "pids/opensandbox/abc/pids.max"), "64");
        let v2 = cgroup_files(&limits, CgroupVersion::V2, "/opensandbox/abc");
        assert_eq!(get(&v2, "opensandbox/abc/memory.max"), "134217728");
        assert_eq!(get(&v2, "opensandbox/abc/memory.swap.max"), "0");
        assert_eq!(get(&v2, "opensandbox/abc/cpu.max"), "50000 100000");
        assert_eq!(get(&v2, "opensandbox/abc/pids.max"), "64");
    }

    #[test]
    fn usage_reads_v1_and_v2_layouts() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = tmp.path();
        let w = |p: &str, v: &str| {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap_or(root)).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(p, v).unwrap_or_else(|e| panic!("{e}"));
        };
        w("memory/os/x/memory.usage_in_bytes", "1048576\n");
        w("memory/os/x/memory.limit_in_bytes", "134217728\n");
        w(
            "memory/os/x/memory.stat",
            "cache 9\ntotal_inactive_file 4096\n",
        );
        w("cpuacct/os/x/cpuacct.usage", "5000000\n");
        w("cpu/os/x/cpu.cfs_quota_us", "50000\n");
        w("cpu/os/x/cpu.cfs_period_us", "100000\n");
        let u = read_usage(root, CgroupVersion::V1, "/os/x").unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            u,
            Usage {
                memory_used: (1 << 20) - 4096,
                memory_limit: 128 << 20,
                cpu_ns: 5_000_000,
                cpu_count: 0.5
            }
        );
        w("os/y/memory.current", "2097152\n");
        w("os/y/memory.max", "max\n");
        w("os/y/cpu.stat", "usage_usec 7\nuser_usec 5\n");
        w("os/y/cpu.max", "200000 100000\n");
        let u = read_usage(root, CgroupVersion::V2, "/os/y").unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            u,
            Usage {
                memory_used: 2 << 20,
                memory_limit: u64::MAX,
                cpu_ns: 7000,
                cpu_count: 2.0
            }
        );
    }
}
