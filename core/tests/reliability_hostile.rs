//! Issue 17, "hostile input, round three": values that would move a URL, secrets a snapshot
//! would keep, lone surrogates, deep arguments and array-shaped settings, on every wire API.

mod reliability_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::join_all;
use pi_agent::agent::{Agent, AgentOptions, AgentSnapshot, AgentTool, AgentToolResult, FnTool};
use pi_agent::ai::providers::faux::{FauxProvider, faux_assistant_message, faux_text};
use pi_agent::ai::{ApiKey, MAX_ARGUMENT_DEPTH, Model, StopReason, StreamOptions};
use pi_mock_server::{MockServer, reply};
use reliability_support::{ALL, Api, KEY, no_retries, run};
use serde_json::json;

/// What a careless or hostile catalog could hold as a model id.
const HOSTILE_IDS: [&str; 4] = [
    "../../../admin/delete?all=1#",
    "models/../../admin",
    "a/b/../../../x",
    "id with spaces%2F..%2F?#@:",
];

#[tokio::test]
async fn a_model_id_never_leaves_the_base_path() {
    join_all(ALL.map(|api| async move {
        for id in HOSTILE_IDS {
            let server = MockServer::start().await.unwrap();
            server.push(json!({"sse": api.answer()}));
            let mut model = api.model(&server);
            model.id = id.to_owned();
            let options = StreamOptions {
                api_key: Some(ApiKey::new(KEY)),
                ..no_retries()
            };
            let (_, message) = run(&model, &options).await;
            let requests = server.requests();
            match requests.as_slice() {
                [] => {
                    // Refused before sending (an id that can only be a `..` segment).
                    assert_eq!(message.stop_reason, StopReason::Error, "{api:?} {id}");
                    let error = message.error_message.clone().unwrap_or_default();
                    assert!(
                        error.starts_with("Invalid model id"),
                        "{api:?} {id}: {error}"
                    );
                }
                [request] => {
                    assert_eq!(
                        message.stop_reason,
                        StopReason::Stop,
                        "{api:?} {id}: {message:?}"
                    );
                    let path = request.path.split('?').next().unwrap_or_default();
                    assert!(path.starts_with("/v1/"), "{api:?} {id}: {path}");
                    // Every segment the request went to is one the API names, or the id as one
                    // encoded segment: no `..`, no `admin` segment, no query or fragment of ours.
                    for segment in path.split('/').skip(1) {
                        assert!(
                            segment != ".." && segment != "." && segment != "admin",
                            "{api:?} {id}: {path}"
                        );
                    }
                    assert!(
                        !request.path.contains("all=1") && !request.path.contains('#'),
                        "{api:?} {id}: {}",
                        request.path
                    );
                    if matches!(api, Api::Google | Api::Vertex) {
                        assert!(
                            path.ends_with(":streamGenerateContent"),
                            "{api:?} {id}: {path}"
                        );
                    }
                }
                more => panic!("{api:?} {id}: {} requests", more.len()),
            }
        }
    }))
    .await;
}

#[tokio::test]
async fn the_hostile_google_id_is_one_encoded_segment() {
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": Api::Google.answer()}));
    let mut model = Api::Google.model(&server);
    model.id = HOSTILE_IDS[0].to_owned();
    let options = StreamOptions {
        api_key: Some(ApiKey::new(KEY)),
        ..no_retries()
    };
    let (_, message) = run(&model, &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    let request = &server.requests()[0];
    assert_eq!(
        request.path,
        "/v1/models/..%2F..%2F..%2Fadmin%2Fdelete%3Fall%3D1%23:streamGenerateContent?alt=sse"
    );
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
}

fn model_with_secret_headers(faux: &FauxProvider) -> Model {
    let mut model = faux.model();
    model.headers = Some(
        [
            ("X-Auth-Key", "model-header-secret-1"),
            ("authorization", "Bearer model-header-secret-2"),
            ("x-tenant", "model-header-secret-3"),
            ("User-Agent", "pi-test"),
        ]
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .into(),
    );
    model
}

#[tokio::test]
async fn a_snapshot_keeps_no_header_of_the_model_or_options_that_may_be_a_secret() {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_text("first")]));
    faux.push(faux_assistant_message(vec![faux_text("second")]));
    let agent = Agent::new(AgentOptions {
        model: Some(model_with_secret_headers(&faux)),
        ..AgentOptions::default()
    });
    agent.set_stream_options(StreamOptions {
        headers: [
            ("X-Custom-Auth", "option-header-secret-4"),
            ("anthropic-beta", "kept-beta"),
        ]
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .into(),
        ..StreamOptions::default()
    });
    agent.prompt("one").await.unwrap();
    let json = serde_json::to_string(&agent.snapshot()).unwrap();
    for secret in 1..=4 {
        assert!(!json.contains(&format!("header-secret-{secret}")), "{json}");
    }
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["model"]["headers"], json!({"User-Agent": "pi-test"}));
    assert_eq!(
        value["settings"]["streamOptions"]["headers"],
        json!({"anthropic-beta": "kept-beta"})
    );

    // Restoring takes the model's headers back from the model the caller supplies.
    let snapshot: AgentSnapshot = serde_json::from_str(&json).unwrap();
    let restored = Agent::restore(
        snapshot,
        AgentOptions {
            model: Some(model_with_secret_headers(&faux)),
            ..AgentOptions::default()
        },
    );
    let headers = restored.model().headers.unwrap_or_default();
    assert_eq!(
        headers.get("X-Auth-Key").map(String::as_str),
        Some("model-header-secret-1")
    );
    assert_eq!(headers.len(), 4);
    restored.prompt("two").await.unwrap();
}

#[tokio::test]
async fn a_lone_surrogate_escape_costs_one_character_on_every_api() {
    join_all(ALL.map(|api| async move {
        for escape in [r"\ud800", r"\udfff", r"\ud83d"] {
            let server = MockServer::start().await.unwrap();
            let answer: Vec<String> = api
                .answer()
                .into_iter()
                .map(|event| event.replace(r#""hi""#, &format!(r#""h{escape}i""#)))
                .collect();
            assert!(answer.iter().any(|event| event.contains(escape)), "{api:?}");
            server.push(json!({ "sse": answer }));
            let (_, message) = run(&api.model(&server), &no_retries()).await;
            assert_eq!(
                message.stop_reason,
                StopReason::Stop,
                "{api:?} {escape}: {message:?}"
            );
            assert_eq!(message.text(), "h\u{FFFD}i", "{api:?} {escape}");
            assert_eq!(
                message.usage.output, 2,
                "{api:?}: the rest of the answer is kept"
            );
        }
    }))
    .await;
}

#[tokio::test]
async fn arguments_deeper_than_the_limit_get_an_error_result_never_a_cut_value() {
    // 64 runs; 65 and 100 are refused whole; 200 is past the 127 levels at which the streamed
    // JSON is cut, and is refused too, never run with what was left of it.
    for (depth, runs) in [
        (MAX_ARGUMENT_DEPTH, true),
        (65, false),
        (100, false),
        (200, false),
    ] {
        let server = MockServer::start().await.unwrap();
        server.push(reply::deep_tool_call("call_1", "deep", depth));
        server.push(reply::text("done"));
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&ran);
        let tool: Arc<dyn AgentTool> = Arc::new(FnTool::new(
            "deep",
            "Takes anything",
            json!({"type": "object"}),
            move |_| {
                let counter = Arc::clone(&counter);
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    Ok(AgentToolResult::text("ran"))
                }
            },
        ));
        let agent = Agent::new(AgentOptions {
            model: Some(Api::Completions.model(&server)),
            tools: vec![tool],
            ..AgentOptions::default()
        });
        agent.set_stream_options(no_retries());
        agent.prompt("go").await.unwrap();
        let messages = agent.messages();
        let result = messages
            .iter()
            .find_map(|message| message.as_tool_result())
            .expect("a tool result");
        assert_eq!(
            ran.load(Ordering::SeqCst),
            usize::from(runs),
            "depth {depth}"
        );
        assert_eq!(result.is_error, !runs, "depth {depth}");
        if !runs {
            let text = serde_json::to_string(&result.content).unwrap();
            assert!(
                text.contains(&format!(
                    "nested more than {MAX_ARGUMENT_DEPTH} levels deep"
                )),
                "depth {depth}: {text}"
            );
        }
    }
}

#[tokio::test]
async fn silence_before_the_headers_is_bounded_per_attempt_but_a_long_body_is_not() {
    join_all(ALL.map(|api| async move {
        // A server that accepted the request and never answers: each attempt ends at the
        // (short, configured) time to the response headers, and the call ends after them all.
        let server = MockServer::start().await.unwrap();
        for _ in 0..2 {
            server.push(json!({"sse": api.answer(), "head_stall_ms": 60_000}));
        }
        let options = StreamOptions {
            request_timeout_ms: Some(200),
            max_retries: Some(1),
            max_retry_delay_ms: Some(10),
            ..StreamOptions::default()
        };
        let (_, message) = run(&api.model(&server), &options).await;
        assert_eq!(message.stop_reason, StopReason::Error, "{api:?}");
        let error = message.error_message.clone().unwrap_or_default();
        assert!(
            error.contains("Request timed out after 200 ms waiting for the response headers"),
            "{api:?}: {error}"
        );
        assert_eq!(
            server.requests().len(),
            2,
            "{api:?}: both attempts were made"
        );

        // Headers at once, then a body slower in total than that bound: the answer completes.
        let slow = MockServer::start().await.unwrap();
        slow.push(json!({"sse": api.answer(), "delay_ms": 100, "split": 64}));
        let (_, message) = run(&api.model(&slow), &options).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{api:?}: {message:?}"
        );
        assert_eq!(message.text(), "hi", "{api:?}");
    }))
    .await;
}

#[tokio::test]
async fn the_mock_servers_lone_surrogate_reply_reads_as_one_replacement_character() {
    let server = MockServer::start().await.unwrap();
    server.push(reply::lone_surrogate_text());
    let (_, message) = run(&Api::Completions.model(&server), &no_retries()).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(message.text(), "h\u{FFFD}i");
}
