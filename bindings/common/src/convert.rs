//! Core models → the result shapes of PROTOCOL.md §2.2 (snake_case, RFC 3339 times,
//! absent values as null). Written out field by field: the protocol's shapes are the
//! contract, whatever the core's serde attributes are.

use opensandbox_core::models::{
    CodeContext, CommandLogs, CommandStatus, DiagnosticContent, Endpoint, EntryInfo, NetworkPolicy,
    PaginationInfo, SandboxInfo, SandboxMetrics, SnapshotInfo,
};
use opensandbox_core::Execution;
use serde_json::{json, Map, Value};

/// An optional time as an RFC 3339 string or null (the closure keeps chrono's type
/// out of this crate's dependencies).
macro_rules! time {
    ($t:expr) => {
        match &$t {
            Some(t) => Value::String(t.to_rfc3339()),
            None => Value::Null,
        }
    };
}

pub fn sandbox_info(s: &SandboxInfo) -> Value {
    json!({
        "id": s.id,
        "status": {
            "state": s.status.state.as_str(),
            "reason": s.status.reason,
            "message": s.status.message,
            "last_transition_at": time!(s.status.last_transition_at),
        },
        "entrypoint": s.entrypoint,
        "expires_at": time!(s.expires_at),
        "created_at": time!(s.created_at),
        "image": s.image.as_ref().map(|i| json!({"uri": i.uri})),
        "snapshot_id": s.snapshot_id,
        "metadata": s.metadata,
        "platform": s.platform.as_ref().map(|p| json!({"os": p.os, "arch": p.arch})),
        "extensions": s.extensions,
        "allocation": s.allocation.as_ref().map(|a| json!({
            "mode": a.mode, "pool_ref": a.pool_ref, "state": a.state,
        })),
    })
}

pub fn pagination(p: &PaginationInfo) -> Value {
    json!({
        "page": p.page,
        "page_size": p.page_size,
        "total_items": p.total_items,
        "total_pages": p.total_pages,
        "has_next_page": p.has_next_page,
    })
}

pub fn snapshot(s: &SnapshotInfo) -> Value {
    json!({
        "id": s.id,
        "sandbox_id": s.sandbox_id,
        "name": s.name,
        "status": {
            "state": s.status.state.as_str(),
            "reason": s.status.reason,
            "message": s.status.message,
        },
        "created_at": time!(s.created_at),
    })
}

pub fn endpoint(e: &Endpoint) -> Value {
    json!({"endpoint": e.endpoint, "headers": e.headers, "origin": e.origin})
}

pub fn metrics(m: &SandboxMetrics) -> Value {
    json!({
        "cpu_count": m.cpu_count,
        "cpu_used_percentage": m.cpu_used_percentage,
        "memory_total_in_mib": m.memory_total_in_mib,
        "memory_used_in_mib": m.memory_used_in_mib,
        "timestamp": m.timestamp,
    })
}

pub fn network_policy(p: &NetworkPolicy) -> Value {
    json!({
        "default_action": p.default_action,
        "egress": p.egress.iter().map(|r| json!({"action": r.action, "target": r.target})).collect::<Vec<_>>(),
    })
}

pub fn diagnostic(d: &DiagnosticContent) -> Value {
    json!({
        "sandbox_id": d.sandbox_id,
        "kind": d.kind,
        "scope": d.scope,
        "delivery": d.delivery,
        "content_type": d.content_type,
        "truncated": d.truncated,
        "content": d.content,
        "content_url": d.content_url,
        "content_length": d.content_length,
        "expires_at": time!(d.expires_at),
        "warnings": d.warnings,
    })
}

pub fn command_status(s: &CommandStatus) -> Value {
    json!({
        "id": s.id,
        "content": s.content,
        "running": s.running,
        "exit_code": s.exit_code,
        "error": s.error,
        "started_at": time!(s.started_at),
        "finished_at": time!(s.finished_at),
    })
}

pub fn command_logs(l: &CommandLogs) -> Value {
    json!({"content": l.content, "cursor": l.cursor})
}

pub fn entry(e: &EntryInfo) -> Value {
    json!({
        "path": e.path,
        "type": serde_json::to_value(e.entry_type).unwrap_or(Value::Null),
        "mode": e.mode,
        "owner": e.owner,
        "group": e.group,
        "size": e.size,
        "modified_at": time!(e.modified_at),
        "created_at": time!(e.created_at),
    })
}

pub fn context(c: &CodeContext) -> Value {
    json!({"id": c.id, "language": c.language, "cwd": c.cwd})
}

/// The Execution shape (PROTOCOL.md §2.2) plus the timestamps hosts need for their
/// own message objects: `stdout_timestamps` / `stderr_timestamps` (parallel to
/// `stdout` / `stderr`) and a `timestamp` in each result, the error and the
/// completion. `extra` (events, digest) is merged in by the caller.
pub fn execution(e: &Execution, extra: Map<String, Value>) -> Value {
    let mut v = json!({
        "id": e.id,
        "exit_code": e.exit_code,
        "stdout": e.logs.stdout.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        "stderr": e.logs.stderr.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        "stdout_timestamps": e.logs.stdout.iter().map(|m| m.timestamp).collect::<Vec<_>>(),
        "stderr_timestamps": e.logs.stderr.iter().map(|m| m.timestamp).collect::<Vec<_>>(),
        "results": e.result.iter().map(|r| json!({"text": r.text, "timestamp": r.timestamp, "raw": r.raw})).collect::<Vec<_>>(),
        "error": e.error.as_ref().map(|x| json!({
            "name": x.name, "value": x.value, "traceback": x.traceback, "timestamp": x.timestamp,
        })),
        "complete": e.complete.as_ref().map(|c| json!({"execution_time_ms": c.execution_time_ms, "timestamp": c.timestamp})),
        "execution_count": e.execution_count,
    });
    if let Value::Object(map) = &mut v {
        map.extend(extra);
    }
    v
}
