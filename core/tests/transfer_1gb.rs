//! 1 GB upload and download through the stub in constant memory. Alone in its own test
//! binary so that no other test's allocations disturb the peak-RSS measurement.
//! Set OPENSANDBOX_TRANSFER_MB to change the size (e.g. 64 for a quick run).

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use futures_util::StreamExt;
use opensandbox_core::models::ReadOptions;
use opensandbox_core::{Sandbox, SandboxCreateOptions, WriteData, WriteEntry};
use sha2::{Digest, Sha256};

/// Peak-RSS growth allowed for a 1 GB transfer.
const MAX_GROWTH_KB: u64 = 64 * 1024;

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux: write 5 to clear_refs).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn size() -> u64 {
    std::env::var("OPENSANDBOX_TRANSFER_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1024)
        * 1024
        * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gigabyte_up_and_down_in_constant_memory() {
    let len = size();
    let stub = common::start().await;
    let sbx = Sandbox::create(stub.config(), SandboxCreateOptions::image("x"))
        .await
        .expect("create");
    // Warm up the connection pool and allocator so the baseline is fair.
    sbx.execd()
        .write_file("/warm", "x")
        .await
        .expect("warm-up upload");

    let peak_resettable = reset_peak();
    let base = status_kb("VmRSS:");
    let t = std::time::Instant::now();
    sbx.execd()
        .write_files(vec![WriteEntry::new(
            "/big.bin",
            WriteData::Reader {
                reader: Box::new(common::Gen::new(42, len)),
                len: Some(len),
            },
        )])
        .await
        .expect("upload");
    let up_secs = t.elapsed().as_secs_f64();

    let t = std::time::Instant::now();
    let mut s = sbx
        .execd()
        .read_bytes_stream(&format!("/gen/42/{len}"), &ReadOptions::default())
        .await
        .expect("download");
    let mut sha = Sha256::new();
    let mut got = 0u64;
    while let Some(chunk) = s.next().await {
        let chunk = chunk.expect("chunk");
        got += chunk.len() as u64;
        sha.update(&chunk);
    }
    let down_secs = t.elapsed().as_secs_f64();
    let peak = if peak_resettable {
        status_kb("VmHWM:")
    } else {
        status_kb("VmRSS:")
    };
    let growth = peak.saturating_sub(base);
    let mb = len as f64 / 1e6;
    println!(
        "transfer {} MiB: upload {:.0} MB/s, download {:.0} MB/s, peak RSS growth {} KiB (baseline {} KiB)",
        len >> 20,
        mb / up_secs,
        mb / down_secs,
        growth,
        base
    );

    let want = common::gen_sha(42, len);
    let uploaded = stub.state.uploads.lock().expect("lock")["/big.bin"].clone();
    assert_eq!(uploaded, (want.clone(), len), "upload arrived intact");
    assert_eq!(got, len);
    assert_eq!(
        common::hex(&sha.finalize()),
        want,
        "download arrived intact"
    );
    assert!(
        growth < MAX_GROWTH_KB,
        "peak RSS grew by {growth} KiB during the transfer (limit {MAX_GROWTH_KB} KiB)"
    );
}
