"""Types of the dicts that cross the boundary: messages, content blocks, usage, contexts and
events, shaped exactly like pi's JSON (camelCase keys, ``role`` and ``type`` tags).

These are ``TypedDict``s for type checkers only: at run time every message and event is a
plain ``dict`` (so ``json.dumps`` works on them and on whole transcripts). Narrow a union on
its tag::

    def on_event(event: AgentEvent) -> None:
        if event["type"] == "message_update":
            update = event["assistantMessageEvent"]
            if update["type"] == "text_delta":
                print(update["delta"], end="")
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    Iterable,
    AsyncIterable,
    Literal,
    Mapping,
    Optional,
    Union,
)

import sys

# pydantic validates TypedDicts only from typing_extensions before Python 3.12 (a declared
# dependency there); plain typing's is fine for type checkers.
if sys.version_info >= (3, 12):
    from typing import TypedDict
else:
    try:
        from typing_extensions import TypedDict
    except ImportError:  # pragma: no cover - installed without its dependencies
        from typing import TypedDict

if TYPE_CHECKING:
    from ._core import AssistantMessageEventStream, Model, OnPayload, OnResponse, Signal

__all__ = [
    "StopReason",
    "ErrorKind",
    "RunLimit",
    "RunLimits",
    "TextContent",
    "ThinkingContent",
    "ImageContent",
    "ToolCall",
    "UserContent",
    "AssistantContent",
    "UsageCost",
    "Usage",
    "ResponseTiming",
    "ToolTiming",
    "UserMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "Message",
    "CustomMessage",
    "AgentMessage",
    "AgentMessageInput",
    "ToolDefinition",
    "Context",
    "AgentToolResult",
    "ModelCost",
    "ModelDict",
    "StartEvent",
    "TextStartEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "ThinkingStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ToolCallStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ObjectDeltaEvent",
    "ToolChoice",
    "DoneEvent",
    "ErrorEvent",
    "AssistantMessageEvent",
    "AssistantMessageEventType",
    "AgentStartEvent",
    "AgentEndEvent",
    "TurnStartEvent",
    "TurnEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "MessageEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolExecutionEndEvent",
    "AgentEvent",
    "AgentEventType",
    "ThinkingLevel",
    "ToolExecutionMode",
    "QueueMode",
    "CacheRetention",
    "ThinkingBudgets",
    "GoogleThinking",
    "Transport",
    "StreamOptions",
    "AgentSettings",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "BeforeToolCallHook",
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AfterToolCallHook",
    "ShouldStopAfterTurnContext",
    "ShouldStopAfterTurnHook",
    "TransformContextHook",
    "ConvertToLlmHook",
    "GetApiKeyHook",
    "StreamFn",
    "Subscriber",
    "AgentSnapshot",
    "StepperConfig",
    "ToolOutcome",
    "StepInput",
    "StepAction",
    "Step",
    "OAuthAuthInfo",
    "OAuthPrompt",
    "OAuthSelectOption",
    "OAuthSelectPrompt",
    "OAuthCredentialsDict",
    "OAuthApiKeyDict",
    "OAuthProviderInfo",
]

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
"""Why the model stopped. ``error`` and ``aborted`` come with ``errorMessage``."""

ErrorKind = Literal[
    "rate_limit",
    "auth",
    "not_found",
    "bad_request",
    "server",
    "network",
    "timeout",
    "decode",
    "aborted",
    "context_overflow",
    "refusal",
    "invalid_output",
    "run_limit",
]
"""What kind of failure ended a model call (a failed message's ``errorKind``, ours; pi has
none): ``rate_limit`` (HTTP 429; see ``retryAfterMs``), ``auth`` (401/403, no key),
``not_found`` (404), ``bad_request`` (other 4xx), ``server`` (5xx, overloaded), ``network``
(connection failed or cut), ``timeout``, ``decode`` (unreadable response), ``aborted``,
``context_overflow`` (compact and retry), ``refusal`` (the model or a filter declined), ``invalid_output`` (the answer does not
match the requested output schema; ``errorMessage`` is the validation report). New
kinds may be added: read it with :func:`pi_agent.error_kind`, which maps unknown ones to
``None``.
``run_limit``: not a model failure, the agent ended the run at one of its run limits
(``runLimit`` says which)."""

RunLimit = Literal[
    "maxTurns",
    "maxToolCalls",
    "maxInputTokens",
    "maxOutputTokens",
    "maxTotalTokens",
    "maxCostUsd",
]
"""Which run limit ended a run (``runLimit`` on its last message; the names of
:class:`RunLimits`' keys)."""


class RunLimits(TypedDict, total=False):
    """How far one agent run may go (``Agent(limits=...)``, ``agent.limits``); a key left out
    keeps its default, ``None`` is no limit. Counts and budgets are checked before each model
    call (the call that crosses a budget completes), the tool-call limit before each batch
    (calls beyond it do not run and get an error result)."""

    maxTurns: Optional[int]
    """Model calls per run (default 100; ``None`` for no limit)."""
    maxToolCalls: Optional[int]
    maxInputTokens: Optional[int]
    """Input tokens per run, cache reads and writes included."""
    maxOutputTokens: Optional[int]
    maxTotalTokens: Optional[int]
    maxCostUsd: Optional[float]
    """Cost per run in USD (``usage.cost.total`` summed)."""

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
"""pi's levels; ``"off"`` (the default) sends no reasoning."""
ToolExecutionMode = Literal["parallel", "sequential"]
QueueMode = Literal["all", "one-at-a-time"]
CacheRetention = Literal["none", "short", "long"]
Transport = Literal["sse", "websocket", "websocket-cached", "auto"]


# ---------------------------------------------------------------------------------------------
# Content blocks


class _TextContentOptional(TypedDict, total=False):
    textSignature: str


class TextContent(_TextContentOptional):
    """``{"type": "text", "text": ...}``."""

    type: Literal["text"]
    text: str


class _ThinkingContentOptional(TypedDict, total=False):
    thinkingSignature: str
    redacted: bool


class ThinkingContent(_ThinkingContentOptional):
    """A reasoning block."""

    type: Literal["thinking"]
    thinking: str


class ImageContent(TypedDict):
    """A base64 image (no ``data:`` prefix)."""

    type: Literal["image"]
    data: str
    mimeType: str


class _ToolCallOptional(TypedDict, total=False):
    thoughtSignature: str


class ToolCall(_ToolCallOptional):
    """A tool call requested by the model."""

    type: Literal["toolCall"]
    id: str
    name: str
    arguments: Dict[str, Any]


UserContent = Union[TextContent, ImageContent]
AssistantContent = Union[TextContent, ThinkingContent, ToolCall]


# ---------------------------------------------------------------------------------------------
# Usage


class UsageCost(TypedDict):
    """Cost in USD."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float
    total: float


class Usage(TypedDict):
    """Token counts of one response."""

    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    totalTokens: int
    cost: UsageCost


# ---------------------------------------------------------------------------------------------
# Messages


class _UserMessageOptional(TypedDict, total=False):
    timestamp: int
    """Unix milliseconds; always present in what the library returns, optional in what it takes
    (0 when left out)."""


class UserMessage(_UserMessageOptional):
    """A message from the user; ``content`` is a str or a list of text/image blocks."""

    role: Literal["user"]
    content: Union[str, List[UserContent]]


class _ResponseTimingOptional(TypedDict, total=False):
    ttftMs: int
    """Time to the first streamed content."""
    outputTokensPerSecond: float
    retryWaitMs: int
    """Time spent waiting between retries (left out when none)."""


class ResponseTiming(_ResponseTimingOptional):
    """How long a model response took, measured on every streamed response (ours; pi ignores
    the field)."""

    durationMs: int


class ToolTiming(TypedDict):
    """How long a tool call took, from the start of its execution to its result."""

    durationMs: int


class _AssistantMessageOptional(TypedDict, total=False):
    responseModel: str
    responseId: str
    diagnostics: List[Any]
    errorMessage: str
    errorKind: ErrorKind
    """What kind of failure it was, when one fits (ours)."""
    httpStatus: int
    """The HTTP status of the failed response (ours)."""
    retryAfterMs: int
    """The delay the server asked for before a retry, in milliseconds (ours)."""
    runLimit: RunLimit
    """Which run limit ended the run, when ``errorKind`` is ``"run_limit"`` (ours)."""
    timing: ResponseTiming
    timestamp: int
    """Unix milliseconds; always present in what the library returns, optional in what it
    takes."""


class AssistantMessage(_AssistantMessageOptional):
    """A message produced by a model."""

    role: Literal["assistant"]
    content: List[AssistantContent]
    api: str
    provider: str
    model: str
    usage: Usage
    stopReason: StopReason


class _ToolResultMessageOptional(TypedDict, total=False):
    details: Any
    timing: ToolTiming
    timestamp: int
    """Unix milliseconds; always present in what the library returns, optional in what it
    takes."""


class ToolResultMessage(_ToolResultMessageOptional):
    """The result of a tool call, sent back to the model."""

    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: List[UserContent]
    isError: bool


Message = Union[UserMessage, AssistantMessage, ToolResultMessage]
"""A message an LLM understands."""

CustomMessage = Dict[str, Any]
"""An application-defined transcript entry: any dict whose ``role`` is not an LLM role.
Accepted wherever the agent takes messages (``AgentMessageInput``); kept out of
``AgentMessage`` so that the union narrows on ``role``."""

AgentMessage = Union[UserMessage, AssistantMessage, ToolResultMessage]
"""One transcript entry of an agent; ``message["role"] == "toolResult"`` narrows it. A
transcript may also hold custom messages (any other ``role``) at run time: test ``role``
before reading other keys."""

AgentMessageInput = Union[UserMessage, AssistantMessage, ToolResultMessage, CustomMessage]
"""What the agent accepts as a message: an ``AgentMessage`` or a custom message."""


class ToolDefinition(TypedDict):
    """A tool as the LLM sees it."""

    name: str
    description: str
    parameters: Dict[str, Any]


class _ContextOptional(TypedDict, total=False):
    systemPrompt: str
    tools: List[ToolDefinition]


class Context(_ContextOptional):
    """What one request sends (``pi_agent.stream``/``complete``)."""

    messages: List[Message]


class _AgentToolResultOptional(TypedDict, total=False):
    details: Any
    terminate: bool


class AgentToolResult(_AgentToolResultOptional):
    """What a tool returns in full form (a tool may also return a str or any JSON value)."""

    content: List[UserContent]


class ModelCost(TypedDict):
    """Prices in USD per million tokens."""

    input: float
    output: float
    cacheRead: float
    cacheWrite: float


class _ModelDictOptional(TypedDict, total=False):
    name: str
    baseUrl: str
    reasoning: bool
    thinkingLevelMap: Dict[str, Union[str, None]]
    input: List[Literal["text", "image"]]
    cost: ModelCost
    contextWindow: int
    maxTokens: int
    headers: Dict[str, str]
    compat: Dict[str, Any]


class ModelDict(_ModelDictOptional):
    """A model in pi's JSON shape (``Model.to_dict()`` / ``Model.from_dict()``)."""

    id: str
    api: str
    provider: str


# ---------------------------------------------------------------------------------------------
# AssistantMessageEvent: one step of a streamed response (no ``partial`` copies, unlike pi;
# ``toolcall_start`` carries ``id`` and ``toolName``)


class StartEvent(TypedDict):
    type: Literal["start"]
    partial: AssistantMessage


class TextStartEvent(TypedDict):
    type: Literal["text_start"]
    contentIndex: int


class TextDeltaEvent(TypedDict):
    type: Literal["text_delta"]
    contentIndex: int
    delta: str


class _TextEndEventOptional(TypedDict, total=False):
    contentSignature: str


class TextEndEvent(_TextEndEventOptional):
    type: Literal["text_end"]
    contentIndex: int
    content: str


class ThinkingStartEvent(TypedDict):
    type: Literal["thinking_start"]
    contentIndex: int


class ThinkingDeltaEvent(TypedDict):
    type: Literal["thinking_delta"]
    contentIndex: int
    delta: str


class _ThinkingEndEventOptional(TypedDict, total=False):
    contentSignature: str


class ThinkingEndEvent(_ThinkingEndEventOptional):
    type: Literal["thinking_end"]
    contentIndex: int
    content: str


class ToolCallStartEvent(TypedDict):
    type: Literal["toolcall_start"]
    contentIndex: int
    id: str
    toolName: str


class ToolCallDeltaEvent(TypedDict):
    type: Literal["toolcall_delta"]
    contentIndex: int
    delta: str


class ToolCallEndEvent(TypedDict):
    type: Literal["toolcall_end"]
    contentIndex: int
    toolCall: ToolCall


class ObjectDeltaEvent(TypedDict):
    """The answer's JSON as parsed so far (only with ``output_schema``), after each of its text
    deltas; nothing is validated until the end."""

    type: Literal["object_delta"]
    contentIndex: int
    object: Any


class DoneEvent(TypedDict):
    """Terminal: the response is complete."""

    type: Literal["done"]
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(TypedDict):
    """Terminal: the request failed or was aborted; ``error`` is the partial message."""

    type: Literal["error"]
    reason: Literal["error", "aborted"]
    error: AssistantMessage


AssistantMessageEvent = Union[
    StartEvent,
    TextStartEvent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ToolCallStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ObjectDeltaEvent,
    DoneEvent,
    ErrorEvent,
]

AssistantMessageEventType = Literal[
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "object_delta",
    "done",
    "error",
]


# ---------------------------------------------------------------------------------------------
# AgentEvent: one step of an agent run, in pi's order


class AgentStartEvent(TypedDict):
    type: Literal["agent_start"]


class AgentEndEvent(TypedDict):
    """The run ended; ``messages`` are the messages this run added."""

    type: Literal["agent_end"]
    messages: List[AgentMessage]


class TurnStartEvent(TypedDict):
    type: Literal["turn_start"]


class TurnEndEvent(TypedDict):
    type: Literal["turn_end"]
    message: AgentMessage
    toolResults: List[ToolResultMessage]


class MessageStartEvent(TypedDict):
    type: Literal["message_start"]
    message: AgentMessage


class _MessageUpdateEventOptional(TypedDict, total=False):
    message: AssistantMessage
    """The message so far (pi's field), for subscribers and runs with ``partial=True``."""


class MessageUpdateEvent(_MessageUpdateEventOptional):
    """The assistant message grew by ``assistantMessageEvent`` (a delta; see
    ``Agent.streaming_message`` for the whole message so far)."""

    type: Literal["message_update"]
    assistantMessageEvent: AssistantMessageEvent


class MessageEndEvent(TypedDict):
    type: Literal["message_end"]
    message: AgentMessage


class ToolExecutionStartEvent(TypedDict):
    type: Literal["tool_execution_start"]
    toolCallId: str
    toolName: str
    args: Any


class ToolExecutionUpdateEvent(TypedDict):
    type: Literal["tool_execution_update"]
    toolCallId: str
    toolName: str
    args: Any
    partialResult: AgentToolResult


class ToolExecutionEndEvent(TypedDict):
    type: Literal["tool_execution_end"]
    toolCallId: str
    toolName: str
    result: AgentToolResult
    isError: bool


AgentEvent = Union[
    AgentStartEvent,
    AgentEndEvent,
    TurnStartEvent,
    TurnEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    MessageEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolExecutionEndEvent,
]

AgentEventType = Literal[
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
]


# ---------------------------------------------------------------------------------------------
# Request options (core's StreamOptions; keyword names are its JSON names in snake_case)


class ThinkingBudgets(TypedDict, total=False):
    """Thinking-token budgets per level for budget-based models (Anthropic's non-adaptive
    models, Gemini 2.x); a level left out keeps the provider's default. ``high`` also serves
    ``xhigh``."""

    minimal: int
    low: int
    medium: int
    high: int


class GoogleThinking(TypedDict, total=False):
    """Gemini's thinking configuration (pi's JSON names)."""

    enabled: bool
    budgetTokens: int
    """Token budget (``-1`` = dynamic) for models that take budgets."""
    level: Literal["MINIMAL", "LOW", "MEDIUM", "HIGH"]
    """For Gemini 3 and Gemma 4."""


ToolChoice = Union[Literal["auto", "none", "required", "any"], Mapping[str, Any]]
"""``"auto"``, ``"none"``, ``"required"`` (alias ``"any"``), or a tool by name:
``{"type": "tool", "name": "calc"}`` (each provider's own object spelling is read too)."""


class StreamOptions(TypedDict, total=False):
    """Keyword options of ``stream``/``complete`` and ``Agent`` (all optional; ``None`` means
    unset): core's ``StreamOptions``, every provider's keys included, each named by its pi
    JSON name in snake_case. A provider reads the keys of its api and ignores the others.
    Nested values (``thinking``, ``thinking_budgets``, ``metadata``) are pi's JSON as is."""

    # pi's StreamOptions
    temperature: float
    max_tokens: int
    api_key: str
    """Overrides the provider's key from the environment (``OPENAI_API_KEY``, ...)."""
    transport: Transport
    """For apis with several transports (openai-codex-responses); default ``auto``."""
    cache_retention: CacheRetention
    session_id: str
    """Used for prompt-cache keys and session-affinity headers."""
    headers: Dict[str, str]
    """Extra HTTP headers, applied last."""
    request_timeout_ms: int
    """Timeout until the response headers arrive, per attempt (default 60 s; ``0``: none). The
    body is bounded by ``idle_timeout_ms`` only, so long generations go on."""
    timeout_ms: int
    """pi's name for ``request_timeout_ms``."""
    max_retries: int
    """Retries of a request that failed before its answer began (408, 409, 429, 5xx,
    connection errors); ``0`` disables them."""
    max_retry_delay_ms: int
    metadata: Dict[str, Any]
    """anthropic-messages sends ``metadata.user_id`` when it is a string."""
    idle_timeout_ms: int
    """Timeout between two chunks of a streamed body (``0``: none)."""
    max_event_bytes: int
    """Cap on one SSE line or event (default 16 MiB)."""
    max_error_body_bytes: int
    """Cap on the part of an error body that is read (default 256 KiB)."""
    # pi's SimpleStreamOptions (``stream_simple``/``complete_simple`` only)
    reasoning: ThinkingLevel
    """Reasoning level, mapped onto the provider's keys by ``stream_simple`` (an agent uses
    ``thinking_level``)."""
    thinking_budgets: ThinkingBudgets
    # keys several providers read
    tool_choice: ToolChoice
    """Whether and which tool the model must call, mapped onto each api's own form."""
    output_schema: Mapping[str, Any]
    """The JSON Schema the answer must follow: ``{"name": ..., "schema": {...}, "strict":
    bool}`` (see ``pi_agent.output_schema``). The stream then carries ``object_delta`` events;
    an answer that does not validate ends with ``errorKind`` ``"invalid_output"``."""
    reasoning_effort: str
    """openai-completions, openai-responses, azure-openai-responses, mistral-conversations."""
    reasoning_summary: str
    """``auto``, ``concise``, ``detailed`` (Responses apis)."""
    service_tier: str
    """``auto``, ``default``, ``flex``, ``priority`` (openai-responses)."""
    interleaved_thinking: bool
    thinking_display: str
    """``summarized`` (default) or ``omitted`` (anthropic-messages, Bedrock Claude)."""
    # anthropic-messages
    thinking_enabled: bool
    thinking_budget_tokens: int
    effort: str
    """Effort of adaptive-thinking models (``low`` ... ``max``)."""
    # google-generative-ai, google-vertex
    thinking: GoogleThinking
    project: str
    location: str
    # mistral-conversations
    prompt_mode: str
    """``"reasoning"`` for Magistral-style reasoning models."""
    # azure-openai-responses
    azure_api_version: str
    azure_resource_name: str
    azure_base_url: str
    azure_deployment_name: str
    # bedrock-converse-stream
    region: str
    profile: str
    bearer_token: str
    request_metadata: Dict[str, Any]
    # openai-codex-responses
    text_verbosity: str
    # code, not JSON
    on_payload: Union[Callable[[Dict[str, Any], "Model"], Any], "OnPayload"]
    """Sees the request body before it is sent; return a dict to send instead (may be
    ``async def``)."""
    on_response: Union[Callable[[int, Dict[str, str], "Model"], Any], "OnResponse"]
    """Sees the HTTP status and (lowercase) headers once a response arrives."""
    signal: "Signal"
    """Aborts the request when aborted."""


class _AgentSettingsOptional(TypedDict, total=False):
    streamIdleTimeoutMs: int
    toolTimeoutMs: int
    outputSchema: Dict[str, Any]
    """The shape every run ends in (core's ``OutputSchema``: ``name``, ``schema``, ``strict``)."""
    outputRetries: int
    """Re-asks of an answer that does not match ``outputSchema`` (default 1)."""
    limits: RunLimits


class AgentSettings(_AgentSettingsOptional):
    """An agent's settings as a snapshot stores them (core's ``AgentSettings``)."""

    thinkingLevel: ThinkingLevel
    toolExecution: ToolExecutionMode
    steeringMode: QueueMode
    followUpMode: QueueMode
    streamOptions: Dict[str, Any]
    """The request options in pi's JSON names (no secrets)."""


# ---------------------------------------------------------------------------------------------
# Agent hooks (each may also be an ``async def``, and may take the run's ``Signal`` as a
# second argument)


class BeforeToolCallContext(TypedDict):
    """What ``before_tool_call`` sees: the call as the model made it and its validated
    arguments."""

    assistantMessage: AssistantMessage
    toolCall: ToolCall
    args: Dict[str, Any]


class BeforeToolCallResult(TypedDict, total=False):
    """``block`` the call (the model gets an error result with ``reason``, default "Tool
    execution was blocked"), or run it with ``args`` instead (not revalidated)."""

    block: bool
    reason: str
    args: Dict[str, Any]


class AfterToolCallContext(TypedDict):
    """What ``after_tool_call`` sees: the call and the result of running it."""

    assistantMessage: AssistantMessage
    toolCall: ToolCall
    args: Dict[str, Any]
    result: AgentToolResult
    isError: bool


class AfterToolCallResult(TypedDict, total=False):
    """Replacements for parts of the result; each field present replaces the original whole
    (``content`` may be a str; ``details: None`` clears the details)."""

    content: Union[str, List[UserContent]]
    details: Any
    isError: bool
    terminate: bool


class ShouldStopAfterTurnContext(TypedDict):
    """What ``should_stop_after_turn`` sees after each turn."""

    message: AssistantMessage
    toolResults: List[ToolResultMessage]
    newMessages: List[AgentMessage]
    """Every message this run added so far."""


BeforeToolCallHook = Callable[
    ..., Union[Optional[BeforeToolCallResult], Awaitable[Optional[BeforeToolCallResult]]]
]
"""``(context[, signal]) -> result``."""
AfterToolCallHook = Callable[
    ..., Union[Optional[AfterToolCallResult], Awaitable[Optional[AfterToolCallResult]]]
]
ShouldStopAfterTurnHook = Callable[..., Union[bool, Awaitable[bool]]]
TransformContextHook = Callable[..., Union[List[AgentMessage], Awaitable[List[AgentMessage]]]]
"""``(messages[, signal]) -> messages``: what to send instead (the transcript is unchanged)."""
ConvertToLlmHook = Callable[..., Union[List[Message], Awaitable[List[Message]]]]
"""``(messages[, signal]) -> LLM messages``: turns custom messages into ones the model reads."""
GetApiKeyHook = Callable[[str], Union[Optional[str], Awaitable[Optional[str]]]]
StreamFn = Callable[
    ["Model", Context, Dict[str, Any]],
    Union[
        "AssistantMessageEventStream",
        AssistantMessage,
        Iterable[Dict[str, Any]],
        AsyncIterable[Dict[str, Any]],
        Awaitable[Union["AssistantMessageEventStream", AssistantMessage]],
    ],
]
"""``stream_fn(model, context, options)``: how an agent calls its model. ``options`` are the
keywords ``pi_agent.stream`` takes (secrets and signal included); return a stream, a whole
assistant message, or an (async) iterable of pi-shaped events."""
Subscriber = Callable[..., Union[None, Awaitable[None]]]
"""``(event[, signal])``; may be ``async def`` (awaited in order)."""


# ---------------------------------------------------------------------------------------------
# Save and restore


class AgentSnapshot(TypedDict):
    """An agent's data (``Agent.snapshot()``), in the JSON that every binding reads and writes."""

    version: int
    systemPrompt: str
    model: ModelDict
    messages: List[AgentMessage]
    settings: AgentSettings
    steeringQueue: List[AgentMessage]
    followUpQueue: List[AgentMessage]
    toolNames: List[str]
    """Informational: the tools are code, given again to ``Agent.restore``."""


# ---------------------------------------------------------------------------------------------
# The sans-IO stepper (``pi_agent.AgentStepper``)


class StepperConfig(TypedDict, total=False):
    """Static facts the stepper decides with."""

    toolExecution: ToolExecutionMode
    toolModes: Dict[str, ToolExecutionMode]
    """Tools that force a mode on the batch they are called in."""
    shouldStopAfterTurn: bool
    """Whether to ask (action ``should_stop_after_turn``) after every turn."""
    skipInitialSteeringPoll: bool
    outputRetries: int
    """Re-asks of an ``invalid_output`` answer (0 without an output schema)."""
    limits: RunLimits
    """How far the run may go (default: 100 model calls)."""


class _ToolOutcomeOptional(TypedDict, total=False):
    terminate: bool


class ToolOutcome(_ToolOutcomeOptional):
    """One tool call's outcome, as the driver reports it."""

    message: ToolResultMessage


StepInput = Dict[str, Any]
"""The driver's answer: ``{"type": "steering" | "follow_up", "messages"}``, ``{"type":
"model_result", "message", "startEmitted"}``, ``{"type": "tool_results", "outcomes"}``,
``{"type": "should_stop", "stop"}``, ``{"type": "failed", "message"}``."""

StepAction = Dict[str, Any]
"""What to do next: ``{"type": "poll_steering"}``, ``{"type": "poll_follow_up"}``, ``{"type":
"call_model"}``, ``{"type": "execute_tools", "assistantMessage", "toolCalls", "mode"}``,
``{"type": "should_stop_after_turn", "message", "toolResults", "newMessages"}``, ``{"type":
"finished", "newMessages"}``."""


class Step(TypedDict):
    """What ``AgentStepper.start`` / ``resume`` return."""

    events: List[AgentEvent]
    action: StepAction


# ---------------------------------------------------------------------------------------------
# OAuth (``pi_agent.oauth``)


class _OAuthAuthInfoOptional(TypedDict, total=False):
    instructions: str


class OAuthAuthInfo(_OAuthAuthInfoOptional):
    """What ``on_auth`` gets: the URL to open."""

    url: str


class _OAuthPromptOptional(TypedDict, total=False):
    placeholder: str
    allowEmpty: bool


class OAuthPrompt(_OAuthPromptOptional):
    """What ``on_prompt`` gets."""

    message: str


class OAuthSelectOption(TypedDict):
    id: str
    label: str


class OAuthSelectPrompt(TypedDict):
    """What ``on_select`` gets; it returns an option's ``id`` or ``None``."""

    message: str
    options: List[OAuthSelectOption]


class OAuthCredentialsDict(TypedDict):
    """Credentials from a login (pi's shape; providers add keys such as ``enterpriseUrl`` or
    ``accountId``)."""

    refresh: str
    access: str
    expires: int
    """Unix milliseconds."""


class OAuthApiKeyDict(TypedDict):
    apiKey: str
    newCredentials: OAuthCredentialsDict
    refreshed: bool


class OAuthProviderInfo(TypedDict):
    id: str
    name: str
    usesCallbackServer: bool
