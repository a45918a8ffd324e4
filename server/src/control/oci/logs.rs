//! The sandbox log's cap under an OCI runtime (`--log-cap`).
//!
//! `runc run` in the foreground gives the container pipes and copies them into its
//! own stdout, the log file: the agent inside never holds the file (it caps
//! background commands' logs itself), so the server caps it. A watcher thread checks
//! every sandbox's `sandbox.log` every [`INTERVAL`]; one over the cap loses its
//! oldest part in place with `fallocate(FALLOC_FL_COLLAPSE_RANGE)`, which is atomic
//! with respect to runc's appends (nothing written meanwhile is lost or torn), then
//! gets a one-block marker line inserted at its start (`FALLOC_FL_INSERT_RANGE`)
//! saying how many bytes were dropped so far. Where the filesystem cannot collapse
//! ranges (tmpfs, older kernels) the tail is copied and the file truncated instead
//! (output written during that copy can be lost).
//!
//! Between two checks the log can grow past the cap by what the sandbox writes in
//! [`INTERVAL`]; measured here: 200 MB written at full speed leave ≤ the cap once
//! the writer pauses (test `runc_logs_are_capped`).

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

pub const INTERVAL: Duration = Duration::from_millis(250);
const MARKER_PREFIX: &str = "[opensandbox: ";

/// Starts the watcher over `sandboxes/*/sandbox.log` (a detached thread: it lives
/// as long as the server). Once per process: `--runtime auto` may set up several
/// runtimes while it probes.
pub fn watch(sandboxes: PathBuf, cap: u64) {
    static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if STARTED.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("log cap".into())
        .spawn(move || loop {
            std::thread::sleep(INTERVAL);
            let Ok(entries) = std::fs::read_dir(&sandboxes) else {
                continue;
            };
            for entry in entries.flatten() {
                let log = entry.path().join("sandbox.log");
                match std::fs::symlink_metadata(&log) {
                    Ok(m) if m.is_file() && m.len() > cap => {}
                    _ => continue,
                }
                if let Err(e) = cap_file(&log, cap) {
                    tracing::warn!(log = %log.display(), error = %format!("{e:#}"), "cannot cap the sandbox log");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the sandbox log watcher: sandbox logs are not capped");
    }
}

/// The marker line, padded with spaces to exactly `block` bytes.
fn marker(dropped: u64, cap: u64, block: usize) -> Vec<u8> {
    let mut line =
        format!("{MARKER_PREFIX}{dropped} bytes of earlier output dropped (log cap {cap} bytes)]")
            .into_bytes();
    line.resize(block.saturating_sub(1).max(line.len()), b' ');
    line.push(b'\n');
    line
}

/// Bytes dropped by earlier cuts, from the marker at the start of the file.
fn previous_dropped(file: &File) -> u64 {
    let mut head = [0u8; 128];
    let n = file.read_at(&mut head, 0).unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.strip_prefix(MARKER_PREFIX)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Cuts `path` to about `cap / 2` bytes (its newest), behind a marker line.
pub fn cap_file(path: &Path, cap: u64) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() <= cap {
        return Ok(());
    }
    let block = u64::from(std::os::unix::fs::MetadataExt::blksize(&meta) as u32).clamp(512, 65536);
    let len = meta.len();
    let keep = cap / 2;
    let cut = (len - keep) / block * block;
    if cut == 0 {
        return Ok(());
    }
    let before = previous_dropped(&file);
    let had_marker = before > 0;
    let dropped = before + cut - if had_marker { block } else { 0 };
    let mark = marker(dropped, cap, block as usize);
    // SAFETY: plain syscalls on an fd we own.
    let collapsed = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_COLLAPSE_RANGE,
            0,
            cut as i64,
        ) == 0
            && libc::fallocate(
                file.as_raw_fd(),
                libc::FALLOC_FL_INSERT_RANGE,
                0,
                block as i64,
            ) == 0
    };
    if collapsed {
        file.write_all_at(&mark, 0)?;
        return Ok(());
    }
    tracing::debug!(error = %std::io::Error::last_os_error(), "no FALLOC_FL_COLLAPSE_RANGE: copying the log's tail");
    let mut tail = vec![0u8; keep as usize];
    let n = file.read_at(&mut tail, len - keep)?;
    tail.truncate(n);
    let mark = marker(before + len - keep, cap, 0);
    file.set_len(0)?;
    let mut file = file;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&mark)?;
    file.write_all(&tail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_over_the_cap_is_cut_in_place_with_a_marker() {
        // On the data dir's filesystem kind (the target dir sits on it here).
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
        let dir = tempfile::tempdir_in(&base)
            .or_else(|_| tempfile::tempdir())
            .unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sandbox.log");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        let cap = 1 << 20;
        let mut written = 0u64;
        let mut i = 0u64;
        while written < 20_000_000 {
            let line = format!("line {i:010} {}\n", "z".repeat(60));
            f.write_all(line.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
            written += line.len() as u64;
            i += 1;
            if i.is_multiple_of(50_000) {
                cap_file(&path, cap).unwrap_or_else(|e| panic!("{e:#}"));
            }
        }
        f.write_all(b"THE-END\n").unwrap_or_else(|e| panic!("{e}"));
        cap_file(&path, cap).unwrap_or_else(|e| panic!("{e:#}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.len() as u64 <= cap, "{}", text.len());
        assert!(text.starts_with(MARKER_PREFIX), "{}", &text[..80]);
        assert!(text.ends_with("THE-END\n"));
        let dropped: u64 = text[MARKER_PREFIX.len()..]
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let marker_len = text.lines().next().map_or(0, |l| l.len() + 1) as u64;
        // Every byte written is either still there or counted as dropped.
        assert_eq!(dropped + text.len() as u64 - marker_len, written + 8);
    }
}
