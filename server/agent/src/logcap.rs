//! Size-capped log files: the sandbox log (the entrypoint's output) and each
//! background command's log.
//!
//! Writers never get the file itself: their stdout/stderr is a pipe, and a pump
//! thread copies the pipe into a [`CappedLog`]. When a write would take the file past
//! the cap, the oldest part is dropped: the file is cut to its newest `cap / 2`
//! bytes (from a line start where one is near), behind a marker line saying how many
//! bytes were dropped. So the file never exceeds the cap and its tail stays readable.
//! Readers holding a byte cursor into the old file are past the new end after a
//! cut; `GET /command/{id}/logs` then serves from the start (the marker first).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Default cap (the server's `--log-cap`).
pub const DEFAULT_CAP: u64 = 16 << 20;
/// Smallest cap accepted: room for the marker and some output.
pub const MIN_CAP: u64 = 64 << 10;

static CAP: AtomicU64 = AtomicU64::new(DEFAULT_CAP);

/// Sets the cap of every log this agent writes from now on (`--log-cap`).
pub fn set_cap(bytes: u64) {
    CAP.store(bytes.max(MIN_CAP), Ordering::Relaxed);
}

pub fn cap() -> u64 {
    CAP.load(Ordering::Relaxed)
}

/// How the marker line starts (a cut log starts with it).
pub const MARKER_PREFIX: &str = "[opensandbox: ";

/// The marker line that replaces `dropped` bytes of output.
pub fn marker(dropped: u64, cap: u64) -> String {
    format!("{MARKER_PREFIX}{dropped} bytes of earlier output dropped (log cap {cap} bytes)]\n")
}

/// A log file that never grows past its cap.
pub struct CappedLog {
    file: File,
    cap: u64,
    /// Bytes in the file as far as we know (other writers, e.g. the agent's own
    /// tracing on a shared sandbox log, are picked up by a fresh `fstat` before a cut).
    len: u64,
    dropped: u64,
    /// Length of our marker line at the start of the file (0 before the first cut):
    /// not output, so not counted as dropped when the next cut removes it.
    marker_len: u64,
}

impl CappedLog {
    pub fn new(file: File, cap: u64) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self {
            file,
            cap: cap.max(MIN_CAP),
            len,
            dropped: 0,
            marker_len: 0,
        })
    }

    /// Bytes dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn write(&mut self, mut buf: &[u8]) -> io::Result<()> {
        if self.len + buf.len() as u64 > self.cap {
            self.len = self.file.metadata()?.len();
        }
        if self.len + buf.len() as u64 > self.cap {
            let keep_target = self.cap / 2;
            if buf.len() as u64 >= keep_target {
                // The chunk alone fills the kept half: the file goes entirely.
                let skip = buf.len() - keep_target as usize;
                self.dropped += skip as u64;
                buf = &buf[skip..];
                self.cut(0)?;
            } else {
                let keep = keep_target - buf.len() as u64;
                self.cut(keep)?;
            }
        }
        self.file.write_all(buf)?;
        self.len += buf.len() as u64;
        Ok(())
    }

    /// Keeps the last `keep` bytes (moved to a line start when one is in their first
    /// quarter) behind the marker.
    fn cut(&mut self, keep: u64) -> io::Result<()> {
        let keep = keep.min(self.len);
        let mut tail = vec![0u8; keep as usize];
        if let Err(e) = self.file.read_exact_at(&mut tail, self.len - keep) {
            // A write-only file (opened so by whoever gave it to us): the tail cannot
            // be kept, only the cap.
            tracing::debug!(error = %e, "cannot read back the log; cutting it whole");
            tail.clear();
        }
        let mut from = 0;
        if let Some(nl) = tail.iter().take(tail.len() / 4).position(|b| *b == b'\n') {
            from = nl + 1;
        }
        let kept = (tail.len() - from) as u64;
        self.dropped += self.len.saturating_sub(self.marker_len + kept);
        let mark = marker(self.dropped, self.cap);
        self.file.set_len(0)?;
        // Files opened without O_APPEND keep their offset across set_len.
        self.file.seek(SeekFrom::Start(0))?;
        self.file.write_all(mark.as_bytes())?;
        self.file.write_all(&tail[from..])?;
        self.marker_len = mark.len() as u64;
        self.len = self.marker_len + kept;
        Ok(())
    }
}

/// Copies `reader` into `log` until EOF (every writer closed its end).
pub fn pump(mut reader: impl Read, log: &mut CappedLog) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        log.write(&buf[..n])?;
    }
}

/// A pipe whose write end goes to a child's stdout and stderr and whose read end a
/// thread pumps into `file` under the cap. Returns the two write ends (stdout,
/// stderr) and a receiver that completes when the pump has written everything (the
/// last process holding a write end has exited).
pub fn capped_pipe(
    file: File,
    name: String,
) -> io::Result<(OwnedFd, OwnedFd, tokio::sync::oneshot::Receiver<()>)> {
    // Close-on-exec: only the child's stdout/stderr (dup2'd) keep the write end.
    let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let reader = File::from(reader);
    let writer2 = writer.try_clone()?;
    let mut log = CappedLog::new(file, cap())?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(format!("log {name}"))
        .spawn(move || {
            if let Err(e) = pump(reader, &mut log) {
                tracing::warn!(log = name, error = %e, "writing the log failed; output dropped");
            }
            let _ = done_tx.send(());
        })?;
    Ok((writer, writer2, done_rx))
}

/// The part of a capped log a reader at byte `cursor` gets next: the file positioned
/// at the first byte to send, how many bytes to send (at most `max`), and the cursor
/// to hand back. A cursor past the end of a log that was cut at the cap (it starts
/// with the marker) is from before the cut: the log restarts at 0, marker first.
/// Otherwise a cursor past the end reads nothing and is echoed back (upstream's
/// contract). The range is fixed now, so it matches the body even if the log grows.
pub async fn read_window(
    path: &std::path::Path,
    cursor: u64,
    max: u64,
) -> io::Result<(tokio::fs::File, u64, u64)> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut file = tokio::fs::File::open(path).await?;
    let end = file.metadata().await?.len();
    let mut head = [0u8; 14];
    let cut = cursor > end
        && file.read_exact(&mut head).await.is_ok()
        && head.starts_with(MARKER_PREFIX.as_bytes());
    let start = if cut { 0 } else { cursor.min(end) };
    let len = (end - start).min(max);
    file.seek(SeekFrom::Start(start)).await?;
    let next = if cut || cursor <= end {
        start + len
    } else {
        cursor
    };
    Ok((file, len, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_200_mb_leaves_at_most_the_cap_and_the_tail_readable() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("x.log");
        let cap = 1 << 20;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut log = CappedLog::new(file, cap).unwrap_or_else(|e| panic!("{e}"));
        let mut written = 0u64;
        let mut i = 0u64;
        while written < 200_000_000 {
            let line = format!("line {i:012} {}\n", "x".repeat(80));
            log.write(line.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            written += line.len() as u64;
            i += 1;
        }
        let on_disk = std::fs::metadata(&path)
            .map(|m| m.len())
            .unwrap_or(u64::MAX);
        assert!(on_disk <= cap, "{on_disk} > {cap}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.starts_with("[opensandbox: "), "{}", &text[..100]);
        let last = text.lines().last().unwrap_or_default();
        assert!(last.starts_with(&format!("line {:012} ", i - 1)), "{last}");
        // Whole lines after the marker.
        assert!(text.lines().nth(1).unwrap_or_default().starts_with("line "));
        assert_eq!(
            log.dropped() + (on_disk - text.lines().next().unwrap_or("").len() as u64 - 1),
            written
        );
    }

    #[test]
    fn a_chunk_larger_than_the_cap_keeps_its_tail() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("y.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut log = CappedLog::new(file, MIN_CAP).unwrap_or_else(|e| panic!("{e}"));
        let mut big = vec![b'a'; 3 * MIN_CAP as usize];
        big.extend_from_slice(b"END\n");
        log.write(&big).unwrap_or_else(|e| panic!("{e}"));
        log.write(b"after\n").unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(text.len() as u64 <= MIN_CAP);
        assert!(
            text.ends_with("END\nafter\n"),
            "{}",
            &text[text.len() - 20..]
        );
    }
}
