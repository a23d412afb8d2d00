"""Everything core can do, through the public Python API: pi-ai's helpers, custom stream
functions, convert_to_llm, tool label / execution mode / prepare_arguments, the run's signal,
async subscribers, partial messages, faux async factories and prompt-cache simulation."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, AsyncIterator, Dict, Iterator, List

import pytest

import pi_agent
from pi_agent import faux_text, faux_tool_call

CONTEXT = {"messages": [{"role": "user", "content": "Hi", "timestamp": 0}]}


def text_of(message: Dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in message["content"] if block["type"] == "text")


# ---------------------------------------------------------------------------------------------
# pi-ai helpers


def test_cost_model_equality_and_thinking_levels() -> None:
    model = pi_agent.Model(
        "m", cost={"input": 2.0, "output": 10.0, "cacheRead": 0.5, "cacheWrite": 0}, reasoning=True
    )
    usage = {"input": 1_000_000, "output": 500_000, "cacheRead": 2_000_000, "cacheWrite": 0, "totalTokens": 0}
    cost = pi_agent.calculate_cost(model, usage)
    assert cost == {"input": 2.0, "output": 5.0, "cacheRead": 1.0, "cacheWrite": 0.0, "total": 8.0}
    assert usage["cost"] == cost  # pi's calculateCost stores it in the usage too

    assert pi_agent.models_are_equal(model, model.replace(name="other", base_url="http://x"))
    assert not pi_agent.models_are_equal(model, model.replace(provider="anthropic"))
    assert not pi_agent.models_are_equal(model, None) and not pi_agent.models_are_equal(None, None)

    levels = pi_agent.get_supported_thinking_levels(model)
    assert levels[0] == "off" and "high" in levels
    assert pi_agent.get_supported_thinking_levels(model.replace(reasoning=False)) == ["off"]
    assert pi_agent.clamp_thinking_level(model.replace(reasoning=False), "high") == "off"
    limited = model.replace(thinking_level_map={"xhigh": None})
    assert pi_agent.clamp_thinking_level(limited, "xhigh") == "high"


def test_env_key_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_OAUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert pi_agent.get_env_api_key("anthropic") is None
    assert pi_agent.find_env_keys("anthropic") == []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert pi_agent.get_env_api_key("anthropic") == "sk-ant-test"
    assert pi_agent.find_env_keys("anthropic") == ["ANTHROPIC_API_KEY"]


def test_transform_validate_and_parse_streaming_json() -> None:
    source = pi_agent.Model("gpt-x", provider="openai")
    target = pi_agent.Model("claude", api="anthropic-messages", provider="anthropic")
    assistant = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
            {"type": "toolCall", "id": "call|1", "name": "calc", "arguments": {}},
        ],
        "api": "openai-completions",
        "provider": "openai",
        "model": "gpt-x",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                  "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse",
        "timestamp": 0,
    }
    messages = [CONTEXT["messages"][0], assistant]
    moved = pi_agent.transform_messages(messages, target, lambda id: id.replace("|", "_"))
    blocks = moved[1]["content"]
    assert blocks[0] == {"type": "text", "text": "hmm"}  # another model's thinking becomes text
    assert blocks[1]["id"] == "call_1"
    assert moved[-1]["role"] == "toolResult" and moved[-1]["toolCallId"] == "call_1"  # orphan repaired
    assert pi_agent.transform_messages(messages, source)[1]["content"][0]["type"] == "thinking"
    with pytest.raises(ZeroDivisionError):
        pi_agent.transform_messages(messages, target, lambda id: 1 / 0)

    tools = [{"name": "calc", "description": "", "parameters": {
        "type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}]
    call = {"type": "toolCall", "id": "1", "name": "calc", "arguments": {"x": "3"}}
    assert pi_agent.validate_tool_call(tools, call) == {"x": 3}  # coerced, as AJV does
    with pytest.raises(pi_agent.ToolValidationError, match='Validation failed for tool "calc"'):
        pi_agent.validate_tool_call(tools, {**call, "arguments": {}})
    with pytest.raises(pi_agent.ToolValidationError, match='Tool "nope" not found'):
        pi_agent.validate_tool_call(tools, {**call, "name": "nope"})
    assert pi_agent.validate_tool_arguments(tools[0], call) == {"x": 3}

    assert pi_agent.parse_streaming_json('{"a": [1, 2, {"b": "te') == {"a": [1, 2, {"b": "te"}]}
    assert pi_agent.parse_streaming_json("") == {}


def test_stream_simple_and_complete_simple_twins(faux: pi_agent.FauxProvider) -> None:
    faux.set_responses(["a", "b", "c"])
    with pi_agent.stream_simple(faux.model, CONTEXT, reasoning="high") as events:
        assert [e["type"] for e in events][-1] == "done"
    assert text_of(pi_agent.complete_simple_sync(faux.model, CONTEXT)) == "b"
    assert text_of(asyncio.run(pi_agent.complete_simple(faux.model, CONTEXT))) == "c"


# ---------------------------------------------------------------------------------------------
# Custom stream functions


def test_stream_fn_may_return_a_message_events_or_a_stream(faux: pi_agent.FauxProvider) -> None:
    calls: List[Dict[str, Any]] = []

    def as_message(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> Any:
        calls.append(context)
        return {"role": "assistant", "content": [faux_text("from a message")], "api": model.api,
                "provider": model.provider, "model": model.id, "stopReason": "stop", "timestamp": 1,
                "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}}

    def as_events(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        yield {"type": "start"}
        yield {"type": "text_start", "contentIndex": 0}
        for word in ("from ", "events"):
            yield {"type": "text_delta", "contentIndex": 0, "delta": word}
        yield {"type": "text_end", "contentIndex": 0}
        yield {"type": "done", "reason": "stop", "usage": {"input": 1, "output": 1}}

    async def as_async_events(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> AsyncIterator[Dict[str, Any]]:
        # Forwards another stream's events (full events, `partial` and all).
        async with pi_agent.stream(faux.model, context, **options) as inner:
            async for event in inner:
                yield event

    async def as_stream(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return pi_agent.stream_simple(faux.model, context, **options)

    def failing(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> Any:
        raise RuntimeError("no model today")

    faux.set_responses(["from async events", "from a stream"])
    agent = pi_agent.Agent(pi_agent.Model("custom", api="custom-api"), stream_fn=as_message)
    assert agent.stream_fn is as_message
    agent.prompt_sync("1")
    assert text_of(agent.messages[-1]) == "from a message" and agent.messages[-1]["usage"]["output"] == 2
    assert calls[0]["messages"][0]["content"] == [{"type": "text", "text": "1"}]
    agent.stream_fn = as_events
    events: List[str] = []
    agent.subscribe(lambda event: events.append(event["type"]))
    agent.prompt_sync("2")
    assert text_of(agent.messages[-1]) == "from events"
    assert events.count("message_update") == 4
    agent.stream_fn = as_async_events
    agent.prompt_sync("3")
    assert text_of(agent.messages[-1]) == "from async events"

    async def in_a_loop() -> None:
        agent.stream_fn = as_stream
        await agent.prompt("4")
        assert text_of(agent.messages[-1]) == "from a stream"
        agent.stream_fn = as_async_events  # on the caller's loop now
        faux.push("async events on the caller's loop")
        await agent.prompt("5")

    asyncio.run(in_a_loop())
    assert text_of(agent.messages[-1]) == "async events on the caller's loop"
    agent.stream_fn = failing
    agent.prompt_sync("6")
    last = agent.messages[-1]
    assert last["stopReason"] == "error" and last["errorMessage"] == "stream_fn raised RuntimeError: no model today"
    with pytest.raises(TypeError, match="either `proxy_url` or `stream_fn`"):
        pi_agent.Agent(faux.model, stream_fn=failing, proxy_url="http://127.0.0.1:1")


def test_aborting_a_run_stops_a_stream_fns_events(faux: pi_agent.FauxProvider) -> None:
    produced = threading.Event()

    def endless(model: pi_agent.Model, context: Dict[str, Any], options: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
        yield {"type": "start"}
        yield {"type": "text_start", "contentIndex": 0}
        while True:
            yield {"type": "text_delta", "contentIndex": 0, "delta": "x"}
            produced.set()
            options["signal"].wait_sync(0.01)

    agent = pi_agent.Agent(faux.model, stream_fn=endless)
    threading.Thread(target=lambda: (produced.wait(30), agent.abort()), daemon=True).start()
    agent.prompt_sync("go")
    assert agent.messages[-1]["stopReason"] == "aborted"


# ---------------------------------------------------------------------------------------------
# convert_to_llm


def test_convert_to_llm_turns_custom_messages_into_llm_messages(faux: pi_agent.FauxProvider) -> None:
    seen: List[Dict[str, Any]] = []

    def convert(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        out = []
        for message in messages:
            if message["role"] == "notification":
                out.append({"role": "user", "content": f"[note] {message['text']}", "timestamp": 0})
            else:
                out.append(message)
        return out

    def factory(context: Dict[str, Any], call: int, model: pi_agent.Model) -> str:
        seen.extend(context["messages"])
        return "ok"

    faux.set_responses([factory, factory, factory])
    agent = pi_agent.Agent(
        faux.model,
        messages=[{"role": "notification", "text": "the build is green"}],
        convert_to_llm=convert,
    )
    assert agent.convert_to_llm is convert
    agent.prompt_sync("status?")
    assert seen[0]["content"] == "[note] the build is green"
    assert agent.messages[0] == {"role": "notification", "text": "the build is green"}  # kept as is

    # With transform_context: transform first, then convert (pi's order); both may be async.
    async def transform(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        return [m for m in messages if m["role"] != "assistant"]

    agent.transform_context = transform
    seen.clear()
    agent.prompt_sync("again")
    assert [m["role"] for m in seen] == ["user", "user", "user"]

    agent.convert_to_llm = lambda messages: messages  # returns a custom message: refused
    agent.transform_context = None
    agent.prompt_sync("broken")
    last = agent.messages[-1]
    assert last["stopReason"] == "error" and last["errorMessage"].startswith("convert_to_llm raised ValueError")


# ---------------------------------------------------------------------------------------------
# Tools: label, execution mode, prepare_arguments


def test_tool_label_execution_mode_and_prepare_arguments(faux: pi_agent.FauxProvider) -> None:
    order: List[str] = []

    def legacy(raw: Dict[str, Any]) -> Dict[str, Any]:
        # pi's prepareArguments: a shim for a model that sends an old argument name.
        if "val" in raw:
            return {"value": raw["val"]}
        return raw

    @pi_agent.tool(label="Recorder", execution_mode="sequential", prepare_arguments=legacy)
    def record(value: int) -> str:
        """Records a value."""
        order.append(f"start {value}")
        order.append(f"end {value}")
        return str(value)

    assert record.label == "Recorder" and record.execution_mode == "sequential"
    assert record.prepare_arguments is legacy
    plain = pi_agent.Tool("plain", "", {"type": "object"}, lambda: "x")
    assert plain.label == "plain" and plain.execution_mode is None and plain.prepare_arguments is None

    faux.push([faux_tool_call("record", {"val": 1}, id="a"), faux_tool_call("record", {"value": 2}, id="b")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[record])  # parallel, but this tool forces sequential
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    agent.prompt_sync("go")
    results = [m for m in agent.messages if m["role"] == "toolResult"]
    assert [text_of(r) for r in results] == ["1", "2"] and not any(r["isError"] for r in results)
    kinds = [(e["type"], e.get("toolCallId")) for e in events if e["type"].startswith("tool_execution")]
    assert kinds == [("tool_execution_start", "a"), ("tool_execution_end", "a"),
                     ("tool_execution_start", "b"), ("tool_execution_end", "b")]

    def broken(raw: Dict[str, Any]) -> Dict[str, Any]:
        raise KeyError("shape")

    faux.push([faux_tool_call("fragile", {})])
    faux.push("done")
    agent.tools = [pi_agent.Tool("fragile", "", {"type": "object"}, lambda: "x", prepare_arguments=broken)]
    agent.prompt_sync("again")
    result = [m for m in agent.messages if m["role"] == "toolResult"][-1]
    assert result["isError"] and text_of(result).startswith("prepare_arguments failed")


# ---------------------------------------------------------------------------------------------
# The run's signal, async subscribers, partial messages


def test_tools_and_subscribers_watch_the_runs_signal(faux: pi_agent.FauxProvider) -> None:
    signals: Dict[str, Any] = {}
    started = threading.Event()

    def waits(ctx: pi_agent.ToolContext) -> str:
        signals["tool"] = ctx.signal
        started.set()
        ctx.signal.wait_sync(30)  # returns once the run is aborted
        return "stopped" if ctx.signal.aborted else "timed out"

    def listener(event: Dict[str, Any], signal: pi_agent.Signal) -> None:
        signals.setdefault("listener", signal)

    faux.push([faux_tool_call("waits")])
    agent = pi_agent.Agent(faux.model, tools=[waits])
    agent.subscribe(listener)
    threading.Thread(target=lambda: (started.wait(30), agent.abort()), daemon=True).start()
    agent.prompt_sync("go")
    assert signals["tool"].aborted and signals["listener"].aborted
    assert agent.signal is None  # idle

    # A Signal of your own cancels a request.
    with pi_agent.FauxProvider(tokens_per_second=1) as slow:
        slow.push("word " * 100)
        signal = pi_agent.Signal()
        events = pi_agent.stream(slow.model, CONTEXT, signal=signal)
        assert next(iter(events))["type"] == "start"
        signal.abort()
        assert events.result_sync()["stopReason"] == "aborted"


def test_async_subscribers_are_awaited_in_order(faux: pi_agent.FauxProvider) -> None:
    log: List[str] = []

    async def slow_listener(event: Dict[str, Any], signal: pi_agent.Signal) -> None:
        await asyncio.sleep(0)
        log.append(f"async {event['type']}")

    def sync_listener(event: Dict[str, Any]) -> None:
        log.append(f"sync {event['type']}")

    faux.push("hi")
    agent = pi_agent.Agent(faux.model)
    agent.subscribe(slow_listener)
    agent.subscribe(sync_listener)

    async def main() -> None:
        await agent.prompt("go")

    asyncio.run(main())
    # Every event reached both listeners, the async one first each time (it was awaited).
    assert log[:4] == ["async agent_start", "sync agent_start", "async turn_start", "sync turn_start"]
    assert log[-2:] == ["async agent_end", "sync agent_end"]
    assert len(log) % 2 == 0
    # Under prompt_sync too (in a fresh loop on a worker thread).
    log.clear()
    faux.push("again")
    agent.prompt_sync("go")
    assert log[-2:] == ["async agent_end", "sync agent_end"]


def test_partial_subscribers_get_the_message_so_far(faux: pi_agent.FauxProvider) -> None:
    faux.push("one two three four five six seven")
    agent = pi_agent.Agent(faux.model)
    partial: List[Dict[str, Any]] = []
    plain: List[Dict[str, Any]] = []
    agent.subscribe(lambda e: partial.append(e) if e["type"] == "message_update" else None, partial=True)
    agent.subscribe(lambda e: plain.append(e) if e["type"] == "message_update" else None)
    agent.prompt_sync("go")
    assert plain and all("message" not in e for e in plain)
    texts = [text_of(e["message"]) for e in partial if e["message"]["content"]]
    assert texts == sorted(texts, key=len) and texts[-1] == "one two three four five six seven"
    assert all(e["message"]["role"] == "assistant" for e in partial)


# ---------------------------------------------------------------------------------------------
# Faux provider: async factories, prompt-cache simulation


def test_faux_async_factories_and_prompt_cache(faux: pi_agent.FauxProvider) -> None:
    async def factory(context: Dict[str, Any], call: int, model: pi_agent.Model) -> List[Any]:
        await asyncio.sleep(0)
        return [faux_text(f"async call {call}")]

    def raising(context: Dict[str, Any], call: int, model: pi_agent.Model) -> str:
        raise ValueError("scripted failure")

    faux.set_responses([factory, raising])
    assert text_of(pi_agent.complete_sync(faux.model, CONTEXT)) == "async call 1"
    failed = pi_agent.complete_sync(faux.model, CONTEXT)
    assert failed["stopReason"] == "error"
    assert failed["errorMessage"] == "faux response factory failed: ValueError: scripted failure"

    # pi's prompt-cache simulation: the same session's repeated prefix is read from the cache.
    faux.set_responses(["first", "second"])
    first = pi_agent.complete_sync(faux.model, CONTEXT, session_id="s1")
    longer = {"messages": CONTEXT["messages"] + [first, {"role": "user", "content": "more", "timestamp": 0}]}
    second = pi_agent.complete_sync(faux.model, longer, session_id="s1")
    assert first["usage"]["cacheRead"] == 0 and first["usage"]["cacheWrite"] > 0
    assert second["usage"]["cacheRead"] > 0
    json.dumps(second)
