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

use super::api_provider::ApiProvider;

#[cfg(feature = "anthropic")]
pub(crate) mod anthropic;
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "google",
    feature = "mistral"
))]
mod api_key;
#[cfg(feature = "bedrock")]
pub(crate) mod bedrock;
// The gateways (Cloudflare, GitHub Copilot) that the OpenAI and Anthropic APIs are reached
// through.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) mod cloudflare;
#[cfg(any(feature = "openai", feature = "anthropic"))]
mod compat_flags;
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "google",
    feature = "mistral"
))]
mod content;
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) mod copilot;
#[cfg(any(feature = "bedrock", feature = "google"))]
pub(crate) mod environment;
pub mod faux;
#[cfg(feature = "google")]
pub(crate) mod google;
#[cfg(feature = "google")]
pub(crate) mod google_vertex;
pub(crate) mod http;
#[cfg(feature = "openai")]
pub(crate) mod json_cursor;
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) mod lenient;
#[cfg(feature = "mistral")]
pub(crate) mod mistral;
#[cfg(feature = "openai")]
pub(crate) mod openai_codex;
#[cfg(feature = "openai")]
pub(crate) mod openai_completions;
#[cfg(feature = "openai")]
pub(crate) mod openai_responses;

#[cfg(feature = "anthropic")]
pub use anthropic::AnthropicProvider;
#[cfg(feature = "bedrock")]
pub use bedrock::BedrockProvider;
/// The AWS event-stream framing of `bedrock-converse-stream`: an incremental, bounded decoder,
/// and an encoder for tests and mock servers.
#[cfg(feature = "bedrock")]
pub use bedrock::eventstream;
#[cfg(feature = "google")]
pub use google::GoogleProvider;
#[cfg(feature = "google")]
pub use google_vertex::GoogleVertexProvider;
#[cfg(feature = "mistral")]
pub use mistral::MistralProvider;
#[cfg(feature = "openai")]
pub use openai_codex::{
    OpenAICodexResponsesProvider, OpenAICodexWebSocketStats,
    close_websocket_sessions as close_openai_codex_websocket_sessions,
    reset_websocket_stats as reset_openai_codex_websocket_stats,
    websocket_stats as openai_codex_websocket_stats,
};
#[cfg(feature = "openai")]
pub use openai_completions::OpenAICompletionsProvider;
#[cfg(feature = "openai")]
pub use openai_responses::OpenAIResponsesProvider;
#[cfg(feature = "openai")]
pub use openai_responses::azure::{AzureConfigError, AzureOpenAIResponsesProvider};

/// The providers registered when the registry is first used.
pub(crate) fn builtins() -> Vec<Arc<dyn ApiProvider>> {
    // Each entry is there when its cargo feature is on.
    #[allow(unused_mut)]
    let mut providers: Vec<Arc<dyn ApiProvider>> = Vec::new();
    #[cfg(feature = "openai")]
    providers.extend([
        Arc::new(openai_completions::OpenAICompletionsProvider) as Arc<dyn ApiProvider>,
        Arc::new(openai_responses::OpenAIResponsesProvider),
        Arc::new(openai_responses::azure::AzureOpenAIResponsesProvider),
    ]);
    #[cfg(feature = "anthropic")]
    providers.push(Arc::new(anthropic::AnthropicProvider));
    #[cfg(feature = "mistral")]
    providers.push(Arc::new(mistral::MistralProvider));
    #[cfg(feature = "google")]
    providers.push(Arc::new(google::GoogleProvider));
    #[cfg(feature = "bedrock")]
    providers.push(Arc::new(bedrock::BedrockProvider::default()));
    #[cfg(feature = "google")]
    providers.push(Arc::new(google_vertex::GoogleVertexProvider::default()));
    #[cfg(feature = "openai")]
    providers.push(Arc::new(openai_codex::OpenAICodexResponsesProvider));
    providers
}
