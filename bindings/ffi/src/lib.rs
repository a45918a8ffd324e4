//! C ABI over opensandbox-core, used by the Go and .NET packages (skeleton: the owner of this crate fills it in).
