//! Request options (`**options` of `stream`, `complete`, `acomplete` and `Agent`), read in one
//! place into core's [`StreamOptions`].

use std::sync::Arc;

use pi_agent::ai::{ApiKey, StreamOptions, ThinkingLevel};
use pi_agent::ai::{CacheRetention, Callback, ThinkingBudgets};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{from_py, parse, to_py, type_name};
use crate::model::PyModel;

/// The option names, for error messages and the stubs.
const NAMES: &str = "api_key, temperature, max_tokens, headers, session_id, reasoning, \
                     tool_choice, thinking_budgets, cache_retention, max_retries, \
                     max_retry_delay_ms, request_timeout_ms, idle_timeout_ms, on_payload, \
                     on_response";

/// Reads request options; an unknown name is a `TypeError`. `agent` also accepts nothing
/// else: the agent sets `reasoning` from its `thinking_level`.
pub(crate) fn stream_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<StreamOptions> {
    let mut out = StreamOptions::default();
    let Some(options) = options else {
        return Ok(out);
    };
    for (key, value) in options.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        match key.as_str() {
            "api_key" => out.api_key = Some(ApiKey::new(value.extract::<String>()?)),
            "temperature" => out.temperature = Some(value.extract()?),
            "max_tokens" => out.max_tokens = Some(value.extract()?),
            "headers" => out.headers = value.extract()?,
            "session_id" => out.session_id = Some(value.extract()?),
            "reasoning" => out.reasoning = Some(parse::<ThinkingLevel>(&value, "reasoning")?),
            "tool_choice" => out.tool_choice = Some(from_py(&value)?),
            "thinking_budgets" => {
                out.thinking_budgets = Some(parse::<ThinkingBudgets>(&value, "thinking_budgets")?);
            }
            "cache_retention" => {
                out.cache_retention = Some(parse::<CacheRetention>(&value, "cache_retention")?);
            }
            "max_retries" => out.max_retries = Some(value.extract()?),
            "max_retry_delay_ms" => out.max_retry_delay_ms = Some(value.extract()?),
            "request_timeout_ms" => out.request_timeout_ms = Some(value.extract()?),
            "idle_timeout_ms" => out.idle_timeout_ms = Some(value.extract()?),
            "on_payload" => out.on_payload = Some(on_payload(value)?),
            "on_response" => out.on_response = Some(on_response(value)?),
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected option `{key}` (options: {NAMES})"
                )));
            }
        }
    }
    Ok(out)
}

fn callable(value: Bound<'_, PyAny>, what: &str) -> PyResult<Arc<Py<PyAny>>> {
    if value.is_callable() {
        Ok(Arc::new(value.unbind()))
    } else {
        Err(PyTypeError::new_err(format!(
            "{what} must be callable, not {}",
            type_name(&value)
        )))
    }
}

/// `on_payload(payload, model)`: return a dict to send instead, or `None` to keep it. An
/// exception is reported through `sys.unraisablehook` and the payload is kept.
fn on_payload(value: Bound<'_, PyAny>) -> PyResult<Callback<pi_agent::ai::OnPayload>> {
    let function = callable(value, "on_payload")?;
    Ok(Callback(Arc::new(move |payload, model| {
        Python::attach(|py| {
            let function = function.bind(py);
            let outcome = to_py(py, payload).and_then(|payload| {
                let model = PyModel {
                    model: model.clone(),
                };
                let replaced = function.call1((payload, model))?;
                if replaced.is_none() {
                    Ok(None)
                } else {
                    from_py(&replaced).map(Some)
                }
            });
            outcome.unwrap_or_else(|error| {
                error.write_unraisable(py, Some(function));
                None
            })
        })
    })))
}

/// `on_response(status, headers, model)`, called once the response headers arrive. An
/// exception is reported through `sys.unraisablehook`.
fn on_response(value: Bound<'_, PyAny>) -> PyResult<Callback<pi_agent::ai::OnResponse>> {
    let function = callable(value, "on_response")?;
    Ok(Callback(Arc::new(move |status, headers, model| {
        Python::attach(|py| {
            let function = function.bind(py);
            let model = PyModel {
                model: model.clone(),
            };
            if let Err(error) = function.call1((status, headers.clone(), model)) {
                error.write_unraisable(py, Some(function));
            }
        });
    })))
}
