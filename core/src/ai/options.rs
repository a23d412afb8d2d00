//! Per-request options shared by every provider, and the secret wrapper for API keys.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::model::Model;
use super::structured::OutputSchema;
use super::thinking::ThinkingLevel;
use super::tool_choice::ToolChoice;

/// An API key. Its `Debug` and `Display` never show the secret, so it cannot leak into logs,
/// errors or events by accident; call [`ApiKey::expose`] at the one place that sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The secret itself, for the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `true` for an empty key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl<'de> Deserialize<'de> for ApiKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Self)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self::new(key)
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self::new(key)
    }
}

/// How long a provider should keep a prompt cache (pi's `cacheRetention`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// No cache markers.
    None,
    /// The provider's default (about five minutes).
    #[default]
    Short,
    /// Extended retention (an hour, or 24 h where offered).
    Long,
}

impl CacheRetention {
    /// The retention to use: the request's, else `PI_CACHE_RETENTION=long` from the
    /// environment, else short (pi's rule).
    pub fn resolve(requested: Option<CacheRetention>) -> CacheRetention {
        requested.unwrap_or_else(|| match std::env::var("PI_CACHE_RETENTION").as_deref() {
            Ok("long") => CacheRetention::Long,
            _ => CacheRetention::Short,
        })
    }
}

/// Inspects or replaces a provider's request body before it is sent (pi's `onPayload`):
/// return `Ok(Some(body))` to send that body instead. An error fails the request unsent, as a
/// throwing `onPayload` does in pi: the stream ends with an error carrying its message.
pub type OnPayload = dyn Fn(&Value, &Model) -> Result<Option<Value>, PayloadError> + Send + Sync;

/// An [`OnPayload`] callback failed; the message is the stream's error message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PayloadError(pub String);

/// A request body as it will be sent: its typed shapes, or the JSON value an
/// [`OnPayload`] hook saw (and perhaps replaced).
#[derive(Debug)]
pub(crate) enum Payload<'b, B> {
    /// No hook: the shapes themselves.
    Typed(&'b B),
    /// What the hook returned, or the body as the hook saw it.
    Json(Value),
}

impl<B: Serialize> Serialize for Payload<'_, B> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Typed(body) => body.serialize(serializer),
            Self::Json(value) => value.serialize(serializer),
        }
    }
}

/// Sees the HTTP status and headers once a response arrives, before its body is read (pi's
/// `onResponse`). Header names are lowercase.
pub type OnResponse = dyn Fn(u16, &BTreeMap<String, String>, &Model) + Send + Sync;

/// A callback field that `Debug` can print without showing the closure.
pub struct Callback<T: ?Sized>(pub Arc<T>);

impl<T: ?Sized> Clone for Callback<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> fmt::Debug for Callback<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<callback>")
    }
}

/// Whether `name` is a header that carries a credential (compared case-insensitively):
/// `authorization`, `proxy-authorization`, `x-api-key`, `api-key`, `x-goog-api-key`,
/// `cf-aig-authorization`, `cookie`, and any name containing `auth`, `key`, `token`,
/// `secret`, `password`, `credential`, `cookie` or `session` (so `X-Auth-Key`,
/// `X-Custom-Auth` and `x-amz-security-token` are credentials too). Such values are hidden in
/// `Debug` output and in every message the library writes. What may be *forwarded* to another
/// origin or kept in a snapshot is decided by an allow-list instead (see
/// [`is_known_safe_header`]).
pub fn is_credential_header(name: &str) -> bool {
    // Every name of the exact list above contains one of `CREDENTIAL_WORDS`, so the words
    // decide. One pass over the name, trying at each byte only the words that start with it
    // (a request's headers are all checked; a scan per word cost ten passes per name). Not
    // `text::contains_which_ignore_ascii_case`: building its first-byte set at every call cost
    // about 4,300 more instructions per request than this fixed match.
    let name = name.as_bytes();
    (0..name.len()).any(|at| {
        let rest = &name[at..];
        let starts = |word: &str| {
            rest.get(..word.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(word.as_bytes()))
        };
        match rest[0].to_ascii_lowercase() {
            b'a' => starts("auth"),
            b'c' => starts("credential") || starts("cookie"),
            b'k' => starts("key"),
            b'p' => starts("password") || starts("passwd"),
            b's' => starts("secret") || starts("session") || starts("signature"),
            b't' => starts("token"),
            _ => false,
        }
    })
}

/// The words that make a header name a credential's (see [`is_credential_header`]).
#[cfg(test)]
pub(crate) const CREDENTIAL_WORDS: [&str; 10] = [
    "auth",
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "cookie",
    "session",
    "signature",
];

/// Headers known to carry no credential (compared case-insensitively): the only ones sent on
/// after a redirect to another origin, and the only ones a snapshot keeps (from the stream
/// options and from the model). Everything else, whatever its name, may be a secret: a
/// gateway's `X-Auth-Key` does not say so in a way a deny-list could know.
pub fn is_known_safe_header(name: &str) -> bool {
    const SAFE: &[&str] = &[
        "accept",
        "accept-encoding",
        "accept-language",
        "anthropic-beta",
        "anthropic-version",
        "cache-control",
        "content-type",
        "copilot-integration-id",
        "editor-plugin-version",
        "editor-version",
        "http-referer",
        "openai-beta",
        "openai-intent",
        "user-agent",
        "x-initiator",
        "x-title",
    ];
    let name = name.to_ascii_lowercase();
    SAFE.contains(&name.as_str())
}

/// Default number of retries of a request that failed before any byte of the answer.
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// Default cap on a single retry delay, including a server's `Retry-After`.
pub const DEFAULT_MAX_RETRY_DELAY_MS: u64 = 60_000;
/// Default time to wait for a response's headers, per attempt (60 s; the OpenAI and Anthropic
/// SDKs wait 10 minutes). A streamed answer sends its headers at once and its tokens after them,
/// so this bounds a server that accepted the request and says nothing (3 attempts: 3 minutes,
/// not 30), never the length of a generation, which only the idle timeout between chunks
/// bounds. A gateway that buffers the whole answer before its headers needs a longer
/// `timeoutMs`.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 60_000;
/// Default time a streamed body may send nothing before the request fails (10 minutes: long
/// enough for a slow local model or a long silent reasoning phase).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 600_000;
/// Default cap on one SSE line or event (16 MiB: room for an inline image or a huge tool call).
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 16 << 20;
/// Default cap on the part of an error body that is read (256 KiB).
pub const DEFAULT_MAX_ERROR_BODY_BYTES: u64 = 256 << 10;

/// Token budgets per thinking level for budget-based providers (Anthropic's non-adaptive
/// models, Gemini 2.x); a level left `None` keeps the provider's default (pi's
/// `ThinkingBudgets`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThinkingBudgets {
    /// Budget for `minimal`.
    pub minimal: Option<u64>,
    /// Budget for `low`.
    pub low: Option<u64>,
    /// Budget for `medium`.
    pub medium: Option<u64>,
    /// Budget for `high` (and `xhigh`).
    pub high: Option<u64>,
}

impl ThinkingBudgets {
    /// The custom budget for `level`, if set (`off` has none).
    pub fn get(&self, level: ThinkingLevel) -> Option<u64> {
        match level {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => self.minimal,
            ThinkingLevel::Low => self.low,
            ThinkingLevel::Medium => self.medium,
            ThinkingLevel::High | ThinkingLevel::Xhigh => self.high,
        }
    }
}

/// Options for one request: pi's `StreamOptions`, its `SimpleStreamOptions` additions
/// (`reasoning`, `thinkingBudgets`), and every provider's own keys, in one flat shape exactly as
/// pi's `ProviderStreamOptions` accepts them. Every field is optional; `Default` sends nothing
/// extra. A provider reads the keys of its api and ignores the others.
///
/// The JSON form (used by the C ABI and Python) has pi's camelCase names; an unknown key is
/// refused with a message listing the known ones. Secrets (`apiKey`, `bearerToken`) are read
/// from JSON but never written back, and the signal and callbacks are not JSON at all.
///
/// [`stream`](super::stream) sends what the provider keys say and nothing else; only
/// [`stream_simple`](super::stream_simple) maps `reasoning` onto them (and turns thinking off
/// explicitly when it is unset), as pi's `streamSimple` does.
///
/// Its `Debug` output hides credential headers (see `ai/redact.rs`).
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct StreamOptions {
    // ---- pi's StreamOptions ------------------------------------------------------------------
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Output-token cap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Cancels the request; the stream then ends with an `error` event whose reason is `aborted`.
    #[serde(skip)]
    pub signal: Option<CancellationToken>,
    /// Overrides the key found in the environment. Read from JSON, never written to it.
    #[serde(skip_serializing)]
    pub api_key: Option<ApiKey>,
    /// Transport for APIs that have several (openai-codex-responses); default `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<Transport>,
    /// Prompt-cache retention (default: `PI_CACHE_RETENTION`, else short).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_retention: Option<CacheRetention>,
    /// Session id, used for prompt-cache keys and affinity headers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// See [`OnPayload`].
    #[serde(skip)]
    pub on_payload: Option<Callback<OnPayload>>,
    /// See [`OnResponse`].
    #[serde(skip)]
    pub on_response: Option<Callback<OnResponse>>,
    /// Extra HTTP headers, applied last so they override the model's.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Timeout until the response headers arrive, per attempt, redirects included (pi's
    /// `timeoutMs`). `None` = [`DEFAULT_REQUEST_TIMEOUT_MS`] (60 s); `Some(0)` = no timeout.
    /// The body that follows is bounded by `idle_timeout_ms` only, so long generations go on.
    #[serde(alias = "timeoutMs", skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
    /// Retries of a request that failed before the first byte of its answer (408, 409, 429,
    /// 5xx, connection errors). Default [`DEFAULT_MAX_RETRIES`]; `Some(0)` disables them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Cap on one retry delay (default [`DEFAULT_MAX_RETRY_DELAY_MS`]). A server asking to wait
    /// longer (`Retry-After`) makes the request fail at once, with the server's delay in the
    /// message, instead of sleeping.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry_delay_ms: Option<u64>,
    /// Request metadata; anthropic-messages sends `metadata.user_id` when it is a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Timeout between two chunks of a streamed body; a stalled stream then fails. `None` =
    /// [`DEFAULT_IDLE_TIMEOUT_MS`]; `Some(0)` = no timeout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Cap on one SSE line or event; a larger one ends the stream with an error. `None` =
    /// [`DEFAULT_MAX_EVENT_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_event_bytes: Option<u64>,
    /// Cap on the part of an error response's body that is read (the rest is dropped). `None` =
    /// [`DEFAULT_MAX_ERROR_BODY_BYTES`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_error_body_bytes: Option<u64>,

    // ---- pi's SimpleStreamOptions (read by `stream_simple` only) -----------------------------
    /// Reasoning level; [`stream_simple`](super::stream_simple) maps it onto the provider keys
    /// below (`Off`, and `"off"` in JSON, mean none, as `None` does).
    #[serde(
        deserialize_with = "deserialize_reasoning",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning: Option<ThinkingLevel>,
    /// Custom thinking budgets for budget-based providers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budgets: Option<ThinkingBudgets>,

    // ---- keys several providers read -----------------------------------------------------------
    /// Whether and which tool the model must call, mapped onto each api's own form (see
    /// [`ToolChoice`]; every provider's old spelling is read too). `required` or a named tool
    /// without such a tool in the context is an error before anything is sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// The JSON Schema the answer must follow (see [`OutputSchema`]): sent by the api's native
    /// mechanism, or as a forced tool where it has none; the stream then carries
    /// `object_delta` events and a final answer that does not validate is an `error` of kind
    /// `invalid_output`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// Reasoning effort sent as is, after the model's `thinkingLevelMap` (openai-completions,
    /// openai-responses, azure-openai-responses, openai-codex-responses, mistral-conversations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Reasoning summary (`auto`, `concise`, `detailed`) for the Responses apis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_summary: Option<String>,
    /// Service tier (`auto`, `default`, `flex`, `priority`) for openai-responses and
    /// openai-codex-responses; the cost follows the tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    /// Whether to interleave thinking between tool calls (anthropic-messages and Bedrock Claude;
    /// default on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interleaved_thinking: Option<bool>,
    /// How thinking is returned (`summarized`, the default, or `omitted`) by anthropic-messages
    /// and Bedrock Claude.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_display: Option<String>,

    // ---- anthropic-messages ------------------------------------------------------------------
    /// `true` sends thinking (adaptive or with a budget), `false` sends `{type: "disabled"}`,
    /// unset sends nothing (the api's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_enabled: Option<bool>,
    /// Thinking budget of non-adaptive models (default 1024).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_budget_tokens: Option<u64>,
    /// Effort of adaptive-thinking models (`low`, `medium`, `high`, `xhigh`, `max`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,

    // ---- google-generative-ai and google-vertex ------------------------------------------------
    /// Gemini thinking: `{enabled, budgetTokens?, level?}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<GoogleThinking>,
    /// Vertex project (else `GOOGLE_CLOUD_PROJECT` / `GCLOUD_PROJECT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Vertex location (else `GOOGLE_CLOUD_LOCATION`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,

    // ---- mistral-conversations ---------------------------------------------------------------
    /// `"reasoning"` for Magistral-style reasoning models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_mode: Option<String>,

    // ---- azure-openai-responses ---------------------------------------------------------------
    /// Azure API version (else `AZURE_OPENAI_API_VERSION`, else `v1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_api_version: Option<String>,
    /// Azure resource name (else `AZURE_OPENAI_RESOURCE_NAME`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_resource_name: Option<String>,
    /// Azure base URL (else `AZURE_OPENAI_BASE_URL`, the resource name, or the model's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_base_url: Option<String>,
    /// Deployment sent as `model` (else `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`, else the model id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_deployment_name: Option<String>,

    // ---- bedrock-converse-stream ---------------------------------------------------------------
    /// AWS region (else `AWS_REGION`, `AWS_DEFAULT_REGION`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// AWS profile of the shared config files (else `AWS_PROFILE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Bedrock bearer token (else `AWS_BEARER_TOKEN_BEDROCK`). Read from JSON, never written.
    #[serde(skip_serializing)]
    pub bearer_token: Option<ApiKey>,
    /// Bedrock `requestMetadata` (cost allocation tags).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_metadata: Option<Map<String, Value>>,

    // ---- openai-codex-responses ---------------------------------------------------------------
    /// `text.verbosity` (`low`, the default, `medium`, `high`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_verbosity: Option<String>,
}

/// Gemini's thinking configuration (pi's `GoogleOptions.thinking`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GoogleThinking {
    /// `false` turns thinking off where the model allows it.
    pub enabled: bool,
    /// Token budget (`-1` = dynamic) for models that take budgets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<i64>,
    /// Level (`MINIMAL`, `LOW`, `MEDIUM`, `HIGH`) for Gemini 3 and Gemma 4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
}

/// How openai-codex-responses reaches the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// Server-sent events over HTTP.
    Sse,
    /// A WebSocket per request.
    Websocket,
    /// A cached WebSocket per session, continuing from the previous response.
    WebsocketCached,
    /// WebSocket with a fallback to SSE (pi's default).
    #[default]
    Auto,
}

/// `reasoning` accepts pi's levels and `"off"` (= none), so the value pi's agent stores
/// (`thinkingLevel: "off"`) can be passed on as is.
fn deserialize_reasoning<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ThinkingLevel>, D::Error> {
    let level: Option<ThinkingLevel> = Option::deserialize(deserializer)?;
    Ok(level.and_then(ThinkingLevel::enabled))
}

impl StreamOptions {
    /// These options to show to a host (a callback's view of a request, a dump of settings):
    /// the same, without the headers that carry a credential ([`is_credential_header`]). The
    /// API key and the Bedrock bearer token are never serialized anyway.
    pub fn without_credential_headers(&self) -> Self {
        let mut shown = self.clone();
        shown.headers.retain(|name, _| !is_credential_header(name));
        shown
    }

    /// Puts back `from`'s credential headers that these options do not set (by name, in any
    /// case): for options a host read from a [`without_credential_headers`](Self::without_credential_headers)
    /// view, changed and handed back, which would otherwise go out without them.
    pub fn restore_credential_headers(&mut self, from: &StreamOptions) {
        for (name, value) in &from.headers {
            if is_credential_header(name)
                && !self
                    .headers
                    .keys()
                    .any(|set| set.eq_ignore_ascii_case(name))
            {
                self.headers.insert(name.clone(), value.clone());
            }
        }
    }

    /// `true` once the caller has cancelled.
    pub fn is_aborted(&self) -> bool {
        self.signal
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// The body a provider sends: `body`, or what the caller's [`OnPayload`] puts in its place.
    pub(crate) fn payload(&self, body: Value, model: &Model) -> Result<Value, PayloadError> {
        match &self.on_payload {
            Some(on_payload) => Ok((on_payload.0)(&body, model)?.unwrap_or(body)),
            None => Ok(body),
        }
    }

    /// [`payload`](Self::payload) for a body of typed shapes: with no `onPayload` hook the
    /// body is sent as it is (serialized straight from `body`); a hook sees it as a JSON value
    /// and may replace it.
    pub(crate) fn payload_of<'b, B: Serialize>(
        &self,
        body: &'b B,
        model: &Model,
    ) -> Result<Payload<'b, B>, PayloadError> {
        if self.on_payload.is_none() {
            return Ok(Payload::Typed(body));
        }
        let value = serde_json::to_value(body)
            .map_err(|error| PayloadError(format!("the request body is not JSON: {error}")))?;
        self.payload(value, model).map(Payload::Json)
    }

    /// Parses pi-shaped JSON options (`{"maxTokens": 100, "reasoning": "high", ...}`); an
    /// unknown key or a value of the wrong type is an error naming it.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bindings read keyword options onto an empty JSON object when they start from the
    /// defaults (no round trip of the defaults through JSON): a field left out must read as
    /// what the defaults write.
    #[test]
    fn an_empty_object_reads_as_the_defaults() {
        let read = StreamOptions::from_json("{}").expect("{} is valid options");
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(StreamOptions::default()).unwrap()
        );
        let written = serde_json::to_string(&StreamOptions::default()).unwrap();
        assert_eq!(
            serde_json::to_value(StreamOptions::from_json(&written).unwrap()).unwrap(),
            serde_json::to_value(StreamOptions::default()).unwrap()
        );
    }

    #[test]
    fn the_shown_options_lose_their_credential_headers() {
        let mut options = StreamOptions::from_json(
            r#"{"apiKey": "sk-secret-1", "sessionId": "s1",
                "headers": {"Authorization": "Bearer t-secret-2", "X-Api-Key": "k-secret-3",
                            "x-trace": "t1"}}"#,
        )
        .unwrap();
        options.max_tokens = Some(5);
        let shown = serde_json::to_string(&options.without_credential_headers()).unwrap();
        assert_eq!(
            shown,
            r#"{"maxTokens":5,"sessionId":"s1","headers":{"x-trace":"t1"}}"#
        );
        assert_eq!(options.headers.len(), 3, "the options themselves keep them");
        // A view changed and handed back gets them again; a header it sets itself stays.
        let mut edited = StreamOptions::from_json(
            r#"{"sessionId": "s2", "headers": {"x-trace": "t2", "x-api-key": "k-own-4"}}"#,
        )
        .unwrap();
        edited.restore_credential_headers(&options);
        assert_eq!(
            edited.headers.into_iter().collect::<Vec<_>>(),
            [
                ("Authorization".to_owned(), "Bearer t-secret-2".to_owned()),
                ("x-api-key".to_owned(), "k-own-4".to_owned()),
                ("x-trace".to_owned(), "t2".to_owned()),
            ]
        );
    }

    #[test]
    fn key_never_prints() {
        let options = StreamOptions {
            api_key: Some(ApiKey::new("sk-secret-123")),
            ..StreamOptions::default()
        };
        let shown = format!("{options:?} {}", ApiKey::new("sk-secret-123"));
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
