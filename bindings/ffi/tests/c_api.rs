//! The C ABI called through its `extern "C"` functions, as a host would: offline checks
//! always, and a real-server round trip when OPENSANDBOX_SERVER_BIN points to a built
//! `opensandbox-server` (otherwise those tests print a skip line).
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

fn sandbox_call(sb: *const OsbSandbox, op: &str, args: Value) -> Result<Value, Err> {
    let op = c(op);
    let args = c(&args.to_string());
    call_async(|cb, ud| unsafe {
        osb_sandbox_call(sb, op.as_ptr(), args.as_ptr(), ptr::null(), cb, ud)
    })
    .map(|p| take_json(p.cast()))
}

fn manager_call(m: *const OsbManager, op: &str, args: Value) -> Result<Value, Err> {
    let op = c(op);
    let args = c(&args.to_string());
    call_async(|cb, ud| unsafe {
        osb_manager_call(m, op.as_ptr(), args.as_ptr(), ptr::null(), cb, ud)
    })
    .map(|p| take_json(p.cast()))
}

/// One event as (type, text, json).
fn event(ev: *mut OsbEvent) -> (i32, String, Value) {
    let mut view = OsbEventView {
        event_type: -1,
        text: ptr::null(),
        text_len: 0,
        timestamp: 0,
    };
    // SAFETY: live event, freed at the end.
    unsafe {
        osb_event_view(ev, &mut view);
        let text = if view.text.is_null() {
            String::new()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(view.text, view.text_len))
                .into_owned()
        };
        let json = take_json(osb_event_json(ev));
        osb_event_free(ev);
        (view.event_type, text, json)
    }
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

#[test]
fn config_from_json_and_errors() {
    let mut err: *mut OsbError = ptr::null_mut();
    let opts = c(
        r#"{"domain":"https://example.test:9/","api_key":"k","request_timeout_ms":1500,
        "headers":{"X-A":"b"},"use_server_proxy":true,"retry":null}"#,
    );
    // SAFETY: valid arguments; handles freed below.
    unsafe {
        let cfg = osb_config_new(opts.as_ptr(), &mut err);
        assert!(!cfg.is_null() && err.is_null());
        let d = take_json(osb_config_describe(cfg));
        assert_eq!(d["domain"], "example.test:9");
        assert_eq!(d["protocol"], "https");
        assert_eq!(d["base_url"], "https://example.test:9/v1");
        assert_eq!(d["request_timeout_ms"], 1500);
        assert_eq!(d["headers"]["X-A"], "b");
        assert_eq!(d["use_server_proxy"], true);
        assert_eq!(d["api_key_set"], true);
        osb_config_free(cfg);

        // null api_key = no key at all, even with the environment set.
        let cfg = osb_config_new(c(r#"{"api_key":null}"#).as_ptr(), &mut err);
        assert_eq!(take_json(osb_config_describe(cfg))["api_key_set"], false);
        osb_config_free(cfg);

        let bad = osb_config_new(c("{not json").as_ptr(), &mut err);
        assert!(bad.is_null());
        let e = Err::take(err);
        assert_eq!(e.kind, "invalid_argument");
        assert_eq!(e.status, 0);
        assert!(e.message.contains("JSON"), "{}", e.message);
        assert_eq!(e.json["kind"], "invalid_argument");
        assert_eq!(e.json["status"], Value::Null);

        let bad = osb_config_new(c(r#"{"protocol":"gopher"}"#).as_ptr(), &mut err);
        assert!(bad.is_null());
        assert_eq!(Err::take(err).kind, "invalid_argument");

        // NULL error_out is allowed; NULL handles are no-ops.
        assert!(osb_config_new(c("[").as_ptr(), ptr::null_mut()).is_null());
        osb_config_free(ptr::null_mut());
        osb_sandbox_free(ptr::null_mut());
        osb_error_free(ptr::null_mut());
        osb_string_free(ptr::null_mut());
        assert!(osb_error_kind(ptr::null()).is_null());
    }
}

#[test]
fn argument_errors_reach_the_callback_synchronously() {
    // NULL handle and unknown op: the callback fires (on this thread) with an error.
    let e = call_async(|cb, ud| unsafe {
        osb_sandbox_call(
            ptr::null(),
            c("get_info").as_ptr(),
            ptr::null(),
            ptr::null(),
            cb,
            ud,
        )
    })
    .expect_err("NULL sandbox");
    assert_eq!(e.kind, "invalid_argument");

    let mut err = ptr::null_mut();
    // SAFETY: valid arguments.
    let cfg = unsafe { osb_config_new(c(r#"{"domain":"127.0.0.1:9"}"#).as_ptr(), &mut err) };
    // SAFETY: valid config.
    let m = unsafe { osb_manager_new(cfg, &mut err) };
    assert!(!m.is_null());
    let e = manager_call(m, "no_such_op", json!({})).expect_err("unknown op");
    assert_eq!(e.kind, "invalid_argument");
    assert!(e.message.contains("no_such_op"));
    let e = manager_call(m, "get_sandbox_info", json!({"nope": 1})).expect_err("missing arg");
    assert_eq!(e.kind, "invalid_argument");
    // Nothing listens on port 9: a connection error with the operation name.
    let e = manager_call(m, "get_sandbox_info", json!({"sandbox_id": "x"})).expect_err("conn");
    assert_eq!(e.kind, "connection", "{e:?}");
    // SAFETY: handles from above.
    unsafe {
        osb_manager_free(m);
        osb_config_free(cfg);
    }
}

#[test]
fn cancel_token_cancels_and_free_does_not() {
    let mut err = ptr::null_mut();
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
    let cfg_json = c(
        &json!({"domain": addr.to_string(), "request_timeout_ms": 60000,
        "retry": null})
        .to_string(),
    );
    // SAFETY: valid arguments; everything freed below.
    unsafe {
        let cfg = osb_config_new(cfg_json.as_ptr(), &mut err);
        let m = osb_manager_new(cfg, &mut err);
        let tok = osb_cancel_new();
        assert!(!osb_cancel_is_cancelled(tok));
        let (tx, rx) = mpsc::channel::<Outcome>();
        let ud = Box::into_raw(Box::new(tx)) as usize;
        let args = c(r#"{"sandbox_id":"abc"}"#);
        osb_manager_call(
            m,
            c("get_sandbox_info").as_ptr(),
            args.as_ptr(),
            tok,
            Some(on_done),
            ud,
        );
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
        let e = call_async(|cb, ud| {
            osb_manager_call(
                m,
                c("get_sandbox_info").as_ptr(),
                args.as_ptr(),
                tok,
                cb,
                ud,
            )
        })
        .expect_err("already cancelled");
        assert_eq!(e.kind, "cancelled");
        osb_cancel_free(tok);
        osb_manager_free(m);
        osb_config_free(cfg);
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

struct Handles {
    cfg: *mut OsbConfig,
    mgr: *mut OsbManager,
    sb: *mut OsbSandbox,
}

impl Drop for Handles {
    fn drop(&mut self) {
        if !self.sb.is_null() {
            let _ = sandbox_call(self.sb, "kill", Value::Null);
        }
        // SAFETY: handles owned by this struct.
        unsafe {
            osb_sandbox_free(self.sb);
            osb_manager_free(self.mgr);
            osb_config_free(self.cfg);
        }
    }
}

fn setup(server: &Server) -> Handles {
    let mut err = ptr::null_mut();
    let opts = c(&json!({"domain": server.addr, "api_key": API_KEY}).to_string());
    // SAFETY: valid arguments.
    let cfg = unsafe { osb_config_new(opts.as_ptr(), &mut err) };
    assert!(!cfg.is_null());
    // SAFETY: valid config.
    let mgr = unsafe { osb_manager_new(cfg, &mut err) };
    let create = c(r#"{"image":"ubuntu:22.04","metadata":{"suite":"ffi"}}"#);
    let sb = call_async(|cb, ud| unsafe {
        osb_sandbox_create(cfg, create.as_ptr(), ptr::null(), cb, ud)
    })
    .unwrap_or_else(|e| panic!("create: {e:?}"))
    .cast::<OsbSandbox>();
    Handles { cfg, mgr, sb }
}

fn sandbox_id(sb: *const OsbSandbox) -> String {
    // SAFETY: borrowed string of a live sandbox.
    opt(unsafe { osb_sandbox_id(sb) }).expect("id")
}

#[test]
fn real_server_lifecycle_and_errors() {
    let Some(server) = start_server() else { return };
    let h = setup(&server);
    let id = sandbox_id(h.sb);

    let info = sandbox_call(h.sb, "get_info", Value::Null).expect("get_info");
    assert_eq!(info["id"], id.as_str());
    assert_eq!(info["status"]["state"], "Running");
    assert_eq!(info["metadata"]["suite"], "ffi");
    assert_eq!(
        sandbox_call(h.sb, "is_healthy", Value::Null).expect("health"),
        true
    );

    // The blocking forms give the same results and errors.
    let mut err = ptr::null_mut();
    // SAFETY: live handles; owned results taken below.
    unsafe {
        let p = osb_sandbox_call_blocking(
            h.sb,
            c("get_info").as_ptr(),
            ptr::null(),
            ptr::null(),
            &mut err,
        );
        assert_eq!(take_json(p)["id"], id.as_str());
        let args = c(r#"{"sandbox_id":"does-not-exist"}"#);
        let p = osb_manager_call_blocking(
            h.mgr,
            c("get_sandbox_info").as_ptr(),
            args.as_ptr(),
            ptr::null(),
            &mut err,
        );
        assert!(p.is_null());
        assert_eq!(Err::take(err).status, 404);
    }

    let page = manager_call(
        h.mgr,
        "list_sandbox_infos",
        json!({"metadata": {"suite": "ffi"}}),
    )
    .expect("list");
    assert!(page["items"]
        .as_array()
        .expect("items")
        .iter()
        .any(|s| s["id"] == id.as_str()));

    let renewed = sandbox_call(h.sb, "renew", json!({"timeout_s": 1200})).expect("renew");
    assert!(renewed["expiresAt"].is_string());

    // A missing sandbox: every error field survives the boundary.
    let e = manager_call(
        h.mgr,
        "get_sandbox_info",
        json!({"sandbox_id": "does-not-exist"}),
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

    // Connect by id yields a second handle onto the same sandbox.
    let opts = c(&json!({"sandbox_id": id}).to_string());
    let other = call_async(|cb, ud| unsafe {
        osb_sandbox_connect(h.cfg, opts.as_ptr(), ptr::null(), cb, ud)
    })
    .expect("connect")
    .cast::<OsbSandbox>();
    assert_eq!(sandbox_id(other), id);
    let ex = sandbox_call(
        other,
        "commands.run",
        json!({"command": "echo via-connect"}),
    )
    .expect("run");
    assert_eq!(ex["logs"]["stdout"][0]["text"], "via-connect");
    // SAFETY: handle from connect.
    unsafe { osb_sandbox_free(other) };
}

#[test]
fn real_server_commands_and_streams() {
    let Some(server) = start_server() else { return };
    let h = setup(&server);

    let ex = sandbox_call(
        h.sb,
        "commands.run",
        json!({"command": "echo hello; echo oops >&2; exit 3", "envs": {"A": "1"}}),
    )
    .expect("run");
    assert_eq!(ex["logs"]["stdout"][0]["text"], "hello");
    assert_eq!(ex["logs"]["stderr"][0]["text"], "oops");
    assert_eq!(ex["exit_code"], 3);
    assert_eq!(ex["error"]["name"], "CommandExecError");

    // Pull iteration, async.
    let args = c(r#"{"command":"for i in 1 2 3; do echo line$i; done"}"#);
    let st = call_async(|cb, ud| unsafe {
        osb_sandbox_open_stream(
            h.sb,
            c("commands.run").as_ptr(),
            args.as_ptr(),
            ptr::null(),
            cb,
            ud,
        )
    })
    .expect("open")
    .cast::<OsbStream>();
    let mut types = Vec::new();
    let mut lines = Vec::new();
    loop {
        let ev =
            call_async(|cb, ud| unsafe { osb_stream_next(st, ptr::null(), cb, ud) }).expect("next");
        if ev.is_null() {
            break;
        }
        let (ty, text, json) = event(ev.cast());
        if ty == OSB_EVENT_STDOUT {
            lines.push(text);
            assert_eq!(json["type"], "stdout");
        }
        if ty == OSB_EVENT_EXECUTION_COMPLETE {
            assert!(json["execution_time_ms"].is_number());
        }
        types.push(ty);
    }
    assert_eq!(types.first(), Some(&OSB_EVENT_INIT));
    assert_eq!(types.last(), Some(&OSB_EVENT_EXECUTION_COMPLETE));
    assert_eq!(lines, ["line1", "line2", "line3"]);
    // After the end, next keeps returning end.
    let again = call_async(|cb, ud| unsafe { osb_stream_next(st, ptr::null(), cb, ud) });
    assert!(again.expect("end").is_null());
    // SAFETY: stream from open.
    unsafe { osb_stream_free(st) };

    // Pull iteration, blocking, and an early free of a running command.
    let args = c(r#"{"command":"echo start; sleep 30","interrupt_on_drop":true}"#);
    let st = call_async(|cb, ud| unsafe {
        osb_sandbox_open_stream(
            h.sb,
            c("commands.run").as_ptr(),
            args.as_ptr(),
            ptr::null(),
            cb,
            ud,
        )
    })
    .expect("open")
    .cast::<OsbStream>();
    let mut err = ptr::null_mut();
    // SAFETY: live stream.
    let (ty, exec_id, _) = event(unsafe { osb_stream_next_blocking(st, ptr::null(), &mut err) });
    assert_eq!(ty, OSB_EVENT_INIT);
    // SAFETY: live stream.
    let (ty, text, _) = event(unsafe { osb_stream_next_blocking(st, ptr::null(), &mut err) });
    assert_eq!((ty, text.as_str()), (OSB_EVENT_STDOUT, "start"));
    // A cancelled blocking next returns at once with `cancelled`.
    // SAFETY: live handles.
    unsafe {
        let tok = osb_cancel_new();
        osb_cancel_cancel(tok);
        let ev = osb_stream_next_blocking(st, tok, &mut err);
        assert!(ev.is_null());
        assert_eq!(Err::take(err).kind, "cancelled");
        osb_cancel_free(tok);
        osb_stream_free(st);
    }
    // interrupt_on_drop: the command stops on the server.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = sandbox_call(
            h.sb,
            "commands.get_command_status",
            json!({"execution_id": exec_id}),
        )
        .expect("status");
        if s["running"] == false {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "command still running after free: {s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Cancelling a run-to-completion call.
    let tok = osb_cancel_new();
    let args = c(r#"{"command":"sleep 30"}"#);
    let (tx, rx) = mpsc::channel::<Outcome>();
    let ud = Box::into_raw(Box::new(tx)) as usize;
    // SAFETY: live handles.
    unsafe {
        osb_sandbox_call(
            h.sb,
            c("commands.run").as_ptr(),
            args.as_ptr(),
            tok,
            Some(on_done),
            ud,
        );
        std::thread::sleep(Duration::from_millis(300));
        osb_cancel_cancel(tok);
    }
    let o = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("cancelled callback");
    assert_eq!(Err::take(o.error).kind, "cancelled");
    // SAFETY: token from above.
    unsafe { osb_cancel_free(tok) };

    // Sessions and code contexts through the call ops.
    let s = sandbox_call(h.sb, "commands.create_session", json!({})).expect("session");
    let sid = s["session_id"].as_str().expect("sid").to_owned();
    sandbox_call(
        h.sb,
        "commands.run_in_session",
        json!({"session_id": sid, "command": "X=42"}),
    )
    .expect("set");
    let ex = sandbox_call(
        h.sb,
        "commands.run_in_session",
        json!({"session_id": sid, "command": "echo $X"}),
    )
    .expect("get");
    assert_eq!(ex["logs"]["stdout"][0]["text"], "42");
    sandbox_call(h.sb, "commands.delete_session", json!({"session_id": sid})).expect("del");
}

#[test]
fn real_server_files_upload_download() {
    let Some(server) = start_server() else { return };
    let h = setup(&server);

    // Chunked upload: 3 MiB in 64 KiB writes, async and blocking mixed.
    let data: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let args =
        c(&json!({"path": "/tmp/ffi/blob.bin", "mode": 644, "size": data.len()}).to_string());
    let mut err = ptr::null_mut();
    // SAFETY: live sandbox; buffers outlive the calls.
    unsafe {
        let up = osb_sandbox_upload(h.sb, args.as_ptr(), &mut err);
        assert!(
            !up.is_null(),
            "upload: {:?}",
            (!err.is_null()).then(|| Err::take(err))
        );
        for (i, chunk) in data.chunks(64 * 1024).enumerate() {
            if i % 2 == 0 {
                assert_eq!(
                    osb_upload_write_blocking(
                        up,
                        chunk.as_ptr(),
                        chunk.len(),
                        ptr::null(),
                        &mut err
                    ),
                    0
                );
            } else {
                call_async(|cb, ud| {
                    osb_upload_write(up, chunk.as_ptr(), chunk.len(), ptr::null(), cb, ud)
                })
                .expect("write");
            }
        }
        let r = call_async(|cb, ud| osb_upload_finish(up, ptr::null(), cb, ud)).expect("finish");
        assert!(r.is_null());
        osb_upload_free(up);
    }
    let info = sandbox_call(
        h.sb,
        "files.get_file_info",
        json!({"paths": ["/tmp/ffi/blob.bin"]}),
    )
    .expect("info");
    assert_eq!(info["/tmp/ffi/blob.bin"]["size"], data.len());
    assert_eq!(info["/tmp/ffi/blob.bin"]["mode"], 644);

    // Download with the blocking read into a small buffer.
    let args = c(r#"{"path":"/tmp/ffi/blob.bin"}"#);
    let dl = call_async(|cb, ud| unsafe {
        osb_sandbox_download(h.sb, args.as_ptr(), ptr::null(), cb, ud)
    })
    .expect("download")
    .cast::<OsbDownload>();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 10_000];
    loop {
        // SAFETY: live download, buffer of `buf.len()` bytes.
        let n =
            unsafe { osb_download_read(dl, buf.as_mut_ptr(), buf.len(), ptr::null(), &mut err) };
        assert!(n >= 0, "read failed");
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n as usize]);
    }
    // SAFETY: download from above.
    unsafe { osb_download_free(dl) };
    assert!(got == data, "downloaded bytes differ");

    // Download with async chunks and a Range.
    let args = c(r#"{"path":"/tmp/ffi/blob.bin","range":"bytes=10-19"}"#);
    let dl = call_async(|cb, ud| unsafe {
        osb_sandbox_download(h.sb, args.as_ptr(), ptr::null(), cb, ud)
    })
    .expect("download")
    .cast::<OsbDownload>();
    let mut got = Vec::new();
    loop {
        let ch = call_async(|cb, ud| unsafe { osb_download_next(dl, ptr::null(), cb, ud) })
            .expect("next");
        if ch.is_null() {
            break;
        }
        let ch = ch.cast::<OsbChunk>();
        let mut len = 0usize;
        // SAFETY: live chunk, freed right after copying.
        unsafe {
            let p = osb_chunk_data(ch, &mut len);
            got.extend_from_slice(std::slice::from_raw_parts(p, len));
            osb_chunk_free(ch);
        }
    }
    // SAFETY: download from above.
    unsafe { osb_download_free(dl) };
    assert_eq!(got, &data[10..20]);

    // A missing file fails when the download opens, as not_found.
    let args = c(r#"{"path":"/tmp/ffi/missing"}"#);
    let e = call_async(|cb, ud| unsafe {
        osb_sandbox_download(h.sb, args.as_ptr(), ptr::null(), cb, ud)
    })
    .expect_err("missing");
    assert_eq!(e.kind, "not_found", "{e:?}");

    // Declared size mismatch: the upload fails and nothing is stored.
    let args = c(r#"{"path":"/tmp/ffi/short.bin","size":10}"#);
    // SAFETY: live sandbox.
    unsafe {
        let up = osb_sandbox_upload(h.sb, args.as_ptr(), &mut err);
        assert_eq!(
            osb_upload_write_blocking(up, b"abc".as_ptr(), 3, ptr::null(), &mut err),
            0
        );
        let e =
            call_async(|cb, ud| osb_upload_finish(up, ptr::null(), cb, ud)).expect_err("mismatch");
        assert_eq!(e.kind, "invalid_argument");
        osb_upload_free(up);
    }

    // Text write + read + search through the JSON ops.
    sandbox_call(
        h.sb,
        "files.write_files",
        json!({"entries": [{"path": "/tmp/ffi/a.txt", "data": "alpha\nbeta\n"},
                            {"path": "/tmp/ffi/b.bin", "data_b64": "AAEC"}]}),
    )
    .expect("write");
    let t = sandbox_call(
        h.sb,
        "files.read_file",
        json!({"path": "/tmp/ffi/a.txt", "offset": 2}),
    )
    .expect("read");
    assert_eq!(t, "beta");
    let b = sandbox_call(h.sb, "files.read_bytes", json!({"path": "/tmp/ffi/b.bin"})).expect("rb");
    assert_eq!(b, "AAEC");
    let found = sandbox_call(
        h.sb,
        "files.search",
        json!({"path": "/tmp/ffi", "pattern": "*.txt"}),
    )
    .expect("search");
    assert_eq!(found.as_array().map(Vec::len), Some(1));
    let r = sandbox_call(
        h.sb,
        "files.replace_contents_detailed",
        json!({"entries": [{"path": "/tmp/ffi/a.txt", "old_content": "beta", "new_content": "gamma"}]}),
    )
    .expect("replace");
    assert_eq!(r[0]["replaced_count"], 1);
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

        // NULLs.
        assert!(osb_session_new(ptr::null(), ptr::null_mut()).is_null());
        assert!(!osb_session_release(ptr::null(), 1));
        osb_session_free(s);
        osb_session_free(ptr::null_mut());
        osb_runtime_free(ptr::null_mut());

        // The default runtime is shared and never stopped by free.
        let d = osb_runtime_default(&mut err);
        assert!(!d.is_null());
        osb_runtime_free(d);
        let d = osb_runtime_default(&mut err);
        let s = osb_session_new(d, &mut err);
        assert!(session_call(s, "config.new", json!({})).is_ok());
        osb_session_free(s);
        osb_runtime_free(d);
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
        assert_eq!(end["execution"]["stdout"], json!(["a"]));
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
