//! The built-in model catalog and pi's thinking-level helpers (`models.ts`), checked against
//! the counts and entries of `@mariozechner/pi-ai@0.73.1`.

use std::collections::BTreeMap;

use pi_agent::ai::{
    self, InputModality, Model, ModelCost, ThinkingLevel, clamp_thinking_level, get_model,
    get_models, get_providers, get_supported_thinking_levels, resolve_model,
};
use serde_json::{Value, json};

use ThinkingLevel::{High, Low, Medium, Minimal, Off, Xhigh};

const CATALOG_JSON: &str = include_str!("../src/ai/models.json");

/// pi's `KnownProvider` list (spec 1.2), sorted.
const PROVIDERS: [&str; 31] = [
    "amazon-bedrock",
    "anthropic",
    "azure-openai-responses",
    "cerebras",
    "cloudflare-ai-gateway",
    "cloudflare-workers-ai",
    "deepseek",
    "fireworks",
    "github-copilot",
    "google",
    "google-vertex",
    "groq",
    "huggingface",
    "kimi-coding",
    "minimax",
    "minimax-cn",
    "mistral",
    "moonshotai",
    "moonshotai-cn",
    "openai",
    "openai-codex",
    "opencode",
    "opencode-go",
    "openrouter",
    "vercel-ai-gateway",
    "xai",
    "xiaomi",
    "xiaomi-token-plan-ams",
    "xiaomi-token-plan-cn",
    "xiaomi-token-plan-sgp",
    "zai",
];

fn model(provider: &str, id: &str) -> Model {
    get_model(provider, id).unwrap_or_else(|| panic!("{provider}/{id} is not in the catalog"))
}

fn catalog_file() -> serde_json::Map<String, Value> {
    match serde_json::from_str(CATALOG_JSON).unwrap() {
        Value::Object(map) => map,
        other => panic!("models.json is not an object: {other}"),
    }
}

#[test]
fn counts_match_pi() {
    assert_eq!(ai::all_models().count(), 969);
    assert_eq!(get_providers().len(), 31);
    let per_provider: usize = get_providers().iter().map(|p| get_models(p).len()).sum();
    assert_eq!(per_provider, 969);

    // Spec 1.10, provider table.
    for (provider, count) in [
        ("openrouter", 275),
        ("vercel-ai-gateway", 162),
        ("amazon-bedrock", 93),
        ("azure-openai-responses", 42),
        ("openai", 42),
        ("opencode", 38),
        ("cloudflare-ai-gateway", 35),
        ("google", 27),
        ("mistral", 28),
        ("github-copilot", 26),
        ("xai", 25),
        ("anthropic", 23),
        ("huggingface", 22),
        ("fireworks", 19),
        ("groq", 18),
        ("google-vertex", 13),
        ("opencode-go", 12),
        ("openai-codex", 10),
        ("cloudflare-workers-ai", 8),
        ("moonshotai", 7),
        ("moonshotai-cn", 7),
        ("zai", 5),
        ("xiaomi", 5),
        ("xiaomi-token-plan-cn", 5),
        ("xiaomi-token-plan-ams", 5),
        ("xiaomi-token-plan-sgp", 5),
        ("cerebras", 4),
        ("deepseek", 2),
        ("kimi-coding", 2),
        ("minimax", 2),
        ("minimax-cn", 2),
    ] {
        assert_eq!(get_models(provider).len(), count, "{provider}");
    }

    // Spec 1.10, by api.
    let mut by_api = BTreeMap::<String, usize>::new();
    for model in ai::all_models() {
        *by_api.entry(model.api).or_default() += 1;
    }
    let by_api: BTreeMap<&str, usize> = by_api.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(
        by_api,
        BTreeMap::from([
            ("openai-completions", 405),
            ("anthropic-messages", 263),
            ("bedrock-converse-stream", 93),
            ("openai-responses", 86),
            ("azure-openai-responses", 42),
            ("mistral-conversations", 28),
            ("google-generative-ai", 29),
            ("google-vertex", 13),
            ("openai-codex-responses", 10),
        ])
    );

    // Spec 1.10: 157 thinking-level maps, 96 of them with `off: null`.
    let maps: Vec<_> = ai::all_models()
        .filter_map(|m| m.thinking_level_map)
        .collect();
    assert_eq!(maps.len(), 157);
    assert_eq!(
        maps.iter()
            .filter(|map| map.get("off") == Some(&None))
            .count(),
        96
    );
}

#[test]
fn providers_are_pis_sorted() {
    assert_eq!(get_providers(), PROVIDERS);
}

#[test]
fn keys_agree_with_models_and_ids_are_sorted() {
    for provider in get_providers() {
        let models = get_models(&provider);
        assert!(models.windows(2).all(|w| w[0].id < w[1].id), "{provider}");
        for m in models {
            assert_eq!(m.provider, provider);
            assert_eq!(get_model(&provider, &m.id).as_ref(), Some(&m));
        }
    }
}

#[test]
fn generated_note_is_present() {
    let file = catalog_file();
    let note = file["_generated"].as_str().unwrap();
    assert!(note.contains("@mariozechner/pi-ai@0.73.1"), "{note}");
    assert!(note.contains("scripts/generate-models.mjs"), "{note}");
    assert_eq!(file.len(), 32);
}

/// JSON equality where numbers compare by value (`0` == `0.0`): pi writes integral prices as
/// integers, serde writes every `f64` with a fraction.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| same_json(a, b)))
        }
        _ => a == b,
    }
}

#[test]
fn every_model_round_trips_through_serde() {
    let mut checked = 0;
    for (provider, models) in catalog_file() {
        if provider.starts_with('_') {
            continue;
        }
        for (id, original) in models.as_object().unwrap() {
            let parsed: Model = serde_json::from_value(original.clone())
                .unwrap_or_else(|err| panic!("{provider}/{id}: {err}"));
            let written = serde_json::to_value(&parsed).unwrap();
            assert!(
                same_json(original, &written),
                "{provider}/{id}\n pi:   {original}\n ours: {written}"
            );
            assert_eq!(get_model(&provider, id), Some(parsed));
            checked += 1;
        }
    }
    assert_eq!(checked, 969);
}

#[test]
fn openai_model() {
    let m = model("openai", "gpt-4o");
    assert_eq!(m.name, "GPT-4o");
    assert_eq!(m.api, "openai-responses");
    assert_eq!(m.base_url, "https://api.openai.com/v1");
    assert!(!m.reasoning);
    assert_eq!(m.input, [InputModality::Text, InputModality::Image]);
    assert_eq!(
        m.cost,
        ModelCost {
            input: 2.5,
            output: 10.0,
            cache_read: 1.25,
            cache_write: 0.0
        }
    );
    assert_eq!((m.context_window, m.max_tokens), (128_000, 16_384));
    assert_eq!(m.thinking_level_map, None);
    assert_eq!(m.headers, None);
    assert_eq!(m.compat, None);
}

#[test]
fn anthropic_opus_4_7() {
    // Spec 1.10's example.
    let m = model("anthropic", "claude-opus-4-7");
    assert_eq!(m.api, "anthropic-messages");
    assert_eq!(m.base_url, "https://api.anthropic.com");
    assert!(m.reasoning);
    assert_eq!(
        m.thinking_level_map,
        Some(BTreeMap::from([("xhigh".into(), Some("xhigh".into()))]))
    );
    assert!(m.supports_images());
    assert_eq!(
        m.cost,
        ModelCost {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write: 6.25
        }
    );
    assert_eq!((m.context_window, m.max_tokens), (1_000_000, 128_000));
    assert!(
        get_models("anthropic")
            .iter()
            .all(|m| m.api == "anthropic-messages")
    );
}

#[test]
fn deepseek_v4_map_and_compat() {
    let m = model("deepseek", "deepseek-v4-pro");
    assert_eq!(m.api, "openai-completions");
    assert_eq!(
        serde_json::to_value(&m.thinking_level_map).unwrap(),
        json!({"minimal": null, "low": null, "medium": null, "high": "high", "xhigh": "max"})
    );
    assert_eq!(
        m.compat,
        Some(json!({
            "requiresReasoningContentOnAssistantMessages": true,
            "thinkingFormat": "deepseek"
        }))
    );
}

#[test]
fn headers_and_odd_base_urls() {
    let copilot = get_models("github-copilot");
    assert!(copilot.iter().all(|m| {
        m.headers
            .as_ref()
            .is_some_and(|h| h["Copilot-Integration-Id"] == "vscode-chat")
    }));
    for m in get_models("kimi-coding") {
        assert_eq!(
            m.headers,
            Some(BTreeMap::from([(
                "User-Agent".into(),
                "KimiCLI/1.5".into()
            )]))
        );
    }
    assert!(
        get_models("google-vertex")
            .iter()
            .all(|m| m.base_url.contains("{location}"))
    );
    assert!(
        get_models("azure-openai-responses")
            .iter()
            .all(|m| m.base_url.is_empty())
    );
}

#[test]
fn unknown_lookups_are_empty() {
    assert_eq!(get_model("openai", "no-such-model"), None);
    assert_eq!(get_model("no-such-provider", "gpt-4o"), None);
    assert!(get_models("no-such-provider").is_empty());
    assert!(get_models("_generated").is_empty());
}

#[test]
fn resolve_model_splits_on_the_first_slash() {
    let m = resolve_model("openrouter/anthropic/claude-sonnet-4").unwrap();
    assert_eq!(m.provider, "openrouter");
    assert_eq!(m.id, "anthropic/claude-sonnet-4");
    assert_eq!(m.api, "openai-completions");

    assert_eq!(
        resolve_model("anthropic/claude-opus-4-7"),
        get_model("anthropic", "claude-opus-4-7")
    );
    // The same id under another provider is another model.
    assert_eq!(
        resolve_model("vercel-ai-gateway/anthropic/claude-sonnet-4").map(|m| m.provider),
        Some("vercel-ai-gateway".into())
    );
    for spec in [
        "claude-opus-4-7",
        "anthropic/",
        "/claude-opus-4-7",
        "",
        "anthropic/claude-opus-4-7/",
        "openrouter/claude-sonnet-4",
    ] {
        assert_eq!(resolve_model(spec), None, "{spec:?}");
    }
}

fn reasoning_model(map: Value) -> Model {
    let mut m = Model::new("openai-completions", "test", "m", "http://x");
    m.reasoning = true;
    m.thinking_level_map = serde_json::from_value(map).unwrap();
    m
}

#[test]
fn non_reasoning_models_only_support_off() {
    let plain = model("openai", "gpt-4o");
    assert_eq!(get_supported_thinking_levels(&plain), [Off]);
    // A map does not matter without `reasoning`, even one that marks `off` unsupported.
    let chat = model("azure-openai-responses", "gpt-5-chat-latest");
    assert!(!chat.reasoning);
    assert_eq!(chat.thinking_level_map.as_ref().unwrap()["off"], None);
    assert_eq!(get_supported_thinking_levels(&chat), [Off]);
    assert_eq!(clamp_thinking_level(&chat, High), Off);
    assert_eq!(clamp_thinking_level(&chat, Xhigh), Off);
    assert_eq!(clamp_thinking_level(&chat, Off), Off);
}

#[test]
fn xhigh_only_when_mapped() {
    let no_map = reasoning_model(json!(null));
    assert_eq!(
        get_supported_thinking_levels(&no_map),
        [Off, Minimal, Low, Medium, High]
    );
    let opus = model("anthropic", "claude-opus-4-7");
    assert_eq!(
        get_supported_thinking_levels(&opus),
        [Off, Minimal, Low, Medium, High, Xhigh]
    );
    let sonnet = model("anthropic", "claude-sonnet-4-5");
    assert_eq!(sonnet.thinking_level_map, None);
    assert!(!get_supported_thinking_levels(&sonnet).contains(&Xhigh));
    // An explicit null is "unsupported", not "mapped".
    let null_xhigh = reasoning_model(json!({"xhigh": null}));
    assert_eq!(
        get_supported_thinking_levels(&null_xhigh),
        [Off, Minimal, Low, Medium, High]
    );
}

#[test]
fn null_entries_are_dropped() {
    let deepseek = model("deepseek", "deepseek-v4-pro");
    assert_eq!(get_supported_thinking_levels(&deepseek), [Off, High, Xhigh]);
    let gemini = model("google", "gemini-3-pro-preview");
    assert_eq!(get_supported_thinking_levels(&gemini), [Low, High]);
    let gpt5 = model("openai", "gpt-5");
    assert_eq!(
        get_supported_thinking_levels(&gpt5),
        [Minimal, Low, Medium, High]
    );
    // Every catalog model with `off: null` and reasoning lists no `Off`.
    for m in ai::all_models().filter(|m| m.reasoning) {
        let off_null = m
            .thinking_level_map
            .as_ref()
            .is_some_and(|map| map.get("off") == Some(&None));
        assert_eq!(
            !get_supported_thinking_levels(&m).contains(&Off),
            off_null,
            "{}/{}",
            m.provider,
            m.id
        );
    }
}

#[test]
fn clamp_searches_upward_then_downward() {
    // Supported: low, high.
    let gemini = model("google", "gemini-3-pro-preview");
    assert_eq!(clamp_thinking_level(&gemini, Off), Low);
    assert_eq!(clamp_thinking_level(&gemini, Minimal), Low);
    assert_eq!(clamp_thinking_level(&gemini, Low), Low);
    assert_eq!(clamp_thinking_level(&gemini, Medium), High);
    assert_eq!(clamp_thinking_level(&gemini, High), High);
    assert_eq!(clamp_thinking_level(&gemini, Xhigh), High);

    // Supported: off, high, xhigh.
    let deepseek = model("deepseek", "deepseek-v4-pro");
    assert_eq!(clamp_thinking_level(&deepseek, Minimal), High);
    assert_eq!(clamp_thinking_level(&deepseek, Medium), High);
    assert_eq!(clamp_thinking_level(&deepseek, Xhigh), Xhigh);
    assert_eq!(clamp_thinking_level(&deepseek, Off), Off);

    // No xhigh: clamps down to high.
    let no_map = reasoning_model(json!(null));
    assert_eq!(clamp_thinking_level(&no_map, Xhigh), High);
    assert_eq!(clamp_thinking_level(&no_map, Medium), Medium);

    // Supported: off, xhigh. Downward search starts below the request.
    let sparse = reasoning_model(json!({
        "minimal": null, "low": null, "medium": null, "high": null, "xhigh": "max"
    }));
    assert_eq!(get_supported_thinking_levels(&sparse), [Off, Xhigh]);
    assert_eq!(clamp_thinking_level(&sparse, Low), Xhigh);

    // Nothing supported: falls back to off.
    let none = reasoning_model(json!({
        "off": null, "minimal": null, "low": null, "medium": null, "high": null
    }));
    assert!(get_supported_thinking_levels(&none).is_empty());
    assert_eq!(clamp_thinking_level(&none, Medium), Off);
}

#[test]
fn thinking_level_conversions() {
    assert_eq!(ThinkingLevel::from(Some(Xhigh)), Xhigh);
    assert_eq!(ThinkingLevel::from(None::<ThinkingLevel>), Off);
    assert_eq!(Off.enabled(), None);
    assert_eq!(Medium.enabled(), Some(Medium));
    assert_eq!(serde_json::to_value(Xhigh).unwrap(), json!("xhigh"));
    assert_eq!(
        serde_json::from_value::<ThinkingLevel>(json!("off")).unwrap(),
        Off
    );
    assert_eq!(ThinkingLevel::parse("minimal"), Some(Minimal));
    assert_eq!(High.to_string(), "high");
}

#[test]
fn catalog_models_are_plain_values() {
    // A copy can be adjusted freely; the catalog keeps its own.
    let mut m = model("openai", "gpt-4o");
    m.base_url = "http://localhost:8080/v1".into();
    assert_eq!(
        model("openai", "gpt-4o").base_url,
        "https://api.openai.com/v1"
    );
}
