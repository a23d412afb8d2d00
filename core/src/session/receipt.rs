//! [`Receipt`]: what accepting a request returns (the same again for a repeated id).

use serde::{Deserialize, Serialize};

/// The kind of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// Starts a run (or, while one runs, waits as a follow-up).
    Prompt,
    /// Injected after the current turn's tool calls (or starts a run when idle).
    Steer,
    /// Runs when the agent would otherwise stop (or starts a run when idle).
    FollowUp,
}

impl RequestKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prompt => "prompt",
            Self::Steer => "steer",
            Self::FollowUp => "follow_up",
        }
    }
}

/// A request was accepted and recorded: it will be applied exactly once, whatever happens to
/// the process. JSON: `{"requestId": "r1", "kind": "prompt", "seq": 41}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// The caller's id.
    pub request_id: String,
    /// What it was.
    pub kind: RequestKind,
    /// The journal's last seq when it was accepted: subscribe after it to see what it caused.
    pub seq: u64,
}
