//! Agent hooks as Python functions: `before_tool_call`, `after_tool_call`,
//! `should_stop_after_turn`, `transform_context`, `convert_to_llm` and `get_api_key`, made into
//! core's hook types. They may be sync or `async def` and run where tools run ([`callable`]);
//! contexts are core's serde types as dicts, results are parsed into core's result types. A
//! hook that accepts a second positional argument gets the run's `Signal` too (pi passes it).
//!
//! Failures take core's paths: a hook that raises (or returns something that is not its result
//! type) returns core's `HookError` — for the tool-call hooks an error result with the
//! exception's message (pi's rule), for the others a failed run whose message says
//! `"<hook> raised <Type>: <message>"`.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use pi_agent::agent::{
    AfterToolCall, AfterToolCallResult, Agent, AgentMessage, BeforeToolCall, BeforeToolCallResult,
    GetApiKey, HookError, ShouldStopAfterTurn, TransformContext,
};
use pi_agent::ai::{ApiKey, Message};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::bridge::helper;
use crate::callable::{self, EXITING, RunScope, exception_message, raised};
use crate::convert::{from_py, parse, parse_value, serde_to_py};
use crate::errors::optional_callable;
use crate::signal::PySignal;
use crate::stream_fn;
use crate::tools::text_content_to_blocks;

/// The hooks an agent can have.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HookKind {
    BeforeToolCall,
    AfterToolCall,
    ShouldStopAfterTurn,
    TransformContext,
    ConvertToLlm,
    GetApiKey,
    StreamFn,
}

impl HookKind {
    /// Every hook, in the order of `Agent(...)`'s keywords (and of [`Hooks`]' slots).
    pub(crate) const ALL: [Self; 7] = [
        Self::BeforeToolCall,
        Self::AfterToolCall,
        Self::ShouldStopAfterTurn,
        Self::TransformContext,
        Self::ConvertToLlm,
        Self::GetApiKey,
        Self::StreamFn,
    ];

    /// The hook's Python name (its keyword and attribute).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::BeforeToolCall => "before_tool_call",
            Self::AfterToolCall => "after_tool_call",
            Self::ShouldStopAfterTurn => "should_stop_after_turn",
            Self::TransformContext => "transform_context",
            Self::ConvertToLlm => "convert_to_llm",
            Self::GetApiKey => "get_api_key",
            Self::StreamFn => "stream_fn",
        }
    }
}

/// A Python hook function and whether it takes the signal as a second argument.
#[derive(Clone)]
pub(crate) struct PyHook {
    function: Arc<Py<PyAny>>,
    with_signal: bool,
}

impl PyHook {
    pub(crate) fn new(function: &Bound<'_, PyAny>) -> PyResult<Self> {
        let with_signal = helper(function.py(), "takes_second_argument")?
            .call1((function,))?
            .is_truthy()?;
        Ok(Self {
            function: Arc::new(function.clone().unbind()),
            with_signal,
        })
    }

    /// A hook keyword argument: absent or `None` for none, a `TypeError` if it is not callable.
    pub(crate) fn argument(
        function: Option<&Bound<'_, PyAny>>,
        kind: HookKind,
    ) -> PyResult<Option<Self>> {
        optional_callable(function, kind.name())?
            .map(Self::new)
            .transpose()
    }

    /// The function and its arguments: `(argument,)` or `(argument, signal)`.
    fn call_with<'py>(
        &self,
        py: Python<'py>,
        argument: Bound<'py, PyAny>,
        signal: &CancellationToken,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let args = if self.with_signal {
            let signal = Bound::new(py, PySignal::new(signal.clone()))?.into_any();
            PyTuple::new(py, [argument, signal])?
        } else {
            PyTuple::new(py, [argument])?
        };
        Ok((self.function.bind(py).clone(), args))
    }
}

/// The Python functions installed as an agent's hooks, kept for the getters.
#[derive(Default)]
pub(crate) struct Hooks([Option<PyHook>; HookKind::ALL.len()]);

impl Hooks {
    /// The function installed as hook `kind`.
    pub(crate) fn get(&self, py: Python<'_>, kind: HookKind) -> Option<Py<PyAny>> {
        self.0[kind as usize]
            .as_ref()
            .map(|hook| hook.function.clone_ref(py))
    }

    /// The installed functions (for the agent's `__traverse__`): each is one reference,
    /// shared by this table and core's hook closure.
    pub(crate) fn functions(&self) -> Vec<Arc<Py<PyAny>>> {
        self.0
            .iter()
            .flatten()
            .map(|hook| Arc::clone(&hook.function))
            .collect()
    }

    /// Installs `hook` (made by [`PyHook::argument`]) as `agent`'s hook `kind`; `None` clears
    /// it. Runs no Python: call it with the GIL released (see `PyAgent::set_hook`).
    pub(crate) fn set(
        &mut self,
        agent: &Agent,
        scope: &RunScope,
        kind: HookKind,
        hook: Option<PyHook>,
    ) -> PyResult<()> {
        self.0[kind as usize] = hook.clone();
        let scope = scope.clone();
        match kind {
            HookKind::BeforeToolCall => agent.update_hooks(|hooks| {
                hooks.before_tool_call = hook.map(|hook| before_tool_call(hook, scope));
            }),
            HookKind::AfterToolCall => agent.update_hooks(|hooks| {
                hooks.after_tool_call = hook.map(|hook| after_tool_call(hook, scope));
            }),
            HookKind::ShouldStopAfterTurn => agent.update_hooks(|hooks| {
                hooks.should_stop_after_turn = hook.map(|hook| should_stop_after_turn(hook, scope));
            }),
            HookKind::TransformContext | HookKind::ConvertToLlm => {
                let transform = self.0[HookKind::TransformContext as usize].clone();
                let convert = self.0[HookKind::ConvertToLlm as usize].clone();
                let installed = (transform.is_some() || convert.is_some())
                    .then(|| transform_context(transform, convert, scope));
                agent.update_hooks(|hooks| hooks.transform_context = installed);
            }
            HookKind::GetApiKey => agent.update_hooks(|hooks| {
                hooks.get_api_key = hook.map(|hook| get_api_key(hook, scope));
            }),
            HookKind::StreamFn => agent.update_hooks(|hooks| {
                hooks.stream_fn = hook.map(|hook| stream_fn::stream_fn(hook.function, scope));
            }),
        }
        Ok(())
    }
}

/// A core context as the hook's dict argument.
fn context_arg<'py, T: Serialize>(py: Python<'py>, context: &T) -> PyResult<Bound<'py, PyAny>> {
    serde_to_py(py, context)
}

/// Calls a hook with a core context (as a dict) and the run's signal; `read` turns its answer
/// into the hook's result, and a failure becomes a `HookError` with `describe`'s text.
fn call_with_context<C, R>(
    hook: &PyHook,
    scope: &RunScope,
    context: C,
    signal: CancellationToken,
    read: fn(&Bound<'_, PyAny>) -> PyResult<R>,
    describe: fn(Python<'_>, &PyErr) -> String,
) -> BoxFuture<'static, Result<R, HookError>>
where
    C: Serialize + Send + 'static,
    R: Send + 'static,
{
    let hook = hook.clone();
    callable::call(
        scope.current(),
        move |py| hook.call_with(py, context_arg(py, &context)?, &signal),
        move |py, outcome| {
            outcome
                .and_then(|value| read(&value))
                .map_err(|error| HookError::new(describe(py, &error)))
        },
        || Err(HookError::new(EXITING)),
    )
    .boxed()
}

/// `before_tool_call(context[, signal])` → `None` or a `BeforeToolCallResult` dict.
pub(crate) fn before_tool_call(hook: PyHook, scope: RunScope) -> BeforeToolCall {
    fn read(value: &Bound<'_, PyAny>) -> PyResult<Option<BeforeToolCallResult>> {
        if value.is_none() {
            return Ok(None);
        }
        parse::<BeforeToolCallResult>(value, "before_tool_call result").map(Some)
    }
    Arc::new(move |context, signal| {
        call_with_context(&hook, &scope, context, signal, read, exception_message)
    })
}

/// `after_tool_call(context[, signal])` → `None` or an `AfterToolCallResult` dict (`content`
/// may be a str).
pub(crate) fn after_tool_call(hook: PyHook, scope: RunScope) -> AfterToolCall {
    fn read(value: &Bound<'_, PyAny>) -> PyResult<Option<AfterToolCallResult>> {
        if value.is_none() {
            return Ok(None);
        }
        let mut change = from_py(value)?;
        text_content_to_blocks(&mut change);
        parse_value::<AfterToolCallResult>(change, "after_tool_call result").map(Some)
    }
    Arc::new(move |context, signal| {
        call_with_context(&hook, &scope, context, signal, read, exception_message)
    })
}

/// `should_stop_after_turn(context[, signal])` → truthy to stop.
fn should_stop_after_turn(hook: PyHook, scope: RunScope) -> ShouldStopAfterTurn {
    fn read(value: &Bound<'_, PyAny>) -> PyResult<bool> {
        value.is_truthy()
    }
    fn describe(py: Python<'_>, error: &PyErr) -> String {
        raised(py, HookKind::ShouldStopAfterTurn.name(), error)
    }
    Arc::new(move |context, signal| {
        call_with_context(&hook, &scope, context, signal, read, describe)
    })
}

/// One step of the context pipeline: `transform_context(messages[, signal])` → messages, or
/// `convert_to_llm(messages[, signal])` → LLM messages.
async fn context_step(
    hook: PyHook,
    kind: HookKind,
    scope: &RunScope,
    messages: Vec<AgentMessage>,
    signal: CancellationToken,
) -> Result<Vec<AgentMessage>, HookError> {
    callable::call(
        scope.current(),
        move |py| hook.call_with(py, serde_to_py(py, &messages)?, &signal),
        move |py, outcome| {
            let messages = outcome.and_then(|value| match kind {
                HookKind::ConvertToLlm => {
                    parse::<Vec<Message>>(&value, "convert_to_llm result (LLM messages)")
                        .map(|messages| messages.into_iter().map(AgentMessage::from).collect())
                }
                _ => parse::<Vec<AgentMessage>>(&value, "transform_context result"),
            });
            messages.map_err(|error| HookError::new(raised(py, kind.name(), &error)))
        },
        || Err(HookError::new(EXITING)),
    )
    .await
}

/// Core's `transform_context`: pi's pipeline before each model call, `transform_context` then
/// `convert_to_llm` (both awaited, both cut short by an abort). What `convert_to_llm` returns
/// are LLM messages, which core's default conversion then keeps as they are.
fn transform_context(
    transform: Option<PyHook>,
    convert: Option<PyHook>,
    scope: RunScope,
) -> TransformContext {
    Arc::new(move |messages, signal| {
        let (transform, convert, scope) = (transform.clone(), convert.clone(), scope.clone());
        async move {
            let mut messages = messages;
            if let Some(transform) = transform {
                messages = context_step(
                    transform,
                    HookKind::TransformContext,
                    &scope,
                    messages,
                    signal.clone(),
                )
                .await?;
            }
            if let Some(convert) = convert {
                messages =
                    context_step(convert, HookKind::ConvertToLlm, &scope, messages, signal).await?;
            }
            Ok(messages)
        }
        .boxed()
    })
}

/// `get_api_key(provider)` → a key, or `None` for the agent's `api_key` / the environment.
fn get_api_key(hook: PyHook, scope: RunScope) -> GetApiKey {
    Arc::new(move |provider| {
        let function = Arc::clone(&hook.function);
        let provider = provider.to_owned();
        callable::call(
            scope.current(),
            move |py| {
                let args = PyTuple::new(py, [provider])?;
                Ok((function.bind(py).clone(), args))
            },
            |py, outcome| {
                outcome
                    .and_then(|value| value.extract::<Option<String>>())
                    .map(|key| key.map(ApiKey::new))
                    .map_err(|error| HookError::new(raised(py, HookKind::GetApiKey.name(), &error)))
            },
            || Err(HookError::new(EXITING)),
        )
        .boxed()
    })
}
