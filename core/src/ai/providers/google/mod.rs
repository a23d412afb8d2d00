//! api `google-generative-ai`: the Gemini API's `streamGenerateContent` over SSE (pi's
//! `providers/google.ts` and `google-shared.ts`, which go through the `@google/genai` SDK; this
//! module speaks the same REST wire directly).
//!
//! `POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`, the key in the `x-goog-api-key`
//! header (never in the URL, so it cannot leak into logs), then the model's headers, then the
//! request's. As in the SDK, a caller-supplied `x-goog-api-key` or `Authorization` header
//! replaces the key header.
//!
//! Differences from pi 0.73.1, all deliberate:
//! - a finish reason other than `STOP`/`MAX_TOKENS` ends the stream with an error that names it
//!   (`Provider finishReason: SAFETY`) instead of `"An unknown error occurred"`; a prompt refused
//!   with `promptFeedback.blockReason` is an error (pi reports an empty `stop`);
//! - any tool call still makes the turn `toolUse`, whatever the finish reason (pi's rule);
//! - `usage.totalTokens` is `input + output + cacheRead + cacheWrite`, not Gemini's
//!   `totalTokenCount` (which also counts tool-use prompt tokens);
//! - a stream that ends without a finish reason is an error that keeps the partial content;
//! - requests are retried like every HTTP provider here (pi's SDK has no retries for Gemini),
//!   `on_response` is called (pi never calls it for Google), and `modelVersion` is reported as
//!   `responseModel` when it differs from the requested id;
//! - an HTTP failure reads `"<status> <Google's message>"` (pi shows the SDK's raw JSON body);
//! - an empty text part adds no empty delta; if it carries no signature either it is ignored
//!   instead of opening an empty block;
//! - `tool_choice` is sent as `toolConfig` on every path (pi's simple path drops it), and
//!   OpenAI's `"required"` means `ANY`.

pub(crate) mod request;
pub(crate) mod response;

use self::response::ChunkState;
use super::api_key::{key_for_url, require_key};
use super::http;
use crate::ai::error::ProviderError;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::types::Context;

/// The api id.
pub(crate) const API: &str = "google-generative-ai";

/// The endpoint used when a model has no base URL (the SDK's default, API version included).
pub(crate) const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The header that carries the API key.
pub(crate) const API_KEY_HEADER: &str = "x-goog-api-key";

/// The message of a body that ended before Gemini sent a finish reason.
pub(crate) const INCOMPLETE_RESPONSE: &str =
    "Connection error: the provider closed the stream before the response was complete";

/// The `google-generative-ai` provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct GoogleProvider;

/// `{base}/models/{id}:streamGenerateContent?alt=sse`; ids already qualified as `models/…` or
/// `tunedModels/…` keep their collection (the SDK's rule). The name itself is one encoded path
/// segment (issue 17): an id such as `../../admin?x#` cannot leave the base path.
pub(crate) fn stream_url(model: &Model) -> Result<String, ProviderError> {
    let base = if model.base_url.is_empty() {
        DEFAULT_BASE_URL
    } else {
        model.base_url.trim_end_matches('/')
    };
    let id = model.id.as_str();
    let (collection, name) = ["models/", "tunedModels/"]
        .into_iter()
        .find_map(|prefix| id.strip_prefix(prefix).map(|name| (prefix, name)))
        .unwrap_or(("models/", id));
    let name = http::path_segment("model id", name)?;
    Ok(format!(
        "{base}/{collection}{name}:streamGenerateContent?alt=sse"
    ))
}

http::api_provider! { GoogleProvider, API, prepare, request::simple_options }

/// Whether the caller's headers authenticate the request themselves (the SDK then sends no
/// key header).
pub(crate) fn caller_authenticates(headers: &http::Headers) -> bool {
    headers.has(API_KEY_HEADER) || headers.has("authorization")
}

/// `model.headers`, then `options.headers`.
pub(crate) fn caller_headers(model: &Model, options: &StreamOptions) -> http::Headers {
    let mut headers = http::Headers::default();
    headers.extend(model.headers.iter().flatten());
    headers.extend(&options.headers);
    headers
}

fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<http::PreparedRequest<GeminiWire>, ProviderError> {
    let caller = caller_headers(model, options);
    let authenticated = caller_authenticates(&caller);
    let base_url = if model.base_url.is_empty() {
        DEFAULT_BASE_URL
    } else {
        &model.base_url
    };
    let api_key = key_for_url(options, &model.provider, base_url);
    require_key(
        api_key.is_some() || authenticated,
        &model.provider,
        base_url,
    )?;
    let body = options.payload(request::build_body(model, context, options), model)?;
    let url = stream_url(model)?;
    let mut headers = http::Headers::json(None);
    if let Some(key) = api_key.filter(|_| !authenticated) {
        headers.set(API_KEY_HEADER, key.expose());
    }
    headers.extend(caller.0.iter().map(|(name, value)| (name, value)));
    Ok(http::PreparedRequest::new(
        url, &body, headers, options, GeminiWire,
    ))
}

/// The Gemini stream (also Vertex AI's): SSE chunks up to the one with the finish reason.
pub(crate) struct GeminiWire;

impl http::Wire for GeminiWire {
    fn read(
        self,
        reply: http::Reply<'_>,
    ) -> impl std::future::Future<Output = Result<(), ProviderError>> + Send {
        reply.read_sse(read_stream)
    }
}

/// Reads a response body to its end (fuzzing feeds bytes here, without a network). The chunk
/// with the finish reason is Gemini's last: reading stops there (after the events already
/// received), so a server that then stalls cannot hold a complete answer.
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    model: &Model,
    events: &mut http::SseEvents,
) -> Result<(), ProviderError> {
    let mut state = ChunkState::default();
    loop {
        let event = match events.next().await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(error) => {
                // As pi (whose SDK ends the iteration quietly): the open block is ended before
                // the stream ends; unlike pi, a dropped body is an error, not a success.
                state.close_block(writer).await;
                return Err(error);
            }
        };
        state.handle(&event.data, writer, model).await?;
        if writer.is_closed() {
            break;
        }
        if state.finished {
            while let Some(event) = events.next_buffered() {
                state.handle(&event.data, writer, model).await?;
            }
            break;
        }
    }
    state.close_block(writer).await;
    if !state.finished && !writer.is_closed() {
        return Err(events.incomplete(INCOMPLETE_RESPONSE));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_sdk() {
        let mut model = Model::new(API, "google", "gemini-2.5-flash", "");
        assert_eq!(
            stream_url(&model).unwrap(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        model.base_url = "http://127.0.0.1:9/v1beta/".into();
        model.id = "tunedModels/mine".into();
        assert_eq!(
            stream_url(&model).unwrap(),
            "http://127.0.0.1:9/v1beta/tunedModels/mine:streamGenerateContent?alt=sse"
        );
        model.id = "models/../../admin/delete?all=1#".into();
        assert_eq!(
            stream_url(&model).unwrap(),
            "http://127.0.0.1:9/v1beta/models/..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23:streamGenerateContent?alt=sse"
        );
    }
}
