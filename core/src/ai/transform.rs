//! Prepares a transcript for a target model (pi's `transformMessages`): images a model cannot
//! read become placeholders, another model's reasoning becomes text and its signatures are
//! stripped, tool-call ids are rewritten to what the target accepts, failed assistant turns are
//! dropped, and every tool call gets a result so the request is valid.

use std::collections::{HashMap, HashSet};

use super::model::Model;
use super::types::{
    AssistantContent, AssistantMessage, Message, TextContent, ToolResultMessage, UserContent,
    UserMessage, UserMessageContent,
};

/// Placeholder for images in user messages sent to a text-only model.
pub const USER_IMAGE_OMITTED: &str = "(image omitted: model does not support images)";
/// Placeholder for images in tool results sent to a text-only model.
pub const TOOL_IMAGE_OMITTED: &str = "(tool image omitted: model does not support images)";
/// Text of the synthetic result added for a tool call that never got one.
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// Rewrites a foreign tool-call id into one the target api accepts.
pub type NormalizeToolCallId<'a> = &'a dyn Fn(&str) -> String;

/// Returns the messages as they should be sent to `target`.
pub fn transform_messages(
    messages: &[Message],
    target: &Model,
    normalize_tool_call_id: Option<NormalizeToolCallId<'_>>,
) -> Vec<Message> {
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut converted = Vec::with_capacity(messages.len());
    for message in messages {
        converted.push(match message {
            Message::User(user) => Message::User(downgrade_user_images(user, target)),
            Message::ToolResult(result) => {
                let mut result = downgrade_tool_images(result, target);
                if let Some(new_id) = renamed.get(&result.tool_call_id) {
                    result.tool_call_id.clone_from(new_id);
                }
                Message::ToolResult(result)
            }
            Message::Assistant(assistant) => Message::Assistant(convert_assistant(
                assistant,
                target,
                normalize_tool_call_id,
                &mut renamed,
            )),
        });
    }
    repair_orphans(converted)
}

fn is_same_model(message: &AssistantMessage, target: &Model) -> bool {
    message.provider == target.provider && message.api == target.api && message.model == target.id
}

fn convert_assistant(
    message: &AssistantMessage,
    target: &Model,
    normalize: Option<NormalizeToolCallId<'_>>,
    renamed: &mut HashMap<String, String>,
) -> AssistantMessage {
    let same = is_same_model(message, target);
    let mut out = message.clone();
    out.content = Vec::with_capacity(message.content.len());
    for block in &message.content {
        match block {
            AssistantContent::Thinking(thinking) => {
                if thinking.redacted == Some(true) {
                    if same {
                        out.content.push(block.clone());
                    }
                } else if same && thinking.thinking_signature.is_some() {
                    out.content.push(block.clone());
                } else if thinking.thinking.trim().is_empty() {
                    // Nothing to replay.
                } else if same {
                    out.content.push(block.clone());
                } else {
                    out.content.push(AssistantContent::Text(TextContent::new(
                        thinking.thinking.clone(),
                    )));
                }
            }
            AssistantContent::Text(text) => {
                if same {
                    out.content.push(block.clone());
                } else {
                    out.content
                        .push(AssistantContent::Text(TextContent::new(text.text.clone())));
                }
            }
            AssistantContent::ToolCall(call) => {
                let mut call = call.clone();
                if !same {
                    call.thought_signature = None;
                    if let Some(normalize) = normalize {
                        let new_id = normalize(&call.id);
                        if new_id != call.id {
                            renamed.insert(call.id.clone(), new_id.clone());
                            call.id = new_id;
                        }
                    }
                }
                out.content.push(AssistantContent::ToolCall(call));
            }
        }
    }
    out
}

/// Drops failed assistant turns and gives every tool call of a kept turn a result.
fn repair_orphans(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    // Calls of kept assistant messages; a result for any other call (e.g. of a dropped failed
    // turn) would be an orphan the provider rejects (pi quirk #12 keeps it).
    let mut known_calls: HashSet<String> = HashSet::new();
    let flush = |out: &mut Vec<Message>,
                 pending: &mut Vec<(String, String)>,
                 answered: &mut HashSet<String>| {
        for (id, name) in pending.drain(..) {
            if !answered.contains(&id) {
                out.push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id,
                    tool_name: name,
                    content: vec![UserContent::text(NO_RESULT_PROVIDED)],
                    details: None,
                    is_error: true,
                    timestamp: super::types::now_ms(),
                    timing: None,
                }));
            }
        }
        answered.clear();
    };
    for message in messages {
        match message {
            Message::Assistant(assistant) => {
                flush(&mut out, &mut pending, &mut answered);
                if assistant.stop_reason.is_failure() {
                    continue;
                }
                pending = assistant
                    .tool_calls()
                    .map(|call| (call.id.clone(), call.name.clone()))
                    .collect();
                known_calls.extend(pending.iter().map(|(id, _)| id.clone()));
                out.push(Message::Assistant(assistant));
            }
            Message::User(user) => {
                flush(&mut out, &mut pending, &mut answered);
                out.push(Message::User(user));
            }
            Message::ToolResult(result) => {
                if known_calls.contains(&result.tool_call_id)
                    && answered.insert(result.tool_call_id.clone())
                {
                    out.push(Message::ToolResult(result));
                }
            }
        }
    }
    flush(&mut out, &mut pending, &mut answered);
    out
}

/// Replaces each run of consecutive images with one placeholder text block.
fn replace_images(blocks: &[UserContent], placeholder: &str) -> Vec<UserContent> {
    let mut out = Vec::with_capacity(blocks.len());
    let mut previous_was_image = false;
    for block in blocks {
        match block {
            UserContent::Image(_) => {
                if !previous_was_image {
                    out.push(UserContent::text(placeholder));
                }
                previous_was_image = true;
            }
            UserContent::Text(_) => {
                out.push(block.clone());
                previous_was_image = false;
            }
        }
    }
    out
}

fn downgrade_user_images(message: &UserMessage, target: &Model) -> UserMessage {
    match &message.content {
        UserMessageContent::Blocks(blocks) if !target.supports_images() => UserMessage {
            content: UserMessageContent::Blocks(replace_images(blocks, USER_IMAGE_OMITTED)),
            timestamp: message.timestamp,
        },
        _ => message.clone(),
    }
}

fn downgrade_tool_images(message: &ToolResultMessage, target: &Model) -> ToolResultMessage {
    let mut message = message.clone();
    if !target.supports_images() {
        message.content = replace_images(&message.content, TOOL_IMAGE_OMITTED);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ai::types::{StopReason, ThinkingContent, ToolCall};

    fn assistant(model: &str, content: Vec<AssistantContent>, stop: StopReason) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            api: "openai-completions".into(),
            provider: "openai".into(),
            model: model.into(),
            stop_reason: stop,
            ..AssistantMessage::default()
        })
    }

    fn call(id: &str) -> AssistantContent {
        AssistantContent::ToolCall(ToolCall {
            id: id.into(),
            name: "calc".into(),
            ..ToolCall::default()
        })
    }

    #[test]
    fn orphans_get_results_and_failed_turns_are_dropped() {
        let target = Model::new("openai-completions", "openai", "gpt", "");
        let messages = vec![
            Message::User(UserMessage::text("hi")),
            assistant("gpt", vec![call("a"), call("b")], StopReason::ToolUse),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "a".into(),
                tool_name: "calc".into(),
                ..ToolResultMessage::default()
            }),
            assistant("gpt", vec![call("c")], StopReason::Aborted),
            // A result for the dropped turn's call is dropped too.
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "c".into(),
                tool_name: "calc".into(),
                ..ToolResultMessage::default()
            }),
        ];
        let out = transform_messages(&messages, &target, None);
        let roles: Vec<_> = out.iter().map(Message::role).collect();
        assert_eq!(roles, ["user", "assistant", "toolResult", "toolResult"]);
        let Message::ToolResult(synthetic) = &out[3] else {
            panic!("expected a tool result")
        };
        assert_eq!(synthetic.tool_call_id, "b");
        assert!(synthetic.is_error);
    }

    #[test]
    fn foreign_thinking_becomes_text_and_ids_are_renamed() {
        let target = Model::new("openai-completions", "openai", "other", "");
        let messages = vec![
            assistant(
                "gpt",
                vec![
                    AssistantContent::Thinking(ThinkingContent {
                        thinking: "deep".into(),
                        thinking_signature: Some("reasoning_content".into()),
                        redacted: None,
                    }),
                    call("id|with|pipes"),
                ],
                StopReason::ToolUse,
            ),
            Message::ToolResult(ToolResultMessage {
                tool_call_id: "id|with|pipes".into(),
                tool_name: "calc".into(),
                ..ToolResultMessage::default()
            }),
        ];
        let normalize = |id: &str| id.replace('|', "_");
        let out = transform_messages(&messages, &target, Some(&normalize));
        let Message::Assistant(a) = &out[0] else {
            panic!("expected assistant")
        };
        assert_eq!(
            a.content[0],
            AssistantContent::Text(TextContent::new("deep"))
        );
        let Message::ToolResult(r) = &out[1] else {
            panic!("expected tool result")
        };
        assert_eq!(r.tool_call_id, "id_with_pipes");
    }
}
