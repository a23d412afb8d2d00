//! The two flags pi reads from `model.compat` for the Responses API
//! (`OpenAIResponsesCompat`).

use super::super::compat_flags::compat_flags;
use crate::ai::model::Model;

compat_flags! {
    /// The resolved flags for one model.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct Compat {
        /// Send the `session_id` header with a session id (default `true`).
        pub send_session_id_header: bool,
        /// Send `prompt_cache_retention: "24h"` for long retention (default `true`).
        pub supports_long_cache_retention: bool,
    }
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
        Self::default().with_overrides(model.compat.as_ref())
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
