//! One serde-typed argument struct per op (snake_case keys, conformance/PROTOCOL.md §2).
//! Every struct denies unknown keys, so a misspelt option fails instead of being
//! dropped. Durations are explicit: `*_s` seconds (number), `*_ms` milliseconds (int).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::OpError;

/// Parses the `args` object of `op` into its struct. Unknown keys, missing required
/// keys and mistyped values are `invalid_argument` errors naming the op and the key.
pub fn parse<T: DeserializeOwned>(op: &str, args: Value) -> Result<T, OpError> {
    let args = match args {
        Value::Null => Value::Object(Default::default()),
        v => v,
    };
    if !args.is_object() {
        return Err(OpError::invalid(
            op,
            format!("{op}: args must be an object"),
        ));
    }
    serde_json::from_value(args).map_err(|e| OpError::invalid(op, format!("{op}: {e}")))
}

/// Seconds (integer or fraction, finite, non-negative) as a duration.
pub fn secs(op: &str, name: &str, s: f64) -> Result<Duration, OpError> {
    if s.is_finite() && s >= 0.0 {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(OpError::invalid(
            op,
            format!("{op}: argument {name} must be a non-negative number of seconds"),
        ))
    }
}

/// Present-and-null vs absent (`timeout_s: null` = manual cleanup, `api_key: null` =
/// send no key): `None` = absent, `Some(None)` = null.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// `null` as the default (absent values are null in the protocol, §2).
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// A sandbox: its id (string; a kept handle, or a connect on first use) or a handle
/// (integer) from `sandbox.create` / `sandbox.connect` / `sandbox.resume`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxRef {
    /// A sandbox id.
    Id(String),
    /// A handle of the registry.
    Handle(u64),
}

/// The connection of a call: overrides of the session's configuration for this call
/// (object), or a handle from `config.new` (integer).
#[derive(Debug, Clone, PartialEq)]
// One value per call, parsed and dropped with the call: its size does not matter, and
// boxing the overrides would change this public type for every host.
#[allow(clippy::large_enum_variant)]
pub enum ConnectionRef {
    /// Overrides of the session's base configuration.
    Overrides(ConnectionArgs),
    /// A config handle.
    Handle(u64),
}

/// Type names the manifest shows for the two handle-or-value types (see `manifest`).
pub(crate) const SANDBOX_REF: &str = "SandboxRef";
pub(crate) const CONNECTION_REF: &str = "ConnectionRef";

struct RefVisitor<T>(std::marker::PhantomData<T>);

impl<'de> Visitor<'de> for RefVisitor<SandboxRef> {
    type Value = SandboxRef;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sandbox id (string) or a sandbox handle (integer)")
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<SandboxRef, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<SandboxRef, E> {
        Ok(SandboxRef::Id(v.to_owned()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<SandboxRef, E> {
        Ok(SandboxRef::Handle(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<SandboxRef, E> {
        u64::try_from(v)
            .map(SandboxRef::Handle)
            .map_err(|_| E::custom("a handle is a positive integer"))
    }
}

impl<'de> Deserialize<'de> for SandboxRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_newtype_struct(
            SANDBOX_REF,
            RefVisitor::<SandboxRef>(std::marker::PhantomData),
        )
    }
}

impl<'de> Visitor<'de> for RefVisitor<ConnectionRef> {
    type Value = ConnectionRef;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("connection overrides (object) or a config handle (integer)")
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<ConnectionRef, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ConnectionRef, E> {
        Ok(ConnectionRef::Handle(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ConnectionRef, E> {
        u64::try_from(v)
            .map(ConnectionRef::Handle)
            .map_err(|_| E::custom("a handle is a positive integer"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ConnectionRef, A::Error> {
        ConnectionArgs::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(ConnectionRef::Overrides)
    }
}

impl<'de> Deserialize<'de> for ConnectionRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_newtype_struct(
            CONNECTION_REF,
            RefVisitor::<ConnectionRef>(std::marker::PhantomData),
        )
    }
}

/// Connection configuration (`connection` overrides, `config.new`). Absent keys keep
/// the base (the core defaults read `OPEN_SANDBOX_*`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionArgs {
    /// `host:port` or URL of the server.
    #[serde(default)]
    pub domain: Option<String>,
    /// API key; `null` = send no key at all, whatever the environment says.
    #[serde(default, deserialize_with = "nullable")]
    pub api_key: Option<Option<String>>,
    /// `http` or `https`.
    #[serde(default)]
    pub protocol: Option<String>,
    /// Extra headers on every request.
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
    /// Per-request timeout.
    #[serde(default)]
    pub request_timeout_s: Option<f64>,
    /// User-Agent header.
    #[serde(default)]
    pub user_agent: Option<String>,
    /// Reach sandboxes through the server's proxy.
    #[serde(default)]
    pub use_server_proxy: Option<bool>,
    /// TCP connect timeout (added 2026-12-01).
    #[serde(default)]
    pub connect_timeout_s: Option<f64>,
    /// Retries of transient failures (added 2026-12-01): absent = the core's default
    /// policy, `null` = no retries, an object = the default with these overrides.
    #[serde(default, deserialize_with = "nullable")]
    pub retry: Option<Option<RetryArgs>>,
    /// (1.1) Endpoint cache TTL (added 2026-12-03): absent = the base's (the core's
    /// default is off), 0 = off. The official SDKs' default is 600.
    #[serde(default)]
    pub endpoint_cache_ttl_s: Option<f64>,
    /// (1.1) Endpoint cache size in entries (added 2026-12-03): 0 = off; official 1024.
    #[serde(default)]
    pub endpoint_cache_size: Option<u64>,
}

/// `retry` of a connection: overrides of the core's default retry policy.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryArgs {
    /// Retries after the first attempt (0 = none).
    #[serde(default)]
    pub max_retries: Option<u32>,
    #[serde(default)]
    pub initial_backoff_ms: Option<u64>,
    #[serde(default)]
    pub max_backoff_ms: Option<u64>,
    /// Backoff growth per retry (>= 1).
    #[serde(default)]
    pub multiplier: Option<f64>,
    #[serde(default)]
    pub jitter: Option<bool>,
    /// HTTP statuses worth a retry.
    #[serde(default)]
    pub retryable_status_codes: Option<Vec<u16>>,
}

/// Args of ops that take only a connection (`config.info`, `manager.new`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectionOnly {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
}

/// Ops without arguments (`manifest`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `release`: frees a handle of any kind (idempotent).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseArgs {
    pub handle: u64,
}

/// Args of ops on a handle (`execution.wait`, `execution.cancel`, `upload.finish`,
/// `upload.abort`, `download.close`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandleArgs {
    pub handle: u64,
}

/// `execution.next_batch`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextBatchArgs {
    pub handle: u64,
    /// At most this many events (default 256).
    #[serde(default)]
    pub max: Option<u64>,
    /// Wait at most this long for the first event; absent = until one arrives, 0 =
    /// do not wait.
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// Ops bound to one sandbox and nothing else.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
}

/// Anything that names a sandbox and may carry a connection.
pub trait Bound {
    /// The `sandbox` argument.
    fn sandbox(&self) -> &SandboxRef;
    /// The `connection` argument.
    fn connection(&self) -> Option<&ConnectionRef>;
}

/// Anything that may carry a connection and a manager handle.
pub trait Managed {
    /// The `connection` argument.
    fn connection(&self) -> Option<&ConnectionRef>;
    /// The `manager` argument (a handle from `manager.new`).
    fn manager(&self) -> Option<u64>;
}

macro_rules! bound {
    ($($t:ty),* $(,)?) => {$(
        impl Bound for $t {
            fn sandbox(&self) -> &SandboxRef { &self.sandbox }
            fn connection(&self) -> Option<&ConnectionRef> { self.connection.as_ref() }
        }
    )*};
}

macro_rules! managed {
    ($($t:ty),* $(,)?) => {$(
        impl Managed for $t {
            fn connection(&self) -> Option<&ConnectionRef> { self.connection.as_ref() }
            fn manager(&self) -> Option<u64> { self.manager }
        }
    )*};
}

/// `{action, target}` egress rule.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleArgs {
    pub action: String,
    pub target: String,
}

/// `network_policy` of `sandbox.create`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkPolicyArgs {
    #[serde(default)]
    pub default_action: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub egress: Vec<RuleArgs>,
}

/// `image_auth` of `sandbox.create`: registry credentials for a private image.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageAuthArgs {
    pub username: String,
    pub password: String,
}

/// `platform` of `sandbox.create`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformArgs {
    /// `linux` or `windows`.
    pub os: String,
    /// `amd64` or `arm64`.
    pub arch: String,
}

/// `credential_proxy` of `sandbox.create`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialProxyArgs {
    #[serde(default, deserialize_with = "null_default")]
    pub enabled: bool,
}

/// `host` backend of a volume.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostVolumeArgs {
    pub path: String,
}

/// `pvc` backend of a volume.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PvcVolumeArgs {
    pub claim_name: String,
    #[serde(default)]
    pub create_if_not_exists: Option<bool>,
    #[serde(default)]
    pub delete_on_sandbox_termination: Option<bool>,
    #[serde(default)]
    pub storage_class: Option<String>,
    #[serde(default)]
    pub storage: Option<String>,
    #[serde(default)]
    pub access_modes: Option<Vec<String>>,
}

/// `ossfs` backend of a volume.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OssfsVolumeArgs {
    pub bucket: String,
    pub endpoint: String,
    pub access_key_id: String,
    pub access_key_secret: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub options: Option<Vec<String>>,
}

/// One of `sandbox.create`'s `volumes`: exactly one of `host`, `pvc`, `ossfs`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumeArgs {
    pub name: String,
    pub mount_path: String,
    #[serde(default, deserialize_with = "null_default")]
    pub read_only: bool,
    #[serde(default)]
    pub sub_path: Option<String>,
    #[serde(default)]
    pub host: Option<HostVolumeArgs>,
    #[serde(default)]
    pub pvc: Option<PvcVolumeArgs>,
    #[serde(default)]
    pub ossfs: Option<OssfsVolumeArgs>,
}

/// `sandbox.create`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// Image URI.
    #[serde(default)]
    pub image: Option<String>,
    #[serde(default)]
    pub snapshot_id: Option<String>,
    #[serde(default)]
    pub entrypoint: Option<Vec<String>>,
    /// Seconds; `null` = manual cleanup; absent = SDK default (600).
    #[serde(default, deserialize_with = "nullable")]
    pub timeout_s: Option<Option<f64>>,
    #[serde(default)]
    pub ready_timeout_s: Option<f64>,
    #[serde(default)]
    pub health_check_polling_interval_s: Option<f64>,
    #[serde(default, deserialize_with = "null_default")]
    pub env: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: BTreeMap<String, String>,
    /// Absent = the SDK's default limits; `{}` = none.
    #[serde(default)]
    pub resource: Option<BTreeMap<String, String>>,
    /// (1.1) Resource requests (added 2026-12-02).
    #[serde(default, deserialize_with = "null_default")]
    pub resource_requests: BTreeMap<String, String>,
    #[serde(default)]
    pub network_policy: Option<NetworkPolicyArgs>,
    #[serde(default, deserialize_with = "null_default")]
    pub extensions: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_default")]
    pub secure_access: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub skip_health_check: bool,
    /// Registry credentials for `image` (added 2026-12-01).
    #[serde(default)]
    pub image_auth: Option<ImageAuthArgs>,
    /// `{os, arch}` (added 2026-12-01).
    #[serde(default)]
    pub platform: Option<PlatformArgs>,
    /// `{enabled}` (added 2026-12-01).
    #[serde(default)]
    pub credential_proxy: Option<CredentialProxyArgs>,
    /// Volumes (added 2026-12-01).
    #[serde(default, deserialize_with = "null_default")]
    pub volumes: Vec<VolumeArgs>,
    /// (1.1) Create from a `Succeeded` template (added 2026-12-02).
    #[serde(default)]
    pub template_id: Option<String>,
    /// (1.1) Lifecycle hooks (added 2026-12-02).
    #[serde(default)]
    pub lifecycle: Option<LifecycleArgs>,
}

/// `lifecycle` of `sandbox.create`: `{pre_start: Hook, periodic: [PeriodicHook]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifecycleArgs {
    #[serde(default)]
    pub pre_start: Option<HookArgs>,
    #[serde(default, deserialize_with = "null_default")]
    pub periodic: Vec<PeriodicHookArgs>,
}

/// A lifecycle hook: `{command: [argv], timeout_seconds}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookArgs {
    pub command: Vec<String>,
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
}

/// A periodic hook: `{name, schedule, command, timeout_seconds}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodicHookArgs {
    pub name: String,
    pub schedule: String,
    pub command: Vec<String>,
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
}

/// `sandbox.connect` (`connect_timeout_s`) and `sandbox.resume` (`resume_timeout_s`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub sandbox_id: String,
    #[serde(default)]
    pub connect_timeout_s: Option<f64>,
    #[serde(default)]
    pub health_check_polling_interval_s: Option<f64>,
    #[serde(default, deserialize_with = "null_default")]
    pub skip_health_check: bool,
}

/// `sandbox.resume`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResumeArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub sandbox_id: String,
    #[serde(default)]
    pub resume_timeout_s: Option<f64>,
    #[serde(default)]
    pub health_check_polling_interval_s: Option<f64>,
    #[serde(default, deserialize_with = "null_default")]
    pub skip_health_check: bool,
}

/// `sandbox.wait_until_ready` (added 2026-12-01): polls execd until it answers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadyArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// Give up after this long (default 30 s): `ready_timeout`.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Pause between two checks (default 0.2 s).
    #[serde(default)]
    pub polling_interval_s: Option<f64>,
}

/// `sandbox.renew`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenewArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub seconds: f64,
}

/// `sandbox.patch_metadata`: `{key: value, or null to delete}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchMetadataArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub patch: BTreeMap<String, Option<String>>,
}

/// `sandbox.get_endpoint`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub port: u16,
}

/// `sandbox.get_signed_endpoint`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedEndpointArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub port: u16,
    /// Unix seconds.
    pub expires: i64,
}

/// `sandbox.create_snapshot`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSnapshotArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub name: Option<String>,
}

/// `sandbox.patch_egress_rules`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchRulesArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub rules: Vec<RuleArgs>,
}

/// `sandbox.delete_egress_rules`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteRulesArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub targets: Vec<String>,
}

/// `sandbox.get_diagnostic_logs` / `sandbox.get_diagnostic_events`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiagnosticArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub scope: String,
}

/// `manager.list_sandbox_infos`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListSandboxesArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    #[serde(default, deserialize_with = "null_default")]
    pub states: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub page: Option<u32>,
    #[serde(default)]
    pub page_size: Option<u32>,
}

/// `manager.*` ops on one sandbox id.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxIdArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub sandbox_id: String,
}

/// `manager.renew_sandbox`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerRenewArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub sandbox_id: String,
    pub seconds: f64,
}

/// `manager.patch_sandbox_metadata`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerPatchArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub sandbox_id: String,
    pub patch: BTreeMap<String, Option<String>>,
}

/// `manager.get_endpoint`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerEndpointArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub sandbox_id: String,
    pub port: u16,
}

/// `manager.create_snapshot`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerSnapshotArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub sandbox_id: String,
    #[serde(default)]
    pub name: Option<String>,
}

/// `manager.get_diagnostic_logs` / `manager.get_diagnostic_events`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerDiagnosticArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub sandbox_id: String,
    pub scope: String,
}

/// `manager.get_snapshot` / `manager.delete_snapshot`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotIdArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    pub snapshot_id: String,
}

/// `manager.list_snapshots`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListSnapshotsArgs {
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub manager: Option<u64>,
    #[serde(default)]
    pub sandbox_id: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub states: Vec<String>,
    #[serde(default)]
    pub page: Option<u32>,
    #[serde(default)]
    pub page_size: Option<u32>,
}

/// `commands.run` / `commands.start`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// Shell text (run with `bash -c`); exactly one of `command` and `argv`.
    #[serde(default)]
    pub command: Option<String>,
    /// Executable and literal arguments, no shell.
    #[serde(default)]
    pub argv: Option<Vec<String>>,
    #[serde(default, deserialize_with = "null_default")]
    pub background: bool,
    #[serde(default)]
    pub working_directory: Option<String>,
    /// Server-side limit.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "null_default")]
    pub envs: BTreeMap<String, String>,
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
    /// Report events (`events` in the result of a run; `execution.next_batch` for a
    /// started run).
    #[serde(default, deserialize_with = "null_default")]
    pub handlers: bool,
    /// Keep no stdout; report `stdout_digest` (SHA-256 over the reconstructed lines).
    #[serde(default, deserialize_with = "null_default")]
    pub digest: bool,
    /// Do not keep stdout/stderr in the Execution (events still carry them).
    #[serde(default, deserialize_with = "null_default")]
    pub skip_accumulation: bool,
}

/// `commands.run_in_session` / `commands.start_in_session`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRunArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub session_id: String,
    pub command: String,
    #[serde(default)]
    pub working_directory: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default, deserialize_with = "null_default")]
    pub handlers: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub skip_accumulation: bool,
}

/// Ops on an execution or context id of a sandbox (`commands.interrupt`,
/// `commands.get_command_status`, `code.interrupt`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecIdArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub id: String,
}

/// `commands.set_env`: persist `key=value` in the sandbox env file (`$EXECD_ENVS`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetEnvArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub key: String,
    pub value: String,
}

/// `commands.get_background_command_logs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogsArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub id: String,
    #[serde(default)]
    pub cursor: Option<u64>,
}

/// `commands.create_session`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub working_directory: Option<String>,
}

/// `commands.delete_session`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionIdArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub session_id: String,
}

/// `code.create_context`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateContextArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub language: String,
    #[serde(default)]
    pub cwd: Option<String>,
}

/// `code.get_context` / `code.delete_context`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextIdArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub context_id: String,
}

/// `code.list_contexts` (optional language) / `code.delete_contexts` (required).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub language: Option<String>,
}

/// `code.delete_contexts`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteContextsArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub language: String,
}

/// `code.run` / `code.start`: in `context_id`, else the default context of
/// `language` (default `python`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeRunArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub code: String,
    #[serde(default)]
    pub context_id: Option<String>,
    #[serde(default)]
    pub language: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub handlers: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub skip_accumulation: bool,
}

/// Generated upload data: `text` repeated `times` times, streamed.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataGenArgs {
    pub text: String,
    pub times: u64,
}

/// (1.1) `identity` of a file op: the user the server acts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityArgs {
    pub uid: u32,
    pub gid: u32,
}

/// File ops: which file routes they use (`identity` and `isolated_session` are
/// exclusive; neither = the sandbox's own, as the agent).
pub trait FilesScoped {
    fn identity(&self) -> Option<IdentityArgs>;
    fn isolated_session(&self) -> Option<&str>;
}

macro_rules! files_scoped {
    ($($t:ty),* $(,)?) => {$(
        impl FilesScoped for $t {
            fn identity(&self) -> Option<IdentityArgs> { self.identity }
            fn isolated_session(&self) -> Option<&str> { self.isolated_session.as_deref() }
        }
    )*};
}

/// `files.write_file` (one entry) and the entries of `files.write_files`: one of
/// `data` (UTF-8 text), `data_b64`, `data_gen`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteEntryArgs {
    pub path: String,
    #[serde(default)]
    pub data: Option<String>,
    #[serde(default)]
    pub data_b64: Option<String>,
    #[serde(default)]
    pub data_gen: Option<DataGenArgs>,
    #[serde(default)]
    pub mode: Option<u32>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
}

/// `files.write_file`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub path: String,
    #[serde(default)]
    pub data: Option<String>,
    #[serde(default)]
    pub data_b64: Option<String>,
    #[serde(default)]
    pub data_gen: Option<DataGenArgs>,
    #[serde(default)]
    pub mode: Option<u32>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
}

impl WriteFileArgs {
    /// The one entry.
    pub fn entry(&self) -> WriteEntryArgs {
        WriteEntryArgs {
            path: self.path.clone(),
            data: self.data.clone(),
            data_b64: self.data_b64.clone(),
            data_gen: self.data_gen.clone(),
            mode: self.mode,
            owner: self.owner.clone(),
            group: self.group.clone(),
        }
    }
}

/// `files.write_files`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteFilesArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub entries: Vec<WriteEntryArgs>,
}

/// `files.read_file`, `files.read_bytes`, `files.read_bytes_stream`, `download.open`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub path: String,
    /// First line (1-based).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Number of lines.
    #[serde(default)]
    pub limit: Option<u64>,
    /// A `Range` header value.
    #[serde(default)]
    pub range: Option<String>,
}

/// `upload.open`: a streamed upload fed by the host (`Session::upload_write`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub path: String,
    /// The number of bytes the host will write (added 2026-12-01): `upload.finish`
    /// fails, and the upload with it, on any other count.
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub mode: Option<u32>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
}

/// Ops on a list of paths.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathsArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub paths: Vec<String>,
}

/// `{src, dest}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveArgs {
    pub src: String,
    pub dest: String,
}

/// `files.move_files`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveFilesArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub entries: Vec<MoveArgs>,
}

/// `{path, mode, owner, group}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionArgs {
    pub path: String,
    #[serde(default)]
    pub mode: Option<u32>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
}

/// `files.set_permissions` / `files.create_directories`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub entries: Vec<PermissionArgs>,
}

/// `{path, old_content, new_content}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceArgs {
    pub path: String,
    pub old_content: String,
    pub new_content: String,
}

/// `files.replace_contents` / `files.replace_contents_detailed`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceContentsArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub entries: Vec<ReplaceArgs>,
}

/// `files.search`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub path: String,
    #[serde(default)]
    pub pattern: Option<String>,
}

/// `files.list_directory`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    /// (1.1) Act as this Linux user (`/v1/filesystem/{uid}/{gid}`).
    #[serde(default)]
    pub identity: Option<IdentityArgs>,
    /// (1.1) Inside this isolated session's mounts.
    #[serde(default)]
    pub isolated_session: Option<String>,
    pub path: String,
    #[serde(default)]
    pub depth: Option<u32>,
}

/// `metrics.watch`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub count: u64,
}

bound!(
    SandboxArgs,
    ReadyArgs,
    RenewArgs,
    PatchMetadataArgs,
    EndpointArgs,
    SignedEndpointArgs,
    CreateSnapshotArgs,
    PatchRulesArgs,
    DeleteRulesArgs,
    DiagnosticArgs,
    RunArgs,
    SessionRunArgs,
    ExecIdArgs,
    SetEnvArgs,
    LogsArgs,
    CreateSessionArgs,
    SessionIdArgs,
    CreateContextArgs,
    ContextIdArgs,
    LanguageArgs,
    DeleteContextsArgs,
    CodeRunArgs,
    WriteFileArgs,
    WriteFilesArgs,
    ReadArgs,
    UploadArgs,
    PathsArgs,
    MoveFilesArgs,
    PermissionsArgs,
    ReplaceContentsArgs,
    SearchArgs,
    ListDirArgs,
    WatchArgs,
);

files_scoped!(
    WriteFileArgs,
    WriteFilesArgs,
    ReadArgs,
    UploadArgs,
    PathsArgs,
    MoveFilesArgs,
    PermissionsArgs,
    ReplaceContentsArgs,
    SearchArgs,
    ListDirArgs,
);

managed!(
    ListSandboxesArgs,
    SandboxIdArgs,
    ManagerRenewArgs,
    ManagerPatchArgs,
    ManagerEndpointArgs,
    ManagerSnapshotArgs,
    ManagerDiagnosticArgs,
    SnapshotIdArgs,
    ListSnapshotsArgs,
);

// ---------------------------------------------------------------------------------
// (1.1) Isolated sessions: `isolation.*` (ops/isolation.rs)
// ---------------------------------------------------------------------------------

/// `workspace` of `isolation.create`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolatedWorkspaceArgs {
    pub path: String,
    #[serde(default)]
    pub mode: Option<String>,
}

/// One of `overlays`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolatedOverlayArgs {
    pub path: String,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub persist: Option<bool>,
}

/// One of `binds`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BindMountArgs {
    pub source: String,
    #[serde(default)]
    pub dest: Option<String>,
    #[serde(default)]
    pub readonly: Option<bool>,
}

/// `env_passthrough`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvPassthroughArgs {
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    pub keys: Vec<String>,
}

/// `isolation.create`: the fields of `CreateIsolatedSessionRequest`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationCreateArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    #[serde(default)]
    pub workspace: Option<IsolatedWorkspaceArgs>,
    #[serde(default)]
    pub overlays: Option<Vec<IsolatedOverlayArgs>>,
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub extra_writable: Option<Vec<String>>,
    #[serde(default)]
    pub binds: Option<Vec<BindMountArgs>>,
    #[serde(default)]
    pub share_net: Option<bool>,
    #[serde(default)]
    pub env_passthrough: Option<EnvPassthroughArgs>,
    #[serde(default)]
    pub uid: Option<u32>,
    #[serde(default)]
    pub gid: Option<u32>,
    #[serde(default)]
    pub uid_mode: Option<String>,
    #[serde(default)]
    pub idle_timeout_seconds: Option<u64>,
}

/// `isolation.get`, `isolation.attach`, `isolation.delete`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationSessionArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub session_id: String,
}

/// `isolation.run`, `isolation.start`, `isolation.run_background`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationRunArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub session_id: String,
    pub code: String,
    #[serde(default, deserialize_with = "null_default")]
    pub envs: BTreeMap<String, String>,
    /// Server-side limit of a foreground run (whole seconds; `timeout_seconds`).
    #[serde(default)]
    pub timeout_s: Option<u64>,
    #[serde(default, deserialize_with = "null_default")]
    pub handlers: bool,
    #[serde(default, deserialize_with = "null_default")]
    pub skip_accumulation: bool,
}

/// `isolation.run_status`, `isolation.run_logs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationRunIdArgs {
    pub sandbox: SandboxRef,
    #[serde(default)]
    pub connection: Option<ConnectionRef>,
    pub session_id: String,
    pub run_id: String,
    /// `isolation.run_logs`: byte offset to read from.
    #[serde(default)]
    pub cursor: Option<u64>,
}

bound!(
    IsolationCreateArgs,
    IsolationSessionArgs,
    IsolationRunArgs,
    IsolationRunIdArgs,
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_types_and_tri_states() {
        let a: CreateArgs = parse(
            "sandbox.create",
            json!({"image": "python:3.11", "timeout_s": null, "env": {"A": "1"}}),
        )
        .unwrap();
        assert_eq!(a.image.as_deref(), Some("python:3.11"));
        assert_eq!(a.timeout_s, Some(None));
        let b: CreateArgs = parse("sandbox.create", json!({})).unwrap();
        assert_eq!(b.timeout_s, None);
        let c: ConnectionArgs = parse("config.new", json!({"api_key": null})).unwrap();
        assert_eq!(c.api_key, Some(None));
    }

    #[test]
    fn sandbox_and_connection_refs_take_both_forms() {
        let a: SandboxArgs = parse("sandbox.get_info", json!({"sandbox": "abc"})).unwrap();
        assert_eq!(a.sandbox, SandboxRef::Id("abc".into()));
        let a: SandboxArgs = parse(
            "sandbox.get_info",
            json!({"sandbox": 7, "connection": {"domain": "h:1"}}),
        )
        .unwrap();
        assert_eq!(a.sandbox, SandboxRef::Handle(7));
        assert!(
            matches!(a.connection, Some(ConnectionRef::Overrides(ref c)) if c.domain.as_deref() == Some("h:1"))
        );
        let a: SandboxArgs =
            parse("sandbox.get_info", json!({"sandbox": "x", "connection": 3})).unwrap();
        assert_eq!(a.connection, Some(ConnectionRef::Handle(3)));
        let e = parse::<SandboxArgs>(
            "sandbox.get_info",
            json!({"sandbox": "x", "connection": {"domian": "h"}}),
        )
        .unwrap_err();
        assert!(e.message.contains("domian"), "{}", e.message);
        assert!(parse::<SandboxArgs>("sandbox.get_info", json!({"sandbox": true})).is_err());
    }

    #[test]
    fn unknown_missing_and_mistyped_keys_name_the_op_and_key() {
        let e = parse::<RunArgs>(
            "commands.run",
            json!({"sandbox": "s", "command": "ls", "working_dir": "/"}),
        )
        .unwrap_err();
        assert_eq!(e.kind, "invalid_argument");
        assert!(e.message.starts_with("commands.run:"), "{}", e.message);
        assert!(e.message.contains("working_dir"), "{}", e.message);
        let e = parse::<RunArgs>("commands.run", json!({"command": "ls"})).unwrap_err();
        assert!(e.message.contains("sandbox"), "{}", e.message);
        let e = parse::<EndpointArgs>(
            "sandbox.get_endpoint",
            json!({"sandbox": "s", "port": 70000}),
        )
        .unwrap_err();
        assert!(e.message.contains("sandbox.get_endpoint"), "{}", e.message);
        let e = parse::<WriteFilesArgs>(
            "files.write_files",
            json!({"sandbox": "s", "entries": [{"path": "/a", "dta": "x"}]}),
        )
        .unwrap_err();
        assert!(e.message.contains("dta"), "{}", e.message);
        assert!(parse::<SandboxArgs>("x", json!([1])).is_err());
    }

    #[test]
    fn null_means_absent_for_collections_and_flags() {
        let a: RunArgs = parse(
            "commands.run",
            json!({"sandbox": "s", "command": "x", "envs": null, "background": null, "timeout_ms": null}),
        )
        .unwrap();
        assert!(a.envs.is_empty() && !a.background && a.timeout_ms.is_none());
        let a: ListSandboxesArgs = parse(
            "manager.list_sandbox_infos",
            json!({"states": null, "metadata": null}),
        )
        .unwrap();
        assert!(a.states.is_empty() && a.metadata.is_empty());
    }

    #[test]
    fn seconds_must_be_finite_and_non_negative() {
        assert_eq!(secs("o", "t", 1.5).unwrap(), Duration::from_millis(1500));
        assert!(secs("o", "t", -1.0).is_err());
        assert!(secs("o", "t", f64::NAN).is_err());
    }
}
