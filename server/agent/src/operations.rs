//! Keyed execution creation (`/execution/*`, `POST /command/operations`,
//! `POST /pty/operations`): a caller names a command or PTY creation with an
//! `operation_id` it saved before sending, and a retry with the same id and the same
//! request returns the original handle instead of starting a second process.
//!
//! The wire and the rules are upstream execd's (issue #1547):
//! - `GET /execution/instance` → `{instance_id, issued_at, retention_seconds, capacity}`.
//! - An operation id is `<instance_id>.<issued_at>.<token>`: the 32-character instance
//!   id of this agent, a server Unix timestamp (canonical decimal, not in the future)
//!   and an 8–128 character token of `[A-Za-z0-9_-]`.
//! - Creation answers `{id, kind, state, expires_at}`: `202` while `creating`, else
//!   `200` (`created`, or `failed`: launching failed and this id never retries it).
//! - Errors: `invalid_operation_id` / `invalid_operation_kind` (400),
//!   `operation_conflict` and `operation_instance_mismatch` (409), `operation_expired`
//!   (410), `operation_not_found` (404), `operation_capacity_exceeded` (503).
//! - Every answer of these routes carries `Cache-Control: no-store`.
//! - Records are kept 24 h from the id's timestamp (not from the last retry), at most
//!   [`CAPACITY`] of them; a record whose command or PTY shell still runs is never
//!   dropped, and a full registry refuses new ids rather than evicting one.
//!
//! Principal: upstream keys records by (principal, kind, id) where the principal is
//! the execd access token. Here the server checks the sandbox's one execd token
//! (`X-EXECD-ACCESS-TOKEN`) before a request reaches this agent over its private Unix
//! socket, and strips it: every request the agent sees comes from that one
//! authenticated principal, so records are keyed by (kind, id) within this agent.
//!
//! Bodies of keyed creation are strict (unknown fields, trailing data and bodies
//! over 1 MiB are refused) and errors never echo the body or the id.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::extract::QueryPairs;
use crate::SharedState;

/// Routes, spelled as in `openapi/execd.yaml`.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/execution/instance"),
    ("GET", "/execution/operation"),
    ("POST", "/command/operations"),
    ("POST", "/pty/operations"),
];

/// How long a record is kept, from its id's timestamp.
pub const RETENTION_SECONDS: i64 = 24 * 60 * 60;
/// Most records kept at once.
pub const CAPACITY: usize = 4096;
/// Largest keyed creation body.
pub const BODY_LIMIT: usize = 1024 * 1024;
/// The header of `GET /execution/operation`.
pub const OPERATION_ID_HEADER: &str = "X-EXECD-OPERATION-ID";

/// What an operation creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Command,
    Pty,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Command => "command",
            Kind::Pty => "pty",
        }
    }

    fn parse(kind: &str) -> Option<Self> {
        match kind {
            "command" => Some(Kind::Command),
            "pty" => Some(Kind::Pty),
            _ => None,
        }
    }
}

/// Creation state of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpState {
    Creating,
    Created,
    Failed,
}

impl OpState {
    fn as_str(self) -> &'static str {
        match self {
            OpState::Creating => "creating",
            OpState::Created => "created",
            OpState::Failed => "failed",
        }
    }
}

/// `ExecutionOperation` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operation {
    pub id: String,
    pub kind: &'static str,
    pub state: &'static str,
    pub expires_at: String,
}

/// `ExecutionInstance` on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Instance {
    pub instance_id: String,
    pub issued_at: i64,
    pub retention_seconds: i64,
    pub capacity: usize,
}

/// Why an operation call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpError {
    InvalidId(&'static str),
    InvalidKind,
    Conflict,
    InstanceMismatch,
    Expired,
    NotFound,
    CapacityExceeded,
}

impl From<OpError> for ApiError {
    fn from(err: OpError) -> Self {
        let (status, code, message) = match err {
            OpError::InvalidId(why) => (StatusCode::BAD_REQUEST, "invalid_operation_id", why),
            OpError::InvalidKind => (
                StatusCode::BAD_REQUEST,
                "invalid_operation_kind",
                "kind must be command or pty",
            ),
            OpError::Conflict => (
                StatusCode::CONFLICT,
                "operation_conflict",
                "operation identity was used with a different request",
            ),
            OpError::InstanceMismatch => (
                StatusCode::CONFLICT,
                "operation_instance_mismatch",
                "execd instance changed or identity belongs to another sandbox; previous \
                 execution outcome is unknown, do not retry with a new identity",
            ),
            OpError::Expired => (
                StatusCode::GONE,
                "operation_expired",
                "recovery window expired; previous execution outcome is unknown, creation refused",
            ),
            OpError::NotFound => (
                StatusCode::NOT_FOUND,
                "operation_not_found",
                "operation not found in this execd instance",
            ),
            OpError::CapacityExceeded => (
                StatusCode::SERVICE_UNAVAILABLE,
                "operation_capacity_exceeded",
                "operation recovery capacity reached; creation refused",
            ),
        };
        ApiError::new(status, code, message)
    }
}

/// What the registry asks about the resources behind its records.
pub trait Resources {
    /// Whether the command runs / the PTY shell runs (such a record is never dropped).
    fn active(&self, kind: Kind, handle: &str) -> bool;
    /// The record of `handle` expired: drop what only it kept (a dormant or finished
    /// keyed PTY session).
    fn release(&self, kind: Kind, handle: &str);
}

struct Record {
    handle: String,
    state: OpState,
    expires_at: i64,
    fingerprint: u128,
}

/// The outcome of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This caller owns the creation: launch `handle`, then [`Registry::finish`].
    Owner(Operation),
    /// The id was claimed before (with the same request).
    Existing(Operation),
}

type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The operation records of one agent lifetime.
pub struct Registry {
    instance: String,
    capacity: usize,
    clock: Clock,
    /// Two independently keyed hashers: a 128-bit fingerprint nobody can aim at.
    keys: (RandomState, RandomState),
    records: Mutex<HashMap<(Kind, String), Record>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new(CAPACITY, Arc::new(|| Utc::now().timestamp()))
    }
}

/// A parsed, checked operation id.
struct Identity {
    expires_at: i64,
}

fn rfc3339(unix: i64) -> String {
    DateTime::<Utc>::from_timestamp(unix, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn valid_token(token: &str) -> bool {
    (8..=128).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Registry {
    /// A registry of `capacity` records reading the time (Unix seconds) from `clock`.
    pub fn new(capacity: usize, clock: Clock) -> Self {
        Self {
            instance: uuid::Uuid::new_v4().simple().to_string(),
            capacity,
            clock,
            keys: (RandomState::new(), RandomState::new()),
            records: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(Kind, String), Record>> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> i64 {
        (self.clock)()
    }

    /// The 32-character id of this agent lifetime.
    pub fn instance_id(&self) -> &str {
        &self.instance
    }

    pub fn instance(&self) -> Instance {
        Instance {
            instance_id: self.instance.clone(),
            issued_at: self.now(),
            retention_seconds: RETENTION_SECONDS,
            capacity: self.capacity,
        }
    }

    /// The fingerprint of a request's canonical bytes.
    pub fn fingerprint(&self, canonical: &[u8]) -> u128 {
        let high = self.keys.0.hash_one(canonical);
        let low = self.keys.1.hash_one(canonical);
        (u128::from(high) << 64) | u128::from(low)
    }

    fn identity(&self, id: &str) -> Result<Identity, OpError> {
        const SHAPE: &str = "operation_id must contain instance, server timestamp, and an \
                             8-128 character random token";
        let parts: Vec<&str> = id.split('.').collect();
        let [instance, issued, token] = parts[..] else {
            return Err(OpError::InvalidId(SHAPE));
        };
        if instance.len() != 32 || !valid_token(token) {
            return Err(OpError::InvalidId(SHAPE));
        }
        let issued_at = issued
            .parse::<i64>()
            .ok()
            .filter(|t| *t >= 0 && t.to_string() == issued)
            .ok_or(OpError::InvalidId("invalid operation timestamp"))?;
        if instance != self.instance {
            return Err(OpError::InstanceMismatch);
        }
        if issued_at > self.now() {
            return Err(OpError::InvalidId(
                "operation timestamp is in the future; use the server-issued timestamp",
            ));
        }
        Ok(Identity {
            expires_at: issued_at.saturating_add(RETENTION_SECONDS),
        })
    }

    fn snapshot(kind: Kind, record: &Record) -> Operation {
        Operation {
            id: record.handle.clone(),
            kind: kind.as_str(),
            state: record.state.as_str(),
            expires_at: rfc3339(record.expires_at),
        }
    }

    /// Whether `record` may go: resolved, past its window, and nothing of it runs.
    fn expired(now: i64, kind: Kind, record: &Record, resources: &dyn Resources) -> bool {
        record.state != OpState::Creating
            && now >= record.expires_at
            && !resources.active(kind, &record.handle)
    }

    /// The record of (kind, id) unless it expired (then it is dropped).
    fn retained<'a>(
        &self,
        records: &'a mut HashMap<(Kind, String), Record>,
        key: &(Kind, String),
        resources: &dyn Resources,
    ) -> Option<&'a Record> {
        let now = self.now();
        let gone = records
            .get(key)
            .is_some_and(|r| Self::expired(now, key.0, r, resources));
        if gone {
            if let Some(record) = records.remove(key) {
                resources.release(key.0, &record.handle);
            }
        }
        records.get(key)
    }

    /// Drops every expired record.
    fn sweep(&self, records: &mut HashMap<(Kind, String), Record>, resources: &dyn Resources) {
        let now = self.now();
        let gone: Vec<(Kind, String)> = records
            .iter()
            .filter(|(key, r)| Self::expired(now, key.0, r, resources))
            .map(|(key, _)| key.clone())
            .collect();
        for key in gone {
            if let Some(record) = records.remove(&key) {
                resources.release(key.0, &record.handle);
            }
        }
    }

    /// Claims `id` for a creation of `kind` whose request has `fingerprint`. `handle`
    /// makes the handle a new record gets (called only then).
    pub fn claim(
        &self,
        kind: Kind,
        id: &str,
        fingerprint: u128,
        handle: impl FnOnce() -> String,
        resources: &dyn Resources,
    ) -> Result<Claim, OpError> {
        let identity = self.identity(id)?;
        let key = (kind, id.to_owned());
        let mut records = self.lock();
        if let Some(record) = self.retained(&mut records, &key, resources) {
            if record.fingerprint != fingerprint {
                return Err(OpError::Conflict);
            }
            return Ok(Claim::Existing(Self::snapshot(kind, record)));
        }
        if self.now() >= identity.expires_at {
            return Err(OpError::Expired);
        }
        if records.len() >= self.capacity {
            self.sweep(&mut records, resources);
            if records.len() >= self.capacity {
                return Err(OpError::CapacityExceeded);
            }
        }
        let record = Record {
            handle: handle(),
            state: OpState::Creating,
            expires_at: identity.expires_at,
            fingerprint,
        };
        let operation = Self::snapshot(kind, &record);
        records.insert(key, record);
        Ok(Claim::Owner(operation))
    }

    /// Resolves the creation the owner of a claim ran.
    pub fn finish(&self, kind: Kind, id: &str, failed: bool) -> Option<Operation> {
        let mut records = self.lock();
        let record = records.get_mut(&(kind, id.to_owned()))?;
        if record.state == OpState::Creating {
            record.state = if failed {
                OpState::Failed
            } else {
                OpState::Created
            };
        }
        Some(Self::snapshot(kind, record))
    }

    /// `GET /execution/operation`: a private lookup, never an inventory.
    pub fn get(
        &self,
        kind: &str,
        id: &str,
        resources: &dyn Resources,
    ) -> Result<Operation, OpError> {
        let kind = Kind::parse(kind).ok_or(OpError::InvalidKind)?;
        let identity = self.identity(id)?;
        let key = (kind, id.to_owned());
        let mut records = self.lock();
        if let Some(record) = self.retained(&mut records, &key, resources) {
            return Ok(Self::snapshot(kind, record));
        }
        if self.now() >= identity.expires_at {
            return Err(OpError::Expired);
        }
        Err(OpError::NotFound)
    }

    /// How many records are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The agent's commands and PTY sessions, as the registry sees them.
struct AgentResources<'a>(&'a crate::AgentState);

impl Resources for AgentResources<'_> {
    fn active(&self, kind: Kind, handle: &str) -> bool {
        match kind {
            Kind::Command => self.0.commands.is_running(handle),
            Kind::Pty => self.0.pty.is_running(handle),
        }
    }

    fn release(&self, kind: Kind, handle: &str) {
        if kind == Kind::Pty {
            self.0.pty.discard(handle);
        }
    }
}

pub fn routes() -> Router<SharedState> {
    Router::new()
        .route("/execution/instance", get(instance))
        .route("/execution/operation", get(operation))
        .route("/command/operations", post(create_command))
        .route("/pty/operations", post(create_pty))
        .layer(axum::middleware::map_response(no_store))
}

async fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn instance(State(state): State<SharedState>) -> Json<Instance> {
    Json(state.operations.instance())
}

async fn operation(
    State(state): State<SharedState>,
    headers: HeaderMap,
    query: QueryPairs,
) -> Result<Json<Operation>, ApiError> {
    let kind = query.first("kind").unwrap_or("");
    let id = headers
        .get(OPERATION_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let op = state
        .operations
        .get(kind, id, &AgentResources(state.as_ref()))?;
    Ok(Json(op))
}

/// The body of a keyed creation: at most [`BODY_LIMIT`], one JSON object of `T`'s
/// fields and nothing after it. Errors never echo the body.
async fn strict_body<T: serde::de::DeserializeOwned>(request: Request) -> Result<T, ApiError> {
    let bytes = axum::body::to_bytes(request.into_body(), BODY_LIMIT)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "INVALID_REQUEST_BODY",
                "operation creation body exceeds 1 MiB",
            )
        })?;
    serde_json::from_slice(&bytes)
        .map_err(|_| ApiError::bad_request("INVALID_REQUEST_BODY", "invalid creation fields"))
}

fn require_id(id: &str) -> Result<(), ApiError> {
    if id.is_empty() {
        return Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            "operation_id must be a nonempty string",
        ));
    }
    Ok(())
}

fn answer(operation: Operation) -> Response {
    let status = if operation.state == OpState::Creating.as_str() {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    (status, Json(operation)).into_response()
}

/// `POST /command/operations`: `RunCommandRequest` fields plus `operation_id`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandOperationRequest {
    operation_id: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    argv: Option<Vec<String>>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    background: Option<bool>,
    #[serde(default)]
    timeout: Option<i64>,
    #[serde(default)]
    uid: Option<u32>,
    #[serde(default)]
    gid: Option<u32>,
    #[serde(default)]
    envs: Option<std::collections::BTreeMap<String, String>>,
}

/// What makes two command creations the same request: typed fields, an empty env
/// map equal to none, strings compared literally.
#[derive(Serialize)]
struct CommandFingerprint<'a> {
    command: &'a Option<String>,
    argv: &'a Option<Vec<String>>,
    cwd: &'a str,
    background: bool,
    timeout: i64,
    uid: Option<u32>,
    gid: Option<u32>,
    envs: Option<&'a std::collections::BTreeMap<String, String>>,
}

impl CommandOperationRequest {
    fn canonical(&self) -> Vec<u8> {
        let fields = CommandFingerprint {
            command: &self.command,
            argv: &self.argv,
            cwd: self.cwd.as_deref().unwrap_or(""),
            background: self.background.unwrap_or(false),
            timeout: self.timeout.unwrap_or(0),
            uid: self.uid,
            gid: self.gid,
            envs: self.envs.as_ref().filter(|e| !e.is_empty()),
        };
        serde_json::to_vec(&fields).unwrap_or_default()
    }

    fn into_run(self) -> crate::commands::RunCommandRequest {
        crate::commands::RunCommandRequest {
            command: self.command,
            argv: self.argv,
            cwd: self.cwd,
            background: self.background.unwrap_or(false),
            timeout: self.timeout,
            uid: self.uid,
            gid: self.gid,
            envs: self.envs.map(|e| e.into_iter().collect()),
        }
    }
}

async fn create_command(State(state): State<SharedState>, request: Request) -> Response {
    match create_command_inner(&state, request).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn create_command_inner(state: &SharedState, request: Request) -> Result<Response, ApiError> {
    let body: CommandOperationRequest = strict_body(request).await?;
    require_id(&body.operation_id)?;
    let id = body.operation_id.clone();
    let fingerprint = state.operations.fingerprint(&body.canonical());
    let run = body.into_run();
    // The caller's mistakes are refused before anything is claimed.
    crate::commands::check_request(&run)?;
    let claim = state.operations.claim(
        Kind::Command,
        &id,
        fingerprint,
        crate::commands::new_id,
        &AgentResources(state.as_ref()),
    )?;
    let operation = match claim {
        Claim::Existing(operation) => operation,
        Claim::Owner(operation) => {
            let launched = crate::commands::launch_keyed(state, run, operation.id.clone());
            state
                .operations
                .finish(Kind::Command, &id, !launched)
                .unwrap_or(operation)
        }
    };
    Ok(answer(operation))
}

/// `POST /pty/operations`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PtyOperationRequest {
    operation_id: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    command: Option<String>,
}

async fn create_pty(State(state): State<SharedState>, request: Request) -> Response {
    match create_pty_inner(&state, request).await {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

async fn create_pty_inner(state: &SharedState, request: Request) -> Result<Response, ApiError> {
    let body: PtyOperationRequest = strict_body(request).await?;
    require_id(&body.operation_id)?;
    let cwd = body.cwd.unwrap_or_default();
    let command = body.command.unwrap_or_default();
    let canonical = serde_json::to_vec(&(&cwd, &command)).unwrap_or_default();
    let fingerprint = state.operations.fingerprint(&canonical);
    if cwd.contains('\0') || command.contains('\0') {
        return Err(ApiError::bad_request(
            "INVALID_REQUEST_BODY",
            "cwd and command must not contain a NUL byte",
        ));
    }
    let id = body.operation_id;
    let claim = state.operations.claim(
        Kind::Pty,
        &id,
        fingerprint,
        || uuid::Uuid::new_v4().to_string(),
        &AgentResources(state.as_ref()),
    )?;
    let operation = match claim {
        Claim::Existing(operation) => operation,
        Claim::Owner(operation) => {
            let created =
                crate::pty::create_keyed(state, operation.id.clone(), &cwd, &command).is_ok();
            state
                .operations
                .finish(Kind::Pty, &id, !created)
                .unwrap_or(operation)
        }
    };
    Ok(answer(operation))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicI64, Ordering};

    const T0: i64 = 1_700_000_000;

    #[derive(Default)]
    struct Fake {
        running: Mutex<HashSet<String>>,
        released: Mutex<Vec<String>>,
    }

    impl Resources for Fake {
        fn active(&self, _: Kind, handle: &str) -> bool {
            self.running.lock().unwrap().contains(handle)
        }
        fn release(&self, _: Kind, handle: &str) {
            self.released.lock().unwrap().push(handle.to_owned());
        }
    }

    fn registry(capacity: usize) -> (Registry, Arc<AtomicI64>) {
        let now = Arc::new(AtomicI64::new(T0));
        let clock = Arc::clone(&now);
        let r = Registry::new(capacity, Arc::new(move || clock.load(Ordering::SeqCst)));
        (r, now)
    }

    fn id(r: &Registry, at: i64, token: &str) -> String {
        format!("{}.{at}.{token}", r.instance_id())
    }

    fn handle(n: &str) -> impl FnOnce() -> String + '_ {
        move || n.to_owned()
    }

    fn owner(c: Result<Claim, OpError>) -> Operation {
        match c {
            Ok(Claim::Owner(op)) => op,
            other => panic!("expected owner, got {other:?}"),
        }
    }

    fn existing(c: Result<Claim, OpError>) -> Operation {
        match c {
            Ok(Claim::Existing(op)) => op,
            other => panic!("expected existing, got {other:?}"),
        }
    }

    #[test]
    fn instance_describes_the_window() {
        let (r, _) = registry(CAPACITY);
        let i = r.instance();
        assert_eq!(i.instance_id.len(), 32);
        assert_eq!(i.issued_at, T0);
        assert_eq!(i.retention_seconds, 86_400);
        assert_eq!(i.capacity, 4096);
    }

    #[test]
    fn same_id_same_request_is_one_creation() {
        let (r, _) = registry(8);
        let f = Fake::default();
        let key = id(&r, T0, "token-0001");
        let first = owner(r.claim(Kind::Command, &key, 7, handle("h1"), &f));
        assert_eq!((first.id.as_str(), first.state), ("h1", "creating"));
        assert_eq!(first.expires_at, "2023-11-15T22:13:20Z");
        // A retry while creating sees the reserved handle, and launches nothing.
        let again = existing(r.claim(Kind::Command, &key, 7, || panic!("no new handle"), &f));
        assert_eq!((again.id.as_str(), again.state), ("h1", "creating"));
        assert_eq!(
            r.finish(Kind::Command, &key, false).unwrap().state,
            "created"
        );
        let again = existing(r.claim(Kind::Command, &key, 7, || panic!("no new handle"), &f));
        assert_eq!((again.id.as_str(), again.state), ("h1", "created"));
        assert_eq!(r.get("command", &key, &f).unwrap().id, "h1");
        // The same id names another record under the other kind.
        assert_eq!(r.get("pty", &key, &f), Err(OpError::NotFound));
        // A failed creation stays failed; finishing twice changes nothing.
        let k2 = id(&r, T0, "token-0002");
        owner(r.claim(Kind::Pty, &k2, 1, handle("p"), &f));
        assert_eq!(r.finish(Kind::Pty, &k2, true).unwrap().state, "failed");
        assert_eq!(r.finish(Kind::Pty, &k2, false).unwrap().state, "failed");
        assert_eq!(
            existing(r.claim(Kind::Pty, &k2, 1, handle("x"), &f)).state,
            "failed"
        );
    }

    #[test]
    fn same_id_other_request_conflicts() {
        let (r, _) = registry(8);
        let f = Fake::default();
        let key = id(&r, T0, "conflicting");
        owner(r.claim(Kind::Command, &key, 1, handle("h"), &f));
        assert_eq!(
            r.claim(Kind::Command, &key, 2, handle("x"), &f),
            Err(OpError::Conflict)
        );
        let e = ApiError::from(OpError::Conflict);
        assert_eq!((e.status.as_u16(), e.code), (409, "operation_conflict"));
        assert!(!e.message.contains(&key));
    }

    #[test]
    fn fingerprints_are_stable_and_distinct() {
        let (r, _) = registry(8);
        assert_eq!(r.fingerprint(b"a"), r.fingerprint(b"a"));
        assert_ne!(r.fingerprint(b"a"), r.fingerprint(b"b"));
    }

    #[test]
    fn malformed_ids_are_refused() {
        let (r, _) = registry(8);
        let f = Fake::default();
        let inst = r.instance_id().to_owned();
        let bad = [
            String::new(),
            "x".into(),
            format!("{inst}.{T0}"),
            format!("{inst}.{T0}.short"),
            format!("{inst}.{T0}.{}", "a".repeat(129)),
            format!("{inst}.{T0}.bad*token!"),
            format!("{inst}.{T0}.token.extra0"),
            format!("{inst}.0{T0}.token-0001"),
            format!("{inst}.+{T0}.token-0001"),
            format!("{inst}.-1.token-0001"),
            format!("{inst}.1e9.token-0001"),
            format!("{inst}.99999999999999999999.token-0001"),
            format!("{}.{T0}.token-0001", &inst[..31]),
            format!("{inst}x.{T0}.token-0001"),
        ];
        for key in bad {
            let err = r
                .claim(Kind::Command, &key, 1, handle("h"), &f)
                .unwrap_err();
            assert!(matches!(err, OpError::InvalidId(_)), "{key:?}: {err:?}");
            let err = r.get("command", &key, &f).unwrap_err();
            assert!(matches!(err, OpError::InvalidId(_)), "{key:?}: {err:?}");
            assert_eq!(ApiError::from(err).status.as_u16(), 400);
        }
        assert!(r.is_empty());
        assert_eq!(
            r.get("shell", &id(&r, T0, "token-0001"), &f),
            Err(OpError::InvalidKind)
        );
    }

    #[test]
    fn future_timestamps_are_refused() {
        let (r, now) = registry(8);
        let f = Fake::default();
        let key = id(&r, T0 + 1, "from-future");
        let err = r
            .claim(Kind::Command, &key, 1, handle("h"), &f)
            .unwrap_err();
        assert!(matches!(err, OpError::InvalidId(m) if m.contains("future")));
        now.store(T0 + 1, Ordering::SeqCst);
        owner(r.claim(Kind::Command, &key, 1, handle("h"), &f));
    }

    #[test]
    fn another_instance_is_a_mismatch() {
        let (r, _) = registry(8);
        let (other, _) = registry(8);
        let f = Fake::default();
        let key = id(&other, T0, "token-0001");
        assert_eq!(
            r.claim(Kind::Command, &key, 1, handle("h"), &f),
            Err(OpError::InstanceMismatch)
        );
        assert_eq!(r.get("pty", &key, &f), Err(OpError::InstanceMismatch));
        let e = ApiError::from(OpError::InstanceMismatch);
        assert_eq!(
            (e.status.as_u16(), e.code),
            (409, "operation_instance_mismatch")
        );
    }

    #[test]
    fn records_expire_with_their_id_not_their_retries() {
        let (r, now) = registry(8);
        let f = Fake::default();
        let key = id(&r, T0, "expiring-1");
        owner(r.claim(Kind::Pty, &key, 1, handle("p1"), &f));
        r.finish(Kind::Pty, &key, false);
        now.store(T0 + RETENTION_SECONDS - 1, Ordering::SeqCst);
        existing(r.claim(Kind::Pty, &key, 1, handle("x"), &f));
        now.store(T0 + RETENTION_SECONDS, Ordering::SeqCst);
        assert_eq!(r.get("pty", &key, &f), Err(OpError::Expired));
        assert_eq!(*f.released.lock().unwrap(), ["p1"]);
        assert_eq!(
            r.claim(Kind::Pty, &key, 1, handle("x"), &f),
            Err(OpError::Expired)
        );
        assert!(r.is_empty());
        let e = ApiError::from(OpError::Expired);
        assert_eq!((e.status.as_u16(), e.code), (410, "operation_expired"));
        // An id issued long ago and never claimed is refused too.
        let old = id(&r, T0 - 1, "never-used");
        assert_eq!(
            r.claim(Kind::Command, &old, 1, handle("x"), &f),
            Err(OpError::Expired)
        );
    }

    #[test]
    fn running_and_creating_records_outlive_their_window() {
        let (r, now) = registry(8);
        let f = Fake::default();
        let running = id(&r, T0, "running-01");
        let creating = id(&r, T0, "creating-1");
        owner(r.claim(Kind::Command, &running, 1, handle("run"), &f));
        r.finish(Kind::Command, &running, false);
        owner(r.claim(Kind::Command, &creating, 1, handle("cre"), &f));
        f.running.lock().unwrap().insert("run".into());
        now.store(T0 + 10 * RETENTION_SECONDS, Ordering::SeqCst);
        assert_eq!(r.get("command", &running, &f).unwrap().id, "run");
        assert_eq!(r.get("command", &creating, &f).unwrap().state, "creating");
        f.running.lock().unwrap().clear();
        assert_eq!(r.get("command", &running, &f), Err(OpError::Expired));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn capacity_refuses_rather_than_evicts() {
        let (r, now) = registry(2);
        let f = Fake::default();
        let a = id(&r, T0, "aaaaaaaa");
        let b = id(&r, T0 + 5, "bbbbbbbb");
        now.store(T0 + 5, Ordering::SeqCst);
        owner(r.claim(Kind::Command, &a, 1, handle("a"), &f));
        r.finish(Kind::Command, &a, false);
        owner(r.claim(Kind::Command, &b, 1, handle("b"), &f));
        r.finish(Kind::Command, &b, false);
        let c = id(&r, T0 + 5, "cccccccc");
        assert_eq!(
            r.claim(Kind::Command, &c, 1, handle("c"), &f),
            Err(OpError::CapacityExceeded)
        );
        assert_eq!(
            ApiError::from(OpError::CapacityExceeded).status.as_u16(),
            503
        );
        // Known ids still answer when full.
        existing(r.claim(Kind::Command, &a, 1, handle("x"), &f));
        // Once `a` expires, a sweep makes room; `b` (issued later) stays.
        now.store(T0 + RETENTION_SECONDS, Ordering::SeqCst);
        let c = id(&r, T0 + RETENTION_SECONDS, "cccccccc");
        assert_eq!(
            owner(r.claim(Kind::Command, &c, 1, handle("c"), &f)).id,
            "c"
        );
        assert_eq!(r.get("command", &b, &f).unwrap().id, "b");
        assert_eq!(r.get("command", &a, &f), Err(OpError::Expired));
    }

    #[test]
    fn unknown_ids_are_not_found() {
        let (r, _) = registry(8);
        let f = Fake::default();
        let e = r
            .get("command", &id(&r, T0, "nobody-here"), &f)
            .unwrap_err();
        assert_eq!(e, OpError::NotFound);
        assert_eq!(ApiError::from(e).status.as_u16(), 404);
    }
}
