//! The start message of a warm sandbox (`agent --start-fd N`).
//!
//! Under an OCI runtime the server starts containers ahead of the create requests that
//! will use them (the warm pool, `control/oci/warm.rs`): the container and this agent
//! are up, but the agent waits, before anything else, for the one message that makes
//! the container a particular sandbox: its entrypoint, its environment and its output
//! framing. The message comes through a pipe the server holds (the read end is the
//! inherited fd `N`), so neither a client nor the sandbox can send or forge it.
//!
//! The message is read before the async runtime exists, while the agent is still one
//! thread: the environment it carries is set on the agent's own process, so the
//! entrypoint and every command inherit it exactly as if the container had been
//! started with it.

use std::collections::BTreeMap;
use std::io::Read;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::commands::OutputFraming;

/// Largest start message accepted: above the lifecycle API's 10 MiB request limit,
/// so any environment a create can carry fits; it bounds a bad pipe.
const MAX_MESSAGE: u64 = 16 * 1024 * 1024;

/// What the server sends a warm sandbox's agent when a create request takes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartMessage {
    /// The sandbox's entrypoint (argv); empty: serve until stopped.
    pub entrypoint: Vec<String>,
    /// The create request's environment, set over the container's own (defaults and
    /// the image's), as a cold start would have it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `kept` or `lines`, as `--output-framing` spells it.
    #[serde(deserialize_with = "framing")]
    pub output_framing: OutputFraming,
}

fn framing<'de, D: serde::Deserializer<'de>>(d: D) -> Result<OutputFraming, D::Error> {
    use clap::ValueEnum;
    let name = String::deserialize(d)?;
    OutputFraming::from_str(&name, false)
        .map_err(|_| serde::de::Error::custom(format!("unknown output framing {name:?}")))
}

/// Reads the start message from the inherited pipe `fd` until the server closes it.
/// `Ok(None)`: the pipe was closed without a message (the server released the warm
/// container, or died): the agent should exit without starting anything.
pub fn read(fd: i32) -> Result<Option<StartMessage>> {
    use std::os::fd::FromRawFd;
    // SAFETY: the fd was handed to this process to own (`--start-fd`); reading it as a
    // file is all we do, and it is closed when `pipe` drops.
    let pipe = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut raw = Vec::new();
    pipe.take(MAX_MESSAGE + 1)
        .read_to_end(&mut raw)
        .with_context(|| format!("reading the start message from fd {fd}"))?;
    parse(&raw)
}

fn parse(raw: &[u8]) -> Result<Option<StartMessage>> {
    if raw.len() as u64 > MAX_MESSAGE {
        bail!("the start message is larger than {MAX_MESSAGE} bytes");
    }
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let message: StartMessage = serde_json::from_slice(raw).context("parsing the start message")?;
    if let Some(k) = message
        .env
        .keys()
        .find(|k| k.is_empty() || k.contains('=') || k.contains('\0'))
    {
        bail!("the start message names an invalid variable {k:?}");
    }
    if message.env.values().any(|v| v.contains('\0')) {
        bail!("the start message has a variable with a NUL byte");
    }
    Ok(Some(message))
}

/// Sets the message's environment on this process.
///
/// Must run while the process has a single thread (before the async runtime is
/// built): setting variables races with any other thread reading the environment.
pub fn apply_env(message: &StartMessage) {
    for (k, v) in &message.env {
        std::env::set_var(k, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_without_a_message_means_released() {
        assert_eq!(parse(b"").ok(), Some(None));
        assert_eq!(parse(b" \n").ok(), Some(None));
    }

    #[test]
    fn a_message_carries_entrypoint_env_and_framing() {
        let raw = br#"{"entrypoint":["sleep","inf"],"env":{"A":"1"},"output_framing":"lines"}"#;
        let message = parse(raw)
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("parsed"));
        assert_eq!(message.entrypoint, ["sleep", "inf"]);
        assert_eq!(message.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(message.output_framing, OutputFraming::Lines);
    }

    #[test]
    fn bad_messages_are_refused() {
        for raw in [
            &br#"{"entrypoint":[],"output_framing":"kept","extra":1}"#[..],
            br#"{"entrypoint":[],"env":{"A=B":"1"},"output_framing":"kept"}"#,
            br#"{"entrypoint":[],"env":{"":"1"},"output_framing":"kept"}"#,
            br#"{"entrypoint":[],"output_framing":"sideways"}"#,
            b"not json",
        ] {
            assert!(parse(raw).is_err(), "{}", String::from_utf8_lossy(raw));
        }
        let huge = vec![b' '; (MAX_MESSAGE + 1) as usize];
        assert!(parse(&huge).is_err());
    }

    #[test]
    fn read_takes_the_whole_pipe() {
        use std::io::Write;
        use std::os::fd::IntoRawFd;
        let (reader, mut writer) = std::io::pipe().unwrap_or_else(|e| panic!("{e}"));
        let writing = std::thread::spawn(move || {
            let body = format!(
                r#"{{"entrypoint":["x"],"env":{{"BIG":"{}"}},"output_framing":"kept"}}"#,
                "v".repeat(200_000)
            );
            writer.write_all(body.as_bytes())
        });
        let message = read(reader.into_raw_fd())
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("read"));
        assert!(writing.join().is_ok_and(|r| r.is_ok()));
        assert_eq!(message.env.get("BIG").map(String::len), Some(200_000));
    }
}
