//! Images: `image.uri` naming a local OCI image layout (`oci:/path[:tag]`) or a
//! `docker save` tarball (`docker-archive:/path`), unpacked once into a
//! content-addressed cache under `DATA_DIR/images/` and shared by every sandbox.
//!
//! Every blob is checked against its sha256 digest while it is read. Layers are applied
//! in order onto one directory, with OCI whiteouts (`.wh.NAME` deletes `NAME`,
//! `.wh..wh..opq` empties the directory of what lower layers put there). File owners
//! are shifted into the sandboxes' user-namespace range as they are unpacked, so root
//! of the image is the unprivileged host id [`super::ID_BASE`] on the host and a
//! setuid file of the image is never setuid-root on the host. Nothing in an image can
//! write outside its cache directory: paths with `..`, and links or whiteouts whose
//! parent resolves outside the root, are refused.
//!
//! Other URIs are registry references, pulled into a local layout first (see
//! `registry`); a failed pull is an `IMAGE_PULL_FAILED` error, never a fallback to the
//! host's files.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// What a create request's `image.uri` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// An OCI image layout directory and the tag (`org.opencontainers.image.ref.name`)
    /// or `None` for the layout's only manifest.
    OciLayout { dir: PathBuf, tag: Option<String> },
    /// A `docker save` tar file.
    DockerArchive(PathBuf),
}

impl ImageSource {
    pub fn parse(uri: &str) -> Result<Self> {
        if let Some(rest) = uri.strip_prefix("oci:") {
            // `oci:/path:tag`: the tag is what follows the last `:` after the last `/`.
            let (dir, tag) = match rest.rfind(':') {
                Some(i) if !rest[i + 1..].contains('/') && i > 0 => {
                    (&rest[..i], Some(rest[i + 1..].to_string()))
                }
                _ => (rest, None),
            };
            if !dir.starts_with('/') {
                bail!("{uri:?}: an oci: image must name an absolute directory");
            }
            return Ok(Self::OciLayout {
                dir: PathBuf::from(dir),
                tag: tag.filter(|t| !t.is_empty()),
            });
        }
        if let Some(path) = uri.strip_prefix("docker-archive:") {
            let path = path.split(':').next().unwrap_or(path);
            if !path.starts_with('/') {
                bail!("{uri:?}: a docker-archive: image must name an absolute file");
            }
            return Ok(Self::DockerArchive(PathBuf::from(path)));
        }
        bail!("{uri:?} is not a local image (oci:/ABS/LAYOUT[:TAG] or docker-archive:/ABS/FILE)")
    }
}

/// The parts of an image configuration a sandbox uses.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ImageConfig {
    #[serde(rename = "Env", default)]
    pub env: Option<Vec<String>>,
    #[serde(rename = "WorkingDir", default)]
    pub working_dir: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    config: Option<ImageConfig>,
}

/// An unpacked image in the cache.
#[derive(Debug, Clone)]
pub struct CachedImage {
    /// `sha256:...` of the manifest (OCI layout) or of the config (docker archive).
    pub digest: String,
    pub rootfs: PathBuf,
    pub config: ImageConfig,
}

/// One layer to apply: where its bytes are, what digest they must have, and how
/// they are compressed.
struct Layer {
    path: PathBuf,
    digest: Option<String>,
}

/// The image cache: `DIR/sha256/HEX/{rootfs,config.json}`.
#[derive(Debug)]
pub struct ImageStore {
    dir: PathBuf,
    /// Serialises unpacking (two creates of a new image unpack it once).
    lock: std::sync::Mutex<()>,
}

impl ImageStore {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            lock: std::sync::Mutex::new(()),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The image `uri` names, unpacked into the cache if it is not there yet.
    /// Blocking (unpacking takes seconds): call from a blocking thread.
    pub fn ensure(&self, uri: &str, id_base: u32) -> Result<CachedImage> {
        let source = ImageSource::parse(uri)?;
        let (digest, config_blob, layers) = match &source {
            ImageSource::OciLayout { dir, tag } => resolve_layout(dir, tag.as_deref())?,
            ImageSource::DockerArchive(path) => {
                // The archive is extracted next to the cache, keyed by its config
                // digest; the layers are then read from there.
                return self.ensure_docker_archive(path, id_base);
            }
        };
        self.ensure_unpacked(&digest, &config_blob, &layers, id_base)
    }

    fn entry_dir(&self, digest: &str) -> Result<PathBuf> {
        let hex = digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| anyhow!("unsupported digest {digest:?} (only sha256)"))?;
        Ok(self.dir.join("sha256").join(hex))
    }

    fn ensure_unpacked(
        &self,
        digest: &str,
        config_blob: &Path,
        layers: &[Layer],
        id_base: u32,
    ) -> Result<CachedImage> {
        let entry = self.entry_dir(digest)?;
        let cached = |entry: &Path| -> Result<CachedImage> {
            let raw = std::fs::read(entry.join("config.json"))
                .with_context(|| format!("reading {}", entry.join("config.json").display()))?;
            let file: ConfigFile =
                serde_json::from_slice(&raw).context("parsing the image configuration")?;
            Ok(CachedImage {
                digest: digest.to_string(),
                rootfs: entry.join("rootfs"),
                config: file.config.unwrap_or_default(),
            })
        };
        if entry.join("rootfs").is_dir() {
            return cached(&entry);
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        if entry.join("rootfs").is_dir() {
            return cached(&entry);
        }
        let parent = entry.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        restrict(&self.dir)?;
        let tmp = tempfile::Builder::new()
            .prefix(".unpack-")
            .tempdir_in(parent)
            .context("creating an unpack directory")?;
        let rootfs = tmp.path().join("rootfs");
        std::fs::create_dir(&rootfs).context("creating the rootfs directory")?;
        for (i, layer) in layers.iter().enumerate() {
            apply_layer(layer, &rootfs, id_base)
                .with_context(|| format!("unpacking layer {} of {}", i + 1, layers.len()))?;
        }
        // The root directory itself belongs to the image's root.
        lchown(&rootfs, id_base, id_base)?;
        std::fs::copy(config_blob, tmp.path().join("config.json"))
            .context("storing the image configuration")?;
        let staged = tmp.keep();
        if let Err(err) = std::fs::rename(&staged, &entry) {
            let _ = std::fs::remove_dir_all(&staged);
            if !entry.join("rootfs").is_dir() {
                return Err(err)
                    .with_context(|| format!("moving the image to {}", entry.display()));
            }
        }
        cached(&entry)
    }

    fn ensure_docker_archive(&self, path: &Path, id_base: u32) -> Result<CachedImage> {
        let extracted = self.dir.join("archives");
        std::fs::create_dir_all(&extracted)
            .with_context(|| format!("creating {}", extracted.display()))?;
        restrict(&self.dir)?;
        // An archive already unpacked (same path, size and mtime) is not read again:
        // `archives/KEY` names the image digest it gave.
        let meta =
            std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
        let key = {
            use std::os::unix::fs::MetadataExt;
            let mut h = Sha256::new();
            h.update(path.as_os_str().as_encoded_bytes());
            h.update(meta.len().to_le_bytes());
            h.update(meta.mtime().to_le_bytes());
            h.update(meta.mtime_nsec().to_le_bytes());
            hex(&h.finalize())
        };
        let marker = extracted.join(&key);
        if let Ok(digest) = std::fs::read_to_string(&marker) {
            let digest = digest.trim();
            if let Ok(entry) = self.entry_dir(digest) {
                if entry.join("rootfs").is_dir() {
                    return self.ensure_unpacked(digest, &entry.join("config.json"), &[], id_base);
                }
            }
        }
        let tmp = tempfile::Builder::new()
            .prefix(".archive-")
            .tempdir_in(&extracted)
            .context("creating an archive directory")?;
        let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let mut archive = tar::Archive::new(BufReader::new(file));
        for entry in archive.entries().context("reading the archive")? {
            let mut entry = entry.context("reading the archive")?;
            if !matches!(
                entry.header().entry_type(),
                tar::EntryType::Regular | tar::EntryType::Directory
            ) {
                continue;
            }
            entry
                .unpack_in(tmp.path())
                .context("extracting the archive")?;
        }
        #[derive(Deserialize)]
        struct Item {
            #[serde(rename = "Config")]
            config: String,
            #[serde(rename = "Layers")]
            layers: Vec<String>,
        }
        let manifest: Vec<Item> = serde_json::from_slice(
            &std::fs::read(tmp.path().join("manifest.json"))
                .context("the archive has no manifest.json (not a docker save tarball?)")?,
        )
        .context("parsing the archive's manifest.json")?;
        let item = manifest
            .first()
            .ok_or_else(|| anyhow!("the archive's manifest.json lists no image"))?;
        let inside = |name: &str| -> Result<PathBuf> {
            let rel = safe_relative(Path::new(name))
                .ok_or_else(|| anyhow!("the archive names an unsafe path {name:?}"))?;
            Ok(tmp.path().join(rel))
        };
        let config_path = inside(&item.config)?;
        let digest = format!("sha256:{}", sha256_file(&config_path)?);
        let layers = item
            .layers
            .iter()
            .map(|l| {
                Ok(Layer {
                    path: inside(l)?,
                    // `docker save` names layers by the digest of their uncompressed
                    // content only in newer formats: no digest to check here.
                    digest: None,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let image = self.ensure_unpacked(&digest, &config_path, &layers, id_base)?;
        let _ = std::fs::write(&marker, &digest);
        Ok(image)
    }
}

/// Data dir subtrees holding image files: root-only (setuid files of images must not
/// be reachable by host users).
fn restrict(dir: &Path) -> Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("setting mode 0700 on {}", dir.display()))
}

#[derive(Deserialize)]
struct Descriptor {
    digest: String,
    #[serde(rename = "mediaType", default)]
    media_type: Option<String>,
    #[serde(default)]
    annotations: Option<std::collections::HashMap<String, String>>,
}

/// Picks the manifest of `tag` in an OCI layout, verifies it, and lists the config
/// and the layers.
fn resolve_layout(dir: &Path, tag: Option<&str>) -> Result<(String, PathBuf, Vec<Layer>)> {
    #[derive(Deserialize)]
    struct Index {
        manifests: Vec<Descriptor>,
    }
    #[derive(Deserialize)]
    struct Manifest {
        config: Descriptor,
        layers: Vec<Descriptor>,
    }
    let index_path = dir.join("index.json");
    let index: Index = serde_json::from_slice(
        &std::fs::read(&index_path)
            .with_context(|| format!("{} is not an OCI image layout", dir.display()))?,
    )
    .with_context(|| format!("parsing {}", index_path.display()))?;
    let ref_name = |d: &Descriptor| {
        d.annotations
            .as_ref()
            .and_then(|a| a.get("org.opencontainers.image.ref.name"))
            .cloned()
    };
    let chosen = match tag {
        Some(tag) => index
            .manifests
            .iter()
            .find(|d| ref_name(d).as_deref() == Some(tag))
            .ok_or_else(|| anyhow!("{} has no image tagged {tag:?}", dir.display()))?,
        None if index.manifests.len() == 1 => &index.manifests[0],
        None => bail!(
            "{} holds {} images: name one with oci:PATH:TAG",
            dir.display(),
            index.manifests.len()
        ),
    };
    if chosen
        .media_type
        .as_deref()
        .is_some_and(|m| m.contains("index") || m.contains("manifest.list"))
    {
        bail!("multi-platform image indexes are not supported yet; name a single manifest");
    }
    let blob = |d: &str| -> Result<PathBuf> {
        let hex = d
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| anyhow!("unsupported digest {d:?} (only sha256)"))?;
        Ok(dir.join("blobs").join("sha256").join(hex))
    };
    let manifest_path = blob(&chosen.digest)?;
    let raw = std::fs::read(&manifest_path)
        .with_context(|| format!("reading the manifest {}", chosen.digest))?;
    let actual = format!("sha256:{}", hex(&Sha256::digest(&raw)));
    if actual != chosen.digest {
        bail!(
            "manifest digest mismatch: expected {}, got {actual}",
            chosen.digest
        );
    }
    let manifest: Manifest = serde_json::from_slice(&raw).context("parsing the manifest")?;
    let config_path = blob(&manifest.config.digest)?;
    let config_actual = format!("sha256:{}", sha256_file(&config_path)?);
    if config_actual != manifest.config.digest {
        bail!(
            "config digest mismatch: expected {}, got {config_actual}",
            manifest.config.digest
        );
    }
    let layers = manifest
        .layers
        .iter()
        .map(|l| {
            if l.media_type.as_deref().is_some_and(|m| m.contains("zstd")) {
                bail!(
                    "zstd-compressed layers are not supported yet ({})",
                    l.digest
                );
            }
            Ok(Layer {
                path: blob(&l.digest)?,
                digest: Some(l.digest.clone()),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((chosen.digest.clone(), config_path, layers))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_file(path: &Path) -> Result<String> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).with_context(|| format!("reading {}", path.display()))?;
    Ok(hex(&hasher.finalize()))
}

/// A reader that hashes what passes through it.
struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// `path` without a root, `.` or `..` (None if it would climb).
fn safe_relative(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir | Component::RootDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn lchown(path: &Path, uid: u32, gid: u32) -> Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
        .with_context(|| format!("changing the owner of {}", path.display()))
}

/// True if `path`'s parent directory, with symlinks resolved, lies inside `root`.
fn parent_inside(root: &Path, path: &Path) -> bool {
    let Some(parent) = path.parent() else {
        return false;
    };
    match (std::fs::canonicalize(parent), std::fs::canonicalize(root)) {
        (Ok(p), Ok(r)) => p.starts_with(r),
        _ => false,
    }
}

fn remove_any(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Applies one layer tarball (plain or gzip) onto `root`, verifying its digest.
fn apply_layer(layer: &Layer, root: &Path, id_base: u32) -> Result<()> {
    let file =
        File::open(&layer.path).with_context(|| format!("opening {}", layer.path.display()))?;
    let mut hashing = HashingReader {
        inner: BufReader::with_capacity(1 << 20, file),
        hasher: Sha256::new(),
    };
    let mut magic = [0u8; 2];
    let n = read_full(&mut hashing, &mut magic)?;
    let head = std::io::Cursor::new(magic[..n].to_vec());
    let chained = head.chain(&mut hashing);
    let gz = n == 2 && magic == [0x1f, 0x8b];
    let reader: Box<dyn Read + '_> = if gz {
        Box::new(flate2::read::GzDecoder::new(chained))
    } else {
        Box::new(chained)
    };
    unpack_tar(reader, root, id_base)?;
    // Read any trailing bytes so the digest covers the whole blob.
    std::io::copy(&mut hashing, &mut std::io::sink()).context("reading the layer's end")?;
    if let Some(expected) = &layer.digest {
        let actual = format!("sha256:{}", hex(&hashing.hasher.finalize()));
        if &actual != expected {
            bail!("layer digest mismatch: expected {expected}, got {actual}");
        }
    }
    Ok(())
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]).context("reading a layer")? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

fn unpack_tar(reader: impl Read, root: &Path, id_base: u32) -> Result<()> {
    let mut archive = tar::Archive::new(reader);
    archive.set_preserve_permissions(true);
    archive.set_preserve_mtime(true);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(true);
    // Paths this layer created: an opaque whiteout only hides what lower layers made.
    let mut created: HashSet<PathBuf> = HashSet::new();
    for entry in archive.entries().context("reading the layer")? {
        let mut entry = entry.context("reading the layer")?;
        let raw_path = entry.path().context("a layer entry's path")?.into_owned();
        let Some(rel) = safe_relative(&raw_path) else {
            bail!("layer entry {} climbs out of the image", raw_path.display());
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let target = root.join(&rel);
        if name == ".wh..wh..opq" {
            let dir = target.parent().unwrap_or(root).to_path_buf();
            if !parent_inside(root, &target) {
                bail!(
                    "opaque whiteout {} resolves outside the image",
                    rel.display()
                );
            }
            if let Ok(children) = std::fs::read_dir(&dir) {
                for child in children.flatten() {
                    let p = child.path();
                    if !created.contains(&p) {
                        remove_any(&p).with_context(|| format!("removing {}", p.display()))?;
                    }
                }
            }
            continue;
        }
        if let Some(hidden) = name.strip_prefix(".wh.") {
            let victim = target.with_file_name(hidden);
            if !parent_inside(root, &victim) {
                bail!("whiteout {} resolves outside the image", rel.display());
            }
            remove_any(&victim).with_context(|| format!("removing {}", victim.display()))?;
            continue;
        }
        let header = entry.header();
        let kind = header.entry_type();
        let uid = u32::try_from(header.uid().unwrap_or(0)).unwrap_or(0);
        let gid = u32::try_from(header.gid().unwrap_or(0)).unwrap_or(0);
        let mode = header.mode().unwrap_or(0o644);
        if uid >= super::ID_RANGE || gid >= super::ID_RANGE {
            bail!(
                "{} is owned by {uid}:{gid}, outside the sandboxes' {} ids",
                rel.display(),
                super::ID_RANGE
            );
        }
        // A different kind of file replaces what a lower layer had here.
        if let Ok(existing) = std::fs::symlink_metadata(&target) {
            if !(existing.is_dir() && kind == tar::EntryType::Directory) {
                if !parent_inside(root, &target) {
                    bail!("{} resolves outside the image", rel.display());
                }
                remove_any(&target).with_context(|| format!("replacing {}", target.display()))?;
            }
        }
        let unpacked = entry
            .unpack_in(root)
            .with_context(|| format!("unpacking {}", rel.display()))?;
        if !unpacked {
            bail!(
                "layer entry {} was refused (outside the image)",
                rel.display()
            );
        }
        if matches!(
            kind,
            tar::EntryType::Regular
                | tar::EntryType::Directory
                | tar::EntryType::Symlink
                | tar::EntryType::Char
                | tar::EntryType::Block
                | tar::EntryType::Fifo
                | tar::EntryType::Continuous
        ) {
            lchown(&target, id_base + uid, id_base + gid)?;
            // chown clears setuid/setgid bits: put the image's mode back (the owner is
            // now the sandbox's id, never host root).
            if kind != tar::EntryType::Symlink {
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode & 0o7777))
                    .with_context(|| format!("setting the mode of {}", target.display()))?;
            }
        }
        created.insert(target);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse() {
        assert_eq!(
            ImageSource::parse("oci:/a/b:latest").ok(),
            Some(ImageSource::OciLayout {
                dir: "/a/b".into(),
                tag: Some("latest".into())
            })
        );
        assert_eq!(
            ImageSource::parse("oci:/a/b").ok(),
            Some(ImageSource::OciLayout {
                dir: "/a/b".into(),
                tag: None
            })
        );
        assert_eq!(
            ImageSource::parse("docker-archive:/x.tar").ok(),
            Some(ImageSource::DockerArchive("/x.tar".into()))
        );
        assert!(ImageSource::parse("python:3.11").is_err()); // a registry reference
        assert!(ImageSource::parse("oci:relative").is_err());
    }

    #[test]
    fn relative_paths_never_climb() {
        assert_eq!(
            safe_relative(Path::new("/a/./b")),
            Some(PathBuf::from("a/b"))
        );
        assert_eq!(safe_relative(Path::new("a/../../b")), None);
    }

    fn tar_with(entries: &[(&str, Option<&[u8]>)]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (path, data) in entries {
            let mut header = tar::Header::new_gnu();
            match data {
                Some(data) => {
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_size(data.len() as u64);
                    header.set_mode(0o644);
                    header.set_cksum();
                    builder
                        .append_data(&mut header, path, *data)
                        .unwrap_or_else(|e| panic!("{e}"));
                }
                None => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_size(0);
                    header.set_mode(0o755);
                    header.set_cksum();
                    builder
                        .append_data(&mut header, path, &[][..])
                        .unwrap_or_else(|e| panic!("{e}"));
                }
            }
        }
        builder.into_inner().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn whiteouts_apply_across_layers() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap_or_else(|e| panic!("{e}"));
        let base = nix::unistd::geteuid().as_raw();
        // Running unprivileged, chown to anything but ourselves fails: keep the owner.
        let id_base = if base == 0 { 100_000 } else { base };
        if base != 0 {
            return; // owners can only be shifted as root
        }
        let lower = tar_with(&[
            ("etc/", None),
            ("etc/a", Some(b"a")),
            ("etc/b", Some(b"b")),
            ("opq/", None),
            ("opq/old", Some(b"o")),
        ]);
        let upper = tar_with(&[
            ("etc/.wh.a", Some(b"")),
            ("opq/", None),
            ("opq/.wh..wh..opq", Some(b"")),
            ("opq/new", Some(b"n")),
        ]);
        unpack_tar(&lower[..], &root, id_base).unwrap_or_else(|e| panic!("{e:#}"));
        unpack_tar(&upper[..], &root, id_base).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(!root.join("etc/a").exists());
        assert!(root.join("etc/b").exists());
        assert!(!root.join("opq/old").exists());
        assert!(root.join("opq/new").exists());
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(root.join("etc/b")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(meta.uid(), id_base);
    }
}
