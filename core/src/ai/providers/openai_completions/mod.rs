//! api `openai-completions`: OpenAI Chat Completions over SSE, the protocol OpenAI, OpenRouter,
//! Groq, xAI, DeepSeek, vLLM, Ollama, llama.cpp and LM Studio all speak. Vendor differences are
//! [`compat::Compat`] flags, not code paths.

pub(crate) mod body;
pub(crate) mod chunk;
pub(crate) mod compat;
pub(crate) mod request;
pub(crate) mod response;

use self::compat::Compat;
use self::response::ChunkState;
use super::api_key::required_key;
use super::{cloudflare, copilot, http};
use crate::ai::error::ProviderError;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::simple_options::with_reasoning_effort;
use crate::ai::types::Context;
use std::future::Future;

/// The api id.
pub(crate) const API: &str = "openai-completions";

/// The message of a body that ended before the response was complete.
pub(crate) const INCOMPLETE_RESPONSE: &str =
    "Connection error: the provider closed the stream before the response was complete";

/// The `openai-completions` provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenAICompletionsProvider;

http::api_provider! { OpenAICompletionsProvider, API, prepare, with_reasoning_effort }

fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<http::PreparedRequest<CompletionsWire>, ProviderError> {
    let base_url = cloudflare::resolve_base_url(model)?;
    let api_key = required_key(options, &model.provider, &base_url)?;
    let compat = Compat::for_model(model);
    let messages = request::transformed_messages(model, context);
    let body = request::build_body(model, context, &messages, options, &compat);
    let body = options.payload_of(&body, model)?;
    // pi's order: the SDK's `Authorization`, then the model's headers, Copilot's
    // per-request headers, the session-affinity headers and the caller's, each replacing
    // the same name. Cloudflare's gateway takes the key in its own header (set last), and
    // `Authorization` only if the caller set one (an upstream key for bring-your-own-key
    // routes).
    let gateway = cloudflare::is_gateway(&model.provider);
    // What pi's OpenAI SDK sends, though the answer is a stream.
    let mut headers = http::Headers::json(Some("application/json"));
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
    Ok(http::PreparedRequest::new(
        format!("{}/chat/completions", base_url.trim_end_matches('/')),
        &body,
        headers,
        options,
        CompletionsWire,
    ))
}

/// The Chat Completions stream: SSE chunks to `[DONE]`.
pub(crate) struct CompletionsWire;

impl http::Wire for CompletionsWire {
    fn read(
        self,
        reply: http::Reply<'_>,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send {
        // As pi: blocks stay open until the end of the stream, and an abort ends them first.
        reply.writer.end_blocks_on_abort();
        reply.read_sse(read_stream)
    }
}

/// Reads a response body to its end (fuzzing feeds bytes here, without a network).
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
