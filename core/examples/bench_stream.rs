//! Throughput figures against a running server: stdout streaming and file transfer.
//!
//! `OPEN_SANDBOX_DOMAIN=127.0.0.1:8080 OPEN_SANDBOX_API_KEY=... \
//! cargo run --release -p opensandbox-core --example bench_stream [MB]`

use std::time::Instant;

use futures_util::StreamExt;
use opensandbox_core::models::{ReadOptions, RunCommandOptions};
use opensandbox_core::{
    ConnectionConfig, ExecutionHandlers, OutputMessage, RunControl, Sandbox, SandboxCreateOptions,
    WriteData, WriteEntry,
};

/// Counts bytes without keeping them.
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mb: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100);
    let sandbox = Sandbox::create(
        ConnectionConfig::new(),
        SandboxCreateOptions::image("bench"),
    )
    .await?;
    let x = sandbox.execd();

    let cmd = format!(
        "head -c {} /dev/zero | base64 -w 76",
        mb * 1024 * 1024 * 3 / 4
    );
    let mut count = Count(0);
    let t = Instant::now();
    x.run_command(
        &cmd,
        &RunCommandOptions::default(),
        RunControl::default(),
        &mut count,
    )
    .await?;
    let s = t.elapsed().as_secs_f64();
    println!(
        "stdout stream: {} MB in {s:.2} s = {:.0} MB/s",
        count.0 / 1_000_000,
        count.0 as f64 / 1e6 / s
    );

    let len = mb * 1024 * 1024;
    let t = Instant::now();
    x.write_files(vec![WriteEntry::new(
        "/tmp/bench.bin",
        WriteData::Reader {
            reader: Box::new(tokio::io::repeat(7).take_len(len)),
            len: Some(len),
        },
    )])
    .await?;
    let s = t.elapsed().as_secs_f64();
    println!("upload: {:.0} MB/s", len as f64 / 1e6 / s);

    let t = Instant::now();
    let mut got = 0u64;
    let mut stream = x
        .read_bytes_stream("/tmp/bench.bin", &ReadOptions::default())
        .await?;
    while let Some(chunk) = stream.next().await {
        got += chunk?.len() as u64;
    }
    let s = t.elapsed().as_secs_f64();
    println!("download: {:.0} MB/s ({got} bytes)", got as f64 / 1e6 / s);

    sandbox.kill().await?;
    Ok(())
}

/// `AsyncReadExt::take` under a name that does not clash with `StreamExt`.
trait TakeLen: tokio::io::AsyncRead + Sized {
    fn take_len(self, len: u64) -> tokio::io::Take<Self> {
        tokio::io::AsyncReadExt::take(self, len)
    }
}

impl<R: tokio::io::AsyncRead> TakeLen for R {}
