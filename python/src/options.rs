//! Request options: Python keywords ↔ core's [`StreamOptions`], mechanically. A keyword is
//! pi's JSON name in snake_case (`max_tokens` → `maxTokens`, `azure_deployment_name` →
//! `azureDeploymentName`); core's serde shape decides which names exist and what their values
//! look like (nested values are pi's JSON as is). Only what is not JSON is read here: the
//! `on_payload` / `on_response` callables and the `signal`.

use std::sync::Arc;

use pi_agent::ai::{
    Callback, Model, OnPayload, OnResponse, PayloadError, StreamOptions, shape_fields,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use serde_json::{Map, Value};

use crate::callable::{EXITING, Scope, call_blocking, raised};
use crate::convert::{camel_case, from_py, snake_case, to_py};
use crate::errors::{PiError, callable, type_error, type_name, value_error, with_field};
use crate::model::PyModel;
use crate::signal::PySignal;

/// The keywords that are not JSON.
const CODE_OPTIONS: [&str; 3] = ["on_payload", "on_response", "signal"];

/// Every option keyword, for error messages.
fn option_names() -> String {
    let mut names: Vec<String> = shape_fields::<StreamOptions>()
        .unwrap_or_default()
        .iter()
        .map(|field| snake_case(field))
        .collect();
    names.extend(CODE_OPTIONS.iter().map(|name| (*name).to_owned()));
    names.join(", ")
}

/// pi's JSON name of the option keyword `key`; an unknown keyword is a `TypeError` naming it.
fn json_name(key: &str) -> PyResult<String> {
    let camel = camel_case(key);
    let known = shape_fields::<StreamOptions>().unwrap_or_default();
    if key.chars().any(|c| c.is_ascii_uppercase()) || !known.contains(&camel.as_str()) {
        return Err(type_error(
            Some(&format!("options.{key}")),
            format!(
                "unexpected option `{key}` (options, in snake_case: {})",
                option_names()
            ),
        ));
    }
    Ok(camel)
}

/// Deserializes options; a bad value is a `ValueError` naming its keyword.
fn deserialize(json: Map<String, Value>) -> PyResult<StreamOptions> {
    deserialize_named(json, "option")
}

/// Deserializes a core shape from pi's JSON names; a bad value is a `ValueError` naming its
/// keyword (`invalid <what> `max_tokens`: ...`). The error never quotes a value: options hold
/// credentials, and one given in the wrong place (`headers="Bearer ..."`) would be in it.
pub(crate) fn deserialize_named<T: serde::de::DeserializeOwned>(
    json: Map<String, Value>,
    what: &str,
) -> PyResult<T> {
    // Strict: a list where an object belongs (`thinking_budgets=[1, 2]`) is refused, not read
    // field by field.
    let read = |json: Value| pi_agent::ai::strict_json::from_value::<T>(&json);
    match read(Value::Object(json.clone())) {
        Ok(value) => Ok(value),
        Err(error) => {
            for (key, value) in json {
                let one: Map<String, Value> = std::iter::once((key.clone(), value)).collect();
                if let Err(error) = read(Value::Object(one)) {
                    let name = snake_case(&key);
                    return Err(value_error(
                        Some(&format!("{what}s.{name}")),
                        format!("invalid {what} `{name}`: {}", without_values(&error)),
                    ));
                }
            }
            Err(value_error(
                Some(&format!("{what}s")),
                format!("invalid {what}s: {}", without_values(&error)),
            ))
        }
    }
}

fn without_values(error: &serde_json::Error) -> String {
    pi_agent::ai::strict_json::error_without_values(error)
}

/// The options that are code, read from keywords.
#[derive(Default)]
struct Code {
    on_payload: Option<Option<Callback<OnPayload>>>,
    on_response: Option<Option<Callback<OnResponse>>>,
    signal: Option<Option<tokio_util::sync::CancellationToken>>,
}

impl Code {
    /// Reads `key` if it is one of [`CODE_OPTIONS`] (`None` value: unset); `false` otherwise.
    fn read(&mut self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        let unset = value.is_none();
        match key {
            "on_payload" => {
                self.on_payload = Some((!unset).then(|| on_payload(value)).transpose()?);
            }
            "on_response" => {
                self.on_response = Some((!unset).then(|| on_response(value)).transpose()?);
            }
            "signal" => {
                let token = (!unset)
                    .then(|| {
                        value
                            .cast::<PySignal>()
                            .map(|signal| signal.get().token.clone())
                            .map_err(|_| {
                                type_error(
                                    Some("options.signal"),
                                    format!(
                                        "signal must be a pi_agent.Signal, not {}",
                                        type_name(value)
                                    ),
                                )
                            })
                    })
                    .transpose()?;
                self.signal = Some(token);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Sets what was given; keeps `current`'s value for what was not.
    fn apply(self, options: &mut StreamOptions, current: &StreamOptions) {
        options.on_payload = self
            .on_payload
            .unwrap_or_else(|| current.on_payload.clone());
        options.on_response = self
            .on_response
            .unwrap_or_else(|| current.on_response.clone());
        options.signal = self.signal.unwrap_or_else(|| current.signal.clone());
    }
}

/// Reads request options given as keywords (`None` values are unset).
pub(crate) fn stream_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<StreamOptions> {
    let Some(options) = options else {
        return Ok(StreamOptions::default());
    };
    // A field the JSON leaves out is its default, so the keywords alone are the JSON: no round
    // trip of the defaults through a JSON value on every request.
    apply(Map::new(), &StreamOptions::default(), options)
}

/// `current` with the options given as keywords changed: a value replaces, `None` unsets.
pub(crate) fn update(
    current: &StreamOptions,
    changes: &Bound<'_, PyDict>,
) -> PyResult<StreamOptions> {
    let json = match serde_json::to_value(current) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    apply(json, current, changes)
}

/// `changes` applied to `json`, the JSON form of `current` (or none of it, when `current` is
/// the default: a field left out is its default), then read; the secrets and the callbacks,
/// which JSON does not hold, come from `current` unless changed.
fn apply(
    mut json: Map<String, Value>,
    current: &StreamOptions,
    changes: &Bound<'_, PyDict>,
) -> PyResult<StreamOptions> {
    let mut code = Code::default();
    let (mut api_key_given, mut bearer_token_given) = (false, false);
    for (key, value) in changes.iter() {
        let key: String = key.extract()?;
        if code.read(&key, &value)? {
            continue;
        }
        let name = json_name(&key)?;
        api_key_given |= name == "apiKey";
        bearer_token_given |= name == "bearerToken";
        if value.is_none() {
            json.remove(&name);
        } else {
            let value =
                from_py(&value).map_err(|error| with_field(error, &format!("options.{key}")))?;
            json.insert(name, value);
        }
    }
    let mut options = deserialize(json)?;
    // Secrets are read from JSON but never written to it: carry them over unless changed.
    if !api_key_given {
        options.api_key = current.api_key.clone();
    }
    if !bearer_token_given {
        options.bearer_token = current.bearer_token.clone();
    }
    code.apply(&mut options, current);
    Ok(options)
}

/// The options as keywords (`max_tokens`, ...), so `pi_agent.stream(model, context,
/// **options)` makes the same request. `secrets` adds `api_key` and `bearer_token`.
pub(crate) fn to_keywords<'py>(
    py: Python<'py>,
    options: &StreamOptions,
    secrets: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    if let Ok(Value::Object(map)) = serde_json::to_value(options) {
        for (key, value) in &map {
            dict.set_item(snake_case(key), to_py(py, value)?)?;
        }
    }
    if secrets {
        if let Some(key) = &options.api_key {
            dict.set_item("api_key", key.expose())?;
        }
        if let Some(token) = &options.bearer_token {
            dict.set_item("bearer_token", token.expose())?;
        }
    }
    if let Some(signal) = &options.signal {
        dict.set_item("signal", PySignal::new(signal.clone()))?;
    }
    if let Some(callback) = &options.on_payload {
        dict.set_item("on_payload", PyOnPayload(callback.clone()))?;
    }
    if let Some(callback) = &options.on_response {
        dict.set_item("on_response", PyOnResponse(callback.clone()))?;
    }
    Ok(dict)
}

fn callback(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Arc<Py<PyAny>>> {
    let value = callable(value, what, &format!("options.{what}"))?;
    Ok(Arc::new(value.clone().unbind()))
}

/// The arguments `(json, model)` of a callback.
fn json_and_model<'py>(
    py: Python<'py>,
    value: &Value,
    model: &Model,
) -> PyResult<[Bound<'py, PyAny>; 2]> {
    Ok([
        to_py(py, value)?,
        Bound::new(
            py,
            PyModel {
                model: model.clone(),
            },
        )?
        .into_any(),
    ])
}

/// `on_payload(payload, model)`: return a dict to send instead, or `None` to keep it (may be
/// `async def`). An exception (or a return value that is not JSON) fails the request unsent,
/// as a raising hook fails its run: the stream ends with an error whose message is
/// `"on_payload raised <Type>: <message>"`.
fn on_payload(value: &Bound<'_, PyAny>) -> PyResult<Callback<OnPayload>> {
    if let Ok(core) = value.cast::<PyOnPayload>() {
        return Ok(core.get().0.clone());
    }
    let function = callback(value, "on_payload")?;
    Ok(Callback(Arc::new(move |payload: &Value, model: &Model| {
        let (payload, model) = (payload.clone(), model.clone());
        let call = Arc::clone(&function);
        call_blocking(crate::callable::call(
            Scope::default(),
            move |py| {
                let args = PyTuple::new(py, json_and_model(py, &payload, &model)?)?;
                Ok((call.bind(py).clone(), args))
            },
            |py, outcome| {
                outcome
                    .and_then(|value| {
                        if value.is_none() {
                            Ok(None)
                        } else {
                            from_py(&value).map(Some)
                        }
                    })
                    .map_err(|error| PayloadError(raised(py, "on_payload", &error)))
            },
            || Err(PayloadError(EXITING.to_owned())),
        ))
    })))
}

/// `on_response(status, headers, model)`, called once the response headers arrive (may be
/// `async def`). An exception is reported through `sys.unraisablehook`.
fn on_response(value: &Bound<'_, PyAny>) -> PyResult<Callback<OnResponse>> {
    if let Ok(core) = value.cast::<PyOnResponse>() {
        return Ok(core.get().0.clone());
    }
    let function = callback(value, "on_response")?;
    Ok(Callback(Arc::new(
        move |status: u16, headers: &std::collections::BTreeMap<String, String>, model: &Model| {
            let (headers, model) = (headers.clone(), model.clone());
            let (call, report) = (Arc::clone(&function), Arc::clone(&function));
            call_blocking(crate::callable::call(
                Scope::default(),
                move |py| {
                    let model = Bound::new(py, PyModel { model })?.into_any();
                    let args = PyTuple::new(
                        py,
                        [
                            status.into_pyobject(py)?.into_any(),
                            headers.into_pyobject(py)?.into_any(),
                            model,
                        ],
                    )?;
                    Ok((call.bind(py).clone(), args))
                },
                move |py, outcome| {
                    if let Err(error) = outcome {
                        error.write_unraisable(py, Some(report.bind(py)));
                    }
                },
                || (),
            ));
        },
    )))
}

/// An `on_payload` callback of a request, as a stream function's options carry it: pass it on
/// in `options`, or call it as `on_payload(payload, model)`.
#[pyclass(module = "pi_agent", name = "OnPayload", frozen)]
pub(crate) struct PyOnPayload(Callback<OnPayload>);

#[pymethods]
impl PyOnPayload {
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        payload: &Bound<'py, PyAny>,
        model: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let payload = from_py(payload)?;
        let model = PyModel::extract(model)?;
        let callback = self.0.clone();
        let replaced = py
            .detach(move || (callback.0)(&payload, &model))
            .map_err(|error| PiError::new_err(error.0))?;
        match replaced {
            Some(value) => to_py(py, &value),
            None => Ok(py.None().into_bound(py)),
        }
    }
}

/// An `on_response` callback of a request, as a stream function's options carry it.
#[pyclass(module = "pi_agent", name = "OnResponse", frozen)]
pub(crate) struct PyOnResponse(Callback<OnResponse>);

#[pymethods]
impl PyOnResponse {
    fn __call__(
        &self,
        py: Python<'_>,
        status: u16,
        headers: std::collections::BTreeMap<String, String>,
        model: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let model = PyModel::extract(model)?;
        let callback = self.0.clone();
        py.detach(move || (callback.0)(status, &headers, &model));
        Ok(())
    }
}
