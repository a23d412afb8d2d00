//! Rebuilding a session from its journal on reopen: the control log is replayed through the
//! stepper (which is deterministic), so the state is exactly what it was after the last
//! write; nothing is re-run here.

use std::collections::VecDeque;

use serde_json::value::RawValue;

use super::control::Control;
use super::error::SessionError;
use super::options::SessionOptions;
use super::receipt::Receipt;
use super::state::{Inner, Pending, apply_message_ends};
use super::store::SessionStore;
use crate::agent::{AgentMessage, AgentStepper, RunStart, StepAction, StepperConfig};

/// A run in progress: the stepper, the action it waits for, and how that action stands.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) stepper: AgentStepper,
    pub(crate) action: StepAction,
    /// Restarts of the current action (valid while `in_flight`).
    pub(crate) attempt: u32,
    /// The journal's seq when the current action first began.
    pub(crate) since_seq: u64,
    /// The action began (an `action_start` was written) and no input answered it yet.
    pub(crate) in_flight: bool,
}

/// The stepper's static facts for a session's runs.
pub(crate) fn stepper_config(options: &SessionOptions) -> StepperConfig {
    StepperConfig {
        tool_execution: options.settings.tool_execution,
        tool_modes: options
            .tools
            .iter()
            .filter_map(|tool| Some((tool.name().to_owned(), tool.execution_mode()?)))
            .collect(),
        limits: options.settings.limits.clone(),
        ..StepperConfig::default()
    }
}

/// Starts a run under `config` on `transcript` with `prompts`; the events are the run's first
/// records.
pub(crate) fn start_run(
    config: StepperConfig,
    options: &SessionOptions,
    transcript: &[AgentMessage],
    prompts: Vec<AgentMessage>,
) -> (Run, Vec<crate::agent::AgentEvent>) {
    let (stepper, step) = AgentStepper::start(
        config,
        options.system_prompt.clone(),
        transcript.to_vec(),
        RunStart::Prompt { prompts },
    );
    (
        Run {
            stepper,
            action: step.action,
            attempt: 0,
            since_seq: 0,
            in_flight: false,
        },
        step.events,
    )
}

/// Takes the requests `ids` out of `inbox`, in the order of `ids`.
pub(crate) fn take_requests(inbox: &mut VecDeque<Pending>, ids: &[String]) -> Vec<AgentMessage> {
    let mut messages = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(position) = inbox.iter().position(|pending| &pending.id == id)
            && let Some(pending) = inbox.remove(position)
        {
            messages.push(pending.message);
        }
    }
    messages
}

/// Reads `session` back from `store`, dropping a torn last entry.
pub(crate) fn restore(
    store: &dyn SessionStore,
    session: &str,
    options: &SessionOptions,
) -> Result<(Inner, Option<Run>), SessionError> {
    let mut heads = store.heads(session)?;
    let stored = store.controls(session)?;
    let mut controls = Vec::with_capacity(stored.len());
    let mut torn = false;
    let count = stored.len();
    for (position, entry) in stored.into_iter().enumerate() {
        match serde_json::from_str::<Control>(&entry.entry) {
            Ok(control) => controls.push(control),
            // Torn: not whole JSON (a write cut short). A whole entry that does not read is
            // not dropped: it was committed, and deleting it would lose what it holds.
            Err(error) if position + 1 == count && (error.is_eof() || error.is_syntax()) => {
                torn = true;
                heads.control = entry.index - 1;
            }
            Err(error) => {
                return Err(SessionError::Corrupt {
                    session: session.to_owned(),
                    what: "control entry",
                    position: entry.index,
                    reason: error.to_string(),
                });
            }
        }
    }
    if heads.seq > 0 {
        let last = store.records(session, heads.seq - 1, 1)?;
        if let Some(record) = last.first()
            && RawValue::from_string(record.event.clone()).is_err()
        {
            torn = true;
            heads.seq = record.seq - 1;
        }
    }
    if torn {
        store.truncate(session, heads.seq, heads.control)?;
    }

    let mut inner = Inner {
        heads,
        ..Inner::default()
    };
    let mut run: Option<Run> = None;
    let corrupt = |index: usize, reason: String| SessionError::Corrupt {
        session: session.to_owned(),
        what: "control entry",
        position: index as u64 + 1,
        reason,
    };
    for (index, control) in controls.into_iter().enumerate() {
        match control {
            Control::Request {
                id,
                kind,
                message,
                seq,
            } => {
                inner.receipts.insert(
                    id.clone(),
                    Receipt {
                        request_id: id.clone(),
                        kind,
                        seq,
                    },
                );
                inner.inbox.push_back(Pending { id, kind, message });
            }
            Control::RunStart { requests, config } => {
                let prompts = take_requests(&mut inner.inbox, &requests);
                // As the run ran: with other settings now (a lower turn limit, sequential
                // tools) the journal's inputs would not fit the steps replayed.
                let config = config.unwrap_or_else(|| stepper_config(options));
                let (started, events) = start_run(config, options, &inner.transcript, prompts);
                apply_message_ends(&mut inner.transcript, &events);
                run = Some(started);
            }
            Control::ActionStart { attempt, since_seq } => {
                let current = run
                    .as_mut()
                    .ok_or_else(|| corrupt(index, "an action outside a run".into()))?;
                current.attempt = attempt;
                current.since_seq = since_seq;
                current.in_flight = true;
            }
            Control::Input {
                input,
                consumed,
                aborted,
            } => {
                let current = run
                    .as_mut()
                    .ok_or_else(|| corrupt(index, "a step input outside a run".into()))?;
                take_requests(&mut inner.inbox, &consumed);
                if aborted {
                    current.stepper.abort();
                }
                let step = current
                    .stepper
                    .resume(input)
                    .map_err(|error| corrupt(index, error.to_string()))?;
                apply_message_ends(&mut inner.transcript, &step.events);
                current.in_flight = false;
                current.attempt = 0;
                if matches!(step.action, StepAction::Finished { .. }) {
                    run = None;
                } else {
                    current.action = step.action;
                }
            }
            Control::Compacted { compaction } => inner.compaction = Some(compaction),
            Control::CompactionFailed { covers, .. } => {
                inner.failed_cuts.insert(covers);
            }
        }
    }
    inner.running = run.is_some();
    Ok((inner, run))
}
