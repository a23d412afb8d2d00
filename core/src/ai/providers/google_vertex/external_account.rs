//! An `external_account` file (workload identity federation): where its subject token comes
//! from and where that token is exchanged. Shapes only: [`super::external`] does the
//! exchange, and [`super::subject_aws`] / [`super::subject_exec`] make the subject token, all
//! reading these types from here so that none of them imports another's.

use serde::Deserialize;
use serde_json::Value;

use crate::ai::providers::environment::Environment;

/// Google's STS token endpoint (when a file names none).
const GOOGLE_STS_URL: &str = "https://sts.googleapis.com/v1/token";

/// Where the subject token comes from.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct CredentialSource {
    #[serde(default)]
    pub(crate) file: Option<String>,
    /// A URL-sourced token's URL; AWS: the role credentials URL.
    #[serde(default)]
    pub(crate) url: Option<String>,
    #[serde(default)]
    pub(crate) headers: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub(crate) format: Option<SourceFormat>,
    /// `aws1` for an AWS-sourced token.
    #[serde(default)]
    pub(crate) environment_id: Option<String>,
    /// AWS: where the availability zone is read (when no `AWS_REGION`).
    #[serde(default)]
    pub(crate) region_url: Option<String>,
    /// AWS: the `GetCallerIdentity` URL that is signed (`{region}` filled in).
    #[serde(default)]
    pub(crate) regional_cred_verification_url: Option<String>,
    /// AWS: the IMDSv2 session token URL.
    #[serde(default)]
    pub(crate) imdsv2_session_token_url: Option<String>,
    /// A program that prints the token.
    #[serde(default)]
    pub(crate) executable: Option<ExecutableSource>,
}

/// How a file- or URL-sourced subject token is read: as text, or as a JSON field.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct SourceFormat {
    /// `text` (the default) or `json`.
    #[serde(rename = "type", default)]
    pub(crate) kind: Option<String>,
    /// The field holding the token in a `json` answer.
    #[serde(default)]
    pub(crate) subject_token_field_name: Option<String>,
}

/// An `external_account` file.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ExternalAccount {
    pub(crate) audience: String,
    pub(crate) subject_token_type: String,
    #[serde(default)]
    pub(crate) token_url: Option<String>,
    #[serde(default)]
    pub(crate) service_account_impersonation_url: Option<String>,
    pub(crate) credential_source: CredentialSource,
    #[serde(default)]
    pub(crate) quota_project_id: Option<String>,
    /// Where `AWS_*` and `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES` are read (the provider's
    /// environment; set when the file is loaded).
    #[serde(skip)]
    pub(crate) env: Environment,
}

/// `credential_source.executable`: a program that prints the subject token (run by
/// [`super::subject_exec`]).
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct ExecutableSource {
    /// The program and its arguments, split on whitespace.
    pub(crate) command: String,
    /// How long it may run (5 s to 120 s; 30 s if absent).
    #[serde(default)]
    pub(crate) timeout_millis: Option<u64>,
    /// Where it saves its response (read before running it again).
    #[serde(default)]
    pub(crate) output_file: Option<String>,
}

/// The variables an external account's token depends on besides its file: the AWS keys and
/// region a subject token is signed with, and whether executables may run.
const TOKEN_VARIABLES: [&str; 6] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES",
];

impl ExternalAccount {
    /// What the token depends on in the environment ([`TOKEN_VARIABLES`]' values), for the
    /// token cache's key: two providers with one file but other AWS keys (other tenants), or
    /// one refusing executables, must not share a token. The values are secrets: the caller
    /// hashes this.
    pub(crate) fn environment_fingerprint(&self) -> String {
        let mut out = String::new();
        for name in TOKEN_VARIABLES {
            out.push_str(name);
            out.push('=');
            out.push_str(&self.env.var(name).unwrap_or_default());
            out.push('\n');
        }
        out
    }

    /// The service account impersonated (from `.../serviceAccounts/<email>:generateAccessToken`).
    pub(crate) fn impersonated_email(&self) -> Option<&str> {
        let url = self.service_account_impersonation_url.as_deref()?;
        let (_, rest) = url.rsplit_once("/serviceAccounts/")?;
        rest.strip_suffix(":generateAccessToken")
            .filter(|email| !email.is_empty())
    }

    /// The STS endpoint.
    pub(crate) fn token_url(&self) -> &str {
        self.token_url
            .as_deref()
            .filter(|url| !url.is_empty())
            .unwrap_or(GOOGLE_STS_URL)
    }
}
