//! Cloudflare's URL templates and auth headers on each of its APIs, GitHub Copilot's dynamic
//! headers on each of its APIs, and the `"<authenticated>"` marker of ambient credentials
//! (issue 11). One test in its own binary, because it sets environment variables.

use futures::StreamExt;
use pi_agent::ai::{
    self, ApiKey, AssistantMessage, Context, ImageContent, Message, Model, StopReason,
    StreamOptions, TextContent, ToolResultMessage, UserContent, UserMessage,
};
use pi_mock_server::{MockServer, RecordedRequest};
use serde_json::{Value, json};

mod reliability_support;
use reliability_support::Api;

const CF_KEY: &str = "cf-api-key-0123456789";

/// A short answer in `api`'s format.
fn answer(api: &str) -> Value {
    let api = match api {
        "openai-completions" => Api::Completions,
        "openai-responses" => Api::Responses,
        "anthropic-messages" => Api::Anthropic,
        other => panic!("{other}"),
    };
    json!({"sse": api.answer()})
}

fn context(messages: Vec<Message>) -> Context {
    Context {
        system_prompt: None,
        messages,
        tools: None,
    }
}

fn hi() -> Context {
    context(vec![Message::User(UserMessage::text("hi"))])
}

async fn send(model: &Model, context: &Context, options: &StreamOptions) -> AssistantMessage {
    let mut stream = ai::stream(model, context, options);
    while stream.next().await.is_some() {}
    stream.final_message().expect("a terminal event")
}

/// The first catalog model of `provider` on `api`, pointed at `base_url`.
fn catalog(provider: &str, api: &str, base_url: &str) -> Model {
    let mut model = ai::get_models(provider)
        .into_iter()
        .find(|m| m.api == api)
        .unwrap_or_else(|| panic!("no {provider} model on {api}"));
    model.base_url = base_url.to_owned();
    model
}

fn last(server: &MockServer) -> RecordedRequest {
    server.requests().pop().expect("a request")
}

#[tokio::test]
async fn gateways_and_ambient_credentials() {
    // SAFETY: this binary has one test and it runs on a current-thread runtime, so nothing
    // reads the environment while it changes.
    unsafe {
        std::env::set_var("CLOUDFLARE_ACCOUNT_ID", "acct-123");
        std::env::set_var("CLOUDFLARE_GATEWAY_ID", "gw-456");
        std::env::set_var("CLOUDFLARE_API_KEY", CF_KEY);
        std::env::remove_var("PI_ENV_KEY_HOSTS");
    }
    cloudflare_gateway_routes().await;
    cloudflare_workers_ai().await;
    copilot_headers_on_every_api().await;

    unsafe {
        std::env::remove_var("CLOUDFLARE_GATEWAY_ID");
    }
    missing_placeholders_are_named().await;

    ambient_markers().await;
}

/// `/compat`, `/openai` and `/anthropic` on the gateway: the placeholders filled from the
/// environment, the key in `cf-aig-authorization` only, a caller's upstream `Authorization`
/// kept.
async fn cloudflare_gateway_routes() {
    for (api, route, path) in [
        ("openai-completions", "compat", "chat/completions"),
        ("openai-responses", "openai", "responses"),
        ("anthropic-messages", "anthropic", "v1/messages"),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(answer(api));
        server.push(answer(api));
        let template = format!(
            "{}/{{CLOUDFLARE_ACCOUNT_ID}}/{{CLOUDFLARE_GATEWAY_ID}}/{route}",
            server.base_url()
        );
        let model = catalog("cloudflare-ai-gateway", api, &template);
        let message = send(&model, &hi(), &StreamOptions::default()).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{api}: {message:?}");
        let request = last(&server);
        assert_eq!(
            request.path,
            format!("/v1/acct-123/gw-456/{route}/{path}"),
            "{api}"
        );
        assert_eq!(
            request.header("cf-aig-authorization"),
            Some(format!("Bearer {CF_KEY}").as_str()),
            "{api}"
        );
        assert_eq!(request.header("authorization"), None, "{api}");
        assert_eq!(request.header("x-api-key"), None, "{api}");

        let byok = StreamOptions {
            headers: [("Authorization".to_owned(), "Bearer upstream-key".to_owned())].into(),
            ..StreamOptions::default()
        };
        let message = send(&model, &hi(), &byok).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{api}: {message:?}");
        let request = last(&server);
        assert_eq!(
            request.header("authorization"),
            Some("Bearer upstream-key"),
            "{api}"
        );
        assert_eq!(
            request.header("cf-aig-authorization"),
            Some(format!("Bearer {CF_KEY}").as_str()),
            "{api}"
        );
    }
}

/// Workers AI: the account placeholder filled, plain Bearer auth.
async fn cloudflare_workers_ai() {
    let server = MockServer::start().await.unwrap();
    server.push(answer("openai-completions"));
    let template = format!(
        "{}/client/v4/accounts/{{CLOUDFLARE_ACCOUNT_ID}}/ai/v1",
        server.base_url()
    );
    let model = catalog("cloudflare-workers-ai", "openai-completions", &template);
    let message = send(&model, &hi(), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let request = last(&server);
    assert_eq!(
        request.path,
        "/v1/client/v4/accounts/acct-123/ai/v1/chat/completions"
    );
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {CF_KEY}").as_str())
    );
    assert_eq!(request.header("cf-aig-authorization"), None);
}

/// A template variable that is not set fails the request before anything is sent, in pi's
/// words, on every API the gateway has.
async fn missing_placeholders_are_named() {
    for (api, route) in [
        ("openai-completions", "compat"),
        ("openai-responses", "openai"),
        ("anthropic-messages", "anthropic"),
    ] {
        let server = MockServer::start().await.unwrap();
        let template = format!(
            "{}/{{CLOUDFLARE_ACCOUNT_ID}}/{{CLOUDFLARE_GATEWAY_ID}}/{route}",
            server.base_url()
        );
        let model = catalog("cloudflare-ai-gateway", api, &template);
        let message = send(&model, &hi(), &StreamOptions::default()).await;
        assert_eq!(
            message.error_message.as_deref(),
            Some(
                "CLOUDFLARE_GATEWAY_ID is required for provider cloudflare-ai-gateway but is not set."
            ),
            "{api}"
        );
        assert!(server.requests().is_empty(), "{api}");
    }
}

/// `X-Initiator`, `Openai-Intent` and `Copilot-Vision-Request` on completions, responses and
/// anthropic, after the catalog's Copilot headers.
async fn copilot_headers_on_every_api() {
    let image_result = Message::ToolResult(ToolResultMessage {
        tool_call_id: "call_1".into(),
        tool_name: "screenshot".into(),
        content: vec![
            UserContent::Text(TextContent {
                text: "here".into(),
                text_signature: None,
            }),
            UserContent::Image(ImageContent {
                data: "iVBORw0KGgo=".into(),
                mime_type: "image/png".into(),
            }),
        ],
        ..ToolResultMessage::default()
    });
    for api in [
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(answer(api));
        server.push(answer(api));
        let model = catalog("github-copilot", api, &server.base_url());
        let options = StreamOptions {
            api_key: Some(ApiKey::new("ghu_copilot_token_0123")),
            ..StreamOptions::default()
        };
        let message = send(&model, &hi(), &options).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{api}: {message:?}");
        let request = last(&server);
        assert_eq!(request.header("x-initiator"), Some("user"), "{api}");
        assert_eq!(
            request.header("openai-intent"),
            Some("conversation-edits"),
            "{api}"
        );
        assert_eq!(request.header("copilot-vision-request"), None, "{api}");
        assert_eq!(
            request.header("editor-version"),
            Some("vscode/1.107.0"),
            "{api}"
        );
        assert_eq!(
            request.header("authorization"),
            Some("Bearer ghu_copilot_token_0123"),
            "{api}"
        );

        let follow_up = context(vec![
            Message::User(UserMessage::text("look")),
            image_result.clone(),
        ]);
        let message = send(&model, &follow_up, &options).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{api}: {message:?}");
        let request = last(&server);
        assert_eq!(request.header("x-initiator"), Some("agent"), "{api}");
        assert_eq!(
            request.header("copilot-vision-request"),
            Some("true"),
            "{api}"
        );
    }
}

/// pi's `getEnvApiKey` reports ambient credentials as `"<authenticated>"`; the marker is never
/// sent as a key, whatever api the model uses.
async fn ambient_markers() {
    unsafe {
        std::env::set_var("AWS_ACCESS_KEY_ID", "AKIAPITEST0000000000");
        std::env::set_var("AWS_SECRET_ACCESS_KEY", "pi-test-aws-secret-0123456789");
        for name in ["GOOGLE_CLOUD_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"] {
            std::env::remove_var(name);
        }
    }
    assert_eq!(
        ai::get_env_api_key("amazon-bedrock").map(|k| k.expose().to_owned()),
        Some("<authenticated>".to_owned())
    );
    assert!(ai::find_env_keys("amazon-bedrock").is_empty());

    let file = std::env::temp_dir().join(format!("pi-adc-{}.json", std::process::id()));
    std::fs::write(&file, r#"{"type": "authorized_user"}"#).unwrap();
    unsafe {
        std::env::set_var("GOOGLE_APPLICATION_CREDENTIALS", &file);
        std::env::set_var("GOOGLE_CLOUD_PROJECT", "pi-project");
        std::env::remove_var("GOOGLE_CLOUD_LOCATION");
    }
    assert_eq!(
        ai::get_env_api_key("google-vertex"),
        None,
        "no location yet"
    );
    unsafe {
        std::env::set_var("GOOGLE_CLOUD_LOCATION", "us-central1");
    }
    assert_eq!(
        ai::get_env_api_key("google-vertex").map(|k| k.expose().to_owned()),
        Some("<authenticated>".to_owned())
    );
    unsafe {
        std::env::set_var("GOOGLE_CLOUD_API_KEY", "vertex-env-key-0123");
    }
    assert_eq!(
        ai::get_env_api_key("google-vertex").map(|k| k.expose().to_owned()),
        Some("vertex-env-key-0123".to_owned()),
        "a key variable wins"
    );
    let _ = std::fs::remove_file(&file);

    // A model of the Bedrock provider on another api, and a caller passing the marker on:
    // neither sends it.
    let server = MockServer::start().await.unwrap();
    server.push(answer("openai-completions"));
    server.push(answer("openai-completions"));
    let mut model = catalog("openai", "openai-responses", &server.base_url());
    model.api = "openai-completions".into();
    model.provider = "amazon-bedrock".into();
    let message = send(&model, &hi(), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(last(&server).header("authorization"), None);
    let marker = StreamOptions {
        api_key: Some(ApiKey::new("<authenticated>")),
        ..StreamOptions::default()
    };
    model.provider = "mock".into();
    let message = send(&model, &hi(), &marker).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(last(&server).header("authorization"), None);
}
