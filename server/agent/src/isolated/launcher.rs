//! The launcher of an isolated session's shell: `opensandbox-server isolated-launch`.
//!
//! The agent starts it (its own binary, see [`self_command`]) as the session's
//! "shell" process, with the session's stdin/stdout pipes and a status pipe on fd 3.
//! The launcher is a fresh, single-threaded process, so it can `clone` safely:
//!
//! 1. `clone` a child `S` into new user, mount, PID, UTS, IPC and cgroup namespaces
//!    (and network, unless the session shares the sandbox's); `S` waits on a pipe;
//! 2. write `S`'s uid/gid maps (this takes CAP_SETUID/SETGID in the sandbox's user
//!    namespace, which the launcher has and `S` does not), then let `S` go;
//! 3. `S`, root of its own user namespace, builds the session's tree on the empty
//!    directory `new_root` ([`super::plan`] made the plan): the sandbox's tree bound
//!    and remounted read-only, the session's `/proc` (a tmpfs with a few global files:
//!    the sandbox's masked procfs cannot be mounted afresh inside a nested user
//!    namespace, and binding it would show the sandbox's processes), `/dev`, `/tmp`,
//!    `/run`, then the overlays and binds; it pivots into it and detaches the old root;
//! 4. `S` drops everything: all capabilities (bounding and ambient sets too, root
//!    locked out by securebits), then switches to the session's uid/gid, installs the
//!    sandbox's seccomp filter ([`crate::confine`]: no `mount`, `umount2`,
//!    `pivot_root`, `unshare`) and execs `bash --noprofile --norc`. It is PID 1 of its
//!    namespace: when it ends, every process of the session is killed;
//! 5. the launcher reports `{"pid": S}` (or `{"error": ...}`) on fd 3 and waits for
//!    `S`, exiting as it does. It ignores SIGINT (the agent interrupts runs by
//!    signalling the session's process group) and dies with the agent.
//!
//! `isolated-launch --probe DIR` does steps 1–3 with a tmpfs and an overlay in `DIR`
//! and reports `{"ok": true}`: the capability check behind `/v1/isolated/capabilities`.

use std::ffi::{CString, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::plan::{LaunchSpec, RootStep, Step, Upper};

/// Command line of the hidden `isolated-launch` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct LauncherArgs {
    /// The launch plan as JSON (`plan::LaunchSpec`).
    #[arg(long, conflicts_with = "probe")]
    pub spec: Option<String>,
    /// Check that namespaces, mounts and overlayfs work, using this empty directory.
    #[arg(long, value_name = "DIR")]
    pub probe: Option<PathBuf>,
    /// Where to write the one-line JSON report.
    #[arg(long, value_name = "FD", default_value_t = 3)]
    pub status_fd: i32,
}

/// The command that runs this binary's `isolated-launch` subcommand. Inside an OCI
/// sandbox the agent runs through the host's dynamic loader
/// (`/.opensandbox/lib/ld-linux-*.so* --library-path /.opensandbox/lib
/// /.opensandbox/opensandbox-server agent ...`): `/proc/self/exe` is then the loader,
/// and the launcher is started the same way.
pub fn self_command() -> std::io::Result<tokio::process::Command> {
    let exe = std::fs::read_link("/proc/self/exe")?;
    let is_loader = exe
        .file_name()
        .map(|n| n.as_bytes().starts_with(b"ld-"))
        .unwrap_or(false);
    let mut command = tokio::process::Command::new(&exe);
    if is_loader {
        let program: OsString = std::env::args_os()
            .next()
            .ok_or_else(|| std::io::Error::other("no argv[0] to re-execute"))?;
        if let Some(dir) = exe.parent() {
            command.arg("--library-path").arg(dir);
        }
        command.arg(program);
    }
    command.arg("isolated-launch");
    Ok(command)
}

type Fallible<T> = Result<T, String>;

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

fn cstr(path: &Path) -> Fallible<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("NUL in path {}", path.display()))
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Fallible<()> {
    let source_c = source.map(cstr).transpose()?;
    let target_c = cstr(target)?;
    let fstype_c = fstype
        .map(|f| CString::new(f).map_err(|_| "NUL in fstype".to_string()))
        .transpose()?;
    let data_c = data
        .map(|d| CString::new(d).map_err(|_| "NUL in mount options".to_string()))
        .transpose()?;
    // SAFETY: every pointer is a NUL-terminated string alive for the call, or null.
    let rc = unsafe {
        libc::mount(
            source_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            target_c.as_ptr(),
            fstype_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr().cast()),
        )
    };
    if rc != 0 {
        return Err(os_error(&format!(
            "mount {} on {} ({})",
            source.map_or("-".into(), |s| s.display().to_string()),
            target.display(),
            fstype.unwrap_or("bind")
        )));
    }
    Ok(())
}

/// `root.join(inside)` for an absolute path inside the session.
fn under(root: &Path, inside: &Path) -> PathBuf {
    root.join(inside.strip_prefix("/").unwrap_or(inside))
}

/// Makes `target` exist with the type of `source` (a directory unless `source` is a
/// file): mount points in the read-only tree must exist already (the agent makes
/// them), those on the session's own tmpfs are made here.
fn ensure_mount_point(target: &Path, file: bool) -> Fallible<()> {
    if std::fs::symlink_metadata(target).is_ok() {
        return Ok(());
    }
    let made = if file {
        if let Some(parent) = target.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(target)
            .map(drop)
    } else {
        std::fs::create_dir_all(target)
    };
    made.map_err(|e| format!("cannot make mount point {}: {e}", target.display()))
}

/// Remounts every mount at or below `prefix` read-only, keeping its nosuid, nodev and
/// noexec flags (the kernel refuses to drop locked ones). Fails on any mount it
/// cannot make read-only: a writable mount left behind would let the session write
/// into the sandbox.
fn make_read_only(prefix: &Path) -> Fallible<()> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read the mount table: {e}"))?;
    for mount_point in super::plan::parse_mountinfo(&info) {
        if !mount_point.starts_with(prefix) {
            continue;
        }
        let c = cstr(&mount_point)?;
        // SAFETY: zeroed statvfs is a valid out-parameter.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: NUL-terminated path and a valid out-parameter.
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return Err(os_error(&format!("statvfs {}", mount_point.display())));
        }
        if st.f_flag & libc::ST_RDONLY != 0 {
            continue;
        }
        let mut flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY;
        for (st_flag, ms_flag) in [
            (libc::ST_NOSUID, libc::MS_NOSUID),
            (libc::ST_NODEV, libc::MS_NODEV),
            (libc::ST_NOEXEC, libc::MS_NOEXEC),
        ] {
            if st.f_flag & st_flag != 0 {
                flags |= ms_flag;
            }
        }
        mount(None, &mount_point, None, flags, None)?;
    }
    Ok(())
}

fn bind(source: &Path, target: &Path, readonly: bool) -> Fallible<()> {
    let is_file = std::fs::metadata(source)
        .map(|m| !m.is_dir())
        .map_err(|e| format!("bind source {}: {e}", source.display()))?;
    ensure_mount_point(target, is_file)?;
    mount(
        Some(source),
        target,
        None,
        libc::MS_BIND | libc::MS_REC,
        None,
    )?;
    if readonly {
        make_read_only(target)?;
    }
    Ok(())
}

fn tmpfs(target: &Path, flags: libc::c_ulong, mode: u32) -> Fallible<()> {
    ensure_mount_point(target, false)?;
    mount(
        Some(Path::new("tmpfs")),
        target,
        Some("tmpfs"),
        flags,
        Some(&format!("mode={mode:o}")),
    )
}

/// A bind-remount of one mount (not its children) read-only.
fn seal(target: &Path, flags: libc::c_ulong) -> Fallible<()> {
    mount(
        None,
        target,
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags,
        None,
    )
}

fn overlay(target: &Path, lower: &Path, upper: &Upper) -> Fallible<()> {
    let (upper_dir, work_dir) = match upper {
        Upper::Dir { upper, work } => (upper.clone(), work.clone()),
        Upper::Tmpfs { mount: dir } => {
            tmpfs(dir, libc::MS_NOSUID | libc::MS_NODEV, 0o755)?;
            (dir.join("upper"), dir.join("work"))
        }
    };
    for dir in [&upper_dir, &work_dir] {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    // The merged root takes the upper directory's owner and mode: give it the lower
    // one's, or a user could not write where the sandbox's directory lets them. (An
    // owner this namespace does not map is left as is.)
    if let Ok(meta) = std::fs::metadata(lower) {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let _ = std::os::unix::fs::chown(&upper_dir, Some(meta.uid()), Some(meta.gid()));
        let _ = std::fs::set_permissions(
            &upper_dir,
            std::fs::Permissions::from_mode(meta.mode() & 0o7777),
        );
    }
    ensure_mount_point(target, false)?;
    // In a user namespace overlayfs keeps its metadata in user.* xattrs.
    let options = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        lower.display(),
        upper_dir.display(),
        work_dir.display()
    );
    mount(
        Some(Path::new("overlay")),
        target,
        Some("overlay"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&options),
    )
}

/// The global, process-free files of the sandbox's `/proc` a session gets.
const PROC_FILES: [&str; 7] = [
    "cpuinfo",
    "meminfo",
    "stat",
    "uptime",
    "loadavg",
    "version",
    "filesystems",
];

fn session_proc(root: &Path) -> Fallible<()> {
    let target = root.join("proc");
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    tmpfs(&target, flags, 0o555)?;
    for name in PROC_FILES {
        let source = Path::new("/proc").join(name);
        if source.exists() {
            bind(&source, &target.join(name), true)?;
        }
    }
    if Path::new("/proc/sys").is_dir() {
        bind(Path::new("/proc/sys"), &target.join("sys"), true)?;
    }
    seal(&target, flags)
}

const DEV_NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

fn session_dev(root: &Path) -> Fallible<()> {
    let target = root.join("dev");
    let flags = libc::MS_NOSUID | libc::MS_NOEXEC;
    tmpfs(&target, flags, 0o755)?;
    for name in DEV_NODES {
        let source = Path::new("/dev").join(name);
        if source.exists() {
            bind(&source, &target.join(name), false)?;
        }
    }
    let pts = target.join("pts");
    ensure_mount_point(&pts, false)?;
    mount(
        Some(Path::new("devpts")),
        &pts,
        Some("devpts"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("newinstance,ptmxmode=0666,mode=0620"),
    )?;
    tmpfs(
        &target.join("shm"),
        libc::MS_NOSUID | libc::MS_NODEV,
        0o1777,
    )?;
    for (link, to) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(to, target.join(link))
            .map_err(|e| format!("cannot link /dev/{link}: {e}"))?;
    }
    seal(&target, flags)
}

fn run_step(root: &Path, step: &Step) -> Fallible<()> {
    match step {
        Step::Overlay {
            target,
            lower,
            upper,
        } => overlay(&under(root, target), lower, upper),
        Step::Bind {
            source,
            target,
            readonly,
        } => bind(source, &under(root, target), *readonly),
        Step::Tmpfs { target, mode } => tmpfs(
            &under(root, target),
            libc::MS_NOSUID | libc::MS_NODEV,
            *mode,
        ),
        Step::Proc => session_proc(root),
        Step::Dev => session_dev(root),
        Step::Cover { target } => {
            let at = under(root, target);
            if !at.is_dir() {
                return Ok(());
            }
            let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            tmpfs(&at, flags, 0o555)?;
            seal(&at, flags)
        }
    }
}

fn loopback_up() -> Fallible<()> {
    // SAFETY: plain socket(2).
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(os_error("socket"));
    }
    // SAFETY: owned from here.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a zeroed ifreq is valid; the name fits.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS with a valid ifreq.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) != 0 {
            return Err(os_error("SIOCGIFFLAGS lo"));
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) != 0 {
            return Err(os_error("SIOCSIFFLAGS lo"));
        }
    }
    Ok(())
}

const SECBIT_ALL_LOCKED: libc::c_ulong = 0xff & !(1 << 4); // everything but KEEP_CAPS
const LAST_CAP_GUESS: libc::c_ulong = 63;

/// No capability left in any set, root without special powers, the session's ids.
fn drop_privileges(uid: u32, gid: u32) -> Fallible<()> {
    // SAFETY: prctl/setgroups/setres*id/capset with integer or valid arguments; the
    // process is single-threaded (a clone child), so process-wide is this thread.
    unsafe {
        if libc::prctl(libc::PR_SET_SECUREBITS, SECBIT_ALL_LOCKED, 0, 0, 0) != 0 {
            return Err(os_error("PR_SET_SECUREBITS"));
        }
        for cap in 0..=LAST_CAP_GUESS {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return Err(os_error("PR_CAPBSET_DROP"));
            }
        }
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return Err(os_error("PR_CAP_AMBIENT_CLEAR_ALL"));
        }
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return Err(os_error("setgroups"));
        }
        if libc::setresgid(gid, gid, gid) != 0 {
            return Err(os_error(&format!("setresgid {gid}")));
        }
        if libc::setresuid(uid, uid, uid) != 0 {
            return Err(os_error(&format!("setresuid {uid}")));
        }
        let mut header = [0x2008_0522u32, 0];
        let data = [0u32; 6];
        if libc::syscall(libc::SYS_capset, header.as_mut_ptr(), data.as_ptr()) != 0 {
            return Err(os_error("capset"));
        }
        let mut check = [0u32; 6];
        if libc::syscall(libc::SYS_capget, header.as_mut_ptr(), check.as_mut_ptr()) != 0
            || check.iter().any(|w| *w != 0)
        {
            return Err("capabilities remain after dropping them".into());
        }
    }
    Ok(())
}

/// Default dispositions and an empty mask for what the shell inherits.
fn reset_signals() {
    // SAFETY: signal/sigprocmask with valid arguments.
    unsafe {
        for sig in 1..32 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// The first of bash, then sh, found on the session's PATH.
fn find_shell(env: &[String]) -> Option<PathBuf> {
    let path = env
        .iter()
        .find_map(|e| e.strip_prefix("PATH="))
        .unwrap_or("/usr/local/bin:/usr/bin:/bin");
    ["bash", "sh"].iter().find_map(|name| {
        path.split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    })
}

/// Everything `S` does: build the tree, enter it, drop privileges, exec the shell.
/// Returns only on failure.
fn session_child(spec: &LaunchSpec) -> Fallible<()> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    let root = &spec.new_root;
    match &spec.root {
        RootStep::ReadOnly => {
            mount(
                Some(Path::new("/")),
                root,
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            )?;
            make_read_only(root)?;
        }
        RootStep::Writable => {
            mount(
                Some(Path::new("/")),
                root,
                None,
                libc::MS_BIND | libc::MS_REC,
                None,
            )?;
        }
        RootStep::Overlay { lower, upper } => overlay(root, lower, upper)?,
    }
    for step in &spec.steps {
        run_step(root, step)?;
    }
    let hostname = spec.hostname.as_bytes();
    // SAFETY: pointer and length of a live slice.
    if unsafe { libc::sethostname(hostname.as_ptr().cast(), hostname.len()) } != 0 {
        return Err(os_error("sethostname"));
    }
    if !spec.share_net {
        loopback_up()?;
    }
    let dot = c".";
    // SAFETY: chdir/pivot_root/umount2 on NUL-terminated paths.
    unsafe {
        let root_c = cstr(root)?;
        if libc::chdir(root_c.as_ptr()) != 0 {
            return Err(os_error("chdir to the new root"));
        }
        if libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) != 0 {
            return Err(os_error("pivot_root"));
        }
        // The old root is stacked on the new one: detach it, and the sandbox's tree
        // is gone from this namespace.
        if libc::umount2(dot.as_ptr(), libc::MNT_DETACH) != 0 {
            return Err(os_error("detaching the old root"));
        }
        if libc::chdir(c"/".as_ptr()) != 0 {
            return Err(os_error("chdir /"));
        }
        let workdir = cstr(&spec.workdir)?;
        libc::chdir(workdir.as_ptr());
        // The launcher gone (the agent killed it), the session goes too.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    drop_privileges(spec.uid, spec.gid)?;
    reset_signals();
    crate::confine::filter()
        .install()
        .map_err(|e| format!("cannot install the seccomp filter: {e}"))?;
    let shell = find_shell(&spec.env).ok_or("no bash or sh on the session's PATH")?;
    let shell_c = cstr(&shell)?;
    let is_bash = shell.file_name().is_some_and(|n| n == "bash");
    let args: Vec<CString> = if is_bash {
        vec![c"bash".into(), c"--noprofile".into(), c"--norc".into()]
    } else {
        vec![c"sh".into()]
    };
    let env: Vec<CString> = spec
        .env
        .iter()
        .filter_map(|e| CString::new(e.as_bytes()).ok())
        .collect();
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    // SAFETY: NUL-terminated arrays of NUL-terminated strings, alive for the call.
    unsafe { libc::execve(shell_c.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    Err(os_error(&format!("exec {}", shell.display())))
}

/// What the probe's `S` does: a tmpfs with an overlay on it.
fn probe_child(dir: &Path) -> Fallible<()> {
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    tmpfs(dir, libc::MS_NOSUID | libc::MS_NODEV, 0o755)?;
    let lower = dir.join("lower");
    std::fs::create_dir_all(&lower).map_err(|e| e.to_string())?;
    std::fs::write(lower.join("probe"), b"ok").map_err(|e| e.to_string())?;
    let merged = dir.join("merged");
    overlay(
        &merged,
        &lower,
        &Upper::Dir {
            upper: dir.join("upper"),
            work: dir.join("work"),
        },
    )?;
    std::fs::write(merged.join("written"), b"ok").map_err(|e| e.to_string())?;
    Ok(())
}

enum Job<'a> {
    Session(&'a LaunchSpec),
    Probe(&'a Path),
}

struct ChildContext<'a> {
    job: Job<'a>,
    go: RawFd,
    errors: RawFd,
    parent_ends: [RawFd; 2],
}

extern "C" fn child_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildContext` the parent passed to clone; without
    // CLONE_VM the child has its own copy of it.
    let ctx = unsafe { &*(arg as *const ChildContext<'_>) };
    // SAFETY: closing the parent's ends of the pipes in the child's copy.
    unsafe {
        libc::close(ctx.parent_ends[0]);
        libc::close(ctx.parent_ends[1]);
    }
    let mut byte = [0u8; 1];
    // SAFETY: reading one byte into a live buffer.
    let n = unsafe { libc::read(ctx.go, byte.as_mut_ptr().cast(), 1) };
    if n != 1 {
        return 1;
    }
    let result = match &ctx.job {
        Job::Session(spec) => session_child(spec),
        Job::Probe(dir) => probe_child(dir),
    };
    match result {
        Ok(()) => 0,
        Err(message) => {
            let bytes = message.as_bytes();
            // SAFETY: writing a live buffer to our end of the error pipe.
            unsafe { libc::write(ctx.errors, bytes.as_ptr().cast(), bytes.len()) };
            1
        }
    }
}

fn pipe_pair() -> Fallible<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 with a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_error("pipe2"));
    }
    // SAFETY: both fds were just created and are owned here.
    unsafe { Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))) }
}

fn write_file(path: &str, content: &str) -> Fallible<()> {
    std::fs::write(path, content).map_err(|e| format!("writing {path}: {e}"))
}

fn wait_for(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid out-parameter.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1;
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Clones `S` for `job`, maps its ids, lets it run, and waits until it has exec'd
/// (or failed). Returns its pid.
fn start_child(job: Job<'_>, share_net: bool, maps: (&str, &str)) -> Fallible<libc::pid_t> {
    let (go_read, go_write) = pipe_pair()?;
    let (err_read, err_write) = pipe_pair()?;
    let ctx = ChildContext {
        job,
        go: go_read.as_raw_fd(),
        errors: err_write.as_raw_fd(),
        parent_ends: [go_write.as_raw_fd(), err_read.as_raw_fd()],
    };
    let mut flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWCGROUP
        | libc::SIGCHLD;
    if !share_net {
        flags |= libc::CLONE_NEWNET;
    }
    let mut stack = vec![0u8; 4 << 20];
    // SAFETY: the stack is 16-byte aligned at its top for x86-64/aarch64 after the
    // mask; the child runs on it in its own copy of the address space (no CLONE_VM);
    // `ctx` outlives the call.
    let pid = unsafe {
        let top = stack.as_mut_ptr().add(stack.len()) as usize & !15;
        libc::clone(
            child_entry,
            top as *mut libc::c_void,
            flags,
            &ctx as *const ChildContext<'_> as *mut libc::c_void,
        )
    };
    if pid < 0 {
        return Err(os_error("clone into new namespaces"));
    }
    drop(go_read);
    drop(err_write);
    let kill_child = |message: String| {
        // SAFETY: signalling and reaping our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        wait_for(pid);
        message
    };
    let (uid_map, gid_map) = maps;
    write_file(&format!("/proc/{pid}/uid_map"), uid_map).map_err(kill_child)?;
    write_file(&format!("/proc/{pid}/gid_map"), gid_map).map_err(kill_child)?;
    let mut go = std::fs::File::from(go_write);
    go.write_all(b"1")
        .map_err(|e| kill_child(format!("starting the session: {e}")))?;
    drop(go);
    // EOF without a message: the child exec'd (the pipe is close-on-exec) or, for the
    // probe, exited after succeeding.
    let mut message = String::new();
    let _ = std::fs::File::from(err_read).read_to_string(&mut message);
    if !message.is_empty() {
        wait_for(pid);
        return Err(message);
    }
    Ok(pid)
}

fn report(status: &mut std::fs::File, value: serde_json::Value) {
    let _ = writeln!(status, "{value}");
}

/// The `isolated-launch` subcommand. Returns the process exit code.
pub fn main(args: LauncherArgs) -> u8 {
    // SAFETY: the fd was handed to this process to own (`--status-fd`).
    let mut status = unsafe { std::fs::File::from_raw_fd(args.status_fd) };
    // SAFETY: fcntl on the owned status fd: the shell must not inherit it.
    unsafe { libc::fcntl(args.status_fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: prctl/signal with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    let own_maps = || -> Fallible<(String, String)> {
        let read = |f: &str| std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"));
        let identity = |text: String| {
            super::plan::parse_id_map(&text)
                .iter()
                .map(|(inside, _, count)| format!("{inside} {inside} {count}\n"))
                .collect::<String>()
        };
        Ok((
            identity(read("/proc/self/uid_map")?),
            identity(read("/proc/self/gid_map")?),
        ))
    };
    if let Some(dir) = &args.probe {
        let outcome = own_maps().and_then(|(u, g)| {
            let pid = start_child(Job::Probe(dir), false, (&u, &g))?;
            match wait_for(pid) {
                0 => Ok(()),
                code => Err(format!("the probe exited with {code}")),
            }
        });
        return match outcome {
            Ok(()) => {
                report(&mut status, serde_json::json!({ "ok": true }));
                0
            }
            Err(message) => {
                report(&mut status, serde_json::json!({ "error": message }));
                1
            }
        };
    }
    let spec: LaunchSpec = match args
        .spec
        .as_deref()
        .ok_or_else(|| "--spec or --probe is required".to_string())
        .and_then(|s| serde_json::from_str(s).map_err(|e| format!("bad --spec: {e}")))
    {
        Ok(spec) => spec,
        Err(message) => {
            report(&mut status, serde_json::json!({ "error": message }));
            return 2;
        }
    };
    match start_child(
        Job::Session(&spec),
        spec.share_net,
        (&spec.uid_map, &spec.gid_map),
    ) {
        Ok(pid) => {
            report(&mut status, serde_json::json!({ "pid": pid }));
            drop(status);
            u8::try_from(wait_for(pid)).unwrap_or(1)
        }
        Err(message) => {
            report(&mut status, serde_json::json!({ "error": message }));
            1
        }
    }
}
