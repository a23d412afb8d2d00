//! OAuth logins for subscription plans (core's `ai::oauth`: `anthropic`, `github-copilot`,
//! `openai-codex`) driven by C callbacks, and the API key of stored credentials (pi's
//! `getOAuthApiKey`, which refreshes them).

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use pi_agent::ai::Model;
use pi_agent::ai::oauth::{
    OAuthAuthInfo, OAuthCredentials, OAuthError, OAuthLoginCallbacks, OAuthPrompt,
    OAuthSelectPrompt, get_oauth_api_key, get_oauth_provider,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::args::{Out, arg_ref, arg_str, method};
use crate::boundary::{act, flag, free, into_handle, lock};
use crate::callback::{CallbackSite, run_callback, run_inline};
use crate::error::{parse_object, pi_error, pi_error_kind, to_json};
use crate::runtime::{block_on, may_block, runtime};
use crate::string::{into_c_string, pi_str};
use crate::user_data::{UserData, pi_free_callback};

/// How a login talks to the user (pi's `OAuthLoginCallbacks`), passed to `pi_oauth_login_start`
/// (which copies it). Every callback gets `user_data` first.
///
/// - `on_auth` (required): show the user `url` to open and `instructions` (may be empty; for
///   GitHub's device flow, the code to enter).
/// - `on_prompt` (required): ask the question of `prompt_json` (`{"message":...,
///   "placeholder":...,"allowEmpty":...}`) and set the answer with `pi_oauth_answer_set`.
/// - `on_progress` (nullable): report progress.
/// - `on_manual_code_input` (nullable): let the user paste the authorization code or the final
///   redirect URL while the login also waits for the browser; whichever comes first wins. NULL:
///   the login waits for the browser, then falls back to `on_prompt`.
/// - `on_select` (nullable): let the user pick one option of `prompt_json` (`{"message":...,
///   "options":[{"id":...,"label":...}]}`); set its `id` with `pi_oauth_answer_set`, or set
///   nothing when the user declines.
///
/// `on_prompt`, `on_manual_code_input` and `on_select` may block until the user answers: they
/// run on the runtime's blocking pool. Return 0, or non-zero when the user cancels (the login
/// then ends with `CANCELLED`). When the login no longer needs an answer (the browser won, or
/// it was cancelled or timed out), `pi_oauth_answer_is_cancelled` turns true: a callback that
/// waits for input should poll it. `on_auth` and `on_progress` run on a runtime thread and must
/// return quickly. `free_user_data` (nullable) is called with `user_data` exactly once, when
/// the login is over and no callback runs any more (possibly on a runtime thread).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pi_oauth_login_callbacks {
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Shows the URL to open.
    pub on_auth:
        Option<unsafe extern "C" fn(user_data: *mut c_void, url: pi_str, instructions: pi_str)>,
    /// Asks a question.
    pub on_prompt: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            prompt_json: pi_str,
            answer: *mut pi_oauth_answer,
        ) -> i32,
    >,
    /// Reports progress.
    pub on_progress: Option<unsafe extern "C" fn(user_data: *mut c_void, message: pi_str)>,
    /// Accepts a pasted code or redirect URL.
    pub on_manual_code_input:
        Option<unsafe extern "C" fn(user_data: *mut c_void, answer: *mut pi_oauth_answer) -> i32>,
    /// Lets the user pick an option.
    pub on_select: Option<
        unsafe extern "C" fn(
            user_data: *mut c_void,
            prompt_json: pi_str,
            answer: *mut pi_oauth_answer,
        ) -> i32,
    >,
    /// Frees `user_data`.
    pub free_user_data: pi_free_callback,
}

/// Where a login callback writes the user's answer. Valid until the callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_oauth_answer {
    text: Mutex<Option<String>>,
    cancelled: Arc<AtomicBool>,
}

/// Sets the answer (copied). The last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_answer_set(
    answer: *mut pi_oauth_answer,
    text: *const c_char,
) -> *mut pi_error {
    method(answer, "answer", |answer| {
        let text = arg_str(text, "text")?;
        *lock(&answer.text) = Some(text.to_owned());
        Ok(())
    })
}

/// Whether the login no longer needs this answer (it ended, was cancelled, or the browser
/// delivered the code first); `false` when `answer` is NULL. A callback that waits for the
/// user should poll it and return.
///
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_answer_is_cancelled(answer: *const pi_oauth_answer) -> bool {
    flag(answer, |answer| answer.cancelled.load(Ordering::Acquire))
}

type AnswerFn = unsafe extern "C" fn(*mut c_void, pi_str, *mut pi_oauth_answer) -> i32;
type ManualFn = unsafe extern "C" fn(*mut c_void, *mut pi_oauth_answer) -> i32;

/// The C callbacks as core's `OAuthLoginCallbacks`.
struct CCallbacks {
    callbacks: pi_oauth_login_callbacks,
    user_data: Arc<UserData>,
}

// SAFETY: the C API documents that `user_data` is used from the library's runtime threads (and
// freed on one of them), so the caller guarantees it may cross threads; the callbacks are plain
// function pointers.
unsafe impl Send for CCallbacks {}
// SAFETY: as above; the pointer itself is only copied, never dereferenced by Rust.
unsafe impl Sync for CCallbacks {}

/// Marks an answer as no longer needed when the login drops the future waiting for it.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// How the user answered.
enum Answer {
    Text(String),
    Nothing,
    Cancelled,
}

impl CCallbacks {
    /// Runs an answering callback on the blocking pool; dropping the future marks the answer
    /// as cancelled.
    fn ask(
        &self,
        invoke: impl FnOnce(*mut c_void, *mut pi_oauth_answer) -> i32 + Send + 'static,
    ) -> BoxFuture<'static, Result<Answer, OAuthError>> {
        let cancelled = Arc::new(AtomicBool::new(false));
        let guard = CancelOnDrop(Arc::clone(&cancelled));
        let user_data = Arc::clone(&self.user_data);
        Box::pin(async move {
            let _guard = guard;
            let outcome = run_callback(&CallbackSite::default(), move || {
                let Some(pointer) = user_data.get() else {
                    return Answer::Cancelled;
                };
                let answer = pi_oauth_answer {
                    text: Mutex::new(None),
                    cancelled,
                };
                let code = invoke(pointer, std::ptr::from_ref(&answer).cast_mut());
                let text = answer
                    .text
                    .into_inner()
                    .unwrap_or_else(PoisonError::into_inner);
                match text {
                    _ if code != 0 => Answer::Cancelled,
                    Some(text) => Answer::Text(text),
                    None => Answer::Nothing,
                }
            })
            .await;
            outcome.map_err(|error| OAuthError::callback(format!("login callback failed: {error}")))
        })
    }

    fn text_answer(
        &self,
        what: &'static str,
        invoke: impl FnOnce(*mut c_void, *mut pi_oauth_answer) -> i32 + Send + 'static,
    ) -> BoxFuture<'_, Result<String, OAuthError>> {
        let asked = self.ask(invoke);
        Box::pin(async move {
            match asked.await? {
                Answer::Text(text) => Ok(text),
                Answer::Nothing => Err(OAuthError::callback(format!("{what} set no answer"))),
                Answer::Cancelled => Err(OAuthError::Cancelled),
            }
        })
    }
}

/// Calls an answering C callback with a prompt's JSON.
fn with_prompt(
    callback: AnswerFn,
    prompt_json: String,
) -> impl FnOnce(*mut c_void, *mut pi_oauth_answer) -> i32 + Send + 'static {
    move |user_data, answer| {
        // SAFETY: the callback and `user_data` were registered together by the C caller; the
        // prompt and `answer` outlive the call.
        unsafe { callback(user_data, pi_str::new(&prompt_json), answer) }
    }
}

impl OAuthLoginCallbacks for CCallbacks {
    fn on_auth(&self, info: OAuthAuthInfo) {
        let (Some(callback), Some(user_data)) = (self.callbacks.on_auth, self.user_data.get())
        else {
            return;
        };
        let instructions = info.instructions.unwrap_or_default();
        run_inline(&CallbackSite::default(), || {
            // SAFETY: the callback and `user_data` were registered together; the strings
            // outlive the call.
            unsafe {
                callback(
                    user_data,
                    pi_str::new(&info.url),
                    pi_str::new(&instructions),
                )
            }
        });
    }

    fn on_prompt(&self, prompt: OAuthPrompt) -> BoxFuture<'_, Result<String, OAuthError>> {
        let Some(callback) = self.callbacks.on_prompt else {
            return Box::pin(async { Err(OAuthError::callback("no on_prompt callback")) });
        };
        let json = serde_json::to_string(&prompt).unwrap_or_default();
        self.text_answer("on_prompt", with_prompt(callback, json))
    }

    fn on_progress(&self, message: &str) {
        let (Some(callback), Some(user_data)) = (self.callbacks.on_progress, self.user_data.get())
        else {
            return;
        };
        run_inline(&CallbackSite::default(), || {
            // SAFETY: as in `on_auth`.
            unsafe { callback(user_data, pi_str::new(message)) }
        });
    }

    fn on_manual_code_input(&self) -> Option<BoxFuture<'_, Result<String, OAuthError>>> {
        let callback: ManualFn = self.callbacks.on_manual_code_input?;
        Some(
            self.text_answer("on_manual_code_input", move |user_data, answer| {
                // SAFETY: as in `with_prompt`.
                unsafe { callback(user_data, answer) }
            }),
        )
    }

    fn on_select(
        &self,
        prompt: OAuthSelectPrompt,
    ) -> Option<BoxFuture<'_, Result<Option<String>, OAuthError>>> {
        let callback = self.callbacks.on_select?;
        let json = serde_json::to_string(&prompt).unwrap_or_default();
        let asked = self.ask(with_prompt(callback, json));
        Some(Box::pin(async move {
            match asked.await? {
                Answer::Text(id) => Ok(Some(id)),
                Answer::Nothing => Ok(None),
                Answer::Cancelled => Err(OAuthError::Cancelled),
            }
        }))
    }
}

/// A login in progress (or over), started by `pi_oauth_login_start`.
///
/// Thread-safety: `pi_oauth_login_wait` from one thread at a time (it blocks, so not from an
/// event callback); `pi_oauth_login_cancel` from any thread at any time; `pi_oauth_login_free`
/// once, after the last other call has returned.
pub struct pi_oauth_login {
    cancel: CancellationToken,
    task: Mutex<Option<JoinHandle<Result<OAuthCredentials, OAuthError>>>>,
    outcome: Mutex<Option<Result<String, pi_error>>>,
}

/// Starts the login of the OAuth provider `provider_id` (`"anthropic"`, `"github-copilot"`,
/// `"openai-codex"`, or one registered in Rust) with `callbacks` (copied; see
/// `pi_oauth_login_callbacks`) and writes it to `*login_out` (free it with
/// `pi_oauth_login_free`). Returns at once: the login runs on the library's runtime, calling
/// the callbacks. On error nothing runs and `free_user_data` is not called.
///
/// Errors: `NULL_ARGUMENT` (also for a NULL `on_auth` or `on_prompt`), `INVALID_UTF8`,
/// `NOT_FOUND` (no such provider), `RUNTIME`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_login_start(
    provider_id: *const c_char,
    callbacks: *const pi_oauth_login_callbacks,
    login_out: *mut *mut pi_oauth_login,
) -> *mut pi_error {
    ffi_fallible! {
        let provider_id = arg_str(provider_id, "provider_id")?;
        let callbacks = *arg_ref(callbacks, "callbacks")?;
        if callbacks.on_auth.is_none() {
            return Err(pi_error::null_argument("callbacks->on_auth"));
        }
        if callbacks.on_prompt.is_none() {
            return Err(pi_error::null_argument("callbacks->on_prompt"));
        }
        let out = Out::new(login_out, "login_out")?;
        let provider = get_oauth_provider(provider_id).ok_or_else(|| {
            pi_error::not_found(format!("unknown OAuth provider `{provider_id}`"))
        })?;
        let runtime = runtime()?;
        let host = CCallbacks {
            callbacks,
            user_data: Arc::new(UserData::new(callbacks.user_data, callbacks.free_user_data)),
        };
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let task = runtime.spawn(async move { provider.login(&host, token).await });
        out.write(into_handle(pi_oauth_login {
            cancel,
            task: Mutex::new(Some(task)),
            outcome: Mutex::new(None),
        }));
        Ok(())
    }
}

/// Blocks until the login has ended and writes the credentials as pi's `OAuthCredentials` JSON
/// (`{"refresh":...,"access":...,"expires":<unix ms>,...}`: what to store, e.g. in pi's
/// `auth.json`; it holds the tokens) to `*credentials_json_out` (free it with
/// `pi_string_free`). May be called again: it gives the same outcome.
///
/// Errors: `NULL_ARGUMENT`, `CANCELLED` (`pi_oauth_login_cancel`, or a callback returned
/// non-zero), `OAUTH_FAILED` (the message says why: a timeout, an HTTP error of the provider, a
/// state mismatch, ...; never a token), `CALLED_FROM_CALLBACK`, `RUNTIME`.
/// Thread-safety: one thread at a time per login; not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_login_wait(
    login: *mut pi_oauth_login,
    credentials_json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(login, "login", |login| {
        let out = Out::new(credentials_json_out, "credentials_json_out")?;
        // Refused before the task is taken: a refusal must leave the login to a later wait.
        may_block("pi_oauth_login_wait")?;
        let task = lock(&login.task).take();
        if let Some(task) = task {
            let outcome = match block_on("pi_oauth_login_wait", task)? {
                Ok(Ok(credentials)) => to_json(&credentials, "credentials"),
                Ok(Err(error)) => Err(oauth_error(error)),
                Err(join) => Err(pi_error::runtime(format!("the login task failed: {join}"))),
            };
            *lock(&login.outcome) = Some(outcome);
        }
        match lock(&login.outcome).as_ref() {
            Some(Ok(json)) => {
                out.write(into_c_string(json.clone()));
                Ok(())
            }
            Some(Err(error)) => Err(error.clone()),
            None => Err(pi_error::runtime("the login has no outcome")),
        }
    })
}

/// Cancels the login (no-op once it has ended, or when `login` is NULL): it ends soon with
/// `CANCELLED`, closing its localhost callback server.
///
/// Thread-safety: may be called from any thread at any time before `pi_oauth_login_free`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_login_cancel(login: *const pi_oauth_login) {
    act(login, |login| login.cancel.cancel())
}

/// Frees a login, cancelling it if it is still running (it then ends in the background, and
/// its `on_auth` / `on_progress` / `on_prompt` callbacks may still be called until it has; their
/// `user_data` stays valid until its `free_user_data`). NULL is a no-op.
///
/// Thread-safety: call once, after the last other call on the login has returned.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_login_free(login: *mut pi_oauth_login) {
    free(login, |login| login.cancel.cancel())
}

/// Logs in with the OAuth provider `provider_id` and blocks until the login has ended (core's
/// `OAuthProvider::login`): `pi_oauth_login_start`, then `pi_oauth_login_wait`, then
/// `pi_oauth_login_free`. Use those three to cancel from another thread.
///
/// Errors: those of `pi_oauth_login_start` and `pi_oauth_login_wait`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_provider_login(
    provider_id: *const c_char,
    callbacks: *const pi_oauth_login_callbacks,
    credentials_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let out = Out::new(credentials_json_out, "credentials_json_out")?;
        // Refused before a login starts (its `on_auth` would open a browser for nothing).
        may_block("pi_oauth_provider_login")?;
        let mut login: *mut pi_oauth_login = std::ptr::null_mut();
        if let Some(error) = pi_error::from_raw(pi_oauth_login_start(provider_id, callbacks, &mut login)) {
            return Err(error);
        }
        let mut json: *mut c_char = std::ptr::null_mut();
        let waited = pi_error::from_raw(pi_oauth_login_wait(login, &mut json));
        pi_oauth_login_free(login);
        match waited {
            Some(error) => Err(error),
            None => {
                out.write(json);
                Ok(())
            }
        }
    }
}

fn oauth_error(error: OAuthError) -> pi_error {
    let kind = match error {
        OAuthError::Cancelled => pi_error_kind::Cancelled,
        OAuthError::UnknownProvider { .. } => pi_error_kind::NotFound,
        _ => pi_error_kind::OAuthFailed,
    };
    pi_error::new(kind, error.to_string())
}

/// The API key of the OAuth provider `provider_id` from stored credentials (pi's
/// `getOAuthApiKey`), refreshing them first when they have expired (a blocking HTTP request).
/// `credentials_json` maps provider ids to pi's `OAuthCredentials`:
/// `{"anthropic":{"refresh":...,"access":...,"expires":...}}`. On success writes the key to
/// `*api_key_out` (a secret: pass it on as `apiKey`, e.g. from a `get_api_key` hook, and free
/// it with `pi_string_free` soon), the credentials to keep (refreshed or as given) as JSON to
/// `*credentials_json_out` (free it with `pi_string_free`) and whether they were refreshed (so
/// should be stored again) to `*refreshed_out`. When `credentials_json` has no entry for the
/// provider, both strings are NULL and `*refreshed_out` is false.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `NOT_FOUND` (no such provider),
/// `OAUTH_FAILED` (the refresh failed, e.g. a revoked refresh token; never a token in the
/// message), `CALLED_FROM_CALLBACK`, `RUNTIME`.
/// Thread-safety: may be called from any thread but not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_get_oauth_api_key(
    provider_id: *const c_char,
    credentials_json: *const c_char,
    api_key_out: *mut *mut c_char,
    credentials_json_out: *mut *mut c_char,
    refreshed_out: *mut bool,
) -> *mut pi_error {
    ffi_fallible! {
        let provider_id = arg_str(provider_id, "provider_id")?;
        let name = "credentials_json";
        let credentials: BTreeMap<String, OAuthCredentials> =
            parse_object(arg_str(credentials_json, name)?, name)?;
        let api_key_out = Out::new(api_key_out, "api_key_out")?;
        let credentials_out = Out::new(credentials_json_out, "credentials_json_out")?;
        let refreshed_out = Out::new(refreshed_out, "refreshed_out")?;
        let key = block_on("pi_get_oauth_api_key", get_oauth_api_key(provider_id, &credentials))?
            .map_err(oauth_error)?;
        match key {
            Some(key) => {
                let json = to_json(&key.new_credentials, "credentials")?;
                api_key_out.write(into_c_string(key.api_key.expose().to_owned()));
                credentials_out.write(into_c_string(json));
                refreshed_out.write(key.refreshed);
            }
            None => {
                api_key_out.write(std::ptr::null_mut());
                credentials_out.write(std::ptr::null_mut());
                refreshed_out.write(false);
            }
        }
        Ok(())
    }
}

/// Adjusts models for an account's stored credentials (pi's `modifyModels`), e.g. GitHub
/// Copilot Business/Enterprise: every `github-copilot` model moves to the API host of the
/// account's token (`https://api.business.githubcopilot.com`, or the enterprise domain's).
/// `credentials_json` is one provider's pi `OAuthCredentials` (`{"refresh":...,"access":...,
/// "expires":...}`); `models_json` is a JSON array of models (e.g. from `pi_models_json`).
/// Writes the adjusted array to `*models_json_out` (free it with `pi_string_free`); models of
/// other providers come back unchanged.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `NOT_FOUND` (no such provider).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_oauth_modify_models(
    provider_id: *const c_char,
    credentials_json: *const c_char,
    models_json: *const c_char,
    models_json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let provider_id = arg_str(provider_id, "provider_id")?;
        let credentials: OAuthCredentials =
            parse_object(arg_str(credentials_json, "credentials_json")?, "credentials_json")?;
        // Without quoting values in its errors: a model's headers may hold credentials.
        let models: Vec<Model> = parse_object(arg_str(models_json, "models_json")?, "models_json")?;
        let out = Out::new(models_json_out, "models_json_out")?;
        let provider = get_oauth_provider(provider_id).ok_or_else(|| {
            pi_error::not_found(format!("unknown OAuth provider `{provider_id}`"))
        })?;
        let models = provider.modify_models(models, &credentials);
        out.write_json(&models, "models")
    }
}
