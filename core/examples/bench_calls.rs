//! Per-call cost of small calls: how a blocking binding waits for the core.
//!
//! `files.get_file_info` and `run("true")` against a running server, p50 / p95 in ms,
//! for each way a plain (non-runtime) thread can wait for a request, and curl on one
//! kept-alive connection for reference (as scripts/bench/limit.py):
//!
//! - `async`: the calls awaited one after another inside one task of the shared runtime
//!   (no thread hand-off at all: what a Rust user of the core gets);
//! - `worker`: `runtime::block_on_worker` per call (what the blocking bindings do: the
//!   caller wakes a worker, the worker wakes the caller);
//! - `block_on`: `runtime().block_on` per call (the future on the caller, the I/O driver
//!   on a worker: a hand-off at every step);
//! - `local`: a current-thread runtime owned by the calling thread, with its own
//!   connection pool (its connections are driven only while the thread is in a call);
//! - `request`: `runtime::block_on_request` per call (the same, as the bindings get
//!   it: the thread's own runtime, and the config's requests on the thread's own pool);
//! - `spin-N`: `worker`, but the caller spins N µs on the outcome before parking;
//! - `1worker`: `worker` on a second runtime with one worker thread (own pool);
//! - `curl`: the same requests from one curl process.
//!
//! Variants run interleaved, in a rotated order each round; the summary gives, per
//! variant, the median over rounds of each round's p50 (and the min–max of those p50s)
//! and the median of the p95s.
//!
//! `scripts/with-server.sh target/release/opensandbox-server \
//!  target/release/examples/bench_calls [ROUNDS [INFO_CALLS [RUN_CALLS [VARIANTS]]]]`
//! (VARIANTS: comma-separated names; default all).

use std::future::Future;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opensandbox_core::execd::ExecdClient;
use opensandbox_core::models::RunCommandOptions;
use opensandbox_core::runtime;
use opensandbox_core::{ConnectionConfig, RunControl, Sandbox, SandboxCreateOptions};
use tokio::runtime::Runtime;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Res = Result<(), BoxError>;

const PROBE: &str = "/tmp/bench-calls.txt";
const INFO_WARMUP: usize = 20;
const RUN_WARMUP: usize = 5;

/// One request, as a `'static` future (so that it can be spawned).
fn info(x: &ExecdClient) -> impl Future<Output = Res> + Send + 'static {
    let x = x.clone();
    async move {
        x.get_file_info(&[PROBE]).await?;
        Ok(())
    }
}

fn run_true(x: &ExecdClient) -> impl Future<Output = Res> + Send + 'static {
    let x = x.clone();
    async move {
        x.run_command(
            "true",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut (),
        )
        .await?;
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Info,
    Run,
    /// No request at all: the cost of the hand-off alone.
    Noop,
}

impl Op {
    fn fut(self, x: &ExecdClient) -> std::pin::Pin<Box<dyn Future<Output = Res> + Send>> {
        match self {
            Op::Info => Box::pin(info(x)),
            Op::Run => Box::pin(run_true(x)),
            Op::Noop => Box::pin(async { Ok(()) }),
        }
    }
}

/// `block_on_worker` with a caller that spins `spin` on the outcome before parking: a
/// spinning caller is woken by a store, not by the scheduler.
fn block_on_spin<F>(rt: &Runtime, spin: Duration, f: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    struct Slot<T> {
        done: AtomicBool,
        value: Mutex<Option<T>>,
        waiter: std::thread::Thread,
    }
    let slot = Arc::new(Slot {
        done: AtomicBool::new(false),
        value: Mutex::new(None),
        waiter: std::thread::current(),
    });
    let s = slot.clone();
    rt.spawn(async move {
        let v = f.await;
        *s.value.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
        s.done.store(true, Ordering::Release);
        s.waiter.unpark();
    });
    let t0 = Instant::now();
    loop {
        if slot.done.load(Ordering::Acquire) {
            if let Some(v) = slot.value.lock().unwrap_or_else(|e| e.into_inner()).take() {
                return v;
            }
        }
        if t0.elapsed() < spin {
            std::hint::spin_loop();
        } else {
            std::thread::park();
        }
    }
}

/// How a variant waits for one call.
enum Way {
    Async,
    Worker,
    BlockOn,
    Local(Runtime, ExecdClient),
    Request,
    Spin(Duration),
    OneWorker(Runtime, ExecdClient),
    Curl,
}

struct Variant {
    name: String,
    way: Way,
    /// Per round: (info p50, info p95, run p50, run p95, no-op p50).
    rounds: Vec<[f64; 5]>,
}

fn samples(
    way: &Way,
    x: &ExecdClient,
    curl: &CurlArgs,
    op: Op,
    n: usize,
) -> Result<Vec<f64>, BoxError> {
    let rt = runtime::runtime();
    let one = |f: &mut dyn FnMut() -> Res| -> Result<Vec<f64>, BoxError> {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            f()?;
            v.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(v)
    };
    match way {
        Way::Async => {
            let x = x.clone();
            rt.block_on(rt.spawn(async move {
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let t = Instant::now();
                    op.fut(&x).await?;
                    v.push(t.elapsed().as_secs_f64() * 1e3);
                }
                Ok::<_, BoxError>(v)
            }))?
        }
        Way::Worker => one(&mut || runtime::block_on_worker(op.fut(x))?),
        Way::BlockOn => one(&mut || rt.block_on(op.fut(x))),
        Way::Local(lrt, lx) => one(&mut || lrt.block_on(op.fut(lx))),
        Way::Request => one(&mut || runtime::block_on_request(op.fut(x))?),
        Way::Spin(d) => one(&mut || block_on_spin(rt, *d, op.fut(x))),
        Way::OneWorker(wrt, wx) => one(&mut || wrt.block_on(wrt.spawn(op.fut(wx)))?),
        Way::Curl => curl.times(op, n),
    }
}

/// The curl command lines of the two requests (one process, one connection each).
struct CurlArgs {
    base: String,
    headers: Vec<String>,
}

impl CurlArgs {
    fn times(&self, op: Op, n: usize) -> Result<Vec<f64>, BoxError> {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--fail"]);
        for h in &self.headers {
            cmd.args(["-H", h]);
        }
        let url = match op {
            Op::Info => format!("{}/files/info?path=%2Ftmp%2Fbench-calls.txt", self.base),
            Op::Noop => return Ok(vec![0.0; n]),
            Op::Run => {
                cmd.args([
                    "-X",
                    "POST",
                    "-H",
                    "Content-Type: application/json",
                    "-d",
                    r#"{"command":"true"}"#,
                ]);
                format!("{}/command", self.base)
            }
        };
        cmd.args(["-w", "%{time_total}\\n"]);
        for _ in 0..n {
            cmd.args([url.as_str(), "-o", "/dev/null"]);
        }
        let out = cmd.output()?;
        if !out.status.success() {
            return Err(format!("curl: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        let text = String::from_utf8(out.stdout)?;
        Ok(text
            .lines()
            .filter_map(|l| l.trim().parse::<f64>().ok())
            .map(|s| s * 1e3)
            .collect())
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i.min(v.len() - 1)]
}

fn median(mut v: Vec<f64>) -> f64 {
    pct(&mut v, 0.5)
}

/// A config with its own connection pool (any change resets the pool).
fn own_pool(c: &ConnectionConfig) -> ConnectionConfig {
    c.clone().with_user_agent(c.user_agent().to_owned())
}

fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let info_calls: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let run_calls: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let only: Option<Vec<String>> = args
        .next()
        .map(|s| s.split(',').map(str::to_owned).collect());

    let rt = runtime::runtime();
    let config = ConnectionConfig::new();
    let sandbox = rt.block_on(Sandbox::create(
        config.clone(),
        SandboxCreateOptions::image("bench"),
    ))?;
    let x = sandbox.execd().clone();
    rt.block_on(x.write_file(PROBE, "x"))?;
    let endpoint = sandbox.execd_endpoint().clone();

    let mut headers: Vec<String> = x
        .endpoint_headers()
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    if let Some(key) = config.api_key() {
        headers.push(format!("OPEN-SANDBOX-API-KEY: {key}"));
    }
    let curl = CurlArgs {
        base: x.base_url().trim_end_matches('/').to_owned(),
        headers,
    };

    let local_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local_x = ExecdClient::new(own_pool(&config), &endpoint)?;
    let one_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let one_x = ExecdClient::new(own_pool(&config), &endpoint)?;

    let mut variants: Vec<Variant> = vec![
        ("async", Way::Async),
        ("worker", Way::Worker),
        ("block_on", Way::BlockOn),
        ("local", Way::Local(local_rt, local_x)),
        ("request", Way::Request),
        ("spin-50", Way::Spin(Duration::from_micros(50))),
        ("spin-300", Way::Spin(Duration::from_micros(300))),
        ("spin-2000", Way::Spin(Duration::from_micros(2000))),
        ("1worker", Way::OneWorker(one_rt, one_x)),
        ("curl", Way::Curl),
    ]
    .into_iter()
    .filter(|(n, _)| only.as_ref().is_none_or(|o| o.iter().any(|s| s == n)))
    .map(|(n, way)| Variant {
        name: n.to_owned(),
        way,
        rounds: Vec::new(),
    })
    .collect();

    let count = variants.len();
    for round in 0..rounds {
        for k in 0..count {
            let v = &mut variants[(k + round) % count];
            let mut i = samples(&v.way, &x, &curl, Op::Info, info_calls + INFO_WARMUP)?;
            let mut i = i.split_off(INFO_WARMUP.min(i.len()));
            let mut r = samples(&v.way, &x, &curl, Op::Run, run_calls + RUN_WARMUP)?;
            let mut r = r.split_off(RUN_WARMUP.min(r.len()));
            let mut z = samples(&v.way, &x, &curl, Op::Noop, info_calls)?;
            let fig = [
                pct(&mut i, 0.5),
                pct(&mut i, 0.95),
                pct(&mut r, 0.5),
                pct(&mut r, 0.95),
                pct(&mut z, 0.5),
            ];
            println!(
                "round {round} {:<10} info p50 {:.3} p95 {:.3}  run p50 {:.3} p95 {:.3}  no-op p50 {:.4}",
                v.name, fig[0], fig[1], fig[2], fig[3], fig[4]
            );
            v.rounds.push(fig);
        }
    }

    println!("\nmedians over {rounds} rounds (ms; p50 min-max in brackets)");
    println!(
        "{:<10} {:>22} {:>9} {:>22} {:>9} {:>10}",
        "variant", "info p50", "info p95", "run p50", "run p95", "no-op p50"
    );
    for v in &variants {
        let col = |j: usize| v.rounds.iter().map(|f| f[j]).collect::<Vec<_>>();
        let span = |j: usize| {
            let c = col(j);
            let lo = c.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{:.3} [{lo:.3}-{hi:.3}]", median(c))
        };
        println!(
            "{:<10} {:>22} {:>9.3} {:>22} {:>9.3} {:>10.4}",
            v.name,
            span(0),
            median(col(1)),
            span(2),
            median(col(3)),
            median(col(4))
        );
    }

    rt.block_on(sandbox.kill())?;
    Ok(())
}
