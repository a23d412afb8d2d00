//! The stateful [`Agent`](super::Agent): a transcript, a tool table, settings and subscribers
//! over the stateless loop, one run at a time.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::agent_loop::{self, run_agent_loop, run_agent_loop_continue};
use super::config::{AgentContext, AgentHooks, AgentLoopConfig, AgentSettings};
use super::error::AgentError;
use super::event::AgentEvent;
use super::guard::EventSink;
use super::message::AgentMessage;
use super::queue::{MessageQueue, QueueMode};
use super::run::{self, AgentRun, RunOutcome};
use super::tool::{AgentTool, ToolExecutionMode};
use super::tool_calls;
use crate::ai::event_stream::PartialMessage;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::thinking::ThinkingLevel;
use crate::ai::types::{
    AssistantMessage, ImageContent, TextContent, UserContent, UserMessage, UserMessageContent,
    now_ms,
};
use crate::panics::panic_text;

/// A subscriber called synchronously, in order, for every event of every run. The loop waits
/// for it, so keep it quick. A subscriber that panics does not break the run or starve the
/// others; the panic is recorded (see [`Agent::listener_errors`]).
pub type Listener = Arc<dyn Fn(&AgentEvent) + Send + Sync>;

/// A subscriber that is awaited, in order with the others, for every event (pi's async
/// listeners): it gets the event and the run's signal. The loop waits for it.
pub type AsyncListener =
    Arc<dyn Fn(AgentEvent, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;

/// What a binding's subscriber unwinds with (`std::panic::resume_unwind`) when its host
/// callback raised an exception: recorded as `"subscriber raised on <event>: <text>"` in
/// [`Agent::listener_errors`] rather than as a panic.
#[derive(Clone, Debug)]
pub struct SubscriberFailure(pub String);

#[derive(Clone)]
enum Subscriber {
    Sync(Listener),
    Async(AsyncListener),
}

/// How to build an [`Agent`]: its initial state (pi's `initialState`), its settings (data) and
/// its hooks (code). `Default` gives pi's defaults.
#[derive(Clone, Default)]
pub struct AgentOptions {
    /// The system prompt.
    pub system_prompt: String,
    /// The model (default: pi's placeholder model `unknown`, which no provider serves).
    pub model: Option<Model>,
    /// Tools.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// A transcript to start from.
    pub messages: Vec<AgentMessage>,
    /// Thinking level, tool execution, queue modes, stream options, watchdogs.
    pub settings: AgentSettings,
    /// Stream function and hooks.
    pub hooks: AgentHooks,
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
pub(super) struct State {
    pub(super) system_prompt: String,
    pub(super) model: Model,
    pub(super) tools: Vec<Arc<dyn AgentTool>>,
    pub(super) messages: Vec<AgentMessage>,
    is_streaming: bool,
    streaming: Option<Streaming>,
    pending_tool_calls: BTreeSet<String>,
    error_message: Option<String>,
    last_error: Option<crate::ai::MessageError>,
    listener_errors: Vec<String>,
}

impl std::fmt::Debug for dyn AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AgentTool({})", self.name())
    }
}

struct ActiveRun {
    signal: CancellationToken,
    idle: watch::Receiver<bool>,
}

pub(super) struct Inner {
    pub(super) state: Mutex<State>,
    settings: Mutex<AgentSettings>,
    hooks: Mutex<AgentHooks>,
    /// Copied on write, so delivering an event takes the list without copying it.
    listeners: Mutex<Arc<Vec<(u64, Subscriber)>>>,
    next_listener: AtomicU64,
    run: Mutex<Option<ActiveRun>>,
    steering: Mutex<MessageQueue>,
    follow_up: Mutex<MessageQueue>,
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every critical section
/// here is a plain field update).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A stateful agent. Cheap to clone: clones share the agent (so one task can `abort` while
/// another awaits `prompt`). When the last clone is dropped, an active run is aborted (its task
/// holds the agent's state, not the agent).
#[derive(Clone)]
pub struct Agent {
    pub(super) inner: Arc<Inner>,
    _owner: Arc<Owner>,
}

/// Aborts the active run when the last [`Agent`] handle goes away.
struct Owner(Weak<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(inner) = self.0.upgrade()
            && let Some(run) = lock(&inner.run).as_ref()
        {
            run.signal.cancel();
        }
    }
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
            Arc::make_mut(&mut lock(&inner.listeners)).retain(|(id, _)| *id != self.id);
        }
    }
}

/// What a run starts from (see [`Agent::start`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum RunInput {
    /// New messages as the prompt (pi's `prompt(messages)`).
    Prompt(Vec<AgentMessage>),
    /// From the transcript (pi's `continue()`).
    Continue,
}

impl RunInput {
    /// A text prompt: one user message with one text block, stamped now (pi's
    /// `prompt(text)`).
    pub fn text(text: impl Into<String>) -> Self {
        Self::Prompt(vec![UserMessage::text(text.into()).into()])
    }

    /// A text prompt with images (pi's `prompt(text, images)`).
    pub fn text_with_images(text: impl Into<String>, images: Vec<ImageContent>) -> Self {
        let mut blocks = vec![UserContent::Text(TextContent::new(text.into()))];
        blocks.extend(images.into_iter().map(UserContent::Image));
        Self::Prompt(vec![
            UserMessage {
                content: UserMessageContent::Blocks(blocks),
                timestamp: now_ms(),
            }
            .into(),
        ])
    }
}

/// How the loop starts after `start` resolved the input.
enum Start {
    Prompt(Vec<AgentMessage>, bool),
    Continue,
}

impl Agent {
    /// Creates an agent.
    pub fn new(options: AgentOptions) -> Self {
        let state = State {
            system_prompt: options.system_prompt,
            model: options.model.unwrap_or_else(placeholder_model),
            tools: options.tools,
            messages: options.messages,
            is_streaming: false,
            streaming: None,
            pending_tool_calls: BTreeSet::new(),
            error_message: None,
            last_error: None,
            listener_errors: Vec::new(),
        };
        let inner = Arc::new(Inner {
            state: Mutex::new(state),
            settings: Mutex::new(options.settings),
            hooks: Mutex::new(options.hooks),
            listeners: Mutex::new(Arc::new(Vec::new())),
            next_listener: AtomicU64::new(1),
            run: Mutex::new(None),
            steering: Mutex::new(MessageQueue::new()),
            follow_up: Mutex::new(MessageQueue::new()),
        });
        Self {
            _owner: Arc::new(Owner(Arc::downgrade(&inner))),
            inner,
        }
    }

    fn add_subscriber(&self, subscriber: Subscriber) -> Subscription {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        Arc::make_mut(&mut lock(&self.inner.listeners)).push((id, subscriber));
        Subscription {
            id,
            agent: Arc::downgrade(&self.inner),
        }
    }

    /// Adds a subscriber for all events of all later runs.
    pub fn subscribe(
        &self,
        listener: impl Fn(&AgentEvent) + Send + Sync + 'static,
    ) -> Subscription {
        self.add_subscriber(Subscriber::Sync(Arc::new(listener)))
    }

    /// Adds a subscriber that the loop awaits, in order with the others, for every event (pi's
    /// async listeners); it gets the run's signal too.
    pub fn subscribe_async<F, Fut>(&self, listener: F) -> Subscription
    where
        F: Fn(AgentEvent, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.add_subscriber(Subscriber::Async(Arc::new(move |event, signal| {
            listener(event, signal).boxed()
        })))
    }

    /// Starts a run and returns it at once. Fails only when a run is already active (pi's
    /// messages), for [`RunInput::Continue`] when there is nothing to continue from, and
    /// outside a tokio runtime ([`AgentError::NoRuntime`]): the run works on a task of the
    /// caller's runtime. A run whose runtime shuts down under it leaves the agent idle.
    pub fn start(&self, input: RunInput) -> Result<AgentRun, AgentError> {
        // Before the run is marked active: a spawn that cannot happen must not leave it so.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(AgentError::NoRuntime);
        };
        let (start, busy) = match input {
            RunInput::Prompt(messages) => (
                Start::Prompt(messages, false),
                AgentError::AlreadyProcessingPrompt,
            ),
            RunInput::Continue => (Start::Continue, AgentError::AlreadyProcessingContinue),
        };
        let signal = CancellationToken::new();
        let (idle_tx, idle_rx) = watch::channel(false);
        let (events_tx, events_rx) =
            crate::ai::event_queue::bounded::<AgentEvent>(run::RUN_EVENT_BUFFER);
        let outcome = run::OutcomeSlot::new(lock(&self.inner.settings).output().is_some());
        let (start, context, config) = {
            let mut run = lock(&self.inner.run);
            if run.is_some() {
                return Err(busy);
            }
            let start = match start {
                Start::Continue => self.resolve_continue()?,
                prompt => prompt,
            };
            *run = Some(ActiveRun {
                signal: signal.clone(),
                idle: idle_rx.clone(),
            });
            let mut state = lock(&self.inner.state);
            state.is_streaming = true;
            state.streaming = None;
            state.error_message = None;
            state.last_error = None;
            let context = AgentContext {
                system_prompt: state.system_prompt.clone(),
                messages: state.messages.clone(),
                tools: state.tools.clone(),
            };
            let steering = Arc::downgrade(&self.inner);
            let follow_up = Arc::downgrade(&self.inner);
            let config = AgentLoopConfig {
                model: state.model.clone(),
                settings: lock(&self.inner.settings).clone(),
                hooks: lock(&self.inner.hooks).clone(),
                get_steering_messages: Some(Arc::new(move || {
                    steering
                        .upgrade()
                        .map(|inner| inner.drain_steering())
                        .unwrap_or_default()
                })),
                get_follow_up_messages: Some(Arc::new(move || {
                    follow_up
                        .upgrade()
                        .map(|inner| inner.drain_follow_up())
                        .unwrap_or_default()
                })),
                skip_initial_steering_poll: matches!(start, Start::Prompt(_, true)),
            };
            (start, context, config)
        };

        let inner = Arc::clone(&self.inner);
        let task_signal = signal.clone();
        let span = crate::observability::agent_span(&config.model);
        // Each poll of the run is one batch: the events it produces from what the provider
        // already delivered wake the run's consumer once.
        let batcher = events_tx.batcher();
        let task_outcome = outcome.clone();
        let events_tx = Arc::new(events_tx);
        let phase = Arc::new(AtomicU8::new(PHASE_NONE));
        let base = lock(&inner.state).messages.len();
        let mut finished = RunFinished {
            inner: Some(Arc::clone(&inner)),
            idle: idle_tx,
            events: Arc::clone(&events_tx),
            outcome: outcome.clone(),
            base,
            phase: Arc::clone(&phase),
            signal: signal.clone(),
        };
        runtime.spawn(tracing::Instrument::instrument(
            batcher.wrap(async move {
                let mut sink = RunSink {
                    inner: Arc::clone(&inner),
                    events: events_tx,
                    outcome: task_outcome,
                    signal: task_signal.clone(),
                    phase,
                };
                let outcome = std::panic::AssertUnwindSafe(async {
                    // Moved in, so the run's copy of the hooks (and what they hold, such as a
                    // binding's user data) is released before the agent reports idle.
                    let (config, context) = (config, context);
                    match start {
                        Start::Prompt(messages, _) => {
                            run_agent_loop(
                                messages,
                                context,
                                &config,
                                task_signal.clone(),
                                &mut sink,
                            )
                            .await;
                        }
                        Start::Continue => {
                            // Checked above, before the run was marked active.
                            let _ = run_agent_loop_continue(
                                context,
                                &config,
                                task_signal.clone(),
                                &mut sink,
                            )
                            .await;
                        }
                    }
                })
                .catch_unwind()
                .await;
                if let Err(panic) = outcome {
                    sink.run_failed(&panic_text(&*panic)).await;
                }
                finished.finish();
                drop(sink);
                drop(finished);
            }),
            span,
        ));
        Ok(AgentRun::new(events_rx, outcome, idle_rx, signal))
    }

    /// What `continue` runs (pi's rules), decided under the run lock.
    fn resolve_continue(&self) -> Result<Start, AgentError> {
        let last_is_assistant = {
            let state = lock(&self.inner.state);
            match state.messages.last() {
                None => return Err(AgentError::NothingToContinue),
                Some(last) => last.as_assistant().is_some(),
            }
        };
        if !last_is_assistant {
            return Ok(Start::Continue);
        }
        let steering = self.inner.drain_steering();
        if !steering.is_empty() {
            return Ok(Start::Prompt(steering, true));
        }
        let follow_ups = self.inner.drain_follow_up();
        if !follow_ups.is_empty() {
            return Ok(Start::Prompt(follow_ups, false));
        }
        Err(AgentError::ContinueFromAssistant)
    }

    /// Sends a text prompt (one user message with one text block) and waits until the run ends.
    /// Cancelling this future aborts the run.
    pub async fn prompt(&self, text: impl Into<String>) -> Result<RunOutcome, AgentError> {
        Ok(self.start(RunInput::text(text))?.result().await)
    }

    /// Sends a prompt with images and waits until the run ends.
    pub async fn prompt_with_images(
        &self,
        text: impl Into<String>,
        images: Vec<ImageContent>,
    ) -> Result<RunOutcome, AgentError> {
        Ok(self
            .start(RunInput::text_with_images(text, images))?
            .result()
            .await)
    }

    /// Sends messages as the prompt and waits until the run ends. Fails only when a run is
    /// already active (pi's message); model and tool failures end up in the transcript.
    pub async fn prompt_messages(
        &self,
        messages: Vec<AgentMessage>,
    ) -> Result<RunOutcome, AgentError> {
        Ok(self.start(RunInput::Prompt(messages))?.result().await)
    }

    /// Continues from the transcript: from a user or tool-result tail it calls the model again;
    /// from an assistant tail it runs queued steering (else follow-up) messages.
    pub async fn continue_run(&self) -> Result<RunOutcome, AgentError> {
        Ok(self.start(RunInput::Continue)?.result().await)
    }

    /// Cancels the active run (no-op when idle). The run ends promptly: the model call ends
    /// `aborted`, running tools and hooks get an aborted result, and `agent_end` is emitted.
    pub fn abort(&self) {
        if let Some(run) = lock(&self.inner.run).as_ref() {
            run.signal.cancel();
        }
    }

    /// The active run's cancellation token (pi's `agent.signal`).
    pub fn signal(&self) -> Option<CancellationToken> {
        lock(&self.inner.run).as_ref().map(|run| run.signal.clone())
    }

    /// Resolves when no run is active (after an abort, once the abort has completed).
    ///
    /// A run's events wait for room in its [`AgentRun`] (1,024 of them): a run whose
    /// `AgentRun` is kept but not read does not end, and this does not resolve. Read the run,
    /// drop it, or wait with [`AgentRun::result`] (which gives its events up) instead.
    pub async fn wait_for_idle(&self) {
        let idle = lock(&self.inner.run).as_ref().map(|run| run.idle.clone());
        if let Some(mut idle) = idle {
            let _ = idle.wait_for(|done| *done).await;
        }
    }

    /// Refuses a transcript change while a run is active: the run appends to the transcript,
    /// and a change under it would leave tool results without their calls.
    fn idle_transcript(&self) -> Result<MutexGuard<'_, State>, AgentError> {
        let run = lock(&self.inner.run);
        if run.is_some() {
            return Err(AgentError::TranscriptBusy);
        }
        Ok(lock(&self.inner.state))
    }

    /// Clears the transcript, queues, streaming state and error. Refused while a run is active
    /// (pi clears under the running loop, which then appends to the cleared transcript): abort
    /// and [`wait_for_idle`](Self::wait_for_idle) first.
    pub fn reset(&self) -> Result<(), AgentError> {
        {
            let mut state = self.idle_transcript()?;
            state.messages.clear();
            state.is_streaming = false;
            state.streaming = None;
            state.pending_tool_calls.clear();
            state.error_message = None;
            state.last_error = None;
        }
        lock(&self.inner.steering).clear();
        lock(&self.inner.follow_up).clear();
        Ok(())
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

    /// The queued steering and follow-up messages, oldest first.
    pub fn queued_messages(&self) -> (Vec<AgentMessage>, Vec<AgentMessage>) {
        (
            lock(&self.inner.steering).messages().cloned().collect(),
            lock(&self.inner.follow_up).messages().cloned().collect(),
        )
    }

    /// A copy of the transcript.
    pub fn messages(&self) -> Vec<AgentMessage> {
        lock(&self.inner.state).messages.clone()
    }

    /// Replaces the transcript. Refused while a run is active.
    pub fn set_messages(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        self.idle_transcript()?.messages = messages;
        Ok(())
    }

    /// Appends to the transcript. Refused while a run is active (use
    /// [`steer`](Self::steer) or [`follow_up`](Self::follow_up) then).
    pub fn append_message(&self, message: impl Into<AgentMessage>) -> Result<(), AgentError> {
        self.idle_transcript()?.messages.push(message.into());
        Ok(())
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

    /// The failure of the last run as a typed error (kind, HTTP status, retry delay, run
    /// limit), when its last message failed; cleared when a run starts or on `reset`.
    pub fn last_error(&self) -> Option<crate::ai::MessageError> {
        lock(&self.inner.state).last_error.clone()
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

    /// Removes the tool named `name`; returns whether there was one.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut state = lock(&self.inner.state);
        let before = state.tools.len();
        state.tools.retain(|tool| tool.name() != name);
        state.tools.len() != before
    }

    /// A copy of the settings (thinking level, tool execution, queue modes, stream options,
    /// watchdogs).
    pub fn settings(&self) -> AgentSettings {
        lock(&self.inner.settings).clone()
    }

    /// Replaces the settings (for later runs; the queue modes apply at the next poll).
    pub fn set_settings(&self, settings: AgentSettings) {
        *lock(&self.inner.settings) = settings;
    }

    /// Changes the settings in place (for later runs).
    pub fn update_settings<R>(&self, change: impl FnOnce(&mut AgentSettings) -> R) -> R {
        change(&mut lock(&self.inner.settings))
    }

    /// The reasoning level.
    pub fn thinking_level(&self) -> ThinkingLevel {
        lock(&self.inner.settings).thinking_level
    }

    /// Sets the reasoning level (for later runs).
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        lock(&self.inner.settings).thinking_level = level;
    }

    /// Sets parallel or sequential tool execution (for later runs).
    pub fn set_tool_execution(&self, mode: ToolExecutionMode) {
        lock(&self.inner.settings).tool_execution = mode;
    }

    /// The tool execution mode.
    pub fn tool_execution(&self) -> ToolExecutionMode {
        lock(&self.inner.settings).tool_execution
    }

    /// Sets the steering queue's mode.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        lock(&self.inner.settings).steering_mode = mode;
    }

    /// Sets the follow-up queue's mode.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        lock(&self.inner.settings).follow_up_mode = mode;
    }

    /// The steering and follow-up queue modes.
    pub fn queue_modes(&self) -> (QueueMode, QueueMode) {
        let settings = lock(&self.inner.settings);
        (settings.steering_mode, settings.follow_up_mode)
    }

    /// The options sent with every LLM call.
    pub fn stream_options(&self) -> StreamOptions {
        lock(&self.inner.settings).stream_options.clone()
    }

    /// Replaces the options sent with every LLM call (for later runs).
    pub fn set_stream_options(&self, options: StreamOptions) {
        lock(&self.inner.settings).stream_options = options;
    }

    /// A copy of the hooks.
    pub fn hooks(&self) -> AgentHooks {
        lock(&self.inner.hooks).clone()
    }

    /// Changes the hooks in place (for later runs), e.g.
    /// `agent.update_hooks(|hooks| hooks.before_tool_call = Some(hook))`.
    pub fn update_hooks<R>(&self, change: impl FnOnce(&mut AgentHooks) -> R) -> R {
        change(&mut lock(&self.inner.hooks))
    }
}

/// The sink of one run: reduces each event into the agent's state, awaits every subscriber in
/// order, then hands the event to the run's own stream.
struct RunSink {
    inner: Arc<Inner>,
    /// Shared with the run's [`RunFinished`], which ends a run cut off.
    events: Arc<crate::ai::event_queue::Sender<AgentEvent>>,
    outcome: run::OutcomeSlot,
    signal: CancellationToken,
    /// How far the run's events went (shared with its [`RunFinished`]).
    phase: Arc<AtomicU8>,
}

/// [`RunSink::phase`]: nothing went out yet.
const PHASE_NONE: u8 = 0;
/// `agent_start` went out.
const PHASE_STARTED: u8 = 1;
/// `agent_end` is being delivered (subscribers, then the run's stream).
const PHASE_ENDING: u8 = 2;
/// `agent_end` is in the run's stream.
const PHASE_ENDED: u8 = 3;

impl EventSink for RunSink {
    async fn emit(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::AgentStart => self.phase.store(PHASE_STARTED, Ordering::Release),
            AgentEvent::AgentEnd { .. } => self.phase.store(PHASE_ENDING, Ordering::Release),
            _ => {}
        }
        self.process(event).await;
    }
}

impl RunSink {
    async fn process(&mut self, event: AgentEvent) {
        self.inner.process_event(&event, &self.signal).await;
        // The consumer may have dropped the run (which aborts it) or only wait for its result;
        // then the events are not wanted, and the outcome takes the run's messages without a
        // copy (a big tool result is not held twice more at the end of the run).
        if self.events.is_closed() {
            if let AgentEvent::AgentEnd { messages } = event {
                self.outcome.set(messages);
                self.phase.store(PHASE_ENDED, Ordering::Release);
            }
            return;
        }
        if let AgentEvent::AgentEnd { messages } = &event {
            self.outcome.set(messages.clone());
        }
        // An aborted run's events do not wait for room (`pi_agent_free` aborts a run kept
        // unread): the abort must end the run now.
        let end = matches!(event, AgentEvent::AgentEnd { .. });
        let _ = self.events.send_unless_aborted(event, &self.signal).await;
        if end {
            self.phase.store(PHASE_ENDED, Ordering::Release);
        }
    }
}

impl RunSink {
    /// The loop itself failed (a panic outside the guarded hooks): record a failure message
    /// with its events, so subscribers see the end of the run.
    async fn run_failed(&mut self, error: &str) {
        let model = lock(&self.inner.state).model.clone();
        let message: AgentMessage =
            agent_loop::run_failure_message(&model, error, self.signal.is_cancelled()).into();
        self.emit(AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
        self.emit(AgentEvent::MessageEnd {
            message: message.clone(),
        })
        .await;
        lock(&self.inner.state).error_message = Some(error.to_owned());
        self.emit(AgentEvent::AgentEnd {
            messages: vec![message],
        })
        .await;
    }
}

impl Inner {
    fn drain_steering(&self) -> Vec<AgentMessage> {
        let mode = lock(&self.settings).steering_mode;
        lock(&self.steering).drain(mode)
    }

    fn drain_follow_up(&self) -> Vec<AgentMessage> {
        let mode = lock(&self.settings).follow_up_mode;
        lock(&self.follow_up).drain(mode)
    }

    fn record_listener_panic(&self, event: &AgentEvent, panic: &(dyn std::any::Any + Send)) {
        let text = match panic.downcast_ref::<SubscriberFailure>() {
            Some(SubscriberFailure(failure)) => {
                format!("subscriber raised on {}: {failure}", event.kind())
            }
            None => format!(
                "subscriber panicked on {}: {}",
                event.kind(),
                panic_text(panic)
            ),
        };
        self.record_listener_error(text);
    }

    fn record_listener_error(&self, text: String) {
        let mut state = lock(&self.state);
        if state.listener_errors.len() >= 100 {
            state.listener_errors.remove(0);
        }
        state.listener_errors.push(text);
    }

    /// Updates the state from `event`, then hands it to every subscriber, in order.
    async fn process_event(&self, event: &AgentEvent, signal: &CancellationToken) {
        self.reduce(event);
        let subscribers = Arc::clone(&lock(&self.listeners));
        for (_, subscriber) in subscribers.iter() {
            match subscriber {
                Subscriber::Sync(listener) => self.call_sync(listener, event),
                Subscriber::Async(listener) => {
                    let delivered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        listener(event.clone(), signal.clone())
                    }));
                    let outcome = match delivered {
                        Ok(future) => {
                            let call = std::panic::AssertUnwindSafe(future).catch_unwind();
                            match until_abort_grace(call, signal).await {
                                Some(outcome) => outcome,
                                None => {
                                    self.record_listener_error(format!(
                                        "subscriber did not return within {} s of the abort on \
                                         {}: dropped",
                                        LISTENER_ABORT_GRACE.as_secs(),
                                        event.kind()
                                    ));
                                    Ok(())
                                }
                            }
                        }
                        Err(panic) => Err(panic),
                    };
                    if let Err(panic) = outcome {
                        self.record_listener_panic(event, &*panic);
                    }
                }
            }
        }
    }

    /// [`process_event`](Self::process_event) without waiting, for a run cut off (its runtime
    /// shut down under it, so nothing can be awaited): an async subscriber's call gets one
    /// poll, and one that does not finish in it is dropped and reported.
    fn process_event_now(&self, event: &AgentEvent, signal: &CancellationToken) {
        self.reduce(event);
        let subscribers = Arc::clone(&lock(&self.listeners));
        for (_, subscriber) in subscribers.iter() {
            match subscriber {
                Subscriber::Sync(listener) => self.call_sync(listener, event),
                Subscriber::Async(listener) => {
                    let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        listener(event.clone(), signal.clone()).now_or_never()
                    }));
                    match called {
                        Ok(Some(())) => {}
                        Ok(None) => self.record_listener_error(format!(
                            "subscriber did not return at once on {} of a run cut off by its \
                             runtime's shutdown: dropped",
                            event.kind()
                        )),
                        Err(panic) => self.record_listener_panic(event, &*panic),
                    }
                }
            }
        }
    }

    fn call_sync(&self, listener: &Listener, event: &AgentEvent) {
        if let Err(panic) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(event)))
        {
            self.record_listener_panic(event, &*panic);
        }
    }

    /// Updates the state from `event`.
    fn reduce(&self, event: &AgentEvent) {
        {
            let mut state = lock(&self.state);
            match event {
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
                    // pi records a failed turn's error at `turn_end`; a run that fails outside
                    // a turn (a hook) has only this message, so record it here too.
                    if let Some(error) =
                        message.as_assistant().and_then(|m| m.error_message.clone())
                    {
                        state.error_message = Some(error);
                    }
                    state.last_error = message.as_assistant().and_then(crate::ai::MessageError::of);
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
    }

    /// A run cut off before its end (its runtime shut down under it): the aborted end an abort
    /// gives each tool call of the run's last assistant message (at `base` or later) that has
    /// no result (its `tool_execution_end` and result message), so the transcript stays one a
    /// model accepts.
    fn cut_tool_call_ends(&self, base: usize) -> Vec<(AgentEvent, AgentMessage)> {
        let state = lock(&self.state);
        let messages = &state.messages;
        let Some(at) = messages
            .iter()
            .rposition(|m| m.as_assistant().is_some())
            .filter(|at| *at >= base)
        else {
            return Vec::new();
        };
        let answered: BTreeSet<&str> = messages[at + 1..]
            .iter()
            .filter_map(AgentMessage::as_tool_result)
            .map(|result| result.tool_call_id.as_str())
            .collect();
        messages[at]
            .as_assistant()
            .into_iter()
            .flat_map(AssistantMessage::tool_calls)
            .filter(|call| !answered.contains(call.id.as_str()))
            .map(|call| tool_calls::aborted_call_end(call.id.clone(), call.name.clone()))
            .collect()
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

/// Marks a run's end on the agent, and reports idle when dropped: at the run's end, or when
/// its task is dropped unfinished (its runtime shut down), so the agent never stays busy with
/// a run that no longer exists.
struct RunFinished {
    /// `None` once the run's end is marked.
    inner: Option<Arc<Inner>>,
    idle: watch::Sender<bool>,
    /// What a run cut off still ends: its stream, its outcome, the agent's message count
    /// when it started, how far its events went, and its signal.
    events: Arc<crate::ai::event_queue::Sender<AgentEvent>>,
    outcome: run::OutcomeSlot,
    base: usize,
    phase: Arc<AtomicU8>,
    signal: CancellationToken,
}

impl RunFinished {
    /// Marks the run's end (the agent accepts a new run from now on).
    fn finish(&mut self) {
        if let Some(inner) = self.inner.take() {
            inner.finish_run();
        }
    }
}

impl RunFinished {
    /// The end of a run whose task was dropped before it ended (its runtime shut down under
    /// it): nothing can be awaited any more, but every subscriber and the run's stream still
    /// see the run end as an aborted one does: the cut-off tool calls' aborted results, an
    /// `aborted` message saying why, and `agent_end` (after an `agent_start` if none went
    /// out). The run's outcome is that failure.
    fn end_cut_off(&self, inner: &Inner) {
        let run_messages = || {
            lock(&inner.state)
                .messages
                .get(self.base..)
                .map(<[AgentMessage]>::to_vec)
                .unwrap_or_default()
        };
        match self.phase.load(Ordering::Acquire) {
            PHASE_ENDED => return,
            PHASE_ENDING => {
                // Cut off while `agent_end` went out: the subscribers had it (or were being
                // given it); the outcome and the stream still get it.
                let messages = run_messages();
                if !self.outcome.is_set() {
                    self.outcome.set(messages.clone());
                }
                let _ = self.events.push(AgentEvent::AgentEnd { messages });
                return;
            }
            _ => {}
        }
        // Subscribers that look at the signal see an aborted run.
        self.signal.cancel();
        let deliver = |event: AgentEvent| {
            inner.process_event_now(&event, &self.signal);
            if let AgentEvent::AgentEnd { messages } = &event {
                self.outcome.set(messages.clone());
            }
            let _ = self.events.push(event);
        };
        if self.phase.load(Ordering::Acquire) == PHASE_NONE {
            deliver(AgentEvent::AgentStart);
        }
        let (model, streaming, pending) = {
            let state = lock(&inner.state);
            let streaming = match &state.streaming {
                Some(Streaming::Whole(message)) => message.as_assistant().cloned(),
                Some(Streaming::Partial(partial)) => Some(partial.snapshot()),
                None => None,
            };
            (
                state.model.clone(),
                streaming,
                state.pending_tool_calls.clone(),
            )
        };
        if let Some(answer) = streaming {
            // Cut off while the model answered: that message ends, aborted, saying why.
            deliver(AgentEvent::MessageEnd {
                message: agent_loop::cut_off_answer(answer).into(),
            });
        } else {
            // Cut off while tools ran (or between steps): each unanswered call ends with its
            // aborted result, then a message says why the run ended.
            for (end, result) in inner.cut_tool_call_ends(self.base) {
                if let AgentEvent::ToolExecutionEnd { tool_call_id, .. } = &end
                    && pending.contains(tool_call_id)
                {
                    deliver(end);
                }
                deliver(AgentEvent::MessageStart {
                    message: result.clone(),
                });
                deliver(AgentEvent::MessageEnd { message: result });
            }
            let failure: AgentMessage =
                agent_loop::run_failure_message(&model, agent_loop::RUN_CUT_OFF, true).into();
            deliver(AgentEvent::MessageStart {
                message: failure.clone(),
            });
            deliver(AgentEvent::MessageEnd { message: failure });
        }
        deliver(AgentEvent::AgentEnd {
            messages: run_messages(),
        });
    }
}

impl Drop for RunFinished {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.clone() {
            self.end_cut_off(&inner);
        }
        self.finish();
        let _ = self.idle.send(true);
    }
}

/// A handle to an [`Agent`] that does not keep it alive (for what outlives or observes an
/// agent, such as an MCP server keeping the agent's tools current).
#[derive(Clone, Debug, Default)]
pub struct WeakAgent {
    inner: Weak<Inner>,
    owner: Weak<Owner>,
}

impl WeakAgent {
    /// The agent, while a handle to it exists.
    pub fn upgrade(&self) -> Option<Agent> {
        Some(Agent {
            inner: self.inner.upgrade()?,
            _owner: self.owner.upgrade()?,
        })
    }
}

impl Agent {
    /// A handle that does not keep the agent alive.
    pub fn downgrade(&self) -> WeakAgent {
        WeakAgent {
            inner: Arc::downgrade(&self.inner),
            owner: Arc::downgrade(&self._owner),
        }
    }
}

/// How long an async subscriber's call may go on once the run is aborted (pi awaits its
/// listeners; one that never returns must not hold an aborted run for ever).
const LISTENER_ABORT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Awaits `call`; once `signal` fires, for at most [`LISTENER_ABORT_GRACE`] more (`None`:
/// it did not end, and is dropped).
async fn until_abort_grace<F: std::future::Future>(
    call: F,
    signal: &CancellationToken,
) -> Option<F::Output> {
    let mut call = std::pin::pin!(call);
    tokio::select! {
        biased;
        outcome = &mut call => return Some(outcome),
        () = signal.cancelled() => {}
    }
    tokio::time::timeout(LISTENER_ABORT_GRACE, call).await.ok()
}
