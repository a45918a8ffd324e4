//! The config-level endpoint cache against the stub server, which counts endpoint
//! lookups (`GET /sandboxes/{id}/endpoints/{port}`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use opensandbox_core::{ConnectOptions, Sandbox, SandboxCreateOptions, SandboxManager};

fn no_wait() -> ConnectOptions {
    ConnectOptions {
        skip_health_check: true,
        ..ConnectOptions::default()
    }
}

#[tokio::test]
async fn lookups_are_cached_per_sandbox_port_and_proxy_flag_and_dropped_on_kill() {
    let stub = common::start().await;
    let cfg = stub
        .config()
        .with_endpoint_cache(Duration::from_secs(600), 1024);
    let sbx = Sandbox::create(cfg.clone(), SandboxCreateOptions::image("python:3.12"))
        .await
        .expect("create");
    let after_create = stub.state.count("endpoint");
    assert_eq!(after_create, 1, "create resolves the execd endpoint once");

    // Connecting again through a clone of the config, and asking for the same port:
    // served from the cache.
    for _ in 0..3 {
        let again = Sandbox::connect(cfg.clone(), sbx.id(), no_wait())
            .await
            .expect("connect");
        assert_eq!(again.execd_endpoint(), sbx.execd_endpoint());
    }
    let ep = sbx.get_endpoint(44772).await.expect("endpoint");
    assert_eq!(&ep, sbx.execd_endpoint());
    assert_eq!(stub.state.count("endpoint"), 1);

    // Another port and the other proxy flag are other keys.
    sbx.get_endpoint(8080).await.expect("endpoint");
    sbx.get_endpoint(8080).await.expect("endpoint");
    let mgr = SandboxManager::new(cfg.clone()).expect("manager");
    mgr.get_endpoint(sbx.id(), 44772, Some(true))
        .await
        .expect("endpoint");
    assert_eq!(stub.state.count("endpoint"), 3);

    // Signed endpoints are never cached (the stub has no such route: two attempts,
    // two requests, whatever they answer).
    let _ = sbx.get_signed_endpoint(44772, 4_000_000_000).await;
    let before_kill = stub.state.count("endpoint");
    sbx.kill().await.expect("kill");
    sbx.get_endpoint(44772).await.expect("endpoint");
    assert_eq!(
        stub.state.count("endpoint"),
        before_kill + 1,
        "kill drops the sandbox's entries"
    );
}

#[tokio::test]
async fn without_the_cache_every_lookup_is_a_request() {
    let stub = common::start().await;
    let cfg = stub.config(); // off by default in the core
    let sbx = Sandbox::create(cfg.clone(), SandboxCreateOptions::image("python:3.12"))
        .await
        .expect("create");
    Sandbox::connect(cfg.clone(), sbx.id(), no_wait())
        .await
        .expect("connect");
    sbx.get_endpoint(44772).await.expect("endpoint");
    assert_eq!(stub.state.count("endpoint"), 3);

    let disabled = stub.config().with_endpoint_cache(Duration::ZERO, 1024);
    Sandbox::connect(disabled.clone(), sbx.id(), no_wait())
        .await
        .expect("connect");
    Sandbox::connect(disabled, sbx.id(), no_wait())
        .await
        .expect("connect");
    assert_eq!(stub.state.count("endpoint"), 5);
}

#[tokio::test]
async fn entries_expire_after_the_ttl() {
    let stub = common::start().await;
    let cfg = stub
        .config()
        .with_endpoint_cache(Duration::from_millis(150), 16);
    let sbx = Sandbox::create(cfg.clone(), SandboxCreateOptions::image("python:3.12"))
        .await
        .expect("create");
    sbx.get_endpoint(44772).await.expect("endpoint");
    assert_eq!(stub.state.count("endpoint"), 1);
    tokio::time::sleep(Duration::from_millis(250)).await;
    sbx.get_endpoint(44772).await.expect("endpoint");
    assert_eq!(stub.state.count("endpoint"), 2);
}
