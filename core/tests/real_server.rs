//! The core against the reference server binary. Runs when OPENSANDBOX_SERVER_BIN
//! points to a built `opensandbox-server`; otherwise each test prints a skip line.
//! The server starts with `--isolation none` unless OPENSANDBOX_TEST_ISOLATION names
//! another mode. The 1 GB transfer test also needs OPENSANDBOX_TEST_BIG=1.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use opensandbox_core::models::{
    ContentReplaceEntry, MoveEntry, PathPermission, ReadOptions, RunCommandOptions, SandboxFilter,
};
use opensandbox_core::{
    ConnectionConfig, ErrorKind, ExecutionHandlers, OutputMessage, RunControl, Sandbox,
    SandboxCreateOptions, SandboxManager, ServerEvent, WriteData, WriteEntry,
};
use sha2::{Digest, Sha256};

const API_KEY: &str = "real-server-test-key";

struct Server {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        // The server leaves sandboxes running when it stops (they are adopted at the
        // next start), so delete them first, also when a test failed half-way. Drop may
        // run inside the test's runtime, hence the separate thread and runtime.
        let cfg = self.config();
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                let Ok(mgr) = SandboxManager::new(cfg) else {
                    return;
                };
                let filter = SandboxFilter {
                    page_size: Some(200),
                    ..Default::default()
                };
                if let Ok(page) = mgr.list_sandbox_infos(&filter).await {
                    for s in page.items {
                        let _ = mgr.kill_sandbox(&s.id).await;
                    }
                }
            });
        })
        .join();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn config(&self) -> ConnectionConfig {
        ConnectionConfig::new()
            .with_domain(self.addr.clone())
            .with_api_key(API_KEY)
    }
}

fn start_server() -> Option<Server> {
    let Ok(bin) = std::env::var("OPENSANDBOX_SERVER_BIN") else {
        println!("skipped: OPENSANDBOX_SERVER_BIN not set");
        return None;
    };
    let isolation =
        std::env::var("OPENSANDBOX_TEST_ISOLATION").unwrap_or_else(|_| "none".to_owned());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(&bin)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            API_KEY,
            "--isolation",
        ])
        .arg(&isolation)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--log-level", "error"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(a) = line.strip_prefix("opensandbox-server listening on ") {
                    break a.trim().to_owned();
                }
            }
            _ => {
                let _ = child.kill();
                panic!("server exited before announcing its address");
            }
        }
    };
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Some(Server {
        child,
        addr,
        _dir: dir,
    })
}

async fn sandbox(server: &Server) -> Sandbox {
    Sandbox::create(server.config(), SandboxCreateOptions::image("ubuntu:22.04"))
        .await
        .expect("create sandbox")
}

async fn run(sbx: &Sandbox, cmd: &str) -> opensandbox_core::Execution {
    sbx.execd()
        .run_command(
            cmd,
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut (),
        )
        .await
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"))
}

#[tokio::test]
async fn lifecycle_round_trip_and_typed_errors() {
    let Some(server) = start_server() else { return };
    let mgr = SandboxManager::new(server.config()).expect("manager");
    let opts = SandboxCreateOptions {
        metadata: BTreeMap::from([("team".to_owned(), "core".to_owned())]),
        ..SandboxCreateOptions::image("ubuntu:22.04")
    };
    let sbx = Sandbox::create(server.config(), opts)
        .await
        .expect("create");
    let info = sbx.get_info().await.expect("info");
    assert_eq!(info.id, sbx.id());
    assert_eq!(info.status.state.as_str(), "Running");
    assert!(info.expires_at.is_some(), "default TTL gives an expiry");

    let listed = mgr
        .list_sandbox_infos(&SandboxFilter {
            metadata: BTreeMap::from([("team".to_owned(), "core".to_owned())]),
            ..Default::default()
        })
        .await
        .expect("list");
    assert!(listed.items.iter().any(|s| s.id == sbx.id()));

    let patched = sbx
        .patch_metadata(&BTreeMap::from([
            ("team".to_owned(), None),
            ("k".to_owned(), Some("v".to_owned())),
        ]))
        .await
        .expect("patch");
    assert_eq!(patched.metadata.get("k").map(String::as_str), Some("v"));
    assert!(!patched.metadata.contains_key("team"));

    let renewed = sbx.renew(Duration::from_secs(3600)).await.expect("renew");
    let exp = renewed.expires_at.expect("expiry");
    assert!(exp > chrono::Utc::now() + chrono::Duration::minutes(50));

    let proxied = mgr
        .get_endpoint(sbx.id(), 44772, Some(true))
        .await
        .expect("endpoint");
    assert!(proxied
        .endpoint
        .contains(&format!("/sandboxes/{}/proxy/44772", sbx.id())));
    assert!(
        !proxied.endpoint.contains("://"),
        "endpoints are scheme-less"
    );

    sbx.kill().await.expect("kill");
    let e = mgr
        .get_sandbox_info(sbx.id())
        .await
        .expect_err("gone after kill");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.request_id().is_some());

    let echoed = SandboxManager::new(server.config().with_header("X-Request-ID", "req-echo-1"))
        .expect("manager");
    let e = echoed
        .get_sandbox_info("00000000-0000-4000-8000-000000000000")
        .await
        .expect_err("404");
    assert_eq!(e.status(), Some(404));
    assert_eq!(e.request_id(), Some("req-echo-1"));

    let bad = SandboxManager::new(server.config().with_api_key("wrong")).expect("manager");
    let e = bad
        .list_sandbox_infos(&SandboxFilter::default())
        .await
        .expect_err("401");
    assert_eq!(e.kind(), ErrorKind::Unauthorized);
}

#[tokio::test]
async fn command_events_order_and_exit_codes() {
    let Some(server) = start_server() else { return };
    let sbx = sandbox(&server).await;
    #[derive(Default)]
    struct Seen(Vec<String>);
    impl ExecutionHandlers for Seen {
        fn on_init(&mut self, _: &str, _: i64) -> opensandbox_core::Result<()> {
            self.0.push("init".into());
            Ok(())
        }
        fn on_stdout(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
            self.0.push(format!("out:{}", m.text));
            Ok(())
        }
        fn on_execution_complete(
            &mut self,
            _: &opensandbox_core::ExecutionComplete,
        ) -> opensandbox_core::Result<()> {
            self.0.push("complete".into());
            Ok(())
        }
    }
    let mut seen = Seen::default();
    let ex = sbx
        .execd()
        .run_command(
            "echo hello; echo world",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut seen,
        )
        .await
        .expect("run");
    // The server keeps line endings (1.1 framing): texts are exactly the output.
    assert_eq!(seen.0, ["init", "out:hello\n", "out:world\n", "complete"]);
    assert_eq!(ex.exit_code, Some(0));

    let ex = run(&sbx, "echo oops >&2; exit 3").await;
    assert_eq!(ex.exit_code, Some(3));
    assert_eq!(ex.logs.stderr[0].text, "oops\n");
    let err = ex.error.as_ref().expect("error");
    assert_eq!(err.name, "CommandExecError");
    assert!(ex.complete.is_none());
    let status = sbx
        .execd()
        .get_command_status(ex.id.as_deref().expect("id"))
        .await
        .expect("status");
    assert!(!status.running);
    assert_eq!(status.exit_code, Some(3));

    let opts = RunCommandOptions {
        working_directory: Some("/tmp".into()),
        envs: BTreeMap::from([("GREETING".to_owned(), "hi there".to_owned())]),
        ..Default::default()
    };
    let ex = sbx
        .execd()
        .run_command("pwd; echo $GREETING", &opts, RunControl::default(), &mut ())
        .await
        .expect("run");
    assert_eq!(ex.text(), "/tmp\nhi there");
    sbx.kill().await.expect("kill");
}

#[tokio::test]
async fn background_commands_sessions_and_interrupt() {
    let Some(server) = start_server() else { return };
    let sbx = sandbox(&server).await;
    let ex = sbx
        .execd()
        .run_command(
            "echo first; sleep 0.3; echo second",
            &RunCommandOptions {
                background: true,
                ..Default::default()
            },
            RunControl::default(),
            &mut (),
        )
        .await
        .expect("background");
    assert_eq!(ex.exit_code, None);
    let id = ex.id.clone().expect("id");
    let mut finished = false;
    for _ in 0..200 {
        let st = sbx.execd().get_command_status(&id).await.expect("status");
        if !st.running {
            assert_eq!(st.exit_code, Some(0));
            finished = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(finished, "background command finished");
    let logs = sbx
        .execd()
        .get_background_command_logs(&id, None)
        .await
        .expect("logs");
    assert_eq!(logs.content, "first\nsecond\n");
    let again = sbx
        .execd()
        .get_background_command_logs(&id, logs.cursor)
        .await
        .expect("logs");
    assert_eq!(
        again.content, "",
        "cursor continues where the last read ended"
    );

    let session = sbx.execd().create_session(None).await.expect("session");
    let ctl = RunControl::default();
    sbx.execd()
        .run_in_session(&session, "cd /tmp && export X=42", None, None, ctl, &mut ())
        .await
        .expect("session run");
    let ex = sbx
        .execd()
        .run_in_session(&session, "echo $PWD $X", None, None, ctl, &mut ())
        .await
        .expect("session run");
    assert_eq!(ex.logs.stdout[0].text, "/tmp 42");
    assert_eq!(ex.exit_code, Some(0));
    sbx.execd()
        .delete_session(&session)
        .await
        .expect("delete session");

    // Dropping a stream with interrupt_on_drop stops the command on the server.
    let mut s = sbx
        .execd()
        .run_command_stream(
            "sleep 120",
            &RunCommandOptions::default(),
            RunControl {
                interrupt_on_drop: true,
                ..Default::default()
            },
        )
        .await
        .expect("stream");
    let Some(Ok(ServerEvent::Init { id, .. })) = s.next().await else {
        panic!("init first")
    };
    drop(s);
    let mut stopped = false;
    for _ in 0..200 {
        if let Ok(st) = sbx.execd().get_command_status(&id).await {
            if !st.running {
                stopped = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(stopped, "dropped command was interrupted on the server");
    sbx.kill().await.expect("kill");
}

#[tokio::test]
async fn hundred_megabytes_of_stdout_with_checksum() {
    let Some(server) = start_server() else { return };
    let sbx = sandbox(&server).await;
    let prep = run(
        &sbx,
        "head -c 78643200 /dev/urandom | base64 -w 76 > /tmp/big.txt && sha256sum /tmp/big.txt | cut -d' ' -f1",
    )
    .await;
    assert_eq!(prep.exit_code, Some(0), "{prep:?}");
    let want = prep.logs.stdout[0].text.trim().to_owned();
    struct Hash(Sha256, u64);
    impl ExecutionHandlers for Hash {
        fn on_stdout(&mut self, m: &OutputMessage) -> opensandbox_core::Result<()> {
            // Kept line endings: the texts concatenated are the file, byte for byte.
            self.0.update(m.text.as_bytes());
            self.1 += m.text.len() as u64;
            Ok(())
        }
        fn skip_accumulation(&self) -> bool {
            true
        }
    }
    let mut h = Hash(Sha256::new(), 0);
    let t = std::time::Instant::now();
    let ex = sbx
        .execd()
        .run_command(
            "cat /tmp/big.txt",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut h,
        )
        .await
        .expect("cat");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(ex.exit_code, Some(0));
    assert!(h.1 > 100_000_000);
    assert_eq!(hex(&h.0.finalize()), want);
    println!(
        "real server stdout stream: {:.0} MB/s",
        h.1 as f64 / 1e6 / secs
    );
    sbx.kill().await.expect("kill");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[tokio::test]
async fn file_operations() {
    let Some(server) = start_server() else { return };
    let sbx = sandbox(&server).await;
    let x = sbx.execd();
    let home = run(&sbx, "mkdir -p $HOME/w && echo $HOME/w")
        .await
        .logs
        .stdout[0]
        .text
        .clone();
    let a = format!("{home}/a.txt");
    let b = format!("{home}/sub/b.bin");
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    x.write_files(vec![
        WriteEntry::new(a.clone(), "line1\nline2\nline3\n"),
        WriteEntry {
            mode: Some(644),
            ..WriteEntry::new(
                b.clone(),
                WriteData::Reader {
                    reader: Box::new(std::io::Cursor::new(payload.clone())),
                    len: Some(payload.len() as u64),
                },
            )
        },
    ])
    .await
    .expect("upload");
    let got = x
        .read_bytes(&b, &ReadOptions::default())
        .await
        .expect("read");
    assert_eq!(&got[..], &payload[..]);
    let range = x
        .read_bytes(
            &b,
            &ReadOptions {
                range: Some("bytes=10-19".into()),
                ..Default::default()
            },
        )
        .await
        .expect("range");
    assert_eq!(&range[..], &payload[10..20]);
    let lines = x
        .read_file(
            &a,
            &ReadOptions {
                offset: Some(2),
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .expect("lines");
    assert_eq!(lines, "line2\nline3");

    let info = x.get_file_info(&[b.as_str()]).await.expect("info");
    assert_eq!(info[&b].size, payload.len() as u64);
    assert_eq!(info[&b].mode, 644);

    let listed = x.list_directory(&home, Some(2)).await.expect("list");
    assert!(listed.iter().any(|e| e.path == b));
    let found = x.search(&home, Some("*.txt")).await.expect("search");
    assert!(found.iter().any(|e| e.path == a));

    let replaced = x
        .replace_contents_detailed(&[ContentReplaceEntry {
            path: a.clone(),
            old_content: "line".into(),
            new_content: "row".into(),
        }])
        .await
        .expect("replace");
    assert_eq!(replaced[0].replaced_count, 3);

    let moved = format!("{home}/moved.txt");
    x.move_files(&[MoveEntry {
        src: a.clone(),
        dest: moved.clone(),
    }])
    .await
    .expect("move");
    assert_eq!(
        x.read_file(&moved, &ReadOptions::default())
            .await
            .expect("read"),
        "row1\nrow2\nrow3\n"
    );
    let dir = format!("{home}/made/deep");
    x.create_directories(&[PathPermission {
        path: dir.clone(),
        ..Default::default()
    }])
    .await
    .expect("mkdir");
    x.delete_files(&[moved.as_str()]).await.expect("rm");
    let e = x
        .read_bytes(&moved, &ReadOptions::default())
        .await
        .expect_err("deleted");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    x.delete_directories(&[dir.as_str()]).await.expect("rmdir");
    let m = sbx.get_metrics().await.expect("metrics");
    assert!(m.cpu_count > 0.0);
    sbx.kill().await.expect("kill");
}

#[tokio::test]
async fn code_context_runs() {
    let Some(server) = start_server() else { return };
    let sbx = sandbox(&server).await;
    let ctx = sbx
        .execd()
        .create_context("python", None)
        .await
        .expect("context");
    let ex = sbx
        .execd()
        .run_code(
            "print('hi')\n1+1",
            Some(&ctx),
            RunControl::default(),
            &mut (),
        )
        .await
        .expect("run");
    assert_eq!(ex.logs.stdout[0].text.trim_end(), "hi");
    assert_eq!(ex.result[0].text.as_deref(), Some("2"));
    assert_eq!(ex.exit_code, None);
    let ex = sbx
        .execd()
        .run_code("1/0", Some(&ctx), RunControl::default(), &mut ())
        .await
        .expect("run");
    assert_eq!(
        ex.error.as_ref().map(|e| e.name.as_str()),
        Some("ZeroDivisionError")
    );
    sbx.kill().await.expect("kill");
}

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A reader of `len` pseudo-random bytes, and their sha256 computed on the side.
struct GenReader {
    state: u64,
    left: u64,
}

impl tokio::io::AsyncRead for GenReader {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let n = (buf.remaining() as u64).min(self.left).min(1 << 20) as usize;
        let mut tmp = vec![0u8; n];
        for w in tmp.chunks_mut(8) {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            w.copy_from_slice(&self.state.to_le_bytes()[..w.len()]);
        }
        self.left -= n as u64;
        buf.put_slice(&tmp);
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn one_gigabyte_transfer_against_the_server() {
    let Some(server) = start_server() else { return };
    if std::env::var("OPENSANDBOX_TEST_BIG").as_deref() != Ok("1") {
        println!("skipped: OPENSANDBOX_TEST_BIG not set");
        return;
    }
    let len: u64 = 1 << 30;
    let sbx = sandbox(&server).await;
    let path = "/tmp/opensandbox-core-big.bin".to_owned();
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = status_kb("VmRSS:");
    let t = std::time::Instant::now();
    sbx.execd()
        .write_files(vec![WriteEntry::new(
            path.clone(),
            WriteData::Reader {
                reader: Box::new(GenReader {
                    state: 99,
                    left: len,
                }),
                len: Some(len),
            },
        )])
        .await
        .expect("upload");
    let up = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    let mut s = sbx
        .execd()
        .read_bytes_stream(&path, &ReadOptions::default())
        .await
        .expect("download");
    let mut sha = Sha256::new();
    let mut got = 0u64;
    while let Some(c) = s.next().await {
        let c = c.expect("chunk");
        got += c.len() as u64;
        sha.update(&c);
    }
    let down = t.elapsed().as_secs_f64();
    let growth = status_kb("VmHWM:").saturating_sub(base);
    println!(
        "real server 1 GiB: upload {:.0} MB/s, download {:.0} MB/s, client peak RSS growth {growth} KiB",
        len as f64 / 1e6 / up,
        len as f64 / 1e6 / down
    );
    assert_eq!(got, len);
    // What the server stored and sent back is what the generator produced.
    let mut want = Sha256::new();
    let mut gen = GenReader {
        state: 99,
        left: len,
    };
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let mut rb = tokio::io::ReadBuf::new(&mut buf);
        let _ = tokio::io::AsyncReadExt::read_buf(&mut gen, &mut rb).await;
        if rb.filled().is_empty() {
            break;
        }
        want.update(rb.filled());
    }
    assert_eq!(hex(&sha.finalize()), hex(&want.finalize()));
    assert!(growth < 64 * 1024);
    sbx.kill().await.expect("kill");
}

#[tokio::test]
async fn pause_resume_snapshots_and_egress() {
    let Some(server) = start_server() else { return };
    let sbx = sandbox(&server).await;
    let mgr = sbx.manager().clone();

    sbx.pause().await.expect("pause");
    let mut paused = false;
    for _ in 0..100 {
        let st = sbx.get_info().await.expect("info").status.state;
        if st == opensandbox_core::models::SandboxState::Paused {
            paused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(paused, "sandbox reaches Paused");
    let resumed = Sandbox::resume(server.config(), sbx.id(), Default::default())
        .await
        .expect("resume waits until ready");
    assert_eq!(
        run(&resumed, "echo back").await.logs.stdout[0].text,
        "back\n"
    );

    match sbx.create_snapshot(Some("snap-1")).await {
        Ok(snap) => {
            assert_eq!(snap.sandbox_id, sbx.id());
            let got = mgr.get_snapshot(&snap.id).await.expect("get snapshot");
            assert_eq!(got.id, snap.id);
            let listed = mgr
                .list_snapshots(&opensandbox_core::models::SnapshotFilter {
                    sandbox_id: Some(sbx.id().to_owned()),
                    ..Default::default()
                })
                .await
                .expect("list snapshots");
            assert!(listed.items.iter().any(|s| s.id == snap.id));
            for _ in 0..100 {
                if mgr.delete_snapshot(&snap.id).await.is_ok() {
                    break;
                }
                // Deleting while Creating is refused (409); wait for Ready.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Err(e) => assert_eq!(
            e.status(),
            Some(501),
            "only 'not implemented' is acceptable: {e}"
        ),
    }

    let rules = [opensandbox_core::models::NetworkRule {
        action: "allow".into(),
        target: "example.com".into(),
    }];
    sbx.patch_egress_rules(&rules).await.expect("patch egress");
    let policy = sbx.get_egress_policy().await.expect("get egress");
    assert!(policy.egress.iter().any(|r| r.target == "example.com"));
    sbx.delete_egress_rules(&["example.com"])
        .await
        .expect("delete egress");
    let policy = sbx.get_egress_policy().await.expect("get egress");
    assert!(!policy.egress.iter().any(|r| r.target == "example.com"));
    sbx.kill().await.expect("kill");
}

/// The 1.1 lifecycle additions: network policy through the lifecycle plane, metrics
/// events, the snapshot `name` filter and `resourceRequests`.
#[tokio::test]
async fn lifecycle_11_policy_metrics_names_and_requests() {
    use opensandbox_core::models::{MetricsEvent, NetworkPolicy, NetworkRule, SnapshotFilter};
    let Some(server) = start_server() else {
        return;
    };
    let mgr = SandboxManager::new(server.config()).expect("manager");
    let opts = SandboxCreateOptions {
        resource_requests: BTreeMap::from([("cpu".to_owned(), "250m".to_owned())]),
        ..SandboxCreateOptions::image("ubuntu:22.04")
    };
    let sbx = Sandbox::create(server.config(), opts)
        .await
        .expect("create");
    let id = sbx.id().to_owned();

    let put = mgr
        .replace_network_policy(
            &id,
            &NetworkPolicy {
                default_action: Some("deny".to_owned()),
                egress: vec![NetworkRule {
                    action: "allow".into(),
                    target: "a.com".into(),
                }],
            },
        )
        .await
        .expect("put policy");
    assert_eq!(put.mode.as_deref(), Some("enforcing"));
    assert_eq!(put.enforcement_mode, None);
    mgr.patch_network_policy(
        &id,
        &[NetworkRule {
            action: "allow".into(),
            target: "b.com".into(),
        }],
    )
    .await
    .expect("patch policy");
    let del = mgr
        .delete_network_policy_rules(&id, &["a.com".to_owned()])
        .await
        .expect("delete rules");
    assert_eq!(del.status.as_deref(), Some("ok"));
    let got = mgr.get_network_policy(&id).await.expect("get policy");
    let policy = got.policy.expect("policy");
    assert_eq!(policy.default_action, Some("deny".to_owned()));
    let targets: Vec<&str> = policy.egress.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(targets, vec!["b.com"]);
    assert!(mgr.patch_network_policy(&id, &[]).await.is_err());

    let mut event = MetricsEvent::sandbox_create(Duration::from_millis(1234), true);
    event.sandbox_id = Some(id.clone());
    mgr.send_metrics_event(&event).await.expect("metrics event");
    event.event_type = "sandbox.other".into();
    let e = mgr.send_metrics_event(&event).await.expect_err("bad event");
    assert_eq!(e.status(), Some(400));

    let snap = mgr
        .create_snapshot(&id, Some("named-1"))
        .await
        .expect("snapshot");
    let named = |name: &str| SnapshotFilter {
        name: Some(name.to_owned()),
        ..Default::default()
    };
    let listed = mgr.list_snapshots(&named("named-1")).await.expect("list");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].id, snap.id);
    let none = mgr.list_snapshots(&named("named")).await.expect("list");
    assert!(none.items.is_empty());

    let raw: serde_json::Value = reqwest::Client::new()
        .get(format!("http://{}/v1/sandboxes/{id}", server.addr))
        .header("OPEN-SANDBOX-API-KEY", API_KEY)
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert_eq!(raw["resourceRequests"]["cpu"], "250m", "{raw}");
    sbx.kill().await.expect("kill");
}

#[tokio::test]
async fn keyed_creation_and_command_inventory() {
    let Some(server) = start_server() else { return };
    let sbx = sandbox(&server).await;
    let execd = sbx.execd();
    let instance = execd.get_execution_instance().await.expect("instance");
    assert_eq!(instance.instance_id.len(), 32);
    assert_eq!(instance.retention_seconds, 86_400);
    let id = instance.new_operation_id();
    let opts = RunCommandOptions {
        background: true,
        ..Default::default()
    };
    let first = execd
        .create_command_operation(&id, "echo ran >> keyed.txt", None, &opts)
        .await
        .expect("create");
    assert_eq!(
        (first.kind.as_str(), first.state.as_str()),
        ("command", "created")
    );
    assert!(first.expires_at.is_some());
    let again = execd
        .create_command_operation(&id, "echo ran >> keyed.txt", None, &opts)
        .await
        .expect("retry");
    assert_eq!(again.id, first.id);
    let conflict = execd
        .create_command_operation(&id, "echo other", None, &opts)
        .await
        .expect_err("conflict");
    assert_eq!(conflict.status(), Some(409));
    assert_eq!(conflict.code(), Some("operation_conflict"));
    let found = execd
        .get_execution_operation("command", &id)
        .await
        .expect("lookup");
    assert_eq!(found.id, first.id);
    let bad = execd
        .get_execution_operation("command", "not-an-id")
        .await
        .expect_err("bad id");
    assert_eq!(bad.code(), Some("invalid_operation_id"));
    for _ in 0..100 {
        if !execd
            .get_command_status(&first.id)
            .await
            .expect("status")
            .running
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cat = execd
        .run_command(
            "cat keyed.txt",
            &RunCommandOptions::default(),
            RunControl::default(),
            &mut (),
        )
        .await
        .expect("cat");
    assert_eq!(cat.logs.stdout.len(), 1, "ran once: {:?}", cat.logs.stdout);

    let pty = execd
        .create_pty_operation(&instance.new_operation_id(), None, None)
        .await
        .expect("pty");
    assert_eq!(pty.kind, "pty");
    assert!(
        !execd
            .get_pty_session(&pty.id)
            .await
            .expect("session")
            .running
    );

    let page = execd
        .list_commands(None, Some(1), None)
        .await
        .expect("page 1");
    assert_eq!(page.commands.len(), 1);
    assert_eq!(page.commands[0].session, cat.id.clone().expect("cat id"));
    let cursor = page.pagination.next_cursor.expect("more pages");
    let next = execd
        .list_commands(None, Some(1), Some(&cursor))
        .await
        .expect("page 2");
    assert_eq!(next.commands[0].session, first.id);
    assert!(!next.commands[0].running);
    let err = execd
        .list_commands(None, Some(0), None)
        .await
        .expect_err("limit");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}
