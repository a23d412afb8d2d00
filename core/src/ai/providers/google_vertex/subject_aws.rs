//! An AWS-sourced subject token (`credential_source.environment_id` `"aws1"`), as Google's
//! workload identity federation specifies it (google-auth-library's `AwsClient`):
//!
//! 1. with `imdsv2_session_token_url`, an IMDSv2 session token (`PUT`, TTL 300 s) for the
//!    metadata calls below — only when one of them is needed;
//! 2. the region: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the availability zone at
//!    `region_url` without its last letter;
//! 3. the credentials: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`),
//!    else the role named at `url` and that role's keys at `url/<role>`;
//! 4. a SigV4-signed `POST` of STS `GetCallerIdentity` (`regional_cred_verification_url`,
//!    `{region}` filled in, header `x-goog-cloud-target-resource` = the audience), which is
//!    not sent: its URL, method and headers, as JSON, URL-encoded, are the subject token
//!    Google's STS verifies with AWS.
//!
//! Every metadata call is bounded by [`METADATA_TIMEOUT`]; the keys and tokens never appear in
//! an error.

use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::json;

use super::answer::{TOO_LARGE, capped_text};
use super::external_account::CredentialSource;
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::options::ApiKey;
use crate::ai::providers::bedrock::credentials::AwsCredentials;
use crate::ai::providers::bedrock::sigv4::{SignableInput, sign_request};
use crate::ai::providers::environment::Environment;
use crate::ai::providers::http;
use crate::ai::redact::Redactor;

/// The bound on each metadata call.
pub(crate) const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// The verification URL when the file names none (Google's default).
const DEFAULT_VERIFICATION_URL: &str =
    "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15";

fn auth(message: String) -> ProviderError {
    ProviderError::other(message, Some(ErrorKind::Auth))
}

/// `GET`/`PUT` `url` with `headers` within [`METADATA_TIMEOUT`]; the body of a 2xx answer.
async fn metadata(
    method: reqwest::Method,
    url: &str,
    headers: &[(&str, &str)],
    what: &str,
) -> Result<String, ProviderError> {
    let mut request = http::client().request(method, url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let sent = tokio::time::timeout(METADATA_TIMEOUT, async {
        let response = request.send().await?;
        let status = response.status().as_u16();
        Ok::<_, reqwest::Error>((status, capped_text(response).await?))
    })
    .await;
    match sent {
        Ok(Ok((status, Some(text)))) if (200..300).contains(&status) => Ok(text),
        Ok(Ok((_, None))) => Err(auth(format!(
            "Could not get the AWS {what} for the external account from {url}: {TOO_LARGE}"
        ))),
        Ok(Ok((status, _))) => Err(auth(format!(
            "Could not get the AWS {what} for the external account from {url}: {status}"
        ))),
        Ok(Err(error)) => Err(auth(format!(
            "Could not get the AWS {what} for the external account from {url}: {}",
            http::transport_error_message(&error)
        ))),
        Err(_) => Err(auth(format!(
            "Could not get the AWS {what} for the external account: {url} did not answer \
             within {} s",
            METADATA_TIMEOUT.as_secs()
        ))),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RoleCredentials {
    access_key_id: String,
    secret_access_key: String,
    #[serde(default)]
    token: Option<String>,
}

/// The subject token for `audience` (see the module docs).
pub(crate) async fn subject_token(
    source: &CredentialSource,
    audience: &str,
    env: &Environment,
    redactor: &mut Redactor,
) -> Result<String, ProviderError> {
    if source.environment_id.as_deref() != Some("aws1") {
        return Err(auth(format!(
            "The external account's environment_id `{}` is not supported (only aws1)",
            source.environment_id.as_deref().unwrap_or_default()
        )));
    }
    let region = env
        .var("AWS_REGION")
        .or_else(|| env.var("AWS_DEFAULT_REGION"));
    let keys = match (
        env.var("AWS_ACCESS_KEY_ID"),
        env.var("AWS_SECRET_ACCESS_KEY"),
    ) {
        (Some(id), Some(secret)) => Some(AwsCredentials {
            access_key_id: id,
            secret_access_key: ApiKey::new(secret),
            session_token: env.var("AWS_SESSION_TOKEN").map(ApiKey::new),
        }),
        _ => None,
    };
    // IMDSv2: a session token, only when metadata must be asked.
    let session = match source.imdsv2_session_token_url.as_deref() {
        Some(url) if !url.is_empty() && (region.is_none() || keys.is_none()) => {
            let token = metadata(
                reqwest::Method::PUT,
                url,
                &[("x-aws-ec2-metadata-token-ttl-seconds", "300")],
                "metadata session token",
            )
            .await?;
            redactor.add(&token);
            Some(token)
        }
        _ => None,
    };
    let session_header: Vec<(&str, &str)> = session
        .as_deref()
        .map(|token| vec![("x-aws-ec2-metadata-token", token)])
        .unwrap_or_default();
    let region = match region {
        Some(region) => region,
        None => {
            let url = source
                .region_url
                .as_deref()
                .filter(|u| !u.is_empty())
                .ok_or_else(|| {
                    auth(
                        "The external account needs AWS_REGION or credential_source.region_url"
                            .into(),
                    )
                })?;
            let zone = metadata(reqwest::Method::GET, url, &session_header, "region").await?;
            let zone = zone.trim();
            // `us-east-2b` is in `us-east-2`.
            let mut chars = zone.chars();
            chars.next_back();
            chars.as_str().to_owned()
        }
    };
    if region.is_empty()
        || !region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(auth(format!(
            "The AWS region `{region}` of the external account is not valid"
        )));
    }
    let keys = match keys {
        Some(keys) => keys,
        None => {
            let url = source
                .url
                .as_deref()
                .filter(|u| !u.is_empty())
                .ok_or_else(|| {
                    auth(
                        "The external account needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                         or credential_source.url"
                            .into(),
                    )
                })?
                .trim_end_matches('/');
            let role = metadata(reqwest::Method::GET, url, &session_header, "role name").await?;
            let role = role.trim();
            let text = metadata(
                reqwest::Method::GET,
                &format!("{url}/{role}"),
                &session_header,
                "role credentials",
            )
            .await?;
            let found: RoleCredentials = serde_json::from_str(&text).map_err(|_| {
                auth(format!(
                    "The AWS role credentials at {url}/{role} are not the expected JSON"
                ))
            })?;
            redactor.add(&found.secret_access_key);
            if let Some(token) = &found.token {
                redactor.add(token);
            }
            AwsCredentials {
                access_key_id: found.access_key_id,
                secret_access_key: ApiKey::new(found.secret_access_key),
                session_token: found.token.map(ApiKey::new),
            }
        }
    };
    redactor.add(keys.secret_access_key.expose());
    if let Some(token) = &keys.session_token {
        redactor.add(token.expose());
    }
    let url = source
        .regional_cred_verification_url
        .as_deref()
        .filter(|u| !u.is_empty())
        .unwrap_or(DEFAULT_VERIFICATION_URL)
        .replace("{region}", &region);
    let host = reqwest::Url::parse(&url)
        .ok()
        .and_then(|parsed| parsed.host_str().map(str::to_owned))
        .ok_or_else(|| auth(format!("The AWS verification URL `{url}` has no host")))?;
    let signed = sign_request(
        &keys,
        &SignableInput {
            method: "POST",
            url: &url,
            headers: &[("x-goog-cloud-target-resource", audience)],
            body: b"",
            region: &region,
            service: "sts",
            time: SystemTime::now(),
            content_sha256_header: false,
        },
    )
    .map_err(|error| auth(error.to_string()))?;
    let mut headers = vec![
        json!({"key": "x-goog-cloud-target-resource", "value": audience}),
        json!({"key": "host", "value": host}),
    ];
    for (name, value) in signed {
        let key = if name == "authorization" {
            "Authorization".to_owned()
        } else {
            name
        };
        headers.push(json!({"key": key, "value": value}));
    }
    let request = json!({"url": url, "method": "POST", "headers": headers});
    // URL-encoded as `encodeURIComponent` does (google-auth-library's encoding).
    let token = http::path_segment("subject token", &request.to_string())?;
    redactor.add(&token);
    Ok(token)
}
