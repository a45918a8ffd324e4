//! The server proxy route `/{v1/}sandboxes/{id}/proxy/{port}/{path}`.
//!
//! Instead of the API key it requires the per-sandbox secret that the endpoint
//! response hands out, so neither a stranger nor another sandbox can drive a sandbox.
//! Port 44772 goes to the sandbox's execd agent over its Unix socket, both bodies
//! streamed (uploads of any size, SSE event by event); port 18080 is the egress API,
//! answered here; other ports cannot be reached (the sandbox has no network).
//! WebSocket upgrades (the PTY attach) are relayed by [`super::ws_relay`].

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::agent_client;
use super::api::{EGRESS_PORT, EGRESS_TOKEN_HEADER, EXECD_PORT, EXECD_TOKEN_HEADER};
use super::error::{ApiError, ApiResult};
use super::manager::not_serving;
use super::security;
use super::Control;

/// Headers that describe one hop, never forwarded (RFC 9110 §7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Credentials meant for this server, never for the sandbox.
pub(super) const PRIVATE: [&str; 5] = [
    "open-sandbox-api-key",
    "x-execd-access-token",
    "opensandbox-egress-auth",
    "authorization",
    "cookie",
];

/// Splits `/{v1/}sandboxes/{id}/proxy/{port}{rest}` into id, port and the raw rest
/// (still percent-encoded, exactly as the client sent it).
pub fn split_proxy_path(path: &str) -> Option<(&str, &str, &str)> {
    let path = path
        .strip_prefix("/v1")
        .filter(|p| p.starts_with('/'))
        .unwrap_or(path);
    let rest = path.strip_prefix("/sandboxes/")?;
    let (id, rest) = rest.split_once('/')?;
    let rest = rest.strip_prefix("proxy/")?;
    let (port, rest) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if id.is_empty() || port.is_empty() {
        return None;
    }
    Some((id, port, rest))
}

pub(super) fn strip_headers(headers: &mut HeaderMap, extra: &[&str]) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in HOP_BY_HOP.iter().chain(extra) {
        headers.remove(*name);
    }
}

/// Checks the header `name` against the stored SHA-256 (or, for a record of an older
/// server with no hash, against the derived token), in constant time.
pub(super) fn check_secret(
    headers: &HeaderMap,
    name: &str,
    expected_sha256: &str,
    derived: impl FnOnce() -> String,
) -> ApiResult<()> {
    let expected = if expected_sha256.is_empty() {
        security::sha256_hex(derived().as_bytes())
    } else {
        expected_sha256.to_string()
    };
    match headers.get(name) {
        None => Err(ApiError::unauthorized(
            "MISSING_ACCESS_TOKEN",
            format!("header {name} is required on this route (see the endpoint response)"),
        )),
        Some(given) if security::matches_hash(given.as_bytes(), &expected) => Ok(()),
        Some(_) => Err(ApiError::unauthorized(
            "INVALID_ACCESS_TOKEN",
            format!("header {name} does not match this sandbox"),
        )),
    }
}

/// The methods the execd API is ever called with (openapi/execd.yaml) plus HEAD and
/// OPTIONS; anything else is not forwarded to the agent.
fn forwardable(method: &http::Method) -> bool {
    use http::Method;
    [
        Method::GET,
        Method::HEAD,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
    ]
    .contains(method)
}

pub async fn proxy(State(control): State<Arc<Control>>, request: Request) -> Response {
    if request.method() == http::Method::GET
        && super::ws_relay::is_websocket_upgrade(request.headers())
    {
        return super::ws_relay::relay(control, request).await;
    }
    match forward(&control, request).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn forward(control: &Control, request: Request) -> ApiResult<Response> {
    let path = request.uri().path().to_string();
    let Some((id, port, rest)) = split_proxy_path(&path) else {
        return Err(ApiError::invalid(format!("malformed proxy path {path}")));
    };
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p >= 1)
        .ok_or_else(|| ApiError::invalid(format!("port {port:?} is not in 1..65535")))?;
    let record = control.sandbox(id)?;
    let rest = if rest.is_empty() { "/" } else { rest };

    if port == EGRESS_PORT {
        check_secret(
            request.headers(),
            EGRESS_TOKEN_HEADER,
            &record.egress_token_sha256,
            || control.egress_token(id),
        )?;
        let method = request.method().clone();
        return control.egress(id, method, rest, request.into_body()).await;
    }
    check_secret(
        request.headers(),
        EXECD_TOKEN_HEADER,
        &record.execd_token_sha256,
        || control.execd_token(id),
    )?;
    if port != EXECD_PORT {
        return Err(ApiError::new(
            StatusCode::BAD_GATEWAY,
            "SANDBOX::PORT_NOT_REACHABLE",
            format!(
                "port {port} of sandbox {id} cannot be reached: sandboxes of this server have \
                 no network; only the execd API ({EXECD_PORT}) and the egress API \
                 ({EGRESS_PORT}) are served"
            ),
        ));
    }
    if let Some(err) = not_serving(&record) {
        return Err(err);
    }
    // The agent closes the connection on a method it does not know (e.g. `QUERY`) before
    // reading the body, which would surface as a 502 broken pipe: answer such a method
    // here, with the protocol's error shape, instead.
    if !forwardable(request.method()) {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "METHOD_NOT_ALLOWED",
            format!("method {} is not served by the execd API", request.method()),
        ));
    }
    // Under an OCI runtime the server answers metrics itself, from the sandbox's
    // cgroup: the sandbox cannot forge them (see oci::metrics).
    if let super::runtime::Isolation::Oci(oci) = &control.runtime.isolation {
        if request.method() == http::Method::GET && (rest == "/metrics" || rest == "/metrics/watch")
        {
            let watch = rest == "/metrics/watch";
            return Ok(super::oci::metrics::respond(Arc::clone(oci), id.to_string(), watch).await);
        }
    }

    let path_and_query = match request.uri().query() {
        Some(q) => format!("{rest}?{q}"),
        None => rest.to_string(),
    };
    let (mut parts, body) = request.into_parts();
    strip_headers(&mut parts.headers, &PRIVATE);
    // Like upstream's proxy: tell the sandbox how the client reached us.
    if let Some(host) = parts.headers.get(header::HOST).cloned() {
        parts.headers.entry("x-forwarded-host").or_insert(host);
    }
    parts
        .headers
        .entry("x-forwarded-proto")
        .or_insert(HeaderValue::from_static("http"));
    parts
        .headers
        .insert(header::HOST, HeaderValue::from_static("sandbox"));
    let mut upstream = http::Request::builder()
        .method(parts.method)
        .uri(&path_and_query)
        .body(body)
        .map_err(|e| ApiError::invalid(format!("cannot forward {path_and_query}: {e}")))?;
    *upstream.headers_mut() = parts.headers;

    let socket = control.runtime.paths(id).socket;
    let response = agent_client::send(&socket, upstream).await.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "SANDBOX::AGENT_UNREACHABLE",
            format!("the execd agent of sandbox {id} did not answer: {e:#}"),
        )
    })?;
    let (mut parts, body) = response.into_parts();
    strip_headers(&mut parts.headers, &[]);
    Ok(Response::from_parts(parts, Body::new(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_standard_methods_are_forwarded() {
        assert!(forwardable(&http::Method::POST));
        assert!(forwardable(&http::Method::DELETE));
        // Found by schemathesis: `QUERY /code` reached the agent and came back as a 502.
        let query = http::Method::from_bytes(b"QUERY").unwrap();
        assert!(!forwardable(&query));
        assert!(!forwardable(&http::Method::TRACE));
    }

    #[test]
    fn proxy_paths_split() {
        assert_eq!(
            split_proxy_path("/v1/sandboxes/abc/proxy/44772/files/download"),
            Some(("abc", "44772", "/files/download"))
        );
        assert_eq!(
            split_proxy_path("/sandboxes/abc/proxy/18080"),
            Some(("abc", "18080", ""))
        );
        assert_eq!(
            split_proxy_path("/sandboxes/abc/proxy/1/a%2Fb/"),
            Some(("abc", "1", "/a%2Fb/"))
        );
        assert_eq!(split_proxy_path("/sandboxes/abc/other/1"), None);
    }

    #[test]
    fn hop_by_hop_and_private_headers_are_dropped() {
        let mut h = HeaderMap::new();
        h.insert("connection", HeaderValue::from_static("close, x-custom"));
        h.insert("x-custom", HeaderValue::from_static("1"));
        h.insert("x-execd-access-token", HeaderValue::from_static("s"));
        h.insert("content-type", HeaderValue::from_static("text/plain"));
        strip_headers(&mut h, &PRIVATE);
        assert_eq!(h.len(), 1);
        assert!(h.contains_key("content-type"));
    }
}
