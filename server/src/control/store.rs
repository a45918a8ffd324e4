//! Durable state: sandbox, snapshot and template records and credential vaults in
//! SQLite, so they survive a restart.
//!
//! Each record is stored whole as JSON next to the few columns that queries need. The
//! connection sits behind a mutex; every statement is a single-row write or a short
//! scan, far below a millisecond, so callers use it directly from async code.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension};

use super::models::{rfc3339, SandboxRecord, Snapshot};
use super::templates::TemplateRecord;
use super::vault::StoredVault;

pub struct Store {
    conn: Mutex<Connection>,
}

impl Store {
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating the directory of {}", path.display()))?;
        }
        let conn = Connection::open(path)
            .with_context(|| format!("opening the database {}", path.display()))?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL;
             PRAGMA synchronous=NORMAL;
             PRAGMA busy_timeout=5000;
             CREATE TABLE IF NOT EXISTS sandboxes (
                 id TEXT PRIMARY KEY,
                 state TEXT NOT NULL,
                 deleted INTEGER NOT NULL DEFAULT 0,
                 created_at TEXT NOT NULL,
                 record TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS snapshots (
                 id TEXT PRIMARY KEY,
                 sandbox_id TEXT NOT NULL,
                 state TEXT NOT NULL,
                 created_at TEXT NOT NULL,
                 record TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS warm_containers (
                 id TEXT PRIMARY KEY,
                 created_at TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS templates (
                 id TEXT PRIMARY KEY,
                 created_at TEXT NOT NULL,
                 record TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS credential_vaults (
                 sandbox_id TEXT PRIMARY KEY,
                 record TEXT NOT NULL
             );",
        )
        .with_context(|| format!("initialising the database {}", path.display()))?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half-written row (SQLite
        // statements are atomic), so a poisoned lock is still safe to use.
        self.conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn put_sandbox(&self, record: &SandboxRecord) -> Result<()> {
        let json = serde_json::to_string(record).context("encoding a sandbox record")?;
        self.conn()
            .execute(
                "INSERT INTO sandboxes (id, state, deleted, created_at, record)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(id) DO UPDATE SET state = ?2, deleted = ?3, record = ?5",
                params![
                    record.id,
                    record.status.state.as_str(),
                    record.deleted,
                    rfc3339(&record.created_at),
                    json
                ],
            )
            .with_context(|| format!("storing sandbox {}", record.id))?;
        Ok(())
    }

    pub fn get_sandbox(&self, id: &str) -> Result<Option<SandboxRecord>> {
        let json: Option<String> = self
            .conn()
            .query_row(
                "SELECT record FROM sandboxes WHERE id = ?1",
                params![id],
                |row| row.get(0),
            )
            .optional()
            .with_context(|| format!("reading sandbox {id}"))?;
        json.map(|json| {
            serde_json::from_str(&json).with_context(|| format!("decoding sandbox record {id}"))
        })
        .transpose()
    }

    /// Every sandbox, oldest first, including deleted ones.
    pub fn all_sandboxes(&self) -> Result<Vec<SandboxRecord>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id, record FROM sandboxes ORDER BY created_at, id")
            .context("listing sandboxes")?;
        let rows = stmt
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .context("listing sandboxes")?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json) = row.context("reading a sandbox row")?;
            out.push(
                serde_json::from_str(&json)
                    .with_context(|| format!("decoding sandbox record {id}"))?,
            );
        }
        Ok(out)
    }

    pub fn put_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        let json = serde_json::to_string(snapshot).context("encoding a snapshot record")?;
        self.conn()
            .execute(
                "INSERT INTO snapshots (id, sandbox_id, state, created_at, record)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(id) DO UPDATE SET state = ?3, record = ?5",
                params![
                    snapshot.id,
                    snapshot.sandbox_id,
                    snapshot.status.state.as_str(),
                    rfc3339(&snapshot.created_at),
                    json
                ],
            )
            .with_context(|| format!("storing snapshot {}", snapshot.id))?;
        Ok(())
    }

    pub fn get_snapshot(&self, id: &str) -> Result<Option<Snapshot>> {
        let json: Option<String> = self
            .conn()
            .query_row(
                "SELECT record FROM snapshots WHERE id = ?1",
                params![id],
                |row| row.get(0),
            )
            .optional()
            .with_context(|| format!("reading snapshot {id}"))?;
        json.map(|json| {
            serde_json::from_str(&json).with_context(|| format!("decoding snapshot record {id}"))
        })
        .transpose()
    }

    pub fn all_snapshots(&self) -> Result<Vec<Snapshot>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id, record FROM snapshots ORDER BY created_at, id")
            .context("listing snapshots")?;
        let rows = stmt
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .context("listing snapshots")?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json) = row.context("reading a snapshot row")?;
            out.push(
                serde_json::from_str(&json)
                    .with_context(|| format!("decoding snapshot record {id}"))?,
            );
        }
        Ok(out)
    }

    pub fn delete_snapshot(&self, id: &str) -> Result<()> {
        self.conn()
            .execute("DELETE FROM snapshots WHERE id = ?1", params![id])
            .with_context(|| format!("deleting snapshot {id}"))?;
        Ok(())
    }

    /// Records a warm container (started ahead of its create request) before its
    /// runtime starts, so a restart finds and removes it if no create took it.
    pub fn put_warm(&self, id: &str) -> Result<()> {
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO warm_containers (id, created_at) VALUES (?1, ?2)",
                params![id, rfc3339(&chrono::Utc::now())],
            )
            .with_context(|| format!("recording warm container {id}"))?;
        Ok(())
    }

    pub fn delete_warm(&self, id: &str) -> Result<()> {
        self.conn()
            .execute("DELETE FROM warm_containers WHERE id = ?1", params![id])
            .with_context(|| format!("forgetting warm container {id}"))?;
        Ok(())
    }

    /// The ids of every recorded warm container.
    pub fn all_warm(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id FROM warm_containers ORDER BY created_at, id")
            .context("listing warm containers")?;
        let rows = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .context("listing warm containers")?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .context("reading a warm container row")
    }

    pub fn put_template(&self, template: &TemplateRecord) -> Result<()> {
        let json = serde_json::to_string(template).context("encoding a template record")?;
        self.conn()
            .execute(
                "INSERT INTO templates (id, created_at, record) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO UPDATE SET record = ?3",
                params![template.template_id, rfc3339(&template.created_at), json],
            )
            .with_context(|| format!("storing template {}", template.template_id))?;
        Ok(())
    }

    pub fn get_template(&self, id: &str) -> Result<Option<TemplateRecord>> {
        self.get_json("templates", "id", id)
    }

    /// Every template, oldest first.
    pub fn all_templates(&self) -> Result<Vec<TemplateRecord>> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT id, record FROM templates ORDER BY created_at, id")
            .context("listing templates")?;
        let rows = stmt
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .context("listing templates")?;
        let mut out = Vec::new();
        for row in rows {
            let (id, json) = row.context("reading a template row")?;
            out.push(
                serde_json::from_str(&json)
                    .with_context(|| format!("decoding template record {id}"))?,
            );
        }
        Ok(out)
    }

    /// Deletes a template's record; tells whether there was one.
    pub fn delete_template(&self, id: &str) -> Result<bool> {
        let n = self
            .conn()
            .execute("DELETE FROM templates WHERE id = ?1", params![id])
            .with_context(|| format!("deleting template {id}"))?;
        Ok(n > 0)
    }

    /// A sandbox's credential vault as stored (credential values encrypted).
    pub fn get_vault(&self, sandbox_id: &str) -> Result<Option<StoredVault>> {
        self.get_json("credential_vaults", "sandbox_id", sandbox_id)
    }

    pub fn put_vault(&self, sandbox_id: &str, vault: &StoredVault) -> Result<()> {
        let json = serde_json::to_string(vault).context("encoding a credential vault")?;
        self.conn()
            .execute(
                "INSERT INTO credential_vaults (sandbox_id, record) VALUES (?1, ?2)
                 ON CONFLICT(sandbox_id) DO UPDATE SET record = ?2",
                params![sandbox_id, json],
            )
            .with_context(|| format!("storing the credential vault of sandbox {sandbox_id}"))?;
        Ok(())
    }

    /// Deletes a sandbox's vault; tells whether there was one.
    pub fn delete_vault(&self, sandbox_id: &str) -> Result<bool> {
        let n = self
            .conn()
            .execute(
                "DELETE FROM credential_vaults WHERE sandbox_id = ?1",
                params![sandbox_id],
            )
            .with_context(|| format!("deleting the credential vault of sandbox {sandbox_id}"))?;
        Ok(n > 0)
    }

    /// The `record` column of the row of `table` whose `key` is `id`, decoded.
    fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        table: &str,
        key: &str,
        id: &str,
    ) -> Result<Option<T>> {
        let json: Option<String> = self
            .conn()
            .query_row(
                &format!("SELECT record FROM {table} WHERE {key} = ?1"),
                params![id],
                |row| row.get(0),
            )
            .optional()
            .with_context(|| format!("reading {table} row {id}"))?;
        json.map(|json| {
            serde_json::from_str(&json).with_context(|| format!("decoding {table} row {id}"))
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::models::{SandboxState, SandboxStatus, SnapshotState, SnapshotStatus};
    use chrono::Utc;

    fn record(id: &str) -> SandboxRecord {
        SandboxRecord {
            id: id.to_string(),
            image: None,
            snapshot_id: None,
            entrypoint: vec!["true".into()],
            env: Default::default(),
            metadata: [("team".to_string(), "a".to_string())].into(),
            extensions: Default::default(),
            resource_limits: Default::default(),
            resource_requests: Default::default(),
            platform: None,
            network_policy: None,
            volumes: vec![],
            status: SandboxStatus {
                state: SandboxState::Pending,
                reason: None,
                message: None,
                last_transition_at: None,
            },
            created_at: Utc::now(),
            expires_at: None,
            execd_token_sha256: "t".into(),
            egress_token_sha256: "e".into(),
            pid: None,
            pid_start: None,
            isolation: "none".into(),
            deleted: false,
            events: vec![],
            template_id: None,
            lifecycle: None,
            credential_proxy: false,
        }
    }

    #[test]
    fn records_survive_reopening() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("db/test.db");
        {
            let store = Store::open(&path)?;
            let mut rec = record("a");
            store.put_sandbox(&rec)?;
            rec.transition(SandboxState::Running, "RUNNING", None);
            store.put_sandbox(&rec)?;
            store.put_sandbox(&record("b"))?;
            store.put_snapshot(&Snapshot {
                id: "s".into(),
                sandbox_id: "a".into(),
                name: None,
                status: SnapshotStatus {
                    state: SnapshotState::Ready,
                    reason: None,
                    message: None,
                    last_transition_at: None,
                },
                created_at: Utc::now(),
            })?;
        }
        let store = Store::open(&path)?;
        let a = store.get_sandbox("a")?.context("a missing")?;
        assert_eq!(a.status.state, SandboxState::Running);
        assert_eq!(a.metadata.get("team").map(String::as_str), Some("a"));
        assert_eq!(store.all_sandboxes()?.len(), 2);
        assert!(store.get_sandbox("zzz")?.is_none());
        assert_eq!(store.all_snapshots()?.len(), 1);
        store.delete_snapshot("s")?;
        assert!(store.get_snapshot("s")?.is_none());
        Ok(())
    }

    #[test]
    fn warm_containers_are_recorded_until_forgotten() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("w.db");
        {
            let store = Store::open(&path)?;
            store.put_warm("w1")?;
            store.put_warm("w2")?;
            store.delete_warm("w1")?;
        }
        let store = Store::open(&path)?;
        assert_eq!(store.all_warm()?, vec!["w2".to_string()]);
        Ok(())
    }
}
