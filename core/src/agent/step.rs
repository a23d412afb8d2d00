//! The agent loop as a state machine without I/O (sans-IO): pi's `runLoop` control flow, with
//! every effect — calling the model, running tools, polling queues, asking hooks — handed to
//! whoever drives it.
//!
//! [`AgentStepper::start`] / [`AgentStepper::resume`] return a [`Step`]: the events to deliver
//! now (in pi's order) and the next [`StepAction`]. The driver performs the action and resumes
//! with its result ([`StepInput`]). There is no clock, thread or I/O inside: the same inputs give
//! the same events and decisions, so a durable engine can replay it, and a stepper waiting for
//! an input is plain data (`serde`) that can be stored and restored anywhere.
//!
//! The [`Agent`](super::Agent) and [`agent_loop`](super::agent_loop()) drive this machine on
//! tokio (see `agent_loop.rs`); `examples/rust/durable.rs` drives it from a plain loop with a
//! snapshot after every step.
//!
//! Who emits what: the stepper emits the run's structure (`agent_start`, `turn_start`,
//! `turn_end`, `agent_end`), the prompts and injected messages, the final assistant message
//! (`message_end`, and its `message_start` when the driver did not stream one) and the tool
//! results' messages. The driver emits what happens while an action runs: the assistant's
//! `message_start` / `message_update`s while it streams, and `tool_execution_*`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::ShouldStopAfterTurnContext;
use super::event::AgentEvent;
use super::limits::{RunLimits, RunUsage, limit_message};
use super::message::AgentMessage;
use super::tool::{AgentToolResult, ToolExecutionMode};
use super::tool_calls::TOOL_ABORTED;
use crate::ai::RunLimit;
use crate::ai::error::ErrorKind;
use crate::ai::transform::NO_RESULT_PROVIDED;
use crate::ai::types::{
    AssistantMessage, Message, StopReason, ToolCall, ToolResultMessage, UserMessage,
};

/// What the driver must do next. It deserializes too, so a driver that stored or handed on an
/// action (a binding's `execute_tools` dict) reads it back as this type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum StepAction {
    /// Drain the steering queue; resume with [`StepInput::Steering`].
    PollSteering,
    /// Drain the follow-up queue; resume with [`StepInput::FollowUp`].
    PollFollowUp,
    /// Call the model with the stepper's [`system_prompt`](AgentStepper::system_prompt) and
    /// [`messages`](AgentStepper::messages) (after the driver's `transform_context` and
    /// `convert_to_llm`), streaming `message_start` / `message_update`s as it goes; resume with
    /// [`StepInput::ModelResult`].
    CallModel,
    /// Run these tool calls of `assistant_message` (prepare, `before_tool_call`, execute,
    /// `after_tool_call`, emitting `tool_execution_*`): all concurrently, or — in sequential
    /// mode — this one call; resume with [`StepInput::ToolResults`].
    ExecuteTools {
        /// The assistant message that made the calls.
        assistant_message: AssistantMessage,
        /// The calls to run now.
        tool_calls: Vec<ToolCall>,
        /// How the batch runs.
        mode: ToolExecutionMode,
    },
    /// Ask `should_stop_after_turn`; resume with [`StepInput::ShouldStop`].
    ShouldStopAfterTurn(ShouldStopAfterTurnContext),
    /// The run is over; `new_messages` are the messages it added (as in `agent_end`).
    Finished {
        /// The messages the run added.
        new_messages: Vec<AgentMessage>,
    },
}

/// One tool call's outcome, as the driver reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutcome {
    /// The tool-result message (one per call, in the order of the calls asked for).
    pub message: ToolResultMessage,
    /// The tool asked to stop after this batch.
    #[serde(default)]
    pub terminate: bool,
}

/// The result of the last [`StepAction`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum StepInput {
    /// The steering messages drained (may be empty).
    Steering {
        /// The messages.
        messages: Vec<AgentMessage>,
    },
    /// The follow-up messages drained (may be empty).
    FollowUp {
        /// The messages.
        messages: Vec<AgentMessage>,
    },
    /// The model call's final message (or the failure message of a hook that failed before the
    /// call). `start_emitted` says whether the driver already emitted its `message_start`.
    ModelResult {
        /// The final assistant message.
        message: AssistantMessage,
        /// Whether `message_start` was emitted while streaming.
        #[serde(default)]
        start_emitted: bool,
    },
    /// One outcome per call of the last `ExecuteTools` (in the same order, as the agent gives
    /// them; any order is taken). Outcomes that do not answer each of those calls once are
    /// refused with a [`StepError`].
    ToolResults {
        /// The outcomes.
        outcomes: Vec<ToolOutcome>,
    },
    /// `should_stop_after_turn`'s answer.
    ShouldStop {
        /// Stop the run.
        stop: bool,
    },
    /// The run failed outside the model call (a hook): record `message` and end.
    Failed {
        /// The failure message (`stopReason` error or aborted).
        message: AssistantMessage,
    },
}

/// What [`AgentStepper::start`] and [`AgentStepper::resume`] return. Its JSON form (used by
/// the bindings) is `{"events": [...], "action": {"type": ...}}`.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// Events to deliver now, in order, before performing `action`.
    pub events: Vec<AgentEvent>,
    /// What to do next.
    pub action: StepAction,
}

/// Whether `outcomes` answer the calls the last [`StepAction::ExecuteTools`] asked for (the one
/// at `next - 1` in sequential mode, all of them before `next` in parallel mode): one result
/// per call, by id, in any order. Anything else would leave a call without its result, or add
/// a result no call asked for.
fn answers_each_call(
    calls: &[ToolCall],
    mode: ToolExecutionMode,
    next: usize,
    outcomes: &[ToolOutcome],
) -> bool {
    let start = match mode {
        ToolExecutionMode::Sequential => next.saturating_sub(1),
        ToolExecutionMode::Parallel => 0,
    };
    let Some(asked) = calls.get(start..next) else {
        return false;
    };
    // As multisets: a model may give two calls the same id.
    let mut asked: Vec<&str> = asked.iter().map(|call| call.id.as_str()).collect();
    let mut answered: Vec<&str> = outcomes
        .iter()
        .map(|outcome| outcome.message.tool_call_id.as_str())
        .collect();
    asked.sort_unstable();
    answered.sort_unstable();
    asked == answered
}

/// [`AgentStepper::resume`] was given an input that does not answer the pending action.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("step input `{got}` does not answer the pending action `{expected}`")]
pub struct StepError {
    /// The action waiting for an answer.
    pub expected: &'static str,
    /// The input given.
    pub got: &'static str,
}

/// How a run starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunStart {
    /// New prompts appended to the transcript (pi's `agentLoop`).
    Prompt {
        /// The prompts.
        prompts: Vec<AgentMessage>,
    },
    /// From the transcript as it is (pi's `agentLoopContinue`); its last message must not be an
    /// assistant message (the caller checks).
    Continue,
}

/// Static facts the stepper decides with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StepperConfig {
    /// Parallel or sequential tool execution.
    pub tool_execution: ToolExecutionMode,
    /// Tools that force a mode on the batch they are called in (name → mode).
    pub tool_modes: BTreeMap<String, ToolExecutionMode>,
    /// Whether to ask `should_stop_after_turn` after every turn.
    pub should_stop_after_turn: bool,
    /// Skip the steering poll before the first model call.
    pub skip_initial_steering_poll: bool,
    /// How many answers failing with `invalid_output` are re-asked (0 without an output
    /// schema).
    #[serde(skip_serializing_if = "is_zero")]
    pub output_retries: u32,
    /// How far the run may go (default: [`DEFAULT_MAX_TURNS`](super::DEFAULT_MAX_TURNS)
    /// model calls, nothing else).
    pub limits: RunLimits,
}

/// Where the stepper is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "phase",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum Phase {
    /// Waiting for the initial steering poll.
    InitialSteering,
    /// Waiting for the model.
    Model,
    /// Waiting for tool results; `next` is the index of the next sequential call.
    Tools {
        message: AssistantMessage,
        calls: Vec<ToolCall>,
        mode: ToolExecutionMode,
        next: usize,
        results: Vec<ToolResultMessage>,
        all_terminate: bool,
        /// Calls the tool-call limit keeps from running; they get error results after the
        /// batch.
        #[serde(default)]
        skipped: Vec<ToolCall>,
    },
    /// Waiting for `should_stop_after_turn`.
    ShouldStop { has_more_tool_calls: bool },
    /// Waiting for the steering poll after a turn.
    Steering { has_more_tool_calls: bool },
    /// Waiting for the follow-up poll.
    FollowUp,
    /// The run is over.
    Finished,
}

impl Phase {
    fn name(&self) -> &'static str {
        match self {
            Self::InitialSteering | Self::Steering { .. } => "poll_steering",
            Self::Model => "call_model",
            Self::Tools { .. } => "execute_tools",
            Self::ShouldStop { .. } => "should_stop_after_turn",
            Self::FollowUp => "poll_follow_up",
            Self::Finished => "finished",
        }
    }
}

/// The agent loop's state between two steps. Serialisable, so a durable engine can store it
/// while an action runs and resume it elsewhere.
///
/// The run's new messages are the end of its transcript, so they are held once: `newStart`
/// marks where they begin (a big tool result is not kept twice). The JSON form still lists
/// them (`newMessages`), as before.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentStepper {
    config: StepperConfig,
    system_prompt: String,
    messages: Vec<AgentMessage>,
    /// Where the messages this run added begin in `messages`.
    new_start: usize,
    first_turn: bool,
    aborted: bool,
    phase: Phase,
    /// Re-asks of an invalid answer so far.
    output_retries_used: u32,
    /// The re-ask of an invalid answer, waiting for its turn's end (the stop hook, the steering
    /// poll) to start the next turn.
    reask: Option<AgentMessage>,
    /// What the run used so far (what the run limits are checked against).
    usage: RunUsage,
    /// The model asked for more tool calls than `maxToolCalls` allows: the run ends before the
    /// next model call.
    tool_limit_reached: bool,
}

/// The JSON form, borrowed for writing.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StepperRef<'a> {
    config: &'a StepperConfig,
    system_prompt: &'a str,
    messages: &'a [AgentMessage],
    new_messages: &'a [AgentMessage],
    first_turn: bool,
    aborted: bool,
    phase: &'a Phase,
    #[serde(skip_serializing_if = "is_zero")]
    output_retries_used: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    reask: Option<&'a AgentMessage>,
    usage: &'a RunUsage,
    tool_limit_reached: bool,
}

/// The JSON form, owned for reading.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StepperWire {
    config: StepperConfig,
    system_prompt: String,
    messages: Vec<AgentMessage>,
    new_messages: Vec<AgentMessage>,
    first_turn: bool,
    aborted: bool,
    phase: Phase,
    /// Re-asks of an invalid answer so far.
    #[serde(default)]
    output_retries_used: u32,
    #[serde(default)]
    reask: Option<AgentMessage>,
    /// Older states have no usage (the limits count from here).
    #[serde(default)]
    usage: RunUsage,
    #[serde(default)]
    tool_limit_reached: bool,
}

impl Serialize for AgentStepper {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StepperRef {
            config: &self.config,
            system_prompt: &self.system_prompt,
            messages: &self.messages,
            new_messages: self.new_messages(),
            first_turn: self.first_turn,
            aborted: self.aborted,
            phase: &self.phase,
            output_retries_used: self.output_retries_used,
            reask: self.reask.as_ref(),
            usage: &self.usage,
            tool_limit_reached: self.tool_limit_reached,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for AgentStepper {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = StepperWire::deserialize(deserializer)?;
        let new_start = wire.messages.len().checked_sub(wire.new_messages.len());
        let new_start = new_start
            .filter(|&start| wire.messages[start..] == wire.new_messages[..])
            .ok_or_else(|| {
                serde::de::Error::custom("`newMessages` must be the last entries of `messages`")
            })?;
        Ok(Self {
            config: wire.config,
            system_prompt: wire.system_prompt,
            messages: wire.messages,
            new_start,
            first_turn: wire.first_turn,
            aborted: wire.aborted,
            phase: wire.phase,
            output_retries_used: wire.output_retries_used,
            reask: wire.reask,
            usage: wire.usage,
            tool_limit_reached: wire.tool_limit_reached,
        })
    }
}

impl AgentStepper {
    /// Starts a run on `messages` (the transcript) and returns the first step.
    pub fn start(
        config: StepperConfig,
        system_prompt: String,
        messages: Vec<AgentMessage>,
        start: RunStart,
    ) -> (Self, Step) {
        let mut stepper = Self {
            config,
            system_prompt,
            new_start: messages.len(),
            messages,
            first_turn: true,
            aborted: false,
            phase: Phase::InitialSteering,
            output_retries_used: 0,
            reask: None,
            usage: RunUsage::default(),
            tool_limit_reached: false,
        };
        let mut events = vec![AgentEvent::AgentStart, AgentEvent::TurnStart];
        if let RunStart::Prompt { prompts } = start {
            for prompt in prompts {
                events.push(AgentEvent::MessageStart {
                    message: prompt.clone(),
                });
                events.push(AgentEvent::MessageEnd {
                    message: prompt.clone(),
                });
                stepper.messages.push(prompt);
            }
        }
        let action = if stepper.config.skip_initial_steering_poll {
            stepper.begin_turn(Vec::new(), &mut events)
        } else {
            StepAction::PollSteering
        };
        (stepper, Step { events, action })
    }

    /// The system prompt of the run.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// The transcript as the run sees it now.
    pub fn messages(&self) -> &[AgentMessage] {
        &self.messages
    }

    /// The messages this run added so far.
    pub fn new_messages(&self) -> &[AgentMessage] {
        &self.messages[self.new_start..]
    }

    /// Whether the run is over.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// Records that the run was aborted: after the current turn's tools the run ends instead of
    /// starting another turn (pi starts one that fails at once), and the queues are not polled.
    /// Called while a queue is being polled, the driver answers with no messages and the run
    /// ends there.
    pub fn abort(&mut self) {
        self.aborted = true;
    }

    /// What the run used so far: model calls, tool calls, tokens and cost (what its
    /// [`RunLimits`] are checked against).
    pub fn usage(&self) -> &RunUsage {
        &self.usage
    }

    /// Whether [`abort`](Self::abort) was called.
    pub fn is_aborted(&self) -> bool {
        self.aborted
    }

    /// Feeds the result of the last action and returns the next step.
    pub fn resume(&mut self, input: StepInput) -> Result<Step, StepError> {
        let mut events = Vec::new();
        let phase = std::mem::replace(&mut self.phase, Phase::Finished);
        let action = match (phase, input) {
            (Phase::InitialSteering, StepInput::Steering { messages }) => {
                self.begin_turn(messages, &mut events)
            }
            // A run that is over takes nothing more (a second `agent_end` would follow).
            (phase, StepInput::Failed { message }) if phase != Phase::Finished => {
                // Tool calls still waiting get their results first (every call is answered,
                // right after its assistant message): aborted ones as an abort's, the others
                // as calls with no result.
                if let Phase::Tools {
                    message: assistant,
                    calls,
                    results,
                    skipped,
                    ..
                } = &phase
                {
                    let text = if message.stop_reason == StopReason::Aborted {
                        TOOL_ABORTED
                    } else {
                        NO_RESULT_PROVIDED
                    };
                    let waiting: Vec<ToolCall> = calls
                        .iter()
                        .skip(results.len())
                        .chain(skipped)
                        .cloned()
                        .collect();
                    self.answer_with_error(assistant, &waiting, text, &mut events);
                }
                let message: AgentMessage = message.into();
                events.push(AgentEvent::MessageStart {
                    message: message.clone(),
                });
                events.push(AgentEvent::MessageEnd {
                    message: message.clone(),
                });
                self.messages.push(message);
                self.finish(&mut events)
            }
            (
                Phase::Model,
                StepInput::ModelResult {
                    message,
                    start_emitted,
                },
            ) => self.model_done(message, start_emitted, &mut events),
            (
                Phase::Tools {
                    message,
                    calls,
                    mode,
                    next,
                    mut results,
                    mut all_terminate,
                    skipped,
                },
                StepInput::ToolResults { outcomes },
            ) if answers_each_call(&calls, mode, next, &outcomes) => {
                for outcome in outcomes {
                    all_terminate &= outcome.terminate;
                    let result: AgentMessage = outcome.message.clone().into();
                    events.push(AgentEvent::MessageStart {
                        message: result.clone(),
                    });
                    events.push(AgentEvent::MessageEnd {
                        message: result.clone(),
                    });
                    self.messages.push(result);
                    results.push(outcome.message);
                }
                if mode == ToolExecutionMode::Sequential && next < calls.len() {
                    let call = calls[next].clone();
                    let action = StepAction::ExecuteTools {
                        assistant_message: message.clone(),
                        tool_calls: vec![call],
                        mode,
                    };
                    self.phase = Phase::Tools {
                        message,
                        calls,
                        mode,
                        next: next + 1,
                        results,
                        all_terminate,
                        skipped,
                    };
                    action
                } else {
                    if !skipped.is_empty() {
                        all_terminate = false;
                        results.extend(self.refuse_calls(&message, &skipped, &mut events));
                    }
                    // pi: the batch terminates only if it has results and every one asks to.
                    let terminate = all_terminate && !results.is_empty();
                    self.end_turn(message, results, !terminate, &mut events)
                }
            }
            (
                Phase::ShouldStop {
                    has_more_tool_calls,
                },
                StepInput::ShouldStop { stop },
            ) => {
                if stop {
                    self.finish(&mut events)
                } else {
                    self.after_turn(has_more_tool_calls, &mut events)
                }
            }
            (
                Phase::Steering {
                    has_more_tool_calls,
                },
                StepInput::Steering { messages },
            ) => {
                // Aborted while the queue was asked (its driver gives no messages then): the
                // run ends, with no turn that would only fail.
                if self.aborted && messages.is_empty() {
                    self.finish(&mut events)
                } else if let Some(reask) = self.reask.take() {
                    let mut prompts = vec![reask];
                    prompts.extend(messages);
                    self.begin_turn(prompts, &mut events)
                } else if has_more_tool_calls || !messages.is_empty() {
                    self.begin_turn(messages, &mut events)
                } else {
                    self.phase = Phase::FollowUp;
                    StepAction::PollFollowUp
                }
            }
            (Phase::FollowUp, StepInput::FollowUp { messages }) => {
                if messages.is_empty() {
                    self.finish(&mut events)
                } else {
                    self.begin_turn(messages, &mut events)
                }
            }
            (phase, input) => {
                let error = StepError {
                    expected: phase.name(),
                    got: input_name(&input),
                };
                self.phase = phase;
                return Err(error);
            }
        };
        Ok(Step { events, action })
    }

    /// Starts a turn: `turn_start` (except for the first), the pending messages, the model call.
    fn begin_turn(
        &mut self,
        pending: Vec<AgentMessage>,
        events: &mut Vec<AgentEvent>,
    ) -> StepAction {
        if self.first_turn {
            self.first_turn = false;
        } else {
            events.push(AgentEvent::TurnStart);
        }
        for message in pending {
            events.push(AgentEvent::MessageStart {
                message: message.clone(),
            });
            events.push(AgentEvent::MessageEnd {
                message: message.clone(),
            });
            self.messages.push(message);
        }
        if let Some((limit, text)) = self.reached_limit() {
            // The turn ends as if the model call had failed with this message.
            let last = self
                .messages
                .iter()
                .rev()
                .find_map(AgentMessage::as_assistant);
            let message = limit_message(limit, text, last);
            return self.model_done(message, false, events);
        }
        self.usage.turns += 1;
        self.phase = Phase::Model;
        StepAction::CallModel
    }

    /// Error results for `calls`, which the tool-call limit kept from running, with the events a
    /// driver would have emitted for them.
    fn refuse_calls(
        &mut self,
        message: &AssistantMessage,
        calls: &[ToolCall],
        events: &mut Vec<AgentEvent>,
    ) -> Vec<ToolResultMessage> {
        let text = self.config.limits.tool_call_refusal();
        self.answer_with_error(message, calls, &text, events)
    }

    /// Answers `calls` (of `message`) with error results reading `text`, with their events.
    fn answer_with_error(
        &mut self,
        message: &AssistantMessage,
        calls: &[ToolCall],
        text: &str,
        events: &mut Vec<AgentEvent>,
    ) -> Vec<ToolResultMessage> {
        calls
            .iter()
            .map(|call| {
                let result = AgentToolResult::error(text.to_owned());
                events.push(AgentEvent::ToolExecutionStart {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    args: call.arguments.clone(),
                });
                events.push(AgentEvent::ToolExecutionEnd {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    result: result.clone(),
                    is_error: true,
                });
                let tool_result = ToolResultMessage {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    content: result.content,
                    details: Some(result.details),
                    is_error: true,
                    timestamp: message.timestamp,
                    timing: None,
                };
                let entry: AgentMessage = tool_result.clone().into();
                events.push(AgentEvent::MessageStart {
                    message: entry.clone(),
                });
                events.push(AgentEvent::MessageEnd {
                    message: entry.clone(),
                });
                self.messages.push(entry);
                tool_result
            })
            .collect()
    }

    fn model_done(
        &mut self,
        message: AssistantMessage,
        start_emitted: bool,
        events: &mut Vec<AgentEvent>,
    ) -> StepAction {
        let entry: AgentMessage = message.clone().into();
        if !start_emitted {
            events.push(AgentEvent::MessageStart {
                message: entry.clone(),
            });
        }
        events.push(AgentEvent::MessageEnd {
            message: entry.clone(),
        });
        self.messages.push(entry.clone());
        self.usage.add(&message.usage);
        if message.stop_reason.is_failure() {
            if message.error_kind == Some(ErrorKind::InvalidOutput)
                && self.output_retries_used < self.config.output_retries
                && !self.aborted
            {
                // The turn ends as any other: the stop hook may end the run, and steering
                // queued meanwhile goes with the re-ask into the next turn.
                self.output_retries_used += 1;
                self.reask = Some(output_retry_prompt(&message));
                return self.end_turn(message, Vec::new(), false, events);
            }
            events.push(AgentEvent::TurnEnd {
                message: entry,
                tool_results: Vec::new(),
            });
            return self.finish(events);
        }
        let mut calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
        if calls.is_empty() {
            return self.end_turn(message, Vec::new(), false, events);
        }
        let allowed = self
            .config
            .limits
            .tool_calls_allowed(self.usage.tool_calls, calls.len());
        let skipped = calls.split_off(allowed);
        self.tool_limit_reached |= !skipped.is_empty();
        self.usage.tool_calls += calls.len() as u64;
        if calls.is_empty() {
            let results = self.refuse_calls(&message, &skipped, events);
            return self.end_turn(message, results, true, events);
        }
        let sequential = self.config.tool_execution == ToolExecutionMode::Sequential
            || calls.iter().any(|call| {
                self.config.tool_modes.get(&call.name) == Some(&ToolExecutionMode::Sequential)
            });
        let (mode, now, next) = if sequential {
            (ToolExecutionMode::Sequential, vec![calls[0].clone()], 1)
        } else {
            (ToolExecutionMode::Parallel, calls.clone(), calls.len())
        };
        let action = StepAction::ExecuteTools {
            assistant_message: message.clone(),
            tool_calls: now,
            mode,
        };
        self.phase = Phase::Tools {
            message,
            calls,
            mode,
            next,
            results: Vec::new(),
            all_terminate: true,
            skipped,
        };
        action
    }

    /// `turn_end`, then `should_stop_after_turn` (when configured), then the next turn.
    fn end_turn(
        &mut self,
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
        has_more_tool_calls: bool,
        events: &mut Vec<AgentEvent>,
    ) -> StepAction {
        events.push(AgentEvent::TurnEnd {
            message: message.clone().into(),
            tool_results: tool_results.clone(),
        });
        if self.config.should_stop_after_turn {
            self.phase = Phase::ShouldStop {
                has_more_tool_calls,
            };
            return StepAction::ShouldStopAfterTurn(ShouldStopAfterTurnContext {
                message,
                tool_results,
                new_messages: self.new_messages().to_vec(),
            });
        }
        self.after_turn(has_more_tool_calls, events)
    }

    /// The run limit a new turn would break, with the failure's text.
    fn reached_limit(&self) -> Option<(RunLimit, String)> {
        if self.tool_limit_reached {
            let text = self.config.limits.tool_call_limit_text();
            Some((RunLimit::MaxToolCalls, format!("The run stopped: {text}")))
        } else {
            self.config.limits.reached(&self.usage)
        }
    }

    fn after_turn(
        &mut self,
        has_more_tool_calls: bool,
        events: &mut Vec<AgentEvent>,
    ) -> StepAction {
        // pi starts another turn after an abort during tools, only for the model call to fail
        // at once; we stop here and leave the queues untouched instead.
        if self.aborted {
            return self.finish(events);
        }
        // Only queued messages would start another turn, and the run limits refuse it: the
        // run ends here, as it would with nothing queued, and they wait for the next run
        // (taken in, they would only get the limit's failure as their answer).
        if !has_more_tool_calls && self.reask.is_none() && self.reached_limit().is_some() {
            return self.finish(events);
        }
        self.phase = Phase::Steering {
            has_more_tool_calls,
        };
        StepAction::PollSteering
    }

    fn finish(&mut self, events: &mut Vec<AgentEvent>) -> StepAction {
        self.reask = None;
        events.push(AgentEvent::AgentEnd {
            messages: self.new_messages().to_vec(),
        });
        self.phase = Phase::Finished;
        StepAction::Finished {
            new_messages: self.new_messages().to_vec(),
        }
    }
}

/// Zero counters are left out of the JSON, which then reads as before they existed.
fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// The user message that re-asks an answer that did not match the output schema: the
/// validation report (which shows the answer received), and what to do.
fn output_retry_prompt(failed: &AssistantMessage) -> AgentMessage {
    let report = failed.error_message.as_deref().unwrap_or_default();
    Message::User(UserMessage::text(format!(
        "{report}\n\nYour answer does not match the required output schema. Fix the problems \
         above and answer again with only the JSON value."
    )))
    .into()
}

fn input_name(input: &StepInput) -> &'static str {
    match input {
        StepInput::Steering { .. } => "steering",
        StepInput::FollowUp { .. } => "follow_up",
        StepInput::ModelResult { .. } => "model_result",
        StepInput::ToolResults { .. } => "tool_results",
        StepInput::ShouldStop { .. } => "should_stop",
        StepInput::Failed { .. } => "failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::{AssistantContent, StopReason, UserMessage};
    use serde_json::json;

    fn assistant(content: Vec<AssistantContent>, stop_reason: StopReason) -> AssistantMessage {
        AssistantMessage {
            content,
            stop_reason,
            timestamp: 1,
            ..AssistantMessage::default()
        }
    }

    fn call(id: &str) -> AssistantContent {
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: json!({}),
            thought_signature: None,
        })
    }

    fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
        events.iter().map(AgentEvent::kind).collect()
    }

    fn result(id: &str) -> ToolOutcome {
        ToolOutcome {
            message: ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "t".into(),
                timestamp: 2,
                ..ToolResultMessage::default()
            },
            terminate: false,
        }
    }

    /// Tool results must answer the calls asked for, one each; a finished run takes nothing.
    /// A refused input leaves the stepper where it was.
    #[test]
    fn inputs_that_break_the_transcript_are_refused() {
        let prompt: AgentMessage = UserMessage {
            content: crate::ai::types::UserMessageContent::Text("hi".into()),
            timestamp: 0,
        }
        .into();
        let (mut stepper, _) = AgentStepper::start(
            StepperConfig::default(),
            "sys".into(),
            Vec::new(),
            RunStart::Prompt {
                prompts: vec![prompt],
            },
        );
        stepper
            .resume(StepInput::Steering {
                messages: Vec::new(),
            })
            .unwrap();
        let message = assistant(vec![call("a"), call("b")], StopReason::ToolUse);
        stepper
            .resume(StepInput::ModelResult {
                message,
                start_emitted: true,
            })
            .unwrap();
        for outcomes in [
            vec![],
            vec![result("a")],
            vec![result("a"), result("a")],
            vec![result("a"), result("c")],
            vec![result("a"), result("b"), result("c")],
        ] {
            let ids: Vec<String> = outcomes
                .iter()
                .map(|o| o.message.tool_call_id.clone())
                .collect();
            let refused = stepper.resume(StepInput::ToolResults { outcomes });
            assert_eq!(
                refused.unwrap_err(),
                StepError {
                    expected: "execute_tools",
                    got: "tool_results"
                },
                "{ids:?}"
            );
        }
        // In any order, once each.
        let step = stepper
            .resume(StepInput::ToolResults {
                outcomes: vec![result("b"), result("a")],
            })
            .unwrap();
        assert_eq!(step.action, StepAction::PollSteering);
        stepper
            .resume(StepInput::Failed {
                message: assistant(Vec::new(), StopReason::Error),
            })
            .unwrap();
        assert!(stepper.is_finished());
        let again = stepper.resume(StepInput::Failed {
            message: assistant(Vec::new(), StopReason::Error),
        });
        assert!(again.is_err(), "a finished run takes no failure");
    }

    /// A failure while tool calls wait (a driver's tool step failed as a whole) answers each
    /// of them first: the transcript never holds a call without its result.
    #[test]
    fn a_failure_during_tools_answers_the_waiting_calls() {
        for (reason, text) in [
            (StopReason::Aborted, TOOL_ABORTED),
            (StopReason::Error, NO_RESULT_PROVIDED),
        ] {
            for mode in [ToolExecutionMode::Parallel, ToolExecutionMode::Sequential] {
                let prompt: AgentMessage = UserMessage {
                    content: crate::ai::types::UserMessageContent::Text("hi".into()),
                    timestamp: 0,
                }
                .into();
                let config = StepperConfig {
                    tool_execution: mode,
                    ..StepperConfig::default()
                };
                let (mut stepper, _) = AgentStepper::start(
                    config,
                    "sys".into(),
                    Vec::new(),
                    RunStart::Prompt {
                        prompts: vec![prompt],
                    },
                );
                stepper
                    .resume(StepInput::Steering {
                        messages: Vec::new(),
                    })
                    .unwrap();
                let message = assistant(vec![call("a"), call("b")], StopReason::ToolUse);
                stepper
                    .resume(StepInput::ModelResult {
                        message,
                        start_emitted: true,
                    })
                    .unwrap();
                if mode == ToolExecutionMode::Sequential {
                    // The first call answered, the second one asked when the step failed.
                    stepper
                        .resume(StepInput::ToolResults {
                            outcomes: vec![result("a")],
                        })
                        .unwrap();
                }
                let step = stepper
                    .resume(StepInput::Failed {
                        message: assistant(Vec::new(), reason),
                    })
                    .unwrap();
                assert!(stepper.is_finished());
                let roles: Vec<&str> = stepper.messages().iter().map(|m| m.role()).collect();
                assert_eq!(
                    roles,
                    ["user", "assistant", "toolResult", "toolResult", "assistant"],
                    "{mode:?}"
                );
                let answered: Vec<String> = stepper.messages()[2..4]
                    .iter()
                    .map(|m| serde_json::to_value(m).unwrap()["toolCallId"].to_string())
                    .collect();
                assert_eq!(answered, ["\"a\"", "\"b\""]);
                let last_result = serde_json::to_value(&stepper.messages()[3]).unwrap();
                assert_eq!(last_result["content"][0]["text"], text);
                assert_eq!(last_result["isError"], true);
                let kinds: Vec<&str> = step.events.iter().map(AgentEvent::kind).collect();
                assert_eq!(kinds.first(), Some(&"tool_execution_start"), "{kinds:?}");
                assert_eq!(kinds.last(), Some(&"agent_end"));
            }
        }
    }

    /// Drives a tool round trip and checks pi's order, and that the same inputs give the same
    /// steps (no hidden state).
    #[test]
    fn a_tool_round_trip_in_pis_order_and_deterministic() {
        let run = || {
            let prompt: AgentMessage = UserMessage {
                content: crate::ai::types::UserMessageContent::Text("hi".into()),
                timestamp: 0,
            }
            .into();
            let (mut stepper, step) = AgentStepper::start(
                StepperConfig::default(),
                "sys".into(),
                Vec::new(),
                RunStart::Prompt {
                    prompts: vec![prompt],
                },
            );
            let mut log = kinds(&step.events);
            assert_eq!(step.action, StepAction::PollSteering);
            let step = stepper
                .resume(StepInput::Steering {
                    messages: Vec::new(),
                })
                .unwrap();
            assert_eq!(step.action, StepAction::CallModel);
            let message = assistant(vec![call("a"), call("b")], StopReason::ToolUse);
            let step = stepper
                .resume(StepInput::ModelResult {
                    message,
                    start_emitted: true,
                })
                .unwrap();
            log.extend(kinds(&step.events));
            let StepAction::ExecuteTools {
                tool_calls, mode, ..
            } = &step.action
            else {
                panic!("{:?}", step.action)
            };
            assert_eq!(tool_calls.len(), 2);
            assert_eq!(*mode, ToolExecutionMode::Parallel);
            let step = stepper
                .resume(StepInput::ToolResults {
                    outcomes: vec![result("a"), result("b")],
                })
                .unwrap();
            log.extend(kinds(&step.events));
            assert_eq!(step.action, StepAction::PollSteering);
            let step = stepper
                .resume(StepInput::Steering {
                    messages: Vec::new(),
                })
                .unwrap();
            log.extend(kinds(&step.events));
            let step = stepper
                .resume(StepInput::ModelResult {
                    message: assistant(Vec::new(), StopReason::Stop),
                    start_emitted: false,
                })
                .unwrap();
            log.extend(kinds(&step.events));
            assert_eq!(step.action, StepAction::PollSteering);
            let step = stepper
                .resume(StepInput::Steering {
                    messages: Vec::new(),
                })
                .unwrap();
            assert_eq!(step.action, StepAction::PollFollowUp);
            let step = stepper
                .resume(StepInput::FollowUp {
                    messages: Vec::new(),
                })
                .unwrap();
            log.extend(kinds(&step.events));
            assert!(matches!(step.action, StepAction::Finished { .. }));
            (log, stepper)
        };
        let (log, stepper) = run();
        assert_eq!(
            log,
            [
                "agent_start",
                "turn_start",
                "message_start",
                "message_end",
                "message_end",
                "message_start",
                "message_end",
                "message_start",
                "message_end",
                "turn_end",
                "turn_start",
                "message_start",
                "message_end",
                "turn_end",
                "agent_end"
            ]
        );
        assert_eq!(stepper.new_messages().len(), 5);
        assert_eq!(run(), (log, stepper));
    }

    #[test]
    fn sequential_calls_come_one_at_a_time_and_state_round_trips_through_json() {
        let config = StepperConfig {
            tool_modes: [("t".to_owned(), ToolExecutionMode::Sequential)].into(),
            ..StepperConfig::default()
        };
        let (mut stepper, _) =
            AgentStepper::start(config, String::new(), Vec::new(), RunStart::Continue);
        stepper
            .resume(StepInput::Steering {
                messages: Vec::new(),
            })
            .unwrap();
        let step = stepper
            .resume(StepInput::ModelResult {
                message: assistant(vec![call("a"), call("b")], StopReason::ToolUse),
                start_emitted: true,
            })
            .unwrap();
        let StepAction::ExecuteTools { tool_calls, .. } = step.action else {
            panic!()
        };
        assert_eq!(tool_calls[0].id, "a");
        // Stored and restored while the first call runs.
        let json = serde_json::to_string(&stepper).unwrap();
        let mut stepper: AgentStepper = serde_json::from_str(&json).unwrap();
        let step = stepper
            .resume(StepInput::ToolResults {
                outcomes: vec![result("a")],
            })
            .unwrap();
        assert_eq!(kinds(&step.events), ["message_start", "message_end"]);
        let StepAction::ExecuteTools { tool_calls, .. } = step.action else {
            panic!()
        };
        assert_eq!(tool_calls[0].id, "b");
        // A wrong answer is refused and changes nothing.
        let error = stepper
            .resume(StepInput::ShouldStop { stop: true })
            .unwrap_err();
        assert_eq!(error.expected, "execute_tools");
        stepper
            .resume(StepInput::ToolResults {
                outcomes: vec![result("b")],
            })
            .unwrap();
    }

    #[test]
    fn a_step_serialises_as_events_and_action() {
        let (_, step) = AgentStepper::start(
            StepperConfig::default(),
            String::new(),
            Vec::new(),
            RunStart::Continue,
        );
        assert_eq!(
            serde_json::to_value(&step).unwrap(),
            json!({"events": [{"type": "agent_start"}, {"type": "turn_start"}],
                   "action": {"type": "poll_steering"}})
        );
    }

    #[test]
    fn abort_after_tools_ends_the_run_without_polling() {
        let (mut stepper, _) = AgentStepper::start(
            StepperConfig::default(),
            String::new(),
            Vec::new(),
            RunStart::Continue,
        );
        stepper
            .resume(StepInput::Steering {
                messages: Vec::new(),
            })
            .unwrap();
        stepper
            .resume(StepInput::ModelResult {
                message: assistant(vec![call("a")], StopReason::ToolUse),
                start_emitted: true,
            })
            .unwrap();
        stepper.abort();
        let step = stepper
            .resume(StepInput::ToolResults {
                outcomes: vec![result("a")],
            })
            .unwrap();
        assert_eq!(
            kinds(&step.events),
            ["message_start", "message_end", "turn_end", "agent_end"]
        );
        assert!(stepper.is_finished());
    }
}
