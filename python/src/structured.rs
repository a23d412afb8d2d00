//! Typed answers' JSON helpers for `pi_agent._structured` (which converts Python types; the
//! request mapping, validation and re-asks are core's).

use pi_agent::ai::{OutputSchema, parse_output};
use pyo3::prelude::*;

use crate::convert::{Json, from_py};
use crate::errors::value_error;

/// core's `parse_output`: an answer's text as JSON (one Markdown code fence allowed).
#[pyfunction]
pub(crate) fn _parse_output(text: &str) -> PyResult<Json> {
    parse_output(text)
        .map(Json)
        .map_err(|error| value_error(Some("output"), format!("the answer is not JSON: {error}")))
}

/// core's `OutputSchema::from_json_value`: an `{"name", "schema", "strict"}` dict or a bare JSON
/// Schema, as core's `outputSchema` dict.
#[pyfunction]
pub(crate) fn _output_schema(schema: &Bound<'_, PyAny>) -> PyResult<Json> {
    let schema = OutputSchema::from_json_value(from_py(schema)?)
        .map_err(|error| value_error(Some("output_type"), error.to_string()))?;
    serde_json::to_value(schema)
        .map(Json)
        .map_err(|error| value_error(Some("output_type"), error.to_string()))
}
