//! The AI layer: one streaming API over many LLM wire protocols.
//!
//! [`stream`] starts a request and returns an [`AssistantMessageEventStream`] at once;
//! [`complete`] waits for its final message. Every provider's wire format becomes the same
//! [`AssistantMessageEvent`] sequence, and every failure (HTTP, network, decode, abort, missing
//! key, unknown api) ends that sequence with an `error` event instead of an `Err`.

pub mod accumulator;
pub mod catalog;
pub mod env_keys;
pub mod event;
pub mod event_stream;
pub mod model;
pub mod options;
pub mod overflow;
pub mod partial_json;
pub mod providers;
mod redact;
pub mod registry;
pub mod short_hash;
pub mod sse;
pub mod transform;
pub mod types;
pub mod validation;

pub use accumulator::MessageAccumulator;
pub use catalog::{
    ModelThinkingLevel, all_models, clamp_thinking_level, get_model, get_models, get_providers,
    get_supported_thinking_levels, resolve_model,
};
pub use event::AssistantMessageEvent;
pub use event_stream::{AssistantMessageEventStream, PartialMessage, StreamWriter};
pub use model::{InputModality, Model, ModelCost, models_are_equal};
pub use options::{ApiKey, StreamOptions, ThinkingLevel};
pub use registry::{
    ApiProvider, get_api_provider, get_api_providers, register_api_provider,
    unregister_api_provider,
};
pub use types::{
    AssistantContent, AssistantMessage, Context, ImageContent, Message, StopReason, TextContent,
    ThinkingContent, Tool, ToolCall, ToolResultMessage, Usage, UsageCost, UserContent, UserMessage,
    UserMessageContent,
};

/// Output-token cap that [`stream_simple`] applies when the caller sets none (pi's
/// `buildBaseOptions`).
pub const SIMPLE_MAX_TOKENS_CAP: u64 = 32_000;

/// Starts a request to `model` and returns its event stream. Never fails: an unknown api, like
/// every other failure, is an `error` event.
pub fn stream(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessageEventStream {
    match get_api_provider(&model.api) {
        Some(provider) => provider.stream(model, context, options),
        None => AssistantMessageEventStream::failed(
            model,
            StopReason::Error,
            format!("No API provider registered for api: {}", model.api),
        ),
    }
}

/// [`stream`], then waits for the final message.
pub async fn complete(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessage {
    stream(model, context, options).result().await
}

/// [`stream`] with pi's "simple" defaults: when `max_tokens` is unset it becomes
/// `min(model.max_tokens, 32000)`, and the reasoning level is clamped to one the model supports
/// (a non-reasoning model gets none).
pub fn stream_simple(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessageEventStream {
    let mut options = options.clone();
    if options.max_tokens.is_none() && model.max_tokens > 0 {
        options.max_tokens = Some(model.max_tokens.min(SIMPLE_MAX_TOKENS_CAP));
    }
    options.reasoning = match options.reasoning {
        Some(level) if model.reasoning => {
            catalog::clamp_thinking_level(model, level.into()).thinking_level()
        }
        _ => None,
    };
    stream(model, context, &options)
}

/// [`stream_simple`], then waits for the final message.
pub async fn complete_simple(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessage {
    stream_simple(model, context, options).result().await
}
