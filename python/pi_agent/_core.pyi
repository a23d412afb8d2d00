"""Stubs of the compiled module ``pi_agent._core`` (hand-written; keep in sync with python/src)."""

import asyncio
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Iterator,
)
from os import PathLike
from types import TracebackType
from typing import Any, Generic, Literal, Mapping, Optional, Sequence, Type, Union, final, overload

from typing_extensions import ParamSpec, TypeVar, Unpack

from .types import (
    AfterToolCallHook,
    AgentEvent,
    AgentMessage,
    AgentMessageInput,
    AgentSnapshot,
    AgentToolResult,
    AssistantMessage,
    AssistantMessageEvent,
    BeforeToolCallHook,
    Context,
    ConvertToLlmHook,
    ErrorKind,
    GetApiKeyHook,
    ImageContent,
    Message,
    ModelCost,
    ModelDict,
    QueueMode,
    RunLimit,
    RunLimits,
    ShouldStopAfterTurnHook,
    Step,
    StepInput,
    StepperConfig,
    StreamFn,
    StreamOptions,
    Subscriber,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    ToolCall,
    ToolDefinition,
    ToolExecutionMode,
    TransformContextHook,
    Usage,
    UsageCost,
)

__all__ = [
    "McpError",
    "McpServer",
    "_NativeToolCall",
    "Agent",
    "AgentRun",
    "AgentStepper",
    "Unsubscribe",
    "AgentBusyError",
    "AgentRunError",
    "CannotContinueError",
    "OAuthError",
    "PiError",
    "PiTypeError",
    "PiValueError",
    "ToolValidationError",
    "ModelError",
    "RateLimitError",
    "AuthenticationError",
    "NotFoundError",
    "BadRequestError",
    "ServerError",
    "NetworkError",
    "ModelTimeoutError",
    "DecodeError",
    "AbortedError",
    "ContextOverflowError",
    "RefusalError",
    "RunLimitExceeded",
    "InvalidOutputError",
    "raise_for_error",
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
    "Session",
    "SessionError",
    "SessionInUseError",
    "SessionSubscription",
    "Signal",
    "OnPayload",
    "OnResponse",
    "complete",
    "complete_simple",
    "complete_simple_sync",
    "complete_sync",
    "stream",
    "stream_simple",
    "is_context_overflow",
    "release_memory",
    "calculate_cost",
    "clamp_thinking_level",
    "default_convert_to_llm",
    "execute_tool_calls_sync",
    "find_env_keys",
    "get_env_api_key",
    "get_supported_thinking_levels",
    "models_are_equal",
    "parse_streaming_json",
    "transform_messages",
    "validate_tool_arguments",
    "validate_tool_call",
    "Tool",
    "ToolContext",
    "__version__",
    "_shape_fields",
    "_output_schema",
    "_parse_output",
    "_mcp_inherited_env",
    "_otel_enable",
    "_otel_stats",
    "_otel_take",
    "_otel_wait",
    "oauth_get_api_key",
    "oauth_get_api_key_sync",
    "oauth_login",
    "oauth_modify_models",
    "_OAuthLogin",
    "oauth_providers",
    "oauth_read_auth_file",
    "oauth_refresh",
    "oauth_refresh_sync",
    "oauth_register_provider",
    "oauth_reset_providers",
    "oauth_write_auth_file",
]

__version__: str

_M = TypeVar("_M", bound=Mapping[str, Any])

# ---------------------------------------------------------------------------------------------
# Errors

class PiError(Exception):
    """Base class of every error raised by pi_agent.

    Setup mistakes raise. Model, network, tool and abort failures do not by default: they end
    the run or stream with a message whose ``stopReason`` is ``"error"`` or ``"aborted"``.
    Ask for them as exceptions (``ModelError`` and its subclasses) with ``raise_for_error``
    or ``raise_on_error=True``.
    """

class PiValueError(PiError, ValueError):
    """A value pi_agent cannot use: a bad option value, a malformed message, context or model
    dict, an object that is not JSON. Also a ``ValueError``.

    ``field`` names what was wrong: ``"options.temperature"``, ``"context"``, ``"messages"``,
    ``"model_ids"``, ...; ``None`` when unknown."""

    field: Optional[str]
    def __init__(self, *args: object, field: Optional[str] = None) -> None: ...

class PiTypeError(PiError, TypeError):
    """An argument of the wrong kind: an unknown option, a hook or callback that is not
    callable, a key that is not a str. Also a ``TypeError``.

    ``field`` names the argument (``"options.foo"``, ``"before_tool_call"``), or is ``None``."""

    field: Optional[str]
    def __init__(self, *args: object, field: Optional[str] = None) -> None: ...

class AgentBusyError(PiError):
    """A prompt or continue was started while the agent is running. The message is pi's:
    ``"Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or
    wait for completion."``"""

class CannotContinueError(PiError):
    """``continue_()`` found nothing to continue from (an empty transcript, or an assistant
    message last with nothing queued)."""

class AgentRunError(PiError):
    """The agent's run ended abnormally (a bug in pi_agent; the transcript was repaired)."""

class ToolValidationError(PiError):
    """Tool-call arguments do not match the tool's schema (pi's validation report), or the
    tool is unknown (``validate_tool_call``)."""

class SessionError(PiError):
    """A durable session's store failed (the session stopped; open it again to resume),
    another writer wrote the same session, or a request id was reused for another kind of
    request."""

class SessionInUseError(SessionError):
    """The session is open in another handle or process (opening or deleting it is refused
    until that one is closed)."""

class OAuthError(PiError):
    """An OAuth login, refresh or credentials-file operation failed (the message never holds
    a token)."""

class ModelError(PiError):
    """A model call or an agent run failed: the failed assistant message as an exception.
    Raised only on request (``raise_for_error``, ``raise_on_error=True``); the subclass is the
    message's ``errorKind``.

    ``message`` is the failed assistant message, ``kind`` its ``errorKind`` (``None`` when
    none fits), ``http_status`` its ``httpStatus``, ``retry_after`` the delay the server asked
    for in seconds (``retry_after_ms`` in milliseconds), ``run_limit`` the limit that ended
    the run (``RunLimitExceeded``)."""

    message: Optional[AssistantMessage]
    kind: Optional[ErrorKind]
    http_status: Optional[int]
    retry_after_ms: Optional[int]
    retry_after: Optional[float]
    run_limit: Optional[RunLimit]
    def __init__(
        self,
        *args: object,
        message: Optional[AssistantMessage] = None,
        kind: Optional[ErrorKind] = None,
        http_status: Optional[int] = None,
        retry_after_ms: Optional[int] = None,
        run_limit: Optional[RunLimit] = None,
    ) -> None: ...

class RateLimitError(ModelError):
    """Too many requests or tokens (HTTP 429): wait ``retry_after`` seconds when set."""

class AuthenticationError(ModelError):
    """The credentials were refused (HTTP 401/403) or none were found."""

class NotFoundError(ModelError):
    """The model or endpoint does not exist (HTTP 404)."""

class BadRequestError(ModelError):
    """The provider refused the request as malformed (HTTP 400/422); a retry won't help."""

class ServerError(ModelError):
    """The provider failed or is overloaded (HTTP 5xx, 529)."""

class NetworkError(ModelError, ConnectionError):
    """The connection could not be made, was reset, or the body was cut off (also a
    ``ConnectionError``)."""

class ModelTimeoutError(ModelError, TimeoutError):
    """A time limit ran out: response headers, a silent stream, an agent watchdog (also a
    ``TimeoutError``)."""

class DecodeError(ModelError):
    """The response could not be read as its protocol says."""

class AbortedError(ModelError):
    """The request or run was aborted."""

class ContextOverflowError(ModelError):
    """The prompt does not fit the model's context window: compact and retry."""

class RefusalError(ModelError):
    """The model or the provider's filter declined to answer."""

class RunLimitExceeded(ModelError):
    """The agent ended the run at one of its run limits; ``run_limit`` names it
    (``"maxTurns"``, ``"maxToolCalls"``, ...)."""

class InvalidOutputError(ModelError):
    """The answer does not match the requested output schema (``errorKind``
    ``"invalid_output"``); ``pi_agent.OutputValidationError`` derives from it."""

def raise_for_error(message: _M) -> _M:
    """Raises the ``ModelError`` subclass of a failed assistant message (``stopReason``
    ``"error"`` or ``"aborted"``), and returns the message unchanged otherwise::

        message = pi_agent.raise_for_error(pi_agent.complete_sync(model, context))
    """

# ---------------------------------------------------------------------------------------------
# Signals

@final
class Signal:
    """A cancellation token (pi's ``AbortSignal`` and ``AbortController`` in one): an agent
    run's signal (``agent.signal``, ``AgentRun.signal``, ``ToolContext.signal``, the second
    argument of hooks and subscribers that take one), or one you make to cancel a request
    (``stream(..., signal=s)``) or a login."""

    def __new__(cls) -> Signal: ...
    @property
    def aborted(self) -> bool:
        """Whether the signal was aborted."""
    def abort(self) -> None:
        """Aborts: whatever watches this signal stops (thread-safe)."""
    def wait(self) -> Coroutine[Any, Any, None]:
        """Resolves once the signal is aborted."""
    def wait_sync(self, timeout: Optional[float] = None) -> bool:
        """Blocks (GIL released) until aborted or ``timeout`` seconds passed; whether it was
        aborted. A negative ``timeout`` does not wait, an infinite one is no limit, NaN is a
        ``ValueError`` (the same for every ``timeout=`` of the package)."""

@final
class OnPayload:
    """An ``on_payload`` callback as a stream function's options carry it: pass it on in
    ``options``, or call it."""

    def __call__(self, payload: Mapping[str, Any], model: Union[Model, ModelDict], /) -> Optional[dict[str, Any]]: ...

@final
class OnResponse:
    """An ``on_response`` callback as a stream function's options carry it."""

    def __call__(self, status: int, headers: Mapping[str, str], model: Union[Model, ModelDict], /) -> None: ...

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
    def __hash__(self) -> int:
        """Equal models hash equal (usable as dict keys and in sets)."""
    def __reduce__(self) -> tuple[Any, tuple[ModelDict]]:
        """Pickles as pi's JSON shape (``Model.from_dict(model.to_dict())``)."""

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
    ``await result()`` / ``result_sync()`` give the final message. As a context manager
    (``with`` or ``async with``) it aborts the request if the block exits before the stream
    ended; so does collecting the object::

        with pi_agent.stream(model, context) as events:
            for event in events:
                if event["type"] == "text_delta":
                    print(event["delta"], end="")
            message = events.result_sync()
    """

    def __iter__(self) -> Iterator[AssistantMessageEvent]: ...
    def __next__(self) -> AssistantMessageEvent: ...
    def __aiter__(self) -> AsyncIterator[AssistantMessageEvent]: ...
    def __anext__(self) -> Awaitable[AssistantMessageEvent]: ...
    def result(self, *, raise_on_error: bool = False) -> Coroutine[Any, Any, AssistantMessage]:
        """Waits for the end (consuming the remaining events) and returns the final message;
        failures are a message with ``stopReason`` ``"error"`` or ``"aborted"`` (raised as
        their ``ModelError`` subclass with ``raise_on_error=True``)."""
    def result_sync(self, *, raise_on_error: bool = False) -> AssistantMessage:
        """``result()`` that blocks (GIL released); Ctrl-C aborts the request."""
    def abort(self) -> None:
        """Cancels the request (thread-safe): the stream ends with an ``error`` event whose
        reason is ``"aborted"``."""
    @property
    def signal(self) -> Signal:
        """The request's signal (aborting it aborts the request)."""
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
    """Starts a request to ``model`` and returns its event stream at once (pi's ``stream``).

    ``context`` is pi's ``Context``: ``{"systemPrompt": ..., "messages": [...], "tools":
    [...]}`` (tools may be ``Tool`` objects). ``options`` are core's request options, each
    named by its pi JSON name in snake_case (``api_key``, ``max_tokens``, ``reasoning_effort``,
    ``thinking_enabled``, ``azure_deployment_name``, ... see ``pi_agent.types.StreamOptions``);
    an unknown name raises ``TypeError``, a bad value ``ValueError``, both naming it. Sends
    exactly what the options say (``reasoning`` is ``stream_simple``'s). Never raises for
    provider failures: they end the stream with an ``error`` event."""

def stream_simple(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    **options: Unpack[StreamOptions],
) -> AssistantMessageEventStream:
    """pi's ``streamSimple``: like ``stream``, but ``reasoning`` (a level; ``"off"`` for none)
    is mapped onto the provider's own options, thinking is turned off explicitly when no level
    is given, and ``max_tokens`` defaults to ``min(model.max_tokens, 32000)``. The agent calls
    models this way."""

def complete(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    *,
    raise_on_error: bool = False,
    **options: Unpack[StreamOptions],
) -> Coroutine[Any, Any, AssistantMessage]:
    """``stream(...)``, then the final assistant message: ``await pi_agent.complete(...)``.
    With ``raise_on_error=True`` a failed message raises its ``ModelError`` subclass
    (``RateLimitError``, ``AuthenticationError``, ...) instead of being returned."""

def complete_sync(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    *,
    raise_on_error: bool = False,
    **options: Unpack[StreamOptions],
) -> AssistantMessage:
    """``complete`` that blocks (GIL released) until the final assistant message."""

def complete_simple(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    *,
    raise_on_error: bool = False,
    **options: Unpack[StreamOptions],
) -> Coroutine[Any, Any, AssistantMessage]:
    """``stream_simple(...)``, then the final assistant message."""

def complete_simple_sync(
    model: Union[Model, ModelDict],
    context: Union[Context, Mapping[str, Any]],
    *,
    raise_on_error: bool = False,
    **options: Unpack[StreamOptions],
) -> AssistantMessage:
    """``complete_simple`` that blocks (GIL released)."""

def release_memory() -> bool:
    """Returns the memory the allocator keeps for reuse to the operating system (glibc's
    ``malloc_trim``) and says whether any was returned. Freed memory otherwise stays with the
    process: after thousands of concurrent streams have ended, RSS stays at their peak. Call it
    when a burst of streams or runs has ended; ``False`` where the allocator is not glibc's."""
    ...

def is_context_overflow(
    message: Union[AssistantMessage, Mapping[str, Any]], context_window: Optional[int] = None
) -> bool:
    """Whether an assistant message reports a context overflow (pi's ``isContextOverflow``):
    an error whose text is a known "prompt too long" message of some provider, or, given the
    model's ``context_window``, a response whose input exceeded it (some providers truncate
    silently) or that stopped at ``length`` with no output and a full window. Use it to decide
    to compact the transcript and retry. (A failed message of this library also says so in
    ``errorKind``: ``"context_overflow"``, see :func:`pi_agent.error_kind`.) ``ValueError`` if
    ``message`` is not an assistant message dict."""

# ---------------------------------------------------------------------------------------------
# pi-ai helpers

def calculate_cost(model: Union[Model, ModelDict], usage: Union[Usage, Mapping[str, Any]]) -> UsageCost:
    """The cost of ``usage`` with ``model``'s prices (pi's ``calculateCost``); like pi, also
    stores it in ``usage["cost"]`` when ``usage`` is a dict."""

def models_are_equal(
    a: Optional[Union[Model, ModelDict]], b: Optional[Union[Model, ModelDict]]
) -> bool:
    """pi's ``modelsAreEqual``: the same id and provider (``None`` is never equal)."""

def get_supported_thinking_levels(model: Union[Model, ModelDict]) -> list[ThinkingLevel]:
    """The levels ``model`` supports, ``"off"`` first (pi's ``getSupportedThinkingLevels``)."""

def clamp_thinking_level(model: Union[Model, ModelDict], level: ThinkingLevel) -> ThinkingLevel:
    """The nearest level ``model`` supports (pi's ``clampThinkingLevel``)."""

def get_env_api_key(provider: str) -> Optional[str]:
    """The key of ``provider`` from its environment variables (pi's ``getEnvApiKey``)."""

def find_env_keys(provider: str) -> list[str]:
    """The names of ``provider``'s key variables that are set (pi's ``findEnvKeys``)."""

def transform_messages(
    messages: Sequence[Union[Message, Mapping[str, Any]]],
    model: Union[Model, ModelDict],
    normalize_tool_call_id: Optional[Callable[[str], str]] = None,
) -> list[Message]:
    """The messages as they should be sent to ``model`` (pi's ``transformMessages``): other
    models' thinking becomes text, tool-call ids go through ``normalize_tool_call_id``, images
    the model cannot read are replaced, orphaned tool calls get results."""

def validate_tool_call(
    tools: Sequence[Union[ToolDefinition, Tool, Mapping[str, Any]]],
    tool_call: Union[ToolCall, Mapping[str, Any]],
) -> Any:
    """The arguments of ``tool_call`` validated and coerced against the schema of the tool it
    names (pi's ``validateToolCall``); ``ToolValidationError`` with pi's report otherwise."""

def validate_tool_arguments(
    tool: Union[ToolDefinition, Tool, Mapping[str, Any]],
    tool_call: Union[ToolCall, Mapping[str, Any]],
) -> Any:
    """The arguments of ``tool_call`` validated against ``tool``'s schema (pi's
    ``validateToolArguments``)."""

def _mcp_inherited_env() -> list[str]:
    """The host's environment variables a stdio MCP server gets without ``inheritEnv``."""

def _parse_output(text: str) -> Any:
    """core's ``parse_output``: an answer's text as JSON (one Markdown code fence allowed)."""

def _output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """core's ``OutputSchema`` from a ``{"name", "schema", "strict"}`` dict or a bare schema."""

def parse_streaming_json(text: str) -> Any:
    """pi's ``parseStreamingJson``: the value of possibly incomplete JSON (``{}`` when nothing
    parses yet)."""

def default_convert_to_llm(messages: Sequence[Union[AgentMessage, Mapping[str, Any]]]) -> list[Message]:
    """pi's ``defaultConvertToLlm``: the user, assistant and tool-result messages (custom
    messages dropped)."""

def _shape_fields(name: str) -> list[str]:
    """The JSON keys core's serde type ``name`` reads (for the package's own tests)."""

# Span recording for ``pi_agent._otel`` (``instrument_opentelemetry``).
def _otel_enable(enabled: bool) -> bool:
    """Turns the recording of core's spans on or off; ``False`` if it cannot run."""

def _otel_stats() -> tuple[bool, int, int]:
    """``(enabled, spans seen, spans dropped because Python was behind)``."""

def _otel_wait(timeout: float) -> bool:
    """Waits (GIL released) up to ``timeout`` seconds for span records."""

def _otel_take() -> list[tuple[Any, ...]]:
    """The span records queued, oldest first (see ``python/src/otel.rs``)."""

# ---------------------------------------------------------------------------------------------
# Faux provider

_FauxResponse = Union[
    AssistantMessage,
    Mapping[str, Any],
    Sequence[Union[TextContent, ThinkingContent, ToolCall, Mapping[str, Any]]],
    str,
    Callable[[Context, int, Model], Any],
    Callable[[Context, int, Model], Awaitable[Any]],
]

@final
class FauxProvider:
    """A registered, scripted in-process provider (pi's faux provider), for tests, examples and
    offline demos. Each request pops the next scripted response and streams it with a real
    provider's event order. ``with FauxProvider() as faux:`` unregisters it on exit.

    A response is an assistant message dict (missing ``api``, ``provider``, ``model``,
    ``usage``, ``timestamp`` are filled in, and ``stopReason`` is ``"toolUse"`` when it has
    tool calls, else ``"stop"``), a list of content blocks, a str (one text block), or a
    callable ``factory(context, call_number, model)`` returning one of those — a plain
    function (run on a worker thread) or an ``async def`` (core's async factory). A factory
    that raises ends the stream with an error. Requests with a ``session_id`` get pi's
    prompt-cache simulation (the repeated prefix of a session counts as ``cacheRead``).
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

_ToolParams = ParamSpec("_ToolParams", default=...)
_ToolResult = TypeVar("_ToolResult", default=Any)

@final
class Tool(Generic[_ToolParams, _ToolResult]):
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
        prepare_arguments: Optional[Callable[[Any], Any]] = None,
        replay_safe: bool = False,
    ) -> Tool: ...
    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        name: Optional[str] = None,
        description: Optional[str] = None,
        parameters: Optional[Mapping[str, Any]] = None,
        *,
        label: Optional[str] = None,
        execution_mode: Optional[ToolExecutionMode] = None,
        prepare_arguments: Optional[Callable[[Any], Any]] = None,
        replay_safe: bool = False,
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
    def replay_safe(self) -> bool:
        """Whether a durable ``Session`` may run a call again after the process died while it
        ran (pi-durable's ``replay: "safe"``); other tools' calls then end ``interrupted``."""
    @property
    def execution_mode(self) -> Optional[ToolExecutionMode]:
        """``"sequential"`` makes the batch of calls this tool's call is in run one at a time;
        ``None`` follows the agent's ``tool_execution``."""
    @property
    def prepare_arguments(self) -> Optional[Callable[[Any], Any]]:
        """pi's ``prepareArguments``: called with the model's raw arguments before validation,
        returns the arguments to validate instead (a shim for sloppy models)."""
    @property
    def function(self) -> Callable[..., Any]: ...
    def to_dict(self) -> ToolDefinition:
        """The tool as the LLM sees it: ``{"name", "description", "parameters"}``."""
    def __call__(self, *args: _ToolParams.args, **kwargs: _ToolParams.kwargs) -> _ToolResult:
        """Calls the function (the decorated function's signature, for type checkers)."""

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
    @property
    def signal(self) -> Signal:
        """The run's signal: ``ctx.signal.wait_sync(timeout)`` sleeps until the run is
        aborted."""
    def update(self, partial: Union[str, AgentToolResult, Mapping[str, Any]]) -> None:
        """Reports progress as a ``tool_execution_update`` event: a str (the text) or a tool
        result dict (``{"content": ..., "details": ...}``; ``content`` may be a str). Never
        blocks; updates after the call ended are dropped."""

# ---------------------------------------------------------------------------------------------
# Agent

_PromptInput = Union[str, AgentMessageInput, Sequence[AgentMessageInput]]

@final
class Session:
    """A durable agent session in a SQLite file (WAL mode; one file holds many sessions):
    every event, message, request and step is written before it is shown, so the session
    survives the process. Opening a session that exists resumes it: a finished step is never
    redone, a model call in flight is made again (its records carry the next ``attempt``), a
    tool call in flight runs again only if its tool is ``replay_safe`` (else it ends with an
    ``interrupted`` error result). Requests carry an id and are applied once. One handle
    drives a session at a time: opening one that another handle (in this process or another)
    has open raises ``SessionInUseError``."""

    def __new__(
        cls,
        store_path: Union[str, PathLike[str]],
        session_id: str,
        model: Model,
        *,
        system_prompt: str = "",
        tools: Optional[Sequence[Union[Tool[Any, Any], Callable[..., Any]]]] = None,
        settings: Optional[Mapping[str, Any]] = None,
        compaction: Optional[Mapping[str, Any]] = None,
    ) -> Session: ...
    @property
    def id(self) -> str: ...
    @property
    def last_seq(self) -> int:
        """The seq of the last journalled record."""
    def prompt(self, request_id: str, text: str) -> dict[str, Any]:
        """Asks for a run with ``text``; returns ``{"requestId", "kind", "seq"}``. The same id
        again is a no-op returning the same receipt, also after a restart."""
    def steer(self, request_id: str, text: str) -> dict[str, Any]:
        """Injects ``text`` after the current turn's tool calls (starts a run when idle)."""
    def follow_up(self, request_id: str, text: str) -> dict[str, Any]:
        """Runs ``text`` when the agent would otherwise stop (starts a run when idle)."""
    def abort(self) -> None:
        """Aborts the current run (the partial answer is kept; no-op when idle)."""
    def wait_idle(self, timeout: Optional[float] = None) -> bool:
        """Blocks until no run goes on; ``False`` when ``timeout`` seconds passed first.
        Raises ``PiError`` when called from one of the session's own tools (it would wait for
        itself)."""
    def transcript(self) -> list[AgentMessage]: ...
    def compact(self) -> Optional[dict[str, Any]]:
        """Summarises the older turns now: ``{"summary", "covers", "tokensBefore"}``, or
        ``None`` when there was nothing new to compact. Raises ``PiError`` from one of the
        session's own tools."""
    def subscribe(self, after: int = 0) -> SessionSubscription:
        """The journal records after ``after``, then live ones."""
    @staticmethod
    def follow(
        store_path: Union[str, PathLike[str]], session_id: str, after: int = 0
    ) -> SessionSubscription:
        """Follows a session of the file without running it (another process's)."""
    @staticmethod
    def sessions(store_path: Union[str, PathLike[str]]) -> list[str]:
        """The ids of the sessions in the file (which must exist), sorted."""
    @staticmethod
    def delete(store_path: Union[str, PathLike[str]], session_id: str) -> bool:
        """Deletes the session's journal from the file (which must exist): ``True`` when it
        had one. Raises ``SessionInUseError`` while a handle (in this process or another) has
        the session open; afterwards the id opens as a new, empty session. The file keeps its
        size (SQLite reuses the pages)."""
    def close(self) -> None:
        """Stops the session where it is, as a killed process would."""
    def __enter__(self) -> Session: ...
    def __exit__(self, *args: object) -> None: ...

@final
class SessionSubscription:
    """Journal records ``{"seq": 12, "attempt": 0, "event": {...}}`` after a cursor, in order,
    then live ones: nothing skipped, nothing twice. A record whose ``attempt`` is higher than
    that of the message being shown means the message was restarted after a crash."""

    def next(self, timeout: Optional[float] = None) -> Optional[dict[str, Any]]: ...
    @property
    def cursor(self) -> int:
        """The seq of the last record handed out."""
    def __iter__(self) -> SessionSubscription: ...
    def __next__(self) -> dict[str, Any]: ...

@final
class Unsubscribe:
    """Returned by ``Agent.subscribe``: call it to stop the callbacks (calling again does
    nothing)."""

    def __call__(self) -> None: ...

@final
class AgentRun:
    """One run of an agent as a value (core's ``AgentRun``), started by ``agent.run(...)``: an
    iterator and async iterator of the run's events (pi-shaped dicts, ending after
    ``agent_end``), its result, its signal and its abort::

        with agent.run("What is 6 * 7?") as run:      # or: async with / async for
            for event in run:
                print(event["type"])
        new_messages = run.result_sync()               # or: await run.result()

    Leaving the ``with`` block before the end aborts the run and waits for the abort;
    dropping the object aborts it too.
    """

    def __iter__(self) -> Iterator[AgentEvent]: ...
    def __next__(self) -> AgentEvent: ...
    def __aiter__(self) -> AsyncIterator[AgentEvent]: ...
    def __anext__(self) -> Awaitable[AgentEvent]: ...
    def result(self, *, raise_on_error: bool = False) -> Coroutine[Any, Any, list[AgentMessage]]:
        """Waits until the run is over (reading the remaining events); the messages it added.
        Cancelling the awaiting task aborts the run, and the abort completes before the
        cancellation propagates. With ``raise_on_error=True`` a run whose last message failed
        raises it as its ``ModelError`` subclass (``RunLimitExceeded``, ...)."""
    def result_sync(self, *, raise_on_error: bool = False) -> list[AgentMessage]:
        """``result()`` that blocks (GIL released); Ctrl-C aborts the run and waits for the
        abort."""
    def __await__(self) -> Generator[Any, Any, list[AgentMessage]]:
        """``await agent.run(...)``: the messages the run added (as ``await run.result()``)."""
    def text_deltas(self) -> AsyncIterator[str]:
        """The answer's text as it streams: ``async for delta in run.text_deltas(): ...``
        (consumes the run's events, like iterating the run)."""
    def abort(self) -> None:
        """Aborts the run (thread-safe); it ends promptly with ``agent_end``."""
    @property
    def signal(self) -> Signal:
        """The run's signal (tools, hooks and subscribers get the same)."""
    @property
    def is_finished(self) -> bool:
        """Whether the run is over (its events read and the agent idle again)."""
    def __enter__(self) -> AgentRun: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...
    def __aenter__(self) -> Awaitable[AgentRun]: ...
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> Awaitable[bool]: ...

_OutT = TypeVar("_OutT")

@final
class Agent(Generic[_OutT]):
    """A stateful agent: a transcript, tools and a model, and runs of pi's agent loop over them.

    Waiting methods come in pairs: ``await agent.prompt(...)`` for asyncio, and
    ``agent.prompt_sync(...)``, which blocks with the GIL released and never uses the caller's
    event loop (so it also works inside a running loop, e.g. in Jupyter). Model, tool and abort
    failures do not raise: they end the run with a message in the transcript
    (``stopReason`` ``"error"``/``"aborted"``, see ``error_message``). Collecting the object
    aborts its run.
    """

    @overload
    def __new__(
        cls,
        model: Optional[Union[Model, ModelDict]] = None,
        *,
        system_prompt: str = "",
        tools: Optional[Iterable[Union[Tool, Callable[..., Any]]]] = None,
        tool_execution: ToolExecutionMode = "parallel",
        messages: Optional[Sequence[AgentMessageInput]] = None,
        thinking_level: Optional[ThinkingLevel] = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        before_tool_call: Optional[BeforeToolCallHook] = None,
        after_tool_call: Optional[AfterToolCallHook] = None,
        should_stop_after_turn: Optional[ShouldStopAfterTurnHook] = None,
        transform_context: Optional[TransformContextHook] = None,
        convert_to_llm: Optional[ConvertToLlmHook] = None,
        get_api_key: Optional[GetApiKeyHook] = None,
        stream_fn: Optional[StreamFn] = None,
        stream_idle_timeout_ms: Optional[int] = None,
        tool_timeout_ms: Optional[int] = None,
        limits: Optional[RunLimits] = None,
        proxy_url: Optional[str] = None,
        proxy_token: Optional[str] = None,
        output_type: Type[_OutT],
        output_retries: Optional[int] = None,
        **options: Unpack[StreamOptions],
    ) -> Agent[_OutT]: ...
    @overload
    def __new__(
        cls,
        model: Optional[Union[Model, ModelDict]] = None,
        *,
        system_prompt: str = "",
        tools: Optional[Iterable[Union[Tool, Callable[..., Any]]]] = None,
        tool_execution: ToolExecutionMode = "parallel",
        messages: Optional[Sequence[AgentMessageInput]] = None,
        thinking_level: Optional[ThinkingLevel] = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        before_tool_call: Optional[BeforeToolCallHook] = None,
        after_tool_call: Optional[AfterToolCallHook] = None,
        should_stop_after_turn: Optional[ShouldStopAfterTurnHook] = None,
        transform_context: Optional[TransformContextHook] = None,
        convert_to_llm: Optional[ConvertToLlmHook] = None,
        get_api_key: Optional[GetApiKeyHook] = None,
        stream_fn: Optional[StreamFn] = None,
        stream_idle_timeout_ms: Optional[int] = None,
        tool_timeout_ms: Optional[int] = None,
        limits: Optional[RunLimits] = None,
        proxy_url: Optional[str] = None,
        proxy_token: Optional[str] = None,
        output_type: Optional[Mapping[str, Any]] = None,
        output_retries: Optional[int] = None,
        **options: Unpack[StreamOptions],
    ) -> Agent[Any]:
        """Plain functions in ``tools`` are wrapped with ``Tool.from_function``. Without a
        model, the first prompt fails (pi's placeholder model ``unknown``). ``thinking_level``
        is pi's (``"off"``, the default, ... ``"xhigh"``). ``options`` are the request options
        of every model call (as for ``pi_agent.stream``, except ``reasoning``: the level is
        ``thinking_level``); ``update_options`` changes them later.

        The hooks (see the properties of the same names) and watchdogs can also be set later.
        ``stream_fn`` calls the model your way; ``proxy_url`` sends every model call through
        your server instead (pi's ``streamProxy``: ``POST {proxy_url}/api/stream`` with
        ``Authorization: Bearer {proxy_token}``); give one or the other.

        ``limits`` bound each run (``RunLimits``: ``maxTurns`` 100 by default, ``None`` for
        none; ``maxToolCalls``, token and cost budgets); a run that reaches one ends with an
        ``errorKind`` ``"run_limit"`` message (``RunLimitExceeded`` with
        ``raise_on_error=True``).

        ``output_type`` (a pydantic model, a dataclass, a TypedDict, or a JSON Schema dict)
        makes every run end in a value of that shape: each model call asks for it (tools stay
        usable), the final answer is validated and re-asked with the report up to
        ``output_retries`` times (default 1); ``prompt_output`` returns it as an instance."""
    @property
    def output_type(self) -> Optional[Any]:
        """The ``output_type`` the agent was made with, or ``None``."""
    def prompt_output(
        self, input: _PromptInput, images: Optional[Sequence[ImageContent]] = None
    ) -> Coroutine[Any, Any, _OutT]:
        """``prompt(...)``, then the run's answer as ``output_type``. Raises
        ``OutputValidationError`` when the run ended without a valid answer."""
    def prompt_output_sync(
        self, input: _PromptInput, images: Optional[Sequence[ImageContent]] = None
    ) -> _OutT:
        """``prompt_output`` that blocks until the run ends."""
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
        convert_to_llm: Optional[ConvertToLlmHook] = None,
        get_api_key: Optional[GetApiKeyHook] = None,
        stream_fn: Optional[StreamFn] = None,
        stream_idle_timeout_ms: Optional[int] = None,
        tool_timeout_ms: Optional[int] = None,
        proxy_url: Optional[str] = None,
        proxy_token: Optional[str] = None,
        **options: Unpack[StreamOptions],
    ) -> Agent[Any]:
        """A new agent with the data of ``snapshot`` — transcript, queues, model, system prompt,
        settings — and the code given here, as for the constructor (tools and hooks are code,
        so a snapshot cannot hold them). Request options given here change the snapshot's
        (secrets, which a snapshot never holds, included); watchdogs given here replace the
        snapshot's.

        ``snapshot`` is what ``snapshot()`` returned, possibly through ``json.dumps`` /
        ``json.loads``; a snapshot written by the Rust or C side loads too (the same JSON).
        ``ValueError`` if it is not a snapshot."""
    def snapshot(self) -> AgentSnapshot:
        """The agent's data as a pi-shaped, JSON-serialisable dict (see ``restore``). During a
        run, the transcript is as of the last completed message."""
    def run(
        self,
        input: _PromptInput,
        images: Optional[Sequence[ImageContent]] = None,
        *,
        partial: bool = False,
    ) -> AgentRun:
        """Starts a run of ``input`` and returns it at once (see ``AgentRun``); raises
        ``AgentBusyError`` if a run is active. ``partial=True`` adds pi's ``message`` (the
        message so far) to ``message_update`` events."""
    def run_continue(self, *, partial: bool = False) -> AgentRun:
        """``run()`` continuing from the transcript (as ``continue_()``)."""
    def prompt(
        self,
        input: _PromptInput,
        images: Optional[Sequence[ImageContent]] = None,
        *,
        raise_on_error: bool = False,
    ) -> Coroutine[Any, Any, list[AgentMessage]]:
        """Sends a prompt (a str, a message dict, or a list of them), waits until the run ends
        and returns the messages it added. Raises ``AgentBusyError`` if a run is active.
        Cancelling the awaiting task aborts the run, and the abort completes before the
        cancellation propagates (so a new prompt can start at once). With
        ``raise_on_error=True`` a run whose last message failed (model failure, abort, run
        limit) raises it as its ``ModelError`` subclass; the transcript keeps it either way."""
    def prompt_sync(
        self,
        input: _PromptInput,
        images: Optional[Sequence[ImageContent]] = None,
        *,
        raise_on_error: bool = False,
    ) -> list[AgentMessage]:
        """``prompt`` that blocks until the run ends (GIL released; Ctrl-C aborts the run and
        waits for the abort)."""
    def continue_(self, *, raise_on_error: bool = False) -> Coroutine[Any, Any, list[AgentMessage]]:
        """Continues from the transcript: from a user or tool-result message it calls the model
        again; from an assistant message it runs queued steering (else follow-up) messages.
        Raises ``CannotContinueError`` if there is nothing to continue from."""
    def continue_sync(self, *, raise_on_error: bool = False) -> list[AgentMessage]:
        """``continue_`` that blocks until the run ends."""
    def abort(self) -> None:
        """Cancels the active run (thread-safe; does nothing when idle). The model call ends
        ``aborted`` and running tools get an aborted result, so the transcript stays valid."""
    @property
    def signal(self) -> Optional[Signal]:
        """The active run's signal (pi's ``agent.signal``); ``None`` when idle."""
    def wait_for_idle(self) -> Coroutine[Any, Any, None]:
        """Resolves when no run is active (after an abort, once it completed). Raises
        ``PiError`` inside the agent's own run (a tool, hook or subscriber would wait for
        itself forever)."""
    def wait_for_idle_sync(self) -> None:
        """``wait_for_idle`` that blocks (GIL released)."""
    def reset(self) -> None:
        """Clears the transcript, queues, streaming state and error; ``AgentBusyError`` during
        a run."""
    def steer(self, message: Union[str, AgentMessageInput]) -> None:
        """Queues a message to inject after the current turn's tool calls."""
    def follow_up(self, message: Union[str, AgentMessageInput]) -> None:
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
    def subscribe(
        self,
        callback: Subscriber,
        *,
        partial: bool = False,
        loop: Optional[asyncio.AbstractEventLoop] = None,
    ) -> Unsubscribe:
        """Calls ``callback(event)`` — or ``callback(event, signal)`` when it takes two
        arguments — for every event of every later run, in order; the run waits for it.

        Where it runs: an ``async def`` callback runs on the event loop of the caller awaiting
        the run (``await agent.prompt(...)``, ``async for`` over ``agent.run(...)``), so it may
        touch that loop's objects (``queue.put_nowait(event)``); a plain function runs on a
        worker thread (it may block or call other agents), so from there use
        ``loop.call_soon_threadsafe`` to reach asyncio objects (an ``asyncio.Queue`` is not
        thread-safe) — or give ``loop=``: a plain function is then called on that loop's
        thread (``loop.call_soon_threadsafe``), in event order, without the run waiting for it;
        its exceptions go to the loop's exception handler. ``partial=True`` adds pi's
        ``message`` to ``message_update`` events. An exception does not affect the run: the
        first one of a subscriber goes to ``sys.unraisablehook``, every one to
        ``listener_errors``. Returns a function that unsubscribes."""
    @property
    def listener_errors(self) -> list[str]:
        """Failures of subscribers, oldest first (at most the last 100), e.g.
        ``"subscriber raised on agent_start: RuntimeError: ..."``."""
    @property
    def messages(self) -> list[AgentMessage]:
        """A copy of the transcript (assign a list of message dicts to replace it, when no run
        is active)."""
    @messages.setter
    def messages(self, messages: Sequence[AgentMessageInput]) -> None: ...
    def append_message(self, message: AgentMessageInput) -> None:
        """Appends a message dict to the transcript (when no run is active)."""
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
    def thinking_level(self) -> ThinkingLevel:
        """pi's reasoning level: ``"off"`` (the default) ... ``"xhigh"``; setting ``None``
        means ``"off"``."""
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
    def options(self) -> dict[str, Any]:
        """The request options of every model call, as keywords (secrets and callbacks left
        out: no API key or bearer token, no header that carries a credential, such as
        ``Authorization``)."""
    def update_options(self, **options: Unpack[StreamOptions]) -> None:
        """Changes request options for later runs: a value replaces, ``None`` unsets, the
        others stay: ``agent.update_options(api_key=..., session_id=..., headers=...)``."""
    @property
    def stream_idle_timeout_ms(self) -> Optional[int]:
        """Watchdog: a model stream that sends nothing for this long is cancelled and the turn
        ends with an error message (``"The model stream stalled (N ms without data)"``).
        ``None`` (default): off. Changes apply from the next run."""
    @stream_idle_timeout_ms.setter
    def stream_idle_timeout_ms(self, timeout: Optional[int]) -> None: ...
    @property
    def tool_timeout_ms(self) -> Optional[int]:
        """Watchdog: a tool call still running after this long gets the error result ``"Tool
        <name> timed out after N ms"`` (a sync function keeps running in its thread; see
        ``ToolContext.aborted``). ``None`` (default): off."""
    @tool_timeout_ms.setter
    def tool_timeout_ms(self, timeout: Optional[int]) -> None: ...
    @property
    def limits(self) -> RunLimits:
        """How far one run may go (``maxTurns`` 100 by default). Setting it replaces every
        limit (keys left out take their default; ``None`` restores the defaults); it applies
        from the next run."""
    @limits.setter
    def limits(self, limits: Optional[RunLimits]) -> None: ...

    # Hooks. Each may be a plain function or an ``async def``, and gets the run's ``Signal``
    # as a second argument when it takes one; it runs where tools run (a worker thread; a
    # coroutine on the loop awaiting ``prompt()``, else in ``asyncio.run`` on a worker). Setting
    # ``None`` clears it; changes apply from the next run.

    @property
    def before_tool_call(self) -> Optional[BeforeToolCallHook]:
        """Called before each tool call, after its arguments were validated, with
        ``{"assistantMessage", "toolCall", "args"}``. Return ``None`` to run the call,
        ``{"block": True, "reason": ...}`` to give the model an error result instead, or
        ``{"args": {...}}`` to run it with other arguments (not revalidated). If it raises, or
        returns anything else, the call gets an error result with the exception's message
        (pi's rule) and the run goes on. An abort or the tool watchdog cuts it short."""
    @before_tool_call.setter
    def before_tool_call(self, hook: Optional[BeforeToolCallHook]) -> None: ...
    @property
    def after_tool_call(self) -> Optional[AfterToolCallHook]:
        """Called after each tool call that ran (not for blocked, unknown or invalid calls),
        with ``{"assistantMessage", "toolCall", "args", "result", "isError"}``. Return ``None``
        to keep the result, or a dict whose fields ``content`` (a list of blocks or a str),
        ``details``, ``isError`` and ``terminate`` each replace the original whole. If it
        raises, the call gets an error result with the exception's message."""
    @after_tool_call.setter
    def after_tool_call(self, hook: Optional[AfterToolCallHook]) -> None: ...
    @property
    def should_stop_after_turn(self) -> Optional[ShouldStopAfterTurnHook]:
        """Asked after every turn with ``{"message", "toolResults", "newMessages"}``; a true
        value ends the run there, without polling the steering and follow-up queues. If it
        raises, the run ends with an assistant message whose ``stopReason`` is ``"error"``
        (``"should_stop_after_turn raised <Type>: <message>"``); ``prompt()`` does not raise."""
    @should_stop_after_turn.setter
    def should_stop_after_turn(self, hook: Optional[ShouldStopAfterTurnHook]) -> None: ...
    @property
    def transform_context(self) -> Optional[TransformContextHook]:
        """Called before each model call with the transcript (a list of message dicts, custom
        ones included); returns the messages to send instead, e.g. pruned or summarised. The
        result is sent, never stored. If it raises, or returns something that is not a list
        of messages, the run fails — the untransformed transcript is *not* sent — with an
        assistant message ``"transform_context raised <Type>: <message>"``."""
    @transform_context.setter
    def transform_context(self, hook: Optional[TransformContextHook]) -> None: ...
    @property
    def convert_to_llm(self) -> Optional[ConvertToLlmHook]:
        """pi's ``convertToLlm``: turns the (transformed) transcript into the messages the
        model reads, e.g. custom messages into user messages. Default: custom messages are
        dropped. It must return LLM messages (user, assistant, tool result); a failure fails
        the run as for ``transform_context``."""
    @convert_to_llm.setter
    def convert_to_llm(self, hook: Optional[ConvertToLlmHook]) -> None: ...
    @property
    def get_api_key(self) -> Optional[GetApiKeyHook]:
        """Called with the provider name (``"openai"``, ...) before every model call; returns
        the key to use (for short-lived tokens, e.g. ``pi_agent.oauth``), or ``None`` for the
        ``api_key`` option / the environment."""
    @get_api_key.setter
    def get_api_key(self, hook: Optional[GetApiKeyHook]) -> None: ...
    @property
    def stream_fn(self) -> Optional[StreamFn]:
        """How the model is called (pi's ``streamFn``): ``stream_fn(model, context, options)``
        with ``options`` as the keywords of ``pi_agent.stream`` (secrets and signal
        included), returning an ``AssistantMessageEventStream`` (e.g. ``stream_simple(model,
        context, **options)`` changed your way), a whole assistant message dict, or an
        iterable or async iterable of pi-shaped event dicts; it may be ``async def``. An
        exception fails the turn (``"stream_fn raised <Type>: <message>"``). ``None``: pi's
        ``stream_simple``."""
    @stream_fn.setter
    def stream_fn(self, hook: Optional[StreamFn]) -> None: ...

# ---------------------------------------------------------------------------------------------
# The sans-IO agent loop

@final
class AgentStepper:
    """The agent loop as a pure state machine (core's ``AgentStepper``) for your own driver —
    a durable workflow engine, a test: no runtime, thread or I/O, the same inputs give the
    same steps, and the state is a JSON dict to store between steps::

        stepper, step = AgentStepper.start(system_prompt="...", messages=history, prompts=[msg])
        while step["action"]["type"] != "finished":
            deliver(step["events"])
            step = stepper.resume(perform(step["action"]))   # e.g. {"type": "model_result", ...}

    Actions: ``poll_steering`` / ``poll_follow_up`` (answer ``{"type": "steering" |
    "follow_up", "messages"}``), ``call_model`` (``{"type": "model_result", "message",
    "startEmitted"}``), ``execute_tools`` (``{"type": "tool_results", "outcomes": [{"message",
    "terminate"}]}``), ``should_stop_after_turn`` (``{"type": "should_stop", "stop"}``),
    ``finished``; ``{"type": "failed", "message"}`` ends the run with a failure.
    """

    @classmethod
    def start(
        cls,
        *,
        system_prompt: str = "",
        messages: Optional[Sequence[AgentMessageInput]] = None,
        prompts: Optional[Sequence[AgentMessageInput]] = None,
        config: Optional[Union[StepperConfig, Mapping[str, Any]]] = None,
    ) -> tuple[AgentStepper, Step]:
        """Starts a run on ``messages`` (the transcript): with ``prompts`` as pi's
        ``agentLoop``, without (``None``) as ``agentLoopContinue``. Returns the stepper and
        its first step."""
    def resume(self, input: Union[StepInput, Mapping[str, Any]]) -> Step:
        """Feeds the result of the last action and returns the next step; ``ValueError`` if it
        does not answer the pending action (the state is unchanged)."""
    def abort(self) -> None:
        """Records an abort: after the current turn's tools the run ends, and the queues are
        not polled."""
    @property
    def is_aborted(self) -> bool: ...
    @property
    def is_finished(self) -> bool: ...
    @property
    def system_prompt(self) -> str: ...
    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript as the run sees it now (what ``call_model`` sends, after your
        ``transform_context`` / ``convert_to_llm``; see ``default_convert_to_llm``)."""
    @property
    def new_messages(self) -> list[AgentMessage]:
        """The messages this run added so far."""
    def to_dict(self) -> dict[str, Any]:
        """The state as a JSON-serialisable dict."""
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentStepper:
        """A stepper from ``to_dict()``'s output."""
    def __eq__(self, other: object, /) -> bool: ...

def execute_tool_calls_sync(
    action: Mapping[str, Any],
    tools: Sequence[Union[Tool, Callable[..., Any]]],
    *,
    signal: Optional[Signal] = None,
    before_tool_call: Optional[BeforeToolCallHook] = None,
    after_tool_call: Optional[AfterToolCallHook] = None,
    tool_timeout_ms: Optional[int] = None,
    on_event: Optional[Callable[[dict[str, Any]], object]] = None,
) -> dict[str, Any]:
    """Performs a stepper's ``execute_tools`` action with ``tools`` as the agent does
    (``prepare_arguments``, validation, the functions, ``ToolContext`` updates, the abort
    through ``signal``), blocking (GIL released) until every call ends. Returns
    ``{"outcomes": [...], "events": [...]}``: answer the stepper with ``{"type":
    "tool_results", "outcomes": ...}``; ``events`` are the ``tool_execution_*`` events.
    ``before_tool_call`` / ``after_tool_call`` are the agent's hooks of those names and
    ``tool_timeout_ms`` its tool watchdog, applied exactly as in an agent run.
    ``on_event(event)`` gets each of those events as it happens (a tool's start and its
    updates while it still runs), in order, on the calling thread while the calls go on (it
    may block or call pi_agent); what it raises goes to ``sys.unraisablehook`` and the calls
    go on."""

# ---------------------------------------------------------------------------------------------
# OAuth (use pi_agent.oauth, which wraps these)

def oauth_providers() -> list[dict[str, Any]]: ...
def oauth_login(
    provider_id: str,
    *,
    on_auth: Callable[..., Any],
    on_prompt: Callable[..., Any],
    on_progress: Optional[Callable[..., Any]] = None,
    on_manual_code_input: Optional[Callable[..., Any]] = None,
    on_select: Optional[Callable[..., Any]] = None,
    signal: Optional[Signal] = None,
) -> _OAuthLogin: ...
@final
class _OAuthLogin:
    """A prepared login, which runs once."""

    def run(self) -> Awaitable[dict[str, Any]]: ...
    def run_sync(self) -> dict[str, Any]: ...
def oauth_get_api_key(
    provider_id: str, credentials: Mapping[str, Mapping[str, Any]]
) -> Awaitable[Optional[dict[str, Any]]]: ...
def oauth_get_api_key_sync(
    provider_id: str, credentials: Mapping[str, Mapping[str, Any]]
) -> Optional[dict[str, Any]]: ...
def oauth_refresh(provider_id: str, credentials: Mapping[str, Any]) -> Awaitable[dict[str, Any]]: ...
def oauth_refresh_sync(provider_id: str, credentials: Mapping[str, Any]) -> dict[str, Any]: ...
def oauth_read_auth_file(path: Union[str, PathLike[str]]) -> dict[str, dict[str, Any]]: ...
def oauth_write_auth_file(path: Union[str, PathLike[str]], data: Mapping[str, Mapping[str, Any]]) -> None: ...
def oauth_register_provider(provider_id: str, **config: Any) -> None: ...
def oauth_reset_providers() -> None: ...
def oauth_modify_models(
    provider_id: str, credentials: Mapping[str, Any], models: Sequence[Union[Model, Mapping[str, Any]]]
) -> list[Model]: ...

# ---------------------------------------------------------------------------------------------
# MCP servers (pi_agent.mcp wraps these)

class McpError(PiError):
    """An MCP server could not be started or reached, or failed a request; the message names
    the server and says why. (A failing tool call inside an agent run is an error tool result
    instead.)"""

@final
class McpServer:
    """A connected MCP server (see ``pi_agent.mcp``)."""

    @staticmethod
    def connect(config: Mapping[str, Any]) -> McpServer:
        """Connects to the server ``config`` describes (core's ``McpServerConfig``) and
        completes ``initialize``. Blocks (without the GIL)."""
    @staticmethod
    def connect_async(config: Mapping[str, Any]) -> Awaitable[McpServer]:
        """``connect`` as an awaitable; cancelling it stops the connecting."""
    def list_tools_async(self) -> Awaitable[list[dict[str, Any]]]:
        """``list_tools`` as an awaitable; cancelling it stops the listing."""
    def tools_async(self) -> Awaitable[list[Tool]]:
        """``tools`` as an awaitable; cancelling it stops the listing."""
    def close_async(self) -> Awaitable[None]:
        """``close`` as an awaitable."""
    @property
    def name(self) -> str:
        """The server's name (from the configuration)."""
    def info(self) -> Optional[dict[str, Any]]:
        """What the server said about itself."""
    def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists, as MCP describes them. Blocks (without the GIL)."""
    def tools(self) -> list[Tool]:
        """The server's tools as ``Tool`` objects. Blocks (without the GIL)."""
    @property
    def tools_changed(self) -> bool:
        """Whether the server announced a change of its tools since they were last listed."""
    def close(self) -> None:
        """Closes the session."""

@final
class _NativeToolCall:
    """Calling an MCP tool from Python: returns the result dict, raises ``McpError``."""

    def __call__(self, **kwargs: Any) -> dict[str, Any]: ...
