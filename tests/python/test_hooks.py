"""Agent hooks as Python functions, sync and async (faux provider; get_api_key on the mock)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict, List

import pytest

import pi_agent
from pi_agent import faux_tool_call

from conftest import MockServer
from test_agent import text_of


def run(agent: pi_agent.Agent, prompt: str, kind: str) -> None:
    """Runs a prompt blocking (`sync` hooks) or awaited (`async` hooks: on the caller's loop)."""
    if kind == "sync":
        agent.prompt_sync(prompt)
    else:
        asyncio.run(agent.prompt(prompt))


def hook(kind: str, body: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`body` as a plain function, or as an `async def` that awaits once first."""
    if kind == "sync":
        return body

    async def async_hook(arg: Any) -> Any:
        await asyncio.sleep(0)
        return body(arg)

    return async_hook


def tool_results(agent: pi_agent.Agent) -> Dict[str, Dict[str, Any]]:
    return {m["toolCallId"]: m for m in agent.messages if m["role"] == "toolResult"}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_before_tool_call_blocks_and_rewrites_arguments(
    faux: pi_agent.FauxProvider, kind: str
) -> None:
    ran: List[Any] = []
    contexts: List[Dict[str, Any]] = []

    def delete(path: str) -> str:
        ran.append(("delete", path))
        return "deleted"

    def double(x: int) -> int:
        ran.append(("double", x))
        return 2 * x

    def before(ctx: Dict[str, Any]) -> Any:
        contexts.append(ctx)
        if ctx["toolCall"]["name"] == "delete":
            return {"block": True, "reason": f"refusing to delete {ctx['args']['path']}"}
        if ctx["toolCall"]["name"] == "double":
            return {"args": {"x": ctx["args"]["x"] + 100}}
        return None

    faux.push(
        [
            faux_tool_call("delete", {"path": "/etc"}, id="d"),
            faux_tool_call("double", {"x": 1}, id="x"),
        ]
    )
    faux.push("ok")
    agent = pi_agent.Agent(faux.model, tools=[delete, double], before_tool_call=hook(kind, before))
    run(agent, "go", kind)

    results = tool_results(agent)
    assert results["d"]["isError"] is True
    assert text_of(results["d"]) == "refusing to delete /etc"
    assert results["x"]["isError"] is False and text_of(results["x"]) == "202"
    assert ran == [("double", 101)]
    assert contexts[0]["toolCall"]["id"] == "d"
    assert contexts[0]["args"] == {"path": "/etc"}
    assert contexts[0]["assistantMessage"]["role"] == "assistant"
    assert len(contexts[0]["assistantMessage"]["content"]) == 2


def test_before_tool_call_block_without_reason_and_failures(faux: pi_agent.FauxProvider) -> None:
    def echo(text: str) -> str:
        return text

    decisions: List[Any] = [
        {"block": True},
        ValueError("hook broke"),
        {"blok": True},
        "not a decision",
    ]

    def before(ctx: Dict[str, Any]) -> Any:
        decision = decisions.pop(0)
        if isinstance(decision, Exception):
            raise decision
        return decision

    faux.push([faux_tool_call("echo", {"text": str(i)}, id=str(i)) for i in range(4)])
    faux.push("ok")
    agent = pi_agent.Agent(faux.model, tools=[echo], before_tool_call=before)
    agent.prompt_sync("go")
    results = tool_results(agent)
    assert all(result["isError"] for result in results.values())
    assert text_of(results["0"]) == "Tool execution was blocked"
    assert text_of(results["1"]) == "hook broke"
    assert "invalid before_tool_call result" in text_of(results["2"])
    assert "unknown field `blok`" in text_of(results["2"])
    assert "invalid before_tool_call result" in text_of(results["3"])
    assert text_of(agent.messages[-1]) == "ok"  # the run went on


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_after_tool_call_replaces_whole_fields(faux: pi_agent.FauxProvider, kind: str) -> None:
    contexts: List[Dict[str, Any]] = []

    def fetch(url: str) -> Dict[str, Any]:
        return {"content": f"secret page at {url}", "details": {"bytes": 10, "cached": False}}

    def fail() -> str:
        raise RuntimeError("fetch failed")

    def after(ctx: Dict[str, Any]) -> Any:
        contexts.append(ctx)
        if ctx["toolCall"]["name"] == "fetch":
            return {"content": "[redacted]", "details": {"bytes": 10}}
        return {"isError": False, "content": [{"type": "text", "text": "recovered"}]}

    faux.push([faux_tool_call("fetch", {"url": "u"}, id="f"), faux_tool_call("fail", id="e")])
    faux.push("ok")
    agent = pi_agent.Agent(faux.model, tools=[fetch, fail], after_tool_call=hook(kind, after))
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    run(agent, "go", kind)

    results = tool_results(agent)
    assert results["f"]["content"] == [{"type": "text", "text": "[redacted]"}]
    assert results["f"]["details"] == {"bytes": 10}  # replaced whole, no merge
    assert results["e"]["isError"] is False and text_of(results["e"]) == "recovered"
    by_call = {c["toolCall"]["id"]: c for c in contexts}
    assert by_call["f"]["result"]["content"] == [{"type": "text", "text": "secret page at u"}]
    assert by_call["f"]["isError"] is False and by_call["f"]["args"] == {"url": "u"}
    assert by_call["e"]["isError"] is True
    ends = {e["toolCallId"]: e for e in events if e["type"] == "tool_execution_end"}
    assert ends["f"]["result"]["content"] == [{"type": "text", "text": "[redacted]"}]


def test_after_tool_call_terminate_and_failure(faux: pi_agent.FauxProvider) -> None:
    def echo(text: str) -> str:
        return text

    faux.push([faux_tool_call("echo", {"text": "a"})])
    faux.push("never used")
    agent = pi_agent.Agent(faux.model, tools=[echo], after_tool_call=lambda ctx: {"terminate": True})
    agent.prompt_sync("go")
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "toolResult"]
    assert faux.pending == 1

    def broken(ctx: Dict[str, Any]) -> None:
        raise KeyError("missing")

    agent.after_tool_call = broken
    faux.set_responses([[faux_tool_call("echo", {"text": "b"})], "done"])
    agent.prompt_sync("again")
    result = [m for m in agent.messages if m["role"] == "toolResult"][-1]
    assert result["isError"] is True and text_of(result) == "'missing'"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_should_stop_after_turn(faux: pi_agent.FauxProvider, kind: str) -> None:
    contexts: List[Dict[str, Any]] = []

    def echo(text: str) -> str:
        return text

    def should_stop(ctx: Dict[str, Any]) -> bool:
        contexts.append(ctx)
        return bool(ctx["toolResults"])

    faux.push([faux_tool_call("echo", {"text": "once"}, id="c")])
    faux.push("never used")
    agent = pi_agent.Agent(faux.model, tools=[echo], should_stop_after_turn=hook(kind, should_stop))
    agent.follow_up("queued follow-up")
    run(agent, "go", kind)

    assert [m["role"] for m in agent.messages] == ["user", "assistant", "toolResult"]
    assert faux.call_count == 1
    assert agent.has_queued_messages  # stopping skips the queues
    (ctx,) = contexts
    assert ctx["message"]["role"] == "assistant" and ctx["message"]["stopReason"] == "toolUse"
    assert [r["toolCallId"] for r in ctx["toolResults"]] == ["c"]
    assert [m["role"] for m in ctx["newMessages"]] == ["user", "assistant", "toolResult"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_transform_context_changes_what_is_sent_not_the_transcript(
    faux: pi_agent.FauxProvider, kind: str
) -> None:
    sent: List[List[Dict[str, Any]]] = []

    def keep_last(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        return [{"role": "user", "content": "summary of earlier turns", "timestamp": 0}] + messages[-1:]

    faux.set_responses(
        [
            lambda context, call, model: sent.append(context["messages"]) or "first",
            lambda context, call, model: sent.append(context["messages"]) or "second",
        ]
    )
    agent = pi_agent.Agent(faux.model, transform_context=hook(kind, keep_last))
    run(agent, "one", kind)
    run(agent, "two", kind)

    assert [text_of(m) for m in sent[1]] == ["summary of earlier turns", "two"]
    assert [text_of(m) for m in agent.messages] == ["one", "first", "two", "second"]


@pytest.mark.parametrize("hook_name", ["transform_context", "should_stop_after_turn", "get_api_key"])
def test_a_raising_run_hook_fails_the_run_not_the_caller(
    faux: pi_agent.FauxProvider, hook_name: str
) -> None:
    def broken(arg: Any) -> Any:
        raise ValueError(f"{hook_name} is broken")

    faux.push("never used" if hook_name != "should_stop_after_turn" else "answered")
    agent = pi_agent.Agent(faux.model, **{hook_name: broken})
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    agent.prompt_sync("go")  # does not raise

    expected = f"{hook_name} raised ValueError: {hook_name} is broken"
    last = agent.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert last["errorMessage"] == expected
    assert agent.error_message == expected
    assert events[-1]["type"] == "agent_end"
    assert not agent.is_streaming
    # The hook's return value is checked the same way.
    setattr(agent, hook_name, lambda arg: 42 if hook_name != "should_stop_after_turn" else None)
    if hook_name == "should_stop_after_turn":
        return  # any value is a truth value
    faux.push("never used either")
    agent.prompt_sync("again")
    assert agent.messages[-1]["errorMessage"].startswith(f"{hook_name} raised")


def test_hook_properties(faux: pi_agent.FauxProvider) -> None:
    def before(ctx: Dict[str, Any]) -> None:
        return None

    agent = pi_agent.Agent(faux.model, before_tool_call=before)
    assert agent.before_tool_call is before
    assert agent.after_tool_call is None and agent.get_api_key is None
    agent.before_tool_call = None
    assert agent.before_tool_call is None
    agent.transform_context = list
    assert agent.transform_context is list
    with pytest.raises(TypeError, match="should_stop_after_turn must be callable or None, not int"):
        agent.should_stop_after_turn = 3  # type: ignore[assignment]
    with pytest.raises(TypeError, match="get_api_key must be callable"):
        pi_agent.Agent(faux.model, get_api_key="sk-123")  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_get_api_key_is_asked_before_every_call(mock_server: MockServer, kind: str) -> None:
    asked: List[str] = []

    def get_api_key(provider: str) -> Any:
        asked.append(provider)
        return f"key-{len(asked)}" if len(asked) == 1 else None

    mock_server.push({"text": "one"}, {"text": "two"})
    agent = pi_agent.Agent(
        mock_server.model(), api_key="sk-fallback", get_api_key=hook(kind, get_api_key)
    )
    run(agent, "first", kind)
    run(agent, "second", kind)
    assert asked == ["openai", "openai"]
    keys = [dict(request["headers"])["authorization"] for request in mock_server.requests()]
    assert keys == ["Bearer key-1", "Bearer sk-fallback"]
