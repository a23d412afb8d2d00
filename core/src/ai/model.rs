//! `Model`: which wire API to speak, where, and what the model can do and costs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::types::{Usage, UsageCost};

/// What a model accepts as input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputModality {
    /// Text.
    Text,
    /// Images.
    Image,
}

/// Prices in USD per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelCost {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// Cache writes.
    pub cache_write: f64,
}

/// A model and the endpoint that serves it (pi's `Model<TApi>`). Its `Debug` output hides
/// credential headers (see `ai/redact.rs`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The id sent to the provider.
    pub id: String,
    /// A human-readable name.
    #[serde(default)]
    pub name: String,
    /// The wire API (`openai-completions`, `anthropic-messages`, ...): picks the provider code.
    pub api: String,
    /// The vendor (`openai`, `groq`, ...): picks the API-key variable and compat defaults.
    pub provider: String,
    /// The endpoint, e.g. `https://api.openai.com/v1`.
    #[serde(default)]
    pub base_url: String,
    /// Whether the model can reason.
    #[serde(default)]
    pub reasoning: bool,
    /// Per thinking level, the value sent to the provider (`null` = unsupported level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<BTreeMap<String, Option<String>>>,
    /// Accepted inputs.
    #[serde(default = "text_only")]
    pub input: Vec<InputModality>,
    /// Prices per million tokens.
    #[serde(default)]
    pub cost: ModelCost,
    /// Context window in tokens.
    #[serde(default)]
    pub context_window: u64,
    /// Maximum output tokens.
    #[serde(default)]
    pub max_tokens: u64,
    /// Extra HTTP headers sent with every request to this model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// API-specific compatibility flags (for `openai-completions`: pi's
    /// `OpenAICompletionsCompat`), kept as JSON so every API's flags round-trip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
}

fn text_only() -> Vec<InputModality> {
    vec![InputModality::Text]
}

impl Model {
    /// A model with the given identity and endpoint, text input, no reasoning and zero cost.
    pub fn new(
        api: impl Into<String>,
        provider: impl Into<String>,
        id: impl Into<String>,
        base_url: impl Into<String>,
    ) -> Self {
        let id = id.into();
        Self {
            name: id.clone(),
            id,
            api: api.into(),
            provider: provider.into(),
            base_url: base_url.into(),
            reasoning: false,
            thinking_level_map: None,
            input: text_only(),
            cost: ModelCost::default(),
            context_window: 128_000,
            max_tokens: 16_384,
            headers: None,
            compat: None,
        }
    }

    /// Whether the model accepts images.
    pub fn supports_images(&self) -> bool {
        self.input.contains(&InputModality::Image)
    }

    /// Fills `usage.cost` from this model's prices and returns it (pi's `calculateCost`).
    pub fn calculate_cost(&self, usage: &mut Usage) -> UsageCost {
        let per_token = |price: f64, tokens: u64| price / 1_000_000.0 * tokens as f64;
        let input = per_token(self.cost.input, usage.input);
        let output = per_token(self.cost.output, usage.output);
        let cache_read = per_token(self.cost.cache_read, usage.cache_read);
        let cache_write = per_token(self.cost.cache_write, usage.cache_write);
        usage.cost = UsageCost {
            input,
            output,
            cache_read,
            cache_write,
            total: input + output + cache_read + cache_write,
        };
        usage.cost
    }
}

/// `true` when both models have the same id and provider (pi's `modelsAreEqual`).
pub fn models_are_equal(a: Option<&Model>, b: Option<&Model>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.id == b.id && a.provider == b.provider,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_per_million() {
        let mut model = Model::new("openai-completions", "openai", "m", "http://x");
        model.cost = ModelCost {
            input: 2.0,
            output: 8.0,
            cache_read: 0.5,
            cache_write: 0.0,
        };
        let mut usage = Usage {
            input: 1_000_000,
            output: 500_000,
            cache_read: 2_000_000,
            ..Usage::default()
        };
        let cost = model.calculate_cost(&mut usage);
        assert_eq!(cost.total, 2.0 + 4.0 + 1.0);
        assert_eq!(usage.cost, cost);
    }

    #[test]
    fn pi_model_json_loads() {
        let model: Model = serde_json::from_value(serde_json::json!({
            "id": "llama", "name": "Llama", "api": "openai-completions", "provider": "ollama",
            "baseUrl": "http://localhost:11434/v1", "reasoning": false, "input": ["text"],
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 8192, "maxTokens": 2048, "compat": {"supportsStore": false}
        }))
        .unwrap();
        assert_eq!(model.base_url, "http://localhost:11434/v1");
        assert!(!model.supports_images());
    }
}
