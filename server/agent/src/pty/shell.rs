//! Starting a session's shell: on a real terminal (PTY mode, bash as the leader of its
//! own session with the terminal as controlling tty) or on plain pipes (pipe mode,
//! bash in its own process group), plus the handles the session keeps to drive it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use nix::fcntl::OFlag;
use nix::sys::signal::Signal;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::process::{Child, ChildStdin};

/// The terminal size a new shell starts with.
pub const INITIAL_COLS: u16 = 80;
pub const INITIAL_ROWS: u16 = 24;

/// Output channels (the first byte of a server→client binary frame).
pub const STDOUT: u8 = 0x01;
pub const STDERR: u8 = 0x02;

/// How the shell is attached, chosen by the attach that starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pty,
    Pipe,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Pty => "pty",
            Mode::Pipe => "pipe",
        }
    }
}

/// A non-blocking terminal master, read by the output pump and written by stdin.
pub type Master = Arc<AsyncFd<OwnedFd>>;

/// Where client input goes.
pub enum Stdin {
    Pty(Master),
    Pipe(tokio::sync::Mutex<ChildStdin>),
}

/// One source of output and the channel it is reported on.
pub enum Output {
    Pty(Master),
    Pipe(u8, Box<dyn AsyncRead + Send + Unpin>),
}

impl Output {
    /// The frame channel this output's bytes go out on (a terminal's are stdout).
    pub fn channel(&self) -> u8 {
        match self {
            Output::Pty(_) => STDOUT,
            Output::Pipe(channel, _) => *channel,
        }
    }

    /// The next bytes (0 at the end). Cancel-safe: a read dropped before it completes
    /// has consumed nothing.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Output::Pty(master) => read_master(master, buf).await,
            Output::Pipe(_, reader) => tokio::io::AsyncReadExt::read(reader, buf).await,
        }
    }
}

/// A started shell: the child to reap, its group, input and output.
pub struct Started {
    pub child: Child,
    pub pgid: i32,
    pub stdin: Stdin,
    pub master: Option<Master>,
    pub outputs: Vec<Output>,
}

fn bash(cwd: &Path, command: Option<&str>) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.args(["--norc", "--noprofile"]);
    if let Some(command) = command {
        cmd.arg("-c").arg(command);
    }
    cmd.current_dir(cwd);
    crate::envfile::apply(&mut cmd);
    // Like every process the agent starts: the sandbox's full seccomp filter.
    crate::confine::apply(&mut cmd);
    cmd
}

/// Starts `bash --norc --noprofile [-c command]` in `cwd` in `mode`.
pub fn start(mode: Mode, cwd: &Path, command: Option<&str>) -> io::Result<Started> {
    match mode {
        Mode::Pty => start_pty(cwd, command),
        Mode::Pipe => start_pipe(cwd, command),
    }
}

fn start_pipe(cwd: &Path, command: Option<&str>) -> io::Result<Started> {
    let mut cmd = bash(cwd, command);
    cmd.process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn()?;
    let pgid = pid_of(&child)?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("bash has no stdin pipe"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("bash has no stdout pipe"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("bash has no stderr pipe"))?;
    Ok(Started {
        child,
        pgid,
        stdin: Stdin::Pipe(tokio::sync::Mutex::new(stdin)),
        master: None,
        outputs: vec![
            Output::Pipe(STDOUT, Box::new(stdout)),
            Output::Pipe(STDERR, Box::new(stderr)),
        ],
    })
}

fn start_pty(cwd: &Path, command: Option<&str>) -> io::Result<Started> {
    // Close-on-exec from the start: no other process started meanwhile (a command, an
    // entrypoint) may inherit either end.
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)?;
    nix::pty::grantpt(&master)?;
    nix::pty::unlockpt(&master)?;
    let slave_name = nix::pty::ptsname_r(&master)?;
    // SAFETY: `into_raw_fd` hands over the only owner of a valid open descriptor.
    let master = unsafe { OwnedFd::from_raw_fd(master.into_raw_fd()) };
    let slave: OwnedFd = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(&slave_name)?
        .into();
    set_window_size(&master, INITIAL_COLS, INITIAL_ROWS)?;

    let mut cmd = bash(cwd, command);
    if std::env::var_os("TERM").is_none() {
        cmd.env("TERM", "xterm-256color");
    }
    cmd.stdin(Stdio::from(slave.try_clone()?))
        .stdout(Stdio::from(slave.try_clone()?))
        .stderr(Stdio::from(slave));
    // SAFETY: only async-signal-safe calls (setsid, ioctl) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Leader of a new session, with the terminal (now on fd 0) as its
            // controlling tty: job control, ^C and SIGWINCH work as in a terminal.
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    // `cmd` (and with it our copies of the slave) is dropped here: the master reads
    // EIO once every process holding the terminal is gone.
    drop(cmd);
    let pgid = pid_of(&child)?;
    set_nonblocking(&master)?;
    // SAFETY: `master` is an open descriptor owned by the AsyncFd for its whole life
    // (OwnedFd always reports the same fd and closes it only on drop).
    let master = unsafe { AsyncFd::register(master) }.map_err(io::Error::from)?;
    let master: Master = Arc::new(master);
    Ok(Started {
        child,
        pgid,
        stdin: Stdin::Pty(Arc::clone(&master)),
        master: Some(Arc::clone(&master)),
        outputs: vec![Output::Pty(master)],
    })
}

fn pid_of(child: &Child) -> io::Result<i32> {
    child
        .id()
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| io::Error::other("the shell exited before its pid was read"))
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg};
    let flags = OFlag::from_bits_truncate(fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL)?);
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

/// Sets the terminal size; the foreground job gets SIGWINCH.
pub fn set_window_size(master: &OwnedFd, cols: u16, rows: u16) -> io::Result<()> {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one `winsize` from the pointer, which outlives the call.
    let rc = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads what the terminal printed; `Ok(0)` once nobody holds the terminal any more
/// (Linux reports that as EIO on the master).
pub async fn read_master(master: &AsyncFd<OwnedFd>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        let mut guard = master.readable().await?;
        match guard.try_io(|fd| nix::unistd::read(fd.as_raw_fd(), buf).map_err(io::Error::from)) {
            Ok(Ok(n)) => return Ok(n),
            Ok(Err(e)) if e.raw_os_error() == Some(libc::EIO) => return Ok(0),
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        }
    }
}

async fn write_master(master: &AsyncFd<OwnedFd>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let mut guard = master.writable().await?;
        match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), data).map_err(io::Error::from)) {
            Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => data = &data[n..],
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => continue,
        }
    }
    Ok(())
}

impl Stdin {
    /// Writes `data` to the shell (typed keys in PTY mode).
    pub async fn write_all(&self, data: &[u8]) -> io::Result<()> {
        match self {
            Stdin::Pty(master) => write_master(master, data).await,
            Stdin::Pipe(pipe) => {
                let mut pipe = pipe.lock().await;
                pipe.write_all(data).await?;
                pipe.flush().await
            }
        }
    }
}

/// The signal names a client may send (pty.md §4.3); others are ignored.
pub fn signal_named(name: &str) -> Option<Signal> {
    match name {
        "SIGINT" => Some(Signal::SIGINT),
        "SIGTERM" => Some(Signal::SIGTERM),
        "SIGKILL" => Some(Signal::SIGKILL),
        "SIGQUIT" => Some(Signal::SIGQUIT),
        "SIGHUP" => Some(Signal::SIGHUP),
        _ => None,
    }
}
