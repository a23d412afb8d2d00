//! The AWS SDK's credential providers (`aws-config`) send their requests (STS, SSO, the ECS
//! and EC2 metadata endpoints) through the library's reqwest client: one TLS stack (rustls with
//! ring) and the roots and proxy the host configured, instead of the SDK's own hyper client
//! (which would bring aws-lc, a C crypto build).
//!
//! The SDK asks for connect and read timeouts per operation (1 s for instance metadata, 2 s / 5 s
//! for the container endpoint); both are applied, as one bound on the whole exchange, so a
//! metadata endpoint that never answers cannot hang a request.

use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::{Response, StatusCode};
use aws_smithy_types::body::SdkBody;

use crate::ai::providers::http;

/// Credential responses are small JSON or XML documents; anything bigger is refused.
const MAX_BODY: usize = 1 << 20;

/// The bound on an exchange when the SDK names no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// [`HttpClient`] over [`http::client`].
#[derive(Debug, Clone, Default)]
pub(crate) struct ReqwestHttpClient;

impl HttpClient for ReqwestHttpClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let timeout = match (settings.connect_timeout(), settings.read_timeout()) {
            (None, None) => DEFAULT_TIMEOUT,
            (connect, read) => connect.unwrap_or_default() + read.unwrap_or_default(),
        };
        SharedHttpConnector::new(ReqwestConnector { timeout })
    }
}

#[derive(Debug)]
struct ReqwestConnector {
    timeout: Duration,
}

impl HttpConnector for ReqwestConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let timeout = self.timeout;
        HttpConnectorFuture::new(async move {
            match tokio::time::timeout(timeout, send(request)).await {
                Ok(result) => result,
                Err(_) => Err(ConnectorError::timeout(
                    format!("no answer within {} ms", timeout.as_millis()).into(),
                )),
            }
        })
    }
}

async fn send(request: HttpRequest) -> Result<Response<SdkBody>, ConnectorError> {
    let method = reqwest::Method::from_bytes(request.method().as_bytes())
        .map_err(|error| ConnectorError::user(Box::new(error)))?;
    let mut builder = http::client().request(method, request.uri());
    for (name, value) in request.headers().iter() {
        builder = builder.header(name, value);
    }
    let body = request
        .body()
        .bytes()
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    let response = builder.body(body).send().await.map_err(|error| {
        let message: Box<dyn std::error::Error + Send + Sync> =
            http::transport_error_message(&error).into();
        if error.is_timeout() {
            ConnectorError::timeout(message)
        } else if error.is_connect() {
            ConnectorError::io(message)
        } else {
            ConnectorError::other(message, None)
        }
    })?;
    let status = StatusCode::try_from(response.status().as_u16())
        .map_err(|error| ConnectorError::other(Box::new(error), None))?;
    let headers: Vec<(String, String)> = response
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
        .collect();
    let bytes = read_bounded(response).await?;
    let mut out = Response::new(status, SdkBody::from(bytes));
    for (name, value) in headers {
        // A header the SDK cannot hold is left out rather than a panic.
        let _ = out.headers_mut().try_append(name, value);
    }
    Ok(out)
}

async fn read_bounded(mut response: reqwest::Response) -> Result<Vec<u8>, ConnectorError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| ConnectorError::io(http::transport_error_message(&error).into()))?
    {
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(ConnectorError::other(
                format!("credential response larger than {MAX_BODY} bytes").into(),
                None,
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
