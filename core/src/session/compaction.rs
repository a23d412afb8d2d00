//! Compaction: when a session's context nears the model's window (or on demand), the older
//! turns are summarised by the model into one message, which the model then sees in their
//! place (through the `transform_context` step). The transcript keeps every message; the
//! journal records the compaction, so a reopened session sends the same context.
//!
//! Guards: a compaction never covers a range already covered (no compacting twice), and a
//! cut point whose summary call failed is not tried again (no loop of failing calls); the
//! session then goes on with the whole context.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::agent::{AgentMessage, StreamFn, TransformContext};
use crate::ai::{
    AssistantMessage, Context, Message, Model, StopReason, StreamOptions, UserMessage,
};

/// When a session compacts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionSettings {
    /// Compact on its own before a model call whose context nears the window (default true).
    pub enabled: bool,
    /// Compact when the context exceeds the model's window minus this many tokens
    /// (default 16384, pi's `reserveTokens`).
    pub reserve_tokens: u64,
    /// Keep at least this many tokens of the newest messages as they are (default 20000,
    /// pi's `keepRecentTokens`).
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            reserve_tokens: 16_384,
            keep_recent_tokens: 20_000,
        }
    }
}

/// A compaction: the first `covers` messages of the transcript are replaced, in what the model
/// sees, by one user message with `summary`. JSON: `{"summary", "covers", "tokensBefore"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// The model's summary of the covered messages.
    pub summary: String,
    /// How many messages (from the start of the transcript) it stands for.
    pub covers: usize,
    /// The estimated context size when it was made.
    pub tokens_before: u64,
}

/// The start of the message that stands for compacted turns.
pub const SUMMARY_PREFIX: &str = "The conversation so far was compacted; its summary:";

const SUMMARY_PROMPT: &str = "You summarise conversations between a user and an AI \
    assistant that uses tools. Write a concise summary that lets the assistant go on: the \
    user's goals and requests, decisions made, facts learnt (tool results that matter), and \
    what is still open. Answer with the summary only.";

impl Compaction {
    /// The message the model sees in place of the covered ones.
    pub fn message(&self) -> AgentMessage {
        Message::User(UserMessage::text(format!(
            "{SUMMARY_PREFIX}\n\n{}",
            self.summary
        )))
        .into()
    }

    /// `messages` as the model sees them after this compaction.
    pub fn apply(&self, messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
        if self.covers > messages.len() {
            return messages;
        }
        let mut out = Vec::with_capacity(messages.len() - self.covers + 1);
        out.push(self.message());
        out.extend(messages.into_iter().skip(self.covers));
        out
    }
}

/// A rough token count of a message: a quarter of its JSON length (pi's estimate).
fn estimate(message: &AgentMessage) -> u64 {
    serde_json::to_string(message).map_or(0, |json| json.len() as u64 / 4)
}

/// The context size the next model call would have: the last answer's reported usage plus an
/// estimate of what came after it (all estimated when no answer reported usage).
pub(crate) fn context_tokens(messages: &[AgentMessage], compaction: Option<&Compaction>) -> u64 {
    let last_usage = messages.iter().enumerate().rev().find_map(|(i, message)| {
        let usage = message.as_assistant()?.usage;
        (usage.total_tokens > 0).then_some((i, usage.total_tokens))
    });
    match last_usage {
        Some((index, tokens)) => tokens + messages[index + 1..].iter().map(estimate).sum::<u64>(),
        None => {
            let start = compaction.map_or(0, |c| c.covers.min(messages.len()));
            compaction.map_or(0, |c| c.summary.len() as u64 / 4)
                + messages[start..].iter().map(estimate).sum::<u64>()
        }
    }
}

/// Where a new compaction would cut: before a user message, keeping at least
/// `keep_recent_tokens` of the newest messages; `None` when that cut would not cover more
/// than `previous` already does.
pub(crate) fn cut_point(
    messages: &[AgentMessage],
    keep_recent_tokens: u64,
    previous: usize,
) -> Option<usize> {
    let mut kept = 0;
    let mut cut = None;
    for (index, message) in messages.iter().enumerate().rev() {
        // A cut before a user message never separates a tool call from its result.
        if kept >= keep_recent_tokens && is_user(message) {
            cut = Some(index);
            break;
        }
        kept += estimate(message);
    }
    // Nothing old enough: on demand, cut before the last user message.
    let cut = cut.or_else(|| messages.iter().rposition(is_user))?;
    (cut > previous).then_some(cut)
}

fn is_user(message: &AgentMessage) -> bool {
    matches!(message, AgentMessage::Llm(Message::User(_)))
}

/// Why the summary call gave no summary. Its text is what the journal's `compactionFailed`
/// entry and [`SessionError::Compaction`](super::SessionError::Compaction) carry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SummaryError {
    /// The call ended in an error or was aborted: the provider's message.
    #[error("{0}")]
    Failed(String),
    /// The call answered, with no text.
    #[error("the summary call answered no text")]
    Empty,
}

/// Asks `model` for a summary of `messages[previous.covers..covers]` (with the previous
/// summary in front).
pub(crate) async fn summarise(
    model: &Model,
    stream_fn: &StreamFn,
    options: &StreamOptions,
    messages: &[AgentMessage],
    previous: Option<&Compaction>,
    covers: usize,
) -> Result<String, SummaryError> {
    let from = previous.map_or(0, |c| c.covers);
    let mut text = String::new();
    if let Some(previous) = previous {
        text.push_str("Summary of the earlier conversation:\n");
        text.push_str(&previous.summary);
        text.push_str("\n\n");
    }
    text.push_str("Conversation to summarise (JSON messages, oldest first):\n");
    for message in &messages[from..covers] {
        text.push_str(&serde_json::to_string(message).unwrap_or_default());
        text.push('\n');
    }
    let context = Context {
        system_prompt: Some(SUMMARY_PROMPT.to_owned()),
        messages: vec![Message::User(UserMessage::text(text))],
        tools: None,
    };
    let answer: AssistantMessage = stream_fn(model, &context, options).result().await;
    if matches!(answer.stop_reason, StopReason::Error | StopReason::Aborted) {
        return Err(SummaryError::Failed(
            answer
                .error_message
                .unwrap_or_else(|| "the summary call failed".to_owned()),
        ));
    }
    let summary = answer.text();
    if summary.trim().is_empty() {
        return Err(SummaryError::Empty);
    }
    Ok(summary)
}

/// The session's `transform_context`: the compaction first, then the host's own hook.
pub(crate) fn transform(
    compaction: Option<Compaction>,
    host: Option<TransformContext>,
) -> Option<TransformContext> {
    let Some(compaction) = compaction else {
        return host;
    };
    let compaction = Arc::new(compaction);
    Some(Arc::new(move |messages, signal| {
        let messages = compaction.apply(messages);
        match &host {
            Some(host) => host(messages, signal),
            None => Box::pin(std::future::ready(Ok(messages))),
        }
    }))
}
