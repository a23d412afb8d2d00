//! The agent layer: a stateful [`Agent`] over the stateless [`agent_loop()`].
//!
//! An agent owns a transcript, a tool table and settings; [`Agent::prompt`] runs the loop on a
//! tokio task and returns when the run has ended. Every run reports one event stream
//! ([`AgentEvent`]) to any number of subscribers, in pi's order. Model failures, tool failures
//! and aborts are not errors: they end the run with a message in the transcript, and the agent
//! is idle again.

pub mod agent_loop;
pub mod config;
pub mod error;
pub mod event;
pub mod event_stream;
pub mod message;
pub mod proxy;
pub mod queue;
pub mod snapshot;
pub mod tool;
mod tool_calls;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use futures::FutureExt;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use self::agent_loop::{run_agent_loop, run_agent_loop_continue};
pub use self::config::{
    AfterToolCall, AfterToolCallContext, AfterToolCallResult, AgentContext, AgentLoopConfig,
    BeforeToolCall, BeforeToolCallContext, BeforeToolCallResult, ConvertToLlm, GetApiKey,
    MessageSource, ShouldStopAfterTurn, ShouldStopAfterTurnContext, StreamFn, TransformContext,
    default_stream_fn,
};
pub use self::error::AgentError;
pub use self::event::AgentEvent;
pub use self::event_stream::{AgentEventStream, agent_loop, agent_loop_continue};
pub use self::message::{AgentMessage, CustomMessage, default_convert_to_llm};
pub use self::proxy::{ProxyOptions, proxy_stream_fn, stream_proxy};
pub use self::queue::{MessageQueue, QueueMode};
pub use self::snapshot::{AgentSnapshot, SNAPSHOT_VERSION};
pub use self::tool::{
    AgentTool, AgentToolResult, FnTool, ToolCallContext, ToolError, ToolExecutionMode, ToolUpdates,
};
pub use self::tool_calls::{TOOL_ABORTED, TOOL_BLOCKED};

use crate::ai::event_stream::PartialMessage;
use crate::ai::model::Model;
use crate::ai::options::{StreamOptions, ThinkingLevel};
use crate::ai::providers::faux::panic_text;
use crate::ai::types::{
    ImageContent, TextContent, UserContent, UserMessage, UserMessageContent, now_ms,
};

/// A subscriber: called synchronously, in order, for every event of every run. The loop waits
/// for it, so keep it quick. A subscriber that panics does not break the run or starve the
/// others; the panic is recorded (see [`Agent::listener_errors`]).
pub type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// How to build an [`Agent`]. `Default` gives pi's defaults.
#[derive(Clone, Default)]
pub struct AgentOptions {
    /// The system prompt.
    pub system_prompt: String,
    /// The model (default: pi's placeholder model `unknown`, which no provider serves).
    pub model: Option<Model>,
    /// Reasoning level (`None` = off).
    pub thinking_level: Option<ThinkingLevel>,
    /// Tools.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// A transcript to start from.
    pub messages: Vec<AgentMessage>,
    /// Parallel (default) or sequential tool calls.
    pub tool_execution: ToolExecutionMode,
    /// How many steering messages one poll takes.
    pub steering_mode: QueueMode,
    /// How many follow-up messages one poll takes.
    pub follow_up_mode: QueueMode,
    /// How the model is called (default: [`crate::ai::stream_simple`]).
    pub stream_fn: Option<StreamFn>,
    /// Transcript → LLM messages (default: drop custom messages).
    pub convert_to_llm: Option<ConvertToLlm>,
    /// Per-call API key lookup.
    pub get_api_key: Option<GetApiKey>,
    /// Options for every LLM call: API key, temperature, max tokens, headers, session id.
    /// (`signal` and `reasoning` are set by the agent.)
    pub stream_options: StreamOptions,
    /// Rewrites the transcript before each LLM call.
    pub transform_context: Option<TransformContext>,
    /// Runs before each tool call (may block it or replace its arguments).
    pub before_tool_call: Option<BeforeToolCall>,
    /// Runs after each executed tool call (may replace parts of its result).
    pub after_tool_call: Option<AfterToolCall>,
    /// Asked after each turn whether to stop.
    pub should_stop_after_turn: Option<ShouldStopAfterTurn>,
    /// Watchdog for a model stream that stops sending.
    pub stream_idle_timeout: Option<std::time::Duration>,
    /// Watchdog for a tool call that never finishes.
    pub tool_timeout: Option<std::time::Duration>,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("system_prompt", &self.system_prompt)
            .field("model", &self.model.as_ref().map(|m| &m.id))
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// pi's `DEFAULT_MODEL`: a placeholder that makes the first prompt fail clearly.
pub fn placeholder_model() -> Model {
    let mut model = Model::new("unknown", "unknown", "unknown", "");
    model.input = Vec::new();
    model.context_window = 0;
    model.max_tokens = 0;
    model
}

/// What `streaming_message` holds.
#[derive(Clone, Debug)]
enum Streaming {
    Whole(AgentMessage),
    Partial(PartialMessage),
}

#[derive(Debug)]
struct State {
    system_prompt: String,
    model: Model,
    thinking_level: Option<ThinkingLevel>,
    tools: Vec<Arc<dyn AgentTool>>,
    messages: Vec<AgentMessage>,
    is_streaming: bool,
    streaming: Option<Streaming>,
    pending_tool_calls: BTreeSet<String>,
    error_message: Option<String>,
    listener_errors: Vec<String>,
}

impl std::fmt::Debug for dyn AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AgentTool({})", self.name())
    }
}

#[derive(Clone)]
struct Settings {
    tool_execution: ToolExecutionMode,
    stream_fn: StreamFn,
    convert_to_llm: ConvertToLlm,
    get_api_key: Option<GetApiKey>,
    stream_options: StreamOptions,
    transform_context: Option<TransformContext>,
    before_tool_call: Option<BeforeToolCall>,
    after_tool_call: Option<AfterToolCall>,
    should_stop_after_turn: Option<ShouldStopAfterTurn>,
    stream_idle_timeout: Option<std::time::Duration>,
    tool_timeout: Option<std::time::Duration>,
}

struct ActiveRun {
    signal: CancellationToken,
    idle: watch::Receiver<bool>,
}

struct Inner {
    state: Mutex<State>,
    settings: Mutex<Settings>,
    listeners: Mutex<Vec<(u64, Listener)>>,
    next_listener: AtomicU64,
    run: Mutex<Option<ActiveRun>>,
    steering: Mutex<MessageQueue>,
    follow_up: Mutex<MessageQueue>,
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every critical section
/// here is a plain field update).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A stateful agent. Cheap to clone: clones share the agent (so one task can `abort` while
/// another awaits `prompt`).
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.inner.state);
        f.debug_struct("Agent")
            .field("model", &state.model.id)
            .field("messages", &state.messages.len())
            .field("is_streaming", &state.is_streaming)
            .finish_non_exhaustive()
    }
}

/// Handle returned by [`Agent::subscribe`].
#[derive(Debug)]
pub struct Subscription {
    id: u64,
    agent: Weak<Inner>,
}

impl Subscription {
    /// Stops delivering events to this subscriber (events already being delivered finish).
    pub fn unsubscribe(self) {
        if let Some(inner) = self.agent.upgrade() {
            lock(&inner.listeners).retain(|(id, _)| *id != self.id);
        }
    }
}

/// What a run starts from.
enum RunStart {
    Prompt(Vec<AgentMessage>, bool),
    Continue,
}

impl Agent {
    /// Creates an agent.
    pub fn new(options: AgentOptions) -> Self {
        let state = State {
            system_prompt: options.system_prompt,
            model: options.model.unwrap_or_else(placeholder_model),
            thinking_level: options.thinking_level,
            tools: options.tools,
            messages: options.messages,
            is_streaming: false,
            streaming: None,
            pending_tool_calls: BTreeSet::new(),
            error_message: None,
            listener_errors: Vec::new(),
        };
        let settings = Settings {
            tool_execution: options.tool_execution,
            stream_fn: options.stream_fn.unwrap_or_else(default_stream_fn),
            convert_to_llm: options
                .convert_to_llm
                .unwrap_or_else(|| Arc::new(default_convert_to_llm)),
            get_api_key: options.get_api_key,
            stream_options: options.stream_options,
            transform_context: options.transform_context,
            before_tool_call: options.before_tool_call,
            after_tool_call: options.after_tool_call,
            should_stop_after_turn: options.should_stop_after_turn,
            stream_idle_timeout: options.stream_idle_timeout,
            tool_timeout: options.tool_timeout,
        };
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                settings: Mutex::new(settings),
                listeners: Mutex::new(Vec::new()),
                next_listener: AtomicU64::new(1),
                run: Mutex::new(None),
                steering: Mutex::new(MessageQueue::new(options.steering_mode)),
                follow_up: Mutex::new(MessageQueue::new(options.follow_up_mode)),
            }),
        }
    }

    /// Adds a subscriber for all events of all later runs.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        lock(&self.inner.listeners).push((id, Arc::new(listener)));
        Subscription {
            id,
            agent: Arc::downgrade(&self.inner),
        }
    }

    /// Sends a text prompt (one user message with one text block) and waits until the run ends.
    pub async fn prompt(&self, text: impl Into<String>) -> Result<(), AgentError> {
        self.prompt_messages(vec![UserMessage::text(text).into()])
            .await
    }

    /// Sends a prompt with images.
    pub async fn prompt_with_images(
        &self,
        text: impl Into<String>,
        images: Vec<ImageContent>,
    ) -> Result<(), AgentError> {
        let mut blocks = vec![UserContent::Text(TextContent::new(text))];
        blocks.extend(images.into_iter().map(UserContent::Image));
        let message = UserMessage {
            content: UserMessageContent::Blocks(blocks),
            timestamp: now_ms(),
        };
        self.prompt_messages(vec![message.into()]).await
    }

    /// Sends messages as the prompt and waits until the run ends. Fails only when a run is
    /// already active (pi's message); model and tool failures end up in the transcript.
    pub async fn prompt_messages(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        self.run(
            RunStart::Prompt(messages, false),
            AgentError::AlreadyProcessingPrompt,
        )
        .await
    }

    /// Continues from the transcript: from a user or tool-result tail it calls the model again;
    /// from an assistant tail it runs queued steering (else follow-up) messages.
    pub async fn continue_run(&self) -> Result<(), AgentError> {
        let start = {
            if lock(&self.inner.run).is_some() {
                return Err(AgentError::AlreadyProcessingContinue);
            }
            let state = lock(&self.inner.state);
            match state.messages.last() {
                None => return Err(AgentError::NothingToContinue),
                Some(last) if last.as_assistant().is_some() => {
                    drop(state);
                    let steering = lock(&self.inner.steering).drain();
                    if steering.is_empty() {
                        let follow_ups = lock(&self.inner.follow_up).drain();
                        if follow_ups.is_empty() {
                            return Err(AgentError::ContinueFromAssistant);
                        }
                        RunStart::Prompt(follow_ups, false)
                    } else {
                        RunStart::Prompt(steering, true)
                    }
                }
                Some(_) => RunStart::Continue,
            }
        };
        self.run(start, AgentError::AlreadyProcessingContinue).await
    }

    /// Cancels the active run (no-op when idle). The run ends promptly: the model call ends
    /// `aborted`, running tools get an aborted result, and `agent_end` is emitted.
    pub fn abort(&self) {
        if let Some(run) = lock(&self.inner.run).as_ref() {
            run.signal.cancel();
        }
    }

    /// The active run's cancellation token.
    pub fn signal(&self) -> Option<CancellationToken> {
        lock(&self.inner.run).as_ref().map(|run| run.signal.clone())
    }

    /// Resolves when no run is active.
    pub async fn wait_for_idle(&self) {
        let idle = lock(&self.inner.run).as_ref().map(|run| run.idle.clone());
        if let Some(mut idle) = idle {
            let _ = idle.wait_for(|done| *done).await;
        }
    }

    /// Clears the transcript, queues, streaming state and error. Does not abort a run.
    pub fn reset(&self) {
        {
            let mut state = lock(&self.inner.state);
            state.messages.clear();
            state.is_streaming = false;
            state.streaming = None;
            state.pending_tool_calls.clear();
            state.error_message = None;
        }
        lock(&self.inner.steering).clear();
        lock(&self.inner.follow_up).clear();
    }

    /// Queues a message to inject after the current turn's tool calls.
    pub fn steer(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.steering).enqueue(message.into());
    }

    /// Queues a message to run when the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.follow_up).enqueue(message.into());
    }

    /// Empties the steering queue.
    pub fn clear_steering_queue(&self) {
        lock(&self.inner.steering).clear();
    }

    /// Empties the follow-up queue.
    pub fn clear_follow_up_queue(&self) {
        lock(&self.inner.follow_up).clear();
    }

    /// Empties both queues.
    pub fn clear_all_queues(&self) {
        self.clear_steering_queue();
        self.clear_follow_up_queue();
    }

    /// Whether either queue holds messages.
    pub fn has_queued_messages(&self) -> bool {
        lock(&self.inner.steering).has_items() || lock(&self.inner.follow_up).has_items()
    }

    /// Sets the steering queue's mode.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.inner.steering).mode = mode;
    }

    /// Sets the follow-up queue's mode.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.inner.follow_up).mode = mode;
    }

    /// A copy of the transcript.
    pub fn messages(&self) -> Vec<AgentMessage> {
        lock(&self.inner.state).messages.clone()
    }

    /// Replaces the transcript (takes effect for the next run).
    pub fn set_messages(&self, messages: Vec<AgentMessage>) {
        lock(&self.inner.state).messages = messages;
    }

    /// Appends to the transcript.
    pub fn append_message(&self, message: impl Into<AgentMessage>) {
        lock(&self.inner.state).messages.push(message.into());
    }

    /// Whether a run is active.
    pub fn is_streaming(&self) -> bool {
        lock(&self.inner.state).is_streaming
    }

    /// The message being streamed, as far as it has arrived.
    pub fn streaming_message(&self) -> Option<AgentMessage> {
        let streaming = lock(&self.inner.state).streaming.clone();
        streaming.map(|streaming| match streaming {
            Streaming::Whole(message) => message,
            Streaming::Partial(partial) => partial.snapshot().into(),
        })
    }

    /// Ids of the tool calls running now.
    pub fn pending_tool_calls(&self) -> BTreeSet<String> {
        lock(&self.inner.state).pending_tool_calls.clone()
    }

    /// The error of the last failed turn, if any.
    pub fn error_message(&self) -> Option<String> {
        lock(&self.inner.state).error_message.clone()
    }

    /// Panics of subscribers, as text, oldest first (at most the last 100).
    pub fn listener_errors(&self) -> Vec<String> {
        lock(&self.inner.state).listener_errors.clone()
    }

    /// The system prompt.
    pub fn system_prompt(&self) -> String {
        lock(&self.inner.state).system_prompt.clone()
    }

    /// Sets the system prompt (for later runs).
    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        lock(&self.inner.state).system_prompt = prompt.into();
    }

    /// The model.
    pub fn model(&self) -> Model {
        lock(&self.inner.state).model.clone()
    }

    /// Sets the model (for later runs).
    pub fn set_model(&self, model: Model) {
        lock(&self.inner.state).model = model;
    }

    /// The reasoning level.
    pub fn thinking_level(&self) -> Option<ThinkingLevel> {
        lock(&self.inner.state).thinking_level
    }

    /// Sets the reasoning level (for later runs).
    pub fn set_thinking_level(&self, level: Option<ThinkingLevel>) {
        lock(&self.inner.state).thinking_level = level;
    }

    /// The tools.
    pub fn tools(&self) -> Vec<Arc<dyn AgentTool>> {
        lock(&self.inner.state).tools.clone()
    }

    /// Replaces the tools (for later runs).
    pub fn set_tools(&self, tools: Vec<Arc<dyn AgentTool>>) {
        lock(&self.inner.state).tools = tools;
    }

    /// Adds a tool, replacing one with the same name.
    pub fn add_tool(&self, tool: Arc<dyn AgentTool>) {
        let mut state = lock(&self.inner.state);
        state
            .tools
            .retain(|existing| existing.name() != tool.name());
        state.tools.push(tool);
    }

    /// Sets parallel or sequential tool execution (for later runs).
    pub fn set_tool_execution(&self, mode: ToolExecutionMode) {
        lock(&self.inner.settings).tool_execution = mode;
    }

    /// Replaces the options sent with every LLM call (for later runs).
    pub fn set_stream_options(&self, options: StreamOptions) {
        lock(&self.inner.settings).stream_options = options;
    }

    /// Replaces how the model is called (for later runs).
    pub fn set_stream_fn(&self, stream_fn: StreamFn) {
        lock(&self.inner.settings).stream_fn = stream_fn;
    }

    /// Removes the tool named `name`; returns whether there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut state = lock(&self.inner.state);
        let before = state.tools.len();
        state.tools.retain(|tool| tool.name() != name);
        state.tools.len() != before
    }

    /// Sets or clears `transform_context` (for later runs).
    pub fn set_transform_context(&self, hook: Option<TransformContext>) {
        lock(&self.inner.settings).transform_context = hook;
    }

    /// Sets or clears `before_tool_call` (for later runs).
    pub fn set_before_tool_call(&self, hook: Option<BeforeToolCall>) {
        lock(&self.inner.settings).before_tool_call = hook;
    }

    /// Sets or clears `after_tool_call` (for later runs).
    pub fn set_after_tool_call(&self, hook: Option<AfterToolCall>) {
        lock(&self.inner.settings).after_tool_call = hook;
    }

    /// Sets or clears `should_stop_after_turn` (for later runs).
    pub fn set_should_stop_after_turn(&self, hook: Option<ShouldStopAfterTurn>) {
        lock(&self.inner.settings).should_stop_after_turn = hook;
    }

    /// Sets or clears the per-call API key lookup (for later runs).
    pub fn set_get_api_key(&self, hook: Option<GetApiKey>) {
        lock(&self.inner.settings).get_api_key = hook;
    }

    /// Replaces the transcript → LLM conversion (for later runs).
    pub fn set_convert_to_llm(&self, convert: ConvertToLlm) {
        lock(&self.inner.settings).convert_to_llm = convert;
    }

    /// Sets or clears the stream idle watchdog (for later runs).
    pub fn set_stream_idle_timeout(&self, timeout: Option<std::time::Duration>) {
        lock(&self.inner.settings).stream_idle_timeout = timeout;
    }

    /// Sets or clears the tool watchdog (for later runs).
    pub fn set_tool_timeout(&self, timeout: Option<std::time::Duration>) {
        lock(&self.inner.settings).tool_timeout = timeout;
    }

    /// The stream idle watchdog, if set.
    pub fn stream_idle_timeout(&self) -> Option<std::time::Duration> {
        lock(&self.inner.settings).stream_idle_timeout
    }

    /// The tool watchdog, if set.
    pub fn tool_timeout(&self) -> Option<std::time::Duration> {
        lock(&self.inner.settings).tool_timeout
    }

    /// The options sent with every LLM call.
    pub fn stream_options(&self) -> StreamOptions {
        lock(&self.inner.settings).stream_options.clone()
    }

    /// The tool execution mode.
    pub fn tool_execution(&self) -> ToolExecutionMode {
        lock(&self.inner.settings).tool_execution
    }

    /// The steering and follow-up queue modes.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        (
            lock(&self.inner.steering).mode,
            lock(&self.inner.follow_up).mode,
        )
    }

    async fn run(&self, start: RunStart, busy: AgentError) -> Result<(), AgentError> {
        let signal = CancellationToken::new();
        let (idle_tx, idle_rx) = watch::channel(false);
        let (context, config) = {
            let mut run = lock(&self.inner.run);
            if run.is_some() {
                return Err(busy);
            }
            if matches!(start, RunStart::Continue) {
                agent_loop::check_can_continue(&lock(&self.inner.state).messages)?;
            }
            *run = Some(ActiveRun {
                signal: signal.clone(),
                idle: idle_rx,
            });
            let mut state = lock(&self.inner.state);
            state.is_streaming = true;
            state.streaming = None;
            state.error_message = None;
            let context = AgentContext {
                system_prompt: state.system_prompt.clone(),
                messages: state.messages.clone(),
                tools: state.tools.clone(),
            };
            let settings = lock(&self.inner.settings).clone();
            let mut stream_options = settings.stream_options;
            stream_options.reasoning = state.thinking_level;
            let skip_initial_steering_poll = matches!(start, RunStart::Prompt(_, true));
            let steering = Arc::downgrade(&self.inner);
            let follow_up = Arc::downgrade(&self.inner);
            let config = AgentLoopConfig {
                model: state.model.clone(),
                stream_options,
                tool_execution: settings.tool_execution,
                stream_fn: settings.stream_fn,
                convert_to_llm: settings.convert_to_llm,
                get_api_key: settings.get_api_key,
                get_steering_messages: Some(Arc::new(move || {
                    steering
                        .upgrade()
                        .map(|inner| lock(&inner.steering).drain())
                        .unwrap_or_default()
                })),
                get_follow_up_messages: Some(Arc::new(move || {
                    follow_up
                        .upgrade()
                        .map(|inner| lock(&inner.follow_up).drain())
                        .unwrap_or_default()
                })),
                skip_initial_steering_poll,
                transform_context: settings.transform_context,
                before_tool_call: settings.before_tool_call,
                after_tool_call: settings.after_tool_call,
                should_stop_after_turn: settings.should_stop_after_turn,
                stream_idle_timeout: settings.stream_idle_timeout,
                tool_timeout: settings.tool_timeout,
            };
            (context, config)
        };

        let inner = Arc::clone(&self.inner);
        let task = tokio::spawn(async move {
            let sink = Arc::clone(&inner);
            let mut emit = move |event: AgentEvent| sink.process_event(event);
            let outcome = std::panic::AssertUnwindSafe(async {
                match start {
                    RunStart::Prompt(messages, _) => {
                        run_agent_loop(messages, context, &config, signal.clone(), &mut emit).await;
                    }
                    RunStart::Continue => {
                        // Checked above, before the run was marked active.
                        let _ =
                            run_agent_loop_continue(context, &config, signal.clone(), &mut emit)
                                .await;
                    }
                }
            })
            .catch_unwind()
            .await;
            if let Err(panic) = outcome {
                inner.handle_run_failure(&panic_text(&*panic), &signal);
            }
            inner.finish_run();
            let _ = idle_tx.send(true);
        });
        task.await
            .map_err(|error| AgentError::RunFailed(error.to_string()))
    }
}

impl Inner {
    /// Updates the state from `event`, then hands it to every subscriber.
    fn process_event(&self, event: AgentEvent) {
        {
            let mut state = lock(&self.state);
            match &event {
                AgentEvent::MessageStart { message } => {
                    state.streaming = Some(Streaming::Whole(message.clone()));
                }
                AgentEvent::MessageUpdate { partial, .. } => {
                    if !matches!(state.streaming, Some(Streaming::Partial(_))) {
                        state.streaming = Some(Streaming::Partial(partial.clone()));
                    }
                }
                AgentEvent::MessageEnd { message } => {
                    state.streaming = None;
                    state.messages.push(message.clone());
                }
                AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                    state.pending_tool_calls.insert(tool_call_id.clone());
                }
                AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                    state.pending_tool_calls.remove(tool_call_id);
                }
                AgentEvent::TurnEnd { message, .. } => {
                    if let Some(error) =
                        message.as_assistant().and_then(|m| m.error_message.clone())
                    {
                        state.error_message = Some(error);
                    }
                }
                AgentEvent::AgentEnd { .. } => state.streaming = None,
                AgentEvent::AgentStart
                | AgentEvent::TurnStart
                | AgentEvent::ToolExecutionUpdate { .. } => {}
            }
        }
        let listeners: Vec<Listener> = lock(&self.listeners)
            .iter()
            .map(|(_, listener)| Arc::clone(listener))
            .collect();
        for listener in listeners {
            if let Err(panic) =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(&event)))
            {
                let mut state = lock(&self.state);
                if state.listener_errors.len() >= 100 {
                    state.listener_errors.remove(0);
                }
                state.listener_errors.push(format!(
                    "subscriber panicked on {}: {}",
                    event.kind(),
                    panic_text(&*panic)
                ));
            }
        }
    }

    /// The loop itself failed (a panicking `stream_fn` or `convert_to_llm`): record a failure
    /// message with its events, so subscribers see the end of the run.
    fn handle_run_failure(&self, error: &str, signal: &CancellationToken) {
        let model = lock(&self.state).model.clone();
        let message: AgentMessage =
            agent_loop::run_failure_message(&model, error, signal.is_cancelled()).into();
        self.process_event(AgentEvent::MessageStart {
            message: message.clone(),
        });
        self.process_event(AgentEvent::MessageEnd {
            message: message.clone(),
        });
        lock(&self.state).error_message = Some(error.to_owned());
        self.process_event(AgentEvent::AgentEnd {
            messages: vec![message],
        });
    }

    fn finish_run(&self) {
        {
            let mut state = lock(&self.state);
            state.is_streaming = false;
            state.streaming = None;
            state.pending_tool_calls.clear();
        }
        *lock(&self.run) = None;
    }
}
