//! Run limits: how far one run may go (model calls, tool calls, tokens, cost) before the agent
//! ends it. pi has none; a model that calls a tool forever would run forever.
//!
//! The stepper checks them (so every driver, durable ones included, enforces the same limits):
//! the counts and budgets before each model call, the tool-call limit before each batch of
//! calls. A run that reaches one ends cleanly, like a failed model call: its last message is an
//! assistant message with `stopReason: "error"`, `errorKind: "run_limit"` and `runLimit` naming
//! the limit, then `turn_end` and `agent_end`.

use serde::{Deserialize, Serialize};

use crate::ai::types::{AssistantContent, AssistantMessage, StopReason, TextContent, Usage};
use crate::ai::{ErrorKind, RunLimit};

/// The default [`RunLimits::max_turns`]: enough for long tool-using tasks, few enough that a
/// model stuck in a tool loop stops within minutes rather than burning a budget.
pub const DEFAULT_MAX_TURNS: u32 = 100;

/// How far one run may go. `None` is no limit; every limit but `max_turns` is off by default.
///
/// JSON (`limits` in the agent's settings): `{"maxTurns":100,"maxToolCalls":null,
/// "maxInputTokens":null,"maxOutputTokens":null,"maxTotalTokens":null,"maxCostUsd":null}`;
/// a key left out keeps its default, `"maxTurns": null` turns the turn guard off.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RunLimits {
    /// Model calls per run (default [`DEFAULT_MAX_TURNS`]). Checked before each call.
    pub max_turns: Option<u32>,
    /// Tool calls per run. Checked before each batch: the calls beyond the limit do not run
    /// (each gets an error result saying so) and the run ends before the next model call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u64>,
    /// Input tokens per run, cache reads and writes included. Budgets are checked before each
    /// model call against what the run's responses reported, so the call that crosses one
    /// completes and the next one does not start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    /// Output tokens per run (reasoning included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// All tokens per run (`usage.totalTokens` summed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// Cost per run in USD (`usage.cost.total` summed; models without prices cost 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            max_turns: Some(DEFAULT_MAX_TURNS),
            max_tool_calls: None,
            max_input_tokens: None,
            max_output_tokens: None,
            max_total_tokens: None,
            max_cost_usd: None,
        }
    }
}

impl RunLimits {
    /// No limit at all (pi's behaviour).
    pub fn none() -> Self {
        Self {
            max_turns: None,
            ..Self::default()
        }
    }

    /// The first limit (in [`RunLimit::ALL`] order, tool calls aside) that `usage` has
    /// reached, with the text of the message that ends the run.
    pub(crate) fn reached(&self, usage: &RunUsage) -> Option<(RunLimit, String)> {
        if let Some(max) = self.max_turns
            && usage.turns >= max
        {
            return Some((
                RunLimit::MaxTurns,
                format!(
                    "The run reached its limit of {} (maxTurns)",
                    plural(max.into(), "turn")
                ),
            ));
        }
        let budgets = [
            (
                RunLimit::MaxInputTokens,
                self.max_input_tokens,
                usage.input_tokens,
                "input tokens",
            ),
            (
                RunLimit::MaxOutputTokens,
                self.max_output_tokens,
                usage.output_tokens,
                "output tokens",
            ),
            (
                RunLimit::MaxTotalTokens,
                self.max_total_tokens,
                usage.total_tokens,
                "tokens",
            ),
        ];
        for (limit, max, used, what) in budgets {
            if let Some(max) = max
                && used >= max
            {
                return Some((
                    limit,
                    format!("The run used {used} {what}, its budget is {max} ({limit})"),
                ));
            }
        }
        if let Some(max) = self.max_cost_usd
            && usage.cost_usd >= max
        {
            return Some((
                RunLimit::MaxCostUsd,
                format!(
                    "The run cost ${:.6}, its budget is ${max} (maxCostUsd)",
                    usage.cost_usd
                ),
            ));
        }
        None
    }

    /// How many of `wanted` tool calls may still run after `used` ran.
    pub(crate) fn tool_calls_allowed(&self, used: u64, wanted: usize) -> usize {
        match self.max_tool_calls {
            None => wanted,
            Some(max) => {
                usize::try_from(max.saturating_sub(used)).map_or(wanted, |left| left.min(wanted))
            }
        }
    }

    /// The text of a tool result for a call the tool-call limit kept from running.
    pub(crate) fn tool_call_refusal(&self) -> String {
        format!("Tool call not run: {}", self.tool_call_limit_text())
    }

    /// What the run-ending message says when the tool-call limit was reached.
    pub(crate) fn tool_call_limit_text(&self) -> String {
        let max = self.max_tool_calls.unwrap_or_default();
        format!(
            "the run reached its limit of {} (maxToolCalls)",
            plural(max, "tool call")
        )
    }
}

/// `1 turn`, `2 turns`.
fn plural(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("{count} {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// What a run has used so far (the stepper keeps it; see
/// [`AgentStepper::usage`](super::AgentStepper::usage)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RunUsage {
    /// Model calls started.
    pub turns: u32,
    /// Tool calls started (calls the tool-call limit kept from running are not counted).
    pub tool_calls: u64,
    /// Input tokens reported, cache reads and writes included.
    pub input_tokens: u64,
    /// Output tokens reported.
    pub output_tokens: u64,
    /// All tokens reported.
    pub total_tokens: u64,
    /// Cost reported, in USD.
    pub cost_usd: f64,
}

impl RunUsage {
    /// Adds one response's usage.
    pub(crate) fn add(&mut self, usage: &Usage) {
        self.input_tokens = self
            .input_tokens
            .saturating_add(usage.input)
            .saturating_add(usage.cache_read)
            .saturating_add(usage.cache_write);
        self.output_tokens = self.output_tokens.saturating_add(usage.output);
        self.total_tokens = self.total_tokens.saturating_add(usage.total_tokens);
        self.cost_usd += usage.cost.total;
    }
}

/// The message that ends a run at a limit. The stepper has no clock and no model, so it takes
/// them from `last`, the run's last assistant message (when there is one).
pub(crate) fn limit_message(
    limit: RunLimit,
    text: String,
    last: Option<&AssistantMessage>,
) -> AssistantMessage {
    AssistantMessage {
        content: vec![AssistantContent::Text(TextContent::new(""))],
        api: last.map(|m| m.api.clone()).unwrap_or_default(),
        provider: last.map(|m| m.provider.clone()).unwrap_or_default(),
        model: last.map(|m| m.model.clone()).unwrap_or_default(),
        stop_reason: StopReason::Error,
        timestamp: last.map_or(0, |m| m.timestamp),
        error_message: Some(text),
        error_kind: Some(ErrorKind::RunLimit),
        run_limit: Some(limit),
        ..AssistantMessage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_defaults_and_null_turns_the_guard_off() {
        let limits: RunLimits = serde_json::from_str("{}").unwrap();
        assert_eq!(limits.max_turns, Some(DEFAULT_MAX_TURNS));
        let limits: RunLimits = serde_json::from_str(r#"{"maxTurns":null}"#).unwrap();
        assert_eq!(limits, RunLimits::none());
        assert_eq!(
            serde_json::to_string(&RunLimits::default()).unwrap(),
            r#"{"maxTurns":100}"#
        );
        let error = serde_json::from_str::<RunLimits>(r#"{"maxTurn":3}"#).unwrap_err();
        assert!(
            error.to_string().contains("unknown field `maxTurn`"),
            "{error}"
        );
    }

    #[test]
    fn budgets_are_reached_at_their_value_and_name_the_limit() {
        let limits = RunLimits {
            max_total_tokens: Some(100),
            max_cost_usd: Some(0.5),
            ..RunLimits::none()
        };
        let mut usage = RunUsage::default();
        assert_eq!(limits.reached(&usage), None);
        usage.total_tokens = 100;
        let (limit, text) = limits.reached(&usage).unwrap();
        assert_eq!(limit, RunLimit::MaxTotalTokens);
        assert_eq!(
            text,
            "The run used 100 tokens, its budget is 100 (maxTotalTokens)"
        );
        usage.total_tokens = 0;
        usage.cost_usd = 0.75;
        assert_eq!(limits.reached(&usage).unwrap().0, RunLimit::MaxCostUsd);
        assert_eq!(limits.tool_calls_allowed(7, 3), 3);
        let limits = RunLimits {
            max_tool_calls: Some(8),
            ..RunLimits::none()
        };
        assert_eq!(limits.tool_calls_allowed(7, 3), 1);
        assert_eq!(limits.tool_calls_allowed(9, 3), 0);
    }
}
