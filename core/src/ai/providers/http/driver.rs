//! The one path every HTTP provider's stream takes: the provider prepares a
//! [`PreparedRequest`] (its request mapping), the driver starts the task, sends the request
//! with retries, and hands the response to the provider's [`Wire::read`] (its response
//! mapping).

use std::future::Future;

use reqwest::header::HeaderMap;

use super::SseEvents;
use super::client;
use super::headers::Headers;
use super::retry::{RetryPolicy, default_error, send_with_policy};
use crate::ai::error::ProviderError;
use crate::ai::event_stream::{AssistantMessageEventStream, StreamWriter, channel};
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::stack::boxed;
use crate::ai::types::StopReason;

/// One provider request, resolved before its task starts: where it goes, what it carries
/// (authentication included), and the provider's own state for the rest of the exchange.
/// (No `Debug`: it holds the key.)
pub(crate) struct PreparedRequest<W> {
    /// The request URL.
    pub url: String,
    /// The serialized body (always JSON: the driver sends it as `POST`). Shared, not copied,
    /// with the request of each attempt.
    pub body: bytes::Bytes,
    /// The headers, in the order they are sent.
    pub headers: Headers,
    /// The call's options (limits, retries, signal).
    pub options: StreamOptions,
    /// What the provider needs to send and read: credentials fetched late, pricing, names.
    pub wire: W,
}

impl<W> PreparedRequest<W> {
    /// A request of `body` (serialized here) to `url`.
    pub(crate) fn new(
        url: String,
        body: &impl serde::Serialize,
        headers: Headers,
        options: &StreamOptions,
        wire: W,
    ) -> Self {
        Self {
            url,
            body: serde_json::to_vec(body).unwrap_or_default().into(),
            headers,
            options: options.clone(),
            wire,
        }
    }

    /// The request of one attempt, with `extra` headers after the prepared ones.
    fn builder(&self, extra: Vec<(String, String)>) -> reqwest::RequestBuilder {
        let mut builder = match parsed_url(&self.url) {
            Some(url) => client().request(reqwest::Method::POST, url),
            // reqwest parses it again and keeps the error for `build` to report.
            None => client().post(&self.url),
        };
        for (name, value) in self.headers.iter().chain(extra.iter().map(pair)) {
            builder = builder.header(name, value);
        }
        builder.body(self.body.clone())
    }
}

thread_local! {
    /// The last URL [`parsed_url`] parsed on this thread, as given and parsed.
    static LAST_URL: std::cell::RefCell<Option<(String, reqwest::Url)>> =
        const { std::cell::RefCell::new(None) };
}

/// `url` parsed, or `None` if it is not a URL; the last URL parsed on this thread is kept,
/// unless it has a query or user info (either may carry a key, which is not kept past its
/// request).
///
/// A thread's requests nearly always go to the URL it asked before (the same model again), and
/// parsing one (the host goes through IDNA mapping, even an IP address) was about a twentieth
/// of a request's own instructions; cloning the parsed URL is one string copy.
fn parsed_url(url: &str) -> Option<reqwest::Url> {
    if url.contains(['?', '@']) {
        return reqwest::Url::parse(url).ok();
    }
    LAST_URL.with(|last| {
        let mut last = last.try_borrow_mut().ok()?;
        if let Some((text, parsed)) = last.as_ref()
            && text == url
        {
            return Some(parsed.clone());
        }
        let parsed = reqwest::Url::parse(url).ok()?;
        *last = Some((url.to_owned(), parsed.clone()));
        Some(parsed)
    })
}

fn pair((name, value): &(String, String)) -> (&str, &str) {
    (name.as_str(), value.as_str())
}

/// The answer a [`Wire`] reads: the response (its head arrived), where its events go, and the
/// call's options.
pub(crate) struct Reply<'a> {
    /// The stream being written.
    pub writer: &'a mut StreamWriter,
    /// The model asked.
    pub model: &'a Model,
    /// The response, its body unread.
    pub response: reqwest::Response,
    /// The call's options (the body's limits). Owned, so that reading the body can drop
    /// them once its limits are taken: they are a kilobyte per stream.
    pub options: StreamOptions,
}

impl<'a> Reply<'a> {
    /// Reads the body as SSE events with `read` (a wire's `read_stream`), which borrows the
    /// reader: the returned future holds it once, for the whole stream (an `async fn` taking
    /// it by value would keep a second copy), and the options are dropped here, once the
    /// body's limits are taken. After a successful read, the body is read to its end
    /// ([`SseEvents::read_to_end`]).
    pub(crate) fn read_sse<R>(self, read: R) -> impl Future<Output = Result<(), ProviderError>>
    where
        R: AsyncFnOnce(&mut StreamWriter, &Model, &mut SseEvents) -> Result<(), ProviderError>,
    {
        let mut events = SseEvents::new(self.response, &self.options);
        let (writer, model) = (self.writer, self.model);
        async move {
            read(writer, model, &mut events).await?;
            // The answer is whole: what follows its end marker is read before `done` is sent,
            // so that the connection is back in the pool for the caller's next request.
            if !writer.is_closed() {
                events.read_to_end().await;
            }
            Ok(())
        }
    }
}

/// What the driver does after [`Wire::prepare_send`].
pub(crate) enum Flow {
    /// Send the request over HTTP.
    Send,
    /// The provider answered by other means (the Codex WebSocket): the stream is done.
    Done,
}

/// A provider's side of one exchange: its response mapping, and the few places where a wire
/// protocol departs from "POST the prepared request, retry the usual failures".
pub(crate) trait Wire: Sized + Send + Sync + 'static {
    /// Which failures are retried, how often and how fast.
    const RETRY_POLICY: RetryPolicy<'static> = RetryPolicy::DEFAULT;

    /// Whether the driver opens the message (`start`) when the response head arrives; a wire
    /// whose body opens it itself says `false`.
    const START_ON_RESPONSE: bool = true;

    /// Runs once before the first attempt: fetches credentials that need I/O, or answers by
    /// another transport.
    fn prepare_send(
        request: &mut PreparedRequest<Self>,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> impl Future<Output = Result<Flow, ProviderError>> + Send {
        let _ = (request, writer, model);
        async { Ok(Flow::Send) }
    }

    /// Headers computed afresh for each attempt (a signature over the current time).
    fn attempt_headers(
        request: &PreparedRequest<Self>,
    ) -> Result<Vec<(String, String)>, ProviderError> {
        let _ = request;
        Ok(Vec::new())
    }

    /// The message of a failed response (default: `"<status> <provider message>"`).
    fn error_message(status: reqwest::StatusCode, headers: &HeaderMap, body: &str) -> String {
        default_error(status, headers, body)
    }

    /// Reads the response body into the reply's writer to the protocol's end.
    fn read(self, reply: Reply<'_>) -> impl Future<Output = Result<(), ProviderError>> + Send;
}

/// Starts a provider's stream: `prepare` maps the call to a request (a failure, e.g. a missing
/// key, is a stream with only an `error` event, as in pi; `aborted` when the caller's signal
/// already fired), then a task sends it and reads the answer through `W`.
pub(crate) fn start<W: Wire>(
    model: &Model,
    options: &StreamOptions,
    prepare: impl FnOnce() -> Result<PreparedRequest<W>, ProviderError>,
) -> AssistantMessageEventStream {
    if let Some(failed) = AssistantMessageEventStream::outside_runtime(model) {
        return failed;
    }
    match prepare() {
        Ok(prepared) => {
            let (writer, stream) = channel(model, options.signal.clone());
            // Driven by the stream's reader (see `AssistantMessageEventStream`), not spawned.
            stream.driving(|| task(writer, model.clone(), prepared))
        }
        Err(error) => {
            let reason = if options.is_aborted() {
                StopReason::Aborted
            } else {
                StopReason::Error
            };
            AssistantMessageEventStream::failed(model, reason, error)
        }
    }
}

/// Implements [`ApiProvider`](crate::ai::api_provider::ApiProvider) for a built-in HTTP
/// provider: `api_provider! { Type, API, prepare, simple }`. `api` is `API`; `stream` hands
/// `prepare(model, context, options)` (written `self.prepare` for a provider's own method) to
/// [`start`]; `simple_options` is `simple(model, options)`. Every built-in provider's
/// implementation differs only in those names, so it is written once here.
// Unused in a build without any provider feature.
#[allow(unused_macros)]
macro_rules! api_provider {
    ($provider:ty, $api:expr, self.$method:ident, $simple:expr $(,)?) => {
        $crate::ai::providers::http::api_provider!(@impl $provider, $api, $simple,
            |this: &$provider, model, context, options| this.$method(model, context, options));
    };
    ($provider:ty, $api:expr, $prepare:path, $simple:expr $(,)?) => {
        $crate::ai::providers::http::api_provider!(@impl $provider, $api, $simple,
            |_: &$provider, model, context, options| $prepare(model, context, options));
    };
    (@impl $provider:ty, $api:expr, $simple:expr, $prepare:expr) => {
        impl $crate::ai::api_provider::ApiProvider for $provider {
            fn api(&self) -> &str {
                $api
            }

            fn stream(
                &self,
                model: &$crate::ai::model::Model,
                context: &$crate::ai::types::Context,
                options: &$crate::ai::options::StreamOptions,
            ) -> $crate::ai::event_stream::AssistantMessageEventStream {
                $crate::ai::providers::http::start(model, options, || {
                    ($prepare)(self, model, context, options)
                })
            }

            fn simple_options(
                &self,
                model: &$crate::ai::model::Model,
                options: &$crate::ai::options::StreamOptions,
            ) -> $crate::ai::options::StreamOptions {
                ($simple)(model, options)
            }
        }
    };
}
pub(crate) use api_provider;

/// A stream's task: sends the request and reads the answer into `writer`.
///
/// Its size is what every open stream costs beyond the HTTP connection (kept small by
/// `a_stream_task_stays_small`): the prepared request is boxed so that its phase is freed
/// once the response head arrives, and the writer and the body reader are each held once
/// ([`StreamWriter::drive`] and [`Reply::read_sse`] return `async` blocks: an `async fn`
/// keeps a second copy of its arguments).
fn task<W: Wire>(
    writer: StreamWriter,
    model: Model,
    prepared: PreparedRequest<W>,
) -> impl Future<Output = ()> + Send {
    let prepared = Box::new(prepared);
    writer.drive(async move |writer| run(writer, &model, prepared).await)
}

async fn run<W: Wire>(
    writer: &mut StreamWriter,
    model: &Model,
    request: Box<PreparedRequest<W>>,
) -> Result<(), ProviderError> {
    // The request phase (the prepared request, retries, the client's futures) is freed once
    // the response head has arrived.
    let Some(sent) = boxed(|| send(writer, model, request)).await? else {
        return Ok(());
    };
    // Boxed as the request phase is (see `ai::stack`). What the request phase hands over (the
    // response, the wire, the options: over a kilobyte) is unpacked inside the box, so that
    // neither this function's state (in every stream's task for the whole response) nor its
    // stack frame (on every poll) holds it.
    boxed(|| async move {
        let Sent {
            response,
            wire,
            options,
        } = *sent;
        let reply = Reply {
            writer,
            model,
            response,
            options,
        };
        if W::START_ON_RESPONSE {
            reply.writer.start().await;
        }
        wire.read(reply).await
    })
    .await
}

/// What the request phase hands to the body's reading.
struct Sent<W> {
    response: reqwest::Response,
    wire: W,
    options: StreamOptions,
}

/// Sends the request (with retries); `None` when the wire answered by other means.
async fn send<W: Wire>(
    writer: &mut StreamWriter,
    model: &Model,
    mut request: Box<PreparedRequest<W>>,
) -> Result<Option<Box<Sent<W>>>, ProviderError> {
    if let Flow::Done = W::prepare_send(&mut request, writer, model).await? {
        return Ok(None);
    }
    // Attempt headers can only fail on what does not change between attempts.
    let first = W::attempt_headers(&request)?;
    let build = || {
        let extra = W::attempt_headers(&request).unwrap_or_else(|_| first.clone());
        request.builder(extra)
    };
    let response = send_with_policy(
        writer,
        build,
        &request.options,
        model,
        W::error_message,
        W::RETRY_POLICY,
    )
    .await?;
    let PreparedRequest { wire, options, .. } = *request;
    Ok(Some(Box::new(Sent {
        response,
        wire,
        options,
    })))
}

#[cfg(all(test, feature = "openai"))]
mod tests {
    use super::*;
    use crate::ai::providers::openai_completions::CompletionsWire;

    /// Every open stream holds one such task: 7.6 KiB before its functions stopped keeping
    /// second copies of their arguments, 3.4 KiB after, 1.6 KiB once `drive` ended its stream
    /// through a borrow and the response's options left `run`'s own state (rustc 1.95,
    /// x86-64).
    #[test]
    fn a_stream_task_stays_small() {
        let model = Model::new("openai-completions", "openai", "m", "http://127.0.0.1:9");
        let options = StreamOptions::default();
        let (writer, _stream) = channel(&model, None);
        let prepared = PreparedRequest::new(
            "http://127.0.0.1:9/v1/chat/completions".into(),
            &serde_json::json!({}),
            Headers::default(),
            &options,
            CompletionsWire,
        );
        let task = task(writer, model.clone(), prepared);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 2048, "a stream's task is {size} bytes");
    }

    /// What the URL cache hands out is what parsing gives, and a URL that may carry a key (a
    /// query, user info) is not kept.
    #[test]
    fn urls_are_parsed_once_per_thread_and_keys_not_kept() {
        let last = || LAST_URL.with(|last| last.borrow().as_ref().map(|(text, _)| text.clone()));
        let plain = "http://127.0.0.1:9/v1/chat/completions";
        let parsed = parsed_url(plain).expect("a URL");
        assert_eq!(parsed, reqwest::Url::parse(plain).unwrap());
        assert_eq!(parsed_url(plain), Some(parsed));
        assert_eq!(last().as_deref(), Some(plain));
        for keyed in [
            "http://127.0.0.1:9/v1/models/m:stream?key=secret-key-123",
            "http://user:secret-key-123@127.0.0.1:9/v1",
        ] {
            assert_eq!(parsed_url(keyed), reqwest::Url::parse(keyed).ok());
            assert_eq!(last().as_deref(), Some(plain), "{keyed} was kept");
        }
        assert_eq!(parsed_url("not a url"), None);
        assert_eq!(last().as_deref(), Some(plain));
    }
}
