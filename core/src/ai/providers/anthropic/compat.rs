//! The two flags Anthropic-compatible servers differ on (pi's `AnthropicMessagesCompat`).

use super::super::compat_flags::compat_flags;
use crate::ai::model::Model;

compat_flags! {
    /// The resolved flags for one model.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Compat {
        /// Tools carry `eager_input_streaming: true`; when `false`, the request asks for the
        /// `fine-grained-tool-streaming` beta instead.
        pub supports_eager_tool_input_streaming: bool,
        /// Long cache retention adds `ttl: "1h"` to the cache markers.
        pub supports_long_cache_retention: bool,
    }
}

impl Default for Compat {
    fn default() -> Self {
        Self {
            supports_eager_tool_input_streaming: true,
            supports_long_cache_retention: true,
        }
    }
}

impl Compat {
    /// The flags of `model`: both default to `true`, `model.compat` overrides them.
    pub(crate) fn for_model(model: &Model) -> Self {
        Self::default().with_overrides(model.compat.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_overrides() {
        let mut model = Model::new("anthropic-messages", "anthropic", "m", "");
        assert_eq!(Compat::for_model(&model), Compat::default());
        model.compat = Some(json!({"supportsEagerToolInputStreaming": false, "other": 1}));
        let compat = Compat::for_model(&model);
        assert!(!compat.supports_eager_tool_input_streaming);
        assert!(compat.supports_long_cache_retention);
    }
}
