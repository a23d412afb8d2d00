//! The credentials an Application Default Credentials file holds, one variant per `"type"`,
//! parsed and shown without their secrets. [`super::adc`] finds the file and turns these into
//! tokens; the exchanges it calls ([`super::external`]) read these shapes too, which is why
//! they live here, in a module that imports none of them.
//!
//! Secrets (the private key, the refresh token, the client secret) never appear in `Debug`
//! output or in a [`CredentialsFileError`].

use std::fmt;

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use super::external_account::ExternalAccount;
use crate::ai::providers::environment::Environment;
use crate::ai::redact::Redactor;
use crate::ai::short_hash::short_hash;

/// Google's token endpoint (when a file names none).
pub(crate) const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// The scope Vertex needs.
pub(crate) const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// A service account key file.
#[derive(Clone, Deserialize)]
pub(crate) struct ServiceAccount {
    pub(crate) client_email: String,
    pub(crate) private_key: String,
    #[serde(default)]
    pub(crate) private_key_id: Option<String>,
    #[serde(default)]
    pub(crate) token_uri: Option<String>,
    #[serde(default)]
    quota_project_id: Option<String>,
}

/// The file `gcloud auth application-default login` writes.
#[derive(Clone, Deserialize)]
pub(crate) struct AuthorizedUser {
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub(crate) refresh_token: String,
    #[serde(default)]
    token_uri: Option<String>,
    #[serde(default)]
    quota_project_id: Option<String>,
}

/// Credentials read from an ADC file.
#[derive(Clone)]
pub(crate) enum Credentials {
    /// `"type": "service_account"`.
    ServiceAccount(ServiceAccount),
    /// `"type": "authorized_user"`.
    AuthorizedUser(AuthorizedUser),
    /// The metadata server at this origin (`http://host[:port]`).
    Metadata(String),
    /// `"type": "external_account"`.
    External(Box<ExternalAccount>),
    /// `"type": "impersonated_service_account"`.
    Impersonated(Box<Impersonated>),
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Identifiers only: the key, secret and refresh token stay hidden.
        match self {
            Self::ServiceAccount(account) => f
                .debug_struct("ServiceAccount")
                .field("client_email", &account.client_email)
                .field("token_uri", &account.token_uri())
                .finish_non_exhaustive(),
            Self::AuthorizedUser(user) => f
                .debug_struct("AuthorizedUser")
                .field("client_id", &user.client_id)
                .field("token_uri", &user.token_uri())
                .finish_non_exhaustive(),
            Self::Metadata(origin) => f.debug_tuple("Metadata").field(origin).finish(),
            Self::External(account) => f
                .debug_struct("ExternalAccount")
                .field("audience", &account.audience)
                .field("token_url", &account.token_url())
                .finish_non_exhaustive(),
            Self::Impersonated(impersonated) => f
                .debug_struct("Impersonated")
                .field("url", &impersonated.url)
                .field("source", &impersonated.source)
                .finish_non_exhaustive(),
        }
    }
}

impl ServiceAccount {
    /// The endpoint its assertion is exchanged at (the assertion's audience).
    pub(crate) fn token_uri(&self) -> &str {
        self.token_uri
            .as_deref()
            .filter(|uri| !uri.is_empty())
            .unwrap_or(GOOGLE_TOKEN_URI)
    }
}

impl AuthorizedUser {
    fn token_uri(&self) -> &str {
        self.token_uri
            .as_deref()
            .filter(|uri| !uri.is_empty())
            .unwrap_or(GOOGLE_TOKEN_URI)
    }
}

impl Credentials {
    /// Parses an ADC file's JSON.
    pub(crate) fn parse(text: &str) -> Result<Self, CredentialsFileError> {
        let value: Value = serde_json::from_str(text).map_err(CredentialsFileError::NotJson)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let missing = |error| CredentialsFileError::Incomplete {
            kind: kind.clone(),
            error,
        };
        match kind.as_str() {
            "service_account" => serde_json::from_value(value)
                .map(Self::ServiceAccount)
                .map_err(missing),
            "authorized_user" => serde_json::from_value(value)
                .map(Self::AuthorizedUser)
                .map_err(missing),
            "external_account" => serde_json::from_value(value)
                .map(|account| Self::External(Box::new(account)))
                .map_err(missing),
            "impersonated_service_account" => {
                let url = value
                    .get("service_account_impersonation_url")
                    .and_then(Value::as_str)
                    .filter(|url| !url.is_empty())
                    .ok_or(CredentialsFileError::ImpersonatedWithout(
                        "service_account_impersonation_url",
                    ))?
                    .to_owned();
                let source = value.get("source_credentials").ok_or(
                    CredentialsFileError::ImpersonatedWithout("source_credentials"),
                )?;
                let source = Self::parse(&source.to_string())
                    .map_err(|why| CredentialsFileError::Source(Box::new(why)))?;
                let delegates = value
                    .get("delegates")
                    .and_then(Value::as_array)
                    .map(|list| {
                        list.iter()
                            .filter_map(|d| d.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                let quota_project_id = value
                    .get("quota_project_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Ok(Self::Impersonated(Box::new(Impersonated {
                    url,
                    delegates,
                    source,
                    quota_project_id,
                })))
            }
            "" => Err(CredentialsFileError::NoType),
            _ => Err(CredentialsFileError::Unsupported(kind)),
        }
    }

    /// These credentials reading `env` (an external account's `AWS_*` variables and
    /// `GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES`).
    pub(crate) fn with_environment(self, env: &Environment) -> Self {
        match self {
            Self::External(mut account) => {
                account.env = env.clone();
                Self::External(account)
            }
            Self::Impersonated(mut impersonated) => {
                impersonated.source = impersonated.source.with_environment(env);
                Self::Impersonated(impersonated)
            }
            other => other,
        }
    }

    /// The project billed for quota (`x-goog-user-project`), if the file names one.
    pub(crate) fn quota_project(&self) -> Option<&str> {
        match self {
            Self::ServiceAccount(account) => account.quota_project_id.as_deref(),
            Self::AuthorizedUser(user) => user.quota_project_id.as_deref(),
            Self::Metadata(_) => None,
            Self::External(account) => account.quota_project_id.as_deref(),
            Self::Impersonated(impersonated) => impersonated.quota_project_id.as_deref(),
        }
        .filter(|project| !project.is_empty())
    }

    /// The endpoint tokens come from.
    pub(crate) fn token_uri(&self) -> &str {
        match self {
            Self::ServiceAccount(account) => account.token_uri(),
            Self::AuthorizedUser(user) => user.token_uri(),
            Self::Metadata(origin) => origin,
            Self::External(account) => account.token_url(),
            Self::Impersonated(impersonated) => &impersonated.url,
        }
    }

    /// Identifies these credentials in the token cache (secrets only hashed).
    pub(crate) fn cache_key(&self) -> String {
        match self {
            Self::ServiceAccount(account) => format!(
                "sa|{}|{}|{}",
                account.token_uri(),
                account.client_email,
                short_hash(&account.private_key)
            ),
            Self::AuthorizedUser(user) => format!(
                "user|{}|{}|{}",
                user.token_uri(),
                user.client_id,
                short_hash(&user.refresh_token)
            ),
            Self::Metadata(origin) => format!("metadata|{origin}"),
            // The account's `Debug` shows its environment's names, not its values: those go
            // in hashed apart.
            Self::External(account) => format!(
                "external|{}|{}|{}|{}",
                account.token_url(),
                account.audience,
                short_hash(&format!("{account:?}")),
                short_hash(&account.environment_fingerprint())
            ),
            Self::Impersonated(impersonated) => format!(
                "impersonated|{}|{}",
                impersonated.url,
                impersonated.source.cache_key()
            ),
        }
    }

    /// Every secret of these credentials, for hiding them in messages.
    pub(crate) fn redactor(&self) -> Redactor {
        let mut redactor = Redactor::default();
        match self {
            Self::ServiceAccount(account) => {
                redactor.add(&account.private_key);
                for line in account.private_key.lines() {
                    redactor.add(line);
                }
            }
            Self::AuthorizedUser(user) => {
                redactor.add(&user.client_secret);
                redactor.add(&user.refresh_token);
            }
            Self::Metadata(_) | Self::External(_) => {}
            Self::Impersonated(impersonated) => return impersonated.source.redactor(),
        }
        redactor
    }
}

/// An `impersonated_service_account` file: source credentials and the account to become.
#[derive(Clone, Debug)]
pub(crate) struct Impersonated {
    pub(crate) url: String,
    pub(crate) delegates: Vec<String>,
    pub(crate) source: Credentials,
    pub(crate) quota_project_id: Option<String>,
}

/// Why an ADC file's JSON is not usable credentials. The messages name the file's `type` and
/// the field at fault; serde quotes a value only when its type is wrong, and every secret
/// here is a string field, so a secret where it belongs is never quoted.
#[derive(Debug, Error)]
pub(crate) enum CredentialsFileError {
    /// The text is not JSON.
    #[error("not JSON ({0})")]
    NotJson(serde_json::Error),
    /// The JSON has no `type`.
    #[error("no `type` field")]
    NoType,
    /// A `type` this crate does not implement.
    #[error(
        "credentials of type `{0}` are not supported (use a service account key, \
         `gcloud auth application-default login`, or an API key)"
    )]
    Unsupported(String),
    /// A known `type` whose fields do not fit it (a field missing or of the wrong type).
    #[error("a {kind} file without {error}")]
    Incomplete {
        /// The file's `type`.
        kind: String,
        /// What serde found wrong.
        error: serde_json::Error,
    },
    /// An `impersonated_service_account` file without this field.
    #[error("an impersonated_service_account file without {0}")]
    ImpersonatedWithout(&'static str),
    /// An `impersonated_service_account` file whose `source_credentials` are not usable.
    #[error("its source_credentials: {0}")]
    Source(Box<CredentialsFileError>),
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE_ACCOUNT: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/google-vertex/service_account.json"
    ));
    const AUTHORIZED_USER: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/google-vertex/authorized_user.json"
    ));

    #[test]
    fn files_parse_and_debug_hides_secrets() {
        let account = Credentials::parse(SERVICE_ACCOUNT).unwrap();
        let user = Credentials::parse(AUTHORIZED_USER).unwrap();
        assert_eq!(user.quota_project(), Some("pi-quota-project"));
        assert_eq!(user.token_uri(), GOOGLE_TOKEN_URI);
        assert_eq!(account.quota_project(), None);
        let shown = format!("{account:?} {user:?}");
        for secret in [
            "PRIVATE KEY",
            "pi-test-client-secret",
            "pi-test-refresh-token",
        ] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("pi-test@pi-test-project.iam.gserviceaccount.com"));
        for (text, why) in [
            ("{", "not JSON"),
            ("{}", "no `type` field"),
            (r#"{"type":"external_account"}"#, "missing field `audience`"),
            (
                r#"{"type":"authorized_user","client_id":"a"}"#,
                "without missing field",
            ),
        ] {
            let error = Credentials::parse(text).unwrap_err().to_string();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
