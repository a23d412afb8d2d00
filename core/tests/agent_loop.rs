//! The low-level loop as streams (with an injected `stream_fn`), save/restore, and the proxy
//! stream function against the mock server.

use std::sync::Arc;

use futures::StreamExt;
use pi_agent::agent::{
    Agent, AgentContext, AgentEvent, AgentLoopConfig, AgentMessage, AgentOptions, AgentSnapshot,
    ProxyOptions, QueueMode, agent_loop, agent_loop_continue, proxy_stream_fn,
};
use pi_agent::ai::channel;
use pi_agent::ai::providers::faux::{FauxProvider, faux_assistant_message, faux_text};
use pi_agent::ai::{ApiKey, Model, OutputSchema, StopReason, StreamOptions, UserMessage};
use pi_mock_server::MockServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// pi's `MockAssistantStream`: a stream function that pushes only `done`.
fn done_only_config() -> AgentLoopConfig {
    let model = Model::new("mock", "mock", "mock-1", "");
    let mut config = AgentLoopConfig::new(model);
    config.hooks.stream_fn = Some(Arc::new(|model, _context, _options| {
        let (writer, stream) = channel(model, None);
        tokio::spawn(async move {
            let mut writer = writer;
            let index = writer.text_start().await;
            writer.text_delta(index, "hi").await;
            writer.text_end(index).await;
            writer.done().await;
        });
        stream
    }));
    config
}

#[tokio::test]
async fn agent_loop_stream_with_an_injected_stream_fn() {
    let stream = agent_loop(
        vec![UserMessage::text("hello").into()],
        AgentContext::default(),
        done_only_config(),
        CancellationToken::new(),
    );
    let kinds: Vec<String> = stream
        .map(|event| match &event {
            AgentEvent::MessageStart { message } | AgentEvent::MessageEnd { message } => {
                format!("{}({})", event.kind(), message.role())
            }
            _ => event.kind().to_owned(),
        })
        .collect()
        .await;
    // Without a `start` event the assistant's message_start comes with the final message and
    // the deltas before it are not reported (pi's rule).
    assert_eq!(
        kinds,
        [
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)",
            "message_end(assistant)",
            "turn_end",
            "agent_end"
        ]
    );
}

#[tokio::test]
async fn agent_loop_continue_checks_like_pi_and_returns_only_new_messages() {
    let empty = agent_loop_continue(
        AgentContext::default(),
        done_only_config(),
        CancellationToken::new(),
    );
    assert_eq!(
        empty.unwrap_err().to_string(),
        "Cannot continue: no messages in context"
    );
    let context = AgentContext {
        messages: vec![UserMessage::text("from here").into()],
        ..AgentContext::default()
    };
    let stream =
        agent_loop_continue(context, done_only_config(), CancellationToken::new()).unwrap();
    let new_messages = stream.result().await;
    assert_eq!(new_messages.len(), 1);
    assert_eq!(new_messages[0].role(), "assistant");
}

#[tokio::test]
async fn a_panicking_stream_fn_still_ends_the_stream() {
    let mut config = done_only_config();
    config.hooks.stream_fn = Some(Arc::new(|_, _, _| panic!("stream_fn bug")));
    let stream = agent_loop(
        vec![UserMessage::text("x").into()],
        AgentContext::default(),
        config,
        CancellationToken::new(),
    );
    let events: Vec<AgentEvent> = stream.collect().await;
    let last = events.last().unwrap();
    let AgentEvent::AgentEnd { messages } = last else {
        panic!("ends with agent_end")
    };
    // The failure is the turn's assistant message: after the prompt, with its turn_end.
    let failure = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(failure.stop_reason, StopReason::Error);
    assert!(
        failure
            .error_message
            .as_deref()
            .unwrap()
            .contains("stream_fn bug")
    );
    assert!(events.iter().any(|e| e.kind() == "message_end"));
    assert!(events.iter().any(|e| e.kind() == "turn_end"));
}

#[tokio::test]
async fn a_panicking_stream_fn_leaves_the_agent_usable() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("recovered")]));
    let agent = Agent::new(AgentOptions {
        model: Some(faux.model()),
        hooks: pi_agent::agent::AgentHooks {
            stream_fn: Some(Arc::new(|_, _, _| panic!("boom"))),
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("x").await.unwrap();
    assert_eq!(agent.error_message().as_deref(), Some("boom"));
    assert!(!agent.is_streaming());
    agent.update_hooks(|hooks| hooks.stream_fn = None);
    agent.prompt("again").await.unwrap();
    assert_eq!(
        agent
            .messages()
            .last()
            .unwrap()
            .as_assistant()
            .unwrap()
            .text(),
        "recovered"
    );
}

#[tokio::test]
async fn snapshot_restores_in_a_new_agent() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("first answer")]));
    faux.push(faux_assistant_message(vec![faux_text("second answer")]));
    let agent = Agent::new(AgentOptions {
        system_prompt: "be nice".into(),
        model: Some(faux.model()),
        settings: pi_agent::agent::AgentSettings {
            follow_up_mode: QueueMode::All,
            ..Default::default()
        },
        ..AgentOptions::default()
    });
    agent.prompt("one").await.unwrap();
    agent.follow_up(UserMessage::text("queued"));
    let json = serde_json::to_string(&agent.snapshot()).unwrap();

    let snapshot: AgentSnapshot = serde_json::from_str(&json).unwrap();
    assert_eq!(snapshot.messages.len(), 2);
    let restored = Agent::restore(snapshot, AgentOptions::default());
    assert_eq!(restored.system_prompt(), "be nice");
    assert!(restored.has_queued_messages());
    restored.continue_run().await.unwrap();
    let texts: Vec<_> = restored
        .messages()
        .iter()
        .filter_map(|m| m.as_assistant().map(|a| a.text()))
        .collect();
    assert_eq!(texts, ["first answer", "second answer"]);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["messages"][0]["role"], "user");
    assert_eq!(value["version"], 2);
    assert_eq!(value["settings"]["followUpMode"], "all");
}

#[tokio::test]
async fn proxy_stream_fn_rebuilds_the_message() {
    let server = MockServer::start().await.unwrap();
    let events = [
        json!({"type": "start"}),
        json!({"type": "text_start", "contentIndex": 0}),
        json!({"type": "text_delta", "contentIndex": 0, "delta": "Hel"}),
        json!({"type": "text_delta", "contentIndex": 0, "delta": "lo"}),
        json!({"type": "text_end", "contentIndex": 0}),
        json!({"type": "toolcall_start", "contentIndex": 1, "id": "c1", "toolName": "calc"}),
        json!({"type": "toolcall_delta", "contentIndex": 1, "delta": "{\"x\":"}),
        json!({"type": "toolcall_delta", "contentIndex": 1, "delta": "1}"}),
        json!({"type": "toolcall_end", "contentIndex": 1}),
        json!({"type": "mystery"}),
        json!({"type": "done", "reason": "toolUse", "usage": {"input": 5, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}),
    ];
    server.push(json!({"chunks": events, "done": false}));
    let stream_fn = proxy_stream_fn(ProxyOptions {
        proxy_url: format!("http://{}", server.addr()),
        auth_token: Some(ApiKey::new("app-token")),
    });
    let model = Model::new(
        "openai-completions",
        "openai",
        "gpt",
        "https://unused.invalid",
    );
    let message = stream_fn(&model, &Default::default(), &Default::default())
        .result()
        .await;
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert_eq!(message.text(), "Hello");
    assert_eq!(
        message.tool_calls().next().unwrap().arguments,
        json!({"x": 1})
    );
    assert_eq!(message.usage.total_tokens, 12);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/api/stream");
    assert_eq!(request.header("authorization"), Some("Bearer app-token"));
    assert_eq!(request.body["model"]["id"], "gpt");
    // pi's body: no option beyond pi's when none is set.
    let keys: Vec<_> = request.body["options"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "temperature",
            "maxTokens",
            "reasoning",
            "sessionId",
            "headers"
        ]
    );
    // A typed answer's schema and the tool choice go to the proxy, in the options' own JSON
    // (what a proxy streaming with this library reads back).
    server.push(json!({"chunks": events, "done": false}));
    let typed = StreamOptions {
        output_schema: Some(OutputSchema::new(
            "answer",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        )),
        tool_choice: Some(serde_json::from_value(json!("none")).unwrap()),
        ..Default::default()
    };
    stream_fn(&model, &Default::default(), &typed)
        .result()
        .await;
    let sent = &server.requests()[1].body["options"];
    assert_eq!(
        sent["outputSchema"],
        json!({"name": "answer", "schema": {"type": "object", "properties": {"x": {"type": "integer"}}}, "strict": false})
    );
    assert_eq!(sent["toolChoice"], json!("none"));
    let read_back: StreamOptions = serde_json::from_value(sent.clone()).unwrap();
    assert_eq!(read_back.output_schema, typed.output_schema);

    // A proxy that hangs up early: an error, not a hang.
    server.push(json!({"chunks": [{"type": "start"}], "done": false}));
    let message = stream_fn(&model, &Default::default(), &Default::default())
        .result()
        .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    // A proxy error status.
    server.push(json!({"status": 403, "body": {"error": "forbidden"}}));
    let message = stream_fn(&model, &Default::default(), &Default::default())
        .result()
        .await;
    assert_eq!(
        message.error_message.as_deref(),
        Some("Proxy error: forbidden")
    );
}

/// Stream functions written in other languages hand over whole messages or pi-shaped events.
#[tokio::test]
async fn streams_from_a_message_and_from_events() {
    use pi_agent::agent::{stream_from_events, stream_message};
    use pi_agent::ai::{AssistantContent, AssistantMessage, ToolCall, Usage};

    let model = Model::new("mock", "mock", "mock-1", "");
    let message = AssistantMessage {
        content: vec![
            faux_text("hello"),
            AssistantContent::ToolCall(ToolCall {
                id: "c1".into(),
                name: "calc".into(),
                arguments: json!({"x": 1}),
                thought_signature: Some("sig".into()),
            }),
        ],
        stop_reason: StopReason::ToolUse,
        usage: Usage {
            input: 3,
            output: 4,
            ..Usage::default()
        },
        response_id: Some("r1".into()),
        ..faux_assistant_message(Vec::new())
    };
    let mut stream = stream_message(&model, None, message.clone());
    let mut kinds = Vec::new();
    while let Some(event) = stream.next().await {
        kinds.push(event.kind());
    }
    assert_eq!(
        kinds,
        [
            "start",
            "text_start",
            "text_delta",
            "text_end",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_end",
            "done"
        ]
    );
    let replayed = stream.final_message().unwrap();
    assert_eq!(replayed.content, message.content);
    assert_eq!(replayed.usage.output, 4);
    assert_eq!(replayed.response_id.as_deref(), Some("r1"));
    assert_eq!(replayed.stop_reason, StopReason::ToolUse);

    // A failed message ends with `error`.
    let failed = AssistantMessage {
        stop_reason: StopReason::Error,
        error_message: Some("boom".into()),
        ..faux_assistant_message(Vec::new())
    };
    let result = stream_message(&model, None, failed).result().await;
    assert_eq!(result.stop_reason, StopReason::Error);
    assert_eq!(result.error_message.as_deref(), Some("boom"));

    // Full events (as a stream yields them) and proxy events mix; `partial` is ignored.
    let events = vec![
        Ok(json!({"type": "start", "partial": {}})),
        Ok(json!({"type": "text_start", "contentIndex": 0})),
        Ok(json!({"type": "text_delta", "contentIndex": 0, "delta": "hi"})),
        Ok(json!({"type": "text_end", "contentIndex": 0, "content": "hi"})),
        Ok(
            json!({"type": "done", "reason": "stop", "message": {"usage": {"input": 1, "output": 2}}}),
        ),
    ];
    let result = stream_from_events(&model, None, futures::stream::iter(events).boxed())
        .result()
        .await;
    assert_eq!(result.stop_reason, StopReason::Stop);
    assert_eq!(result.usage.output, 2);
    assert_eq!(result.content, vec![faux_text("hi")]);

    // A source that fails, or ends early, ends the stream with an error.
    let events = vec![Ok(json!({"type": "start"})), Err("source failed".into())];
    let result = stream_from_events(&model, None, futures::stream::iter(events).boxed())
        .result()
        .await;
    assert_eq!(result.error_message.as_deref(), Some("source failed"));
    let result = stream_from_events(&model, None, futures::stream::empty().boxed())
        .result()
        .await;
    assert_eq!(result.stop_reason, StopReason::Error);
    let result = stream_from_events(
        &model,
        None,
        futures::stream::iter(vec![Ok(
            json!({"type": "error", "error": {"errorMessage": "nope"}}),
        )])
        .boxed(),
    )
    .result()
    .await;
    assert_eq!(result.error_message.as_deref(), Some("nope"));
}

/// Sends once when dropped: tells the test a tool's future went away.
struct OnDrop(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(sender) = self.0.take() {
            let _ = sender.send(());
        }
    }
}

#[tokio::test]
async fn dropping_a_batch_of_tool_calls_stops_its_tools() {
    use pi_agent::agent::{AgentTool, FnTool, ToolExecutionMode, execute_tool_calls};
    use pi_agent::ai::AssistantContent;
    use pi_agent::ai::providers::faux::faux_tool_call_with_id;
    use std::sync::Mutex;
    use std::time::Duration;

    // The tool never ends on its own; it watches its signal from a thread of its own, as a
    // tool running blocking code would.
    let (signalled_tx, signalled) = tokio::sync::oneshot::channel();
    let (dropped_tx, dropped) = tokio::sync::oneshot::channel();
    let senders = Arc::new(Mutex::new(Some((signalled_tx, dropped_tx))));
    let tool: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "forever",
        "Never ends",
        json!({"type": "object"}),
        move |context| {
            let (signalled_tx, dropped_tx) = senders.lock().unwrap().take().unwrap();
            std::thread::spawn(move || {
                futures::executor::block_on(context.signal.cancelled());
                let _ = signalled_tx.send(());
            });
            async move {
                let _dropped = OnDrop(Some(dropped_tx));
                std::future::pending().await
            }
        },
    ));
    let call = faux_tool_call_with_id("call-1", "forever", json!({}));
    let assistant = faux_assistant_message(vec![call.clone()]);
    let AssistantContent::ToolCall(call) = call else {
        panic!("not a tool call")
    };
    let config = done_only_config();
    let signal = CancellationToken::new();
    let mut sink = |_event| {};
    let tools = [tool];
    let batch = execute_tool_calls(
        &assistant,
        vec![call],
        ToolExecutionMode::Parallel,
        &tools,
        &config,
        &signal,
        &mut sink,
    );
    // The caller gives up on the batch; the run's own signal never fires.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), batch)
            .await
            .is_err()
    );
    let wait = Duration::from_secs(30);
    tokio::time::timeout(wait, dropped)
        .await
        .expect("the tool's future is dropped")
        .unwrap();
    tokio::time::timeout(wait, signalled)
        .await
        .expect("the tool's signal fires")
        .unwrap();
    assert!(!signal.is_cancelled());
}

#[tokio::test]
async fn a_panicking_queue_callback_ends_the_run_with_its_transcript() {
    let mut config = done_only_config();
    config.get_follow_up_messages = Some(Arc::new(|| panic!("the queue broke")));
    let mut stream = agent_loop(
        vec![UserMessage::text("hello").into()],
        AgentContext::default(),
        config,
        CancellationToken::new(),
    );
    let mut end = None;
    while let Some(event) = stream.next().await {
        if let AgentEvent::AgentEnd { messages } = event {
            end = Some(messages);
        }
    }
    let messages = end.expect("agent_end");
    let roles: Vec<&str> = messages.iter().map(|m| m.role()).collect();
    // The prompt and the answer stay, then the failure.
    assert_eq!(roles, ["user", "assistant", "assistant"], "{messages:?}");
    let failure = messages[2].as_assistant().unwrap();
    assert_eq!(failure.stop_reason, StopReason::Error);
    let text = failure.error_message.as_deref().unwrap_or_default();
    assert!(
        text.contains("get_follow_up_messages panicked: the queue broke"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_of_a_batch_aborted_before_they_start_never_run() {
    use pi_agent::agent::{
        AgentTool, AgentToolResult, FnTool, ToolExecutionMode, execute_tool_calls,
    };
    use pi_agent::ai::AssistantContent;
    use pi_agent::ai::providers::faux::faux_tool_call_with_id;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // A batch whose signal fired before its calls were started (an abort, or a session that
    // could not journal the calls): no tool's future may be polled, on any worker.
    let polled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&polled);
    let tool: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "count",
        "Counts its runs",
        json!({"type": "object"}),
        move |_context| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(AgentToolResult::text("ran"))
            }
        },
    ));
    let tools = [tool];
    let config = done_only_config();
    for round in 0..100 {
        let blocks: Vec<_> = (0..4)
            .map(|i| faux_tool_call_with_id(format!("call-{round}-{i}"), "count", json!({})))
            .collect();
        let assistant = faux_assistant_message(blocks.clone());
        let calls = blocks
            .into_iter()
            .map(|block| match block {
                AssistantContent::ToolCall(call) => call,
                other => panic!("{other:?}"),
            })
            .collect();
        let signal = CancellationToken::new();
        signal.cancel();
        let mut sink = |_event| {};
        let outcomes = execute_tool_calls(
            &assistant,
            calls,
            ToolExecutionMode::Parallel,
            &tools,
            &config,
            &signal,
            &mut sink,
        )
        .await;
        assert!(outcomes.iter().all(|outcome| outcome.message.is_error));
    }
    assert_eq!(polled.load(Ordering::SeqCst), 0);
}

/// A stream nobody reads holds the run only until it is aborted: the run's last events do not
/// wait for room, and updates read after the abort are not reported (a stream that keeps
/// writing meanwhile cannot grow the queue). The run's task ends, and the stream, read later,
/// ends with `agent_end`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_run_that_nobody_reads_ends() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let written = Arc::new(AtomicUsize::new(0));
    // Dropped with the stream function, that is when the run's task ends.
    let (task_alive, task_ended) = tokio::sync::oneshot::channel::<()>();
    let task_alive = std::sync::Mutex::new(Some(task_alive));
    let model = Model::new("mock", "mock", "mock-1", "");
    let mut config = AgentLoopConfig::new(model);
    let counter = Arc::clone(&written);
    config.hooks.stream_fn = Some(Arc::new(move |model, _context, options| {
        let _alive = &task_alive;
        let (mut writer, stream) = channel(model, options.signal.clone());
        let written = Arc::clone(&counter);
        tokio::spawn(async move {
            writer.start().await;
            let index = writer.text_start().await;
            while !writer.is_aborted() && !writer.is_closed() {
                writer.text_delta(index, "x").await;
                written.fetch_add(1, Ordering::SeqCst);
            }
            writer.done().await;
        });
        stream
    }));
    let signal = CancellationToken::new();
    let stream = agent_loop(
        vec![UserMessage::text("hello").into()],
        AgentContext::default(),
        config,
        signal.clone(),
    );
    // More deltas than the run's queue (1,024 events) holds: the run waits for room, and
    // reading what is buffered would fill it (the stream buffers 256 more).
    let mut waited = 0;
    while written.load(Ordering::SeqCst) < 1100 {
        assert!(waited < 60_000, "the stream function stopped writing");
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        waited += 1;
    }
    signal.cancel();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), task_ended).await;
    assert!(
        matches!(ended, Ok(Err(_))),
        "the aborted run's task still waits for room"
    );
    let kinds: Vec<&'static str> = stream.map(|event| event.kind()).collect().await;
    assert_eq!(kinds.last(), Some(&"agent_end"));
    let updates = kinds
        .iter()
        .filter(|kind| **kind == "message_update")
        .count();
    assert!((800..=1024).contains(&updates), "{updates} updates");
}

/// A run whose runtime shuts down under it (mid-stream, or before its task ever ran) still
/// ends its stream: an `aborted` message saying why, and `agent_end`.
#[test]
fn a_run_cut_off_by_its_runtime_ends_its_stream() {
    let (streaming_tx, streaming) = std::sync::mpsc::channel();
    let streaming_tx = std::sync::Mutex::new(streaming_tx);
    let model = Model::new("mock", "mock", "mock-1", "");
    let mut config = AgentLoopConfig::new(model);
    config.hooks.stream_fn = Some(Arc::new(move |model, _context, _options| {
        let (mut writer, stream) = channel(model, None);
        let streaming = streaming_tx.lock().unwrap().clone();
        tokio::spawn(async move {
            writer.start().await;
            let index = writer.text_start().await;
            writer.text_delta(index, "partial").await;
            let _ = streaming.send(());
            std::future::pending::<()>().await;
        });
        stream
    }));
    let kinds_and_error = |events: Vec<AgentEvent>| {
        let last = events.iter().rev().find_map(|event| match event {
            AgentEvent::MessageEnd { message } => message.as_assistant().cloned(),
            _ => None,
        });
        let kinds: Vec<&'static str> = events.iter().map(AgentEvent::kind).collect();
        let last = last.expect("an assistant message ends");
        let Some(AgentEvent::AgentEnd { messages }) = events.last() else {
            panic!("the stream ends with agent_end: {kinds:?}");
        };
        let roles: Vec<&str> = messages.iter().map(AgentMessage::role).collect();
        (
            kinds,
            last.error_message.clone().unwrap_or_default(),
            last.text(),
            roles.join(","),
        )
    };

    // Starts the run on `runtime`.
    let start = |runtime: &tokio::runtime::Runtime| {
        runtime.block_on(async {
            agent_loop(
                vec![UserMessage::text("hello").into()],
                AgentContext::default(),
                config.clone(),
                CancellationToken::new(),
            )
        })
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let stream = start(&runtime);
    streaming
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the model streams");
    // Read until the loop has taken the delta, then cut it off.
    let mut events = Vec::new();
    let mut reading = futures::executor::block_on_stream(stream);
    for event in reading.by_ref() {
        let delta = matches!(
            &event,
            AgentEvent::MessageUpdate {
                assistant_message_event: pi_agent::ai::AssistantMessageEvent::TextDelta { .. },
                ..
            }
        );
        events.push(event);
        if delta {
            break;
        }
    }
    drop(runtime);
    events.extend(reading);
    let (kinds, error, text, roles) = kinds_and_error(events);
    assert_eq!(roles, "user,assistant", "agent_end has the run's messages");
    assert_eq!(kinds.first(), Some(&"agent_start"));
    // The message being streamed ends, aborted, with what arrived of it.
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["message_update", "message_end", "agent_end"]
    );
    assert!(error.contains("runtime it ran on shut down"), "{error}");
    assert_eq!(text, "partial");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stream = start(&runtime);
    drop(runtime);
    let (kinds, error, _, roles) =
        kinds_and_error(futures::executor::block_on_stream(stream).collect());
    assert_eq!(roles, "assistant");
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
    assert_eq!(
        kinds.iter().filter(|kind| **kind == "agent_start").count(),
        1
    );
    assert_eq!(kinds.iter().filter(|kind| **kind == "agent_end").count(), 1);
    assert!(error.contains("runtime it ran on shut down"), "{error}");
}
