//! Calls into Python from the core's runtime threads, and the interpreter's exit.
//!
//! An async call completes on a runtime thread, which takes the GIL to hand the result
//! to the event loop (`loop.call_soon_threadsafe`). If the interpreter starts to
//! finalize meanwhile (the program's last `await` has just been resolved by that very
//! callback, while it is still inside the socket write that wakes the loop, with the
//! GIL released), CPython ends any thread that takes the GIL again with
//! `pthread_exit`, whose forced unwinding through Rust frames aborts the process
//! (exit status 134 after a program that had finished its work; seen about 1 run in 10).
//!
//! So every such call goes through [`attach`], which counts the threads inside Python,
//! and an `atexit` hook ([`before_exit`]; atexit hooks run before finalization begins)
//! stops new ones and waits, with the GIL released, for those inside to leave.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

/// Set by [`before_exit`]: runtime threads no longer enter Python.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Runtime threads between [`attach`]'s entry and exit.
static INSIDE: AtomicUsize = AtomicUsize::new(0);

/// How long the exit waits for runtime threads inside Python (a callback is a few
/// microseconds of work; a user's `read()` of an upload source may take longer).
const EXIT_WAIT: Duration = Duration::from_secs(5);

struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` with the GIL on a thread Python did not start; `None` once the interpreter
/// is exiting (the result has nobody to go to).
pub fn attach<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    // Counted before the check: either the exit hook sees this thread inside and
    // waits for it, or this thread sees the flag and stays out.
    INSIDE.fetch_add(1, Ordering::SeqCst);
    let _inside = Inside;
    if EXITING.load(Ordering::SeqCst) {
        return None;
    }
    Python::try_attach(f)
}

/// The `atexit` hook: no runtime thread enters Python from now on, and those inside
/// leave before the interpreter finalizes.
#[pyfunction]
pub fn before_exit(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + EXIT_WAIT;
    py.detach(|| {
        while INSIDE.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Registers [`before_exit`] with `atexit`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let hook = wrap_pyfunction!(before_exit, m)?;
    m.py().import("atexit")?.call_method1("register", (hook,))?;
    Ok(())
}
