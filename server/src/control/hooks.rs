//! Lifecycle hooks (protocol.md §2.1 `lifecycle`): `preStart` and `periodic` commands
//! that run inside the sandbox through its agent, exactly as a command of the execd
//! API would (`POST /command` with `argv`: no shell, the sandbox's user and env).
//!
//! - `preStart` runs once the agent answers and before the sandbox is reported
//!   `Running`; a failure (non-zero exit, timeout, no agent) stops the sandbox, records
//!   it `Failed` (`PRESTART_FAILED`) and fails the create. Unlike upstream's execd,
//!   which runs it before the entrypoint, the entrypoint is already started here (the
//!   agent starts it with itself).
//! - `periodic` hooks run on their schedules (`schedule`) until the sandbox ends;
//!   runs of one hook never overlap, and no run starts while the sandbox is paused.
//! - Every run shows in diagnostics: its output and exit status in the logs (lines
//!   prefixed `[lifecycle NAME]`), a one-line summary in the events (reason
//!   `HOOK_PRESTART` / `HOOK_PERIODIC`).
//!
//! Nothing a hook prints is trusted: output is read in bounded pieces and at most
//! [`MAX_CAPTURE`] bytes per stream are kept.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use chrono::Utc;
use http_body_util::BodyExt;
use serde::{Deserialize, Serialize};

use super::error::{ApiError, ApiResult};
use super::models::{LifecycleEvent, SandboxRecord, SandboxState};
use super::schedule::Schedule;
use super::{agent_client, Control};

/// Default and maxima of `timeoutSeconds` (upstream: 60; 3 h for preStart, 5 min for
/// periodic hooks).
const DEFAULT_TIMEOUT_SECS: u64 = 60;
const MAX_PRE_START_TIMEOUT_SECS: u64 = 10_800;
const MAX_PERIODIC_TIMEOUT_SECS: u64 = 300;
/// Bounds on what a request may ask for.
const MAX_PERIODIC_HOOKS: usize = 32;
const MAX_ARGV_ITEMS: usize = 1024;
const MAX_ARGV_BYTES: usize = 128 * 1024;
const MAX_NAME_LEN: usize = 128;
/// Output kept per stream and run; the rest is counted, not stored.
pub const MAX_CAPTURE: usize = 64 * 1024;
/// Longest event line read from the agent; longer lines are skipped.
const MAX_EVENT_LINE: usize = 4 * 1024 * 1024;
/// Hook summaries kept in a sandbox's events (state transitions are always kept).
const MAX_HOOK_EVENTS: usize = 200;
/// Grace beyond a hook's timeout for the agent to report the kill.
const REPORT_GRACE: Duration = Duration::from_secs(10);

/// `LifecycleHook`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hook {
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// `PeriodicLifecycleHook`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PeriodicHook {
    pub name: String,
    pub schedule: String,
    pub command: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// `SandboxLifecycle`: only these two keys exist in 1.1.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lifecycle {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_start: Option<Hook>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub periodic: Vec<PeriodicHook>,
}

impl Lifecycle {
    pub fn is_empty(&self) -> bool {
        self.pre_start.is_none() && self.periodic.is_empty()
    }
}

fn check_command(what: &str, command: &[String]) -> ApiResult<()> {
    if command.first().is_none_or(|c| c.trim().is_empty()) {
        return Err(ApiError::invalid(format!(
            "lifecycle {what}: `command` must hold at least the program to run"
        )));
    }
    let bytes: usize = command.iter().map(String::len).sum();
    if command.len() > MAX_ARGV_ITEMS || bytes > MAX_ARGV_BYTES {
        return Err(ApiError::invalid(format!(
            "lifecycle {what}: `command` is too large (at most {MAX_ARGV_ITEMS} items and \
             {MAX_ARGV_BYTES} bytes)"
        )));
    }
    if command.iter().any(|a| a.contains('\0')) {
        return Err(ApiError::invalid(format!(
            "lifecycle {what}: `command` items must not contain NUL"
        )));
    }
    Ok(())
}

fn check_timeout(what: &str, timeout: Option<u64>, max: u64) -> ApiResult<()> {
    match timeout {
        Some(t) if t < 1 || t > max => Err(ApiError::invalid(format!(
            "lifecycle {what}: `timeoutSeconds` must be from 1 to {max} (got {t})"
        ))),
        _ => Ok(()),
    }
}

/// Parses and checks the create request's `lifecycle` (null or `{}` = none).
pub fn parse(value: Option<&serde_json::Value>) -> ApiResult<Option<Lifecycle>> {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let mut lifecycle: Lifecycle = serde_json::from_value(value.clone())
        .map_err(|e| ApiError::invalid(format!("`lifecycle`: {e}")))?;
    if let Some(hook) = &lifecycle.pre_start {
        check_command("preStart", &hook.command)?;
        check_timeout("preStart", hook.timeout_seconds, MAX_PRE_START_TIMEOUT_SECS)?;
    }
    if lifecycle.periodic.len() > MAX_PERIODIC_HOOKS {
        return Err(ApiError::invalid(format!(
            "`lifecycle.periodic`: at most {MAX_PERIODIC_HOOKS} hooks"
        )));
    }
    let mut names = std::collections::HashSet::new();
    for hook in &mut lifecycle.periodic {
        hook.name = hook.name.trim().to_string();
        hook.schedule = hook.schedule.trim().to_string();
        if hook.name.is_empty() || hook.name.len() > MAX_NAME_LEN {
            return Err(ApiError::invalid(format!(
                "lifecycle periodic hook names must be 1 to {MAX_NAME_LEN} characters"
            )));
        }
        if !names.insert(hook.name.clone()) {
            return Err(ApiError::invalid(format!(
                "lifecycle periodic hook name {:?} is used twice (names must be unique)",
                hook.name
            )));
        }
        let what = format!("periodic hook {:?}", hook.name);
        Schedule::parse(&hook.schedule)
            .map_err(|e| ApiError::invalid(format!("lifecycle {what}: `schedule`: {e}")))?;
        check_command(&what, &hook.command)?;
        check_timeout(&what, hook.timeout_seconds, MAX_PERIODIC_TIMEOUT_SECS)?;
    }
    Ok((!lifecycle.is_empty()).then_some(lifecycle))
}

/// What one run of a hook did.
#[derive(Debug, Clone, Default)]
pub struct HookRun {
    /// The command's exit code (`None`: killed by a signal, or it never ran).
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Bytes of output beyond [`MAX_CAPTURE`] per stream, not kept.
    pub dropped: usize,
    pub timed_out: bool,
    /// Why the run has no exit code (the agent's error, or the transport's).
    pub error: Option<String>,
    pub elapsed: Duration,
}

impl HookRun {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }

    /// `exited with code 3 after 15 ms` and the like.
    pub fn summary(&self) -> String {
        let ms = self.elapsed.as_millis();
        if self.timed_out {
            return format!("timed out after {ms} ms (killed)");
        }
        match (self.exit_code, &self.error) {
            (Some(code), _) => format!("exited with code {code} after {ms} ms"),
            (None, Some(err)) => format!("failed after {ms} ms: {err}"),
            (None, None) => format!("ended without an exit status after {ms} ms"),
        }
    }
}

fn keep(buf: &mut String, text: &str, dropped: &mut usize) {
    let room = MAX_CAPTURE.saturating_sub(buf.len());
    if text.len() <= room {
        buf.push_str(text);
        return;
    }
    let mut cut = room;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    buf.push_str(&text[..cut]);
    *dropped += text.len() - cut;
}

/// Folds one event line of the agent's command stream into `run`.
fn fold_event(line: &[u8], run: &mut HookRun) {
    let line = line.strip_prefix(b"data:").unwrap_or(line);
    let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else {
        return;
    };
    let text = event.get("text").and_then(|t| t.as_str()).unwrap_or("");
    match event.get("type").and_then(|t| t.as_str()) {
        Some("stdout") => keep(&mut run.stdout, text, &mut run.dropped),
        Some("stderr") => keep(&mut run.stderr, text, &mut run.dropped),
        Some("execution_complete") => run.exit_code = Some(0),
        Some("error") => {
            let error = event.get("error");
            let value = error
                .and_then(|e| e.get("evalue"))
                .and_then(|v| v.as_str())
                .unwrap_or("");
            match value.trim().parse::<i32>() {
                Ok(code) => run.exit_code = Some(code),
                Err(_) => {
                    let name = error
                        .and_then(|e| e.get("ename"))
                        .and_then(|v| v.as_str())
                        .unwrap_or("error");
                    let mut message = format!("{name}: {value}");
                    message.truncate(1024);
                    run.error = Some(message);
                }
            }
        }
        _ => {}
    }
}

/// Runs `command` in the sandbox whose agent listens on `socket`, for at most
/// `timeout`, and collects its output and exit code.
pub async fn run(socket: &Path, command: &[String], timeout: Duration) -> HookRun {
    let started = Instant::now();
    let mut run = HookRun::default();
    let body = serde_json::json!({
        "argv": command,
        "timeout": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
    });
    let request = http::Request::post("/command")
        .header(http::header::HOST, "sandbox")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()));
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            run.error = Some(format!("building the request: {e}"));
            return run;
        }
    };
    let streamed = async {
        let response = agent_client::send(socket, request)
            .await
            .map_err(|e| format!("{e:#}"))?;
        if !response.status().is_success() {
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let mut text = String::from_utf8_lossy(&body).into_owned();
            text.truncate(1024);
            return Err(format!("the agent refused the command ({status}): {text}"));
        }
        let mut body = response.into_body();
        let mut line: Vec<u8> = Vec::new();
        let mut skipping = false;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("reading the command's events: {e}"))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            for &b in data.iter() {
                if b == b'\n' {
                    if !skipping && !line.is_empty() {
                        fold_event(&line, &mut run);
                    }
                    line.clear();
                    skipping = false;
                } else if !skipping {
                    line.push(b);
                    if line.len() > MAX_EVENT_LINE {
                        line.clear();
                        skipping = true;
                    }
                }
            }
        }
        if !skipping && !line.is_empty() {
            fold_event(&line, &mut run);
        }
        Ok::<(), String>(())
    };
    match tokio::time::timeout(timeout + REPORT_GRACE, streamed).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => run.error = Some(e),
        Err(_) => run.timed_out = true,
    }
    run.elapsed = started.elapsed();
    // The agent kills the command at `timeout`; its report is a signal or an error.
    if run.elapsed >= timeout && run.exit_code != Some(0) {
        run.timed_out = true;
    }
    run
}

/// Appends a hook run's output and status to the sandbox log (what diagnostics
/// `logs` serve). The log is the server's file, outside the sandbox's reach.
fn append_log(log: &Path, name: &str, command: &[String], run: &HookRun) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut text = String::new();
    let prefix = format!("[lifecycle {name}]");
    text.push_str(&format!("{prefix} run {command:?}\n"));
    for (stream, out) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        for l in out.lines() {
            text.push_str(&format!("{prefix} {stream}: {l}\n"));
        }
    }
    if run.dropped > 0 {
        text.push_str(&format!(
            "{prefix} ({} bytes of output not kept)\n",
            run.dropped
        ));
    }
    text.push_str(&format!("{prefix} {}\n", run.summary()));
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(log);
    match opened {
        Ok(mut file) => {
            if let Err(err) = file.write_all(text.as_bytes()) {
                tracing::warn!(log = %log.display(), error = %err, "writing a hook's output");
            }
        }
        Err(err) => tracing::warn!(log = %log.display(), error = %err, "opening the sandbox log"),
    }
}

fn timeout_of(seconds: Option<u64>) -> Duration {
    Duration::from_secs(seconds.unwrap_or(DEFAULT_TIMEOUT_SECS))
}

impl Control {
    /// Records a hook run: output and status in the log, a summary in the events.
    async fn record_hook(
        &self,
        id: &str,
        reason: &str,
        name: &str,
        hook: &[String],
        run: &HookRun,
    ) {
        append_log(&self.runtime.paths(id).log, name, hook, run);
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let Ok(Some(mut record)) = self.store.get_sandbox(id) else {
            return;
        };
        record.events.push(LifecycleEvent {
            at: Utc::now(),
            state: record.status.state,
            reason: Some(reason.to_string()),
            message: Some(format!("{name} {}", run.summary())),
        });
        let hooks = record
            .events
            .iter()
            .filter(|e| e.reason.as_deref().is_some_and(|r| r.starts_with("HOOK_")))
            .count();
        if hooks > MAX_HOOK_EVENTS {
            if let Some(oldest) = record
                .events
                .iter()
                .position(|e| e.reason.as_deref().is_some_and(|r| r.starts_with("HOOK_")))
            {
                record.events.remove(oldest);
            }
        }
        if let Err(err) = self.store.put_sandbox(&record) {
            tracing::error!(
                sandbox = id,
                error = format!("{err:#}"),
                "recording a hook run"
            );
        }
    }

    /// Runs the sandbox's `preStart` hook, if any. `Err` carries the reason the
    /// sandbox must fail with.
    pub async fn run_pre_start(&self, record: &SandboxRecord) -> Result<(), String> {
        let Some(hook) = record.lifecycle.as_ref().and_then(|l| l.pre_start.as_ref()) else {
            return Ok(());
        };
        let socket = self.runtime.paths(&record.id).socket;
        let run = run(&socket, &hook.command, timeout_of(hook.timeout_seconds)).await;
        self.record_hook(&record.id, "HOOK_PRESTART", "preStart", &hook.command, &run)
            .await;
        if run.succeeded() {
            return Ok(());
        }
        let mut message = format!("preStart {:?} {}", hook.command, run.summary());
        let tail = run.stderr.trim_end();
        if !tail.is_empty() {
            let start = tail.char_indices().rev().nth(511).map_or(0, |(i, _)| i);
            message.push_str(&format!("; stderr: {}", &tail[start..]));
        }
        Err(message)
    }

    /// Starts one task per periodic hook of the sandbox; each ends with the sandbox.
    pub fn start_periodic_hooks(self: &Arc<Self>, record: &SandboxRecord) {
        let Some(lifecycle) = &record.lifecycle else {
            return;
        };
        for hook in &lifecycle.periodic {
            let Ok(schedule) = Schedule::parse(&hook.schedule) else {
                // Checked at create; a record of another server version is skipped.
                tracing::warn!(sandbox = record.id, hook = hook.name, "unparsable schedule");
                continue;
            };
            let control = Arc::clone(self);
            let id = record.id.clone();
            let hook = hook.clone();
            tokio::spawn(async move { control.periodic_loop(&id, &hook, &schedule).await });
        }
    }

    async fn periodic_loop(&self, id: &str, hook: &PeriodicHook, schedule: &Schedule) {
        let socket = self.runtime.paths(id).socket;
        let name = format!("periodic {}", hook.name);
        loop {
            let now = Utc::now();
            let Some(next) = schedule.next_after(now) else {
                tracing::info!(sandbox = id, hook = hook.name, "schedule never fires again");
                return;
            };
            let wait = (next - now).to_std().unwrap_or_default();
            tokio::time::sleep(wait).await;
            match self.store.get_sandbox(id) {
                Ok(Some(r)) if !r.deleted && !r.status.state.is_terminal() => {
                    // A frozen agent cannot answer: a due run is skipped, like a run
                    // that would overlap the previous one.
                    if r.status.state != SandboxState::Running {
                        continue;
                    }
                }
                _ => return,
            }
            let run = run(&socket, &hook.command, timeout_of(hook.timeout_seconds)).await;
            self.record_hook(id, "HOOK_PERIODIC", &name, &hook.command, &run)
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lifecycle_is_validated_like_upstream() {
        let ok = parse(Some(&json!({
            "preStart": {"command": ["sh", "-c", "true"], "timeoutSeconds": 10800},
            "periodic": [{"name": " tick ", "schedule": "@every 5s", "command": ["true"]}]
        })))
        .unwrap()
        .unwrap();
        assert_eq!(ok.periodic[0].name, "tick");
        assert!(parse(Some(&json!(null))).unwrap().is_none());
        assert!(parse(Some(&json!({}))).unwrap().is_none());
        for (bad, why) in [
            (json!({"preStart": {"command": []}}), "program"),
            (json!({"preStart": {"command": [" "]}}), "program"),
            (
                json!({"preStart": {"command": ["x"], "timeoutSeconds": 0}}),
                "from 1",
            ),
            (
                json!({"preStart": {"command": ["x"], "timeoutSeconds": 10801}}),
                "10800",
            ),
            (json!({"postStop": {"command": ["x"]}}), "postStop"),
            (
                json!({"preStart": {"command": ["x"], "shell": true}}),
                "shell",
            ),
            (
                json!({"periodic": [{"name": "a", "schedule": "@every 1s", "command": ["x"], "timeoutSeconds": 301}]}),
                "300",
            ),
            (
                json!({"periodic": [
                    {"name": "a", "schedule": "@hourly", "command": ["x"]},
                    {"name": "a", "schedule": "@hourly", "command": ["y"]}]}),
                "twice",
            ),
            (
                json!({"periodic": [{"name": "a", "schedule": "every minute", "command": ["x"]}]}),
                "schedule",
            ),
            (json!({"preStart": {"command": ["a\u{0}b"]}}), "NUL"),
        ] {
            let err = parse(Some(&bad)).unwrap_err();
            assert!(err.message.contains(why), "{bad}: {}", err.message);
        }
    }

    #[test]
    fn agent_events_fold_into_a_run() {
        let mut run = HookRun::default();
        for line in [
            r#"{"type":"init","text":"abc"}"#,
            r#"data: {"type":"stdout","text":"hello\n"}"#,
            r#"{"type":"stderr","text":"oops\n"}"#,
            r#"{"type":"error","error":{"ename":"CommandExecError","evalue":"3"}}"#,
            "not json",
        ] {
            fold_event(line.as_bytes(), &mut run);
        }
        assert_eq!(run.exit_code, Some(3));
        assert_eq!(run.stdout, "hello\n");
        assert_eq!(run.stderr, "oops\n");
        assert!(!run.succeeded());
        let mut big = HookRun::default();
        let chunk = "é".repeat(MAX_CAPTURE);
        keep(&mut big.stdout, &chunk, &mut big.dropped);
        assert!(big.stdout.len() <= MAX_CAPTURE);
        assert_eq!(big.stdout.len() + big.dropped, chunk.len());
    }
}
