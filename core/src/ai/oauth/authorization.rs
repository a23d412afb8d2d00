//! Getting the authorization code of a PKCE login: from the browser's redirect to the
//! callback server, from text the user pastes, or from a prompt, exactly in pi's order.

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::callback_server::CallbackServer;
use super::callbacks::{OAuthLoginCallbacks, OAuthPrompt};
use super::error::OAuthError;
use super::wait::bounded;

/// A code and the state that came with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AuthorizationInput {
    /// The authorization code.
    pub(crate) code: Option<String>,
    /// The `state`, when the input carried one.
    pub(crate) state: Option<String>,
}

/// Reads what a user pasted: a full redirect URL, `code#state`, a `code=..&state=..` query,
/// or a bare code (pi's `parseAuthorizationInput`). Empty parts count as absent.
pub(crate) fn parse_authorization_input(input: &str) -> AuthorizationInput {
    let value = input.trim();
    let non_empty = |s: Option<String>| s.filter(|s| !s.is_empty());
    if value.is_empty() {
        return AuthorizationInput::default();
    }
    if let Ok(url) = url::Url::parse(value) {
        let get = |name: &str| {
            url.query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        return AuthorizationInput {
            code: non_empty(get("code")),
            state: non_empty(get("state")),
        };
    }
    if value.contains('#') {
        // JavaScript's `split("#", 2)`: the first two pieces, the rest dropped.
        let mut parts = value.split('#');
        return AuthorizationInput {
            code: non_empty(parts.next().map(str::to_owned)),
            state: non_empty(parts.next().map(str::to_owned)),
        };
    }
    if value.contains("code=") {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(value.as_bytes())
            .into_owned()
            .collect();
        let get = |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        };
        return AuthorizationInput {
            code: non_empty(get("code")),
            state: non_empty(get("state")),
        };
    }
    AuthorizationInput {
        code: Some(value.to_owned()),
        state: None,
    }
}

/// Where a login waits for its code.
pub(crate) struct CodeSources<'a> {
    /// The callback server, or `None` when it could not listen (the Codex fallback).
    pub(crate) server: Option<CallbackServer>,
    /// The host.
    pub(crate) callbacks: &'a dyn OAuthLoginCallbacks,
    /// The `state` the authorization URL carried.
    pub(crate) expected_state: &'a str,
    /// The question asked when nothing else gave a code.
    pub(crate) prompt: OAuthPrompt,
    /// The login's cancellation.
    pub(crate) cancel: &'a CancellationToken,
    /// When waiting for the user gives up.
    pub(crate) deadline: Instant,
}

/// Waits for the code: the browser callback raced against the host's manual code input
/// (when it offers one), then, if neither gave a code, a prompt. A pasted `state` must match.
/// The callback server is shut down before this returns.
pub(crate) async fn receive_code(
    sources: CodeSources<'_>,
) -> Result<AuthorizationInput, OAuthError> {
    let CodeSources {
        mut server,
        callbacks,
        expected_state,
        prompt,
        cancel,
        deadline,
    } = sources;
    let first = first_code(server.as_mut(), callbacks, expected_state, cancel, deadline).await;
    if let Some(server) = server {
        server.shutdown().await;
    }
    if let Some(input) = first? {
        return Ok(input);
    }
    let answer = bounded(
        callbacks.on_prompt(prompt),
        cancel,
        deadline,
        "the authorization code",
    )
    .await?;
    let input = checked(&answer, expected_state)?;
    if input.code.is_none() {
        return Err(OAuthError::MissingCode);
    }
    Ok(input)
}

/// The code from the browser or the manual input, whichever comes first; `None` when the
/// manual input gave none.
async fn first_code(
    server: Option<&mut CallbackServer>,
    callbacks: &dyn OAuthLoginCallbacks,
    expected_state: &str,
    cancel: &CancellationToken,
    deadline: Instant,
) -> Result<Option<AuthorizationInput>, OAuthError> {
    const WHAT: &str = "the authorization code";
    let from_server = |code: Option<super::callback_server::CallbackCode>| {
        code.map(|code| AuthorizationInput {
            code: Some(code.code),
            state: code.state,
        })
    };
    match (server, callbacks.on_manual_code_input()) {
        (Some(server), Some(manual)) => {
            let raced = async {
                tokio::select! {
                    code = server.next_code() => Ok(from_server(code)),
                    input = manual => checked(&input?, expected_state).map(Some),
                }
            };
            bounded(raced, cancel, deadline, WHAT).await
        }
        (Some(server), None) => {
            bounded(
                async { Ok(from_server(server.next_code().await)) },
                cancel,
                deadline,
                WHAT,
            )
            .await
        }
        (None, Some(manual)) => {
            let input = bounded(manual, cancel, deadline, WHAT).await?;
            checked(&input, expected_state).map(Some)
        }
        (None, None) => Ok(None),
    }
    .map(|input| input.filter(|input| input.code.is_some()))
}

/// Parses pasted text and rejects another login's `state`.
fn checked(text: &str, expected_state: &str) -> Result<AuthorizationInput, OAuthError> {
    let input = parse_authorization_input(text);
    match &input.state {
        Some(state) if state != expected_state => Err(OAuthError::StateMismatch),
        _ => Ok(input),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(code: Option<&str>, state: Option<&str>) -> AuthorizationInput {
        AuthorizationInput {
            code: code.map(str::to_owned),
            state: state.map(str::to_owned),
        }
    }

    #[test]
    fn parses_every_pasted_shape() {
        assert_eq!(parse_authorization_input("  "), input(None, None));
        assert_eq!(
            parse_authorization_input("http://localhost:1455/auth/callback?code=abc&state=xyz"),
            input(Some("abc"), Some("xyz"))
        );
        assert_eq!(
            parse_authorization_input("abc#xyz"),
            input(Some("abc"), Some("xyz"))
        );
        assert_eq!(
            parse_authorization_input("abc#xyz#more"),
            input(Some("abc"), Some("xyz"))
        );
        assert_eq!(
            parse_authorization_input("code=a%20b&state=s"),
            input(Some("a b"), Some("s"))
        );
        assert_eq!(parse_authorization_input(" abc "), input(Some("abc"), None));
        assert_eq!(parse_authorization_input("abc#"), input(Some("abc"), None));
    }

    #[test]
    fn a_foreign_state_is_rejected() {
        assert!(matches!(
            checked("abc#other", "mine"),
            Err(OAuthError::StateMismatch)
        ));
        assert_eq!(
            checked("abc#mine", "mine").unwrap(),
            input(Some("abc"), Some("mine"))
        );
        assert_eq!(checked("abc", "mine").unwrap(), input(Some("abc"), None));
    }
}
