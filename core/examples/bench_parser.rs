//! Offline throughput of the event-stream parser and Execution builder: 100 MB of
//! execd-style stdout frames, fed in 64 KiB chunks, no network involved.
//!
//! `cargo run --release -p opensandbox-core --example bench_parser [MB]`

use std::time::Instant;

use bytes::Bytes;
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

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let mut wire = Vec::with_capacity(mb * 1024 * 1024 + 4096);
    wire.extend_from_slice(b"{\"type\":\"init\",\"text\":\"bench\",\"timestamp\":1}\n\n");
    let line = "x".repeat(76);
    while wire.len() < mb * 1024 * 1024 {
        wire.extend_from_slice(b"{\"type\":\"stdout\",\"text\":\"");
        wire.extend_from_slice(line.as_bytes());
        wire.extend_from_slice(b"\",\"timestamp\":1718000000102}\n\n");
    }
    wire.extend_from_slice(b"{\"type\":\"execution_complete\",\"execution_time\":1}\n\n");
    let wire = Bytes::from(wire);
    let chunks: Vec<Result<Bytes, std::io::Error>> = (0..wire.len())
        .step_by(64 * 1024)
        .map(|i| Ok(wire.slice(i..(i + 64 * 1024).min(wire.len()))))
        .collect();
    let stream = EventStream::from_bytes(
        "bench",
        ExecutionKind::Command,
        futures_util::stream::iter(chunks),
    );
    let mut count = Count(0);
    let t = Instant::now();
    let ex = collect_execution(stream, &mut count).await?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "parser: {} MB of frames ({} MB of stdout) in {secs:.2} s = {:.0} MB/s of wire, exit {:?}",
        wire.len() / 1_000_000,
        count.0 / 1_000_000,
        wire.len() as f64 / 1e6 / secs,
        ex.exit_code
    );
    Ok(())
}
