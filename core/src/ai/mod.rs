//! The AI layer: one streaming API over many LLM wire protocols.
//!
//! [`stream`] starts a request and returns an [`AssistantMessageEventStream`] at once;
//! [`complete`] waits for its final message. Every provider's wire format becomes the same
//! [`AssistantMessageEvent`] sequence, and every failure (HTTP, network, decode, abort, missing
//! key, unknown api) ends that sequence with an `error` event instead of an `Err`.

pub(crate) mod accumulator;
pub(crate) mod api_provider;
pub(crate) mod blocking;
pub(crate) mod cancelled;
pub(crate) mod catalog;
pub(crate) mod env_keys;
pub(crate) mod error;
pub(crate) mod error_kind;
pub(crate) mod event;
pub(crate) mod event_queue;
pub(crate) mod event_stream;
pub(crate) mod model;
pub mod oauth;
pub(crate) mod options;
pub(crate) mod overflow;
pub(crate) mod partial_json;
pub mod providers;
pub(crate) mod redact;
pub(crate) mod registry;
pub(crate) mod remote;
pub(crate) mod shape;
pub(crate) mod shared_string;
pub(crate) mod short_hash;
pub(crate) mod simple_options;
pub mod sse;
pub(crate) mod stack;
pub mod strict_json;
pub(crate) mod structured;
pub(crate) mod tagged;
pub(crate) mod thinking;
pub(crate) mod tool_choice;
pub(crate) mod transform;
pub(crate) mod types;
pub(crate) mod validation;

pub use accumulator::MessageAccumulator;
pub use api_provider::ApiProvider;
pub use catalog::{
    all_models, clamp_thinking_level, get_model, get_models, get_providers,
    get_supported_thinking_levels, release_catalog, resolve_model,
};
pub use env_keys::{env_key_names, find_env_keys, get_env_api_key};
pub use error::{MessageError, ProviderError};
pub use error_kind::{ErrorKind, RunLimit};
pub use event::AssistantMessageEvent;
pub use event_stream::{
    AssistantMessageEventStream, PartialMessage, STREAM_ENDED_EARLY, StreamWriter, WaitTimedOut,
    channel, empty_message,
};
pub use model::{InputModality, Model, ModelCost, models_are_equal};
pub use oauth::{
    OAuthCredentials, OAuthError, OAuthLoginCallbacks, OAuthProvider, get_oauth_api_key,
    get_oauth_provider, get_oauth_providers, register_oauth_provider, reset_oauth_providers,
    unregister_oauth_provider,
};
pub use options::{
    ApiKey, CacheRetention, Callback, DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_MAX_ERROR_BODY_BYTES,
    DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_DELAY_MS,
    DEFAULT_REQUEST_TIMEOUT_MS, GoogleThinking, OnPayload, OnResponse, PayloadError, StreamOptions,
    ThinkingBudgets, Transport, is_credential_header, is_known_safe_header,
};
pub use overflow::{
    NON_OVERFLOW_PATTERNS, OVERFLOW_PATTERNS, is_context_overflow, release_overflow_patterns,
};
pub use partial_json::{PartialJsonParser, parse_streaming_json};
pub use providers::http::{forget_connections_after_fork, set_http_client};
pub use registry::{
    clear_api_providers, get_api_provider, get_api_providers, register_api_provider,
    unregister_api_provider,
};
pub use shape::shape_fields;
pub use simple_options::{
    SIMPLE_MAX_TOKENS_CAP, adjust_max_tokens_for_thinking, default_thinking_budget,
};
pub use structured::{
    DEFAULT_OUTPUT_NAME, OutputSchema, StructuredAnswer, StructuredError, WRAPPED_ANSWER_KEY,
    complete_structured_value, parse_output,
};
#[cfg(feature = "schemars")]
pub use structured::{complete_structured, output_schema_for};
pub use thinking::ThinkingLevel;
pub use tool_choice::{ToolChoice, ToolChoiceError};
pub use transform::{
    NO_RESULT_PROVIDED, NormalizeToolCallId, TOOL_IMAGE_OMITTED, USER_IMAGE_OMITTED,
    transform_messages, transform_messages_borrowed,
};
pub use types::{
    AssistantContent, AssistantMessage, Context, ImageContent, Message, ResponseTiming,
    SharedString, StopReason, TextContent, ThinkingContent, Tool, ToolCall, ToolResultMessage,
    ToolTiming, Usage, UsageCost, UserContent, UserMessage, UserMessageContent, now_ms,
};
pub use validation::{
    CompiledToolSchema, MAX_ARGUMENT_DEPTH, ToolParametersError, ValidationError,
    check_argument_depth, check_tool_parameters, release_validators, validate_tool_arguments,
    validate_tool_call,
};

/// Starts a request to `model` and returns its event stream (pi's `stream`). Sends exactly what
/// the options say: the provider keys (`thinkingEnabled`, `reasoningEffort`, `thinking`, ...)
/// decide reasoning, and where none is set the provider's default applies. `reasoning` is not
/// read here; use [`stream_simple`] for that. Never fails: an unknown api, like every other
/// failure, is an `error` event.
pub fn stream(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessageEventStream {
    start(model, context, options, |provider, context, options| {
        provider.stream(model, context, options)
    })
}

/// [`stream`], then waits for the final message.
pub async fn complete(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessage {
    stream(model, context, options).result().await
}

/// [`stream`] with pi's "simple" options (pi's `streamSimple`): `maxTokens` defaults to
/// `min(model.maxTokens, 32000)`, and the api-independent `reasoning` level is mapped onto the
/// provider's keys; no level turns thinking off explicitly where the api allows it. This is
/// what the agent uses.
pub fn stream_simple(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessageEventStream {
    start(model, context, options, |provider, context, options| {
        provider.stream_simple(model, context, options)
    })
}

/// Finds the provider, checks the tool choice and output schema (rewriting the request for a
/// forced output tool), and has the stream track the typed answer.
fn start(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    run: impl FnOnce(&dyn ApiProvider, &Context, &StreamOptions) -> AssistantMessageEventStream,
) -> AssistantMessageEventStream {
    let Some(provider) = get_api_provider(&model.api) else {
        return no_provider(model);
    };
    match structured::prepare(model, context, options) {
        Err(error) => AssistantMessageEventStream::failed(
            model,
            StopReason::Error,
            ProviderError::other(error.to_string(), Some(ErrorKind::BadRequest)),
        ),
        Ok(prepared) => {
            let stream = run(provider.as_ref(), &prepared.context, &prepared.options);
            match prepared.tracker {
                Some(tracker) => stream.with_output(tracker),
                None => stream,
            }
        }
    }
}

fn no_provider(model: &Model) -> AssistantMessageEventStream {
    AssistantMessageEventStream::failed(model, StopReason::Error, no_provider_text(model))
}

/// pi's text, with what the api most likely means when it is one of ours.
fn no_provider_text(model: &Model) -> String {
    let pi = format!("No API provider registered for api: {}", model.api);
    if model.api == "unknown" && model.id == "unknown" {
        format!(
            "{pi} (the agent has no model: give it one when you create it, or set its model \
             before prompting)"
        )
    } else if model.api.starts_with("faux:") {
        format!(
            "{pi} (a faux provider that was unregistered: its `with` block ended or \
             `unregister()` was called)"
        )
    } else {
        pi
    }
}

/// [`stream_simple`], then waits for the final message.
pub async fn complete_simple(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> AssistantMessage {
    stream_simple(model, context, options).result().await
}
