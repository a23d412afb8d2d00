//! `Model`: core's [`Model`], built from keywords or a pi-shaped dict.

use std::collections::BTreeMap;

use pi_agent::ai::{InputModality, Model, ModelCost};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{
    camel_case, from_py, parse, parse_secret, parse_secret_value, parse_value, serde_to_py, to_py,
};

/// Which wire API to speak, where, and what the model can do and costs (pi's `Model`).
#[pyclass(module = "pi_agent", name = "Model", frozen, eq)]
#[derive(Clone, PartialEq)]
pub(crate) struct PyModel {
    pub(crate) model: Model,
}

impl PyModel {
    /// A `Model` object's pi JSON (for [`crate::convert::from_py`]).
    pub(crate) fn as_json(obj: &Bound<'_, PyAny>) -> Option<PyResult<serde_json::Value>> {
        let model = obj.cast::<PyModel>().ok()?;
        Some(
            serde_json::to_value(&model.get().model)
                .map_err(|error| pyo3::exceptions::PyValueError::new_err(error.to_string())),
        )
    }

    /// Reads a `Model` object or a pi-shaped model dict.
    pub(crate) fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Model> {
        match obj.cast::<PyModel>() {
            Ok(model) => Ok(model.get().model.clone()),
            Err(_) => parse_secret(obj, "model"),
        }
    }
}

#[pymethods]
impl PyModel {
    #[new]
    #[pyo3(signature = (
        id,
        *,
        api = "openai-completions",
        provider = "openai",
        base_url = "https://api.openai.com/v1",
        name = None,
        reasoning = false,
        input = None,
        cost = None,
        context_window = 128_000,
        max_tokens = 16_384,
        headers = None,
        compat = None,
        thinking_level_map = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        id: String,
        api: &str,
        provider: &str,
        base_url: &str,
        name: Option<String>,
        reasoning: bool,
        input: Option<Vec<String>>,
        cost: Option<&Bound<'_, PyAny>>,
        context_window: u64,
        max_tokens: u64,
        headers: Option<BTreeMap<String, String>>,
        compat: Option<&Bound<'_, PyAny>>,
        thinking_level_map: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut model = Model::new(api, provider, id, base_url);
        if let Some(name) = name {
            model.name = name;
        }
        model.reasoning = reasoning;
        if let Some(input) = input {
            model.input = parse_value::<Vec<InputModality>>(input.into(), "input")?;
        }
        if let Some(cost) = cost {
            model.cost = parse::<ModelCost>(cost, "cost")?;
        }
        model.context_window = context_window;
        model.max_tokens = max_tokens;
        model.headers = headers;
        model.compat = compat.map(from_py).transpose()?;
        if let Some(map) = thinking_level_map {
            model.thinking_level_map = Some(parse(map, "thinking_level_map")?);
        }
        Ok(Self { model })
    }

    /// Builds a model from pi's JSON shape (`{"id", "api", "provider", "baseUrl", ...}`).
    #[staticmethod]
    fn from_dict(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self {
            model: parse_secret(data, "model")?,
        })
    }

    /// The model in pi's JSON shape.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.model)
    }

    /// A copy with some fields replaced (same keywords as the constructor).
    #[pyo3(signature = (**changes))]
    fn replace(&self, changes: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut json = serde_json::to_value(&self.model).unwrap_or_default();
        if let (Some(changes), Some(object)) = (changes, json.as_object_mut()) {
            for (key, value) in changes.iter() {
                let key: String = key.extract()?;
                object.insert(camel_case(&key), from_py(&value)?);
            }
        }
        Ok(Self {
            model: parse_secret_value(json, "model")?,
        })
    }

    #[getter]
    fn id(&self) -> &str {
        &self.model.id
    }

    #[getter]
    fn name(&self) -> &str {
        &self.model.name
    }

    #[getter]
    fn api(&self) -> &str {
        &self.model.api
    }

    #[getter]
    fn provider(&self) -> &str {
        &self.model.provider
    }

    #[getter]
    fn base_url(&self) -> &str {
        &self.model.base_url
    }

    #[getter]
    fn reasoning(&self) -> bool {
        self.model.reasoning
    }

    #[getter]
    fn input<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.model.input)
    }

    #[getter]
    fn cost<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.model.cost)
    }

    #[getter]
    fn context_window(&self) -> u64 {
        self.model.context_window
    }

    #[getter]
    fn max_tokens(&self) -> u64 {
        self.model.max_tokens
    }

    #[getter]
    fn headers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        serde_to_py(py, &self.model.headers)
    }

    #[getter]
    fn compat<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.model.compat {
            Some(compat) => to_py(py, compat),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Equal models hash equal: the hash covers the identifying fields (`==` compares all).
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let model = &self.model;
        (&model.api, &model.provider, &model.id, &model.base_url).hash(&mut hasher);
        hasher.finish()
    }

    /// Pickles as pi's JSON shape, rebuilt by `Model.from_dict`.
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let from_dict = slf.get_type().getattr("from_dict")?;
        Ok((from_dict, (serde_to_py(slf.py(), &slf.get().model)?,)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Model(id={:?}, api={:?}, provider={:?}, base_url={:?})",
            self.model.id, self.model.api, self.model.provider, self.model.base_url
        )
    }
}

/// The catalog model `id` of `provider` (pi's `getModel`), or `None`.
#[pyfunction]
pub(crate) fn get_model(provider: &str, id: &str) -> Option<PyModel> {
    pi_agent::ai::get_model(provider, id).map(|model| PyModel { model })
}

/// Every catalog model of `provider`, sorted by id (pi's `getModels`).
#[pyfunction]
pub(crate) fn get_models(provider: &str) -> Vec<PyModel> {
    pi_agent::ai::get_models(provider)
        .into_iter()
        .map(|model| PyModel { model })
        .collect()
}

/// The providers that have catalog models, sorted (pi's `getProviders`).
#[pyfunction]
pub(crate) fn get_providers() -> Vec<String> {
    pi_agent::ai::get_providers()
}

/// The catalog model named `"provider/model-id"`, or `None`.
#[pyfunction]
pub(crate) fn resolve_model(spec: &str) -> Option<PyModel> {
    pi_agent::ai::resolve_model(spec).map(|model| PyModel { model })
}
