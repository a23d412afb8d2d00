//! The agent loop on tokio (pi's `agent-loop.ts`): drives the [`AgentStepper`] state machine,
//! performing its actions — call the model, run the tool calls, poll the queues, ask the hooks —
//! and delivering its events, in pi's order, to an [`EventSink`] that the loop awaits.
//!
//! Every hook is cut short by an abort (and the tool hooks by the tool watchdog), like a tool:
//! a late hook answer is dropped, and the run ends promptly.

use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::config::{AgentContext, AgentHooks, AgentLoopConfig, HookError, MessageSource};
use super::error::AgentError;
use super::event::AgentEvent;
use super::guard::{EventSink, Guarded, guarded};
use super::message::AgentMessage;
use super::step::{AgentStepper, RunStart, Step, StepAction, StepInput, StepperConfig};
use super::tool::AgentTool;
use super::tool_calls::execute_tool_calls;
use crate::ai::event::AssistantMessageEvent;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::types::{AssistantContent, AssistantMessage, Context, StopReason, TextContent};
use crate::panics::panic_text;

/// The start of the error message of a turn ended by the stream idle watchdog.
pub const STREAM_IDLE: &str = "The model stream stalled";

/// The error message of a run step cut short by an abort.
pub const ABORTED: &str = "Request was aborted";

/// Runs the loop with new `prompts` appended to `context` and returns the messages the run
/// added (prompts included).
pub async fn run_agent_loop<S: EventSink>(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: &AgentLoopConfig,
    signal: CancellationToken,
    sink: &mut S,
) -> Vec<AgentMessage> {
    drive(RunStart::Prompt { prompts }, context, config, &signal, sink).await
}

/// Runs the loop from the current transcript, whose last message must not be an assistant
/// message (it is normally a user message or a tool result).
pub async fn run_agent_loop_continue<S: EventSink>(
    context: AgentContext,
    config: &AgentLoopConfig,
    signal: CancellationToken,
    sink: &mut S,
) -> Result<Vec<AgentMessage>, AgentError> {
    check_can_continue(&context.messages)?;
    Ok(drive(RunStart::Continue, context, config, &signal, sink).await)
}

/// Checks that the loop can continue from `messages`' last entry (pi's messages).
pub fn check_can_continue(messages: &[AgentMessage]) -> Result<(), AgentError> {
    match messages.last() {
        None => Err(AgentError::EmptyContext),
        Some(last) if last.as_assistant().is_some() => Err(AgentError::ContinueFromAssistant),
        Some(_) => Ok(()),
    }
}

/// Why a run cut off by its runtime's shutdown ended (its last message's `errorMessage`).
pub(crate) const RUN_CUT_OFF: &str = "the run was cut off: the async runtime it ran on shut down";

/// The answer a run cut off by its runtime's shutdown was streaming, ended: `aborted`, saying
/// why.
pub(crate) fn cut_off_answer(mut answer: AssistantMessage) -> AssistantMessage {
    answer.stop_reason = StopReason::Aborted;
    answer.error_message = Some(RUN_CUT_OFF.to_owned());
    answer.error_kind = Some(crate::ai::ErrorKind::Aborted);
    answer
}

/// The assistant message that records a run step which failed outside the model call (a
/// failing or panicking hook or stream function): empty text, `stop_reason` error (or aborted),
/// the failure as `error_message` (pi's `handleRunFailure` message).
pub fn run_failure_message(model: &Model, error: &str, aborted: bool) -> AssistantMessage {
    AssistantMessage {
        content: vec![AssistantContent::Text(TextContent::new(""))],
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason: if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        },
        error_message: Some(error.to_owned()),
        error_kind: aborted.then_some(crate::ai::ErrorKind::Aborted),
        timestamp: crate::ai::types::now_ms(),
        ..AssistantMessage::default()
    }
}

/// The stepper's static facts for this run.
fn stepper_config(tools: &[Arc<dyn AgentTool>], config: &AgentLoopConfig) -> StepperConfig {
    StepperConfig {
        tool_execution: config.settings.tool_execution,
        tool_modes: tools
            .iter()
            .filter_map(|tool| Some((tool.name().to_owned(), tool.execution_mode()?)))
            .collect(),
        should_stop_after_turn: config.hooks.should_stop_after_turn.is_some(),
        skip_initial_steering_poll: config.skip_initial_steering_poll,
        output_retries: config.settings.output().map_or(0, |_| {
            config
                .settings
                .output_retries
                .unwrap_or(super::config::DEFAULT_OUTPUT_RETRIES)
        }),
        limits: config.settings.limits.clone(),
    }
}

/// The messages a queue callback gives; `Err` with the panic's text when it panicked (the run
/// then ends with that failure, its transcript kept, as for a failing hook).
fn poll(source: Option<&MessageSource>, name: &str) -> Result<Vec<AgentMessage>, String> {
    let Some(source) = source else {
        return Ok(Vec::new());
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| source()))
        .map_err(|panic| format!("{name} panicked: {}", panic_text(&*panic)))
}

/// The run's failure for a queue callback that panicked.
fn poll_failed(config: &AgentLoopConfig, error: &str, signal: &CancellationToken) -> StepInput {
    StepInput::Failed {
        message: run_failure_message(&config.model, error, signal.is_cancelled()),
    }
}

async fn drive<S: EventSink>(
    start: RunStart,
    context: AgentContext,
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    sink: &mut S,
) -> Vec<AgentMessage> {
    let AgentContext {
        system_prompt,
        messages,
        tools,
    } = context;
    let (mut stepper, mut step) = AgentStepper::start(
        stepper_config(&tools, config),
        system_prompt,
        messages,
        start,
    );
    let mut turn = 0;
    let mut turn_span = tracing::Span::none();
    loop {
        let Step { events, action } = step;
        for event in events {
            sink.emit(event).await;
        }
        if matches!(action, StepAction::CallModel) {
            turn += 1;
            turn_span = crate::observability::turn_span(turn);
        }
        let input = match action {
            StepAction::Finished { new_messages } => return new_messages,
            // Aborted between turns (a subscriber or the caller, while the last turn's events
            // were delivered): the run ends here and the queued messages wait for the next.
            StepAction::PollSteering if signal.is_cancelled() => {
                stepper.abort();
                StepInput::Steering {
                    messages: Vec::new(),
                }
            }
            StepAction::PollFollowUp if signal.is_cancelled() => {
                stepper.abort();
                StepInput::FollowUp {
                    messages: Vec::new(),
                }
            }
            StepAction::PollSteering => {
                match poll(
                    config.get_steering_messages.as_ref(),
                    "get_steering_messages",
                ) {
                    Ok(messages) => StepInput::Steering { messages },
                    Err(error) => poll_failed(config, &error, signal),
                }
            }
            StepAction::PollFollowUp => {
                match poll(
                    config.get_follow_up_messages.as_ref(),
                    "get_follow_up_messages",
                ) {
                    Ok(messages) => StepInput::FollowUp { messages },
                    Err(error) => poll_failed(config, &error, signal),
                }
            }
            StepAction::CallModel => call_model(
                stepper.system_prompt(),
                stepper.messages(),
                &tools,
                config,
                signal,
                sink,
            )
            .instrument(turn_span.clone())
            .await
            .into(),
            StepAction::ExecuteTools {
                assistant_message,
                tool_calls,
                mode,
            } => {
                let outcomes = execute_tool_calls(
                    &assistant_message,
                    tool_calls,
                    mode,
                    &tools,
                    config,
                    signal,
                    sink,
                )
                .instrument(turn_span.clone())
                .await;
                if signal.is_cancelled() {
                    stepper.abort();
                }
                StepInput::ToolResults { outcomes }
            }
            StepAction::ShouldStopAfterTurn(hook_context) => {
                match &config.hooks.should_stop_after_turn {
                    None => StepInput::ShouldStop { stop: false },
                    Some(hook) => {
                        let future = hook(hook_context, signal.clone());
                        match guarded(future, signal, None).await {
                            Guarded::Done(Ok(stop)) => StepInput::ShouldStop { stop },
                            Guarded::Done(Err(HookError(error))) | Guarded::Panicked(error) => {
                                StepInput::Failed {
                                    message: run_failure_message(
                                        &config.model,
                                        &error,
                                        signal.is_cancelled(),
                                    ),
                                }
                            }
                            // The late answer is dropped; the run ends after this turn.
                            Guarded::Aborted | Guarded::TimedOut(_) => {
                                stepper.abort();
                                StepInput::ShouldStop { stop: false }
                            }
                        }
                    }
                }
            }
        };
        step = match stepper.resume(input) {
            Ok(step) => step,
            // A driver bug; record it rather than panic, and end the run.
            Err(error) => match stepper.resume(StepInput::Failed {
                message: run_failure_message(
                    &config.model,
                    &error.to_string(),
                    signal.is_cancelled(),
                ),
            }) {
                Ok(step) => step,
                Err(_) => return stepper.new_messages().to_vec(),
            },
        };
    }
}

/// The failure message of the model step, for a hook that failed before the call.
fn model_step_failure(
    config: &AgentLoopConfig,
    error: &str,
    signal: &CancellationToken,
) -> AssistantMessage {
    run_failure_message(&config.model, error, signal.is_cancelled())
}

/// What one model step produced (see [`call_model`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCall {
    /// The final assistant message (a failure of a hook before the call is one too).
    pub message: AssistantMessage,
    /// Whether `message_start` was emitted while streaming.
    pub start_emitted: bool,
}

impl From<ModelCall> for StepInput {
    fn from(call: ModelCall) -> Self {
        StepInput::ModelResult {
            message: call.message,
            start_emitted: call.start_emitted,
        }
    }
}

/// Performs a [`StepAction::CallModel`] as the agent does: `transform_context`,
/// `convert_to_llm` and `get_api_key` (each cut short by an abort), then the stream function
/// with the settings' options and reasoning level, reporting `message_start` and
/// `message_update`s to `sink` as it streams (and the stream idle watchdog). For drivers of
/// [`AgentStepper`] other than the agent (a durable engine's activity, for one).
pub async fn call_model<S: EventSink>(
    system_prompt: &str,
    messages: &[AgentMessage],
    tools: &[Arc<dyn AgentTool>],
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    sink: &mut S,
) -> ModelCall {
    let (message, start_emitted) =
        call_model_inner(system_prompt, messages, tools, config, signal, sink).await;
    ModelCall {
        message,
        start_emitted,
    }
}

/// pi's `(await getApiKey(provider)) || config.apiKey`: the `get_api_key` hook's key, if it
/// gives one, replaces `options`' (cut short by `signal`). `Err`: the failure's text (the
/// hook's error, its panic, or the abort).
pub(crate) async fn apply_api_key_hook(
    hooks: &AgentHooks,
    provider: &str,
    signal: &CancellationToken,
    options: &mut StreamOptions,
) -> Result<(), String> {
    let Some(get_api_key) = &hooks.get_api_key else {
        return Ok(());
    };
    match guarded(get_api_key(provider), signal, None).await {
        Guarded::Done(Ok(key)) => {
            if let Some(key) = key.filter(|key| !key.is_empty()) {
                options.api_key = Some(key);
            }
            Ok(())
        }
        Guarded::Done(Err(HookError(error))) | Guarded::Panicked(error) => Err(error),
        Guarded::Aborted | Guarded::TimedOut(_) => Err(ABORTED.to_owned()),
    }
}

/// How long a model stream has to end itself once the run is aborted, before the turn ends
/// with the partial message (`aborted`) without it.
const ABORT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What waiting for a model stream's next event gave.
enum Waited {
    /// The next event (`None`: the stream ended).
    Event(Option<AssistantMessageEvent>),
    /// Nothing came for this long (the idle watchdog).
    Idle(std::time::Duration),
    /// The run was aborted: the stream now has [`ABORT_GRACE`] to end itself.
    AbortSeen,
    /// It did not end itself in time.
    GaveUp,
}

/// The stream's next event; `Err(limit)` when nothing came for `idle_limit`.
async fn next_within(
    stream: &mut crate::ai::AssistantMessageEventStream,
    idle_limit: Option<std::time::Duration>,
) -> Result<Option<AssistantMessageEvent>, std::time::Duration> {
    match idle_limit {
        Some(limit) => tokio::time::timeout(limit, stream.next())
            .await
            .map_err(|_| limit),
        None => Ok(stream.next().await),
    }
}

async fn call_model_inner<S: EventSink>(
    system_prompt: &str,
    messages: &[AgentMessage],
    tools: &[Arc<dyn AgentTool>],
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    sink: &mut S,
) -> (AssistantMessage, bool) {
    let hooks = &config.hooks;
    let transformed = match &hooks.transform_context {
        Some(transform) => {
            let future = transform(messages.to_vec(), signal.clone());
            match guarded(future, signal, None).await {
                Guarded::Done(Ok(messages)) => Some(messages),
                Guarded::Done(Err(HookError(error))) | Guarded::Panicked(error) => {
                    return (model_step_failure(config, &error, signal), false);
                }
                Guarded::Aborted | Guarded::TimedOut(_) => {
                    return (model_step_failure(config, ABORTED, signal), false);
                }
            }
        }
        None => None,
    };
    let converted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        hooks.convert(transformed.as_deref().unwrap_or(messages))
    }));
    let llm_messages = match converted {
        Ok(Ok(messages)) => messages,
        Ok(Err(HookError(error))) => return (model_step_failure(config, &error, signal), false),
        Err(panic) => {
            return (
                model_step_failure(config, &panic_text(&*panic), signal),
                false,
            );
        }
    };
    let llm_context = Context {
        system_prompt: (!system_prompt.is_empty()).then(|| system_prompt.to_owned()),
        messages: llm_messages,
        tools: (!tools.is_empty()).then(|| tools.iter().map(|tool| tool.definition()).collect()),
    };
    let mut options = config.settings.stream_options.clone();
    options.reasoning = config.settings.thinking_level.enabled();
    if let Some(schema) = &config.settings.output_schema {
        options.output_schema = Some(schema.clone());
    }
    // A child token, so the idle watchdog can cancel this request without aborting the run.
    let request_signal = signal.child_token();
    options.signal = Some(request_signal.clone());
    if let Err(error) =
        apply_api_key_hook(hooks, &config.model.provider, signal, &mut options).await
    {
        return (model_step_failure(config, &error, signal), false);
    }
    let custom_stream_fn = hooks.stream_fn.is_some();
    let stream_fn = hooks.stream_fn();
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        stream_fn(&config.model, &llm_context, &options)
    }));
    let mut stream = match opened {
        Ok(stream) => stream,
        Err(panic) => {
            return (
                model_step_failure(config, &panic_text(&*panic), signal),
                false,
            );
        }
    };
    let partial = stream.partial();
    let idle_limit = config.settings.stream_idle_timeout();
    let mut started = false;
    let mut final_message = None;
    // Once the run is aborted, how long the stream has to end itself (the library's streams
    // answer at once, with the partial message): a stream function's own stream that ignores
    // its signal must not hold the run for ever.
    let mut abort_deadline: Option<tokio::time::Instant> = None;
    loop {
        if abort_deadline.is_none() && signal.is_cancelled() {
            abort_deadline = Some(tokio::time::Instant::now() + ABORT_GRACE);
        }
        let past_grace =
            abort_deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline);
        let waited = if past_grace {
            Waited::GaveUp
        } else {
            tokio::select! {
                biased;
                next = next_within(&mut stream, idle_limit) => match next {
                    Ok(event) => Waited::Event(event),
                    Err(limit) => Waited::Idle(limit),
                },
                () = async {
                    match abort_deadline {
                        Some(deadline) => tokio::time::sleep_until(deadline).await,
                        None => signal.cancelled().await,
                    }
                } => if abort_deadline.is_some() { Waited::GaveUp } else { Waited::AbortSeen },
            }
        };
        let next = match waited {
            Waited::Event(event) => event,
            // The abort came: the stream's grace starts (at the top of the loop).
            Waited::AbortSeen => continue,
            Waited::Idle(limit) => {
                request_signal.cancel();
                let mut message = partial.snapshot();
                message.stop_reason = StopReason::Error;
                message.error_message = Some(format!(
                    "{STREAM_IDLE} ({} ms without data)",
                    limit.as_millis()
                ));
                message.error_kind = Some(crate::ai::ErrorKind::Timeout);
                final_message = Some(message);
                break;
            }
            Waited::GaveUp => {
                request_signal.cancel();
                let mut message = partial.snapshot();
                message.stop_reason = StopReason::Aborted;
                message.error_message = Some(ABORTED.to_owned());
                message.error_kind = Some(crate::ai::ErrorKind::Aborted);
                final_message = Some(message);
                break;
            }
        };
        let Some(event) = next else { break };
        match event {
            AssistantMessageEvent::Start { partial: start } => {
                started = true;
                sink.emit(AgentEvent::MessageStart {
                    message: start.into(),
                })
                .await;
            }
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                final_message = Some(message);
                break;
            }
            event => {
                // After an abort the partial message still takes what arrives (the final
                // message keeps it), but it is not reported: the run's last events are queued
                // without waiting for room (an unread run must end), so a stream that ignores
                // its signal must not add an update per delta for its whole grace.
                if started && abort_deadline.is_none() {
                    sink.emit(AgentEvent::MessageUpdate {
                        assistant_message_event: event,
                        partial: partial.clone(),
                    })
                    .await;
                }
            }
        }
    }
    // The stream guarantees a terminal event; this only covers a custom stream type that
    // breaks that promise.
    let mut message = final_message.unwrap_or_else(|| {
        let mut message = partial.snapshot();
        message.stop_reason = StopReason::Error;
        message.error_message = Some(crate::ai::event_stream::STREAM_ENDED_EARLY.to_owned());
        message.error_kind = Some(crate::ai::ErrorKind::Decode);
        message
    });
    // The agent's own stream function (a proxy, a Python or C one) does not go through
    // `ai::stream`, whose tracker validates the answer: the run's output schema is checked
    // here, so that an invalid answer is re-asked as on the default path.
    if custom_stream_fn && let Some(schema) = config.settings.output() {
        crate::ai::structured::check_final_answer(schema, &mut message);
    }
    (message, started)
}
