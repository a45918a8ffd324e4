//! Secrets of the control plane and the file operations that must not be tricked.
//!
//! - The API key: given (`--api-key`), or generated at the first start and kept in
//!   `DATA_DIR/api-key` (0600), or none with an explicit `--no-auth` on loopback.
//! - Per-sandbox access tokens (`X-EXECD-ACCESS-TOKEN`, `OPENSANDBOX-EGRESS-AUTH`) are
//!   derived from a server key (`DATA_DIR/token-key`, 0600) and the sandbox id with
//!   HMAC-SHA256, so the store holds only their SHA-256: a copy of the database gives
//!   no way into a sandbox. Every comparison is constant-time.
//! - [`read_regular_no_follow`]: how the server reads any file a sandbox could have
//!   planted or replaced: no symlink followed, no FIFO opened for a blocking read, a
//!   regular file only, and never more than a bound.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

/// The generated API key's file in the data directory.
pub const API_KEY_FILE: &str = "api-key";
/// The key every sandbox's access tokens are derived from.
pub const TOKEN_KEY_FILE: &str = "token-key";
/// A key file is a line of hex; anything longer is not ours.
const MAX_KEY_FILE: u64 = 4096;

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

/// 32 random bytes, hex-encoded.
pub fn new_secret() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex(&bytes)
}

/// Compares two byte strings in time independent of where they differ.
pub fn constant_time_eq(given: &[u8], expected: &[u8]) -> bool {
    if given.len() != expected.len() {
        return false;
    }
    given
        .iter()
        .zip(expected)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// SHA-256 of a secret, hex: what the store keeps instead of the secret.
pub fn sha256_hex(secret: &[u8]) -> String {
    hex(&Sha256::digest(secret))
}

/// True if `given` hashes to `expected_sha256` (hex); constant-time on the digests.
pub fn matches_hash(given: &[u8], expected_sha256: &str) -> bool {
    constant_time_eq(sha256_hex(given).as_bytes(), expected_sha256.as_bytes())
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner);
    outer.finalize().into()
}

/// Derives the per-sandbox access tokens.
pub struct TokenKey(Vec<u8>);

impl TokenKey {
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The token of `purpose` (`execd`, `egress`) for sandbox `id`.
    pub fn token(&self, purpose: &str, id: &str) -> String {
        let mut message = Vec::with_capacity(purpose.len() + id.len() + 1);
        message.extend_from_slice(purpose.as_bytes());
        message.push(0);
        message.extend_from_slice(id.as_bytes());
        hex(&hmac_sha256(&self.0, &message))
    }
}

/// Makes `dir` (created if missing) a directory only its owner can enter.
pub fn private_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let meta =
        std::fs::symlink_metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    if meta.mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("setting mode 0700 on {}", dir.display()))?;
    }
    Ok(())
}

/// Reads a file a sandbox may control: refuses symlinks (`O_NOFOLLOW`), never blocks
/// on a FIFO (`O_NONBLOCK`), accepts only a regular file (`fstat`), and reads at most
/// `max` bytes (more is an error, not a truncation).
pub fn read_regular_no_follow(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    if meta.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is larger than {max} bytes", path.display()),
        ));
    }
    let mut buf = Vec::new();
    (&mut file).take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is larger than {max} bytes", path.display()),
        ));
    }
    Ok(buf)
}

/// Reads the secret in `path`, or creates it (mode 0600, exclusively) with a fresh
/// one. Returns the secret and whether it was created now.
fn load_or_create_secret(path: &Path) -> Result<(String, bool)> {
    match read_regular_no_follow(path, MAX_KEY_FILE) {
        Ok(raw) => {
            let meta = std::fs::symlink_metadata(path)
                .with_context(|| format!("reading {}", path.display()))?;
            if meta.mode() & 0o077 != 0 {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                    .with_context(|| format!("setting mode 0600 on {}", path.display()))?;
            }
            let secret = String::from_utf8(raw)
                .with_context(|| format!("{} is not text", path.display()))?
                .trim()
                .to_string();
            if secret.is_empty() {
                bail!("{} is empty; delete it to get a new key", path.display());
            }
            Ok((secret, false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let secret = new_secret();
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)
                .with_context(|| format!("creating {}", path.display()))?;
            file.write_all(format!("{secret}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {}", path.display()))?;
            Ok((secret, true))
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The key of the per-sandbox tokens, created at the first start.
pub fn token_key(data_dir: &Path) -> Result<TokenKey> {
    let (secret, _) = load_or_create_secret(&data_dir.join(TOKEN_KEY_FILE))?;
    Ok(TokenKey::from_bytes(secret.into_bytes()))
}

/// How the lifecycle API is authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiKeySource {
    /// `--api-key` / `OPENSANDBOX_API_KEY`.
    Given,
    /// Generated now, stored in the data directory.
    Generated,
    /// Generated by an earlier start, read from the data directory.
    Stored,
}

/// Settles the API key: `None` only for an explicit `--no-auth` on a loopback address.
pub fn resolve_api_key(
    given: Option<String>,
    no_auth: bool,
    listen: SocketAddr,
    data_dir: &Path,
) -> Result<Option<(String, ApiKeySource)>> {
    if no_auth {
        if given.is_some() {
            bail!("--no-auth and --api-key exclude each other");
        }
        if !listen.ip().is_loopback() {
            bail!(
                "--no-auth is refused on {listen}: without authentication the server may only \
                 listen on a loopback address (127.0.0.1, ::1); set --api-key instead"
            );
        }
        return Ok(None);
    }
    if let Some(key) = given {
        return Ok(Some((key, ApiKeySource::Given)));
    }
    let (key, created) = load_or_create_secret(&data_dir.join(API_KEY_FILE))?;
    let source = if created {
        ApiKeySource::Generated
    } else {
        ApiKeySource::Stored
    };
    Ok(Some((key, source)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn tokens_differ_by_purpose_sandbox_and_key() {
        let key = TokenKey::from_bytes(b"k".to_vec());
        let t = key.token("execd", "a");
        assert_eq!(t.len(), 64);
        assert_eq!(t, key.token("execd", "a"));
        assert_ne!(t, key.token("egress", "a"));
        assert_ne!(t, key.token("execd", "b"));
        assert_ne!(t, TokenKey::from_bytes(b"j".to_vec()).token("execd", "a"));
        assert!(matches_hash(t.as_bytes(), &sha256_hex(t.as_bytes())));
        assert!(!matches_hash(b"x", &sha256_hex(t.as_bytes())));
    }

    #[test]
    fn secrets_compare() {
        let s = new_secret();
        assert_eq!(s.len(), 64);
        assert!(constant_time_eq(s.as_bytes(), s.as_bytes()));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert_ne!(new_secret(), s);
    }

    #[test]
    fn no_follow_read_refuses_links_fifos_and_big_files() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let target = dir.path().join("secret");
        std::fs::write(&target, b"host secret")?;
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link)?;
        assert!(read_regular_no_follow(&link, 100).is_err());
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))?;
        // Would hang forever without O_NONBLOCK.
        assert!(read_regular_no_follow(&fifo, 100).is_err());
        assert!(read_regular_no_follow(&target, 4).is_err());
        assert_eq!(read_regular_no_follow(&target, 100)?, b"host secret");
        Ok(())
    }

    #[test]
    fn api_key_is_generated_once_and_no_auth_needs_loopback() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let lo: SocketAddr = "127.0.0.1:1".parse()?;
        let any: SocketAddr = "0.0.0.0:1".parse()?;
        let (key, source) = resolve_api_key(None, false, any, dir.path())?.context("a key")?;
        assert_eq!(source, ApiKeySource::Generated);
        let mode = std::fs::metadata(dir.path().join(API_KEY_FILE))?.mode() & 0o777;
        assert_eq!(mode, 0o600);
        let (again, source) = resolve_api_key(None, false, any, dir.path())?.context("a key")?;
        assert_eq!(
            (again.as_str(), source),
            (key.as_str(), ApiKeySource::Stored)
        );
        assert!(resolve_api_key(None, true, any, dir.path()).is_err());
        assert!(resolve_api_key(None, true, lo, dir.path())?.is_none());
        assert!(resolve_api_key(Some("k".into()), true, lo, dir.path()).is_err());
        Ok(())
    }
}
