//! The C ABI called through its `extern "C"` functions, as a host would: offline checks
//! always, and a real-server round trip when OPENSANDBOX_SERVER_BIN points to a built
//! `opensandbox-server` (otherwise those tests print a skip line).

// A test crate: a failed unwrap/expect is a failed test, and every unsafe call passes
// handles this file just created (the contracts are in bindings/ffi/API.md).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::undocumented_unsafe_blocks
)]
#![allow(clippy::result_large_err)]

use std::ffi::{c_char, c_void, CStr, CString};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::ptr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use opensandbox_ffi::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------
// Host-side helpers

/// What a callback delivered.
struct Outcome {
    result: *mut c_void,
    error: *mut OsbError,
}

// SAFETY: raw pointers handed over by the library; only moved to the test thread.
unsafe impl Send for Outcome {}

unsafe extern "C" fn on_done(user_data: usize, result: *mut c_void, error: *mut OsbError) {
    // SAFETY: user_data is the Box<Sender> leaked by `call_async`, used exactly once.
    let tx = unsafe { Box::from_raw(user_data as *mut mpsc::Sender<Outcome>) };
    let _ = tx.send(Outcome { result, error });
}

/// Calls an async export and waits for its callback.
fn call_async(f: impl FnOnce(OsbCallback, usize)) -> Result<*mut c_void, Err> {
    let (tx, rx) = mpsc::channel::<Outcome>();
    let ud = Box::into_raw(Box::new(tx)) as usize;
    f(Some(on_done), ud);
    let o = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("callback never fired");
    if o.error.is_null() {
        Ok(o.result)
    } else {
        assert!(o.result.is_null(), "both result and error set");
        Err(Err::take(o.error))
    }
}

/// An error read through the accessors (then freed).
#[derive(Debug)]
struct Err {
    kind: String,
    status: u16,
    code: Option<String>,
    message: String,
    request_id: Option<String>,
    json: Value,
}

fn opt(p: *const c_char) -> Option<String> {
    // SAFETY: accessors return NULL or a valid string owned by the error.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

impl Err {
    fn take(e: *mut OsbError) -> Err {
        // SAFETY: `e` is a live error handed to us; freed at the end.
        unsafe {
            let j = osb_error_to_json(e);
            let json = take_json(j);
            let out = Err {
                kind: opt(osb_error_kind(e)).unwrap_or_default(),
                status: osb_error_status(e),
                code: opt(osb_error_code(e)),
                message: opt(osb_error_message(e)).unwrap_or_default(),
                request_id: opt(osb_error_request_id(e)),
                json,
            };
            osb_error_free(e);
            out
        }
    }
}

/// Takes an owned JSON string from the library.
fn take_json(p: *mut c_char) -> Value {
    assert!(!p.is_null(), "expected a JSON string");
    // SAFETY: owned string from the library, freed right after reading.
    let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    // SAFETY: as above.
    unsafe { osb_string_free(p) };
    serde_json::from_str(&s).unwrap_or_else(|e| panic!("bad JSON {s:?}: {e}"))
}

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

// ---------------------------------------------------------------------------------
// Offline

#[test]
fn version_and_abi() {
    // SAFETY: static string.
    let v = unsafe { CStr::from_ptr(osb_version()) }
        .to_str()
        .expect("utf8");
    assert_eq!(v, env!("CARGO_PKG_VERSION"));
    assert_eq!(osb_abi_version(), OSB_ABI_VERSION);
}

/// A session on its own runtime, freed by drop.
struct Sess {
    rt: *mut OsbRuntime,
    s: *mut OsbSession,
}

impl Sess {
    fn new() -> Sess {
        let mut err = ptr::null_mut();
        // SAFETY: valid arguments; freed by Drop.
        unsafe {
            let rt = osb_runtime_new(c(r#"{"worker_threads":2}"#).as_ptr(), &mut err);
            assert!(!rt.is_null());
            let s = osb_session_new(rt, &mut err);
            assert!(!s.is_null());
            Sess { rt, s }
        }
    }
}

impl Drop for Sess {
    fn drop(&mut self) {
        // SAFETY: handles owned by this struct.
        unsafe {
            osb_session_free(self.s);
            osb_runtime_free(self.rt);
        }
    }
}

#[test]
fn argument_errors_reach_the_callback_synchronously() {
    // NULL session: the callback fires (on this thread) with an error.
    let e = call_async(|cb, ud| unsafe {
        osb_session_call(
            ptr::null(),
            c("sandbox.get_info").as_ptr(),
            ptr::null(),
            ptr::null(),
            cb,
            ud,
        )
    })
    .expect_err("NULL session");
    assert_eq!(e.kind, "invalid_argument");
    let s = Sess::new();
    let conn = json!({"domain": "127.0.0.1:9"});
    let e = session_call(s.s, "manager.no_such_op", json!({})).expect_err("unknown op");
    assert_eq!(e.kind, "invalid_argument");
    assert!(e.message.contains("no_such_op"));
    let e =
        session_call(s.s, "manager.get_sandbox_info", json!({"nope": 1})).expect_err("unknown key");
    assert_eq!(e.kind, "invalid_argument");
    // Nothing listens on port 9: a connection error with the operation name.
    let e = session_call(
        s.s,
        "manager.get_sandbox_info",
        json!({"sandbox_id": "x", "connection": conn}),
    )
    .expect_err("conn");
    assert_eq!(e.kind, "connection", "{e:?}");
}

#[test]
fn cancel_token_cancels_and_free_does_not() {
    // A server that accepts and never answers: the call hangs until cancelled.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let _hold = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for s in listener.incoming().take(4) {
            conns.push(s);
        }
        std::thread::sleep(Duration::from_secs(30));
    });
    let s = Sess::new();
    let op = c("manager.get_sandbox_info");
    let args = c(&json!({"sandbox_id": "abc", "connection":
        {"domain": addr.to_string(), "request_timeout_s": 60, "retry": null}})
    .to_string());
    // SAFETY: valid arguments; everything freed below.
    unsafe {
        let tok = osb_cancel_new();
        assert!(!osb_cancel_is_cancelled(tok));
        let (tx, rx) = mpsc::channel::<Outcome>();
        let ud = Box::into_raw(Box::new(tx)) as usize;
        osb_session_call(s.s, op.as_ptr(), args.as_ptr(), tok, Some(on_done), ud);
        // The host may free its token reference at once; the operation keeps its own.
        let tok2 = osb_cancel_new();
        osb_cancel_free(tok2);
        std::thread::sleep(Duration::from_millis(200));
        assert!(rx.try_recv().is_err(), "the call must still be pending");
        let t0 = Instant::now();
        osb_cancel_cancel(tok);
        assert!(osb_cancel_is_cancelled(tok));
        let o = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("callback after cancel");
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(o.result.is_null());
        let e = Err::take(o.error);
        assert_eq!(e.kind, "cancelled");
        // A cancelled token cancels later operations at once.
        let e = call_async(|cb, ud| osb_session_call(s.s, op.as_ptr(), args.as_ptr(), tok, cb, ud))
            .expect_err("already cancelled");
        assert_eq!(e.kind, "cancelled");
        osb_cancel_free(tok);
    }
}

// ---------------------------------------------------------------------------------
// Real server

const API_KEY: &str = "ffi-test-key";

struct Server {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
    std::thread::spawn(move || for _ in lines {});
    Some(Server {
        child,
        addr,
        _dir: dir,
    })
}

#[test]
fn real_server_session_lifecycle_and_errors() {
    let Some(server) = start_server() else { return };
    let s = Sess::new();
    let conn = json!({"domain": server.addr, "api_key": API_KEY});
    let opened = session_call(
        s.s,
        "sandbox.create",
        json!({"connection": conn, "image": "ubuntu:22.04", "metadata": {"suite": "ffi"}}),
    )
    .unwrap_or_else(|e| panic!("create: {e:?}"));
    let id = opened["id"].as_str().expect("id").to_owned();
    let sb = opened["handle"].clone();

    let info = session_call(s.s, "sandbox.get_info", json!({"sandbox": sb})).expect("get_info");
    assert_eq!(info["id"], id.as_str());
    assert_eq!(info["status"]["state"], "Running");
    assert_eq!(info["metadata"]["suite"], "ffi");
    let h = session_call(s.s, "sandbox.is_healthy", json!({"sandbox": sb})).expect("health");
    assert_eq!(h["healthy"], true);
    session_call(s.s, "sandbox.ping", json!({"sandbox": sb})).expect("ping");
    session_call(
        s.s,
        "sandbox.wait_until_ready",
        json!({"sandbox": sb, "timeout_s": 5, "polling_interval_s": 0.1}),
    )
    .expect("ready");

    let m = session_call(s.s, "manager.new", json!({"connection": conn})).expect("manager")
        ["handle"]
        .clone();
    let page = session_call(
        s.s,
        "manager.list_sandbox_infos",
        json!({"manager": m, "metadata": {"suite": "ffi"}}),
    )
    .expect("list");
    assert!(page["sandbox_infos"]
        .as_array()
        .expect("sandbox_infos")
        .iter()
        .any(|x| x["id"] == id.as_str()));
    let renewed = session_call(
        s.s,
        "sandbox.renew",
        json!({"sandbox": sb, "seconds": 1200}),
    )
    .expect("renew");
    assert!(renewed["expires_at"].is_string());

    // A missing sandbox: every error field survives the boundary, blocking form too.
    let e = session_call_blocking(
        s.s,
        "manager.get_sandbox_info",
        json!({"manager": m, "sandbox_id": "does-not-exist"}),
    )
    .expect_err("404");
    assert_eq!(e.kind, "not_found");
    assert_eq!(e.status, 404);
    assert!(e.code.as_deref().is_some_and(|c| !c.is_empty()), "{e:?}");
    assert!(
        e.request_id.as_deref().is_some_and(|r| !r.is_empty()),
        "{e:?}"
    );
    assert_eq!(e.json["status"], 404);
    assert!(e.json["body"].is_string(), "{e:?}");

    // Connect by id yields a second handle onto the same sandbox.
    let other = session_call(
        s.s,
        "sandbox.connect",
        json!({"connection": conn, "sandbox_id": id, "skip_health_check": true}),
    )
    .expect("connect");
    assert_eq!(other["id"], id.as_str());
    let ex = session_call(
        s.s,
        "commands.run",
        json!({"sandbox": other["handle"], "command": "echo via-connect"}),
    )
    .expect("run");
    assert_eq!(ex["stdout"], json!(["via-connect\n"]));

    // Metrics pulled as a stream, stopped by release.
    let w = session_call(s.s, "metrics.start", json!({"sandbox": sb})).expect("metrics.start")
        ["handle"]
        .as_u64()
        .expect("handle");
    let b = session_call_blocking(s.s, "execution.next_batch", json!({"handle": w, "max": 1}))
        .expect("batch");
    assert_eq!(b["events"][0]["type"], "metrics", "{b}");
    assert!(b["events"][0]["cpu_count"].is_number(), "{b}");
    // SAFETY: live session.
    assert!(unsafe { osb_session_release(s.s, w) });

    session_call(s.s, "sandbox.kill", json!({"sandbox": sb})).expect("kill");
    let before = unsafe { osb_session_handle_count(s.s) };
    for h in [&sb, &other["handle"], &m] {
        // SAFETY: live session.
        assert!(unsafe { osb_session_release(s.s, h.as_u64().expect("handle")) });
    }
    // SAFETY: live session.
    assert_eq!(unsafe { osb_session_handle_count(s.s) }, before - 3);
}

// ---------------------------------------------------------------------------------
// The op-layer session (API.md §7)

fn session_call(s: *const OsbSession, op: &str, args: Value) -> Result<Value, Err> {
    let op = c(op);
    let args = c(&args.to_string());
    call_async(|cb, ud| unsafe {
        osb_session_call(s, op.as_ptr(), args.as_ptr(), ptr::null(), cb, ud)
    })
    .map(|p| take_json(p.cast()))
}

fn session_call_blocking(s: *const OsbSession, op: &str, args: Value) -> Result<Value, Err> {
    let op = c(op);
    let args = c(&args.to_string());
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments; the result is owned by us.
    let r =
        unsafe { osb_session_call_blocking(s, op.as_ptr(), args.as_ptr(), ptr::null(), &mut err) };
    if r.is_null() {
        Err(Err::take(err))
    } else {
        Ok(take_json(r))
    }
}

#[test]
fn ops_manifest_lists_every_op_and_key() {
    let m = take_json(osb_ops_manifest());
    assert_eq!(m["version"], 1);
    let ops = m["ops"].as_array().expect("ops");
    let run = ops
        .iter()
        .find(|o| o["name"] == "commands.start")
        .expect("commands.start");
    let keys: Vec<&str> = run["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    for k in [
        "sandbox",
        "command",
        "argv",
        "envs",
        "handlers",
        "skip_accumulation",
    ] {
        assert!(keys.contains(&k), "{k} missing from {keys:?}");
    }
    assert!(ops.iter().any(|o| o["name"] == "execution.next_batch"));
}

#[test]
fn explicit_runtime_and_session_offline() {
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments; every handle is freed below.
    unsafe {
        let bad = osb_runtime_new(c(r#"{"worker_thread":2}"#).as_ptr(), &mut err);
        assert!(bad.is_null());
        let e = Err::take(err);
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.contains("worker_thread"), "{}", e.message);

        let rt = osb_runtime_new(c(r#"{"worker_threads":1}"#).as_ptr(), &mut err);
        assert!(!rt.is_null() && err.is_null());
        let s = osb_session_new(rt, &mut err);
        assert!(!s.is_null());
        // The session keeps the runtime: freeing the caller's reference first is fine.
        osb_runtime_free(rt);

        // Unknown ops and keys are rejected, naming them, through both call forms.
        let e = session_call(s, "commands.explode", json!({})).expect_err("unknown op");
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.contains("commands.explode"), "{}", e.message);
        let e = session_call_blocking(s, "config.new", json!({"domian": "x"}))
            .expect_err("unknown key");
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.contains("domian"), "{}", e.message);
        assert_eq!(e.json["operation"], "config.new");
        let e = session_call_blocking(s, "config.new", Value::String("{".into()))
            .expect_err("not an object");
        assert_eq!(e.kind, "invalid_argument");

        // Handles are registry integers, released once.
        let h = session_call_blocking(s, "config.new", json!({"domain": "example.test:1"}))
            .expect("config.new")["handle"]
            .as_u64()
            .expect("handle");
        assert_eq!(osb_session_handle_count(s), 1);
        let info = session_call(s, "config.info", json!({"connection": h})).expect("info");
        assert_eq!(info["domain"], "example.test:1");
        assert!(osb_session_release(s, h));
        assert!(!osb_session_release(s, h));
        assert_eq!(osb_session_handle_count(s), 0);

        // Nothing listens on port 9: the core's connection error, in the one payload.
        let e = session_call(
            s,
            "manager.get_sandbox_info",
            json!({"sandbox_id": "x", "connection": {"domain": "127.0.0.1:9"}}),
        )
        .expect_err("connection refused");
        assert_eq!(e.kind, "connection");

        // A cancelled token ends the call with `cancelled`.
        let tok = osb_cancel_new();
        osb_cancel_cancel(tok);
        let op = c("manager.get_sandbox_info");
        let args = c(r#"{"sandbox_id":"x","connection":{"domain":"127.0.0.1:9"}}"#);
        let e = call_async(|cb, ud| osb_session_call(s, op.as_ptr(), args.as_ptr(), tok, cb, ud))
            .expect_err("cancelled");
        assert_eq!(e.kind, "cancelled");
        osb_cancel_free(tok);

        // Uploads from a descriptor: a bad descriptor and one that is not a regular file
        // are argument errors (the descriptor is consumed either way).
        let up_args = c(r#"{"sandbox":1,"path":"/tmp/x"}"#);
        let rc =
            osb_session_upload_fd_blocking(s, up_args.as_ptr(), -1, 0, 0, ptr::null(), &mut err);
        assert_eq!(rc, -1);
        let e = Err::take(err);
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.contains("fd"), "{}", e.message);
        let dir = std::fs::File::open(std::env::temp_dir()).expect("temp dir");
        let fd = std::os::fd::IntoRawFd::into_raw_fd(dir);
        let rc =
            osb_session_upload_fd_blocking(s, up_args.as_ptr(), fd, 0, 0, ptr::null(), &mut err);
        assert_eq!(rc, -1);
        let e = Err::take(err);
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.contains("regular file"), "{}", e.message);

        // NULLs.
        assert!(osb_session_new(ptr::null(), ptr::null_mut()).is_null());
        assert!(!osb_session_release(ptr::null(), 1));
        osb_session_free(s);
        osb_session_free(ptr::null_mut());
        osb_runtime_free(ptr::null_mut());
    }
}

#[test]
fn explicit_runtime_threads_end_on_free() {
    fn workers() -> usize {
        std::fs::read_dir("/proc/self/task")
            .map(|d| {
                d.flatten()
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|n| n.trim() == "osb-ffi-test-rt")
                    })
                    .count()
            })
            .unwrap_or(0)
    }
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments; handles freed below.
    unsafe {
        let rt = osb_runtime_new(
            c(r#"{"worker_threads":2,"thread_name":"osb-ffi-test-rt"}"#).as_ptr(),
            &mut err,
        );
        let s = osb_session_new(rt, &mut err);
        assert!(session_call(s, "config.new", json!({})).is_ok());
        assert!(workers() >= 1, "no worker thread named osb-ffi-test-rt");
        osb_session_free(s);
        osb_runtime_free(rt);
    }
    // The last reference shut the runtime down: its worker threads have ended.
    let t0 = Instant::now();
    while workers() > 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers(), 0, "worker threads outlived osb_runtime_free");
}

#[test]
fn real_server_session_runs() {
    let Some(server) = start_server() else { return };
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments; handles freed at the end.
    unsafe {
        let rt = osb_runtime_new(ptr::null(), &mut err);
        let s = osb_session_new(rt, &mut err);
        let conn = json!({"domain": server.addr, "api_key": API_KEY});
        let opened = session_call(
            s,
            "sandbox.create",
            json!({"connection": conn, "image": "ubuntu:22.04", "metadata": {"suite": "ffi"}}),
        )
        .unwrap_or_else(|e| panic!("create: {e:?}"));
        let sb = opened["handle"].clone();

        // A started run pulled in batches; the last item carries the folded outcome.
        let started = session_call_blocking(
            s,
            "commands.start",
            json!({"sandbox": sb, "command": "echo a; echo b >&2; exit 3", "handlers": true}),
        )
        .expect("start");
        let run = started["handle"].clone();
        let mut items = Vec::new();
        loop {
            let b =
                session_call_blocking(s, "execution.next_batch", json!({"handle": run, "max": 2}))
                    .expect("batch");
            items.extend(b["events"].as_array().expect("events").iter().cloned());
            if b["done"] == true {
                break;
            }
        }
        let types: Vec<&str> = items.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(types.first(), Some(&"init"));
        assert_eq!(types.last(), Some(&"end"));
        let end = items.last().expect("end");
        assert_eq!(end["execution"]["exit_code"], 3);
        assert_eq!(end["execution"]["stdout"], json!(["a\n"]));
        assert!(osb_session_release(s, run.as_u64().expect("run")));

        // Uploads and downloads through the byte functions.
        let up = session_call(
            s,
            "upload.open",
            json!({"sandbox": sb, "path": "/tmp/up.bin"}),
        )
        .expect("upload.open")["handle"]
            .as_u64()
            .expect("upload");
        let data = vec![7u8; 300_000];
        for chunk in data.chunks(65536) {
            let rc = osb_session_upload_write_blocking(
                s,
                up,
                chunk.as_ptr(),
                chunk.len(),
                ptr::null(),
                &mut err,
            );
            assert_eq!(rc, 0);
        }
        session_call(s, "upload.finish", json!({"handle": up})).expect("finish");
        let dl = session_call(
            s,
            "download.open",
            json!({"sandbox": sb, "path": "/tmp/up.bin"}),
        )
        .expect("download.open")["handle"]
            .as_u64()
            .expect("download");
        let mut got = Vec::new();
        let mut buf = vec![0u8; 100_000];
        loop {
            let n = osb_session_download_read(
                s,
                dl,
                buf.as_mut_ptr(),
                buf.len(),
                ptr::null(),
                &mut err,
            );
            assert!(n >= 0, "read failed");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n as usize]);
        }
        assert_eq!(got, data);
        session_call(s, "download.close", json!({"handle": dl})).expect("close");

        // An upload the library reads from a descriptor: a duplicate of `file`'s, from
        // offset 1000; the shared offset ends at the end.
        let path = std::env::temp_dir().join(format!("osb-ffi-fd-{}.bin", std::process::id()));
        let src: Vec<u8> = (0..2_500_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &src).expect("write temp file");
        let mut file = std::fs::File::open(&path).expect("open temp file");
        let dup = std::os::fd::IntoRawFd::into_raw_fd(file.try_clone().expect("dup"));
        let args = c(
            &json!({"sandbox": sb, "path": "/tmp/fd.bin", "size": src.len() - 1000}).to_string(),
        );
        let rc = osb_session_upload_fd_blocking(
            s,
            args.as_ptr(),
            dup,
            1000,
            (src.len() - 1000) as u64,
            ptr::null(),
            &mut err,
        );
        assert_eq!(
            rc,
            0,
            "{:?}",
            (!err.is_null()).then(|| Err::take(err).message)
        );
        let pos = std::io::Seek::stream_position(&mut file).expect("offset");
        assert_eq!(pos, src.len() as u64);
        drop(file);
        let _ = std::fs::remove_file(&path);
        let dl = session_call(
            s,
            "download.open",
            json!({"sandbox": sb, "path": "/tmp/fd.bin"}),
        )
        .expect("download.open")["handle"]
            .as_u64()
            .expect("download");
        let mut stored = Vec::new();
        loop {
            let n = osb_session_download_read(
                s,
                dl,
                buf.as_mut_ptr(),
                buf.len(),
                ptr::null(),
                &mut err,
            );
            assert!(n >= 0, "read failed");
            if n == 0 {
                break;
            }
            stored.extend_from_slice(&buf[..n as usize]);
        }
        session_call(s, "download.close", json!({"handle": dl})).expect("close");
        assert!(
            stored == src[1000..],
            "stored {} bytes, not the file's tail",
            stored.len()
        );
        let info = session_call(
            s,
            "files.get_file_info",
            json!({"sandbox": sb, "paths": ["/tmp/fd.bin"]}),
        )
        .expect("info");
        assert_eq!(info["/tmp/fd.bin"]["size"], src.len() - 1000, "{info}");

        session_call(s, "sandbox.kill", json!({"sandbox": sb})).expect("kill");
        osb_session_free(s);
        osb_runtime_free(rt);
    }
}

#[test]
fn an_op_in_flight_outlives_its_session_and_runtime() {
    // A server that accepts and never answers: the call stays in flight until its timeout.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let _hold = std::thread::spawn(move || {
        let conns: Vec<_> = listener.incoming().take(4).collect();
        std::thread::sleep(Duration::from_secs(10));
        drop(conns);
    });
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments; the handles are freed while the call is in flight, which
    // the contract allows.
    unsafe {
        let rt = osb_runtime_new(c(r#"{"worker_threads":1}"#).as_ptr(), &mut err);
        let s = osb_session_new(rt, &mut err);
        let op = c("manager.get_sandbox_info");
        let args = c(&json!({"sandbox_id": "x", "connection":
            {"domain": addr, "request_timeout_s": 1}})
        .to_string());
        let (tx, rx) = mpsc::channel::<Outcome>();
        let ud = Box::into_raw(Box::new(tx)) as usize;
        osb_session_call(
            s,
            op.as_ptr(),
            args.as_ptr(),
            ptr::null(),
            Some(on_done),
            ud,
        );
        osb_session_free(s);
        osb_runtime_free(rt);
        let o = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the callback still fires");
        assert!(!o.error.is_null());
        let e = Err::take(o.error);
        assert!(e.kind == "timeout" || e.kind == "connection", "{e:?}");
    }
}
