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

from ._core import (
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
    resolve_model,
    stream,
    stream_simple,
    transform_messages,
    validate_tool_arguments,
    validate_tool_call,
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
    from . import oauth
    from ._error_kind import error_kind, is_transient_error
    from ._tools import function_schema, tool

# Imported on first use (PEP 562), so that `import pi_agent` stays fast: `_tools` needs
# inspect, dataclasses and typing; `oauth` and `_error_kind` need typing.
_LAZY = {
    "tool": "._tools",
    "function_schema": "._tools",
    "oauth": ".oauth",
    "error_kind": "._error_kind",
    "is_transient_error": "._error_kind",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_agent' has no attribute {name!r}")
    import importlib

    value = importlib.import_module(module, __name__)
    return value if name == "oauth" else getattr(value, name)

__all__ = [
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
    "PiError",
    "PiTypeError",
    "PiValueError",
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
    "complete_sync",
    "default_convert_to_llm",
    "error_kind",
    "execute_tool_calls_sync",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "find_env_keys",
    "function_schema",
    "get_env_api_key",
    "get_model",
    "get_models",
    "get_providers",
    "get_supported_thinking_levels",
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
    "parse_streaming_json",
    "resolve_model",
    "stream",
    "stream_simple",
    "text_of",
    "tool",
    "transform_messages",
    "validate_tool_arguments",
    "validate_tool_call",
]
