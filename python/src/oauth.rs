//! OAuth logins for subscription plans (core's `pi_agent::ai::oauth`): the host callbacks as
//! Python functions (plain or `async def`), credentials as pi-shaped dicts, `auth.json`
//! helpers. The public API is `pi_agent.oauth` (which wraps these and keeps tokens out of
//! reprs). Core's errors never contain a token; neither do the ones raised here.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use futures::future::BoxFuture;
use pi_agent::ai::oauth::{
    self, AuthData, OAuthAuthInfo, OAuthCredentials, OAuthLoginCallbacks, OAuthPrompt,
    OAuthProvider, OAuthSelectPrompt,
};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::bridge::{future_into_py, running_loop};
use crate::callable::{Scope, call, call_blocking, describe};
use crate::convert::{Json, parse_secret, serde_to_py};
use crate::errors::{PiError, optional_callable, type_error, type_name};
use crate::runtime::{Interrupted, wait};
use crate::signal::PySignal;

create_exception!(
    pi_agent,
    OAuthError,
    PiError,
    "An OAuth login, refresh or credentials-file operation failed (the message never holds a \
     token)."
);

fn oauth_error(error: oauth::OAuthError) -> PyErr {
    OAuthError::new_err(error.to_string())
}

fn provider(id: &str) -> PyResult<Arc<dyn OAuthProvider>> {
    oauth::get_oauth_provider(id)
        .ok_or_else(|| oauth_error(oauth::OAuthError::UnknownProvider { id: id.to_owned() }))
}

/// The registered OAuth providers: `[{"id", "name", "usesCallbackServer"}]`.
#[pyfunction]
pub(crate) fn oauth_providers(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let providers: Vec<Value> = oauth::get_oauth_providers()
        .iter()
        .map(|provider| {
            json!({
                "id": provider.id(),
                "name": provider.name(),
                "usesCallbackServer": provider.uses_callback_server(),
            })
        })
        .collect();
    crate::convert::to_py(py, &Value::Array(providers))
}

/// The host's functions for one login.
struct Callbacks {
    on_auth: Arc<Py<PyAny>>,
    on_prompt: Arc<Py<PyAny>>,
    on_progress: Option<Arc<Py<PyAny>>>,
    on_manual_code_input: Option<Arc<Py<PyAny>>>,
    on_select: Option<Arc<Py<PyAny>>>,
    scope: Scope,
}

/// The arguments `(dict,)` of a callback from a core value.
fn dict_arg<T: Serialize + Send + 'static>(
    function: Arc<Py<PyAny>>,
    value: T,
) -> impl for<'py> FnOnce(Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> + Send
{
    move |py| {
        let args = PyTuple::new(py, [serde_to_py(py, &value)?])?;
        Ok((function.bind(py).clone(), args))
    }
}

/// A callback's exception as core's error (cancellation stays cancellation).
fn callback_error(py: Python<'_>, what: &str, error: &PyErr) -> oauth::OAuthError {
    let kind = type_name(error.value(py).as_any());
    if kind == "CancelledError" || kind == "KeyboardInterrupt" {
        oauth::OAuthError::Cancelled
    } else {
        oauth::OAuthError::callback(format!("{what} raised {}", describe(py, error)))
    }
}

/// Reports a notification callback's exception (it has no way to fail the login).
fn report(
    function: Arc<Py<PyAny>>,
) -> impl for<'py> FnOnce(Python<'py>, PyResult<Bound<'py, PyAny>>) + Send {
    move |py, outcome| {
        if let Err(error) = outcome {
            error.write_unraisable(py, Some(function.bind(py)));
        }
    }
}

fn answer(
    scope: Scope,
    function: Arc<Py<PyAny>>,
    argument: Option<Value>,
    what: &'static str,
) -> BoxFuture<'static, Result<String, oauth::OAuthError>> {
    call(
        scope,
        move |py| {
            let args = match &argument {
                Some(argument) => PyTuple::new(py, [crate::convert::to_py(py, argument)?])?,
                None => PyTuple::empty(py),
            };
            Ok((function.bind(py).clone(), args))
        },
        move |py, outcome| {
            outcome
                .and_then(|value| value.extract::<String>())
                .map_err(|error| callback_error(py, what, &error))
        },
        || Err(oauth::OAuthError::Cancelled),
    )
    .boxed()
}

impl OAuthLoginCallbacks for Callbacks {
    fn on_auth(&self, info: OAuthAuthInfo) {
        let function = Arc::clone(&self.on_auth);
        call_blocking(call(
            self.scope.clone(),
            dict_arg(Arc::clone(&function), info),
            report(function),
            || (),
        ));
    }

    fn on_prompt(&self, prompt: OAuthPrompt) -> BoxFuture<'_, Result<String, oauth::OAuthError>> {
        let prompt = serde_json::to_value(&prompt).unwrap_or_default();
        answer(
            self.scope.clone(),
            Arc::clone(&self.on_prompt),
            Some(prompt),
            "on_prompt",
        )
    }

    fn on_progress(&self, message: &str) {
        if let Some(function) = &self.on_progress {
            let message = message.to_owned();
            let call_function = Arc::clone(function);
            call_blocking(call(
                self.scope.clone(),
                move |py| {
                    let args = PyTuple::new(py, [message])?;
                    Ok((call_function.bind(py).clone(), args))
                },
                report(Arc::clone(function)),
                || (),
            ));
        }
    }

    fn on_manual_code_input(&self) -> Option<BoxFuture<'_, Result<String, oauth::OAuthError>>> {
        let function = self.on_manual_code_input.as_ref()?;
        Some(answer(
            self.scope.clone(),
            Arc::clone(function),
            None,
            "on_manual_code_input",
        ))
    }

    fn on_select(
        &self,
        prompt: OAuthSelectPrompt,
    ) -> Option<BoxFuture<'_, Result<Option<String>, oauth::OAuthError>>> {
        let function = Arc::clone(self.on_select.as_ref()?);
        Some(
            call(
                self.scope.clone(),
                dict_arg(function, prompt),
                |py, outcome| {
                    outcome
                        .and_then(|value| value.extract::<Option<String>>())
                        .map_err(|error| callback_error(py, "on_select", &error))
                },
                || Err(oauth::OAuthError::Cancelled),
            )
            .boxed(),
        )
    }
}

/// An optional callback argument, shared by the futures that call it.
fn optional(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Arc<Py<PyAny>>>> {
    Ok(optional_callable(value, what)?.map(|value| Arc::new(value.clone().unbind())))
}

/// A prepared login: the provider, the host's callbacks, the cancellation token.
struct Login {
    provider: Arc<dyn OAuthProvider>,
    callbacks: Callbacks,
    cancel: CancellationToken,
}

impl Login {
    /// `optional` are `on_progress`, `on_manual_code_input` and `on_select`. The callbacks'
    /// event loop is the one `run()` is awaited on (none for `run_sync()`).
    fn new(
        provider_id: &str,
        on_auth: &Bound<'_, PyAny>,
        on_prompt: &Bound<'_, PyAny>,
        [on_progress, on_manual_code_input, on_select]: [Option<&Bound<'_, PyAny>>; 3],
        signal: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let required = |value: &Bound<'_, PyAny>, what: &str| {
            optional(Some(value), what)?
                .ok_or_else(|| type_error(Some(what), format!("{what} is required")))
        };
        let cancel = match signal.filter(|signal| !signal.is_none()) {
            Some(signal) => signal
                .cast::<PySignal>()
                .map_err(|_| type_error(Some("signal"), "signal must be a pi_agent.Signal"))?
                .get()
                .token
                .child_token(),
            None => CancellationToken::new(),
        };
        Ok(Self {
            provider: provider(provider_id)?,
            callbacks: Callbacks {
                on_auth: required(on_auth, "on_auth")?,
                on_prompt: required(on_prompt, "on_prompt")?,
                on_progress: optional(on_progress, "on_progress")?,
                on_manual_code_input: optional(on_manual_code_input, "on_manual_code_input")?,
                on_select: optional(on_select, "on_select")?,
                scope: Scope::default(),
            },
            cancel,
        })
    }

    async fn run(self) -> PyResult<Json> {
        let credentials = self
            .provider
            .login(&self.callbacks, self.cancel.clone())
            .await
            .map_err(oauth_error)?;
        credentials_json(&credentials)
    }
}

fn credentials_json(credentials: &OAuthCredentials) -> PyResult<Json> {
    serde_json::to_value(credentials)
        .map(Json)
        .map_err(|error| PyValueError::new_err(error.to_string()))
}

/// Prepares a login, to run once with `run()` (asyncio) or `run_sync()` (blocking).
#[pyfunction]
#[pyo3(signature = (
    provider_id, *, on_auth, on_prompt, on_progress = None, on_manual_code_input = None,
    on_select = None, signal = None,
))]
pub(crate) fn oauth_login(
    provider_id: &str,
    on_auth: &Bound<'_, PyAny>,
    on_prompt: &Bound<'_, PyAny>,
    on_progress: Option<&Bound<'_, PyAny>>,
    on_manual_code_input: Option<&Bound<'_, PyAny>>,
    on_select: Option<&Bound<'_, PyAny>>,
    signal: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyOAuthLogin> {
    let callbacks = [on_progress, on_manual_code_input, on_select];
    let login = Login::new(provider_id, on_auth, on_prompt, callbacks, signal)?;
    Ok(PyOAuthLogin(Mutex::new(Some(login))))
}

/// A prepared login (`oauth_login(...)`), which runs once.
#[pyclass(module = "pi_agent", name = "_OAuthLogin", frozen)]
pub(crate) struct PyOAuthLogin(Mutex<Option<Login>>);

impl PyOAuthLogin {
    fn take(&self) -> PyResult<Login> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .ok_or_else(|| PiError::new_err("this login has already run"))
    }
}

#[pymethods]
impl PyOAuthLogin {
    /// Runs the login: an asyncio future of the running loop resolving to the credentials
    /// dict; `async def` callbacks run on that loop.
    fn run<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let event_loop = running_loop(py)?.unbind();
        let mut login = self.take()?;
        login.callbacks.scope.event_loop = Some(Arc::new(event_loop));
        future_into_py(py, login.run())
    }

    /// Runs the login to its end (GIL released); Ctrl-C cancels it.
    fn run_sync(&self, py: Python<'_>) -> PyResult<Json> {
        let login = self.take()?;
        let cancel = login.cancel.clone();
        wait(py, login.run(), move || {
            cancel.cancel();
            Interrupted::Return
        })?
    }
}

/// Reads `{provider id: credentials dict}`.
fn credentials_map(credentials: &Bound<'_, PyAny>) -> PyResult<BTreeMap<String, OAuthCredentials>> {
    parse_secret(credentials, "credentials")
}

async fn api_key(
    provider_id: String,
    credentials: BTreeMap<String, OAuthCredentials>,
) -> PyResult<Json> {
    let key = oauth::get_oauth_api_key(&provider_id, &credentials)
        .await
        .map_err(oauth_error)?;
    Ok(Json(match key {
        None => Value::Null,
        Some(key) => json!({
            "apiKey": key.api_key.expose(),
            "newCredentials": serde_json::to_value(&key.new_credentials)
                .map_err(|error| PyValueError::new_err(error.to_string()))?,
            "refreshed": key.refreshed,
        }),
    }))
}

/// pi's `getOAuthApiKey`: an asyncio future of `None` or `{"apiKey", "newCredentials",
/// "refreshed"}`.
#[pyfunction]
pub(crate) fn oauth_get_api_key<'py>(
    py: Python<'py>,
    provider_id: String,
    credentials: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    provider(&provider_id)?;
    let credentials = credentials_map(credentials)?;
    future_into_py(py, api_key(provider_id, credentials))
}

/// `oauth_get_api_key` that blocks (GIL released).
#[pyfunction]
pub(crate) fn oauth_get_api_key_sync(
    py: Python<'_>,
    provider_id: String,
    credentials: &Bound<'_, PyAny>,
) -> PyResult<Json> {
    provider(&provider_id)?;
    let credentials = credentials_map(credentials)?;
    wait(py, api_key(provider_id, credentials), || {
        Interrupted::Return
    })?
}

async fn refresh(
    provider: Arc<dyn OAuthProvider>,
    credentials: OAuthCredentials,
) -> PyResult<Json> {
    let fresh = provider
        .refresh_token(&credentials)
        .await
        .map_err(oauth_error)?;
    credentials_json(&fresh)
}

/// Refreshes credentials now (an asyncio future of the new credentials dict).
#[pyfunction]
pub(crate) fn oauth_refresh<'py>(
    py: Python<'py>,
    provider_id: &str,
    credentials: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let provider = provider(provider_id)?;
    let credentials: OAuthCredentials = parse_secret(credentials, "credentials")?;
    future_into_py(py, refresh(provider, credentials))
}

/// `oauth_refresh` that blocks (GIL released).
#[pyfunction]
pub(crate) fn oauth_refresh_sync(
    py: Python<'_>,
    provider_id: &str,
    credentials: &Bound<'_, PyAny>,
) -> PyResult<Json> {
    let provider = provider(provider_id)?;
    let credentials: OAuthCredentials = parse_secret(credentials, "credentials")?;
    wait(py, refresh(provider, credentials), || Interrupted::Return)?
}

/// Reads a pi-style `auth.json` (`{provider id: {"type": "oauth", ...} | {"type": "api_key",
/// "key"}}`); a missing file reads as `{}`.
#[pyfunction]
pub(crate) fn oauth_read_auth_file(
    py: Python<'_>,
    path: std::path::PathBuf,
) -> PyResult<Bound<'_, PyAny>> {
    let data = oauth::read_auth_file(path).map_err(oauth_error)?;
    serde_to_py(py, &data)
}

/// Writes `data` to `path` atomically, readable by its owner only (mode 0600).
#[pyfunction]
pub(crate) fn oauth_write_auth_file(
    path: std::path::PathBuf,
    data: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let data: AuthData = parse_secret(data, "auth data")?;
    oauth::write_auth_file(path, &data).map_err(oauth_error)
}

/// Adjusts `models` (`Model` objects or pi-shaped dicts) for the stored `credentials` of
/// `provider_id` (pi's `modifyModels`): GitHub Copilot moves its models to the account's API
/// host (Business/Enterprise). Returns new `Model`s; other providers' models are unchanged.
#[pyfunction]
pub(crate) fn oauth_modify_models(
    provider_id: &str,
    credentials: &Bound<'_, PyAny>,
    models: Vec<Bound<'_, PyAny>>,
) -> PyResult<Vec<crate::model::PyModel>> {
    let provider = provider(provider_id)?;
    let credentials: OAuthCredentials = parse_secret(credentials, "credentials")?;
    let models = models
        .iter()
        .map(crate::model::PyModel::extract)
        .collect::<PyResult<Vec<_>>>()?;
    Ok(provider
        .modify_models(models, &credentials)
        .into_iter()
        .map(|model| crate::model::PyModel { model })
        .collect())
}
