//! Warm containers: sandboxes started ahead of the create requests that will use them.
//!
//! Under an OCI runtime most of a create is the runtime starting the container (`runc
//! run`: 30–40 ms here), which does not depend on the request beyond its image. So
//! after a create of an image, the server starts `--warm-pool` more containers of that
//! image with the default limits and no entrypoint: their agents wait, still
//! single-threaded and serving nothing, for a start message on a pipe only the server
//! holds (`agent --start-fd`, `opensandbox_agent::start`). A later create of the same
//! image (same manifest digest, so a moved tag is never served stale) takes one: the
//! sandbox gets that container's id, the request's limits (`runc update` when they are
//! not the defaults), and its entrypoint, environment and output framing through the
//! pipe. Requests a warm container cannot serve (volumes, a snapshot restore, a disk
//! limit other than the default, no overlayfs) start cold as before.
//!
//! Crash safety: a warm container is recorded in the store (`warm_containers`) before
//! its runtime starts, and a restart removes every recorded one that no create took.
//! A pipe closed without a message (server gone, container released) makes the agent
//! exit at once.
//!
//! Cost: one idle container per warm slot (about 4 MiB PSS here), for at most
//! `--warm-images` images, the least recently used dropped first.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::error::ApiResult;
use super::models::{SandboxRecord, SandboxState};
use super::runtime::{self, Isolation};
use super::{security, Control};

/// One container started ahead of its request.
#[derive(Debug)]
pub struct Warm {
    /// The container id, which becomes the sandbox id.
    pub id: String,
    /// The runtime's process (`runc run` in the foreground), as a sandbox records it.
    pub pid: Option<i32>,
    pub pid_start: Option<u64>,
    /// The write end of the agent's start pipe.
    pub start: std::io::PipeWriter,
    /// The runtime has created the container (`runc update` and the rest can reach
    /// it): only then is it offered to a create.
    pub created: bool,
}

/// The warm containers of each recently used image.
#[derive(Debug)]
pub struct WarmPool {
    /// Containers kept ready per image (0: off).
    per_image: usize,
    /// Images kept warm at once.
    max_images: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// (image key, its warm containers), least recently used first.
    images: VecDeque<(String, VecDeque<Warm>)>,
    /// Image keys a refill is running for.
    refilling: Vec<String>,
}

/// What [`WarmPool::want`] asks the caller to do.
#[derive(Debug, Default)]
pub struct Plan {
    /// Start this many containers of the image.
    pub start: usize,
    /// Release these (an image that dropped out of the most recently used).
    pub release: Vec<Warm>,
}

impl WarmPool {
    pub fn new(per_image: usize, max_images: usize) -> Self {
        Self {
            per_image,
            max_images: max_images.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.per_image > 0
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Plain data under the lock: a panic elsewhere cannot leave it half-changed.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a warm container of image `key`, if one is created, and marks the image
    /// as the most recently used.
    pub fn take(&self, key: &str) -> Option<Warm> {
        let mut inner = self.inner();
        let pos = inner.images.iter().position(|(k, _)| k == key)?;
        let (k, mut pool) = inner.images.remove(pos)?;
        let taken = pool
            .iter()
            .position(|w| w.created)
            .and_then(|i| pool.remove(i));
        inner.images.push_back((k, pool));
        taken
    }

    /// Marks container `id` created; false when it is no longer in the pool.
    pub fn set_created(&self, id: &str) -> bool {
        let mut inner = self.inner();
        for (_, pool) in inner.images.iter_mut() {
            if let Some(warm) = pool.iter_mut().find(|w| w.id == id) {
                warm.created = true;
                return true;
            }
        }
        false
    }

    /// Starts a refill of image `key` unless one is running: how many containers to
    /// start, and which to release to stay within `max_images`. The caller must call
    /// [`Self::refilled`] when done.
    pub fn want(&self, key: &str) -> Option<Plan> {
        if !self.enabled() {
            return None;
        }
        let mut inner = self.inner();
        if inner.refilling.iter().any(|k| k == key) {
            return None;
        }
        let mut plan = Plan::default();
        let have = match inner.images.iter().position(|(k, _)| k == key) {
            Some(pos) => {
                let entry = inner.images.remove(pos)?;
                let n = entry.1.len();
                inner.images.push_back(entry);
                n
            }
            None => {
                inner.images.push_back((key.to_string(), VecDeque::new()));
                0
            }
        };
        while inner.images.len() > self.max_images {
            if let Some((_, old)) = inner.images.pop_front() {
                plan.release.extend(old);
            }
        }
        plan.start = self.per_image.saturating_sub(have);
        inner.refilling.push(key.to_string());
        Some(plan)
    }

    /// Adds a container whose runtime was just started to image `key`'s pool (offered
    /// once [`Self::set_created`]). Returns it when the image is no longer kept warm
    /// (dropped meanwhile): the caller releases it.
    pub fn add(&self, key: &str, warm: Warm) -> Option<Warm> {
        let mut inner = self.inner();
        match inner.images.iter_mut().find(|(k, _)| k == key) {
            Some((_, pool)) => {
                pool.push_back(warm);
                None
            }
            None => Some(warm),
        }
    }

    /// Ends the refill of image `key`.
    pub fn refilled(&self, key: &str) {
        self.inner().refilling.retain(|k| k != key);
    }

    /// Removes container `id` from the pool (it exited on its own), if it is there.
    pub fn forget(&self, id: &str) -> Option<Warm> {
        let mut inner = self.inner();
        for (_, pool) in inner.images.iter_mut() {
            if let Some(pos) = pool.iter().position(|w| w.id == id) {
                return pool.remove(pos);
            }
        }
        None
    }

    /// Every warm container, removed from the pool (shutdown).
    pub fn drain(&self) -> Vec<Warm> {
        let mut inner = self.inner();
        inner
            .images
            .drain(..)
            .flat_map(|(_, pool)| pool.into_iter())
            .collect()
    }

    /// How many containers are warm now, over all images.
    pub fn len(&self) -> usize {
        self.inner().images.iter().map(|(_, p)| p.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---- the pool in the sandbox lifecycle -------------------------------------------

/// Reason recorded on a sandbox whose warm container could not be started.
const PROVISIONING_ERROR: &str = "PROVISIONING_ERROR";
/// How long the runtime may take to create a warm container.
const WARM_START_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What a warm container's agent is sent when a create takes it (the agent's
/// `start::StartMessage`).
#[derive(serde::Serialize)]
struct StartMessage<'a> {
    entrypoint: &'a [String],
    env: &'a std::collections::BTreeMap<String, String>,
    output_framing: &'a str,
}

impl Control {
    /// A warm container for this create, if one is ready; and in any case, when the
    /// request could be served warm, a refill of its image's pool in the background.
    pub(super) fn take_warm(self: &Arc<Self>, record: &SandboxRecord) -> Option<Warm> {
        if !self.warm.enabled() {
            return None;
        }
        let Isolation::Oci(oci) = &self.runtime.isolation else {
            return None;
        };
        let key = match oci.warm_key(record) {
            Ok(Some(key)) => key,
            Ok(None) => return None,
            Err(err) => {
                tracing::debug!(
                    error = format!("{err:#}"),
                    "no warm container for this create"
                );
                return None;
            }
        };
        let taken = self.warm.take(&key);
        self.refill_warm(key, record);
        taken
    }

    /// Makes `warm` the sandbox `record` asks for: its id, limits, entrypoint,
    /// environment and framing. Returns the record as stored (Pending until the
    /// caller sees the agent answer), or Failed when the container could not start.
    pub(super) async fn start_warm(
        self: &Arc<Self>,
        mut record: SandboxRecord,
        warm: Warm,
    ) -> ApiResult<SandboxRecord> {
        record.id = warm.id.clone();
        record.execd_token_sha256 = security::sha256_hex(self.execd_token(&record.id).as_bytes());
        record.egress_token_sha256 = security::sha256_hex(self.egress_token(&record.id).as_bytes());
        record.pid = warm.pid;
        record.pid_start = warm.pid_start;
        let lock = self.registry.lock_for(&record.id);
        let _guard = lock.lock().await;
        record.transition(SandboxState::Pending, "CREATING", None);
        self.store.put_sandbox(&record)?;
        if let Err(err) = self.store.delete_warm(&record.id) {
            // The sandbox record exists now: a restart keeps the container either way.
            tracing::warn!(
                sandbox = record.id,
                error = format!("{err:#}"),
                "forgetting a taken warm container"
            );
        }
        if let Err(err) = self.send_start(&record, warm).await {
            record.transition(
                SandboxState::Failed,
                PROVISIONING_ERROR,
                Some(format!("{err:#}")),
            );
            self.runtime.stop(&record.id, record.pid.take());
            self.store.put_sandbox(&record)?;
            return Ok(record);
        }
        self.registry.set_expiry(&record.id, record.expires_at);
        Ok(record)
    }

    /// Applies the request's limits, then sends the start message and closes the pipe.
    async fn send_start(&self, record: &SandboxRecord, warm: Warm) -> anyhow::Result<()> {
        use anyhow::Context;
        use std::io::Write;
        if let Isolation::Oci(oci) = &self.runtime.isolation {
            if let Some(limits) = oci.limits_beyond_defaults(record)? {
                oci.update_limits(&record.id, &limits)
                    .context("applying the sandbox's resource limits")?;
            }
        }
        let body = serde_json::to_vec(&StartMessage {
            entrypoint: &record.entrypoint,
            env: &record.env,
            output_framing: runtime::output_framing_arg(record),
        })?;
        let mut pipe = warm.start;
        // The write blocks once the pipe is full (a large environment) until the
        // agent reads: not on the async runtime's threads.
        tokio::task::spawn_blocking(move || pipe.write_all(&body))
            .await
            .context("sending the start message")?
            .context("the warm container is gone (its start pipe is closed)")
    }

    /// Tops image `key`'s pool up in the background, from a copy of `template` (the
    /// create that named the image) without anything of its request.
    fn refill_warm(self: &Arc<Self>, key: String, template: &SandboxRecord) {
        let Some(plan) = self.warm.want(&key) else {
            return;
        };
        // Closing their pipes ends them; `on_exit` then removes what is left.
        drop(plan.release);
        let mut base = template.clone();
        base.entrypoint = Vec::new();
        base.env.clear();
        base.metadata.clear();
        base.extensions.clear();
        base.resource_limits.clear();
        base.resource_requests.clear();
        base.network_policy = None;
        base.expires_at = None;
        base.events.clear();
        if let Some(image) = base.image.as_mut() {
            image.auth = None;
        }
        let control = Arc::clone(self);
        tokio::spawn(async move {
            for _ in 0..plan.start {
                let started = match control.start_warm_container(&base, &key) {
                    Ok(warm) => {
                        let (id, pid, pid_start) = (warm.id.clone(), warm.pid, warm.pid_start);
                        // In the pool at once (a shutdown finds it), offered once created.
                        // Started for an image that dropped out meanwhile: released.
                        drop(control.warm.add(&key, warm));
                        control.until_created(&id, pid, pid_start).await
                    }
                    Err(err) => Err(err),
                };
                match started {
                    Ok(()) => {}
                    Err(err) => {
                        tracing::warn!(
                            image = key,
                            error = format!("{err:#}"),
                            "starting a warm container"
                        );
                        break;
                    }
                }
            }
            control.warm.refilled(&key);
        });
    }

    fn start_warm_container(
        self: &Arc<Self>,
        base: &SandboxRecord,
        key: &str,
    ) -> anyhow::Result<Warm> {
        use anyhow::{bail, Context};
        let Isolation::Oci(oci) = &self.runtime.isolation else {
            bail!("warm containers need an OCI runtime");
        };
        // The tag may have moved since the create that asked for this refill.
        if oci.warm_key(base)?.as_deref() != Some(key) {
            bail!("the image no longer resolves to {key}");
        }
        let mut record = base.clone();
        record.id = uuid::Uuid::new_v4().to_string();
        // Recorded before the runtime starts: a restart removes it if no create took it.
        self.store.put_warm(&record.id)?;
        let paths = self.runtime.paths(&record.id);
        let started = self
            .runtime
            .prepare(&paths)
            .and_then(|()| self.runtime.spawn_warm(&record));
        let (child, start) = match started {
            Ok(started) => started,
            Err(err) => {
                self.reap_warm(&record.id);
                return Err(err).context("starting the container");
            }
        };
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        let warm = Warm {
            id: record.id.clone(),
            pid,
            pid_start: pid.and_then(runtime::process_start_time),
            start,
            created: false,
        };
        self.watch_child(record.id, child);
        tracing::debug!(sandbox = warm.id, image = key, "warm container started");
        Ok(warm)
    }

    /// Waits until the runtime has created `warm`'s container: before that, `runc
    /// update` of a create that took it fails ("container does not exist"), which
    /// a loaded machine made common (seen in the conformance matrix).
    async fn until_created(
        &self,
        id: &str,
        pid: Option<i32>,
        pid_start: Option<u64>,
    ) -> anyhow::Result<()> {
        let Isolation::Oci(oci) = &self.runtime.isolation else {
            anyhow::bail!("warm containers need an OCI runtime");
        };
        let deadline = tokio::time::Instant::now() + WARM_START_WAIT;
        loop {
            if oci.container_exists(id) {
                self.warm.set_created(id);
                return Ok(());
            }
            let alive = pid.is_some_and(|pid| runtime::is_alive(pid, pid_start));
            if !alive || tokio::time::Instant::now() >= deadline {
                // Out of the pool; its exit (now, or once its pipe is closed here)
                // removes what it left.
                drop(self.warm.forget(id));
                anyhow::bail!(
                    "warm container {id} was not created within {}s (runtime {})",
                    WARM_START_WAIT.as_secs(),
                    if alive { "still starting" } else { "exited" }
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Removes what is left of a warm container no create took (it ended, was
    /// released, or outlived a server restart): the container, its mounts, its files
    /// and its record.
    pub(super) fn reap_warm(&self, id: &str) {
        drop(self.warm.forget(id));
        self.runtime.stop(id, None);
        let base = self.runtime.paths(id).base;
        if let Err(err) = std::fs::remove_dir_all(&base) {
            if err.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %base.display(), error = %err, "removing a warm container's files");
            }
        }
        if let Err(err) = self.store.delete_warm(id) {
            tracing::warn!(
                sandbox = id,
                error = format!("{err:#}"),
                "forgetting a warm container"
            );
        }
    }

    /// After a restart: removes every recorded warm container that no create took.
    pub(super) fn recover_warm(&self) -> anyhow::Result<()> {
        for id in self.store.all_warm()? {
            if self.store.get_sandbox(&id)?.is_some() {
                self.store.delete_warm(&id)?;
            } else {
                tracing::info!(sandbox = id, "removing a warm container of a previous run");
                self.reap_warm(&id);
            }
        }
        Ok(())
    }

    /// At shutdown: ends and removes every warm container (they are no sandbox yet).
    pub fn release_all_warm(&self) {
        for warm in self.warm.drain() {
            let id = warm.id.clone();
            drop(warm);
            self.reap_warm(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warm(id: &str) -> Warm {
        let (_, start) = std::io::pipe().unwrap_or_else(|e| panic!("{e}"));
        Warm {
            id: id.into(),
            pid: None,
            pid_start: None,
            start,
            created: true,
        }
    }

    #[test]
    fn off_plans_nothing() {
        let pool = WarmPool::new(0, 2);
        assert!(pool.want("a").is_none());
        assert!(pool.take("a").is_none());
    }

    #[test]
    fn a_refill_tops_up_and_runs_once_per_image() {
        let pool = WarmPool::new(2, 2);
        let plan = pool.want("a").unwrap_or_else(|| panic!("a plan"));
        assert_eq!(plan.start, 2);
        // A second create of the same image while the refill runs starts nothing.
        assert!(pool.want("a").is_none());
        assert!(pool.add("a", warm("w1")).is_none());
        assert!(pool.add("a", warm("w2")).is_none());
        pool.refilled("a");
        assert_eq!(pool.len(), 2);
        assert_eq!(pool.take("a").map(|w| w.id), Some("w1".into()));
        assert_eq!(pool.want("a").map(|p| p.start), Some(1));
    }

    #[test]
    fn the_least_recently_used_image_is_released() {
        let pool = WarmPool::new(1, 2);
        for key in ["a", "b"] {
            assert!(pool.want(key).is_some());
            assert!(pool.add(key, warm(&format!("w-{key}"))).is_none());
            pool.refilled(key);
        }
        // Using "a" makes "b" the least recently used one.
        assert!(pool.take("a").is_some());
        let plan = pool.want("c").unwrap_or_else(|| panic!("a plan"));
        assert_eq!(
            plan.release
                .iter()
                .map(|w| w.id.as_str())
                .collect::<Vec<_>>(),
            ["w-b"]
        );
        assert_eq!(plan.start, 1);
        // A container started for an image dropped meanwhile comes back to be released.
        assert!(pool.add("b", warm("late")).is_some());
    }

    #[test]
    fn only_created_containers_are_taken() {
        let pool = WarmPool::new(2, 2);
        assert!(pool.want("a").is_some());
        let mut starting = warm("starting");
        starting.created = false;
        assert!(pool.add("a", starting).is_none());
        assert!(pool.take("a").is_none());
        assert!(pool.set_created("starting"));
        assert_eq!(pool.take("a").map(|w| w.id), Some("starting".into()));
        assert!(!pool.set_created("starting"));
    }

    #[test]
    fn forget_and_drain_remove_containers() {
        let pool = WarmPool::new(2, 2);
        assert!(pool.want("a").is_some());
        assert!(pool.add("a", warm("w1")).is_none());
        assert!(pool.add("a", warm("w2")).is_none());
        assert_eq!(pool.forget("w1").map(|w| w.id), Some("w1".into()));
        assert!(pool.forget("w1").is_none());
        assert_eq!(pool.drain().len(), 1);
        assert!(pool.is_empty());
    }
}
