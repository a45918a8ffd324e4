//! Isolation: how a sandbox's process tree is started, found, frozen and killed.
//!
//! With bubblewrap each sandbox gets new user, mount, PID, IPC, UTS, cgroup and
//! network namespaces. The host's system directories are mounted read-only, the
//! sandbox's own home, `/tmp` and `/workspace` come from
//! `DATA_DIR/sandboxes/{id}/fs/{root,tmp,workspace}`, and nothing else of the host (its
//! home directories, DATA_DIR, other sandboxes) is visible. The network namespace has
//! only `lo`: egress rules are stored and served by the egress API, but all egress is
//! denied in this reference server.
//!
//! Sandboxes are started in their own session and without `--die-with-parent`, so they
//! survive a restart of the server, which adopts them again (see `manager`).

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::Deserialize;

use super::config::{IsolationMode, ServeArgs};
use super::models::SandboxRecord;
use crate::agent::commands::OutputFraming;

const EXE_INSIDE: &str = "/.opensandbox/opensandbox-server";
const HOME_INSIDE: &str = "/root";
const WORKSPACE_INSIDE: &str = "/workspace";
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The writable directories of a sandbox, by their name under `fs/` and inside.
pub const WRITABLE_DIRS: [(&str, &str); 3] = [
    ("root", HOME_INSIDE),
    ("tmp", "/tmp"),
    ("workspace", WORKSPACE_INSIDE),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    Bwrap(PathBuf),
    /// A standard OCI runtime (`--runtime runc|crun|runsc|PATH`), see `oci`.
    Oci(std::sync::Arc<super::oci::OciRuntime>),
    None,
}

impl Isolation {
    pub fn name(&self) -> &str {
        match self {
            Self::Bwrap(_) => "bwrap",
            Self::Oci(oci) => &oci.name,
            Self::None => "none",
        }
    }
}

/// Host paths of one sandbox.
#[derive(Debug, Clone)]
pub struct SandboxPaths {
    pub base: PathBuf,
    /// Parent of the writable dirs; the agent's root under `--isolation none`.
    pub fs: PathBuf,
    /// Socket and status file: host-only (0700), never mounted into the sandbox. The
    /// server binds the socket and opens the status file, and the agent gets both as
    /// inherited file descriptors (`--listen-fd`, `--status-fd`).
    pub run: PathBuf,
    pub socket: PathBuf,
    pub status_file: PathBuf,
    /// Output of the sandbox's processes (agent and entrypoint); host-only.
    pub log: PathBuf,
}

impl SandboxPaths {
    pub fn writable_dir(&self, name: &str) -> PathBuf {
        self.fs.join(name)
    }
}

/// What the agent writes when the entrypoint has exited.
#[derive(Debug, Clone, Deserialize)]
pub struct ExitStatus {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
}

pub struct Runtime {
    pub isolation: Isolation,
    exe: PathBuf,
    data_dir: PathBuf,
}

/// The OCI backend's options from the flags, for the runtime `runtime`.
fn oci_options(args: &ServeArgs, runtime: &str) -> Result<super::oci::OciOptions> {
    Ok(super::oci::OciOptions {
        runtime: runtime.to_string(),
        default_image: args.default_image.clone(),
        copy_rootfs: args.oci_copy_rootfs,
        registry_mirror: args.registry_mirror.clone(),
        limits: args.limit_policy()?,
        log_cap: args.log_cap,
    })
}

/// Create `extensions` key that picks a sandbox's output framing (`kept`/`lines`),
/// overriding `--output-framing`: one server can then serve both framings, as the
/// conformance matrix needs.
pub const OUTPUT_FRAMING_EXTENSION: &str = "opensandbox.io/output-framing";

/// `--output-framing`, set once at start-up (kept when never set, e.g. in tests).
static DEFAULT_FRAMING: std::sync::OnceLock<OutputFraming> = std::sync::OnceLock::new();

/// The framing named by an extension value, `None` if it names none.
pub fn parse_output_framing(value: &str) -> Option<OutputFraming> {
    match value {
        "kept" => Some(OutputFraming::Kept),
        "lines" => Some(OutputFraming::Lines),
        _ => None,
    }
}

/// The `--output-framing` value the agent of `record` is started with.
pub fn output_framing_arg(record: &SandboxRecord) -> &'static str {
    let framing = record
        .extensions
        .get(OUTPUT_FRAMING_EXTENSION)
        .and_then(|value| parse_output_framing(value))
        .unwrap_or_else(|| DEFAULT_FRAMING.get().copied().unwrap_or_default());
    match framing {
        OutputFraming::Kept => "kept",
        OutputFraming::Lines => "lines",
    }
}

impl Runtime {
    /// Picks the isolation from the flags, checking that bubblewrap really works here.
    pub fn from_args(args: &ServeArgs, data_dir: &Path) -> Result<Self> {
        // A second Runtime in one process (tests) keeps the first value: same flags.
        let _ = DEFAULT_FRAMING.set(args.output_framing);
        let exe = std::env::current_exe().context("locating the server's own executable")?;
        let oci = !matches!(args.runtime.as_str(), "auto" | "bwrap");
        let isolation = match args.isolation {
            IsolationMode::None => Isolation::None,
            IsolationMode::Bwrap if oci => {
                bail!(
                    "--isolation bwrap conflicts with --runtime {}",
                    args.runtime
                )
            }
            IsolationMode::Auto if oci => {
                let opts = oci_options(args, &args.runtime)?;
                let rt = super::oci::OciRuntime::new(&opts, data_dir, &exe)?;
                Isolation::Oci(std::sync::Arc::new(rt))
            }
            IsolationMode::Auto if args.runtime == "auto" => {
                // The first standard OCI runtime that works here; else bubblewrap.
                match super::oci::select::auto(&|name| oci_options(args, name), data_dir, &exe)? {
                    Some(rt) => Isolation::Oci(std::sync::Arc::new(rt)),
                    None => {
                        check_bwrap(&args.bwrap).with_context(|| {
                            format!(
                                "no OCI runtime works here and bubblewrap ({}) cannot create \
                                 sandboxes either; install runc or bubblewrap, or pass \
                                 --isolation none to run sandboxes WITHOUT isolation",
                                args.bwrap.display()
                            )
                        })?;
                        Isolation::Bwrap(args.bwrap.clone())
                    }
                }
            }
            IsolationMode::Auto | IsolationMode::Bwrap => {
                check_bwrap(&args.bwrap).with_context(|| {
                    format!(
                        "bubblewrap ({}) cannot create sandboxes on this machine; install it \
                         (apt-get install bubblewrap), point --bwrap at it, or pass \
                         --isolation none to run sandboxes WITHOUT isolation",
                        args.bwrap.display()
                    )
                })?;
                Isolation::Bwrap(args.bwrap.clone())
            }
        };
        Ok(Self {
            isolation,
            exe,
            data_dir: data_dir.to_path_buf(),
        })
    }

    pub fn paths(&self, id: &str) -> SandboxPaths {
        let base = self.data_dir.join("sandboxes").join(id);
        let run = base.join("run");
        SandboxPaths {
            fs: base.join("fs"),
            socket: run.join("execd.sock"),
            status_file: run.join("status.json"),
            log: base.join("sandbox.log"),
            run,
            base,
        }
    }

    /// Creates the sandbox's directories (writable dirs may already hold a restored
    /// snapshot).
    pub fn prepare(&self, paths: &SandboxPaths) -> Result<()> {
        // Root-owned 0700: whatever a sandbox makes in its directories (a setuid file
        // included) is out of reach of the host's other users.
        super::security::private_dir(&paths.base)?;
        for (name, _) in WRITABLE_DIRS {
            let dir = paths.writable_dir(name);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        super::security::private_dir(&paths.run)?;
        // A Unix socket path longer than sun_path cannot be bound: say so now rather
        // than as an opaque agent failure.
        if paths.socket.as_os_str().len() >= 108 {
            bail!(
                "socket path {} is too long for a Unix socket; use a shorter --data-dir",
                paths.socket.display()
            );
        }
        Ok(())
    }

    /// Starts the sandbox's process tree: the agent, which starts the entrypoint.
    pub fn spawn(&self, record: &SandboxRecord) -> Result<tokio::process::Child> {
        self.spawn_with(record, None)
    }

    /// Starts a warm container (OCI runtimes only; see `control/warm.rs`): the agent
    /// waits for its start message on a pipe. Returns the runtime's process and the
    /// pipe's write end (close-on-exec: no other child inherits it).
    pub fn spawn_warm(
        &self,
        record: &SandboxRecord,
    ) -> Result<(tokio::process::Child, std::io::PipeWriter)> {
        if !matches!(self.isolation, Isolation::Oci(_)) {
            bail!("warm containers need an OCI runtime");
        }
        let (reader, writer) = std::io::pipe().context("creating a start pipe")?;
        let child = self.spawn_with(record, Some(reader.as_raw_fd()))?;
        // The runtime has its own copy now; ours would keep the pipe from ever ending.
        drop(reader);
        Ok((child, writer))
    }

    fn spawn_with(
        &self,
        record: &SandboxRecord,
        start_fd: Option<std::os::fd::RawFd>,
    ) -> Result<tokio::process::Child> {
        let paths = self.paths(&record.id);
        // Readable too: the agent keeps the log under --log-cap by reading its tail
        // back before a cut.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&paths.log)
            .with_context(|| format!("opening {}", paths.log.display()))?;
        let log_err = log
            .try_clone()
            .with_context(|| format!("duplicating {}", paths.log.display()))?;
        let (listener, status) = open_run_files(&paths)?;
        let fds = RunFds {
            listen: listener.as_raw_fd(),
            status: status.as_raw_fd(),
        };
        let mut cmd = match &self.isolation {
            Isolation::Bwrap(bwrap) => self.bwrap_command(bwrap, record, &paths, fds)?,
            Isolation::None => self.host_command(record, &paths, fds)?,
            Isolation::Oci(oci) => oci.command(record, &paths, fds.listen, fds.status, start_fd)?,
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .kill_on_drop(false);
        // Its own session: the terminal's signals (Ctrl-C on the server) don't reach
        // the sandbox, and it outlives a server restart. The two run fds stay open
        // across exec (only in the child: the server's copies keep FD_CLOEXEC).
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (setsid, fcntl) on plain integers copied into it:
        // no allocation, no lock, nothing shared with the parent's other threads.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                for fd in [fds.listen, fds.status] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        cmd.spawn()
            .with_context(|| format!("starting sandbox {}", record.id))
    }

    /// Makes the sandbox's image ready (OCI runtimes; bubblewrap runs no image).
    /// A registry pull's progress goes to `progress`.
    pub async fn prepare_image(
        &self,
        record: &SandboxRecord,
        progress: Option<super::oci::registry::ProgressFn>,
    ) -> super::error::ApiResult<()> {
        match &self.isolation {
            Isolation::Oci(oci) => {
                super::oci::cgroups::Limits::from_request(&record.resource_limits, &oci.defaults)
                    .map_err(|e| super::error::ApiError::invalid(format!("{e:#}")))?;
                oci.prepare_image_with(record, progress).await.map_err(|e| {
                    super::error::ApiError::bad_request("SANDBOX::IMAGE_PULL_FAILED", e.0)
                })
            }
            _ => Ok(()),
        }
    }

    /// Pulls and unpacks image `uri` for a template build: its digest in the cache
    /// under an OCI runtime, `None` under bubblewrap (which runs no image).
    pub async fn prepare_image_uri(&self, uri: &str) -> super::error::ApiResult<Option<String>> {
        match &self.isolation {
            Isolation::Oci(oci) => oci
                .prepare_template_image(uri)
                .await
                .map(Some)
                .map_err(|e| {
                    super::error::ApiError::bad_request("SANDBOX::IMAGE_PULL_FAILED", e.0)
                }),
            _ => Ok(None),
        }
    }

    /// Checks `resourceLimits` against the runtime's grammar and maxima (OCI runtimes;
    /// bubblewrap applies no limits).
    pub fn check_limits(
        &self,
        limits: &std::collections::BTreeMap<String, String>,
    ) -> super::error::ApiResult<()> {
        match &self.isolation {
            Isolation::Oci(oci) => super::oci::cgroups::Limits::from_request(limits, &oci.defaults)
                .map(|_| ())
                .map_err(|e| super::error::ApiError::invalid(format!("{e:#}"))),
            _ => Ok(()),
        }
    }

    /// Whether preparing this sandbox's image pulls from a registry (an OCI runtime and
    /// an image that is neither `oci:` nor `docker-archive:`).
    pub fn pulls_image(&self, record: &SandboxRecord) -> Option<String> {
        let Isolation::Oci(_) = &self.isolation else {
            return None;
        };
        let uri = &record.image.as_ref()?.uri;
        (!uri.starts_with("oci:") && !uri.starts_with("docker-archive:")).then(|| uri.clone())
    }

    /// Kills every process of sandbox `id` (`pid`: its recorded root process, if any)
    /// and releases what the runtime holds for it.
    pub fn stop(&self, id: &str, pid: Option<i32>) {
        match &self.isolation {
            Isolation::Oci(oci) => oci.stop(&self.paths(id), id, pid),
            _ => {
                if let Some(pid) = pid {
                    kill_tree(pid);
                }
            }
        }
    }

    /// Pause (`freeze`) or resume a sandbox's processes.
    pub fn freeze(&self, id: &str, pid: Option<i32>, frozen: bool) -> Result<()> {
        match &self.isolation {
            Isolation::Oci(oci) if frozen => oci.pause(id),
            Isolation::Oci(oci) => oci.resume(id),
            _ => {
                match (pid, frozen) {
                    (Some(pid), true) => freeze_tree(pid),
                    (Some(pid), false) => thaw_tree(pid),
                    (None, _) => {}
                }
                Ok(())
            }
        }
    }

    fn bwrap_command(
        &self,
        bwrap: &Path,
        record: &SandboxRecord,
        paths: &SandboxPaths,
        fds: RunFds,
    ) -> Result<tokio::process::Command> {
        let mut cmd = tokio::process::Command::new(bwrap);
        cmd.args(namespace_args());
        cmd.args(system_dir_args()?);
        cmd.args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]);
        for (name, inside) in WRITABLE_DIRS {
            cmd.arg("--bind").arg(paths.writable_dir(name)).arg(inside);
        }
        cmd.arg("--ro-bind").arg(&self.exe).arg(EXE_INSIDE);
        for volume in &record.volumes {
            let Some(host) = &volume.host else { continue };
            let source = volume_source(&host.path, volume.sub_path.as_deref())?;
            let flag = if volume.read_only {
                "--ro-bind"
            } else {
                "--bind"
            };
            cmd.arg(flag).arg(source).arg(&volume.mount_path);
        }
        let short_id: String = record.id.chars().take(8).collect();
        cmd.args(["--hostname", &format!("sandbox-{short_id}")]);
        cmd.args(["--chdir", WORKSPACE_INSIDE, "--clearenv"]);
        for (k, v) in sandbox_env(record, HOME_INSIDE) {
            cmd.arg("--setenv").arg(k).arg(v);
        }
        cmd.arg("--").arg(EXE_INSIDE).args([
            "agent",
            "--socket",
            "execd.sock",
            "--listen-fd",
            &fds.listen.to_string(),
            "--status-fd",
            &fds.status.to_string(),
            "--root",
            "/",
            "--workdir",
            WORKSPACE_INSIDE,
            "--output-framing",
            output_framing_arg(record),
            "--",
        ]);
        cmd.args(&record.entrypoint);
        Ok(cmd)
    }

    fn host_command(
        &self,
        record: &SandboxRecord,
        paths: &SandboxPaths,
        fds: RunFds,
    ) -> Result<tokio::process::Command> {
        for volume in &record.volumes {
            let Some(host) = &volume.host else { continue };
            let source = volume_source(&host.path, volume.sub_path.as_deref())?;
            let link = paths.fs.join(volume.mount_path.trim_start_matches('/'));
            if let Some(parent) = link.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            if !link.exists() {
                std::os::unix::fs::symlink(&source, &link).with_context(|| {
                    format!("linking {} to {}", link.display(), source.display())
                })?;
            }
        }
        let home = paths.writable_dir("root");
        let workspace = paths.writable_dir("workspace");
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.env_clear()
            .envs(sandbox_env(record, &home.to_string_lossy()))
            .current_dir(&workspace)
            .arg("agent")
            .arg("--socket")
            .arg(&paths.socket)
            .arg("--listen-fd")
            .arg(fds.listen.to_string())
            .arg("--status-fd")
            .arg(fds.status.to_string())
            .arg("--root")
            .arg(&paths.fs)
            .arg("--workdir")
            .arg(WORKSPACE_INSIDE)
            .arg("--output-framing")
            .arg(output_framing_arg(record))
            .arg("--")
            .args(&record.entrypoint);
        Ok(cmd)
    }
}

/// The agent's socket and status file, as the child inherits them.
#[derive(Debug, Clone, Copy)]
struct RunFds {
    listen: std::os::fd::RawFd,
    status: std::os::fd::RawFd,
}

/// Binds the agent's socket (0600) and creates its status file (0600, empty) in the
/// host-only run directory, replacing leftovers of an earlier start of this sandbox.
fn open_run_files(
    paths: &SandboxPaths,
) -> Result<(std::os::unix::net::UnixListener, std::fs::File)> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    for stale in [&paths.socket, &paths.status_file] {
        match std::fs::remove_file(stale) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", stale.display())),
        }
    }
    let listener = std::os::unix::net::UnixListener::bind(&paths.socket)
        .with_context(|| format!("binding {}", paths.socket.display()))?;
    std::fs::set_permissions(&paths.socket, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("setting mode 0600 on {}", paths.socket.display()))?;
    let status = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&paths.status_file)
        .with_context(|| format!("creating {}", paths.status_file.display()))?;
    Ok((listener, status))
}

fn namespace_args() -> [&'static str; 11] {
    [
        "--unshare-user",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        // Keep uid/gid 0 inside, so files the sandbox writes into its bound
        // directories belong to the same user the server runs as.
        "--uid",
        "0",
        "--gid",
        "0",
        "--new-session",
    ]
}

/// Read-only mounts of the host's system directories, keeping merged-/usr symlinks.
fn system_dir_args() -> Result<Vec<String>> {
    let mut args = Vec::new();
    for dir in [
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
    ] {
        let meta = match std::fs::symlink_metadata(dir) {
            Ok(meta) => meta,
            Err(_) => continue,
        };
        if meta.file_type().is_symlink() {
            let target =
                std::fs::read_link(dir).with_context(|| format!("reading the link {dir}"))?;
            args.extend([
                "--symlink".to_string(),
                target.to_string_lossy().into_owned(),
                dir.to_string(),
            ]);
        } else if meta.is_dir() {
            args.extend(["--ro-bind".to_string(), dir.to_string(), dir.to_string()]);
        }
    }
    Ok(args)
}

pub(super) fn volume_source(path: &str, sub_path: Option<&str>) -> Result<PathBuf> {
    let mut source = PathBuf::from(path);
    if let Some(sub) = sub_path.filter(|s| !s.is_empty()) {
        source.push(sub.trim_start_matches('/'));
    }
    if !source.exists() {
        bail!("host volume path {} does not exist", source.display());
    }
    // Create resolved the path, under an --allowed-host-path: a symlink swapped in
    // since then must not redirect the mount.
    if std::fs::canonicalize(&source).ok().as_deref() != Some(source.as_path()) {
        bail!(
            "host volume path {} changed since the sandbox was created (now a symlink?)",
            source.display()
        );
    }
    Ok(source)
}

pub(super) fn sandbox_env(record: &SandboxRecord, home: &str) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), DEFAULT_PATH.into()),
        ("HOME".into(), home.into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("TERM".into(), "xterm".into()),
        ("OPENSANDBOX_ID".into(), record.id.clone()),
    ];
    if let Ok(level) = std::env::var("RUST_LOG") {
        env.push(("RUST_LOG".into(), level));
    }
    // The request's variables win over the defaults.
    env.retain(|(k, _)| !record.env.contains_key(k));
    env.extend(record.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// Runs a throw-away sandbox to prove bubblewrap can create every namespace we use.
fn check_bwrap(bwrap: &Path) -> Result<()> {
    let output = std::process::Command::new(bwrap)
        .args(namespace_args())
        .args(system_dir_args()?)
        .args(["--proc", "/proc", "--dev", "/dev", "--", "true"])
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {}", bwrap.display()))?;
    if !output.status.success() {
        bail!(
            "{} exited with {}: {}",
            bwrap.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Start time of a process (clock ticks since boot), `None` if it does not exist.
pub fn process_start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields = stat_fields(&stat)?;
    // Fields after the command name start at field 3 (state); starttime is field 22.
    fields.get(22 - 3)?.parse().ok()
}

/// True if `pid` still runs and is the process that was started at `start`.
pub fn is_alive(pid: i32, start: Option<u64>) -> bool {
    let Some(now) = process_start_time(pid) else {
        return false;
    };
    if start.is_some_and(|s| s != now) {
        return false;
    }
    // A zombie has exited already.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| stat_fields(&s).and_then(|f| f.first().map(|st| *st != "Z")))
        .unwrap_or(false)
}

/// The fields of /proc/pid/stat after `pid (comm)`; comm may hold spaces and parens.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().collect())
}

/// `root` and all its descendants, parents before children.
pub fn process_tree(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some(ppid) =
                stat_fields(&stat).and_then(|f| f.get(1).and_then(|p| p.parse().ok()))
            {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        if let Some(kids) = children.get(&tree[i]) {
            tree.extend(kids);
        }
        i += 1;
    }
    tree
}

fn signal_tree(root: i32, signal: Signal) {
    // Repeat until no new process appears: a process may fork between the walk and the
    // signal.
    let mut signalled = HashSet::new();
    for _ in 0..20 {
        let fresh: Vec<i32> = process_tree(root)
            .into_iter()
            .filter(|p| !signalled.contains(p))
            .collect();
        if fresh.is_empty() {
            break;
        }
        for pid in fresh {
            let _ = kill(Pid::from_raw(pid), signal);
            signalled.insert(pid);
        }
    }
}

/// Kills the whole process tree of a sandbox.
pub fn kill_tree(root: i32) {
    signal_tree(root, Signal::SIGKILL);
}

/// Stops every process of the sandbox (pause).
pub fn freeze_tree(root: i32) {
    signal_tree(root, Signal::SIGSTOP);
}

/// Continues every process of the sandbox (resume).
pub fn thaw_tree(root: i32) {
    signal_tree(root, Signal::SIGCONT);
}

/// The entrypoint's exit as recorded by the agent, if it wrote one. The file is open
/// in the sandbox's agent, so it is read like hostile input: no symlink, no FIFO,
/// a regular file of at most 64 KiB.
pub fn read_exit_status(path: &Path) -> Option<ExitStatus> {
    let raw = super::security::read_regular_no_follow(path, 64 * 1024).ok()?;
    serde_json::from_slice(&raw).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_has_a_tree() {
        let me = std::process::id() as i32;
        let start = process_start_time(me);
        assert!(start.is_some());
        assert!(is_alive(me, start));
        assert!(!is_alive(me, start.map(|s| s + 1)));
        assert_eq!(process_tree(me).first(), Some(&me));
    }

    #[test]
    fn stat_fields_survive_odd_command_names() {
        let fields = stat_fields("42 (a ) b) S 7 42 42").unwrap_or_default();
        assert_eq!(fields, vec!["S", "7", "42", "42"]);
    }

    #[test]
    fn output_framing_extension_overrides_the_default() {
        let mut record: SandboxRecord = serde_json::from_value(serde_json::json!({
            "id": "x", "image": null, "snapshot_id": null, "entrypoint": ["true"],
            "env": {}, "metadata": {}, "extensions": {},
            "resource_limits": {}, "platform": null, "network_policy": null, "volumes": [],
            "status": {"state": "Pending"}, "created_at": "2026-01-01T00:00:00Z",
            "expires_at": null, "execd_token": "t", "egress_token": "e", "pid": null,
            "pid_start": null, "isolation": "none"
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        // No --output-framing set in this test process: the default is kept.
        assert_eq!(output_framing_arg(&record), "kept");
        record
            .extensions
            .insert(OUTPUT_FRAMING_EXTENSION.into(), "lines".into());
        assert_eq!(output_framing_arg(&record), "lines");
        record
            .extensions
            .insert(OUTPUT_FRAMING_EXTENSION.into(), "kept".into());
        assert_eq!(output_framing_arg(&record), "kept");
        assert_eq!(parse_output_framing("Lines"), None);
    }

    #[test]
    fn request_env_overrides_defaults() {
        let mut record: SandboxRecord = serde_json::from_value(serde_json::json!({
            "id": "x", "image": null, "snapshot_id": null, "entrypoint": ["true"],
            "env": {"PATH": "/custom", "A": "1"}, "metadata": {}, "extensions": {},
            "resource_limits": {}, "platform": null, "network_policy": null, "volumes": [],
            "status": {"state": "Pending"}, "created_at": "2026-01-01T00:00:00Z",
            "expires_at": null, "execd_token": "t", "egress_token": "e", "pid": null,
            "pid_start": null, "isolation": "none"
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        record.env.insert("HOME".into(), "/h".into());
        let env: HashMap<_, _> = sandbox_env(&record, "/root").into_iter().collect();
        assert_eq!(env["PATH"], "/custom");
        assert_eq!(env["HOME"], "/h");
        assert_eq!(env["A"], "1");
        assert_eq!(env["LANG"], "C.UTF-8");
    }
}
