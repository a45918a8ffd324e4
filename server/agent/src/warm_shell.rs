//! A bash started ahead of the next foreground command, so that a command does not
//! wait for bash's own start-up (exec, dynamic loading, locale, user lookup: most of
//! `run("true")`'s time in the sandbox, about 1–2 ms of CPU each).
//!
//! The agent keeps at most one ready shell, started with everything a default command
//! gets (the agent's environment and the env file's variables, the workdir as cwd, its
//! own process group, piped stdout/stderr) and blocked reading its command from stdin.
//! A command that asks for nothing else (shell form, no cwd, env, uid or gid) is handed
//! to it; the next one is started in the background right after (and only after the
//! first command: an idle sandbox that never runs one has no extra process). A shell
//! started before the env file changed (a `set_env`, see `crate::envfile`) is not used.
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

use tokio::process::{Child, ChildStderr, ChildStdout};

/// The bootstrap each ready shell runs (`bash -c BOOTSTRAP`).
const BOOTSTRAP: &str = concat!(
    "IFS= read -r __osb_n && IFS= LC_ALL=C read -r -N \"$__osb_n\" __osb_c || exit 0\n",
    "exec 0<>/dev/null\n",
    "eval \"BASH_EXECUTION_STRING=\\$__osb_c; unset __osb_n __osb_c; SECONDS=0; $__osb_c\""
);

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
}

#[derive(Default)]
struct Slot {
    ready: Option<WarmShell>,
    /// A replacement is being started.
    starting: bool,
    /// bash is missing or cannot be started: never try again.
    disabled: bool,
}

impl WarmShells {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `command` in the ready shell (a default foreground command in `workdir`,
    /// whose metadata is `cwd`, with the env file's `file_vars`), then starts the next
    /// shell in the background. `None` when no shell is ready or the command cannot be
    /// handed over: the caller spawns it the ordinary way (a shell is then started for
    /// the next command).
    pub fn run(
        self: &Arc<Self>,
        command: &str,
        workdir: &Path,
        cwd: &std::fs::Metadata,
        file_vars: &crate::envfile::Vars,
        widen: fn(std::os::fd::RawFd),
    ) -> Option<Handed> {
        let shell = self.lock().ready.take();
        let handed = shell.and_then(|shell| {
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
        });
        self.refill(workdir.to_path_buf(), widen);
        handed
    }

    /// Starts a ready shell in the background unless one is ready or starting.
    fn refill(self: &Arc<Self>, workdir: PathBuf, widen: fn(std::os::fd::RawFd)) {
        {
            let mut slot = self.lock();
            if slot.disabled || slot.starting || slot.ready.is_some() {
                return;
            }
            slot.starting = true;
        }
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let started = WarmShell::start(&workdir, widen);
            let mut slot = me.lock();
            slot.starting = false;
            match started {
                Ok(shell) => slot.ready = Some(shell),
                Err(err) => {
                    tracing::debug!(error = %err, "no ready shell: commands start bash each time");
                    slot.disabled = true;
                }
            }
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
