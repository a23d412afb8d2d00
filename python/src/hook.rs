//! Agent hooks as Python functions: `before_tool_call`, `after_tool_call`,
//! `should_stop_after_turn`, `transform_context` and `get_api_key`, made into core's hook
//! types. They may be sync or `async def` and run where tools run ([`callable`]); contexts and
//! results cross as pi-shaped dicts.
//!
//! Failures take core's paths. A `before_tool_call` or `after_tool_call` that raises (or
//! returns something that is not a result) gives the call an error result with the
//! exception's message: core's `Err`, pi's rule for these two. The other three have no error
//! channel, in pi or in core, so a raise fails the run the way core handles a hook that
//! panics: the run ends with an assistant message whose `stopReason` is `"error"` and whose
//! `errorMessage` is `"<hook> raised <Type>: <message>"`, and `prompt()` does not raise.

use std::sync::Arc;

use futures::FutureExt;
use pi_agent::agent::{
    AfterToolCall, AfterToolCallResult, Agent, AgentMessage, BeforeToolCall, BeforeToolCallResult,
    GetApiKey, HookError, ShouldStopAfterTurn, TransformContext,
};
use pi_agent::ai::types::UserContent;
use pi_agent::ai::{ApiKey, Message};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::callable::{self, CallerLoop, exception_message, raised};
use crate::convert::{from_py, parse, parse_value, to_py, type_name};
use crate::tools::text_content_to_blocks;

/// The hooks an agent can have.
#[derive(Clone, Copy, Debug)]
pub(crate) enum HookKind {
    BeforeToolCall,
    AfterToolCall,
    ShouldStopAfterTurn,
    TransformContext,
    GetApiKey,
}

impl HookKind {
    fn name(self) -> &'static str {
        match self {
            Self::BeforeToolCall => "before_tool_call",
            Self::AfterToolCall => "after_tool_call",
            Self::ShouldStopAfterTurn => "should_stop_after_turn",
            Self::TransformContext => "transform_context",
            Self::GetApiKey => "get_api_key",
        }
    }
}

/// The Python functions installed as an agent's hooks, kept for the getters.
#[derive(Default)]
pub(crate) struct Hooks([Option<Arc<Py<PyAny>>>; 5]);

impl Hooks {
    /// The function installed as hook `kind`.
    pub(crate) fn get(&self, py: Python<'_>, kind: HookKind) -> Option<Py<PyAny>> {
        self.0[kind as usize]
            .as_ref()
            .map(|function| function.clone_ref(py))
    }

    /// Installs `function` as `agent`'s hook `kind`; `None` clears it.
    pub(crate) fn set(
        &mut self,
        agent: &Agent,
        caller_loop: &CallerLoop,
        kind: HookKind,
        function: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let function = match function.filter(|function| !function.is_none()) {
            Some(function) if !function.is_callable() => {
                return Err(PyTypeError::new_err(format!(
                    "{} must be callable or None, not {}",
                    kind.name(),
                    type_name(function)
                )));
            }
            function => function.map(|function| Arc::new(function.clone().unbind())),
        };
        let hook = function.clone();
        let caller_loop = caller_loop.clone();
        match kind {
            HookKind::BeforeToolCall => {
                agent.update_hooks(|hooks| {
                    hooks.before_tool_call = hook.map(|f| before_tool_call(f, caller_loop));
                });
            }
            HookKind::AfterToolCall => {
                agent.update_hooks(|hooks| {
                    hooks.after_tool_call = hook.map(|f| after_tool_call(f, caller_loop));
                });
            }
            HookKind::ShouldStopAfterTurn => {
                agent.update_hooks(|hooks| {
                    hooks.should_stop_after_turn =
                        hook.map(|f| should_stop_after_turn(f, caller_loop));
                });
            }
            HookKind::TransformContext => {
                agent.update_hooks(|hooks| {
                    hooks.transform_context = hook.map(|f| transform_context(f, caller_loop));
                });
            }
            HookKind::GetApiKey => {
                agent.update_hooks(|hooks| {
                    hooks.get_api_key = hook.map(|f| get_api_key(f, caller_loop));
                });
            }
        }
        self.0[kind as usize] = function;
        Ok(())
    }
}

/// A Python exception's text as core's hook error (the run records it as a failure).
fn hook_error<T>(outcome: Result<T, String>) -> Result<T, HookError> {
    outcome.map_err(HookError::new)
}

/// What `before_tool_call` may return (every field optional).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BeforeDecision {
    #[serde(default)]
    block: bool,
    reason: Option<String>,
    args: Option<Value>,
}

/// `before_tool_call({"toolCall", "args", "assistantMessage"})` → `None` or
/// `{"block", "reason", "args"}`.
fn before_tool_call(function: Arc<Py<PyAny>>, caller_loop: CallerLoop) -> BeforeToolCall {
    Arc::new(move |context, _signal| {
        let function = Arc::clone(&function);
        let context = json!({
            "toolCall": context.tool_call,
            "args": context.args,
            "assistantMessage": Message::Assistant(context.assistant_message),
        });
        callable::call(
            caller_loop.current(),
            move |py| function.bind(py).call1((to_py(py, &context)?,)),
            |py, outcome| {
                let decision = outcome
                    .and_then(|value| {
                        if value.is_none() {
                            return Ok(None);
                        }
                        parse::<BeforeDecision>(&value, "before_tool_call result").map(Some)
                    })
                    .map_err(|error| exception_message(py, &error))?;
                Ok(decision.map(|decision| BeforeToolCallResult {
                    block: decision.block,
                    reason: decision.reason,
                    args: decision.args,
                }))
            },
        )
        .map(hook_error)
        .boxed()
    })
}

/// What `after_tool_call` may return: each field present replaces the original whole.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AfterChange {
    content: Option<Vec<UserContent>>,
    /// Present (even `None`) replaces the details.
    #[serde(default, deserialize_with = "present")]
    details: Option<Value>,
    is_error: Option<bool>,
    terminate: Option<bool>,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// `after_tool_call({"toolCall", "args", "result", "isError", "assistantMessage"})` → `None`
/// or `{"content", "details", "isError", "terminate"}` (`content` may be a str).
fn after_tool_call(function: Arc<Py<PyAny>>, caller_loop: CallerLoop) -> AfterToolCall {
    Arc::new(move |context, _signal| {
        let function = Arc::clone(&function);
        let context = json!({
            "toolCall": context.tool_call,
            "args": context.args,
            "result": context.result,
            "isError": context.is_error,
            "assistantMessage": Message::Assistant(context.assistant_message),
        });
        callable::call(
            caller_loop.current(),
            move |py| function.bind(py).call1((to_py(py, &context)?,)),
            |py, outcome| {
                let change = outcome
                    .and_then(|value| {
                        if value.is_none() {
                            return Ok(None);
                        }
                        let mut change = from_py(&value)?;
                        text_content_to_blocks(&mut change);
                        parse_value::<AfterChange>(change, "after_tool_call result").map(Some)
                    })
                    .map_err(|error| exception_message(py, &error))?;
                Ok(change.map(|change| AfterToolCallResult {
                    content: change.content,
                    details: change.details,
                    is_error: change.is_error,
                    terminate: change.terminate,
                }))
            },
        )
        .map(hook_error)
        .boxed()
    })
}

/// `should_stop_after_turn({"message", "toolResults", "newMessages"})` → truthy to stop.
fn should_stop_after_turn(
    function: Arc<Py<PyAny>>,
    caller_loop: CallerLoop,
) -> ShouldStopAfterTurn {
    Arc::new(move |context, _signal| {
        let function = Arc::clone(&function);
        let context = json!({
            "message": Message::Assistant(context.message),
            "toolResults": context.tool_results,
            "newMessages": context.new_messages,
        });
        callable::call(
            caller_loop.current(),
            move |py| function.bind(py).call1((to_py(py, &context)?,)),
            |py, outcome| {
                outcome
                    .and_then(|value| value.is_truthy())
                    .map_err(|error| raised(py, HookKind::ShouldStopAfterTurn.name(), &error))
            },
        )
        .map(hook_error)
        .boxed()
    })
}

/// `transform_context(messages)` → the messages to send (a list of message dicts).
fn transform_context(function: Arc<Py<PyAny>>, caller_loop: CallerLoop) -> TransformContext {
    Arc::new(move |messages, _signal| {
        let function = Arc::clone(&function);
        let messages = serde_json::to_value(&messages).unwrap_or_default();
        callable::call(
            caller_loop.current(),
            move |py| function.bind(py).call1((to_py(py, &messages)?,)),
            |py, outcome| {
                outcome
                    .and_then(|value| {
                        parse::<Vec<AgentMessage>>(&value, "transform_context result")
                    })
                    .map_err(|error| raised(py, HookKind::TransformContext.name(), &error))
            },
        )
        .map(hook_error)
        .boxed()
    })
}

/// `get_api_key(provider)` → a key, or `None` for the agent's `api_key` / the environment.
fn get_api_key(function: Arc<Py<PyAny>>, caller_loop: CallerLoop) -> GetApiKey {
    Arc::new(move |provider| {
        let function = Arc::clone(&function);
        let provider = provider.to_owned();
        callable::call(
            caller_loop.current(),
            move |py| function.bind(py).call1((provider,)),
            |py, outcome| {
                outcome
                    .and_then(|value| value.extract::<Option<String>>())
                    .map(|key| key.map(ApiKey::new))
                    .map_err(|error| raised(py, HookKind::GetApiKey.name(), &error))
            },
        )
        .map(hook_error)
        .boxed()
    })
}
