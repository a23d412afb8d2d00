//! The host side of a login: how a flow shows a URL, asks a question or reports progress
//! (pi's `OAuthLoginCallbacks`), and the small values those calls carry.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::error::OAuthError;

/// What the user must open to log in (pi's `OAuthAuthInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthAuthInfo {
    /// The URL to open in a browser (an authorization URL, or GitHub's device page).
    pub url: String,
    /// What to tell the user (for the device flow: the code to enter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// A question for the user (pi's `OAuthPrompt`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthPrompt {
    /// The question.
    pub message: String,
    /// An example answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// Whether an empty answer is fine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_empty: Option<bool>,
}

/// One choice of an [`OAuthSelectPrompt`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthSelectOption {
    /// What [`OAuthLoginCallbacks::on_select`] returns when this is chosen.
    pub id: String,
    /// What the user sees.
    pub label: String,
}

/// A choice for the user (pi's `OAuthSelectPrompt`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthSelectPrompt {
    /// The question.
    pub message: String,
    /// The choices.
    pub options: Vec<OAuthSelectOption>,
}

/// How a login flow talks to the user. The host implements it (a CLI, a GUI, or a C or
/// Python binding forwarding to its own callbacks); the flow calls it.
///
/// Contract:
/// - Methods may be called from any tokio worker thread, never concurrently with themselves
///   except that [`on_manual_code_input`](Self::on_manual_code_input) stays pending while the
///   flow also waits for the browser.
/// - The flow bounds every returned future with its own timeout and cancellation token, and
///   drops it when no longer needed (the browser won the race, the login was cancelled):
///   implementations must tolerate being dropped mid-wait.
/// - An `Err` from a future ends the login with that error; return
///   [`OAuthError::Cancelled`] when the user cancels.
/// - The trait is object-safe; flows receive `&dyn OAuthLoginCallbacks`.
pub trait OAuthLoginCallbacks: Send + Sync {
    /// Show the user a URL to open and what to do there (pi's `onAuth`).
    fn on_auth(&self, info: OAuthAuthInfo);

    /// Ask the user a question and resolve to the answer (pi's `onPrompt`).
    fn on_prompt(&self, prompt: OAuthPrompt) -> BoxFuture<'_, Result<String, OAuthError>>;

    /// Report progress (pi's `onProgress`). Does nothing by default.
    fn on_progress(&self, message: &str) {
        let _ = message;
    }

    /// Let the user paste the authorization code or the final redirect URL while the flow
    /// also waits for the browser callback; whichever arrives first wins (pi's
    /// `onManualCodeInput`). `None` (the default) means the host offers no such input: the
    /// flow waits for the browser and falls back to [`on_prompt`](Self::on_prompt).
    fn on_manual_code_input(&self) -> Option<BoxFuture<'_, Result<String, OAuthError>>> {
        None
    }

    /// Let the user pick one option; resolve to its id, or `None` when the user cancels (pi's
    /// `onSelect`). `None` (the default) means the host has no selector.
    fn on_select(
        &self,
        prompt: OAuthSelectPrompt,
    ) -> Option<BoxFuture<'_, Result<Option<String>, OAuthError>>> {
        let _ = prompt;
        None
    }
}
