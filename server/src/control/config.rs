//! Command-line and environment configuration of `opensandbox-server` (serve mode).

use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// Unset or empty disables authentication (logged as a warning at start-up).
    #[arg(long, env = "OPENSANDBOX_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

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

    /// How sandboxes are isolated from the host and from each other.
    #[arg(
        long,
        env = "OPENSANDBOX_ISOLATION",
        value_enum,
        default_value = "auto"
    )]
    pub isolation: IsolationMode,

    /// HOST:PORT used in the endpoint URLs handed to clients [default: the request's
    /// Host header].
    #[arg(long, env = "OPENSANDBOX_PUBLIC_HOST")]
    pub public_host: Option<String>,

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
    pub fn db_path(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| self.data_dir.join("opensandbox.db"))
    }

    /// The configured key, with an empty value meaning "no key", like upstream.
    pub fn effective_api_key(&self) -> Option<String> {
        self.api_key.clone().filter(|k| !k.is_empty())
    }
}
