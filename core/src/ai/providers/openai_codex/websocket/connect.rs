//! Opening a WebSocket: TCP, TLS (rustls with the webpki roots, ring as the provider), the
//! HTTP/1.1 upgrade, within the request's time limits; and whether an HTTP proxy is in the way.

use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::{Io, Socket};
use crate::ai::providers::http::Limits;
use crate::ai::providers::openai_codex::events::CodexError;

/// How long connecting (TCP, then TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether an HTTP proxy configured in the environment applies to `url` (then the WebSocket
/// transport is skipped).
pub(crate) fn proxied(url: &str) -> bool {
    proxied_with(url, |name| std::env::var(name).ok())
}

fn proxied_with(url: &str, var: impl Fn(&str) -> Option<String>) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let first = |names: &[&str]| {
        names
            .iter()
            .filter_map(|name| var(name))
            .find(|value| !value.trim().is_empty())
    };
    let proxy = match parsed.scheme() {
        "wss" => first(&["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"]),
        _ => first(&["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]),
    };
    if proxy.is_none() {
        return false;
    }
    let bypassed = first(&["NO_PROXY", "no_proxy"]).is_some_and(|list| {
        list.split(',').map(str::trim).any(|entry| {
            let entry = entry.trim_start_matches('.').to_ascii_lowercase();
            let entry = entry.split(':').next().unwrap_or("");
            entry == "*"
                || (!entry.is_empty() && (host == entry || host.ends_with(&format!(".{entry}"))))
        })
    });
    !bypassed
}

/// The roots the crate's TLS feature picks: Mozilla's (`webpki-roots`), and/or the operating
/// system's (`native-roots`; certificates it cannot parse are skipped, as reqwest does). With
/// neither feature the store is empty and `wss://` connections fail verification.
fn tls_roots() -> rustls::RootCertStore {
    #[allow(unused_mut)]
    let mut roots = rustls::RootCertStore::empty();
    #[cfg(feature = "webpki-roots")]
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    #[cfg(feature = "native-roots")]
    for certificate in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(certificate);
    }
    roots
}

/// The TLS configuration of `wss://` connections: [`tls_roots`], HTTP/1.1 only. Built once;
/// rustls's own error is kept (it is `Clone`) so every connection can report it.
static TLS: LazyLock<Result<Arc<rustls::ClientConfig>, rustls::Error>> = LazyLock::new(|| {
    let roots = tls_roots();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
});

pub(super) fn ws_error(error: &WsError) -> String {
    match error {
        WsError::Http(response) => format!(
            "WebSocket handshake failed: HTTP {}",
            response.status().as_u16()
        ),
        WsError::ConnectionClosed | WsError::AlreadyClosed => "WebSocket closed".to_owned(),
        WsError::Capacity(why) => format!("WebSocket message too large: {why}"),
        other => format!("WebSocket error: {other}"),
    }
}

/// Opens a WebSocket to `url` with `headers`.
pub(super) async fn connect(
    url: &str,
    headers: &[(String, String)],
    limits: &Limits,
) -> Result<Socket, CodexError> {
    let transport = |message: String| CodexError::Transport(message);
    let parsed = reqwest::Url::parse(url).map_err(|e| transport(format!("Invalid URL: {e}")))?;
    let tls = match parsed.scheme() {
        "wss" => true,
        "ws" => false,
        other => return Err(transport(format!("Unsupported WebSocket scheme `{other}`"))),
    };
    let host = parsed
        .host_str()
        .ok_or_else(|| transport("The WebSocket URL has no host".to_owned()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = parsed
        .port_or_known_default()
        .unwrap_or(if tls { 443 } else { 80 });
    let mut request = url
        .into_client_request()
        .map_err(|error| transport(ws_error(&error)))?;
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| transport(format!("Invalid HTTP header name `{name}`")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| transport(format!("Invalid value for HTTP header `{name}`")))?;
        request.headers_mut().insert(name, value);
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(limits.max_event_bytes))
        .max_frame_size(Some(limits.max_event_bytes));
    let open = async {
        let tcp = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio::net::TcpStream::connect((host.as_str(), port)),
        )
        .await
        .map_err(|_| transport("Connection error: timed out connecting".to_owned()))?
        .map_err(|error| transport(format!("Connection error: {error}")))?;
        let _ = tcp.set_nodelay(true);
        let io: Pin<Box<dyn Io>> = if tls {
            let config = TLS.as_ref().map_err(|error| transport(error.to_string()))?;
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|_| transport(format!("Invalid TLS server name `{host}`")))?;
            let stream = tokio::time::timeout(
                CONNECT_TIMEOUT,
                tokio_rustls::TlsConnector::from(Arc::clone(config)).connect(name, tcp),
            )
            .await
            .map_err(|_| transport("Connection error: TLS handshake timed out".to_owned()))?
            .map_err(|error| transport(format!("Connection error: {error}")))?;
            Box::pin(stream)
        } else {
            Box::pin(tcp)
        };
        tokio_tungstenite::client_async_with_config(request, io, Some(config))
            .await
            .map(|(socket, _)| socket)
            .map_err(|error| transport(ws_error(&error)))
    };
    match limits.request_timeout {
        Some(timeout) => tokio::time::timeout(timeout, open)
            .await
            .unwrap_or_else(|_| {
                Err(transport(format!(
                    "WebSocket handshake timed out after {} ms",
                    timeout.as_millis()
                )))
            }),
        None => open.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxies_apply_unless_bypassed() {
        let env = |vars: Vec<(&'static str, &'static str)>| {
            move |name: &str| {
                vars.iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        let url = "wss://chatgpt.com/backend-api/codex/responses";
        assert!(!proxied_with(url, env(vec![])));
        assert!(proxied_with(
            url,
            env(vec![("HTTPS_PROXY", "http://proxy:3128")])
        ));
        assert!(proxied_with(
            url,
            env(vec![("all_proxy", "socks5://p:1080")])
        ));
        assert!(!proxied_with(
            url,
            env(vec![("HTTP_PROXY", "http://proxy:3128")])
        ));
        for bypass in [
            "chatgpt.com",
            ".chatgpt.com",
            "*",
            "example.org, chatgpt.com:443",
        ] {
            let vars = vec![("HTTPS_PROXY", "http://proxy:3128"), ("NO_PROXY", bypass)];
            assert!(!proxied_with(url, env(vars)), "{bypass}");
        }
        assert!(proxied_with(
            "ws://127.0.0.1:9/codex/responses",
            env(vec![("http_proxy", "http://proxy:3128")])
        ));
    }
}
