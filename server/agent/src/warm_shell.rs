//! A bash started ahead of the next foreground command, so that a command does not
//! wait for bash's own start-up (exec, dynamic loading, locale, user lookup: most of
//! `run("true")`'s time in the sandbox, about 1–2 ms of CPU each).
//!
//! The agent keeps at most one ready shell, started with everything a default command
//! gets (the agent's environment and the env file's variables, the workdir as cwd, its
//! own process group, piped stdout/stderr) and blocked reading its command from stdin.
//! A command that asks for nothing else (shell form, no cwd, env, uid or gid) is handed
//! to it; the next one is started in the background once that command has finished
//! (its terminal event queued), or [`REFILL_AFTER`] after the handover if it is still
//! running (only after the first command: an idle sandbox that never runs one has no
//! extra process). Not at the handover itself: on a busy machine the new bash's exec
//! and start-up (about 1 ms of CPU) then ran ahead of the handed command on the same
//! core and made a spaced `run("true")` up to three times as slow (see "Command
//! start" in docs/architecture.md). Except for commands that come back to back
//! (within [`BACK_TO_BACK`] of the previous one's end), whose successor is due before
//! a shell started at the end could be ready: theirs starts at the handover, as
//! before. A command that arrives while the next shell is being spawned waits for it
//! ([`WarmShells::settle`]) instead of starting a bash of its own. A shell started
//! before the env file changed (a `set_env`, see `crate::envfile`) is not used.
//!
//! What the shell does with the command, and how it differs from `bash -c CMD`:
//! - it reads `LEN\nCMD` (one short line read byte by byte, then `read -N` in one go),
//!   points stdin at /dev/null, sets `BASH_EXECUTION_STRING`, resets `SECONDS`, and
//!   `eval`s the command as the last thing it does, so exit status, `exit`, traps,
//!   `$0` (`bash`), `$$`, `$PPID` and the process group are as under `bash -c`;
//! - a command that is one simple command of plain words running a program (see
//!   [`exec_prefix`]) is run with `exec`, as bash's `-c` does on its own: the program
//!   replaces the shell, so a signal that kills it is reported as the signal
//!   (`signal: killed` for an OOM kill), not as status 128+N;
//! - what stays different: bash does not `exec` the last command of a longer string
//!   under `eval`, so when only that last process is killed by a signal the status is
//!   128+N instead of the signal; a syntax error reads `bash: eval: line N: ...`
//!   instead of `bash: -c: line N: ...`; `/proc/PID/cmdline` of the shell shows this
//!   module's bootstrap, not the command.
//!
//! Commands longer than [`MAX_COMMAND`] (which could not be written to the pipe in one
//! go) take the ordinary path, as does everything when `bash` is missing.

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::process::{Child, ChildStderr, ChildStdout};
use tokio::sync::{oneshot, Notify};

/// The bootstrap each ready shell runs (`bash -c BOOTSTRAP`).
const BOOTSTRAP: &str = concat!(
    "IFS= read -r __osb_n && IFS= LC_ALL=C read -r -N \"$__osb_n\" __osb_c || exit 0\n",
    "exec 0<>/dev/null\n",
    "eval \"BASH_EXECUTION_STRING=\\$__osb_c; unset __osb_n __osb_c; SECONDS=0; $__osb_c\""
);

/// How long after a handover the next shell is started when the handed command is
/// still running (a command that ends sooner starts it at its end).
pub const REFILL_AFTER: Duration = Duration::from_millis(5);

/// A default command arriving within this of the previous one's end starts the next
/// shell at its handover (see [`WarmShells::refill_later`]).
pub const BACK_TO_BACK: Duration = Duration::from_millis(2);

/// The longest a command waits for a shell being spawned ([`WarmShells::settle`]):
/// a spawn takes well under a millisecond; past this the command starts its own bash.
pub const SETTLE_MAX: Duration = Duration::from_millis(50);

/// Longest command handed to a ready shell: written to its (empty) stdin pipe in one
/// write, never blocking the agent.
pub const MAX_COMMAND: usize = 60 * 1024;

/// A started shell waiting for its command.
pub struct WarmShell {
    /// `None` once handed over.
    child: Option<Child>,
    stdin: Option<std::fs::File>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    /// Device and inode of its working directory when it started: a workdir replaced
    /// since then makes it unusable (`bash -c` would start in the new one).
    cwd: (u64, u64),
    /// The env file's variables it was started with: a file changed since (a
    /// `set_env`) makes it unusable too.
    file_vars: crate::envfile::Vars,
}

/// A running command that a ready shell took over.
pub struct Handed {
    pub child: Child,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

/// Starts the next ready shell when dropped (see [`WarmShells::refill_later`]). The
/// start itself is synchronous up to marking it under way, so a client that has read
/// the terminal event of the command before it finds the next shell ready or
/// starting ([`WarmShells::settle`]), never neither.
pub struct Refill {
    warm: Arc<WarmShells>,
    workdir: PathBuf,
    widen: fn(std::os::fd::RawFd),
    /// Dropped with this: ends the [`REFILL_AFTER`] timer.
    _cancel: oneshot::Sender<()>,
}

impl Drop for Refill {
    fn drop(&mut self) {
        self.warm.lock().last_end = Some(std::time::Instant::now());
        self.warm
            .refill(std::mem::take(&mut self.workdir), self.widen);
    }
}

impl WarmShell {
    /// Starts a shell in `workdir`; `widen` is applied to its output pipes.
    fn start(workdir: &Path, widen: fn(std::os::fd::RawFd)) -> io::Result<WarmShell> {
        let cwd = std::fs::metadata(workdir)?;
        let mut command = tokio::process::Command::new("bash");
        command
            .arg("-c")
            .arg(BOOTSTRAP)
            .current_dir(workdir)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let file_vars = crate::envfile::apply(&mut command);
        // The commands it takes over run under the sandbox's full seccomp filter, as
        // every process the agent starts (`crate::confine`).
        crate::confine::apply(&mut command);
        let mut child = command.spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("no stdin pipe"))?
            .into_owned_fd()?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        stdout.iter().for_each(|p| widen(p.as_raw_fd()));
        stderr.iter().for_each(|p| widen(p.as_raw_fd()));
        Ok(WarmShell {
            child: Some(child),
            stdin: Some(std::fs::File::from(stdin)),
            stdout,
            stderr,
            cwd: (cwd.dev(), cwd.ino()),
            file_vars,
        })
    }

    /// Hands `command` over; `None` (the shell is discarded) when it already died or
    /// cannot take it.
    fn hand(mut self, command: &str) -> Option<Handed> {
        let child = self.child.as_mut()?;
        if !matches!(child.try_wait(), Ok(None)) {
            return None;
        }
        let message = format!("{}\n{command}", command.len());
        // One write into an empty pipe of at least 64 KiB: complete or refused, never
        // blocking (the pipe is non-blocking for tokio).
        let mut stdin = self.stdin.take()?;
        match stdin.write(message.as_bytes()) {
            Ok(n) if n == message.len() => {}
            _ => return None,
        }
        drop(stdin);
        Some(Handed {
            child: self.child.take()?,
            stdout: self.stdout.take(),
            stderr: self.stderr.take(),
        })
    }
}

impl Drop for WarmShell {
    fn drop(&mut self) {
        // Only an unused shell gets here with its child: closing stdin ends it (`read`
        // fails, it exits 0); the kill is for one that is not reading.
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

/// The agent's ready shell, if any.
#[derive(Default)]
pub struct WarmShells {
    slot: Mutex<Slot>,
    /// Notified each time a start ends (ready or failed).
    started: Notify,
}

#[derive(Default)]
struct Slot {
    ready: Option<WarmShell>,
    /// A replacement is being started.
    starting: bool,
    /// bash is missing or cannot be started: never try again.
    disabled: bool,
    /// When the last default command ended (its [`Refill`] was dropped).
    last_end: Option<std::time::Instant>,
}

impl WarmShells {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `command` in the ready shell (a default foreground command in a workdir
    /// whose metadata is `cwd`, with the env file's `file_vars`). `None` when no shell
    /// is ready or the command cannot be handed over: the caller spawns it the
    /// ordinary way. Either way the caller starts the next shell with
    /// [`WarmShells::refill_later`] (a shell that could not take the command is gone).
    pub fn run(
        &self,
        command: &str,
        cwd: &std::fs::Metadata,
        file_vars: &crate::envfile::Vars,
    ) -> Option<Handed> {
        let shell = self.lock().ready.take()?;
        if command.len() > MAX_COMMAND
            || shell.cwd != (cwd.dev(), cwd.ino())
            || shell.file_vars != *file_vars
        {
            return None;
        }
        let text = match exec_prefix(command) {
            Some(prefix) => format!("{prefix}{command}"),
            None => command.to_string(),
        };
        shell.hand(&text)
    }

    /// Waits while the next shell is being spawned (at most [`SETTLE_MAX`]), so that
    /// a command arriving right after the previous one ended takes it instead of
    /// starting a second bash beside it. Returns at once when no start is under way.
    pub async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + SETTLE_MAX;
        loop {
            let started = self.started.notified();
            tokio::pin!(started);
            // Registered before the check: a start ending in between still wakes us.
            started.as_mut().enable();
            if !self.lock().starting {
                return;
            }
            if tokio::time::timeout_at(deadline, started).await.is_err() {
                return;
            }
        }
    }

    /// The start of the next shell for a command just handed over (or spawned the
    /// ordinary way): it happens when the returned [`Refill`] is dropped (the caller
    /// drops it once the command's terminal event is queued), or [`REFILL_AFTER`]
    /// from now if the command is still running then. Commands coming back to back
    /// (this one less than [`BACK_TO_BACK`] after the previous one ended) start it
    /// now: the next one is due before a shell started at the end could be ready, and
    /// a head start costs it less than the handed command's share of the core.
    pub fn refill_later(
        self: &Arc<Self>,
        workdir: PathBuf,
        widen: fn(std::os::fd::RawFd),
    ) -> Refill {
        let back_to_back = self
            .lock()
            .last_end
            .is_some_and(|end| end.elapsed() < BACK_TO_BACK);
        if back_to_back {
            self.refill(workdir.clone(), widen);
        }
        let (cancel, dropped) = oneshot::channel::<()>();
        let me = Arc::clone(self);
        let dir = workdir.clone();
        tokio::spawn(async move {
            // Ok: the Refill was dropped, which started the shell itself.
            if tokio::time::timeout(REFILL_AFTER, dropped).await.is_err() {
                me.refill(dir, widen);
            }
        });
        Refill {
            warm: Arc::clone(self),
            workdir,
            widen,
            _cancel: cancel,
        }
    }

    /// Starts a ready shell in the background unless one is ready or starting. The
    /// spawn runs on a blocking thread: it holds its thread until bash is exec'd,
    /// which must not hold up a runtime worker (and the tasks queued on it).
    fn refill(self: &Arc<Self>, workdir: PathBuf, widen: fn(std::os::fd::RawFd)) {
        {
            let mut slot = self.lock();
            if slot.disabled || slot.starting || slot.ready.is_some() {
                return;
            }
            slot.starting = true;
        }
        let me = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let started = WarmShell::start(&workdir, widen);
            {
                let mut slot = me.lock();
                slot.starting = false;
                match started {
                    Ok(shell) => slot.ready = Some(shell),
                    Err(err) => {
                        tracing::debug!(error = %err, "no ready shell: commands start bash each time");
                        slot.disabled = true;
                    }
                }
            }
            me.started.notify_waiters();
        });
    }
}

/// `"exec "` when `command` is a single simple command of plain words whose first word
/// names a program file (not a builtin, keyword, function or assignment): bash's `-c`
/// runs such a command by replacing itself with the program, and so must the ready
/// shell. Words may hold `'...'` and `"..."` without expansions; anything else
/// (operators, `$`, globs, backslashes, redirections, comments, newlines) is `None`.
fn exec_prefix(command: &str) -> Option<&'static str> {
    let first = plain_words(command)?;
    if BASH_WORDS.contains(&first.as_str()) || first.contains('=') || exported_functions() {
        return None;
    }
    program_exists(&first).then_some("exec ")
}

/// Builtins and reserved words of bash 5 (`compgen -b`, `compgen -k`).
const BASH_WORDS: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "case",
    "esac",
    "for",
    "select",
    "while",
    "until",
    "do",
    "done",
    "in",
    "function",
    "time",
    "{",
    "}",
    "!",
    "[[",
    "]]",
    "coproc",
];

/// The first word when `command` is plain words only (see [`exec_prefix`]).
fn plain_words(command: &str) -> Option<String> {
    let mut first = String::new();
    let mut in_first = true;
    let mut seen_word = false;
    let mut chars = command.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if seen_word {
                    in_first = false;
                }
            }
            '\'' | '"' => {
                if in_first {
                    return None; // a quoted program name: leave it to bash
                }
                let mut closed = false;
                for q in chars.by_ref() {
                    if q == c {
                        closed = true;
                        break;
                    }
                    if c == '"' && matches!(q, '$' | '`' | '\\') || q == '\n' {
                        return None;
                    }
                }
                if !closed {
                    return None;
                }
            }
            c if c.is_ascii_alphanumeric() || "_./-=,:@%+".contains(c) => {
                seen_word = true;
                if in_first {
                    first.push(c);
                }
            }
            _ => return None,
        }
    }
    (!first.is_empty()).then_some(first)
}

/// Functions in the environment (`BASH_FUNC_name%%`) could shadow any program.
fn exported_functions() -> bool {
    static ANY: OnceLock<bool> = OnceLock::new();
    *ANY.get_or_init(|| {
        std::env::vars_os().any(|(k, _)| k.to_string_lossy().starts_with("BASH_FUNC_"))
    })
}

/// Whether bash would find `name` as an executable file: a path as given, else on
/// `PATH` (bash's default `PATH` when unset; an empty or relative entry is the cwd,
/// which this does not second-guess: such a PATH gets no `exec`).
fn program_exists(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        return executable(Path::new(name));
    }
    let path = std::env::var("PATH").unwrap_or_else(|_| {
        "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.".into()
    });
    let dirs: Vec<&str> = path.split(':').collect();
    if dirs.iter().any(|d| !d.starts_with('/')) {
        return false;
    }
    dirs.iter().any(|d| executable(&Path::new(d).join(name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_widen(_: std::os::fd::RawFd) {}

    fn slot_state(warm: &WarmShells) -> (bool, bool) {
        let slot = warm.lock();
        (slot.starting, slot.ready.is_some())
    }

    /// Regression: the next shell used to be spawned at the handover, and on a busy
    /// core its exec and start-up ran ahead of the handed command (a spaced
    /// `run("true")` took 1.5 ms instead of 0.8). The handover starts nothing unless
    /// commands come back to back; dropping the Refill (the command's end) does, at
    /// once, and a command that comes meanwhile waits for that shell instead of
    /// starting its own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_next_shell_starts_when_the_handed_command_ends() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::fs::metadata(dir.path()).unwrap();
        let warm = Arc::new(WarmShells::default());
        let vars = crate::envfile::Vars::new();

        // First command: no shell yet; the Refill starts one when dropped.
        assert!(warm.run("true", &cwd, &vars).is_none());
        let refill = warm.refill_later(dir.path().to_path_buf(), no_widen);
        assert_eq!(slot_state(&warm), (false, false));
        drop(refill);
        // Marked under way before the drop returns: a client that saw the end of the
        // command never finds neither a ready nor a starting shell.
        assert_ne!(slot_state(&warm), (false, false));
        warm.settle().await;
        assert_eq!(slot_state(&warm), (false, true), "bash is missing?");

        // The handover takes the shell and starts no other one (the previous command
        // did not just end: not back to back).
        warm.lock().last_end = None;
        let handed = warm.run("exit 7", &cwd, &vars).expect("handed over");
        let refill = warm.refill_later(dir.path().to_path_buf(), no_widen);
        assert_eq!(slot_state(&warm), (false, false));
        let mut child = handed.child;
        assert_eq!(child.wait().await.unwrap().code(), Some(7));
        drop(refill);
        warm.settle().await;
        assert_eq!(slot_state(&warm), (false, true));

        // Back to back (the previous command ended just now; a future instant reads
        // as no time at all): the successor starts at the handover.
        warm.lock().last_end = Some(std::time::Instant::now() + Duration::from_secs(3600));
        let handed = warm.run("exit 0", &cwd, &vars).expect("handed over");
        let refill = warm.refill_later(dir.path().to_path_buf(), no_widen);
        assert_ne!(slot_state(&warm), (false, false));
        let mut child = handed.child;
        assert_eq!(child.wait().await.unwrap().code(), Some(0));
        drop(refill);
        warm.settle().await;
        assert_eq!(slot_state(&warm), (false, true));
    }

    /// A command still running REFILL_AFTER after its handover gets its successor
    /// then: concurrent commands do not wait for it to end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_command_gets_its_successor_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let warm = Arc::new(WarmShells::default());
        let refill = warm.refill_later(dir.path().to_path_buf(), no_widen);
        for _ in 0..1000 {
            if slot_state(&warm).1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(slot_state(&warm), (false, true));
        // The drop then finds one ready and starts nothing more.
        drop(refill);
        assert_eq!(slot_state(&warm), (false, true));
    }

    #[test]
    fn only_plain_simple_commands_of_programs_are_execed() {
        assert_eq!(exec_prefix("sleep 30"), Some("exec "));
        assert_eq!(
            exec_prefix("python3 -c \"b = b'x' * (512 * 1024); print(len(b))\""),
            Some("exec ")
        );
        assert_eq!(exec_prefix("  ls -l /tmp  "), Some("exec "));
        for not in [
            "true",
            "echo hi",
            "cd /tmp",
            "sleep 1; echo x",
            "sleep 1 && echo x",
            "ls | wc -l",
            "ls > /tmp/x",
            "ls $HOME",
            "echo \"$HOME\"",
            "ls *.txt",
            "X=1 env",
            "'sleep' 1",
            "ls \\",
            "ls # comment",
            "ls\nls",
            "no-such-program-here 1",
            "ls 'unclosed",
            "",
            "(ls)",
        ] {
            assert_eq!(exec_prefix(not), None, "{not:?}");
        }
    }
}
