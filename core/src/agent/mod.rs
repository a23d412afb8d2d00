//! The agent layer: a stateful [`Agent`] over the stateless [`agent_loop()`].
//!
//! An agent owns a transcript, a tool table and settings; [`Agent::prompt`] runs the loop on a
//! tokio task and returns when the run has ended. Every run reports one event stream
//! ([`AgentEvent`]) to any number of subscribers, in pi's order. Model failures, tool failures
//! and aborts are not errors: they end the run with a message in the transcript, and the agent
//! is idle again.
//!
//! Every public type of the layer has one path: `pi_agent::agent::Name`. The modules below are
//! private; this file only lists them and re-exports their public names.

mod agent_loop;
mod config;
mod error;
mod event;
mod event_stream;
mod guard;
mod limits;
mod message;
mod proxy;
mod queue;
mod run;
mod snapshot;
mod stateful;
mod step;
mod tool;
mod tool_calls;

pub(crate) use self::agent_loop::apply_api_key_hook;
pub use self::agent_loop::{
    ABORTED, ModelCall, STREAM_IDLE, call_model, check_can_continue, run_agent_loop,
    run_agent_loop_continue, run_failure_message,
};
pub use self::config::DEFAULT_OUTPUT_RETRIES;
pub use self::config::{
    AfterToolCall, AfterToolCallContext, AfterToolCallResult, AgentContext, AgentHooks,
    AgentLoopConfig, AgentSettings, BeforeToolCall, BeforeToolCallContext, BeforeToolCallResult,
    ConvertToLlm, GetApiKey, HookError, MessageSource, ShouldStopAfterTurn,
    ShouldStopAfterTurnContext, StreamFn, TransformContext, default_stream_fn,
};
pub use self::error::AgentError;
pub use self::event::AgentEvent;
pub use self::event_stream::{AgentEventStream, agent_loop, agent_loop_continue};
pub use self::guard::EventSink;
pub use self::limits::{DEFAULT_MAX_TURNS, RunLimits, RunUsage};
pub use self::message::{AgentMessage, CustomMessage, default_convert_to_llm};
pub use self::proxy::{
    EventSourceError, ProxyOptions, proxy_stream_fn, stream_from_events, stream_message,
    stream_proxy,
};
pub use self::queue::{MessageQueue, QueueMode};
pub use self::run::{AgentRun, RunOutcome};
pub use self::snapshot::{AgentSnapshot, SNAPSHOT_VERSION};
pub use self::stateful::{
    Agent, AgentOptions, AsyncListener, Listener, RunInput, SubscriberFailure, Subscription,
    WeakAgent, placeholder_model,
};
pub use self::step::{
    AgentStepper, RunStart, Step, StepAction, StepError, StepInput, StepperConfig, ToolOutcome,
};
pub use self::tool::{
    AgentTool, AgentToolResult, FnTool, ToolCallContext, ToolError, ToolExecutionMode, ToolSpec,
    ToolUpdates,
};
pub use self::tool_calls::{TOOL_ABORTED, TOOL_BLOCKED, execute_tool_calls};

#[cfg(feature = "fuzzing")]
pub(crate) use self::proxy::read_stream;
