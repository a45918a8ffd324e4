//! The core against the in-test fault-injecting stub server (tests/common).

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use futures_util::StreamExt;
use opensandbox_core::models::NetworkRule;
use opensandbox_core::models::{ReadOptions, RunCommandOptions};
use opensandbox_core::{
    ConnectOptions, ConnectionConfig, ErrorKind, ExecutionHandlers, OutputMessage, RetryPolicy,
    RunControl, Sandbox, SandboxCreateOptions, SandboxManager, ServerEvent, WriteData, WriteEntry,
};
use sha2::{Digest, Sha256};

async fn sandbox(stub: &common::Stub) -> Sandbox {
    Sandbox::create(stub.config(), SandboxCreateOptions::image("python:3.12"))
        .await
        .expect("create")
}

fn fast_retries(c: ConnectionConfig) -> ConnectionConfig {
    c.with_retry(RetryPolicy {
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..RetryPolicy::default()
    })
}

#[tokio::test]
async fn create_resolves_endpoint_forwards_headers_and_runs() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    assert!(sbx.id().starts_with("sbx-"));
    // The stub's execd rejects calls without the endpoint's token header, so a
    // successful run proves every endpoint header is forwarded.
    assert_eq!(
        sbx.execd_endpoint()
            .headers
            .get("x-proxy-flag")
            .map(String::as_str),
        Some("false"),
        "use_server_proxy is always sent explicitly"
    );
    let ex = sbx
        .execd()
        .run_command(
            "echo hello;!warn;world",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut (),
        )
        .await
        .expect("run");
    let out: Vec<&str> = ex.logs.stdout.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(out, ["hello", "world"]);
    assert_eq!(ex.logs.stderr[0].text, "warn");
    assert_eq!(ex.exit_code, Some(0));
    assert_eq!(ex.id.as_deref(), Some("cmd-1"));
}

#[tokio::test]
async fn handlers_see_events_in_wire_order() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    #[derive(Default)]
    struct Order(Vec<String>);
    impl ExecutionHandlers for Order {
        fn on_init(&mut self, id: &str, _: i64) -> opensandbox_core::Result<()> {
            self.0.push(format!("init {id}"));
            Ok(())
        }
        fn on_stdout(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
            self.0.push(format!("out {}", m.text));
            Ok(())
        }
        fn on_stderr(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
            self.0.push(format!("err {}", m.text));
            Ok(())
        }
        fn on_execution_complete(
            &mut self,
            c: &opensandbox_core::ExecutionComplete,
        ) -> opensandbox_core::Result<()> {
            self.0.push(format!("complete {}", c.execution_time_ms));
            Ok(())
        }
    }
    let mut h = Order::default();
    sbx.execd()
        .run_command(
            "echo a;!b;c",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut h,
        )
        .await
        .expect("run");
    assert_eq!(h.0, ["init cmd-1", "out a", "err b", "out c", "complete 7"]);
}

#[tokio::test]
async fn nonzero_exit_code_comes_from_error_value() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let ex = sbx
        .execd()
        .run_command(
            "exit 3",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut (),
        )
        .await
        .expect("run");
    assert_eq!(ex.exit_code, Some(3));
    let err = ex.error.expect("error");
    assert_eq!(err.name, "CommandExecError");
    assert_eq!(err.traceback, ["exit status 3"]);
    assert!(ex.complete.is_none());
}

#[tokio::test]
async fn background_command_has_no_exit_code() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let opts = RunCommandOptions {
        background: true,
        ..Default::default()
    };
    let ex = sbx
        .execd()
        .run_command("forever", &opts, RunControl::default(), &mut ())
        .await
        .expect("run");
    assert_eq!(ex.exit_code, None);
    assert!(ex.complete.is_some());
    let logs = sbx
        .execd()
        .get_background_command_logs(ex.id.as_deref().unwrap_or_default(), None)
        .await
        .expect("logs");
    assert_eq!(logs.content, "line one\nline two\n");
    let cursor = logs.cursor.expect("cursor");
    let more = sbx
        .execd()
        .get_background_command_logs("cmd-1", Some(cursor))
        .await
        .expect("logs");
    assert_eq!(more.content, "");
}

#[tokio::test]
async fn terminal_event_ends_the_run_without_waiting_for_the_connection() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    // The stub keeps the stream open 30 s after the terminal event (like execd's grace
    // period, only longer); the run must not wait for it. Generous bound: 15 s.
    let opts = RunCommandOptions::default();
    let mut none = ();
    let run = sbx
        .execd()
        .run_command("echo x", &opts, RunControl::default(), &mut none);
    let ex = tokio::time::timeout(Duration::from_secs(15), run)
        .await
        .expect("run must return at the terminal event")
        .expect("run");
    assert_eq!(ex.exit_code, Some(0));
}

#[tokio::test]
async fn sse_data_framing_and_unknown_types_are_accepted() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let ex = sbx
        .execd()
        .run_command(
            "sse",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut (),
        )
        .await
        .expect("run");
    assert_eq!(ex.logs.stdout[0].text, "via sse");
    assert_eq!(ex.exit_code, Some(0));
}

#[tokio::test]
async fn faults_become_typed_errors() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let run = |cmd: &'static str| {
        let sbx = sbx.clone();
        async move {
            sbx.execd()
                .run_command(
                    cmd,
                    &RunCommandOptions::default(),
                    RunControl::default(),
                    &mut (),
                )
                .await
        }
    };
    let e = run("reset").await.expect_err("reset");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let e = run("truncated").await.expect_err("truncated");
    assert_eq!(e.kind(), ErrorKind::Stream, "{e}");
    assert!(e.message().contains("terminal"));
    let e = run("malformed").await.expect_err("malformed");
    assert_eq!(e.kind(), ErrorKind::Stream, "{e}");
    assert_eq!(e.request_id(), Some("stream-rid"));
    let e = run("inband").await.expect_err("inband");
    assert_eq!(e.kind(), ErrorKind::Stream);
    assert_eq!(e.code(), Some("RUNTIME_ERROR"));
}

#[tokio::test]
async fn big_stdout_streams_intact() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    struct Hash(Sha256, u64);
    impl ExecutionHandlers for Hash {
        fn on_stdout(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
            self.0.update(m.text.as_bytes());
            self.0.update(b"\n");
            self.1 += m.text.len() as u64 + 1;
            Ok(())
        }
        fn skip_accumulation(&self) -> bool {
            true
        }
    }
    let mut h = Hash(Sha256::new(), 0);
    let started = std::time::Instant::now();
    let ex = sbx
        .execd()
        .run_command(
            "big 100",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut h,
        )
        .await
        .expect("run");
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(ex.exit_code, Some(0));
    assert!(h.1 >= 100 * 1024 * 1024);
    let want = stub
        .state
        .big_sha
        .lock()
        .expect("lock")
        .clone()
        .expect("sha");
    assert_eq!(common::hex(&h.0.finalize()), want);
    println!("stdout stream: {:.0} MB/s", h.1 as f64 / 1e6 / secs);
}

#[tokio::test]
async fn dropping_a_stream_closes_it_and_interrupts_when_asked() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    // Without interrupt_on_drop: the connection closes, no interrupt is sent.
    let mut s = sbx
        .execd()
        .run_command_stream(
            "forever",
            &RunCommandOptions::default(),
            RunControl::default(),
        )
        .await
        .expect("stream");
    assert!(matches!(s.next().await, Some(Ok(ServerEvent::Init { .. }))));
    drop(s);
    assert!(common::eventually(|| stub.state.disconnects.load(Ordering::SeqCst) == 1).await);
    assert_eq!(stub.state.count("interrupt"), 0);

    // With it: the server-side command is interrupted too.
    let control = RunControl {
        interrupt_on_drop: true,
        ..Default::default()
    };
    let mut s = sbx
        .execd()
        .run_command_stream("forever", &RunCommandOptions::default(), control)
        .await
        .expect("stream");
    let Some(Ok(ServerEvent::Init { id, .. })) = s.next().await else {
        panic!("init expected")
    };
    drop(s);
    let st = stub.state.clone();
    assert!(
        common::eventually(|| st
            .interrupted
            .lock()
            .map(|v| v.contains(&id))
            .unwrap_or(false))
        .await
    );
}

#[tokio::test]
async fn deadline_interrupts_and_times_out() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let control = RunControl {
        deadline: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let e = sbx
        .execd()
        .run_command("forever", &RunCommandOptions::default(), control, &mut ())
        .await
        .expect_err("deadline");
    assert_eq!(e.kind(), ErrorKind::Timeout);
    let st = stub.state.clone();
    assert!(
        common::eventually(|| !st.interrupted.lock().map(|v| v.is_empty()).unwrap_or(true)).await
    );
}

#[tokio::test]
async fn long_stream_is_not_cut_by_the_request_timeout() {
    let stub = common::start().await;
    let cfg = stub
        .config()
        .with_request_timeout(Duration::from_millis(300));
    let sbx = Sandbox::create(cfg, SandboxCreateOptions::image("x"))
        .await
        .expect("create");
    let mut s = sbx
        .execd()
        .run_command_stream(
            "forever",
            &RunCommandOptions::default(),
            RunControl::default(),
        )
        .await
        .expect("stream");
    // Keep reading well past the request timeout: heartbeats keep arriving and the
    // stream stays open.
    let read = tokio::time::timeout(Duration::from_millis(1200), async {
        while let Some(ev) = s.next().await {
            ev.expect("event");
        }
    })
    .await;
    assert!(
        read.is_err(),
        "stream must still be open after 4x the request timeout"
    );
}

#[tokio::test]
async fn get_is_retried_on_503_and_post_is_not() {
    let stub = common::start().await;
    let mgr = SandboxManager::new(fast_retries(stub.config())).expect("manager");
    let info = mgr
        .get_sandbox_info("flaky")
        .await
        .expect("retried into success");
    assert_eq!(info.id, "flaky");
    assert_eq!(stub.state.count("get:flaky"), 3);

    let e = mgr
        .get_sandbox_info("always-503")
        .await
        .expect_err("gives up");
    assert_eq!(e.status(), Some(503));
    assert_eq!(stub.state.count("get:always-503"), 4, "1 try + 3 retries");

    let before = stub.state.count("create");
    let e = Sandbox::create(
        fast_retries(stub.config()),
        SandboxCreateOptions::image("fail-503"),
    )
    .await
    .expect_err("503");
    assert_eq!(e.status(), Some(503));
    assert_eq!(
        stub.state.count("create") - before,
        1,
        "POST must not be retried"
    );
}

#[tokio::test]
async fn post_is_retried_only_when_it_never_left_the_client() {
    // Nothing listens on this port: connection refused proves the request was never
    // sent, so even a POST may be retried; the error is a connection error.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let cfg = fast_retries(ConnectionConfig::new().with_domain(format!("127.0.0.1:{port}")));
    let e = Sandbox::create(cfg, SandboxCreateOptions::image("x"))
        .await
        .expect_err("refused");
    assert_eq!(e.kind(), ErrorKind::Connection);
    assert!(e.request_id().is_some(), "the sent request id is reported");
}

#[tokio::test]
async fn typed_errors_carry_status_code_and_request_id() {
    let stub = common::start().await;
    let mgr = SandboxManager::new(stub.config().with_header("X-Request-ID", "my-request-42"))
        .expect("manager");
    let e = mgr.get_sandbox_info("missing").await.expect_err("404");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(e.status(), Some(404));
    assert_eq!(e.code(), Some("STUB::SANDBOX_NOT_FOUND"));
    assert_eq!(e.request_id(), Some("my-request-42"));
    assert_eq!(e.operation(), "get_sandbox");

    let bad = SandboxManager::new(stub.config().with_api_key("wrong")).expect("manager");
    let e = bad
        .create_sandbox(&SandboxCreateOptions::image("x").to_request().expect("req"))
        .await
        .expect_err("401");
    assert_eq!(e.kind(), ErrorKind::Unauthorized);
    assert_eq!(e.code(), Some("INVALID_API_KEY"));

    let e = Sandbox::create(stub.config(), SandboxCreateOptions::default())
        .await
        .expect_err("no image");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[tokio::test]
async fn slow_headers_time_out() {
    let stub = common::start().await;
    let mgr = SandboxManager::new(
        stub.config()
            .with_request_timeout(Duration::from_millis(300))
            .with_retry(RetryPolicy::none()),
    )
    .expect("manager");
    let e = mgr
        .get_sandbox_info("slow-headers")
        .await
        .expect_err("timeout");
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
}

#[tokio::test]
async fn readiness_polls_and_unready_sandbox_is_cleaned_up() {
    let stub = common::start().await;
    let opts = SandboxCreateOptions {
        health_check_polling_interval: Duration::from_millis(20),
        ..SandboxCreateOptions::image("slow-ready")
    };
    Sandbox::create(stub.config(), opts)
        .await
        .expect("ready after a few pings");
    assert!(stub.state.count("ping") >= 4);

    let opts = SandboxCreateOptions {
        ready_timeout: Duration::from_millis(300),
        health_check_polling_interval: Duration::from_millis(20),
        ..SandboxCreateOptions::image("never-ready")
    };
    let e = Sandbox::create(stub.config(), opts)
        .await
        .expect_err("never ready");
    assert_eq!(e.kind(), ErrorKind::ReadyTimeout);
    assert!(e.message().contains("use_server_proxy"));
    let st = stub.state.clone();
    assert!(
        common::eventually(|| st
            .killed
            .lock()
            .map(|k| k.contains(&"never-ready".to_owned()))
            .unwrap_or(false))
        .await,
        "a sandbox that never became ready is deleted"
    );
}

#[tokio::test]
async fn upload_several_files_from_readers_in_one_request() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let entries = vec![
        WriteEntry::new("/tmp/a.txt", "hello"),
        WriteEntry::new(
            "/tmp/b.bin",
            WriteData::Reader {
                reader: Box::new(common::Gen::new(7, 3_000_000)),
                len: Some(3_000_000),
            },
        ),
        WriteEntry::new(
            "/tmp/c.bin",
            WriteData::Reader {
                reader: Box::new(common::Gen::new(8, 1234)),
                len: None,
            },
        ),
    ];
    sbx.execd().write_files(entries).await.expect("upload");
    assert_eq!(stub.state.count("upload"), 1);
    let up = stub.state.uploads.lock().expect("lock").clone();
    assert_eq!(up["/tmp/a.txt"].1, 5);
    assert_eq!(up["/tmp/b.bin"], (common::gen_sha(7, 3_000_000), 3_000_000));
    assert_eq!(up["/tmp/c.bin"], (common::gen_sha(8, 1234), 1234));
}

#[tokio::test]
async fn download_stream_range_and_lines() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let all = sbx
        .execd()
        .read_bytes("/gen/5/100000", &ReadOptions::default())
        .await
        .expect("read");
    assert_eq!(all.len(), 100_000);
    assert_eq!(
        common::hex(&Sha256::digest(&all)),
        common::gen_sha(5, 100_000)
    );
    let part = sbx
        .execd()
        .read_bytes(
            "/gen/5/100000",
            &ReadOptions {
                range: Some("bytes=1000-1999".into()),
                ..Default::default()
            },
        )
        .await
        .expect("range");
    assert_eq!(&part[..], &all[1000..2000]);
    let lines = sbx
        .execd()
        .read_file(
            "/any",
            &ReadOptions {
                offset: Some(3),
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .expect("lines");
    assert_eq!(lines, "line 3\nline 4");
    let e = sbx
        .execd()
        .read_bytes("/nope", &ReadOptions::default())
        .await
        .expect_err("missing");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(e.code(), Some("FILE_NOT_FOUND"));
}

#[tokio::test]
async fn metrics_watch_yields_samples_and_errors() {
    let stub = common::start().await;
    let sbx = sandbox(&stub).await;
    let items: Vec<_> = sbx
        .execd()
        .watch_metrics()
        .await
        .expect("watch")
        .collect()
        .await;
    assert_eq!(items.len(), 3);
    assert!((items[0].as_ref().expect("sample").cpu_used_percentage - 1.5).abs() < 1e-9);
    assert!(items[1].is_err());
    assert_eq!(
        items[2].as_ref().expect("sample").memory_used_in_mib as u64,
        11
    );
}

#[tokio::test]
async fn cancelled_create_still_deletes_the_sandbox() {
    let stub = common::start().await;
    let opts = SandboxCreateOptions {
        health_check_polling_interval: Duration::from_millis(20),
        ..SandboxCreateOptions::image("never-ready")
    };
    // Drop the create future while it is waiting for readiness.
    let r = tokio::time::timeout(
        Duration::from_millis(300),
        Sandbox::create(stub.config(), opts),
    )
    .await;
    assert!(r.is_err(), "create was still waiting when dropped");
    let st = stub.state.clone();
    assert!(
        common::eventually(|| st
            .killed
            .lock()
            .map(|k| k.contains(&"never-ready".to_owned()))
            .unwrap_or(false))
        .await,
        "a sandbox whose create was cancelled is deleted"
    );
}

#[tokio::test]
async fn user_agent_and_extra_headers_are_sent() {
    let stub = common::start().await;
    let cfg = stub
        .config()
        .with_user_agent("OpenSandbox-Test/1.2.3")
        .with_header("X-Team", "core");
    Sandbox::create(cfg, SandboxCreateOptions::image("x"))
        .await
        .expect("create");
    let h = stub
        .state
        .create_headers
        .lock()
        .expect("lock")
        .clone()
        .expect("headers");
    assert_eq!(h["user-agent"], "OpenSandbox-Test/1.2.3");
    assert_eq!(h["x-team"], "core");
    assert_eq!(h["open-sandbox-api-key"], "stub-key");
    assert_eq!(h["x-request-id"].len(), 32, "generated 32-hex request id");
}

#[tokio::test]
async fn template_backed_sandboxes_use_the_lifecycle_network_policy_and_have_no_vault() {
    let stub = common::start().await;
    let skip = || ConnectOptions {
        skip_health_check: true,
        ..ConnectOptions::default()
    };
    let sb = Sandbox::connect(stub.config(), "fsb-1", skip())
        .await
        .expect("connect");
    // The header's value is matched case-insensitively (the stub sends `Template`).
    assert_eq!(sb.origin(), Some("template"));
    assert!(sb.is_template_backed());

    let policy = sb.get_egress_policy().await.expect("get policy");
    assert_eq!(policy.default_action.as_deref(), Some("deny"));
    assert_eq!(policy.egress.len(), 1);
    let rule = NetworkRule {
        action: "allow".into(),
        target: "example.com".into(),
    };
    sb.patch_egress_rules(&[rule]).await.expect("patch");
    sb.delete_egress_rules(&["example.com"])
        .await
        .expect("delete");
    assert_eq!(stub.state.count("networkpolicy GET"), 1);
    assert_eq!(stub.state.count("networkpolicy PATCH"), 1);
    assert_eq!(stub.state.count("networkpolicy DELETE"), 1);
    // Only the execd endpoint was looked up: no egress sidecar (18080) lookup.
    assert_eq!(stub.state.count("endpoint"), 1);

    let err = sb.credential_vault().await.expect_err("no vault");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("template-backed"), "{err}");

    let plain = Sandbox::connect(stub.config(), "sb-2", skip())
        .await
        .expect("connect");
    assert_eq!(plain.origin(), None);
    assert!(!plain.is_template_backed());
}
