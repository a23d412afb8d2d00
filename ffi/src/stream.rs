//! `pi_stream`: one streamed model response (pi's `stream()` / `streamSimple()`), read as a
//! pull iterator: blocking (`pi_stream_next`) or from an event loop (`pi_stream_try_next`).

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::StreamExt;
use pi_agent::agent::{ProxyOptions, stream_proxy};
use pi_agent::ai::{
    ApiKey, AssistantMessage, AssistantMessageEvent, AssistantMessageEventStream, Context,
    PartialMessage, StreamOptions,
};
use tokio_util::sync::CancellationToken;

use crate::args::{Out, arg_json, arg_opt_str, arg_ref, arg_str, method, write_json};
use crate::boundary::{Fallback, act, free, into_handle, lock, opt_ref};
use crate::error::pi_error;
use crate::model::pi_model;
use crate::options::stream_options;
use crate::runtime::{block_on, may_block, read_blocking, runtime};
use crate::stream_options::pi_stream_options;
use crate::string::{into_c_string, pi_str};
use crate::wake::{WakeSlot, pi_wake_callback};

/// What a stream event is (pi's `AssistantMessageEvent` `type`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pi_stream_event_kind {
    /// Not a stream event (used in `pi_agent_event` for events other than `message_update`).
    None = 0,
    /// `start`: the request succeeded; the message has no content yet.
    Start = 1,
    /// `text_start`: a text block opens at `content_index`.
    TextStart = 2,
    /// `text_delta`: more text (`delta`).
    TextDelta = 3,
    /// `text_end`: the text block is complete.
    TextEnd = 4,
    /// `thinking_start`: a reasoning block opens.
    ThinkingStart = 5,
    /// `thinking_delta`: more reasoning text (`delta`).
    ThinkingDelta = 6,
    /// `thinking_end`: the reasoning block is complete.
    ThinkingEnd = 7,
    /// `toolcall_start`: a tool call opens (`id` and `toolName` in the JSON).
    ToolcallStart = 8,
    /// `toolcall_delta`: a fragment of the arguments' JSON (`delta`).
    ToolcallDelta = 9,
    /// `toolcall_end`: the tool call is complete (`toolCall` in the JSON).
    ToolcallEnd = 10,
    /// `done`: terminal; the response is complete (`message` in the JSON).
    Done = 11,
    /// `error`: terminal; the request failed or was aborted (`error` in the JSON: the partial
    /// message with `stopReason` `error` or `aborted` and `errorMessage`).
    Error = 12,
    /// `object_delta` (only with an `outputSchema`): the answer's JSON as parsed so far, in the
    /// event's JSON (`object`).
    ObjectDelta = 13,
    /// An event kind newer than this header: read its `json` (`type` names it).
    Other = 99,
}

/// One stream event, filled in by `pi_stream_next`. `delta` and `json` are borrowed from the
/// stream and valid until the next `pi_stream_next`, `pi_stream_result_json` or
/// `pi_stream_free` on it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct pi_event {
    /// The event kind.
    pub kind: pi_stream_event_kind,
    /// The content block index for block events; else 0.
    pub content_index: usize,
    /// The new text of `*_DELTA` events (for `TOOLCALL_DELTA`: a JSON fragment); else empty.
    pub delta: pi_str,
    /// The whole event as pi-shaped JSON, e.g. `{"type":"text_delta","contentIndex":0,"delta":"Hi"}`,
    /// only when the stream was set to fill it (`pi_stream_set_event_json`); else empty. Without
    /// that, `pi_stream_event_json` gives it on demand, so events read only for `kind` and
    /// `delta` cost no serialisation.
    pub json: pi_str,
}

/// A streamed model response. Every request failure (HTTP, network, provider, abort) arrives
/// as the terminal `ERROR` event, never as a `pi_error`.
///
/// Thread-safety: `pi_stream_next`, `pi_stream_try_next` and `pi_stream_result_json` from one
/// thread at a time (`pi_stream_next` and `pi_stream_result_json` block, so not from an event
/// callback); `pi_stream_abort` and `pi_stream_partial_json` from any thread at any time;
/// `pi_stream_free` once, after the last other call has returned.
pub struct pi_stream {
    signal: CancellationToken,
    partial: PartialMessage,
    state: Mutex<StreamState>,
    /// Where a pending `pi_stream_try_next` asked to be woken.
    wake: Arc<WakeSlot>,
}

/// What `pi_stream_try_next` found.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum pi_poll {
    /// An event: `*event_out` is filled in, as by `pi_stream_next`.
    Event = 0,
    /// No event yet; the `wake` callback (if any) is called when there may be one.
    Pending = 1,
    /// The terminal event was returned already (or an argument was NULL): nothing more.
    End = 2,
}

impl Fallback for pi_poll {
    fn on_panic(_: String) -> Self {
        pi_poll::End
    }
}

struct StreamState {
    events: AssistantMessageEventStream,
    finished: bool,
    /// The event `pi_stream_next` returned last (`delta` points into it). A terminal event is
    /// kept without its message: the stream's `partial` holds the same final message, and one
    /// copy of a large message is enough.
    current: Option<AssistantMessageEvent>,
    /// `current` as JSON, once asked for.
    json: Option<String>,
    /// Whether `pi_stream_next` fills `pi_event.json` (`pi_stream_set_event_json`).
    eager_json: bool,
}

impl StreamState {
    /// Forgets the current event (before the next one arrives, so both are never held).
    fn clear_current(&mut self) {
        self.current = None;
        self.json = None;
    }

    /// The JSON of the current event, serialised on the first call (empty without an event).
    fn current_json(&mut self, partial: &PartialMessage) -> pi_str {
        if self.json.is_none()
            && let Some(event) = self.current.as_mut()
        {
            // A terminal event borrows its message back from `partial` for as long as it takes
            // to write it.
            if let Some(message) = terminal_message_mut(event) {
                *message = partial.snapshot();
            }
            self.json = Some(serde_json::to_string(event).unwrap_or_default());
            if let Some(message) = terminal_message_mut(event) {
                *message = AssistantMessage::default();
            }
        }
        self.json.as_deref().map_or(pi_str::EMPTY, pi_str::new)
    }
}

/// The message a terminal event carries.
fn terminal_message_mut(event: &mut AssistantMessageEvent) -> Option<&mut AssistantMessage> {
    match event {
        AssistantMessageEvent::Done { message, .. } => Some(message),
        AssistantMessageEvent::Error { error, .. } => Some(error),
        _ => None,
    }
}

/// Starts a request to `model` with pi's `stream` and writes the stream to `*stream_out` (free
/// it with `pi_stream_free`). It sends exactly what the options say: the provider keys decide
/// reasoning (`reasoning` is not read; see `pi_stream_open_simple`). `context_json` is a pi
/// `Context`: `{"systemPrompt":"...","messages":[...],"tools":[{"name","description",
/// "parameters"}]}`. `options_json` may be NULL, or core's `StreamOptions`: pi's flat options
/// object with every provider's keys, any subset of `apiKey` (else the provider's environment
/// variable, e.g. `OPENAI_API_KEY`), `temperature`, `maxTokens`, `headers` (object of strings),
/// `sessionId`, `cacheRetention` (`"none"`, `"short"`, `"long"`), `metadata`, `toolChoice`
/// (`"auto"`, `"none"`, `"required"` or `{"type":"tool","name":...}`), `outputSchema`
/// (`{"name","schema","strict"}`: the stream then has `OBJECT_DELTA` events and an answer that
/// does not validate ends with `errorKind` `invalid_output`),
/// `maxRetries`, `maxRetryDelayMs`, `requestTimeoutMs` (alias `timeoutMs`), `idleTimeoutMs`,
/// `maxEventBytes`, `maxErrorBodyBytes`, `transport`, the simple options `reasoning` and
/// `thinkingBudgets`, and the provider keys: `reasoningEffort`, `reasoningSummary`,
/// `serviceTier`, `textVerbosity` (OpenAI family), `thinkingEnabled`, `thinkingBudgetTokens`,
/// `effort`, `interleavedThinking`, `thinkingDisplay` (Anthropic, Bedrock Claude), `thinking`
/// (`{"enabled":true,"budgetTokens":N,"level":"HIGH"}`), `project`, `location` (Google),
/// `promptMode` (Mistral), `azureApiVersion`, `azureResourceName`, `azureBaseUrl`,
/// `azureDeploymentName` (Azure), `region`, `profile`, `bearerToken`, `requestMetadata`
/// (Bedrock). Unknown keys are refused (core's message lists the known ones).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `RUNTIME`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_open(
    model: *const pi_model,
    context_json: *const c_char,
    options_json: *const c_char,
    stream_out: *mut *mut pi_stream,
) -> *mut pi_error {
    ffi_fallible! {
        let options = stream_options(arg_opt_str(options_json, "options_json")?)?;
        open(model, context_json, options, Via::Stream, stream_out)
    }
}

/// Like `pi_stream_open`, with pi's `streamSimple` (what the agent uses): `maxTokens` defaults
/// to `min(model maxTokens, 32000)`, and `reasoning` (`"minimal"` ... `"xhigh"`; `"off"` or
/// absent for none) is mapped onto the provider's keys, turning thinking off explicitly where
/// the API allows it when there is none.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `RUNTIME`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_open_simple(
    model: *const pi_model,
    context_json: *const c_char,
    options_json: *const c_char,
    stream_out: *mut *mut pi_stream,
) -> *mut pi_error {
    ffi_fallible! {
        let options = stream_options(arg_opt_str(options_json, "options_json")?)?;
        open(model, context_json, options, Via::Simple, stream_out)
    }
}

/// Like `pi_stream_open` (`simple` false) or `pi_stream_open_simple` (`simple` true), with the
/// options of a `pi_stream_options` handle (copied, callbacks included; it may be freed right
/// after).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `RUNTIME`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_open_with_options(
    model: *const pi_model,
    context_json: *const c_char,
    options: *const pi_stream_options,
    simple: bool,
    stream_out: *mut *mut pi_stream,
) -> *mut pi_error {
    ffi_fallible! {
        let options = arg_ref(options, "options")?.options.clone();
        let via = if simple { Via::Simple } else { Via::Stream };
        open(model, context_json, options, via, stream_out)
    }
}

/// Streams one model call through a pi proxy server (core's `stream_proxy`, pi's
/// `streamProxy`): `POST {proxy_url}/api/stream` with the model, context and options, and
/// `Authorization: Bearer <auth_token>` (nullable: none); the proxy holds the provider keys and
/// answers with pi's proxy events, from which the message is rebuilt. Otherwise like
/// `pi_stream_open_simple` (`options_json` as there).
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `RUNTIME`.
/// Thread-safety: may be called from any thread, also from a callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_open_proxy(
    model: *const pi_model,
    context_json: *const c_char,
    options_json: *const c_char,
    proxy_url: *const c_char,
    auth_token: *const c_char,
    stream_out: *mut *mut pi_stream,
) -> *mut pi_error {
    ffi_fallible! {
        let options = stream_options(arg_opt_str(options_json, "options_json")?)?;
        let proxy = ProxyOptions {
            proxy_url: arg_str(proxy_url, "proxy_url")?.to_owned(),
            auth_token: arg_opt_str(auth_token, "auth_token")?.map(ApiKey::new),
        };
        open(model, context_json, options, Via::Proxy(proxy), stream_out)
    }
}

/// How a stream reaches the model.
enum Via {
    /// pi's `stream`.
    Stream,
    /// pi's `streamSimple`.
    Simple,
    /// pi's `streamProxy`.
    Proxy(ProxyOptions),
}

fn open(
    model: *const pi_model,
    context_json: *const c_char,
    mut options: StreamOptions,
    via: Via,
    stream_out: *mut *mut pi_stream,
) -> Result<(), pi_error> {
    let model = arg_ref(model, "model")?;
    let context: Context = arg_json(context_json, "context_json")?;
    let out = Out::new(stream_out, "stream_out")?;
    let signal = CancellationToken::new();
    options.signal = Some(signal.clone());
    let events = {
        let _runtime = runtime()?.enter();
        match via {
            Via::Stream => pi_agent::ai::stream(&model.model, &context, &options),
            Via::Simple => pi_agent::ai::stream_simple(&model.model, &context, &options),
            Via::Proxy(proxy) => stream_proxy(&model.model, &context, &options, &proxy),
        }
    };
    out.write(into_handle(pi_stream {
        signal,
        partial: events.partial(),
        state: Mutex::new(StreamState {
            events,
            finished: false,
            current: None,
            json: None,
            eager_json: false,
        }),
        wake: Arc::default(),
    }));
    Ok(())
}

/// Writes the message as far as it has arrived (pi's `partial`: exactly the events
/// `pi_stream_next` has returned so far, folded; the final message once the stream has ended)
/// as pi-shaped JSON to `*json_out` (free it with `pi_string_free`). Never blocks: it may be
/// called while another thread waits in `pi_stream_next`.
///
/// Errors: `NULL_ARGUMENT`.
/// Thread-safety: may be called from any thread at any time before `pi_stream_free`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_partial_json(
    stream: *const pi_stream,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(stream, "stream", |stream| {
        let message = stream.partial.snapshot();
        write_json(json_out, &message, "message")
    })
}

/// Blocks until the next event, writes it to `*event_out` and returns `true`; returns `false`
/// (leaving `*event_out` untouched) once the terminal `DONE` or `ERROR` event has been
/// returned, so `while (pi_stream_next(s, &e))` sees every event exactly once. Also returns
/// `false` for NULL arguments and when called from an event callback.
///
/// The event is not serialised to JSON unless asked (`pi_stream_event_json`, or
/// `pi_stream_set_event_json` for every event).
///
/// The calling thread reads the response itself: for an `http://` provider URL it waits for
/// the connection's socket (`poll`) and parses each frame as it arrives, so an event reaches it
/// with one wake-up, not through a library thread. Timers and `pi_stream_abort` from another
/// thread still wake it. The parsing runs on this thread's stack: give a thread of your own
/// at least 64 KiB (a release build of the library uses under 40 to open and read a stream).
///
/// Thread-safety: one thread at a time per stream; not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_next(stream: *mut pi_stream, event_out: *mut pi_event) -> bool {
    ffi_boundary! {
        // Refused (called from an event callback): nothing taken, the stream as it was (its
        // `pi_stream_try_next` registration and its current event kept).
        if may_block("pi_stream_next").is_err() {
            return false;
        }
        let answer = read_event(stream, event_out, |stream, events| {
            // A read that blocks replaces any `pi_stream_try_next` registration.
            stream.wake.unset();
            // The stream is read on this thread, which waits for the socket itself.
            read_blocking("pi_stream_next", || events.blocking_next())
                .map_or(Poll::Pending, Poll::Ready)
        });
        answer == pi_poll::Event
    }
}

/// The body of `pi_stream_next` and `pi_stream_try_next`: `fetch` takes the next event
/// (`Pending`: none now), which becomes the current one and is written to `event_out`.
fn read_event(
    stream: *mut pi_stream,
    event_out: *mut pi_event,
    fetch: impl FnOnce(
        &pi_stream,
        &mut AssistantMessageEventStream,
    ) -> Poll<Option<AssistantMessageEvent>>,
) -> pi_poll {
    let Some(stream) = opt_ref(stream) else {
        return pi_poll::End;
    };
    let Ok(out) = Out::new(event_out, "event_out") else {
        return pi_poll::End;
    };
    // Before the lock, so that a wake-up the read itself causes is delivered after it.
    let _reading = stream.wake.reading();
    let mut state = lock(&stream.state);
    if state.finished {
        return pi_poll::End;
    }
    state.clear_current();
    match fetch(stream, &mut state.events) {
        Poll::Pending => pi_poll::Pending,
        Poll::Ready(None) => {
            state.finished = true;
            pi_poll::End
        }
        Poll::Ready(Some(event)) => {
            deliver(stream, &mut state, event, out);
            pi_poll::Event
        }
    }
}

/// Makes `event` the stream's current one and writes its view to `out`.
fn deliver(
    stream: &pi_stream,
    state: &mut StreamState,
    mut event: AssistantMessageEvent,
    out: Out<pi_event>,
) {
    state.finished = event.is_terminal();
    if let Some(message) = terminal_message_mut(&mut event) {
        // `partial` holds the same message (see `StreamState::current`).
        drop(std::mem::take(message));
    }
    let kind = pi_stream_event_kind::of(&event);
    let content_index = event.content_index().unwrap_or(0);
    let event = state.current.insert(event);
    let delta = event.delta().map_or(pi_str::EMPTY, pi_str::new);
    let json = if state.eager_json {
        state.current_json(&stream.partial)
    } else {
        pi_str::EMPTY
    };
    out.write(pi_event {
        kind,
        content_index,
        delta,
        json,
    });
}

/// `pi_stream_next` without blocking, for a host that reads many streams from one thread (an
/// event loop) instead of a blocked thread per stream. Returns `PI_POLL_EVENT` with
/// `*event_out` filled in exactly as `pi_stream_next` fills it; `PI_POLL_PENDING` when no
/// event has arrived yet; `PI_POLL_END` once the terminal `DONE` or `ERROR` event has been
/// returned (and for NULL `stream` or `event_out`). The events, and their order, are those
/// `pi_stream_next` returns; the two may be mixed on one stream.
///
/// After `PI_POLL_PENDING`, `wake(user_data)` is called once, from a library thread (or from
/// the calling thread just before `pi_stream_try_next` returns, when its own read made the
/// stream ready: never while the stream is held), when the stream may have an event: call
/// `pi_stream_try_next` again (it may answer
/// `PI_POLL_PENDING` again, and then registers the new `wake`). `wake` must return quickly
/// (write to a pipe or an eventfd, signal a condition variable), must not block and must not
/// free the stream; `pi_stream_next` and `pi_stream_result_json` fail from it. `wake` may be
/// NULL (the host polls). Each call replaces the previous call's registration, and
/// `pi_stream_free` clears it, waiting for a call already running: after it returns, `wake` is
/// not called again for this stream. The previous event's `delta` and `json` are invalid
/// after this call, whatever it returns.
///
/// Thread-safety: one thread at a time per stream (not concurrently with `pi_stream_next`);
/// may be called from a `wake` callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_try_next(
    stream: *mut pi_stream,
    event_out: *mut pi_event,
    wake: pi_wake_callback,
    user_data: *mut c_void,
) -> pi_poll {
    ffi_boundary! {
        read_event(stream, event_out, |stream, events| {
            // Registered before the poll: an event that lands between the poll and the
            // registration would otherwise wake nobody.
            stream.wake.set(wake, user_data);
            let waker = stream.wake.waker();
            let next = events.poll_next_unpin(&mut TaskContext::from_waker(&waker));
            if next.is_ready() {
                // Nothing is pending: an earlier registration must not fire now.
                stream.wake.unset();
            }
            next
        })
    }
}

/// The pi-shaped JSON of the event `pi_stream_next` returned last (e.g.
/// `{"type":"done","reason":"stop","message":{...}}`), serialised on the first call for that
/// event. Empty before the first event, and for NULL. Valid until the next `pi_stream_next`,
/// `pi_stream_result_json` or `pi_stream_free` on the stream.
///
/// Thread-safety: the thread that calls `pi_stream_next`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_event_json(stream: *mut pi_stream) -> pi_str {
    ffi_boundary! {
        let Some(stream) = opt_ref(stream) else {
            return pi_str::EMPTY;
        };
        let mut state = lock(&stream.state);
        state.current_json(&stream.partial)
    }
}

/// Whether `pi_stream_next` fills `pi_event.json` for every event (`eager` true) or leaves it
/// empty (false, the default; `pi_stream_event_json` then gives it on demand). Serialising
/// every event costs time and, for a `DONE` event, a second copy of the final message. No-op
/// for NULL.
///
/// Thread-safety: the thread that calls `pi_stream_next`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_set_event_json(stream: *mut pi_stream, eager: bool) {
    act(stream, |stream| lock(&stream.state).eager_json = eager)
}

/// Writes the final assistant message as pi-shaped JSON to `*json_out` (free it with
/// `pi_string_free`). If the stream has not ended yet, blocks until it has, discarding the
/// remaining events. Its `stopReason` is `stop`, `length` or `toolUse`, or `error` / `aborted`
/// with `errorMessage` set.
///
/// Errors: `NULL_ARGUMENT`, `CALLED_FROM_CALLBACK`.
/// Thread-safety: one thread at a time per stream; not from an event callback.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_result_json(
    stream: *mut pi_stream,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(stream, "stream", |stream| {
        let out = Out::new(json_out, "json_out")?;
        // Refused before anything is touched: the registration and current event stay.
        may_block("pi_stream_result_json")?;
        let _reading = stream.wake.reading();
        let mut state = lock(&stream.state);
        if !state.finished {
            // A read that blocks replaces any `pi_stream_try_next` registration.
            stream.wake.unset();
            state.clear_current();
            block_on("pi_stream_result_json", async {
                while let Some(event) = state.events.next().await {
                    if event.is_terminal() {
                        break;
                    }
                }
            })?;
            state.finished = true;
        }
        // Once the terminal event has been read, `partial` holds the final message: written
        // from there, without a copy.
        let json = stream
            .partial
            .with(serde_json::to_string)
            .map_err(|error| pi_error::invalid_json("message", &error))?;
        out.write(into_c_string(json));
        Ok(())
    })
}

/// Aborts the request (no-op when it has ended, or `stream` is NULL). Returns at once; the
/// stream then ends with an `ERROR` event whose message has `stopReason` `aborted`.
///
/// Thread-safety: may be called from any thread at any time before `pi_stream_free`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_abort(stream: *const pi_stream) {
    act(stream, |stream| stream.signal.cancel())
}

/// Frees a stream, aborting the request if it is still running. NULL is a no-op.
///
/// Thread-safety: call once, after the last other call on the stream has returned.
#[unsafe(no_mangle)]
pub extern "C" fn pi_stream_free(stream: *mut pi_stream) {
    free(stream, |stream| {
        // No `pi_stream_try_next` wake-up reaches the host after this returns.
        stream.wake.clear();
        stream.signal.cancel();
    })
}
