//! The environment variables read per request. Issue 9: an environment key goes only to its
//! vendor's hosts (and loopback servers), not to whatever base URL a model carries. And
//! `PI_CACHE_RETENTION=long` is the default retention of a request that names none (pi's
//! rule). One test in its own binary, because it sets environment variables.

use pi_agent::ai::{ApiKey, CacheRetention, Model, StopReason, StreamOptions};
use pi_mock_server::MockServer;
use serde_json::json;

mod reliability_support;
use reliability_support::{Api, run};

const ENV_KEY: &str = "sk-env-key-0123456789";

/// (api, provider, variable) for the vendors the issue names.
const VENDORS: [(Api, &str, &str); 5] = [
    (Api::Completions, "groq", "GROQ_API_KEY"),
    (Api::Responses, "openai", "OPENAI_API_KEY"),
    (Api::Anthropic, "anthropic", "ANTHROPIC_API_KEY"),
    (Api::Google, "google", "GEMINI_API_KEY"),
    (Api::Mistral, "mistral", "MISTRAL_API_KEY"),
];

fn vendor_model(api: Api, provider: &str, base_url: &str) -> Model {
    let mut model = api.model_at(base_url);
    model.provider = provider.to_owned();
    model
}

#[tokio::test]
async fn environment_keys_go_only_to_their_vendors_hosts() {
    // SAFETY: this binary has one test and it runs on a current-thread runtime, so nothing
    // reads the environment while it changes.
    unsafe {
        for (_, _, variable) in VENDORS {
            std::env::set_var(variable, ENV_KEY);
        }
        std::env::remove_var("PI_ENV_KEY_HOSTS");
    }

    // A model JSON pointing a vendor's provider at some other host gets no key, and the error
    // says why and how to send one anyway; nothing is sent. (`0.0.0.0` reaches this machine on
    // Linux without being a loopback name, so it plays "some other host" without a network.)
    for (api, provider, variable) in VENDORS {
        let server = MockServer::start().await.unwrap();
        let model = vendor_model(api, provider, &elsewhere(&server));
        let (_, message) = run(&model, &StreamOptions::default()).await;
        let error = message.error_message.clone().unwrap_or_default();
        assert_eq!(message.stop_reason, StopReason::Error);
        assert!(error.contains(variable), "{provider}: {error}");
        assert!(error.contains("`0.0.0.0`"), "{provider}: {error}");
        assert!(error.contains("PI_ENV_KEY_HOSTS"), "{provider}: {error}");
        assert!(!error.contains(ENV_KEY));
        assert!(server.requests().is_empty(), "{provider}: nothing was sent");
    }

    // A loopback server (a local proxy, the tests' mock server) gets the environment key.
    for (api, provider, _) in VENDORS {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"sse": api.answer()}));
        let model = vendor_model(api, provider, &server.base_url());
        let (_, message) = run(&model, &StreamOptions::default()).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{provider}: {message:?}"
        );
        assert!(carries_env_key(&server), "{provider}");
    }

    // A key passed explicitly goes wherever the caller sends it.
    let server = MockServer::start().await.unwrap();
    server.push(json!({"sse": Api::Completions.answer()}));
    let model = vendor_model(Api::Completions, "groq", &elsewhere(&server));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-explicit-key")),
        ..StreamOptions::default()
    };
    let (_, message) = run(&model, &options).await;
    assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-explicit-key")
    );

    // The user may list more hosts for environment keys.
    // SAFETY: as above.
    unsafe { std::env::set_var("PI_ENV_KEY_HOSTS", "other.example, 0.0.0.0") };
    for (api, provider, _) in VENDORS {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"sse": api.answer()}));
        let model = vendor_model(api, provider, &elsewhere(&server));
        let (_, message) = run(&model, &StreamOptions::default()).await;
        assert_eq!(
            message.stop_reason,
            StopReason::Stop,
            "{provider}: {message:?}"
        );
        assert!(carries_env_key(&server), "{provider}");
    }
    // SAFETY: as above.
    unsafe { std::env::remove_var("PI_ENV_KEY_HOSTS") };

    // `PI_CACHE_RETENTION=long`, read at each request: long retention for a request that names
    // none ("24h" in a chat-completions body, a one-hour marker for Anthropic), while one that
    // names a retention keeps it; unset, the default is short.
    let retention_of = async |api: Api, retention: Option<CacheRetention>| {
        let server = MockServer::start().await.unwrap();
        server.push(json!({"sse": api.answer()}));
        let options = StreamOptions {
            api_key: Some(ApiKey::new("sk-explicit-key")),
            cache_retention: retention,
            ..StreamOptions::default()
        };
        let (_, message) = run(&api.model_at(&server.base_url()), &options).await;
        assert_eq!(message.stop_reason, StopReason::Stop, "{message:?}");
        let body = server.requests()[0].body.clone();
        match api {
            Api::Completions => body.get("prompt_cache_retention").cloned(),
            // The marker on the last user message's last block.
            _ => body["messages"][0]["content"][0]
                .get("cache_control")
                .cloned(),
        }
    };
    // SAFETY: as above.
    unsafe { std::env::set_var("PI_CACHE_RETENTION", "long") };
    assert_eq!(
        retention_of(Api::Completions, None).await,
        Some(json!("24h"))
    );
    assert_eq!(
        retention_of(Api::Anthropic, None).await,
        Some(json!({"type": "ephemeral", "ttl": "1h"}))
    );
    let short = Some(CacheRetention::Short);
    assert_eq!(retention_of(Api::Completions, short).await, None);
    assert_eq!(
        retention_of(Api::Anthropic, short).await,
        Some(json!({"type": "ephemeral"}))
    );
    // SAFETY: as above.
    unsafe { std::env::remove_var("PI_CACHE_RETENTION") };
    assert_eq!(retention_of(Api::Completions, None).await, None);
    assert_eq!(
        retention_of(Api::Anthropic, None).await,
        Some(json!({"type": "ephemeral"}))
    );
}

/// The server's URL under a host name that is not loopback.
fn elsewhere(server: &MockServer) -> String {
    format!("http://0.0.0.0:{}/v1", server.addr().port())
}

fn carries_env_key(server: &MockServer) -> bool {
    server.requests()[0]
        .headers
        .iter()
        .any(|(_, value)| value.contains(ENV_KEY))
}
