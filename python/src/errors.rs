//! The exception tree, and the one mapping from core's [`AgentError`] to it.
//!
//! Setup mistakes raise; model, network, tool and abort failures never do: they end the run
//! or stream with a message whose `stopReason` is `error` or `aborted` (pi's rule).

use pi_agent::agent::AgentError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    pi_agent,
    PiError,
    PyException,
    "Base class of every error raised by pi_agent."
);
create_exception!(
    pi_agent,
    AgentBusyError,
    PiError,
    "A prompt or continue was started while the agent is running (pi's message)."
);
create_exception!(
    pi_agent,
    CannotContinueError,
    PiError,
    "`continue_()` found nothing to continue from (empty transcript, or an assistant message \
     last with nothing queued)."
);
create_exception!(
    pi_agent,
    AgentRunError,
    PiError,
    "The agent's run ended abnormally (a bug in pi_agent; the transcript was repaired)."
);

create_exception!(
    pi_agent,
    ToolValidationError,
    PiError,
    "Tool-call arguments do not match the tool's schema (pi's validation report), or the tool \
     is unknown."
);

/// Turns a core agent error into the matching Python exception, with core's (pi's) message.
pub(crate) fn agent_error(error: AgentError) -> PyErr {
    let message = error.to_string();
    match error {
        AgentError::AlreadyProcessingPrompt | AgentError::AlreadyProcessingContinue => {
            AgentBusyError::new_err(message)
        }
        AgentError::NothingToContinue
        | AgentError::EmptyContext
        | AgentError::ContinueFromAssistant => CannotContinueError::new_err(message),
        AgentError::TranscriptBusy => AgentBusyError::new_err(message),
        _ => PiError::new_err(message),
    }
}
