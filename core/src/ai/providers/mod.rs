//! Built-in providers, one module per wire API. Their types are public so that a program can
//! call one directly or register it under another api id; the modules are internal.
//!
//! Adding a built-in provider: a module with the request mapping, the response mapping, and an
//! [`ApiProvider`] implementation that sends the request with the shared `http` plumbing
//! (retries, redirects, timeouts, caps, redaction), reads the body with its `SseEvents` (or
//! another `FrameDecoder` in `BodyFrames`) in a `read_stream` function that stops at the
//! protocol's end, and drives a [`StreamWriter`](super::StreamWriter); then
//! add it to `builtins` and replay wire fixtures through the mock server in `core/tests/`, add the API to the `reliability_*` tests' list, and give `read_stream` a fuzz
//! target (`fuzz/`). A program can add its own provider the same way with
//! [`register_api_provider`](super::register_api_provider).

use std::sync::Arc;

use super::registry::ApiProvider;

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod cloudflare;
pub(crate) mod copilot;
pub(crate) mod environment;
pub mod faux;
pub(crate) mod google;
pub(crate) mod google_vertex;
pub(crate) mod http;
pub(crate) mod lenient;
pub(crate) mod mistral;
pub(crate) mod openai_codex;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;

pub use anthropic::AnthropicProvider;
pub use bedrock::BedrockProvider;
/// The AWS event-stream framing of `bedrock-converse-stream`: an incremental, bounded decoder,
/// and an encoder for tests and mock servers.
pub use bedrock::eventstream;
pub use google::GoogleProvider;
pub use google_vertex::GoogleVertexProvider;
pub use mistral::MistralProvider;
pub use openai_codex::{
    OpenAICodexResponsesProvider, OpenAICodexWebSocketStats,
    close_websocket_sessions as close_openai_codex_websocket_sessions,
    reset_websocket_stats as reset_openai_codex_websocket_stats,
    websocket_stats as openai_codex_websocket_stats,
};
pub use openai_completions::OpenAICompletionsProvider;
pub use openai_responses::OpenAIResponsesProvider;
pub use openai_responses::azure::AzureOpenAIResponsesProvider;

/// The providers registered when the registry is first used.
pub(crate) fn builtins() -> Vec<Arc<dyn ApiProvider>> {
    vec![
        Arc::new(openai_completions::OpenAICompletionsProvider),
        Arc::new(openai_responses::OpenAIResponsesProvider),
        Arc::new(openai_responses::azure::AzureOpenAIResponsesProvider),
        Arc::new(anthropic::AnthropicProvider),
        Arc::new(mistral::MistralProvider),
        Arc::new(google::GoogleProvider),
        Arc::new(bedrock::BedrockProvider::default()),
        Arc::new(google_vertex::GoogleVertexProvider::default()),
        Arc::new(openai_codex::OpenAICodexResponsesProvider),
    ]
}
