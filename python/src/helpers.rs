//! pi-ai's helper functions, each core's: cost, model comparison, thinking levels, API keys
//! from the environment, transcript hand-off between models, tool-call validation and the
//! streaming JSON parser.

use std::cell::RefCell;

use pi_agent::ai::{self, Message, ThinkingLevel, Tool, ToolCall, Usage, ValidationError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{Json, parse, parse_value, serde_to_py, to_py};
use crate::errors::ToolValidationError;
use crate::model::PyModel;

/// The cost of `usage` with `model`'s prices (pi's `calculateCost`): returns the cost dict,
/// and, like pi, stores it in `usage["cost"]` when `usage` is a dict.
#[pyfunction]
pub(crate) fn calculate_cost<'py>(
    model: &Bound<'py, PyAny>,
    usage: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let model = PyModel::extract(model)?;
    let mut parsed: Usage = parse(usage, "usage")?;
    let cost = model.calculate_cost(&mut parsed);
    let cost = serde_to_py(usage.py(), &cost)?;
    if let Ok(dict) = usage.cast::<PyDict>() {
        dict.set_item("cost", &cost)?;
    }
    Ok(cost)
}

/// Whether two models are the same (pi's `modelsAreEqual`: same id and provider; `None` is
/// never equal).
#[pyfunction]
#[pyo3(signature = (a, b))]
pub(crate) fn models_are_equal(
    a: Option<&Bound<'_, PyAny>>,
    b: Option<&Bound<'_, PyAny>>,
) -> PyResult<bool> {
    let read = |model: Option<&Bound<'_, PyAny>>| {
        model
            .filter(|model| !model.is_none())
            .map(PyModel::extract)
            .transpose()
    };
    Ok(ai::models_are_equal(read(a)?.as_ref(), read(b)?.as_ref()))
}

/// The thinking levels `model` supports, `"off"` first (pi's `getSupportedThinkingLevels`).
#[pyfunction]
pub(crate) fn get_supported_thinking_levels(model: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let model = PyModel::extract(model)?;
    Ok(ai::get_supported_thinking_levels(&model)
        .into_iter()
        .map(|level| level.as_str().to_owned())
        .collect())
}

/// The nearest level `model` supports (pi's `clampThinkingLevel`).
#[pyfunction]
pub(crate) fn clamp_thinking_level(model: &Bound<'_, PyAny>, level: &str) -> PyResult<String> {
    let model = PyModel::extract(model)?;
    let level: ThinkingLevel = parse_value(level.into(), "thinking level")?;
    Ok(ai::clamp_thinking_level(&model, level).as_str().to_owned())
}

/// The API key for `provider` from its environment variables (pi's `getEnvApiKey`), or
/// `None`.
#[pyfunction]
pub(crate) fn get_env_api_key(provider: &str) -> Option<String> {
    ai::get_env_api_key(provider).map(|key| key.expose().to_owned())
}

/// The names of `provider`'s key variables that are set (pi's `findEnvKeys`).
#[pyfunction]
pub(crate) fn find_env_keys(provider: &str) -> Vec<&'static str> {
    ai::find_env_keys(provider)
}

/// The messages as they should be sent to `model` (pi's `transformMessages`): thinking of
/// other models becomes text, tool-call ids are rewritten by `normalize_tool_call_id(id)`
/// when given, images the model cannot read are replaced, orphaned tool calls get results.
#[pyfunction]
#[pyo3(signature = (messages, model, normalize_tool_call_id = None))]
pub(crate) fn transform_messages<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
    model: &Bound<'py, PyAny>,
    normalize_tool_call_id: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let messages: Vec<Message> = parse(messages, "messages")?;
    let model = PyModel::extract(model)?;
    let Some(normalize) = normalize_tool_call_id.filter(|f| !f.is_none()) else {
        return serde_to_py(
            py,
            &ai::transform_messages_borrowed(&messages, &model, None),
        );
    };
    // Called synchronously on this thread; the first exception is raised afterwards.
    let failure: RefCell<Option<PyErr>> = RefCell::new(None);
    let rename = |id: &str| -> String {
        if failure.borrow().is_some() {
            return id.to_owned();
        }
        match normalize
            .call1((id,))
            .and_then(|renamed| renamed.extract::<String>())
        {
            Ok(renamed) => renamed,
            Err(error) => {
                *failure.borrow_mut() = Some(error);
                id.to_owned()
            }
        }
    };
    let transformed = ai::transform_messages_borrowed(&messages, &model, Some(&rename));
    if let Some(error) = failure.into_inner() {
        return Err(error);
    }
    serde_to_py(py, &transformed)
}

/// The arguments of `tool_call` validated (and coerced, AJV-style) against the schema of the
/// tool it names among `tools` (pi's `validateToolCall`); `ToolValidationError` with pi's
/// message otherwise.
#[pyfunction]
pub(crate) fn validate_tool_call(
    tools: &Bound<'_, PyAny>,
    tool_call: &Bound<'_, PyAny>,
) -> PyResult<Json> {
    let tools: Vec<Tool> = parse(tools, "tools")?;
    let call: ToolCall = parse(tool_call, "tool call")?;
    ai::validate_tool_call(&tools, &call)
        .map(Json)
        .map_err(validation_error)
}

/// The arguments of `tool_call` validated against `tool`'s schema (pi's
/// `validateToolArguments`).
#[pyfunction]
pub(crate) fn validate_tool_arguments(
    tool: &Bound<'_, PyAny>,
    tool_call: &Bound<'_, PyAny>,
) -> PyResult<Json> {
    let tool: Tool = parse(tool, "tool")?;
    let call: ToolCall = parse(tool_call, "tool call")?;
    ai::validate_tool_arguments(&tool, &call)
        .map(Json)
        .map_err(validation_error)
}

fn validation_error(error: ValidationError) -> PyErr {
    ToolValidationError::new_err(error.to_string())
}

/// Parses possibly incomplete JSON as it streams in (pi's `parseStreamingJson`): the value so
/// far, `{}` when nothing parses yet.
#[pyfunction]
pub(crate) fn parse_streaming_json<'py>(
    py: Python<'py>,
    text: &str,
) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &ai::parse_streaming_json(text))
}

/// pi's `defaultConvertToLlm`: the user, assistant and tool-result messages of a transcript
/// (custom messages dropped).
#[pyfunction]
pub(crate) fn default_convert_to_llm<'py>(
    py: Python<'py>,
    messages: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let messages: Vec<pi_agent::agent::AgentMessage> = parse(messages, "messages")?;
    serde_to_py(py, &pi_agent::agent::default_convert_to_llm(&messages))
}
