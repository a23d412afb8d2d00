//! Errors of the agent layer: misuse of the API (what pi throws). Model and tool failures are
//! not errors here; they are messages in the transcript.

/// A call the agent cannot accept in its current state. The texts are pi's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// `prompt` while a run is active.
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AlreadyProcessingPrompt,
    /// `continue` while a run is active.
    #[error("Agent is already processing. Wait for completion before continuing.")]
    AlreadyProcessingContinue,
    /// `continue` with an empty transcript.
    #[error("No messages to continue from")]
    NothingToContinue,
    /// The low-level `agent_loop_continue` with an empty context.
    #[error("Cannot continue: no messages in context")]
    EmptyContext,
    /// `continue` when the transcript ends with an assistant message and no message is queued.
    #[error("Cannot continue from message role: assistant")]
    ContinueFromAssistant,
    /// `reset`, `set_messages` or `append_message` while a run is active.
    #[error(
        "Cannot change the transcript while a run is active. Abort the run and wait for idle first, or use steer() or followUp()."
    )]
    TranscriptBusy,
    /// A run started outside a tokio runtime (its work is a task on the caller's runtime).
    #[error("Agent runs must be started from within a tokio runtime")]
    NoRuntime,
}

/// Declares a failure that is one message for a model or a transcript to read (a tool's, a
/// hook's, an event source's): a `thiserror` type displaying its text, made from a `String` or
/// a `&str`.
macro_rules! message_error {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
        #[error("{0}")]
        pub struct $name(pub String);

        impl $name {
            /// A failure with this message.
            pub fn new(message: impl Into<String>) -> Self {
                Self(message.into())
            }
        }

        impl From<String> for $name {
            fn from(message: String) -> Self {
                Self(message)
            }
        }

        impl From<&str> for $name {
            fn from(message: &str) -> Self {
                Self(message.to_owned())
            }
        }
    };
}
pub(crate) use message_error;
