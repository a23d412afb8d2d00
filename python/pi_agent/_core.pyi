"""Stubs of the compiled module ``pi_agent._core`` (hand-written; keep in sync with python/src)."""

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Iterator
from types import TracebackType
from typing import Any, Literal, Mapping, Optional, Sequence, Union, final

from typing_extensions import Unpack

from .types import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
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
    StreamOptions,
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
    "Tool",
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
    ) -> bool: ...
    def __aenter__(self) -> Awaitable[AssistantMessageEventStream]: ...
    def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> Awaitable[bool]: ...

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
    ) -> bool: ...

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
        **options: Unpack[StreamOptions],
    ) -> Agent:
        """Plain functions in ``tools`` are wrapped with ``Tool.from_function``. Without a
        model, the first prompt fails (pi's placeholder model ``unknown``). ``options`` are
        the request options of every model call (``api_key``, ``temperature``, ``headers``,
        ... as for ``pi_agent.stream``; the reasoning level is ``thinking_level``)."""
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
    @property
    def has_queued_messages(self) -> bool: ...
    def subscribe(self, callback: Callable[[AgentEvent], Any]) -> Unsubscribe:
        """Calls ``callback(event)`` for every event of every later run, synchronously and in
        order, on a runtime thread with the GIL held (keep it quick: the run waits for it).
        An exception in the callback is reported through ``sys.unraisablehook`` and does not
        affect the run. Returns a function that unsubscribes."""
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
