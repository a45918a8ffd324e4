//! Snapshots: copies of a sandbox's writable directories (home, /tmp, /workspace)
//! under `DATA_DIR/snapshots/{id}`, restored into new sandboxes, plus the image the
//! sandbox ran (`source.json`, written by the server, never by the sandbox), so a
//! restore runs on the same image under an OCI runtime.
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
use super::runtime::{Isolation, WRITABLE_DIRS};
use super::Control;

/// Deepest directory nesting a snapshot copies; deeper trees fail the snapshot.
const MAX_DEPTH: usize = 256;

/// The file in a snapshot's directory naming the image its sandbox ran. Not one of
/// `WRITABLE_DIRS`, so nothing a sandbox writes can land on it.
const SOURCE_FILE: &str = "source.json";
/// Larger `source.json` files are not ours: refused rather than read.
const SOURCE_MAX_BYTES: u64 = 64 * 1024;

/// What a snapshot remembers of its sandbox besides the files.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Source {
    /// The sandbox's image URI (its own, or the one its snapshot recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    image: Option<String>,
}

/// Writes `source.json` into `dir` (atomically: a temporary file renamed over it).
pub(super) fn write_source(dir: &Path, image: Option<&str>) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let body = serde_json::to_vec(&Source {
        image: image.map(str::to_string),
    })?;
    let tmp = dir.join(format!(".{SOURCE_FILE}.tmp"));
    std::fs::write(&tmp, body).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(SOURCE_FILE))
        .with_context(|| format!("writing {}", dir.join(SOURCE_FILE).display()))?;
    Ok(())
}

/// The image a snapshot's sandbox ran, if the snapshot recorded one (snapshots taken
/// before images were recorded have no `source.json`).
pub fn recorded_image(snapshot_dir: &Path) -> Result<Option<String>> {
    use std::io::Read;
    let path = snapshot_dir.join(SOURCE_FILE);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
    };
    let mut body = Vec::new();
    file.take(SOURCE_MAX_BYTES + 1)
        .read_to_end(&mut body)
        .with_context(|| format!("reading {}", path.display()))?;
    if body.len() as u64 > SOURCE_MAX_BYTES {
        anyhow::bail!("{} is larger than {SOURCE_MAX_BYTES} bytes", path.display());
    }
    let source: Source =
        serde_json::from_slice(&body).with_context(|| format!("parsing {}", path.display()))?;
    Ok(source.image)
}

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
    copy_tree_with(from, to, Copy::default())
}

/// How [`copy_tree_with`] treats owners and overlayfs markers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Copy {
    /// Owners of what is copied (only when the server is root: nobody else may chown).
    pub owners: Owners,
    /// The tree is an overlayfs upper directory: whiteouts (0/0 character devices) and
    /// opaque directories (`trusted.overlay.opaque`) are carried over, not skipped.
    pub overlay: bool,
}

/// Which ids the copies get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Owners {
    /// Whoever runs the copy (the server): what snapshots got before owners were kept.
    #[default]
    Copier,
    /// The sandbox's own ids (0..65536: a sandbox's host range shifted down), as a
    /// snapshot stores them whatever runtime took it. Other host ids become 0.
    Inside,
    /// The ids as they are (a snapshot restored into `fs/`, shifted later by the
    /// OCI runtime like any other sandbox's files).
    Same,
    /// Inside ids shifted into the sandboxes' host range (a restored overlay layer,
    /// which nothing shifts afterwards).
    Host,
}

impl Owners {
    fn map(self, id: u32) -> Option<u32> {
        use super::oci::{ID_BASE, ID_RANGE};
        match self {
            Owners::Copier => None,
            Owners::Same => Some(id),
            Owners::Inside if (ID_BASE..ID_BASE + ID_RANGE).contains(&id) => Some(id - ID_BASE),
            Owners::Inside if id < ID_RANGE => Some(id),
            Owners::Inside => Some(0),
            Owners::Host if id < ID_RANGE => Some(id + ID_BASE),
            Owners::Host => Some(ID_BASE),
        }
    }

    /// Gives `path` (not following a symlink) the mapped owner of `st`.
    fn apply(self, path: &Path, st: &libc::stat) -> Result<()> {
        if !nix::unistd::geteuid().is_root() {
            return Ok(());
        }
        let (Some(uid), Some(gid)) = (self.map(st.st_uid), self.map(st.st_gid)) else {
            return Ok(());
        };
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))
            .with_context(|| format!("changing the owner of {}", path.display()))
    }
}

/// The overlayfs xattr marking a directory of an upper layer opaque.
const OVERLAY_OPAQUE: &str = "trusted.overlay.opaque";

/// [`copy_tree`] with a choice of owners and overlayfs markers.
pub fn copy_tree_with(from: &Path, to: &Path, how: Copy) -> Result<()> {
    let src = open_dir_at(None, from.as_os_str())
        .with_context(|| format!("opening {}", from.display()))?;
    copy_dir(&src, from, to, 0, how)
}

fn open_dir_at(dir: Option<&OwnedFd>, name: &std::ffi::OsStr) -> nix::Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::openat(dir.map(|d| d.as_raw_fd()), name, flags, Mode::empty())?;
    // SAFETY: `openat` just returned this fd, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn copy_dir(src: &OwnedFd, shown: &Path, to: &Path, depth: usize, how: Copy) -> Result<()> {
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
    how.owners.apply(to, &meta)?;
    if how.overlay {
        // Read through the open directory, set on our own new directory.
        let listing = std::fs::File::open(format!("/proc/self/fd/{}", src.as_raw_fd()))
            .with_context(|| format!("opening {}", shown.display()))?;
        use xattr::FileExt;
        if let Ok(Some(value)) = listing.get_xattr(OVERLAY_OPAQUE) {
            if value.len() <= 8 {
                xattr::set(to, OVERLAY_OPAQUE, &value)
                    .with_context(|| format!("marking {} opaque", to.display()))?;
            }
        }
    }
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
                copy_dir(&child, &src_shown, &dst, depth + 1, how)?;
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
                how.owners.apply(&dst, &st)?;
            }
            libc::S_IFREG if copy_file(src, &name, &src_shown, &dst)? => {
                how.owners.apply(&dst, &st)?;
            }
            libc::S_IFREG => {}
            // An overlay whiteout: the file is deleted from the image.
            libc::S_IFCHR if how.overlay && st.st_rdev == 0 => {
                let _ = std::fs::remove_file(&dst);
                nix::sys::stat::mknod(
                    &dst,
                    nix::sys::stat::SFlag::S_IFCHR,
                    Mode::from_bits_truncate(0o600),
                    0,
                )
                .with_context(|| format!("creating whiteout {}", dst.display()))?;
                how.owners.apply(&dst, &st)?;
            }
            // Sockets, FIFOs, devices: nothing a snapshot should carry.
            _ => {}
        }
    }
    Ok(())
}

/// Copies one regular file; false when it was skipped (gone, or no longer a file).
fn copy_file(dir: &OwnedFd, name: &std::ffi::OsStr, shown: &Path, dst: &Path) -> Result<bool> {
    let flags = OFlag::O_RDONLY
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_CLOEXEC
        | OFlag::O_NOCTTY;
    let fd = match nix::fcntl::openat(Some(dir.as_raw_fd()), name, flags, Mode::empty()) {
        Ok(fd) => fd,
        // Replaced by a symlink since the listing (O_NOFOLLOW) or gone: skip it.
        Err(Errno::ELOOP | Errno::ENOENT) => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("opening {}", shown.display())),
    };
    // SAFETY: `openat` just returned this fd, owned by nobody else.
    let mut input = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let meta = input
        .metadata()
        .with_context(|| format!("reading {}", shown.display()))?;
    if !meta.is_file() {
        // Swapped for a FIFO or a device since the listing.
        return Ok(false);
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
    Ok(true)
}

/// Fills a new sandbox's `fs` directory from a snapshot.
/// Owners are restored as the snapshot kept them (the sandbox's own ids; an OCI
/// runtime shifts them into the sandbox's host range before it starts).
pub fn restore(snapshot_dir: &Path, fs: &Path) -> Result<()> {
    let how = Copy {
        owners: Owners::Same,
        overlay: false,
    };
    for (name, _) in WRITABLE_DIRS {
        let src = snapshot_dir.join(name);
        if src.is_dir() {
            copy_tree_with(&src, &fs.join(name), how)?;
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
        let dir = self.snapshot_dir(&snapshot.id);
        let control = Arc::clone(self);
        let mut finished = snapshot.clone();
        let image = record.image.map(|i| i.uri);
        let sandbox_id = sandbox_id.to_string();
        tokio::spawn(async move {
            let copy = match write_source(&dir, image.as_deref()) {
                Ok(()) => control.copy_sandbox_files(&sandbox_id, &dir).await,
                Err(e) => Err(e),
            };
            match copy {
                Ok(()) => finished.set_state(SnapshotState::Ready, "READY", None),
                Err(err) => finished.set_state(
                    SnapshotState::Failed,
                    "COPY_FAILED",
                    Some(format!("{err:#}")),
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

    /// Copies what sandbox `sandbox_id` wrote (its writable directories and, under an
    /// OCI runtime on overlayfs, the changes to its image) into `dir` (a snapshot's or
    /// a template's), never following a link the sandbox planted.
    pub async fn copy_sandbox_files(&self, sandbox_id: &str, dir: &Path) -> Result<()> {
        let paths = self.runtime.paths(sandbox_id);
        let upper = match &self.runtime.isolation {
            Isolation::Oci(oci) => oci.upper_dir(&paths),
            _ => None,
        };
        let fs = paths.fs;
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let files = Copy {
                owners: Owners::Inside,
                overlay: false,
            };
            for (name, _) in WRITABLE_DIRS {
                copy_tree_with(&fs.join(name), &dir.join(name), files)?;
            }
            if let Some(upper) = upper {
                let layer = Copy {
                    owners: Owners::Inside,
                    overlay: true,
                };
                copy_tree_with(&upper, &dir.join(super::oci::SNAPSHOT_UPPER), layer)?;
            }
            anyhow::Ok(())
        })
        .await
        .context("the copy task failed")?
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

    /// An overlay upper layer as a sandbox leaves it: whiteouts and opaque directories
    /// are carried, owners mapped down to the sandbox's ids and back up, and nothing
    /// else a sandbox could plant (FIFOs, setuid bits, links to host files) becomes
    /// more than it was.
    #[test]
    fn overlay_layers_keep_whiteouts_opaque_dirs_and_owners() -> Result<()> {
        use super::super::oci::ID_BASE;
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: needs root (whiteouts are device nodes, owners need chown)");
            return Ok(());
        }
        let upper = tempfile::tempdir()?;
        let u = upper.path();
        std::fs::create_dir(u.join("opaque"))?;
        if xattr::set(u.join("opaque"), OVERLAY_OPAQUE, b"y").is_err() {
            eprintln!("SKIPPED: this filesystem takes no trusted.* xattrs");
            return Ok(());
        }
        std::fs::write(u.join("opaque/f"), b"x")?;
        nix::sys::stat::mknod(
            &u.join("gone"),
            nix::sys::stat::SFlag::S_IFCHR,
            Mode::empty(),
            0,
        )?;
        nix::unistd::mkfifo(&u.join("fifo"), Mode::from_bits_truncate(0o600))?;
        std::fs::write(u.join("suid"), b"#!/bin/sh")?;
        std::fs::set_permissions(u.join("suid"), std::fs::Permissions::from_mode(0o4755))?;
        std::os::unix::fs::lchown(u.join("suid"), Some(ID_BASE), Some(ID_BASE))?;
        std::os::unix::fs::lchown(
            u.join("opaque/f"),
            Some(ID_BASE + 1000),
            Some(ID_BASE + 1000),
        )?;
        std::os::unix::fs::symlink("/etc/shadow", u.join("shadow"))?;

        let saved = tempfile::tempdir()?;
        let inside = Copy {
            owners: Owners::Inside,
            overlay: true,
        };
        copy_tree_with(u, &saved.path().join("layer"), inside)?;
        let s = saved.path().join("layer");
        assert_eq!(std::fs::metadata(s.join("opaque/f"))?.uid(), 1000);
        assert_eq!(std::fs::metadata(s.join("suid"))?.mode() & 0o7777, 0o755);
        assert!(!s.join("fifo").exists());
        assert_eq!(
            std::fs::read_link(s.join("shadow"))?,
            Path::new("/etc/shadow")
        );

        let restored = tempfile::tempdir()?;
        let host = Copy {
            owners: Owners::Host,
            overlay: true,
        };
        copy_tree_with(&s, &restored.path().join("upper"), host)?;
        let r = restored.path().join("upper");
        let gone = std::fs::symlink_metadata(r.join("gone"))?;
        assert!(gone.file_type().is_char_device() && gone.rdev() == 0);
        assert_eq!(
            xattr::get(r.join("opaque"), OVERLAY_OPAQUE)?,
            Some(b"y".to_vec())
        );
        assert_eq!(std::fs::metadata(r.join("opaque/f"))?.uid(), ID_BASE + 1000);
        assert_eq!(std::fs::metadata(r.join("suid"))?.uid(), ID_BASE);
        assert_eq!(std::fs::symlink_metadata(r.join("shadow"))?.uid(), ID_BASE);
        Ok(())
    }

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
