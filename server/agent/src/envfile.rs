//! The sandbox env file (`$EXECD_ENVS`): `KEY=VALUE` lines that every command, new
//! session, code context, terminal and the entrypoint get in their environment.
//!
//! The official SDKs' `commands.set_env(key, value)` appends `KEY='value'` to the file
//! named by `$EXECD_ENVS` with a shell command (protocol.md §6); the upstream execd
//! reads the file again for every process it starts. This agent does the same:
//! - the path is `$EXECD_ENVS` if the sandbox's environment sets it (image or create
//!   request), else [`DEFAULT_PATH`] below the sandbox root; at start-up the agent
//!   creates its directory and the (empty) file and exports the path as `EXECD_ENVS`
//!   to everything it starts;
//! - the file is read at each start of a process: a command sees what was set before
//!   it, a bash session what was set before the session was created (a running
//!   session keeps its environment);
//! - layering, as upstream: the agent's environment < the file < the request's `envs`.
//!   The file cannot change `EXECD_ENVS` itself (later `set_env` calls would write to
//!   a file nobody reads) nor `OPENSANDBOX_ID`.
//!
//! Format (upstream `parseEnvFile`): blank lines and `#` comments are skipped;
//! `KEY=value` is trimmed and `$NAME`/`${NAME}` are expanded from the agent's
//! environment; `KEY="v"` keeps spaces, decodes `\n \r \t \\ \"` and expands;
//! `KEY='v'` is literal and may span lines. Malformed or unterminated entries are
//! skipped, never fatal.
//!
//! The file belongs to the sandbox, so it is untrusted input: it is opened without
//! following a final symlink and without blocking (a FIFO), only a regular file is
//! read, at most [`MAX_FILE`] bytes (a bigger file is ignored as a whole), and an entry
//! the kernel would refuse (a NUL, a `KEY=VALUE` longer than [`MAX_ENTRY`], a key
//! that is no variable name) is skipped: a broken file never stops a command.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// The variable naming the file, set on every process the agent starts.
pub const VAR: &str = "EXECD_ENVS";
/// Where the file is when the sandbox does not say (below the sandbox root; `/tmp`
/// is writable under every isolation mode).
pub const DEFAULT_PATH: &str = "tmp/.opensandbox/envs";
/// Largest file read; a bigger one is ignored (its variables would not fit in a
/// process's environment anyway).
pub const MAX_FILE: u64 = 512 * 1024;
/// Longest `KEY=VALUE` entry: the kernel's `MAX_ARG_STRLEN` (32 pages) less the NUL.
pub const MAX_ENTRY: usize = 32 * 4096 - 1;
/// Variables the file cannot set.
const PROTECTED: &[&str] = &[VAR, "OPENSANDBOX_ID"];

/// The variables of the file, by name.
pub type Vars = BTreeMap<String, String>;

static PATH: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Sets the file's path (`None`: no env file). Done once at start-up; tests set it too.
pub fn set_path(path: Option<PathBuf>) {
    *PATH.write().unwrap_or_else(|p| p.into_inner()) = path;
}

/// The file's path, if the agent has one.
pub fn path() -> Option<PathBuf> {
    PATH.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The path for a sandbox whose root is `root`: `$EXECD_ENVS` (as a path of the
/// sandbox's processes; relative to `workdir` if relative) or [`DEFAULT_PATH`].
pub fn choose_path(configured: Option<&str>, root: &Path, workdir: &Path) -> PathBuf {
    match configured.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) if Path::new(p).is_absolute() => PathBuf::from(p),
        Some(p) => workdir.join(p),
        None => root.join(DEFAULT_PATH),
    }
}

/// Start-up: chooses the path, creates its directory and an empty file (best effort,
/// as upstream's bootstrap does) and remembers it.
pub fn init(root: &Path, workdir: &Path) -> PathBuf {
    let configured = std::env::var(VAR).ok();
    let path = choose_path(configured.as_deref(), root, workdir);
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot create the env file's directory");
        }
    }
    let created = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path);
    if let Err(e) = created {
        tracing::warn!(path = %path.display(), error = %e, "cannot create the env file");
    }
    set_path(Some(path.clone()));
    path
}

/// The file's variables now (empty without a file or when it cannot be read).
pub fn load() -> Vars {
    let Some(path) = path() else {
        return Vars::new();
    };
    match read_bounded(&path) {
        Ok(Some(text)) => parse(&text, |name| std::env::var(name).ok()),
        Ok(None) => Vars::new(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignoring the env file");
            Vars::new()
        }
    }
}

/// Sets `vars` and `EXECD_ENVS` on `command` (before the request's own variables,
/// which the caller sets afterwards).
pub fn apply_vars(command: &mut tokio::process::Command, vars: &Vars) {
    command.envs(vars);
    if let Some(path) = path() {
        command.env(VAR, path);
    }
}

/// Reads the file's variables now and sets them on `command` (see [`apply_vars`]).
pub fn apply(command: &mut tokio::process::Command) -> Vars {
    let vars = load();
    apply_vars(command, &vars);
    vars
}

/// The file's text: `None` if it does not exist; an error if it is no regular file,
/// a symlink, or bigger than [`MAX_FILE`]. Invalid UTF-8 is replaced, not refused.
pub fn read_bounded(path: &Path) -> std::io::Result<Option<String>> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > MAX_FILE {
        return Err(std::io::Error::other(format!(
            "{} bytes, more than the {MAX_FILE} read",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    // The size may lie (a file growing meanwhile): never read more than the cap.
    file.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(std::io::Error::other("grew past the size read"));
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Whether `key` is a variable name (`[A-Za-z_][A-Za-z0-9_]*`).
pub fn valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Parses an env file; `lookup` resolves `$NAME` in unquoted and double-quoted values.
pub fn parse(data: &str, lookup: impl Fn(&str) -> Option<String>) -> Vars {
    let mut vars = Vars::new();
    let mut rest = data;
    while !rest.is_empty() {
        let (entry, next) = parse_entry(rest, &lookup);
        rest = next;
        let Some((key, value)) = entry else { continue };
        if !valid_key(&key) || PROTECTED.contains(&key.as_str()) {
            tracing::debug!(
                key,
                "env file: skipping a key that is no variable name or protected"
            );
            continue;
        }
        if value.contains('\0') || key.len() + 1 + value.len() > MAX_ENTRY {
            tracing::debug!(key, "env file: skipping a value with NUL or too long");
            continue;
        }
        vars.insert(key, value);
    }
    vars
}

/// Splits the first physical line off `s`: (line without `\n`, rest after it).
fn split_line(s: &str) -> (&str, &str) {
    match s.find('\n') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

/// One entry from the start of `s`: the entry (if well-formed) and the rest.
fn parse_entry<'a>(
    s: &'a str,
    lookup: &impl Fn(&str) -> Option<String>,
) -> (Option<(String, String)>, &'a str) {
    let (line, after_line) = split_line(s);
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return (None, after_line);
    }
    let Some(eq) = line.find('=') else {
        return (None, after_line);
    };
    let key = line[..eq].trim();
    if key.is_empty() {
        return (None, after_line);
    }
    let key = key.to_string();
    // The value part runs to the end of `s`: a quoted value may span lines.
    let value_part = &s[eq + 1..];
    let lead = value_part
        .find(|c: char| !matches!(c, ' ' | '\t' | '\r' | '\x0b' | '\x0c'))
        .unwrap_or(value_part.len());
    let value_start = &value_part[lead..];
    match value_start.chars().next() {
        Some('\'') => {
            let content = &value_start[1..];
            let Some(close) = content.find('\'') else {
                return (None, after_line);
            };
            finish_quoted(key, content[..close].to_string(), &content[close + 1..])
                .unwrap_or((None, after_line))
        }
        Some('"') => {
            let content = &value_start[1..];
            let bytes = content.as_bytes();
            let mut i = 0;
            let mut close = None;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' if i + 1 < bytes.len() => i += 2,
                    b'"' => {
                        close = Some(i);
                        break;
                    }
                    _ => i += 1,
                }
            }
            let Some(close) = close else {
                return (None, after_line);
            };
            let value = expand(&decode_double_quoted(&content[..close]), lookup);
            finish_quoted(key, value, &content[close + 1..]).unwrap_or((None, after_line))
        }
        _ => {
            let (value, _) = split_line(value_part);
            (Some((key, expand(value.trim(), lookup))), after_line)
        }
    }
}

/// After a closing quote only blanks may follow on its line: the entry and the rest
/// after that line, or `None` (the caller skips the entry's first line).
fn finish_quoted(
    key: String,
    value: String,
    after_quote: &str,
) -> Option<(Option<(String, String)>, &str)> {
    let (tail, rest) = split_line(after_quote);
    tail.trim().is_empty().then_some((Some((key, value)), rest))
}

/// Decodes `\n \r \t \\ \"`; any other backslash is kept as is.
fn decode_double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let decoded = match chars.peek() {
                Some('n') => Some('\n'),
                Some('r') => Some('\r'),
                Some('t') => Some('\t'),
                Some('\\') => Some('\\'),
                Some('"') => Some('"'),
                _ => None,
            };
            if let Some(d) = decoded {
                out.push(d);
                chars.next();
                continue;
            }
        }
        out.push(c);
    }
    out
}

fn special_var(c: u8) -> bool {
    matches!(
        c,
        b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
    )
}

/// `$NAME`, `${NAME}` and the one-character special names expanded as Go's
/// `os.Expand` does (what upstream uses): an unknown name is empty, `$` before
/// anything else (e.g. `$(`) stays, a bad `${` is dropped.
pub fn expand(s: &str, lookup: &impl Fn(&str) -> Option<String>) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'$' || i + 1 >= b.len() {
            i += 1;
            continue;
        }
        out.push_str(&s[copied..i]);
        let rest = &s[i + 1..];
        let rb = rest.as_bytes();
        let (name, width): (&str, usize) = if rb[0] == b'{' {
            if rb.len() > 2 && special_var(rb[1]) && rb[2] == b'}' {
                (&rest[1..2], 3)
            } else {
                match rest[1..].find('}') {
                    Some(0) => ("", 2),
                    Some(end) => (&rest[1..=end], end + 2),
                    None => ("", 1),
                }
            }
        } else if special_var(rb[0]) {
            (&rest[..1], 1)
        } else {
            let n = rb
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
            (&rest[..n], n)
        };
        if name.is_empty() && width == 0 {
            out.push('$');
        } else if !name.is_empty() {
            out.push_str(&lookup(name).unwrap_or_default());
        }
        i += 1 + width;
        copied = i;
    }
    out.push_str(&s[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "BASE" => Some("/opt/base".into()),
            "HOME" => Some("/root".into()),
            _ => None,
        }
    }

    #[test]
    fn plain_entries_are_trimmed_and_expanded() {
        let vars = parse(
            "# comment\nFOO=bar\nP=$BASE/bin\nMALFORMED\nEMPTY=\n  SP =  padded  \nHASH=a#b\n",
            env,
        );
        assert_eq!(vars.get("FOO").map(String::as_str), Some("bar"));
        assert_eq!(vars.get("P").map(String::as_str), Some("/opt/base/bin"));
        assert_eq!(vars.get("EMPTY").map(String::as_str), Some(""));
        assert_eq!(vars.get("SP").map(String::as_str), Some("padded"));
        assert_eq!(vars.get("HASH").map(String::as_str), Some("a#b"));
        assert_eq!(vars.len(), 5);
    }

    #[test]
    fn single_quotes_are_literal_and_may_span_lines() {
        let vars = parse(
            "MULTI='line1\nline2  '\nDOLLAR='$HOME ${HOME} $(id)'\nE=''\nBS='a\\nb'\nSQ='it''s'\nNEXT=ok",
            env,
        );
        assert_eq!(vars["MULTI"], "line1\nline2  ");
        assert_eq!(vars["DOLLAR"], "$HOME ${HOME} $(id)");
        assert_eq!(vars["E"], "");
        assert_eq!(vars["BS"], "a\\nb");
        assert!(!vars.contains_key("SQ"));
        assert_eq!(vars["NEXT"], "ok");
    }

    #[test]
    fn double_quotes_decode_escapes_and_expand() {
        let vars = parse(
            "P=\"$BASE/bin\"\nM=\"l1\\nl2\"\nQ=\"a \\\"b\\\" c\"\nB=\"a\\\\b\"\nS=\"first\nsecond\"\nK=\"x\\qy\"",
            env,
        );
        assert_eq!(vars["P"], "/opt/base/bin");
        assert_eq!(vars["M"], "l1\nl2");
        assert_eq!(vars["Q"], "a \"b\" c");
        assert_eq!(vars["B"], "a\\b");
        assert_eq!(vars["S"], "first\nsecond");
        assert_eq!(vars["K"], "x\\qy");
    }

    #[test]
    fn expansion_follows_go_os_expand() {
        let e = |s: &str| expand(s, &env);
        assert_eq!(e("$HOME/x"), "/root/x");
        assert_eq!(e("${HOME}y"), "/rooty");
        assert_eq!(e("$UNSET."), ".");
        assert_eq!(e("$(id) `id`"), "$(id) `id`");
        assert_eq!(e("cost $"), "cost $");
        assert_eq!(e("a${}b"), "ab");
        assert_eq!(e("a${b"), "ab");
        assert_eq!(e("$$ $1"), " ");
        assert_eq!(e("é$HOMEé"), "é/rooté");
        assert_eq!(e("é${HOME}é"), "é/rooté");
    }

    #[test]
    fn malformed_entries_are_skipped_not_fatal() {
        let vars = parse(
            "UNTERM_S='no close\nUNTERM_D=\"no close\nTRAILING='v' junk\nAFTER=ok1\n=BARE\n",
            env,
        );
        assert_eq!(vars.len(), 1, "{vars:?}");
        assert_eq!(vars["AFTER"], "ok1");
    }

    #[test]
    fn crlf_lines_parse() {
        let vars = parse("FOO=bar\r\nSP='  kept  '\r\nX='$HOME'\r\n", env);
        assert_eq!(vars["FOO"], "bar");
        assert_eq!(vars["SP"], "  kept  ");
        assert_eq!(vars["X"], "$HOME");
    }

    #[test]
    fn keys_the_kernel_or_agent_refuses_are_skipped() {
        let long = "x".repeat(MAX_ENTRY);
        let text = format!(
            "1BAD=x\nA-B=x\nNUL='a\0b'\nEXECD_ENVS=/elsewhere\nOPENSANDBOX_ID=spoof\nLONG={long}\nOK=1\n"
        );
        let vars = parse(&text, env);
        assert_eq!(vars.keys().collect::<Vec<_>>(), ["OK"]);
    }

    /// The official SDK's writer: single quotes unless the value has one, then double
    /// quotes with `\\ \" \n \r \t` escaped. Every value without `$` round-trips.
    fn official_entry(key: &str, value: &str) -> String {
        if !value.contains('\'') {
            return format!("{key}='{value}'");
        }
        let escaped = value
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t");
        format!("{key}=\"{escaped}\"")
    }

    #[test]
    fn official_writer_round_trips() {
        let values = [
            "line1\nline2\nline3",
            "  leading and trailing  ",
            "$HOME ${HOME} $(rm -rf /) literal",
            "back\\slash and \"quotes\"",
            "it's got 'single' and \"double\" quotes",
            "tab\tseparated\r\n",
            "",
            "# not a comment",
            "ünïcødé",
        ];
        let mut text = String::new();
        for (i, v) in values.iter().enumerate() {
            text.push_str(&official_entry(&format!("K{i}"), v));
            text.push('\n');
        }
        let vars = parse(&text, env);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(vars[&format!("K{i}")], *v, "K{i}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet = b"AB_=\"'\\$#{}\n\r\t x\0\xc3";
        for len in 0..400 {
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                bytes.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            let text = String::from_utf8_lossy(&bytes);
            for (k, v) in parse(&text, env) {
                assert!(valid_key(&k) && !v.contains('\0'));
            }
        }
    }

    #[test]
    fn reading_is_bounded_and_refuses_odd_files() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert!(read_bounded(&missing).unwrap().is_none());

        let ok = dir.path().join("ok");
        std::fs::write(&ok, "A=1\n").unwrap();
        assert_eq!(read_bounded(&ok).unwrap().as_deref(), Some("A=1\n"));

        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'#'; MAX_FILE as usize + 1]).unwrap();
        assert!(read_bounded(&big).is_err());

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&ok, &link).unwrap();
        assert!(read_bounded(&link).is_err(), "a symlink is not followed");

        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(
            read_bounded(&fifo).is_err(),
            "a FIFO neither blocks nor is read"
        );

        assert!(read_bounded(dir.path()).is_err(), "a directory");
        assert!(read_bounded(Path::new("/dev/zero")).is_err(), "a device");

        let binary = dir.path().join("binary");
        std::fs::write(&binary, b"A=\xff\xfe\nB=2\n").unwrap();
        let vars = parse(&read_bounded(&binary).unwrap().unwrap(), env);
        assert_eq!(vars["B"], "2");
    }

    #[test]
    fn path_is_configured_or_below_the_root() {
        let (root, work) = (Path::new("/srv/sb"), Path::new("/srv/sb/workspace"));
        assert_eq!(
            choose_path(None, root, work),
            Path::new("/srv/sb/tmp/.opensandbox/envs")
        );
        assert_eq!(choose_path(Some(" "), root, work), root.join(DEFAULT_PATH));
        assert_eq!(
            choose_path(Some("/opt/x/.env"), root, work),
            Path::new("/opt/x/.env")
        );
        assert_eq!(
            choose_path(Some("rel.env"), root, work),
            work.join("rel.env")
        );
    }
}
