//! What a Bedrock model is, judged from its id and name as pi judges it: Claude or not, adaptive
//! or budgeted thinking, prompt caching, GovCloud. The name matters for application inference
//! profiles, whose ARNs do not contain the model's name.

use crate::ai::model::Model;

/// The id and name, lowercased, each also with runs of spaces, `_`, `.` and `:` made `-`
/// (so "Claude Opus 4.6" matches `opus-4-6`).
fn match_candidates(model: &Model) -> Vec<String> {
    let mut values = vec![model.id.as_str()];
    if !model.name.is_empty() {
        values.push(&model.name);
    }
    let mut out = Vec::with_capacity(values.len() * 2);
    for value in values {
        let lower = value.to_lowercase();
        let mut dashed = String::with_capacity(lower.len());
        let mut in_run = false;
        for c in lower.chars() {
            if c.is_whitespace() || matches!(c, '_' | '.' | ':') {
                if !in_run {
                    dashed.push('-');
                }
                in_run = true;
            } else {
                dashed.push(c);
                in_run = false;
            }
        }
        out.push(lower);
        out.push(dashed);
    }
    out
}

/// An Anthropic Claude model (pi's `isAnthropicClaudeModel`): the only family that gets
/// reasoning parameters and whose reasoning carries signatures.
pub fn is_claude(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    let name = model.name.to_lowercase();
    id.contains("anthropic.claude")
        || id.contains("anthropic/claude")
        || name.contains("anthropic.claude")
        || name.contains("anthropic/claude")
        || name.contains("claude")
}

/// Opus 4.6+, Sonnet 4.6: `thinking: {type: "adaptive"}` with an effort.
pub fn supports_adaptive_thinking(model: &Model) -> bool {
    match_candidates(model).iter().any(|candidate| {
        candidate.contains("opus-4-6")
            || candidate.contains("opus-4-7")
            || candidate.contains("sonnet-4-6")
    })
}

/// Opus 4.7 takes the `xhigh` effort as such.
pub fn supports_native_xhigh_effort(model: &Model) -> bool {
    match_candidates(model)
        .iter()
        .any(|candidate| candidate.contains("opus-4-7"))
}

/// Claude 4.x, 3.7 Sonnet and 3.5 Haiku get cache points; a model not recognisable by name gets
/// them with `AWS_BEDROCK_FORCE_CACHE=1` (`force`).
pub fn supports_prompt_caching(model: &Model, force: bool) -> bool {
    let candidates = match_candidates(model);
    if !candidates.iter().any(|c| c.contains("claude")) {
        return force;
    }
    candidates.iter().any(|c| {
        c.contains("-4-") || c.contains("claude-3-7-sonnet") || c.contains("claude-3-5-haiku")
    })
}

/// A GovCloud target, which rejects Claude's `thinking.display`: the configured region is
/// `us-gov-*`, or the model id is a GovCloud profile or ARN.
pub fn is_govcloud(model: &Model, configured_region: Option<&str>) -> bool {
    if configured_region.is_some_and(|region| region.to_lowercase().starts_with("us-gov-")) {
        return true;
    }
    let id = model.id.to_lowercase();
    id.starts_with("us-gov.") || id.starts_with("arn:aws-us-gov:")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str, name: &str) -> Model {
        let mut model = Model::new("bedrock-converse-stream", "amazon-bedrock", id, "");
        model.name = name.into();
        model
    }

    #[test]
    fn families_by_id_and_name() {
        let sonnet46 = model("us.anthropic.claude-sonnet-4-6", "Claude Sonnet 4.6 (US)");
        assert!(is_claude(&sonnet46) && supports_adaptive_thinking(&sonnet46));
        assert!(!supports_native_xhigh_effort(&sonnet46));
        let opus47 = model("anthropic.claude-opus-4-7", "Claude Opus 4.7");
        assert!(supports_native_xhigh_effort(&opus47));
        // An application inference profile recognised by its name only.
        let profile = model(
            "arn:aws:bedrock:us-east-1:123:application-inference-profile/abc",
            "Claude Opus 4.6",
        );
        assert!(is_claude(&profile) && supports_adaptive_thinking(&profile));
        assert!(supports_prompt_caching(&profile, false));
        let haiku45 = model(
            "anthropic.claude-haiku-4-5-20251001-v1:0",
            "Claude Haiku 4.5",
        );
        assert!(is_claude(&haiku45) && !supports_adaptive_thinking(&haiku45));
        let nova = model("amazon.nova-pro-v1:0", "Nova Pro");
        assert!(!is_claude(&nova));
        assert!(!supports_prompt_caching(&nova, false));
        assert!(supports_prompt_caching(&nova, true));
        let old = model(
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            "Claude Sonnet 3.5",
        );
        assert!(!supports_prompt_caching(&old, false));
        let haiku35 = model(
            "anthropic.claude-3-5-haiku-20241022-v1:0",
            "Claude Haiku 3.5",
        );
        assert!(supports_prompt_caching(&haiku35, false));
    }

    #[test]
    fn govcloud_by_region_or_id() {
        let claude = model("anthropic.claude-sonnet-4-5-20250929-v1:0", "");
        assert!(is_govcloud(&claude, Some("us-gov-west-1")));
        assert!(!is_govcloud(&claude, Some("us-east-1")));
        assert!(is_govcloud(
            &model("us-gov.anthropic.claude-sonnet-4-5", ""),
            None
        ));
        assert!(is_govcloud(&model("arn:aws-us-gov:bedrock:x", ""), None));
    }
}
