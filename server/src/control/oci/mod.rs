//! The standard-OCI-runtime backend (`--runtime runc|crun|runsc|PATH`): each sandbox
//! is a container started from an OCI bundle, over an image from the cache.
//!
//! Per sandbox, under `DATA_DIR/sandboxes/{id}/`:
//! - `oci/config.json`: the bundle (see [`bundle`]), `oci/rootfs`: the image's
//!   unpacked layers (read-only lower) under a writable overlay whose upper and work
//!   directories live in `oci/layer/` (0700, root); where overlayfs cannot be mounted
//!   the rootfs is a full copy of the image instead;
//! - `fs/{root,tmp,workspace}`: bound at `/root`, `/tmp`, `/workspace` as under
//!   bubblewrap, so snapshots and restores work the same;
//! - `run/`: the agent's socket and status file, opened by the server and handed to the
//!   agent as open file descriptors (`--listen-fd 3 --status-fd 4`, passed through by
//!   `runc run --preserve-fds 2`); the directory is never mounted into the container,
//!   so the sandbox can neither see nor replace them. `runc run` stays in the
//!   foreground as the server's child and exits with the agent's exit code.
//!
//! The container id is the sandbox id, and the sandbox is stored (state Pending)
//! before the runtime starts, so a server that dies during create finds the container
//! by its id on restart and deletes it (`runc delete --force`).
//! Pause/resume are `runc pause/resume` (the freezer cgroup); every end (entrypoint
//! exit, TTL, DELETE, lost on restart) is `runc kill --all` + `runc delete --force`,
//! which kills every process of the container's cgroup.

pub mod bundle;
pub mod cgroups;
pub mod cli;
pub mod disk;
pub mod image;
pub mod logs;
pub mod metrics;
pub mod push;
pub mod registry;
pub mod select;

use std::os::fd::RawFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{anyhow, bail, Context, Result};

use super::models::SandboxRecord;
use super::runtime::{self, SandboxPaths};
use bundle::{Bind, BundleSpec};
use image::{CachedImage, ImageStore};

/// Host id of root inside every sandbox; ids 0..ID_RANGE inside map to
/// ID_BASE..ID_BASE+ID_RANGE on the host, an unprivileged range no host user has.
pub const ID_BASE: u32 = 1_000_000;
pub const ID_RANGE: u32 = 65_536;

/// Where the agent's socket is said to be inside (only a name: the listener is
/// inherited).
const SOCKET_NAME_INSIDE: &str = "/.opensandbox/execd.sock";
const WORKSPACE_INSIDE: &str = "/workspace";
/// The fd a warm container's agent reads its start message from (`--start-fd`).
const START_FD_INSIDE: RawFd = 5;

/// The configured OCI runtime.
#[derive(Debug)]
pub struct OciRuntime {
    /// `runc`, `crun`, `runsc` or the file name of a runtime given by path.
    pub name: String,
    binary: PathBuf,
    state_root: PathBuf,
    images: ImageStore,
    exe: PathBuf,
    /// Host libraries the agent needs (bind source, file name inside).
    agent_libs: Vec<(PathBuf, String)>,
    /// File name of the dynamic loader among `agent_libs`, if the agent is dynamic.
    loader: Option<String>,
    overlay: bool,
    /// Default and maximum `resourceLimits`.
    pub defaults: cgroups::Policy,
    cgroup_version: cgroups::CgroupVersion,
    /// Cap of the sandbox log and of each background command's log (the agent's
    /// `--log-cap`).
    log_cap: u64,
    default_image: Option<String>,
    registry_mirror: Option<String>,
    /// Registry references pulled by this process, by the local `oci:` URI of the pull.
    pulled: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// `DATA_DIR/snapshots`: a restored sandbox's overlay layer comes from there.
    snapshots_dir: PathBuf,
}

/// Where a snapshot keeps its sandbox's overlay upper layer (what changed in the image).
pub const SNAPSHOT_UPPER: &str = "rootfs-upper";

impl PartialEq for OciRuntime {
    fn eq(&self, other: &Self) -> bool {
        self.binary == other.binary
    }
}
impl Eq for OciRuntime {}

/// An image that could not be made ready: `SANDBOX::IMAGE_PULL_FAILED`.
#[derive(Debug)]
pub struct ImageError(pub String);

/// Options of the backend from the command line.
pub struct OciOptions {
    pub runtime: String,
    pub default_image: Option<String>,
    pub copy_rootfs: bool,
    pub registry_mirror: Option<String>,
    pub limits: cgroups::Policy,
    pub log_cap: u64,
}

impl OciRuntime {
    /// Finds the runtime, checks overlayfs, and proves the runtime can start a
    /// container with this backend's bundle on this host.
    pub fn new(opts: &OciOptions, data_dir: &Path, exe: &Path) -> Result<Self> {
        let binary = find_binary(&opts.runtime)?;
        let name = binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| opts.runtime.clone());
        let oci_dir = data_dir.join("oci");
        std::fs::create_dir_all(&oci_dir)
            .with_context(|| format!("creating {}", oci_dir.display()))?;
        std::fs::set_permissions(&oci_dir, std::fs::Permissions::from_mode(0o700))?;
        allow_traverse(data_dir)?;
        allow_traverse(&oci_dir)?;
        let state_root = oci_dir.join("state");
        std::fs::create_dir_all(&state_root)?;
        std::fs::set_permissions(&state_root, std::fs::Permissions::from_mode(0o700))?;
        let (agent_libs, loader) = agent_libraries(exe);
        let overlay = !opts.copy_rootfs && overlay_works(&oci_dir);
        if !overlay {
            tracing::warn!(
                "overlayfs is not available (or --oci-copy-rootfs): each sandbox's rootfs \
                 is a full copy of its image (slower create, more disk)"
            );
        }
        let rt = Self {
            name,
            binary,
            state_root,
            images: ImageStore::new(data_dir.join("images")),
            exe: exe.to_path_buf(),
            agent_libs,
            loader,
            overlay,
            defaults: opts.limits.clone(),
            cgroup_version: cgroups::CgroupVersion::detect(),
            log_cap: opts.log_cap,
            default_image: opts.default_image.clone(),
            registry_mirror: opts.registry_mirror.clone(),
            pulled: Default::default(),
            snapshots_dir: data_dir.join("snapshots"),
        };
        rt.probe(&oci_dir).with_context(|| {
            format!(
                "the OCI runtime {} cannot start a sandbox on this host",
                rt.binary.display()
            )
        })?;
        logs::watch(data_dir.join("sandboxes"), rt.log_cap);
        Ok(rt)
    }

    pub fn overlay(&self) -> bool {
        self.overlay
    }

    /// The overlay upper directory of a sandbox (what it changed in its image), if it
    /// runs on an overlay: on its size-capped disk when it has a disk limit.
    pub fn upper_dir(&self, paths: &SandboxPaths) -> Option<PathBuf> {
        if !self.overlay {
            return None;
        }
        let bundle_dir = Self::bundle_dir(paths);
        [
            disk::Disk::new(&bundle_dir).layer().join("upper"),
            bundle_dir.join("layer").join("upper"),
        ]
        .into_iter()
        .find(|dir| dir.is_dir())
    }

    fn runtime_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(&self.binary);
        cmd.arg("--root").arg(&self.state_root);
        cmd
    }

    /// Runs the agent binary (`--version`) in a throw-away container with an empty
    /// rootfs, with the same namespaces, mapping, capabilities and cgroup limits as a
    /// sandbox.
    fn probe(&self, oci_dir: &Path) -> Result<()> {
        let bundle_dir = oci_dir.join("probe");
        let _ = std::fs::remove_dir_all(&bundle_dir);
        let rootfs = bundle_dir.join("rootfs");
        std::fs::create_dir_all(&rootfs)?;
        std::fs::set_permissions(&bundle_dir, std::fs::Permissions::from_mode(0o700))?;
        allow_traverse(&bundle_dir)?;
        std::os::unix::fs::chown(&rootfs, Some(ID_BASE), Some(ID_BASE))?;
        let id = format!("opensandbox-probe-{}", std::process::id());
        let limits = cgroups::Limits::from_request(&Default::default(), &self.defaults)?;
        let mut args = self.agent_argv();
        args.push("--version".into());
        bundle::write(
            &bundle_dir,
            &BundleSpec {
                rootfs: &rootfs,
                hostname: "probe".into(),
                args,
                env: vec!["PATH=/bin".into()],
                cwd: "/".into(),
                binds: self.agent_binds(),
                resources: limits.to_resources(),
                cgroups_path: format!("/opensandbox/{id}"),
            },
        )?;
        let output = self
            .runtime_cmd()
            .arg("run")
            .arg("--bundle")
            .arg(&bundle_dir)
            .arg(&id)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {}", self.binary.display()))?;
        let _ = self
            .runtime_cmd()
            .args(["delete", "--force", &id])
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&bundle_dir);
        if !output.status.success() {
            bail!(
                "{} run exited with {}: {}{}",
                self.name,
                output.status,
                String::from_utf8_lossy(&output.stderr).trim(),
                String::from_utf8_lossy(&output.stdout).trim()
            );
        }
        Ok(())
    }

    /// The agent's command line up to (not including) its own arguments.
    fn agent_argv(&self) -> Vec<String> {
        let mut argv = Vec::new();
        if let Some(loader) = &self.loader {
            argv.push(format!("{}/{loader}", bundle::AGENT_LIB_INSIDE));
            argv.push("--library-path".into());
            argv.push(bundle::AGENT_LIB_INSIDE.into());
        }
        argv.push(bundle::AGENT_EXE_INSIDE.into());
        argv
    }

    fn agent_binds(&self) -> Vec<Bind> {
        let mut binds = vec![Bind {
            source: self.exe.clone(),
            destination: bundle::AGENT_EXE_INSIDE.into(),
            read_only: true,
        }];
        for (source, name) in &self.agent_libs {
            binds.push(Bind {
                source: source.clone(),
                destination: format!("{}/{name}", bundle::AGENT_LIB_INSIDE),
                read_only: true,
            });
        }
        binds
    }

    /// The image a sandbox runs: its own, or `--default-image` for one restored from a
    /// snapshot (which records no image).
    fn image_uri<'a>(&'a self, record: &'a SandboxRecord) -> Option<&'a str> {
        record
            .image
            .as_ref()
            .map(|i| i.uri.as_str())
            .or(self.default_image.as_deref())
    }

    /// Makes the sandbox's image ready in the cache (unpacking it on first use).
    pub async fn prepare_image(&self, record: &SandboxRecord) -> Result<(), ImageError> {
        self.prepare_image_with(record, None).await
    }

    /// [`Self::prepare_image`], reporting a registry pull's progress to `progress`.
    pub async fn prepare_image_with(
        &self,
        record: &SandboxRecord,
        progress: Option<registry::ProgressFn>,
    ) -> Result<(), ImageError> {
        let uri = self.image_uri(record).map(str::to_string).ok_or_else(|| {
            ImageError(
                "this sandbox names no image (restored from a snapshot): start the server \
                 with --default-image to run such sandboxes under an OCI runtime"
                    .into(),
            )
        })?;
        let credentials = record
            .image
            .as_ref()
            .and_then(|i| i.auth.as_ref())
            .map(|a| registry::Credentials {
                username: a.username.clone(),
                password: a.password.clone(),
            });
        self.prepare_uri(&uri, credentials, progress)
            .await
            .map(|_| ())
    }

    /// Pulls (anonymously) and unpacks image `uri` for a template build; its digest in
    /// the cache.
    pub async fn prepare_template_image(&self, uri: &str) -> Result<String, ImageError> {
        Ok(self.prepare_uri(uri, None, None).await?.digest)
    }

    async fn prepare_uri(
        &self,
        uri: &str,
        credentials: Option<registry::Credentials>,
        progress: Option<registry::ProgressFn>,
    ) -> Result<CachedImage, ImageError> {
        let uri = uri.to_string();
        let local = if uri.starts_with("oci:") || uri.starts_with("docker-archive:") {
            uri.clone()
        } else {
            let pulls = self.images.dir().join("pulls");
            // `image.auth` of the request: used for this pull only, never stored.
            let opts = registry::PullOptions {
                credentials,
                progress,
            };
            let local = registry::pull_with(&uri, self.registry_mirror.as_deref(), &pulls, &opts)
                .await
                .map_err(|e| ImageError(format!("pulling {uri:?}: {e:#}")))?
                .uri;
            self.pulled
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(uri.clone(), local.clone());
            local
        };
        // Unpacking is blocking work; the store serialises concurrent unpacks itself.
        let images: &ImageStore = &self.images;
        let result = tokio::task::block_in_place(|| images.ensure(&local, ID_BASE));
        result.map_err(|e| ImageError(format!("image {uri:?}: {e:#}")))
    }

    fn ensure_image(&self, record: &SandboxRecord) -> Result<CachedImage> {
        let uri = self
            .image_uri(record)
            .ok_or_else(|| anyhow!("this sandbox names no image"))?;
        let pulled = self
            .pulled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(uri)
            .cloned();
        self.images
            .ensure(pulled.as_deref().unwrap_or(uri), ID_BASE)
    }

    fn bundle_dir(paths: &SandboxPaths) -> PathBuf {
        paths.base.join("oci")
    }

    /// Prepares the rootfs and the bundle, and returns the `RUNTIME run` command (in
    /// the foreground: the child is the runtime, which exits with the agent's, so the
    /// entrypoint's, exit code). `listen_fd` and `status_fd` are the agent's socket
    /// and status file, opened by the server in the host-only run directory; they
    /// become fds 3 and 4 of the runtime, which passes them on to the agent.
    ///
    /// With `start_fd` (a warm container, see `control/warm.rs`) the agent gets no
    /// entrypoint: it waits for its start message on that pipe, passed on as fd 5.
    pub fn command(
        &self,
        record: &SandboxRecord,
        paths: &SandboxPaths,
        listen_fd: RawFd,
        status_fd: RawFd,
        start_fd: Option<RawFd>,
    ) -> Result<tokio::process::Command> {
        let started = std::time::Instant::now();
        let image = self.ensure_image(record)?;
        let limits = cgroups::Limits::from_request(&record.resource_limits, &self.defaults)?;
        // The container's root (an unprivileged host id) must be able to walk to its
        // rootfs and bound directories.
        let sandboxes = paths.base.parent();
        for dir in [sandboxes.and_then(Path::parent), sandboxes]
            .into_iter()
            .flatten()
            .chain([paths.base.as_path(), paths.fs.as_path()])
        {
            allow_traverse(dir)?;
        }
        let bundle_dir = Self::bundle_dir(paths);
        let rootfs = bundle_dir.join("rootfs");
        for dir in [&bundle_dir, &rootfs] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        allow_traverse(&bundle_dir)?;
        // With a disk limit, everything the sandbox can write (overlay upper dir and
        // the bound directories) lives on its own size-capped filesystem.
        let layer = match limits.disk_bytes {
            Some(bytes) => {
                let disk = disk::Disk::new(&bundle_dir);
                disk.setup(bytes, &paths.fs)
                    .with_context(|| format!("setting up the {bytes}-byte disk limit"))?;
                allow_traverse(&disk.mount)?;
                allow_traverse(&paths.fs)?;
                disk.layer()
            }
            None => bundle_dir.join("layer"),
        };
        std::fs::create_dir_all(&layer).with_context(|| format!("creating {}", layer.display()))?;
        std::fs::set_permissions(&layer, std::fs::Permissions::from_mode(0o700))?;
        self.restore_upper(record, &layer, &rootfs)?;
        self.mount_rootfs(&image.rootfs, &rootfs, &layer)?;
        // The writable directories belong to the sandbox's root (ids shifted into its
        // range, e.g. after a restore of a snapshot taken under bubblewrap).
        for (name, _) in runtime::WRITABLE_DIRS {
            shift_owners(&paths.writable_dir(name))?;
        }
        std::fs::set_permissions(
            paths.writable_dir("tmp"),
            std::fs::Permissions::from_mode(0o1777),
        )?;
        let hosts = bundle_dir.join("hosts");
        let short_id: String = record.id.chars().take(8).collect();
        let hostname = format!("sandbox-{short_id}");
        std::fs::write(
            &hosts,
            format!("127.0.0.1\tlocalhost {hostname}\n::1\tlocalhost ip6-localhost\n"),
        )?;
        std::fs::set_permissions(&hosts, std::fs::Permissions::from_mode(0o644))?;

        let mut binds = Vec::new();
        for (name, inside) in runtime::WRITABLE_DIRS {
            binds.push(Bind {
                source: paths.writable_dir(name),
                destination: inside.to_string(),
                read_only: false,
            });
        }
        binds.push(Bind {
            source: hosts,
            destination: "/etc/hosts".into(),
            read_only: true,
        });
        binds.extend(self.agent_binds());
        for volume in &record.volumes {
            let Some(host) = &volume.host else { continue };
            binds.push(Bind {
                source: runtime::volume_source(&host.path, volume.sub_path.as_deref())?,
                destination: volume.mount_path.clone(),
                read_only: volume.read_only,
            });
        }

        // Environment: defaults, then the image's, then the request's.
        let mut env = runtime::sandbox_env(record, "/root");
        for kv in image.config.env.iter().flatten() {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            if record.env.contains_key(k) {
                continue;
            }
            env.retain(|(ek, _)| ek != k);
            env.push((k.to_string(), v.to_string()));
        }
        let env: Vec<String> = env.into_iter().map(|(k, v)| format!("{k}={v}")).collect();

        let mut args = self.agent_argv();
        args.extend(
            [
                "agent",
                "--socket",
                SOCKET_NAME_INSIDE,
                "--listen-fd",
                "3",
                "--status-fd",
                "4",
                "--root",
                "/",
                "--workdir",
                WORKSPACE_INSIDE,
                "--log-cap",
            ]
            .map(String::from),
        );
        args.push(self.log_cap.to_string());
        args.push("--output-framing".into());
        args.push(runtime::output_framing_arg(record).into());
        // The bundle's seccomp filter lets the agent mount and unshare (isolated
        // sessions); the agent puts the full filter back on everything it starts.
        args.push("--confine-children".into());
        if start_fd.is_some() {
            args.push("--start-fd".into());
            args.push(START_FD_INSIDE.to_string());
        } else {
            args.push("--".into());
            args.extend(record.entrypoint.iter().cloned());
        }
        bundle::write(
            &bundle_dir,
            &BundleSpec {
                rootfs: &rootfs,
                hostname,
                args,
                env,
                cwd: WORKSPACE_INSIDE.into(),
                binds,
                resources: limits.to_resources(),
                cgroups_path: cgroups_path(&record.id),
            },
        )?;

        tracing::debug!(
            sandbox = record.id,
            image = image.digest,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "rootfs and bundle ready"
        );
        let mut cmd = tokio::process::Command::new(&self.binary);
        cmd.arg("--root")
            .arg(&self.state_root)
            .arg("run")
            .arg("--bundle")
            .arg(&bundle_dir)
            .arg("--preserve-fds")
            .arg(if start_fd.is_some() { "3" } else { "2" })
            .arg(&record.id);
        // SAFETY: the closure runs in the forked child before exec and only makes
        // async-signal-safe calls (fcntl, dup2, close) on plain integers: no
        // allocation, no lock, nothing shared with the parent's other threads.
        unsafe {
            cmd.pre_exec(move || {
                // Move the fds to 3, 4 (and 5) via free high numbers, in case they
                // already sit on those numbers in another order; dup2 clears
                // FD_CLOEXEC on the copy.
                let l = libc::fcntl(listen_fd, libc::F_DUPFD_CLOEXEC, 100);
                let s = libc::fcntl(status_fd, libc::F_DUPFD_CLOEXEC, 100);
                if l < 0 || s < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let w = match start_fd {
                    Some(fd) => {
                        let w = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 100);
                        if w < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Some(w)
                    }
                    None => None,
                };
                if libc::dup2(l, 3) < 0 || libc::dup2(s, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if let Some(w) = w {
                    if libc::dup2(w, START_FD_INSIDE) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    libc::close(w);
                }
                libc::close(l);
                libc::close(s);
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// A sandbox restored from a snapshot starts with the snapshot's overlay layer
    /// (once: not again when the rootfs is mounted already, after a restart).
    fn restore_upper(&self, record: &SandboxRecord, layer: &Path, rootfs: &Path) -> Result<()> {
        // A template is kept in the snapshot layout, under `DATA_DIR/templates`.
        let (source, saved) = match (&record.snapshot_id, &record.template_id) {
            (Some(id), _) => (id, self.snapshots_dir.join(id)),
            (None, Some(id)) => (id, self.snapshots_dir.with_file_name("templates").join(id)),
            (None, None) => return Ok(()),
        };
        let saved = saved.join(SNAPSHOT_UPPER);
        let upper = layer.join("upper");
        if !self.overlay || !saved.is_dir() || is_mount_point(rootfs) || upper.exists() {
            return Ok(());
        }
        crate::control::snapshots::copy_tree_with(
            &saved,
            &upper,
            crate::control::snapshots::Copy {
                owners: crate::control::snapshots::Owners::Host,
                overlay: true,
            },
        )
        .with_context(|| format!("restoring the image changes of {source}"))
    }

    fn mount_rootfs(&self, lower: &Path, rootfs: &Path, layer: &Path) -> Result<()> {
        if is_mount_point(rootfs) {
            return Ok(());
        }
        if !self.overlay {
            let status = std::process::Command::new("cp")
                .arg("-a")
                .arg(format!("{}/.", lower.display()))
                .arg(rootfs)
                .status()
                .context("running cp")?;
            if !status.success() {
                bail!("copying the image into the sandbox's rootfs failed ({status})");
            }
            return Ok(());
        }
        let upper = layer.join("upper");
        let work = layer.join("work");
        for dir in [&upper, &work] {
            std::fs::create_dir_all(dir)?;
            std::os::unix::fs::chown(dir, Some(ID_BASE), Some(ID_BASE))?;
        }
        let data = format!(
            "lowerdir={},upperdir={},workdir={}",
            lower.display(),
            upper.display(),
            work.display()
        );
        mount_overlay(rootfs, &data, libc::MS_NOSUID | libc::MS_NODEV)
    }

    /// The key of the warm pool a sandbox could be taken from (its image's manifest
    /// digest), or `None` when it cannot be started ahead of its request: a warm
    /// container is made before anyone knows the request, so it has no volumes, no
    /// restored snapshot or template files, the default disk, and an overlay (a copied
    /// rootfs costs what a cold start costs anyway).
    pub fn warm_key(&self, record: &SandboxRecord) -> Result<Option<String>> {
        if !self.overlay
            || !record.volumes.is_empty()
            || record.snapshot_id.is_some()
            || record.template_id.is_some()
        {
            return Ok(None);
        }
        let limits = cgroups::Limits::from_request(&record.resource_limits, &self.defaults)?;
        if limits.disk_bytes != self.defaults.default_disk {
            return Ok(None);
        }
        let image = tokio::task::block_in_place(|| self.ensure_image(record))?;
        Ok(Some(image.digest))
    }

    /// Whether the runtime has created container `id` (its state is recorded: `runc
    /// update`, `pause` and `kill` can reach it). A warm container is offered to
    /// creates only from then on.
    pub fn container_exists(&self, id: &str) -> bool {
        self.state_root.join(id).join("state.json").is_file()
    }

    /// The limits a sandbox asks for, when they differ from those a warm container
    /// was started with (the defaults).
    pub fn limits_beyond_defaults(
        &self,
        record: &SandboxRecord,
    ) -> Result<Option<cgroups::Limits>> {
        let wanted = cgroups::Limits::from_request(&record.resource_limits, &self.defaults)?;
        let defaults = cgroups::Limits::from_request(&Default::default(), &self.defaults)?;
        Ok((wanted != defaults).then_some(wanted))
    }

    /// Sets a running container's cpu, memory and pids limits (`RUNTIME update`),
    /// which orders the cgroup writes so that raising and lowering both work.
    pub fn update_limits(&self, id: &str, limits: &cgroups::Limits) -> Result<()> {
        use std::io::Write;
        let mut child = self
            .runtime_cmd()
            .args(["update", "--resources", "-", id])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("running {} update", self.name))?;
        let body = serde_json::to_vec(&limits.to_update_resources())?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(&body)
                .with_context(|| format!("writing the limits to {} update", self.name))?;
        }
        let out = child
            .wait_with_output()
            .with_context(|| format!("waiting for {} update", self.name))?;
        if !out.status.success() {
            bail!(
                "{} update {id}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// Kills every process of the sandbox and removes the container and its mounts.
    pub fn stop(&self, paths: &SandboxPaths, id: &str, pid: Option<i32>) {
        let _ = self
            .runtime_cmd()
            .args(["kill", "--all", id, "KILL"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self
            .runtime_cmd()
            .args(["delete", "--force", id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(pid) = pid {
            runtime::kill_tree(pid);
        }
        let rootfs = Self::bundle_dir(paths).join("rootfs");
        if is_mount_point(&rootfs) {
            detach(&rootfs);
        }
        disk::Disk::new(&Self::bundle_dir(paths)).teardown(&paths.fs);
    }

    /// The sandbox's memory and CPU usage and limits, from its cgroup on the host
    /// (what `/metrics` reports under an OCI runtime).
    pub fn usage(&self, id: &str) -> Result<cgroups::Usage> {
        cgroups::read_usage(
            Path::new("/sys/fs/cgroup"),
            self.cgroup_version,
            &cgroups_path(id),
        )
    }

    fn simple(&self, verb: &str, id: &str) -> Result<()> {
        let out = self
            .runtime_cmd()
            .args([verb, id])
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("running {} {verb}", self.name))?;
        if !out.status.success() {
            bail!(
                "{} {verb} {id}: {}",
                self.name,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// Freezes every process of the sandbox (the freezer cgroup).
    pub fn pause(&self, id: &str) -> Result<()> {
        self.simple("pause", id)
    }

    pub fn resume(&self, id: &str) -> Result<()> {
        self.simple("resume", id)
    }
}

/// `runc`, `crun`, `runsc` on PATH, or a path to a runtime executable.
fn find_binary(runtime: &str) -> Result<PathBuf> {
    if runtime.contains('/') {
        let p = PathBuf::from(runtime);
        if !p.is_file() {
            bail!("{runtime} is not an executable file");
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path).chain(["/usr/sbin".into(), "/usr/bin".into()]) {
        let candidate = dir.join(runtime);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "{runtime} is not installed (apt-get install {}); or pass --runtime PATH",
        match runtime {
            "runsc" => "gvisor (from gVisor's own repository)",
            other => other,
        }
    )
}

/// The host libraries and loader of the (dynamically linked) server binary, from
/// `ldd`; empty when it is static or `ldd` is missing (the agent then runs directly and
/// needs a compatible libc in the image).
fn agent_libraries(exe: &Path) -> (Vec<(PathBuf, String)>, Option<String>) {
    let Ok(out) = std::process::Command::new("ldd").arg(exe).output() else {
        return (Vec::new(), None);
    };
    if !out.status.success() {
        return (Vec::new(), None);
    }
    let mut libs = Vec::new();
    let mut loader = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let line = line.trim();
        let (name, path) = match line.split_once(" => ") {
            Some((name, rest)) => (name.to_string(), rest.split(" (").next().unwrap_or("")),
            None if line.starts_with('/') => {
                let path = line.split(" (").next().unwrap_or("");
                let name = Path::new(path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                loader = Some(name.clone());
                (name, path)
            }
            None => continue,
        };
        if !path.starts_with('/') || name.is_empty() || name.contains('/') {
            continue;
        }
        if let Ok(real) = std::fs::canonicalize(path) {
            libs.push((real, name));
        }
    }
    if loader.is_none() {
        return (Vec::new(), None);
    }
    (libs, loader)
}

fn mount_overlay(target: &Path, data: &str, flags: libc::c_ulong) -> Result<()> {
    let c_target = std::ffi::CString::new(target.as_os_str().as_encoded_bytes())?;
    let c_data = std::ffi::CString::new(data)?;
    let fstype = c"overlay";
    // SAFETY: valid C strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            c_target.as_ptr(),
            fstype.as_ptr(),
            flags,
            c_data.as_ptr().cast(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("mounting overlayfs on {}", target.display()));
    }
    Ok(())
}

/// Whether this kernel lets us mount overlayfs (tried once at start-up).
fn overlay_works(oci_dir: &Path) -> bool {
    let probe = oci_dir.join("overlay-probe");
    let _ = std::fs::remove_dir_all(&probe);
    let dirs = ["lower", "upper", "work", "merged"].map(|d| probe.join(d));
    if dirs.iter().any(|d| std::fs::create_dir_all(d).is_err()) {
        return false;
    }
    let data = format!(
        "lowerdir={},upperdir={},workdir={}",
        dirs[0].display(),
        dirs[1].display(),
        dirs[2].display()
    );
    let ok = mount_overlay(&dirs[3], &data, libc::MS_NOSUID | libc::MS_NODEV).is_ok();
    if ok {
        if let Ok(c) = std::ffi::CString::new(dirs[3].as_os_str().as_encoded_bytes()) {
            // SAFETY: `c` is a NUL-terminated path that outlives the call; umount2
            // only reads it.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
    }
    let _ = std::fs::remove_dir_all(&probe);
    ok
}

/// The sandbox's cgroup, relative to each hierarchy's root.
pub fn cgroups_path(id: &str) -> String {
    format!("/opensandbox/{id}")
}

/// Lazily unmounts `target` (never touches the files under it).
fn detach(target: &Path) {
    if let Ok(c) = std::ffi::CString::new(target.as_os_str().as_encoded_bytes()) {
        // SAFETY: a valid C string.
        unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    }
}

fn is_mount_point(path: &Path) -> bool {
    let (Ok(me), Some(Ok(parent))) = (
        std::fs::symlink_metadata(path),
        path.parent().map(std::fs::symlink_metadata),
    ) else {
        return false;
    };
    me.dev() != parent.dev()
}

/// Lets the sandboxes' root (host gid [`ID_BASE`]) pass through a root-owned
/// directory that others cannot enter: group [`ID_BASE`], `g+x` (not `g+r`). Host
/// users stay out (a 0700 data dir becomes 0710), and sandboxes see none of the host's
/// directories anyway (own mount namespace).
fn allow_traverse(dir: &Path) -> Result<()> {
    let meta = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o001 != 0 || (meta.gid() == ID_BASE && mode & 0o010 != 0) {
        return Ok(());
    }
    std::os::unix::fs::chown(dir, None, Some(ID_BASE))
        .with_context(|| format!("changing the group of {}", dir.display()))?;
    std::fs::set_permissions(
        dir,
        std::fs::Permissions::from_mode((mode | 0o010) & !0o020),
    )
    .with_context(|| format!("setting g+x on {}", dir.display()))
}

/// Moves owners below `ID_RANGE` (host ids, e.g. root) into the sandbox's range,
/// without following symlinks.
fn shift_owners(dir: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let shift = |id: u32| if id < ID_RANGE { id + ID_BASE } else { id };
    if meta.uid() < ID_RANGE || meta.gid() < ID_RANGE {
        let mode = meta.permissions().mode() & 0o7777;
        std::os::unix::fs::lchown(dir, Some(shift(meta.uid())), Some(shift(meta.gid())))
            .with_context(|| format!("changing the owner of {}", dir.display()))?;
        if !meta.file_type().is_symlink() && mode & 0o6000 != 0 {
            // chown dropped setuid/setgid; the owner is now unprivileged: restore.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
        }
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            shift_owners(&entry?.path())?;
        }
    }
    Ok(())
}
