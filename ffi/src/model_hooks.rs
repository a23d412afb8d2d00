//! The hooks around a model call implemented in C (core's `GetApiKey`, `ConvertToLlm` and
//! `StreamFn`): the callback types, the handles the callbacks receive, and the core hooks that
//! run them. Installing them is in `agent_hooks.rs`.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};

use futures::FutureExt;
use pi_agent::agent::{
    AgentMessage, ConvertToLlm, GetApiKey, HookError, StreamFn, default_convert_to_llm,
};
use pi_agent::ai::{
    ApiKey, AssistantMessageEventStream, Context, Message, Model, StopReason, StreamOptions,
};

use crate::args::{arg_opt_str, arg_str, method};
use crate::boundary::opt_ref;
use crate::callback::{CallbackSite, run_callback, run_inline};
use crate::error::{parse_json, pi_error};
use crate::hook_context::{Answer, Hook, call_with, lazy_json};
use crate::model::pi_model;
use crate::options::stream_options;
use crate::string::{pi_str, view};
use crate::user_data::UserData;

// ------------------------------------------------------------------------------ get_api_key

/// Resolves the API key before every model call (pi's `getApiKey`, for short-lived tokens such
/// as OAuth access tokens): read the provider with `pi_get_api_key_provider`, set the key with
/// `pi_get_api_key_set_api_key`. Setting none (or an empty one) keeps the configured key
/// (`streamOptions.apiKey`, else the environment). Return 0, or non-zero to fail the turn ("
/// get_api_key hook returned error code N"). `context` is valid until the callback returns.
///
/// It runs on a thread of the runtime's blocking pool, like a tool callback; an abort stops
/// the run waiting for it.
pub type pi_get_api_key_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut pi_get_api_key) -> i32>;

type GetApiKeyFn = unsafe extern "C" fn(*mut c_void, *mut pi_get_api_key) -> i32;

/// The provider a key is asked for, passed to a `pi_get_api_key_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_get_api_key {
    provider: String,
    api_key: Answer<Option<ApiKey>>,
}

/// The provider of the model about to be called, e.g. `anthropic` (empty when `context` is
/// NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_get_api_key_provider(context: *const pi_get_api_key) -> pi_str {
    view(context, |context| pi_str::new(&context.provider))
}

/// Sets the API key for this call (copied; never logged). The last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_get_api_key_set_api_key(
    context: *mut pi_get_api_key,
    api_key: *const c_char,
) -> *mut pi_error {
    method(context, "context", |context| {
        let api_key = arg_str(api_key, "api_key")?;
        context.api_key.set(Some(ApiKey::new(api_key)));
        Ok(())
    })
}

impl Hook<GetApiKeyFn> {
    fn get_api_key(&self, provider: String) -> Result<Option<ApiKey>, HookError> {
        let Some(user_data) = self.user_data.get() else {
            return Ok(None);
        };
        let context = pi_get_api_key {
            provider,
            api_key: Answer::default(),
        };
        let (context, code) = call_with(self.callback, user_data, context);
        if code != 0 {
            return Err(HookError::new(format!(
                "get_api_key hook returned error code {code}"
            )));
        }
        Ok(context.api_key.take())
    }
}

/// The core hook that runs a C `get_api_key` callback.
pub(crate) fn get_api_key(
    callback: GetApiKeyFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> GetApiKey {
    let hook = Arc::new(Hook::new(callback, user_data));
    Arc::new(move |provider| {
        let hook = Arc::clone(&hook);
        let site = site.clone();
        let provider = provider.to_owned();
        async move {
            run_callback(&site, move || hook.get_api_key(provider))
                .await
                .unwrap_or_else(|error| {
                    Err(HookError::new(format!("get_api_key hook failed: {error}")))
                })
        }
        .boxed()
    })
}

// --------------------------------------------------------------------------- convert_to_llm

/// Turns the transcript into the messages the model gets (pi's `convertToLlm`), e.g. to send
/// custom messages as user messages: read it with `pi_convert_to_llm_messages_json`, set the
/// result with `pi_convert_to_llm_set_messages_json` (else pi's default applies: custom
/// messages are dropped). Return 0, or non-zero to fail the turn ("convert_to_llm hook returned
/// error code N"). `context` is valid until the callback returns.
///
/// It runs synchronously on a runtime thread (moved out of the worker pool while it runs) before
/// every model call: keep it quick, and do not call blocking functions of its agent.
pub type pi_convert_to_llm_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, context: *mut pi_convert_to_llm) -> i32>;

type ConvertFn = unsafe extern "C" fn(*mut c_void, *mut pi_convert_to_llm) -> i32;

/// The transcript to convert, passed to a `pi_convert_to_llm_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_convert_to_llm {
    messages_json: String,
    converted: Answer<Option<Vec<Message>>>,
}

/// The transcript (after `transform_context`) as a pi-shaped JSON array, custom messages
/// included (empty string when `context` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_convert_to_llm_messages_json(context: *const pi_convert_to_llm) -> pi_str {
    view(context, |context| pi_str::new(&context.messages_json))
}

/// Sets the messages the model gets: a JSON array of pi's LLM messages (roles `user`,
/// `assistant`, `toolResult`; any other role is refused). The last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (nothing changes).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_convert_to_llm_set_messages_json(
    context: *mut pi_convert_to_llm,
    messages_json: *const c_char,
) -> *mut pi_error {
    method(context, "context", |context| {
        context.converted.set_json(messages_json, "messages_json")
    })
}

impl Hook<ConvertFn> {
    fn convert(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, HookError> {
        let Some(user_data) = self.user_data.get() else {
            return Ok(default_convert_to_llm(messages));
        };
        let context = pi_convert_to_llm {
            messages_json: serde_json::to_string(messages).unwrap_or_default(),
            converted: Answer::default(),
        };
        let (context, code) = call_with(self.callback, user_data, context);
        if code != 0 {
            return Err(HookError::new(format!(
                "convert_to_llm hook returned error code {code}"
            )));
        }
        Ok(context
            .converted
            .take()
            .unwrap_or_else(|| default_convert_to_llm(messages)))
    }
}

/// The core hook that runs a C `convert_to_llm` callback.
pub(crate) fn convert_to_llm(
    callback: ConvertFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> ConvertToLlm {
    let hook = Hook::new(callback, user_data);
    Arc::new(move |messages| run_inline(&site, || hook.convert(messages)))
}

// -------------------------------------------------------------------------------- stream_fn

/// Calls the model for the agent (pi's `streamFn`), e.g. to route calls to another model or
/// provider, change the context or options, or log requests. Read the request with
/// `pi_stream_fn_call_model` / `_context_json` / `_options_json` and open the stream the turn
/// reads with `pi_stream_fn_call_open` (any model, context and options; the run's abort aborts
/// it). Return 0, or non-zero to fail the turn ("stream_fn callback returned error code N");
/// returning 0 without opening a stream fails it too. `call` is valid until the callback
/// returns.
///
/// It runs synchronously on a runtime thread (moved out of the worker pool while it runs) at
/// the start of every model call: open the stream and return; do not call blocking functions of
/// its agent.
pub type pi_stream_fn_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, call: *mut pi_stream_fn_call) -> i32>;

type StreamFnFn = unsafe extern "C" fn(*mut c_void, *mut pi_stream_fn_call) -> i32;

/// One model call of an agent, passed to a `pi_stream_fn_callback`. Valid until the callback
/// returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_stream_fn_call {
    model: pi_model,
    /// The request, borrowed for the duration of the callback.
    context: *const Context,
    options: *const StreamOptions,
    context_json: OnceLock<String>,
    options_json: OnceLock<String>,
    opened: Answer<Option<AssistantMessageEventStream>>,
}

// SAFETY: the pointers are only read (through shared references) while the callback runs, and
// what they point to (core's `Context` and `StreamOptions`) is `Sync`.
unsafe impl Sync for pi_stream_fn_call {}

impl pi_stream_fn_call {
    fn context(&self) -> &Context {
        // SAFETY: points to the request of the running callback, which outlives `self`.
        unsafe { &*self.context }
    }

    fn options(&self) -> &StreamOptions {
        // SAFETY: as in `context`.
        unsafe { &*self.options }
    }
}

/// The agent's model for this call (NULL when `call` is NULL). Valid while the callback runs;
/// copy it with `pi_model_to_json` and `pi_model_from_json` to keep it.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_fn_call_model(call: *const pi_stream_fn_call) -> *const pi_model {
    ffi_boundary! {
        opt_ref(call).map_or(std::ptr::null(), |call| std::ptr::from_ref(&call.model))
    }
}

/// The request's pi `Context` as JSON: `{"systemPrompt":...,"messages":[...],"tools":[...]}`,
/// the messages already converted for the model (empty when `call` is NULL). Valid while the
/// callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_fn_call_context_json(call: *const pi_stream_fn_call) -> pi_str {
    view(call, |call| {
        lazy_json(&call.context_json, || call.context())
    })
}

/// The request's options as core's `StreamOptions` JSON (the agent's `streamOptions` with
/// `reasoning` from its thinking level). Secrets (`apiKey`, `bearerToken`, the headers that
/// carry a credential) are not in it (empty when `call` is NULL); `pi_stream_fn_call_open` with
/// NULL options still sends them. Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_fn_call_options_json(call: *const pi_stream_fn_call) -> pi_str {
    view(call, |call| {
        lazy_json(&call.options_json, || {
            call.options().without_credential_headers()
        })
    })
}

/// Opens the stream the turn reads, with pi's `streamSimple` (what the agent calls by default):
/// `model` (NULL: the call's), `context_json` (a pi `Context`; NULL: the call's) and
/// `options_json` (`StreamOptions` JSON; NULL: the call's). The stream always takes the run's
/// abort signal; the call's API key, bearer token and `on_payload` / `on_response` callbacks
/// apply unless `options_json` sets its own key or token, and so do the call's credential
/// headers (left out of `pi_stream_fn_call_options_json`) unless `options_json` sets a header
/// of the same name. A second call replaces the stream.
///
/// Errors: `NULL_ARGUMENT` (for `call`), `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_fn_call_open(
    call: *mut pi_stream_fn_call,
    model: *const pi_model,
    context_json: *const c_char,
    options_json: *const c_char,
) -> *mut pi_error {
    method(call, "call", |call| {
        let model = opt_ref(model).map_or(&call.model.model, |model| &model.model);
        let context = arg_opt_str(context_json, "context_json")?
            .map(|json| parse_json::<Context>(json, "context_json"))
            .transpose()?;
        let base = call.options();
        let options = match arg_opt_str(options_json, "options_json")? {
            None => base.clone(),
            Some(json) => {
                let mut options = stream_options(Some(json))?;
                options.api_key = options.api_key.or_else(|| base.api_key.clone());
                options.bearer_token = options.bearer_token.or_else(|| base.bearer_token.clone());
                // The options view leaves these out: a view changed and handed back keeps them.
                options.restore_credential_headers(base);
                options.on_payload = base.on_payload.clone();
                options.on_response = base.on_response.clone();
                options.signal = base.signal.clone();
                options
            }
        };
        // The providers spawn their request on the runtime: a thread of the caller's own (the
        // callback handed the call over) is not in it.
        let _runtime = crate::runtime::runtime()?.enter();
        let stream = pi_agent::ai::stream_simple(
            model,
            context.as_ref().unwrap_or_else(|| call.context()),
            &options,
        );
        call.opened.set(Some(stream));
        Ok(())
    })
}

impl Hook<StreamFnFn> {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        let Some(user_data) = self.user_data.get() else {
            return failed(model, "the stream_fn hook was released");
        };
        let call = pi_stream_fn_call {
            model: pi_model {
                model: model.clone(),
            },
            context,
            options,
            context_json: OnceLock::new(),
            options_json: OnceLock::new(),
            opened: Answer::default(),
        };
        // The request `call` borrows outlives it.
        let (call, code) = call_with(self.callback, user_data, call);
        match call.opened.take() {
            _ if code != 0 => failed(
                model,
                &format!("stream_fn callback returned error code {code}"),
            ),
            Some(stream) => stream,
            None => failed(model, "stream_fn callback opened no stream"),
        }
    }
}

fn failed(model: &Model, message: &str) -> AssistantMessageEventStream {
    AssistantMessageEventStream::failed(model, StopReason::Error, message)
}

/// The core stream function that runs a C `stream_fn` callback.
pub(crate) fn stream_fn(
    callback: StreamFnFn,
    user_data: Arc<UserData>,
    site: CallbackSite,
) -> StreamFn {
    let hook = Hook::new(callback, user_data);
    Arc::new(move |model, context, options| {
        run_inline(&site, || hook.stream(model, context, options))
    })
}
