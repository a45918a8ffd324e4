//! The small file routes: stat, delete, chmod/chown, move, search, replace, and the
//! directory routes. Each runs its filesystem work on the blocking pool.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use axum::response::{IntoResponse, Response};
use axum::Json;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

use super::io_error;
use super::meta::{self, FileInfo, Names, PermissionSpec};
use super::scope::Fs;
use crate::error::ApiError;
use crate::extract::{ApiJson, QueryPairs};
use crate::paths::{self, Last};

const BODY_CODE: &str = "INVALID_REQUEST_BODY";

/// `GET /files/info?path=a&path=b` → `{requested path: FileInfo}`; no path → `{}`.
/// Symlinks are reported as themselves (lstat).
pub async fn info(fs: Fs, query: QueryPairs) -> Result<Json<BTreeMap<String, FileInfo>>, ApiError> {
    let requested = query.all("path");
    fs.run(move |cfg| {
        let mut names = Names::default();
        let mut out = BTreeMap::new();
        for user_path in requested {
            let r = paths::resolve(cfg, &user_path, Last::NoFollow)?;
            let info = meta::stat(&r.host, &r.sandbox, &mut names)?;
            out.insert(user_path, info);
        }
        Ok(Json(out))
    })
    .await
}

/// `DELETE /files?path=..` (repeatable): removes files and symlinks. A missing path is
/// not an error (the request is idempotent); a directory is (use `/directories`).
pub async fn delete_files(fs: Fs, query: QueryPairs) -> Result<Response, ApiError> {
    let requested = query.required_all("path")?;
    fs.run(move |cfg| {
        for user_path in requested {
            let r = paths::resolve(cfg, &user_path, Last::NoFollow)?;
            match std::fs::symlink_metadata(&r.host) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(&e, "stat", &r.sandbox)),
                Ok(m) if m.is_dir() => {
                    return Err(ApiError::bad_request(
                        "INVALID_PATH",
                        format!(
                            "{} is a directory; delete it with DELETE /directories",
                            r.sandbox.display()
                        ),
                    ))
                }
                Ok(_) => {}
            }
            match std::fs::remove_file(&r.host) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(io_error(&e, "delete", &r.sandbox))
                }
                _ => {}
            }
        }
        Ok(().into_response())
    })
    .await
}

/// `POST /files/permissions` `{path: {owner?, group?, mode}}`.
pub async fn set_permissions(
    fs: Fs,
    ApiJson(body): ApiJson<HashMap<String, PermissionSpec>>,
) -> Result<Response, ApiError> {
    fs.run(move |cfg| {
        // Validate everything first so a bad entry does not leave half the batch done.
        let mut work = Vec::with_capacity(body.len());
        for (user_path, spec) in body {
            meta::validate(&spec, BODY_CODE)?;
            work.push((paths::resolve(cfg, &user_path, Last::Follow)?, spec));
        }
        for (r, spec) in work {
            meta::apply(&r.host, &r.sandbox, &spec, BODY_CODE)?;
        }
        Ok(().into_response())
    })
    .await
}

#[derive(Debug, Deserialize)]
pub struct MoveItem {
    pub src: String,
    pub dest: String,
}

/// `POST /files/mv` `[{src, dest}]`: rename, creating the destination's parents; across
/// filesystems (e.g. `/tmp` → `/workspace`) regular files are copied then removed.
pub async fn move_files(
    fs: Fs,
    ApiJson(items): ApiJson<Vec<MoveItem>>,
) -> Result<Response, ApiError> {
    fs.run(move |cfg| {
        for item in items {
            let src = paths::resolve(cfg, &item.src, Last::NoFollow)?;
            let dest = paths::resolve(cfg, &item.dest, Last::NoFollow)?;
            let src_meta = std::fs::symlink_metadata(&src.host)
                .map_err(|e| io_error(&e, "move", &src.sandbox))?;
            if let Some(parent) = dest.host.parent() {
                std::fs::create_dir_all(parent).map_err(|e| {
                    io_error(
                        &e,
                        "create parent of",
                        dest.sandbox.parent().unwrap_or(&dest.sandbox),
                    )
                })?;
            }
            match std::fs::rename(&src.host, &dest.host) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EXDEV) && src_meta.is_file() => {
                    std::fs::copy(&src.host, &dest.host)
                        .map_err(|e| io_error(&e, "copy to", &dest.sandbox))?;
                    std::fs::remove_file(&src.host)
                        .map_err(|e| io_error(&e, "remove", &src.sandbox))?;
                }
                Err(e) => return Err(io_error(&e, "move", &src.sandbox)),
            }
        }
        Ok(().into_response())
    })
    .await
}

/// Compiles a search pattern. Patterns without `/` match the entry's name (`*.txt`),
/// patterns with `/` match its path relative to the search root (`src/**/*.rs`); `*`
/// never crosses `/`, `**` does.
fn compile_pattern(pattern: &str) -> Result<(GlobMatcher, bool), ApiError> {
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| {
            ApiError::bad_request(BODY_CODE, format!("invalid pattern {pattern:?}: {e}"))
        })?;
    Ok((glob.compile_matcher(), pattern.contains('/')))
}

/// `GET /files/search?path=&pattern=` → files (non-directories) below `path` whose name
/// (or relative path) matches the glob; symlinks are reported, not followed.
pub async fn search(fs: Fs, query: QueryPairs) -> Result<Json<Vec<FileInfo>>, ApiError> {
    let user_path = query.required("path")?.to_string();
    let pattern = match query.first("pattern") {
        Some(p) if !p.is_empty() => p.to_string(),
        _ => "**".to_string(),
    };
    let (matcher, by_path) = compile_pattern(&pattern)?;
    fs.run(move |cfg| {
        let dir = paths::resolve(cfg, &user_path, Last::Follow)?;
        let m = std::fs::metadata(&dir.host).map_err(|e| io_error(&e, "search", &dir.sandbox))?;
        if !m.is_dir() {
            return Err(ApiError::bad_request(
                "INVALID_PATH",
                format!("{} is not a directory", dir.sandbox.display()),
            ));
        }
        let mut names = Names::default();
        let mut out = Vec::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let host_dir = dir.host.join(&rel);
            let entries = match std::fs::read_dir(&host_dir) {
                Ok(e) => e,
                // Unreadable subdirectories are skipped, like `find` does with a warning.
                Err(_) if !rel.as_os_str().is_empty() => continue,
                Err(e) => return Err(io_error(&e, "search", &dir.sandbox)),
            };
            for entry in entries.flatten() {
                let Ok(meta) = entry.metadata() else { continue };
                let child_rel = rel.join(entry.file_name());
                if meta.is_dir() {
                    stack.push(child_rel);
                    continue;
                }
                let hit = if by_path {
                    matcher.is_match(&child_rel)
                } else {
                    matcher.is_match(Path::new(&entry.file_name()))
                };
                if hit {
                    let sandbox = dir.sandbox.join(&child_rel);
                    out.push(meta::info_from_metadata(&sandbox, &meta, &mut names));
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Json(out))
    })
    .await
}

#[derive(Debug, Deserialize)]
pub struct ReplaceItem {
    pub old: String,
    #[serde(default)]
    pub new: String,
}

/// Bytes read per step of a streamed replace.
const REPLACE_CHUNK: usize = 1 << 20;

/// Copies `input` to `output` with every non-overlapping occurrence of `old` (leftmost
/// first) replaced by `new`; returns the count. Memory stays at one chunk plus
/// `old.len()` whatever the input's size: a match cut by a chunk boundary is found
/// because the last `old.len() - 1` bytes wait for the next chunk.
pub fn replace_stream<R: std::io::Read, W: std::io::Write>(
    mut input: R,
    mut output: W,
    old: &[u8],
    new: &[u8],
) -> std::io::Result<usize> {
    let finder = memchr::memmem::Finder::new(old);
    let keep = old.len().saturating_sub(1);
    let mut buf: Vec<u8> = Vec::with_capacity(REPLACE_CHUNK + old.len());
    let mut chunk = vec![0u8; REPLACE_CHUNK];
    let mut count = 0;
    loop {
        let n = match input.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let eof = n == 0;
        buf.extend_from_slice(&chunk[..n]);
        // Matches starting before `safe_end` lie wholly in `buf`; later ones may not.
        let safe_end = if eof {
            buf.len()
        } else {
            buf.len().saturating_sub(keep)
        };
        let mut i = 0;
        while let Some(p) = finder.find(&buf[i..]) {
            if i + p >= safe_end {
                break;
            }
            output.write_all(&buf[i..i + p])?;
            output.write_all(new)?;
            count += 1;
            i += p + old.len();
        }
        if i < safe_end {
            output.write_all(&buf[i..safe_end])?;
            i = safe_end;
        }
        buf.drain(..i);
        if eof {
            break;
        }
    }
    output.flush()?;
    Ok(count)
}

/// Replaces in one file through a temporary file renamed over it (only when something
/// was replaced), so a failure half-way leaves the file as it was.
fn replace_in_file(host: &Path, sandbox: &Path, old: &[u8], new: &[u8]) -> Result<usize, ApiError> {
    let input = std::fs::File::open(host).map_err(|e| io_error(&e, "read", sandbox))?;
    if !input
        .metadata()
        .map_err(|e| io_error(&e, "read", sandbox))?
        .is_file()
    {
        return Err(ApiError::bad_request(
            "INVALID_PATH",
            format!("{} is not a regular file", sandbox.display()),
        ));
    }
    let (pending, output) =
        super::atomic::PendingFile::create(host).map_err(|e| io_error(&e, "write", sandbox))?;
    let mut writer = std::io::BufWriter::with_capacity(REPLACE_CHUNK, output);
    let count = replace_stream(
        std::io::BufReader::with_capacity(REPLACE_CHUNK, input),
        &mut writer,
        old,
        new,
    )
    .map_err(|e| io_error(&e, "write", sandbox))?;
    let output = writer
        .into_inner()
        .map_err(|e| io_error(e.error(), "write", sandbox))?;
    if count > 0 {
        output
            .sync_all()
            .map_err(|e| io_error(&e, "fsync", sandbox))?;
        pending
            .commit()
            .map_err(|e| io_error(&e, "rename into", sandbox))?;
    }
    Ok(count)
}

/// `POST /files/replace[?verbose=true]` `{path: {old, new}}`: replaces every occurrence
/// (mode and owner kept), streaming through a temporary file that is renamed over the
/// original (see [`replace_in_file`]). Verbose answers `{path: {replacedCount}}`.
pub async fn replace(
    fs: Fs,
    query: QueryPairs,
    ApiJson(body): ApiJson<HashMap<String, ReplaceItem>>,
) -> Result<Response, ApiError> {
    let verbose = query.flag("verbose");
    for (p, item) in &body {
        if item.old.is_empty() {
            return Err(ApiError::bad_request(
                BODY_CODE,
                format!("\"old\" must not be empty (path {p:?})"),
            ));
        }
    }
    fs.run(move |cfg| {
        let mut counts = BTreeMap::new();
        for (user_path, item) in body {
            let r = paths::resolve(cfg, &user_path, Last::Follow)?;
            let count = replace_in_file(
                &r.host,
                &r.sandbox,
                item.old.as_bytes(),
                item.new.as_bytes(),
            )?;
            counts.insert(user_path, serde_json::json!({ "replacedCount": count }));
        }
        if verbose {
            Ok(Json(counts).into_response())
        } else {
            Ok(().into_response())
        }
    })
    .await
}

/// `GET /directories/list?path=&depth=`: entries in lexical order, each directory's
/// descendants right after it, symlinks never descended into. `depth` defaults to 1;
/// 0 is treated as 1 (immediate children), negative is a 400.
pub async fn list_directory(fs: Fs, query: QueryPairs) -> Result<Json<Vec<FileInfo>>, ApiError> {
    let user_path = query.required("path")?.to_string();
    let depth = match query.int("depth")? {
        None => 1,
        Some(d) if d < 0 => {
            return Err(ApiError::bad_request(
                BODY_CODE,
                format!("depth must be >= 0, got {d}"),
            ))
        }
        Some(d) => d.max(1) as usize,
    };
    fs.run(move |cfg| {
        let dir = paths::resolve(cfg, &user_path, Last::NoFollow)?;
        let m =
            std::fs::symlink_metadata(&dir.host).map_err(|e| io_error(&e, "list", &dir.sandbox))?;
        if m.file_type().is_symlink() {
            return Err(ApiError::bad_request(
                "INVALID_PATH",
                format!(
                    "{} is a symbolic link; list the real directory",
                    dir.sandbox.display()
                ),
            ));
        }
        if !m.is_dir() {
            return Err(ApiError::bad_request(
                "INVALID_PATH",
                format!("{} is not a directory", dir.sandbox.display()),
            ));
        }
        let mut names = Names::default();
        let mut out = Vec::new();
        list_into(&dir.host, &dir.sandbox, 1, depth, &mut names, &mut out)?;
        Ok(Json(out))
    })
    .await
}

fn list_into(
    host: &Path,
    sandbox: &Path,
    level: usize,
    depth: usize,
    names: &mut Names,
    out: &mut Vec<FileInfo>,
) -> Result<(), ApiError> {
    let read = std::fs::read_dir(host).map_err(|e| io_error(&e, "list", sandbox))?;
    let mut entries: Vec<_> = read.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(meta) = entry.metadata() else { continue };
        let child_sandbox = sandbox.join(entry.file_name());
        out.push(meta::info_from_metadata(&child_sandbox, &meta, names));
        if meta.is_dir() && level < depth {
            // A subdirectory that vanished or is unreadable does not fail the listing.
            let _ = list_into(&entry.path(), &child_sandbox, level + 1, depth, names, out);
        }
    }
    Ok(())
}

/// `POST /directories` `{path: {owner?, group?, mode}}`: mkdir -p, then chmod/chown of
/// the named directory.
pub async fn make_directories(
    fs: Fs,
    ApiJson(body): ApiJson<HashMap<String, PermissionSpec>>,
) -> Result<Response, ApiError> {
    fs.run(move |cfg| {
        let mut work = Vec::with_capacity(body.len());
        for (user_path, spec) in body {
            meta::validate(&spec, BODY_CODE)?;
            work.push((paths::resolve(cfg, &user_path, Last::Follow)?, spec));
        }
        for (r, spec) in work {
            std::fs::create_dir_all(&r.host).map_err(|e| io_error(&e, "mkdir", &r.sandbox))?;
            meta::apply(&r.host, &r.sandbox, &spec, BODY_CODE)?;
        }
        Ok(().into_response())
    })
    .await
}

/// `DELETE /directories?path=..` (repeatable): rm -rf. Missing is not an error; the
/// sandbox root itself and non-directories are refused.
pub async fn delete_directories(fs: Fs, query: QueryPairs) -> Result<Response, ApiError> {
    let requested = query.required_all("path")?;
    fs.run(move |cfg| {
        for user_path in requested {
            let r = paths::resolve(cfg, &user_path, Last::NoFollow)?;
            if r.sandbox == Path::new("/") {
                return Err(ApiError::bad_request(
                    "INVALID_PATH",
                    "refusing to delete the sandbox root",
                ));
            }
            match std::fs::symlink_metadata(&r.host) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(&e, "stat", &r.sandbox)),
                Ok(m) if !m.is_dir() => {
                    return Err(ApiError::bad_request(
                        "INVALID_PATH",
                        format!("{} is not a directory", r.sandbox.display()),
                    ))
                }
                Ok(_) => {}
            }
            match std::fs::remove_dir_all(&r.host) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(io_error(&e, "delete", &r.sandbox))
                }
                _ => {}
            }
        }
        Ok(().into_response())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_counts_non_overlapping_occurrences() {
        fn replace_bytes(input: &[u8], old: &[u8], new: &[u8]) -> (Vec<u8>, usize) {
            let mut out = Vec::new();
            let n = replace_stream(input, &mut out, old, new).unwrap();
            (out, n)
        }
        let (out, n) = replace_bytes(b"aaa-aa", b"aa", b"b");
        assert_eq!(out, b"ba-b");
        assert_eq!(n, 2);
        let (out, n) = replace_bytes(b"xyz", b"q", b"r");
        assert_eq!(out, b"xyz");
        assert_eq!(n, 0);
    }

    /// A reader that hands out `step` bytes at a time, to put matches across reads.
    struct Trickle<'a>(&'a [u8], usize);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn streamed_replace_finds_matches_across_reads() {
        // Same result as a whole-buffer replace for every read size.
        let input: Vec<u8> = b"needle-xneedleneedl-eneedle!".repeat(50);
        let expected = {
            let text = String::from_utf8(input.clone()).unwrap();
            (
                text.replace("needle", "NEW"),
                text.matches("needle").count(),
            )
        };
        for step in 1..=13 {
            let mut out = Vec::new();
            let n = replace_stream(Trickle(&input, step), &mut out, b"needle", b"NEW").unwrap();
            assert_eq!(
                (String::from_utf8(out).unwrap(), n),
                expected,
                "step {step}"
            );
        }
        // Bigger than one chunk, with a match straddling the chunk boundary.
        let mut big = vec![b'.'; REPLACE_CHUNK - 3];
        big.extend_from_slice(b"needle");
        big.extend(vec![b'.'; 10]);
        let mut out = Vec::new();
        let n = replace_stream(&big[..], &mut out, b"needle", b"X").unwrap();
        assert_eq!(n, 1);
        assert_eq!(out.len(), big.len() - 5);
    }

    #[test]
    fn name_patterns_do_not_cross_directories_but_path_patterns_may() {
        let (m, by_path) = compile_pattern("*.txt").unwrap();
        assert!(!by_path);
        assert!(m.is_match("a.txt"));
        assert!(!m.is_match("a.rs"));
        let (m, by_path) = compile_pattern("src/**/*.rs").unwrap();
        assert!(by_path);
        assert!(m.is_match("src/a/b/c.rs"));
        assert!(!m.is_match("lib/c.rs"));
        assert!(compile_pattern("[").is_err());
    }
}
