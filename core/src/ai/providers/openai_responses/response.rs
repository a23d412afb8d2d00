//! Turns Responses stream events (`response.output_item.added`, `response.output_text.delta`,
//! ...) into [`StreamWriter`] calls (pi's `processResponsesStream`).
//!
//! Each output item is one block: a `reasoning` item a thinking block, a `message` item a text
//! block, a `function_call` item a tool call whose id is `call_id|item_id`. Deltas find their
//! block by `item_id` (then `output_index`, then, as pi does, the newest open item of the right
//! kind), so items that interleave still land in the right block.
//! `response.output_item.done` closes a block with the item's final content and signature;
//! blocks the upstream never closed are closed when the response completes.

use serde_json::Value;

use super::request::TextSignature;
use crate::ai::error::{ErrorKind, ProviderError};
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::partial_json::{parse_json_lenient, parse_streaming_json};
use crate::ai::sse::SseEvent;
use crate::ai::types::{AssistantContent, StopReason, TextContent, Usage};

/// The message of a `response.failed` event that carries no details (pi's wording).
pub(crate) const FAILED_WITHOUT_DETAILS: &str = "Unknown error (no error details in response)";

/// What kind of block an output item becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Reasoning,
    Message,
    FunctionCall,
}

/// An output item whose block is open.
#[derive(Debug)]
struct OpenItem {
    kind: Kind,
    item_id: Option<String>,
    output_index: Option<u64>,
    content_index: usize,
    /// Reasoning summary parts started so far.
    summary_parts: usize,
    /// The complete argument JSON as far as known (function calls).
    arguments: String,
    /// `function_call_arguments.done` replaced the arguments with something the streamed deltas
    /// did not add up to.
    arguments_replaced: bool,
}

/// How service-tier prices apply (OpenAI and Codex; pi's Azure provider has none).
#[derive(Clone, Debug, Default)]
pub(crate) struct Pricing {
    /// Apply the service-tier multiplier to the cost.
    pub service_tiers: bool,
    /// The tier the request asked for, used when the response does not say.
    pub requested_tier: Option<String>,
    /// A response echoing `default` for a request that asked for `flex` or `priority` is
    /// priced at the requested tier (pi's Codex rule: the ChatGPT backend echoes `default`).
    pub requested_over_default: bool,
}

impl Pricing {
    /// The tier the cost follows, given the one the response names.
    fn tier<'a>(&'a self, response_tier: Option<&'a str>) -> Option<&'a str> {
        let requested = self.requested_tier.as_deref();
        if self.requested_over_default
            && response_tier == Some("default")
            && matches!(requested, Some("flex" | "priority"))
        {
            return requested;
        }
        response_tier.or(requested)
    }
}

/// The cost multiplier of a service tier (pi: flex is half price, priority double, and 2.5x for
/// `gpt-5.5`).
pub(crate) fn service_tier_multiplier(model_id: &str, tier: Option<&str>) -> f64 {
    match tier {
        Some("flex") => 0.5,
        Some("priority") if model_id == "gpt-5.5" => 2.5,
        Some("priority") => 2.0,
        _ => 1.0,
    }
}

/// Normalised usage from a Responses `usage` object. `input_tokens` counts every prompt
/// token: the ones read from the cache (`input_tokens_details.cached_tokens`) and the ones
/// written to it (`input_tokens_details.cache_write_tokens`, billed by the GPT-5.6-era models)
/// are taken out of `input` into `cacheRead` and `cacheWrite` (pi hard-codes `cacheWrite: 0`,
/// issue #3161). `total_tokens` is the sum of the four counts, not the upstream `total_tokens`
/// (the same number for OpenAI).
pub(crate) fn parse_usage(usage: &Value, model: &Model) -> Usage {
    let number = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let cached = number("/input_tokens_details/cached_tokens");
    let written = number("/input_tokens_details/cache_write_tokens");
    let mut out = Usage {
        input: number("/input_tokens")
            .saturating_sub(cached)
            .saturating_sub(written),
        output: number("/output_tokens"),
        cache_read: cached,
        cache_write: written,
        ..Usage::default()
    };
    out.total_tokens = out.sum_of_counts();
    model.calculate_cost(&mut out);
    out
}

/// The message of a failed response: its error (`code: message`), else its incomplete reason,
/// else `fallback`.
fn failure_message(response: &Value, fallback: impl FnOnce() -> String) -> String {
    if let Some(error) = response.get("error").filter(|e| e.is_object()) {
        let code = error
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return format!("{code}: {message}");
    }
    if let Some(reason) = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
    {
        return format!("incomplete: {reason}");
    }
    fallback()
}

/// Maps a response `status` to a stop reason; the statuses that mean failure keep the upstream
/// reason in the error message (pi loses it: quirk #14). Total: an unknown status is an error
/// that names it.
pub(crate) fn map_status(status: Option<&str>, response: &Value) -> (StopReason, Option<String>) {
    match status {
        None | Some("completed" | "in_progress" | "queued") => (StopReason::Stop, None),
        // Cut short: by the token limit (`max_output_tokens`, or no reason given), a `length`
        // stop an agent may continue from; by a filter (`content_filter`), a failure that
        // keeps its reason, as Chat Completions' `content_filter` is.
        Some("incomplete") => match incomplete_reason(response) {
            Some(reason) if reason != "max_output_tokens" => (
                StopReason::Error,
                Some(format!("Response incomplete: {reason}")),
            ),
            _ => (StopReason::Length, None),
        },
        Some(status @ ("failed" | "cancelled")) => (
            StopReason::Error,
            Some(failure_message(response, || {
                format!("Response status: {status}")
            })),
        ),
        Some(other) => (
            StopReason::Error,
            Some(format!("Unknown response status: {other}")),
        ),
    }
}

/// The message of a stream `error` event (`{"type":"error","code":..,"message":..}`, or the
/// same fields under `error`).
fn error_event_message(event: &Value) -> String {
    let field = |name: &str| {
        event
            .get(name)
            .or_else(|| event.get("error").and_then(|e| e.get(name)))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    match (field("code"), field("message")) {
        (Some(code), Some(message)) => format!("Error Code {code}: {message}"),
        (None, Some(message)) => message.to_owned(),
        (Some(code), None) => format!("Error Code {code}"),
        (None, None) => "Unknown error".to_owned(),
    }
}

/// Parses one SSE `data` payload (a lone surrogate escape reads as U+FFFD, see
/// [`parse_json_lenient`]).
fn parse_event(data: &str) -> Result<Value, ProviderError> {
    parse_json_lenient(data).map_err(|error| {
        ProviderError::Decode(format!(
            "Malformed event from provider ({error}): {}",
            crate::text::prefix(data, 200)
        ))
    })
}

/// The `code` of a failed response's `error` (`server_error`, `rate_limit_exceeded`, ...).
fn failure_code(response: &Value) -> Option<&str> {
    response.pointer("/error/code").and_then(Value::as_str)
}

/// Why an `incomplete` response stopped (`incomplete_details.reason`).
fn incomplete_reason(response: &Value) -> Option<&str> {
    response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
}

fn text_block_mut(writer: &mut StreamWriter, index: usize) -> Option<&mut TextContent> {
    match writer.message_mut().content.get_mut(index) {
        Some(AssistantContent::Text(text)) => Some(text),
        _ => None,
    }
}

/// The state of one streamed response.
#[derive(Debug, Default)]
pub(crate) struct ResponseState {
    open: Vec<OpenItem>,
    pricing: Pricing,
    /// `response.completed` or `response.incomplete` arrived: the response is complete.
    pub(crate) finished: bool,
}

impl ResponseState {
    /// A state for a response priced by `pricing`.
    pub(crate) fn new(pricing: Pricing) -> Self {
        Self {
            pricing,
            ..Self::default()
        }
    }

    /// Applies one SSE event. `Err` ends the stream with that message.
    pub(super) async fn handle(
        &mut self,
        event: &SseEvent,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let value = parse_event(data)?;
        self.handle_value(&value, event.event.as_deref(), writer, model)
            .await
    }

    /// Applies one parsed event; its kind is its `type`, else `event_name` (the SSE `event:`
    /// line). `Err` ends the stream with that message.
    pub(crate) async fn handle_value(
        &mut self,
        value: &Value,
        event_name: Option<&str>,
        writer: &mut StreamWriter,
        model: &Model,
    ) -> Result<(), ProviderError> {
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event_name)
            .unwrap_or("");
        match kind {
            "response.created" => {
                if let Some(id) = value.pointer("/response/id").and_then(Value::as_str) {
                    writer.message_mut().response_id = Some(id.to_owned());
                }
            }
            "response.output_item.added" => {
                let output_index = value.get("output_index").and_then(Value::as_u64);
                if let Some(item) = value.get("item") {
                    self.item_added(item, output_index, writer).await;
                }
            }
            "response.reasoning_summary_part.added" => {
                let position = self.find_or_open(Kind::Reasoning, value, writer).await;
                self.open[position].summary_parts += 1;
            }
            "response.reasoning_summary_part.done" => {
                // pi closes every summary part with a blank line (also the last one; the final
                // text, joined from the item's parts, has none at the end).
                if let Some(position) = self.find(Kind::Reasoning, value)
                    && self.open[position].summary_parts > 0
                {
                    let index = self.open[position].content_index;
                    writer.thinking_delta(index, "\n\n").await;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let delta = value.get("delta").and_then(Value::as_str).unwrap_or("");
                if !delta.is_empty() {
                    let position = self.find_or_open(Kind::Reasoning, value, writer).await;
                    let item = &mut self.open[position];
                    if kind == "response.reasoning_summary_text.delta" {
                        item.summary_parts = item.summary_parts.max(1);
                    }
                    let index = item.content_index;
                    writer.thinking_delta(index, delta).await;
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = value.get("delta").and_then(Value::as_str).unwrap_or("");
                if !delta.is_empty() {
                    let position = self.find_or_open(Kind::Message, value, writer).await;
                    let index = self.open[position].content_index;
                    writer.text_delta(index, delta).await;
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = value.get("delta").and_then(Value::as_str).unwrap_or("");
                if let Some(position) = self.find(Kind::FunctionCall, value) {
                    let item = &mut self.open[position];
                    item.arguments.push_str(delta);
                    let index = item.content_index;
                    writer.tool_call_delta(index, delta).await;
                }
            }
            "response.function_call_arguments.done" => {
                let arguments = value.get("arguments").and_then(Value::as_str);
                if let (Some(arguments), Some(position)) =
                    (arguments, self.find(Kind::FunctionCall, value))
                {
                    self.complete_arguments(position, arguments, writer).await;
                }
            }
            "response.output_item.done" => {
                let output_index = value.get("output_index").and_then(Value::as_u64);
                if let Some(item) = value.get("item") {
                    self.item_done(item, output_index, writer).await;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                self.finish(response, writer, model).await;
            }
            "response.failed" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                self.record_usage(response, writer, model);
                let message = failure_message(response, || FAILED_WITHOUT_DETAILS.to_owned());
                return Err(ProviderError::upstream(
                    message,
                    failure_code(response),
                    None,
                ));
            }
            "error" => {
                let code = value
                    .get("code")
                    .or_else(|| value.pointer("/error/code"))
                    .and_then(Value::as_str);
                return Err(ProviderError::upstream(
                    error_event_message(value),
                    code,
                    None,
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// The open item an event refers to: by `item_id`, else by `output_index`, else the newest
    /// open item of that kind whose known ids do not all disagree with the event's.
    fn find(&self, kind: Kind, event: &Value) -> Option<usize> {
        let item_id = event.get("item_id").and_then(Value::as_str);
        let output_index = event.get("output_index").and_then(Value::as_u64);
        self.find_by(kind, item_id, output_index)
    }

    fn find_by(
        &self,
        kind: Kind,
        item_id: Option<&str>,
        output_index: Option<u64>,
    ) -> Option<usize> {
        let of_kind = || {
            self.open
                .iter()
                .enumerate()
                .rev()
                .filter(move |(_, open)| open.kind == kind)
        };
        item_id
            .and_then(|id| of_kind().find(|(_, open)| open.item_id.as_deref() == Some(id)))
            .or_else(|| {
                output_index
                    .and_then(|index| of_kind().find(|(_, open)| open.output_index == Some(index)))
            })
            .or_else(|| {
                // pi assumes items are sequential and uses the current one; so do we, unless
                // everything known about the event says it is another item.
                of_kind().find(|(_, open)| {
                    let ids = item_id.zip(open.item_id.as_deref());
                    let indexes = output_index.zip(open.output_index);
                    let comparable = ids.is_some() || indexes.is_some();
                    let differs =
                        ids.is_none_or(|(a, b)| a != b) && indexes.is_none_or(|(a, b)| a != b);
                    !(comparable && differs)
                })
            })
            .map(|(position, _)| position)
    }

    /// The open text or reasoning item an event refers to, opening one when a server streams
    /// deltas without announcing the item first.
    async fn find_or_open(
        &mut self,
        kind: Kind,
        event: &Value,
        writer: &mut StreamWriter,
    ) -> usize {
        if let Some(position) = self.find(kind, event) {
            return position;
        }
        let item_id = event.get("item_id").and_then(Value::as_str);
        let output_index = event.get("output_index").and_then(Value::as_u64);
        self.open_item(kind, item_id, output_index, "", "", writer)
            .await
    }

    async fn open_item(
        &mut self,
        kind: Kind,
        item_id: Option<&str>,
        output_index: Option<u64>,
        call_id: &str,
        name: &str,
        writer: &mut StreamWriter,
    ) -> usize {
        let content_index = match kind {
            Kind::Reasoning => writer.thinking_start().await,
            Kind::Message => writer.text_start().await,
            Kind::FunctionCall => {
                let id = match item_id {
                    Some(item_id) => format!("{call_id}|{item_id}"),
                    None => call_id.to_owned(),
                };
                writer.tool_call_start(id, name).await
            }
        };
        self.open.push(OpenItem {
            kind,
            item_id: item_id.map(str::to_owned),
            output_index,
            content_index,
            summary_parts: 0,
            arguments: String::new(),
            arguments_replaced: false,
        });
        self.open.len() - 1
    }

    async fn item_added(
        &mut self,
        item: &Value,
        output_index: Option<u64>,
        writer: &mut StreamWriter,
    ) -> Option<usize> {
        let kind = match item.get("type").and_then(Value::as_str)? {
            "reasoning" => Kind::Reasoning,
            "message" => Kind::Message,
            "function_call" => Kind::FunctionCall,
            // Built-in tool calls (web search, ...) have no block.
            _ => return None,
        };
        let item_id = item.get("id").and_then(Value::as_str);
        let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
        let name = item.get("name").and_then(Value::as_str).unwrap_or("");
        let position = self
            .open_item(kind, item_id, output_index, call_id, name, writer)
            .await;
        if kind == Kind::FunctionCall
            && let Some(arguments) = item
                .get("arguments")
                .and_then(Value::as_str)
                .filter(|a| !a.is_empty())
        {
            let open = &mut self.open[position];
            open.arguments.push_str(arguments);
            let index = open.content_index;
            writer.tool_call_delta(index, arguments).await;
        }
        Some(position)
    }

    /// `function_call_arguments.done`: the complete arguments. When they extend what was
    /// streamed, the missing suffix is sent as a delta.
    async fn complete_arguments(
        &mut self,
        position: usize,
        arguments: &str,
        writer: &mut StreamWriter,
    ) {
        let open = &mut self.open[position];
        if let Some(suffix) = arguments.strip_prefix(open.arguments.as_str()) {
            if !suffix.is_empty() {
                let index = open.content_index;
                let suffix = suffix.to_owned();
                open.arguments = arguments.to_owned();
                writer.tool_call_delta(index, suffix).await;
            }
        } else {
            open.arguments = arguments.to_owned();
            open.arguments_replaced = true;
        }
    }

    async fn item_done(
        &mut self,
        item: &Value,
        output_index: Option<u64>,
        writer: &mut StreamWriter,
    ) {
        let kind = match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => Kind::Reasoning,
            Some("message") => Kind::Message,
            Some("function_call") => Kind::FunctionCall,
            _ => return,
        };
        let item_id = item.get("id").and_then(Value::as_str);
        let position = match self.find_by(kind, item_id, output_index) {
            Some(position) => position,
            // The upstream never announced this item: open its block now.
            None => match self.item_added(item, output_index, writer).await {
                Some(position) => position,
                None => return,
            },
        };
        let open = self.open.remove(position);
        Self::close(open, Some(item), writer).await;
    }

    /// Ends the block of `open`, with the final content of `item` when the upstream sent it.
    async fn close(mut open: OpenItem, item: Option<&Value>, writer: &mut StreamWriter) {
        let index = open.content_index;
        match open.kind {
            Kind::Reasoning => {
                if let Some(item) = item {
                    let joined = |field: &str| {
                        item.get(field)
                            .and_then(Value::as_array)
                            .map(|parts| {
                                parts
                                    .iter()
                                    .map(|p| p.get("text").and_then(Value::as_str).unwrap_or(""))
                                    .collect::<Vec<_>>()
                                    .join("\n\n")
                            })
                            .unwrap_or_default()
                    };
                    let summary = joined("summary");
                    let text = if summary.is_empty() {
                        joined("content")
                    } else {
                        summary
                    };
                    if let Some(block) = writer.thinking_block_mut(index) {
                        if !text.is_empty() {
                            block.thinking = text.into();
                        }
                        block.thinking_signature = Some(item.to_string());
                    }
                }
                writer.thinking_end(index).await;
            }
            Kind::Message => {
                if let Some(item) = item {
                    let text = item.get("content").and_then(Value::as_array).map(|parts| {
                        parts
                            .iter()
                            .map(|part| match part.get("type").and_then(Value::as_str) {
                                Some("output_text") => {
                                    part.get("text").and_then(Value::as_str).unwrap_or("")
                                }
                                Some("refusal") => {
                                    part.get("refusal").and_then(Value::as_str).unwrap_or("")
                                }
                                _ => "",
                            })
                            .collect::<String>()
                    });
                    let signature = item.get("id").and_then(Value::as_str).map(|id| {
                        TextSignature::encode(id, item.get("phase").and_then(Value::as_str))
                    });
                    if let Some(block) = text_block_mut(writer, index) {
                        if let Some(text) = text {
                            block.text = text.into();
                        }
                        if signature.is_some() {
                            block.text_signature = signature;
                        }
                    }
                }
                writer.text_end(index).await;
            }
            Kind::FunctionCall => {
                if let Some(item) = item {
                    if open.arguments.is_empty()
                        && let Some(arguments) = item
                            .get("arguments")
                            .and_then(Value::as_str)
                            .filter(|a| !a.is_empty())
                    {
                        open.arguments = arguments.to_owned();
                        writer.tool_call_delta(index, arguments).await;
                    }
                    if let Some(call) = writer.tool_call_mut(index) {
                        if call.name.is_empty()
                            && let Some(name) = item.get("name").and_then(Value::as_str)
                        {
                            call.name = name.to_owned();
                        }
                        // Without a `call_id` when it was added, the call's id is empty or
                        // lacks its first part (`|<item id>`): the finished item completes it.
                        if (call.id.is_empty() || call.id.starts_with('|'))
                            && let Some(call_id) = item.get("call_id").and_then(Value::as_str)
                        {
                            call.id = match item.get("id").and_then(Value::as_str) {
                                Some(item_id) => format!("{call_id}|{item_id}"),
                                None => call_id.to_owned(),
                            };
                        }
                    }
                }
                // The deltas may not add up to the final arguments: then the `toolcall_end`
                // event and the message carry the final ones.
                let replaced = open
                    .arguments_replaced
                    .then(|| parse_streaming_json(&open.arguments))
                    .filter(Value::is_object);
                writer.tool_call_end_with(index, replaced).await;
            }
        }
    }

    fn record_usage(&self, response: &Value, writer: &mut StreamWriter, model: &Model) {
        if let Some(id) = response.get("id").and_then(Value::as_str) {
            writer.message_mut().response_id = Some(id.to_owned());
        }
        let Some(usage) = response.get("usage").filter(|u| u.is_object()) else {
            return;
        };
        let mut usage = parse_usage(usage, model);
        if self.pricing.service_tiers {
            let tier = self
                .pricing
                .tier(response.get("service_tier").and_then(Value::as_str));
            let multiplier = service_tier_multiplier(&model.id, tier);
            if multiplier != 1.0 {
                let cost = &mut usage.cost;
                cost.input *= multiplier;
                cost.output *= multiplier;
                cost.cache_read *= multiplier;
                cost.cache_write *= multiplier;
                cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
            }
        }
        writer.message_mut().usage = usage;
    }

    /// `response.completed` / `response.incomplete`: usage, cost and stop reason.
    async fn finish(&mut self, response: &Value, writer: &mut StreamWriter, model: &Model) {
        self.finished = true;
        self.record_usage(response, writer, model);
        let status = response.get("status").and_then(Value::as_str);
        let (mut stop_reason, error_message) = map_status(status, response);
        if !stop_reason.is_failure() {
            // Close, in content order, any block the upstream left open.
            let mut open = std::mem::take(&mut self.open);
            open.sort_by_key(|item| item.content_index);
            for item in open {
                Self::close(item, None, writer).await;
            }
        }
        if stop_reason == StopReason::Stop && writer.message().tool_calls().next().is_some() {
            stop_reason = StopReason::ToolUse;
        }
        let message = writer.message_mut();
        message.stop_reason = stop_reason;
        message.error_kind = error_message.as_ref().and_then(|_| {
            failure_code(response)
                .and_then(ErrorKind::from_code)
                .or_else(|| incomplete_reason(response).and_then(ErrorKind::from_stop_reason))
        });
        message.error_message = error_message;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_subtracts_cached_and_sums_the_total() {
        let mut model = Model::new("openai-responses", "openai", "gpt-5", "");
        model.cost.input = 1.0;
        model.cost.cache_read = 0.1;
        let usage = parse_usage(
            &json!({"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1051,
                    "input_tokens_details": {"cached_tokens": 400}}),
            &model,
        );
        assert_eq!(usage.token_counts(), [600, 50, 400, 0]);
        assert_eq!(usage.total_tokens, 1050);
        assert!((usage.cost.total - (600.0 + 40.0) / 1e6).abs() < 1e-15);
    }

    #[test]
    fn usage_reports_cache_writes_apart_from_input() {
        let mut model = Model::new("openai-responses", "openai", "gpt-5.6", "");
        model.cost.input = 1.0;
        model.cost.cache_read = 0.1;
        model.cost.cache_write = 1.25;
        // OpenAI's cold write: 3438 prompt tokens, 3435 of them written to the cache.
        let usage = parse_usage(
            &json!({"input_tokens": 3438, "output_tokens": 10, "total_tokens": 3448,
                    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 3435}}),
            &model,
        );
        assert_eq!(
            (usage.input, usage.cache_read, usage.cache_write),
            (3, 0, 3435)
        );
        assert_eq!(usage.total_tokens, 3448);
        assert!((usage.cost.cache_write - 3435.0 * 1.25 / 1e6).abs() < 1e-12);
        // A warm read with a small write; a gateway that over-reports never underflows.
        let usage = parse_usage(
            &json!({"input_tokens": 3438, "output_tokens": 1,
                    "input_tokens_details": {"cached_tokens": 3423, "cache_write_tokens": 12}}),
            &model,
        );
        assert_eq!(
            (usage.input, usage.cache_read, usage.cache_write),
            (3, 3423, 12)
        );
        let usage = parse_usage(
            &json!({"input_tokens": 5, "input_tokens_details":
                    {"cached_tokens": 4, "cache_write_tokens": 4}}),
            &model,
        );
        assert_eq!(usage.input, 0);
    }

    #[test]
    fn statuses_are_total_and_keep_reasons() {
        assert_eq!(
            map_status(Some("completed"), &Value::Null).0,
            StopReason::Stop
        );
        assert_eq!(map_status(None, &Value::Null).0, StopReason::Stop);
        assert_eq!(
            map_status(Some("incomplete"), &Value::Null).0,
            StopReason::Length
        );
        let cut = |reason: &str| json!({"incomplete_details": {"reason": reason}});
        assert_eq!(
            map_status(Some("incomplete"), &cut("max_output_tokens")),
            (StopReason::Length, None)
        );
        assert_eq!(
            map_status(Some("incomplete"), &cut("content_filter")),
            (
                StopReason::Error,
                Some("Response incomplete: content_filter".into())
            )
        );
        assert!(ErrorKind::from_stop_reason("content_filter").is_some());
        assert_eq!(
            map_status(Some("cancelled"), &Value::Null),
            (StopReason::Error, Some("Response status: cancelled".into()))
        );
        let failed = json!({"error": {"code": "server_error", "message": "boom"}});
        assert_eq!(
            map_status(Some("failed"), &failed).1.as_deref(),
            Some("server_error: boom")
        );
        assert_eq!(
            map_status(Some("new_status"), &Value::Null).0,
            StopReason::Error
        );
    }

    #[test]
    fn error_events() {
        assert_eq!(
            error_event_message(
                &json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow"})
            ),
            "Error Code rate_limit_exceeded: slow"
        );
        assert_eq!(
            error_event_message(&json!({"type": "error", "error": {"message": "nested"}})),
            "nested"
        );
    }

    #[test]
    fn tiers() {
        assert_eq!(service_tier_multiplier("gpt-5", Some("flex")), 0.5);
        assert_eq!(service_tier_multiplier("gpt-5.5", Some("priority")), 2.5);
        assert_eq!(service_tier_multiplier("gpt-5", Some("default")), 1.0);
    }
}
