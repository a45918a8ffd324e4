//! `opensandbox-server images pull|push|ls|rm`: the image cache of a data directory
//! (`DATA_DIR/images/`: registry pulls under `pulls/`, unpacked images under
//! `sha256/HEX/`), and pushes of local layouts to a registry.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};

use super::registry::{self, Credentials, Reference};

#[derive(Debug, Args)]
pub struct ImagesArgs {
    #[command(subcommand)]
    pub command: ImagesCommand,
}

/// Flags every `images` subcommand that talks to a registry takes.
#[derive(Debug, Clone, Args)]
pub struct RegistryFlags {
    /// User name for a registry that asks for credentials (Basic or token auth).
    #[arg(long, env = "OPENSANDBOX_REGISTRY_USERNAME")]
    pub username: Option<String>,
    /// Password of --username (prefer the environment variable: argv is visible to
    /// other users).
    #[arg(
        long,
        env = "OPENSANDBOX_REGISTRY_PASSWORD",
        hide_env_values = true,
        requires = "username"
    )]
    pub password: Option<String>,
}

impl RegistryFlags {
    fn credentials(&self) -> Option<Credentials> {
        self.username.as_ref().map(|u| Credentials {
            username: u.clone(),
            password: self.password.clone().unwrap_or_default(),
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct CacheFlags {
    /// The server's data directory (the cache is DATA_DIR/images).
    #[arg(
        long,
        env = "OPENSANDBOX_DATA_DIR",
        default_value = "./.opensandbox-data"
    )]
    pub data_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Pull an image (REGISTRY/REPO:TAG, REPO@sha256:..., or a local oci:/DIR[:TAG])
    /// into the cache and unpack it, as a create request naming it would.
    Pull {
        reference: String,
        #[command(flatten)]
        cache: CacheFlags,
        /// Registry (HOST[:PORT]) to pull Docker Hub images from instead.
        #[arg(long, env = "OPENSANDBOX_REGISTRY_MIRROR", value_name = "HOST[:PORT]")]
        registry_mirror: Option<String>,
        #[command(flatten)]
        registry: RegistryFlags,
    },
    /// Push a local OCI layout (oci:/DIR[:TAG]) to a registry (REGISTRY/REPO[:TAG]);
    /// prints the manifest digest.
    Push {
        source: String,
        destination: String,
        #[command(flatten)]
        registry: RegistryFlags,
    },
    /// List the cached images: digest, unpacked size, references pulled by.
    Ls {
        #[command(flatten)]
        cache: CacheFlags,
    },
    /// Remove an image from the cache, by a reference it was pulled by or by digest
    /// (a unique prefix of 12 or more hex digits will do). Refused while a sandbox
    /// runs on it.
    Rm {
        image: String,
        #[command(flatten)]
        cache: CacheFlags,
    },
}

pub async fn run(args: ImagesArgs) -> Result<()> {
    match args.command {
        ImagesCommand::Pull {
            reference,
            cache,
            registry_mirror,
            registry,
        } => {
            let dir = cache.data_dir.join("images");
            let started = std::time::Instant::now();
            let (local, label) =
                if reference.starts_with("oci:") || reference.starts_with("docker-archive:") {
                    (reference.clone(), "local".to_string())
                } else {
                    let pulled = registry::pull_with(
                        &reference,
                        registry_mirror.as_deref(),
                        &dir.join("pulls"),
                        &registry::PullOptions {
                            credentials: registry.credentials(),
                            progress: None,
                        },
                    )
                    .await
                    .with_context(|| format!("pulling {reference}"))?;
                    let label = format!("{} bytes downloaded", pulled.downloaded);
                    (pulled.uri, label)
                };
            let pulled_in = started.elapsed();
            let store = super::image::ImageStore::new(dir);
            let image = tokio::task::spawn_blocking(move || store.ensure(&local, super::ID_BASE))
                .await
                .context("unpacking")??;
            println!(
                "{} {reference} ({label} in {:.2}s, ready in {:.2}s)",
                image.digest,
                pulled_in.as_secs_f64(),
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        ImagesCommand::Push {
            source,
            destination,
            registry,
        } => {
            let started = std::time::Instant::now();
            let pushed = super::push::push(&source, &destination, registry.credentials())
                .await
                .with_context(|| format!("pushing {source} to {destination}"))?;
            println!(
                "{} {destination} ({} blobs uploaded, {} bytes; {} already there; {:.2}s)",
                pushed.digest,
                pushed.uploaded,
                pushed.bytes,
                pushed.skipped,
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        ImagesCommand::Ls { cache } => {
            let entries = list(&cache.data_dir.join("images"))?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{:<71}  {:>10}  REFERENCES", "DIGEST", "SIZE")?;
            for e in entries {
                let refs = if e.references.is_empty() {
                    "-".to_string()
                } else {
                    e.references.join(", ")
                };
                writeln!(
                    out,
                    "{:<71}  {:>10}  {refs}{}",
                    e.digest,
                    human(e.size),
                    if e.unpacked {
                        ""
                    } else {
                        " (pulled, not unpacked)"
                    }
                )?;
            }
            Ok(())
        }
        ImagesCommand::Rm { image, cache } => {
            let removed = remove(&cache.data_dir.join("images"), &image)?;
            println!("removed {removed}");
            Ok(())
        }
    }
}

/// One image of the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub digest: String,
    /// Bytes of the unpacked rootfs (or of the pulled blobs when not unpacked).
    pub size: u64,
    pub references: Vec<String>,
    pub unpacked: bool,
    /// Pull layouts holding this image.
    pulls: Vec<PathBuf>,
}

/// The pull layouts under `images/pulls`: (directory, reference, manifest digest).
fn pulls(images: &Path) -> Vec<(PathBuf, String, String)> {
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(images.join("pulls")) else {
        return out;
    };
    for dir in dirs.flatten() {
        let path = dir.path();
        let reference = std::fs::read_to_string(path.join(registry::REFERENCE_FILE))
            .unwrap_or_else(|_| "?".into());
        let digest = std::fs::read(path.join("index.json"))
            .ok()
            .and_then(|raw| serde_json::from_slice::<serde_json::Value>(&raw).ok())
            .and_then(|v| v["manifests"][0]["digest"].as_str().map(str::to_string));
        if let Some(digest) = digest {
            out.push((path, reference.trim().to_string(), digest));
        }
    }
    out
}

/// Bytes of regular files under `dir`, not following symlinks.
fn tree_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                // Allocated bytes: sparse files and hard links aside, what `du` shows.
                total += meta.blocks() * 512;
            }
        }
    }
    total
}

pub fn list(images: &Path) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    if let Ok(dirs) = std::fs::read_dir(images.join("sha256")) {
        for dir in dirs.flatten() {
            let name = dir.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || !dir.path().join("rootfs").is_dir() {
                continue;
            }
            entries.push(Entry {
                digest: format!("sha256:{name}"),
                size: tree_size(&dir.path().join("rootfs")),
                references: Vec::new(),
                unpacked: true,
                pulls: Vec::new(),
            });
        }
    }
    for (path, reference, digest) in pulls(images) {
        match entries.iter_mut().find(|e| e.digest == digest) {
            Some(e) => {
                e.references.push(reference);
                e.pulls.push(path);
            }
            None => entries.push(Entry {
                digest,
                size: tree_size(&path.join("blobs")),
                references: vec![reference],
                unpacked: false,
                pulls: vec![path],
            }),
        }
    }
    for e in &mut entries {
        e.references.sort();
    }
    entries.sort_by(|a, b| a.digest.cmp(&b.digest));
    Ok(entries)
}

/// Removes the image `what` names (a digest, a unique digest prefix, or a reference
/// it was pulled by) and returns its digest.
pub fn remove(images: &Path, what: &str) -> Result<String> {
    let entries = list(images)?;
    let hex = what.strip_prefix("sha256:").unwrap_or(what);
    let by_digest: Vec<&Entry> = if hex.len() >= 12 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        entries
            .iter()
            .filter(|e| e.digest["sha256:".len()..].starts_with(hex))
            .collect()
    } else {
        Vec::new()
    };
    let entry = match by_digest.as_slice() {
        [one] => (*one).clone(),
        [] => {
            // A reference: the one given, or as it reads once normalised
            // (`python:3.11` pulled as `python:3.11` or `library/python:3.11`).
            let wanted = Reference::parse(what).ok();
            entries
                .iter()
                .find(|e| {
                    e.references.iter().any(|r| {
                        r == what || (wanted.is_some() && Reference::parse(r).ok() == wanted)
                    })
                })
                .cloned()
                .ok_or_else(|| anyhow!("no cached image is named {what:?} (see `images ls`)"))?
        }
        many => bail!(
            "{what:?} matches {} images; give more of the digest",
            many.len()
        ),
    };
    let cached = images.join("sha256").join(&entry.digest["sha256:".len()..]);
    if in_use(&cached.join("rootfs")) {
        bail!(
            "{} is the image of a running sandbox; delete the sandbox first",
            entry.digest
        );
    }
    for pull in &entry.pulls {
        discard(pull)?;
    }
    if cached.exists() {
        discard(&cached)?;
    }
    Ok(entry.digest)
}

/// Whether an overlay mount uses `rootfs` as its lower directory.
fn in_use(rootfs: &Path) -> bool {
    let needle = format!("lowerdir={}", rootfs.display());
    std::fs::read_to_string("/proc/self/mountinfo")
        .map(|m| {
            m.lines()
                .any(|l| l.split([',', ' ']).any(|opt| opt == needle))
        })
        .unwrap_or(false)
}

/// Renames `dir` out of the way first (a concurrent create never sees half of it),
/// then deletes it.
fn discard(dir: &Path) -> Result<()> {
    let parent = dir.parent().unwrap_or(dir);
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let trash = parent.join(format!(".rm-{name}-{}", std::process::id()));
    std::fs::rename(dir, &trash).with_context(|| format!("moving {}", dir.display()))?;
    std::fs::remove_dir_all(&trash).with_context(|| format!("removing {}", trash.display()))
}

fn human(bytes: u64) -> String {
    const MB: f64 = 1024.0 * 1024.0;
    if bytes as f64 >= 1024.0 * MB {
        format!("{:.1} GB", bytes as f64 / (1024.0 * MB))
    } else {
        format!("{:.1} MB", bytes as f64 / MB)
    }
}
