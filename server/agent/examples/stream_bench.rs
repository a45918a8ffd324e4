//! Throughput and latency of the foreground `POST /command` stream.
//!
//! Serves the agent router on 127.0.0.1:0 and measures, from a reqwest client:
//! - MB/s of a command writing ~100 MB of ~1000-byte lines to stdout (command output
//!   bytes over the time from sending the request to the terminal event);
//! - time to the first event (`init`) and to the terminal event of `true`, for the
//!   very first command of a fresh agent and as p50/p90 over 50 runs.
//!
//! Run: `cargo run --release -p opensandbox-agent --example stream_bench [-- MB RUNS]`.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use axum::serve::ListenerExt;
use opensandbox_agent::{router, AgentConfig};
use serde_json::json;

/// What one streamed command cost, as the client saw it.
struct Timing {
    first_event: Duration,
    terminal: Duration,
    end: Duration,
    body_bytes: u64,
}

async fn run(client: &reqwest::Client, base: &str, command: &str) -> Result<Timing> {
    let started = Instant::now();
    let mut response = client
        .post(format!("{base}/command"))
        .json(&json!({ "command": command }))
        .send()
        .await
        .context("POST /command")?;
    if !response.status().is_success() {
        bail!("POST /command: status {}", response.status());
    }
    let mut first_event = None;
    let mut terminal = None;
    let mut body_bytes = 0u64;
    // Only the last bytes are kept: the terminal frame is the last one.
    let mut tail: Vec<u8> = Vec::with_capacity(8192);
    while let Some(chunk) = response.chunk().await.context("reading the stream")? {
        first_event.get_or_insert_with(|| started.elapsed());
        body_bytes += chunk.len() as u64;
        tail.extend_from_slice(&chunk);
        if tail.len() > 4096 {
            tail.drain(..tail.len() - 4096);
        }
        if terminal.is_none() && is_terminal(&tail) {
            terminal = Some(started.elapsed());
        }
    }
    let end = started.elapsed();
    let terminal = terminal.context("stream ended without a terminal event")?;
    Ok(Timing {
        first_event: first_event.unwrap_or(end),
        terminal,
        end,
        body_bytes,
    })
}

fn is_terminal(tail: &[u8]) -> bool {
    let text = String::from_utf8_lossy(tail);
    let last = text.trim_end().rsplit("\n\n").next().unwrap_or("");
    last.contains("\"type\":\"execution_complete\"") || last.contains("\"type\":\"error\"")
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let index = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[index.min(samples.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let megabytes: u64 = args.next().map_or(Ok(100), |a| a.parse()).context("MB")?;
    let runs: usize = args.next().map_or(Ok(50), |a| a.parse()).context("RUNS")?;

    let root = tempfile::tempdir().context("root tempdir")?;
    let work = tempfile::tempdir().context("work tempdir")?;
    let app = router(AgentConfig {
        root: root.path().to_path_buf(),
        workdir: work.path().to_path_buf(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    // STREAM_BENCH_NODELAY=1 serves with TCP_NODELAY, to tell Nagle's algorithm
    // (against the client's delayed ACK) apart from time spent in the agent.
    if std::env::var_os("STREAM_BENCH_NODELAY").is_some() {
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
    } else {
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
    }
    let client = reqwest::Client::new();

    let cold = run(&client, &base, "true").await?;
    println!(
        "first command `true`: first event {:.2} ms, terminal {:.2} ms, stream end {:.2} ms",
        ms(cold.first_event),
        ms(cold.terminal),
        ms(cold.end)
    );

    let mut firsts = Vec::with_capacity(runs);
    let mut terminals = Vec::with_capacity(runs);
    let mut ends = Vec::with_capacity(runs);
    for _ in 0..runs {
        let timing = run(&client, &base, "true").await?;
        firsts.push(timing.first_event);
        terminals.push(timing.terminal);
        ends.push(timing.end);
    }
    println!(
        "`true` x{runs}: first event p50 {:.2} ms p90 {:.2} ms; terminal p50 {:.2} ms p90 {:.2} ms; end p50 {:.2} ms",
        ms(percentile(&mut firsts, 0.5)),
        ms(percentile(&mut firsts, 0.9)),
        ms(percentile(&mut terminals, 0.5)),
        ms(percentile(&mut terminals, 0.9)),
        ms(percentile(&mut ends, 0.5)),
    );

    let bytes = megabytes * 1_000_000;
    let command = format!("yes $(head -c 999 /dev/zero | tr '\\0' x) | head -c {bytes}");
    for attempt in 1..=3 {
        let timing = run(&client, &base, &command).await?;
        let secs = timing.terminal.as_secs_f64();
        println!(
            "{megabytes} MB of 1000-byte lines #{attempt}: {:.1} MB/s ({:.2} s, {} body bytes, first event {:.2} ms)",
            bytes as f64 / secs / 1e6,
            secs,
            timing.body_bytes,
            ms(timing.first_event)
        );
    }
    Ok(())
}
