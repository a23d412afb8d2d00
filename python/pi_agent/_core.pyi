"""Stubs of the compiled module ``pi_agent._core`` (hand-written; keep in sync with python/src)."""

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Iterator
from types import TracebackType
from typing import Any, Literal, Mapping, Optional, Sequence, Union, final

from typing_extensions import Unpack

from .types import (
    AfterToolCallHook,
    AgentEvent,
    AgentMessage,
    AgentSnapshot,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    BeforeToolCallHook,
    Context,
    GetApiKeyHook,
    ImageContent,
    ModelCost,
    ModelDict,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    ToolExecutionMode,
    QueueMode,
    ShouldStopAfterTurnHook,
    StreamOptions,
    TransformContextHook,
)

__all__ = [
    "Agent",
    "AgentRun",
    "Unsubscribe",
    "AgentBusyError",
    "AgentRunError",
    "CannotContinueError",
    "PiError",
    "FauxProvider",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "Model",
    "get_model",
    "get_models",
    "get_providers",
    "resolve_model",
    "AssistantMessageEventStream",
    "acomplete",
    "complete",
    "stream",
    "is_context_overflow",
    "Tool",
    "ToolContext",
    "__version__",
]

__version__: str

# ---------------------------------------------------------------------------------------------
# Errors

class PiError(Exception):
    """Base class of every error raised by pi_agent.

    Only setup mistakes raise. Model, network, tool and abort failures never do: they end the
    run or stream with a message whose ``stopReason`` is ``"error"`` or ``"aborted"``.
    """

class AgentBusyError(PiError):
    """A prompt or continue was started while the agent is running. The message is pi's:
    ``"Agent is already processing a prompt. Use steer() or followUp() to queue messages, or
    wait for completion."``"""

class CannotContinueError(PiError):
    """``continue_()`` found nothing to continue from (an empty transcript, or an assistant
    message last with nothing queued)."""

class AgentRunError(PiError):
    """The agent's run ended abnormally (a bug in pi_agent; the transcript was repaired)."""

# ---------------------------------------------------------------------------------------------
# Model

@final
class Model:
    """Which wire API to speak, where, and what the model can do and costs (pi's ``Model``).

    Immutable; compare with ``==``; ``replace(**changes)`` makes a modified copy.
    """

    def __new__(
        cls,
        id: str,
        *,
        api: str = "openai-completions",
        provider: str = "openai",
        base_url: str = "https://api.openai.com/v1",
        name: Optional[str] = None,
        reasoning: bool = False,
        input: Optional[Sequence[Literal["text", "image"]]] = None,
        cost: Optional[ModelCost] = None,
        context_window: int = 128000,
        max_tokens: int = 16384,
        headers: Optional[Mapping[str, str]] = None,
        compat: Optional[Mapping[str, Any]] = None,
        thinking_level_map: Optional[Mapping[str, Optional[str]]] = None,
    ) -> Model: ...
    @staticmethod
    def from_dict(data: Union[ModelDict, Mapping[str, Any]]) -> Model:
        """Builds a model from pi's JSON shape (``{"id", "api", "provider", "baseUrl", ...}``)."""
    def to_dict(self) -> ModelDict:
        """The model in pi's JSON shape."""
    def replace(self, **changes: Any) -> Model:
        """A copy with fields replaced (snake_case or pi's camelCase names)."""
    @property
    def id(self) -> str:
        """The id sent to the provider."""
    @property
    def name(self) -> str: ...
    @property
    def api(self) -> str:
        """The wire API (``openai-completions``, ...): picks the provider code."""
    @property
    def provider(self) -> str:
        """The vendor (``openai``, ``groq``, ...): picks the API-key variable."""
    @property
    def base_url(self) -> str: ...
    @property
    def reasoning(self) -> bool: ...
    @property
    def input(self) -> list[Literal["text", "image"]]: ...
    @property
    def cost(self) -> ModelCost: ...
    @property
    def context_window(self) -> int: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def headers(self) -> Optional[dict[str, str]]: ...
    @property
    def compat(self) -> Optional[dict[str, Any]]: ...
    def __eq__(self, other: object, /) -> bool: ...

def get_model(provider: str, id: str) -> Optional[Model]:
    """The catalog model ``id`` of ``provider`` (pi's ``getModel``), or ``None``."""

def get_models(provider: str) -> list[Model]:
    """Every catalog model of ``provider``, sorted by id (pi's ``getModels``)."""

def get_providers() -> list[str]:
    """The providers that have catalog models, sorted (pi's ``getProviders``)."""

def resolve_model(spec: str) -> Optional[Model]:
    """The catalog model named ``"provider/model-id"`` (only the first ``/`` splits), or
    ``None``."""

# ---------------------------------------------------------------------------------------------
# AI level

@final
class AssistantMessageEventStream:
    """The events of one model response, as pi-shaped dicts.

    Iterate with ``for`` (blocks per event, GIL released) or ``async for``, not both at once.
    ``result()`` / ``await aresult()`` give the final message. As a context manager (``with``
    or ``async with``) it aborts the request if the block exits before the stream ended::

        with pi_agent.stream(model, context) as events:
            for event in events:
                if event["type"] == "text_delta":
                    print(event["delta"], end="")
            message = events.result()
    """

    def __iter__(self) -> Iterator[AssistantMessageEvent]: ...
    def __next__(self) -> AssistantMessageEvent: ...
    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]: ...
    def __anext__(self) -> Awaitable[AssistantMessageEvent]: ...
    def result(self) -> AssistantMessage:
        """Waits for the end (consuming the remaining events) and returns the final message;
        failures are a message with ``stopReason`` ``"error"`` or ``"aborted"``."""
    def aresult(self) -> Coroutine[Any, Any, AssistantMessage]:
        """``result()`` for asyncio."""
    def abort(self) -> None:
        """Cancels the request (thread-safe): the stream ends with an ``error`` event whose
        reason is ``"aborted"``."""
    @property
    def partial(self) -> AssistantMessage:
        """The message so far: what the events yielded until now add up to."""
    def __enter__(self) -> AssistantMessageEventStream: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> Literal[False]: ...
    def __aenter__(self) -> Awaitable[AssistantMessageEventStream]: ...
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> Awaitable[Literal[False]]: ...

def stream(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    **options: Unpack[StreamOptions],
) -> AssistantMessageEventStream:
    """Starts a request to ``model`` and returns its event stream at once.

    ``context`` is pi's ``Context``: ``{"systemPrompt": ..., "messages": [...], "tools":
    [...]}`` (tools may be ``Tool`` objects). ``options`` are request options (see
    ``pi_agent.types.StreamOptions``: ``api_key``, ``temperature``, ``max_tokens``,
    ``headers``, ...); an unknown name raises ``TypeError``. Never raises for provider
    failures: they end the stream with an ``error`` event. The API key defaults to the
    provider's environment variable (``OPENAI_API_KEY``, ...).
    """

def complete(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    **options: Unpack[StreamOptions],
) -> AssistantMessage:
    """``stream(...)``, then blocks (GIL released) until the final assistant message."""

def acomplete(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    **options: Unpack[StreamOptions],
) -> Coroutine[Any, Any, AssistantMessage]:
    """``complete`` for asyncio: ``message = await pi_agent.acomplete(model, context)``."""

def stream_simple(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    **options: Unpack[StreamOptions],
) -> AssistantMessageEventStream:
    """pi's ``streamSimple``: like ``stream``, but ``reasoning`` (a level; ``"off"`` for none)
    is mapped onto the provider's own options, thinking is turned off explicitly when no level
    is given, and ``max_tokens`` defaults to ``min(model.max_tokens, 32000)``. The agent calls
    models this way. Plain ``stream`` sends only what the provider options say."""

def complete_simple(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    **options: Unpack[StreamOptions],
) -> AssistantMessage:
    """``stream_simple(...)``, then blocks (GIL released) until the final assistant message."""

def acomplete_simple(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    **options: Unpack[StreamOptions],
) -> Coroutine[Any, Any, AssistantMessage]:
    """``complete_simple`` for asyncio."""

def is_context_overflow(
    message: Union[AssistantMessage, Mapping[str, Any]], context_window: Optional[int] = None
) -> bool:
    """Whether an assistant message reports a context overflow (pi's ``isContextOverflow``):
    an error whose text is a known "prompt too long" message of some provider, or, given the
    model's ``context_window``, a response whose input exceeded it (some providers truncate
    silently) or that stopped at ``length`` with no output and a full window. Use it to decide
    to compact the transcript and retry. ``ValueError`` if ``message`` is not an assistant
    message dict."""

# ---------------------------------------------------------------------------------------------
# Faux provider

_FauxResponse = Union[
    AssistantMessage,
    Mapping[str, Any],
    Sequence[Union[TextContent, ThinkingContent, ToolCall, Mapping[str, Any]]],
    str,
    Callable[[Context, int, Model], Any],
]

@final
class FauxProvider:
    """A registered, scripted in-process provider (pi's faux provider), for tests, examples and
    offline demos. Each request pops the next scripted response and streams it with a real
    provider's event order. ``with FauxProvider() as faux:`` unregisters it on exit.

    A response is an assistant message dict (missing ``api``, ``provider``, ``model``,
    ``usage``, ``timestamp`` are filled in, and ``stopReason`` is ``"toolUse"`` when it has
    tool calls, else ``"stop"``), a list of content blocks, a str (one text block), or a
    callable ``factory(context, call_number, model)`` returning one of those.
    """

    def __new__(
        cls,
        *,
        api: Optional[str] = None,
        provider: str = "faux",
        model_ids: Optional[Sequence[str]] = None,
        tokens_per_second: Optional[float] = None,
        token_size: tuple[int, int] = ...,
    ) -> FauxProvider:
        """``tokens_per_second`` paces the output (default: as fast as it is read);
        ``token_size`` is the range of delta sizes in 4-character tokens."""
    @property
    def api(self) -> str:
        """The api id it is registered under (``faux:<n>`` unless given)."""
    @property
    def model(self) -> Model:
        """Its first model."""
    @property
    def models(self) -> list[Model]: ...
    def get_model(self, id: str) -> Model:
        """The model with this id (``KeyError`` if none)."""
    def push(self, response: _FauxResponse) -> None:
        """Appends one scripted response."""
    def set_responses(self, responses: Iterable[_FauxResponse]) -> None:
        """Replaces the script."""
    @property
    def pending(self) -> int:
        """Responses not yet used."""
    @property
    def call_count(self) -> int:
        """Requests served so far."""
    def unregister(self) -> None:
        """Removes the provider from the registry."""
    def __enter__(self) -> FauxProvider: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> Literal[False]: ...

def faux_text(text: str) -> TextContent:
    """A text block: ``{"type": "text", "text": text}``."""

def faux_thinking(text: str) -> ThinkingContent:
    """A thinking block: ``{"type": "thinking", "thinking": text}``."""

def faux_tool_call(
    name: str, arguments: Optional[Mapping[str, Any]] = None, id: Optional[str] = None
) -> ToolCall:
    """A tool-call block; the id defaults to a fresh ``tool:<n>``."""

# ---------------------------------------------------------------------------------------------
# Tools

@final
class Tool:
    """A tool the model can call: a name, a description, the JSON Schema of its arguments, and
    the Python function (sync or ``async def``) that runs it with those arguments as keywords.

    What the function returns becomes the tool result: a ``str`` is its text, a dict with
    ``"content"`` is a full ``AgentToolResult`` (``content`` may be a str), anything else is
    sent as its JSON text. An exception becomes an ``isError`` result whose text (the
    exception's message) the model reads; the run goes on.

    Sync functions run on a worker thread with the GIL. ``async def`` functions run on the
    event loop of the caller awaiting ``agent.prompt()``, or with ``asyncio.run`` on a worker
    thread under ``prompt_sync``. Calling the tool calls the function.

    A parameter annotated with :class:`ToolContext` (or ``Optional[ToolContext]``), whatever
    its name, is not a model argument: it is left out of the schema, and the agent passes the
    call's context there. That is the only rule; a parameter named ``ctx`` without that
    annotation is an ordinary argument.

    The arguments are validated against the schema first (a failure is an error result with
    pi's report). A parameter annotated with a dataclass, an ``Enum`` or a pydantic model then
    receives an instance of it (also nested, and inside ``Optional``, ``list``, ``tuple``,
    ``set``, ``dict``); calling the tool directly passes arguments through unchanged.
    """

    def __new__(
        cls,
        name: str,
        description: str,
        parameters: Mapping[str, Any],
        function: Callable[..., Any],
        *,
        label: Optional[str] = None,
        execution_mode: Optional[ToolExecutionMode] = None,
    ) -> Tool: ...
    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        name: Optional[str] = None,
        description: Optional[str] = None,
        parameters: Optional[Mapping[str, Any]] = None,
    ) -> Tool:
        """Makes a tool from a function: the name defaults to the function's, the description
        to the first paragraph of its docstring, and the parameters' JSON Schema is derived
        from the signature and type hints (see ``pi_agent.function_schema``), with
        per-parameter descriptions from ``Args:`` (Google) or ``:param x:`` (Sphinx) lines."""
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]:
        """JSON Schema of the arguments object."""
    @property
    def label(self) -> str:
        """A label for user interfaces (default: the name)."""
    @property
    def function(self) -> Callable[..., Any]: ...
    def to_dict(self) -> ToolDefinition:
        """The tool as the LLM sees it: ``{"name", "description", "parameters"}``."""
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

@final
class ToolContext:
    """What a tool function gets in its parameter annotated with ``ToolContext``::

        @pi_agent.tool
        def index(path: str, ctx: pi_agent.ToolContext) -> str:
            for n, file in enumerate(walk(path)):
                if ctx.aborted:
                    return "stopped"
                ctx.update(f"{n} files indexed")
            return "done"

    Thread-safe; only the agent creates it.
    """

    @property
    def tool_call_id(self) -> str:
        """The id of this tool call."""
    @property
    def tool_name(self) -> str:
        """The name the model called the tool by."""
    @property
    def aborted(self) -> bool:
        """Whether the run was aborted. The call already has an aborted result then, and a
        sync tool (which cannot be interrupted) should return soon; an ``async def`` tool is
        cancelled instead."""
    def update(self, partial: Union[str, AgentToolResult, Mapping[str, Any]]) -> None:
        """Reports progress as a ``tool_execution_update`` event: a str (the text) or a tool
        result dict (``{"content": ..., "details": ...}``; ``content`` may be a str). Never
        blocks; updates after the call ended are dropped."""

# ---------------------------------------------------------------------------------------------
# Agent

_PromptInput = Union[str, AgentMessage, Sequence[AgentMessage]]

@final
class Unsubscribe:
    """Returned by ``Agent.subscribe``: call it to stop the callbacks (calling again does
    nothing)."""

    def __call__(self) -> None: ...

@final
class AgentRun:
    """The events of one run, as pi-shaped dicts, ending after ``agent_end``::

        async for event in agent.run("What is 6 * 7?"):
            print(event["type"])

    The run starts at the first iteration step (raising ``AgentBusyError`` there if the agent
    is busy). A plain ``for`` also works (it blocks per event). Leaving the loop early does not
    stop the run: call ``agent.abort()``.
    """

    def __aiter__(self) -> AsyncIterator[AgentEvent]: ...
    def __anext__(self) -> Awaitable[AgentEvent]: ...
    def __iter__(self) -> Iterator[AgentEvent]: ...
    def __next__(self) -> AgentEvent: ...

@final
class Agent:
    """A stateful agent: a transcript, tools and a model, and runs of pi's agent loop over them.

    Waiting methods come in pairs: ``await agent.prompt(...)`` for asyncio, and
    ``agent.prompt_sync(...)``, which blocks with the GIL released and never uses the caller's
    event loop (so it also works inside a running loop, e.g. in Jupyter). Model, tool and abort
    failures do not raise: they end the run with a message in the transcript
    (``stopReason`` ``"error"``/``"aborted"``, see ``error_message``).
    """

    def __new__(
        cls,
        model: Optional[Union[Model, ModelDict]] = None,
        *,
        system_prompt: str = "",
        tools: Optional[Iterable[Union[Tool, Callable[..., Any]]]] = None,
        tool_execution: ToolExecutionMode = "parallel",
        messages: Optional[Sequence[AgentMessage]] = None,
        thinking_level: Optional[ThinkingLevel] = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        before_tool_call: Optional[BeforeToolCallHook] = None,
        after_tool_call: Optional[AfterToolCallHook] = None,
        should_stop_after_turn: Optional[ShouldStopAfterTurnHook] = None,
        transform_context: Optional[TransformContextHook] = None,
        get_api_key: Optional[GetApiKeyHook] = None,
        stream_idle_timeout_ms: Optional[int] = None,
        tool_timeout_ms: Optional[int] = None,
        proxy_url: Optional[str] = None,
        proxy_token: Optional[str] = None,
        **options: Unpack[StreamOptions],
    ) -> Agent:
        """Plain functions in ``tools`` are wrapped with ``Tool.from_function``. Without a
        model, the first prompt fails (pi's placeholder model ``unknown``). ``options`` are
        the request options of every model call (``api_key``, ``temperature``, ``headers``,
        ``thinking_budgets``, ... as for ``pi_agent.stream``; the reasoning level is
        ``thinking_level``).

        The hooks (see the properties of the same names) and watchdogs can also be set later.
        ``proxy_url`` sends every model call through your server instead (pi's
        ``streamProxy``: ``POST {proxy_url}/api/stream`` with ``Authorization: Bearer
        {proxy_token}``, answered with pi's proxy events); provider keys then stay on the
        server."""
    @classmethod
    def restore(
        cls,
        snapshot: Union[AgentSnapshot, Mapping[str, Any]],
        *,
        tools: Optional[Iterable[Union[Tool, Callable[..., Any]]]] = None,
        before_tool_call: Optional[BeforeToolCallHook] = None,
        after_tool_call: Optional[AfterToolCallHook] = None,
        should_stop_after_turn: Optional[ShouldStopAfterTurnHook] = None,
        transform_context: Optional[TransformContextHook] = None,
        get_api_key: Optional[GetApiKeyHook] = None,
        stream_idle_timeout_ms: Optional[int] = None,
        tool_timeout_ms: Optional[int] = None,
        proxy_url: Optional[str] = None,
        proxy_token: Optional[str] = None,
        **options: Unpack[StreamOptions],
    ) -> Agent:
        """A new agent with the data of ``snapshot`` — transcript, queues, model, system prompt,
        thinking level, tool execution and queue modes — and the code given here, as for the
        constructor (tools and hooks are code, so a snapshot cannot hold them).

        ``snapshot`` is what ``snapshot()`` returned, possibly through ``json.dumps`` /
        ``json.loads``; a snapshot written by the Rust or C side loads too (the same JSON).
        ``ValueError`` if it is not a snapshot."""
    def snapshot(self) -> AgentSnapshot:
        """The agent's data as a pi-shaped, JSON-serialisable dict (see ``restore``). During a
        run, the transcript is as of the last completed message."""
    def prompt(
        self, input: _PromptInput, images: Optional[Sequence[ImageContent]] = None
    ) -> Coroutine[Any, Any, None]:
        """Sends a prompt (a str, a message dict, or a list of them) and waits until the run
        ends. Raises ``AgentBusyError`` if a run is active. Cancelling the awaiting task aborts
        the run."""
    def prompt_sync(
        self, input: _PromptInput, images: Optional[Sequence[ImageContent]] = None
    ) -> None:
        """``prompt`` that blocks until the run ends (GIL released; Ctrl-C aborts the run)."""
    def continue_(self) -> Coroutine[Any, Any, None]:
        """Continues from the transcript: from a user or tool-result message it calls the model
        again; from an assistant message it runs queued steering (else follow-up) messages.
        Raises ``CannotContinueError`` if there is nothing to continue from."""
    def continue_sync(self) -> None:
        """``continue_`` that blocks until the run ends."""
    def run(
        self, input: _PromptInput, images: Optional[Sequence[ImageContent]] = None
    ) -> AgentRun:
        """The events of one run of ``input``: ``async for event in agent.run("hi")``."""
    def abort(self) -> None:
        """Cancels the active run (thread-safe; does nothing when idle). The model call ends
        ``aborted`` and running tools get an aborted result, so the transcript stays valid."""
    def wait_for_idle(self) -> Coroutine[Any, Any, None]:
        """Resolves when no run is active."""
    def reset(self) -> None:
        """Clears the transcript, queues, streaming state and error (does not abort a run)."""
    def steer(self, message: Union[str, AgentMessage]) -> None:
        """Queues a message to inject after the current turn's tool calls."""
    def follow_up(self, message: Union[str, AgentMessage]) -> None:
        """Queues a message to run when the agent would otherwise stop."""
    def clear_all_queues(self) -> None:
        """Empties the steering and follow-up queues."""
    def clear_steering_queue(self) -> None:
        """Empties the steering queue."""
    def clear_follow_up_queue(self) -> None:
        """Empties the follow-up queue."""
    @property
    def has_queued_messages(self) -> bool: ...
    @property
    def steering_mode(self) -> QueueMode:
        """How many steering messages one poll takes: ``"one-at-a-time"`` (pi's default) or
        ``"all"``."""
    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None: ...
    @property
    def follow_up_mode(self) -> QueueMode:
        """How many follow-up messages one poll takes."""
    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None: ...
    def subscribe(self, callback: Callable[[AgentEvent], Any]) -> Unsubscribe:
        """Calls ``callback(event)`` for every event of every later run, synchronously and in
        order, on a runtime thread with the GIL held (keep it quick: the run waits for it).
        An exception in the callback is reported through ``sys.unraisablehook`` and recorded in
        ``listener_errors``, and does not affect the run. Returns a function that
        unsubscribes."""
    @property
    def listener_errors(self) -> list[str]:
        """Failures of subscribers, oldest first (at most the last 100), e.g.
        ``"subscriber panicked on agent_start: RuntimeError: ..."``."""
    @property
    def messages(self) -> list[AgentMessage]:
        """A copy of the transcript (assign a list of message dicts to replace it)."""
    @messages.setter
    def messages(self, messages: Sequence[AgentMessage]) -> None: ...
    def append_message(self, message: AgentMessage) -> None:
        """Appends a message dict to the transcript."""
    @property
    def is_streaming(self) -> bool:
        """Whether a run is active."""
    @property
    def streaming_message(self) -> Optional[AgentMessage]:
        """The message being streamed, as far as it has arrived (``None`` when idle)."""
    @property
    def pending_tool_calls(self) -> list[str]:
        """Ids of the tool calls running now."""
    @property
    def error_message(self) -> Optional[str]:
        """The error of the last failed turn, if any."""
    @property
    def system_prompt(self) -> str: ...
    @system_prompt.setter
    def system_prompt(self, prompt: str) -> None: ...
    @property
    def model(self) -> Model: ...
    @model.setter
    def model(self, model: Union[Model, ModelDict]) -> None: ...
    @property
    def thinking_level(self) -> Optional[ThinkingLevel]: ...
    @thinking_level.setter
    def thinking_level(self, level: Optional[ThinkingLevel]) -> None: ...
    @property
    def tools(self) -> list[Tool]: ...
    @tools.setter
    def tools(self, tools: Iterable[Union[Tool, Callable[..., Any]]]) -> None: ...
    def remove_tool(self, name: str) -> bool:
        """Removes the tool named ``name`` (for later runs); returns whether there was one."""
    @property
    def tool_execution(self) -> ToolExecutionMode:
        """``"parallel"`` (pi's default: prepared in order, run concurrently) or
        ``"sequential"`` tool calls, for later runs."""
    @tool_execution.setter
    def tool_execution(self, mode: ToolExecutionMode) -> None: ...
    @property
    def stream_idle_timeout_ms(self) -> Optional[int]:
        """Watchdog: a model stream that sends nothing for this long is cancelled and the turn
        ends with an error message (``"The model stream stalled (N ms without data)"``).
        ``None`` (default): off."""
    @stream_idle_timeout_ms.setter
    def stream_idle_timeout_ms(self, timeout: Optional[int]) -> None: ...
    @property
    def tool_timeout_ms(self) -> Optional[int]:
        """Watchdog: a tool call still running after this long gets the error result ``"Tool
        <name> timed out after N ms"`` (a sync function keeps running in its thread; see
        ``ToolContext.aborted``). ``None`` (default): off."""
    @tool_timeout_ms.setter
    def tool_timeout_ms(self, timeout: Optional[int]) -> None: ...

    # Hooks. Each may be a plain function or an ``async def``; it runs where tools run (a
    # worker thread; a coroutine on the loop awaiting ``prompt()``, else in ``asyncio.run`` on
    # the worker). Setting ``None`` clears it; changes apply from the next run.

    @property
    def before_tool_call(self) -> Optional[BeforeToolCallHook]:
        """Called before each tool call, after its arguments were validated, with
        ``{"toolCall", "args", "assistantMessage"}``. Return ``None`` to run the call,
        ``{"block": True, "reason": ...}`` to give the model an error result instead, or
        ``{"args": {...}}`` to run it with other arguments (not revalidated). If it raises, or
        returns anything else, the call gets an error result with the exception's message
        (pi's rule) and the run goes on."""
    @before_tool_call.setter
    def before_tool_call(self, hook: Optional[BeforeToolCallHook]) -> None: ...
    @property
    def after_tool_call(self) -> Optional[AfterToolCallHook]:
        """Called after each tool call that ran (not for blocked, unknown or invalid calls),
        with ``{"toolCall", "args", "result", "isError", "assistantMessage"}``. Return ``None``
        to keep the result, or a dict whose fields ``content`` (a list of blocks or a str),
        ``details``, ``isError`` and ``terminate`` each replace the original whole. If it
        raises, the call gets an error result with the exception's message."""
    @after_tool_call.setter
    def after_tool_call(self, hook: Optional[AfterToolCallHook]) -> None: ...
    @property
    def should_stop_after_turn(self) -> Optional[ShouldStopAfterTurnHook]:
        """Asked after every turn with ``{"message", "toolResults", "newMessages"}``; a true
        value ends the run there, without polling the steering and follow-up queues.

        If it raises, the run fails as core fails a run whose hook panics: it ends with an
        assistant message whose ``stopReason`` is ``"error"`` and whose ``errorMessage`` is
        ``"should_stop_after_turn raised <Type>: <message>"`` (also ``error_message``);
        ``prompt()`` does not raise."""
    @should_stop_after_turn.setter
    def should_stop_after_turn(self, hook: Optional[ShouldStopAfterTurnHook]) -> None: ...
    @property
    def transform_context(self) -> Optional[TransformContextHook]:
        """Called before each model call with the transcript (a list of message dicts, custom
        ones included); returns the messages to send instead, e.g. pruned or summarised. The
        result is sent, never stored. Custom messages in it are dropped before the request as
        usual.

        If it raises, or returns something that is not a list of messages (``None``
        included), the run fails — the untransformed transcript is *not* sent — with an
        assistant message whose ``stopReason`` is ``"error"`` and whose ``errorMessage`` is
        ``"transform_context raised <Type>: <message>"``; ``prompt()`` does not raise."""
    @transform_context.setter
    def transform_context(self, hook: Optional[TransformContextHook]) -> None: ...
    @property
    def get_api_key(self) -> Optional[GetApiKeyHook]:
        """Called with the provider name (``"openai"``, ...) before every model call; returns
        the key to use (for short-lived tokens), or ``None`` for the ``api_key`` option / the
        environment. If it raises, or returns something that is not a str or ``None``, the run
        fails as for ``transform_context`` (``"get_api_key raised <Type>: <message>"``)."""
    @get_api_key.setter
    def get_api_key(self, hook: Optional[GetApiKeyHook]) -> None: ...
