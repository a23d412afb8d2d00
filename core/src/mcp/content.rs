//! How a `tools/call` result becomes an agent tool result.
//!
//! Text stays text and images stay images (base64 and MIME type, so a vision model sees
//! them). Audio and binary resources cannot reach a model as such: they become a line of text
//! that names them. A text resource becomes its text, headed by its URI. The
//! `structuredContent` (checked against the tool's `outputSchema` when it has one) and the
//! server's name go in the details. `isError: true` becomes an error result with the server's
//! text.
//!
//! What would make every later request of the conversation fail stays out of the transcript:
//! an image in a format the providers refuse, or that is not base64, or larger than they take,
//! becomes a placeholder, and the result's text is cut at [`MAX_RESULT_TEXT`] bytes (a server's
//! answer may be as large as its transport allows, 16 MiB a message).

use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use super::error::McpError;
use crate::agent::AgentToolResult;
use crate::ai::types::{ImageContent, UserContent};
use crate::ai::validation::CompiledToolSchema;

fn str_field<'a>(block: &'a Value, key: &str) -> &'a str {
    block.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A placeholder naming what could not be shown.
fn placeholder(kind: &str, block: &Value) -> String {
    let mime = str_field(block, "mimeType");
    let size = block
        .get("data")
        .or_else(|| block.get("blob"))
        .and_then(Value::as_str)
        .map_or(0, |data| data.len() / 4 * 3);
    let mut text = format!("[{kind}");
    for (label, value) in [
        ("name", str_field(block, "name")),
        ("uri", str_field(block, "uri")),
        ("type", mime),
    ] {
        if !value.is_empty() {
            text.push_str(&format!(" {label}={value}"));
        }
    }
    if size > 0 {
        text.push_str(&format!(" ~{size} bytes"));
    }
    text.push(']');
    text
}

/// The image formats every provider takes.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest image passed on (decoded): Anthropic's limit, the smallest of the providers'.
const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The most text one result passes on.
pub(crate) const MAX_RESULT_TEXT: usize = 1024 * 1024;

/// Whether `data` is an image a provider takes: one of [`IMAGE_TYPES`], base64, not too large.
fn usable_image(mime: &str, data: &str) -> bool {
    use base64::Engine as _;
    if !IMAGE_TYPES.contains(&mime.to_ascii_lowercase().as_str())
        || data.is_empty()
        || data.len() / 4 * 3 > MAX_IMAGE_BYTES
    {
        return false;
    }
    base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .is_ok()
}

/// One content block, as MCP's JSON, onto the model's content.
pub(crate) fn map_block(block: &Value) -> UserContent {
    match str_field(block, "type") {
        "text" => UserContent::text(str_field(block, "text")),
        "image" => {
            let mime = str_field(block, "mimeType");
            let data = str_field(block, "data");
            if usable_image(mime, data) {
                UserContent::Image(ImageContent {
                    data: data.into(),
                    mime_type: mime.to_owned(),
                })
            } else {
                UserContent::text(placeholder("image", block))
            }
        }
        "audio" => UserContent::text(placeholder("audio", block)),
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => UserContent::text(format!(
                    "[resource uri={}]\n{text}",
                    str_field(resource, "uri")
                )),
                None => UserContent::text(placeholder("resource", resource)),
            }
        }
        "resource_link" => UserContent::text(placeholder("resource link", block)),
        other => UserContent::text(format!("[unsupported content type {other:?}]")),
    }
}

/// The whole result.
pub(crate) fn map_result(
    server: &str,
    result: CallToolResult,
    output_schema: Option<&Value>,
) -> Result<AgentToolResult, McpError> {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    map_result_json(server, value, output_schema)
}

/// A result as JSON: what [`map_result`] reads, and what a result comes as when the MCP
/// library could not read it as a `CallToolResult` (a content block of a kind it does not
/// know, a malformed one): its other blocks still reach the model, the odd one as a
/// placeholder.
pub(crate) fn map_result_json(
    server: &str,
    mut result: Value,
    output_schema: Option<&Value>,
) -> Result<AgentToolResult, McpError> {
    let blocks: Vec<Value> = match result.get_mut("content").map(Value::take) {
        Some(Value::Array(blocks)) => blocks,
        _ => Vec::new(),
    };
    let structured_content = result
        .get_mut("structuredContent")
        .map(Value::take)
        .filter(|value| !value.is_null());
    let meta = result
        .get_mut("_meta")
        .map(Value::take)
        .filter(|value| !value.is_null());
    let result = ResultParts {
        is_error: result.get("isError").and_then(Value::as_bool),
        structured_content,
        meta,
    };
    if result.is_error == Some(true) {
        let text: Vec<&str> = blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect();
        let message = if text.is_empty() {
            format!("MCP server \"{server}\": the tool failed without a message")
        } else {
            text.join("\n")
        };
        return Err(McpError::ToolFailed {
            server: server.to_owned(),
            message,
        });
    }
    if let (Some(schema), Some(structured)) = (output_schema, &result.structured_content)
        && let Err(error) =
            CompiledToolSchema::new("structuredContent", schema).validate_and_coerce(structured)
    {
        return Err(McpError::Protocol {
            server: server.to_owned(),
            message: format!("structuredContent does not match the tool's outputSchema: {error}"),
        });
    }
    let mut content: Vec<UserContent> = blocks.iter().map(map_block).collect();
    // A result with only structured content still says something to the model.
    if content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        content.push(UserContent::text(structured.to_string()));
    }
    cut_text(&mut content, MAX_RESULT_TEXT);
    let mut details = Map::new();
    details.insert("mcpServer".into(), json!(server));
    if let Some(structured) = result.structured_content {
        details.insert("structuredContent".into(), structured);
    }
    if let Some(meta) = result.meta {
        details.insert("_meta".into(), meta);
    }
    Ok(AgentToolResult {
        content,
        details: Value::Object(details),
        terminate: None,
    })
}

/// What a result says besides its content.
struct ResultParts {
    is_error: Option<bool>,
    structured_content: Option<Value>,
    meta: Option<Value>,
}

/// Keeps the first `budget` bytes of the text blocks (cut at a character boundary) and says
/// how much went; the images stay.
fn cut_text(content: &mut Vec<UserContent>, budget: usize) {
    let total: usize = content
        .iter()
        .map(|block| match block {
            UserContent::Text(text) => text.text.len(),
            _ => 0,
        })
        .sum();
    if total <= budget {
        return;
    }
    let mut left = budget;
    content.retain_mut(|block| {
        let UserContent::Text(text) = block else {
            return true;
        };
        if left == 0 {
            return false;
        }
        if text.text.len() > left {
            let mut end = left;
            while !text.text.is_char_boundary(end) {
                end -= 1;
            }
            *block = UserContent::text(&text.text[..end]);
        }
        left -= left.min(block_len(block));
        true
    });
    let kept = budget - left;
    content.push(UserContent::text(format!(
        "\n[the MCP result's text was cut: {kept} of {total} bytes kept]"
    )));
}

fn block_len(block: &UserContent) -> usize {
    match block {
        UserContent::Text(text) => text.text.len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(content: UserContent) -> String {
        match content {
            UserContent::Text(text) => text.text.into_string(),
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn what_a_model_cannot_see_becomes_a_placeholder_naming_it() {
        let audio = json!({"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"});
        assert_eq!(text(map_block(&audio)), "[audio type=audio/wav ~6 bytes]");
        let blob = json!({"type": "resource", "resource": {"uri": "demo://b/2", "mimeType": "application/octet-stream", "blob": "AAAA"}});
        assert_eq!(
            text(map_block(&blob)),
            "[resource uri=demo://b/2 type=application/octet-stream ~3 bytes]"
        );
        let link = json!({"type": "resource_link", "uri": "file:///x.txt", "name": "x.txt"});
        assert_eq!(
            text(map_block(&link)),
            "[resource link name=x.txt uri=file:///x.txt]"
        );
        let doc = json!({"type": "resource", "resource": {"uri": "demo://t/1", "text": "hello"}});
        assert_eq!(text(map_block(&doc)), "[resource uri=demo://t/1]\nhello");
        let odd = json!({"type": "hologram"});
        assert_eq!(
            text(map_block(&odd)),
            "[unsupported content type \"hologram\"]"
        );
        let not_an_image = json!({"type": "image", "data": "AAAA", "mimeType": "text/plain"});
        assert!(text(map_block(&not_an_image)).starts_with("[image"));
    }

    #[test]
    fn only_images_every_provider_takes_are_passed_on() {
        let image =
            |mime: &str, data: &str| json!({"type": "image", "data": data, "mimeType": mime});
        assert!(matches!(
            map_block(&image("image/png", "iVBORw0KGgo=")),
            UserContent::Image(_)
        ));
        assert!(matches!(
            map_block(&image("image/WEBP", "UklGRg==")),
            UserContent::Image(_)
        ));
        for refused in [
            image("image/svg+xml", "PHN2Zz4="),
            image("image/tiff", "SUkqAA=="),
            image("image/png", "not base64!"),
            image("image/png", &"A".repeat(8 * 1024 * 1024)),
        ] {
            assert!(
                text(map_block(&refused)).starts_with("[image"),
                "{}",
                &refused.to_string()[..60]
            );
        }
    }

    #[test]
    fn a_result_larger_than_the_budget_is_cut_with_a_note() {
        let mut content = vec![
            UserContent::text("héllo"),
            UserContent::Image(ImageContent {
                data: "AAAA".into(),
                mime_type: "image/png".into(),
            }),
            UserContent::text("world"),
            UserContent::text("gone"),
        ];
        // "héllo" is 6 bytes: a budget of 9 keeps it and 3 bytes of "world".
        cut_text(&mut content, 9);
        assert_eq!(content.len(), 4);
        assert_eq!(text(content[0].clone()), "héllo");
        assert!(matches!(content[1], UserContent::Image(_)));
        assert_eq!(text(content[2].clone()), "wor");
        assert_eq!(
            text(content[3].clone()),
            "\n[the MCP result's text was cut: 9 of 15 bytes kept]"
        );
        // Cut inside a character: at the boundary before it.
        let mut content = vec![UserContent::text("aé")];
        cut_text(&mut content, 2);
        assert_eq!(text(content[0].clone()), "a");
        let mut small = vec![UserContent::text("fits")];
        cut_text(&mut small, 4);
        assert_eq!(small.len(), 1);
    }

    #[test]
    fn a_result_with_a_block_of_an_unknown_kind_keeps_its_other_blocks() {
        let raw = json!({"content": [{"type": "text", "text": "kept"},
                                     {"type": "hologram", "data": 1}],
                         "structuredContent": {"n": 1}});
        // What the MCP library makes of it: not a `CallToolResult`.
        assert!(serde_json::from_value::<CallToolResult>(raw.clone()).is_err());
        let result = map_result_json("s", raw, None).unwrap();
        assert_eq!(text(result.content[0].clone()), "kept");
        assert_eq!(
            text(result.content[1].clone()),
            "[unsupported content type \"hologram\"]"
        );
        assert_eq!(result.details["structuredContent"], json!({"n": 1}));
        let failed = json!({"content": [{"type": "text", "text": "no"}, {"type": "odd"}],
                            "isError": true});
        let error = map_result_json("s", failed, None).unwrap_err().to_string();
        assert!(error.ends_with("no"), "{error}");
    }

    #[test]
    fn structured_content_is_checked_against_the_output_schema() {
        let schema =
            json!({"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]});
        let good: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"t": 1}})).unwrap();
        let result = map_result("s", good, Some(&schema)).unwrap();
        assert_eq!(result.details["structuredContent"], json!({"t": 1}));
        assert_eq!(text(result.content[0].clone()), "{\"t\":1}");
        let bad: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"t": "warm"}}))
                .unwrap();
        let error = map_result("s", bad, Some(&schema)).unwrap_err().to_string();
        assert!(
            error.starts_with("MCP server \"s\": structuredContent does not match"),
            "{error}"
        );
        let failed: CallToolResult =
            serde_json::from_value(json!({"content": [], "isError": true})).unwrap();
        let error = map_result("s", failed, None).unwrap_err().to_string();
        assert_eq!(error, "MCP server \"s\": the tool failed without a message");
    }
}
