//! `pi_faux`: core's scripted, offline faux provider, for tests, examples and demos.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, OnceLock};

use futures::FutureExt;
use pi_agent::ai::providers::faux::{FauxError, FauxOptions, FauxProvider, FauxResponse};
use pi_agent::ai::{AssistantMessage, Context, Model, StreamOptions};
use serde_json::Value;

use crate::args::{Out, arg_json, arg_opt_str, method};
use crate::boundary::{free, into_handle, lock, opt_ref};
use crate::callback::{CallbackSite, run_callback};
use crate::error::{pi_error, pi_error_kind};
use crate::hook_context::{Answer, call_with, lazy_json};
use crate::model::pi_model;
use crate::options::parse_or_default;
use crate::string::{pi_str, view};
use crate::user_data::{UserData, pi_free_callback};

/// A registered faux provider (pi's `registerFauxProvider`): every request to one of its models
/// pops the next scripted assistant message and streams it like a real provider would.
///
/// Thread-safe: every function may be called from any thread, except `pi_faux_free` (once,
/// when no other thread uses it).
#[derive(Debug)]
pub struct pi_faux {
    faux: FauxProvider,
    /// The context of every request served with a scripted response, oldest first (its
    /// message content shared with the agent's, not copied).
    contexts: Arc<Mutex<Vec<Context>>>,
}

/// Registers a faux provider with pi's defaults (provider `faux`, one model `faux-1`, output as
/// fast as it is read). On success `*faux_out` receives it; free it with `pi_faux_free`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_new(faux_out: *mut *mut pi_faux) -> *mut pi_error {
    pi_faux_new_with_options(std::ptr::null(), faux_out)
}

/// Registers a faux provider. `options_json` may be NULL, or core's `FauxOptions` (pi's
/// `registerFauxProvider` options), any subset of `api` (default: a fresh `faux:<n>`),
/// `provider` (default `faux`), `models` (array of model ids, default `["faux-1"]`),
/// `tokensPerSecond` (pace the output; default: unpaced) and `tokenSize`
/// (`{"min":3,"max":5}`: delta sizes in tokens of 4 characters). Unknown keys are refused.
///
/// Like pi's, it simulates usage: input and output tokens at four characters a token, and with
/// a `sessionId` (and a `cacheRetention` other than `"none"`) the prompt prefix shared with the
/// session's previous request counts as `cacheRead`, the rest as `cacheWrite`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_new_with_options(
    options_json: *const c_char,
    faux_out: *mut *mut pi_faux,
) -> *mut pi_error {
    ffi_fallible! {
        let options: FauxOptions =
            parse_or_default(arg_opt_str(options_json, "options_json")?, "options_json")?;
        let out = Out::new(faux_out, "faux_out")?;
        let faux = FauxProvider::try_register_with(options).map_err(|error| {
            pi_error::new(
                pi_error_kind::InvalidJson,
                format!("`options_json` is not valid: {error}"),
            )
        })?;
        out.write(into_handle(pi_faux {
            faux,
            contexts: Arc::default(),
        }));
        Ok(())
    }
}

/// Appends scripted responses. `assistant_message_json` is one pi-shaped assistant message (or
/// a JSON string: one text block), or a JSON array of them (all or nothing), e.g.
/// `{"content":[{"type":"toolCall","id":"c1","name":"calculator","arguments":{"expression":"6*7"}}]}`.
/// Short forms are completed: `role`, `api`, `provider`, `model`, `usage` and `timestamp` may
/// be left out, `content` may be a plain string, and a missing `stopReason` is `toolUse` when
/// the content has a tool call, else `stop`. A message with `stopReason` `error` (and an
/// `errorMessage`) scripts a failure.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread, also while a request is being served.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_push_json(
    faux: *const pi_faux,
    assistant_message_json: *const c_char,
) -> *mut pi_error {
    method(faux, "faux", |faux| {
        let value: Value = arg_json(assistant_message_json, "assistant_message_json")?;
        let model = faux.faux.model();
        let messages = match value {
            Value::Array(items) => items
                .into_iter()
                .map(|item| scripted_message(item, &model))
                .collect::<Result<Vec<_>, _>>()?,
            item => vec![scripted_message(item, &model)?],
        };
        faux.faux
            .append_responses(messages.into_iter().map(|message| {
                let contexts = Arc::clone(&faux.contexts);
                FauxResponse::Factory(Arc::new(move |context, _, _, _| {
                    record(&contexts, context);
                    message.clone()
                }))
            }));
        Ok(())
    })
}

/// Records what a request sent.
fn record(contexts: &Mutex<Vec<Context>>, context: &Context) {
    lock(contexts).push(context.clone());
}

/// Builds a scripted response from a request (pi's response factory). Read the request with
/// `pi_faux_request_context_json` / `_options_json` / `_call_number` / `_model`, set the
/// response with `pi_faux_request_set_message_json` (the short forms of `pi_faux_push_json`;
/// a message with `stopReason` `error` scripts a failure). Return 0, or non-zero to end the
/// stream with the error "faux factory returned error code N" (as pi's throwing factory does);
/// returning 0 without a message fails the same way ("faux factory set no message").
/// `request` is valid until the callback returns.
///
/// It runs on a thread of the runtime's blocking pool when the request is served; it may block
/// (the stream waits) and may call blocking functions.
pub type pi_faux_factory_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, request: *mut pi_faux_request) -> i32>;

type FactoryFn = unsafe extern "C" fn(*mut c_void, *mut pi_faux_request) -> i32;

/// A request served by a faux factory, passed to a `pi_faux_factory_callback`. Valid until the
/// callback returns.
///
/// Thread-safe: its functions may be called from any thread while the callback runs.
pub struct pi_faux_request {
    context: Context,
    options: StreamOptions,
    call_number: usize,
    model: pi_model,
    context_json: OnceLock<String>,
    options_json: OnceLock<String>,
    message: Answer<Option<AssistantMessage>>,
}

/// The request's pi `Context` as JSON (empty when `request` is NULL). Valid while the callback
/// runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_request_context_json(request: *const pi_faux_request) -> pi_str {
    view(request, |r| lazy_json(&r.context_json, || &r.context))
}

/// The request's options as core's `StreamOptions` JSON, secrets left out (`apiKey`,
/// `bearerToken` and the headers that carry a credential, such as `Authorization`; empty when
/// `request` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_request_options_json(request: *const pi_faux_request) -> pi_str {
    view(request, |r| {
        lazy_json(&r.options_json, || r.options.without_credential_headers())
    })
}

/// Which request of the provider this is, counting from 1 (0 when `request` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_request_call_number(request: *const pi_faux_request) -> usize {
    ffi_boundary! {
        opt_ref(request).map_or(0, |request| request.call_number)
    }
}

/// The model asked for (NULL when `request` is NULL). Valid while the callback runs.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_request_model(request: *const pi_faux_request) -> *const pi_model {
    ffi_boundary! {
        opt_ref(request).map_or(std::ptr::null(), |request| std::ptr::from_ref(&request.model))
    }
}

/// Sets the response: one assistant message in the short forms of `pi_faux_push_json`. The
/// last call wins.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON` (nothing changes).
/// Thread-safety: may be called from any thread while the callback runs.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_request_set_message_json(
    request: *mut pi_faux_request,
    assistant_message_json: *const c_char,
) -> *mut pi_error {
    method(request, "request", |request| {
        let value = arg_json(assistant_message_json, "assistant_message_json")?;
        request
            .message
            .set(Some(scripted_message(value, &request.model.model)?));
        Ok(())
    })
}

/// Appends a response built by a C callback when its request is served (pi's response
/// factory; see `pi_faux_factory_callback`). `free_user_data` (nullable) is called with
/// `user_data` exactly once, after the response was built, or when it is dropped unused
/// (`pi_faux_free`), possibly on a runtime thread. On error nothing is appended and
/// `free_user_data` is not called.
///
/// Errors: `NULL_ARGUMENT` (also for a NULL `callback`).
/// Thread-safety: may be called from any thread, also while a request is being served.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_push_factory(
    faux: *const pi_faux,
    callback: pi_faux_factory_callback,
    user_data: *mut c_void,
    free_user_data: pi_free_callback,
) -> *mut pi_error {
    method(faux, "faux", |faux| {
        let callback = callback.ok_or_else(|| pi_error::null_argument("callback"))?;
        let user_data = Arc::new(UserData::new(user_data, free_user_data));
        let contexts = Arc::clone(&faux.contexts);
        faux.faux.push(FauxResponse::AsyncFactory(Arc::new(
            move |context, options, call_number, model| {
                record(&contexts, &context);
                let user_data = Arc::clone(&user_data);
                async move {
                    let build = move || {
                        build_response(callback, &user_data, context, options, call_number, model)
                    };
                    run_callback(&CallbackSite::default(), build)
                        .await
                        .unwrap_or_else(|error| Err(format!("faux factory failed: {error}")))
                        .map_err(FauxError::Factory)
                }
                .boxed()
            },
        )));
        Ok(())
    })
}

/// Runs a C factory for one request (on a blocking-pool thread).
fn build_response(
    callback: FactoryFn,
    user_data: &UserData,
    context: Context,
    options: StreamOptions,
    call_number: usize,
    model: Model,
) -> Result<AssistantMessage, String> {
    let Some(user_data) = user_data.get() else {
        return Err("the faux factory was released".to_owned());
    };
    let request = pi_faux_request {
        context,
        options,
        call_number,
        model: pi_model { model },
        context_json: OnceLock::new(),
        options_json: OnceLock::new(),
        message: Answer::default(),
    };
    let (request, code) = call_with(callback, user_data, request);
    match request.message.take() {
        _ if code != 0 => Err(format!("faux factory returned error code {code}")),
        Some(message) => Ok(message),
        None => Err("faux factory set no message".to_owned()),
    }
}

/// Completes a short assistant message (see `pi_faux_push_json`) and parses it.
fn scripted_message(value: Value, model: &Model) -> Result<AssistantMessage, pi_error> {
    pi_agent::ai::providers::faux::faux_message_from_json(value, model).map_err(|message| {
        pi_error::new(
            pi_error_kind::InvalidJson,
            format!("`assistant_message_json` is not valid: {message}"),
        )
    })
}

/// Writes a new copy of the provider's first model to `*model_out` (free it with
/// `pi_model_free`). Requests to it are served by this faux provider until `pi_faux_free`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_model(
    faux: *const pi_faux,
    model_out: *mut *mut pi_model,
) -> *mut pi_error {
    method(faux, "faux", |faux| {
        let out = Out::new(model_out, "model_out")?;
        out.write(into_handle(pi_model {
            model: faux.faux.model(),
        }));
        Ok(())
    })
}

/// How many scripted responses are not used yet (0 when `faux` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_pending(faux: *const pi_faux) -> usize {
    ffi_boundary! {
        opt_ref(faux).map_or(0, |faux| faux.faux.pending_count())
    }
}

/// How many requests the provider has served (0 when `faux` is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_call_count(faux: *const pi_faux) -> usize {
    ffi_boundary! {
        opt_ref(faux).map_or(0, |faux| faux.faux.call_count())
    }
}

/// Writes what the model was sent: the pi `Context`
/// (`{"systemPrompt":...,"messages":[...],"tools":[...]}`) of every request served with a
/// scripted response, oldest first, as a JSON array to `*json_out` (free it with
/// `pi_string_free`). Lets tests check what an agent actually sends.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_contexts_json(
    faux: *const pi_faux,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(faux, "faux", |faux| {
        let out = Out::new(json_out, "json_out")?;
        out.write_json(&*lock(&faux.contexts), "contexts")
    })
}

/// Unregisters the provider and frees it, dropping the responses not used yet (calling the
/// `free_user_data` of their factories). Later requests to its models fail with an `error`
/// event ("No API provider registered ..."). NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `faux`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_free(faux: *mut pi_faux) {
    free(faux, |faux| {
        faux.faux.unregister();
        faux.faux.set_responses(Vec::new());
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_agent::ai::{AssistantContent, StopReason};
    use serde_json::json;

    #[test]
    fn short_messages_are_completed() {
        let model = Model::new("faux:test", "faux", "faux-1", "");
        let message = scripted_message(json!({"content": "hi"}), &model).unwrap();
        assert_eq!(message.text(), "hi");
        assert_eq!(message.stop_reason, StopReason::Stop);
        assert_eq!(message.api, "faux:test");
        assert!(message.timestamp > 0);

        let call = json!({"content": [{"type": "toolCall", "id": "c1", "name": "calc",
            "arguments": {"x": 1}}]});
        let message = scripted_message(call, &model).unwrap();
        assert_eq!(message.stop_reason, StopReason::ToolUse);
        assert!(matches!(message.content[0], AssistantContent::ToolCall(_)));

        let failure = json!({"stopReason": "error", "errorMessage": "scripted"});
        let message = scripted_message(failure, &model).unwrap();
        assert_eq!(message.error_message.as_deref(), Some("scripted"));

        assert!(scripted_message(json!({"role": "user", "content": "x"}), &model).is_err());
        let text = scripted_message(json!("just text"), &model).unwrap();
        assert_eq!(text.text(), "just text");
        assert!(scripted_message(json!(42), &model).is_err());
    }
}
