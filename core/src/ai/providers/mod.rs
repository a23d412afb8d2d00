//! Built-in providers, one module per wire API.
//!
//! Adding a provider: implement [`ApiProvider`] in a new module (build the request, send it
//! with [`http::send`] — retries, redirects, timeouts and redaction come with it — read the body
//! with [`http::SseEvents`], or another [`http::FrameDecoder`] in [`http::BodyFrames`], in a
//! `read_stream` function that stops at the protocol's end, drive a
//! [`StreamWriter`](super::event_stream::StreamWriter)), add it to [`builtins`], replay wire
//! fixtures through the mock server in `core/tests/`, add the API to the `reliability_*` tests'
//! list, and give `read_stream` a fuzz target (`crate::fuzzing`, `fuzz/`).

use std::sync::Arc;

use super::registry::ApiProvider;

pub mod anthropic;
pub mod bedrock;
pub mod faux;
pub mod google;
pub mod http;
pub mod mistral;
pub mod openai_completions;
pub mod openai_responses;

/// The providers registered when the registry is first used.
pub fn builtins() -> Vec<Arc<dyn ApiProvider>> {
    vec![
        Arc::new(openai_completions::OpenAICompletionsProvider),
        Arc::new(openai_responses::OpenAIResponsesProvider),
        Arc::new(openai_responses::azure::AzureOpenAIResponsesProvider),
        Arc::new(anthropic::AnthropicProvider),
        Arc::new(mistral::MistralProvider),
        Arc::new(google::GoogleProvider),
        Arc::new(bedrock::BedrockProvider::default()),
    ]
}
