"""pi_agent: one streaming API over LLM providers, and a tool-using agent on top of it.

Python bindings of pi-agent, the Rust port of pi's ``@mariozechner/pi-ai`` and
``@mariozechner/pi-agent-core``. Messages, events and contexts are plain dicts shaped exactly
like pi's JSON (typed in :mod:`pi_agent.types`).

.. code-block:: python

    import pi_agent

    @pi_agent.tool
    def add(a: float, b: float) -> float:
        \"\"\"Adds two numbers.\"\"\"
        return a + b

    model = pi_agent.Model("gpt-4o-mini", provider="openai", base_url="https://api.openai.com/v1")
    agent = pi_agent.Agent(model, system_prompt="Be brief.", tools=[add])
    agent.prompt_sync("What is 2 + 3?")          # or: await agent.prompt(...)
    print(agent.messages[-1]["content"])
"""

import os as _os
import sys as _sys

from ._core import (
    AbortedError,
    Agent,
    AgentBusyError,
    AgentRun,
    AgentRunError,
    AgentStepper,
    AssistantMessageEventStream,
    CannotContinueError,
    FauxProvider,
    Model,
    OAuthError,
    OnPayload,
    OnResponse,
    PiError,
    PiTypeError,
    PiValueError,
    Session,
    SessionError,
    SessionInUseError,
    SessionSubscription,
    Signal,
    Tool,
    ToolContext,
    ToolValidationError,
    Unsubscribe,
    __version__,
    calculate_cost,
    clamp_thinking_level,
    complete,
    complete_simple,
    complete_simple_sync,
    complete_sync,
    default_convert_to_llm,
    execute_tool_calls_sync,
    faux_text,
    faux_thinking,
    faux_tool_call,
    find_env_keys,
    get_env_api_key,
    get_model,
    get_models,
    get_providers,
    get_supported_thinking_levels,
    is_context_overflow,
    models_are_equal,
    parse_streaming_json,
    release_memory,
    resolve_model,
    stream,
    stream_simple,
    transform_messages,
    validate_tool_arguments,
    validate_tool_call,
    ModelError,
    RateLimitError,
    AuthenticationError,
    NotFoundError,
    BadRequestError,
    ServerError,
    NetworkError,
    ModelTimeoutError,
    DecodeError,
    ContextOverflowError,
    RefusalError,
    RunLimitExceeded,
    InvalidOutputError,
    raise_for_error,
)
from ._guards import (
    is_assistant_message,
    is_image_content,
    is_text_content,
    is_text_delta,
    is_thinking_content,
    is_tool_call,
    is_tool_result_message,
    is_user_message,
    text_of,
)

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs ~10 ms at import
if TYPE_CHECKING:
    from typing import Optional

    from opentelemetry.trace import TracerProvider

    from . import oauth, types
    from ._error_kind import error_kind, is_transient_error
    from ._structured import (
        OutputValidationError,
        complete_structured,
        complete_structured_sync,
        output_schema,
    )
    from ._tools import function_schema, tool

# Imported on first use (PEP 562), so that `import pi_agent` stays fast: `_tools` needs
# inspect, dataclasses and typing; `oauth` and `_error_kind` need typing.
_LAZY = {
    "tool": "._tools",
    "function_schema": "._tools",
    "oauth": ".oauth",
    "types": ".types",
    "error_kind": "._error_kind",
    "is_transient_error": "._error_kind",
    "complete_structured": "._structured",
    "complete_structured_sync": "._structured",
    "output_schema": "._structured",
    "OutputValidationError": "._structured",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_agent' has no attribute {name!r}")
    import importlib

    value = importlib.import_module(module, __name__)
    return value if name in ("oauth", "types") else getattr(value, name)


def instrument_opentelemetry(tracer_provider: "Optional[TracerProvider]" = None) -> None:
    """Reports core's spans to OpenTelemetry (needs ``opentelemetry-api`` and ``-sdk``).

    From now on each model request becomes a span ``chat <model>`` (kind CLIENT), each agent
    run ``invoke_agent`` with a ``turn`` child per turn, and each tool call ``execute_tool
    <name>`` under its turn, on the tracer ``pi_agent`` of ``tracer_provider`` (default: the
    global one, ``opentelemetry.trace.get_tracer_provider()``). They carry the GenAI
    semantic-convention attributes (``gen_ai.*``, ``server.address``,
    ``http.response.status_code``), status ERROR with ``error.type`` on failure, and never an
    API key; message content only with ``PI_AGENT_TRACE_CONTENT=1``. A request, agent run
    or ``execute_tool_calls_sync`` started while an OpenTelemetry span is current (``with
    tracer.start_as_current_span(...)``) is a child of that span; otherwise it starts a new
    trace.

    Spans are handed to OpenTelemetry from a daemon thread, shortly after they end; the request
    never waits for it. ``flush_opentelemetry()`` hands over those already finished. Calling
    again switches to another provider. ``PI_AGENT_OTEL=1`` instruments at import with the
    global provider. Raises ``ImportError`` without OpenTelemetry.
    """
    from . import _otel

    _otel.instrument(tracer_provider)


def uninstrument_opentelemetry() -> None:
    """Stops reporting spans (those already open still end in OpenTelemetry)."""
    if "pi_agent._otel" in _sys.modules:
        _sys.modules["pi_agent._otel"].uninstrument()


def flush_opentelemetry() -> None:
    """Hands the spans core has finished so far to OpenTelemetry, on this thread (then
    ``tracer_provider.force_flush()`` exports what the span processors hold)."""
    if "pi_agent._otel" in _sys.modules:
        _sys.modules["pi_agent._otel"].flush()


if _os.environ.get("PI_AGENT_OTEL", "").strip().lower() in ("1", "true", "yes", "on"):
    try:
        instrument_opentelemetry()
    except ImportError:
        import warnings

        warnings.warn(
            "PI_AGENT_OTEL is set but opentelemetry-api/-sdk are not installed", stacklevel=2
        )

__all__ = [
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
    "Agent",
    "AgentBusyError",
    "AgentRun",
    "AgentRunError",
    "AgentStepper",
    "AssistantMessageEventStream",
    "CannotContinueError",
    "FauxProvider",
    "Model",
    "OAuthError",
    "OnPayload",
    "OnResponse",
    "OutputValidationError",
    "PiError",
    "PiTypeError",
    "PiValueError",
    "Session",
    "SessionError",
    "SessionInUseError",
    "SessionSubscription",
    "Signal",
    "Tool",
    "ToolContext",
    "ToolValidationError",
    "Unsubscribe",
    "__version__",
    "calculate_cost",
    "clamp_thinking_level",
    "complete",
    "complete_simple",
    "complete_simple_sync",
    "complete_structured",
    "complete_structured_sync",
    "complete_sync",
    "default_convert_to_llm",
    "error_kind",
    "execute_tool_calls_sync",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "find_env_keys",
    "flush_opentelemetry",
    "function_schema",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "get_supported_thinking_levels",
    "instrument_opentelemetry",
    "is_assistant_message",
    "is_context_overflow",
    "is_transient_error",
    "is_image_content",
    "is_text_content",
    "is_text_delta",
    "is_thinking_content",
    "is_tool_call",
    "is_tool_result_message",
    "is_user_message",
    "models_are_equal",
    "oauth",
    "output_schema",
    "parse_streaming_json",
    "release_memory",
    "resolve_model",
    "stream",
    "stream_simple",
    "text_of",
    "tool",
    "transform_messages",
    "uninstrument_opentelemetry",
    "validate_tool_arguments",
    "validate_tool_call",
]
