//! Shared by the `reliability_*` tests: the SSE wire APIs, each with a model pointed at a mock
//! server and the bytes of a short complete answer in its own format.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use futures::StreamExt;
use pi_agent::ai::{self, AssistantMessage, AssistantMessageEvent, Context, Model, StreamOptions};
use pi_agent::ai::{Message, UserMessage};
use pi_mock_server::MockServer;
use serde_json::{Value, json};

/// Generous guard against hangs; a correct run takes well under a second.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The secret every credential test uses. It is shaped like a ChatGPT OAuth token (a JWT whose
/// claim names an account) so that openai-codex-responses takes it too.
pub const KEY: &str = "eyJhbGciOiJub25lIn0.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdC1yZWxpYWJpbGl0eSJ9fQ.sk-secret-0123456789abcdef";

/// One wire API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    Completions,
    Responses,
    Anthropic,
    Google,
    Mistral,
    Vertex,
    Codex,
}

pub const ALL: [Api; 7] = [
    Api::Completions,
    Api::Responses,
    Api::Anthropic,
    Api::Google,
    Api::Mistral,
    Api::Vertex,
    Api::Codex,
];

fn sse_event(name: Option<&str>, data: &Value) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

impl Api {
    pub fn id(self) -> &'static str {
        match self {
            Api::Completions => "openai-completions",
            Api::Responses => "openai-responses",
            Api::Anthropic => "anthropic-messages",
            Api::Google => "google-generative-ai",
            Api::Mistral => "mistral-conversations",
            Api::Vertex => "google-vertex",
            Api::Codex => "openai-codex-responses",
        }
    }

    /// What a failed response with `status` and the provider message `message` reads like:
    /// `"<status> <message>"`, except for Codex, which has pi's own wording (no status, and
    /// its usage-limit sentence for a 429).
    pub fn http_error(self, status: u16, message: &str) -> String {
        match self {
            Api::Codex if status == 429 => "You have hit your ChatGPT usage limit.".to_owned(),
            Api::Codex => message.to_owned(),
            _ => format!("{status} {message}"),
        }
    }

    /// The options a request of this API needs besides the test's: a key where a loopback
    /// server is not enough (Vertex's API-key mode, Codex's ChatGPT token) and, for Codex,
    /// the SSE transport (unless the test names one).
    pub fn complete_options(self, options: &StreamOptions) -> StreamOptions {
        let mut options = options.clone();
        match self {
            Api::Vertex | Api::Codex if options.api_key.is_none() => {
                options.api_key = Some(pi_agent::ai::ApiKey::new(KEY));
            }
            _ => {}
        }
        if self == Api::Codex && options.transport.is_none() {
            options.transport = Some(pi_agent::ai::Transport::Sse);
        }
        options
    }

    /// The API of a model this module made.
    pub fn of(model: &Model) -> Option<Api> {
        ALL.into_iter().find(|api| api.id() == model.api)
    }

    /// A model of provider `mock` (no environment key) served by `server`.
    pub fn model(self, server: &MockServer) -> Model {
        self.model_at(&server.base_url())
    }

    pub fn model_at(self, base_url: &str) -> Model {
        Model::new(self.id(), "mock", "mock-model", base_url)
    }

    /// The SSE events of a complete answer `hi` with 5 input and 2 output tokens; the last
    /// element is the protocol's end marker (`[DONE]`, `message_stop`, `response.completed`, the
    /// chunk with the finish reason).
    pub fn answer(self) -> Vec<String> {
        match self {
            Api::Completions => vec![
                sse_event(
                    None,
                    &json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]}),
                ),
                sse_event(
                    None,
                    &json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                ),
                sse_event(
                    None,
                    &json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
                ),
                "data: [DONE]\n\n".to_owned(),
            ],
            Api::Mistral => vec![
                sse_event(
                    None,
                    &json!({"id": "m1", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": null}]}),
                ),
                sse_event(
                    None,
                    &json!({"id": "m1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
                ),
                "data: [DONE]\n\n".to_owned(),
            ],
            Api::Responses | Api::Codex => vec![
                sse_event(
                    None,
                    &json!({"type": "response.created", "response": {"id": "resp_1"}}),
                ),
                sse_event(
                    None,
                    &json!({"type": "response.output_text.delta", "item_id": "msg_1",
                            "output_index": 0, "content_index": 0, "delta": "hi"}),
                ),
                sse_event(
                    None,
                    &json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                            "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}}),
                ),
            ],
            Api::Anthropic => vec![
                sse_event(
                    Some("message_start"),
                    &json!({"type": "message_start", "message": {"id": "msg_1", "model": "mock-model",
                            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
                ),
                sse_event(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                sse_event(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
                ),
                sse_event(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": 0}),
                ),
                sse_event(
                    Some("message_delta"),
                    &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
                ),
                sse_event(Some("message_stop"), &json!({"type": "message_stop"})),
            ],
            Api::Google | Api::Vertex => vec![sse_event(
                None,
                &json!({"candidates": [{"content": {"parts": [{"text": "hi"}], "role": "model"},
                        "finishReason": "STOP", "index": 0}],
                        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2}}),
            )],
        }
    }

    /// An error event inside a 200 stream, carrying `message`.
    pub fn stream_error(self, message: &str) -> String {
        match self {
            Api::Completions => sse_event(None, &json!({"error": {"message": message}})),
            Api::Responses | Api::Codex => {
                sse_event(None, &json!({"type": "error", "message": message}))
            }
            Api::Anthropic => sse_event(
                Some("error"),
                &json!({"type": "error", "error": {"type": "api_error", "message": message}}),
            ),
            Api::Google | Api::Vertex => {
                sse_event(None, &json!({"error": {"code": 400, "message": message}}))
            }
            Api::Mistral => sse_event(
                None,
                &json!({"object": "error", "message": message, "type": "invalid_request_error"}),
            ),
        }
    }
}

pub fn context() -> Context {
    Context {
        system_prompt: None,
        messages: vec![Message::User(UserMessage::text("hi"))],
        tools: None,
    }
}

/// No retries, so failures are immediate.
pub fn no_retries() -> StreamOptions {
    StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    }
}

/// Runs one request to its end (failing the test if that takes longer than [`HANG_GUARD`]).
pub async fn run(
    model: &Model,
    options: &StreamOptions,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let options = match Api::of(model) {
        Some(api) => api.complete_options(options),
        None => options.clone(),
    };
    let work = async {
        let mut stream = ai::stream(model, &context(), &options);
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        let message = stream.final_message().expect("a terminal event");
        (events, message)
    };
    match tokio::time::timeout(HANG_GUARD, work).await {
        Ok(result) => result,
        Err(_) => panic!("{} request hung for {HANG_GUARD:?}", model.api),
    }
}

/// Every text of a message the library wrote (error message and diagnostics), as JSON.
pub fn library_texts(message: &AssistantMessage) -> String {
    format!(
        "{:?} {}",
        message.error_message,
        serde_json::to_string(&message.diagnostics).unwrap_or_default()
    )
}
