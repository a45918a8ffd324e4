//! `/metrics` and `/metrics/watch`.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::files_support;

use std::time::Duration;

use files_support::start;
use futures::StreamExt;
use serde_json::Value;

fn check_shape(v: &Value) {
    for key in ["cpu_count", "cpu_used_pct", "mem_total_mib", "mem_used_mib"] {
        assert!(v[key].is_number(), "{key} in {v}");
    }
    assert!(v["cpu_count"].as_f64().unwrap() >= 1.0);
    let pct = v["cpu_used_pct"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&pct), "{pct}");
    let total = v["mem_total_mib"].as_f64().unwrap();
    let used = v["mem_used_mib"].as_f64().unwrap();
    assert!(total > 0.0 && used >= 0.0 && used <= total, "{v}");
    let ts = v["timestamp"].as_i64().unwrap();
    let now = chrono::Utc::now().timestamp_millis();
    assert!(
        (now - ts).abs() < 600_000,
        "timestamp {ts} is not in ms near {now}"
    );
}

#[tokio::test]
async fn metrics_have_the_execd_shape() {
    let agent = start().await;
    let resp = agent
        .client
        .get(agent.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    check_shape(&v);
}

#[tokio::test]
async fn watch_streams_ndjson_frames() {
    let agent = start().await;
    let resp = agent
        .client
        .get(agent.url("/metrics/watch"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut stream = resp.bytes_stream();
    let mut buf = Vec::new();
    let frames = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let chunk = stream.next().await.expect("stream ended early").unwrap();
            buf.extend_from_slice(&chunk);
            let complete = buf.iter().filter(|b| **b == b'\n').count();
            if complete >= 2 {
                break;
            }
        }
        buf.split(|b| *b == b'\n')
            .take(2)
            .map(|l| serde_json::from_slice::<Value>(l).unwrap())
            .collect::<Vec<_>>()
    })
    .await
    .expect("two frames within 30 s");
    for f in &frames {
        check_shape(f);
    }
    assert!(frames[1]["timestamp"].as_i64() > frames[0]["timestamp"].as_i64());
}
