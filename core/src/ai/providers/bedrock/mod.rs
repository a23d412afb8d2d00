//! api `bedrock-converse-stream`: Amazon Bedrock's ConverseStream API (pi's
//! `providers/amazon-bedrock.ts`), without the AWS SDK.
//!
//! `POST {endpoint}/model/{modelId}/converse-stream` with a JSON body; the answer is an
//! `application/vnd.amazon.eventstream` body ([`eventstream`]) of JSON events. Requests are
//! signed with SigV4 ([`sigv4`]) or carry a Bedrock API key as a bearer token; where the
//! credentials and the region come from is in [`credentials`] and [`config`].
//!
//! Like pi, the request's and the model's `headers` are not sent (the request is signed), and
//! retries follow the shared policy (pi leaves them to the AWS SDK, which retries the same
//! failures).

pub(crate) mod chain;
pub(crate) mod config;
pub(crate) mod credentials;
pub mod eventstream;
pub(crate) mod model_family;
pub(crate) mod options;
pub(crate) mod profile_file;
pub(crate) mod region;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod sdk_http;
pub(crate) mod sigv4;

use std::time::SystemTime;

use serde_json::Value;

use self::config::{ClientConfig, Resolution};
use self::credentials::BedrockAuth;
use self::eventstream::EventStreamDecoder;
use self::options::BedrockRequestOptions;
use self::request::CommandInputs;
use self::response::{ENDED_BEFORE_MESSAGE_STOP, EventState};
use self::sigv4::{BEDROCK_SIGNING_NAME, SignableInput};
use super::environment::Environment;
use super::http;
use crate::ai::env_keys::{env_key_allowed, withheld_host};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::{CacheRetention, StreamOptions};
use crate::ai::types::Context;

/// The api id.
pub(crate) const API: &str = "bedrock-converse-stream";

/// The `bedrock-converse-stream` provider.
///
/// [`Default`] reads AWS variables from the process environment;
/// [`with_environment`](Self::with_environment) reads them from a fixed map instead (for
/// applications that keep credentials out of the process environment, and for tests).
#[derive(Debug, Default, Clone)]
pub struct BedrockProvider {
    env: Environment,
}

impl BedrockProvider {
    /// A provider that reads `AWS_*` variables (and `HOME`, for `~/.aws/`) from `vars` only.
    pub fn with_environment<K, V>(vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            env: Environment::Fixed(
                vars.into_iter()
                    .map(|(key, value)| (key.into(), value.into()))
                    .collect(),
            ),
        }
    }
}

/// Bedrock's side of the exchange: how each attempt authenticates, and the eventstream body.
/// (No `Debug`: it holds credentials.)
pub(crate) struct BedrockWire {
    /// The model id of the URL (kept for a region found when the request runs).
    model_id: String,
    /// The profile whose region the SDK's region providers give, when the region is not known
    /// before the request runs (with the explicit endpoint, if any); the URL is empty until then.
    pending_region: Option<(String, Option<String>)>,
    auth: BedrockAuth,
    /// The bearer token is `AWS_BEARER_TOKEN_BEDROCK`'s (the environment's, not the caller's):
    /// it goes only to AWS's Bedrock hosts and loopback (see [`check_env_bearer`]).
    env_bearer: bool,
    region: String,
}

/// The provider id whose hosts an environment bearer token may go to.
const PROVIDER: &str = "amazon-bedrock";

/// Refuses to send the environment's bearer token to `url` unless it is one of Bedrock's hosts
/// (or loopback, or listed in `PI_ENV_KEY_HOSTS`), as environment keys are everywhere: a model
/// whose base URL points elsewhere must not receive it. A SigV4 signature is tied to its host
/// and needs no such check; a bearer token is reusable wherever it lands.
fn check_env_bearer(env_bearer: bool, url: &str) -> Result<(), ProviderError> {
    if !env_bearer || env_key_allowed(PROVIDER, url) {
        return Ok(());
    }
    let host = withheld_host(url);
    Err(ProviderError::other(
        format!(
            "AWS_BEARER_TOKEN_BEDROCK is set, but environment keys are only sent to Amazon \
             Bedrock's hosts and loopback servers, not to `{host}`. Pass the token explicitly \
             (`bearerToken`, or the request's API key), or add the host to PI_ENV_KEY_HOSTS."
        ),
        Some(ErrorKind::Auth),
    ))
}

impl http::Wire for BedrockWire {
    /// A reply without `messageStart` still opens with `start` (see [`read_stream`]).
    const START_ON_RESPONSE: bool = false;

    async fn prepare_send(
        request: &mut http::PreparedRequest<Self>,
        _: &mut StreamWriter,
        _: &Model,
    ) -> Result<http::Flow, ProviderError> {
        if let Some((profile, endpoint)) = request.wire.pending_region.take() {
            let found = region::profile_region(&profile).await?;
            let ClientConfig { region, endpoint } =
                config::finish(&Environment::Process, found, endpoint)?;
            request.url = config::converse_stream_url(&endpoint, &request.wire.model_id)?;
            check_env_bearer(request.wire.env_bearer, &request.url)?;
            request.wire.region = region;
        }
        let wire = &mut request.wire;
        if let BedrockAuth::Chain(profile) = &wire.auth {
            let credentials = chain::credentials(profile.as_deref(), &wire.region)
                .await
                .map_err(|error| ProviderError::other(error.to_string(), Some(ErrorKind::Auth)))?;
            wire.auth = BedrockAuth::SigV4(credentials);
        }
        Ok(http::Flow::Send)
    }

    /// SigV4 signs with the current time, so each retry is signed afresh.
    fn attempt_headers(
        request: &http::PreparedRequest<Self>,
    ) -> Result<Vec<(String, String)>, ProviderError> {
        match &request.wire.auth {
            BedrockAuth::Bearer(token) => Ok(vec![(
                "authorization".to_owned(),
                format!("Bearer {}", token.expose()),
            )]),
            // Resolved in `prepare_send` before the first attempt.
            BedrockAuth::Chain(_) => Err(ProviderError::other(
                "AWS credentials were not resolved",
                Some(ErrorKind::Auth),
            )),
            BedrockAuth::SigV4(credentials) => sigv4::sign_request(
                credentials,
                &SignableInput {
                    method: "POST",
                    url: &request.url,
                    headers: &[("content-type", "application/json")],
                    body: &request.body,
                    region: &request.wire.region,
                    service: BEDROCK_SIGNING_NAME,
                    time: SystemTime::now(),
                    content_sha256_header: true,
                },
            )
            .map_err(|error| ProviderError::other(error.to_string(), None)),
        }
    }

    fn error_message(
        status: reqwest::StatusCode,
        headers: &reqwest::header::HeaderMap,
        body: &str,
    ) -> String {
        response::format_http_error(status, headers, body)
    }

    async fn read(self, reply: http::Reply<'_>) -> Result<(), ProviderError> {
        let http::Reply {
            writer,
            model,
            response,
            options,
        } = reply;
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/json"));
        if is_json {
            // A proxy answering 200 with a JSON error instead of an event stream.
            let body = http::error_body_text(response, &options).await;
            return Err(ProviderError::Decode(format!(
                "Bedrock answered with JSON instead of an event stream: {}",
                http::error_body_message(&body)
            )));
        }
        let mut frames =
            http::BodyFrames::with_decoder(response, EventStreamDecoder::new(), &options);
        // Not kept across the body's read (a kilobyte per stream).
        drop(options);
        read_stream(writer, model, &mut frames).await?;
        if !writer.is_closed() {
            frames.read_to_end().await;
        }
        Ok(())
    }
}

http::api_provider! { BedrockProvider, API, self.prepare, request::simple_options }

impl BedrockProvider {
    fn prepare(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<http::PreparedRequest<BedrockWire>, ProviderError> {
        let bedrock = BedrockRequestOptions::from_stream_options(options);
        let (ClientConfig { region, endpoint }, pending_region) = match config::resolve(
            &self.env,
            &model.base_url,
            bedrock.region.as_deref(),
            bedrock.profile.as_deref(),
        )? {
            Resolution::Ready(config) => (config, None),
            Resolution::Pending { profile, endpoint } => (
                ClientConfig {
                    region: String::new(),
                    endpoint: String::new(),
                },
                Some((profile, endpoint)),
            ),
        };
        let auth = credentials::resolve_auth(
            &self.env,
            bedrock.bearer_token.as_ref(),
            bedrock.profile.as_deref(),
        )
        .map_err(|error| ProviderError::other(error.to_string(), Some(ErrorKind::Auth)))?;
        let configured_region = config::configured_region(&self.env, bedrock.region.as_deref());
        let command = request::build_command(
            CommandInputs {
                model,
                options: &bedrock,
                max_tokens: options.max_tokens,
                temperature: options.temperature,
                cache_retention: CacheRetention::resolve(options.cache_retention),
                configured_region: configured_region.as_deref(),
                force_cache: self.env.var("AWS_BEDROCK_FORCE_CACHE").as_deref() == Some("1"),
            },
            context,
        )
        .map_err(|error| ProviderError::other(error.to_string(), Some(ErrorKind::BadRequest)))?;
        let mut command = options.payload(command, model)?;
        // `modelId` is the URL's; everything else is the body.
        let model_id = match &mut command {
            Value::Object(fields) => match fields.shift_remove("modelId") {
                Some(Value::String(id)) => id,
                _ => model.id.clone(),
            },
            _ => model.id.clone(),
        };
        // `resolve_auth` prefers a non-empty token of the caller's to the environment's.
        let env_bearer = matches!(auth, BedrockAuth::Bearer(_))
            && bedrock
                .bearer_token
                .as_ref()
                .is_none_or(|token| token.is_empty());
        let url = match pending_region {
            Some(_) => String::new(),
            None => {
                let url = config::converse_stream_url(&endpoint, &model_id)?;
                check_env_bearer(env_bearer, &url)?;
                url
            }
        };
        Ok(http::PreparedRequest::new(
            url,
            &command,
            http::Headers::json(None),
            options,
            BedrockWire {
                model_id,
                pending_region,
                auth,
                env_bearer,
                region,
            },
        ))
    }
}

/// Reads a ConverseStream body's eventstream frames into `writer` (also the fuzz entry point).
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    model: &Model,
    frames: &mut http::BodyFrames<EventStreamDecoder>,
) -> Result<(), ProviderError> {
    let mut state = EventState::default();
    loop {
        let frame = match frames.next().await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            // `messageStop` makes the answer complete: a stall or a cut before the `metadata`
            // frame (the usage) or the body's end takes nothing from it.
            Err(_) if state.stopped => break,
            Err(error) => return Err(error),
        };
        let stopped_before = state.stopped;
        state.handle(frame, writer, model).await?;
        if writer.is_closed() {
            return Ok(());
        }
        if state.stopped && state.metadata {
            // The last frame: the answer is whole without waiting for the body's end.
            break;
        }
        if state.stopped && !stopped_before {
            frames.expect_end();
        }
    }
    if !state.stopped {
        return Err(ProviderError::Decode(ENDED_BEFORE_MESSAGE_STOP.to_owned()));
    }
    // A reply without `messageStart` still opens with `start`.
    writer.start().await;
    Ok(())
}
