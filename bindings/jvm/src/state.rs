//! Native objects the Java side refers to by `long` handle: connection configurations,
//! managers and sandboxes. Java never hands an object to Rust and Rust never keeps a
//! Java object: the registry maps handles to plain Rust values.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use opensandbox_core::models::CodeContext;
use opensandbox_core::{ConnectionConfig, Sandbox, SandboxManager};

use crate::args::Args;
use crate::protocol::Failure;

#[derive(Clone)]
enum Obj {
    Config(Box<ConnectionConfig>),
    Manager(Box<SandboxManager>),
    Sandbox(Box<Sandbox>),
}

#[derive(Default)]
pub struct State {
    objs: Mutex<HashMap<i64, Obj>>,
    contexts: Mutex<HashMap<(String, String), CodeContext>>,
    next: AtomicI64,
}

/// The process-wide registry.
pub static STATE: LazyLock<State> = LazyLock::new(State::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere never leaves these maps half-updated: recover the guard.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    fn insert(&self, obj: Obj) -> i64 {
        let h = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        lock(&self.objs).insert(h, obj);
        h
    }

    fn get(&self, h: i64) -> Option<Obj> {
        lock(&self.objs).get(&h).cloned()
    }

    /// Frees a handle (idempotent).
    pub fn release(&self, h: i64) -> bool {
        lock(&self.objs).remove(&h).is_some()
    }

    pub fn keep_config(&self, cfg: ConnectionConfig) -> i64 {
        self.insert(Obj::Config(Box::new(cfg)))
    }

    pub fn keep_manager(&self, m: SandboxManager) -> i64 {
        self.insert(Obj::Manager(Box::new(m)))
    }

    /// Registers a sandbox and returns its handle.
    pub fn keep(&self, s: &Sandbox) -> i64 {
        self.insert(Obj::Sandbox(Box::new(s.clone())))
    }

    /// The configuration of the request: the handle in `config`, else the defaults
    /// (environment variables).
    pub fn config(&self, args: &Args) -> Result<ConnectionConfig, Failure> {
        match args.opt_i64("config")? {
            None => Ok(ConnectionConfig::new()),
            Some(h) => match self.get(h) {
                Some(Obj::Config(c)) => Ok(*c),
                _ => Err(Failure::Driver(format!(
                    "no connection config with handle {h}"
                ))),
            },
        }
    }

    /// The manager of `handle`, or a new one over `config`.
    pub fn manager(&self, args: &Args) -> Result<SandboxManager, Failure> {
        if let Some(h) = args.opt_i64("handle")? {
            return match self.get(h) {
                Some(Obj::Manager(m)) => Ok(*m),
                _ => Err(Failure::Driver(format!(
                    "no manager with handle {h} (closed?)"
                ))),
            };
        }
        Ok(SandboxManager::new(self.config(args)?)?)
    }

    /// The sandbox of `handle`.
    pub async fn sandbox(&self, args: &Args) -> Result<Sandbox, Failure> {
        let h = args
            .opt_i64("handle")?
            .ok_or_else(|| Failure::Driver("argument handle is required".into()))?;
        match self.get(h) {
            Some(Obj::Sandbox(s)) => Ok(*s),
            _ => Err(Failure::Driver(format!(
                "no sandbox with handle {h} (closed?)"
            ))),
        }
    }

    pub fn keep_context(&self, sandbox: &str, ctx: &CodeContext) {
        if let Some(id) = &ctx.id {
            lock(&self.contexts).insert((sandbox.to_owned(), id.clone()), ctx.clone());
        }
    }

    pub fn context(&self, sandbox: &str, id: &str) -> Option<CodeContext> {
        lock(&self.contexts)
            .get(&(sandbox.to_owned(), id.to_owned()))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn handles_are_typed_and_released_once() {
        let state = State::default();
        let h = state.keep_config(ConnectionConfig::new().with_domain("example.test:1"));
        let args = Args::new("t", json!({"config": h}));
        assert_eq!(state.config(&args).unwrap().domain(), "example.test:1");
        // A config handle is not a manager handle.
        let wrong = Args::new("t", json!({"handle": h}));
        assert!(matches!(state.manager(&wrong), Err(Failure::Driver(_))));
        assert!(state.release(h));
        assert!(!state.release(h));
        assert!(matches!(state.config(&args), Err(Failure::Driver(_))));
    }
}
