//! Command-line and environment configuration of `opensandbox-server` (serve mode).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IsolationMode {
    /// bubblewrap if it works on this machine; otherwise refuse to start.
    Auto,
    /// Always bubblewrap; refuse to start if it does not work.
    Bwrap,
    /// No isolation: sandboxes run as plain host processes (development only).
    None,
}

/// Flags of the server. Every flag can also come from the environment variable named
/// in its help.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "OPENSANDBOX_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// API key required in the OPEN-SANDBOX-API-KEY header of every lifecycle request.
    /// Unset or empty: a key is generated at the first start, stored (mode 0600) in
    /// DATA_DIR/api-key, printed once on stderr, and reused by later starts.
    #[arg(long, env = "OPENSANDBOX_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Serve the lifecycle API without authentication. Only allowed when --listen is
    /// a loopback address; conflicts with --api-key.
    #[arg(long, env = "OPENSANDBOX_NO_AUTH", conflicts_with = "api_key")]
    pub no_auth: bool,

    /// An origin (`https://app.example.com`) whose web pages may call this server
    /// (CORS). Repeatable; matched exactly; credentials are never allowed. Without
    /// one, no CORS headers are sent and browsers refuse cross-origin calls.
    #[arg(
        long = "cors-origin",
        env = "OPENSANDBOX_CORS_ORIGINS",
        value_delimiter = ',',
        value_name = "ORIGIN"
    )]
    pub cors_origins: Vec<String>,

    /// A host directory under which `host` volumes may be mounted into sandboxes.
    /// Repeatable. Without one, host volumes are refused (400
    /// VOLUME::HOST_PATH_NOT_ALLOWED).
    #[arg(
        long = "allowed-host-path",
        env = "OPENSANDBOX_ALLOWED_HOST_PATHS",
        value_delimiter = ',',
        value_name = "DIR"
    )]
    pub allowed_host_paths: Vec<PathBuf>,

    /// Seconds a client may take to send a request's headers before its connection
    /// is closed (slow or half-open connections).
    #[arg(
        long,
        env = "OPENSANDBOX_HEADER_READ_TIMEOUT",
        default_value = "30",
        value_name = "SECONDS",
        value_parser = parse_seconds
    )]
    pub header_read_timeout: Duration,

    /// Most HTTP connections served at once; further connections wait in the
    /// kernel's accept queue until one closes.
    #[arg(
        long,
        env = "OPENSANDBOX_MAX_CONNECTIONS",
        default_value_t = 1024,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub max_connections: u32,

    /// Directory holding the database, the sandboxes' files and the snapshots.
    #[arg(
        long,
        env = "OPENSANDBOX_DATA_DIR",
        default_value = "./.opensandbox-data"
    )]
    pub data_dir: PathBuf,

    /// SQLite database file [default: DATA_DIR/opensandbox.db].
    #[arg(long, env = "OPENSANDBOX_DB")]
    pub db: Option<PathBuf>,

    /// How sandboxes are isolated from the host and from each other (`none`: not at
    /// all; `auto`/`bwrap`: by the runtime `--runtime` picks). Given twice, the last
    /// one counts.
    #[arg(
        long,
        env = "OPENSANDBOX_ISOLATION",
        value_enum,
        default_value = "auto",
        overrides_with = "isolation"
    )]
    pub isolation: IsolationMode,

    /// HOST:PORT used in the endpoint URLs handed to clients [default: the request's
    /// Host header].
    #[arg(long, env = "OPENSANDBOX_PUBLIC_HOST")]
    pub public_host: Option<String>,

    /// Which runtime isolates sandboxes: `auto` (this release: bubblewrap), `bwrap`,
    /// or a standard OCI runtime: `runc`, `crun`, `runsc` (gVisor) or the PATH of one.
    /// OCI runtimes run the request's image (`oci:/DIR[:TAG]`, `docker-archive:/FILE`)
    /// in a user namespace with cgroup limits; see docs/architecture.md, "Runtimes".
    #[arg(long, env = "OPENSANDBOX_RUNTIME", default_value = "auto")]
    pub runtime: String,

    /// Image for sandboxes that name none (created from a snapshot) under an OCI
    /// runtime, e.g. `oci:/srv/images/debian-python:latest`.
    #[arg(long, env = "OPENSANDBOX_DEFAULT_IMAGE")]
    pub default_image: Option<String>,

    /// OCI runtimes: registry (HOST[:PORT]) to pull Docker Hub images from instead of
    /// Docker Hub. Loopback registries are spoken to over HTTP, others over HTTPS.
    #[arg(long, env = "OPENSANDBOX_REGISTRY_MIRROR", value_name = "HOST[:PORT]")]
    pub registry_mirror: Option<String>,

    /// OCI runtimes: copy the image into each sandbox's rootfs instead of mounting an
    /// overlay (what happens anyway where overlayfs cannot be mounted).
    #[arg(long, env = "OPENSANDBOX_OCI_COPY_ROOTFS", hide = true)]
    pub oci_copy_rootfs: bool,

    /// OCI runtimes: CPU limit of a sandbox whose request sets none (`1`, `500m`).
    /// Default 1 CPU, or --max-cpu if lower.
    #[arg(long, env = "OPENSANDBOX_DEFAULT_CPU", value_name = "CPUS")]
    pub default_cpu: Option<String>,

    /// OCI runtimes: memory limit (no swap) of a sandbox whose request sets none
    /// (`512Mi`, `1Gi`). Default 1Gi, or --max-memory if lower.
    #[arg(long, env = "OPENSANDBOX_DEFAULT_MEMORY", value_name = "BYTES")]
    pub default_memory: Option<String>,

    /// OCI runtimes: most processes and threads of a sandbox whose request sets no
    /// `pids`. Default 1024, or --max-pids if lower.
    #[arg(long, env = "OPENSANDBOX_DEFAULT_PIDS", value_name = "N")]
    pub default_pids: Option<String>,

    /// OCI runtimes: size of the writable storage (rootfs changes, /root, /tmp,
    /// /workspace) of a sandbox whose request sets no `disk` [default: --max-disk,
    /// else uncapped].
    #[arg(long, env = "OPENSANDBOX_DEFAULT_DISK", value_name = "BYTES")]
    pub default_disk: Option<String>,

    /// OCI runtimes: largest `resourceLimits.cpu` a request may ask for (above: 400).
    #[arg(long, env = "OPENSANDBOX_MAX_CPU", value_name = "CPUS")]
    pub max_cpu: Option<String>,

    /// OCI runtimes: largest `resourceLimits.memory` (above: 400).
    #[arg(long, env = "OPENSANDBOX_MAX_MEMORY", value_name = "BYTES")]
    pub max_memory: Option<String>,

    /// OCI runtimes: largest `resourceLimits.pids` (above: 400).
    #[arg(long, env = "OPENSANDBOX_MAX_PIDS", value_name = "N")]
    pub max_pids: Option<String>,

    /// OCI runtimes: largest `resourceLimits.disk` (above: 400).
    #[arg(long, env = "OPENSANDBOX_MAX_DISK", value_name = "BYTES")]
    pub max_disk: Option<String>,

    /// OCI runtimes: containers kept started ahead of create requests, per image
    /// (after a create of an image, this many more are started in the background; a
    /// create that can use one skips the runtime's start). 0 turns it off. Each costs
    /// one idle container (about 4 MiB).
    #[arg(
        long,
        env = "OPENSANDBOX_WARM_POOL",
        default_value_t = 1,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(0..=64)
    )]
    pub warm_pool: u32,

    /// OCI runtimes: how many images are kept warm at once (the least recently
    /// created-from is dropped first).
    #[arg(
        long,
        env = "OPENSANDBOX_WARM_IMAGES",
        default_value_t = 2,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=64)
    )]
    pub warm_images: u32,

    /// Largest size of a sandbox's log and of each background command's log; past
    /// it the oldest half is dropped and a marker line says how much.
    #[arg(
        long,
        env = "OPENSANDBOX_LOG_CAP",
        default_value = "16Mi",
        value_name = "BYTES",
        value_parser = parse_log_cap
    )]
    pub log_cap: u64,

    /// How foreground `/command` output is cut into `stdout`/`stderr` events: `kept`
    /// (the 1.1 execd's default: each event keeps its line ending) or `lines` (the June
    /// 2026 execd: one event per line, ending stripped). A sandbox can override it with
    /// the create extension `opensandbox.io/output-framing`.
    #[arg(
        long,
        env = "OPENSANDBOX_OUTPUT_FRAMING",
        value_enum,
        default_value = "kept",
        value_name = "FRAMING"
    )]
    pub output_framing: crate::agent::commands::OutputFraming,

    /// Path of the bubblewrap executable.
    #[arg(long, env = "OPENSANDBOX_BWRAP", default_value = "bwrap")]
    pub bwrap: PathBuf,

    /// Upper bound of a sandbox's `timeout`, in seconds [default: no bound].
    #[arg(long, env = "OPENSANDBOX_MAX_SANDBOX_TIMEOUT")]
    pub max_sandbox_timeout: Option<u64>,

    /// Lower bound of a sandbox's `timeout`, in seconds. The protocol says 60; tests
    /// lower it to exercise expiry quickly.
    #[arg(
        long,
        env = "OPENSANDBOX_MIN_SANDBOX_TIMEOUT",
        default_value_t = 60,
        hide = true
    )]
    pub min_sandbox_timeout: u64,

    /// Log filter (tracing syntax: `info`, `debug`, `opensandbox_server=debug,info`).
    #[arg(long, env = "OPENSANDBOX_LOG_LEVEL", default_value = "info")]
    pub log_level: String,
}

impl ServeArgs {
    /// The `resourceLimits` policy of the flags.
    pub fn limit_policy(&self) -> anyhow::Result<super::oci::cgroups::Policy> {
        super::oci::cgroups::Policy::from_flags(&super::oci::cgroups::PolicyFlags {
            default_cpu: self.default_cpu.clone(),
            default_memory: self.default_memory.clone(),
            default_pids: self.default_pids.clone(),
            default_disk: self.default_disk.clone(),
            max_cpu: self.max_cpu.clone(),
            max_memory: self.max_memory.clone(),
            max_pids: self.max_pids.clone(),
            max_disk: self.max_disk.clone(),
        })
    }

    pub fn db_path(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| self.data_dir.join("opensandbox.db"))
    }

    /// The configured key; an empty value counts as none.
    pub fn effective_api_key(&self) -> Option<String> {
        self.api_key.clone().filter(|k| !k.is_empty())
    }
}

/// A positive number of seconds (fractions allowed), at most a day.
fn parse_seconds(raw: &str) -> Result<Duration, String> {
    let secs: f64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("{raw:?} is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "{raw} must be more than 0 and at most 86400 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A log cap: a quantity (`16Mi`) of at least 64 KiB.
fn parse_log_cap(raw: &str) -> Result<u64, String> {
    let bytes = super::oci::cgroups::parse_memory(raw).map_err(|e| format!("{raw:?}: {e:#}"))?;
    if bytes < 64 * 1024 {
        return Err(format!("{raw} is below the smallest log cap, 64Ki"));
    }
    Ok(bytes)
}
