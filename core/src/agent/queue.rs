//! Steering and follow-up queues (pi's `PendingMessageQueue`).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::message::AgentMessage;

/// How many queued messages one poll takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    /// Everything queued.
    All,
    /// The oldest message only (pi's default).
    #[default]
    OneAtATime,
}

/// A FIFO of messages waiting to be injected into a run. The mode it drains with is the
/// agent's setting ([`AgentSettings`](super::AgentSettings)), passed to each drain.
#[derive(Clone, Debug, Default)]
pub struct MessageQueue {
    messages: VecDeque<AgentMessage>,
}

impl MessageQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a message at the back.
    pub fn enqueue(&mut self, message: AgentMessage) {
        self.messages.push_back(message);
    }

    /// Whether anything is queued.
    pub fn has_items(&self) -> bool {
        !self.messages.is_empty()
    }

    /// Number of queued messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.messages.clear();
    }

    /// The queued messages, oldest first.
    pub fn messages(&self) -> impl Iterator<Item = &AgentMessage> {
        self.messages.iter()
    }

    /// Takes messages according to `mode`.
    pub fn drain(&mut self, mode: QueueMode) -> Vec<AgentMessage> {
        match mode {
            QueueMode::All => self.messages.drain(..).collect(),
            QueueMode::OneAtATime => self.messages.pop_front().into_iter().collect(),
        }
    }
}
