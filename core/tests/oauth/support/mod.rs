//! Shared test support: the mock authorization server, a scripted host (the login
//! callbacks), the "browser", and a hang guard.

pub(crate) mod auth_server;
pub(crate) mod http_server;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use pi_agent::ai::oauth::{OAuthAuthInfo, OAuthError, OAuthLoginCallbacks, OAuthPrompt};
use tokio::sync::mpsc;

/// Fails the test instead of hanging it (a guard only: nothing is timed).
pub(crate) async fn guard<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), future)
        .await
        .expect("test hung")
}

/// The callbacks of a login, scripted by the test through [`HostControl`].
pub(crate) struct TestHost {
    auth: mpsc::UnboundedSender<OAuthAuthInfo>,
    answers: tokio::sync::Mutex<mpsc::UnboundedReceiver<Result<String, OAuthError>>>,
    manual: Option<tokio::sync::Mutex<mpsc::UnboundedReceiver<Result<String, OAuthError>>>>,
    pub(crate) prompts: Mutex<Vec<OAuthPrompt>>,
    pub(crate) progress: Mutex<Vec<String>>,
}

/// The test's side of a [`TestHost`].
pub(crate) struct HostControl {
    /// What `on_auth` showed.
    pub(crate) auth: mpsc::UnboundedReceiver<OAuthAuthInfo>,
    /// Answers to `on_prompt`, in order (a prompt with no answer yet waits).
    pub(crate) answers: mpsc::UnboundedSender<Result<String, OAuthError>>,
    /// What the user pastes into the manual code input (when the host offers one).
    pub(crate) manual: Option<mpsc::UnboundedSender<Result<String, OAuthError>>>,
}

impl HostControl {
    pub(crate) async fn next_auth(&mut self) -> OAuthAuthInfo {
        self.auth
            .recv()
            .await
            .expect("the login ended without calling on_auth")
    }

    pub(crate) fn answer(&self, text: &str) {
        self.answers.send(Ok(text.to_owned())).unwrap();
    }

    pub(crate) fn paste(&self, text: &str) {
        self.manual
            .as_ref()
            .expect("no manual input")
            .send(Ok(text.to_owned()))
            .unwrap();
    }
}

impl TestHost {
    /// A host; `manual_input` decides whether it offers `on_manual_code_input`.
    pub(crate) fn new(manual_input: bool) -> (Arc<Self>, HostControl) {
        let (auth_tx, auth) = mpsc::unbounded_channel();
        let (answers, answers_rx) = mpsc::unbounded_channel();
        let (manual, manual_rx) = if manual_input {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(tokio::sync::Mutex::new(rx)))
        } else {
            (None, None)
        };
        let host = Arc::new(Self {
            auth: auth_tx,
            answers: tokio::sync::Mutex::new(answers_rx),
            manual: manual_rx,
            prompts: Mutex::new(Vec::new()),
            progress: Mutex::new(Vec::new()),
        });
        (
            host,
            HostControl {
                auth,
                answers,
                manual,
            },
        )
    }

    pub(crate) fn prompts(&self) -> Vec<OAuthPrompt> {
        self.prompts.lock().unwrap().clone()
    }

    pub(crate) fn progress(&self) -> Vec<String> {
        self.progress.lock().unwrap().clone()
    }
}

async fn next(
    receiver: &tokio::sync::Mutex<mpsc::UnboundedReceiver<Result<String, OAuthError>>>,
) -> Result<String, OAuthError> {
    match receiver.lock().await.recv().await {
        Some(answer) => answer,
        // The test dropped its control: behave like a user who never answers.
        None => std::future::pending().await,
    }
}

impl OAuthLoginCallbacks for TestHost {
    fn on_auth(&self, info: OAuthAuthInfo) {
        let _ = self.auth.send(info);
    }

    fn on_prompt(&self, prompt: OAuthPrompt) -> BoxFuture<'_, Result<String, OAuthError>> {
        self.prompts.lock().unwrap().push(prompt);
        Box::pin(next(&self.answers))
    }

    fn on_progress(&self, message: &str) {
        self.progress.lock().unwrap().push(message.to_owned());
    }

    fn on_manual_code_input(&self) -> Option<BoxFuture<'_, Result<String, OAuthError>>> {
        self.manual
            .as_ref()
            .map(|manual| Box::pin(next(manual)) as BoxFuture<'_, _>)
    }
}

/// The query parameters of a URL.
pub(crate) fn query(url: &str) -> std::collections::BTreeMap<String, String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

/// A browser that follows redirects (to the localhost callback); `localhost` is dialled as
/// 127.0.0.1, where the callback server listens.
pub(crate) fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .resolve("localhost", "127.0.0.1:0".parse().unwrap())
        .build()
        .unwrap()
}

/// Opens `url` in the browser; returns the final status and page.
pub(crate) async fn open(url: &str) -> (u16, String) {
    let response = browser().get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Where the mock authorize endpoint would send the browser, without going there (the user
/// copies this URL from another machine's browser).
pub(crate) async fn redirect_target(authorize_url: &str) -> String {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = client.get(authorize_url).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 302);
    response.headers()["location"].to_str().unwrap().to_owned()
}
