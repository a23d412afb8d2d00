//! Cross-provider hand-off: one transcript, made by several models, replayed through every wire
//! API against the mock server. Each request must be valid for its target: foreign reasoning as
//! text, foreign signatures gone, tool-call ids in the target's format with results that
//! follow them, orphaned calls answered, failed turns dropped, images placed per provider.

use pi_agent::ai::{
    self, AssistantContent, AssistantMessage, Context, ImageContent, Message, Model, StopReason,
    StreamOptions, TextContent, ThinkingContent, Tool, ToolCall, ToolResultMessage, UserContent,
    UserMessage, UserMessageContent,
};
use pi_mock_server::MockServer;
use serde_json::{Value, json};

fn assistant(
    api: &str,
    provider: &str,
    model: &str,
    content: Vec<AssistantContent>,
    stop: StopReason,
) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        api: api.into(),
        provider: provider.into(),
        model: model.into(),
        stop_reason: stop,
        ..AssistantMessage::default()
    })
}

fn call(id: &str, arguments: Value) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: "calculator".into(),
        arguments,
        thought_signature: Some("c2lnbmF0dXJl".into()),
    })
}

fn result(id: &str, content: Vec<UserContent>) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "calculator".into(),
        content,
        details: None,
        is_error: false,
        timestamp: 1,
        timing: None,
    })
}

/// The shared transcript: OpenAI Responses (pipe ids, encrypted reasoning), Anthropic (signed
/// thinking, a tool call without result), a failed Gemini turn, then a question.
fn transcript() -> Context {
    let image = UserContent::Image(ImageContent {
        data: "iVBORw0KGgo=".into(),
        mime_type: "image/png".into(),
    });
    Context {
        system_prompt: Some("You are a calculator assistant.".into()),
        messages: vec![
            Message::User(UserMessage::text("What is 6*7, and show a chart?")),
            assistant(
                "openai-responses",
                "openai",
                "gpt-5-mini",
                vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "Need the calculator.".into(),
                        thinking_signature: Some(r#"{"type":"reasoning","id":"rs_1","encrypted_content":"gAAA","summary":[]}"#.into()),
                        redacted: None,
                    }),
                    call("call_abc|fc_0123456789abcdef0123456789abcdef0123456789abcdef0123456789", json!({"expression": "6*7"})),
                ],
                StopReason::ToolUse,
            ),
            result(
                "call_abc|fc_0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
                vec![UserContent::text("42"), image],
            ),
            assistant(
                "anthropic-messages",
                "anthropic",
                "claude-sonnet-4-5",
                vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "Also plot it.".into(),
                        thinking_signature: Some("EqQBCkYIBxgCKkD".into()),
                        redacted: None,
                    }),
                    AssistantContent::Text(TextContent::new("6*7 = 42. Plotting...")),
                    call("toolu_01.orphan", json!({"expression": "42"})),
                ],
                StopReason::ToolUse,
            ),
            assistant(
                "google-generative-ai",
                "google",
                "gemini-2.5-flash",
                vec![AssistantContent::Text(TextContent::new("partial"))],
                StopReason::Error,
            ),
            Message::User(UserMessage {
                content: UserMessageContent::Text("Thanks. Now what is 7*8?".into()),
                timestamp: 2,
            }),
        ],
        tools: Some(vec![Tool {
            name: "calculator".into(),
            description: "Evaluates arithmetic".into(),
            parameters: json!({"type": "object", "properties": {"expression": {"type": "string"}}}),
        }]),
    }
}

/// A minimal successful text reply in each wire format.
fn text_reply(api: &str) -> Value {
    match api {
        "openai-completions" | "mistral-conversations" => json!({"chunks": [
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": "56"}, "finish_reason": null}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}}
        ]}),
        "anthropic-messages" => json!({"sse": [
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"56\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ]}),
        "openai-responses" => json!({"sse": [
            "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
            "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[]}}\n\n",
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"56\"}\n\n",
            "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"56\"}]}}\n\n",
            "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"total_tokens\":11}}}\n\n",
        ]}),
        "google-generative-ai" => json!({"sse": [
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"56\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":10,\"candidatesTokenCount\":1,\"totalTokenCount\":11}}\r\n\r\n",
        ]}),
        other => panic!("no reply for {other}"),
    }
}

fn target(api: &str, server: &MockServer) -> Model {
    let (provider, id, base) = match api {
        "openai-completions" => ("openai", "gpt-4o-mini", server.base_url()),
        "openai-responses" => ("openai", "gpt-5", server.base_url()),
        "anthropic-messages" => (
            "anthropic",
            "claude-opus-4-5",
            format!("http://{}", server.addr()),
        ),
        "google-generative-ai" => (
            "google",
            "gemini-2.5-pro",
            format!("http://{}/v1beta", server.addr()),
        ),
        "mistral-conversations" => (
            "mistral",
            "mistral-large-latest",
            format!("http://{}", server.addr()),
        ),
        other => panic!("{other}"),
    };
    let mut model = Model::new(api, provider, id, base);
    model.input = vec![ai::InputModality::Text, ai::InputModality::Image];
    model
}

/// Every string in the body, for "this must not leak" checks.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn one_transcript_replays_through_every_provider() {
    for api in [
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
        "google-generative-ai",
        "mistral-conversations",
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(text_reply(api));
        let options = StreamOptions {
            api_key: Some("test-key".into()),
            max_retries: Some(0),
            ..StreamOptions::default()
        };
        let message = ai::complete(&target(api, &server), &transcript(), &options).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{api}: {message:?}");
        assert_eq!(message.text(), "56", "{api}");

        let body = server.requests()[0].body.clone();
        let mut all = Vec::new();
        strings(&body, &mut all);
        let text = all.join("\n");
        // Foreign reasoning is replayed as plain text, never with another provider's signature.
        assert!(
            text.contains("Need the calculator."),
            "{api}: reasoning kept as text\n{body:#}"
        );
        assert!(
            !text.contains("gAAA") && !text.contains("EqQBCkYIBxgCKkD"),
            "{api}: foreign signatures leaked"
        );
        assert!(
            !text.contains("c2lnbmF0dXJl"),
            "{api}: foreign thought signature leaked"
        );
        // The failed turn is dropped.
        assert!(!text.contains("partial"), "{api}: errored turn replayed");
        // The orphaned call is answered with pi's synthetic result.
        assert!(
            text.contains("No result provided"),
            "{api}: orphan repaired"
        );
        // No raw pipe ids reach APIs that cannot take them.
        if api != "openai-responses" {
            assert!(!text.contains("call_abc|"), "{api}: pipe id not normalised");
        }
        assert!(
            !text.contains("toolu_01.orphan")
                || api == "openai-completions"
                || api == "google-generative-ai",
            "{api}: invalid characters in a tool id"
        );
        // The last user question is there.
        assert!(text.contains("Now what is 7*8?"), "{api}");
    }
}
