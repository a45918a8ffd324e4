//! Diagnostics (protocol.md §5.1): a sandbox's process output ("logs") and its
//! lifecycle transitions ("events").
//!
//! Unlike upstream, which answers 501 whenever `scope` is given, this server
//! implements the stable API: with `scope`, a 200 `DiagnosticContentResponse` with the
//! content inline. Without `scope`, the deprecated plain-text form is served with a
//! `Deprecation: true` header (logs honour `tail`, events honour `limit`).
//! Every scope reads the same two sources; scopes this server has nothing for get a
//! warning in the response.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use super::error::{ApiError, ApiResult};
use super::models::{rfc3339, SandboxRecord};

/// Inline content is capped; older output is cut and `truncated` set.
const MAX_INLINE: u64 = 1024 * 1024;
const TEXT: &str = "text/plain; charset=utf-8";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Logs,
    Events,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DiagnosticContent {
    sandbox_id: String,
    kind: &'static str,
    scope: String,
    delivery: &'static str,
    content_type: &'static str,
    truncated: bool,
    content: String,
    content_length: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// The last `MAX_INLINE` bytes of the log, and whether older bytes were cut.
fn read_log_tail(path: &Path) -> ApiResult<(String, bool)> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((String::new(), false)),
        Err(e) => {
            return Err(ApiError::internal(format!(
                "reading {}: {e}",
                path.display()
            )))
        }
    };
    let len = file
        .metadata()
        .map_err(|e| ApiError::internal(format!("reading {}: {e}", path.display())))?
        .len();
    let start = len.saturating_sub(MAX_INLINE);
    file.seek(SeekFrom::Start(start))
        .map_err(|e| ApiError::internal(format!("reading {}: {e}", path.display())))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(|e| ApiError::internal(format!("reading {}: {e}", path.display())))?;
    Ok((String::from_utf8_lossy(&buf).into_owned(), start > 0))
}

fn event_lines(record: &SandboxRecord) -> Vec<String> {
    record
        .events
        .iter()
        .map(|e| {
            let mut line = format!("{} {}", rfc3339(&e.at), e.state.as_str());
            if let Some(reason) = &e.reason {
                line.push_str(&format!(" reason={reason}"));
            }
            if let Some(message) = &e.message {
                line.push_str(&format!(" message={message:?}"));
            }
            line
        })
        .collect()
}

/// The stable form: `scope` given.
pub fn scoped(record: &SandboxRecord, log: &Path, kind: Kind, scope: &str) -> ApiResult<Response> {
    if scope.trim().is_empty() {
        return Err(ApiError::invalid("`scope` must not be empty"));
    }
    let mut warnings = Vec::new();
    let known: &[&str] = match kind {
        Kind::Logs => &["all", "container", "process", "runtime"],
        Kind::Events => &["all", "lifecycle", "container", "runtime"],
    };
    if !known.contains(&scope) {
        warnings.push(format!(
            "scope {scope:?} has no dedicated source on this server; served the sandbox's {}",
            if kind == Kind::Logs {
                "process output"
            } else {
                "lifecycle events"
            }
        ));
    }
    let (content, truncated) = match kind {
        Kind::Logs => read_log_tail(log)?,
        Kind::Events => (event_lines(record).join("\n"), false),
    };
    Ok(Json(DiagnosticContent {
        sandbox_id: record.id.clone(),
        kind: if kind == Kind::Logs { "logs" } else { "events" },
        scope: scope.to_string(),
        delivery: "inline",
        content_type: TEXT,
        truncated,
        content_length: content.len(),
        content,
        warnings,
    })
    .into_response())
}

fn bounded(
    value: Option<&str>,
    name: &str,
    min: usize,
    max: usize,
    default: usize,
) -> ApiResult<usize> {
    match value {
        None => Ok(default),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(ApiError::invalid(format!(
                "`{name}` must be an integer from {min} to {max}"
            ))),
        },
    }
}

/// The deprecated plain-text form: no `scope`.
pub fn legacy(
    record: &SandboxRecord,
    log: &Path,
    kind: Kind,
    tail: Option<&str>,
    limit: Option<&str>,
) -> ApiResult<Response> {
    let text = match kind {
        Kind::Logs => {
            let tail = bounded(tail, "tail", 1, 10_000, 100)?;
            let (content, _) = read_log_tail(log)?;
            let lines: Vec<&str> = content.lines().collect();
            lines[lines.len().saturating_sub(tail)..].join("\n")
        }
        Kind::Events => {
            let limit = bounded(limit, "limit", 1, 500, 50)?;
            let lines = event_lines(record);
            lines[lines.len().saturating_sub(limit)..].join("\n")
        }
    };
    let mut response = text.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(TEXT));
    headers.insert("Deprecation", HeaderValue::from_static("true"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_checked() {
        assert_eq!(bounded(None, "tail", 1, 10, 5).ok(), Some(5));
        assert_eq!(bounded(Some("3"), "tail", 1, 10, 5).ok(), Some(3));
        assert!(bounded(Some("0"), "tail", 1, 10, 5).is_err());
        assert!(bounded(Some("x"), "tail", 1, 10, 5).is_err());
    }

    #[test]
    fn log_tail_is_capped() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("log");
        assert_eq!(
            read_log_tail(&path).map_err(anyhow::Error::msg)?,
            (String::new(), false)
        );
        std::fs::write(&path, vec![b'x'; (MAX_INLINE + 10) as usize])?;
        let (content, truncated) = read_log_tail(&path).map_err(anyhow::Error::msg)?;
        assert!(truncated);
        assert_eq!(content.len() as u64, MAX_INLINE);
        Ok(())
    }
}
