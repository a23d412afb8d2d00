//! `pi_faux`: core's scripted, offline faux provider, for tests, examples and demos.

use std::ffi::c_char;
use std::sync::{Arc, Mutex, PoisonError};

use pi_agent::ai::providers::faux::{FauxProvider, FauxResponse};
use pi_agent::ai::{AssistantMessage, Model};
use serde_json::Value;

use crate::boundary::{Out, arg_opt_str, arg_ref, arg_str, into_handle, opt_ref, take_handle};
use crate::error::{parse_json, pi_error, pi_error_kind, to_json};
use crate::model::pi_model;
use crate::options::faux_options;
use crate::string::into_c_string;

/// A registered faux provider (pi's `registerFauxProvider`): every request to one of its models
/// pops the next scripted assistant message and streams it like a real provider would.
///
/// Thread-safe: every function may be called from any thread, except `pi_faux_free` (once,
/// when no other thread uses it).
#[derive(Debug)]
pub struct pi_faux {
    faux: FauxProvider,
    /// The context of every request served with a scripted response, oldest first.
    contexts: Arc<Mutex<Vec<Value>>>,
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

/// Registers a faux provider. `options_json` may be NULL, or an object with any of `api`
/// (default: a fresh `faux:<n>`), `provider` (default `faux`), `models` (array of model ids,
/// default `["faux-1"]`), `tokensPerSecond` (pace the output; default: unpaced) and
/// `tokenSize` (`{"min":3,"max":5}`: delta sizes in tokens of 4 characters).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_new_with_options(
    options_json: *const c_char,
    faux_out: *mut *mut pi_faux,
) -> *mut pi_error {
    ffi_fallible! {
        let options = faux_options(arg_opt_str(options_json, "options_json")?)?;
        let out = Out::new(faux_out, "faux_out")?;
        let faux = FauxProvider::register_with(options);
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
    ffi_fallible! {
        let faux = arg_ref(faux, "faux")?;
        let json = arg_str(assistant_message_json, "assistant_message_json")?;
        let value: Value = parse_json(json, "assistant_message_json")?;
        let model = faux.faux.model();
        let messages = match value {
            Value::Array(items) => items
                .into_iter()
                .map(|item| scripted_message(item, &model))
                .collect::<Result<Vec<_>, _>>()?,
            item => vec![scripted_message(item, &model)?],
        };
        faux.faux.append_responses(messages.into_iter().map(|message| {
            let contexts = Arc::clone(&faux.contexts);
            FauxResponse::Factory(Arc::new(move |context, _, _, _| {
                let context = serde_json::to_value(context).unwrap_or_default();
                contexts.lock().unwrap_or_else(PoisonError::into_inner).push(context);
                message.clone()
            }))
        }));
        Ok(())
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
    ffi_fallible! {
        let faux = arg_ref(faux, "faux")?;
        let out = Out::new(model_out, "model_out")?;
        out.write(into_handle(pi_model { model: faux.faux.model() }));
        Ok(())
    }
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
    ffi_fallible! {
        let faux = arg_ref(faux, "faux")?;
        let out = Out::new(json_out, "json_out")?;
        let contexts = faux.contexts.lock().unwrap_or_else(PoisonError::into_inner).clone();
        out.write(into_c_string(to_json(&contexts, "contexts")?));
        Ok(())
    }
}

/// Unregisters the provider and frees it. Later requests to its models fail with an `error`
/// event ("No API provider registered ..."). NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `faux`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_faux_free(faux: *mut pi_faux) {
    ffi_boundary! {
        if let Some(faux) = take_handle(faux) {
            faux.faux.unregister();
        }
    }
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
