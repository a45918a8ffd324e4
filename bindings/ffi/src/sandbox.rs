//! `OsbManager` and `OsbSandbox`: creation, connection and the JSON call ops.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::time::Duration;

use opensandbox_core::models::{
    CredentialProxyConfig, ImageAuth, ImageSpec, NetworkPolicy, PlatformSpec, Volume,
};
use opensandbox_core::{ConnectOptions, Result, Sandbox, SandboxCreateOptions, SandboxManager};
use serde::Deserialize;
use serde_json::Value;

use crate::cancel::OsbCancel;
use crate::config::OsbConfig;
use crate::error::OsbError;
use crate::ops;
use crate::util::{
    block, c_string, guard, guard_result, into_c_string, invalid, opt_str, parse_args, req_str,
    start, token, Completion, OsbCallback, Payload,
};

/// A lifecycle client (opaque). Freed with `osb_manager_free`.
pub struct OsbManager {
    pub(crate) manager: SandboxManager,
}

/// A connected sandbox (opaque). Freed with `osb_sandbox_free` (which does not kill it).
pub struct OsbSandbox {
    pub(crate) sandbox: Sandbox,
    id: CString,
}

impl OsbSandbox {
    pub(crate) fn new(sandbox: Sandbox) -> OsbSandbox {
        let id = c_string(sandbox.id());
        OsbSandbox { sandbox, id }
    }
}

/// Parses the JSON of a call: NULL/empty = `null`.
fn json_value(op: &str, s: Option<&str>) -> Result<Value> {
    match s.map(str::trim) {
        None | Some("") => Ok(Value::Null),
        Some(s) => {
            serde_json::from_str(s).map_err(|e| invalid(op, format!("bad arguments JSON: {e}")))
        }
    }
}

// ---------------------------------------------------------------------------------
// Manager

/// A lifecycle client over `c`'s settings. Owned: free with `osb_manager_free`.
/// NULL with `*error_out` set on failure.
///
/// # Safety
/// `c` is a live `OsbConfig`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_manager_new(
    c: *const OsbConfig,
    error_out: *mut *mut OsbError,
) -> *mut OsbManager {
    // SAFETY: caller contract.
    unsafe {
        guard_result("manager.new", error_out, std::ptr::null_mut(), || {
            let c = c
                .as_ref()
                .ok_or_else(|| invalid("manager.new", "config must not be NULL"))?;
            let manager = SandboxManager::new(c.config.clone())?;
            Ok(Box::into_raw(Box::new(OsbManager { manager })))
        })
    }
}

/// Runs a lifecycle op (API.md §6.1) with `args_json` (NULL = no arguments). The
/// callback's result is an owned JSON `char *` (`null` for ops without a value).
///
/// # Safety
/// `m` is a live `OsbManager`; `op`/`args_json` are NULL or NUL-terminated strings
/// (borrowed for the call); `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_manager_call(
    m: *const OsbManager,
    op: *const c_char,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start("manager.call", unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let m = unsafe { m.as_ref() }
            .ok_or_else(|| invalid("manager.call", "manager must not be NULL"))?;
        // SAFETY: caller contract.
        let op = unsafe { req_str("manager.call", "op", op) }?.to_owned();
        // SAFETY: caller contract.
        let args = json_value(&op, unsafe {
            opt_str("manager.call", "args_json", args_json)
        }?)?;
        Ok(ops::manager_op(m.manager.clone(), op, args))
    });
}

/// Frees a manager (local resources only). NULL is a no-op.
///
/// # Safety
/// `m` is NULL or an `OsbManager` from `osb_manager_new`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_manager_free(m: *mut OsbManager) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(m) }
}

// ---------------------------------------------------------------------------------
// Sandbox creation

/// Options of `osb_sandbox_create` (API.md §6.2).
#[derive(Deserialize, Default)]
#[serde(default)]
pub(crate) struct CreateArgs {
    image: Option<String>,
    image_auth: Option<ImageAuth>,
    snapshot_id: Option<String>,
    entrypoint: Option<Vec<String>>,
    /// Absent = 600 s; null = manual cleanup.
    #[serde(deserialize_with = "present")]
    timeout_s: Option<Option<f64>>,
    ready_timeout_ms: Option<u64>,
    health_check_polling_interval_ms: Option<u64>,
    env: BTreeMap<String, String>,
    metadata: BTreeMap<String, String>,
    resource: Option<BTreeMap<String, String>>,
    platform: Option<PlatformSpec>,
    network_policy: Option<NetworkPolicy>,
    credential_proxy: Option<CredentialProxyConfig>,
    volumes: Vec<Volume>,
    extensions: BTreeMap<String, String>,
    secure_access: bool,
    skip_health_check: bool,
}

fn present<'de, D, T>(d: D) -> std::result::Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

pub(crate) fn create_options(a: CreateArgs) -> Result<SandboxCreateOptions> {
    const OP: &str = "sandbox.create";
    let mut o = SandboxCreateOptions {
        image: a.image.map(|uri| ImageSpec {
            uri,
            auth: a.image_auth,
        }),
        snapshot_id: a.snapshot_id,
        ..Default::default()
    };
    if let Some(e) = a.entrypoint {
        o.entrypoint = e;
    }
    match a.timeout_s {
        None => {}
        Some(None) => o.timeout = None,
        Some(Some(s)) => {
            o.timeout = Some(
                Duration::try_from_secs_f64(s)
                    .map_err(|_| invalid(OP, "timeout_s must be a non-negative number"))?,
            )
        }
    }
    if let Some(ms) = a.ready_timeout_ms {
        o.ready_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = a.health_check_polling_interval_ms {
        o.health_check_polling_interval = Duration::from_millis(ms);
    }
    o.env = a.env;
    o.metadata = a.metadata;
    if let Some(r) = a.resource {
        o.resource = r;
    }
    o.platform = a.platform;
    o.network_policy = a.network_policy;
    o.credential_proxy = a.credential_proxy;
    o.volumes = a.volumes;
    o.extensions = a.extensions;
    o.secure_access = a.secure_access;
    o.skip_health_check = a.skip_health_check;
    Ok(o)
}

/// Options of `osb_sandbox_connect` / `osb_sandbox_resume`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ConnectArgs {
    sandbox_id: String,
    ready_timeout_ms: Option<u64>,
    health_check_polling_interval_ms: Option<u64>,
    skip_health_check: bool,
}

fn connect_options(a: &ConnectArgs) -> ConnectOptions {
    let mut o = ConnectOptions::default();
    if let Some(ms) = a.ready_timeout_ms {
        o.timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = a.health_check_polling_interval_ms {
        o.health_check_polling_interval = Duration::from_millis(ms);
    }
    o.skip_health_check = a.skip_health_check;
    o
}

/// Creates a sandbox and waits for readiness (API.md §6.2 options; NULL = defaults,
/// which fail without an image or snapshot). The callback's result is an owned
/// `OsbSandbox *` (free with `osb_sandbox_free`). If the sandbox never becomes ready,
/// or the call is cancelled after the server created it, it is deleted again.
///
/// # Safety
/// `c` is a live `OsbConfig`; `options_json` is NULL or NUL-terminated (borrowed for
/// the call); `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_create(
    c: *const OsbConfig,
    options_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    const OP: &str = "sandbox.create";
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start(OP, unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let c = unsafe { c.as_ref() }.ok_or_else(|| invalid(OP, "config must not be NULL"))?;
        // SAFETY: caller contract.
        let json = unsafe { opt_str(OP, "options_json", options_json) }?;
        let opts = create_options(parse_args(OP, json)?)?;
        let config = c.config.clone();
        Ok(async move {
            let sb = Sandbox::create(config, opts).await?;
            Ok(Payload::handle(OsbSandbox::new(sb)))
        })
    });
}

unsafe fn connect_like(
    op: &'static str,
    resume: bool,
    c: *const OsbConfig,
    options_json: *const c_char,
    cancel: *const OsbCancel,
    done: Completion,
) {
    // SAFETY: caller contract (token).
    start(op, unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let c = unsafe { c.as_ref() }.ok_or_else(|| invalid(op, "config must not be NULL"))?;
        // SAFETY: caller contract.
        let json = unsafe { opt_str(op, "options_json", options_json) }?;
        let a: ConnectArgs = parse_args(op, json)?;
        if a.sandbox_id.trim().is_empty() {
            return Err(invalid(op, "sandbox_id is required"));
        }
        let config = c.config.clone();
        Ok(async move {
            let opts = connect_options(&a);
            let sb = if resume {
                Sandbox::resume(config, &a.sandbox_id, opts).await?
            } else {
                Sandbox::connect(config, &a.sandbox_id, opts).await?
            };
            Ok(Payload::handle(OsbSandbox::new(sb)))
        })
    });
}

/// Connects to an existing sandbox (`{sandbox_id, ready_timeout_ms,
/// health_check_polling_interval_ms, skip_health_check}`). Result: owned `OsbSandbox *`.
///
/// # Safety
/// As `osb_sandbox_create`.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_connect(
    c: *const OsbConfig,
    options_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract.
    unsafe { connect_like("sandbox.connect", false, c, options_json, cancel, done) }
}

/// Resumes a paused sandbox on the server, then connects (same options as
/// `osb_sandbox_connect`). Result: owned `OsbSandbox *`.
///
/// # Safety
/// As `osb_sandbox_create`.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_resume(
    c: *const OsbConfig,
    options_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract.
    unsafe { connect_like("sandbox.resume", true, c, options_json, cancel, done) }
}

/// The sandbox id. Borrowed: valid until `osb_sandbox_free(s)`. NULL when `s` is NULL.
///
/// # Safety
/// `s` is NULL or a live `OsbSandbox`.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_id(s: *const OsbSandbox) -> *const c_char {
    // SAFETY: caller contract.
    guard(std::ptr::null(), || {
        unsafe { s.as_ref() }.map_or(std::ptr::null(), |s| s.id.as_ptr())
    })
}

/// Runs a sandbox op (API.md §6.3) with `args_json` (NULL = no arguments). The
/// callback's result is an owned JSON `char *` (`null` for ops without a value).
///
/// # Safety
/// `s` is a live `OsbSandbox`; `op`/`args_json` are NULL or NUL-terminated strings
/// (borrowed for the call); `cancel` is NULL or a live `OsbCancel`.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_call(
    s: *const OsbSandbox,
    op: *const c_char,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    callback: OsbCallback,
    user_data: usize,
) {
    let done = Completion::new(callback, user_data);
    // SAFETY: caller contract (token).
    start("sandbox.call", unsafe { token(cancel) }, done, || {
        // SAFETY: caller contract.
        let s = unsafe { s.as_ref() }
            .ok_or_else(|| invalid("sandbox.call", "sandbox must not be NULL"))?;
        // SAFETY: caller contract.
        let op = unsafe { req_str("sandbox.call", "op", op) }?.to_owned();
        // SAFETY: caller contract.
        let args = json_value(&op, unsafe {
            opt_str("sandbox.call", "args_json", args_json)
        }?)?;
        Ok(ops::sandbox_op(s.sandbox.clone(), op, args))
    });
}

/// Blocking `osb_sandbox_call`: runs the op on the calling thread and returns its owned
/// JSON result (`null` for ops without a value; free with `osb_string_free`), or NULL
/// with `*error_out` set. Not callable from a library callback. Cheaper than the async
/// form for hosts whose threads may block (one thread hop less).
///
/// # Safety
/// As `osb_sandbox_call`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_call_blocking(
    s: *const OsbSandbox,
    op: *const c_char,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> *mut c_char {
    const OP: &str = "sandbox.call";
    // SAFETY: caller contract.
    unsafe {
        guard_result(OP, error_out, std::ptr::null_mut(), || {
            let s = s
                .as_ref()
                .ok_or_else(|| invalid(OP, "sandbox must not be NULL"))?;
            let op = req_str(OP, "op", op)?.to_owned();
            let args = json_value(&op, opt_str(OP, "args_json", args_json)?)?;
            let fut = ops::sandbox_op(s.sandbox.clone(), op, args);
            blocking_json(block(OP, token(cancel), fut)?)
        })
    }
}

/// Blocking `osb_manager_call` (see `osb_sandbox_call_blocking`).
///
/// # Safety
/// As `osb_manager_call`; `error_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn osb_manager_call_blocking(
    m: *const OsbManager,
    op: *const c_char,
    args_json: *const c_char,
    cancel: *const OsbCancel,
    error_out: *mut *mut OsbError,
) -> *mut c_char {
    const OP: &str = "manager.call";
    // SAFETY: caller contract.
    unsafe {
        guard_result(OP, error_out, std::ptr::null_mut(), || {
            let m = m
                .as_ref()
                .ok_or_else(|| invalid(OP, "manager must not be NULL"))?;
            let op = req_str(OP, "op", op)?.to_owned();
            let args = json_value(&op, opt_str(OP, "args_json", args_json)?)?;
            let fut = ops::manager_op(m.manager.clone(), op, args);
            blocking_json(block(OP, token(cancel), fut)?)
        })
    }
}

fn blocking_json(p: Payload) -> Result<*mut c_char> {
    match p {
        Payload::Json(s) => Ok(into_c_string(s)),
        Payload::Null => Ok(into_c_string("null".to_owned())),
        Payload::Ptr(ptr, free) => {
            // SAFETY: `free` is the destructor paired with `ptr`.
            unsafe { free(ptr) };
            Err(crate::util::internal("call", "unexpected handle result"))
        }
    }
}

/// Frees the local handle (connections); the remote sandbox keeps running. NULL is a
/// no-op. Operations in flight on it still complete.
///
/// # Safety
/// `s` is NULL or an `OsbSandbox` this library handed out, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn osb_sandbox_free(s: *mut OsbSandbox) {
    // SAFETY: caller contract.
    unsafe { crate::util::free_box(s) }
}
