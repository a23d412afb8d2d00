//! Reading and writing a pi-style `auth.json`: provider id → `{"type": "oauth", ...}` or
//! `{"type": "api_key", "key": ...}`, pretty-printed with two spaces, as pi's coding agent
//! keeps it. Writes are atomic (a private temporary file renamed over the target) and leave
//! the file readable by its owner only (mode 0600).
//!
//! These helpers do not lock the file against other processes; a host that runs several
//! logins or refreshes at once serialises them itself.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::credentials::OAuthCredentials;
use super::error::OAuthError;
use super::secret::Secret;

/// One entry of `auth.json` (pi's `AuthCredential`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AuthCredential {
    /// A plain API key.
    #[serde(rename = "api_key")]
    ApiKey {
        /// The key.
        key: Secret,
    },
    /// OAuth credentials from a login.
    #[serde(rename = "oauth")]
    OAuth(OAuthCredentials),
}

/// The whole `auth.json`: provider id → credential.
pub type AuthData = BTreeMap<String, AuthCredential>;

/// The OAuth entries of `data`, as [`get_oauth_api_key`](super::get_oauth_api_key) takes them.
pub fn oauth_credentials(data: &AuthData) -> BTreeMap<String, OAuthCredentials> {
    data.iter()
        .filter_map(|(id, credential)| match credential {
            AuthCredential::OAuth(credentials) => Some((id.clone(), credentials.clone())),
            AuthCredential::ApiKey { .. } => None,
        })
        .collect()
}

/// Reads `path`; a missing file reads as empty.
pub fn read_auth_file(path: impl AsRef<Path>) -> Result<AuthData, OAuthError> {
    let path = path.as_ref();
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(AuthData::new()),
        Err(cause) => {
            return Err(OAuthError::AuthFile {
                action: "read",
                path: path.to_owned(),
                cause,
            });
        }
    };
    if text.trim().is_empty() {
        return Ok(AuthData::new());
    }
    serde_json::from_str(&text).map_err(|cause| OAuthError::AuthFileFormat {
        path: path.to_owned(),
        cause,
    })
}

/// Writes `data` to `path` atomically with mode 0600, creating the parent directory (mode
/// 0700) when missing.
pub fn write_auth_file(path: impl AsRef<Path>, data: &AuthData) -> Result<(), OAuthError> {
    let path = path.as_ref();
    let error = |cause: io::Error| OAuthError::AuthFile {
        action: "write",
        path: path.to_owned(),
        cause,
    };
    let mut json =
        serde_json::to_string_pretty(data).map_err(|err| error(io::Error::other(err)))?;
    json.push('\n');
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    if !directory.exists() {
        create_private_dir(&directory).map_err(error)?;
    }
    let temporary = temporary_path(path).map_err(error)?;
    let result =
        write_private(&temporary, json.as_bytes()).and_then(|()| fs::rename(&temporary, path));
    if let Err(cause) = result {
        let _ = fs::remove_file(&temporary);
        return Err(error(cause));
    }
    // Make the rename durable; not every platform can open a directory, so best effort.
    if let Ok(dir) = fs::File::open(&directory) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// A fresh name beside `path` (same directory, so the rename stays on one file system).
fn temporary_path(path: &Path) -> io::Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let mut nonce = [0_u8; 8];
    getrandom::fill(&mut nonce).map_err(|err| io::Error::other(err.to_string()))?;
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let mut temporary = std::ffi::OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".{}.{nonce}.tmp", std::process::id()));
    Ok(path.with_file_name(temporary))
}

/// Creates `path` (which must not exist) readable by its owner only, writes and syncs it.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    // The umask may have taken bits away, never added them; set the mode exactly anyway.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(bytes)?;
    file.sync_all()
}

fn create_private_dir(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(path)
}
