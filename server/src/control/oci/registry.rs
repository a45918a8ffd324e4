//! Registry pulls (Docker Registry HTTP API v2 / OCI distribution): a reference such
//! as `127.0.0.1:5000/debian-python:latest` or `library/python:3.11` is fetched into a
//! local OCI image layout under `DATA_DIR/images/pulls/`, which [`super::image`] then
//! verifies (every digest) and unpacks like any `oci:` image.
//!
//! Anonymous bearer-token auth (the `WWW-Authenticate: Bearer realm=...` challenge that
//! Docker Hub and `docker-registry` send), streaming blobs to files (bounded memory),
//! manifest lists resolved to linux/amd64 or arm64 (the server's own architecture).
//! `--registry-mirror HOST[:PORT]` sends Docker Hub references there instead. Loopback
//! registries (`localhost`, `127.*`) are spoken to over plain HTTP, every other one over
//! HTTPS.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use futures::StreamExt;
use sha2::{Digest, Sha256};

const DOCKER_HUB: &str = "registry-1.docker.io";
const ACCEPT: &str = "application/vnd.oci.image.index.v1+json, \
    application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json, \
    application/vnd.docker.distribution.manifest.v2+json";

/// `[registry/]repository[:tag|@digest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub registry: String,
    pub repository: String,
    pub reference: String,
}

impl Reference {
    pub fn parse(raw: &str) -> Result<Self> {
        let (name, reference) = match raw.split_once('@') {
            Some((n, d)) => (n, d.to_string()),
            None => match raw.rfind(':') {
                Some(i) if !raw[i + 1..].contains('/') => (&raw[..i], raw[i + 1..].to_string()),
                _ => (raw, "latest".to_string()),
            },
        };
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_string(), rest.to_string())
            }
            _ => (DOCKER_HUB.to_string(), name.to_string()),
        };
        let repository = if registry == DOCKER_HUB && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository
        };
        let ok = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-/:".contains(&b))
        };
        if !ok(&repository) || !ok(&reference) || repository.contains("..") {
            bail!("{raw:?} is not an image reference");
        }
        Ok(Self {
            registry,
            repository,
            reference,
        })
    }

    /// A file-system safe name of this reference (for the pull directory).
    fn dir_name(&self) -> String {
        let raw = format!("{}/{}:{}", self.registry, self.repository, self.reference);
        let h = Sha256::digest(raw.as_bytes());
        h.iter().take(16).map(|b| format!("{b:02x}")).collect()
    }
}

fn scheme(host: &str) -> &'static str {
    let name = host.split(':').next().unwrap_or(host);
    if name == "localhost" || name.starts_with("127.") || name == "[::1]" {
        "http"
    } else {
        "https"
    }
}

struct Session {
    client: reqwest::Client,
    base: String,
    repository: String,
    token: Option<String>,
}

impl Session {
    async fn get(&mut self, path: &str, accept: Option<&str>) -> Result<reqwest::Response> {
        for attempt in 0..2 {
            let url = format!("{}/v2/{}/{path}", self.base, self.repository);
            let mut req = self.client.get(&url);
            if let Some(a) = accept {
                req = req.header("Accept", a);
            }
            if let Some(t) = &self.token {
                req = req.bearer_auth(t);
            }
            let resp = req.send().await.with_context(|| format!("GET {url}"))?;
            if resp.status() == reqwest::StatusCode::UNAUTHORIZED && attempt == 0 {
                let challenge = resp
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                self.token = Some(self.anonymous_token(&challenge).await?);
                continue;
            }
            if !resp.status().is_success() {
                let status = resp.status();
                let body = resp.text().await.unwrap_or_default();
                bail!(
                    "GET {url}: {status}: {}",
                    body.chars().take(300).collect::<String>()
                );
            }
            return Ok(resp);
        }
        bail!("the registry refused the anonymous token")
    }

    async fn anonymous_token(&self, challenge: &str) -> Result<String> {
        let params = challenge
            .strip_prefix("Bearer ")
            .ok_or_else(|| anyhow!("the registry asks for {challenge:?}, not a bearer token"))?;
        let mut realm = None;
        let mut query = Vec::new();
        for part in params.split(',') {
            let Some((k, v)) = part.trim().split_once('=') else {
                continue;
            };
            let v = v.trim_matches('"').to_string();
            match k {
                "realm" => realm = Some(v),
                "service" | "scope" => query.push((k.to_string(), v)),
                _ => {}
            }
        }
        if !query.iter().any(|(k, _)| k == "scope") {
            query.push((
                "scope".into(),
                format!("repository:{}:pull", self.repository),
            ));
        }
        let realm = realm.ok_or_else(|| anyhow!("the bearer challenge names no realm"))?;
        let resp = self
            .client
            .get(&realm)
            .query(&query)
            .send()
            .await
            .with_context(|| format!("GET {realm}"))?;
        if !resp.status().is_success() {
            bail!("token request to {realm}: {}", resp.status());
        }
        let body: serde_json::Value = resp.json().await.context("parsing the token")?;
        body["token"]
            .as_str()
            .or(body["access_token"].as_str())
            .map(str::to_string)
            .ok_or_else(|| anyhow!("the token response holds no token"))
    }

    /// Streams a blob into `blobs/sha256/HEX`, checking its digest.
    async fn blob(&mut self, layout: &Path, digest: &str) -> Result<()> {
        let hex = digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| anyhow!("unsupported digest {digest:?}"))?;
        let path = layout.join("blobs/sha256").join(hex);
        if path.is_file() {
            return Ok(());
        }
        let resp = self.get(&format!("blobs/{digest}"), None).await?;
        let tmp = path.with_extension("part");
        let mut file = std::fs::File::create(&tmp)?;
        let mut hasher = Sha256::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.with_context(|| format!("downloading {digest}"))?;
            hasher.update(&chunk);
            file.write_all(&chunk)?;
        }
        file.sync_all()?;
        let actual: String = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if actual != hex {
            let _ = std::fs::remove_file(&tmp);
            bail!("blob {digest} arrived with digest sha256:{actual}");
        }
        std::fs::rename(&tmp, &path)?;
        Ok(())
    }
}

fn arch() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "amd64"
    }
}

/// Pulls `raw` into an OCI layout under `pulls_dir` and returns the `oci:` URI of it.
pub async fn pull(raw: &str, mirror: Option<&str>, pulls_dir: &Path) -> Result<String> {
    let reference = Reference::parse(raw)?;
    let host = match mirror {
        Some(m) if reference.registry == DOCKER_HUB => m.to_string(),
        _ => reference.registry.clone(),
    };
    let mut session = Session {
        client: reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()
            .context("building the registry client")?,
        base: format!("{}://{host}", scheme(&host)),
        repository: reference.repository.clone(),
        token: None,
    };
    let layout: PathBuf = pulls_dir.join(reference.dir_name());
    std::fs::create_dir_all(layout.join("blobs/sha256"))
        .with_context(|| format!("creating {}", layout.display()))?;

    // The manifest, through an index if the reference names a multi-platform image.
    let mut manifest_ref = reference.reference.clone();
    let (raw_manifest, media_type) = loop {
        let resp = session
            .get(&format!("manifests/{manifest_ref}"), Some(ACCEPT))
            .await?;
        let media_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = resp.bytes().await.context("reading the manifest")?;
        let doc: serde_json::Value =
            serde_json::from_slice(&body).context("parsing the manifest")?;
        let is_index = media_type.contains("index")
            || media_type.contains("manifest.list")
            || doc.get("manifests").is_some();
        if !is_index {
            break (body, media_type);
        }
        let chosen = doc["manifests"]
            .as_array()
            .and_then(|ms| {
                ms.iter().find(|m| {
                    m["platform"]["os"] == "linux" && m["platform"]["architecture"] == arch()
                })
            })
            .and_then(|m| m["digest"].as_str())
            .ok_or_else(|| anyhow!("{raw} has no linux/{} image", arch()))?;
        if manifest_ref == chosen {
            bail!("{raw}: the index points at itself");
        }
        manifest_ref = chosen.to_string();
    };
    let manifest_digest = format!("sha256:{:x}", Sha256::digest(&raw_manifest));
    if manifest_ref.starts_with("sha256:") && manifest_ref != manifest_digest {
        bail!("manifest {manifest_ref} arrived with digest {manifest_digest}");
    }
    let doc: serde_json::Value = serde_json::from_slice(&raw_manifest)?;
    let config = doc["config"]["digest"]
        .as_str()
        .ok_or_else(|| anyhow!("the manifest names no config"))?
        .to_string();
    session.blob(&layout, &config).await?;
    for layer in doc["layers"].as_array().into_iter().flatten() {
        let digest = layer["digest"]
            .as_str()
            .ok_or_else(|| anyhow!("a layer without a digest"))?;
        session.blob(&layout, digest).await?;
    }
    // The manifest and an index naming it with the tag `pulled`.
    let hex = manifest_digest.trim_start_matches("sha256:");
    std::fs::write(layout.join("blobs/sha256").join(hex), &raw_manifest)?;
    let media_type = if media_type.is_empty() {
        "application/vnd.oci.image.manifest.v1+json".to_string()
    } else {
        media_type
    };
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": media_type,
            "digest": manifest_digest,
            "size": raw_manifest.len(),
            "annotations": {"org.opencontainers.image.ref.name": "pulled"},
        }],
    });
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    std::fs::write(layout.join("index.json"), index.to_string())?;
    Ok(format!("oci:{}:pulled", layout.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_like_docker() {
        let r = Reference::parse("python:3.11").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.registry, DOCKER_HUB);
        assert_eq!(r.repository, "library/python");
        assert_eq!(r.reference, "3.11");
        let r = Reference::parse("127.0.0.1:5000/a/b").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str()),
            ("127.0.0.1:5000", "a/b")
        );
        assert_eq!(r.reference, "latest");
        assert_eq!(scheme("127.0.0.1:5000"), "http");
        assert_eq!(scheme("ghcr.io"), "https");
        assert!(Reference::parse("a/../b").is_err());
    }
}
