//! OAuth through the C ABI: `pi_oauth_provider_login` / `pi_oauth_login_*` with C callbacks
//! (`extern "C"` functions here, called the way a C host's are), and `pi_get_oauth_api_key`,
//! against core's mock authorization server (`core/tests/oauth/support`, reused as is) on
//! 127.0.0.1. The built-in Claude Pro/Max flow is registered with the mock's endpoints, as a
//! host would register a configured flow.

#[path = "../../core/tests/oauth/support/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod support;

use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use pi_agent::ai::oauth::{
    AnthropicOAuthConfig, AnthropicOAuthProvider, OAuthAuthInfo, OAuthCredentials, OAuthError,
    OAuthLoginCallbacks, OAuthPrompt, OAuthProvider, OAuthSelectOption, OAuthSelectPrompt,
    register_oauth_provider, reset_oauth_providers,
};
use pi_agent_ffi::error::{
    pi_error, pi_error_free, pi_error_get_kind, pi_error_kind, pi_error_message,
};
use pi_agent_ffi::oauth::{
    pi_get_oauth_api_key, pi_oauth_answer, pi_oauth_answer_is_cancelled, pi_oauth_answer_set,
    pi_oauth_login, pi_oauth_login_callbacks, pi_oauth_login_cancel, pi_oauth_login_free,
    pi_oauth_login_start, pi_oauth_login_wait, pi_oauth_modify_models, pi_oauth_provider_login,
};
use pi_agent_ffi::string::{pi_str, pi_string_free};
use serde_json::{Value, json};
use support::auth_server::AuthServer;
use tokio_util::sync::CancellationToken;

/// Hang guard for waits on the login (nothing is timed).
const GUARD: Duration = Duration::from_secs(120);

/// What the C callbacks share: the URLs shown, progress, and a paste box for the manual input.
#[derive(Default)]
struct Host {
    /// Answer prompts and selections (the `interview` flow) instead of cancelling.
    answers: bool,
    /// Decline the selection.
    decline: bool,
    instructions: Mutex<Vec<String>>,
    urls: Mutex<Vec<String>>,
    shown: Condvar,
    progress: Mutex<Vec<String>>,
    paste: Mutex<Option<String>>,
    manual_saw_cancel: AtomicBool,
    prompts: AtomicUsize,
}

/// `free_user_data` calls.
static FREED: AtomicUsize = AtomicUsize::new(0);

fn text(s: pi_str) -> String {
    if s.len == 0 {
        return String::new();
    }
    // SAFETY: the library passes a view of `len` valid UTF-8 bytes, valid during the call.
    let bytes = unsafe { std::slice::from_raw_parts(s.data.cast::<u8>(), s.len) };
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn host<'a>(user_data: *mut c_void) -> &'a Host {
    // SAFETY: `user_data` is the `Arc<Host>` pointer registered below, alive until
    // `free_host`.
    unsafe { &*user_data.cast::<Host>() }
}

extern "C" fn on_auth(user_data: *mut c_void, url: pi_str, instructions: pi_str) {
    let host = host(user_data);
    host.instructions.lock().unwrap().push(text(instructions));
    host.urls.lock().unwrap().push(text(url));
    host.shown.notify_all();
}

extern "C" fn on_prompt(
    user_data: *mut c_void,
    prompt: pi_str,
    answer: *mut pi_oauth_answer,
) -> i32 {
    let host = host(user_data);
    host.prompts.fetch_add(1, Ordering::Relaxed);
    if !host.answers {
        // The browser or the manual input answers in the login flows: a prompt cancels.
        return 1;
    }
    let prompt: Value = serde_json::from_str(&text(prompt)).unwrap();
    assert_eq!(
        prompt,
        json!({"message": "Domain?", "placeholder": "github.com"})
    );
    assert!(pi_oauth_answer_set(answer, c"example.com".as_ptr()).is_null());
    0
}

extern "C" fn on_select(
    user_data: *mut c_void,
    prompt: pi_str,
    answer: *mut pi_oauth_answer,
) -> i32 {
    let prompt: Value = serde_json::from_str(&text(prompt)).unwrap();
    assert_eq!(prompt["options"][1], json!({"id": "pro", "label": "Pro"}));
    if !host(user_data).decline {
        assert!(pi_oauth_answer_set(answer, c"pro".as_ptr()).is_null());
    }
    0
}

extern "C" fn on_progress(user_data: *mut c_void, message: pi_str) {
    host(user_data).progress.lock().unwrap().push(text(message));
}

/// Waits for a pasted redirect URL, or returns once the login no longer needs it.
extern "C" fn on_manual_code_input(user_data: *mut c_void, answer: *mut pi_oauth_answer) -> i32 {
    let host = host(user_data);
    let start = Instant::now();
    while start.elapsed() < GUARD {
        if let Some(pasted) = host.paste.lock().unwrap().take() {
            let pasted = CString::new(pasted).unwrap();
            assert!(pi_oauth_answer_set(answer, pasted.as_ptr()).is_null());
            return 0;
        }
        if pi_oauth_answer_is_cancelled(answer) {
            host.manual_saw_cancel.store(true, Ordering::Release);
            return 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the manual input was never answered nor cancelled");
}

extern "C" fn free_host(user_data: *mut c_void) {
    // SAFETY: the pointer came from `Arc::into_raw` in `callbacks` and is freed once.
    drop(unsafe { Arc::from_raw(user_data.cast::<Host>().cast_const()) });
    FREED.fetch_add(1, Ordering::AcqRel);
}

fn callbacks(host: &Arc<Host>, manual: bool) -> pi_oauth_login_callbacks {
    pi_oauth_login_callbacks {
        user_data: Arc::into_raw(Arc::clone(host)).cast_mut().cast(),
        on_auth: Some(on_auth),
        on_prompt: Some(on_prompt),
        on_progress: Some(on_progress),
        on_manual_code_input: manual.then_some(on_manual_code_input as _),
        on_select: host.answers.then_some(on_select as _),
        free_user_data: Some(free_host),
    }
}

impl Host {
    /// The next URL `on_auth` showed.
    fn next_url(&self, seen: usize) -> String {
        let urls = self.urls.lock().unwrap();
        let (urls, _) = self
            .shown
            .wait_timeout_while(urls, GUARD, |urls| urls.len() <= seen)
            .unwrap();
        urls.get(seen)
            .cloned()
            .expect("the login never called on_auth")
    }
}

/// Takes a library error: its kind and message.
fn error(error: *mut pi_error) -> (pi_error_kind, String) {
    assert!(!error.is_null(), "expected an error");
    let outcome = (pi_error_get_kind(error), text(pi_error_message(error)));
    pi_error_free(error);
    outcome
}

fn ok(error: *mut pi_error) {
    if !error.is_null() {
        let (kind, message) = self::error(error);
        panic!("{kind:?}: {message}");
    }
}

/// Takes an owned string from the library.
fn take(string: *mut c_char) -> Option<String> {
    if string.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string from the library, freed once right after.
    let owned = unsafe { CStr::from_ptr(string) }
        .to_str()
        .unwrap()
        .to_owned();
    pi_string_free(string);
    Some(owned)
}

fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < GUARD, "hung waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What `pi_get_oauth_api_key` writes: the key, the credentials to keep, whether refreshed.
type ApiKeyOutcome = (Option<String>, Option<Value>, bool);

/// `pi_get_oauth_api_key` for `credentials` of `anthropic`.
fn api_key(credentials: &Value) -> Result<ApiKeyOutcome, (pi_error_kind, String)> {
    let provider = c"anthropic";
    let json = CString::new(json!({ "anthropic": credentials }).to_string()).unwrap();
    let (mut key, mut stored, mut refreshed) = (ptr::null_mut(), ptr::null_mut(), false);
    let result = pi_get_oauth_api_key(
        provider.as_ptr(),
        json.as_ptr(),
        &mut key,
        &mut stored,
        &mut refreshed,
    );
    if !result.is_null() {
        return Err(error(result));
    }
    let stored = take(stored).map(|json| serde_json::from_str(&json).unwrap());
    Ok((take(key), stored, refreshed))
}

#[test]
fn oauth_login_and_refresh_through_the_c_abi() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(AuthServer::start());
    register_oauth_provider(Arc::new(AnthropicOAuthProvider::new(
        AnthropicOAuthConfig {
            authorize_url: server.url("/anthropic/authorize"),
            token_url: server.url("/anthropic/token"),
            callback_port: 0,
            ..AnthropicOAuthConfig::default()
        },
    )));
    let provider = c"anthropic";

    // 1. The blocking login, completed by the browser reaching the localhost callback.
    let host = Arc::new(Host::default());
    let login_host = Arc::clone(&host);
    let login = std::thread::spawn(move || {
        let mut json = ptr::null_mut();
        let callbacks = callbacks(&login_host, false);
        let result = pi_oauth_provider_login(c"anthropic".as_ptr(), &callbacks, &mut json);
        (result as usize, json as usize)
    });
    let url = host.next_url(0);
    assert!(
        url.starts_with(&server.url("/anthropic/authorize?")),
        "{url}"
    );
    let (status, page) = runtime.block_on(support::open(&url));
    assert_eq!(status, 200, "{page}");
    let (result, json) = login.join().unwrap();
    ok(result as *mut pi_error);
    let credentials: Value = serde_json::from_str(&take(json as *mut c_char).unwrap()).unwrap();
    let access = credentials["access"].as_str().unwrap().to_owned();
    assert!(access.starts_with("anthropic-access-"), "{credentials}");
    assert!(
        credentials["refresh"]
            .as_str()
            .unwrap()
            .starts_with("anthropic-refresh-")
    );
    assert!(credentials["expires"].as_i64().unwrap() > 0);
    assert_eq!(
        *host.progress.lock().unwrap(),
        ["Exchanging authorization code for tokens..."]
    );
    assert_eq!(host.prompts.load(Ordering::Relaxed), 0);
    assert!(host.instructions.lock().unwrap()[0].contains("paste the final redirect URL"));
    wait_until("free_user_data of login 1", || {
        FREED.load(Ordering::Acquire) == 1
    });

    // 2. The user pastes the redirect URL before the browser comes back: the paste wins.
    let host = Arc::new(Host::default());
    let mut login: *mut pi_oauth_login = ptr::null_mut();
    ok(pi_oauth_login_start(
        provider.as_ptr(),
        &callbacks(&host, true),
        &mut login,
    ));
    let url = host.next_url(0);
    let target = runtime.block_on(support::redirect_target(&url));
    *host.paste.lock().unwrap() = Some(target);
    let mut json = ptr::null_mut();
    ok(pi_oauth_login_wait(login, &mut json));
    let pasted: Value = serde_json::from_str(&take(json).unwrap()).unwrap();
    assert!(
        pasted["access"]
            .as_str()
            .unwrap()
            .starts_with("anthropic-access-")
    );
    // Waiting again gives the same outcome.
    ok(pi_oauth_login_wait(login, &mut json));
    assert_eq!(
        serde_json::from_str::<Value>(&take(json).unwrap()).unwrap(),
        pasted
    );
    pi_oauth_login_free(login);
    wait_until("free_user_data of login 2", || {
        FREED.load(Ordering::Acquire) == 2
    });

    // 3. The browser wins while the manual input waits: the callback sees it is no longer
    //    needed, and `user_data` is freed once it has returned.
    let host = Arc::new(Host::default());
    ok(pi_oauth_login_start(
        provider.as_ptr(),
        &callbacks(&host, true),
        &mut login,
    ));
    let url = host.next_url(0);
    let (status, _) = runtime.block_on(support::open(&url));
    assert_eq!(status, 200);
    ok(pi_oauth_login_wait(login, &mut json));
    assert!(take(json).is_some());
    pi_oauth_login_free(login);
    wait_until("the manual input to see the cancel", || {
        host.manual_saw_cancel.load(Ordering::Acquire)
    });
    wait_until("free_user_data of login 3", || {
        FREED.load(Ordering::Acquire) == 3
    });

    // 4. Cancelled while waiting for the browser.
    let host = Arc::new(Host::default());
    ok(pi_oauth_login_start(
        provider.as_ptr(),
        &callbacks(&host, true),
        &mut login,
    ));
    host.next_url(0);
    pi_oauth_login_cancel(login);
    let (kind, message) = error(pi_oauth_login_wait(login, &mut json));
    assert_eq!(kind, pi_error_kind::Cancelled, "{message}");
    assert_eq!(message, "login cancelled");
    pi_oauth_login_free(login);
    wait_until("free_user_data of login 4", || {
        FREED.load(Ordering::Acquire) == 4
    });

    // Misuse is refused before anything runs, and `free_user_data` is not called then.
    let unknown = callbacks(&host, false);
    let (kind, _) = error(pi_oauth_login_start(
        c"nobody".as_ptr(),
        &unknown,
        &mut login,
    ));
    assert_eq!(kind, pi_error_kind::NotFound);
    let mut no_prompt = callbacks(&host, false);
    no_prompt.on_prompt = None;
    let (kind, _) = error(pi_oauth_login_start(
        provider.as_ptr(),
        &no_prompt,
        &mut login,
    ));
    assert_eq!(kind, pi_error_kind::NullArgument);
    assert_eq!(FREED.load(Ordering::Acquire), 4);
    free_host(unknown.user_data);
    free_host(no_prompt.user_data);

    // 5. pi_get_oauth_api_key: valid credentials as they are; expired ones refreshed (the
    //    refresh token rotates); a used refresh token fails without showing a token.
    let (key, stored, refreshed) = api_key(&credentials).unwrap();
    assert_eq!(key.as_deref(), Some(access.as_str()));
    assert_eq!(stored.as_ref(), Some(&credentials));
    assert!(!refreshed);
    let mut expired = credentials.clone();
    expired["expires"] = json!(0);
    let (key, stored, refreshed) = api_key(&expired).unwrap();
    assert!(refreshed);
    let stored = stored.unwrap();
    assert_eq!(key.as_deref(), stored["access"].as_str());
    assert_ne!(key.as_deref(), Some(access.as_str()));
    assert_ne!(stored["refresh"], credentials["refresh"]);
    let (kind, message) = api_key(&expired).unwrap_err();
    assert_eq!(kind, pi_error_kind::OAuthFailed);
    assert!(message.contains("invalid_grant"), "{message}");
    assert!(!message.contains("anthropic-refresh-"), "{message}");

    let empty = CString::new("{}").unwrap();
    let (mut key, mut stored, mut refreshed) = (c"x".as_ptr().cast_mut(), ptr::null_mut(), true);
    ok(pi_get_oauth_api_key(
        provider.as_ptr(),
        empty.as_ptr(),
        &mut key,
        &mut stored,
        &mut refreshed,
    ));
    assert!(key.is_null() && stored.is_null() && !refreshed);
    let (kind, _) = error(pi_get_oauth_api_key(
        c"nobody".as_ptr(),
        empty.as_ptr(),
        &mut key,
        &mut stored,
        &mut refreshed,
    ));
    assert_eq!(kind, pi_error_kind::NotFound);
    // One provider's credentials given where the map of them goes (an easy mistake): the
    // error names the mismatch, never the tokens it quotes.
    let misplaced =
        CString::new(r#"{"refresh":"rt-SECRET-0123456","access":"at-SECRET-0123456","expires":1}"#)
            .unwrap();
    let (kind, message) = error(pi_get_oauth_api_key(
        provider.as_ptr(),
        misplaced.as_ptr(),
        &mut key,
        &mut stored,
        &mut refreshed,
    ));
    assert_eq!(kind, pi_error_kind::InvalidJson, "{message}");
    assert!(
        message.contains("expected struct OAuthCredentials"),
        "{message}"
    );
    assert!(!message.contains("SECRET"), "{message}");

    // 6. Prompts and selections answered by the C host (a flow registered in Rust that asks
    //    both, as a host's own flow may).
    register_oauth_provider(Arc::new(Interview));
    let interview = |answers: bool, decline: bool, selector: bool| {
        let host = Arc::new(Host {
            answers,
            decline,
            ..Host::default()
        });
        let mut callbacks = callbacks(&host, false);
        if !selector {
            callbacks.on_select = None;
        }
        let mut json = ptr::null_mut();
        let result = pi_oauth_provider_login(c"interview".as_ptr(), &callbacks, &mut json);
        if result.is_null() {
            let credentials: Value = serde_json::from_str(&take(json).unwrap()).unwrap();
            Ok(credentials["access"].as_str().unwrap().to_owned())
        } else {
            Err(error(result))
        }
    };
    assert_eq!(interview(true, false, true).unwrap(), "example.com/pro");
    assert_eq!(interview(true, true, true).unwrap(), "example.com/declined");
    assert_eq!(
        interview(true, false, false).unwrap(),
        "example.com/no selector"
    );
    let (kind, message) = interview(false, false, true).unwrap_err();
    assert_eq!(
        (kind, message.as_str()),
        (pi_error_kind::Cancelled, "login cancelled")
    );

    reset_oauth_providers();
    drop(server);
}

/// A flow that asks the host a question and a choice.
struct Interview;

impl OAuthProvider for Interview {
    fn id(&self) -> &str {
        "interview"
    }

    fn name(&self) -> &str {
        "Interview"
    }

    fn login<'a>(
        &'a self,
        callbacks: &'a dyn OAuthLoginCallbacks,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>> {
        Box::pin(async move {
            callbacks.on_auth(OAuthAuthInfo {
                url: "https://example.invalid/login".to_owned(),
                instructions: None,
            });
            let domain = callbacks
                .on_prompt(OAuthPrompt {
                    message: "Domain?".to_owned(),
                    placeholder: Some("github.com".to_owned()),
                    allow_empty: None,
                })
                .await?;
            let options = [("free", "Free"), ("pro", "Pro")]
                .map(|(id, label)| OAuthSelectOption {
                    id: id.to_owned(),
                    label: label.to_owned(),
                })
                .to_vec();
            let choice = match callbacks.on_select(OAuthSelectPrompt {
                message: "Plan?".to_owned(),
                options,
            }) {
                Some(selected) => selected.await?.unwrap_or_else(|| "declined".to_owned()),
                None => "no selector".to_owned(),
            };
            Ok(OAuthCredentials::new(
                format!("{domain}/{choice}"),
                "refresh",
                i64::MAX,
            ))
        })
    }

    fn refresh_token<'a>(
        &'a self,
        _credentials: &'a OAuthCredentials,
    ) -> BoxFuture<'a, Result<OAuthCredentials, OAuthError>> {
        Box::pin(async { Err(OAuthError::callback("no refresh")) })
    }
}

#[test]
fn copilot_models_move_to_the_account_api_host_through_the_c_abi() {
    let credentials = json!({
        "refresh": "gh-token",
        "access": "tid=1;exp=9999999999;proxy-ep=proxy.business.githubcopilot.com;sku=x",
        "expires": 9_999_999_999_000_u64,
    });
    let models = json!([
        {"id": "gpt-4o", "name": "GPT-4o", "api": "openai-completions",
         "provider": "github-copilot", "baseUrl": "https://api.individual.githubcopilot.com",
         "reasoning": false, "input": ["text"],
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
         "contextWindow": 128000, "maxTokens": 4096},
        {"id": "gpt-x", "name": "x", "api": "openai-completions", "provider": "openai",
         "baseUrl": "https://api.openai.com/v1", "reasoning": false, "input": ["text"],
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
         "contextWindow": 1000, "maxTokens": 100},
    ]);
    let credentials = CString::new(credentials.to_string()).unwrap();
    let models = CString::new(models.to_string()).unwrap();
    let mut out = ptr::null_mut();
    ok(pi_oauth_modify_models(
        c"github-copilot".as_ptr(),
        credentials.as_ptr(),
        models.as_ptr(),
        &mut out,
    ));
    let adjusted: Value = serde_json::from_str(&take(out).unwrap()).unwrap();
    assert_eq!(
        adjusted[0]["baseUrl"],
        "https://api.business.githubcopilot.com"
    );
    assert_eq!(adjusted[0]["id"], "gpt-4o");
    assert_eq!(adjusted[1]["baseUrl"], "https://api.openai.com/v1");

    // An unknown provider and malformed models are errors, not a crash.
    let mut out = ptr::null_mut();
    let (kind, _) = error(pi_oauth_modify_models(
        c"nobody".as_ptr(),
        credentials.as_ptr(),
        models.as_ptr(),
        &mut out,
    ));
    assert_eq!(kind, pi_error_kind::NotFound);
    let (kind, message) = error(pi_oauth_modify_models(
        c"github-copilot".as_ptr(),
        credentials.as_ptr(),
        c"{\"not\":\"a list\"}".as_ptr(),
        &mut out,
    ));
    assert_eq!(kind, pi_error_kind::InvalidJson, "{message}");
    assert!(!message.contains("gh-token"), "{message}");
}
