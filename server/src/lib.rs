//! The OpenSandbox reference server.
//!
//! Two halves live in one binary:
//! - [`control`]: the control plane — lifecycle API, store, isolation runtime,
//!   auth, the server proxy that forwards each sandbox's execd route, and the
//!   egress-policy API.
//! - [`agent`]: the execd agent, started inside each sandbox (`opensandbox-server agent`)
//!   and reached by the control plane over a Unix socket.

pub use opensandbox_agent as agent;
pub mod control;
