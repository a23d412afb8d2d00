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
    AssistantMessageEventStream,
    CannotContinueError,
    FauxProvider,
    Model,
    PiError,
    Tool,
    ToolContext,
    Unsubscribe,
    __version__,
    acomplete,
    acomplete_simple,
    complete,
    complete_simple,
    faux_text,
    faux_thinking,
    faux_tool_call,
    get_model,
    get_models,
    get_providers,
    is_context_overflow,
    resolve_model,
    stream,
    stream_simple,
)
from ._tools import function_schema, tool

__all__ = [
    "Agent",
    "AgentBusyError",
    "AgentRun",
    "AgentRunError",
    "AssistantMessageEventStream",
    "CannotContinueError",
    "FauxProvider",
    "Model",
    "PiError",
    "Tool",
    "ToolContext",
    "Unsubscribe",
    "__version__",
    "acomplete",
    "acomplete_simple",
    "complete",
    "complete_simple",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "function_schema",
    "get_model",
    "get_models",
    "get_providers",
    "is_context_overflow",
    "resolve_model",
    "stream",
    "stream_simple",
    "tool",
]
