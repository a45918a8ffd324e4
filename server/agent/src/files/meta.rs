//! File metadata as execd reports and accepts it: `FileInfo`, the "octal digits in a
//! decimal integer" mode convention (644 means rw-r--r--), and owner/group names.

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::SystemTime;

use chrono::{DateTime, SecondsFormat, Utc};
use nix::unistd::{Gid, Group, Uid, User};
use serde::{Deserialize, Serialize};

use super::io_error;
use crate::error::ApiError;

/// One entry as returned by `/files/info`, `/files/search` and `/directories/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// Sandbox path (absolute), never a host path.
    pub path: String,
    /// `file`, `directory`, `symlink` or `other`.
    #[serde(rename = "type")]
    pub kind: String,
    pub size: u64,
    pub modified_at: String,
    pub created_at: String,
    pub owner: String,
    pub group: String,
    /// Permission bits whose decimal digits are the octal mode (e.g. 644).
    pub mode: u32,
}

/// Permission changes as sent by clients (`Permission`, `FileMetadata`).
/// `mode: 0` or absent means "leave the mode alone".
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PermissionSpec {
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub group: Option<String>,
    #[serde(default)]
    pub mode: Option<i64>,
}

/// Caches uid/gid → name lookups for one request (a search may stat thousands).
#[derive(Default)]
pub struct Names {
    users: HashMap<u32, String>,
    groups: HashMap<u32, String>,
}

impl Names {
    pub fn user(&mut self, uid: u32) -> String {
        self.users
            .entry(uid)
            .or_insert_with(|| match User::from_uid(Uid::from_raw(uid)) {
                Ok(Some(u)) => u.name,
                _ => uid.to_string(),
            })
            .clone()
    }

    pub fn group(&mut self, gid: u32) -> String {
        self.groups
            .entry(gid)
            .or_insert_with(|| match Group::from_gid(Gid::from_raw(gid)) {
                Ok(Some(g)) => g.name,
                _ => gid.to_string(),
            })
            .clone()
    }
}

fn rfc3339(t: SystemTime) -> String {
    DateTime::<Utc>::from(t).to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// `0o644` → `644`.
pub fn mode_to_digits(bits: u32) -> u32 {
    let octal = format!("{:o}", bits & 0o7777);
    octal.parse().unwrap_or(0)
}

/// `644` → `0o644`; rejects digits 8/9, negatives and values above 7777.
pub fn digits_to_mode(digits: i64, code: &'static str) -> Result<u32, ApiError> {
    let bad = || {
        ApiError::bad_request(
            code,
            format!("mode {digits} is not an octal permission like 644 or 755"),
        )
    };
    if !(0..=7777).contains(&digits) {
        return Err(bad());
    }
    u32::from_str_radix(&digits.to_string(), 8).map_err(|_| bad())
}

fn kind_of(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "directory"
    } else if t.is_file() {
        "file"
    } else {
        "other"
    }
}

/// Builds a `FileInfo` from already fetched (l)stat data.
pub fn info_from_metadata(sandbox: &Path, meta: &Metadata, names: &mut Names) -> FileInfo {
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    // Birth time needs statx support from the filesystem; fall back to mtime.
    let created = meta.created().unwrap_or(modified);
    FileInfo {
        path: sandbox.to_string_lossy().into_owned(),
        kind: kind_of(meta).to_string(),
        size: meta.len(),
        modified_at: rfc3339(modified),
        created_at: rfc3339(created),
        owner: names.user(meta.uid()),
        group: names.group(meta.gid()),
        mode: mode_to_digits(meta.mode()),
    }
}

/// lstat + `FileInfo`.
pub fn stat(host: &Path, sandbox: &Path, names: &mut Names) -> Result<FileInfo, ApiError> {
    let meta = std::fs::symlink_metadata(host).map_err(|e| io_error(&e, "stat", sandbox))?;
    Ok(info_from_metadata(sandbox, &meta, names))
}

fn lookup_uid(name: &str, code: &'static str) -> Result<u32, ApiError> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(n);
    }
    match User::from_name(name) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        _ => Err(ApiError::bad_request(
            code,
            format!("unknown user {name:?}"),
        )),
    }
}

fn lookup_gid(name: &str, code: &'static str) -> Result<u32, ApiError> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(n);
    }
    match Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        _ => Err(ApiError::bad_request(
            code,
            format!("unknown group {name:?}"),
        )),
    }
}

/// Checks a spec without touching the filesystem, so a bad mode or unknown user is
/// reported before anything is written.
pub fn validate(spec: &PermissionSpec, code: &'static str) -> Result<(), ApiError> {
    if let Some(m) = spec.mode {
        digits_to_mode(m, code)?;
    }
    if let Some(o) = spec.owner.as_deref().filter(|s| !s.is_empty()) {
        lookup_uid(o, code)?;
    }
    if let Some(g) = spec.group.as_deref().filter(|s| !s.is_empty()) {
        lookup_gid(g, code)?;
    }
    Ok(())
}

/// chmod (unless mode is 0/absent) then chown (when owner or group is named).
/// `code` is the error code for an invalid spec (differs per route).
pub fn apply(
    host: &Path,
    sandbox: &Path,
    spec: &PermissionSpec,
    code: &'static str,
) -> Result<(), ApiError> {
    if let Some(digits) = spec.mode.filter(|m| *m != 0) {
        let bits = digits_to_mode(digits, code)?;
        std::fs::set_permissions(host, std::fs::Permissions::from_mode(bits))
            .map_err(|e| io_error(&e, "chmod", sandbox))?;
    }
    let uid = match spec.owner.as_deref().filter(|s| !s.is_empty()) {
        Some(o) => Some(lookup_uid(o, code)?),
        None => None,
    };
    let gid = match spec.group.as_deref().filter(|s| !s.is_empty()) {
        Some(g) => Some(lookup_gid(g, code)?),
        None => None,
    };
    if uid.is_some() || gid.is_some() {
        std::os::unix::fs::chown(host, uid, gid).map_err(|e| io_error(&e, "chown", sandbox))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_between_bits_and_digits() {
        assert_eq!(mode_to_digits(0o100644), 644);
        assert_eq!(mode_to_digits(0o4755), 4755);
        assert_eq!(digits_to_mode(755, "X").unwrap(), 0o755);
        assert_eq!(digits_to_mode(0, "X").unwrap(), 0);
        assert!(digits_to_mode(789, "X").is_err());
        assert!(digits_to_mode(-1, "X").is_err());
        assert!(digits_to_mode(17777, "X").is_err());
    }

    #[test]
    fn numeric_owner_is_accepted_and_unknown_names_are_client_errors() {
        assert_eq!(lookup_uid("1234", "X").unwrap(), 1234);
        let err = lookup_uid("no-such-user-here-xyz", "X").unwrap_err();
        assert_eq!(err.status.as_u16(), 400);
        assert_eq!(lookup_gid("0", "X").unwrap(), 0);
    }
}
