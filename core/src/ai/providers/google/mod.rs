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

use reqwest::header::CONTENT_TYPE;

use self::response::ChunkState;
use super::http;
use crate::ai::env_keys::{get_env_api_key_for_url, missing_key_message_for_url, request_key};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::{AssistantMessageEventStream, StreamWriter, channel};
use crate::ai::model::Model;
use crate::ai::options::{ApiKey, StreamOptions};
use crate::ai::registry::ApiProvider;
use crate::ai::types::{Context, StopReason};

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

/// Everything a request needs, resolved before the task starts.
struct PreparedRequest {
    url: String,
    body: Vec<u8>,
    api_key: Option<ApiKey>,
    headers: Vec<(String, String)>,
    options: StreamOptions,
}

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

impl ApiProvider for GoogleProvider {
    fn api(&self) -> &str {
        API
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        if !http::has_runtime() {
            return AssistantMessageEventStream::failed(model, StopReason::Error, http::NO_RUNTIME);
        }
        let mut headers: Vec<(String, String)> = model
            .headers
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        headers.extend(options.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        let headers_authenticate = headers.iter().any(|(name, _)| {
            name.eq_ignore_ascii_case(API_KEY_HEADER) || name.eq_ignore_ascii_case("authorization")
        });
        let base_url = if model.base_url.is_empty() {
            DEFAULT_BASE_URL
        } else {
            &model.base_url
        };
        let api_key =
            request_key(options).or_else(|| get_env_api_key_for_url(&model.provider, base_url));
        if api_key.is_none() && !headers_authenticate && !http::is_loopback(base_url) {
            let reason = if options.is_aborted() {
                StopReason::Aborted
            } else {
                StopReason::Error
            };
            return AssistantMessageEventStream::failed(
                model,
                reason,
                ProviderError::other(
                    missing_key_message_for_url(&model.provider, base_url),
                    Some(ErrorKind::Auth),
                ),
            );
        }
        let mut body = request::build_body(model, context, options);
        if let Some(on_payload) = &options.on_payload
            && let Some(replacement) = (on_payload.0)(&body, model)
        {
            body = replacement;
        }
        let url = match stream_url(model) {
            Ok(url) => url,
            Err(error) => {
                return AssistantMessageEventStream::failed(model, StopReason::Error, error);
            }
        };
        let prepared = PreparedRequest {
            url,
            body: serde_json::to_vec(&body).unwrap_or_default(),
            api_key: api_key.filter(|_| !headers_authenticate),
            headers,
            options: options.clone(),
        };
        let (writer, stream) = channel(model, options.signal.clone());
        let model = model.clone();
        tokio::spawn(writer.drive(async move |writer| run(writer, &model, prepared).await));
        stream
    }

    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        self.stream(model, context, &request::simple_options(model, options))
    }
}

async fn run(
    writer: &mut StreamWriter,
    model: &Model,
    request: PreparedRequest,
) -> Result<(), ProviderError> {
    let build = || {
        let mut builder = http::client()
            .post(&request.url)
            .header(CONTENT_TYPE, "application/json");
        if let Some(key) = &request.api_key {
            builder = builder.header(API_KEY_HEADER, key.expose());
        }
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        builder.body(request.body.clone())
    };
    let response = http::send(writer, build, &request.options, model).await?;
    writer.start().await;
    read_stream(
        writer,
        model,
        http::SseEvents::new(response, &request.options),
    )
    .await
}

/// Reads a response body to its end (fuzzing feeds bytes here, without a network). The chunk
/// with the finish reason is Gemini's last: reading stops there (after the events already
/// received), so a server that then stalls cannot hold a complete answer.
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    model: &Model,
    mut events: http::SseEvents,
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

    #[test]
    fn loopback_hosts() {
        assert!(http::is_loopback("http://127.0.0.1:8080/v1beta"));
        assert!(http::is_loopback("http://localhost/v1beta"));
        assert!(http::is_loopback("http://[::1]:1234/v1"));
        assert!(!http::is_loopback(DEFAULT_BASE_URL));
        assert!(!http::is_loopback("https://localhost.evil.com/v1"));
    }
}
