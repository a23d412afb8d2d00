//! Credentials: pi's JSON shape, the `auth.json` helpers, and tokens kept out of every
//! `Debug`, `Display` and error.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pi_agent::ai::oauth::{
    AuthCredential, AuthData, OAuthApiKey, OAuthCredentials, OAuthError, Secret, oauth_credentials,
    read_auth_file, write_auth_file,
};

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("pi-oauth-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// An `auth.json` as pi's coding agent writes it.
const PI_AUTH_JSON: &str = r#"{
  "anthropic": {
    "type": "oauth",
    "refresh": "sk-ant-ort01-secret-refresh",
    "access": "sk-ant-oat01-secret-access",
    "expires": 1767225600000
  },
  "github-copilot": {
    "type": "oauth",
    "refresh": "ghu_secretgithub",
    "access": "tid=1;exp=2;proxy-ep=proxy.individual.githubcopilot.com;",
    "expires": 1.7672256e12,
    "enterpriseUrl": "company.ghe.com"
  },
  "openai-codex": {
    "type": "oauth",
    "access": "eyJ.secret.jwt",
    "refresh": "rt_secret",
    "expires": 1767225600000.4,
    "accountId": "acc-1"
  },
  "openai": {
    "type": "api_key",
    "key": "sk-secret-key"
  }
}"#;

#[test]
fn reads_what_pi_writes() {
    let data: AuthData = serde_json::from_str(PI_AUTH_JSON).unwrap();
    let oauth = oauth_credentials(&data);
    assert_eq!(
        oauth.keys().collect::<Vec<_>>(),
        ["anthropic", "github-copilot", "openai-codex"]
    );
    assert_eq!(oauth["anthropic"].expires, 1_767_225_600_000);
    assert_eq!(oauth["github-copilot"].expires, 1_767_225_600_000);
    assert_eq!(
        oauth["github-copilot"].enterprise_url(),
        Some("company.ghe.com")
    );
    assert_eq!(oauth["openai-codex"].account_id(), Some("acc-1"));
    assert_eq!(oauth["openai-codex"].expires, 1_767_225_600_000);
    assert_eq!(
        data["openai"],
        AuthCredential::ApiKey {
            key: Secret::new("sk-secret-key")
        }
    );
    // Written back, an entry keeps pi's keys with `type` first.
    let json = serde_json::to_string(&data["openai-codex"]).unwrap();
    assert_eq!(
        json,
        r#"{"type":"oauth","refresh":"rt_secret","access":"eyJ.secret.jwt","expires":1767225600000,"accountId":"acc-1"}"#
    );
}

#[test]
fn nothing_prints_a_token() {
    let data: AuthData = serde_json::from_str(PI_AUTH_JSON).unwrap();
    let credentials = oauth_credentials(&data).remove("openai-codex").unwrap();
    let key = OAuthApiKey {
        api_key: credentials.access.to_api_key(),
        new_credentials: credentials.clone(),
        refreshed: true,
    };
    let printed = [
        format!("{data:?}"),
        format!("{credentials:?}"),
        format!("{credentials:#?}"),
        format!("{key:?}"),
        format!("{} {:?}", credentials.access, credentials.refresh),
    ];
    for text in printed {
        assert!(!text.contains("secret"), "{text}");
    }
    assert!(format!("{credentials:?}").contains("accountId"));
    assert!(format!("{credentials:?}").contains("1767225600000"));
}

#[test]
fn expiry_is_inclusive() {
    let credentials = OAuthCredentials::new("a", "r", 1_000);
    assert!(!credentials.is_expired(999));
    assert!(credentials.is_expired(1_000));
}

#[test]
fn auth_file_round_trip_is_atomic_and_private() {
    let scratch = Scratch::new("round-trip");
    let path = scratch.0.join("nested/dir/auth.json");
    assert!(read_auth_file(&path).unwrap().is_empty());

    let mut data: AuthData = BTreeMap::new();
    let mut codex = OAuthCredentials::new("access-1", "refresh-1", 42);
    codex.extra.insert("accountId".into(), "acc".into());
    data.insert("openai-codex".into(), AuthCredential::OAuth(codex));
    data.insert(
        "openai".into(),
        AuthCredential::ApiKey {
            key: Secret::new("sk-1"),
        },
    );
    write_auth_file(&path, &data).unwrap();
    assert_eq!(read_auth_file(&path).unwrap(), data);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "{\n  \"openai\": {\n    \"type\": \"api_key\",\n    \"key\": \"sk-1\"\n  },\n  \
         \"openai-codex\": {\n    \"type\": \"oauth\",\n    \"refresh\": \"refresh-1\",\n    \
         \"access\": \"access-1\",\n    \"expires\": 42,\n    \"accountId\": \"acc\"\n  }\n}\n"
    );
    #[cfg(unix)]
    {
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&scratch.0.join("nested")), 0o700);
    }

    // Overwriting a world-readable file leaves a private one, and no temporary files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    data.remove("openai");
    write_auth_file(&path, &data).unwrap();
    assert_eq!(read_auth_file(&path).unwrap(), data);
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    let entries: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, ["auth.json"]);
}

#[test]
fn a_broken_auth_file_is_a_clear_error_without_its_content() {
    let scratch = Scratch::new("broken");
    let path = scratch.0.join("auth.json");
    std::fs::write(
        &path,
        r#"{"anthropic": {"type": "oauth", "access": "secret-token""#,
    )
    .unwrap();
    let error = read_auth_file(&path).unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, OAuthError::AuthFileFormat { .. }),
        "{message}"
    );
    assert!(message.contains("is not a valid auth file"), "{message}");
    assert!(!message.contains("secret"), "{message}");

    let directory = scratch.0.join("a-directory");
    std::fs::create_dir(&directory).unwrap();
    let error = read_auth_file(&directory).unwrap_err();
    assert!(
        matches!(error, OAuthError::AuthFile { action: "read", .. }),
        "{error}"
    );
}
