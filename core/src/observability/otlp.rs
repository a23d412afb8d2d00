//! Export of the library's spans to an OpenTelemetry collector over OTLP (cargo feature `otlp`).
//!
//! The spans keep their GenAI names and attributes (see [`crate::observability`]): the exported
//! span of a model request is named `chat <model>`, has kind `CLIENT`, the `gen_ai.*`,
//! `server.address`, `http.response.status_code` and `error.type` attributes, and status `ERROR`
//! when the request failed; `invoke_agent`, `turn` and `execute_tool` spans are its ancestors
//! and siblings in the same trace. The exporter sends OTLP over HTTP/protobuf (the collector's
//! port 4318) through reqwest with rustls, from the batch processor's own thread: nothing runs
//! on the host's tokio runtime, and spans leave in batches, not one request per span.
//!
//! Two ways in:
//! - [`install`]: one call, when the host has no `tracing` subscriber of its own;
//! - [`layer`]: a `tracing` layer the host adds to its own subscriber, beside its other layers.
//!
//! Either returns an [`OtlpGuard`]; keep it alive while the program runs. Dropping it flushes
//! the spans still buffered and stops the exporter (bounded: 5 s).
//!
//! Only the library's own spans and events (targets `pi_agent::*`) are exported; the host's
//! spans and those of other crates are not. A host that already runs its own OpenTelemetry
//! pipeline needs none of this: the spans are plain `tracing` spans, and its own
//! `tracing-opentelemetry` layer exports them with the same names.
//!
//! Configuration follows OpenTelemetry's standard environment variables wherever an argument is
//! `None`: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) or `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`/v1/traces` appended; default `http://localhost:4318`), `OTEL_SERVICE_NAME` (default
//! `unknown_service`), and always `OTEL_EXPORTER_OTLP_HEADERS` / `..._TRACES_HEADERS` (e.g. a
//! vendor's API key), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` and the batch
//! processor's `OTEL_BSP_*`. The protocol is always HTTP/protobuf (gRPC and HTTP/JSON are not
//! built in).
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // `None` reads OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318) / OTEL_SERVICE_NAME.
//! let (otlp_layer, otlp_guard) = pi_agent::observability::otlp::layer(None, Some("my-service"))?;
//! tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otlp_layer))?;
//! // ... run agents and requests ...
//! drop(otlp_guard); // flushes the spans still buffered
//! # Ok(())
//! # }
//! ```

use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

/// Why the exporter could not be set up, flushed or shut down. The texts never hold the
/// endpoint's credentials nor any header value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The `endpoint` argument is not an `http://` or `https://` URL.
    #[error("invalid OTLP endpoint: {0}")]
    InvalidEndpoint(String),
    /// The exporter or its HTTP client could not be built (an invalid
    /// `OTEL_EXPORTER_OTLP_*` variable, or no TLS backend).
    #[error("could not set up the OTLP exporter: {0}")]
    Setup(String),
    /// [`install`] found a global `tracing` subscriber already installed; add [`layer`] to that
    /// one instead.
    #[error(
        "a global tracing subscriber is already installed: add pi_agent::observability::otlp::layer() to it instead"
    )]
    SubscriberAlreadySet,
    /// Flushing or shutting down did not complete (the collector is unreachable or slow, or
    /// the exporter was already shut down).
    #[error("the OTLP exporter did not finish: {0}")]
    Export(String),
}

/// Keeps the exporter running; dropping it flushes the spans still buffered and shuts the
/// exporter down (waiting at most 5 s). Spans that end afterwards are dropped.
#[derive(Debug)]
#[must_use = "dropping the guard shuts the exporter down at once"]
pub struct OtlpGuard {
    provider: Option<SdkTracerProvider>,
}

impl OtlpGuard {
    /// Exports the spans that have ended so far, waiting until the collector has answered.
    pub fn flush(&self) -> Result<(), OtlpError> {
        match &self.provider {
            Some(provider) => provider
                .force_flush()
                .map_err(|error| OtlpError::Export(error.to_string())),
            None => Err(OtlpError::Export("already shut down".to_owned())),
        }
    }

    /// Flushes and shuts the exporter down now, reporting whether that completed (dropping the
    /// guard does the same and ignores the outcome).
    pub fn shutdown(mut self) -> Result<(), OtlpError> {
        let provider = self.provider.take();
        provider.map_or(Ok(()), |provider| {
            provider
                .shutdown()
                .map_err(|error| OtlpError::Export(error.to_string()))
        })
    }
}

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            // Nothing to report to from a drop; `shutdown()` gives the outcome to those who
            // want it.
            let _ = provider.shutdown();
        }
    }
}

/// Installs the process's global `tracing` subscriber with the OTLP exporter as its only layer.
/// `endpoint` is the collector's base URL (`http://localhost:4318`; `/v1/traces` is appended
/// unless the path already ends with it) and `service_name` the `service.name` resource
/// attribute; `None` reads the standard environment variables (see the [module](self) docs).
///
/// Fails with [`OtlpError::SubscriberAlreadySet`] when the host has a global subscriber: add
/// [`layer`] to it instead.
pub fn install(endpoint: Option<&str>, service_name: Option<&str>) -> Result<OtlpGuard, OtlpError> {
    use tracing_subscriber::layer::SubscriberExt as _;
    if tracing::dispatcher::has_been_set() {
        return Err(OtlpError::SubscriberAlreadySet);
    }
    let (layer, guard) = layer(endpoint, service_name)?;
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .map_err(|_| OtlpError::SubscriberAlreadySet)?;
    Ok(guard)
}

/// The OTLP exporter as a `tracing` layer for the host's own subscriber (any subscriber with
/// span lookup, e.g. `tracing_subscriber::registry()`), with the guard that keeps it running.
/// The layer exports the library's spans and events (targets `pi_agent::*`, up to DEBUG) and
/// nothing else, whatever the host's other layers record. Arguments as for [`install`].
pub fn layer<S>(
    endpoint: Option<&str>,
    service_name: Option<&str>,
) -> Result<(impl Layer<S> + Send + Sync + 'static, OtlpGuard), OtlpError>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
{
    let provider = tracer_provider(endpoint, service_name)?;
    let tracer = provider.tracer_with_scope(
        InstrumentationScope::builder("pi_agent")
            .with_version(crate::VERSION)
            .build(),
    );
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        // The exported attributes are the spans' own GenAI fields; the layer's extras
        // (source location, thread, target, busy/idle time) would only add noise to every span.
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_filter(Targets::new().with_target("pi_agent", tracing::Level::DEBUG));
    Ok((
        layer,
        OtlpGuard {
            provider: Some(provider),
        },
    ))
}

/// The time one export may take, connecting included (the OTLP default).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

fn tracer_provider(
    endpoint: Option<&str>,
    service_name: Option<&str>,
) -> Result<SdkTracerProvider, OtlpError> {
    // Checked before the HTTP client (and its thread) is started for nothing.
    let endpoint = endpoint.map(traces_url).transpose()?;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(BlockingClient::new()?)
        .with_timeout(EXPORT_TIMEOUT);
    if let Some(endpoint) = endpoint {
        exporter = exporter.with_endpoint(endpoint);
    }
    let exporter = exporter
        .build()
        .map_err(|error| OtlpError::Setup(error.to_string()))?;
    // `Resource::builder()` reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; an explicit
    // name overrides them.
    let mut resource = Resource::builder();
    if let Some(name) = service_name {
        resource = resource.with_service_name(name.to_owned());
    }
    Ok(SdkTracerProvider::builder()
        .with_resource(resource.build())
        .with_batch_exporter(exporter)
        .build())
}

/// The traces URL for a collector's base URL, as OTLP does with `OTEL_EXPORTER_OTLP_ENDPOINT`.
fn traces_url(endpoint: &str) -> Result<String, OtlpError> {
    // The error texts name the problem, not the URL: it may carry credentials.
    let mut url = url::Url::parse(endpoint.trim())
        .map_err(|error| OtlpError::InvalidEndpoint(format!("not a URL ({error})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(OtlpError::InvalidEndpoint(
            "expected an http:// or https:// URL with a host".to_owned(),
        ));
    }
    if !url.path().ends_with("/v1/traces") {
        let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    Ok(url.into())
}

/// The exporter's HTTP client: reqwest's blocking client (the batch processor exports from a
/// thread of its own, outside any async runtime), over the rustls the library already uses.
#[derive(Debug)]
struct BlockingClient(reqwest::blocking::Client);

/// A collector answers with a small status message; anything larger is not read.
const MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

impl BlockingClient {
    fn new() -> Result<Self, OtlpError> {
        // reqwest's blocking client owns a small runtime, which must not be created (nor later
        // dropped) on a thread that runs async code: build it on a thread of its own.
        let built = std::thread::Builder::new()
            .name("pi-agent-otlp-setup".to_owned())
            .spawn(|| {
                reqwest::blocking::Client::builder()
                    .timeout(EXPORT_TIMEOUT)
                    .connect_timeout(EXPORT_TIMEOUT)
                    // Headers from OTEL_EXPORTER_OTLP_HEADERS often carry a vendor's key:
                    // never follow a redirect that could hand them to another host.
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
            })
            .map_err(|error| OtlpError::Setup(format!("could not start a thread: {error}")))?
            .join()
            .map_err(|_| OtlpError::Setup("building the HTTP client panicked".to_owned()))?;
        built
            .map(Self)
            .map_err(|error| OtlpError::Setup(format!("could not build the HTTP client: {error}")))
    }
}

#[async_trait::async_trait]
impl HttpClient for BlockingClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        use std::io::Read as _;
        let mut response = self.0.execute(request.try_into()?)?;
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let mut body = Vec::new();
        response.take(MAX_RESPONSE_BYTES).read_to_end(&mut body)?;
        let mut answer = Response::builder().status(status).body(Bytes::from(body))?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_base_urls_like_the_standard_variable() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://collector.example/otlp/").unwrap(),
            "https://collector.example/otlp/v1/traces"
        );
        assert_eq!(
            traces_url("http://localhost:4318/v1/traces").unwrap(),
            "http://localhost:4318/v1/traces"
        );
        for bad in ["", "localhost:4318", "ftp://host/", "grpc://host:4317"] {
            assert!(
                matches!(traces_url(bad), Err(OtlpError::InvalidEndpoint(_))),
                "{bad}"
            );
        }
        let error = traces_url("http//user:hunter2@host")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
    }
}
