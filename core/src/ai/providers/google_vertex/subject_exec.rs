//! An executable-sourced subject token (`credential_source.executable`), as Google's
//! workload identity federation specifies it (google-auth-library's `PluggableAuthClient`):
//!
//! - refused unless `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1` (the file would otherwise run
//!   a program of its choosing);
//! - with `output_file`, a still-valid response saved there is used without running anything;
//! - else `command` (split on whitespace, no shell) runs with `GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE`,
//!   `_TOKEN_TYPE`, `_INTERACTIVE=0`, `_IMPERSONATED_EMAIL` and `_OUTPUT_FILE` set, and is
//!   killed after `timeout_millis` (default 30 s, 5 s to 120 s);
//! - its stdout (or the output file, when it wrote one) is the response: `{"version": 1,
//!   "success": true, "token_type": ..., "id_token" | "saml_response": ..., "expiration_time":
//!   <unix seconds>}` or `{"success": false, "code", "message"}`; an expired response is
//!   refused.
//!
//! The token never appears in an error; the program's stderr is not read (it may print
//! secrets).

use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;
use tokio::io::AsyncReadExt as _;

use super::external_account::{ExecutableSource, ExternalAccount};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::providers::environment::Environment;
use crate::ai::redact::Redactor;

/// The default, least and greatest `timeout_millis`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const MIN_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_TIMEOUT: Duration = Duration::from_secs(120);

/// A response bigger than this is refused (tokens are a few KiB).
const MAX_OUTPUT: usize = 1 << 20;

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    version: Option<u64>,
    success: bool,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    saml_response: Option<String>,
    #[serde(default)]
    expiration_time: Option<u64>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

fn auth(message: String) -> ProviderError {
    ProviderError::other(message, Some(ErrorKind::Auth))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ExecutableSource {
    fn timeout(&self) -> Result<Duration, ProviderError> {
        match self.timeout_millis {
            None => Ok(DEFAULT_TIMEOUT),
            Some(millis) => {
                let timeout = Duration::from_millis(millis);
                if (MIN_TIMEOUT..=MAX_TIMEOUT).contains(&timeout) {
                    Ok(timeout)
                } else {
                    Err(auth(format!(
                        "The external account's executable timeout_millis {millis} is not between \
                         {} and {}",
                        MIN_TIMEOUT.as_millis(),
                        MAX_TIMEOUT.as_millis()
                    )))
                }
            }
        }
    }
}

/// The token of a response, or why it is not usable. `from` names where it came from.
fn token_of(
    text: &str,
    from: &str,
    account: &ExternalAccount,
    needs_expiry: bool,
) -> Result<String, ProviderError> {
    let response: Response = serde_json::from_str(text).map_err(|_| {
        auth(format!(
            "The external account's executable response ({from}) is not the expected JSON"
        ))
    })?;
    if response.version != Some(1) {
        return Err(auth(format!(
            "The external account's executable response ({from}) has version {:?}, not 1",
            response.version
        )));
    }
    if !response.success {
        return Err(auth(format!(
            "The external account's executable failed ({from}): {} {}",
            response
                .code
                .map(|code| code.to_string())
                .unwrap_or_default(),
            response.message.unwrap_or_default()
        )));
    }
    match response.expiration_time {
        Some(expiry) if expiry <= now() => {
            return Err(auth(format!(
                "The external account's executable response ({from}) has expired"
            )));
        }
        None if needs_expiry => {
            return Err(auth(format!(
                "The external account's executable response ({from}) has no expiration_time, \
                 which an output_file requires"
            )));
        }
        _ => {}
    }
    let token_type = response.token_type.unwrap_or_default();
    if token_type != account.subject_token_type {
        return Err(auth(format!(
            "The external account's executable gave a {token_type} token, not the file's \
             subject_token_type {}",
            account.subject_token_type
        )));
    }
    let token = if token_type == "urn:ietf:params:oauth:token-type:saml2" {
        response.saml_response
    } else {
        response.id_token
    };
    token.filter(|t| !t.is_empty()).ok_or_else(|| {
        auth(format!(
            "The external account's executable response ({from}) holds no token"
        ))
    })
}

/// The subject token (see the module docs).
pub(crate) async fn subject_token(
    source: &ExecutableSource,
    account: &ExternalAccount,
    env: &Environment,
    redactor: &mut Redactor,
) -> Result<String, ProviderError> {
    if env
        .var("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES")
        .as_deref()
        != Some("1")
    {
        return Err(auth(
            "The external account runs an executable for its subject token; set \
             GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1 to allow it"
                .into(),
        ));
    }
    let timeout = source.timeout()?;
    let output_file = source.output_file.as_deref().filter(|f| !f.is_empty());
    // A response saved by an earlier run that is still valid: no run.
    if let Some(file) = output_file
        && let Ok(text) = std::fs::read_to_string(file)
        && let Ok(token) = token_of(&text, "its output file", account, true)
    {
        redactor.add(&token);
        return Ok(token);
    }
    let mut words = source.command.split_whitespace();
    let program = words
        .next()
        .ok_or_else(|| auth("The external account's executable command is empty".into()))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(words)
        .env("GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE", &account.audience)
        .env(
            "GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE",
            &account.subject_token_type,
        )
        .env("GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(email) = account.impersonated_email() {
        command.env("GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL", email);
    }
    if let Some(file) = output_file {
        command.env("GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE", file);
    }
    let mut child = command.spawn().map_err(|error| {
        auth(format!(
            "Could not run the external account's executable {program}: {error}"
        ))
    })?;
    let mut stdout = child.stdout.take();
    let run = async {
        let mut out = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            pipe.take(MAX_OUTPUT as u64 + 1)
                .read_to_end(&mut out)
                .await?;
        }
        let status = child.wait().await?;
        Ok::<_, std::io::Error>((status, out))
    };
    let (status, out) = match tokio::time::timeout(timeout, run).await {
        Ok(Ok(done)) => done,
        Ok(Err(error)) => {
            return Err(auth(format!(
                "The external account's executable {program} failed: {error}"
            )));
        }
        // Dropping `run` drops the child, which kills it (`kill_on_drop`).
        Err(_) => {
            return Err(auth(format!(
                "The external account's executable {program} did not finish within {} ms",
                timeout.as_millis()
            )));
        }
    };
    if !status.success() {
        return Err(auth(format!(
            "The external account's executable {program} exited with {status}"
        )));
    }
    if out.len() > MAX_OUTPUT {
        return Err(auth(format!(
            "The external account's executable {program} printed more than {MAX_OUTPUT} bytes"
        )));
    }
    // A program that saved its response to the output file may print nothing.
    let text = match (String::from_utf8_lossy(&out).trim(), output_file) {
        ("", Some(file)) => std::fs::read_to_string(file).map_err(|error| {
            auth(format!(
                "The external account's executable printed nothing and its output file {file} \
                 cannot be read: {error}"
            ))
        })?,
        (text, _) => text.to_owned(),
    };
    let token = token_of(&text, program, account, output_file.is_some())?;
    redactor.add(&token);
    Ok(token)
}
