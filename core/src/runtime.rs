//! One lazily created multi-thread tokio runtime for bindings, safe across `fork()`.
//!
//! A forked child inherits the runtime's memory but not its threads, so using it there
//! hangs forever. A `pthread_atfork` child handler forgets the inherited runtime (it is
//! leaked, never dropped: dropping would try to join threads that do not exist) and the
//! child lazily builds a fresh one on first use, as LanceDB does.
//!
//! [`block_on_request`] runs a request-shaped call on a current-thread runtime owned by
//! the calling thread instead (see its doc and docs/architecture.md "Per-call cost").

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock, Weak};

use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinError;

static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static BUILD_LOCK: Mutex<()> = Mutex::new(());
static ATFORK: Once = Once::new();
/// Bumped in a forked child, so that a thread's local runtime from before the fork is
/// forgotten, not used (its epoll instance and sockets are shared with the parent).
static GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn child_after_fork() {
    // Only atomic stores: the child of a multi-threaded process may run nothing that
    // allocates or locks before exec or before it rebuilds its state.
    RUNTIME.store(std::ptr::null_mut(), Ordering::SeqCst);
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

fn register_atfork() {
    ATFORK.call_once(|| {
        // SAFETY: registering a handler that only performs atomic stores.
        unsafe {
            libc::pthread_atfork(None, None, Some(child_after_fork));
        }
    });
}

/// The process-wide runtime, built on first use (and again in a forked child).
///
/// # Panics
/// Panics only if the OS refuses to create the runtime's threads, which leaves nothing
/// sensible to return.
pub fn runtime() -> &'static Runtime {
    let p = RUNTIME.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: non-null pointers in RUNTIME come from Box::leak below and are never
        // freed, so they stay valid for the rest of the process.
        return unsafe { &*p };
    }
    register_atfork();
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let p = RUNTIME.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: another thread stored it under BUILD_LOCK; like every non-null
        // pointer in RUNTIME it comes from Box::leak below and is never freed.
        return unsafe { &*p };
    }
    // The one failure left is the OS refusing threads (see "Panics"): there is no
    // caller-visible error to return from a `&'static Runtime` accessor.
    #[allow(clippy::expect_used)]
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("opensandbox-tokio-worker")
        .build()
        .expect("cannot start the opensandbox tokio runtime");
    let leaked: &'static Runtime = Box::leak(Box::new(rt));
    RUNTIME.store(leaked as *const Runtime as *mut Runtime, Ordering::Release);
    leaked
}

/// Runs a future to completion on the shared runtime from a thread that is not
/// already inside a runtime (the blocking entry point of sync bindings).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// Runs `f` on a worker of the shared runtime and waits for its outcome on this
/// thread (which must not be inside a runtime). For a request, better than
/// [`block_on`]: the future runs next to the connection task it talks to, and this
/// thread is woken once, when it is done, instead of at every step of the exchange.
///
/// # Errors
/// The task's `JoinError` when `f` panicked.
pub fn block_on_worker<F>(f: F) -> Result<F::Output, tokio::task::JoinError>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let rt = runtime();
    rt.block_on(rt.spawn(f))
}

/// One HTTP client per config pool (see [`local_client`]), for a runtime that only
/// its callers drive: the connections of these clients are spawned on that runtime, so
/// they are handed out only while a call drives it.
type Clients = Arc<Mutex<Vec<(Weak<OnceLock<reqwest::Client>>, reqwest::Client)>>>;

/// A calling thread's own current-thread runtime and the connection pools it drives.
struct Local {
    generation: u64,
    /// Declared before `clients`: dropped first, it closes the connections it drives.
    rt: Runtime,
    clients: Clients,
}

/// What a thread in a call on a caller-driven runtime (its [`Local`] or a [`Driver`])
/// needs to know.
struct Call {
    /// The runtime that work which must outlive the call goes to ([`spawn_detached`]).
    home: Handle,
    /// The pools of the runtime being driven.
    clients: Clients,
    /// The driver being driven, if that is what the call runs on.
    driver: Option<Arc<Driver>>,
}

thread_local! {
    static LOCAL: RefCell<Option<Rc<Local>>> = const { RefCell::new(None) };
    /// Set while this thread runs a call on a caller-driven runtime.
    static CALL: RefCell<Option<Call>> = const { RefCell::new(None) };
}

/// This thread's local runtime, built on first use (and again after a fork).
fn local() -> Option<Rc<Local>> {
    register_atfork();
    let generation = GENERATION.load(Ordering::SeqCst);
    LOCAL
        .try_with(|cell| {
            let mut slot = cell.try_borrow_mut().ok()?;
            if let Some(l) = slot.as_ref() {
                if l.generation == generation {
                    return Some(l.clone());
                }
                // From before a fork: its driver and sockets are the parent's too, and
                // dropping it could wait for blocking threads that do not exist here.
                std::mem::forget(slot.take());
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            let l = Rc::new(Local {
                generation,
                rt,
                clients: Clients::default(),
            });
            *slot = Some(l.clone());
            Some(l)
        })
        .ok()
        .flatten()
}

/// Whether this thread is running a call on a caller-driven runtime.
fn in_local_call() -> bool {
    CALL.try_with(|c| c.borrow().is_some()).unwrap_or(false)
}

/// Marks this thread as in a call for the guard's lifetime.
struct InCall;

impl InCall {
    fn enter(call: Call) -> InCall {
        CALL.with(|c| *c.borrow_mut() = Some(call));
        InCall
    }
}

impl Drop for InCall {
    fn drop(&mut self) {
        let _ = CALL.try_with(|c| c.borrow_mut().take());
    }
}

fn home_of_call() -> Option<Handle> {
    CALL.try_with(|c| c.borrow().as_ref().map(|c| c.home.clone()))
        .ok()
        .flatten()
}

/// Runs a request-shaped call to completion from a thread that is not inside a
/// runtime, on a current-thread runtime owned by this thread, with this thread's own
/// connections: the thread sends the request and sleeps in `epoll_wait` until the
/// answer arrives, as curl does, instead of waking a worker that later wakes it
/// ([`block_on_worker`]), two cross-thread wake-ups that cost a host round trip each on
/// a VM whose idle vCPUs halt (docs/architecture.md "Per-call cost").
///
/// The rule it relies on: a connection (or any socket, or a task) made on the local
/// runtime progresses only while this thread is inside a call. So `f` must finish its
/// requests within the call: it must not return or hand over a response body or a
/// socket to be read later (a started run, an open download, a PTY), and work it
/// leaves behind goes to the shared runtime ([`spawn_detached`]). The HTTP clients of
/// the core follow the rule by themselves: inside such a call a config's requests use
/// this thread's pool, elsewhere the shared one.
///
/// Falls back to [`block_on_worker`] inside a call already (a nested call) or when no
/// local runtime can be built.
///
/// # Errors
/// The task's `JoinError` when `f` panicked on the fallback path (on the local path a
/// panic of `f` unwinds to the caller, as with [`block_on`]).
pub fn block_on_request<F>(f: F) -> Result<F::Output, JoinError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    block_on_request_with(runtime().handle(), f)
}

/// [`block_on_request`] with `home` as the shared runtime (for a host that owns its
/// runtime, the FFI's `osb_runtime_new`): the fallback runs there, and so does work a
/// call leaves behind.
///
/// # Errors
/// As [`block_on_request`].
pub fn block_on_request_with<F>(home: &Handle, f: F) -> Result<F::Output, JoinError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if !in_local_call() && Handle::try_current().is_err() && !requests_on_workers() {
        if let Some(local) = local() {
            let _in_call = InCall::enter(Call {
                home: home.clone(),
                clients: local.clients.clone(),
                driver: None,
            });
            return Ok(local.rt.block_on(f));
        }
    }
    home.block_on(home.spawn(f))
}

/// `OPEN_SANDBOX_BLOCKING_CALLS=worker` turns [`block_on_request`] into
/// [`block_on_worker`] for the whole process: a switch for comparing the two, and a way
/// back should a host's threads not suit a runtime of their own.
pub const ENV_BLOCKING_CALLS: &str = "OPEN_SANDBOX_BLOCKING_CALLS";

fn requests_on_workers() -> bool {
    static ON_WORKERS: OnceLock<bool> = OnceLock::new();
    *ON_WORKERS.get_or_init(|| {
        std::env::var(ENV_BLOCKING_CALLS).is_ok_and(|v| v.eq_ignore_ascii_case("worker"))
    })
}

/// Spawns `fut`, which must outlive the current call: on the home runtime inside a
/// [`block_on_request`] call (a task left on the local runtime would stall until the
/// thread's next call), else on the current runtime, else on the shared one.
pub fn spawn_detached<F>(fut: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    if let Some(h) = home_of_call() {
        h.spawn(fut);
    } else if let Ok(h) = Handle::try_current() {
        h.spawn(fut);
    } else {
        runtime().spawn(fut);
    }
}

/// The HTTP client of the config pool `pool` for this thread's local runtime, built
/// with `build` on first use; `None` outside a [`block_on_request`] call (use the
/// shared pool). Entries of dropped configs are pruned here.
pub(crate) fn local_client(
    pool: &Arc<OnceLock<reqwest::Client>>,
    build: impl FnOnce(&Handle) -> crate::Result<reqwest::Client>,
) -> Option<crate::Result<reqwest::Client>> {
    let (home, clients) = CALL
        .try_with(|c| {
            c.borrow()
                .as_ref()
                .map(|c| (c.home.clone(), c.clients.clone()))
        })
        .ok()
        .flatten()?;
    // Inside a local call the shared pool must not be used: a connection it opened here
    // would be spawned on the local runtime and stall the other threads that take it.
    let Ok(mut clients) = clients.try_lock() else {
        return Some(Err(crate::Error::internal(
            "connection_config",
            "the calling thread's connection pool is unavailable",
        )));
    };
    clients.retain(|(w, _)| w.strong_count() > 0);
    if let Some((_, c)) = clients
        .iter()
        .find(|(w, _)| w.as_ptr() == Arc::as_ptr(pool))
    {
        return Some(Ok(c.clone()));
    }
    Some(build(&home).inspect(|c| clients.push((Arc::downgrade(pool), c.clone()))))
}

/// A current-thread runtime with connection pools of its own that no thread of its own
/// drives: whichever thread calls [`Driver::block_on`] does (one at a time). For a
/// response body that a host reads over many calls, possibly from different threads (a
/// download read by goroutines, which move between threads): opened and read through
/// one driver, the thread that asks for the next bytes reads the socket itself, as
/// curl and Go's net/http do, instead of waking a worker that reads it and then wakes
/// the host (several cross-thread wake-ups per received chunk; docs/architecture.md
/// "Downloads").
///
/// The rule of [`block_on_request`] holds here too: what runs on a driver progresses
/// only inside a call to it. A body opened on a driver must be read through it
/// ([`Driver::block_on`], or from elsewhere by driving it on a blocking thread).
pub struct Driver {
    generation: u64,
    home: Handle,
    /// `None` once dropped (the runtime is shut down without blocking).
    rt: Mutex<Option<Runtime>>,
    clients: Clients,
}

/// Why [`Driver::block_on`] cannot run a future.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverError {
    /// The thread is already in a call on a caller-driven runtime.
    Nested,
    /// The driver was made before a `fork()` of this process.
    Forked,
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DriverError::Nested => "a blocking read inside another blocking call",
            DriverError::Forked => "the transfer was opened before this process forked",
        })
    }
}

impl std::error::Error for DriverError {}

impl Driver {
    /// A driver whose left-over work goes to `home` (the shared runtime). `None` when
    /// the driver cannot be used: the OS refuses a runtime, or
    /// `OPEN_SANDBOX_BLOCKING_CALLS=worker` asks for the shared runtime only.
    pub fn new(home: &Handle) -> Option<Arc<Driver>> {
        if requests_on_workers() {
            return None;
        }
        register_atfork();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        Some(Arc::new(Driver {
            generation: GENERATION.load(Ordering::SeqCst),
            home: home.clone(),
            rt: Mutex::new(Some(rt)),
            clients: Clients::default(),
        }))
    }

    /// Whether [`Driver::block_on`] can run here at all (not made before a `fork()`).
    pub fn is_usable(&self) -> bool {
        self.generation == GENERATION.load(Ordering::SeqCst)
    }

    /// The driver this thread is in a call on, if any.
    pub fn current() -> Option<Arc<Driver>> {
        CALL.try_with(|c| c.borrow().as_ref().and_then(|c| c.driver.clone()))
            .ok()
            .flatten()
    }

    /// Whether this thread is in a call on this driver.
    pub fn is_current(self: &Arc<Self>) -> bool {
        Driver::current().is_some_and(|d| Arc::ptr_eq(&d, self))
    }

    /// Runs `f` to completion on this driver, on the calling thread. Calls from several
    /// threads take turns. The thread must not be inside a runtime's `block_on` (tokio
    /// panics there); a blocking-pool thread (`spawn_blocking`) may call it.
    ///
    /// # Errors
    /// [`DriverError`] when `f` cannot run here, with `f` unpolled (to run elsewhere).
    pub fn block_on<F: Future>(self: &Arc<Self>, f: F) -> Result<F::Output, (DriverError, F)> {
        if self.generation != GENERATION.load(Ordering::SeqCst) {
            return Err((DriverError::Forked, f));
        }
        if in_local_call() {
            return Err((DriverError::Nested, f));
        }
        let rt = self.rt.lock().unwrap_or_else(|e| e.into_inner());
        let Some(rt) = rt.as_ref() else {
            return Err((DriverError::Forked, f));
        };
        let _in_call = InCall::enter(Call {
            home: self.home.clone(),
            clients: self.clients.clone(),
            driver: Some(self.clone()),
        });
        Ok(rt.block_on(f))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let rt = self.rt.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(rt) = rt {
            if self.generation == GENERATION.load(Ordering::SeqCst) {
                // Without waiting: a driver may be dropped inside another runtime (a
                // download released by an async call), where a blocking drop panics.
                rt.shutdown_background();
            } else {
                // From before a fork: its driver and sockets are the parent's too.
                std::mem::forget(rt);
            }
        }
    }
}

/// Resolves host names on the home runtime's blocking pool, so that a local runtime
/// never starts a thread of its own (the FFI's hosts own every thread of the library).
pub(crate) struct HomeResolver(pub(crate) Handle);

impl reqwest::dns::Resolve for HomeResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let home = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = home
                .spawn_blocking(move || {
                    std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), 0))
                        .map(|a| a.collect::<Vec<_>>())
                })
                .await??;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_is_shared_and_works() {
        let a = runtime() as *const Runtime;
        let b = runtime() as *const Runtime;
        assert_eq!(a, b);
        assert_eq!(block_on(async { 40 + 2 }), 42);
    }

    #[test]
    fn forked_child_gets_a_working_runtime() {
        assert_eq!(block_on(async { 1 }), 1);
        // SAFETY: the child only runs our runtime code and then _exit()s.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // A hang in the child must fail the test, not hang it: SIGALRM kills it.
            // SAFETY: plain syscall.
            unsafe { libc::alarm(30) };
            let ok = block_on(async { tokio::task::spawn(async { 7 }).await.unwrap_or(0) }) == 7;
            // SAFETY: leave the child without running the parent's atexit handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status),
            "child did not exit normally (hung or crashed)"
        );
        assert_eq!(libc::WEXITSTATUS(status), 0);
    }

    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const T: Duration = Duration::from_secs(5);

    /// A keep-alive HTTP/1.1 server on the shared runtime that answers every GET with
    /// 200 and counts the connections it accepted.
    fn server() -> (String, Arc<AtomicUsize>) {
        body_server(0)
    }

    /// [`server`] answering with a body of `len` bytes (`i % 251`).
    fn body_server(len: usize) -> (String, Arc<AtomicUsize>) {
        let body: Arc<[u8]> = (0..len).map(|i| (i % 251) as u8).collect();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        runtime().spawn(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((mut sock, _)) = l.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                let body = body.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    loop {
                        let end = loop {
                            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break p + 4;
                            }
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        buf.drain(..end);
                        let ok =
                            format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", body.len());
                        if sock.write_all(ok.as_bytes()).await.is_err()
                            || sock.write_all(&body).await.is_err()
                        {
                            return;
                        }
                    }
                });
            }
        });
        (addr, count)
    }

    fn execd(addr: &str) -> crate::ExecdClient {
        execd_with(addr, crate::ConnectionConfig::new())
    }

    fn execd_with(addr: &str, config: crate::ConnectionConfig) -> crate::ExecdClient {
        let ep = crate::models::Endpoint {
            endpoint: addr.to_owned(),
            headers: Default::default(),
            origin: None,
        };
        crate::ExecdClient::new(config, &ep).unwrap()
    }

    /// Like [`server`], but each connection is closed once it has been idle for
    /// `keep_alive` after an answer (as uvicorn does after 5 s).
    fn closing_server(keep_alive: Duration) -> (String, Arc<AtomicUsize>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        runtime().spawn(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            while let Ok((mut sock, _)) = l.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut chunk = [0u8; 4096];
                    let mut buf = Vec::new();
                    let mut answered = false;
                    loop {
                        let read = sock.read(&mut chunk);
                        let n = if answered {
                            match tokio::time::timeout(keep_alive, read).await {
                                Ok(r) => r,
                                Err(_) => return, // idle too long: close
                            }
                        } else {
                            read.await
                        };
                        match n {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        // Requests here have no body: the head ends the request.
                        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..p + 4);
                            let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                            if sock.write_all(ok).await.is_err() {
                                return;
                            }
                            answered = true;
                        }
                    }
                });
            }
        });
        (addr, count)
    }

    #[test]
    fn a_callers_pool_never_outlives_common_server_keep_alives() {
        let default = crate::ConnectionConfig::new();
        assert!(default.local_pool_idle_timeout() <= Duration::from_secs(2));
        let short = crate::ConnectionConfig::new().with_pool(4, Duration::from_millis(50));
        assert_eq!(short.local_pool_idle_timeout(), Duration::from_millis(50));
    }

    /// Regression guard for the cap above: a connection the server closed while the
    /// thread was out of a call is not reused for a POST (which is not retried), because
    /// a local pool drops idle entries at checkout without being driven.
    #[test]
    fn a_connection_closed_between_calls_is_not_reused() {
        let (addr, conns) = closing_server(Duration::from_millis(150));
        let config = crate::ConnectionConfig::new().with_pool(4, Duration::from_millis(100));
        let x = execd_with(&addr, config);
        let post = |x: crate::ExecdClient| {
            block_on_request(async move { x.set_permissions(&[]).await })
                .unwrap()
                .unwrap()
        };
        post(x.clone());
        std::thread::sleep(Duration::from_millis(400));
        post(x.clone());
        assert_eq!(conns.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_request_call_runs_on_the_caller_with_its_own_connections() {
        let (addr, conns) = server();
        let x = execd(&addr);
        let (x1, x2) = (x.clone(), x.clone());
        let (idle_tx, idle_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            let me = std::thread::current().id();
            let ran_on =
                block_on_request(
                    async move { x1.ping(T).await.map(|_| std::thread::current().id()) },
                );
            assert_eq!(
                ran_on.unwrap().unwrap(),
                me,
                "the call ran on another thread"
            );
            idle_tx.send(()).unwrap();
            // Out of a call: nothing drives this thread's connection until the next one.
            go_rx.recv().unwrap();
            block_on_request(async move { x2.ping(T).await })
                .unwrap()
                .unwrap();
        });
        idle_rx.recv().unwrap();
        assert_eq!(conns.load(Ordering::SeqCst), 1);
        // The shared runtime must not take the idle thread's connection: its request
        // would wait for that thread's next call.
        let r = runtime().block_on(async { tokio::time::timeout(T, x.ping(T)).await });
        assert!(matches!(r, Ok(Ok(()))), "shared request stalled or failed");
        assert_eq!(conns.load(Ordering::SeqCst), 2);
        go_tx.send(()).unwrap();
        t.join().unwrap();
        assert_eq!(
            conns.load(Ordering::SeqCst),
            2,
            "the thread did not reuse its connection"
        );
        // A thread that ended dropped its runtime and connections without a panic (the
        // join above), and another thread gets its own.
        let x3 = x.clone();
        std::thread::spawn(move || block_on_request(async move { x3.ping(T).await }))
            .join()
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(conns.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn work_a_call_leaves_behind_runs_on_the_home_runtime() {
        let (tx, rx) = std::sync::mpsc::channel();
        block_on_request(async move {
            spawn_detached(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = tx.send(());
            });
        })
        .unwrap();
        // This thread is out of its call: a task left on its local runtime would never run.
        rx.recv_timeout(T).expect("the detached task stalled");
    }

    #[test]
    fn a_forked_child_makes_new_local_connections() {
        let (addr, conns) = server();
        let x = execd(&addr);
        let x1 = x.clone();
        block_on_request(async move { x1.ping(T).await })
            .unwrap()
            .unwrap();
        assert_eq!(conns.load(Ordering::SeqCst), 1);
        // SAFETY: the child only runs our runtime code and then _exit()s.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: plain syscall; a hang fails the test instead of hanging it.
            unsafe { libc::alarm(30) };
            let ok = matches!(block_on_request(async move { x.ping(T).await }), Ok(Ok(())));
            // SAFETY: leave the child without running the parent's atexit handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "child hung or crashed");
        assert_eq!(libc::WEXITSTATUS(status), 0);
        // The child did not write into the parent's connection: it opened its own.
        assert_eq!(conns.load(Ordering::SeqCst), 2);
    }

    /// A download's body opened on a driver is read by whichever thread asks for the
    /// next bytes; the driver's connection never enters the shared pool.
    #[test]
    fn a_body_on_a_driver_is_read_by_the_thread_that_drives_it() {
        use futures_util::StreamExt;
        const LEN: usize = 8 << 20;
        let (addr, conns) = body_server(LEN);
        let x = execd(&addr);
        let d = Driver::new(runtime().handle()).unwrap();
        let x1 = x.clone();
        let body = d
            .block_on(async move {
                x1.read_bytes_stream("/f", &crate::models::ReadOptions::default())
                    .await
            })
            .ok()
            .unwrap()
            .unwrap();
        assert_eq!(conns.load(Ordering::SeqCst), 1);
        // Each read from a new thread, as goroutines move between threads: the body
        // progresses only inside these calls, on the calling thread.
        let mut body = Some(body);
        let (mut got, mut at) = (Vec::new(), 0usize);
        loop {
            let (d1, mut b) = (d.clone(), body.take().unwrap());
            let (chunk, b) = std::thread::spawn(move || {
                let me = std::thread::current().id();
                let (chunk, ran_on) = d1
                    .block_on(async { (b.next().await, std::thread::current().id()) })
                    .ok()
                    .unwrap();
                assert_eq!(ran_on, me);
                assert!(!d1.is_current(), "still marked in a call");
                (chunk, b)
            })
            .join()
            .unwrap();
            body = Some(b);
            match chunk {
                Some(c) => {
                    let c = c.unwrap();
                    got.extend((at..at + c.len()).map(|i| (i % 251) as u8));
                    assert!(
                        c.iter().zip(&got[at..]).all(|(a, b)| a == b),
                        "bytes differ"
                    );
                    at += c.len();
                }
                None => break,
            }
        }
        assert_eq!(at, LEN);
        // The driver's idle connection stays its own: the shared runtime opens another
        // and does not stall on it.
        let r = runtime().block_on(async { tokio::time::timeout(T, x.ping(T)).await });
        assert!(matches!(r, Ok(Ok(()))), "shared request stalled or failed");
        assert_eq!(conns.load(Ordering::SeqCst), 2);
        // Released inside another runtime (an async release of a download): no panic.
        drop(body);
        runtime().block_on(async move { drop(d) });
    }

    #[test]
    fn a_driver_refuses_a_nested_call_and_gives_the_future_back() {
        let d = Driver::new(runtime().handle()).unwrap();
        let d1 = d.clone();
        let refused = block_on_request(async move {
            match d1.block_on(async { 1 }) {
                Ok(_) => None,
                Err((e, f)) => Some((e, f.await)),
            }
        })
        .unwrap();
        assert_eq!(refused, Some((DriverError::Nested, 1)));
        assert_eq!(d.block_on(async { 2 }).ok(), Some(2));
    }

    #[test]
    fn a_driver_from_before_a_fork_is_refused_in_the_child() {
        let d = Driver::new(runtime().handle()).unwrap();
        assert_eq!(d.block_on(async { 1 }).ok(), Some(1));
        // SAFETY: the child only runs our runtime code and then _exit()s.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: plain syscall; a hang fails the test instead of hanging it.
            unsafe { libc::alarm(30) };
            let ok = matches!(d.block_on(async { 1 }), Err((DriverError::Forked, _)));
            drop(d);
            // SAFETY: leave the child without running the parent's atexit handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert!(pid > 0, "fork failed");
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "child hung or crashed");
        assert_eq!(libc::WEXITSTATUS(status), 0);
    }
}
