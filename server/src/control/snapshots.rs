//! Snapshots: copies of a sandbox's writable directories (home, /tmp, /workspace)
//! under `DATA_DIR/snapshots/{id}`, restored into new sandboxes.
//!
//! The copy runs while the sandbox keeps running, so a file being written at that
//! moment may be caught half-way; pause the sandbox first for an exact copy.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use chrono::Utc;

use super::error::{ApiError, ApiResult};
use super::models::{SandboxState, Snapshot, SnapshotState, SnapshotStatus};
use super::runtime::WRITABLE_DIRS;
use super::Control;

/// Copies `from` into `to` recursively: directories, regular files (with their
/// permissions) and symlinks. Sockets, FIFOs and devices are skipped.
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let meta = std::fs::metadata(from).with_context(|| format!("reading {}", from.display()))?;
    std::fs::set_permissions(to, meta.permissions())
        .with_context(|| format!("setting permissions of {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry.with_context(|| format!("listing {}", from.display()))?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .with_context(|| format!("reading the type of {}", src.display()))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src)
                .with_context(|| format!("reading link {}", src.display()))?;
            let _ = std::fs::remove_file(&dst);
            std::os::unix::fs::symlink(&target, &dst)
                .with_context(|| format!("creating link {}", dst.display()))?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
    }
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
}
