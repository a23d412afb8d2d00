//! `oauth_register_provider` / `oauth_reset_providers`: a built-in OAuth flow pointed at
//! other endpoints (a company proxy, a test server). Core's flow configurations are Rust
//! structs with durations, not serde shapes, so their keywords are read here, one by one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use pi_agent::ai::oauth::{
    self, AnthropicOAuthConfig, AnthropicOAuthProvider, GitHubCopilotOAuthConfig,
    GitHubCopilotOAuthProvider, OAuthProvider, OpenAICodexOAuthConfig, OpenAICodexOAuthProvider,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{type_error, value_error};

/// Registers a built-in flow (`anthropic`, `github-copilot`, `openai-codex`) with other
/// endpoints or limits, e.g. a company proxy or a test server; the keywords are the fields of
/// its core config (`authorize_url`, `token_url`, `client_id`, `callback_port`, ...;
/// durations in milliseconds: `request_timeout_ms`, `login_timeout_ms`).
#[pyfunction]
#[pyo3(signature = (provider_id, **config))]
pub(crate) fn oauth_register_provider(
    provider_id: &str,
    config: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let mut given = Settings(BTreeMap::new());
    if let Some(config) = config {
        for (key, value) in config.iter() {
            given.0.insert(key.extract()?, value);
        }
    }
    let provider: Arc<dyn OAuthProvider> = match provider_id {
        "anthropic" => {
            let mut c = AnthropicOAuthConfig::default();
            given.set("client_id", &mut c.client_id)?;
            given.set("authorize_url", &mut c.authorize_url)?;
            given.set("token_url", &mut c.token_url)?;
            given.set("scopes", &mut c.scopes)?;
            given.set("callback_port", &mut c.callback_port)?;
            given.set("callback_path", &mut c.callback_path)?;
            given.set_ms("request_timeout_ms", &mut c.request_timeout)?;
            given.set_ms("login_timeout_ms", &mut c.login_timeout)?;
            Arc::new(AnthropicOAuthProvider::new(c))
        }
        "openai-codex" => {
            let mut c = OpenAICodexOAuthConfig::default();
            given.set("client_id", &mut c.client_id)?;
            given.set("authorize_url", &mut c.authorize_url)?;
            given.set("token_url", &mut c.token_url)?;
            given.set("scope", &mut c.scope)?;
            given.set("originator", &mut c.originator)?;
            given.set("callback_port", &mut c.callback_port)?;
            given.set("callback_path", &mut c.callback_path)?;
            given.set_ms("request_timeout_ms", &mut c.request_timeout)?;
            given.set_ms("login_timeout_ms", &mut c.login_timeout)?;
            Arc::new(OpenAICodexOAuthProvider::new(c))
        }
        "github-copilot" => {
            let mut c = GitHubCopilotOAuthConfig::default();
            given.set("client_id", &mut c.client_id)?;
            given.set("github_url", &mut c.github_url)?;
            given.set("github_api_url", &mut c.github_api_url)?;
            given.set("copilot_api_url", &mut c.copilot_api_url)?;
            given.set("enable_models", &mut c.enable_models)?;
            given.set_ms("device_flow_second_ms", &mut c.device_flow_second)?;
            given.set_ms("request_timeout_ms", &mut c.request_timeout)?;
            given.set_ms("login_timeout_ms", &mut c.login_timeout)?;
            Arc::new(GitHubCopilotOAuthProvider::new(c))
        }
        other => {
            return Err(value_error(
                Some("provider_id"),
                format!(
                    "`{other}` is not a built-in OAuth flow (anthropic, github-copilot, \
                     openai-codex)"
                ),
            ));
        }
    };
    if let Some(unknown) = given.0.keys().next() {
        return Err(type_error(
            Some(unknown),
            format!("unexpected setting `{unknown}` for the {provider_id} OAuth flow"),
        ));
    }
    oauth::register_oauth_provider(provider);
    Ok(())
}

/// The keywords given, consumed as they are read (what is left was not known).
struct Settings<'py>(BTreeMap<String, Bound<'py, PyAny>>);

impl<'py> Settings<'py> {
    fn set<T: for<'a> FromPyObject<'a, 'py>>(&mut self, name: &str, field: &mut T) -> PyResult<()> {
        if let Some(value) = self.0.remove(name) {
            *field = value.extract().map_err(Into::into)?;
        }
        Ok(())
    }

    fn set_ms(&mut self, name: &str, field: &mut Duration) -> PyResult<()> {
        if let Some(value) = self.0.remove(name) {
            *field = Duration::from_millis(value.extract()?);
        }
        Ok(())
    }
}

/// Restores the built-in OAuth flows with pi's endpoints, dropping every registration.
#[pyfunction]
pub(crate) fn oauth_reset_providers() {
    oauth::reset_oauth_providers();
}
