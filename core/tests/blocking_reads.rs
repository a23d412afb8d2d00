//! Streams read on a thread of their own (`blocking_next`, what C's `pi_stream_next` and
//! Python's `for` use): the same events as an async read, with the thread waiting for the
//! socket itself, and every wake-up that does not come from the socket (an abort from another
//! thread, the idle timeout) still reaching it. The runtime the stream was made on keeps
//! running on its own workers; the reading thread is not one of them.

use std::sync::mpsc;
use std::time::Duration;

use futures::StreamExt;
use pi_agent::ai::{
    self, ApiKey, AssistantMessageEvent, AssistantMessageEventStream, Context, ErrorKind, Model,
    StopReason, StreamOptions, UserMessage, WaitTimedOut,
};
use pi_mock_server::{MockServer, reply};
use serde_json::json;
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn context() -> Context {
    Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    }
}

fn options() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("k")),
        max_retries: Some(0),
        ..StreamOptions::default()
    }
}

fn model(server: &MockServer) -> Model {
    Model::new("openai-completions", "mock", "m", server.base_url())
}

/// A stream made on `runtime`; the caller reads it outside the runtime.
fn open(runtime: &Runtime, model: &Model, options: &StreamOptions) -> AssistantMessageEventStream {
    let _runtime = runtime.enter();
    ai::stream(model, &context(), options)
}

/// Every event, read with `blocking_next`.
fn read_all(stream: &mut AssistantMessageEventStream) -> Vec<AssistantMessageEvent> {
    let mut events = Vec::new();
    while let Some(event) = stream.blocking_next() {
        events.push(event);
    }
    events
}

fn kinds(events: &[AssistantMessageEvent]) -> Vec<&'static str> {
    events.iter().map(AssistantMessageEvent::kind).collect()
}

#[test]
fn a_thread_reads_the_same_events_as_a_task() {
    let runtime = runtime();
    let server = runtime.block_on(MockServer::start()).unwrap();
    let answer = json!({"text": "one two three four", "delta_size": 4, "delay_ms": 5});
    server.push_all([answer.clone(), answer]);
    let model = model(&server);
    let mut stream = open(&runtime, &model, &options());
    let on_a_thread = read_all(&mut stream);
    assert_eq!(stream.blocking_next().map(|e| e.kind()), None, "ended");
    let message = stream.final_message().unwrap();
    assert_eq!(message.text(), "one two three four");
    assert_eq!(message.stop_reason, StopReason::Stop);
    let in_a_task = runtime.block_on(async {
        let mut stream = ai::stream(&model, &context(), &options());
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event);
        }
        events
    });
    assert_eq!(kinds(&on_a_thread), kinds(&in_a_task));
    let deltas = |events: &[AssistantMessageEvent]| {
        events
            .iter()
            .filter_map(|e| e.delta().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    assert_eq!(deltas(&on_a_thread), deltas(&in_a_task));
    // One connection for both: a thread's read gives it back to the pool like a task's.
    assert_eq!(server.connections(), 1);
}

#[test]
fn an_abort_from_another_thread_ends_a_blocked_read() {
    let runtime = runtime();
    let server = runtime.block_on(MockServer::start()).unwrap();
    // The answer stops after its first bytes for a minute.
    server.push(json!({"text": "never finished", "delta_size": 2,
                       "stall_after_bytes": 150, "stall_ms": 60_000}));
    let signal = CancellationToken::new();
    let options = StreamOptions {
        signal: Some(signal.clone()),
        ..options()
    };
    let mut stream = open(&runtime, &model(&server), &options);
    let (started, wait) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let first = stream.blocking_next().expect("start");
        started.send(first.kind()).unwrap();
        read_all(&mut stream)
    });
    assert_eq!(wait.recv().unwrap(), "start");
    // The reader is (or is about to be) waiting on the stalled socket.
    std::thread::sleep(Duration::from_millis(50));
    signal.cancel();
    let events = reader.join().unwrap();
    let last = events.last().expect("a terminal event");
    match last {
        AssistantMessageEvent::Error { reason, error } => {
            assert_eq!(*reason, StopReason::Aborted);
            assert_eq!(error.error_kind, Some(ErrorKind::Aborted));
        }
        other => panic!("not an abort: {other:?}"),
    }
}

#[test]
fn the_idle_timeout_reaches_a_waiting_thread() {
    let runtime = runtime();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push(json!({"text": "stalls", "stall_after_bytes": 100, "stall_ms": 60_000}));
    let options = StreamOptions {
        idle_timeout_ms: Some(200),
        ..options()
    };
    let mut stream = open(&runtime, &model(&server), &options);
    let events = read_all(&mut stream);
    let message = stream.final_message().unwrap();
    assert_eq!(kinds(&events).last(), Some(&"error"));
    assert_eq!(message.error_kind, Some(ErrorKind::Timeout), "{message:?}");
    assert!(
        message
            .error_message
            .as_deref()
            .is_some_and(|m| m.contains("idle")),
        "{:?}",
        message.error_message
    );
}

#[test]
fn a_wait_that_times_out_loses_nothing() {
    let runtime = runtime();
    let server = runtime.block_on(MockServer::start()).unwrap();
    // Two seconds of silence after the first bytes, then the rest.
    server.push(json!({"text": "patience pays", "delta_size": 3,
                       "stall_after_bytes": 120, "stall_ms": 2_000}));
    let mut stream = open(&runtime, &model(&server), &options());
    let mut events = Vec::new();
    let mut timed_out = 0;
    while timed_out == 0 {
        match stream.blocking_next_timeout(Duration::from_millis(20)) {
            Ok(Some(event)) => events.push(event),
            Ok(None) => panic!("the stream ended before its stall"),
            Err(WaitTimedOut) => timed_out += 1,
        }
    }
    events.extend(read_all(&mut stream));
    assert_eq!(kinds(&events).last(), Some(&"done"));
    assert_eq!(stream.final_message().unwrap().text(), "patience pays");
}

/// One stream read by turns from a task and from a thread: its connection moves between the
/// runtime (a task's waits) and the reading thread's own waits, and nothing is lost.
#[test]
fn a_stream_read_by_turns_from_a_task_and_a_thread() {
    let runtime = runtime();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push(json!({"text": "abcdefghijklmnopqrstuvwxyz", "delta_size": 2, "delay_ms": 3}));
    server.push(reply::text("next"));
    let mut stream = open(&runtime, &model(&server), &options());
    let mut events = Vec::new();
    for turn in 0.. {
        let event = if turn % 2 == 0 {
            runtime.block_on(stream.next())
        } else {
            stream.blocking_next()
        };
        match event {
            Some(event) => events.push(event),
            None => break,
        }
    }
    assert_eq!(kinds(&events).last(), Some(&"done"));
    assert_eq!(
        stream.final_message().unwrap().text(),
        "abcdefghijklmnopqrstuvwxyz"
    );
    // Its connection went back to the pool, whoever read last.
    let mut next = open(&runtime, &model(&server), &options());
    read_all(&mut next);
    assert_eq!(next.final_message().unwrap().text(), "next");
    assert_eq!(server.connections(), 1);
}

/// Dropping a stream a thread was reading stops its request: the connection closes.
#[test]
fn a_stream_dropped_by_its_thread_closes_its_connection() {
    let runtime = runtime();
    let server = runtime.block_on(MockServer::start()).unwrap();
    server.push(json!({"text": "never finished", "delta_size": 2,
                       "stall_after_bytes": 150, "stall_ms": 60_000}));
    server.push(reply::text("fresh"));
    let mut stream = open(&runtime, &model(&server), &options());
    assert_eq!(stream.blocking_next().map(|e| e.kind()), Some("start"));
    drop(stream);
    let mut next = open(&runtime, &model(&server), &options());
    read_all(&mut next);
    assert_eq!(next.final_message().unwrap().text(), "fresh");
    assert_eq!(server.connections(), 2);
}

/// A stream nobody reads makes no progress of its own; moved into the background with
/// `drive_in_background`, it does (its events wait in its queue), and looking at it with
/// `poll_next_ready` (which drives nothing) finds the whole answer.
#[test]
fn a_stream_in_the_background_progresses_unread() {
    let runtime = runtime();
    let server = runtime.block_on(MockServer::start()).unwrap();
    // Each answer pauses for a second after its first bytes, then ends.
    let pausing = json!({"text": "arrived alone", "stall_after_bytes": 150, "stall_ms": 1000});
    server.push_all([pausing.clone(), pausing]);
    let model = model(&server);
    let mut idle = open(&runtime, &model, &options());
    let mut background = open(&runtime, &model, &options());
    background.drive_in_background();
    let mut events = Vec::new();
    loop {
        match background.poll_next_ready() {
            std::task::Poll::Ready(Some(event)) => events.push(event),
            std::task::Poll::Ready(None) => break,
            std::task::Poll::Pending => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    assert_eq!(kinds(&events).last(), Some(&"done"));
    assert_eq!(background.final_message().unwrap().text(), "arrived alone");
    // The unread one went no further than its first poll, when it was made (its request left
    // then, and with a fast server part of the answer may have been read): not past the pause.
    while let std::task::Poll::Ready(Some(event)) = idle.poll_next_ready() {
        assert!(!event.is_terminal(), "{event:?}");
    }
    // Read, it completes.
    let rest = read_all(&mut idle);
    assert_eq!(kinds(&rest).last(), Some(&"done"));
    assert_eq!(idle.final_message().unwrap().text(), "arrived alone");
}
