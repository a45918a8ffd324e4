//! HTTP handlers of the lifecycle API (protocol.md §2), the snapshot routes and the
//! diagnostics routes. Each handler parses and answers; the work is in `manager`,
//! `snapshots` and `diagnostics`.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::diagnostics::{self, Kind};
use super::error::{ApiError, ApiJson, ApiPath, ApiResult};
use super::models::{
    rfc3339, CreateSandboxRequest, CreateSnapshotRequest, Endpoint, ListResponse, PaginationInfo,
    RenewRequest, Sandbox, Snapshot,
};
use super::Control;

pub const EXECD_PORT: u16 = 44772;
pub const EGRESS_PORT: u16 = 18080;
pub const EXECD_TOKEN_HEADER: &str = "X-EXECD-ACCESS-TOKEN";
pub const EGRESS_TOKEN_HEADER: &str = "OPENSANDBOX-EGRESS-AUTH";
const MAX_PAGE_SIZE: u64 = 200;

type Shared = State<Arc<Control>>;

/// The decoded pairs of a query string, in order (repeated keys kept).
pub(super) fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

pub(super) fn last<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn all<'a>(pairs: &'a [(String, String)], key: &str) -> Vec<&'a str> {
    pairs
        .iter()
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .collect()
}

pub(super) fn page_params(pairs: &[(String, String)]) -> ApiResult<(u64, u64)> {
    let number = |name: &str, default: u64, max: u64| -> ApiResult<u64> {
        match last(pairs, name) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n >= 1 && n <= max => Ok(n),
                _ => Err(ApiError::invalid(format!(
                    "`{name}` must be an integer from 1 to {max}"
                ))),
            },
        }
    };
    Ok((
        number("page", 1, u64::MAX / 2)?,
        number("pageSize", 20, MAX_PAGE_SIZE)?,
    ))
}

/// The `metadata` filter: one parameter holding a query string `k=v&k2=v2`, parsed
/// strictly like upstream's `parse_qsl(strict_parsing=True)`.
pub fn parse_metadata_filter(value: &str) -> ApiResult<Vec<(String, String)>> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for part in value.split('&') {
        let Some((key, _)) = part.split_once('=') else {
            return Err(ApiError::bad_request(
                "INVALID_METADATA_FORMAT",
                format!("metadata filter segment {part:?} is not key=value"),
            ));
        };
        if key.is_empty() {
            return Err(ApiError::bad_request(
                "INVALID_METADATA_FORMAT",
                format!("metadata filter segment {part:?} has an empty key"),
            ));
        }
        out.extend(url::form_urlencoded::parse(part.as_bytes()).into_owned());
    }
    Ok(out)
}

pub async fn health() -> Json<serde_json::Value> {
    Json(json!({"status": "healthy"}))
}

pub async fn create_sandbox(
    State(control): Shared,
    ApiJson(req): ApiJson<CreateSandboxRequest>,
) -> ApiResult<Response> {
    let record = control.create_sandbox(req).await?;
    let mut response = (StatusCode::ACCEPTED, Json(record.to_create_response())).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/sandboxes/{}", record.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

pub async fn list_sandboxes(
    State(control): Shared,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ListResponse<Sandbox>>> {
    let pairs = query_pairs(raw.as_deref());
    let (page, page_size) = page_params(&pairs)?;
    let states: Vec<String> = all(&pairs, "state")
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let metadata = match last(&pairs, "metadata") {
        Some(v) => parse_metadata_filter(v)?,
        None => Vec::new(),
    };
    let items: Vec<Sandbox> = control
        .store
        .all_sandboxes()?
        .into_iter()
        .filter(|r| !r.deleted)
        .filter(|r| {
            states.is_empty() || states.contains(&r.status.state.as_str().to_ascii_lowercase())
        })
        .filter(|r| {
            metadata
                .iter()
                .all(|(k, v)| r.metadata.get(k).is_some_and(|have| have == v))
        })
        .map(|r| r.to_api())
        .collect();
    let (items, pagination) = PaginationInfo::paginate(items, page, page_size);
    Ok(Json(ListResponse { items, pagination }))
}

pub async fn get_sandbox(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Sandbox>> {
    Ok(Json(control.sandbox(&id)?.to_api()))
}

pub async fn delete_sandbox(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    control.delete_sandbox(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn patch_metadata(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    ApiJson(patch): ApiJson<serde_json::Value>,
) -> ApiResult<Json<Sandbox>> {
    let serde_json::Value::Object(patch) = patch else {
        return Err(ApiError::invalid(
            "the metadata patch must be a JSON object",
        ));
    };
    Ok(Json(control.patch_metadata(&id, patch).await?.to_api()))
}

pub async fn pause_sandbox(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    control.pause_sandbox(&id).await?;
    Ok(StatusCode::ACCEPTED)
}

pub async fn resume_sandbox(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    control.resume_sandbox(&id).await?;
    Ok(StatusCode::ACCEPTED)
}

pub async fn renew_expiration(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<RenewRequest>,
) -> ApiResult<Json<serde_json::Value>> {
    let at = control.renew_sandbox(&id, &req.expires_at).await?;
    Ok(Json(json!({ "expiresAt": rfc3339(&at) })))
}

pub async fn get_endpoint(
    State(control): Shared,
    ApiPath((id, port)): ApiPath<(String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> ApiResult<Json<Endpoint>> {
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p >= 1)
        .ok_or_else(|| ApiError::invalid(format!("port {port:?} is not in 1..65535")))?;
    let pairs = query_pairs(raw.as_deref());
    if let Some(v) = last(&pairs, "use_server_proxy") {
        // Accepted for compatibility: every endpoint goes through the server anyway.
        if !matches!(
            v.to_ascii_lowercase().as_str(),
            "true" | "false" | "1" | "0"
        ) {
            return Err(ApiError::invalid(
                "`use_server_proxy` must be true or false",
            ));
        }
    }
    if last(&pairs, "expires").is_some() {
        return Err(ApiError::not_supported(
            "signed endpoints (`expires`) are not supported by this server",
        ));
    }
    let record = control.sandbox(&id)?;
    let host = control
        .public_host
        .clone()
        .or_else(|| {
            headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_else(|| control.listen.to_string());
    let mut out = BTreeMap::new();
    if port == EGRESS_PORT {
        out.insert(
            EGRESS_TOKEN_HEADER.to_string(),
            control.egress_token(&record.id),
        );
    } else {
        out.insert(
            EXECD_TOKEN_HEADER.to_string(),
            control.execd_token(&record.id),
        );
    }
    Ok(Json(Endpoint {
        endpoint: format!("{host}/sandboxes/{id}/proxy/{port}"),
        headers: out,
    }))
}

pub async fn create_snapshot(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    body: Bytes,
) -> ApiResult<Response> {
    // The body is optional: no body, or `{}`, means an unnamed snapshot.
    let req: CreateSnapshotRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CreateSnapshotRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::bad_request(
                "SANDBOX::INVALID_REQUEST_BODY",
                format!("invalid JSON: {e}"),
            )
        })?
    };
    let snapshot = control.create_snapshot(&id, req.name).await?;
    let mut response = (StatusCode::ACCEPTED, Json(&snapshot)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/v1/snapshots/{}", snapshot.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

pub async fn list_snapshots(
    State(control): Shared,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<ListResponse<Snapshot>>> {
    let pairs = query_pairs(raw.as_deref());
    let (page, page_size) = page_params(&pairs)?;
    let sandbox_id = last(&pairs, "sandboxId");
    let name = last(&pairs, "name");
    let states: Vec<String> = all(&pairs, "state")
        .iter()
        .map(|s| s.to_ascii_lowercase())
        .collect();
    let items: Vec<Snapshot> = control
        .store
        .all_snapshots()?
        .into_iter()
        .filter(|s| sandbox_id.is_none_or(|id| s.sandbox_id == id))
        // (1.1) Exact match; unnamed snapshots never match.
        .filter(|s| name.is_none_or(|n| s.name.as_deref() == Some(n)))
        .filter(|s| {
            states.is_empty() || states.contains(&s.status.state.as_str().to_ascii_lowercase())
        })
        .collect();
    let (items, pagination) = PaginationInfo::paginate(items, page, page_size);
    Ok(Json(ListResponse { items, pagination }))
}

pub async fn get_snapshot(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Snapshot>> {
    Ok(Json(control.snapshot(&id)?))
}

pub async fn delete_snapshot(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    control.delete_snapshot(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn diagnostics(
    control: &Control,
    id: &str,
    raw: Option<&str>,
    kind: Kind,
) -> ApiResult<Response> {
    let record = control.sandbox(id)?;
    let log = control.runtime.paths(id).log;
    let pairs = query_pairs(raw);
    match last(&pairs, "scope") {
        Some(scope) => diagnostics::scoped(&record, &log, kind, scope),
        None => diagnostics::legacy(
            &record,
            &log,
            kind,
            last(&pairs, "tail"),
            last(&pairs, "limit"),
        ),
    }
}

pub async fn diagnostic_logs(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    diagnostics(&control, &id, raw.as_deref(), Kind::Logs).await
}

pub async fn diagnostic_events(
    State(control): Shared,
    ApiPath(id): ApiPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    diagnostics(&control, &id, raw.as_deref(), Kind::Events).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_filter_is_strict() {
        let ok = parse_metadata_filter("team=a&env=prod%20x").unwrap_or_default();
        assert_eq!(
            ok,
            vec![("team".into(), "a".into()), ("env".into(), "prod x".into())]
        );
        assert!(parse_metadata_filter("").unwrap_or_default().is_empty());
        assert!(parse_metadata_filter("team").is_err());
        assert!(parse_metadata_filter("a=1&&b=2").is_err());
        assert!(parse_metadata_filter("=x").is_err());
    }

    #[test]
    fn page_params_are_bounded() {
        let pairs = query_pairs(Some("page=2&pageSize=200"));
        assert_eq!(page_params(&pairs).ok(), Some((2, 200)));
        assert!(page_params(&query_pairs(Some("pageSize=201"))).is_err());
        assert!(page_params(&query_pairs(Some("page=0"))).is_err());
        assert_eq!(page_params(&[]).ok(), Some((1, 20)));
    }
}
