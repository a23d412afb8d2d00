//! api `openai-codex-responses`: the Responses API of the ChatGPT subscription backend
//! (`{baseUrl}/codex/responses`, default `https://chatgpt.com/backend-api`; pi's
//! `providers/openai-codex-responses.ts`).
//!
//! The key is the ChatGPT OAuth access token (see [`oauth::openai_codex`](crate::ai::oauth));
//! its JWT claim `https://api.openai.com/auth` → `chatgpt_account_id` is sent as
//! `chatgpt-account-id`. The body is a Responses request with the system prompt as
//! `instructions` ([`request`]); the answer is decoded by the shared Responses decoder after
//! Codex's own event mapping ([`events`]).
//!
//! **Transports** (`transport` option, default `auto`): `sse` is a `POST` answered by SSE;
//! `websocket`, `websocket-cached` and `auto` first try a WebSocket ([`websocket`]) and fall
//! back to SSE when it fails before any event arrived: the failure is recorded in the message's
//! `diagnostics` (`provider_transport_failure`) and the session goes straight to SSE from then
//! on. An API or protocol error on the WebSocket is never retried over SSE, nor is a failure
//! after events were streamed. With an HTTP proxy configured for the host, requests go straight
//! to SSE (WebSockets do not use the proxy).
//!
//! **Retries** over SSE are pi's Codex rules on the shared driver: up to 3 (`max_retries`),
//! 1 s doubling (or the server's `Retry-After`), for 429, 500, 502, 503, 504 and bodies that
//! read like an overload; a 429 becomes pi's "You have hit your ChatGPT usage limit" message.
//!
//! Differences from pi 0.73.1, deliberate: pi's retry loop catches its own error for a
//! non-retryable status and retries it anyway (a 401 is tried four times, seven seconds in all);
//! here only the statuses above are retried, and an exhausted plan quota
//! (`usage_limit_reached`, `usage_not_included`) is not retried at all. A body that ends before
//! the response completes is an error (pi reports `done`). `tool_choice` from the options is
//! sent (pi always sends `auto`). A cached WebSocket the server closed while idle is replaced by
//! a fresh one before falling back to SSE.

pub(crate) mod events;
pub(crate) mod request;
pub(crate) mod websocket;

use serde_json::{Value, json};

use self::events::CodexError;
use self::websocket::{WebSocketFailure, WebSocketRequest};
use super::http::{self, RetryPolicy};
use super::openai_responses::response::{Pricing, ResponseState};
use crate::ai::env_keys::{missing_key_message, request_key};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::oauth::openai_codex::account_id;
use crate::ai::options::{ApiKey, StreamOptions, Transport};
use crate::ai::redact::Redactor;
use crate::ai::simple_options::with_reasoning_effort;
use crate::ai::types::{Context, now_ms};

pub use self::websocket::OpenAICodexWebSocketStats;

/// The api id.
pub(crate) const API: &str = "openai-codex-responses";

/// The message of a token that is not a ChatGPT OAuth JWT (pi's words).
pub(crate) const NO_ACCOUNT_ID: &str = "Failed to extract accountId from token";

/// The message of a body that ended before the response completed.
pub(crate) const INCOMPLETE_RESPONSE: &str =
    "Connection error: the provider closed the stream before the response was complete";

/// pi's Codex retries: 3, from 1 s.
const RETRY_POLICY: RetryPolicy<'static> = RetryPolicy {
    default_max_retries: 3,
    retryable: &|status, _, body| events::is_retryable(status, body),
    base_delay: std::time::Duration::from_secs(1),
};

/// The `openai-codex-responses` provider. Its options (`transport`, `textVerbosity`,
/// `reasoningEffort`, `reasoningSummary`, `serviceTier`, `sessionId`) are [`StreamOptions`]
/// keys.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenAICodexResponsesProvider;

/// Codex's side of the exchange: what the WebSocket transport needs, and the Responses
/// stream over SSE. (No `Debug`: it holds the token.)
pub(crate) struct CodexWire {
    base_url: String,
    /// The body as JSON, for the WebSocket (the request carries it serialized, for SSE).
    body: Value,
    token: ApiKey,
    account_id: String,
}

type Prepared = http::PreparedRequest<CodexWire>;

impl http::Wire for CodexWire {
    const RETRY_POLICY: RetryPolicy<'static> = RETRY_POLICY;

    /// The WebSocket first (unless the transport is `sse`, a proxy is set, or the session fell
    /// back before); a failure before any event falls back to SSE.
    async fn prepare_send(
        request: &mut Prepared,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<http::Flow, ProviderError> {
        let options = &request.options;
        let transport = options.transport.unwrap_or_default();
        let session_id = options.session_id.as_deref();
        if transport == Transport::Sse
            || websocket::proxied(&request::websocket_url(&request.wire.base_url))
            || websocket::take_sse_fallback(session_id)
        {
            return Ok(http::Flow::Send);
        }
        match stream_websocket(writer, model, request, transport).await {
            Ok(()) => Ok(http::Flow::Done),
            Err(WebSocketFailure {
                error: CodexError::Transport(error),
                started,
            }) => {
                record_transport_failure(writer, request, transport, &error, started);
                websocket::record_failure(session_id, &error, !started);
                if started {
                    return Err(events::transport_error(error));
                }
                Ok(http::Flow::Send)
            }
            Err(WebSocketFailure { error, .. }) => Err(error.into_error()),
        }
    }

    fn error_message(
        status: reqwest::StatusCode,
        _: &reqwest::header::HeaderMap,
        body: &str,
    ) -> String {
        events::error_message(status, body)
    }

    fn read(
        self,
        reply: http::Reply<'_>,
    ) -> impl std::future::Future<Output = Result<(), ProviderError>> + Send {
        let pricing = pricing(&reply.options);
        reply.read_sse(async move |writer, model, events| {
            read_stream(writer, model, events, pricing).await
        })
    }
}

http::api_provider! { OpenAICodexResponsesProvider, API, prepare, with_reasoning_effort }

fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<Prepared, ProviderError> {
    let auth = |message: String| ProviderError::other(message, Some(ErrorKind::Auth));
    let token = request_key(options).ok_or_else(|| auth(missing_key_message(&model.provider)))?;
    let account_id = account_id(token.expose()).ok_or_else(|| auth(NO_ACCOUNT_ID.to_owned()))?;
    let body = options.payload(request::build_body(model, context, options), model)?;
    let headers = request::sse_headers(model, options, &account_id, &token);
    let mut prepared = Prepared::new(
        request::resolve_url(&model.base_url),
        &serde_json::Value::Null,
        headers,
        options,
        CodexWire {
            base_url: model.base_url.clone(),
            body,
            token,
            account_id,
        },
    );
    prepared.body = serde_json::to_vec(&prepared.wire.body)
        .unwrap_or_default()
        .into();
    Ok(prepared)
}

fn pricing(options: &StreamOptions) -> Pricing {
    Pricing {
        service_tiers: true,
        requested_tier: options.service_tier.clone(),
        requested_over_default: true,
    }
}

/// Appends pi's `provider_transport_failure` diagnostic.
fn record_transport_failure(
    writer: &mut StreamWriter,
    request: &Prepared,
    transport: Transport,
    error: &str,
    started: bool,
) {
    let mut details = json!({
        "configuredTransport": transport,
        "eventsEmitted": started,
        "phase": if started { "after_message_stream_start" } else { "before_message_stream_start" },
        "requestBytes": request.body.len(),
    });
    if !started {
        details["fallbackTransport"] = json!("sse");
    }
    writer
        .message_mut()
        .diagnostics
        .get_or_insert_default()
        .push(json!({
            "type": "provider_transport_failure",
            "timestamp": now_ms(),
            "error": {"message": error},
            "details": details,
        }));
}

async fn stream_websocket(
    writer: &mut StreamWriter,
    model: &Model,
    request: &Prepared,
    transport: Transport,
) -> Result<(), WebSocketFailure> {
    let options = &request.options;
    let wire = &request.wire;
    let request_id = options
        .session_id
        .clone()
        .unwrap_or_else(request::random_uuid);
    let headers =
        request::websocket_headers(model, options, &wire.account_id, &wire.token, &request_id);
    hide_credentials(writer, &headers.0, &wire.token);
    let url = request::websocket_url(&wire.base_url);
    websocket::stream(
        writer,
        model,
        WebSocketRequest {
            url: &url,
            headers: &headers.0,
            body: &wire.body,
            transport,
            options,
            pricing: pricing(options),
        },
    )
    .await
}

/// Hides the token (and any credential header) in every message from now on.
fn hide_credentials(writer: &mut StreamWriter, headers: &[(String, String)], token: &ApiKey) {
    let mut redactor = Redactor::default();
    for (name, value) in headers {
        redactor.add_header(name, value);
    }
    redactor.add(token.expose());
    writer.hide_secrets(redactor);
}

/// Reads an SSE body to the end of the response (fuzzing feeds bytes here, without a
/// network).
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    model: &Model,
    events: &mut http::SseEvents,
    pricing: Pricing,
) -> Result<(), ProviderError> {
    let mut state = ResponseState::new(pricing);
    while let Some(event) = events.next().await? {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        let finished = events::handle_text(&mut state, data, "SSE", writer, model)
            .await
            .map_err(CodexError::into_error)?;
        if finished || writer.is_closed() {
            return Ok(());
        }
    }
    if writer.is_closed() {
        return Ok(());
    }
    Err(events.incomplete(INCOMPLETE_RESPONSE))
}

/// pi's `getOpenAICodexWebSocketDebugStats`: the WebSocket statistics of a session.
pub fn websocket_stats(session_id: &str) -> Option<OpenAICodexWebSocketStats> {
    websocket::stats(session_id)
}

/// pi's `resetOpenAICodexWebSocketDebugStats`: forgets the statistics (and the SSE fallback) of
/// one session, or of all.
pub fn reset_websocket_stats(session_id: Option<&str>) {
    websocket::reset_stats(session_id);
}

/// pi's `closeOpenAICodexWebSocketSessions`: closes the cached WebSocket of one session, or
/// all of them.
pub fn close_websocket_sessions(session_id: Option<&str>) {
    websocket::close_sessions(session_id);
}
