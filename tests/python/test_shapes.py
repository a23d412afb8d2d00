"""The package's type declarations hold no shapes of their own: every TypedDict of
`pi_agent.types` names exactly the fields of core's serde type (asked from core through the
hidden `_core._shape_fields`), events match what core emits, and `_core.pyi` declares exactly
what the extension has. A field added to (or removed from) core fails here until the
declarations follow."""

from __future__ import annotations

import ast
import pathlib
import re
import typing
from typing import Any, Dict, List, Set, Tuple

import pytest

import pi_agent
from pi_agent import _core, faux_text, faux_thinking, faux_tool_call
from pi_agent import types as t

STUBS = pathlib.Path(pi_agent.__file__).with_name("_core.pyi")

# TypedDict -> (core type, the tag key serde adds outside the struct's fields)
CAMEL_SHAPES: Dict[str, Tuple[str, Set[str]]] = {
    "TextContent": ("TextContent", {"type"}),
    "ThinkingContent": ("ThinkingContent", {"type"}),
    "ImageContent": ("ImageContent", {"type"}),
    "ToolCall": ("ToolCall", {"type"}),
    "UsageCost": ("UsageCost", set()),
    "Usage": ("Usage", set()),
    "UserMessage": ("UserMessage", {"role"}),
    "AssistantMessage": ("AssistantMessage", {"role"}),
    "ToolResultMessage": ("ToolResultMessage", {"role"}),
    "ToolDefinition": ("Tool", set()),
    "ResponseTiming": ("ResponseTiming", set()),
    "ToolTiming": ("ToolTiming", set()),
    "AgentToolResult": ("AgentToolResult", set()),
    "ModelCost": ("ModelCost", set()),
    "ModelDict": ("Model", set()),
    "ThinkingBudgets": ("ThinkingBudgets", set()),
    "GoogleThinking": ("GoogleThinking", set()),
    "AgentSettings": ("AgentSettings", set()),
    "BeforeToolCallContext": ("BeforeToolCallContext", set()),
    "BeforeToolCallResult": ("BeforeToolCallResult", set()),
    "AfterToolCallContext": ("AfterToolCallContext", set()),
    "AfterToolCallResult": ("AfterToolCallResult", set()),
    "ShouldStopAfterTurnContext": ("ShouldStopAfterTurnContext", set()),
    "StepperConfig": ("StepperConfig", set()),
    "RunLimits": ("RunLimits", set()),
    "ToolOutcome": ("ToolOutcome", set()),
    "OAuthAuthInfo": ("OAuthAuthInfo", set()),
    "OAuthPrompt": ("OAuthPrompt", set()),
    "OAuthSelectOption": ("OAuthSelectOption", set()),
    "OAuthSelectPrompt": ("OAuthSelectPrompt", set()),
}

# The keyword options that are code, not JSON.
CODE_OPTIONS = {"on_payload", "on_response", "signal"}


def keys(typed_dict: Any) -> Set[str]:
    return set(typed_dict.__required_keys__) | set(typed_dict.__optional_keys__)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@pytest.mark.parametrize("name", sorted(CAMEL_SHAPES))
def test_typed_dicts_name_exactly_cores_fields(name: str) -> None:
    core, tags = CAMEL_SHAPES[name]
    declared = keys(getattr(t, name)) - tags
    assert declared == set(_core._shape_fields(core)), f"pi_agent.types.{name} vs core's {core}"


def test_stream_options_are_cores_keys_in_snake_case() -> None:
    declared = {camel(key) for key in keys(t.StreamOptions) - CODE_OPTIONS}
    assert declared == set(_core._shape_fields("StreamOptions"))
    with pytest.raises(KeyError):
        _core._shape_fields("NoSuchShape")


def test_every_typed_dict_is_checked() -> None:
    """A new TypedDict must be added to the checks above (or here, with a reason)."""
    checked_elsewhere = {
        "StreamOptions",  # snake_case keywords, above
        "AgentSnapshot",  # against a real snapshot, below
        "Step",  # against real steps, below
        "Context",  # against a real request's context (core reads it by hand), below
        "OAuthCredentialsDict",  # providers add keys; the three of pi's shape are checked below
        "OAuthApiKeyDict",
        "OAuthProviderInfo",
    }
    event_types = {n for n in t.__all__ if n.endswith("Event") and n not in ("AgentEvent", "AssistantMessageEvent")}
    typed_dicts = {n for n in t.__all__ if isinstance(getattr(t, n), type) and issubclass(getattr(t, n), dict)}
    assert typed_dicts - set(CAMEL_SHAPES) - checked_elsewhere - event_types == set()


def tag(event_class: Any) -> str:
    """The `type` literal of an event TypedDict."""
    return typing.get_type_hints(event_class)["type"].__args__[0]


def observed_events(faux: pi_agent.FauxProvider) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Every kind of AI event and agent event, as core emits them."""
    faux.push([faux_thinking("hmm"), faux_text("calling"), faux_tool_call("progress", {})])
    faux.push("done")
    faux.push({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom"})
    faux.push("plain")
    faux.push('{"a": 1}')

    def progress(ctx: pi_agent.ToolContext) -> str:
        ctx.update("half way")
        return "finished"

    agent = pi_agent.Agent(faux.model, tools=[progress])
    agent_events: List[Dict[str, Any]] = []
    agent.subscribe(agent_events.append, partial=True)
    agent.prompt_sync("go")
    ai_events = [e["assistantMessageEvent"] for e in agent_events if e["type"] == "message_update"]
    ai_events += list(pi_agent.stream(faux.model, {"messages": []}))  # error
    ai_events += list(pi_agent.stream(faux.model, {"messages": []}))  # done
    schema = {"schema": {"type": "object"}}  # object_delta
    ai_events += list(pi_agent.stream(faux.model, {"messages": []}, output_schema=schema))
    return ai_events, agent_events


def test_events_match_their_typed_dicts(faux: pi_agent.FauxProvider) -> None:
    ai_events, agent_events = observed_events(faux)
    ai_by_type = {tag(cls): cls for cls in t.AssistantMessageEvent.__args__}
    agent_by_type = {tag(cls): cls for cls in t.AgentEvent.__args__}
    assert set(ai_by_type) == set(t.AssistantMessageEventType.__args__)
    assert set(agent_by_type) == set(t.AgentEventType.__args__)
    for events, by_type in ((ai_events, ai_by_type), (agent_events, agent_by_type)):
        seen = set()
        for event in events:
            cls = by_type[event["type"]]
            seen.add(event["type"])
            assert set(cls.__required_keys__) <= set(event) <= keys(cls), (cls.__name__, sorted(event))
        assert seen == set(by_type), f"not observed: {set(by_type) - seen}"


def test_snapshots_and_steps_match_their_typed_dicts(faux: pi_agent.FauxProvider) -> None:
    faux.push("hi")
    agent = pi_agent.Agent(
        faux.model,
        tool_timeout_ms=5,
        stream_idle_timeout_ms=5,
        output_type={"type": "string"},
        output_retries=0,
    )
    agent.prompt_sync("go")
    snapshot = agent.snapshot()
    assert set(snapshot) == keys(t.AgentSnapshot)
    assert set(snapshot["settings"]) == keys(t.AgentSettings)
    _, step = pi_agent.AgentStepper.start(prompts=[{"role": "user", "content": "x", "timestamp": 0}])
    assert set(step) == keys(t.Step)
    contexts: List[Dict[str, Any]] = []
    faux.push(lambda context, call, model: contexts.append(context) or "ok")
    tool = pi_agent.Tool("noop", "", {"type": "object"}, lambda: "")
    pi_agent.Agent(faux.model, system_prompt="s", tools=[tool]).prompt_sync("go")
    assert set(contexts[0]) == keys(t.Context)
    with pytest.raises(ValueError, match="unknown field `system_prompt`"):
        pi_agent.stream(faux.model, {"messages": [], "system_prompt": "snake case is not pi's"})
    assert {"refresh", "access", "expires"} == keys(t.OAuthCredentialsDict)


def stub_names() -> Set[str]:
    tree = ast.parse(STUBS.read_text())
    names: Set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_stubs_declare_exactly_what_the_extension_has() -> None:
    runtime = {name for name in dir(_core) if not (name.startswith("__") and name.endswith("__"))}
    runtime.add("__version__")
    private = {name for name in stub_names() if name.startswith("_") and name != "__version__"}
    declared = stub_names() - {n for n in private if n not in runtime}  # type aliases of the stubs
    assert runtime - declared == set(), "in the extension, not in _core.pyi"
    assert declared - runtime == set(), "in _core.pyi, not in the extension"
    imported = re.search(r"from \.types import \((.*?)\)", STUBS.read_text(), re.S)
    assert imported is not None
    for name in re.findall(r"\w+", imported.group(1)):
        assert name in t.__all__, f"_core.pyi imports {name}, which pi_agent.types does not have"
