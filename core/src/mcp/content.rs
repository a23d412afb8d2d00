//! How a `tools/call` result becomes an agent tool result.
//!
//! Text stays text and images stay images (base64 and MIME type, so a vision model sees
//! them). Audio and binary resources cannot reach a model as such: they become a line of text
//! that names them. A text resource becomes its text, headed by its URI. The
//! `structuredContent` (checked against the tool's `outputSchema` when it has one) and the
//! server's name go in the details. `isError: true` becomes an error result with the server's
//! text.

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

/// One content block, as MCP's JSON, onto the model's content.
pub(crate) fn map_block(block: &Value) -> UserContent {
    match str_field(block, "type") {
        "text" => UserContent::text(str_field(block, "text")),
        "image" => {
            let mime = str_field(block, "mimeType");
            let data = str_field(block, "data");
            if data.is_empty() || !mime.starts_with("image/") {
                UserContent::text(placeholder("image", block))
            } else {
                UserContent::Image(ImageContent {
                    data: data.into(),
                    mime_type: mime.to_owned(),
                })
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
    let blocks: Vec<Value> = result
        .content
        .iter()
        .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
        .collect();
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
    let mut details = Map::new();
    details.insert("mcpServer".into(), json!(server));
    if let Some(structured) = result.structured_content {
        details.insert("structuredContent".into(), structured);
    }
    if let Some(meta) = result.meta {
        details.insert(
            "_meta".into(),
            serde_json::to_value(meta).unwrap_or(Value::Null),
        );
    }
    Ok(AgentToolResult {
        content,
        details: Value::Object(details),
        terminate: None,
    })
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
