//! `pi_model`: a model and the endpoint that serves it, in pi's JSON shape.

use std::ffi::c_char;

use pi_agent::ai::Model;

use crate::boundary::{Out, arg_ref, arg_str, into_handle, opt_ref, take_handle};
use crate::error::{parse_json, pi_error};
use crate::string::{into_c_string, pi_str};

/// A model (pi's `Model`): id, wire API, provider, endpoint, limits, prices.
///
/// Immutable: it may be used from any number of threads at once. Functions that take a model
/// copy what they need, so it may be freed right after.
#[derive(Debug)]
pub struct pi_model {
    pub(crate) model: Model,
}

/// Parses a model from pi-shaped JSON, e.g.
/// `{"id":"llama3","api":"openai-completions","provider":"ollama","baseUrl":"http://localhost:11434/v1"}`
/// (any `baseUrl`, e.g. a local OpenAI-compatible server). On success `*model_out` receives a
/// new model to free with `pi_model_free`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_from_json(
    json: *const c_char,
    model_out: *mut *mut pi_model,
) -> *mut pi_error {
    ffi_fallible! {
        let json = arg_str(json, "json")?;
        let out = Out::new(model_out, "model_out")?;
        let model: Model = parse_json(json, "json")?;
        out.write(into_handle(pi_model { model }));
        Ok(())
    }
}

/// Writes the model as pi-shaped JSON to `*json_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_to_json(
    model: *const pi_model,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let model = arg_ref(model, "model")?;
        let out = Out::new(json_out, "json_out")?;
        let json = serde_json::to_string(&model.model)
            .map_err(|error| pi_error::invalid_json("model", &error))?;
        out.write(into_c_string(json));
        Ok(())
    }
}

/// The model's id (empty when `model` is NULL). Valid until `pi_model_free(model)`.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_id(model: *const pi_model) -> pi_str {
    ffi_boundary! {
        opt_ref(model).map_or(pi_str::EMPTY, |model| pi_str::new(&model.model.id))
    }
}

/// The model's provider, e.g. `openai` (empty when `model` is NULL). Valid until
/// `pi_model_free(model)`.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_provider(model: *const pi_model) -> pi_str {
    ffi_boundary! {
        opt_ref(model).map_or(pi_str::EMPTY, |model| pi_str::new(&model.model.provider))
    }
}

/// The model's wire API, e.g. `openai-completions` (empty when `model` is NULL). Valid until
/// `pi_model_free(model)`.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_api(model: *const pi_model) -> pi_str {
    ffi_boundary! {
        opt_ref(model).map_or(pi_str::EMPTY, |model| pi_str::new(&model.model.api))
    }
}

/// Frees a model. NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `model`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_free(model: *mut pi_model) {
    ffi_boundary! {
        drop(take_handle(model));
    }
}
