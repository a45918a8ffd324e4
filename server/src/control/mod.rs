//! The control plane: lifecycle API, store, isolation, proxy, egress policy.
