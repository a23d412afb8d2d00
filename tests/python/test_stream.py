"""The AI level: stream / complete / acomplete, on the faux provider."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest

import pi_agent
from pi_agent import faux_text, faux_thinking, faux_tool_call

CONTEXT: Dict[str, Any] = {
    "systemPrompt": "You are terse.",
    "messages": [{"role": "user", "content": "Say hello.", "timestamp": 0}],
}
TEXT = "Hello there, this is a reply long enough to arrive in several deltas."


def test_sync_iteration_and_result(faux: pi_agent.FauxProvider) -> None:
    faux.push([faux_thinking("Greeting needed."), faux_text(TEXT)])
    with pi_agent.stream(faux.model, CONTEXT) as events:
        seen = list(events)
        message = events.result_sync()
    kinds = [event["type"] for event in seen]
    assert kinds[0] == "start"
    assert kinds[1:3] == ["thinking_start", "thinking_delta"]
    assert kinds[-2:] == ["text_end", "done"]
    assert "".join(e["delta"] for e in seen if e["type"] == "text_delta") == TEXT
    assert seen[-1]["reason"] == "stop"
    assert seen[-1]["message"] == message
    assert message["content"][1] == {"type": "text", "text": TEXT}
    assert message["content"][0]["thinking"] == "Greeting needed."
    assert message["stopReason"] == "stop"
    assert message["api"] == faux.api and message["model"] == "faux-1"
    assert events.partial == message
    assert list(events) == []  # exhausted


def test_async_iteration_and_aresult(faux: pi_agent.FauxProvider) -> None:
    faux.push([faux_tool_call("lookup", {"query": "pi"}, id="call-9")])

    async def main() -> tuple[List[Dict[str, Any]], Dict[str, Any]]:
        events = pi_agent.stream(faux.model, CONTEXT)
        seen = [event async for event in events]
        return seen, await events.result()

    seen, message = asyncio.run(main())
    start = next(e for e in seen if e["type"] == "toolcall_start")
    assert start == {"type": "toolcall_start", "contentIndex": 0, "id": "call-9", "toolName": "lookup"}
    end = next(e for e in seen if e["type"] == "toolcall_end")
    assert end["toolCall"]["arguments"] == {"query": "pi"}
    assert seen[-1]["type"] == "done" and seen[-1]["reason"] == "toolUse"
    assert message["stopReason"] == "toolUse"


def test_context_manager_aborts_on_early_exit() -> None:
    with pi_agent.FauxProvider(tokens_per_second=40) as slow:
        slow.push("word " * 400)
        with pi_agent.stream(slow.model, CONTEXT) as events:
            for event in events:
                if event["type"] == "text_delta":
                    break
        message = events.result_sync()
        assert message["stopReason"] == "aborted"
        assert message["errorMessage"]
        assert 0 < len(message["content"][0]["text"]) < len("word " * 400)

        slow.push("word " * 400)

        async def main() -> Dict[str, Any]:
            async with pi_agent.stream(slow.model, CONTEXT) as events:
                async for event in events:
                    if event["type"] == "text_delta":
                        break
            return await events.result()

        assert asyncio.run(main())["stopReason"] == "aborted"


def test_abort_from_another_thread() -> None:
    with pi_agent.FauxProvider(tokens_per_second=40) as slow:
        slow.push("word " * 400)
        events = pi_agent.stream(slow.model, CONTEXT)
        timer = threading.Timer(0.1, events.abort)
        timer.start()
        seen = list(events)
        timer.join()
        assert seen[-1]["type"] == "error" and seen[-1]["reason"] == "aborted"
        assert seen[-1]["error"]["stopReason"] == "aborted"


def test_complete_and_acomplete(faux: pi_agent.FauxProvider) -> None:
    faux.set_responses(["sync answer", "async answer"])
    assert pi_agent.complete_sync(faux.model, CONTEXT)["content"][0]["text"] == "sync answer"
    message = asyncio.run(pi_agent.complete(faux.model.to_dict(), CONTEXT, temperature=0.2))
    assert message["content"][0]["text"] == "async answer"


def test_failures_are_messages_not_exceptions(faux: pi_agent.FauxProvider) -> None:
    message = pi_agent.complete_sync(pi_agent.Model("x", api="no-such-api"), CONTEXT)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "No API provider registered for api: no-such-api"

    faux.push({"content": [faux_text("half")], "stopReason": "error", "errorMessage": "scripted"})
    events = list(pi_agent.stream(faux.model, CONTEXT))
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["errorMessage"] == "scripted"

    message = pi_agent.complete_sync(faux.model, CONTEXT)  # nothing scripted any more
    assert message["stopReason"] == "error"
    assert "No more faux responses" in message["errorMessage"]


def test_tools_in_context_may_be_tool_objects(faux: pi_agent.FauxProvider) -> None:
    @pi_agent.tool
    def ping(host: str) -> str:
        """Pings a host."""
        return "pong"

    contexts: List[Dict[str, Any]] = []
    faux.push(lambda context, call, model: contexts.append(context) or "ok")
    pi_agent.complete_sync(faux.model, {**CONTEXT, "tools": [ping]})
    assert contexts[0]["tools"] == [ping.to_dict()]


def test_invalid_context_raises_value_error(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(ValueError, match="invalid context"):
        pi_agent.stream(faux.model, {"messages": [{"role": "robot"}]})
    with pytest.raises(TypeError, match="not JSON serializable"):
        pi_agent.stream(faux.model, {"messages": [object()]})


def test_unknown_options_raise_type_error(faux: pi_agent.FauxProvider) -> None:
    with pytest.raises(TypeError, match="unexpected option `temprature`"):
        pi_agent.stream(faux.model, CONTEXT, temprature=0.1)
    with pytest.raises(TypeError, match="thinking_level"):
        pi_agent.Agent(faux.model, reasoning="high")
    with pytest.raises(ValueError, match="invalid option `reasoning`"):
        pi_agent.stream(faux.model, CONTEXT, reasoning="extreme")


def test_model_catalog() -> None:
    providers = pi_agent.get_providers()
    assert "openai" in providers and providers == sorted(providers)
    model = pi_agent.get_model("openai", "gpt-4o-mini")
    assert model is not None and model.api and model.base_url.startswith("https://")
    assert pi_agent.resolve_model("openai/gpt-4o-mini") == model
    assert pi_agent.get_model("openai", "no-such-model") is None
    assert pi_agent.resolve_model("no-slash") is None
    assert model in pi_agent.get_models("openai")


def test_is_context_overflow() -> None:
    def assistant(**fields: Any) -> Dict[str, Any]:
        message: Dict[str, Any] = {
            "role": "assistant",
            "content": [],
            "api": "openai-completions",
            "provider": "openai",
            "model": "gpt",
            "stopReason": "stop",
            "timestamp": 0,
        }
        message.update(fields)
        return message

    overflow = assistant(stopReason="error", errorMessage="400 prompt is too long: 210000 tokens")
    assert pi_agent.is_context_overflow(overflow)
    assert not pi_agent.is_context_overflow(
        assistant(stopReason="error", errorMessage="429 rate limit: too many tokens per minute")
    )
    usage = {
        "input": 120_000,
        "output": 10,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 120_010,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    silent = assistant(usage=usage)  # accepted, but more input than the window
    assert pi_agent.is_context_overflow(silent, 100_000)
    assert not pi_agent.is_context_overflow(silent)
    assert not pi_agent.is_context_overflow(silent, context_window=200_000)
    with pytest.raises(ValueError, match="invalid assistant message"):
        pi_agent.is_context_overflow({"role": "assistant"})


def test_an_overflowing_run_is_detected(faux: pi_agent.FauxProvider) -> None:
    faux.push({"stopReason": "error", "errorMessage": "maximum context length is 8192 tokens"})
    agent = pi_agent.Agent(faux.model)
    agent.prompt_sync("a very long prompt")
    assert pi_agent.is_context_overflow(agent.messages[-1], agent.model.context_window)
