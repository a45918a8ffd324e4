//! Offline throughput of the event-stream parser and Execution builder: execd-style
//! stdout frames (76-char lines, as `base64 -w 76` prints), fed in 64 KiB chunks, no
//! network involved. Prints MB/s of wire for three consumers:
//!
//! - `skip`: `collect_execution` with a counting handler and `skip_accumulation`;
//! - `keep`: `collect_execution` with no handlers, keeping every line in `logs`;
//! - `events`: iterating the `EventStream` directly, as the bindings do.
//!
//! `cargo run --release -p opensandbox-core --example bench_parser [MB] [skip|keep|events|none]`
//! (`none` only builds the input: subtract it from a callgrind count of the others).

use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use opensandbox_core::{
    stream::collect_execution, EventStream, ExecutionHandlers, ExecutionKind, OutputMessage,
};

struct Count(u64);

impl ExecutionHandlers for Count {
    fn on_stdout(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
        self.0 += m.text.len() as u64 + 1;
        Ok(())
    }
    fn skip_accumulation(&self) -> bool {
        true
    }
}

fn wire(mb: usize) -> Bytes {
    let mut wire = Vec::with_capacity(mb * 1024 * 1024 + 4096);
    wire.extend_from_slice(b"{\"type\":\"init\",\"text\":\"bench\",\"timestamp\":1}\n\n");
    let line = "x".repeat(76);
    while wire.len() < mb * 1024 * 1024 {
        wire.extend_from_slice(b"{\"type\":\"stdout\",\"text\":\"");
        wire.extend_from_slice(line.as_bytes());
        wire.extend_from_slice(b"\",\"timestamp\":1718000000102}\n\n");
    }
    wire.extend_from_slice(b"{\"type\":\"execution_complete\",\"execution_time\":1}\n\n");
    Bytes::from(wire)
}

fn stream_over(wire: &Bytes) -> EventStream {
    let chunks: Vec<Result<Bytes, std::io::Error>> = (0..wire.len())
        .step_by(64 * 1024)
        .map(|i| Ok(wire.slice(i..(i + 64 * 1024).min(wire.len()))))
        .collect();
    EventStream::from_bytes(
        "bench",
        ExecutionKind::Command,
        futures_util::stream::iter(chunks),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let modes: Vec<String> = match args.next() {
        Some(m) => vec![m],
        None => ["skip", "keep", "events"].map(String::from).to_vec(),
    };
    let wire = wire(mb);
    for mode in modes {
        let stream = stream_over(&wire);
        let t = Instant::now();
        let (lines, exit) = match mode.as_str() {
            "skip" => {
                let mut count = Count(0);
                let ex = collect_execution(stream, &mut count).await?;
                (count.0 / 77, ex.exit_code)
            }
            "keep" => {
                let ex = collect_execution(stream, &mut ()).await?;
                (ex.logs.stdout.len() as u64, ex.exit_code)
            }
            "events" => {
                let mut stream = stream;
                let mut n = 0;
                while let Some(ev) = stream.next().await {
                    ev?;
                    n += 1;
                }
                (n - 2, None)
            }
            "none" => continue,
            other => return Err(format!("unknown mode {other}").into()),
        };
        let secs = t.elapsed().as_secs_f64();
        println!(
            "parser {mode:>6}: {} MB of frames, {lines} lines in {secs:.3} s = {:.0} MB/s of wire (exit {exit:?})",
            wire.len() / 1_000_000,
            wire.len() as f64 / 1e6 / secs,
        );
    }
    Ok(())
}
