//! The faux provider (pi's `faux-provider.test.ts` cases).

use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use pi_agent::ai::providers::faux::{
    FauxError, FauxOptions, FauxProvider, FauxResponse, NO_MORE_RESPONSES, faux_assistant_message,
    faux_error_message, faux_text, faux_thinking, faux_tool_call, faux_tool_call_with_id,
};
use pi_agent::ai::{
    self, AssistantMessage, AssistantMessageEvent, Context, Message, StopReason, StreamOptions,
    UserMessage,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn context() -> Context {
    Context {
        system_prompt: Some("sys".into()),
        messages: vec![Message::User(UserMessage::text("hello there"))],
        tools: None,
    }
}

async fn run(
    faux: &FauxProvider,
    options: &StreamOptions,
) -> (Vec<&'static str>, AssistantMessage) {
    let mut stream = ai::stream(&faux.model(), &context(), options);
    let mut kinds = Vec::new();
    while let Some(event) = stream.next().await {
        kinds.push(event.kind());
    }
    (kinds, stream.final_message().unwrap())
}

fn dedup(kinds: &[&'static str]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for kind in kinds {
        if out.last() != Some(kind) {
            out.push(kind);
        }
    }
    out
}

#[tokio::test]
async fn exact_event_order_and_rewritten_identity() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![
        faux_thinking("pondering deeply"),
        faux_text("the answer"),
        faux_tool_call("lookup", json!({"q": "x", "n": [1, 2, 3]})),
    ]));
    let (kinds, message) = run(&faux, &StreamOptions::default()).await;
    assert_eq!(
        dedup(&kinds),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    assert_eq!(message.api, faux.api());
    assert_eq!(message.provider, "faux");
    assert_eq!(message.model, "faux-1");
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(
        message.tool_calls().next().unwrap().arguments,
        json!({"q": "x", "n": [1, 2, 3]})
    );
    assert!(message.usage.input > 0 && message.usage.output > 0);
    assert_eq!(faux.call_count(), 1);
}

#[tokio::test]
async fn empty_queue_and_scripted_failures() {
    let faux = FauxProvider::register();
    let (kinds, message) = run(&faux, &StreamOptions::default()).await;
    assert_eq!(kinds, ["error"]);
    assert_eq!(message.error_message.as_deref(), Some(NO_MORE_RESPONSES));

    faux.push(faux_error_message(vec![faux_text("partial")], "boom"));
    let (kinds, message) = run(&faux, &StreamOptions::default()).await;
    assert_eq!(
        dedup(&kinds),
        ["start", "text_start", "text_delta", "text_end", "error"]
    );
    assert_eq!(
        (message.stop_reason, message.error_message.as_deref()),
        (StopReason::Error, Some("boom"))
    );

    let mut aborted = faux_assistant_message(vec![faux_text("partial")]);
    aborted.stop_reason = StopReason::Aborted;
    faux.push(aborted);
    let (kinds, message) = run(&faux, &StreamOptions::default()).await;
    assert_eq!(kinds.last(), Some(&"error"));
    assert_eq!(message.stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn factories_see_the_request_and_panics_become_errors() {
    let faux = FauxProvider::register();
    faux.push(FauxResponse::Factory(Arc::new(
        |context, _, call, model| {
            faux_assistant_message(vec![faux_text(format!(
                "{} messages, call {call}, model {}",
                context.messages.len(),
                model.id
            ))])
        },
    )));
    faux.push(FauxResponse::Factory(Arc::new(|_, _, _, _| {
        panic!("factory bug")
    })));
    let (_, message) = run(&faux, &StreamOptions::default()).await;
    assert_eq!(message.text(), "1 messages, call 1, model faux-1");
    let (kinds, message) = run(&faux, &StreamOptions::default()).await;
    assert_eq!(kinds, ["error"]);
    assert!(message.error_message.unwrap().contains("factory bug"));
}

#[tokio::test]
async fn abort_before_the_first_chunk_and_mid_block() {
    let faux = FauxProvider::register_with(FauxOptions {
        tokens_per_second: Some(500.0),
        ..FauxOptions::default()
    });
    let token = CancellationToken::new();
    token.cancel();
    faux.push(faux_assistant_message(vec![faux_text("never")]));
    let (kinds, message) = run(
        &faux,
        &StreamOptions {
            signal: Some(token),
            ..StreamOptions::default()
        },
    )
    .await;
    assert_eq!(kinds, ["error"]);
    assert_eq!(message.stop_reason, StopReason::Aborted);

    for block in [
        faux_text("word ".repeat(200)),
        faux_thinking("hmm ".repeat(200)),
        faux_tool_call_with_id("c1", "t", json!({"text": "x".repeat(800)})),
    ] {
        faux.push(faux_assistant_message(vec![block]));
        let token = CancellationToken::new();
        let options = StreamOptions {
            signal: Some(token.clone()),
            ..StreamOptions::default()
        };
        let mut stream = ai::stream(&faux.model(), &context(), &options);
        let mut deltas = 0;
        let mut last = None;
        while let Some(event) = stream.next().await {
            if event.delta().is_some() {
                deltas += 1;
                if deltas == 3 {
                    token.cancel();
                }
            }
            last = Some(event);
        }
        let Some(AssistantMessageEvent::Error { reason, error }) = last else {
            panic!("aborted streams end with error")
        };
        assert_eq!(reason, StopReason::Aborted);
        assert_eq!(error.error_message.as_deref(), Some("Request was aborted"));
        assert_eq!(error.content.len(), 1, "partial content kept");
    }
}

#[tokio::test]
async fn unregister_removes_the_provider() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("hi")]));
    faux.unregister();
    let (_, message) = run(&faux, &StreamOptions::default()).await;
    assert!(
        message
            .error_message
            .unwrap()
            .starts_with("No API provider registered")
    );
}

/// A user-defined provider: anything implementing `ApiProvider` can be registered for an api.
struct EchoProvider;

impl pi_agent::ai::ApiProvider for EchoProvider {
    fn api(&self) -> &str {
        "echo-test"
    }

    fn stream(
        &self,
        model: &pi_agent::ai::Model,
        context: &Context,
        options: &StreamOptions,
    ) -> pi_agent::ai::AssistantMessageEventStream {
        let (mut writer, stream) = pi_agent::ai::channel(model, options.signal.clone());
        let echo = serde_json::to_string(&context.messages).unwrap_or_default();
        tokio::spawn(async move {
            writer.start().await;
            let index = writer.text_start().await;
            writer.text_delta(index, echo).await;
            writer.text_end(index).await;
            writer.done().await;
        });
        stream
    }
}

#[tokio::test]
async fn user_registered_providers_are_used() {
    ai::register_api_provider(Arc::new(EchoProvider));
    assert!(ai::get_api_providers().contains(&"echo-test".to_owned()));
    let model = pi_agent::ai::Model::new("echo-test", "me", "echo-1", "");
    let message = ai::complete(&model, &context(), &StreamOptions::default()).await;
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert!(message.text().contains("hello there"));
    assert!(ai::unregister_api_provider("echo-test"));
}

/// Records the options each request arrives with.
struct OptionsProbe(Arc<std::sync::Mutex<Vec<StreamOptions>>>);

impl pi_agent::ai::ApiProvider for OptionsProbe {
    fn api(&self) -> &str {
        "options-probe"
    }

    fn stream(
        &self,
        model: &pi_agent::ai::Model,
        _context: &Context,
        options: &StreamOptions,
    ) -> pi_agent::ai::AssistantMessageEventStream {
        self.0.lock().unwrap().push(options.clone());
        pi_agent::ai::AssistantMessageEventStream::failed(model, StopReason::Error, "probe")
    }
}

#[tokio::test]
async fn stream_simple_caps_tokens_and_clamps_reasoning() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    ai::register_api_provider(Arc::new(OptionsProbe(Arc::clone(&seen))));
    let mut model = pi_agent::ai::Model::new("options-probe", "me", "thinker", "");
    model.reasoning = true;
    model.max_tokens = 100_000;
    model.thinking_level_map = Some([("minimal".to_owned(), None)].into());
    let options = StreamOptions {
        reasoning: Some(ai::ThinkingLevel::Minimal),
        ..StreamOptions::default()
    };
    ai::complete_simple(&model, &context(), &options).await;
    model.reasoning = false;
    ai::complete_simple(&model, &context(), &options).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].max_tokens, Some(32_000));
    assert_eq!(
        seen[0].reasoning,
        Some(ai::ThinkingLevel::Low),
        "minimal is unsupported: clamped up"
    );
    assert_eq!(
        seen[1].reasoning, None,
        "a non-reasoning model gets no level"
    );
    ai::unregister_api_provider("options-probe");
}

/// pi's usage estimate and prompt-cache simulation, with the numbers pi 0.73.1 itself gives for
/// this conversation (recorded with `registerFauxProvider` on Node): UTF-16 lengths, the
/// session's previous prompt as the cache, none without a session.
#[tokio::test]
async fn usage_estimate_and_prompt_cache_match_pi() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text(
        "Hi there, ünïcödé 🌍!",
    )]));
    faux.push(faux_assistant_message(vec![faux_text("Second answer.")]));
    faux.push(faux_assistant_message(vec![faux_text("x")]));
    let model = faux.model();
    let mut context: Context = serde_json::from_value(json!({
        "systemPrompt": "Be brief.",
        "messages": [{"role": "user", "content": "Hello 🌍", "timestamp": 1}],
        "tools": [{"name": "calc", "description": "Calculates",
                   "parameters": {"type": "object", "properties": {"e": {"type": "string"}}}}]
    }))
    .unwrap();
    let session = StreamOptions {
        session_id: Some("s1".into()),
        ..StreamOptions::default()
    };
    let usage = |u: &pi_agent::ai::Usage| {
        (
            u.input,
            u.output,
            u.cache_read,
            u.cache_write,
            u.total_tokens,
        )
    };
    let first = ai::complete(&model, &context, &session).await;
    assert_eq!(usage(&first.usage), (38, 6, 0, 38, 82));
    context.messages.push(first.into());
    context.messages.push(
        serde_json::from_value(json!({"role": "user", "content": [
            {"type": "text", "text": "More"},
            {"type": "image", "data": "AAAABBBB", "mimeType": "image/png"}], "timestamp": 2}))
        .unwrap(),
    );
    let second = ai::complete(&model, &context, &session).await;
    assert_eq!(usage(&second.usage), (45, 4, 9, 46, 104));
    let third = ai::complete(&model, &context, &StreamOptions::default()).await;
    assert_eq!(usage(&third.usage), (54, 1, 0, 0, 55));
}

/// An async factory builds the response from the request; its `Err` is an error event.
#[tokio::test]
async fn async_factories_build_responses_and_report_failures() {
    let faux = FauxProvider::register();
    faux.push(FauxResponse::AsyncFactory(Arc::new(
        |context, _, call, _| {
            async move {
                tokio::task::yield_now().await;
                Ok(faux_assistant_message(vec![faux_text(format!(
                    "call {call} saw {} message(s)",
                    context.messages.len()
                ))]))
            }
            .boxed()
        },
    )));
    faux.push(FauxResponse::AsyncFactory(Arc::new(|_, _, _, _| {
        async { Err(FauxError::Factory("factory failed".to_owned())) }.boxed()
    })));
    let model = faux.model();
    let first = ai::complete(&model, &context(), &StreamOptions::default()).await;
    assert_eq!(first.text(), "call 1 saw 1 message(s)");
    let second = ai::complete(&model, &context(), &StreamOptions::default()).await;
    assert_eq!(second.stop_reason, StopReason::Error);
    assert_eq!(second.error_message.as_deref(), Some("factory failed"));
}

/// The options' JSON form has pi's `registerFauxProvider` names (the C ABI takes it as is); an
/// empty model list means the default model.
#[test]
fn options_from_pis_json() {
    let options: FauxOptions = serde_json::from_value(json!({
        "provider": "p", "models": ["a", "b"], "tokensPerSecond": 50.0,
        "tokenSize": {"min": 1, "max": 2}
    }))
    .unwrap();
    assert_eq!(options.model_ids, ["a", "b"]);
    assert_eq!(options.tokens_per_second, Some(50.0));
    assert_eq!(options.token_size, (1, 2));
    let error = serde_json::from_value::<FauxOptions>(json!({"tokensPerSecnd": 1})).unwrap_err();
    assert!(
        error.to_string().contains("unknown field `tokensPerSecnd`"),
        "{error}"
    );
    assert!(serde_json::from_value::<FauxOptions>(json!({"tokenSize": {"min": 1}})).is_err());

    let empty: FauxOptions = serde_json::from_value(json!({"models": []})).unwrap();
    let faux = FauxProvider::register_with(empty);
    assert_eq!(faux.model().id, "faux-1");
    faux.unregister();
}
