//! The credential vault (protocol.md §5.2, reference-sdk-api.md `credential_vault`):
//! `/credential-vault[/credentials[/{name}]|/bindings[/{name}]]` on a sandbox's egress
//! port (18080, reached through the proxy route with `OPENSANDBOX-EGRESS-AUTH`), with
//! upstream's semantics: revisions, an `expectedRevision` guard (409), bindings that
//! must reference known credentials, hosts the egress policy allows, no two bindings
//! matching one request, `passthrough` auth and `substitutions` on every auth type.
//!
//! **Stored, not enforced.** Upstream injects credentials through a MITM proxy in the
//! egress sidecar; this server gives sandboxes no network at all (loopback only), so
//! nothing is injected anywhere. Like upstream, the vault needs a sandbox created with
//! `credentialProxy.enabled` (else 412); every answer carries the header
//! [`ENFORCEMENT_HEADER`] saying that nothing is enforced, and the lifecycle
//! `/networkpolicy` reason says so too.
//!
//! **Secrets.** Credential values are write-only: no answer contains them, nothing
//! logs them, and request-parsing errors quote no string value. They are stored in the
//! SQLite store (0600) sealed with a per-sandbox key derived from the server's token
//! key (`DATA_DIR/token-key`, 0600): HMAC-SHA256 as a stream cipher (counter mode over
//! a random nonce), then HMAC-SHA256 over nonce and ciphertext (encrypt-then-MAC). A
//! copy of the database alone reveals no value.

use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::error::{ApiError, ApiResult};
use super::models::{NetworkPolicy, RuleAction};
use super::security::{hex, hmac_sha256};
use super::Control;

/// Header on every vault answer: what this server does with the vault.
pub const ENFORCEMENT_HEADER: &str = "opensandbox-credential-vault";
pub const NOT_ENFORCED: &str =
    "stored, not enforced: this server gives sandboxes no network, nothing is injected";
const MAX_BODY: usize = 1024 * 1024;
const MAX_ITEMS: usize = 256;
const MAX_NAME: usize = 253;
const MAX_VALUE: usize = 64 * 1024;
const MAX_LIST: usize = 64;
/// Header names no binding may set (upstream's list).
const RESERVED_HEADERS: [&str; 14] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-authenticate",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
];

// ---------------------------------------------------------------------------------
// Wire models

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateRequest {
    credentials: Vec<CredentialIn>,
    bindings: Vec<Binding>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct MutationRequest {
    #[serde(default)]
    expected_revision: Option<i64>,
    #[serde(default)]
    credentials: Option<MutationSet<CredentialIn>>,
    #[serde(default)]
    bindings: Option<MutationSet<Binding>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(bound = "T: Deserialize<'de>")]
struct MutationSet<T> {
    #[serde(default)]
    add: Vec<T>,
    #[serde(default)]
    replace: Vec<T>,
    #[serde(default)]
    delete: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialIn {
    name: String,
    source: SourceIn,
}

/// `InlineCredentialSource`; `value` is write-only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceIn {
    #[serde(rename = "type")]
    kind: String,
    value: String,
}

impl std::fmt::Debug for SourceIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceIn")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// `CredentialMatch`, normalised (defaults filled, `ports` dropped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    #[serde(default)]
    schemes: Vec<String>,
    /// Deprecated: only 80 and 443 are accepted, and ignored.
    #[serde(default, skip_serializing)]
    ports: Vec<i64>,
    hosts: Vec<String>,
    #[serde(default)]
    methods: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderEntry {
    name: String,
    credential: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Substitution {
    credential: String,
    placeholder: String,
    #[serde(rename = "in")]
    surfaces: Vec<String>,
}

/// `CredentialAuth`: a union tagged by `type`; which other fields a type takes is
/// checked in [`normalize_auth`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Auth {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credential: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    headers: Option<Vec<HeaderEntry>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    substitutions: Option<Vec<Substitution>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    name: String,
    #[serde(rename = "match")]
    matcher: Match,
    auth: Auth,
}

// ---------------------------------------------------------------------------------
// Stored form

/// One credential as stored: its value sealed (see the module doc).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredCredential {
    name: String,
    source_type: String,
    revision: i64,
    /// hex(nonce ‖ ciphertext ‖ tag).
    sealed: String,
}

/// A sandbox's vault as the store keeps it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StoredVault {
    revision: i64,
    credentials: Vec<StoredCredential>,
    bindings: Vec<Binding>,
}

// ---------------------------------------------------------------------------------
// Sealing

const NONCE: usize = 16;
/// HMAC-SHA256 tag length.
#[cfg(test)]
const TAG: usize = 32;

fn keystream_xor(key: &[u8], nonce: &[u8], data: &mut [u8]) {
    for (counter, chunk) in data.chunks_mut(32).enumerate() {
        let mut block_input = nonce.to_vec();
        block_input.extend_from_slice(&(counter as u64).to_be_bytes());
        let pad = hmac_sha256(key, &block_input);
        for (b, p) in chunk.iter_mut().zip(pad.iter()) {
            *b ^= p;
        }
    }
}

/// The two keys of sandbox `id`'s vault.
fn vault_keys(control: &Control, id: &str) -> (Vec<u8>, Vec<u8>) {
    (
        control.token_key.token("vault-enc", id).into_bytes(),
        control.token_key.token("vault-mac", id).into_bytes(),
    )
}

fn seal(keys: &(Vec<u8>, Vec<u8>), value: &[u8]) -> String {
    use rand::RngCore;
    let mut nonce = [0u8; NONCE];
    rand::thread_rng().fill_bytes(&mut nonce);
    let mut body = value.to_vec();
    keystream_xor(&keys.0, &nonce, &mut body);
    let mut sealed = nonce.to_vec();
    sealed.extend_from_slice(&body);
    let tag = hmac_sha256(&keys.1, &sealed);
    sealed.extend_from_slice(&tag);
    hex(&sealed)
}

/// Opens a sealed value; `None` when it was not sealed with these keys or was altered.
/// Nothing on this server reads a value back (nothing is injected): only the tests.
#[cfg(test)]
fn open(keys: &(Vec<u8>, Vec<u8>), sealed_hex: &str) -> Option<Vec<u8>> {
    let bytes: Vec<u8> = (0..sealed_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(sealed_hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<_>>()?;
    if bytes.len() < NONCE + TAG {
        return None;
    }
    let (sealed, tag) = bytes.split_at(bytes.len() - TAG);
    if !super::security::constant_time_eq(&hmac_sha256(&keys.1, sealed), tag) {
        return None;
    }
    let (nonce, body) = sealed.split_at(NONCE);
    let mut body = body.to_vec();
    keystream_xor(&keys.0, nonce, &mut body);
    Some(body)
}

// ---------------------------------------------------------------------------------
// Validation (upstream's normalisation rules)

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("CREDENTIAL_VAULT::INVALID_REQUEST", message)
}

/// A serde error without the values it may quote (a misplaced secret included).
fn parse_error(e: &serde_json::Error) -> ApiError {
    let text = e.to_string();
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    for c in text.chars() {
        if c == '"' {
            if !quoted {
                out.push_str("\"…");
            }
            quoted = !quoted;
            if !quoted {
                out.push('"');
            }
            continue;
        }
        if !quoted {
            out.push(c);
        }
    }
    bad(format!("malformed credential vault request: {out}"))
}

fn check_name(what: &str, name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(bad(format!("{what} name cannot be blank")));
    }
    if name.len() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(bad(format!(
            "{what} name must be at most {MAX_NAME} bytes without control characters"
        )));
    }
    Ok(name.to_string())
}

fn seal_credential(
    keys: &(Vec<u8>, Vec<u8>),
    c: CredentialIn,
    revision: i64,
) -> ApiResult<StoredCredential> {
    let name = check_name("credential", &c.name)?;
    if c.source.kind != "inline" {
        return Err(bad(format!(
            "credential {name:?}: source type {:?} is not supported (only inline)",
            c.source.kind
        )));
    }
    if c.source.value.is_empty() || c.source.value.len() > MAX_VALUE {
        return Err(bad(format!(
            "credential {name:?}: the value must be 1 to {MAX_VALUE} bytes"
        )));
    }
    Ok(StoredCredential {
        sealed: seal(keys, c.source.value.as_bytes()),
        name,
        source_type: "inline".into(),
        revision,
    })
}

fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `x-api-key` → `X-Api-Key` (Go's canonical header form).
fn canonical_header(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => {
                    first.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase()
                }
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn check_header(binding: &str, name: &str) -> ApiResult<String> {
    let name = canonical_header(name.trim());
    if !is_header_name(&name) {
        return Err(bad(format!(
            "binding {binding:?}: invalid credential header name {name:?}"
        )));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(bad(format!(
            "binding {binding:?}: reserved credential header name {name:?}"
        )));
    }
    Ok(name)
}

fn is_label(label: &str) -> bool {
    let b = label.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_fqdn(host: &str) -> bool {
    host.len() <= 253 && host.contains('.') && host.split('.').all(is_label)
}

fn normalize_host(binding: &str, host: &str) -> ApiResult<String> {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    let fail = |why: &str| Err(bad(format!("binding {binding:?}: host {host:?} {why}")));
    if host.is_empty() {
        return fail("cannot be blank");
    }
    if host.contains("://") || host.contains('/') {
        return fail("must not include a scheme or a path");
    }
    let bare = host.strip_prefix("*.").unwrap_or(&host);
    if bare.contains('*') {
        return fail("is not a valid wildcard (only a leading `*.`)");
    }
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return fail("must be an FQDN, not an IP address");
    }
    if !is_fqdn(bare) {
        return fail("must be an FQDN");
    }
    Ok(host)
}

fn dedupe(list: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    list.retain(|x| seen.insert(x.clone()));
}

fn normalize_match(binding: &str, m: &mut Match) -> ApiResult<()> {
    for (what, len) in [
        ("hosts", m.hosts.len()),
        ("schemes", m.schemes.len()),
        ("methods", m.methods.len()),
        ("paths", m.paths.len()),
    ] {
        if len > MAX_LIST {
            return Err(bad(format!(
                "binding {binding:?}: at most {MAX_LIST} match {what}"
            )));
        }
    }
    if m.hosts.is_empty() {
        return Err(bad(format!(
            "binding {binding:?}: match.hosts cannot be empty"
        )));
    }
    if m.schemes.is_empty() {
        m.schemes = vec!["https".into()];
    }
    if m.methods.is_empty() {
        m.methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
            .map(String::from)
            .to_vec();
    }
    if m.paths.is_empty() {
        m.paths = vec!["/*".into()];
    }
    for s in &mut m.schemes {
        *s = s.trim().to_ascii_lowercase();
        if s != "https" && s != "http" {
            return Err(bad(format!(
                "binding {binding:?}: unsupported scheme {s:?} (https or http)"
            )));
        }
    }
    if let Some(port) = m.ports.iter().find(|p| **p != 80 && **p != 443) {
        return Err(bad(format!(
            "binding {binding:?}: unsupported port {port}: only 80 and 443 (derived from the \
             scheme) are accepted"
        )));
    }
    m.ports.clear();
    for h in &mut m.hosts {
        *h = normalize_host(binding, h)?;
    }
    for method in &mut m.methods {
        *method = method.trim().to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(bad(format!(
                "binding {binding:?}: methods must be HTTP method names"
            )));
        }
    }
    for p in &mut m.paths {
        *p = p.trim().to_string();
        if !p.starts_with('/') || p.chars().any(char::is_control) {
            return Err(bad(format!(
                "binding {binding:?}: path pattern {p:?} must start with /"
            )));
        }
    }
    dedupe(&mut m.schemes);
    dedupe(&mut m.hosts);
    dedupe(&mut m.methods);
    dedupe(&mut m.paths);
    Ok(())
}

fn normalize_auth(binding: &str, a: &mut Auth) -> ApiResult<()> {
    a.kind = a.kind.trim().to_string();
    let refuse = |field: &str| {
        Err(bad(format!(
            "binding {binding:?}: {} auth takes no `{field}`",
            a.kind
        )))
    };
    let need_credential = |c: &mut Option<String>| -> ApiResult<()> {
        let v = c.as_deref().unwrap_or("").trim().to_string();
        if v.is_empty() {
            return Err(bad(format!(
                "binding {binding:?}: {} auth requires `credential`",
                a.kind
            )));
        }
        *c = Some(v);
        Ok(())
    };
    match a.kind.as_str() {
        "bearer" | "basic" => {
            if a.name.is_some() {
                return refuse("name");
            }
            if a.headers.is_some() {
                return refuse("headers");
            }
            need_credential(&mut a.credential)?;
        }
        "apiKey" => {
            if a.headers.is_some() {
                return refuse("headers");
            }
            let name = a.name.as_deref().unwrap_or("");
            a.name = Some(check_header(binding, name)?);
            need_credential(&mut a.credential)?;
        }
        "customHeaders" => {
            if a.credential.is_some() {
                return refuse("credential");
            }
            if a.name.is_some() {
                return refuse("name");
            }
            let headers = a.headers.get_or_insert_with(Vec::new);
            if headers.is_empty() || headers.len() > MAX_LIST {
                return Err(bad(format!(
                    "binding {binding:?}: customHeaders auth requires 1 to {MAX_LIST} headers"
                )));
            }
            let mut seen = std::collections::HashSet::new();
            for h in headers.iter_mut() {
                h.name = check_header(binding, &h.name)?;
                if !seen.insert(h.name.to_ascii_lowercase()) {
                    return Err(bad(format!(
                        "binding {binding:?}: duplicate custom header name {:?}",
                        h.name
                    )));
                }
                h.credential = h.credential.trim().to_string();
                if h.credential.is_empty() {
                    return Err(bad(format!(
                        "binding {binding:?}: customHeaders entry {:?} requires `credential`",
                        h.name
                    )));
                }
            }
        }
        "passthrough" => {
            // Injects nothing itself: only its substitutions act.
            if a.credential.is_some() {
                return refuse("credential");
            }
            if a.name.is_some() {
                return refuse("name");
            }
            if a.headers.is_some() {
                return refuse("headers");
            }
        }
        other => {
            return Err(bad(format!(
                "binding {binding:?}: unsupported auth type {other:?} (bearer, basic, apiKey, \
                 customHeaders, passthrough)"
            )))
        }
    }
    let substitutions = a.substitutions.get_or_insert_with(Vec::new);
    if substitutions.len() > MAX_LIST {
        return Err(bad(format!(
            "binding {binding:?}: at most {MAX_LIST} substitutions"
        )));
    }
    for (i, s) in substitutions.iter_mut().enumerate() {
        s.credential = s.credential.trim().to_string();
        if s.credential.is_empty() {
            return Err(bad(format!(
                "binding {binding:?}: substitution {i} requires `credential`"
            )));
        }
        s.placeholder = s.placeholder.trim().to_string();
        if s.placeholder.is_empty() || s.placeholder.len() > MAX_NAME {
            return Err(bad(format!(
                "binding {binding:?}: substitution {i} requires a `placeholder` of 1 to \
                 {MAX_NAME} bytes"
            )));
        }
        if s.surfaces.is_empty() {
            return Err(bad(format!(
                "binding {binding:?}: substitution {i} requires at least one surface in `in`"
            )));
        }
        for surface in &mut s.surfaces {
            *surface = surface.trim().to_ascii_lowercase();
            if !matches!(surface.as_str(), "path" | "query" | "header" | "body") {
                return Err(bad(format!(
                    "binding {binding:?}: substitution {i} has unsupported surface {surface:?} \
                     (path, query, header, body)"
                )));
            }
        }
        dedupe(&mut s.surfaces);
    }
    if substitutions.is_empty() {
        a.substitutions = None;
    }
    Ok(())
}

fn normalize_binding(mut b: Binding) -> ApiResult<Binding> {
    b.name = check_name("binding", &b.name)?;
    normalize_match(&b.name, &mut b.matcher)?;
    normalize_auth(&b.name, &mut b.auth)?;
    Ok(b)
}

fn credential_refs(auth: &Auth) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    out.extend(auth.credential.as_deref());
    out.extend(auth.headers.iter().flatten().map(|h| h.credential.as_str()));
    out.extend(
        auth.substitutions
            .iter()
            .flatten()
            .map(|s| s.credential.as_str()),
    );
    out
}

/// What the policy decides for `host`: first matching rule, else the default
/// (absent = deny, as the sidecar).
fn policy_allows(policy: &NetworkPolicy, host: &str) -> bool {
    for rule in policy.egress.iter().flatten() {
        let target = rule
            .target
            .trim()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let hit = match target.strip_prefix("*.") {
            Some(suffix) => host.ends_with(&format!(".{suffix}")),
            None => target == host,
        };
        if hit {
            return rule.action == RuleAction::Allow;
        }
    }
    policy.default_action == Some(RuleAction::Allow)
}

fn overlap(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| b.contains(x))
}

fn paths_overlap(a: &str, b: &str) -> bool {
    let prefix = |p: &str, q: &str| p.strip_suffix('*').is_some_and(|stem| q.starts_with(stem));
    a == b || prefix(a, b) || prefix(b, a)
}

fn hosts_ambiguous(a: &str, b: &str) -> bool {
    match (a.strip_prefix("*."), b.strip_prefix("*.")) {
        (None, None) => a == b,
        (Some(x), Some(y)) => {
            x == y || x.ends_with(&format!(".{y}")) || y.ends_with(&format!(".{x}"))
        }
        // An exact host takes precedence over a wildcard.
        _ => false,
    }
}

fn ambiguous(a: &Binding, b: &Binding) -> bool {
    overlap(&a.matcher.schemes, &b.matcher.schemes)
        && overlap(&a.matcher.methods, &b.matcher.methods)
        && a.matcher
            .paths
            .iter()
            .any(|x| b.matcher.paths.iter().any(|y| paths_overlap(x, y)))
        && a.matcher
            .hosts
            .iter()
            .any(|x| b.matcher.hosts.iter().any(|y| hosts_ambiguous(x, y)))
}

/// The checks on the whole candidate state, as upstream's `validateCandidate`.
fn validate_state(vault: &StoredVault, policy: Option<&NetworkPolicy>) -> ApiResult<()> {
    if vault.credentials.len() > MAX_ITEMS || vault.bindings.len() > MAX_ITEMS {
        return Err(bad(format!(
            "a vault holds at most {MAX_ITEMS} credentials and {MAX_ITEMS} bindings"
        )));
    }
    if !vault.bindings.is_empty() && policy.is_none() {
        return Err(bad("credential vault bindings require an egress policy"));
    }
    for b in &vault.bindings {
        for name in credential_refs(&b.auth) {
            if !vault.credentials.iter().any(|c| c.name == name) {
                return Err(bad(format!(
                    "binding {:?} references unknown credential {name:?}",
                    b.name
                )));
            }
        }
        if let Some(policy) = policy {
            for host in &b.matcher.hosts {
                let probe = match host.strip_prefix("*.") {
                    Some(suffix) => format!("probe.{suffix}"),
                    None => host.clone(),
                };
                if !policy_allows(policy, &probe) {
                    return Err(bad(format!(
                        "binding {:?} host {host:?} is not allowed by the egress policy",
                        b.name
                    )));
                }
            }
        }
    }
    for (i, a) in vault.bindings.iter().enumerate() {
        for b in &vault.bindings[i + 1..] {
            if ambiguous(a, b) {
                return Err(bad(format!(
                    "bindings {:?} and {:?} can match the same request",
                    a.name, b.name
                )));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Answers

fn credential_meta(c: &StoredCredential) -> serde_json::Value {
    serde_json::json!({"name": c.name, "sourceType": c.source_type, "revision": c.revision})
}

fn binding_meta(b: &Binding, revision: i64) -> serde_json::Value {
    let mut auth = serde_json::json!({"type": b.auth.kind});
    if b.auth.kind == "apiKey" {
        auth["name"] = serde_json::json!(b.auth.name);
    }
    serde_json::json!({
        "name": b.name,
        "revision": revision,
        "match": b.matcher,
        "auth": auth,
    })
}

fn sorted(vault: &mut StoredVault) {
    vault.credentials.sort_by(|a, b| a.name.cmp(&b.name));
    vault.bindings.sort_by(|a, b| a.name.cmp(&b.name));
}

fn state(vault: &StoredVault) -> serde_json::Value {
    serde_json::json!({
        "revision": vault.revision,
        "credentials": vault.credentials.iter().map(credential_meta).collect::<Vec<_>>(),
        "bindings": vault.bindings.iter().map(|b| binding_meta(b, vault.revision)).collect::<Vec<_>>(),
    })
}

fn answer(status: StatusCode, body: Option<serde_json::Value>) -> Response {
    let mut response = match body {
        Some(body) => (status, Json(body)).into_response(),
        None => status.into_response(),
    };
    response
        .headers_mut()
        .insert(ENFORCEMENT_HEADER, HeaderValue::from_static(NOT_ENFORCED));
    response
}

fn not_found(what: &str) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "CREDENTIAL_VAULT::NOT_FOUND", what)
}

/// Applies one mutation list to `items` (keyed by name): deletes, then replaces,
/// then adds; a name may appear in one operation only (upstream's rules).
fn mutate<T>(
    what: &str,
    items: &mut Vec<T>,
    name_of: fn(&T) -> &str,
    set: MutationSet<T>,
) -> ApiResult<()> {
    let mut mentioned = std::collections::HashSet::new();
    for name in &set.delete {
        let name = name.trim();
        if name.is_empty() {
            return Err(bad(format!("{what} delete name cannot be blank")));
        }
        if !mentioned.insert(name.to_string()) {
            return Err(bad(format!(
                "{what} {name:?} mentioned by multiple operations"
            )));
        }
        let before = items.len();
        items.retain(|i| name_of(i) != name);
        if items.len() == before {
            return Err(bad(format!("{what} {name:?} does not exist")));
        }
    }
    for item in set.replace {
        let name = name_of(&item).to_string();
        if !mentioned.insert(name.clone()) {
            return Err(bad(format!(
                "{what} {name:?} mentioned by multiple operations"
            )));
        }
        let Some(slot) = items.iter_mut().find(|i| name_of(i) == name) else {
            return Err(bad(format!("{what} {name:?} does not exist")));
        };
        *slot = item;
    }
    for item in set.add {
        let name = name_of(&item).to_string();
        if !mentioned.insert(name.clone()) {
            return Err(bad(format!(
                "{what} {name:?} mentioned by multiple operations or added twice"
            )));
        }
        if items.iter().any(|i| name_of(i) == name) {
            return Err(bad(format!("{what} {name:?} already exists")));
        }
        items.push(item);
    }
    Ok(())
}

impl Control {
    /// `/credential-vault...` of sandbox `id`; `path` is the egress path (still
    /// percent-encoded).
    pub async fn credential_vault(
        &self,
        id: &str,
        method: Method,
        path: &str,
        body: axum::body::Body,
    ) -> ApiResult<Response> {
        let body = axum::body::to_bytes(body, MAX_BODY)
            .await
            .map_err(|e| bad(format!("reading the request body: {e}")))?;
        let lock = self.registry.lock_for(id);
        let _guard = lock.lock().await;
        let record = self.sandbox(id)?;
        if !record.credential_proxy {
            return Err(ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                "CREDENTIAL_VAULT::PROXY_NOT_ENABLED",
                format!(
                    "sandbox {id} was created without credentialProxy.enabled; the credential \
                     vault needs it (and on this server is {NOT_ENFORCED})"
                ),
            ));
        }
        let rest = path.trim_end_matches('/');
        let rest = rest.strip_prefix("/credential-vault").unwrap_or(rest);
        let decoded = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let stored = self.store.get_vault(id)?;
        let keys = vault_keys(self, id);
        match (method.clone(), rest) {
            (Method::POST, "") => {
                if stored.is_some() {
                    return Err(ApiError::conflict(
                        "CREDENTIAL_VAULT::EXISTS",
                        format!("sandbox {id} already has a credential vault (PATCH it)"),
                    ));
                }
                let req: CreateRequest =
                    serde_json::from_slice(&body).map_err(|e| parse_error(&e))?;
                let mut vault = StoredVault {
                    revision: 1,
                    ..Default::default()
                };
                let mut no_items = MutationSet {
                    add: Vec::new(),
                    replace: Vec::new(),
                    delete: Vec::new(),
                };
                for c in req.credentials {
                    no_items.add.push(seal_credential(&keys, c, 1)?);
                }
                mutate("credential", &mut vault.credentials, |c| &c.name, no_items)?;
                let bindings = req
                    .bindings
                    .into_iter()
                    .map(normalize_binding)
                    .collect::<ApiResult<Vec<_>>>()?;
                mutate(
                    "binding",
                    &mut vault.bindings,
                    |b| &b.name,
                    MutationSet {
                        add: bindings,
                        replace: Vec::new(),
                        delete: Vec::new(),
                    },
                )?;
                validate_state(&vault, record.network_policy.as_ref())?;
                sorted(&mut vault);
                self.store.put_vault(id, &vault)?;
                Ok(answer(StatusCode::CREATED, Some(state(&vault))))
            }
            (Method::GET, "") => {
                let vault = stored.ok_or_else(|| not_found("no credential vault"))?;
                Ok(answer(StatusCode::OK, Some(state(&vault))))
            }
            (Method::PATCH, "") => {
                let mut vault = stored.ok_or_else(|| not_found("no credential vault"))?;
                let req: MutationRequest =
                    serde_json::from_slice(&body).map_err(|e| parse_error(&e))?;
                if let Some(expected) = req.expected_revision {
                    if expected != vault.revision {
                        return Err(ApiError::conflict(
                            "CREDENTIAL_VAULT::REVISION_MISMATCH",
                            format!(
                                "expectedRevision {expected} does not match the current \
                                 revision {}",
                                vault.revision
                            ),
                        ));
                    }
                }
                let next = vault.revision + 1;
                if let Some(set) = req.credentials {
                    let sealed = MutationSet {
                        add: set
                            .add
                            .into_iter()
                            .map(|c| seal_credential(&keys, c, next))
                            .collect::<ApiResult<_>>()?,
                        replace: set
                            .replace
                            .into_iter()
                            .map(|c| seal_credential(&keys, c, next))
                            .collect::<ApiResult<_>>()?,
                        delete: set.delete,
                    };
                    mutate("credential", &mut vault.credentials, |c| &c.name, sealed)?;
                }
                if let Some(set) = req.bindings {
                    let normalized = MutationSet {
                        add: set
                            .add
                            .into_iter()
                            .map(normalize_binding)
                            .collect::<ApiResult<_>>()?,
                        replace: set
                            .replace
                            .into_iter()
                            .map(normalize_binding)
                            .collect::<ApiResult<_>>()?,
                        delete: set.delete,
                    };
                    mutate("binding", &mut vault.bindings, |b| &b.name, normalized)?;
                }
                validate_state(&vault, record.network_policy.as_ref())?;
                vault.revision = next;
                sorted(&mut vault);
                self.store.put_vault(id, &vault)?;
                Ok(answer(StatusCode::OK, Some(state(&vault))))
            }
            (Method::DELETE, "") => {
                if !self.store.delete_vault(id)? {
                    return Err(not_found("no credential vault"));
                }
                Ok(answer(StatusCode::NO_CONTENT, None))
            }
            (Method::GET, "/credentials") => {
                let vault = stored.ok_or_else(|| not_found("no credential vault"))?;
                let list: Vec<_> = vault.credentials.iter().map(credential_meta).collect();
                Ok(answer(
                    StatusCode::OK,
                    Some(serde_json::json!({"revision": vault.revision, "credentials": list})),
                ))
            }
            (Method::GET, "/bindings") => {
                let vault = stored.ok_or_else(|| not_found("no credential vault"))?;
                let list: Vec<_> = vault
                    .bindings
                    .iter()
                    .map(|b| binding_meta(b, vault.revision))
                    .collect();
                Ok(answer(
                    StatusCode::OK,
                    Some(serde_json::json!({"revision": vault.revision, "bindings": list})),
                ))
            }
            (Method::GET, other) => {
                let vault = stored.ok_or_else(|| not_found("no credential vault"))?;
                if let Some(name) = other.strip_prefix("/credentials/") {
                    let name = decoded(name);
                    let c = vault
                        .credentials
                        .iter()
                        .find(|c| c.name == name)
                        .ok_or_else(|| not_found(&format!("no credential {name:?}")))?;
                    return Ok(answer(StatusCode::OK, Some(credential_meta(c))));
                }
                if let Some(name) = other.strip_prefix("/bindings/") {
                    let name = decoded(name);
                    let b = vault
                        .bindings
                        .iter()
                        .find(|b| b.name == name)
                        .ok_or_else(|| not_found(&format!("no binding {name:?}")))?;
                    return Ok(answer(
                        StatusCode::OK,
                        Some(binding_meta(b, vault.revision)),
                    ));
                }
                Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "ROUTE_NOT_FOUND",
                    format!("no egress route GET /credential-vault{other}"),
                ))
            }
            (m, other) => Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                format!("{m} is not allowed on /credential-vault{other}"),
            )),
        }
    }

    /// Whether sandbox `id` has a vault (for the honest policy `reason`).
    pub fn has_vault(&self, id: &str) -> bool {
        matches!(self.store.get_vault(id), Ok(Some(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(v: serde_json::Value) -> ApiResult<Binding> {
        normalize_binding(serde_json::from_value(v).map_err(|e| parse_error(&e))?)
    }

    #[test]
    fn sealing_round_trips_and_detects_tampering() {
        let keys = (b"enc".to_vec(), b"mac".to_vec());
        let sealed = seal(&keys, b"s3cret-value");
        assert!(!sealed.contains(&hex(b"s3cret-value")));
        assert_eq!(open(&keys, &sealed).as_deref(), Some(&b"s3cret-value"[..]));
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 40;
        tampered[last] = if tampered[last] == b'0' { b'1' } else { b'0' };
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(open(&keys, &tampered).is_none());
        assert!(open(&(b"enc".to_vec(), b"other".to_vec()), &sealed).is_none());
        // Two seals of one value differ (random nonce).
        assert_ne!(seal(&keys, b"x"), seal(&keys, b"x"));
    }

    #[test]
    fn auth_shapes_are_checked() {
        let ok = binding(
            json!({"name": "b", "match": {"hosts": ["API.example.com."]},
            "auth": {"type": "passthrough", "substitutions": [
                {"credential": "c", "placeholder": "PH", "in": ["Query", "query", "body"]}]}}),
        )
        .unwrap();
        assert_eq!(ok.matcher.hosts, vec!["api.example.com"]);
        assert_eq!(ok.matcher.schemes, vec!["https"]);
        assert_eq!(ok.matcher.paths, vec!["/*"]);
        let subs = ok.auth.substitutions.unwrap();
        assert_eq!(subs[0].surfaces, vec!["query", "body"]);
        let key = binding(
            json!({"name": "k", "match": {"hosts": ["a.example.com"], "ports": [443]},
            "auth": {"type": "apiKey", "name": "private-token", "credential": "c"}}),
        )
        .unwrap();
        assert_eq!(key.auth.name.as_deref(), Some("Private-Token"));
        for (v, why) in [
            (
                json!({"type": "passthrough", "credential": "c"}),
                "takes no `credential`",
            ),
            (json!({"type": "bearer"}), "requires `credential`"),
            (
                json!({"type": "apiKey", "name": "Host", "credential": "c"}),
                "reserved",
            ),
            (
                json!({"type": "apiKey", "name": "bad name", "credential": "c"}),
                "invalid",
            ),
            (json!({"type": "customHeaders", "headers": []}), "1 to"),
            (
                json!({"type": "oauth", "credential": "c"}),
                "unsupported auth type",
            ),
            (
                json!({"type": "bearer", "credential": "c", "substitutions": [
                    {"credential": "c", "placeholder": "P", "in": ["cookie"]}]}),
                "unsupported surface",
            ),
            (
                json!({"type": "bearer", "credential": "c", "substitutions": [
                    {"credential": "c", "placeholder": " ", "in": ["body"]}]}),
                "placeholder",
            ),
            (
                json!({"type": "bearer", "credential": "c", "extra": 1}),
                "extra",
            ),
        ] {
            let err =
                binding(json!({"name": "b", "match": {"hosts": ["a.example.com"]}, "auth": v}))
                    .unwrap_err();
            assert!(err.message.contains(why), "{}", err.message);
        }
        for (m, why) in [
            (json!({"hosts": []}), "cannot be empty"),
            (json!({"hosts": ["10.0.0.1"]}), "IP address"),
            (json!({"hosts": ["https://a.example.com"]}), "scheme"),
            (json!({"hosts": ["a.*.com"]}), "wildcard"),
            (json!({"hosts": ["localhost"]}), "FQDN"),
            (json!({"hosts": ["a.example.com"], "ports": [8080]}), "8080"),
            (
                json!({"hosts": ["a.example.com"], "schemes": ["ftp"]}),
                "scheme",
            ),
            (
                json!({"hosts": ["a.example.com"], "paths": ["api"]}),
                "must start with /",
            ),
        ] {
            let err = binding(
                json!({"name": "b", "match": m, "auth": {"type": "bearer", "credential": "c"}}),
            )
            .unwrap_err();
            assert!(err.message.contains(why), "{}", err.message);
        }
    }

    #[test]
    fn parse_errors_quote_no_values() {
        let e = serde_json::from_slice::<CreateRequest>(
            br#"{"credentials":[{"name":"c","source":"TOPSECRET"}],"bindings":[]}"#,
        )
        .unwrap_err();
        let msg = parse_error(&e).message;
        assert!(!msg.contains("TOPSECRET"), "{msg}");
        assert!(msg.contains("invalid type"), "{msg}");
    }

    #[test]
    fn state_checks_refs_policy_and_ambiguity() {
        let policy = NetworkPolicy {
            default_action: Some(RuleAction::Deny),
            egress: Some(vec![super::super::models::NetworkRule {
                action: RuleAction::Allow,
                target: "*.example.com".into(),
            }]),
        };
        let b = |name: &str, host: &str, cred: &str| {
            binding(json!({"name": name, "match": {"hosts": [host]},
                "auth": {"type": "bearer", "credential": cred}}))
            .unwrap()
        };
        let cred = StoredCredential {
            name: "c".into(),
            source_type: "inline".into(),
            revision: 1,
            sealed: String::new(),
        };
        let mut vault = StoredVault {
            revision: 1,
            credentials: vec![cred],
            bindings: vec![b("one", "a.example.com", "c")],
        };
        assert!(validate_state(&vault, Some(&policy)).is_ok());
        let e = validate_state(&vault, None).unwrap_err();
        assert!(e.message.contains("require an egress policy"));
        vault.bindings.push(b("two", "a.example.com", "c"));
        let e = validate_state(&vault, Some(&policy)).unwrap_err();
        assert!(
            e.message.contains("can match the same request"),
            "{}",
            e.message
        );
        vault.bindings.pop();
        vault.bindings.push(b("three", "other.org", "c"));
        let e = validate_state(&vault, Some(&policy)).unwrap_err();
        assert!(e.message.contains("not allowed by the egress policy"));
        vault.bindings.pop();
        vault.bindings.push(b("four", "b.example.com", "missing"));
        let e = validate_state(&vault, Some(&policy)).unwrap_err();
        assert!(e.message.contains("unknown credential"));
    }
}
