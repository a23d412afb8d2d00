//! The key a built-in provider sends, and the refusal of a request that has none.

use super::http::is_loopback;
use crate::ai::env_keys::{get_env_api_key_for_url, missing_key_message_for_url, request_key};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::options::{ApiKey, StreamOptions};

/// The key for a request to `url`: the call's own, else `provider`'s environment key when it
/// may be sent there.
pub(crate) fn key_for_url(options: &StreamOptions, provider: &str, url: &str) -> Option<ApiKey> {
    request_key(options).or_else(|| get_env_api_key_for_url(provider, url))
}

/// [`key_for_url`], refused by [`require_key`] when there is none.
pub(crate) fn required_key(
    options: &StreamOptions,
    provider: &str,
    url: &str,
) -> Result<Option<ApiKey>, ProviderError> {
    let key = key_for_url(options, provider, url);
    require_key(key.is_some(), provider, url)?;
    Ok(key)
}

/// Refuses a request without credentials (`found` false) before it is sent, with an `auth`
/// error naming what to set; a server on this machine is let through, since local servers
/// (Ollama, llama.cpp, LM Studio, vLLM) need no key.
pub(crate) fn require_key(
    found: bool,
    provider: &str,
    base_url: &str,
) -> Result<(), ProviderError> {
    if found || is_loopback(base_url) {
        return Ok(());
    }
    Err(ProviderError::other(
        missing_key_message_for_url(provider, base_url),
        Some(ErrorKind::Auth),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_servers_go_without_a_key() {
        for local in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://localhost:4000/anthropic",
            "http://[::1]:1234/v1",
        ] {
            assert!(require_key(false, "openai", local).is_ok(), "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "https://api.anthropic.com",
            "https://generativelanguage.googleapis.com/v1beta",
            "https://localhost.evil.com/v1",
        ] {
            let error = require_key(false, "openai", remote).unwrap_err();
            assert_eq!(error.kind(), Some(ErrorKind::Auth), "{remote}");
            assert!(require_key(true, "openai", remote).is_ok(), "{remote}");
        }
    }
}
