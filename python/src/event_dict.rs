//! Core's stream and agent events as Python dicts, built directly: the per-delta events (most
//! of a stream) use interned keys and tags, so a text delta costs one dict and one `str` of new
//! text, and an agent's `message_update` wraps the same dict. The dicts are exactly what serde
//! makes of the event (same keys, same order: the tag first, then the fields as declared);
//! every other event goes through [`serde_to_py`], which builds the objects straight from the
//! serde form (no `serde_json::Value` in between).

use pi_agent::agent::AgentEvent;
use pi_agent::ai::{AssistantMessage, AssistantMessageEvent, Message};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use pyo3::{PyTypeInfo, intern};

use crate::convert::serde_to_py;

/// One stream event on its way to Python (converted once attached, like
/// [`Json`](crate::convert::Json)).
pub(crate) struct PyEvent(pub(crate) AssistantMessageEvent);

impl<'py> IntoPyObject<'py> for PyEvent {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        event_to_py(py, &self.0)
    }
}

/// `{"type": kind, "contentIndex": index, "delta": delta}`.
fn delta_dict<'py>(
    py: Python<'py>,
    kind: &Bound<'py, PyString>,
    index: usize,
    delta: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "type"), kind)?;
    dict.set_item(intern!(py, "contentIndex"), index)?;
    dict.set_item(intern!(py, "delta"), PyString::new(py, delta))?;
    Ok(dict.into_any())
}

/// `{"type": kind, "contentIndex": index}`.
fn start_dict<'py>(
    py: Python<'py>,
    kind: &Bound<'py, PyString>,
    index: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "type"), kind)?;
    dict.set_item(intern!(py, "contentIndex"), index)?;
    Ok(dict.into_any())
}

/// The pi-shaped dict of `event`.
pub(crate) fn event_to_py<'py>(
    py: Python<'py>,
    event: &AssistantMessageEvent,
) -> PyResult<Bound<'py, PyAny>> {
    match event {
        AssistantMessageEvent::TextDelta {
            content_index,
            delta,
        } => delta_dict(py, intern!(py, "text_delta"), *content_index, delta),
        AssistantMessageEvent::ThinkingDelta {
            content_index,
            delta,
        } => delta_dict(py, intern!(py, "thinking_delta"), *content_index, delta),
        AssistantMessageEvent::ToolCallDelta {
            content_index,
            delta,
        } => delta_dict(py, intern!(py, "toolcall_delta"), *content_index, delta),
        AssistantMessageEvent::TextStart { content_index } => {
            start_dict(py, intern!(py, "text_start"), *content_index)
        }
        AssistantMessageEvent::ThinkingStart { content_index } => {
            start_dict(py, intern!(py, "thinking_start"), *content_index)
        }
        _ => serde_to_py(py, event),
    }
}

/// One agent event on its way to Python. With `partial`, the snapshot of the message so far
/// that a `message_update` carries as `message` is taken when the value is made (when the event
/// is received), as `AgentEvent::to_json` takes it; the dict is built once attached.
pub(crate) struct PyAgentEvent {
    event: AgentEvent,
    message: Option<AssistantMessage>,
}

impl PyAgentEvent {
    /// `event`, with its partial message when `partial` and the event is a `message_update`.
    pub(crate) fn new(event: AgentEvent, partial: bool) -> Self {
        let message = match &event {
            AgentEvent::MessageUpdate { partial: live, .. } if partial => Some(live.snapshot()),
            _ => None,
        };
        Self { event, message }
    }
}

impl<'py> IntoPyObject<'py> for PyAgentEvent {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        agent_event_to_py(
            py,
            &self.event,
            self.message.map(Message::Assistant).as_ref(),
        )
    }
}

/// The pi-shaped dict of an agent event: what `AgentEvent::to_json` gives, `message` (the
/// partial message of a `message_update`) last when given.
pub(crate) fn agent_event_to_py<'py>(
    py: Python<'py>,
    event: &AgentEvent,
    message: Option<&Message>,
) -> PyResult<Bound<'py, PyAny>> {
    let AgentEvent::MessageUpdate {
        assistant_message_event,
        ..
    } = event
    else {
        return serde_to_py(py, event);
    };
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "type"), intern!(py, "message_update"))?;
    dict.set_item(
        intern!(py, "assistantMessageEvent"),
        event_to_py(py, assistant_message_event)?,
    )?;
    if let Some(message) = message {
        dict.set_item(intern!(py, "message"), serde_to_py(py, message)?)?;
    }
    Ok(dict.into_any())
}

/// An awaitable that is already done: `await` gives `value` (or raises `error`) at once,
/// without a loop future (what `async for` over a stream whose next event is already there
/// needs; an asyncio future would cost a loop look-up and two method calls per event).
#[pyclass(module = "pi_agent", name = "_Ready")]
pub(crate) struct Ready {
    outcome: Option<PyResult<Py<PyAny>>>,
}

impl Ready {
    /// The awaitable for `outcome`.
    pub(crate) fn awaitable<'py>(
        py: Python<'py>,
        outcome: PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(Bound::new(
            py,
            Self {
                outcome: Some(outcome.map(Bound::unbind)),
            },
        )?
        .into_any())
    }
}

#[pymethods]
impl Ready {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// The first step ends the await with the outcome (`StopIteration(value)`, or the error);
    /// awaiting it again is a `RuntimeError`, as for a finished coroutine.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.outcome.take() {
            Some(Ok(value)) => Err(PyErr::from_type(
                pyo3::exceptions::PyStopIteration::type_object(py),
                (value,),
            )),
            Some(Err(error)) => Err(error),
            None => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "cannot reuse already awaited event",
            )),
        }
    }
}
