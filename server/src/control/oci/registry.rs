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
    pub(crate) fn dir_name(&self) -> String {
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

/// Credentials for a private registry (`image.auth` of a create request, or
/// `images pull|push --username`). Never stored: they live as long as the pull.
#[derive(Clone, Default)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password never reaches a log line.
        write!(f, "Credentials({:?}, ***)", self.username)
    }
}

/// How requests of a session authenticate, once the registry has asked.
#[derive(Debug, Clone)]
enum Auth {
    Basic,
    Bearer(String),
}

/// One repository on one registry, with the authorisation its challenge asked for
/// (answered once per session: a token is reused for every later request).
pub(crate) struct Session {
    client: reqwest::Client,
    base: String,
    repository: String,
    credentials: Option<Credentials>,
    /// `pull` or `pull,push`: the scope asked of a token service.
    actions: &'static str,
    auth: Option<Auth>,
}

impl Session {
    pub(crate) fn new(
        host: &str,
        repository: &str,
        credentials: Option<Credentials>,
        actions: &'static str,
    ) -> Result<Self> {
        Ok(Self {
            client: reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(10))
                .build()
                .context("building the registry client")?,
            base: format!("{}://{host}", scheme(host)),
            repository: repository.to_string(),
            credentials,
            actions,
            auth: None,
        })
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}/v2/{}/{path}", self.base, self.repository)
    }

    /// Resolves a `Location` header (absolute, or relative to the registry).
    pub(crate) fn resolve(&self, location: &str) -> Result<String> {
        let base = url::Url::parse(&self.base).context("the registry's base URL")?;
        Ok(base
            .join(location)
            .with_context(|| format!("the registry sent a bad Location {location:?}"))?
            .to_string())
    }

    /// Sends the request `build` makes; a 401 is answered once (Basic with the
    /// credentials, or a bearer token from the challenge's realm) and the request sent
    /// again. Returns any other answer as is.
    pub(crate) async fn send(
        &mut self,
        what: &str,
        build: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response> {
        for attempt in 0..2 {
            let mut req = build(&self.client);
            match (&self.auth, &self.credentials) {
                (Some(Auth::Bearer(t)), _) => req = req.bearer_auth(t),
                (Some(Auth::Basic), Some(c)) => {
                    req = req.basic_auth(&c.username, Some(&c.password))
                }
                _ => {}
            }
            let resp = req.send().await.with_context(|| what.to_string())?;
            if resp.status() != reqwest::StatusCode::UNAUTHORIZED {
                return Ok(resp);
            }
            let challenge = resp
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let reason = reason(resp).await;
            if attempt == 1 || challenge.is_empty() {
                match &self.credentials {
                    Some(c) => bail!(
                        "{what}: the registry refused the credentials of {:?}: {reason}",
                        c.username
                    ),
                    None => bail!("{what}: the registry needs credentials (image.auth, or images --username): {reason}"),
                }
            }
            self.auth = Some(self.answer(&challenge, &reason).await?);
        }
        bail!("{what}: unauthorized")
    }

    /// A GET that must succeed.
    async fn get(&mut self, path: &str, accept: Option<&str>) -> Result<reqwest::Response> {
        let url = self.url(path);
        let resp = self
            .send(&format!("GET {url}"), |c| {
                let req = c.get(&url);
                match accept {
                    Some(a) => req.header("Accept", a),
                    None => req,
                }
            })
            .await?;
        if !resp.status().is_success() {
            let status = resp.status();
            bail!("GET {url}: {status}: {}", reason(resp).await);
        }
        Ok(resp)
    }

    async fn answer(&self, challenge: &str, refusal: &str) -> Result<Auth> {
        let (scheme, params) = challenge.split_once(' ').unwrap_or((challenge, ""));
        if scheme.eq_ignore_ascii_case("basic") {
            if self.credentials.is_none() {
                bail!(
                    "the registry needs credentials (image.auth, or images --username): {refusal}"
                );
            }
            return Ok(Auth::Basic);
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            bail!("the registry asks for {challenge:?}, neither Basic nor a bearer token");
        }
        let mut realm = None;
        let mut query = Vec::new();
        for (k, v) in challenge_params(params) {
            match k.as_str() {
                "realm" => realm = Some(v),
                "service" | "scope" => query.push((k, v)),
                _ => {}
            }
        }
        if !query.iter().any(|(k, _)| k == "scope") {
            query.push((
                "scope".into(),
                format!("repository:{}:{}", self.repository, self.actions),
            ));
        }
        let realm = realm.ok_or_else(|| anyhow!("the bearer challenge names no realm"))?;
        let mut req = self.client.get(&realm).query(&query);
        if let Some(c) = &self.credentials {
            req = req.basic_auth(&c.username, Some(&c.password));
        }
        let resp = req.send().await.with_context(|| format!("GET {realm}"))?;
        if !resp.status().is_success() {
            let status = resp.status();
            bail!("token request to {realm}: {status}: {}", reason(resp).await);
        }
        let body: serde_json::Value = resp.json().await.context("parsing the token")?;
        body["token"]
            .as_str()
            .or(body["access_token"].as_str())
            .map(|t| Auth::Bearer(t.to_string()))
            .ok_or_else(|| anyhow!("the token response holds no token"))
    }

    /// Streams a blob into `blobs/sha256/HEX`, checking its digest; returns the bytes
    /// downloaded (0 when the blob was there already).
    async fn blob(
        &mut self,
        layout: &Path,
        digest: &str,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<u64> {
        let hex = digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| anyhow!("unsupported digest {digest:?}"))?;
        let path = layout.join("blobs/sha256").join(hex);
        if path.is_file() {
            return Ok(0);
        }
        let resp = self.get(&format!("blobs/{digest}"), None).await?;
        let tmp = path.with_extension("part");
        let mut file =
            std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let mut hasher = Sha256::new();
        let mut stream = resp.bytes_stream();
        let mut done = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.with_context(|| format!("downloading {digest}"))?;
            hasher.update(&chunk);
            file.write_all(&chunk)
                .with_context(|| format!("writing {}", tmp.display()))?;
            done += chunk.len() as u64;
            progress(chunk.len() as u64);
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
        Ok(done)
    }
}

/// `k=v, k="v, w"` pairs of an authentication challenge (quoted values may hold
/// commas, as Docker Hub's `scope="repository:a:pull,push"` does).
fn challenge_params(params: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = params.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key.trim().trim_start_matches(',').trim().to_string();
        let after = after.trim_start();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            }
        };
        out.push((key, value.to_string()));
        rest = next.trim_start().trim_start_matches(',').trim_start();
    }
    out
}

/// The registry's own words for a refusal: the `errors` of its JSON body
/// (`UNAUTHORIZED: authentication required`), else the status and the start of the
/// body.
pub(crate) async fn reason(resp: reqwest::Response) -> String {
    let status = resp.status();
    let body = resp.text().await.unwrap_or_default();
    let parsed: Option<Vec<String>> = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| {
            v["errors"].as_array().map(|errs| {
                errs.iter()
                    .map(|e| {
                        format!(
                            "{}: {}",
                            e["code"].as_str().unwrap_or("ERROR"),
                            e["message"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
        });
    match parsed {
        Some(errs) if !errs.is_empty() => errs.join("; "),
        _ => {
            let text: String = body.trim().chars().take(300).collect();
            if text.is_empty() {
                status.to_string()
            } else {
                format!("{status}: {text}")
            }
        }
    }
}

fn arch() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "amd64"
    }
}

/// How far a pull is: bytes of the image's blobs downloaded or found in the pull
/// directory, out of the manifest's total.
#[derive(Debug, Clone, Copy, Default)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
}

/// Called as a pull progresses (at most every few hundred milliseconds).
pub type ProgressFn = std::sync::Arc<dyn Fn(Progress) + Send + Sync>;

#[derive(Default, Clone)]
pub struct PullOptions {
    pub credentials: Option<Credentials>,
    pub progress: Option<ProgressFn>,
}

/// What a pull produced.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// `oci:/DIR:pulled`, for [`super::image::ImageStore::ensure`].
    pub uri: String,
    /// `sha256:` of the manifest.
    pub digest: String,
    /// Bytes downloaded by this pull (0: every blob was there already).
    pub downloaded: u64,
}

/// File in a pull layout naming the reference it was pulled by (`images ls`).
pub const REFERENCE_FILE: &str = "reference";

/// Pulls `raw` into an OCI layout under `pulls_dir` and returns the `oci:` URI of it.
pub async fn pull(raw: &str, mirror: Option<&str>, pulls_dir: &Path) -> Result<String> {
    Ok(pull_with(raw, mirror, pulls_dir, &PullOptions::default())
        .await?
        .uri)
}

/// Replaces `path` with `bytes` the way readers never see half of it: a temporary file
/// next to it (unique to this process and call), then a rename over it.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .ok_or_else(|| anyhow!("{} names no file", path.display()))?;
    let tmp = path.with_file_name(format!(
        ".{}.{}.{seq}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

/// One lock per pull directory: concurrent creates of one image download it once
/// (the later ones wait, then find every blob in place).
fn pull_lock(layout: &Path) -> std::sync::Arc<tokio::sync::Mutex<()>> {
    static LOCKS: std::sync::OnceLock<
        std::sync::Mutex<
            std::collections::HashMap<PathBuf, std::sync::Arc<tokio::sync::Mutex<()>>>,
        >,
    > = std::sync::OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    std::sync::Arc::clone(locks.entry(layout.to_path_buf()).or_default())
}

/// Pulls `raw` (credentials and progress reports in `opts`) into an OCI layout under
/// `pulls_dir`.
pub async fn pull_with(
    raw: &str,
    mirror: Option<&str>,
    pulls_dir: &Path,
    opts: &PullOptions,
) -> Result<Pulled> {
    let reference = Reference::parse(raw)?;
    let host = match mirror {
        Some(m) if reference.registry == DOCKER_HUB => m.to_string(),
        _ => reference.registry.clone(),
    };
    let mut session = Session::new(
        &host,
        &reference.repository,
        opts.credentials.clone(),
        "pull",
    )?;
    let layout: PathBuf = pulls_dir.join(reference.dir_name());
    let lock = pull_lock(&layout);
    let _guard = lock.lock().await;
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
    let mut blobs = vec![(config, doc["config"]["size"].as_u64().unwrap_or(0))];
    for layer in doc["layers"].as_array().into_iter().flatten() {
        let digest = layer["digest"]
            .as_str()
            .ok_or_else(|| anyhow!("a layer without a digest"))?;
        blobs.push((digest.to_string(), layer["size"].as_u64().unwrap_or(0)));
    }
    let mut state = Progress {
        done: 0,
        total: blobs.iter().map(|(_, size)| size).sum(),
    };
    let mut last_report = std::time::Instant::now();
    let mut downloaded = 0;
    if let Some(report) = &opts.progress {
        report(state);
    }
    for (digest, size) in &blobs {
        let mut tick = |n: u64| {
            state.done += n;
            if let Some(report) = &opts.progress {
                if last_report.elapsed() >= std::time::Duration::from_millis(200) {
                    last_report = std::time::Instant::now();
                    report(state);
                }
            }
        };
        let got = session.blob(&layout, digest, &mut tick).await?;
        if got == 0 {
            state.done += size;
        }
        downloaded += got;
    }
    if let Some(report) = &opts.progress {
        report(state);
    }
    // The manifest and an index naming it with the tag `pulled`.
    // Every file below is replaced atomically: a create that found this image pulled
    // reads the layout without the pull lock (ImageStore::ensure) while a later create
    // of the same image rewrites it, and a plain write would show it a truncated file
    // (seen as "manifest digest mismatch ... got sha256:e3b0…", the empty file's).
    let hex = manifest_digest.trim_start_matches("sha256:");
    replace_file(&layout.join("blobs/sha256").join(hex), &raw_manifest)?;
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
    replace_file(
        &layout.join("oci-layout"),
        br#"{"imageLayoutVersion":"1.0.0"}"#,
    )?;
    replace_file(&layout.join("index.json"), index.to_string().as_bytes())?;
    replace_file(&layout.join(REFERENCE_FILE), raw.as_bytes())?;
    if downloaded > 0 {
        tracing::info!(
            image = raw,
            registry = host,
            digest = manifest_digest,
            bytes = downloaded,
            "pulled image"
        );
    }
    Ok(Pulled {
        uri: format!("oci:{}:pulled", layout.display()),
        digest: manifest_digest,
        downloaded,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Regression: two creates of one image, the second rewriting the pulled layout while
    // the first read it, failed with a digest mismatch of the empty file. A reader racing
    // a writer of the same bytes must only ever see the whole file.
    #[test]
    fn a_rewritten_layout_file_is_never_seen_partly_written() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("manifest");
        let body = vec![b'm'; 256 * 1024];
        replace_file(&path, &body).unwrap_or_else(|e| panic!("{e}"));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (path, body, stop) = (path.clone(), body.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    replace_file(&path, &body).unwrap_or_else(|e| panic!("{e}"));
                }
            })
        };
        for _ in 0..2000 {
            let read = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(read.len(), body.len(), "a reader saw a partly written file");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap_or_else(|_| panic!("writer panicked"));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .filter(|n| n != "manifest")
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    }

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

    #[test]
    fn challenges_keep_quoted_commas() {
        let p = challenge_params(
            r#"realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(
            p,
            vec![
                (
                    "realm".to_string(),
                    "https://auth.docker.io/token".to_string()
                ),
                ("service".to_string(), "registry.docker.io".to_string()),
                ("scope".to_string(), "repository:a/b:pull,push".to_string()),
            ]
        );
    }
}
