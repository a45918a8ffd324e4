//! `opensandbox-server images push oci:/LAYOUT[:TAG] REGISTRY/REPO[:TAG]`: uploads a
//! local OCI image layout to a registry with the Docker Registry HTTP API v2 (what
//! feeds the loopback `docker-registry` of the tests and the demo, with no Docker and
//! no skopeo).
//!
//! Each blob (config, then layers) is skipped when the registry has it (`HEAD`), else
//! uploaded: `POST /blobs/uploads/`, then for small blobs one monolithic
//! `PUT ?digest=`, for larger ones `PATCH` chunks of [`CHUNK`] bytes (bounded memory)
//! and a closing `PUT ?digest=`. The manifest goes last (`PUT /manifests/TAG`), and
//! the digest the registry answers must be the one of the bytes sent.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};

use super::image::ImageSource;
use super::registry::{reason, Credentials, Reference, Session};

/// Blobs up to this size go in one `PUT`; larger ones in `PATCH` chunks of it.
pub const CHUNK: usize = 8 << 20;

/// A manifest of a local layout and the blobs it names.
struct LocalImage {
    manifest: Vec<u8>,
    media_type: String,
    digest: String,
    blobs: Vec<(String, PathBuf, u64)>,
}

fn blob_path(dir: &Path, digest: &str) -> Result<PathBuf> {
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| anyhow!("unsupported digest {digest:?} (only sha256)"))?;
    Ok(dir.join("blobs/sha256").join(hex))
}

fn read_layout(dir: &Path, tag: Option<&str>) -> Result<LocalImage> {
    let index_path = dir.join("index.json");
    let index: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&index_path)
            .with_context(|| format!("{} is not an OCI image layout", dir.display()))?,
    )
    .with_context(|| format!("parsing {}", index_path.display()))?;
    let manifests = index["manifests"].as_array().cloned().unwrap_or_default();
    let chosen = match tag {
        Some(tag) => manifests
            .iter()
            .find(|d| d["annotations"]["org.opencontainers.image.ref.name"] == tag)
            .ok_or_else(|| anyhow!("{} has no image tagged {tag:?}", dir.display()))?,
        None if manifests.len() == 1 => &manifests[0],
        None => bail!(
            "{} holds {} images: name one with oci:PATH:TAG",
            dir.display(),
            manifests.len()
        ),
    };
    let digest = chosen["digest"]
        .as_str()
        .ok_or_else(|| anyhow!("the index names a manifest without a digest"))?
        .to_string();
    let manifest = std::fs::read(blob_path(dir, &digest)?)
        .with_context(|| format!("reading the manifest {digest}"))?;
    let actual = format!("sha256:{:x}", Sha256::digest(&manifest));
    if actual != digest {
        bail!("manifest digest mismatch: expected {digest}, got {actual}");
    }
    let doc: serde_json::Value =
        serde_json::from_slice(&manifest).context("parsing the manifest")?;
    if doc.get("manifests").is_some() {
        bail!("pushing multi-platform image indexes is not supported; name a single manifest");
    }
    let media_type = chosen["mediaType"]
        .as_str()
        .or(doc["mediaType"].as_str())
        .unwrap_or("application/vnd.oci.image.manifest.v1+json")
        .to_string();
    let mut blobs = Vec::new();
    for d in std::iter::once(&doc["config"]).chain(doc["layers"].as_array().into_iter().flatten()) {
        let digest = d["digest"]
            .as_str()
            .ok_or_else(|| anyhow!("the manifest names a blob without a digest"))?;
        let path = blob_path(dir, digest)?;
        let size = std::fs::metadata(&path)
            .with_context(|| format!("the layout lacks the blob {digest}"))?
            .len();
        blobs.push((digest.to_string(), path, size));
    }
    Ok(LocalImage {
        manifest,
        media_type,
        digest,
        blobs,
    })
}

/// What a push did.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// `sha256:` of the manifest, as the registry confirmed it.
    pub digest: String,
    /// Blobs uploaded, and blobs the registry had already.
    pub uploaded: usize,
    pub skipped: usize,
    pub bytes: u64,
}

/// Pushes the image `source` (`oci:/LAYOUT[:TAG]`) to `dest`
/// (`REGISTRY/REPO[:TAG]`; the tag defaults to `latest`).
pub async fn push(source: &str, dest: &str, credentials: Option<Credentials>) -> Result<Pushed> {
    let ImageSource::OciLayout { dir, tag } = ImageSource::parse(source)? else {
        bail!("{source:?}: only oci: layouts can be pushed");
    };
    let image = read_layout(&dir, tag.as_deref())?;
    let dest = Reference::parse(dest)?;
    if dest.reference.starts_with("sha256:") {
        bail!("push to a tag, not a digest (the registry names the manifest by its digest)");
    }
    let mut session = Session::new(&dest.registry, &dest.repository, credentials, "pull,push")?;
    let mut pushed = Pushed {
        digest: String::new(),
        uploaded: 0,
        skipped: 0,
        bytes: 0,
    };
    for (digest, path, size) in &image.blobs {
        if upload_blob(&mut session, digest, path, *size).await? {
            pushed.uploaded += 1;
            pushed.bytes += size;
        } else {
            pushed.skipped += 1;
        }
    }
    let url = session.url(&format!("manifests/{}", dest.reference));
    let body = image.manifest.clone();
    let media_type = image.media_type.clone();
    let resp = session
        .send(&format!("PUT {url}"), |c| {
            c.put(&url)
                .header("Content-Type", &media_type)
                .body(body.clone())
        })
        .await?;
    if !resp.status().is_success() {
        let status = resp.status();
        bail!("PUT {url}: {status}: {}", reason(resp).await);
    }
    let confirmed = resp
        .headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(confirmed) = confirmed {
        if confirmed != image.digest {
            bail!(
                "the registry stored the manifest as {confirmed}, not {}",
                image.digest
            );
        }
    }
    pushed.digest = image.digest;
    Ok(pushed)
}

fn with_digest(location: &str, digest: &str) -> String {
    let sep = if location.contains('?') { '&' } else { '?' };
    format!("{location}{sep}digest={digest}")
}

/// Uploads one blob unless the registry has it; true when it was uploaded.
async fn upload_blob(session: &mut Session, digest: &str, path: &Path, size: u64) -> Result<bool> {
    let url = session.url(&format!("blobs/{digest}"));
    let head = session
        .send(&format!("HEAD {url}"), |c| c.head(&url))
        .await?;
    if head.status().is_success() {
        return Ok(false);
    }
    let start_url = session.url("blobs/uploads/");
    let resp = session
        .send(&format!("POST {start_url}"), |c| {
            c.post(&start_url).header("Content-Length", "0")
        })
        .await?;
    if resp.status() != reqwest::StatusCode::ACCEPTED {
        let status = resp.status();
        bail!("POST {start_url}: {status}: {}", reason(resp).await);
    }
    let mut location = location(session, &resp)?;
    let mut file =
        std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut body = Vec::new();
    if size as usize <= CHUNK {
        file.read_to_end(&mut body)
            .with_context(|| format!("reading {}", path.display()))?;
        hasher.update(&body);
        check_digest(digest, hasher)?;
    } else {
        // Chunked: PATCH each chunk with its byte range; the registry answers with
        // where the next one goes.
        let mut offset = 0u64;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = read_full(&mut file, &mut buf)
                .with_context(|| format!("reading {}", path.display()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            let chunk = buf[..n].to_vec();
            let range = format!("{offset}-{}", offset + n as u64 - 1);
            let target = location.clone();
            let resp = session
                .send(&format!("PATCH {target}"), |c| {
                    c.patch(&target)
                        .header("Content-Type", "application/octet-stream")
                        .header("Content-Range", &range)
                        .body(chunk.clone())
                })
                .await?;
            if resp.status() != reqwest::StatusCode::ACCEPTED {
                let status = resp.status();
                bail!("PATCH {target} ({range}): {status}: {}", reason(resp).await);
            }
            location = self::location(session, &resp)?;
            offset += n as u64;
        }
        check_digest(digest, hasher)?;
    }
    let target = with_digest(&location, digest);
    let resp = session
        .send(&format!("PUT {target}"), |c| {
            c.put(&target)
                .header("Content-Type", "application/octet-stream")
                .body(body.clone())
        })
        .await?;
    if resp.status() != reqwest::StatusCode::CREATED {
        let status = resp.status();
        bail!("PUT {target}: {status}: {}", reason(resp).await);
    }
    Ok(true)
}

fn location(session: &Session, resp: &reqwest::Response) -> Result<String> {
    let raw = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| anyhow!("the registry's upload answer has no Location"))?;
    session.resolve(raw)
}

fn check_digest(expected: &str, hasher: Sha256) -> Result<()> {
    let actual = format!("sha256:{:x}", hasher.finalize());
    if actual != expected {
        bail!("blob {expected} of the layout has digest {actual} (corrupt layout)");
    }
    Ok(())
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_joins_the_location_query() {
        assert_eq!(
            with_digest("http://r/u/1", "sha256:ab"),
            "http://r/u/1?digest=sha256:ab"
        );
        assert_eq!(
            with_digest("http://r/u/1?_state=x", "sha256:ab"),
            "http://r/u/1?_state=x&digest=sha256:ab"
        );
    }
}
