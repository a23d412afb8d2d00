//! Who signs the request: a Bedrock API key (bearer token) or AWS credentials for SigV4, found
//! in pi's order (the AWS SDK's default chain as pi configures it):
//!
//! 1. `AWS_BEDROCK_SKIP_AUTH=1`: dummy credentials (for proxies that do their own auth); any
//!    bearer token is ignored.
//! 2. A bearer token: the request's, else `AWS_BEARER_TOKEN_BEDROCK`.
//! 3. `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), unless a profile is
//!    named (the request's `profile` or `AWS_PROFILE`), in which case the SDK skips them too.
//! 4. The profile (named, else `default`) in the shared files (`AWS_SHARED_CREDENTIALS_FILE` /
//!    `~/.aws/credentials`, `AWS_CONFIG_FILE` / `~/.aws/config`) with static keys.
//!
//! Steps 3 and 4 are the static part of the AWS SDK's chain, as a provider with a fixed
//! environment ([`BedrockProvider::with_environment`](super::BedrockProvider::with_environment))
//! resolves them: the SDK's providers read the process environment only. A provider that reads
//! the process environment (the default) hands steps 3 and 4 to the SDK's whole chain instead
//! ([`super::chain`]: environment, profiles with SSO, assume-role, web identity and
//! `credential_process`, ECS container and EC2 instance metadata).

use std::fmt;

use thiserror::Error;

use super::profile_file::{Profile, load_profile};
use crate::ai::options::ApiKey;
use crate::ai::providers::environment::Environment;

/// AWS credentials for SigV4. `Debug` shows the access key id only.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct AwsCredentials {
    /// `AKIA...` / `ASIA...` (an identifier, not a secret: it is sent in every request).
    pub access_key_id: String,
    /// The secret key.
    pub secret_access_key: ApiKey,
    /// The session token of temporary credentials.
    pub session_token: Option<ApiKey>,
}

impl AwsCredentials {
    /// The dummy credentials of `AWS_BEDROCK_SKIP_AUTH=1` (pi's values).
    pub(crate) fn dummy() -> Self {
        Self {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: ApiKey::new("dummy-secret-key"),
            session_token: None,
        }
    }

    /// The credentials type the signer takes.
    pub(super) fn to_sdk_credentials(&self) -> aws_credential_types::Credentials {
        aws_credential_types::Credentials::new(
            self.access_key_id.clone(),
            self.secret_access_key.expose().to_owned(),
            self.session_token.as_ref().map(|t| t.expose().to_owned()),
            None,
            "pi-agent",
        )
    }
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field("session_token", &self.session_token)
            .finish()
    }
}

/// How a request authenticates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BedrockAuth {
    /// `Authorization: Bearer <Bedrock API key>`.
    Bearer(ApiKey),
    /// SigV4 with these credentials.
    SigV4(AwsCredentials),
    /// SigV4 with the AWS SDK's credential chain for this profile (the request's; `None`: the
    /// SDK reads `AWS_PROFILE`), resolved when the request runs.
    Chain(Option<String>),
}

/// Why no credentials were found. Never contains a secret.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum CredentialsError {
    /// Nothing configured.
    #[error(
        "No AWS credentials for Amazon Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
         AWS_PROFILE (a profile with static keys in ~/.aws/credentials), or \
         AWS_BEARER_TOKEN_BEDROCK{hint}"
    )]
    NotFound {
        /// Extra words about a source that is set but not supported.
        hint: String,
    },
    /// The named profile is in neither shared file.
    #[error("AWS profile `{0}` was not found in the shared config or credentials file")]
    ProfileNotFound(String),
    /// The profile gets credentials in a way that is not supported here.
    #[error(
        "AWS profile `{profile}` gets its credentials through `{key}`, which pi-agent does not \
         support; export static credentials instead (e.g. `aws configure export-credentials \
         --profile {profile} --format env`) or use a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)"
    )]
    UnsupportedProfile {
        /// The profile.
        profile: String,
        /// The key that selects the unsupported source.
        key: &'static str,
    },
    /// The profile has only one of the two keys.
    #[error("AWS profile `{0}` needs both aws_access_key_id and aws_secret_access_key")]
    IncompleteProfile(String),
}

/// The profile the request names: its own, else `AWS_PROFILE`.
pub(crate) fn named_profile(env: &Environment, requested: Option<&str>) -> Option<String> {
    requested
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .or_else(|| env.var("AWS_PROFILE"))
}

/// Resolves the request's authentication (see the module docs for the order).
pub(crate) fn resolve_auth(
    env: &Environment,
    bearer_token: Option<&ApiKey>,
    profile: Option<&str>,
) -> Result<BedrockAuth, CredentialsError> {
    if env.var("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1") {
        return Ok(BedrockAuth::SigV4(AwsCredentials::dummy()));
    }
    if let Some(token) = bearer_token
        .filter(|token| !token.is_empty())
        .cloned()
        .or_else(|| env.var("AWS_BEARER_TOKEN_BEDROCK").map(ApiKey::new))
    {
        return Ok(BedrockAuth::Bearer(token));
    }
    if matches!(env, Environment::Process) {
        return Ok(BedrockAuth::Chain(
            profile.filter(|name| !name.is_empty()).map(str::to_owned),
        ));
    }
    let named = named_profile(env, profile);
    if named.is_none()
        && let (Some(access_key_id), Some(secret)) = (
            env.var("AWS_ACCESS_KEY_ID"),
            env.var("AWS_SECRET_ACCESS_KEY"),
        )
    {
        return Ok(BedrockAuth::SigV4(AwsCredentials {
            access_key_id,
            secret_access_key: ApiKey::new(secret),
            session_token: env.var("AWS_SESSION_TOKEN").map(ApiKey::new),
        }));
    }
    let name = named.clone().unwrap_or_else(|| "default".to_owned());
    match load_profile(env, &name) {
        Some(found) => from_profile(&name, &found).map(BedrockAuth::SigV4),
        None if named.is_some() => Err(CredentialsError::ProfileNotFound(name)),
        None => Err(CredentialsError::NotFound {
            hint: unsupported_environment_hint(env),
        }),
    }
}

fn from_profile(name: &str, profile: &Profile) -> Result<AwsCredentials, CredentialsError> {
    let unsupported = |key| CredentialsError::UnsupportedProfile {
        profile: name.to_owned(),
        key,
    };
    // An assumed role wins over static keys in the same profile, as in the SDK.
    if profile.contains_key("role_arn") {
        return Err(unsupported("role_arn"));
    }
    match (
        profile.get("aws_access_key_id"),
        profile.get("aws_secret_access_key"),
    ) {
        (Some(id), Some(secret)) if !id.is_empty() && !secret.is_empty() => Ok(AwsCredentials {
            access_key_id: id.clone(),
            secret_access_key: ApiKey::new(secret.clone()),
            session_token: profile
                .get("aws_session_token")
                .filter(|token| !token.is_empty())
                .map(|token| ApiKey::new(token.clone())),
        }),
        (None, None) => {
            for key in [
                "sso_session",
                "sso_start_url",
                "credential_process",
                "web_identity_token_file",
            ] {
                if profile.contains_key(key) {
                    return Err(unsupported(key));
                }
            }
            Err(CredentialsError::IncompleteProfile(name.to_owned()))
        }
        _ => Err(CredentialsError::IncompleteProfile(name.to_owned())),
    }
}

fn unsupported_environment_hint(env: &Environment) -> String {
    let set: Vec<&str> = [
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ]
    .into_iter()
    .filter(|name| env.var(name).is_some())
    .collect();
    if set.is_empty() {
        String::new()
    } else {
        format!(
            " ({} is set, but container and web-identity credentials are not supported)",
            set.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> Environment {
        Environment::Fixed(
            vars.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }

    fn sigv4(auth: BedrockAuth) -> AwsCredentials {
        match auth {
            BedrockAuth::SigV4(credentials) => credentials,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn skip_auth_wins_and_bearer_comes_next() {
        let token = ApiKey::new("bedrock-api-key");
        let all = env(&[
            ("AWS_BEDROCK_SKIP_AUTH", "1"),
            ("AWS_BEARER_TOKEN_BEDROCK", "from-env"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]);
        assert_eq!(
            sigv4(resolve_auth(&all, Some(&token), None).unwrap()),
            AwsCredentials::dummy()
        );
        let bearer = env(&[
            ("AWS_BEARER_TOKEN_BEDROCK", "from-env"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]);
        assert_eq!(
            resolve_auth(&bearer, Some(&token), None).unwrap(),
            BedrockAuth::Bearer(token)
        );
        assert_eq!(
            resolve_auth(&bearer, None, None).unwrap(),
            BedrockAuth::Bearer(ApiKey::new("from-env"))
        );
    }

    #[test]
    fn environment_keys_unless_a_profile_is_named() {
        let vars = [
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
            ("HOME", "/nonexistent-home"),
        ];
        let credentials = sigv4(resolve_auth(&env(&vars), None, None).unwrap());
        assert_eq!(credentials.access_key_id, "AKID");
        assert_eq!(credentials.session_token, Some(ApiKey::new("token")));
        // A named profile makes the SDK skip the environment keys.
        assert_eq!(
            resolve_auth(&env(&vars), None, Some("work")).unwrap_err(),
            CredentialsError::ProfileNotFound("work".into())
        );
    }

    #[test]
    fn profiles_from_the_shared_files() {
        let dir = std::env::temp_dir().join(format!("pi-bedrock-profiles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let credentials = dir.join("credentials");
        let config = dir.join("config");
        std::fs::write(
            &credentials,
            "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n\
             [work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = s2\n\
             aws_session_token = t2\n[half]\naws_access_key_id = X\n",
        )
        .unwrap();
        std::fs::write(
            &config,
            "[profile work]\nregion = eu-west-3\n[profile sso]\nsso_session = corp\n\
             [profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = default\n",
        )
        .unwrap();
        let files = |extra: &[(&str, &str)]| {
            let mut vars = vec![
                ("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap()),
                ("AWS_CONFIG_FILE", config.to_str().unwrap()),
            ];
            vars.extend_from_slice(extra);
            env(&vars)
        };
        let default = sigv4(resolve_auth(&files(&[]), None, None).unwrap());
        assert_eq!(default.access_key_id, "AKIDDEFAULT");
        let work = sigv4(resolve_auth(&files(&[("AWS_PROFILE", "work")]), None, None).unwrap());
        assert_eq!(work.access_key_id, "AKIDWORK");
        assert_eq!(work.session_token, Some(ApiKey::new("t2")));
        // The request's profile wins over AWS_PROFILE.
        let chosen = resolve_auth(&files(&[("AWS_PROFILE", "nope")]), None, Some("work"));
        assert_eq!(sigv4(chosen.unwrap()).access_key_id, "AKIDWORK");
        let error = resolve_auth(&files(&[]), None, Some("sso")).unwrap_err();
        assert_eq!(
            error,
            CredentialsError::UnsupportedProfile {
                profile: "sso".into(),
                key: "sso_session"
            }
        );
        assert!(
            error
                .to_string()
                .contains("export-credentials --profile sso")
        );
        assert!(matches!(
            resolve_auth(&files(&[]), None, Some("role")).unwrap_err(),
            CredentialsError::UnsupportedProfile {
                key: "role_arn",
                ..
            }
        ));
        assert_eq!(
            resolve_auth(&files(&[]), None, Some("half")).unwrap_err(),
            CredentialsError::IncompleteProfile("half".into())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nothing_configured_names_the_variables() {
        let error = resolve_auth(
            &env(&[
                ("HOME", "/nonexistent-home"),
                ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token"),
            ]),
            None,
            None,
        )
        .unwrap_err();
        let text = error.to_string();
        assert!(text.contains("AWS_ACCESS_KEY_ID"), "{text}");
        assert!(
            text.contains("AWS_WEB_IDENTITY_TOKEN_FILE is set"),
            "{text}"
        );
    }

    #[test]
    fn secrets_never_print() {
        let credentials = AwsCredentials {
            access_key_id: "AKID".into(),
            secret_access_key: ApiKey::new("very-secret"),
            session_token: Some(ApiKey::new("session-secret")),
        };
        let env = env(&[("AWS_SECRET_ACCESS_KEY", "very-secret")]);
        let shown = format!(
            "{credentials:?} {env:?} {:?}",
            BedrockAuth::Bearer(ApiKey::new("bearer-secret"))
        );
        for secret in ["very-secret", "session-secret", "bearer-secret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("AKID"));
    }
}
