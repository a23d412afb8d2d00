//! The stateless agent loop (pi's `agent-loop.ts`): call the model, run the tool calls it asks
//! for, feed the results back, and repeat until the model stops; steering messages are injected
//! after each turn and follow-up messages when the loop would stop.
//!
//! The loop reports through a synchronous `emit` callback, called in pi's exact event order; the
//! [`Agent`](super::Agent) turns those events into state and fans them out to subscribers.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::config::{AgentContext, AgentLoopConfig};
use super::error::AgentError;
use super::event::AgentEvent;
use super::message::AgentMessage;
use super::tool_calls::execute_tool_calls;
use crate::ai::event::AssistantMessageEvent;
use crate::ai::types::{AssistantMessage, Context, StopReason};

/// The start of the error message of a turn ended by the stream idle watchdog.
pub const STREAM_IDLE: &str = "The model stream stalled";

/// The sink a run reports its events to.
pub type Emit<'a> = dyn FnMut(AgentEvent) + Send + 'a;

/// Runs the loop with new `prompts` appended to `context` and returns the messages the run
/// added (prompts included).
pub async fn run_agent_loop(
    prompts: Vec<AgentMessage>,
    mut context: AgentContext,
    config: &AgentLoopConfig,
    signal: CancellationToken,
    emit: &mut Emit<'_>,
) -> Vec<AgentMessage> {
    emit(AgentEvent::AgentStart);
    emit(AgentEvent::TurnStart);
    for prompt in &prompts {
        emit(AgentEvent::MessageStart {
            message: prompt.clone(),
        });
        emit(AgentEvent::MessageEnd {
            message: prompt.clone(),
        });
    }
    context.messages.extend(prompts.iter().cloned());
    let mut new_messages = prompts;
    run_loop(&mut context, &mut new_messages, config, &signal, emit).await;
    new_messages
}

/// The assistant message that records a run which failed outside the model call (a panicking
/// hook or stream function): empty text, `stop_reason` error (or aborted), the failure as
/// `error_message`.
pub fn run_failure_message(
    model: &crate::ai::model::Model,
    error: &str,
    aborted: bool,
) -> AssistantMessage {
    AssistantMessage {
        content: vec![crate::ai::types::AssistantContent::Text(
            crate::ai::types::TextContent::new(""),
        )],
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason: if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        },
        error_message: Some(error.to_owned()),
        timestamp: crate::ai::types::now_ms(),
        ..AssistantMessage::default()
    }
}

/// Checks that the loop can continue from `messages`' last entry (pi's messages).
pub fn check_can_continue(messages: &[AgentMessage]) -> Result<(), AgentError> {
    match messages.last() {
        None => Err(AgentError::EmptyContext),
        Some(last) if last.as_assistant().is_some() => Err(AgentError::ContinueFromAssistant),
        Some(_) => Ok(()),
    }
}

/// Runs the loop from the current transcript, whose last message must not be an assistant
/// message (it is normally a user message or a tool result).
pub async fn run_agent_loop_continue(
    mut context: AgentContext,
    config: &AgentLoopConfig,
    signal: CancellationToken,
    emit: &mut Emit<'_>,
) -> Result<Vec<AgentMessage>, AgentError> {
    check_can_continue(&context.messages)?;
    emit(AgentEvent::AgentStart);
    emit(AgentEvent::TurnStart);
    let mut new_messages = Vec::new();
    run_loop(&mut context, &mut new_messages, config, &signal, emit).await;
    Ok(new_messages)
}

fn inject(
    pending: Vec<AgentMessage>,
    context: &mut AgentContext,
    new_messages: &mut Vec<AgentMessage>,
    emit: &mut Emit<'_>,
) {
    for message in pending {
        emit(AgentEvent::MessageStart {
            message: message.clone(),
        });
        emit(AgentEvent::MessageEnd {
            message: message.clone(),
        });
        context.messages.push(message.clone());
        new_messages.push(message);
    }
}

fn poll(source: Option<&super::config::MessageSource>) -> Vec<AgentMessage> {
    source.map(|source| source()).unwrap_or_default()
}

async fn run_loop(
    context: &mut AgentContext,
    new_messages: &mut Vec<AgentMessage>,
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    emit: &mut Emit<'_>,
) {
    let mut first_turn = true;
    let mut pending = if config.skip_initial_steering_poll {
        Vec::new()
    } else {
        poll(config.get_steering_messages.as_ref())
    };
    loop {
        let mut has_more_tool_calls = true;
        while has_more_tool_calls || !pending.is_empty() {
            if first_turn {
                first_turn = false;
            } else {
                emit(AgentEvent::TurnStart);
            }
            inject(std::mem::take(&mut pending), context, new_messages, emit);

            let message = stream_assistant_response(context, config, signal, emit).await;
            new_messages.push(message.clone().into());
            if message.stop_reason.is_failure() {
                emit(AgentEvent::TurnEnd {
                    message: message.into(),
                    tool_results: Vec::new(),
                });
                emit(AgentEvent::AgentEnd {
                    messages: new_messages.clone(),
                });
                return;
            }

            let tool_calls: Vec<_> = message.tool_calls().cloned().collect();
            let mut tool_results = Vec::new();
            has_more_tool_calls = false;
            if !tool_calls.is_empty() {
                let batch =
                    execute_tool_calls(&message, tool_calls, context, config, signal, emit).await;
                has_more_tool_calls = !batch.terminate;
                for result in &batch.results {
                    context.messages.push(result.clone().into());
                    new_messages.push(result.clone().into());
                }
                tool_results = batch.results;
            }
            let stop_requested = match &config.should_stop_after_turn {
                Some(should_stop) => {
                    should_stop(super::config::ShouldStopAfterTurnContext {
                        message: message.clone(),
                        tool_results: tool_results.clone(),
                        new_messages: new_messages.clone(),
                    })
                    .await
                }
                None => false,
            };
            emit(AgentEvent::TurnEnd {
                message: message.into(),
                tool_results,
            });
            if stop_requested {
                emit(AgentEvent::AgentEnd {
                    messages: new_messages.clone(),
                });
                return;
            }
            // pi starts another turn after an abort during tools, only for the model call to
            // fail at once; we stop here and leave the queues untouched instead.
            if signal.is_cancelled() {
                emit(AgentEvent::AgentEnd {
                    messages: new_messages.clone(),
                });
                return;
            }
            pending = poll(config.get_steering_messages.as_ref());
        }
        let follow_ups = poll(config.get_follow_up_messages.as_ref());
        if follow_ups.is_empty() {
            break;
        }
        pending = follow_ups;
    }
    emit(AgentEvent::AgentEnd {
        messages: new_messages.clone(),
    });
}

/// Calls the model once and reports the assistant message as it streams; returns it final.
async fn stream_assistant_response(
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    signal: &CancellationToken,
    emit: &mut Emit<'_>,
) -> AssistantMessage {
    let messages = match &config.transform_context {
        Some(transform) => Some(transform(context.messages.clone(), signal.clone()).await),
        None => None,
    };
    let llm_context = Context {
        system_prompt: (!context.system_prompt.is_empty()).then(|| context.system_prompt.clone()),
        messages: (config.convert_to_llm)(messages.as_deref().unwrap_or(&context.messages)),
        tools: (!context.tools.is_empty())
            .then(|| context.tools.iter().map(|tool| tool.definition()).collect()),
    };
    let mut options = config.stream_options.clone();
    // A child token, so the idle watchdog can cancel this request without aborting the run.
    let request_signal = signal.child_token();
    options.signal = Some(request_signal.clone());
    if let Some(key) = config
        .get_api_key
        .as_ref()
        .and_then(|get| get(&config.model.provider))
        .filter(|key| !key.is_empty())
    {
        options.api_key = Some(key);
    }
    let mut stream = (config.stream_fn)(&config.model, &llm_context, &options);
    let partial = stream.partial();
    let mut started = false;
    let mut final_message = None;
    loop {
        let next = match config.stream_idle_timeout {
            Some(limit) => match tokio::time::timeout(limit, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    request_signal.cancel();
                    let mut message = partial.snapshot();
                    message.stop_reason = StopReason::Error;
                    message.error_message = Some(format!(
                        "{STREAM_IDLE} ({} ms without data)",
                        limit.as_millis()
                    ));
                    final_message = Some(message);
                    break;
                }
            },
            None => stream.next().await,
        };
        let Some(event) = next else { break };
        match event {
            AssistantMessageEvent::Start { partial: start } => {
                started = true;
                emit(AgentEvent::MessageStart {
                    message: start.into(),
                });
            }
            AssistantMessageEvent::Done { message, .. }
            | AssistantMessageEvent::Error { error: message, .. } => {
                final_message = Some(message);
                break;
            }
            event => {
                if started {
                    emit(AgentEvent::MessageUpdate {
                        assistant_message_event: event,
                        partial: partial.clone(),
                    });
                }
            }
        }
    }
    // The stream guarantees a terminal event; this only covers a custom stream type that
    // breaks that promise.
    let message = final_message.unwrap_or_else(|| {
        let mut message = partial.snapshot();
        message.stop_reason = StopReason::Error;
        message.error_message = Some(crate::ai::event_stream::STREAM_ENDED_EARLY.to_owned());
        message
    });
    if !started {
        emit(AgentEvent::MessageStart {
            message: message.clone().into(),
        });
    }
    context.messages.push(message.clone().into());
    emit(AgentEvent::MessageEnd {
        message: message.clone().into(),
    });
    message
}
