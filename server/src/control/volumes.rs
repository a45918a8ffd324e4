//! `pvc` volumes as named server-side volumes (protocol.md §2.1, like upstream's
//! Docker named volumes): claim `c` is the directory `DATA_DIR/volumes/c`, bind-mounted
//! like a host volume. `ossfs` needs a FUSE mount this server does not do: 400.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::{ApiError, ApiResult};
use super::models::{HostVolume, Volume};

/// Set in the stored `pvc` object when this sandbox's create made the directory, so
/// `deleteOnSandboxTermination` removes only volumes it created (upstream 1.1 rule).
const CREATED_MARK: &str = "createdBySandbox";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PvcSpec {
    claim_name: String,
    #[serde(default = "yes")]
    create_if_not_exists: bool,
    #[serde(default)]
    delete_on_sandbox_termination: bool,
}

fn yes() -> bool {
    true
}

fn parse(value: &serde_json::Value, volume: &str) -> ApiResult<PvcSpec> {
    serde_json::from_value(value.clone()).map_err(|e| {
        ApiError::bad_request(
            "VOLUME::INVALID_PVC",
            format!("volume {volume:?}: invalid pvc: {e}"),
        )
    })
}

/// A claim name is a DNS-1123 subdomain (Kubernetes PVC rule), so it is always one
/// safe path segment.
fn check_claim_name(name: &str) -> bool {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    !name.is_empty()
        && name.len() <= 253
        && name.chars().all(ok_char)
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && !name.contains("..")
}

pub fn volumes_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("volumes")
}

/// Answer for `ossfs` volumes.
pub fn ossfs_unsupported(volume: &str) -> ApiError {
    // The generic "not supported" code, as before pvc existed, so clients keep matching.
    ApiError::not_supported(format!(
        "volume {volume:?}: ossfs volumes are not supported by this server (it mounts no FUSE \
         filesystems); use a host or pvc volume"
    ))
}

/// Resolves a `pvc` volume to its directory (made when missing and
/// `createIfNotExists`), and stores that as `host.path` so the runtimes mount it like a
/// host volume. `subPath` is folded in and must stay inside the claim.
pub fn resolve_pvc(data_dir: &Path, v: &mut Volume) -> ApiResult<()> {
    let Some(value) = v.pvc.as_mut() else {
        return Ok(());
    };
    let spec = parse(value, &v.name)?;
    if !check_claim_name(&spec.claim_name) {
        return Err(ApiError::bad_request(
            "VOLUME::INVALID_PVC",
            format!(
                "volume {:?}: claimName {:?} must be a DNS-1123 subdomain",
                v.name, spec.claim_name
            ),
        ));
    }
    let sub = v.sub_path.take().unwrap_or_default();
    if sub.starts_with('/') || sub.split('/').any(|p| p == "..") {
        return Err(ApiError::bad_request(
            "VOLUME::INVALID_SUB_PATH",
            format!("volume {:?}: subPath must stay inside the volume", v.name),
        ));
    }
    let dir = volumes_dir(data_dir).join(&spec.claim_name);
    let mut created = false;
    if !dir.is_dir() {
        if !spec.create_if_not_exists {
            return Err(ApiError::bad_request(
                "VOLUME::PVC_NOT_FOUND",
                format!(
                    "volume {:?}: claim {:?} does not exist and createIfNotExists is false",
                    v.name, spec.claim_name
                ),
            ));
        }
        std::fs::create_dir_all(&dir).map_err(|e| {
            ApiError::internal(format!("creating volume directory {}: {e}", dir.display()))
        })?;
        created = true;
    }
    let source = create_beneath(&dir, &sub).map_err(|e| {
        ApiError::bad_request(
            "VOLUME::INVALID_SUB_PATH",
            format!("volume {:?}: subPath {sub:?}: {e}", v.name),
        )
    })?;
    if let Some(obj) = value.as_object_mut() {
        obj.insert(CREATED_MARK.to_string(), serde_json::Value::Bool(created));
    }
    v.host = Some(HostVolume {
        path: source.to_string_lossy().into_owned(),
    });
    Ok(())
}

/// `dir/sub`, creating what is missing one component at a time and refusing any
/// component that is not a plain directory: sandboxes share a claim and write into it,
/// so a symlink planted there must not make the server create directories (or bind a
/// volume) elsewhere on the host.
fn create_beneath(dir: &Path, sub: &str) -> std::io::Result<std::path::PathBuf> {
    let mut path = dir.to_path_buf();
    for part in sub.split('/').filter(|p| !p.is_empty() && *p != ".") {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a directory (a symlink?)",
                    path.display()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&path)?,
            Err(e) => return Err(e),
        }
    }
    Ok(path)
}

/// Removes the claims of `volumes` that ask for `deleteOnSandboxTermination` and that
/// this sandbox created (on delete and on TTL expiry). Best effort: a failure is
/// logged, the sandbox is gone anyway. Each claim removed loses its mark, so a later
/// call (a DELETE after the expiry) never removes a claim of the same name that
/// another sandbox made since.
pub fn cleanup(data_dir: &Path, volumes: &mut [Volume]) {
    remove_claims(data_dir, volumes, false);
}

/// Removes every claim a failed create made (`deleteOnSandboxTermination` or not):
/// a create that fails leaves nothing behind.
pub fn remove_created(data_dir: &Path, volumes: &mut [Volume]) {
    remove_claims(data_dir, volumes, true);
}

fn remove_claims(data_dir: &Path, volumes: &mut [Volume], failed_create: bool) {
    for v in volumes {
        let Some(value) = v.pvc.as_mut() else {
            continue;
        };
        let Ok(spec) = parse(value, &v.name) else {
            continue;
        };
        let created = value.get(CREATED_MARK).and_then(|c| c.as_bool()) == Some(true);
        let wanted = failed_create || spec.delete_on_sandbox_termination;
        if !wanted || !created || !check_claim_name(&spec.claim_name) {
            continue;
        }
        let dir = volumes_dir(data_dir).join(&spec.claim_name);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                tracing::warn!(dir = %dir.display(), error = %err, "removing a pvc volume");
                continue;
            }
        }
        if let Some(obj) = value.as_object_mut() {
            obj.insert(CREATED_MARK.to_string(), serde_json::Value::Bool(false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A sandbox sharing a claim plants `x -> /outside`; a later create with
    /// `subPath: x/new` must neither create `/outside/new` nor bind `/outside`.
    #[test]
    fn sub_paths_never_follow_links_planted_in_a_claim() {
        let claim = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outside = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(outside.path(), claim.path().join("x"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(create_beneath(claim.path(), "x/new").is_err());
        assert!(create_beneath(claim.path(), "x").is_err());
        assert!(!outside.path().join("new").exists());
        let made = create_beneath(claim.path(), "a/b/").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(made, claim.path().join("a/b"));
        assert!(made.is_dir());
    }

    fn volume(pvc: serde_json::Value, sub: Option<&str>) -> Volume {
        Volume {
            name: "data".into(),
            mount_path: "/data".into(),
            read_only: false,
            sub_path: sub.map(str::to_string),
            host: None,
            pvc: Some(pvc),
            ossfs: None,
        }
    }

    #[test]
    fn claims_are_created_resolved_and_cleaned_up() {
        let dir = tempfile::tempdir().unwrap();
        let mut v = volume(
            json!({"claimName": "cache", "deleteOnSandboxTermination": true}),
            Some("a/b"),
        );
        resolve_pvc(dir.path(), &mut v).unwrap();
        let host = v.host.clone().unwrap();
        assert!(host.path.ends_with("volumes/cache/a/b"));
        assert!(Path::new(&host.path).is_dir());
        // A second sandbox on the existing claim did not create it: never deletes it.
        let mut second = volume(
            json!({"claimName": "cache", "deleteOnSandboxTermination": true}),
            None,
        );
        resolve_pvc(dir.path(), &mut second).unwrap();
        cleanup(dir.path(), std::slice::from_mut(&mut second));
        assert!(dir.path().join("volumes/cache").is_dir());
        let mut vs = [v];
        cleanup(dir.path(), &mut vs);
        assert!(!dir.path().join("volumes/cache").exists());
        // Made again by another sandbox: a second cleanup of the first (a DELETE after
        // its TTL expiry) leaves it alone.
        std::fs::create_dir_all(dir.path().join("volumes/cache")).unwrap();
        cleanup(dir.path(), &mut vs);
        assert!(dir.path().join("volumes/cache").is_dir());
    }

    #[test]
    fn a_failed_create_removes_the_claims_it_made() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("volumes/kept")).unwrap();
        let mut vs = [
            volume(json!({"claimName": "made"}), None),
            volume(json!({"claimName": "kept"}), None),
        ];
        for v in &mut vs {
            resolve_pvc(dir.path(), v).unwrap();
        }
        remove_created(dir.path(), &mut vs);
        assert!(!dir.path().join("volumes/made").exists());
        assert!(dir.path().join("volumes/kept").is_dir());
    }

    #[test]
    fn bad_claims_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        for (pvc, sub) in [
            (json!({"claimName": "Bad_Name"}), None),
            (json!({"claimName": "../x"}), None),
            (json!({"claimName": "ok"}), Some("../up")),
            (
                json!({"claimName": "missing", "createIfNotExists": false}),
                None,
            ),
            (json!({"storage": "1Gi"}), None),
        ] {
            let mut v = volume(pvc.clone(), sub);
            assert!(resolve_pvc(dir.path(), &mut v).is_err(), "{pvc}");
        }
    }
}
