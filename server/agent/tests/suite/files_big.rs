//! Large transfers: upload and download stream through the agent intact.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::files_support;

use std::time::Instant;

use files_support::{metadata_part, start, Agent, Noise};
use futures::StreamExt;
use sha2::{Digest, Sha256};

const MIB: usize = 1024 * 1024;

fn noise_stream(
    seed: u64,
    total: usize,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    futures::stream::unfold((Noise::new(seed), total), |(mut noise, left)| async move {
        if left == 0 {
            return None;
        }
        let mut chunk = vec![0u8; left.min(MIB)];
        noise.fill(&mut chunk);
        let n = chunk.len();
        Some((Ok(chunk), (noise, left - n)))
    })
}

fn expected_digest(seed: u64, total: usize) -> Vec<u8> {
    let mut noise = Noise::new(seed);
    let mut hasher = Sha256::new();
    let mut left = total;
    let mut chunk = vec![0u8; MIB];
    while left > 0 {
        let n = left.min(MIB);
        noise.fill(&mut chunk[..n]);
        hasher.update(&chunk[..n]);
        left -= n;
    }
    hasher.finalize().to_vec()
}

async fn upload_noise(agent: &Agent, path: &str, seed: u64, total: usize) -> reqwest::Response {
    let body = reqwest::Body::wrap_stream(noise_stream(seed, total));
    let part = reqwest::multipart::Part::stream_with_length(body, total as u64)
        .file_name("big.bin")
        .mime_str("application/octet-stream")
        .unwrap();
    let form = reqwest::multipart::Form::new()
        .part(
            "metadata",
            metadata_part(serde_json::json!({"path": path, "mode": 644})),
        )
        .part("file", part);
    agent
        .client
        .post(agent.url("/files/upload"))
        .multipart(form)
        .send()
        .await
        .unwrap()
}

/// Downloads and hashes chunk by chunk; returns (digest, bytes).
async fn download_digest(agent: &Agent, path: &str) -> (Vec<u8>, usize) {
    let resp = agent
        .client
        .get(agent.url("/files/download"))
        .query(&[("path", path)])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut hasher = Sha256::new();
    let mut n = 0;
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        n += chunk.len();
        hasher.update(&chunk);
    }
    (hasher.finalize().to_vec(), n)
}

#[tokio::test]
async fn hundred_megabytes_round_trip_with_sha256() {
    let agent = start().await;
    let total = 100 * MIB;
    let resp = upload_noise(&agent, "/workspace/big.bin", 7, total).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    assert_eq!(
        std::fs::metadata(agent.host("/workspace/big.bin"))
            .unwrap()
            .len(),
        total as u64
    );
    let (digest, n) = download_digest(&agent, "/workspace/big.bin").await;
    assert_eq!(n, total);
    assert_eq!(digest, expected_digest(7, total));

    // A range from the middle of the big file matches the generator too.
    let resp = agent
        .client
        .get(agent.url("/files/download?path=/workspace/big.bin"))
        .header("range", format!("bytes={}-{}", 50 * MIB, 50 * MIB + 99))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 206);
    let got = resp.bytes().await.unwrap();
    let mut all = vec![0u8; 51 * MIB];
    Noise::new(7).fill(&mut all);
    assert_eq!(&got[..], &all[50 * MIB..50 * MIB + 100]);
}

/// Throughput figure (printed, not asserted): `cargo test -p opensandbox-agent --test
/// files_big -- --ignored --nocapture`. The payload is generated before the clock
/// starts so the figure is the transfer, not the generator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn bench_256_mib_upload_and_download() {
    let agent = start().await;
    let total = 256 * MIB;
    let mut noise = Noise::new(11);
    let chunks: Vec<bytes::Bytes> = (0..total / MIB)
        .map(|_| {
            let mut c = vec![0u8; MIB];
            noise.fill(&mut c);
            bytes::Bytes::from(c)
        })
        .collect();
    let body = reqwest::Body::wrap_stream(futures::stream::iter(
        chunks.into_iter().map(Ok::<_, std::io::Error>),
    ));
    let part = reqwest::multipart::Part::stream_with_length(body, total as u64).file_name("b");
    let form = reqwest::multipart::Form::new()
        .part(
            "metadata",
            metadata_part(serde_json::json!({"path": "/workspace/bench.bin"})),
        )
        .part("file", part);
    let started = Instant::now();
    let resp = agent
        .client
        .post(agent.url("/files/upload"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let up = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let resp = agent
        .client
        .get(agent.url("/files/download?path=/workspace/bench.bin"))
        .send()
        .await
        .unwrap();
    let mut n = 0;
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        n += chunk.unwrap().len();
    }
    let down = started.elapsed().as_secs_f64();
    assert_eq!(n, total);
    println!(
        "256 MiB over loopback HTTP: upload {:.0} MB/s (incl. fsync), download {:.0} MB/s",
        total as f64 / 1e6 / up,
        total as f64 / 1e6 / down
    );
}
