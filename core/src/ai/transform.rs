//! Prepares a transcript for a target model (pi's `transformMessages`): images a model cannot
//! read become placeholders, another model's reasoning becomes text and its signatures are
//! stripped, tool-call ids are rewritten to what the target accepts, failed assistant turns are
//! dropped, and every tool call gets a result so the request is valid.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::model::Model;
use super::types::{
    AssistantContent, AssistantMessage, Message, TextContent, ToolResultMessage, UserContent,
    UserMessage, UserMessageContent, has_images,
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
///
/// Each one is a copy; [`transform_messages_borrowed`] copies only what it changes.
pub fn transform_messages(
    messages: &[Message],
    target: &Model,
    normalize_tool_call_id: Option<NormalizeToolCallId<'_>>,
) -> Vec<Message> {
    transform_messages_borrowed(messages, target, normalize_tool_call_id)
        .into_iter()
        .map(Cow::into_owned)
        .collect()
}

/// [`transform_messages`] without copying a message it leaves as it is: a turn of the target
/// model itself, a user message or tool result with nothing to downgrade. An agent's request
/// to the model that wrote its transcript borrows every message (a provider runs this on each
/// request, over the whole transcript).
pub fn transform_messages_borrowed<'a>(
    messages: &'a [Message],
    target: &Model,
    normalize_tool_call_id: Option<NormalizeToolCallId<'_>>,
) -> Vec<Cow<'a, Message>> {
    let mut renamed: HashMap<String, String> = HashMap::new();
    let mut converted = Vec::with_capacity(messages.len());
    for message in messages {
        converted.push(match message {
            Message::User(user) => match downgrade_user_images(user, target) {
                Some(user) => Cow::Owned(Message::User(user)),
                None => Cow::Borrowed(message),
            },
            Message::ToolResult(result) => {
                let new_id = renamed.get(&result.tool_call_id);
                let content = downgrade_tool_images(result, target);
                if new_id.is_none() && content.is_none() {
                    Cow::Borrowed(message)
                } else {
                    Cow::Owned(Message::ToolResult(ToolResultMessage {
                        tool_call_id: new_id.unwrap_or(&result.tool_call_id).clone(),
                        tool_name: result.tool_name.clone(),
                        content: content.unwrap_or_else(|| result.content.clone()),
                        details: result.details.clone(),
                        is_error: result.is_error,
                        timestamp: result.timestamp,
                        timing: result.timing,
                    }))
                }
            }
            Message::Assistant(assistant) => {
                match convert_assistant(assistant, target, normalize_tool_call_id, &mut renamed) {
                    Some(assistant) => Cow::Owned(Message::Assistant(assistant)),
                    None => Cow::Borrowed(message),
                }
            }
        });
    }
    repair_orphans(converted)
}

fn is_same_model(message: &AssistantMessage, target: &Model) -> bool {
    message.provider == target.provider && message.api == target.api && message.model == target.id
}

/// Whether the target model itself drops `block` on replay: a blank thinking block with no
/// signature.
fn dropped_on_replay(block: &AssistantContent) -> bool {
    matches!(block, AssistantContent::Thinking(thinking)
        if thinking.redacted != Some(true)
            && thinking.thinking_signature.is_none()
            && thinking.thinking.trim().is_empty())
}

/// The turn as `target` should see it; `None` when that is the turn as it is.
fn convert_assistant(
    message: &AssistantMessage,
    target: &Model,
    normalize: Option<NormalizeToolCallId<'_>>,
    renamed: &mut HashMap<String, String>,
) -> Option<AssistantMessage> {
    let same = is_same_model(message, target);
    if same && !message.content.iter().any(dropped_on_replay) {
        return None;
    }
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
    Some(out)
}

/// Drops failed assistant turns and gives every tool call of a kept turn a result.
///
/// Two passes: the first decides, borrowing the call ids from the messages; the second moves
/// the kept messages and the added results into place.
fn repair_orphans(messages: Vec<Cow<'_, Message>>) -> Vec<Cow<'_, Message>> {
    let mut keep = vec![false; messages.len()];
    // Results to add, each before the message at its index (the length: at the end).
    let mut missing: Vec<(usize, &str, &str)> = Vec::new();
    let mut pending: Vec<(&str, &str)> = Vec::new();
    let mut answered: HashSet<&str> = HashSet::new();
    // Calls of kept assistant messages; a result for any other call (e.g. of a dropped failed
    // turn) would be an orphan the provider rejects (pi quirk #12 keeps it).
    let mut known_calls: HashSet<&str> = HashSet::new();
    /// The pending calls with no result get one before the message at `at`.
    fn flush<'m>(
        at: usize,
        pending: &mut Vec<(&'m str, &'m str)>,
        answered: &mut HashSet<&'m str>,
        missing: &mut Vec<(usize, &'m str, &'m str)>,
    ) {
        for (id, name) in pending.drain(..) {
            if !answered.contains(id) {
                missing.push((at, id, name));
            }
        }
        answered.clear();
    }
    for (index, message) in messages.iter().enumerate() {
        match &**message {
            Message::Assistant(assistant) => {
                flush(index, &mut pending, &mut answered, &mut missing);
                if assistant.stop_reason.is_failure() {
                    continue;
                }
                pending.extend(
                    assistant
                        .tool_calls()
                        .map(|call| (call.id.as_str(), call.name.as_str())),
                );
                known_calls.extend(pending.iter().map(|(id, _)| *id));
                keep[index] = true;
            }
            Message::User(_) => {
                flush(index, &mut pending, &mut answered, &mut missing);
                keep[index] = true;
            }
            Message::ToolResult(result) => {
                let id = result.tool_call_id.as_str();
                keep[index] = known_calls.contains(id) && answered.insert(id);
            }
        }
    }
    flush(messages.len(), &mut pending, &mut answered, &mut missing);
    if missing.is_empty() && keep.iter().all(|kept| *kept) {
        return messages;
    }
    // Rare (a turn cut short, a result lost): the ids are copied so the messages can move.
    let missing: Vec<(usize, String, String)> = missing
        .into_iter()
        .map(|(at, id, name)| (at, id.to_owned(), name.to_owned()))
        .collect();
    let no_result = |id: String, name: String| {
        Cow::Owned(Message::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: name,
            content: vec![UserContent::text(NO_RESULT_PROVIDED)],
            details: None,
            is_error: true,
            timestamp: super::types::now_ms(),
            timing: None,
        }))
    };
    let mut out = Vec::with_capacity(messages.len() + missing.len());
    let mut added = missing.into_iter().peekable();
    for (index, message) in messages.into_iter().enumerate() {
        while let Some((_, id, name)) = added.next_if(|(at, _, _)| *at == index) {
            out.push(no_result(id, name));
        }
        if keep[index] {
            out.push(message);
        }
    }
    out.extend(added.map(|(_, id, name)| no_result(id, name)));
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

/// The user message with its images replaced, for a text-only target; `None` when there is
/// nothing to replace.
fn downgrade_user_images(message: &UserMessage, target: &Model) -> Option<UserMessage> {
    match &message.content {
        UserMessageContent::Blocks(blocks) if !target.supports_images() && has_images(blocks) => {
            Some(UserMessage {
                content: UserMessageContent::Blocks(replace_images(blocks, USER_IMAGE_OMITTED)),
                timestamp: message.timestamp,
            })
        }
        _ => None,
    }
}

/// A tool result's content with its images replaced, for a text-only target; `None` when there
/// is nothing to replace.
fn downgrade_tool_images(message: &ToolResultMessage, target: &Model) -> Option<Vec<UserContent>> {
    (!target.supports_images() && has_images(&message.content))
        .then(|| replace_images(&message.content, TOOL_IMAGE_OMITTED))
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
    #[test]
    fn the_target_models_own_turns_are_borrowed_and_changes_are_copies() {
        let target = Model::new("openai-completions", "openai", "gpt", "");
        let blank_thinking = AssistantContent::Thinking(ThinkingContent {
            thinking: "  ".into(),
            thinking_signature: None,
            redacted: None,
        });
        let result = |id: &str| {
            Message::ToolResult(ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "calc".into(),
                ..ToolResultMessage::default()
            })
        };
        let messages = vec![
            Message::User(UserMessage::text("hi")),
            assistant("gpt", vec![call("a")], StopReason::ToolUse),
            result("a"),
            // Its blank thinking block is dropped: a copy.
            assistant("gpt", vec![blank_thinking, call("b")], StopReason::ToolUse),
            result("b"),
            // Another model's turn: a copy, its id normalized and its result renamed.
            assistant("other", vec![call("c|1")], StopReason::ToolUse),
            result("c|1"),
            // A call left without a result gets one at the end.
            assistant("gpt", vec![call("d")], StopReason::ToolUse),
        ];
        let normalize = |id: &str| id.replace('|', "_");
        let out = transform_messages_borrowed(&messages, &target, Some(&normalize));
        let borrowed: Vec<bool> = out
            .iter()
            .map(|message| matches!(message, Cow::Borrowed(_)))
            .collect();
        assert_eq!(
            borrowed,
            [true, true, true, false, true, false, false, true, false]
        );
        for (kept, original) in out.iter().zip(&messages).take(3) {
            assert!(std::ptr::eq(&**kept, original));
        }
        let Message::ToolResult(renamed) = &*out[6] else {
            panic!("expected a tool result")
        };
        assert_eq!(renamed.tool_call_id, "c_1");
        let Message::ToolResult(added) = &*out[8] else {
            panic!("expected a tool result")
        };
        assert_eq!((added.tool_call_id.as_str(), added.is_error), ("d", true));
        // The owned form is the same messages.
        let owned = transform_messages(&messages, &target, Some(&normalize));
        let mut expected: Vec<Message> = out.into_iter().map(Cow::into_owned).collect();
        // (The added result's timestamp is the time it was made.)
        if let (Message::ToolResult(a), Message::ToolResult(b)) = (&owned[8], &mut expected[8]) {
            b.timestamp = a.timestamp;
        }
        assert_eq!(owned, expected);
    }

    #[test]
    fn images_are_replaced_only_for_a_text_only_target() {
        let image = UserContent::Image(crate::ai::types::ImageContent {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
        });
        let messages = vec![
            Message::User(UserMessage {
                content: UserMessageContent::Blocks(vec![UserContent::text("look"), image.clone()]),
                timestamp: 0,
            }),
            Message::User(UserMessage::text("no image")),
        ];
        let mut text_only = Model::new("openai-completions", "openai", "gpt", "");
        text_only.input = vec![crate::ai::model::InputModality::Text];
        let out = transform_messages_borrowed(&messages, &text_only, None);
        assert!(matches!(out[0], Cow::Owned(_)) && matches!(out[1], Cow::Borrowed(_)));
        let Message::User(user) = &*out[0] else {
            panic!("expected a user message")
        };
        assert_eq!(
            user.content,
            UserMessageContent::Blocks(vec![
                UserContent::text("look"),
                UserContent::text(USER_IMAGE_OMITTED)
            ])
        );
        let mut with_images = text_only.clone();
        with_images
            .input
            .push(crate::ai::model::InputModality::Image);
        let out = transform_messages_borrowed(&messages, &with_images, None);
        assert!(
            out.iter()
                .all(|message| matches!(message, Cow::Borrowed(_)))
        );
    }
}
