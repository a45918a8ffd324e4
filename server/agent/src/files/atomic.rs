//! Replacing a file atomically: the new content goes to a temporary file in the same
//! directory, which is renamed over the destination once complete. A reader sees the
//! old file or the new one, never a mix; an interrupted write (client gone, agent
//! killed, disk full) leaves the old file as it was.
//!
//! The temporary file takes the existing destination's mode and owner, so replacing a
//! file keeps them like an in-place write would (its inode, and thus hard links to
//! it, are not kept).

use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A temporary file next to its destination; removed on drop unless committed.
#[derive(Debug)]
pub struct PendingFile {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl PendingFile {
    /// Creates the temporary file for `dest` (whose parent must exist).
    pub fn create(dest: &Path) -> io::Result<(Self, std::fs::File)> {
        let parent = dest
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let existing = std::fs::metadata(dest).ok().filter(|m| m.is_file());
        let mut attempt = 0;
        loop {
            let tmp = parent.join(format!(
                ".{}.execd-{}.tmp",
                truncate(&name, 100),
                uuid::Uuid::new_v4().simple()
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&tmp)
            {
                Ok(file) => {
                    let pending = Self {
                        tmp,
                        dest: dest.to_path_buf(),
                        committed: false,
                    };
                    if let Some(meta) = &existing {
                        file.set_permissions(std::fs::Permissions::from_mode(
                            meta.mode() & 0o7777,
                        ))?;
                        // Only root may give a file away; keep going as anyone else.
                        let _ =
                            std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
                        // chown clears setuid/setgid: set the mode again.
                        file.set_permissions(std::fs::Permissions::from_mode(
                            meta.mode() & 0o7777,
                        ))?;
                    }
                    return Ok((pending, file));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The temporary file's path (for chmod/chown before the commit).
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Renames the temporary file over the destination.
    pub fn commit(mut self) -> io::Result<()> {
        std::fs::rename(&self.tmp, &self.dest)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn truncate(name: &str, max: usize) -> &str {
    if name.len() <= max {
        return name;
    }
    let mut end = max;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_pending_file_leaves_the_old_one() -> io::Result<()> {
        use std::io::Write;
        let dir = tempfile::tempdir()?;
        let dest = dir.path().join("f");
        std::fs::write(&dest, b"old")?;
        std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o640))?;
        {
            let (_pending, mut file) = PendingFile::create(&dest)?;
            file.write_all(b"partial")?;
        }
        assert_eq!(std::fs::read(&dest)?, b"old");
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
        let (pending, mut file) = PendingFile::create(&dest)?;
        file.write_all(b"new")?;
        pending.commit()?;
        assert_eq!(std::fs::read(&dest)?, b"new");
        assert_eq!(std::fs::metadata(&dest)?.mode() & 0o777, 0o640);
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
        Ok(())
    }
}
