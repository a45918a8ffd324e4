//! One lazily created multi-thread tokio runtime for bindings, safe across `fork()`.
//!
//! A forked child inherits the runtime's memory but not its threads, so using it there
//! hangs forever. A `pthread_atfork` child handler forgets the inherited runtime (it is
//! leaked, never dropped: dropping would try to join threads that do not exist) and the
//! child lazily builds a fresh one on first use, as LanceDB does.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, Once};

use tokio::runtime::Runtime;

static RUNTIME: AtomicPtr<Runtime> = AtomicPtr::new(std::ptr::null_mut());
static BUILD_LOCK: Mutex<()> = Mutex::new(());
static ATFORK: Once = Once::new();

extern "C" fn child_after_fork() {
    // Only an atomic store: the child of a multi-threaded process may run nothing that
    // allocates or locks before exec or before it rebuilds its state.
    RUNTIME.store(std::ptr::null_mut(), Ordering::SeqCst);
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
    ATFORK.call_once(|| {
        // SAFETY: registering a handler that only performs an atomic store.
        unsafe {
            libc::pthread_atfork(None, None, Some(child_after_fork));
        }
    });
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
}
