"""pi's agent-loop rules through the binding (faux provider): tool-call order, queues, abort,
custom messages, tool progress, watchdogs."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import pi_agent
from pi_agent import ToolContext, faux_tool_call

from test_agent import assert_transcript_valid, text_of


def roles(messages: List[Dict[str, Any]]) -> List[str]:
    return [message["role"] for message in messages]


def test_parallel_tool_ends_in_completion_order_results_in_source_order(
    faux: pi_agent.FauxProvider,
) -> None:
    fast_ended = threading.Event()

    def slow() -> str:
        # Finish only once `fast`'s end was reported: a deterministic completion order.
        assert fast_ended.wait(30)
        return "slow done"

    def fast() -> str:
        return "fast done"

    faux.push([faux_tool_call("slow", id="call-slow"), faux_tool_call("fast", id="call-fast")])
    faux.push("both done")
    agent = pi_agent.Agent(faux.model, tools=[slow, fast])
    events: List[Dict[str, Any]] = []

    def record(event: Dict[str, Any]) -> None:
        events.append(event)
        if event["type"] == "tool_execution_end" and event["toolCallId"] == "call-fast":
            fast_ended.set()

    agent.subscribe(record)
    agent.prompt_sync("go")

    starts = [e["toolCallId"] for e in events if e["type"] == "tool_execution_start"]
    ends = [e["toolCallId"] for e in events if e["type"] == "tool_execution_end"]
    result_ends = [
        e["message"]["toolCallId"]
        for e in events
        if e["type"] == "message_end" and e["message"]["role"] == "toolResult"
    ]
    turn_end = next(e for e in events if e["type"] == "turn_end")
    assert starts == ["call-slow", "call-fast"]
    assert ends == ["call-fast", "call-slow"]  # completion order
    assert result_ends == ["call-slow", "call-fast"]  # source order
    assert [r["toolCallId"] for r in turn_end["toolResults"]] == ["call-slow", "call-fast"]
    # Every end comes before the first tool-result message.
    kinds = [e["type"] for e in events]
    first_result = next(
        i for i, e in enumerate(events) if e["type"] == "message_start" and e["message"]["role"] == "toolResult"
    )
    assert kinds[:first_result].count("tool_execution_end") == 2
    assert roles(agent.messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]


def test_sequential_mode_runs_one_call_at_a_time(faux: pi_agent.FauxProvider) -> None:
    running = 0
    overlap = False
    lock = threading.Lock()

    def step(n: int) -> str:
        nonlocal running, overlap
        with lock:
            running += 1
            overlap = overlap or running > 1
        time.sleep(0.02)
        with lock:
            running -= 1
        return f"step {n}"

    faux.push([faux_tool_call("step", {"n": 1}, id="a"), faux_tool_call("step", {"n": 2}, id="b")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[step], tool_execution="sequential")
    assert agent.tool_execution == "sequential"
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    agent.prompt_sync("go")

    assert not overlap
    trace = [
        (e["type"], e.get("toolCallId") or e["message"].get("toolCallId"))
        for e in events
        if e["type"].startswith("tool_execution")
        or (e["type"] == "message_end" and e["message"]["role"] == "toolResult")
    ]
    assert trace == [
        ("tool_execution_start", "a"),
        ("tool_execution_end", "a"),
        ("message_end", "a"),
        ("tool_execution_start", "b"),
        ("tool_execution_end", "b"),
        ("message_end", "b"),
    ]
    agent.tool_execution = "parallel"
    assert agent.tool_execution == "parallel"
    with pytest.raises(ValueError, match="tool_execution"):
        agent.tool_execution = "sometimes"


def test_steering_from_inside_a_tool_is_injected_after_the_batch(
    faux: pi_agent.FauxProvider,
) -> None:
    seen: List[List[str]] = []

    def answer(context: Dict[str, Any], call: int, model: pi_agent.Model) -> str:
        seen.append([text_of(m) if m["role"] != "assistant" else "<assistant>" for m in context["messages"]])
        return "steered answer"

    agent: pi_agent.Agent

    def first() -> str:
        agent.steer("change of plan")
        return "first done"

    def second() -> str:
        return "second done"

    faux.push([faux_tool_call("first"), faux_tool_call("second")])
    faux.push(answer)
    agent = pi_agent.Agent(faux.model, tools=[first, second])
    agent.prompt_sync("go")

    assert roles(agent.messages) == ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]
    assert text_of(agent.messages[4]) == "change of plan"
    assert seen == [["go", "<assistant>", "first done", "second done", "change of plan"]]
    assert not agent.has_queued_messages


def test_follow_up_waits_until_the_agent_would_stop(faux: pi_agent.FauxProvider) -> None:
    agent: pi_agent.Agent

    def lookup() -> str:
        agent.follow_up("one more thing")
        return "looked up"

    faux.set_responses([[faux_tool_call("lookup")], "answer", "follow-up answer"])
    agent = pi_agent.Agent(faux.model, tools=[lookup])
    agent.prompt_sync("go")
    assert [text_of(m) if m["role"] != "assistant" or text_of(m) else "<call>" for m in agent.messages] == [
        "go",
        "<call>",
        "looked up",
        "answer",
        "one more thing",
        "follow-up answer",
    ]
    assert faux.call_count == 3


def test_queue_modes_and_clearing_one_queue(faux: pi_agent.FauxProvider) -> None:
    agent = pi_agent.Agent(faux.model, follow_up_mode="all")
    assert agent.steering_mode == "one-at-a-time" and agent.follow_up_mode == "all"
    agent.steering_mode = "all"
    assert agent.steering_mode == "all"
    with pytest.raises(ValueError, match="follow_up_mode"):
        agent.follow_up_mode = "some"

    agent.steer("steer")
    agent.clear_steering_queue()
    agent.follow_up("first")
    agent.follow_up("second")
    faux.set_responses(["a", "b"])
    agent.prompt_sync("start")
    # "all": both follow-ups arrive in one poll, so one more model call.
    assert [text_of(m) for m in agent.messages] == ["start", "a", "first", "second", "b"]
    agent.follow_up("left over")
    agent.clear_follow_up_queue()
    assert not agent.has_queued_messages


def test_continue_from_a_user_tail(faux: pi_agent.FauxProvider) -> None:
    seen: List[Any] = []
    faux.push(lambda context, call, model: seen.append(context["messages"]) or "continued")
    agent = pi_agent.Agent(
        faux.model, messages=[{"role": "user", "content": "pending question", "timestamp": 1}]
    )
    events: List[str] = []
    agent.subscribe(lambda event: events.append(event["type"]))
    agent.continue_sync()
    assert seen == [[{"role": "user", "content": "pending question", "timestamp": 1}]]
    assert roles(agent.messages) == ["user", "assistant"]
    assert text_of(agent.messages[-1]) == "continued"
    # No new prompt message: the run starts at the model call.
    assert events[:3] == ["agent_start", "turn_start", "message_start"]


def test_abort_during_a_slow_tool_ends_the_run_cleanly(faux: pi_agent.FauxProvider) -> None:
    started = threading.Event()
    saw_abort = threading.Event()

    def slow(ctx: ToolContext) -> str:
        started.set()
        ctx.signal.wait_sync(30)  # a hang guard; the abort ends the wait
        if ctx.aborted:
            saw_abort.set()
        return "too late"

    faux.push([faux_tool_call("slow")])
    faux.push("never used")
    agent = pi_agent.Agent(faux.model, tools=[slow])
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)

    async def main() -> None:
        task = asyncio.ensure_future(agent.prompt("go"))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        agent.abort()
        await asyncio.wait_for(task, 30)

    asyncio.run(main())
    assert saw_abort.wait(30)  # the sync tool saw `ctx.aborted` and returned
    assert not agent.is_streaming and agent.pending_tool_calls == []
    messages = agent.messages
    assert roles(messages) == ["user", "assistant", "toolResult"]  # no extra assistant message
    assert_transcript_valid(messages)
    assert messages[-1]["isError"] is True
    assert text_of(messages[-1]) == "Tool execution was aborted"
    assert events[-1]["type"] == "agent_end"
    assert faux.pending == 1
    # The agent is idle and usable again.
    agent.prompt_sync("again")
    assert text_of(agent.messages[-1]) == "never used"


def test_custom_messages_stay_in_the_transcript_and_never_reach_the_model(
    faux: pi_agent.FauxProvider,
) -> None:
    contexts: List[List[Dict[str, Any]]] = []

    def record(context: Dict[str, Any], call: int, model: pi_agent.Model) -> Any:
        contexts.append(context["messages"])
        return [faux_tool_call("note")] if call == 1 else f"answer {call}"

    agent: pi_agent.Agent

    def note() -> str:
        agent.steer({"role": "bookmark", "label": "after the tool"})
        agent.follow_up({"role": "notification", "text": "follow-up note"})
        return "noted"

    faux.set_responses([record, record, record])
    agent = pi_agent.Agent(
        faux.model,
        tools=[note],
        messages=[{"role": "notification", "text": "session restored", "level": 2}],
    )
    agent.prompt_sync(
        [
            {"role": "ui", "widget": "spinner"},
            {"role": "user", "content": "go", "timestamp": 5},
        ]
    )

    assert roles(agent.messages) == [
        "notification",
        "ui",
        "user",
        "assistant",
        "toolResult",
        "bookmark",
        "assistant",
        "notification",
        "assistant",
    ]
    assert agent.messages[0] == {"role": "notification", "text": "session restored", "level": 2}
    assert agent.messages[5] == {"role": "bookmark", "label": "after the tool"}
    assert agent.messages[7] == {"role": "notification", "text": "follow-up note"}
    assert len(contexts) == 3
    for sent in contexts:
        assert set(roles(sent)) <= {"user", "assistant", "toolResult"}
    assert roles(contexts[1]) == ["user", "assistant", "toolResult"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_tool_context_updates_become_tool_execution_update_events(
    faux: pi_agent.FauxProvider, kind: str
) -> None:
    seen: Dict[str, Any] = {}

    def progress_sync(steps: int, ctx: ToolContext) -> str:
        seen.update(id=ctx.tool_call_id, name=ctx.tool_name, aborted=ctx.aborted, repr=repr(ctx))
        ctx.update("half way")
        ctx.update({"content": [{"type": "text", "text": "almost"}], "details": {"step": steps}})
        return "finished"

    async def progress_async(steps: int, ctx: ToolContext) -> str:
        seen.update(id=ctx.tool_call_id, name=ctx.tool_name, aborted=ctx.aborted, repr=repr(ctx))
        ctx.update("half way")
        await asyncio.sleep(0)
        ctx.update({"content": "almost", "details": {"step": steps}})
        return "finished"

    progress = pi_agent.Tool.from_function(
        progress_sync if kind == "sync" else progress_async, name="progress"
    )
    assert progress.parameters == {
        "type": "object",
        "properties": {"steps": {"type": "integer"}},
        "required": ["steps"],
    }
    faux.push([faux_tool_call("progress", {"steps": 2}, id="call-p")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[progress])
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)
    if kind == "sync":
        agent.prompt_sync("go")
    else:
        asyncio.run(agent.prompt("go"))

    assert seen["id"] == "call-p" and seen["name"] == "progress" and seen["aborted"] is False
    assert seen["repr"] == "ToolContext(tool_call_id=\"call-p\", tool_name=\"progress\")"
    updates = [e for e in events if e["type"] == "tool_execution_update"]
    assert [u["partialResult"]["content"] for u in updates] == [
        [{"type": "text", "text": "half way"}],
        [{"type": "text", "text": "almost"}],
    ]
    assert updates[1]["partialResult"]["details"] == {"step": 2}
    assert all(u["toolCallId"] == "call-p" and u["args"] == {"steps": 2} for u in updates)
    kinds = [e["type"] for e in events]
    assert kinds.index("tool_execution_start") < kinds.index("tool_execution_update")
    assert max(i for i, k in enumerate(kinds) if k == "tool_execution_update") < kinds.index(
        "tool_execution_end"
    )
    assert text_of(next(m for m in agent.messages if m["role"] == "toolResult")) == "finished"


def test_tool_context_parameter_rule() -> None:
    def by_annotation(query: str, context: ToolContext) -> str:
        return query

    def optional(query: str, ctx: Optional[ToolContext] = None) -> str:
        return query

    def named_ctx_is_an_argument(query: str, ctx: str) -> str:
        return query

    def two(a: ToolContext, b: ToolContext) -> None: ...

    assert pi_agent.function_schema(by_annotation)["properties"].keys() == {"query"}
    assert pi_agent.function_schema(optional)["properties"].keys() == {"query"}
    assert pi_agent.function_schema(named_ctx_is_an_argument)["required"] == ["query", "ctx"]
    assert pi_agent.tool(optional)(query="direct call") == "direct call"
    with pytest.raises(TypeError, match="only one parameter"):
        pi_agent.Tool.from_function(two)


def test_tool_timeout_and_stream_idle_watchdogs(faux: pi_agent.FauxProvider) -> None:
    release = threading.Event()

    def hang() -> str:
        release.wait(30)  # a hang guard: released after the run
        return "late"

    faux.push([faux_tool_call("hang")])
    faux.push("after the timeout")
    agent = pi_agent.Agent(faux.model, tools=[hang], tool_timeout_ms=100)
    assert agent.tool_timeout_ms == 100 and agent.stream_idle_timeout_ms is None
    try:
        agent.prompt_sync("go")
    finally:
        release.set()
    result = next(m for m in agent.messages if m["role"] == "toolResult")
    assert result["isError"] and text_of(result) == "Tool hang timed out after 100 ms"
    assert text_of(agent.messages[-1]) == "after the timeout"

    agent.tool_timeout_ms = None
    assert agent.tool_timeout_ms is None
    with pi_agent.FauxProvider(tokens_per_second=2) as slow:
        slow.push("word " * 20)
        agent.model = slow.model
        agent.stream_idle_timeout_ms = 100
        assert agent.stream_idle_timeout_ms == 100
        agent.prompt_sync("talk")
    last = agent.messages[-1]
    assert last["stopReason"] == "error"
    assert last["errorMessage"].startswith("The model stream stalled")
