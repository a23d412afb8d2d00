//! The session's driver task: performs the stepper's actions, journalling every event before
//! anyone sees it, and every step input before the stepper takes it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::compaction::{self, Compaction};
use super::control::Control;
use super::error::SessionError;
use super::receipt::RequestKind;
use super::replay::{Run, start_run, stepper_config};
use super::state::Shared;
use super::store::off_worker;
use crate::agent::{
    ABORTED, AgentEvent, AgentLoopConfig, AgentMessage, AgentToolResult, EventSink, QueueMode,
    StepAction, StepInput, ToolOutcome, apply_api_key_hook, call_model, execute_tool_calls,
};
use crate::ai::{AssistantMessage, ToolCall, ToolResultMessage};

/// The text of the error result of a tool call that was running when the process died, for a
/// tool that is not replay-safe.
pub const TOOL_INTERRUPTED: &str = "Tool execution was interrupted: the session stopped while it ran, and the tool is not \
     replay-safe, so it was not run again";

/// Journals what a step's action emits, then shows it.
struct JournalSink {
    shared: Arc<Shared>,
    attempt: u32,
}

impl EventSink for JournalSink {
    fn emit(&mut self, event: AgentEvent) -> impl std::future::Future<Output = ()> + Send {
        let mut inner = self.shared.lock();
        // A failed write stops the session and cancels the step; nothing more is shown.
        let _ = self
            .shared
            .write(&mut inner, self.attempt, std::slice::from_ref(&event), &[]);
        std::future::ready(())
    }
}

/// Answers what the driver leaves behind when it ends, however it ends (an error, or the task
/// aborted by `close`): the compactions still asked for get `Closed` instead of waiting for a
/// driver that is gone.
struct Ended(Arc<Shared>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.lock().compact_requests.clear();
    }
}

/// Runs the session until it is closed or its store fails. An error that ends it (the store
/// cannot be read back, a run cannot be resumed) stops the session with that error, so that
/// waiters and later requests are told instead of waiting for a driver that is gone.
pub(crate) async fn drive(shared: Arc<Shared>, run: Option<Run>) {
    let _ended = Ended(Arc::clone(&shared));
    if let Err(error) = serve(&shared, run).await {
        let mut inner = shared.lock();
        shared.stop(&mut inner, error.to_string());
    }
}

/// The driver's loop: `Ok` when the session was closed.
async fn serve(shared: &Arc<Shared>, mut run: Option<Run>) -> Result<(), SessionError> {
    let mut work = shared.work.subscribe();
    loop {
        if shared.closed.is_cancelled() {
            return Ok(());
        }
        work.borrow_and_update();
        if run.is_none() {
            serve_compactions(shared, None).await;
            match next_run(shared)? {
                Some(started) => run = Some(started),
                None => {
                    tokio::select! {
                        () = shared.closed.cancelled() => return Ok(()),
                        changed = work.changed() => if changed.is_err() { return Ok(()) },
                    }
                    continue;
                }
            }
        }
        let Some(current) = run.as_mut() else {
            continue;
        };
        if step(shared, current).await? {
            run = None;
            let mut inner = shared.lock();
            inner.running = false;
            shared.publish_status(&inner);
        }
    }
}

/// Starts a run with everything in the inbox, if anything waits.
fn next_run(shared: &Arc<Shared>) -> Result<Option<Run>, SessionError> {
    let mut inner = shared.lock();
    if let Some(reason) = &inner.stopped {
        return Err(SessionError::Stopped(reason.clone()));
    }
    if inner.inbox.is_empty() {
        inner.running = false;
        shared.publish_status(&inner);
        return Ok(None);
    }
    let pending: Vec<_> = inner.inbox.drain(..).collect();
    let requests: Vec<String> = pending.iter().map(|p| p.id.clone()).collect();
    let prompts = pending.into_iter().map(|p| p.message).collect();
    let config = stepper_config(&shared.options);
    let (run, events) = start_run(config.clone(), &shared.options, &inner.transcript, prompts);
    inner.signal = CancellationToken::new();
    inner.running = true;
    // On failure the requests are not taken: the store still has them for the next process.
    shared.write(
        &mut inner,
        0,
        &events,
        &[Control::RunStart {
            requests,
            config: Some(config),
        }],
    )?;
    shared.publish_status(&inner);
    Ok(Some(run))
}

/// Performs the run's pending action and feeds its result to the stepper. `Ok(true)` when
/// the run is over.
async fn step(shared: &Arc<Shared>, run: &mut Run) -> Result<bool, SessionError> {
    let signal = shared.lock().signal.clone();
    let mut aborted = false;
    let (input, consumed) = match &run.action {
        StepAction::Finished { .. } => return Ok(true),
        // Aborted between turns: the run ends here, as an agent's does, and the queued
        // requests wait for the next run (a steer taken now would go to a turn whose model
        // call is aborted at once, and never be answered).
        StepAction::PollSteering if signal.is_cancelled() => {
            aborted = true;
            (
                StepInput::Steering {
                    messages: Vec::new(),
                },
                Vec::new(),
            )
        }
        StepAction::PollFollowUp if signal.is_cancelled() => {
            aborted = true;
            (
                StepInput::FollowUp {
                    messages: Vec::new(),
                },
                Vec::new(),
            )
        }
        StepAction::PollSteering => {
            let (messages, ids) = drain(shared, |kind| kind == RequestKind::Steer, true);
            (StepInput::Steering { messages }, ids)
        }
        StepAction::PollFollowUp => {
            let (messages, ids) = drain(shared, |kind| kind != RequestKind::Steer, false);
            (StepInput::FollowUp { messages }, ids)
        }
        StepAction::CallModel => {
            begin_action(shared, run)?;
            serve_compactions(shared, Some((run.stepper.messages(), &signal))).await;
            auto_compact(shared, run.stepper.messages(), &signal).await;
            let config = loop_config(shared);
            let mut sink = JournalSink {
                shared: Arc::clone(shared),
                attempt: run.attempt,
            };
            let call = call_model(
                run.stepper.system_prompt(),
                run.stepper.messages(),
                &shared.options.tools,
                &config,
                &signal,
                &mut sink,
            )
            .await;
            (call.into(), Vec::new())
        }
        StepAction::ExecuteTools {
            assistant_message,
            tool_calls,
            mode,
        } => {
            let (assistant, calls, mode) = (assistant_message.clone(), tool_calls.clone(), *mode);
            begin_action(shared, run)?;
            let outcomes = execute(shared, run, &assistant, calls, mode, &signal).await?;
            aborted = signal.is_cancelled();
            (StepInput::ToolResults { outcomes }, Vec::new())
        }
        StepAction::ShouldStopAfterTurn(_) => (StepInput::ShouldStop { stop: false }, Vec::new()),
    };
    apply(shared, run, input, consumed, aborted)
}

/// Writes the step input with the events it produces, then moves the stepper on.
fn apply(
    shared: &Arc<Shared>,
    run: &mut Run,
    input: StepInput,
    consumed: Vec<String>,
    aborted: bool,
) -> Result<bool, SessionError> {
    let attempt = run.attempt;
    // The stepper is resumed on a copy first: only a written input may change the real one.
    let mut next = run.stepper.clone();
    if aborted {
        next.abort();
    }
    let control = Control::Input {
        input: input.clone(),
        consumed,
        aborted,
    };
    let step = next.resume(input).map_err(|error| SessionError::Corrupt {
        session: shared.id.clone(),
        what: "step input",
        position: 0,
        reason: error.to_string(),
    })?;
    let mut inner = shared.lock();
    shared.write(
        &mut inner,
        attempt,
        &step.events,
        std::slice::from_ref(&control),
    )?;
    drop(inner);
    run.stepper = next;
    run.in_flight = false;
    run.attempt = 0;
    let finished = matches!(step.action, StepAction::Finished { .. });
    run.action = step.action;
    Ok(finished)
}

/// Records that the pending model call or tool batch begins (a restart when one began
/// before and was never answered).
fn begin_action(shared: &Arc<Shared>, run: &mut Run) -> Result<(), SessionError> {
    let mut inner = shared.lock();
    let (attempt, since_seq) = if run.in_flight {
        (run.attempt + 1, run.since_seq)
    } else {
        (0, inner.heads.seq)
    };
    shared.write(
        &mut inner,
        attempt,
        &[],
        &[Control::ActionStart { attempt, since_seq }],
    )?;
    run.attempt = attempt;
    run.since_seq = since_seq;
    run.in_flight = true;
    Ok(())
}

/// Takes the inbox's messages a poll may take (one at a time or all, per the queue mode).
fn drain(
    shared: &Arc<Shared>,
    wanted: impl Fn(RequestKind) -> bool,
    steering: bool,
) -> (Vec<AgentMessage>, Vec<String>) {
    let settings = &shared.options.settings;
    let mode = if steering {
        settings.steering_mode
    } else {
        settings.follow_up_mode
    };
    let mut inner = shared.lock();
    let mut messages = Vec::new();
    let mut ids = Vec::new();
    let mut index = 0;
    while index < inner.inbox.len() {
        if wanted(inner.inbox[index].kind) {
            if let Some(pending) = inner.inbox.remove(index) {
                ids.push(pending.id);
                messages.push(pending.message);
            }
            if mode == QueueMode::OneAtATime {
                break;
            }
        } else {
            index += 1;
        }
    }
    (messages, ids)
}

/// The loop config of a model call or tool batch: the session's settings and hooks, with the
/// compaction in front of the host's `transform_context`.
fn loop_config(shared: &Arc<Shared>) -> AgentLoopConfig {
    let options = &shared.options;
    let mut config = AgentLoopConfig::new(options.model.clone());
    config.settings = options.settings.clone();
    config.hooks = options.hooks.clone();
    let compaction = shared.lock().compaction.clone();
    config.hooks.transform_context =
        compaction::transform(compaction, options.hooks.transform_context.clone());
    config
}

#[derive(Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum ToolRecord {
    ToolExecutionStart {
        tool_call_id: String,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        result: AgentToolResult,
        is_error: bool,
    },
    #[serde(other)]
    Other,
}

/// The calls of a batch that began, and the results (with `isError`) of those that ended.
/// Per tool-call id: how many calls began, and the outcomes of those that ended, in order (a
/// model may give two calls one id).
type Recorded = (
    HashMap<String, usize>,
    HashMap<String, VecDeque<(AgentToolResult, bool)>>,
);

/// What earlier attempts of this batch recorded: the calls that began, and those that ended.
fn recorded_tools(shared: &Arc<Shared>, since_seq: u64) -> Result<Recorded, SessionError> {
    let mut started: HashMap<String, usize> = HashMap::new();
    let mut ended: HashMap<String, VecDeque<(AgentToolResult, bool)>> = HashMap::new();
    let mut after = since_seq;
    loop {
        let page = off_worker(|| shared.store.records(&shared.id, after, 512))?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for record in &page {
            match serde_json::from_str::<ToolRecord>(&record.event) {
                Ok(ToolRecord::ToolExecutionStart { tool_call_id }) => {
                    *started.entry(tool_call_id).or_default() += 1;
                }
                Ok(ToolRecord::ToolExecutionEnd {
                    tool_call_id,
                    result,
                    is_error,
                }) => {
                    ended
                        .entry(tool_call_id)
                        .or_default()
                        .push_back((result, is_error));
                }
                Ok(ToolRecord::Other) | Err(_) => {}
            }
        }
    }
    Ok((started, ended))
}

fn outcome(call: &ToolCall, result: AgentToolResult, is_error: bool) -> ToolOutcome {
    ToolOutcome {
        terminate: result.terminate == Some(true),
        message: ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            details: (!result.details.is_null()).then_some(result.details),
            content: result.content,
            is_error,
            timestamp: crate::ai::types::now_ms(),
            timing: None,
        },
    }
}

/// Runs a tool batch. A restarted batch takes the outcomes its earlier attempts recorded,
/// re-runs a call that began but did not end only when its tool is replay-safe (the others
/// end `interrupted`), and runs the calls that never began.
async fn execute(
    shared: &Arc<Shared>,
    run: &Run,
    assistant: &AssistantMessage,
    calls: Vec<ToolCall>,
    mode: crate::agent::ToolExecutionMode,
    signal: &CancellationToken,
) -> Result<Vec<ToolOutcome>, SessionError> {
    let mut sink = JournalSink {
        shared: Arc::clone(shared),
        attempt: run.attempt,
    };
    let (started, mut ended) = if run.attempt > 0 {
        recorded_tools(shared, run.since_seq)?
    } else {
        Default::default()
    };
    let replay_safe = |name: &str| {
        shared
            .options
            .tools
            .iter()
            .any(|tool| tool.name() == name && tool.replay_safe())
    };
    // Each call's outcome by position: calls are told apart by position, not id (a model may
    // give two calls one id; their outcomes must not overwrite each other).
    let mut outcomes: Vec<Option<ToolOutcome>> = vec![None; calls.len()];
    // Of the calls that began before, those still unaccounted for (began, never ended).
    let mut unfinished: HashMap<&str, usize> = started
        .iter()
        .map(|(id, began)| {
            let finished = ended.get(id).map_or(0, VecDeque::len);
            (id.as_str(), began.saturating_sub(finished))
        })
        .collect();
    let mut to_run = Vec::new();
    let mut to_run_at = Vec::new();
    for (position, call) in calls.iter().enumerate() {
        if let Some((result, is_error)) = ended.get_mut(&call.id).and_then(VecDeque::pop_front) {
            outcomes[position] = Some(outcome(call, result, is_error));
            continue;
        }
        let began = unfinished
            .get_mut(call.id.as_str())
            .filter(|left| **left > 0);
        if let Some(left) = began
            && !replay_safe(&call.name)
        {
            *left -= 1;
            let result = AgentToolResult::error(TOOL_INTERRUPTED)
                .with_details(serde_json::json!({"interrupted": true}));
            sink.emit(AgentEvent::ToolExecutionEnd {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                result: result.clone(),
                is_error: true,
            })
            .await;
            outcomes[position] = Some(outcome(call, result, true));
            continue;
        }
        to_run.push(call.clone());
        to_run_at.push(position);
    }
    let config = loop_config(shared);
    let ran = if to_run.is_empty() {
        Vec::new()
    } else {
        execute_tool_calls(
            assistant,
            to_run.clone(),
            mode,
            &shared.options.tools,
            &config,
            signal,
            &mut sink,
        )
        .await
    };
    for (position, outcome) in to_run_at.into_iter().zip(ran) {
        outcomes[position] = Some(outcome);
    }
    if let Some(reason) = &shared.lock().stopped {
        return Err(SessionError::Stopped(reason.clone()));
    }
    Ok(outcomes.into_iter().flatten().collect())
}

/// Compacts before a model call when the context nears the window (`signal`: the run's).
async fn auto_compact(shared: &Arc<Shared>, messages: &[AgentMessage], signal: &CancellationToken) {
    let settings = &shared.options.compaction;
    let window = shared.options.model.context_window;
    if !settings.enabled || window == 0 {
        return;
    }
    let previous = shared.lock().compaction.clone();
    let tokens = compaction::context_tokens(messages, previous.as_ref());
    if tokens + settings.reserve_tokens <= window {
        return;
    }
    let _ = compact(shared, messages, tokens, signal).await;
}

/// Answers the `compact()` calls waiting, on a run's messages (with its signal) or, idle, on
/// the transcript (nothing to abort then: a close drops the driver's task).
async fn serve_compactions(
    shared: &Arc<Shared>,
    run: Option<(&[AgentMessage], &CancellationToken)>,
) {
    let waiting = std::mem::take(&mut shared.lock().compact_requests);
    if waiting.is_empty() {
        return;
    }
    let owned;
    let idle = CancellationToken::new();
    let (messages, signal) = match run {
        Some(run) => run,
        None => {
            owned = shared.lock().transcript.clone();
            (&owned[..], &idle)
        }
    };
    let previous = shared.lock().compaction.clone();
    let tokens = compaction::context_tokens(messages, previous.as_ref());
    let result = compact(shared, messages, tokens, signal).await;
    for reply in waiting {
        // `SessionError` is not `Clone` (a store error holds an I/O error): each waiter gets
        // the failure's text, a summary failure's own text unwrapped so it is not prefixed twice.
        let _ = reply.send(match &result {
            Ok(compaction) => Ok(compaction.clone()),
            Err(SessionError::Compaction(why)) => Err(SessionError::Compaction(why.clone())),
            Err(error) => Err(SessionError::Compaction(error.to_string())),
        });
    }
}

/// Summarises the older messages and records the compaction. `Ok(None)`: nothing new to
/// compact (already covered, or a cut that failed before). The summary call is made as the
/// run's model calls are: with the `get_api_key` hook's key, cut short by `signal`.
async fn compact(
    shared: &Arc<Shared>,
    messages: &[AgentMessage],
    tokens: u64,
    signal: &CancellationToken,
) -> Result<Option<Compaction>, SessionError> {
    let (previous, failed) = {
        let inner = shared.lock();
        (inner.compaction.clone(), inner.failed_cuts.clone())
    };
    let settings = &shared.options.compaction;
    let covered = previous.as_ref().map_or(0, |c| c.covers);
    let Some(covers) = compaction::cut_point(messages, settings.keep_recent_tokens, covered) else {
        return Ok(None);
    };
    if failed.contains(&covers) {
        return Ok(None);
    }
    let mut options = shared.options.settings.stream_options.clone();
    options.signal = Some(signal.child_token());
    let summary = match apply_api_key_hook(
        &shared.options.hooks,
        &shared.options.model.provider,
        signal,
        &mut options,
    )
    .await
    {
        Ok(()) => {
            compaction::summarise(
                &shared.options.model,
                &shared.options.hooks.stream_fn(),
                &options,
                messages,
                previous.as_ref(),
                covers,
            )
            .await
        }
        Err(error) => Err(compaction::SummaryError::Failed(error)),
    };
    if signal.is_cancelled() {
        // Aborted, not failed: the cut may be tried again.
        return Err(SessionError::Compaction(ABORTED.to_owned()));
    }
    let mut inner = shared.lock();
    match summary {
        Ok(summary) => {
            let compaction = Compaction {
                summary,
                covers,
                tokens_before: tokens,
            };
            let control = Control::Compacted {
                compaction: compaction.clone(),
            };
            shared.write(&mut inner, 0, &[], std::slice::from_ref(&control))?;
            inner.compaction = Some(compaction.clone());
            Ok(Some(compaction))
        }
        Err(error) => {
            let error = error.to_string();
            let control = Control::CompactionFailed {
                covers,
                error: error.clone(),
            };
            shared.write(&mut inner, 0, &[], std::slice::from_ref(&control))?;
            inner.failed_cuts.insert(covers);
            Err(SessionError::Compaction(error))
        }
    }
}
