//! Environment fallbacks of the connection config. Alone in its own test binary because
//! it changes the process environment.

// A test crate: a failed unwrap/expect is a failed test (clippy.toml allows them in
// #[test] functions; this covers the helpers around them too).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use opensandbox_core::{ConnectionConfig, Protocol};

#[test]
fn environment_fills_what_the_caller_left_out() {
    std::env::set_var("OPEN_SANDBOX_DOMAIN", "sandbox.example:9090");
    std::env::set_var("OPEN_SANDBOX_API_KEY", "env-key");
    std::env::set_var("OPEN_SANDBOX_PROTOCOL", "https");
    let c = ConnectionConfig::new();
    assert_eq!(c.domain(), "sandbox.example:9090");
    assert_eq!(c.api_key().as_deref(), Some("env-key"));
    assert_eq!(c.protocol(), Protocol::Https);
    assert_eq!(c.base_url(), "https://sandbox.example:9090/v1");

    // Explicit settings win over the environment; a scheme in the domain wins over all.
    let c = ConnectionConfig::new()
        .with_api_key("explicit")
        .with_protocol(Protocol::Http);
    assert_eq!(c.api_key().as_deref(), Some("explicit"));
    assert_eq!(c.base_url(), "http://sandbox.example:9090/v1");
    std::env::set_var("OPEN_SANDBOX_DOMAIN", "http://plain.example");
    assert_eq!(
        ConnectionConfig::new().base_url(),
        "http://plain.example/v1"
    );

    for k in [
        "OPEN_SANDBOX_DOMAIN",
        "OPEN_SANDBOX_API_KEY",
        "OPEN_SANDBOX_PROTOCOL",
    ] {
        std::env::remove_var(k);
    }
    let c = ConnectionConfig::new();
    assert_eq!(c.base_url(), "http://localhost:8080/v1");
    assert_eq!(c.api_key(), None);
}
