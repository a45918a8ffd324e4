//! The agent process: serves the execd router over a Unix socket and supervises the
//! sandbox's entrypoint. When the entrypoint exits, its outcome is written to the status
//! file and [`run`] returns its exit code, which is how the control plane learns that
//! the sandbox has ended.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use tokio::net::UnixListener;
use tokio::signal::unix::{signal, SignalKind};

use crate::{router, AgentConfig};

/// How long the entrypoint gets to exit after a forwarded SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(10);
/// How long open connections (e.g. a metrics watch) may delay the agent's exit.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Exit code reported when the entrypoint cannot be started (shell convention).
const SPAWN_FAILED: i32 = 127;

/// Command-line arguments of `opensandbox-server agent`.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentArgs {
    /// Unix socket to serve the execd API on. A stale socket at this path is replaced;
    /// the new one is created with mode 0600.
    #[arg(long, value_name = "PATH")]
    pub socket: PathBuf,
    /// Serve on this already-listening Unix socket (an inherited file descriptor)
    /// instead of binding `--socket`. The OCI runtime backend uses it: the server binds
    /// the socket in a directory the sandbox cannot see or write and passes the
    /// listener in; `--socket` is then only the name used in logs.
    #[arg(long, value_name = "FD")]
    pub listen_fd: Option<i32>,
    /// Directory every client path is confined to. `/` inside an isolated sandbox.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Default working directory of commands and of the entrypoint, as a path inside
    /// the sandbox (i.e. relative to --root); created if missing.
    #[arg(long, value_name = "DIR", default_value = "/workspace")]
    pub workdir: PathBuf,
    /// Where to write `{"exit_code", "signal", "finished_at"}` when the entrypoint exits.
    #[arg(long, value_name = "PATH")]
    pub status_file: Option<PathBuf>,
    /// Write the status into this inherited file descriptor (an open regular file)
    /// instead of `--status-file`: the server opens the file in a directory the
    /// sandbox cannot see, so the sandbox cannot swap it for a symlink or a FIFO.
    #[arg(long, value_name = "FD", conflicts_with = "status_file")]
    pub status_fd: Option<i32>,
    /// Largest size, in bytes, of the sandbox log (the entrypoint's output, when the
    /// agent's stdout is a file) and of each background command's log. Past it the
    /// oldest half is dropped behind a marker line.
    #[arg(long, value_name = "BYTES", default_value_t = crate::logcap::DEFAULT_CAP)]
    pub log_cap: u64,
    /// How foreground `/command` output is cut into `stdout`/`stderr` events: `kept`
    /// (the 1.1 execd: each event keeps its line ending) or `lines` (the June 2026
    /// execd: one event per line, ending stripped). Sessions are always line-framed.
    #[arg(long, value_enum, value_name = "FRAMING", default_value = "kept")]
    pub output_framing: crate::commands::OutputFraming,
    /// A warm sandbox (started ahead of its create request): before anything else,
    /// read the start message (entrypoint, environment, output framing; see
    /// `start`) from this inherited pipe, then run as if started with it. A pipe
    /// closed without a message makes the agent exit 0 at once.
    #[arg(long, value_name = "FD")]
    pub start_fd: Option<i32>,
    /// Install the sandbox's seccomp filter on every process the agent starts
    /// (`crate::confine`). The OCI runtime backend sets it: its filter lets the agent
    /// itself mount and unshare, for isolated sessions, and this keeps both away
    /// from everything else in the sandbox.
    #[arg(long)]
    pub confine_children: bool,
    /// The sandbox's entrypoint, after `--`. Without one the agent serves until SIGTERM.
    #[arg(last = true, value_name = "ENTRYPOINT")]
    pub entrypoint: Vec<String>,
}

/// The port the official code-interpreter SDK probes for Jupyter.
const JUPYTER_DEFAULT_PORT: u16 = 44771;

/// `$JUPYTER_PORT` as the SDK's probe reads it (`${JUPYTER_PORT:-44771}`): unset or
/// empty means the default; a value that is no port gets the default too.
fn jupyter_port(env: Option<&str>) -> u16 {
    env.filter(|v| !v.is_empty())
        .and_then(|v| v.parse().ok())
        .unwrap_or(JUPYTER_DEFAULT_PORT)
}

/// Accept TCP on 127.0.0.1:`port` so that `CodeInterpreter.create`'s readiness probe
/// (`exec 3<>/dev/tcp/127.0.0.1/$JUPYTER_PORT` inside the sandbox) connects. Our code
/// runs go through `/code`, not Jupyter, so a connection is accepted and closed.
/// Best effort: if the port is taken (a real Jupyter, or another sandbox's agent on
/// a shared network under `--isolation none`) the probe connects to that instead.
/// Returns the bound address, if any.
async fn jupyter_probe(port: u16) -> Option<std::net::SocketAddr> {
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(listener) => listener,
        Err(err) => {
            tracing::debug!(port, error = %err, "not answering the Jupyter port probe");
            return None;
        }
    };
    let addr = listener.local_addr().ok();
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => drop(stream),
                // E.g. EMFILE: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    addr
}

/// What the status file records about the entrypoint's end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntrypointStatus {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub finished_at: String,
}

impl EntrypointStatus {
    fn from_exit(status: ExitStatus) -> Self {
        Self {
            exit_code: status.code(),
            signal: status.signal(),
            finished_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        }
    }

    /// The agent's own exit code: the entrypoint's, or 128 + signal like a shell.
    pub fn process_exit_code(&self) -> i32 {
        match (self.exit_code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => 1,
        }
    }
}

/// Maps `--workdir` (a sandbox path) to the host path below `root`. A path that already
/// lies below a non-`/` root is taken as the host path it is.
pub fn host_workdir(root: &Path, workdir: &Path) -> PathBuf {
    if root != Path::new("/") && workdir.starts_with(root) {
        return workdir.to_path_buf();
    }
    let relative: PathBuf = workdir
        .components()
        .filter(|c| matches!(c, std::path::Component::Normal(_)))
        .collect();
    root.join(relative)
}

/// Writes the status file atomically (tmp + rename) so a reader never sees half of it.
pub fn write_status(path: &Path, status: &EntrypointStatus) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let body = serde_json::to_vec(status).context("serialising the entrypoint status")?;
    std::fs::write(&tmp, body).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Takes over an inherited status file descriptor (`--status-fd`), keeping it from the
/// entrypoint and the commands.
fn inherited_status_file(fd: i32) -> anyhow::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: the fd was handed to this process to own (`--status-fd`); checked below.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    let meta = file
        .metadata()
        .with_context(|| format!("--status-fd {fd} is not open"))?;
    if !meta.is_file() {
        bail!("--status-fd {fd} is not a regular file");
    }
    // SAFETY: plain fcntl on an fd this process owns.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags >= 0 {
        // SAFETY: as above; F_SETFD only changes the fd's close-on-exec flag.
        unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
    }
    Ok(file)
}

/// Replaces the content of the status file held open by `--status-fd`.
pub fn write_status_fd(file: &std::fs::File, status: &EntrypointStatus) -> anyhow::Result<()> {
    use std::os::unix::fs::FileExt;
    let body = serde_json::to_vec(status).context("serialising the entrypoint status")?;
    file.set_len(0).context("truncating the status file")?;
    file.write_all_at(&body, 0)
        .context("writing the status file")?;
    file.sync_all().context("syncing the status file")
}

/// Binds the socket, replacing a stale socket file but never another kind of file.
pub fn bind_socket(path: &Path) -> anyhow::Result<UnixListener> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)
            .with_context(|| format!("removing stale socket {}", path.display()))?,
        Ok(_) => bail!("{} exists and is not a socket", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("checking {}", path.display())),
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating socket directory {}", parent.display()))?;
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("binding {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("setting mode 0600 on {}", path.display()))?;
    Ok(listener)
}

/// Takes over an inherited, listening Unix socket.
fn inherited_listener(fd: i32) -> anyhow::Result<UnixListener> {
    use std::os::fd::FromRawFd;
    // SAFETY: the fd was handed to this process to own (`--listen-fd`); checked below.
    let std_listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
    std_listener
        .local_addr()
        .with_context(|| format!("--listen-fd {fd} is not a Unix socket"))?;
    // Not inherited by the entrypoint and the commands.
    // SAFETY: fcntl reads the flags of `fd`, which `std_listener` owns (still open).
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags >= 0 {
        // SAFETY: as above; F_SETFD only changes the fd's close-on-exec flag.
        unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
    }
    std_listener
        .set_nonblocking(true)
        .context("making the inherited listener non-blocking")?;
    UnixListener::from_std(std_listener).context("registering the inherited listener")
}

fn send_signal(pid: Option<u32>, sig: nix::sys::signal::Signal) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // The child may have exited in the meantime; nothing to do then.
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
    }
}

/// A capped pipe into our stdout when that is a regular file (the sandbox log).
fn capped_stdout() -> std::io::Result<Option<(std::process::Stdio, std::process::Stdio)>> {
    use std::os::fd::AsFd;
    let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
    let file = std::fs::File::from(fd);
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let (out, err, _drained) = crate::logcap::capped_pipe(file, "sandbox".into())?;
    Ok(Some((out.into(), err.into())))
}

/// Runs the entrypoint until it exits or the agent is asked to stop.
async fn supervise(
    entrypoint: &[String],
    workdir: &Path,
    term: &mut tokio::signal::unix::Signal,
    int: &mut tokio::signal::unix::Signal,
) -> EntrypointStatus {
    let mut command = tokio::process::Command::new(&entrypoint[0]);
    command.args(&entrypoint[1..]).current_dir(workdir);
    crate::envfile::apply(&mut command);
    crate::confine::apply(&mut command);
    // The sandbox log is our stdout: the entrypoint writes to it through a capped pump
    // (a pipe), never to the file itself.
    match capped_stdout() {
        Ok(Some((out, err))) => {
            command.stdout(out).stderr(err);
        }
        Ok(None) => {}
        Err(e) => tracing::warn!(error = %e, "the sandbox log is not capped"),
    }
    let mut child = match command
        // If the agent itself fails, the sandbox must not keep running unsupervised.
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, entrypoint = ?entrypoint, "cannot start the entrypoint");
            return EntrypointStatus {
                exit_code: Some(SPAWN_FAILED),
                signal: None,
                finished_at: chrono::Utc::now()
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            };
        }
    };
    let pid = child.id();
    let waited = tokio::select! {
        status = child.wait() => status,
        _ = term.recv() => stop_child(&mut child, pid).await,
        _ = int.recv() => stop_child(&mut child, pid).await,
    };
    match waited {
        Ok(status) => EntrypointStatus::from_exit(status),
        Err(e) => {
            tracing::error!(error = %e, "cannot wait for the entrypoint");
            EntrypointStatus {
                exit_code: None,
                signal: None,
                finished_at: chrono::Utc::now()
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            }
        }
    }
}

async fn stop_child(
    child: &mut tokio::process::Child,
    pid: Option<u32>,
) -> std::io::Result<ExitStatus> {
    send_signal(pid, nix::sys::signal::Signal::SIGTERM);
    match tokio::time::timeout(TERM_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            child.start_kill()?;
            child.wait().await
        }
    }
}

/// The agent's main: serve, supervise, report. Returns the process exit code.
pub async fn run(args: AgentArgs) -> anyhow::Result<i32> {
    crate::logcap::set_cap(args.log_cap);
    crate::commands::set_output_framing(args.output_framing);
    crate::confine::set_enabled(args.confine_children);
    // Not dumpable: a sandbox process (same uid) can then neither ptrace the agent nor
    // open its fds through /proc/1/fd (the log file, the socket, the status file).
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        tracing::warn!(error = %std::io::Error::last_os_error(), "cannot make the agent non-dumpable");
    }
    let root = std::fs::canonicalize(&args.root)
        .with_context(|| format!("sandbox root {}", args.root.display()))?;
    let workdir = host_workdir(&root, &args.workdir);
    std::fs::create_dir_all(&workdir)
        .with_context(|| format!("creating workdir {}", workdir.display()))?;
    let env_file = crate::envfile::init(&root, &workdir);
    tracing::debug!(path = %env_file.display(), "env file");
    let config = AgentConfig { root, workdir };

    let listener = match args.listen_fd {
        Some(fd) => inherited_listener(fd)?,
        None => bind_socket(&args.socket)?,
    };
    let status_fd = args.status_fd.map(inherited_status_file).transpose()?;
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;

    jupyter_probe(jupyter_port(std::env::var("JUPYTER_PORT").ok().as_deref())).await;

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let app = router(config.clone());
    let mut server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop_rx.await;
            })
            .await
    });
    tracing::info!(socket = %args.socket.display(), root = %config.root.display(), "execd agent listening");

    let outcome = if args.entrypoint.is_empty() {
        tokio::select! {
            _ = term.recv() => Ok(0),
            _ = int.recv() => Ok(0),
            res = &mut server => Err(res),
        }
    } else {
        tokio::select! {
            status = supervise(&args.entrypoint, &config.workdir, &mut term, &mut int) => {
                if let Some(path) = &args.status_file {
                    if let Err(e) = write_status(path, &status) {
                        tracing::error!(error = %e, "cannot write the status file");
                    }
                }
                if let Some(file) = &status_fd {
                    if let Err(e) = write_status_fd(file, &status) {
                        tracing::error!(error = %e, "cannot write the status file");
                    }
                }
                tracing::info!(?status, "entrypoint finished");
                Ok(status.process_exit_code())
            }
            res = &mut server => Err(res),
        }
    };

    let code = match outcome {
        Ok(code) => {
            let _ = stop_tx.send(());
            // Streams such as /metrics/watch never end by themselves: don't wait forever.
            let _ = tokio::time::timeout(DRAIN_GRACE, &mut server).await;
            server.abort();
            code
        }
        Err(res) => {
            if args.listen_fd.is_none() {
                let _ = std::fs::remove_file(&args.socket);
            }
            match res {
                Ok(Ok(())) => bail!("the execd server stopped unexpectedly"),
                Ok(Err(e)) => return Err(e).context("serving the execd API"),
                Err(e) => return Err(e).context("the execd server task failed"),
            }
        }
    };
    if args.listen_fd.is_none() {
        let _ = std::fs::remove_file(&args.socket);
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jupyter_port_follows_the_probe_default() {
        assert_eq!(jupyter_port(None), 44771);
        assert_eq!(jupyter_port(Some("")), 44771);
        assert_eq!(jupyter_port(Some("8888")), 8888);
        assert_eq!(jupyter_port(Some("nope")), 44771);
    }

    #[tokio::test]
    async fn jupyter_probe_accepts_connections() {
        let addr = jupyter_probe(0).await.expect("bound");
        for _ in 0..3 {
            let conn = tokio::net::TcpStream::connect(addr).await;
            assert!(conn.is_ok(), "{conn:?}");
        }
        // A taken port is not an error, just not ours.
        assert_eq!(jupyter_probe(addr.port()).await, None);
    }

    #[test]
    fn workdir_is_a_sandbox_path_under_the_root() {
        assert_eq!(
            host_workdir(Path::new("/srv/sb"), Path::new("/workspace")),
            Path::new("/srv/sb/workspace")
        );
        assert_eq!(
            host_workdir(Path::new("/"), Path::new("/workspace")),
            Path::new("/workspace")
        );
        assert_eq!(
            host_workdir(Path::new("/r"), Path::new("/../x")),
            Path::new("/r/x")
        );
        assert_eq!(
            host_workdir(Path::new("/srv/sb"), Path::new("/srv/sb/work")),
            Path::new("/srv/sb/work")
        );
    }

    #[test]
    fn signal_exit_maps_to_128_plus_signal() {
        let s = EntrypointStatus {
            exit_code: None,
            signal: Some(15),
            finished_at: String::new(),
        };
        assert_eq!(s.process_exit_code(), 143);
    }

    #[test]
    fn status_file_is_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.json");
        let status = EntrypointStatus {
            exit_code: Some(3),
            signal: None,
            finished_at: "2026-01-01T00:00:00.000Z".into(),
        };
        write_status(&path, &status).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["exit_code"], 3);
        assert!(v["signal"].is_null());
        assert!(!dir.path().join("status.json.tmp").exists());
    }

    #[test]
    fn a_regular_file_is_never_replaced_by_the_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-a-socket");
        std::fs::write(&path, b"keep").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            assert!(bind_socket(&path).is_err());
        });
        assert_eq!(std::fs::read(&path).unwrap(), b"keep");
    }
}
