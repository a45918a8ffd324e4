//! Snapshots: copies of a sandbox's writable directories (home, /tmp, /workspace)
//! under `DATA_DIR/snapshots/{id}`, restored into new sandboxes.
//!
//! The copy runs while the sandbox keeps running, so a file being written at that
//! moment may be caught half-way; pause the sandbox first for an exact copy.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use chrono::Utc;
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;

use super::error::{ApiError, ApiResult};
use super::models::{SandboxState, Snapshot, SnapshotState, SnapshotStatus};
use super::runtime::WRITABLE_DIRS;
use super::Control;

/// Deepest directory nesting a snapshot copies; deeper trees fail the snapshot.
const MAX_DEPTH: usize = 256;

/// Copies `from` into `to` recursively: directories, regular files (with their
/// permissions, minus setuid/setgid) and symlinks (as symlinks). Sockets, FIFOs and
/// devices are skipped.
///
/// `from` is written by a running sandbox, so nothing in it is trusted: the walk holds
/// each directory open and reaches every entry relative to it (`openat` with
/// `O_NOFOLLOW`, `fstatat` without following), so swapping a directory or a file for
/// a symlink mid-copy makes that entry fail or be copied as the link it now is; the
/// copy never reads a host file outside `from`.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    let src = open_dir_at(None, from.as_os_str())
        .with_context(|| format!("opening {}", from.display()))?;
    copy_dir(&src, from, to, 0)
}

fn open_dir_at(dir: Option<&OwnedFd>, name: &std::ffi::OsStr) -> nix::Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(dir.map(|d| d.as_raw_fd()), name, flags, Mode::empty())?;
    // SAFETY: `openat` just returned this fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn copy_dir(src: &OwnedFd, shown: &Path, to: &Path, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        anyhow::bail!(
            "{} is nested more than {MAX_DEPTH} directories deep",
            shown.display()
        );
    }
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let meta = nix::sys::stat::fstat(src.as_raw_fd())
        .with_context(|| format!("reading {}", shown.display()))?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(meta.st_mode & 0o1777))
        .with_context(|| format!("setting permissions of {}", to.display()))?;
    // The open directory itself, not a path that could be redirected meanwhile.
    let listing = format!("/proc/self/fd/{}", src.as_raw_fd());
    for entry in
        std::fs::read_dir(&listing).with_context(|| format!("listing {}", shown.display()))?
    {
        let entry = entry.with_context(|| format!("listing {}", shown.display()))?;
        let name = entry.file_name();
        let src_shown = shown.join(&name);
        let dst = to.join(&name);
        let st = match nix::sys::stat::fstatat(
            Some(src.as_raw_fd()),
            name.as_os_str(),
            AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => st,
            // Removed since the listing: nothing to copy.
            Err(Errno::ENOENT) => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", src_shown.display())),
        };
        match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => {
                let child = match open_dir_at(Some(src), &name) {
                    Ok(child) => child,
                    // Swapped for a symlink or a file, or removed, since the listing:
                    // changing under the copy, like a file being written; skipped.
                    Err(Errno::ELOOP | Errno::ENOTDIR | Errno::ENOENT) => continue,
                    Err(e) => {
                        return Err(e).with_context(|| format!("opening {}", src_shown.display()))
                    }
                };
                copy_dir(&child, &src_shown, &dst, depth + 1)?;
            }
            libc::S_IFLNK => {
                let target = match nix::fcntl::readlinkat(Some(src.as_raw_fd()), name.as_os_str()) {
                    Ok(target) => target,
                    // No longer a link (or gone): skipped, as above.
                    Err(Errno::EINVAL | Errno::ENOENT) => continue,
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("reading link {}", src_shown.display()))
                    }
                };
                let _ = std::fs::remove_file(&dst);
                std::os::unix::fs::symlink(&target, &dst)
                    .with_context(|| format!("creating link {}", dst.display()))?;
            }
            libc::S_IFREG => copy_file(src, &name, &src_shown, &dst)?,
            // Sockets, FIFOs, devices: nothing a snapshot should carry.
            _ => {}
        }
    }
    Ok(())
}

fn copy_file(dir: &OwnedFd, name: &std::ffi::OsStr, shown: &Path, dst: &Path) -> Result<()> {
    let flags = OFlag::O_RDONLY
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_CLOEXEC
        | OFlag::O_NOCTTY;
    let fd = match nix::fcntl::openat(Some(dir.as_raw_fd()), name, flags, Mode::empty()) {
        Ok(fd) => fd,
        // Replaced by a symlink since the listing (O_NOFOLLOW) or gone: skip it.
        Err(Errno::ELOOP | Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("opening {}", shown.display())),
    };
    // SAFETY: `openat` just returned this fd, owned by nobody else.
    let mut input = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let meta = input
        .metadata()
        .with_context(|| format!("reading {}", shown.display()))?;
    if !meta.is_file() {
        // Swapped for a FIFO or a device since the listing.
        return Ok(());
    }
    let _ = std::fs::remove_file(dst);
    let mut output = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(meta.permissions().mode() & 0o1777)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dst)
        .with_context(|| format!("creating {}", dst.display()))?;
    std::io::copy(&mut input, &mut output)
        .with_context(|| format!("copying {} to {}", shown.display(), dst.display()))?;
    // The umask may have cut the mode at creation.
    std::fs::set_permissions(
        dst,
        std::fs::Permissions::from_mode(meta.permissions().mode() & 0o1777),
    )
    .with_context(|| format!("setting permissions of {}", dst.display()))?;
    Ok(())
}

/// Fills a new sandbox's `fs` directory from a snapshot.
pub fn restore(snapshot_dir: &Path, fs: &Path) -> Result<()> {
    for (name, _) in WRITABLE_DIRS {
        let src = snapshot_dir.join(name);
        if src.is_dir() {
            copy_tree(&src, &fs.join(name))?;
        }
    }
    Ok(())
}

impl Control {
    pub async fn create_snapshot(
        self: &Arc<Self>,
        sandbox_id: &str,
        name: Option<String>,
    ) -> ApiResult<Snapshot> {
        if name.as_deref() == Some("") {
            return Err(ApiError::invalid("snapshot `name` must not be empty"));
        }
        let lock = self.registry.lock_for(sandbox_id);
        let _guard = lock.lock().await;
        let record = self.sandbox(sandbox_id)?;
        if !matches!(
            record.status.state,
            SandboxState::Running | SandboxState::Paused
        ) {
            return Err(ApiError::conflict(
                "SNAPSHOT::INVALID_SOURCE_STATE",
                format!(
                    "sandbox {sandbox_id} is {}; snapshots need a Running or Paused sandbox",
                    record.status.state.as_str()
                ),
            ));
        }
        let now = Utc::now();
        let snapshot = Snapshot {
            id: uuid::Uuid::new_v4().to_string(),
            sandbox_id: sandbox_id.to_string(),
            name,
            status: SnapshotStatus {
                state: SnapshotState::Creating,
                reason: Some("CREATING".into()),
                message: None,
                last_transition_at: Some(now),
            },
            created_at: now,
        };
        self.store.put_snapshot(&snapshot)?;
        let fs = self.runtime.paths(sandbox_id).fs;
        let dir = self.snapshot_dir(&snapshot.id);
        let control = Arc::clone(self);
        let mut finished = snapshot.clone();
        tokio::spawn(async move {
            let copy = tokio::task::spawn_blocking(move || {
                for (name, _) in WRITABLE_DIRS {
                    copy_tree(&fs.join(name), &dir.join(name))?;
                }
                anyhow::Ok(())
            })
            .await;
            match copy {
                Ok(Ok(())) => finished.set_state(SnapshotState::Ready, "READY", None),
                Ok(Err(err)) => finished.set_state(
                    SnapshotState::Failed,
                    "COPY_FAILED",
                    Some(format!("{err:#}")),
                ),
                Err(err) => finished.set_state(
                    SnapshotState::Failed,
                    "COPY_FAILED",
                    Some(format!("snapshot task failed: {err}")),
                ),
            }
            // Deleted while copying: leave no record behind.
            if matches!(control.store.get_snapshot(&finished.id), Ok(Some(_))) {
                if let Err(err) = control.store.put_snapshot(&finished) {
                    tracing::error!(
                        snapshot = finished.id,
                        error = format!("{err:#}"),
                        "recording a snapshot"
                    );
                }
            }
        });
        Ok(snapshot)
    }

    pub fn snapshot(&self, id: &str) -> ApiResult<Snapshot> {
        self.store
            .get_snapshot(id)?
            .ok_or_else(|| ApiError::snapshot_not_found(id))
    }

    pub async fn delete_snapshot(&self, id: &str) -> ApiResult<()> {
        let snapshot = self.snapshot(id)?;
        if snapshot.status.state == SnapshotState::Creating {
            return Err(ApiError::conflict(
                "SNAPSHOT::CREATING",
                format!("snapshot {id} is still being created"),
            ));
        }
        self.store.delete_snapshot(id)?;
        let dir = self.snapshot_dir(id);
        // The record is gone already; a leftover directory only costs disk space.
        if let Ok(Err(err)) =
            tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir)).await
        {
            tracing::warn!(snapshot = id, error = %err, "removing a deleted snapshot's files");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_keeps_files_links_and_modes() -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let src = tempfile::tempdir()?;
        let dst = tempfile::tempdir()?;
        std::fs::create_dir_all(src.path().join("a/b"))?;
        std::fs::write(src.path().join("a/b/f.txt"), b"hello")?;
        std::fs::set_permissions(
            src.path().join("a/b/f.txt"),
            std::fs::Permissions::from_mode(0o750),
        )?;
        std::os::unix::fs::symlink("b/f.txt", src.path().join("a/link"))?;
        copy_tree(src.path(), &dst.path().join("copy"))?;
        let copied = dst.path().join("copy");
        assert_eq!(std::fs::read(copied.join("a/b/f.txt"))?, b"hello");
        assert_eq!(
            std::fs::metadata(copied.join("a/b/f.txt"))?
                .permissions()
                .mode()
                & 0o777,
            0o750
        );
        assert_eq!(
            std::fs::read_link(copied.join("a/link"))?,
            Path::new("b/f.txt")
        );
        Ok(())
    }

    #[test]
    fn copy_never_follows_links_out_and_drops_setuid_fifos() -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let host = tempfile::tempdir()?;
        let secret = host.path().join("secret");
        std::fs::write(&secret, b"host-only secret")?;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600))?;
        let src = tempfile::tempdir()?;
        std::os::unix::fs::symlink(&secret, src.path().join("file-link"))?;
        std::os::unix::fs::symlink(host.path(), src.path().join("dir-link"))?;
        nix::unistd::mkfifo(
            &src.path().join("fifo"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )?;
        std::fs::write(src.path().join("suid"), b"x")?;
        std::fs::set_permissions(
            src.path().join("suid"),
            std::fs::Permissions::from_mode(0o4755),
        )?;
        let dst = tempfile::tempdir()?;
        let copy = dst.path().join("copy");
        copy_tree(src.path(), &copy)?;
        assert_eq!(std::fs::read_link(copy.join("file-link"))?, secret);
        assert!(std::fs::symlink_metadata(copy.join("dir-link"))?
            .file_type()
            .is_symlink());
        assert!(!copy.join("fifo").exists());
        let mode = std::fs::metadata(copy.join("suid"))?.permissions().mode();
        assert_eq!(mode & 0o7777, 0o755);
        // Nothing of the host file's content is anywhere in the copy.
        for entry in std::fs::read_dir(&copy)? {
            let path = entry?.path();
            let meta = std::fs::symlink_metadata(&path)?;
            if meta.is_file() {
                assert!(!std::fs::read(&path)?.windows(6).any(|w| w == b"secret"));
            }
        }
        // A root that is itself a symlink is refused, not followed.
        let linked_root = dst.path().join("root-link");
        std::os::unix::fs::symlink(host.path(), &linked_root)?;
        assert!(copy_tree(&linked_root, &dst.path().join("copy2")).is_err());
        Ok(())
    }
}
