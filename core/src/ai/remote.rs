//! A stream whose events come from a server of the application's own rather than from a model
//! provider (the agent's proxy): one `POST` of a JSON body, answered by SSE. It is sent once
//! (such a protocol has no retries), within the request's time limits, following redirects
//! like the providers' requests, with its credentials hidden from every message.

use reqwest::StatusCode;
use serde_json::Value;

use super::error::ProviderError;
use super::event_stream::StreamWriter;
use super::options::{ApiKey, StreamOptions};
use super::providers::http;

/// The events of the answer, read within the limits of the request's options.
pub(crate) type RemoteEvents = http::SseEvents;

/// Sends `body` to `url` (with `token` as a bearer token) and opens the answer's events; a
/// failed status is read (within its limits) and worded by `failure` from the status and the
/// body's text.
pub(crate) async fn post_for_events(
    writer: &mut StreamWriter,
    url: &str,
    token: Option<&ApiKey>,
    body: &Value,
    options: &StreamOptions,
    failure: impl FnOnce(StatusCode, &str) -> ProviderError,
) -> Result<RemoteEvents, ProviderError> {
    let mut request = http::client()
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(body).unwrap_or_default());
    if let Some(token) = token {
        request = request.bearer_auth(token.expose());
    }
    let response = http::send_once(writer, request, options).await?;
    let status = response.status();
    if !status.is_success() {
        let text = http::error_body_text(response, options).await;
        return Err(failure(status, &text));
    }
    Ok(RemoteEvents::new(response, options))
}
