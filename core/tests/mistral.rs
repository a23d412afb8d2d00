//! The `mistral-conversations` provider against the mock server.

use pi_agent::ai::{
    self, AssistantContent, AssistantMessage, Context, Message, Model, StopReason, StreamOptions,
    ThinkingLevel, Tool, ToolCall, ToolResultMessage, UserContent, UserMessage,
};
use pi_mock_server::MockServer;
use serde_json::{Value, json};

fn model(server: &MockServer, id: &str, reasoning: bool) -> Model {
    let mut model = Model::new(
        "mistral-conversations",
        "mistral",
        id,
        format!("http://{}", server.addr()),
    );
    model.reasoning = reasoning;
    model
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "cmpl-m1", "object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

fn context() -> Context {
    Context {
        system_prompt: Some("sys".into()),
        messages: vec![Message::User(UserMessage::text("hi"))],
        tools: Some(vec![Tool {
            name: "calc".into(),
            description: "math".into(),
            parameters: json!({"type": "object"}),
        }]),
    }
}

#[tokio::test]
async fn thinking_text_and_tool_calls_stream() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"chunks": [
        chunk(json!({"role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me "}]}]}), Value::Null),
        chunk(json!({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "think."}]}]}), Value::Null),
        chunk(json!({"content": "The answer"}), Value::Null),
        chunk(json!({"content": [{"type": "text", "text": " follows."}]}), Value::Null),
        chunk(json!({"tool_calls": [{"id": "abcDEF123", "index": 0, "function": {"name": "calc", "arguments": "{\"x\":"}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"id": "abcDEF123", "index": 0, "function": {"name": "calc", "arguments": "2}"}}]}), Value::Null),
        {"id": "cmpl-m1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
         "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}},
    ], "split_random": 5}));
    let message = ai::complete_simple(
        &model(&server, "magistral-medium-latest", true),
        &context(),
        &StreamOptions {
            reasoning: Some(ThinkingLevel::High),
            max_tokens: Some(100),
            ..StreamOptions::default()
        },
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    let AssistantContent::Thinking(thinking) = &message.content[0] else {
        panic!("{message:?}")
    };
    assert_eq!(thinking.thinking, "Let me think.");
    assert_eq!(message.text(), "The answer follows.");
    let call = message.tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.arguments.clone()),
        ("abcDEF123", json!({"x": 2}))
    );
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.total_tokens
        ),
        (12, 8, 20)
    );
    assert_eq!(message.response_id.as_deref(), Some("cmpl-m1"));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["prompt_mode"], "reasoning");
    assert_eq!(request.body["max_tokens"], 100);
    assert_eq!(
        request.body["messages"][0],
        json!({"role": "system", "content": "sys"})
    );
    assert_eq!(request.body["tools"][0]["function"]["strict"], false);
}

#[tokio::test]
async fn replay_uses_nine_character_ids_and_tool_messages() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"chunks": [chunk(json!({"content": "ok"}), json!("stop"))]}));
    let mut context = context();
    context.messages.push(Message::Assistant(AssistantMessage {
        content: vec![AssistantContent::ToolCall(ToolCall {
            id: "call_1|fc_xyz".into(),
            name: "calc".into(),
            arguments: json!({"x": 1}),
            thought_signature: None,
        })],
        api: "openai-responses".into(),
        provider: "openai".into(),
        model: "gpt".into(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    }));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1|fc_xyz".into(),
            tool_name: "calc".into(),
            content: vec![UserContent::text("boom")],
            details: None,
            is_error: true,
            timestamp: 0,
            timing: None,
        }));
    let options = StreamOptions {
        session_id: Some("sess".into()),
        ..StreamOptions::default()
    };
    let message = ai::complete(
        &model(&server, "mistral-small-latest", false),
        &context,
        &options,
    )
    .await;
    assert_eq!(message.text(), "ok");
    let request = &server.requests()[0];
    assert_eq!(request.header("x-affinity"), Some("sess"));
    let messages = request.body["messages"].as_array().unwrap();
    assert_eq!(messages[2]["tool_calls"][0]["id"], "1ha221vvv");
    assert_eq!(messages[3]["tool_call_id"], "1ha221vvv");
    assert_eq!(messages[3]["content"][0]["text"], "[tool error] boom");
}

#[tokio::test]
async fn errors_are_reported() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"status": 401, "body": {"message": "Unauthorized"}}));
    let options = StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model(&server, "m", false), &context(), &options).await;
    assert_eq!(message.error_message.as_deref(), Some("401 Unauthorized"));
    server.push(json!({"chunks": [chunk(json!({"content": "cut"}), Value::Null)], "done": false}));
    let message = ai::complete(&model(&server, "m", false), &context(), &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.text(), "cut");
}

#[tokio::test]
async fn a_user_message_after_tool_results_follows_an_assistant_message() {
    // A steering message after a turn's tool results, and after a failed turn that is left
    // out: Mistral refuses `user` right after `tool`.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"chunks": [chunk(json!({"content": "ok"}), json!("stop"))]}));
    let model = model(&server, "mistral-small-latest", false);
    let mut context = context();
    context.messages.push(Message::Assistant(AssistantMessage {
        content: vec![AssistantContent::ToolCall(ToolCall {
            id: "abcdefghi".into(),
            name: "calc".into(),
            arguments: json!({"x": 1}),
            thought_signature: None,
        })],
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    }));
    context
        .messages
        .push(Message::ToolResult(ToolResultMessage {
            tool_call_id: "abcdefghi".into(),
            tool_name: "calc".into(),
            content: vec![UserContent::text("2")],
            details: None,
            is_error: false,
            timestamp: 0,
            timing: None,
        }));
    context.messages.push(Message::Assistant(AssistantMessage {
        content: vec![AssistantContent::Text(ai::TextContent::new("half"))],
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        stop_reason: StopReason::Error,
        ..AssistantMessage::default()
    }));
    context
        .messages
        .push(Message::User(UserMessage::text("and then?")));
    let message = ai::complete(&model, &context, &StreamOptions::default()).await;
    assert_eq!(message.text(), "ok", "{message:?}");
    let body = &server.requests()[0].body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"],
        "{body}"
    );
    assert_eq!(
        body["messages"][4],
        json!({"role": "assistant", "content": "I have processed the tool results.", "prefix": false})
    );
}
