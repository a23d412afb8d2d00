//! Context-overflow detection (pi's `isContextOverflow`): did this failed (or suspiciously
//! empty) response happen because the prompt no longer fits the model's context window?
//! Applications use it to decide to compact the transcript and retry.

use std::sync::{Arc, PoisonError, RwLock};

use regex::RegexSet;

use super::error_kind::ErrorKind;
use super::types::{AssistantMessage, StopReason};

/// Error texts that mean "the prompt is too long", per provider (pi's list).
pub const OVERFLOW_PATTERNS: [&str; 20] = [
    r"prompt is too long",
    r"request_too_large",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"too large for model with \d+ maximum context length",
    r"model_context_window_exceeded",
    r"prompt too long; exceeded (?:max )?context length",
    r"context[_ ]length[_ ]exceeded",
    r"too many tokens",
    r"token limit exceeded",
    r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",
];

/// Error texts that look similar but are not overflows (throttling, rate limits).
pub const NON_OVERFLOW_PATTERNS: [&str; 3] = [
    r"^(?:Throttling error|Service unavailable):",
    r"rate limit",
    r"too many requests",
];

fn case_insensitive(patterns: &[&str]) -> RegexSet {
    RegexSet::new(patterns.iter().map(|p| format!("(?i){p}"))).unwrap_or_else(|_| RegexSet::empty())
}

/// The compiled sets (overflow, non-overflow), built on first use; [`release_overflow_patterns`]
/// frees them (with their match caches) and the next use builds them again.
static PATTERNS: RwLock<Option<Arc<(RegexSet, RegexSet)>>> = RwLock::new(None);

fn patterns() -> Arc<(RegexSet, RegexSet)> {
    if let Some(sets) = PATTERNS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        return Arc::clone(sets);
    }
    let mut slot = PATTERNS.write().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(slot.get_or_insert_with(|| {
        Arc::new((
            case_insensitive(&OVERFLOW_PATTERNS),
            case_insensitive(&NON_OVERFLOW_PATTERNS),
        ))
    }))
}

/// Frees the compiled patterns (for a clean exit under a leak checker: the C ABI's
/// `pi_shutdown`).
pub fn release_overflow_patterns() {
    *PATTERNS.write().unwrap_or_else(PoisonError::into_inner) = None;
}

/// `true` when an error text reports a context overflow (and is not a rate limit or a
/// throttling message that merely looks like one).
pub(crate) fn is_overflow_text(text: &str) -> bool {
    let sets = patterns();
    !sets.1.is_match(text) && sets.0.is_match(text)
}

/// `true` when `message` reports a context overflow: an error whose text matches a known
/// overflow message, a successful response whose input exceeded `context_window` (z.ai accepts
/// and truncates silently), or a `length` stop with no output and a full window (Xiaomi).
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    if message.stop_reason == StopReason::Error
        && (message.error_kind == Some(ErrorKind::ContextOverflow)
            || message
                .error_message
                .as_deref()
                .is_some_and(is_overflow_text))
    {
        return true;
    }
    let input = message.usage.input.saturating_add(message.usage.cache_read);
    match context_window.filter(|window| *window > 0) {
        Some(window) if message.stop_reason == StopReason::Stop => input > window,
        Some(window) if message.stop_reason == StopReason::Length && message.usage.output == 0 => {
            input as f64 >= window as f64 * 0.99
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::Usage;

    fn failed(text: &str) -> AssistantMessage {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(text.to_owned()),
            ..AssistantMessage::default()
        }
    }

    #[test]
    fn matches_pis_cases() {
        assert!(is_context_overflow(
            &failed("400 prompt is too long: 210000 tokens > 200000 maximum"),
            None
        ));
        assert!(is_context_overflow(
            &failed("500 Prompt too long; exceeded max context length by 12 tokens"),
            None
        ));
        assert!(
            !is_context_overflow(&failed("500 model runner crashed"), None),
            "other Ollama errors"
        );
        assert!(!is_context_overflow(
            &failed("Throttling error: Too many tokens, please wait"),
            None
        ));
        assert!(!is_context_overflow(
            &failed("429 rate limit: too many tokens per minute"),
            None
        ));
        assert!(is_context_overflow(
            &failed("413 status code (no body)"),
            None
        ));
        let xiaomi = AssistantMessage {
            stop_reason: StopReason::Length,
            usage: Usage {
                input: 99_500,
                output: 0,
                ..Usage::default()
            },
            ..AssistantMessage::default()
        };
        assert!(is_context_overflow(&xiaomi, Some(100_000)));
        let normal_length = AssistantMessage {
            stop_reason: StopReason::Length,
            usage: Usage {
                input: 1_000,
                output: 500,
                ..Usage::default()
            },
            ..AssistantMessage::default()
        };
        assert!(!is_context_overflow(&normal_length, Some(100_000)));
        let silent = AssistantMessage {
            usage: Usage {
                input: 120_000,
                ..Usage::default()
            },
            ..AssistantMessage::default()
        };
        assert!(is_context_overflow(&silent, Some(100_000)));
    }
}
