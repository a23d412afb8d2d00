//! `FauxProvider`: core's scripted in-process provider, for tests, examples and offline demos.

use std::sync::Arc;

use futures::FutureExt;
use pi_agent::ai::providers::faux::{
    self, FauxAsyncFactory, FauxError, FauxOptions, FauxProvider, FauxResponse,
};
use pi_agent::ai::{AssistantMessage, Context, Model, StreamOptions};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::{Value, json};

use crate::callable::{self, EXITING, Scope, describe};
use crate::convert::{from_py, serde_to_py};
use crate::errors::{type_error, type_name, value_error};
use crate::model::PyModel;

/// A registered faux provider: each request pops the next scripted response and streams it
/// with a real provider's event order. Use it as a context manager to unregister on exit.
#[pyclass(module = "pi_agent", name = "FauxProvider", frozen)]
pub(crate) struct PyFauxProvider {
    inner: FauxProvider,
}

#[pymethods]
impl PyFauxProvider {
    #[new]
    #[pyo3(signature = (
        *,
        api = None,
        provider = "faux",
        model_ids = None,
        tokens_per_second = None,
        token_size = (3, 5),
    ))]
    fn new(
        api: Option<String>,
        provider: &str,
        model_ids: Option<Vec<String>>,
        tokens_per_second: Option<f64>,
        token_size: (usize, usize),
    ) -> PyResult<Self> {
        let model_ids = model_ids.unwrap_or_else(|| vec!["faux-1".to_owned()]);
        if model_ids.is_empty() {
            return Err(value_error(
                Some("model_ids"),
                "model_ids must name at least one model",
            ));
        }
        let inner = FauxProvider::try_register_with(FauxOptions {
            api,
            provider: provider.to_owned(),
            model_ids,
            tokens_per_second,
            token_size,
        })
        .map_err(|error| {
            // Core names the field by its JSON name; the keyword is its snake_case.
            let keyword = match error.field {
                "tokensPerSecond" => "tokens_per_second",
                "tokenSize" => "token_size",
                "models" => "model_ids",
                other => other,
            };
            value_error(Some(keyword), error.to_string())
        })?;
        Ok(Self { inner })
    }

    /// The api id it is registered under (`faux:<n>` unless given).
    #[getter]
    fn api(&self) -> &str {
        self.inner.api()
    }

    /// The first model.
    #[getter(model)]
    fn first_model(&self) -> PyModel {
        PyModel {
            model: self.inner.model(),
        }
    }

    /// All models.
    #[getter]
    fn models(&self) -> Vec<PyModel> {
        self.inner
            .models()
            .iter()
            .map(|model| PyModel {
                model: model.clone(),
            })
            .collect()
    }

    /// The model with this id.
    #[pyo3(name = "get_model")]
    fn model_by_id(&self, id: &str) -> PyResult<PyModel> {
        self.inner
            .get_model(id)
            .map(|model| PyModel { model })
            .ok_or_else(|| PyKeyError::new_err(id.to_owned()))
    }

    /// Appends one scripted response.
    fn push(&self, response: &Bound<'_, PyAny>) -> PyResult<()> {
        let response = self.response(response)?;
        self.inner.push(response);
        Ok(())
    }

    /// Replaces the script.
    fn set_responses(&self, responses: &Bound<'_, PyAny>) -> PyResult<()> {
        let responses = responses
            .try_iter()?
            .map(|response| self.response(&response?))
            .collect::<PyResult<Vec<_>>>()?;
        self.inner.set_responses(responses);
        Ok(())
    }

    /// Responses not yet used.
    #[getter]
    fn pending(&self) -> usize {
        self.inner.pending_count()
    }

    /// Requests served so far.
    #[getter]
    fn call_count(&self) -> usize {
        self.inner.call_count()
    }

    /// Removes the provider from the registry.
    fn unregister(&self) {
        self.inner.unregister();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> bool {
        self.inner.unregister();
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "FauxProvider(api={:?}, pending={})",
            self.inner.api(),
            self.inner.pending_count()
        )
    }
}

impl PyFauxProvider {
    fn response(&self, obj: &Bound<'_, PyAny>) -> PyResult<FauxResponse> {
        let scripted = obj.is_instance_of::<PyDict>()
            || obj.is_instance_of::<PyList>()
            || obj.is_instance_of::<PyString>();
        if !scripted && obj.is_callable() {
            return Ok(FauxResponse::AsyncFactory(python_factory(
                obj.clone().unbind(),
            )));
        }
        let model = self.inner.model();
        Ok(FauxResponse::Message(scripted_message(obj, &model)?))
    }
}

/// Reads a scripted response: an assistant message dict (missing api, provider, model, usage,
/// timestamp and stopReason are filled in), a list of content blocks, or a str (one text block).
fn scripted_message(obj: &Bound<'_, PyAny>, model: &Model) -> PyResult<AssistantMessage> {
    let value = from_py(obj)?;
    if !matches!(value, Value::String(_) | Value::Array(_) | Value::Object(_)) {
        return Err(type_error(
            Some("response"),
            format!(
                "a faux response is a message dict, a list of content blocks, a str or a \
                 callable, not {}",
                type_name(obj)
            ),
        ));
    }
    pi_agent::ai::providers::faux::faux_message_from_json(value, model).map_err(|message| {
        value_error(
            Some("response"),
            format!("invalid faux response: {message}"),
        )
    })
}

/// A factory calling `function(context, call_number, model)` for each request, plain or
/// `async def` (core's async factory: it runs on a worker thread, a coroutine in its own
/// event loop). A raised exception or an invalid return value ends the stream with an error.
fn python_factory(function: Py<PyAny>) -> FauxAsyncFactory {
    let function = Arc::new(function);
    Arc::new(
        move |context: Context, _options: StreamOptions, call: usize, model: Model| {
            let function = Arc::clone(&function);
            let scripted_model = model.clone();
            callable::call(
                Scope::default(),
                move |py| {
                    let args = PyTuple::new(
                        py,
                        [
                            serde_to_py(py, &context)?,
                            call.into_pyobject(py)?.into_any(),
                            Bound::new(py, PyModel { model })?.into_any(),
                        ],
                    )?;
                    Ok((function.bind(py).clone(), args))
                },
                move |py, outcome| {
                    outcome
                        .and_then(|response| scripted_message(&response, &scripted_model))
                        .map_err(|error| {
                            FauxError::Factory(format!(
                                "faux response factory failed: {}",
                                describe(py, &error)
                            ))
                        })
                },
                || Err(FauxError::Factory(EXITING.to_owned())),
            )
            .boxed()
        },
    )
}

/// A text content block, for scripting faux responses.
#[pyfunction]
pub(crate) fn faux_text<'py>(py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
    serde_to_py(py, &faux::faux_text(text))
}

/// A thinking content block, for scripting faux responses.
#[pyfunction]
pub(crate) fn faux_thinking<'py>(py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
    serde_to_py(py, &faux::faux_thinking(text))
}

/// A tool-call content block (id `tool:<n>` unless given), for scripting faux responses.
#[pyfunction]
#[pyo3(signature = (name, arguments = None, id = None))]
pub(crate) fn faux_tool_call<'py>(
    py: Python<'py>,
    name: String,
    arguments: Option<&Bound<'py, PyAny>>,
    id: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let arguments = match arguments {
        Some(arguments) => from_py(arguments)?,
        None => json!({}),
    };
    let block = match id {
        Some(id) => faux::faux_tool_call_with_id(id, name, arguments),
        None => faux::faux_tool_call(name, arguments),
    };
    serde_to_py(py, &block)
}
