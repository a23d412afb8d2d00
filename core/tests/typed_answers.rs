//! Typed answers against the mock server: one `toolChoice` and one `outputSchema` mapped onto
//! every wire API's request, streamed partial objects, invalid output, the forced-tool
//! fallback and its replay, and `complete_structured::<T>`.

use base64::Engine as _;
use futures::StreamExt;
use pi_agent::ai::providers::eventstream::{self, HeaderValue};
use pi_agent::ai::{
    self, ApiKey, AssistantContent, AssistantMessage, AssistantMessageEvent, Context, ErrorKind,
    Message, Model, OutputSchema, StopReason, StreamOptions, Tool, ToolChoice, Transport,
    UserMessage,
};
use pi_mock_server::{MockServer, reply};
use serde_json::{Value, json};

fn tool(name: &str) -> Tool {
    Tool {
        name: name.into(),
        description: format!("The {name} tool"),
        parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
    }
}

fn context(tools: bool) -> Context {
    Context {
        system_prompt: None,
        messages: vec![Message::User(UserMessage::text("Weather in Paris?"))],
        tools: tools.then(|| vec![tool("calc"), tool("search")]),
    }
}

fn weather() -> OutputSchema {
    OutputSchema::new(
        "weather",
        json!({"type": "object",
               "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
               "required": ["city", "celsius"], "additionalProperties": false}),
    )
    .with_strict(true)
}

/// A codex token: a JWT whose auth claim names an account.
fn codex_token() -> String {
    let payload = json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acc"},
                         "exp": 4_102_444_800u64});
    format!(
        "eyJhbGciOiJSUzI1NiJ9.{}.c2lnbmF0dXJl",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.to_string())
    )
}

/// Every built-in wire API, as a model and options pointing at `server`.
fn apis(server: &MockServer) -> Vec<(Model, StreamOptions)> {
    let root = format!("http://{}", server.addr());
    let key = |key: &str| StreamOptions {
        api_key: Some(ApiKey::new(key)),
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let mut vertex = ai::get_model("google-vertex", "gemini-2.5-flash").unwrap();
    vertex.base_url = server.base_url();
    let mut bedrock = ai::get_model("amazon-bedrock", "amazon.nova-lite-v1:0").unwrap();
    bedrock.base_url = root.clone();
    let mut codex = ai::get_model("openai-codex", "gpt-5.2-codex").unwrap();
    codex.base_url = server.base_url();
    vec![
        (
            Model::new("openai-completions", "mock", "mock-gpt", server.base_url()),
            key("sk-test"),
        ),
        (
            Model::new(
                "openai-responses",
                "openai",
                "gpt-5-mini",
                server.base_url(),
            ),
            key("sk-test"),
        ),
        (
            Model::new(
                "azure-openai-responses",
                "azure-openai-responses",
                "gpt-5-mini",
                "",
            ),
            StreamOptions {
                azure_base_url: Some(format!("{}/", server.base_url())),
                ..key("azure-key")
            },
        ),
        (
            Model::new(
                "anthropic-messages",
                "anthropic",
                "claude-sonnet-4-5",
                &root,
            ),
            key("sk-ant-api03-test"),
        ),
        (
            Model::new(
                "google-generative-ai",
                "google",
                "gemini-2.5-flash",
                server.base_url(),
            ),
            key("AIza-test"),
        ),
        (vertex, key("vertex-key")),
        (
            Model::new(
                "mistral-conversations",
                "mistral",
                "mistral-large-latest",
                &root,
            ),
            key("mistral-key"),
        ),
        (bedrock, key("ABSK-test-key")),
        (
            codex,
            StreamOptions {
                transport: Some(Transport::Sse),
                ..key(&codex_token())
            },
        ),
    ]
}

/// Sends one request to each api (answered with an error: only the request matters) and
/// returns each api's recorded body.
async fn bodies(context: &Context, set: impl Fn(&mut StreamOptions)) -> Vec<(String, Value)> {
    let server = MockServer::start().await.unwrap();
    let mut out = Vec::new();
    for (model, mut options) in apis(&server) {
        set(&mut options);
        server.reset();
        server.push(reply::http_error(
            400,
            json!({"error": {"message": "mapped"}}),
        ));
        let message = ai::complete(&model, context, &options).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{}", model.api);
        let requests = server.requests();
        let request = requests
            .iter()
            .find(|r| r.method == "POST")
            .unwrap_or_else(|| panic!("{}: no request ({message:?})", model.api));
        out.push((model.api.clone(), request.body.clone()));
    }
    out
}

fn field<'a>(body: &'a Value, api: &str, pointer: &str) -> &'a Value {
    body.pointer(pointer)
        .unwrap_or_else(|| panic!("{api}: no {pointer} in {body}"))
}

#[tokio::test]
async fn one_tool_choice_maps_onto_every_api() {
    let named = bodies(&context(true), |o| {
        o.tool_choice = Some(ToolChoice::Tool("calc".into()))
    })
    .await;
    let required = bodies(&context(true), |o| {
        o.tool_choice = Some(ToolChoice::Required)
    })
    .await;
    let none = bodies(&context(true), |o| o.tool_choice = Some(ToolChoice::None)).await;
    assert_eq!(named.len(), 9);
    for ((api, named), ((_, required), (_, none))) in
        named.iter().zip(required.iter().zip(none.iter()))
    {
        let (pointer, want_named, want_required, want_none) = match api.as_str() {
            "openai-completions" | "mistral-conversations" => (
                "/tool_choice",
                json!({"type": "function", "function": {"name": "calc"}}),
                json!(if api == "mistral-conversations" {
                    "any"
                } else {
                    "required"
                }),
                json!("none"),
            ),
            "openai-responses" | "azure-openai-responses" | "openai-codex-responses" => (
                "/tool_choice",
                json!({"type": "function", "name": "calc"}),
                json!("required"),
                json!("none"),
            ),
            "anthropic-messages" => (
                "/tool_choice",
                json!({"type": "tool", "name": "calc"}),
                json!({"type": "any"}),
                json!({"type": "none"}),
            ),
            "google-generative-ai" | "google-vertex" => (
                "/toolConfig/functionCallingConfig",
                json!({"mode": "ANY", "allowedFunctionNames": ["calc"]}),
                json!({"mode": "ANY"}),
                json!({"mode": "NONE"}),
            ),
            "bedrock-converse-stream" => (
                "/toolConfig/toolChoice",
                json!({"tool": {"name": "calc"}}),
                json!({"any": {}}),
                Value::Null,
            ),
            other => panic!("unexpected api {other}"),
        };
        assert_eq!(field(named, api, pointer), &want_named, "{api}");
        assert_eq!(field(required, api, pointer), &want_required, "{api}");
        if want_none.is_null() {
            // Bedrock has no "none": the tools are left out, as pi does.
            assert!(none.get("toolConfig").is_none(), "{api}: {none}");
        } else {
            assert_eq!(field(none, api, pointer), &want_none, "{api}");
        }
    }
}

#[tokio::test]
async fn pis_per_provider_spellings_still_read() {
    for spelling in [
        json!({"type": "tool", "name": "calc"}),
        json!({"type": "function", "function": {"name": "calc"}}),
        json!({"type": "function", "name": "calc"}),
    ] {
        let options =
            StreamOptions::from_json(&json!({"toolChoice": spelling}).to_string()).unwrap();
        assert_eq!(options.tool_choice, Some(ToolChoice::Tool("calc".into())));
    }
    let options = StreamOptions::from_json(r#"{"toolChoice": "any"}"#).unwrap();
    assert_eq!(options.tool_choice, Some(ToolChoice::Required));
    let error = StreamOptions::from_json(r#"{"toolChoice": "requird"}"#).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("unknown tool choice \"requird\""),
        "{error}"
    );
}

#[tokio::test]
async fn an_unsatisfiable_tool_choice_fails_before_sending() {
    let server = MockServer::start().await.unwrap();
    for (model, options) in apis(&server) {
        for (choice, context, want) in [
            (
                ToolChoice::Required,
                context(false),
                "toolChoice \"required\" needs tools, but the request has none",
            ),
            (
                ToolChoice::Tool("weather".into()),
                context(true),
                "toolChoice names tool \"weather\", which is not among the request's tools (calc, search)",
            ),
        ] {
            let options = StreamOptions {
                tool_choice: Some(choice),
                ..options.clone()
            };
            let message = ai::complete(&model, &context, &options).await;
            assert_eq!(message.stop_reason, StopReason::Error);
            assert_eq!(
                message.error_message.as_deref(),
                Some(want),
                "{}",
                model.api
            );
            assert_eq!(message.error_kind, Some(ErrorKind::BadRequest));
        }
    }
    assert!(server.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn one_output_schema_maps_onto_every_api() {
    let schema = weather();
    let with = |o: &mut StreamOptions| o.output_schema = Some(weather());
    let plain = bodies(&context(false), with).await;
    let tools = bodies(&context(true), with).await;
    let forced_tool = json!({"name": "weather", "schema": schema.schema});
    for ((api, body), (_, with_tools)) in plain.iter().zip(tools.iter()) {
        match api.as_str() {
            "openai-completions" | "mistral-conversations" => {
                let want = json!({"type": "json_schema", "json_schema":
                    {"name": "weather", "schema": schema.schema, "strict": true}});
                assert_eq!(field(body, api, "/response_format"), &want, "{api}");
                assert_eq!(field(with_tools, api, "/response_format"), &want, "{api}");
            }
            "openai-responses" | "azure-openai-responses" | "openai-codex-responses" => {
                let want = json!({"type": "json_schema", "name": "weather",
                                  "schema": schema.schema, "strict": true});
                assert_eq!(field(body, api, "/text/format"), &want, "{api}");
            }
            "anthropic-messages" => {
                let want = json!({"type": "json_schema", "schema": schema.schema});
                assert_eq!(field(body, api, "/output_config/format"), &want, "{api}");
                assert!(body.get("tools").is_none(), "{api}");
            }
            "google-generative-ai" | "google-vertex" => {
                let config = field(body, api, "/generationConfig");
                assert_eq!(config["responseMimeType"], "application/json", "{api}");
                assert_eq!(config["responseJsonSchema"], schema.schema, "{api}");
                // With tools, Gemini 2.x takes the schema as a forced tool instead.
                assert!(
                    with_tools["generationConfig"]
                        .get("responseJsonSchema")
                        .is_none()
                );
                let declarations = field(with_tools, api, "/tools/0/functionDeclarations");
                assert_eq!(declarations[2]["name"], "weather", "{api}");
                assert_eq!(
                    field(with_tools, api, "/toolConfig/functionCallingConfig"),
                    &json!({"mode": "ANY"}),
                    "{api}: the model may still call the request's own tools"
                );
            }
            "bedrock-converse-stream" => {
                let spec = field(body, api, "/toolConfig/tools/0/toolSpec");
                assert_eq!(spec["name"], forced_tool["name"], "{api}");
                assert_eq!(spec["inputSchema"]["json"], forced_tool["schema"], "{api}");
                assert_eq!(
                    field(body, api, "/toolConfig/toolChoice"),
                    &json!({"tool": {"name": "weather"}}),
                    "{api}"
                );
                assert_eq!(
                    field(with_tools, api, "/toolConfig/toolChoice"),
                    &json!({"any": {}}),
                    "{api}"
                );
            }
            other => panic!("unexpected api {other}"),
        }
    }
}

#[tokio::test]
async fn older_claude_models_get_the_forced_tool() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::http_error(
        400,
        json!({"error": {"message": "mapped"}}),
    ));
    let (model, options) = older_claude(&server);
    ai::complete(&model, &context(false), &options).await;
    let body = &server.requests()[0].body;
    assert!(body.get("output_config").is_none(), "{body}");
    assert_eq!(body["tools"][0]["name"], "weather");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "weather"})
    );
}

#[tokio::test]
async fn a_forced_tool_gets_what_a_root_reference_points_at() {
    // A recursive pydantic model's schema is a root `$ref`: sent as it is, Claude saw an
    // object without properties, and no answer could match.
    let server = MockServer::start().await.unwrap();
    server.push(reply::http_error(
        400,
        json!({"error": {"message": "mapped"}}),
    ));
    let (model, mut options) = older_claude(&server);
    let node = json!({"type": "object",
        "properties": {"v": {"type": "integer"},
                       "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        "required": ["v"]});
    options.output_schema = Some(OutputSchema::new(
        "tree",
        json!({"$ref": "#/$defs/Node", "$defs": {"Node": node}}),
    ));
    ai::complete(&model, &context(false), &options).await;
    let body = &server.requests()[0].body;
    let input = &body["tools"][0]["input_schema"];
    assert_eq!(body["tools"][0]["name"], "tree", "{body}");
    assert_eq!(
        input["properties"]["v"],
        json!({"type": "integer"}),
        "{input}"
    );
    assert_eq!(input["required"], json!(["v"]), "{input}");
    assert_eq!(input["$defs"]["Node"]["required"], json!(["v"]), "{input}");
}

#[tokio::test]
async fn a_schema_that_clashes_or_does_not_compile_fails_before_sending() {
    let server = MockServer::start().await.unwrap();
    let model = Model::new("openai-completions", "mock", "m", server.base_url());
    for (schema, want) in [
        (
            OutputSchema::new("calc", json!({"type": "object"})),
            "outputSchema name \"calc\" is also the name of a tool; give the schema another name",
        ),
        (
            OutputSchema::new("bad name", json!({"type": "object"})),
            "outputSchema name \"bad name\" must be 1 to 64 letters, digits, '_' or '-'",
        ),
        (
            OutputSchema::new(
                "w",
                json!({"type": "object", "properties": {"a": {"pattern": "(?<"}}}),
            ),
            "outputSchema schema is invalid",
        ),
    ] {
        let options = StreamOptions {
            api_key: Some(ApiKey::new("k")),
            output_schema: Some(schema),
            ..StreamOptions::default()
        };
        let message = ai::complete(&model, &context(true), &options).await;
        let text = message.error_message.unwrap_or_default();
        assert!(text.starts_with(want), "{text}");
    }
    assert!(server.requests().is_empty());
}

async fn drain(
    mut stream: ai::AssistantMessageEventStream,
) -> (Vec<AssistantMessageEvent>, AssistantMessage) {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    (events, stream.final_message().expect("ended"))
}

/// Claude before the 4.5 generation at `server`, asked for [`weather`]: the schema goes as a
/// forced tool.
fn older_claude(server: &MockServer) -> (Model, StreamOptions) {
    let root = format!("http://{}", server.addr());
    (
        Model::new(
            "anthropic-messages",
            "anthropic",
            "claude-sonnet-4-0",
            &root,
        ),
        StreamOptions {
            api_key: Some(ApiKey::new("sk-ant-api03-test")),
            max_retries: Some(0),
            output_schema: Some(weather()),
            ..StreamOptions::default()
        },
    )
}

/// A mock reply streaming Anthropic's `events` as SSE.
fn anthropic_sse(events: &[Value]) -> Value {
    let pieces: Vec<String> = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    json!({ "sse": pieces })
}

fn completions(server: &MockServer) -> (Model, StreamOptions) {
    (
        Model::new("openai-completions", "mock", "mock-gpt", server.base_url()),
        StreamOptions {
            api_key: Some(ApiKey::new("sk-test")),
            max_retries: Some(0),
            output_schema: Some(weather()),
            ..StreamOptions::default()
        },
    )
}

#[tokio::test]
async fn partial_objects_stream_and_the_answer_validates() {
    let server = MockServer::start().await.unwrap();
    let mut answer = reply::text(r#"{"city": "Paris", "celsius": 21.5}"#);
    answer["delta_size"] = json!(5);
    server.push(answer);
    let (model, options) = completions(&server);
    let (events, message) = drain(ai::stream(&model, &context(false), &options)).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let objects: Vec<&Value> = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ObjectDelta { object, .. } => Some(object),
            _ => None,
        })
        .collect();
    // Every text delta but whitespace-only ones is followed by the object so far.
    let deltas = events.iter().filter(|e| e.kind() == "text_delta").count();
    assert!(objects.len() >= deltas - 1 && deltas > 3, "{objects:?}");
    assert_eq!(objects[0], &json!({}));
    assert!(objects.contains(&&json!({"city": ""})), "{objects:?}");
    assert!(
        objects.contains(&&json!({"city": "Paris", "celsius": 2})),
        "{objects:?}"
    );
    assert_eq!(
        objects.last().unwrap(),
        &&json!({"city": "Paris", "celsius": 21.5})
    );
    // Each object_delta comes right after the text delta it parsed.
    for (i, event) in events.iter().enumerate() {
        if event.kind() == "object_delta" {
            assert_eq!(events[i - 1].kind(), "text_delta");
        }
    }
    assert_eq!(
        ai::parse_output(&message.text()).unwrap(),
        json!({"city": "Paris", "celsius": 21.5})
    );
}

#[tokio::test]
async fn an_answer_that_does_not_validate_is_an_invalid_output_error() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::text(r#"{"city": "Paris", "celsius": "warm"}"#));
    server.push(reply::text("It is sunny in Paris."));
    let (model, options) = completions(&server);
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(message.error_kind, Some(ErrorKind::InvalidOutput));
    assert_eq!(
        message.error_message.as_deref(),
        Some(
            "Validation failed for output \"weather\":\n  - celsius: must be number\n\n\
             Received output:\n{\n  \"city\": \"Paris\",\n  \"celsius\": \"warm\"\n}"
        )
    );
    // The text is kept, for a retry that shows the model its answer.
    assert_eq!(message.text(), r#"{"city": "Paris", "celsius": "warm"}"#);
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(message.error_kind, Some(ErrorKind::InvalidOutput));
    let report = message.error_message.unwrap();
    assert!(
        report.starts_with("Validation failed for output \"weather\": the answer is not JSON"),
        "{report}"
    );
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn frame(kind: &str, payload: Value) -> Vec<u8> {
    eventstream::encode(&eventstream::Message {
        headers: vec![
            (":event-type".into(), HeaderValue::String(kind.into())),
            (
                ":content-type".into(),
                HeaderValue::String("application/json".into()),
            ),
            (":message-type".into(), HeaderValue::String("event".into())),
        ],
        payload: payload.to_string().into_bytes(),
    })
}

#[tokio::test]
async fn bedrocks_forced_tool_answer_arrives_as_text_and_replays_anywhere() {
    let server = MockServer::start().await.unwrap();
    let delta = |input: &str| {
        frame(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": input}}}),
        )
    };
    let body = [
        frame("messageStart", json!({"role": "assistant"})),
        frame(
            "contentBlockStart",
            json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tu1", "name": "weather"}}}),
        ),
        delta(r#"{"city": "Pa"#),
        delta(r#"ris", "celsius": 2"#),
        delta("1}"),
        frame("contentBlockStop", json!({"contentBlockIndex": 0})),
        frame("messageStop", json!({"stopReason": "tool_use"})),
        frame(
            "metadata",
            json!({"usage": {"inputTokens": 10, "outputTokens": 9, "totalTokens": 19}}),
        ),
    ]
    .concat();
    server.push(json!({"bytes_b64": [b64(&body)], "split_random": 3,
                       "headers": {"content-type": "application/vnd.amazon.eventstream"}}));
    let mut model = ai::get_model("amazon-bedrock", "amazon.nova-lite-v1:0").unwrap();
    model.base_url = format!("http://{}", server.addr());
    let options = StreamOptions {
        api_key: Some(ApiKey::new("ABSK-test-key")),
        output_schema: Some(weather()),
        ..StreamOptions::default()
    };
    let (events, message) = drain(ai::stream(&model, &context(false), &options)).await;
    let kinds: Vec<&str> = events.iter().map(AssistantMessageEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "text_start",
            "text_delta",
            "object_delta",
            "text_delta",
            "object_delta",
            "text_delta",
            "object_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(
        events[3],
        AssistantMessageEvent::ObjectDelta {
            content_index: 0,
            object: json!({"city": "Pa"})
        }
    );
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(
        message.content,
        vec![AssistantContent::Text(ai::TextContent::new(
            r#"{"city": "Paris", "celsius": 21}"#
        ))]
    );
    assert_eq!(message.tool_calls().count(), 0);

    // The transcript is plain text: another api gets an ordinary assistant turn.
    let openai = MockServer::start().await.unwrap();
    openai.push(reply::text("ok"));
    let mut next = context(false);
    next.messages.push(Message::Assistant(message));
    next.messages
        .push(Message::User(UserMessage::text("And tomorrow?")));
    let model = Model::new("openai-completions", "mock", "m", openai.base_url());
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        ..StreamOptions::default()
    };
    assert_eq!(ai::complete(&model, &next, &options).await.text(), "ok");
    let sent = &openai.requests()[0].body["messages"];
    assert_eq!(
        sent[1],
        json!({"role": "assistant", "content": r#"{"city": "Paris", "celsius": 21}"#})
    );
}

#[cfg(feature = "schemars")]
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Weather {
    city: String,
    celsius: f64,
}

#[cfg(feature = "schemars")]
#[tokio::test]
async fn complete_structured_returns_the_rust_type() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::text(r#"{"city": "Oslo", "celsius": -3}"#));
    let (model, mut options) = completions(&server);
    options.output_schema = None;
    let answer = ai::complete_structured::<Weather>(&model, &context(false), &options)
        .await
        .unwrap();
    assert_eq!(
        answer.value,
        Weather {
            city: "Oslo".into(),
            celsius: -3.0
        }
    );
    let format = &server.requests()[0].body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "Weather");
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["city", "celsius"])
    );
    // A wrong answer is the failed message, with its report.
    server.push(reply::text(r#"{"city": "Oslo"}"#));
    let error = ai::complete_structured::<Weather>(&model, &context(false), &options)
        .await
        .unwrap_err();
    let ai::StructuredError::Failed { message } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(message.error_kind, Some(ErrorKind::InvalidOutput));
    assert!(
        error
            .to_string()
            .contains("must have required properties celsius"),
        "{error}"
    );
}

#[tokio::test]
async fn thinking_claude_gets_the_output_tool_unforced_and_may_answer_in_text() {
    let server = MockServer::start().await.unwrap();
    server.push(anthropic_sse(&[
        json!({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "{\"city\": \"Ni"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ce\", \"celsius\": 25}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]));
    let (mut model, mut options) = older_claude(&server);
    model.reasoning = true;
    options.thinking_enabled = Some(true);
    let (events, message) = drain(ai::stream(&model, &context(false), &options)).await;
    let body = &server.requests()[0].body;
    assert_eq!(body["tools"][0]["name"], "weather");
    assert_eq!(body["tool_choice"], json!({"type": "auto"}), "{body}");
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let last_object = events.iter().rev().find_map(|event| match event {
        AssistantMessageEvent::ObjectDelta { object, .. } => Some(object.clone()),
        _ => None,
    });
    assert_eq!(last_object, Some(json!({"city": "Nice", "celsius": 25})));
}

#[tokio::test]
async fn a_large_answer_gets_geometrically_spaced_snapshots_and_a_last_one() {
    let server = MockServer::start().await.unwrap();
    let items: Vec<Value> = (0..4000).map(|i| json!({"n": i})).collect();
    let text = json!({"items": items}).to_string();
    let mut answer = reply::text(text.clone());
    answer["delta_size"] = json!(8);
    server.push(answer);
    let (model, mut options) = completions(&server);
    options.output_schema = Some(OutputSchema::new("list", json!({"type": "object"})));
    let (events, message) = drain(ai::stream(&model, &context(false), &options)).await;
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    let deltas = events.iter().filter(|e| e.kind() == "text_delta").count();
    let objects: Vec<&Value> = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ObjectDelta { object, .. } => Some(object),
            _ => None,
        })
        .collect();
    // Every delta below 4 KiB, then one per eighth of growth: far fewer than the deltas.
    assert!(deltas > 5000, "{deltas}");
    assert!(
        objects.len() > 4096 / 8 && objects.len() < 4096 / 8 + 100,
        "{}",
        objects.len()
    );
    // The last snapshot is the whole answer, just before text_end.
    assert_eq!(objects.last().unwrap().to_string(), text);
    let end = events.iter().position(|e| e.kind() == "text_end").unwrap();
    assert_eq!(events[end - 1].kind(), "object_delta");
}

#[tokio::test]
async fn an_answer_that_calls_tools_is_not_a_structured_answer() {
    // Text that validates, next to a tool call: one call runs no tools, so there is no answer.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"text": r#"{"city": 5}"#,
                       "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {}}]}));
    let (model, options) = completions(&server);
    let error = ai::complete_structured_value(&model, &context(true), &options, weather())
        .await
        .unwrap_err();
    let ai::StructuredError::ToolCalls { message } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(message.tool_calls().count(), 1);
    assert!(
        error.to_string().contains("called tools (lookup)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_cut_answer_through_the_forced_tool_keeps_it_as_text() {
    // Older Claude: the schema goes as a forced tool. A stream cut mid-answer ends in `error`,
    // and its message holds what arrived as text, never a call of the output tool.
    let server = MockServer::start().await.unwrap();
    server.push(anthropic_sse(&[
        json!({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "t1", "name": "weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Par"}}),
    ]));
    let (model, options) = older_claude(&server);
    let (events, message) = drain(ai::stream(&model, &context(false), &options)).await;
    assert_eq!(events.last().unwrap().kind(), "error");
    assert_eq!(message.stop_reason, StopReason::Error, "{message:?}");
    assert_eq!(message.tool_calls().count(), 0, "{message:?}");
    assert_eq!(message.text(), "{\"city\": \"Par");
}

#[tokio::test]
async fn of_two_calls_of_the_forced_tool_the_last_is_the_answer() {
    // Parallel calls of the output tool in one message: the last one is the answer, not the
    // two objects run together (which is never JSON).
    let server = MockServer::start().await.unwrap();
    let call = |index: u64, id: &str, json: &str| {
        [
            json!({"type": "content_block_start", "index": index,
                   "content_block": {"type": "tool_use", "id": id, "name": "weather", "input": {}}}),
            json!({"type": "content_block_delta", "index": index,
                   "delta": {"type": "input_json_delta", "partial_json": json}}),
            json!({"type": "content_block_stop", "index": index}),
        ]
    };
    let mut events = vec![json!({"type": "message_start",
        "message": {"id": "m1", "usage": {"input_tokens": 1, "output_tokens": 0}}})];
    events.extend(call(0, "t1", r#"{"city": "Oslo", "celsius": -3}"#));
    events.extend(call(1, "t2", r#"{"city": "Rome", "celsius": 30}"#));
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                       "usage": {"output_tokens": 9}}),
    );
    events.push(json!({"type": "message_stop"}));
    server.push(anthropic_sse(&events));
    let (model, options) = older_claude(&server);
    let (_, message) = drain(ai::stream(&model, &context(false), &options)).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.tool_calls().count(), 0);
    assert_eq!(
        ai::parse_output(&message.text()).unwrap(),
        json!({"city": "Rome", "celsius": 30})
    );
}

/// A list of cities: a schema whose root is not an object's, with its item in `$defs`.
fn cities() -> OutputSchema {
    OutputSchema::new(
        "cities",
        json!({"type": "array", "items": {"$ref": "#/$defs/City"},
               "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string"}},
                                  "required": ["name"], "additionalProperties": false}}}),
    )
    .with_strict(true)
}

/// What every api is sent for [`cities`]: an object whose one property holds the list, the
/// document's `$defs` at the root so that the reference resolves.
fn cities_wrapped() -> Value {
    json!({"type": "object",
           "properties": {"response": {"type": "array", "items": {"$ref": "#/$defs/City"}}},
           "required": ["response"], "additionalProperties": false,
           "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string"}},
                              "required": ["name"], "additionalProperties": false}}})
}

#[tokio::test]
async fn a_schema_that_is_not_an_objects_is_sent_wrapped_to_every_api() {
    assert_eq!(ai::WRAPPED_ANSWER_KEY, "response");
    let with = |o: &mut StreamOptions| o.output_schema = Some(cities());
    let wrapped = cities_wrapped();
    for (api, body) in bodies(&context(false), with).await {
        let sent = match api.as_str() {
            "openai-completions" | "mistral-conversations" => {
                field(&body, &api, "/response_format/json_schema/schema")
            }
            "openai-responses" | "azure-openai-responses" | "openai-codex-responses" => {
                field(&body, &api, "/text/format/schema")
            }
            "anthropic-messages" => field(&body, &api, "/output_config/format/schema"),
            "google-generative-ai" | "google-vertex" => {
                field(&body, &api, "/generationConfig/responseJsonSchema")
            }
            "bedrock-converse-stream" => {
                field(&body, &api, "/toolConfig/tools/0/toolSpec/inputSchema/json")
            }
            other => panic!("unexpected api {other}"),
        };
        assert_eq!(sent, &wrapped, "{api}");
    }
}

#[tokio::test]
async fn a_wrapped_answer_streams_and_ends_as_the_value_itself() {
    let server = MockServer::start().await.unwrap();
    let mut answer = reply::text(r#"{"response": [{"name": "Oslo"}, {"name": "Rome"}]}"#);
    answer["delta_size"] = json!(4);
    server.push(answer);
    let (model, mut options) = completions(&server);
    options.output_schema = Some(cities());
    let (events, message) = drain(ai::stream(&model, &context(false), &options)).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let value = r#"[{"name": "Oslo"}, {"name": "Rome"}]"#;
    // The deltas the caller sees are the value's text, and so are the block's end and the
    // final message.
    let deltas: String = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, value);
    let ended = events.iter().find_map(|event| match event {
        AssistantMessageEvent::TextEnd { content, .. } => Some(content.to_string()),
        _ => None,
    });
    assert_eq!(ended.as_deref(), Some(value));
    assert_eq!(message.text(), value);
    // The partial objects are the list's.
    let objects: Vec<&Value> = events
        .iter()
        .filter_map(|event| match event {
            AssistantMessageEvent::ObjectDelta { object, .. } => Some(object),
            _ => None,
        })
        .collect();
    assert!(objects.contains(&&json!([{"name": "Oslo"}])), "{objects:?}");
    assert_eq!(
        objects.last().unwrap(),
        &&json!([{"name": "Oslo"}, {"name": "Rome"}])
    );

    // A wrapped value that does not match is reported against the schema itself.
    server.push(reply::text(r#"{"response": [{"city": "Oslo"}]}"#));
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(message.error_kind, Some(ErrorKind::InvalidOutput));
    let report = message.error_message.clone().unwrap();
    assert!(
        report.contains("0.name: must have required properties name"),
        "{report}"
    );
    assert_eq!(message.text(), r#"[{"city": "Oslo"}]"#);

    // A server that ignores the wrapper and answers with the list itself is read as well.
    server.push(reply::text(r#"[{"name": "Bern"}]"#));
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), r#"[{"name": "Bern"}]"#);
}

#[tokio::test]
async fn a_wrapped_answer_through_the_forced_tool_is_the_value_too() {
    let server = MockServer::start().await.unwrap();
    server.push(anthropic_sse(&[
        json!({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "t1", "name": "cities", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": "{\"respo"}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": "nse\": [\"Oslo\", \"Ro"}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "input_json_delta", "partial_json": "me\"]}"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
               "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ]));
    let (model, mut options) = older_claude(&server);
    options.output_schema = Some(OutputSchema::new(
        "cities",
        json!({"type": "array", "items": {"type": "string"}}),
    ));
    let (events, message) = drain(ai::stream(&model, &context(false), &options)).await;
    let body = &server.requests()[0].body;
    assert_eq!(
        body["tools"][0]["input_schema"]["properties"]["response"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    let kinds: Vec<&str> = events.iter().map(AssistantMessageEvent::kind).collect();
    assert_eq!(
        kinds,
        [
            "start",
            "text_start",
            "text_delta",
            "object_delta",
            "text_delta",
            "object_delta",
            "text_end",
            "done"
        ]
    );
    assert_eq!(
        events[2],
        AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "[\"Oslo\", \"Ro".into()
        }
    );
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.tool_calls().count(), 0);
    assert_eq!(message.text(), r#"["Oslo", "Rome"]"#);
}

#[tokio::test]
async fn anthropic_is_sent_the_subset_it_takes_and_the_answer_is_held_to_the_whole_schema() {
    let server = MockServer::start().await.unwrap();
    let answer = |text: &str| {
        anthropic_sse(&[
            json!({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1, "output_tokens": 0}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
            json!({"type": "message_stop"}),
        ])
    };
    server.push(answer(r#"{"age": -1}"#));
    server.push(answer(r#"{"age": 30}"#));
    let model = Model::new(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4-5",
        format!("http://{}", server.addr()),
    );
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-ant-api03-test")),
        max_retries: Some(0),
        output_schema: Some(OutputSchema::new(
            "person",
            json!({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}},
                   "required": ["age"]}),
        )),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(
        server.requests()[0].body["output_config"]["format"]["schema"],
        json!({"type": "object",
               "properties": {"age": {"type": "integer", "description": "Also: {\"minimum\":0}"}},
               "required": ["age"], "additionalProperties": false})
    );
    assert_eq!(
        message.error_kind,
        Some(ErrorKind::InvalidOutput),
        "{message:?}"
    );
    let report = message.error_message.clone().unwrap_or_default();
    assert!(report.contains("age: must be >= 0"), "{report}");
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
}

#[tokio::test]
async fn bedrock_models_that_cannot_be_forced_are_asked_by_the_tools_description() {
    let server = MockServer::start().await.unwrap();
    let mut sent = Vec::new();
    // An application inference profile's ARN names no model: its name says what it is.
    let profile = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3";
    for (id, name) in [
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", ""),
        ("amazon.nova-lite-v1:0", "Nova Lite"),
        (profile, "Claude Haiku 4.5 (team profile)"),
        ("mistral.mistral-large-2407-v1:0", ""),
        ("meta.llama3-1-70b-instruct-v1:0", "Llama 3.1 70B Instruct"),
        ("cohere.command-r-plus-v1:0", ""),
        (profile, "Innovation Llama 3.1"),
    ] {
        server.reset();
        server.push(reply::http_error(400, json!({"message": "mapped"})));
        let mut model = ai::get_model("amazon-bedrock", "amazon.nova-lite-v1:0").unwrap();
        model.id = id.into();
        model.name = name.into();
        model.base_url = format!("http://{}", server.addr());
        let options = StreamOptions {
            api_key: Some(ApiKey::new("ABSK-test-key")),
            max_retries: Some(0),
            output_schema: Some(weather()),
            ..StreamOptions::default()
        };
        ai::complete(&model, &context(false), &options).await;
        let body = server.requests()[0].body.clone();
        assert_eq!(
            body["toolConfig"]["tools"][0]["toolSpec"]["name"],
            "weather"
        );
        sent.push(body["toolConfig"]["toolChoice"].clone());
    }
    assert_eq!(
        sent,
        [
            json!({"tool": {"name": "weather"}}),
            json!({"tool": {"name": "weather"}}),
            json!({"tool": {"name": "weather"}}),
            json!({"any": {}}),
            json!({"auto": {}}),
            json!({"auto": {}}),
            json!({"auto": {}}),
        ]
    );
}

#[tokio::test]
async fn a_wrapped_answer_cut_inside_its_value_or_fenced_is_read_as_it_is() {
    let server = MockServer::start().await.unwrap();
    let (model, mut options) = completions(&server);
    options.output_schema = Some(OutputSchema::new("n", json!({"type": "integer"})));
    // `12` of a `1234` cut off: valid JSON, but not the answer.
    server.push(reply::text(r#"{"response": 12"#));
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(
        message.error_kind,
        Some(ErrorKind::InvalidOutput),
        "{message:?}"
    );
    let report = message.error_message.clone().unwrap_or_default();
    assert!(
        report.starts_with("Validation failed for output \"n\": the answer ended inside its value"),
        "{report}"
    );
    // A model not held to the schema may fence the wrapper.
    server.push(reply::text("```json\n{\"response\": 1234}\n```"));
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "1234");
}

/// Anthropic's events for one call of `name` whose arguments stream as `parts`.
fn anthropic_call(name: &str, parts: &[&str]) -> Value {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 1, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tool_use", "id": "t1", "name": name, "input": {}}}),
    ];
    for part in parts {
        events.push(json!({"type": "content_block_delta", "index": 0,
                           "delta": {"type": "input_json_delta", "partial_json": part}}));
    }
    events.extend([
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
               "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ]);
    anthropic_sse(&events)
}

#[tokio::test]
async fn a_forced_call_with_only_empty_argument_deltas_answers_its_arguments() {
    let server = MockServer::start().await.unwrap();
    server.push(anthropic_call("note", &[""]));
    let (model, mut options) = older_claude(&server);
    options.output_schema = Some(OutputSchema::new(
        "note",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    ));
    let message = ai::complete(&model, &context(false), &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "{}");
}

#[tokio::test]
async fn claude_is_asked_for_a_schema_with_a_map_through_the_tool() {
    let server = MockServer::start().await.unwrap();
    server.push(anthropic_call(
        "counts",
        &[r#"{"by_city": {"Oslo": 2, "Rome": 3}}"#],
    ));
    let model = Model::new(
        "anthropic-messages",
        "anthropic",
        "claude-sonnet-4-5",
        format!("http://{}", server.addr()),
    );
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-ant-api03-test")),
        max_retries: Some(0),
        output_schema: Some(OutputSchema::new(
            "counts",
            json!({"type": "object", "properties": {"by_city": {"type": "object",
                   "additionalProperties": {"type": "integer"}}}, "required": ["by_city"]}),
        )),
        ..StreamOptions::default()
    };
    let message = ai::complete(&model, &context(false), &options).await;
    let body = &server.requests()[0].body;
    assert!(body.get("output_config").is_none(), "{body}");
    assert_eq!(body["tools"][0]["name"], "counts");
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(
        ai::parse_output(&message.text()).unwrap(),
        json!({"by_city": {"Oslo": 2, "Rome": 3}})
    );
}
