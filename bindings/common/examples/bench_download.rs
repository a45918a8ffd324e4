//! Download throughput split by layer, interleaved on one sandbox and one file:
//!
//! - `curl`: `GET /files/download` into /dev/null (the wire's rate, as
//!   scripts/bench/limit.py measures it);
//! - `core`: the core's chunk stream, each chunk dropped (core + reqwest/hyper);
//! - `host`: `download.open` and [`Session::download_read_parts`] of 1 MiB copied into
//!   one reused buffer, on the shared binding runtime: what the Go/C, Java and Python
//!   hosts do, without any host language;
//! - `worker`: the same reads, each run on a runtime worker (`block_on_worker`), so the
//!   calling thread is woken once per read rather than once per network chunk;
//! - `driven`: the download opened and read as the blocking hosts do now
//!   (`block_on_op`, `block_on_read`): on a driver of its own, each read doing the
//!   socket reads on the calling thread.
//!
//! `OPEN_SANDBOX_DOMAIN=127.0.0.1:8080 OPEN_SANDBOX_API_KEY=... \
//! cargo run --release -p opensandbox-bindings --example bench_download [MiB] [rounds]`
//! (or under `scripts/with-server.sh`). Prints one line per run and the medians
//! (MB = 10^6 bytes). A benchmark, not a test.

use std::process::Command;
use std::time::Instant;

use futures_util::StreamExt;
use opensandbox_bindings::Session;
use opensandbox_core::models::ReadOptions;
use opensandbox_core::{runtime, ConnectionConfig, Sandbox};
use serde_json::json;

const PATH: &str = "/tmp/bench/download.bin";
/// What each host read asks for (the Python and Go packages' read size).
const HOST_READ: usize = 1 << 20;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// CPU seconds (user + system), minor page faults and context switches of this
/// process, or of its waited-for children (curl).
fn usage(who: libc::c_int) -> (f64, i64, i64) {
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `u` is a valid, writable rusage.
    unsafe { libc::getrusage(who, &mut u) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        secs(u.ru_utime) + secs(u.ru_stime),
        u.ru_minflt,
        u.ru_nvcsw + u.ru_nivcsw,
    )
}

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3);
    let size = mib << 20;
    let s = std::sync::Arc::new(Session::new());
    let rt = runtime::runtime();

    let opened = rt.block_on(s.call("sandbox.create", json!({"image": "bench"})))?;
    let id = opened["id"].as_str().unwrap_or_default().to_owned();
    let handle = opened["handle"].as_u64().unwrap_or_default();
    let data = bytes::Bytes::from((0..size).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    rt.block_on(s.write_bytes(json!({"sandbox": handle, "path": PATH}), data))?;
    let ep = rt.block_on(s.call(
        "sandbox.get_endpoint",
        json!({"sandbox": handle, "port": 44772}),
    ))?;
    let base = ep["endpoint"].as_str().unwrap_or_default().to_owned();
    let url = format!("http://{base}/files/download?path=%2Ftmp%2Fbench%2Fdownload.bin");
    let mut curl_args = vec!["-sS".to_owned(), "--fail".to_owned()];
    if let Some(h) = ep["headers"].as_object() {
        for (k, v) in h {
            curl_args.push("-H".into());
            curl_args.push(format!("{k}: {}", v.as_str().unwrap_or_default()));
        }
    }
    let sandbox = rt.block_on(Sandbox::connect(
        ConnectionConfig::new(),
        &id,
        Default::default(),
    ))?;

    let mut figures: Vec<(&str, Vec<f64>)> = vec![
        ("curl", vec![]),
        ("core", vec![]),
        ("host", vec![]),
        ("worker", vec![]),
        ("driven", vec![]),
    ];
    for round in 0..rounds {
        for (name, runs) in figures.iter_mut() {
            let who = if *name == "curl" {
                libc::RUSAGE_CHILDREN
            } else {
                libc::RUSAGE_SELF
            };
            let before = usage(who);
            let (secs, got, reads) = match *name {
                "curl" => {
                    let out = Command::new("curl")
                        .args(&curl_args)
                        .args([
                            "-o",
                            "/dev/null",
                            "-w",
                            "%{time_total} %{size_download}",
                            &url,
                        ])
                        .output()?;
                    let text = String::from_utf8_lossy(&out.stdout).into_owned();
                    let mut it = text.split_whitespace();
                    let t: f64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
                    let n: usize = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                    (t, n, 0)
                }
                "core" => rt.block_on(async {
                    let t = Instant::now();
                    let mut st = sandbox
                        .execd()
                        .read_bytes_stream(PATH, &ReadOptions::default())
                        .await?;
                    let (mut n, mut reads) = (0usize, 0usize);
                    while let Some(c) = st.next().await {
                        n += c?.len();
                        reads += 1;
                    }
                    Ok::<_, Box<dyn std::error::Error>>((t.elapsed().as_secs_f64(), n, reads))
                })?,
                _ => {
                    let mut buf = vec![0u8; HOST_READ];
                    let t = Instant::now();
                    let open_args = json!({"sandbox": handle, "path": PATH});
                    let h = if *name == "driven" {
                        let s2 = s.clone();
                        opensandbox_bindings::block_on_op(
                            rt.handle(),
                            &s,
                            "download.open",
                            async move { s2.call("download.open", open_args).await },
                        )??
                    } else {
                        rt.block_on(s.call("download.open", open_args))?
                    };
                    let h = h["handle"].as_u64().unwrap_or_default();
                    let (mut n, mut reads) = (0usize, 0usize);
                    loop {
                        let parts = if *name == "driven" {
                            opensandbox_bindings::block_on_read(
                                rt.handle(),
                                &s,
                                h,
                                s.download_read_parts(h, HOST_READ),
                            )?
                        } else if *name == "worker" {
                            let s = s.clone();
                            runtime::block_on_worker(async move {
                                s.download_read_parts(h, HOST_READ).await
                            })??
                        } else {
                            rt.block_on(s.download_read_parts(h, HOST_READ))?
                        };
                        if parts.is_empty() {
                            break;
                        }
                        let mut at = 0;
                        for p in &parts {
                            buf[at..at + p.len()].copy_from_slice(p);
                            at += p.len();
                        }
                        n += at;
                        reads += 1;
                    }
                    let secs = t.elapsed().as_secs_f64();
                    rt.block_on(s.call("release", json!({"handle": h})))?;
                    (secs, n, reads)
                }
            };
            if got != size {
                return Err(format!("{name}: {got} of {size} bytes").into());
            }
            let after = usage(who);
            let rate = size as f64 / 1e6 / secs;
            println!(
                "round {round} {name}: {rate:.0} MB/s ({reads} reads/chunks, client CPU {:.0} ms, {} minor faults, {} context switches)",
                (after.0 - before.0) * 1e3,
                after.1 - before.1,
                after.2 - before.2
            );
            runs.push(rate);
        }
    }
    for (name, mut runs) in figures {
        runs.sort_by(f64::total_cmp);
        println!(
            "{name}: median {:.0} MB/s (min {:.0}, max {:.0})",
            runs[runs.len() / 2],
            runs[0],
            runs[runs.len() - 1]
        );
    }
    rt.block_on(s.call("sandbox.kill", json!({"sandbox": handle})))?;
    Ok(())
}
