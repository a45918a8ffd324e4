//! `opensandbox-core`: the one client-side implementation of the OpenSandbox protocol.
