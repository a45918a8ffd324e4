//! Resource metrics (`GET /metrics`) and their stream (`GET /metrics/watch`,
//! protocol.md §4.6), read from `/proc/stat` and `/proc/meminfo`.
//!
//! Inside a sandbox `/proc` is the sandbox's own mount, but CPU and memory counters
//! there are machine-wide, as with upstream execd (which reports the host's view too).

use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::SharedState;

pub const ROUTES: &[(&str, &str)] = &[("GET", "/metrics"), ("GET", "/metrics/watch")];

/// How long CPU counters are sampled to compute a usage percentage.
const CPU_SAMPLE: Duration = Duration::from_millis(200);
/// Pause between frames of the watch stream (one frame ≈ this + `CPU_SAMPLE`).
const WATCH_PAUSE: Duration = Duration::from_millis(800);

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/metrics/watch", get(watch))
}

/// The `Metrics` model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// CPUs this process may use (GOMAXPROCS upstream), as a float.
    pub cpu_count: f64,
    pub cpu_used_pct: f64,
    pub mem_total_mib: f64,
    pub mem_used_mib: f64,
    /// Unix milliseconds.
    pub timestamp: i64,
}

/// Aggregate CPU jiffies: (busy, total).
fn parse_cpu_line(stat: &str) -> Result<(u64, u64), String> {
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or("no aggregate cpu line in /proc/stat")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| {
            f.parse::<u64>()
                .map_err(|e| format!("bad /proc/stat field {f:?}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    if fields.len() < 4 {
        return Err("too few fields in /proc/stat cpu line".into());
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is
    // already counted in user/nice, so only the first eight add up to the total.
    let total: u64 = fields.iter().take(8).sum();
    let idle = fields[3] + fields.get(4).copied().unwrap_or(0);
    Ok((total.saturating_sub(idle), total))
}

/// (total MiB, used MiB) where used = total − available.
fn parse_meminfo(meminfo: &str) -> Result<(f64, f64), String> {
    let field = |name: &str| -> Option<u64> {
        meminfo
            .lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(':'))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    let total_kib = field("MemTotal").ok_or("no MemTotal in /proc/meminfo")?;
    let available_kib = field("MemAvailable")
        .or_else(|| Some(field("MemFree")? + field("Buffers")? + field("Cached")?))
        .ok_or("neither MemAvailable nor MemFree/Buffers/Cached in /proc/meminfo")?;
    let total = total_kib as f64 / 1024.0;
    let used = total_kib.saturating_sub(available_kib) as f64 / 1024.0;
    Ok((total, used))
}

async fn read_proc(path: &str) -> Result<String, String> {
    tokio::fs::read_to_string(path)
        .await
        .map_err(|e| format!("cannot read {path}: {e}"))
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Takes one sample (waits [`CPU_SAMPLE`] between two CPU readings).
pub async fn sample() -> Result<Metrics, String> {
    let (busy0, total0) = parse_cpu_line(&read_proc("/proc/stat").await?)?;
    tokio::time::sleep(CPU_SAMPLE).await;
    let (busy1, total1) = parse_cpu_line(&read_proc("/proc/stat").await?)?;
    let (mem_total, mem_used) = parse_meminfo(&read_proc("/proc/meminfo").await?)?;
    let dt = total1.saturating_sub(total0);
    let cpu_used_pct = if dt == 0 {
        0.0
    } else {
        round2(busy1.saturating_sub(busy0) as f64 * 100.0 / dt as f64)
    };
    let cpu_count = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as f64;
    Ok(Metrics {
        cpu_count,
        cpu_used_pct,
        mem_total_mib: round2(mem_total),
        mem_used_mib: round2(mem_used),
        timestamp: chrono::Utc::now().timestamp_millis(),
    })
}

async fn metrics() -> Result<Json<Metrics>, ApiError> {
    sample().await.map(Json).map_err(ApiError::runtime)
}

fn frame(result: Result<Metrics, String>) -> Bytes {
    let value = match result {
        Ok(m) => serde_json::to_value(m),
        Err(e) => Ok(serde_json::json!({ "error": e })),
    };
    let mut line = value
        .map(|v| v.to_string())
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    line.push('\n');
    Bytes::from(line)
}

/// NDJSON frames until the client disconnects (the send fails, the task ends).
async fn watch() -> Response {
    watch_response(sample)
}

/// The `/metrics/watch` response: one NDJSON frame per `sample()` (an `{"error": …}`
/// frame when a sample fails), until the client goes away. The server answers the
/// watch of a runc sandbox with this too, sampling the sandbox's cgroup host-side.
pub fn watch_response<F, Fut>(mut sample: F) -> Response
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<Metrics, String>> + Send,
{
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    tokio::spawn(async move {
        loop {
            if tx.send(Ok(frame(sample().await))).await.is_err() {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(WATCH_PAUSE) => {}
                _ = tx.closed() => break,
            }
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx)),
    )
        .into_response()
}

/// OOM kills so far in this sandbox's memory cgroup, as the sandbox sees it (its
/// cgroup namespace makes its own cgroup the root of `/sys/fs/cgroup`): v1
/// `memory.oom_control`, v2 `memory.events`. `None` without a memory cgroup (no
/// limit, e.g. under bubblewrap).
pub fn oom_kills() -> Option<u64> {
    // Read around every foreground command: which file this sandbox has is found once.
    static FILE: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    let file = FILE.get_or_init(|| {
        [
            "/sys/fs/cgroup/memory/memory.oom_control",
            "/sys/fs/cgroup/memory.events",
        ]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    });
    std::fs::read_to_string((*file)?)
        .ok()
        .and_then(|text| parse_oom_kills(&text))
}

fn parse_oom_kills(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
}

/// The sandbox's memory limit in bytes, as its cgroup says (`None`: unlimited or
/// unknown).
pub fn memory_limit() -> Option<u64> {
    [
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        "/sys/fs/cgroup/memory.max",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .and_then(|t| t.trim().parse().ok())
    .filter(|b| *b < (1u64 << 62))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_line_excludes_idle_and_iowait_from_busy() {
        let stat = "cpu  100 0 50 800 50 0 0 0 10 0\ncpu0 1 2 3 4\n";
        assert_eq!(parse_cpu_line(stat).unwrap(), (150, 1000));
        assert!(parse_cpu_line("intr 1 2\n").is_err());
    }

    #[test]
    fn meminfo_used_is_total_minus_available() {
        let m = "MemTotal:       2048 kB\nMemFree:         100 kB\nMemAvailable:   1024 kB\n";
        assert_eq!(parse_meminfo(m).unwrap(), (2.0, 1.0));
        let old = "MemTotal: 4096 kB\nMemFree: 1024 kB\nBuffers: 512 kB\nCached: 512 kB\n";
        assert_eq!(parse_meminfo(old).unwrap(), (4.0, 2.0));
        assert!(parse_meminfo("nothing").is_err());
    }

    #[test]
    fn oom_kill_counter_parses_for_v1_and_v2() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(parse_oom_kills(v1), Some(2));
        let v2 = "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(parse_oom_kills(v2), Some(1));
        assert_eq!(parse_oom_kills("nothing 1"), None);
    }

    #[test]
    fn errors_become_error_frames() {
        let f = frame(Err("boom".into()));
        assert_eq!(&f[..], b"{\"error\":\"boom\"}\n");
    }
}
