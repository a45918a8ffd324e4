//! `/metrics` and `/metrics/watch` of a sandbox under an OCI runtime, answered by the
//! server from the sandbox's cgroup on the host instead of by the agent.
//!
//! Why host-side: the agent runs inside the sandbox as the sandbox's root, so
//! anything it reports can be forged by the sandbox (replace the agent's answer by
//! taking over the socket's accept loop, or fake a `/proc`). The cgroup files under
//! the host's `/sys/fs/cgroup/<controller>/opensandbox/<id>/` are written by the
//! kernel and readable only outside the sandbox (its `/sys/fs/cgroup` is a read-only
//! view of its own cgroup namespace). Same `Metrics` shape as the agent's:
//! - `mem_total_mib`: the memory limit; `mem_used_mib`: usage minus inactive page
//!   cache (what counts towards an OOM kill, as `docker stats` shows);
//! - `cpu_count`: the CPUs the quota allows (quota / period: `cpu: "500m"` → 0.5);
//! - `cpu_used_pct`: CPU time used over a 200 ms sample, as a percentage of that
//!   allowance (100 = the sandbox uses all it may).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};

use opensandbox_agent::metrics::Metrics;

use super::OciRuntime;

const CPU_SAMPLE: Duration = Duration::from_millis(200);

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// One sample of sandbox `id` (waits [`CPU_SAMPLE`]).
pub async fn sample(oci: &OciRuntime, id: &str) -> Result<Metrics, String> {
    let t0 = Instant::now();
    let u0 = oci.usage(id).map_err(|e| format!("{e:#}"))?;
    tokio::time::sleep(CPU_SAMPLE).await;
    let u1 = oci.usage(id).map_err(|e| format!("{e:#}"))?;
    let wall_ns = t0.elapsed().as_nanos() as f64;
    let used_ns = u1.cpu_ns.saturating_sub(u0.cpu_ns) as f64;
    let allowance = wall_ns * u1.cpu_count.max(0.01);
    let mib = |b: u64| round2(b as f64 / (1024.0 * 1024.0));
    Ok(Metrics {
        cpu_count: round2(u1.cpu_count),
        cpu_used_pct: round2((used_ns * 100.0 / allowance).min(100.0)),
        mem_total_mib: mib(u1.memory_limit),
        mem_used_mib: mib(u1.memory_used),
        timestamp: chrono::Utc::now().timestamp_millis(),
    })
}

/// `GET /metrics` (one JSON object) or `GET /metrics/watch` (NDJSON frames until the
/// client goes away), in the agent's wire format.
pub async fn respond(oci: Arc<OciRuntime>, id: String, watch: bool) -> Response {
    if !watch {
        return match sample(&oci, &id).await {
            Ok(m) => axum::Json(m).into_response(),
            Err(e) => super::super::error::ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "RUNTIME_ERROR",
                format!("reading the metrics of sandbox {id}: {e}"),
            )
            .into_response(),
        };
    }
    opensandbox_agent::metrics::watch_response(move || {
        let (oci, id) = (oci.clone(), id.clone());
        async move { sample(&oci, &id).await }
    })
}
