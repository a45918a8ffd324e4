//! `opensandbox-core`: the one client-side implementation of the OpenSandbox protocol.
//!
//! Every language package is a thin layer over this crate. It offers async functions to
//! Rust callers and a shared, fork-safe runtime ([`runtime`]) to bindings.
//!
//! - [`ConnectionConfig`]: server, key, timeouts, headers, retries; one pool per config.
//! - [`SandboxManager`]: the lifecycle API (sandboxes, snapshots, diagnostics, (1.1)
//!   templates).
//! - [`Sandbox`]: a handle with readiness, bound lifecycle calls, [`ExecdClient`] and
//!   [`EgressClient`] (egress policy and (1.1) the credential vault).
//! - [`stream`]: the tolerant event parser, [`EventStream`], [`Execution`] and handlers.
//! - [`pty`]: interactive PTY sessions over a WebSocket.
//! - [`Error`]: one error type with a stable [`ErrorKind`].
#![deny(missing_docs)]

pub mod config;
pub mod egress;
pub mod endpoint_cache;
pub mod error;
pub mod execd;
mod http;
pub mod lifecycle;
pub mod models;
pub mod pty;
pub mod retry;
pub mod runtime;
pub mod sandbox;
pub mod stream;
mod templates;
mod vault;

pub use config::{ConnectionConfig, Protocol};
pub use egress::{EgressClient, DEFAULT_EGRESS_PORT};
pub use error::{Error, ErrorKind, Result};
pub use execd::{ExecdClient, MetricsStream, WriteData, WriteEntry, DEFAULT_EXECD_PORT};
pub use execd::{LogChunk, LogFollower};
pub use execd::{RunControl, TAIL_CURSOR_HEADER};
pub use lifecycle::{SandboxManager, ORIGIN_HEADER};
pub use pty::{
    PtyAttachOptions, PtyChannel, PtyConnection, PtyCreateRequest, PtyEvent, PtyMode,
    PtySessionStatus, PtyWriter,
};
pub use retry::RetryPolicy;
pub use sandbox::{ConnectOptions, HealthCheck, Sandbox, SandboxCreateOptions};
pub use stream::{
    EventStream, Execution, ExecutionBuilder, ExecutionComplete, ExecutionError, ExecutionHandlers,
    ExecutionKind, ExecutionLogs, ExecutionResult, OutputMessage, ServerEvent,
};
