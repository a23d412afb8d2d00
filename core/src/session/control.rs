//! The control log: what a session writes, besides its events, to rebuild its state on
//! reopen. Private: clients see events only.

use serde::{Deserialize, Serialize};

use super::compaction::Compaction;
use super::receipt::RequestKind;
use crate::agent::{AgentMessage, StepInput, StepperConfig};

/// One control entry (JSON with a `type` tag).
#[derive(Debug, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Control {
    /// A request was accepted (its message waits in the inbox until a run takes it).
    Request {
        id: String,
        kind: RequestKind,
        message: AgentMessage,
        /// The journal's last seq when it was accepted (the receipt's).
        seq: u64,
    },
    /// A run started with these requests' messages as its prompts, under `config` (the
    /// stepper's settings then: a reopened session replays the run under them, whatever its
    /// options are now; absent in journals written before it was recorded).
    RunStart {
        requests: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        config: Option<StepperConfig>,
    },
    /// A model call or tool batch began (`attempt` > 0: redone after a restart); tool events
    /// of this action are the journal's records after `sinceSeq`.
    ActionStart { attempt: u32, since_seq: u64 },
    /// The stepper was resumed with `input` (after `abort()` when `aborted`); `consumed` are
    /// the requests whose messages a poll took.
    Input {
        input: StepInput,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        consumed: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        aborted: bool,
    },
    /// Older messages were summarised.
    Compacted { compaction: Compaction },
    /// A summary call failed for this cut point: not tried again there.
    CompactionFailed { covers: usize, error: String },
}
