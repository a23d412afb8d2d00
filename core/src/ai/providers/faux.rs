//! The faux provider: an in-process, scripted provider for tests, examples and offline demos
//! (pi's `providers/faux.ts`).
//!
//! Each request pops one scripted response — an [`AssistantMessage`] or a factory that builds
//! one from the request — and streams it with the exact event order of a real provider:
//! `start`, then per block `*_start`, `*_delta`…, `*_end`, then `done` (or `error` for a scripted
//! error or aborted message). Text is cut into small deltas, optionally paced.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;

use crate::ai::api_provider::ApiProvider;
use crate::ai::error::ProviderError;
use crate::ai::event_stream::{AssistantMessageEventStream, StreamWriter, channel};
use crate::ai::model::{InputModality, Model};
use crate::ai::options::{CacheRetention, StreamOptions};
use crate::ai::registry::{register_api_provider, unregister_api_provider};
use crate::ai::types::{
    AssistantContent, AssistantMessage, Context, Message, StopReason, TextContent, ThinkingContent,
    ToolCall, Usage, UserContent, UserMessageContent, now_ms,
};
use crate::panics::panic_text;

/// Error text when a request finds no scripted response.
pub const NO_MORE_RESPONSES: &str = "No more faux responses queued";

/// Builds a response from the request: `(context, options, call number starting at 1, model)`.
pub type FauxFactory =
    Arc<dyn Fn(&Context, &StreamOptions, usize, &Model) -> AssistantMessage + Send + Sync>;

/// Why a scripted response could not be played. Its `Display` is the failed message's
/// `errorMessage`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FauxError {
    /// A factory failed with this message (as pi's throwing factory does).
    #[error("{0}")]
    Factory(String),
    /// A factory panicked; the panic's message.
    #[error("faux response factory panicked: {0}")]
    Panicked(String),
    /// The script is used up.
    #[error("{NO_MORE_RESPONSES}")]
    NoMoreResponses,
    /// A response written in JSON ([`faux_message_from_json`]) does not read as a message.
    #[error("{0}")]
    InvalidMessage(String),
}

impl From<String> for FauxError {
    /// A factory's failure message.
    fn from(message: String) -> Self {
        Self::Factory(message)
    }
}

impl From<&str> for FauxError {
    /// A factory's failure message.
    fn from(message: &str) -> Self {
        Self::Factory(message.to_owned())
    }
}

/// Builds a response from the request asynchronously (for bindings whose factories are host
/// callbacks or coroutines): `Err(error)` ends the stream with that error, as pi's throwing
/// factory does.
pub type FauxAsyncFactory = Arc<
    dyn Fn(
            Context,
            StreamOptions,
            usize,
            Model,
        ) -> BoxFuture<'static, Result<AssistantMessage, FauxError>>
        + Send
        + Sync,
>;

/// One scripted response.
#[derive(Clone)]
#[non_exhaustive]
pub enum FauxResponse {
    /// Stream this message.
    Message(AssistantMessage),
    /// Build the message from the request, then stream it.
    Factory(FauxFactory),
    /// Build the message from the request asynchronously, then stream it.
    AsyncFactory(FauxAsyncFactory),
}

impl std::fmt::Debug for FauxResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Message(message) => f.debug_tuple("Message").field(message).finish(),
            Self::Factory(_) => f.write_str("Factory(..)"),
            Self::AsyncFactory(_) => f.write_str("AsyncFactory(..)"),
        }
    }
}

impl From<AssistantMessage> for FauxResponse {
    fn from(message: AssistantMessage) -> Self {
        Self::Message(message)
    }
}

/// Settings of a faux provider. The JSON form (used by the C ABI) has the names of pi's
/// `registerFauxProvider` options: `{"api", "provider", "models": ["faux-1"],
/// "tokensPerSecond", "tokenSize": {"min", "max"}}`; unknown keys are refused.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct FauxOptions {
    /// The api id to register under (default: a fresh `faux:<n>`).
    pub api: Option<String>,
    /// The provider name on its models (default `faux`).
    pub provider: String,
    /// Model ids to offer (default `["faux-1"]`; an empty list means the default).
    #[serde(rename = "models")]
    pub model_ids: Vec<String>,
    /// Pace output at this many tokens per second (default: as fast as the consumer reads).
    pub tokens_per_second: Option<f64>,
    /// Delta size range in "tokens" of 4 characters (default 3..=5).
    #[serde(deserialize_with = "token_size")]
    pub token_size: (usize, usize),
}

/// pi's `tokenSize: {min, max}`.
fn token_size<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<(usize, usize), D::Error> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct MinMax {
        min: usize,
        max: usize,
    }
    let MinMax { min, max } = MinMax::deserialize(deserializer)?;
    Ok((min, max))
}

/// A [`FauxOptions`] value that cannot work, naming the field by its JSON name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid faux option `{field}`: {reason}")]
pub struct FauxOptionsError {
    /// The field, by its JSON name (`tokensPerSecond`, `tokenSize`, `models`, `provider`, `api`).
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl FauxOptions {
    /// Checks that every field can work: `tokensPerSecond` a finite number above 0,
    /// `tokenSize` with `1 <= min <= max`, `models` non-empty distinct ids, `provider` and
    /// `api` not empty.
    pub fn validate(&self) -> Result<(), FauxOptionsError> {
        let invalid = |field, reason: String| Err(FauxOptionsError { field, reason });
        if let Some(rate) = self.tokens_per_second
            && !(rate.is_finite() && rate > 0.0)
        {
            return invalid(
                "tokensPerSecond",
                format!("must be a finite number above 0, not {rate}"),
            );
        }
        let (min, max) = self.token_size;
        if min == 0 || min > max {
            return invalid(
                "tokenSize",
                format!("needs 1 <= min <= max, got min {min} and max {max}"),
            );
        }
        if let Some(empty) = self.model_ids.iter().position(String::is_empty) {
            return invalid("models", format!("model id {empty} is empty"));
        }
        for (index, id) in self.model_ids.iter().enumerate() {
            if self.model_ids[..index].contains(id) {
                return invalid("models", format!("model id `{id}` is listed twice"));
            }
        }
        if self.provider.is_empty() {
            return invalid("provider", "must not be empty".to_owned());
        }
        if self.api.as_deref() == Some("") {
            return invalid("api", "must not be empty".to_owned());
        }
        Ok(())
    }
}

impl Default for FauxOptions {
    fn default() -> Self {
        Self {
            api: None,
            provider: "faux".to_owned(),
            model_ids: vec!["faux-1".to_owned()],
            tokens_per_second: None,
            token_size: (3, 5),
        }
    }
}

struct FauxState {
    api: String,
    models: Vec<Model>,
    responses: Mutex<VecDeque<FauxResponse>>,
    calls: AtomicUsize,
    options: FauxOptions,
    /// The last prompt of each session, for pi's prompt-cache simulation.
    prompt_cache: Mutex<HashMap<String, Vec<u16>>>,
}

/// A registered faux provider. Cloning shares the script.
#[derive(Clone)]
pub struct FauxProvider {
    state: Arc<FauxState>,
}

impl std::fmt::Debug for FauxProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FauxProvider")
            .field("api", &self.state.api)
            .field("pending", &self.pending_count())
            .finish()
    }
}

struct FauxApi(Arc<FauxState>);

impl FauxProvider {
    /// Registers a faux provider with default settings.
    pub fn register() -> Self {
        Self::register_with(FauxOptions::default())
    }

    /// Registers a faux provider after checking its options ([`FauxOptions::validate`]); the C
    /// ABI and Python register through this.
    pub fn try_register_with(options: FauxOptions) -> Result<Self, FauxOptionsError> {
        options.validate()?;
        Ok(Self::register_with(options))
    }

    /// Registers a faux provider. Options that cannot work are made to: an empty model list
    /// is the default one, a zero token size is 1, a rate that is not a positive finite number
    /// leaves the output unpaced ([`try_register_with`](Self::try_register_with) refuses them
    /// instead).
    pub fn register_with(options: FauxOptions) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let api = options
            .api
            .clone()
            .unwrap_or_else(|| format!("faux:{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        let mut options = options;
        if options.model_ids.is_empty() {
            options.model_ids = FauxOptions::default().model_ids;
        }
        let models = options
            .model_ids
            .iter()
            .map(|id| {
                let mut model = Model::new(api.clone(), options.provider.clone(), id.clone(), "");
                model.input = vec![InputModality::Text, InputModality::Image];
                model.context_window = 128_000;
                model.max_tokens = 16_384;
                model
            })
            .collect();
        let state = Arc::new(FauxState {
            api,
            models,
            responses: Mutex::new(VecDeque::new()),
            calls: AtomicUsize::new(0),
            options,
            prompt_cache: Mutex::new(HashMap::new()),
        });
        register_api_provider(Arc::new(FauxApi(Arc::clone(&state))));
        Self { state }
    }

    /// The api id it is registered under.
    pub fn api(&self) -> &str {
        &self.state.api
    }

    /// The first model.
    pub fn model(&self) -> Model {
        self.state.models[0].clone()
    }

    /// The model with `id`, if offered.
    pub fn get_model(&self, id: &str) -> Option<Model> {
        self.state.models.iter().find(|m| m.id == id).cloned()
    }

    /// All models.
    pub fn models(&self) -> &[Model] {
        &self.state.models
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<FauxResponse>> {
        self.state
            .responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the script.
    pub fn set_responses(&self, responses: impl IntoIterator<Item = FauxResponse>) {
        let mut queue = self.queue();
        queue.clear();
        queue.extend(responses);
    }

    /// Appends to the script.
    pub fn append_responses(&self, responses: impl IntoIterator<Item = FauxResponse>) {
        self.queue().extend(responses);
    }

    /// Appends one response.
    pub fn push(&self, response: impl Into<FauxResponse>) {
        self.queue().push_back(response.into());
    }

    /// Responses not yet used.
    pub fn pending_count(&self) -> usize {
        self.queue().len()
    }

    /// Requests served so far.
    pub fn call_count(&self) -> usize {
        self.state.calls.load(Ordering::Relaxed)
    }

    /// Removes the provider from the registry.
    pub fn unregister(&self) {
        unregister_api_provider(&self.state.api);
    }
}

impl ApiProvider for FauxApi {
    fn api(&self) -> &str {
        &self.0.api
    }

    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> AssistantMessageEventStream {
        if let Some(failed) = AssistantMessageEventStream::outside_runtime(model) {
            return failed;
        }
        let call = self.0.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let response = self
            .0
            .responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        let (mut writer, stream) = channel(model, options.signal.clone());
        let scripted = match response {
            None => Scripted::Ready(Err(FauxError::NoMoreResponses)),
            Some(FauxResponse::Message(message)) => Scripted::Ready(Ok(message)),
            Some(FauxResponse::Factory(factory)) => Scripted::Ready(
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    factory(context, options, call, model)
                }))
                .map_err(|panic| FauxError::Panicked(panic_text(&*panic))),
            ),
            Some(FauxResponse::AsyncFactory(factory)) => Scripted::Pending(factory(
                context.clone(),
                options.clone(),
                call,
                model.clone(),
            )),
        };
        let prompt = Prompt::new(context, options);
        let state = Arc::clone(&self.0);
        let options = options.clone();
        let model = model.clone();
        let span = writer.open_span();
        let batched = writer.batched(|mut writer| async move {
            let scripted = match scripted {
                Scripted::Ready(result) => result,
                Scripted::Pending(future) => std::panic::AssertUnwindSafe(future)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| Err(FauxError::Panicked(panic_text(&*panic)))),
            };
            match scripted {
                Ok(message) => {
                    let usage = state.usage_estimate(&message.content, &prompt, &options);
                    play(writer, message, &model, usage, &state.options, call).await;
                }
                Err(error) => {
                    // pi estimates the usage of the failure message too.
                    writer.message_mut().usage = state.usage_estimate(&[], &prompt, &options);
                    writer.fail(error.to_string()).await;
                }
            }
        });
        // A panic in this task drops the writer, which the stream reports as an error event.
        tokio::spawn(tracing::Instrument::instrument(batched, span));
        stream
    }
}

/// Deterministic delta sizes (no dependency on a random crate, and reproducible tests).
struct Chunker {
    seed: u64,
    min: usize,
    max: usize,
}

impl Chunker {
    fn next_chars(&mut self) -> usize {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let span = (self.max.saturating_sub(self.min) + 1) as u64;
        (self.min + (self.seed % span) as usize).max(1) * 4
    }

    fn split<'a>(&mut self, text: &'a str) -> Vec<&'a str> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let end = crate::text::ceil_boundary(rest, self.next_chars());
            pieces.push(&rest[..end]);
            rest = &rest[end..];
        }
        pieces
    }
}

async fn pace(writer: &StreamWriter, settings: &FauxOptions, chars: usize) -> bool {
    match settings.tokens_per_second {
        Some(rate) if rate.is_finite() && rate > 0.0 => {
            let seconds = (chars as f64 / 4.0) / rate;
            // A tiny rate gives an unrepresentable wait: at most a day, never a panic.
            let wait = Duration::try_from_secs_f64(seconds)
                .unwrap_or(Duration::from_secs(86_400))
                .min(Duration::from_secs(86_400));
            let sleep = tokio::time::sleep(wait);
            match writer.signal() {
                Some(signal) => {
                    tokio::select! {
                        () = sleep => {}
                        () = signal.cancelled() => {}
                    }
                }
                None => sleep.await,
            }
        }
        // Unpaced: give the runtime back its thread only when this task's cooperative budget
        // is spent (about every hundred deltas), not after every delta. A `yield_now` per
        // delta cost a pass of the runtime's I/O driver (a system call) per event.
        _ => tokio::task::consume_budget().await,
    }
    !writer.is_aborted()
}

/// A response that is ready, or a factory's future.
enum Scripted {
    Ready(Result<AssistantMessage, FauxError>),
    Pending(BoxFuture<'static, Result<AssistantMessage, FauxError>>),
}

/// pi's `estimateTokens`: a quarter of the text's length in UTF-16 code units, rounded up.
fn estimate_tokens(units: usize) -> u64 {
    units.div_ceil(4) as u64
}

/// The serialized prompt as the usage estimate needs it: its length in UTF-16 code units
/// (JavaScript string indices), and the units themselves only for the prompt-cache simulation
/// of a session. A big tool result in the context then costs one transient copy here, not a
/// UTF-16 copy kept for the whole stream.
struct Prompt {
    len: usize,
    units: Option<Vec<u16>>,
}

impl Prompt {
    fn new(context: &Context, options: &StreamOptions) -> Self {
        let cached =
            options.session_id.is_some() && options.cache_retention != Some(CacheRetention::None);
        let mut prompt = Self {
            len: 0,
            units: cached.then(Vec::new),
        };
        // Counted (and, for a session, encoded) piece by piece: no copy of the context's text.
        serialize_context(context, &mut |piece| {
            prompt.len += piece.encode_utf16().count();
            if let Some(units) = &mut prompt.units {
                units.extend(piece.encode_utf16());
            }
        });
        prompt
    }
}

/// pi's `serializeContext`, handed to `out` piece by piece.
fn serialize_context(context: &Context, out: &mut dyn FnMut(&str)) {
    let mut first = true;
    let mut part = |out: &mut dyn FnMut(&str)| {
        if !std::mem::take(&mut first) {
            out("\n\n");
        }
    };
    if let Some(system) = context.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        part(out);
        out("system:");
        out(system);
    }
    for message in &context.messages {
        part(out);
        out(message.role());
        out(":");
        match message {
            Message::User(user) => match &user.content {
                UserMessageContent::Text(text) => out(text),
                UserMessageContent::Blocks(blocks) => push_user_blocks(out, blocks),
            },
            Message::Assistant(assistant) => out(&assistant_text(&assistant.content)),
            Message::ToolResult(result) => {
                out(&result.tool_name);
                for block in &result.content {
                    out("\n");
                    push_user_blocks(out, std::slice::from_ref(block));
                }
            }
        }
    }
    if let Some(tools) = context.tools.as_ref().filter(|tools| !tools.is_empty()) {
        part(out);
        out("tools:");
        out(&serde_json::to_string(tools).unwrap_or_default());
    }
}

/// The text of user content blocks, one per line, handed to `out`.
fn push_user_blocks(out: &mut dyn FnMut(&str), blocks: &[UserContent]) {
    for (index, block) in blocks.iter().enumerate() {
        if index > 0 {
            out("\n");
        }
        match block {
            UserContent::Text(text) => out(&text.text),
            UserContent::Image(image) => out(&format!(
                "[image:{}:{}]",
                image.mime_type,
                image.data.encode_utf16().count()
            )),
        }
    }
}

fn assistant_text(content: &[AssistantContent]) -> String {
    content
        .iter()
        .map(|block| match block {
            AssistantContent::Text(text) => text.text.to_string(),
            AssistantContent::Thinking(thinking) => thinking.thinking.to_string(),
            AssistantContent::ToolCall(call) => format!(
                "{}:{}",
                call.name,
                serde_json::to_string(&call.arguments).unwrap_or_default()
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl FauxState {
    /// pi's `withUsageEstimate`: input and output at four characters a token; with a session id
    /// (and a retention other than none), the common prefix with the session's previous prompt
    /// counts as cache reads and the rest as cache writes.
    fn usage_estimate(
        &self,
        content: &[AssistantContent],
        prompt: &Prompt,
        options: &StreamOptions,
    ) -> Usage {
        let prompt_tokens = estimate_tokens(prompt.len);
        let output = estimate_tokens(assistant_text(content).encode_utf16().count());
        let mut input = prompt_tokens;
        let (mut cache_read, mut cache_write) = (0, 0);
        if let Some(session) = options.session_id.as_deref()
            && options.cache_retention != Some(CacheRetention::None)
        {
            let mut cache = self
                .prompt_cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let units = prompt.units.as_deref().unwrap_or_default();
            match cache.get(session) {
                Some(previous) => {
                    let cached = previous
                        .iter()
                        .zip(units)
                        .take_while(|(a, b)| a == b)
                        .count();
                    cache_read = estimate_tokens(cached);
                    cache_write = estimate_tokens(prompt.len - cached);
                    input = prompt_tokens.saturating_sub(cache_read);
                }
                None => cache_write = prompt_tokens,
            }
            cache.insert(session.to_owned(), units.to_vec());
        }
        Usage {
            input,
            output,
            cache_read,
            cache_write,
            total_tokens: input + output + cache_read + cache_write,
            ..Usage::default()
        }
    }
}

async fn play(
    mut writer: StreamWriter,
    message: AssistantMessage,
    model: &Model,
    usage: Usage,
    settings: &FauxOptions,
    call: usize,
) {
    if writer.is_aborted() {
        return writer.fail(ProviderError::Aborted).await;
    }
    writer.start().await;
    let mut chunker = Chunker {
        seed: 0x9E37_79B9_7F4A_7C15 ^ call as u64,
        min: settings.token_size.0.max(1),
        max: settings.token_size.1.max(settings.token_size.0.max(1)),
    };
    for block in &message.content {
        match block {
            AssistantContent::Text(text) => {
                let index = writer.text_start().await;
                for piece in chunker.split(&text.text) {
                    if !pace(&writer, settings, piece.len()).await {
                        return writer.fail(ProviderError::Aborted).await;
                    }
                    writer.text_delta(index, piece).await;
                }
                writer.message_mut().content[index] = AssistantContent::Text(text.clone());
                writer.text_end(index).await;
            }
            AssistantContent::Thinking(thinking) => {
                let index = writer.thinking_start().await;
                for piece in chunker.split(&thinking.thinking) {
                    if !pace(&writer, settings, piece.len()).await {
                        return writer.fail(ProviderError::Aborted).await;
                    }
                    writer.thinking_delta(index, piece).await;
                }
                if let Some(block) = writer.thinking_block_mut(index) {
                    block
                        .thinking_signature
                        .clone_from(&thinking.thinking_signature);
                    block.redacted = thinking.redacted;
                }
                writer.thinking_end(index).await;
            }
            AssistantContent::ToolCall(tool_call) => {
                let index = writer.tool_call_start(&tool_call.id, &tool_call.name).await;
                let json = serde_json::to_string(&tool_call.arguments).unwrap_or_default();
                for piece in chunker.split(&json) {
                    if !pace(&writer, settings, piece.len()).await {
                        return writer.fail(ProviderError::Aborted).await;
                    }
                    writer.tool_call_delta(index, piece).await;
                }
                if let Some(block) = writer.tool_call_mut(index) {
                    block
                        .thought_signature
                        .clone_from(&tool_call.thought_signature);
                }
                writer.tool_call_end(index).await;
            }
        }
    }
    let out = writer.message_mut();
    out.stop_reason = message.stop_reason;
    out.error_message.clone_from(&message.error_message);
    // A scripted failure may say what kind it is (`errorKind`, `httpStatus`, `retryAfterMs`).
    out.error_kind = message.error_kind;
    out.http_status = message.http_status;
    out.retry_after_ms = message.retry_after_ms;
    out.response_id.clone_from(&message.response_id);
    out.usage = usage;
    model.calculate_cost(&mut out.usage);
    if message.stop_reason == StopReason::Aborted {
        // A scripted aborted message ends as an abort even though no token fired.
        let text = message
            .error_message
            .unwrap_or_else(|| "Request was aborted".to_owned());
        let mut final_message = writer.message().clone();
        final_message.error_message = Some(text);
        return finish_aborted(writer, final_message).await;
    }
    writer.done().await;
}

async fn finish_aborted(writer: StreamWriter, message: AssistantMessage) {
    writer.fail_with(StopReason::Aborted, message).await;
}

/// A text block.
pub fn faux_text(text: impl Into<String>) -> AssistantContent {
    AssistantContent::Text(TextContent::new(text.into()))
}

/// A thinking block.
pub fn faux_thinking(thinking: impl Into<String>) -> AssistantContent {
    AssistantContent::Thinking(ThinkingContent {
        thinking: thinking.into().into(),
        ..ThinkingContent::default()
    })
}

/// A tool call with a fresh id `tool:<n>`.
pub fn faux_tool_call(name: impl Into<String>, arguments: serde_json::Value) -> AssistantContent {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    faux_tool_call_with_id(
        format!("tool:{}", NEXT.fetch_add(1, Ordering::Relaxed)),
        name,
        arguments,
    )
}

/// A tool call with the given id.
pub fn faux_tool_call_with_id(
    id: impl Into<String>,
    name: impl Into<String>,
    arguments: serde_json::Value,
) -> AssistantContent {
    AssistantContent::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        thought_signature: None,
    })
}

/// An assistant message to script. Its stop reason is `toolUse` when it has tool calls, else
/// `stop`; api, provider and model are filled in by the provider that plays it.
pub fn faux_assistant_message(content: Vec<AssistantContent>) -> AssistantMessage {
    let stop_reason = if content
        .iter()
        .any(|block| matches!(block, AssistantContent::ToolCall(_)))
    {
        StopReason::ToolUse
    } else {
        StopReason::Stop
    };
    AssistantMessage {
        content,
        stop_reason,
        timestamp: now_ms(),
        ..AssistantMessage::default()
    }
}

/// Reads a scripted response written in short JSON (what the C and Python bindings accept): a
/// string (one text block), an array of content blocks, or an assistant message object whose
/// `role`, `api`, `provider`, `model`, `usage`, `timestamp` and `stopReason` may be left out
/// (`content` may be a string). A missing `stopReason` is `toolUse` when the content has a tool
/// call, else `stop`; `stopReason: "error"` with an `errorMessage` scripts a failure.
pub fn faux_message_from_json(
    value: serde_json::Value,
    model: &Model,
) -> Result<AssistantMessage, FauxError> {
    use serde_json::{Value, json};
    let mut message = match value {
        Value::String(text) => serde_json::Map::from_iter([("content".to_owned(), json!(text))]),
        Value::Array(blocks) => {
            serde_json::Map::from_iter([("content".to_owned(), Value::Array(blocks))])
        }
        Value::Object(message) => message,
        other => {
            return Err(FauxError::InvalidMessage(format!(
                "expected a message object, a list of content blocks or a string, found {other}"
            )));
        }
    };
    match message.get("role") {
        None => {}
        Some(Value::String(role)) if role == "assistant" => {}
        Some(role) => {
            return Err(FauxError::InvalidMessage(format!(
                "expected role `assistant`, found {role}"
            )));
        }
    }
    let content = match message.remove("content") {
        None | Some(Value::Null) => Value::Array(Vec::new()),
        Some(Value::String(text)) => json!([{"type": "text", "text": text}]),
        Some(content) => content,
    };
    let has_tool_call = content.as_array().is_some_and(|blocks| {
        blocks
            .iter()
            .any(|block| block.get("type").and_then(Value::as_str) == Some("toolCall"))
    });
    message.insert("content".to_owned(), content);
    message.entry("api").or_insert_with(|| json!(model.api));
    message
        .entry("provider")
        .or_insert_with(|| json!(model.provider));
    message.entry("model").or_insert_with(|| json!(model.id));
    message
        .entry("timestamp")
        .or_insert_with(|| json!(now_ms()));
    message
        .entry("stopReason")
        .or_insert_with(|| json!(if has_tool_call { "toolUse" } else { "stop" }));
    serde_json::from_value(Value::Object(message))
        .map_err(|error| FauxError::InvalidMessage(error.to_string()))
}

/// A scripted failure: streams `content`, then ends with `error` and this message.
pub fn faux_error_message(
    content: Vec<AssistantContent>,
    error: impl Into<String>,
) -> AssistantMessage {
    AssistantMessage {
        stop_reason: StopReason::Error,
        error_message: Some(error.into()),
        ..faux_assistant_message(content)
    }
}
