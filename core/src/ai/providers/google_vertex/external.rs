//! Workload identity federation (`"type": "external_account"`) and service-account
//! impersonation (`"type": "impersonated_service_account"`, and an external account's
//! `service_account_impersonation_url`), as google-auth-library does them:
//!
//! 1. the subject token is read from `credential_source`: a `file`, or a `url` (with its
//!    `headers`), as text or as a JSON field (`format: {"type": "json",
//!    "subject_token_field_name": ...}`); or made from AWS credentials (`environment_id`
//!    `aws1`: a signed `GetCallerIdentity` request, [`super::subject_aws`]); or printed by an
//!    `executable` ([`super::subject_exec`]);
//! 2. it is exchanged at `token_url` (Google's STS) for a federated access token (RFC 8693
//!    token exchange, scope `cloud-platform`);
//! 3. with an impersonation URL, that token (or the source credentials' token) asks IAM
//!    Credentials' `generateAccessToken` for the service account's token.
//!
//! Every request is bounded by [`EXCHANGE_TIMEOUT`]; subject tokens and tokens never appear in
//! an error (they are redacted from every message).

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::answer::{TOO_LARGE, capped_file, capped_text};
use super::credentials::{CLOUD_PLATFORM_SCOPE, Impersonated};
use super::external_account::{CredentialSource, ExternalAccount, SourceFormat};
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::options::ApiKey;
use crate::ai::providers::http;
use crate::ai::redact::Redactor;

/// The bound on each request of an exchange (subject token URL, STS, IAM Credentials).
pub(crate) const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// Lifetime asked of an impersonated token.
const IMPERSONATED_LIFETIME_SECS: u64 = 3600;

fn auth(message: String) -> ProviderError {
    ProviderError::other(message, Some(ErrorKind::Auth))
}

/// Sends `request` within [`EXCHANGE_TIMEOUT`] and returns the status and body.
async fn exchange(
    request: reqwest::RequestBuilder,
    what: &str,
    redactor: &Redactor,
) -> Result<(u16, String), ProviderError> {
    let sent = tokio::time::timeout(EXCHANGE_TIMEOUT, async {
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = capped_text(response).await?;
        Ok::<_, reqwest::Error>((status, text))
    })
    .await;
    match sent {
        Ok(Ok((status, Some(text)))) => Ok((status, text)),
        Ok(Ok((_, None))) => Err(auth(format!(
            "Could not get a Google access token: {what} failed: {TOO_LARGE}"
        ))),
        Ok(Err(error)) => Err(auth(redactor.redact(&format!(
            "Could not get a Google access token: {what} failed: {}",
            http::transport_error_message(&error)
        )))),
        Err(_) => Err(auth(format!(
            "Could not get a Google access token: {what} did not answer within {} s",
            EXCHANGE_TIMEOUT.as_secs()
        ))),
    }
}

/// The subject token of `source`.
async fn subject_token(
    source: &CredentialSource,
    redactor: &mut Redactor,
) -> Result<String, ProviderError> {
    let text = if let Some(path) = source.file.as_deref().filter(|p| !p.is_empty()) {
        capped_file(path).map_err(|error| {
            auth(format!(
                "Could not read the subject token file {path} of the external account: {error}"
            ))
        })?
    } else if let Some(url) = source.url.as_deref().filter(|u| !u.is_empty()) {
        let mut request = http::client().get(url);
        for (name, value) in source.headers.iter().flatten() {
            if let Some(value) = value.as_str() {
                redactor.add_header(name, value);
                request = request.header(name.as_str(), value);
            }
        }
        let (status, text) =
            exchange(request, &format!("the subject token URL {url}"), redactor).await?;
        if !(200..300).contains(&status) {
            return Err(auth(format!(
                "Could not get the subject token from {url}: {status}"
            )));
        }
        text
    } else {
        return Err(auth(
            "The external account's credential_source names neither a file nor a url".into(),
        ));
    };
    let token = match &source.format {
        Some(SourceFormat {
            kind: Some(kind),
            subject_token_field_name,
        }) if kind == "json" => {
            let field = subject_token_field_name.as_deref().unwrap_or("");
            serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|value| value.get(field)?.as_str().map(str::to_owned))
                .ok_or_else(|| {
                    auth(format!(
                        "The external account's subject token has no JSON field `{field}`"
                    ))
                })?
        }
        _ => text.trim().to_owned(),
    };
    if token.is_empty() {
        return Err(auth("The external account's subject token is empty".into()));
    }
    redactor.add(&token);
    Ok(token)
}

#[cfg(feature = "bedrock")]
async fn aws_subject_token(
    account: &ExternalAccount,
    redactor: &mut Redactor,
) -> Result<String, ProviderError> {
    super::subject_aws::subject_token(
        &account.credential_source,
        &account.audience,
        &account.env,
        redactor,
    )
    .await
}

/// AWS request signing comes with the `bedrock` feature.
#[cfg(not(feature = "bedrock"))]
async fn aws_subject_token(
    _account: &ExternalAccount,
    _redactor: &mut Redactor,
) -> Result<String, ProviderError> {
    Err(auth(
        "An AWS-sourced external account needs pi-agent's `bedrock` feature (AWS signing)".into(),
    ))
}

#[derive(Deserialize)]
struct StsAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// An external account's token: the subject token exchanged at STS, then impersonated when
/// the file says so.
pub(crate) async fn external_token(
    account: &ExternalAccount,
) -> Result<(ApiKey, Duration), ProviderError> {
    let mut redactor = Redactor::default();
    let source = &account.credential_source;
    let subject = if let Some(executable) = &source.executable {
        super::subject_exec::subject_token(executable, account, &account.env, &mut redactor).await?
    } else if source
        .environment_id
        .as_deref()
        .is_some_and(|id| id.starts_with("aws"))
    {
        aws_subject_token(account, &mut redactor).await?
    } else {
        subject_token(source, &mut redactor).await?
    };
    let form = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("audience", account.audience.as_str()),
            ("scope", CLOUD_PLATFORM_SCOPE),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("subject_token", subject.as_str()),
            ("subject_token_type", account.subject_token_type.as_str()),
        ])
        .finish();
    let url = account.token_url();
    let request = http::client()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(form);
    let (status, text) =
        exchange(request, &format!("the token exchange at {url}"), &redactor).await?;
    if !(200..300).contains(&status) {
        return Err(auth(redactor.redact(&format!(
            "Could not exchange the external account's subject token at {url}: {status} {}",
            http::error_body_message(&text)
        ))));
    }
    let answer: StsAnswer = serde_json::from_str(&text)
        .ok()
        .filter(|a: &StsAnswer| !a.access_token.is_empty())
        .ok_or_else(|| auth(format!("The token exchange at {url} gave no access_token")))?;
    redactor.add(&answer.access_token);
    let federated = ApiKey::new(answer.access_token);
    match account
        .service_account_impersonation_url
        .as_deref()
        .filter(|u| !u.is_empty())
    {
        Some(impersonation) => impersonate(impersonation, &[], &federated, &mut redactor).await,
        None => Ok((
            federated,
            Duration::from_secs(answer.expires_in.unwrap_or(3600)),
        )),
    }
}

/// An impersonated account's token: `generateAccessToken` asked with `source`, the source
/// credentials' token (which the caller fetches: see `adc::fetch_token`).
pub(crate) async fn impersonated_token(
    impersonated: &Impersonated,
    source: &ApiKey,
) -> Result<(ApiKey, Duration), ProviderError> {
    let mut redactor = Redactor::default();
    redactor.add(source.expose());
    impersonate(
        &impersonated.url,
        &impersonated.delegates,
        source,
        &mut redactor,
    )
    .await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerateAccessTokenAnswer {
    access_token: String,
}

async fn impersonate(
    url: &str,
    delegates: &[String],
    bearer: &ApiKey,
    redactor: &mut Redactor,
) -> Result<(ApiKey, Duration), ProviderError> {
    let mut body = json!({
        "scope": [CLOUD_PLATFORM_SCOPE],
        "lifetime": format!("{IMPERSONATED_LIFETIME_SECS}s"),
    });
    if !delegates.is_empty() {
        body["delegates"] = json!(delegates);
    }
    let request = http::client()
        .post(url)
        .header("authorization", format!("Bearer {}", bearer.expose()))
        .header("content-type", "application/json")
        .body(body.to_string());
    let (status, text) = exchange(request, &format!("impersonation at {url}"), redactor).await?;
    if !(200..300).contains(&status) {
        return Err(auth(redactor.redact(&format!(
            "Could not impersonate the service account at {url}: {status} {}",
            http::error_body_message(&text)
        ))));
    }
    let answer: GenerateAccessTokenAnswer = serde_json::from_str(&text)
        .ok()
        .filter(|a: &GenerateAccessTokenAnswer| !a.access_token.is_empty())
        .ok_or_else(|| auth(format!("Impersonation at {url} gave no accessToken")))?;
    Ok((
        ApiKey::new(answer.access_token),
        Duration::from_secs(IMPERSONATED_LIFETIME_SECS),
    ))
}
