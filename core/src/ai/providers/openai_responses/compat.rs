//! The two flags pi reads from `model.compat` for the Responses API
//! (`OpenAIResponsesCompat`).

use serde::Deserialize;
use serde_json::Value;

use crate::ai::model::Model;

/// Flags as written in `model.compat` (all optional).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct CompatOverrides {
    send_session_id_header: Option<bool>,
    supports_long_cache_retention: Option<bool>,
}

/// The resolved flags for one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Compat {
    /// Send the `session_id` header with a session id (default `true`).
    pub send_session_id_header: bool,
    /// Send `prompt_cache_retention: "24h"` for long retention (default `true`).
    pub supports_long_cache_retention: bool,
}

impl Default for Compat {
    fn default() -> Self {
        Self {
            send_session_id_header: true,
            supports_long_cache_retention: true,
        }
    }
}

impl Compat {
    /// The flags of `model`: pi's defaults, overridden by `model.compat`.
    pub(crate) fn for_model(model: &Model) -> Self {
        let overrides: CompatOverrides = model
            .compat
            .as_ref()
            .filter(|value| value.is_object())
            .and_then(|value| serde_json::from_value(Value::clone(value)).ok())
            .unwrap_or_default();
        let defaults = Self::default();
        Self {
            send_session_id_header: overrides
                .send_session_id_header
                .unwrap_or(defaults.send_session_id_header),
            supports_long_cache_retention: overrides
                .supports_long_cache_retention
                .unwrap_or(defaults.supports_long_cache_retention),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let mut model = Model::new("openai-responses", "openai", "gpt-5", "");
        assert_eq!(Compat::for_model(&model), Compat::default());
        model.compat = Some(serde_json::json!({"supportsLongCacheRetention": false}));
        let compat = Compat::for_model(&model);
        assert!(compat.send_session_id_header);
        assert!(!compat.supports_long_cache_retention);
    }
}
