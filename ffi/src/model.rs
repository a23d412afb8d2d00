//! `pi_model`: a model and the endpoint that serves it, in pi's JSON shape, and the built-in
//! model catalog (pi's `getModel`, `getModels`, `getProviders`).

use std::ffi::c_char;

use pi_agent::ai::{
    Model, ThinkingLevel, Usage, clamp_thinking_level, get_model, get_models, get_providers,
    get_supported_thinking_levels, models_are_equal, resolve_model,
};

use crate::args::{Out, arg_str, method, write_json};
use crate::boundary::{free, into_handle, opt_ref};
use crate::error::{parse_object, pi_error};
use crate::options::parse_name;
use crate::string::{pi_str, view};

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
        let model: Model = parse_object(json, "json")?;
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
    method(model, "model", |model| {
        write_json(json_out, &model.model, "model")
    })
}

/// The model's id (empty when `model` is NULL). Valid until `pi_model_free(model)`.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_id(model: *const pi_model) -> pi_str {
    view(model, |model| pi_str::new(&model.model.id))
}

/// The model's provider, e.g. `openai` (empty when `model` is NULL). Valid until
/// `pi_model_free(model)`.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_provider(model: *const pi_model) -> pi_str {
    view(model, |model| pi_str::new(&model.model.provider))
}

/// The model's wire API, e.g. `openai-completions` (empty when `model` is NULL). Valid until
/// `pi_model_free(model)`.
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_api(model: *const pi_model) -> pi_str {
    view(model, |model| pi_str::new(&model.model.api))
}

/// Frees a model. NULL is a no-op.
///
/// Thread-safety: call once, when no other thread uses `model`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_free(model: *mut pi_model) {
    free(model, drop)
}

/// Writes a new copy of the catalog model `id` of `provider` to `*model_out` (pi's
/// `getModel`), e.g. `pi_model_get("anthropic", "claude-opus-4-7", &model)`. Free it with
/// `pi_model_free`. Any model works without the catalog (see `pi_model_from_json`); the catalog
/// is a convenience.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `NOT_FOUND` (no such provider or model).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_get(
    provider: *const c_char,
    id: *const c_char,
    model_out: *mut *mut pi_model,
) -> *mut pi_error {
    ffi_fallible! {
        let provider = arg_str(provider, "provider")?;
        let id = arg_str(id, "id")?;
        let out = Out::new(model_out, "model_out")?;
        let model = get_model(provider, id).ok_or_else(|| {
            pi_error::not_found(format!("no catalog model `{id}` of provider `{provider}`"))
        })?;
        out.write(into_handle(pi_model { model }));
        Ok(())
    }
}

/// Writes a new copy of the catalog model named by `spec`, written `"provider/model-id"`, to
/// `*model_out` (free it with `pi_model_free`). Only the first `/` separates the two, so
/// `"openrouter/anthropic/claude-sonnet-4"` is provider `openrouter`, id
/// `anthropic/claude-sonnet-4`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `NOT_FOUND` (no `/`, or no such model).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_resolve(
    spec: *const c_char,
    model_out: *mut *mut pi_model,
) -> *mut pi_error {
    ffi_fallible! {
        let spec = arg_str(spec, "spec")?;
        let out = Out::new(model_out, "model_out")?;
        let model = resolve_model(spec).ok_or_else(|| {
            pi_error::not_found(format!(
                "no catalog model `{spec}` (expected `provider/model-id`)"
            ))
        })?;
        out.write(into_handle(pi_model { model }));
        Ok(())
    }
}

/// Writes the catalog's providers as a sorted JSON array of strings to `*json_out` (pi's
/// `getProviders`), e.g. `["amazon-bedrock","anthropic",...]`. Free it with `pi_string_free`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_providers_json(json_out: *mut *mut c_char) -> *mut pi_error {
    ffi_fallible! {
        write_json(json_out, &get_providers(), "providers")
    }
}

/// Writes the catalog models of `provider` as a JSON array of pi-shaped models, sorted by id, to
/// `*json_out` (pi's `getModels`; `[]` for an unknown provider). Free it with
/// `pi_string_free`. Each element can be passed to `pi_model_from_json`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_models_json(
    provider: *const c_char,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    ffi_fallible! {
        let provider = arg_str(provider, "provider")?;
        write_json(json_out, &get_models(provider), "models")
    }
}

/// Writes the thinking levels `model` supports, in order, as a JSON array of strings to
/// `*json_out` (pi's `getSupportedThinkingLevels`): `["off"]` for a model without reasoning,
/// else e.g. `["off","minimal","low","medium","high"]` (`"xhigh"` only where the model lists
/// it). Free it with `pi_string_free`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_supported_thinking_levels_json(
    model: *const pi_model,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(model, "model", |model| {
        let levels = get_supported_thinking_levels(&model.model);
        write_json(json_out, &levels, "thinking levels")
    })
}

/// Writes the level to use when `level` is asked of `model` (pi's `clampThinkingLevel`) to
/// `*level_out`: `level` itself when supported, else the nearest supported level above it,
/// else the nearest below, else `"off"`. `level` is `"off"`, `"minimal"`, `"low"`, `"medium"`,
/// `"high"` or `"xhigh"`; the result is static (valid forever).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_ARGUMENT` (another `level`).
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_clamp_thinking_level(
    model: *const pi_model,
    level: *const c_char,
    level_out: *mut pi_str,
) -> *mut pi_error {
    method(model, "model", |model| {
        let level: ThinkingLevel = parse_name(arg_str(level, "level")?, "level")?;
        let out = Out::new(level_out, "level_out")?;
        out.write(pi_str::new(
            clamp_thinking_level(&model.model, level).as_str(),
        ));
        Ok(())
    })
}

/// Computes what `usage_json` (pi's `Usage`: `{"input":N,"output":N,"cacheRead":N,
/// "cacheWrite":N,...}`) costs on `model` (pi's `calculateCost`: its prices are USD per million
/// tokens) and writes the cost as pi's `UsageCost` JSON
/// (`{"input":...,"output":...,"cacheRead":...,"cacheWrite":...,"total":...}`, USD) to
/// `*cost_json_out` (free it with `pi_string_free`).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_model_calculate_cost(
    model: *const pi_model,
    usage_json: *const c_char,
    cost_json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(model, "model", |model| {
        let mut usage: Usage = parse_object(arg_str(usage_json, "usage_json")?, "usage_json")?;
        let out = Out::new(cost_json_out, "cost_json_out")?;
        let cost = model.model.calculate_cost(&mut usage);
        out.write_json(&cost, "cost")
    })
}

/// Whether `a` and `b` are the same model (pi's `modelsAreEqual`: the same id and provider;
/// `false` when either is NULL).
///
/// Thread-safety: may be called from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn pi_models_are_equal(a: *const pi_model, b: *const pi_model) -> bool {
    ffi_boundary! {
        models_are_equal(opt_ref(a).map(|a| &a.model), opt_ref(b).map(|b| &b.model))
    }
}
