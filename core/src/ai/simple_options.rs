//! What [`stream_simple`](super::stream_simple) does before a provider's `stream` (pi's
//! `simple-options.ts`): the shared defaults, and the helpers each provider's reasoning mapping
//! uses.
//!
//! Split as in pi: `stream` sends exactly what the provider keys of [`StreamOptions`] say;
//! `stream_simple` first fills those keys from the api-independent `reasoning` level (each
//! provider's [`ApiProvider::stream_simple`](super::api_provider::ApiProvider::stream_simple)), so
//! an agent or a UI can offer one thinking setting for every model.

use super::catalog::clamp_thinking_level;
use super::model::Model;
use super::options::{StreamOptions, ThinkingBudgets};
use super::thinking::ThinkingLevel;

/// Output-token cap that [`stream_simple`](super::stream_simple) applies when the caller sets
/// none (pi's `buildBaseOptions`).
pub const SIMPLE_MAX_TOKENS_CAP: u64 = 32_000;

/// The least output a thinking budget must leave (pi's `minOutputTokens`).
const MIN_OUTPUT_TOKENS: u64 = 1024;

/// pi's `buildBaseOptions`: the caller's options, with `maxTokens` defaulting to
/// `min(model.maxTokens, 32000)` when the model states a limit.
///
/// Unlike pi, the caller's provider keys (`toolChoice`, `serviceTier`, ...) are kept; only the
/// reasoning keys are then decided by the level.
pub(crate) fn base_options(model: &Model, options: &StreamOptions) -> StreamOptions {
    let mut base = options.clone();
    if base.max_tokens.is_none() && model.max_tokens > 0 {
        base.max_tokens = Some(model.max_tokens.min(SIMPLE_MAX_TOKENS_CAP));
    }
    base
}

/// The requested level clamped to what `model` supports (pi's `clampThinkingLevel`); `None`
/// when none is asked or it clamps to `off`.
pub(crate) fn clamped_level(
    model: &Model,
    reasoning: Option<ThinkingLevel>,
) -> Option<ThinkingLevel> {
    clamp_thinking_level(model, reasoning?).enabled()
}

/// pi's default thinking budget for `level` (`xhigh` counts as `high`; `off` thinks none).
pub fn default_thinking_budget(level: ThinkingLevel) -> u64 {
    match level {
        ThinkingLevel::Off => 0,
        ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        ThinkingLevel::High | ThinkingLevel::Xhigh => 16384,
    }
}

/// [`adjust_max_tokens_for_thinking`] applied to `simple` (its output cap and custom budgets,
/// `model`'s limit): raises the cap and returns the thinking budget to send.
pub(crate) fn add_thinking_budget(
    simple: &mut StreamOptions,
    model: &Model,
    level: ThinkingLevel,
) -> u64 {
    let (max_tokens, budget) = adjust_max_tokens_for_thinking(
        simple.max_tokens.unwrap_or(0),
        model.max_tokens,
        level,
        simple.thinking_budgets.as_ref(),
    );
    simple.max_tokens = Some(max_tokens);
    budget
}

/// pi's `adjustMaxTokensForThinking`: the thinking budget is added on top of the requested
/// output (capped by the model's limit, when it has one); if the cap leaves no room for the
/// budget, the budget shrinks to leave 1024 tokens of output. Returns `(max_tokens, budget)`.
pub fn adjust_max_tokens_for_thinking(
    base_max_tokens: u64,
    model_max_tokens: u64,
    level: ThinkingLevel,
    custom: Option<&ThinkingBudgets>,
) -> (u64, u64) {
    let mut budget = custom
        .and_then(|budgets| budgets.get(level))
        .unwrap_or_else(|| default_thinking_budget(level));
    let mut max_tokens = base_max_tokens.saturating_add(budget);
    if model_max_tokens > 0 {
        max_tokens = max_tokens.min(model_max_tokens);
    }
    if max_tokens <= budget {
        budget = max_tokens.saturating_sub(MIN_OUTPUT_TOKENS);
    }
    (max_tokens, budget)
}

/// pi's `model.thinkingLevelMap?.[effort] ?? effort`: the model's wire value for a level, else
/// the level's own name (also for a level mapped to `null`, as JavaScript's `??` does).
pub(crate) fn mapped_effort(model: &Model, effort: &str) -> String {
    model
        .thinking_level_map
        .as_ref()
        .and_then(|map| map.get(effort))
        .and_then(Option::clone)
        .unwrap_or_else(|| effort.to_owned())
}

/// The simple mapping of the OpenAI-style apis (completions, responses, azure): the clamped
/// level becomes `reasoningEffort` (none for `off`).
pub(crate) fn with_reasoning_effort(model: &Model, options: &StreamOptions) -> StreamOptions {
    let mut simple = base_options(model, options);
    simple.reasoning_effort =
        clamped_level(model, options.reasoning).map(|level| level.as_str().to_owned());
    simple
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_budgets_like_pi() {
        assert_eq!(
            adjust_max_tokens_for_thinking(32_000, 64_000, ThinkingLevel::Medium, None),
            (40_192, 8192)
        );
        assert_eq!(
            adjust_max_tokens_for_thinking(32_000, 8_000, ThinkingLevel::High, None),
            (8_000, 6_976)
        );
        assert_eq!(
            adjust_max_tokens_for_thinking(100, 1_000, ThinkingLevel::Minimal, None),
            (1_000, 0)
        );
        let custom = ThinkingBudgets {
            medium: Some(5_000),
            ..ThinkingBudgets::default()
        };
        assert_eq!(
            adjust_max_tokens_for_thinking(32_000, 64_000, ThinkingLevel::Medium, Some(&custom)),
            (37_000, 5_000)
        );
    }
}
