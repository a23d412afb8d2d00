//! api `google-vertex`: Gemini on Vertex AI (pi's `providers/google-vertex.ts`, which goes
//! through the `@google/genai` SDK in Vertex mode; this module speaks the same REST wire).
//!
//! The request body and the streamed answer are the Gemini API's: both come from
//! [`google`](super::google) (with pi's Vertex thinking rules, [`Variant::Vertex`]), and the body
//! is read by the same `read_stream`. What differs is where the request goes and how it
//! authenticates ([`endpoint`]): an API key in `x-goog-api-key`, or an OAuth token from
//! Application Default Credentials ([`adc`]) in `Authorization`, plus `x-goog-user-project`
//! when the credentials name a quota project. As in the SDK, a caller-supplied `Authorization`
//! or `x-goog-api-key` header replaces the provider's own.
//!
//! Keys and tokens from the environment (`GOOGLE_CLOUD_API_KEY`, ADC) go only to Google's hosts,
//! loopback servers and `PI_ENV_KEY_HOSTS` (see `env_keys`); a key passed in the request goes
//! wherever the request goes.
//!
//! Differences from pi are those of `google-generative-ai` (see that module), plus: a
//! caller-supplied `Authorization` header skips ADC altogether (pi's SDK still fetches a token
//! it then does not send); credential types other than service accounts and `gcloud` user
//! credentials, and the metadata server, are not supported.

pub(crate) mod adc;
pub(crate) mod answer;
pub(crate) mod credentials;
pub(crate) mod endpoint;
pub(crate) mod external;
pub(crate) mod external_account;
pub(crate) mod jwt;
#[cfg(feature = "bedrock")]
pub(crate) mod subject_aws;
pub(crate) mod subject_exec;

use self::credentials::Credentials;
use self::endpoint::{KeySource, Scope};
use super::environment::Environment;
use super::google::request::{self, Variant};
use super::google::{API_KEY_HEADER, caller_authenticates, caller_headers, read_stream};
use super::http;
use crate::ai::env_keys::{env_key_allowed, withheld_host};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::types::Context;

/// The api id.
pub(crate) const API: &str = "google-vertex";

/// The provider id whose hosts environment credentials may go to.
const PROVIDER: &str = "google-vertex";

/// The header naming the project billed for quota.
const USER_PROJECT_HEADER: &str = "x-goog-user-project";

/// The `google-vertex` provider.
///
/// [`Default`] reads `GOOGLE_*` variables (and `HOME`, for gcloud's credentials file) from the
/// process environment; [`with_environment`](Self::with_environment) reads them from a fixed
/// map instead.
#[derive(Debug, Default, Clone)]
pub struct GoogleVertexProvider {
    env: Environment,
}

impl GoogleVertexProvider {
    /// A provider that reads `GOOGLE_CLOUD_API_KEY`, `GOOGLE_APPLICATION_CREDENTIALS`,
    /// `GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION` and `HOME` from `vars`
    /// only.
    pub fn with_environment<K, V>(vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            env: Environment::fixed(vars),
        }
    }
}

/// Vertex AI's side of the exchange: the Gemini stream, and the Application Default
/// Credentials whose token is fetched when the request is sent. (No `Debug`: it holds keys.)
pub(crate) struct VertexWire {
    adc: Option<Box<Credentials>>,
}

impl http::Wire for VertexWire {
    async fn prepare_send(
        request: &mut http::PreparedRequest<Self>,
        _: &mut StreamWriter,
        _: &Model,
    ) -> Result<http::Flow, ProviderError> {
        if let Some(credentials) = &request.wire.adc {
            let token = adc::access_token(credentials, &request.options).await?;
            request
                .headers
                .set("authorization", format!("Bearer {}", token.expose()));
        }
        Ok(http::Flow::Send)
    }

    fn read(
        self,
        reply: http::Reply<'_>,
    ) -> impl std::future::Future<Output = Result<(), ProviderError>> + Send {
        reply.read_sse(read_stream)
    }
}

http::api_provider! {
    GoogleVertexProvider, API, self.prepare,
    |model, options| request::simple_options_for(Variant::Vertex, model, options)
}

/// The error for environment credentials withheld from a host (kind `auth`).
fn withheld(what: &str, url: &str) -> ProviderError {
    let host = withheld_host(url);
    let message = format!(
        "No API key for provider: {PROVIDER}. {what} are only sent to Google's Vertex AI hosts \
         and loopback servers, not to `{host}`. Pass an API key explicitly, or add the host to \
         PI_ENV_KEY_HOSTS."
    );
    ProviderError::other(message, Some(ErrorKind::Auth))
}

impl GoogleVertexProvider {
    fn prepare(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<http::PreparedRequest<VertexWire>, ProviderError> {
        let caller = caller_headers(model, options);
        let authenticated = caller_authenticates(&caller);
        let mut headers = http::Headers::json(None);
        let (url, adc) = match endpoint::resolve_api_key(options, &self.env) {
            Some((key, source)) => {
                let url = endpoint::stream_url(model, &Scope::ApiKey)?;
                if source == KeySource::Environment && !env_key_allowed(PROVIDER, &url) {
                    return Err(withheld(
                        "GOOGLE_CLOUD_API_KEY is set, but environment keys",
                        &url,
                    ));
                }
                if !authenticated {
                    headers.set(API_KEY_HEADER, key.expose());
                }
                (url, None)
            }
            None => {
                let project = endpoint::resolve_project(options, &self.env)?;
                let location = endpoint::resolve_location(options, &self.env)?;
                let url = endpoint::stream_url(model, &Scope::Project { project, location })?;
                if authenticated {
                    (url, None)
                } else {
                    let credentials = adc::load(&self.env)?;
                    if !env_key_allowed(PROVIDER, &url) {
                        return Err(withheld("Application Default Credentials", &url));
                    }
                    (url, Some(Box::new(credentials)))
                }
            }
        };
        headers.extend(caller.0.iter().map(|(name, value)| (name, value)));
        if let Some(project) = adc
            .as_ref()
            .and_then(|credentials| credentials.quota_project())
            && !headers.has(USER_PROJECT_HEADER)
        {
            headers.set(USER_PROJECT_HEADER, project);
        }
        let body = options.payload(
            request::build_body_for(Variant::Vertex, model, context, options),
            model,
        )?;
        Ok(http::PreparedRequest::new(
            url,
            &body,
            headers,
            options,
            VertexWire { adc },
        ))
    }
}
