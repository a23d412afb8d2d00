//! rmcp's Streamable HTTP transport over the library's own `reqwest` client.
//!
//! rmcp ships an implementation of its `StreamableHttpClient` for reqwest 0.13; the library is
//! on reqwest 0.12, and taking rmcp's would build a second HTTP stack (and a second TLS setup
//! with its own roots). This one sends with [`crate::ai::providers::http::client`], so MCP
//! requests get the program's client (`ai::set_http_client`: proxy, roots, certificates) like
//! every provider does. Response bodies are bounded by the transport's limits.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

/// The library's reqwest client, as rmcp's HTTP client.
#[derive(Clone, Debug)]
pub(crate) struct PiHttpClient(pub(crate) reqwest::Client);

/// A failure of the HTTP exchange itself.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpClientError {
    /// reqwest failed (connect, TLS, read).
    #[error(transparent)]
    Request(#[from] reqwest::Error),
    /// The server answered with an error status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
}

type Error = StreamableHttpError<HttpClientError>;

/// The error names the URL without its query and user info: the MCP library logs these errors
/// as they are, where the server's redaction does not reach, and a query may carry a key.
fn request_error(error: reqwest::Error) -> Error {
    let url = error.url().cloned().map(|mut url| {
        url.set_query(None);
        let _ = url.set_password(None);
        let _ = url.set_username("");
        url
    });
    let error = match url {
        Some(url) => error.with_url(url),
        None => error,
    };
    StreamableHttpError::Client(HttpClientError::Request(error))
}

fn is_media_type(value: Option<&HeaderValue>, expected: &str) -> bool {
    value
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(expected))
}

fn with_headers(
    mut builder: reqwest::RequestBuilder,
    session_id: Option<&str>,
    auth_token: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(session_id) = session_id {
        builder = builder.header(HEADER_SESSION_ID, session_id);
    }
    if let Some(token) = auth_token {
        builder = builder.bearer_auth(token);
    }
    for (name, value) in custom_headers {
        builder = builder.header(name, value);
    }
    builder
}

/// Reads at most `limit` bytes of a body (the rest is dropped with the response).
async fn read_bounded(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Error> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(request_error)?;
        if body.len() + chunk.len() > limit {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("response body larger than {limit} bytes"),
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An SSE stream whose events may not grow beyond `limit` bytes: a server that never ends an
/// event cannot make the client buffer without bound.
fn sse_stream(
    response: reqwest::Response,
    limit: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let limited = response.bytes_stream().scan(0usize, move |pending, chunk| {
        if let Ok(chunk) = &chunk {
            // A blank line ends an event: count the bytes since the last one (per chunk, so
            // roughly), and end the stream when one grows past the limit.
            if memchr::memmem::find(chunk, b"\n\n").is_some()
                || memchr::memmem::find(chunk, b"\r\n\r\n").is_some()
            {
                *pending = 0;
            } else {
                *pending += chunk.len();
            }
        }
        std::future::ready((*pending <= limit).then_some(chunk))
    });
    SseStream::from_bytes_stream(limited).boxed()
}

async fn error_status(response: reqwest::Response, limit: usize) -> Error {
    let status = response.status().as_u16();
    let body = read_bounded(response, limit.min(4096))
        .await
        .unwrap_or_default();
    StreamableHttpError::Client(HttpClientError::Status {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

impl StreamableHttpClient for PiHttpClient {
    type Error = HttpClientError;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let limits = StreamableHttpResponseLimits::default();
        let mut request = self
            .0
            .get(uri.as_ref())
            .header(ACCEPT, EVENT_STREAM_MIME_TYPE);
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        let request = with_headers(request, session_id.as_deref(), auth_token, custom_headers);
        let response = request.send().await.map_err(request_error)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(error_status(response, limits.max_error_response_size).await);
        }
        if !is_media_type(response.headers().get(CONTENT_TYPE), EVENT_STREAM_MIME_TYPE) {
            return Err(StreamableHttpError::UnexpectedContentType(
                response
                    .headers()
                    .get(CONTENT_TYPE)
                    .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()),
            ));
        }
        Ok(sse_stream(response, limits.max_sse_event_size))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let request = with_headers(
            self.0.delete(uri.as_ref()),
            Some(&session_id),
            auth_token,
            custom_headers,
        );
        let response = request.send().await.map_err(request_error)?;
        // A server without session deletion answers 405: nothing to do.
        if response.status().is_success() || response.status() == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(error_status(response, 4096).await)
        }
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let awaits_no_response = !matches!(message, ClientJsonRpcMessage::Request(_));
        let body = serde_json::to_vec(&message).map_err(StreamableHttpError::Deserialize)?;
        let request = self
            .0
            .post(uri.as_ref())
            .header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "))
            .header(CONTENT_TYPE, JSON_MIME_TYPE)
            .body(body);
        let had_session = session_id.is_some();
        let request = with_headers(request, session_id.as_deref(), auth_token, custom_headers);
        let response = request.send().await.map_err(request_error)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = response.headers().get(CONTENT_TYPE).cloned();
        let session_id = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if !status.is_success() {
            // A JSON-RPC error in the body is the server's answer: hand it on as one.
            if is_media_type(content_type.as_ref(), JSON_MIME_TYPE) {
                let body = read_bounded(response, limits.max_json_response_size).await?;
                if let Ok(message @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(message, session_id));
                }
                let end = body.len().min(limits.max_error_response_size).min(4096);
                return Err(StreamableHttpError::Client(HttpClientError::Status {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&body[..end]).into_owned(),
                }));
            }
            return Err(error_status(response, limits.max_error_response_size).await);
        }
        if is_media_type(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) {
            return Ok(StreamableHttpPostResponse::Sse(
                sse_stream(response, limits.max_sse_event_size),
                session_id,
            ));
        }
        if is_media_type(content_type.as_ref(), JSON_MIME_TYPE) {
            let body = read_bounded(response, limits.max_json_response_size).await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(message) => Ok(StreamableHttpPostResponse::Json(message, session_id)),
                Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                Err(error) => Err(StreamableHttpError::Deserialize(error)),
            };
        }
        if awaits_no_response {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()),
        ))
    }
}
