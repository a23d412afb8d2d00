//! HTTP plumbing shared by the HTTP providers: one pooled client, runtime checks, and turning a
//! failed response into a readable message.

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

use futures::{Stream, StreamExt};
use serde_json::{Value, json};

use crate::ai::model::Model;
use crate::ai::options::{DEFAULT_MAX_RETRIES, DEFAULT_MAX_RETRY_DELAY_MS, StreamOptions};
use crate::ai::types::now_ms;

/// The process-wide client: connections are pooled across requests and providers.
pub(crate) fn client() -> &'static reqwest::Client {
    static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    });
    &CLIENT
}

/// The message of a stream started outside a tokio runtime.
pub(crate) const NO_RUNTIME: &str = "pi-agent providers must be called from within a tokio runtime";

/// Whether we are inside a tokio runtime that can run a provider task.
pub(crate) fn has_runtime() -> bool {
    tokio::runtime::Handle::try_current().is_ok()
}

/// The provider's own message from an error body, in the shapes vendors use
/// (`{"error":{"message":..}}`, `{"error":".."}`, `{"message":..}`, `{"detail":..}`), else the
/// raw body (truncated).
pub(crate) fn error_body_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let candidates = [
            json.pointer("/error/message"),
            json.get("error").filter(|v| v.is_string()),
            json.get("message"),
            json.get("detail"),
            json.pointer("/0/error/message"),
        ];
        for candidate in candidates.into_iter().flatten() {
            if let Some(text) = candidate.as_str() {
                let mut message = text.to_owned();
                // OpenRouter puts the upstream's words here.
                if let Some(raw) = json.pointer("/error/metadata/raw").and_then(Value::as_str) {
                    message.push('\n');
                    message.push_str(raw);
                }
                return message;
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty response body)".to_owned();
    }
    let mut end = trimmed.len().min(2_000);
    while !trimmed.is_char_boundary(end) {
        end -= 1;
    }
    trimmed[..end].to_owned()
}

/// `"<status> <provider message>"`, the shape pi's SDK errors have.
pub(crate) fn http_error_message(status: reqwest::StatusCode, body: &str) -> String {
    format!("{} {}", status.as_u16(), error_body_message(body))
}

/// A transport error without the URL (which may carry a key in a query string).
pub(crate) fn transport_error_message(error: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut message = if error.is_connect() {
        "Connection error: could not connect to the provider".to_owned()
    } else if error.is_timeout() {
        "Request timed out".to_owned()
    } else if error.is_body() || error.is_decode() {
        "Connection error: the response body was cut off".to_owned()
    } else {
        "Connection error".to_owned()
    };
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !text.is_empty() && !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// Local servers (Ollama, llama.cpp, LM Studio, vLLM on this machine) need no key.
pub(crate) fn is_loopback(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("http://")
        .or_else(|| base_url.strip_prefix("https://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']').next().map_or(host, |h| &h[1..])
    } else {
        host.split(':').next().unwrap_or(host)
    };
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// Replaces `{VAR}` placeholders (upper-case names) in a base URL with environment variables,
/// as Cloudflare base URLs need (pi's `resolveCloudflareBaseUrl`); `provider` names the
/// provider in the error for a variable that is not set.
pub(crate) fn expand_env_placeholders(url: &str, provider: &str) -> Result<String, String> {
    if !url.contains('{') {
        return Ok(url.to_owned());
    }
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}').filter(|&close| {
            let name = &after[..close];
            name.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        });
        match close {
            Some(close) => {
                let name = &after[..close];
                match std::env::var(name) {
                    Ok(value) if !value.is_empty() => out.push_str(&value),
                    _ => {
                        return Err(format!(
                            "{name} is required for provider {} but is not set.",
                            provider
                        ));
                    }
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether a status is worth retrying (pi's SDKs retry the same set).
pub(crate) fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The delay a server asks for: `retry-after-ms`, else `retry-after` in seconds.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0));
    }
    header("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|seconds| Duration::from_secs_f64(seconds.max(0.0)))
}

/// Exponential backoff (0.5 s, 1 s, 2 s, ...) with jitter, capped.
fn backoff(attempt: u32, cap: Duration) -> Duration {
    let base = Duration::from_millis(500).saturating_mul(1 << attempt.min(16));
    // Jitter in [0.5, 1.0) without a random-number dependency: the clock's low bits are enough
    // to spread clients apart.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let factor = 0.5 + f64::from(nanos % 1000) / 2000.0;
    base.mul_f64(factor).min(cap)
}

/// Sends a request built by `build`, retrying failures that happen before the first byte of
/// the answer (connection errors, time-outs, 408/409/429/5xx) with exponential backoff, and
/// honouring `Retry-After` up to `max_retry_delay_ms`. Each retry is recorded in `diagnostics`
/// (pi's diagnostic shape, `type: "retry"`), so retries are visible, never silent.
///
/// Returns the successful response (after calling `on_response`), or the final error message.
pub(crate) async fn send_with_retries(
    build: impl Fn() -> reqwest::RequestBuilder,
    options: &StreamOptions,
    model: &Model,
    diagnostics: &mut Vec<Value>,
) -> Result<reqwest::Response, String> {
    send_with_retries_formatted(build, options, model, diagnostics, |status, _, body| {
        http_error_message(status, body)
    })
    .await
}

/// [`send_with_retries`] with the provider's own wording of a failed response:
/// `format_error(status, headers, body)` (for APIs whose error type travels in a header, like
/// AWS's `x-amzn-errortype`).
pub(crate) async fn send_with_retries_formatted(
    build: impl Fn() -> reqwest::RequestBuilder,
    options: &StreamOptions,
    model: &Model,
    diagnostics: &mut Vec<Value>,
    format_error: impl Fn(reqwest::StatusCode, &reqwest::header::HeaderMap, &str) -> String,
) -> Result<reqwest::Response, String> {
    let max_retries = options.max_retries.unwrap_or(DEFAULT_MAX_RETRIES);
    let cap = Duration::from_millis(
        options
            .max_retry_delay_ms
            .unwrap_or(DEFAULT_MAX_RETRY_DELAY_MS),
    );
    let mut attempt = 0;
    loop {
        let send = build().send();
        let sent = match options.request_timeout_ms {
            Some(ms) => match tokio::time::timeout(Duration::from_millis(ms), send).await {
                Ok(sent) => sent.map_err(|error| transport_error_message(&error)),
                Err(_) => Err(format!(
                    "Request timed out after {ms} ms waiting for the response"
                )),
            },
            None => send.await.map_err(|error| transport_error_message(&error)),
        };
        let (error, status, hint) = match sent {
            Ok(response) => {
                let status = response.status();
                if let Some(callback) = &options.on_response {
                    let headers: BTreeMap<String, String> = response
                        .headers()
                        .iter()
                        .filter_map(|(k, v)| {
                            Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned()))
                        })
                        .collect();
                    (callback.0)(status.as_u16(), &headers, model);
                }
                if status.is_success() {
                    return Ok(response);
                }
                let hint = retry_after(response.headers());
                let headers = response.headers().clone();
                let body = response.text().await.unwrap_or_default();
                let error = format_error(status, &headers, &body);
                if !is_retryable_status(status.as_u16()) {
                    return Err(error);
                }
                (error, Some(status.as_u16()), hint)
            }
            Err(error) => (error, None, None),
        };
        if attempt >= max_retries {
            return Err(error);
        }
        if let Some(hint) = hint
            && hint > cap
        {
            return Err(format!(
                "{error} (the server asked to retry after {} ms, more than max_retry_delay_ms = {} ms)",
                hint.as_millis(),
                cap.as_millis()
            ));
        }
        let delay = hint.unwrap_or_else(|| backoff(attempt, cap));
        attempt += 1;
        diagnostics.push(json!({
            "type": "retry",
            "timestamp": now_ms(),
            "error": {"message": error},
            "details": {"attempt": attempt, "delayMs": delay.as_millis() as u64, "status": status},
        }));
        tokio::time::sleep(delay).await;
    }
}

/// The next piece of a streamed body; `Ok(None)` at its end. With an idle timeout, a body that
/// sends nothing for that long fails instead of hanging.
pub(crate) async fn next_chunk<S, B>(
    body: &mut S,
    idle_timeout_ms: Option<u64>,
) -> Result<Option<B>, String>
where
    S: Stream<Item = reqwest::Result<B>> + Unpin,
{
    let next = match idle_timeout_ms {
        Some(ms) => tokio::time::timeout(Duration::from_millis(ms), body.next())
            .await
            .map_err(|_| format!("Stream idle timeout: no data for {ms} ms"))?,
        None => body.next().await,
    };
    match next {
        None => Ok(None),
        Some(Ok(bytes)) => Ok(Some(bytes)),
        Some(Err(error)) => Err(transport_error_message(&error)),
    }
}

/// An incremental decoder of a streamed body into frames (SSE events, eventstream messages):
/// fed the body's chunks as they arrive, cut anywhere.
pub(crate) trait FrameDecoder {
    /// What one decoded frame is.
    type Frame;

    /// Decodes `bytes`, appending every frame they complete to `out`. An error ends the stream.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Self::Frame>) -> Result<(), String>;

    /// The body has ended: appends any frame still pending, or fails on a truncated one.
    fn finish(&mut self, out: &mut Vec<Self::Frame>) -> Result<(), String>;
}

impl FrameDecoder for crate::ai::sse::SseDecoder {
    type Frame = crate::ai::sse::SseEvent;

    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Self::Frame>) -> Result<(), String> {
        crate::ai::sse::SseDecoder::feed(self, bytes, out);
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Self::Frame>) -> Result<(), String> {
        crate::ai::sse::SseDecoder::finish(self, out);
        Ok(())
    }
}

/// The frames of a streamed body, decoded incrementally (each byte once) by `D`, with an
/// optional idle timeout between chunks. Every provider reads its response through this.
pub(crate) struct BodyFrames<D: FrameDecoder> {
    body: std::pin::Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    decoder: D,
    pending: std::collections::VecDeque<D::Frame>,
    scratch: Vec<D::Frame>,
    idle_timeout_ms: Option<u64>,
    ended: bool,
    /// A decode error, reported once the frames decoded before it have been taken.
    failed: Option<String>,
}

/// The events of a streamed SSE body.
pub(crate) type SseEvents = BodyFrames<crate::ai::sse::SseDecoder>;

impl SseEvents {
    /// Starts reading `response`'s body as SSE.
    pub(crate) fn new(response: reqwest::Response, idle_timeout_ms: Option<u64>) -> Self {
        Self::with_decoder(response, crate::ai::sse::SseDecoder::new(), idle_timeout_ms)
    }
}

impl<D: FrameDecoder> BodyFrames<D> {
    /// Starts reading `response`'s body with `decoder`.
    pub(crate) fn with_decoder(
        response: reqwest::Response,
        decoder: D,
        idle_timeout_ms: Option<u64>,
    ) -> Self {
        Self {
            body: Box::pin(response.bytes_stream()),
            decoder,
            pending: std::collections::VecDeque::new(),
            scratch: Vec::new(),
            idle_timeout_ms,
            ended: false,
            failed: None,
        }
    }

    /// The next frame; `Ok(None)` once the body has ended.
    pub(crate) async fn next(&mut self) -> Result<Option<D::Frame>, String> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Ok(Some(frame));
            }
            if let Some(error) = self.failed.take() {
                self.ended = true;
                return Err(error);
            }
            if self.ended {
                return Ok(None);
            }
            let decoded = match next_chunk(&mut self.body, self.idle_timeout_ms).await? {
                Some(bytes) => self.decoder.feed(&bytes, &mut self.scratch),
                None => {
                    self.ended = true;
                    self.decoder.finish(&mut self.scratch)
                }
            };
            self.pending.extend(self.scratch.drain(..));
            // Frames completed before a decode error are still delivered first.
            if let Err(error) = decoded {
                self.failed = Some(error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_vendor_messages() {
        assert_eq!(
            error_body_message(r#"{"error":{"message":"Invalid API key","type":"auth"}}"#),
            "Invalid API key"
        );
        assert_eq!(error_body_message(r#"{"error":"busy"}"#), "busy");
        assert_eq!(error_body_message("gateway down"), "gateway down");
        assert_eq!(error_body_message(""), "(empty response body)");
    }
}
