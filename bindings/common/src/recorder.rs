//! The handlers of a run made to completion (`commands.run`, `code.run`,
//! `commands.run_in_session`): they record the callbacks in the order the core calls
//! them (`"handlers": true`, the `events` of the result) and hash stdout as it streams
//! (`"digest": true`, constant memory).

use opensandbox_core::{
    ExecutionComplete, ExecutionError, ExecutionHandlers, ExecutionResult, OutputMessage,
};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::stream;

/// Running SHA-256 over stdout reconstructed as lines (PROTOCOL.md §2.2).
struct StdoutDigest {
    hasher: Sha256,
    bytes: u64,
    lines: u64,
}

#[derive(Default)]
pub struct Recorder {
    events: Option<Vec<Value>>,
    digest: Option<StdoutDigest>,
    skip: bool,
}

impl Recorder {
    /// Records events when `record_events`, digests stdout when `digest`; keeps no
    /// stdout/stderr in the Execution when `skip` (or `digest`).
    pub fn new(record_events: bool, digest: bool, skip: bool) -> Recorder {
        Recorder {
            events: record_events.then(Vec::new),
            digest: digest.then(|| StdoutDigest {
                hasher: Sha256::new(),
                bytes: 0,
                lines: 0,
            }),
            skip,
        }
    }

    fn push(&mut self, event: Value) {
        if let Some(events) = &mut self.events {
            events.push(event);
        }
    }

    /// The extra result members: `events` and `stdout_digest` when asked for.
    pub fn into_extra(self) -> Map<String, Value> {
        let mut extra = Map::new();
        if let Some(events) = self.events {
            extra.insert("events".into(), Value::Array(events));
        }
        if let Some(d) = self.digest {
            let hex: String = d
                .hasher
                .finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            extra.insert(
                "stdout_digest".into(),
                json!({"sha256": hex, "bytes": d.bytes, "lines": d.lines}),
            );
        }
        extra
    }
}

impl ExecutionHandlers for Recorder {
    fn on_init(&mut self, id: &str, timestamp: i64) -> opensandbox_core::Result<()> {
        if self.events.is_some() {
            self.push(stream::init_event(id, timestamp));
        }
        Ok(())
    }

    fn on_stdout(&mut self, msg: &OutputMessage) -> opensandbox_core::Result<()> {
        if let Some(d) = &mut self.digest {
            // The output's bytes whatever the framing: a line-framed text ("abc", a
            // blank line as "\n") gets its newline back, a kept one ("abc\n") has it.
            let text = msg.text.as_bytes();
            d.hasher.update(text);
            d.bytes += text.len() as u64;
            d.lines += text.iter().filter(|&&b| b == b'\n').count() as u64;
            if !text.ends_with(b"\n") {
                d.hasher.update(b"\n");
                d.bytes += 1;
                d.lines += 1;
            }
        }
        if self.events.is_some() {
            self.push(stream::output_event("stdout", msg));
        }
        Ok(())
    }

    fn on_stderr(&mut self, msg: &OutputMessage) -> opensandbox_core::Result<()> {
        if self.events.is_some() {
            self.push(stream::output_event("stderr", msg));
        }
        Ok(())
    }

    fn on_result(&mut self, result: &ExecutionResult) -> opensandbox_core::Result<()> {
        if self.events.is_some() {
            self.push(stream::result_event(result));
        }
        Ok(())
    }

    fn on_execution_complete(&mut self, c: &ExecutionComplete) -> opensandbox_core::Result<()> {
        if self.events.is_some() {
            self.push(stream::complete_event(c));
        }
        Ok(())
    }

    fn on_error(&mut self, error: &ExecutionError) -> opensandbox_core::Result<()> {
        if self.events.is_some() {
            self.push(stream::error_event(error));
        }
        Ok(())
    }

    fn skip_accumulation(&self) -> bool {
        self.skip || self.digest.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str) -> OutputMessage {
        OutputMessage {
            text: text.to_owned(),
            timestamp: 0,
            is_error: false,
        }
    }

    #[test]
    fn digest_rebuilds_lines_and_blank_lines() {
        let mut r = Recorder::new(false, true, false);
        for text in ["a", "\n", "b"] {
            r.on_stdout(&msg(text)).expect("stdout");
        }
        assert!(r.skip_accumulation());
        let extra = r.into_extra();
        let want = hex_of(b"a\n\nb\n");
        assert_eq!(extra["stdout_digest"]["sha256"], want);
        assert_eq!(extra["stdout_digest"]["bytes"], 5);
        assert_eq!(extra["stdout_digest"]["lines"], 3);
        assert!(extra.get("events").is_none());
    }

    fn hex_of(data: &[u8]) -> String {
        Sha256::digest(data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn events_keep_callback_order() {
        let mut r = Recorder::new(true, false, false);
        r.on_init("exec-1", 0).expect("init");
        r.on_stdout(&msg("out")).expect("stdout");
        r.on_stderr(&msg("err")).expect("stderr");
        r.on_error(&ExecutionError {
            name: "CommandExecError".into(),
            value: "3".into(),
            timestamp: 0,
            traceback: vec![],
        })
        .expect("error");
        assert!(!r.skip_accumulation());
        let extra = r.into_extra();
        let types: Vec<&str> = extra["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter_map(|e| e["type"].as_str())
            .collect();
        assert_eq!(types, ["init", "stdout", "stderr", "error"]);
        assert_eq!(extra["events"][3]["value"], "3");
    }
}
