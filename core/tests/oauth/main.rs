//! OAuth logins end to end, offline: every flow runs against a mock authorization server on
//! 127.0.0.1, with the test playing the user (the login callbacks) and the browser (it opens
//! the authorization URL, which redirects to the flow's localhost callback).

mod anthropic;
mod codex;
mod copilot;
mod credentials;
mod registry;
mod support;

/// The OAuth provider registry is process-wide: tests that change it run one at a time.
pub(crate) static REGISTRY_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
