//! JSON values <-> Python objects, in one place. Messages, events and contexts cross the
//! boundary as plain dicts shaped exactly like pi's JSON (core's serde shapes), so this is the
//! only conversion the binding needs.
//!
//! Both directions are safe on hostile input: Python → JSON refuses objects nested deeper than
//! [`MAX_DEPTH`] (which also catches self-referential ones) instead of overflowing the stack,
//! and JSON → Python builds the objects without recursion.

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::errors::{type_error, type_name, value_error, with_field};

/// How deeply a Python object may nest to become JSON: serde_json's own limit for JSON text,
/// so whatever is accepted here can also be written to a snapshot and read back.
pub(crate) const MAX_DEPTH: usize = 128;

/// How an object of one of the binding's classes reads as JSON (a `Model` as its pi JSON, a
/// `Tool` as its definition); `None` when `obj` is not of that class.
pub(crate) type ClassJson = fn(&Bound<'_, PyAny>) -> Option<PyResult<Value>>;

/// The classes [`from_py`] reads besides plain values. They register at import
/// ([`register_json_classes`]): this module knows JSON, not the classes.
static JSON_CLASSES: OnceLock<Vec<ClassJson>> = OnceLock::new();

/// Sets the classes [`from_py`] reads (once, at import).
pub(crate) fn register_json_classes(classes: Vec<ClassJson>) {
    let _ = JSON_CLASSES.set(classes);
}

/// A JSON value on its way to Python (converted once attached, e.g. when an async result is
/// delivered to the event loop).
pub(crate) struct Json(pub(crate) Value);

impl<'py> IntoPyObject<'py> for Json {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.0)
    }
}

fn scalar<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(_) => PyList::empty(py).into_any(),
        Value::Object(_) => PyDict::new(py).into_any(),
    })
}

/// Builds the Python object for `value` (dicts, lists, str, int, float, bool, None), without
/// recursion: containers are created empty and filled from a work list.
pub(crate) fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let root = scalar(py, value)?;
    let mut work: Vec<(&Value, Bound<'py, PyAny>)> = vec![(value, root.clone())];
    while let Some((value, target)) = work.pop() {
        match value {
            Value::Array(items) => {
                let list = target.cast::<PyList>()?;
                for item in items {
                    let child = scalar(py, item)?;
                    list.append(&child)?;
                    if matches!(item, Value::Array(_) | Value::Object(_)) {
                        work.push((item, child));
                    }
                }
            }
            Value::Object(map) => {
                let dict = target.cast::<PyDict>()?;
                for (key, item) in map {
                    let child = scalar(py, item)?;
                    dict.set_item(key, &child)?;
                    if matches!(item, Value::Array(_) | Value::Object(_)) {
                        work.push((item, child));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(root)
}

/// Builds the Python object of `value` straight from its serde form (the same object as
/// [`to_py`] of its `serde_json::Value`, without that copy in between).
pub(crate) fn serde_to_py<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    crate::py_serde::to_py_direct(py, value)
}

/// Reads a JSON value from a Python object. Accepts what `json.dumps` accepts (dict with str
/// keys, list, tuple, str, int, float, bool, None), plus `Model` and `Tool` objects (as their
/// pi JSON), so a context can list tools directly. Deeper than [`MAX_DEPTH`] levels (or
/// self-referential) is a `ValueError`.
pub(crate) fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    from_py_at(obj, 0)
}

fn from_py_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(value_error(
            None,
            format!("integer {obj} is too large for JSON"),
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let value = f.value();
        return Number::from_f64(value).map(Value::Number).ok_or_else(|| {
            value_error(
                None,
                format!("out of range float values are not JSON compliant: {value}"),
            )
        });
    }
    let container = obj.is_instance_of::<PyDict>()
        || obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>();
    if container && depth >= MAX_DEPTH {
        return Err(value_error(
            None,
            format!(
                "cannot convert to JSON: nested more than {MAX_DEPTH} levels deep (or \
                 self-referential)"
            ),
        ));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let key = key.cast::<PyString>().map_err(|_| {
                type_error(None, format!("keys must be str, not {}", type_name(&key)))
            })?;
            map.insert(key.to_cow()?.into_owned(), from_py_at(&item, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if container {
        // A list or a tuple (a dict returned above).
        return obj
            .try_iter()?
            .map(|item| from_py_at(&item?, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    for class_json in JSON_CLASSES.get().into_iter().flatten() {
        if let Some(value) = class_json(obj) {
            return value;
        }
    }
    Err(type_error(
        None,
        format!("Object of type {} is not JSON serializable", type_name(obj)),
    ))
}

/// Reads `obj` as a `T` through its JSON shape; a shape error is a `PiValueError` naming
/// `what` (its `field` is `what` as an identifier, see [`field_of`]).
pub(crate) fn parse<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let value = from_py(obj).map_err(|error| with_field(error, &field_of(what)))?;
    parse_value(value, what)
}

/// Deserializes `value` as a `T`; a shape error is a `PiValueError` naming `what`.
pub(crate) fn parse_value<T: DeserializeOwned>(value: Value, what: &str) -> PyResult<T> {
    serde_json::from_value(value)
        .map_err(|error| value_error(Some(&field_of(what)), format!("invalid {what}: {error}")))
}

/// [`parse`] for values that hold credentials: the error never quotes a value (a token given
/// where a dict goes would otherwise be in the message).
pub(crate) fn parse_secret<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let value = from_py(obj).map_err(|error| with_field(error, &field_of(what)))?;
    parse_secret_value(value, what)
}

/// [`parse_value`] for values that hold credentials (see [`parse_secret`]).
pub(crate) fn parse_secret_value<T: DeserializeOwned>(value: Value, what: &str) -> PyResult<T> {
    serde_json::from_value(value).map_err(|error| {
        value_error(
            Some(&field_of(what)),
            format!(
                "invalid {what}: {}",
                pi_agent::ai::strict_json::error_without_values(&error)
            ),
        )
    })
}

/// The field name of a value described as `what` in messages: `"tool call"` → `tool_call`,
/// `"convert_to_llm result (LLM messages)"` → `convert_to_llm_result`.
pub(crate) fn field_of(what: &str) -> String {
    let head = what.split(" (").next().unwrap_or(what);
    head.trim().replace(' ', "_")
}

/// `max_tokens` → `maxTokens`: Python's keyword names to pi's JSON names, mechanically.
pub(crate) fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `maxTokens` → `max_tokens`: the inverse of [`camel_case`] for pi's names.
pub(crate) fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
