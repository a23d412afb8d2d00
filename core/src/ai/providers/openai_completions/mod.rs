//! api `openai-completions`: OpenAI Chat Completions over SSE, the protocol OpenAI, OpenRouter,
//! Groq, xAI, DeepSeek, vLLM, Ollama, llama.cpp and LM Studio all speak. Vendor differences are
//! [`compat::Compat`] flags, not code paths.

pub(crate) mod compat;
pub(crate) mod request;
pub(crate) mod response;

use reqwest::header::{ACCEPT, CONTENT_TYPE};

use self::compat::Compat;
use self::response::ChunkState;
use super::openai_responses::Headers;
use super::{cloudflare, copilot, http};
use crate::ai::env_keys::{get_env_api_key_for_url, missing_key_message_for_url, request_key};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::{AssistantMessageEventStream, StreamWriter, channel};
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::registry::ApiProvider;
use crate::ai::types::{Context, StopReason};

/// The api id.
pub(crate) const API: &str = "openai-completions";

/// The message of a body that ended before the response was complete.
pub(crate) const INCOMPLETE_RESPONSE: &str =
    "Connection error: the provider closed the stream before the response was complete";

/// The `openai-completions` provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenAICompletionsProvider;

/// Everything a request needs, resolved before the task starts.
struct PreparedRequest {
    url: String,
    body: Vec<u8>,
    /// Authentication included.
    headers: Vec<(String, String)>,
    options: StreamOptions,
}

impl ApiProvider for OpenAICompletionsProvider {
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
        let failed = |error: ProviderError| {
            let reason = if options.is_aborted() {
                StopReason::Aborted
            } else {
                StopReason::Error
            };
            AssistantMessageEventStream::failed(model, reason, error)
        };
        let base_url = match cloudflare::resolve_base_url(model) {
            Ok(url) => url,
            Err(error) => return failed(error),
        };
        let api_key =
            request_key(options).or_else(|| get_env_api_key_for_url(&model.provider, &base_url));
        if api_key.is_none() && !http::is_loopback(&base_url) {
            return failed(ProviderError::other(
                missing_key_message_for_url(&model.provider, &base_url),
                Some(ErrorKind::Auth),
            ));
        }
        let compat = Compat::for_model(model);
        let mut body = request::build_body(model, context, options, &compat);
        if let Some(on_payload) = &options.on_payload
            && let Some(replacement) = (on_payload.0)(&body, model)
        {
            body = replacement;
        }
        // pi's order: the SDK's `Authorization`, then the model's headers, Copilot's
        // per-request headers, the session-affinity headers and the caller's, each replacing
        // the same name. Cloudflare's gateway takes the key in its own header (set last), and
        // `Authorization` only if the caller set one (an upstream key for bring-your-own-key
        // routes).
        let gateway = cloudflare::is_gateway(&model.provider);
        let mut headers = Headers::default();
        if let Some(key) = api_key.as_ref().filter(|_| !gateway) {
            headers.set("Authorization", format!("Bearer {}", key.expose()));
        }
        headers.extend(model.headers.iter().flatten());
        if model.provider == copilot::PROVIDER {
            for (name, value) in copilot::dynamic_headers(&context.messages) {
                headers.set(name, value);
            }
        }
        for (name, value) in request::session_headers(options, &compat) {
            headers.set(name, value);
        }
        headers.extend(&options.headers);
        if let Some(key) = api_key.as_ref().filter(|_| gateway) {
            headers.set(
                cloudflare::GATEWAY_AUTH_HEADER,
                format!("Bearer {}", key.expose()),
            );
        }
        let prepared = PreparedRequest {
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            body: serde_json::to_vec(&body).unwrap_or_default(),
            headers: headers.0,
            options: options.clone(),
        };
        let (writer, stream) = channel(model, options.signal.clone());
        let model = model.clone();
        // Boxed, like the request phase in `run`: a stream's task keeps only what the body
        // needs while it streams (thousands of streams at once stay small).
        let prepared = Box::new(prepared);
        tokio::spawn(writer.drive(async move |writer| run(writer, &model, prepared).await));
        stream
    }
    fn stream_simple(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        self.stream(
            model,
            context,
            &crate::ai::simple_options::with_reasoning_effort(model, options),
        )
    }
}

async fn run(
    writer: &mut StreamWriter,
    model: &Model,
    request: Box<PreparedRequest>,
) -> Result<(), ProviderError> {
    // The request phase (the prepared request, retries, the client's futures) is freed once
    // the response head has arrived.
    let events = Box::pin(send(writer, model, request)).await?;
    writer.start().await;
    // As pi: blocks stay open until the end of the stream, and an abort ends them first.
    writer.end_blocks_on_abort();
    read_stream(writer, model, events).await
}

/// Sends the request (with retries) and opens its event stream.
async fn send(
    writer: &mut StreamWriter,
    model: &Model,
    request: Box<PreparedRequest>,
) -> Result<http::SseEvents, ProviderError> {
    let build = || {
        let mut builder = http::client()
            .post(&request.url)
            .header(CONTENT_TYPE, "application/json")
            // What pi's OpenAI SDK sends, though the answer is a stream.
            .header(ACCEPT, "application/json");
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        builder.body(request.body.clone())
    };
    let response = http::send(writer, build, &request.options, model).await?;
    Ok(http::SseEvents::new(response, &request.options))
}

/// Reads a response body to its end (fuzzing feeds bytes here, without a network).
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
            // A finish reason makes the answer complete: a stall or a cut before `[DONE]` (or
            // before a usage chunk) takes nothing from it.
            Err(_) if state.finish_seen => break,
            Err(error) => {
                // As pi (whose SDK ends the iteration quietly): the open blocks are ended
                // before the stream ends; unlike pi, a dropped body is an error.
                writer.end_open_blocks().await;
                return Err(error);
            }
        };
        let finished_before = state.finish_seen;
        state.handle(&event.data, writer, model).await?;
        if state.done_seen || writer.is_closed() {
            break;
        }
        if state.finish_seen && !finished_before {
            events.expect_end();
        }
    }
    writer.end_open_blocks().await;
    if !state.done_seen && !state.finish_seen && !writer.is_closed() {
        return Err(events.incomplete(INCOMPLETE_RESPONSE));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::http::is_loopback;

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:1234/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("https://localhost.evil.com/v1"));
    }
}
