"""The sans-IO agent loop (core's AgentStepper) driven from Python, as a durable workflow engine
would: every effect is the driver's, the state is stored as JSON after every step, and the
same inputs give the same steps."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Tuple

import pytest

import pi_agent
from pi_agent import faux_tool_call

SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}


def multiply(a: float, b: float) -> str:
    return str(a * b)


def script(faux: pi_agent.FauxProvider) -> None:
    faux.push([faux_tool_call("multiply", {"a": 6, "b": 7}, id="c1"), faux_tool_call("multiply", {"a": "2", "b": 3}, id="c2")])
    faux.push("42 and 6")


def drive(
    model: pi_agent.Model, call_model: Callable[[Dict[str, Any]], Dict[str, Any]]
) -> Tuple[List[Dict[str, Any]], pi_agent.AgentStepper]:
    """A deterministic driver: stores the stepper as JSON after every step and resumes from
    the stored copy, performing each action itself."""
    tools = [{"name": "multiply", "description": "Multiplies", "parameters": SCHEMA}]
    prompt = {"role": "user", "content": "6*7 and 2*3?", "timestamp": 0}
    stepper, step = pi_agent.AgentStepper.start(system_prompt="Be brief.", prompts=[prompt])
    events: List[Dict[str, Any]] = []
    while True:
        events.extend(step["events"])
        stored = json.dumps(stepper.to_dict())  # e.g. in a workflow's history
        stepper = pi_agent.AgentStepper.from_dict(json.loads(stored))
        action = step["action"]
        kind = action["type"]
        if kind == "finished":
            assert action["newMessages"] == stepper.new_messages
            return events, stepper
        if kind == "poll_steering":
            step = stepper.resume({"type": "steering", "messages": []})
        elif kind == "poll_follow_up":
            step = stepper.resume({"type": "follow_up", "messages": []})
        elif kind == "call_model":
            context = {
                "systemPrompt": stepper.system_prompt,
                "messages": pi_agent.default_convert_to_llm(stepper.messages),
                "tools": tools,
            }
            step = stepper.resume({"type": "model_result", "message": call_model(context), "startEmitted": False})
        elif kind == "execute_tools":
            outcomes = []
            for call in action["toolCalls"]:
                arguments = pi_agent.validate_tool_call(tools, call)
                outcomes.append({
                    "message": {
                        "role": "toolResult",
                        "toolCallId": call["id"],
                        "toolName": call["name"],
                        "content": [{"type": "text", "text": multiply(**arguments)}],
                        "isError": False,
                        "timestamp": 0,
                    }
                })
            step = stepper.resume({"type": "tool_results", "outcomes": outcomes})
        else:
            raise AssertionError(f"unexpected action {action}")


def test_a_python_driver_runs_the_loop_like_the_agent(faux: pi_agent.FauxProvider) -> None:
    script(faux)
    events, stepper = drive(faux.model, lambda context: pi_agent.complete_simple_sync(faux.model, context))
    assert stepper.is_finished and not stepper.is_aborted
    roles = [m["role"] for m in stepper.messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert [m["content"][0]["text"] for m in stepper.messages if m["role"] == "toolResult"] == ["42", "6"]

    # The agent runs the same loop: the same structure of events.
    script(faux)
    agent = pi_agent.Agent(faux.model, system_prompt="Be brief.", tools=[pi_agent.Tool("multiply", "Multiplies", SCHEMA, multiply)])
    agent_events: List[Dict[str, Any]] = []
    agent.subscribe(agent_events.append)
    agent.prompt_sync("6*7 and 2*3?")
    driver_emits = ("message_update", "tool_execution_start", "tool_execution_update", "tool_execution_end")
    assert [e["type"] for e in events] == [e["type"] for e in agent_events if e["type"] not in driver_emits]
    assert [m["role"] for m in agent.messages] == roles


def test_the_stepper_is_pure(faux: pi_agent.FauxProvider) -> None:
    answers: List[Dict[str, Any]] = []
    script(faux)
    first, _ = drive(faux.model, lambda context: answers.append(pi_agent.complete_simple_sync(faux.model, context)) or answers[-1])
    replayed = iter(answers)
    second, _ = drive(faux.model, lambda context: next(replayed))  # no model: the recorded answers
    assert first == second


def test_a_wrong_answer_is_refused_and_changes_nothing() -> None:
    stepper, step = pi_agent.AgentStepper.start(messages=[{"role": "user", "content": "hi", "timestamp": 0}])
    assert [e["type"] for e in step["events"]] == ["agent_start", "turn_start"]
    assert step["action"] == {"type": "poll_steering"}
    before = stepper.to_dict()
    with pytest.raises(ValueError, match="does not answer the pending action `poll_steering`"):
        stepper.resume({"type": "should_stop", "stop": True})
    assert stepper.to_dict() == before
    with pytest.raises(ValueError, match="invalid step input"):
        stepper.resume({"type": "nonsense"})
    step = stepper.resume({"type": "steering", "messages": []})
    assert step["action"] == {"type": "call_model"}
    stepper.abort()
    failure = {"role": "assistant", "content": [], "api": "x", "provider": "x", "model": "x",
               "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
               "stopReason": "aborted", "errorMessage": "Request was aborted", "timestamp": 0}
    step = stepper.resume({"type": "model_result", "message": failure})
    assert step["action"]["type"] == "finished" and stepper.is_finished and stepper.is_aborted
    assert [e["type"] for e in step["events"]] == ["message_start", "message_end", "turn_end", "agent_end"]
    restored = pi_agent.AgentStepper.from_dict(stepper.to_dict())
    assert restored == stepper
    with pytest.raises(ValueError, match="invalid stepper state"):
        pi_agent.AgentStepper.from_dict({"phase": "nowhere"})


def test_execute_tool_calls_sync_performs_an_execute_tools_action(faux: pi_agent.FauxProvider) -> None:
    """A driver runs the stepper's tool calls as the agent does: an unknown tool is an error
    result, the events come back in order, and the outcomes answer the stepper."""
    script(faux)
    tool = pi_agent.Tool("multiply", "Multiplies", SCHEMA, multiply)
    stepper, step = pi_agent.AgentStepper.start(prompts=[{"role": "user", "content": "go", "timestamp": 0}])
    step = stepper.resume({"type": "steering", "messages": []})
    context = {"messages": pi_agent.default_convert_to_llm(stepper.messages), "tools": [tool.to_dict()]}
    step = stepper.resume({"type": "model_result", "message": pi_agent.complete_simple_sync(faux.model, context)})
    action = step["action"]
    assert action["type"] == "execute_tools"
    result = pi_agent.execute_tool_calls_sync(action, [tool])
    texts = [outcome["message"]["content"][0]["text"] for outcome in result["outcomes"]]
    assert texts == ["42", "6"]  # "2" coerced by the schema, as in pi
    missing = pi_agent.execute_tool_calls_sync(action, [])
    assert all(outcome["message"]["isError"] for outcome in missing["outcomes"])
    assert [e["type"] for e in result["events"]].count("tool_execution_end") == 2
    step = stepper.resume({"type": "tool_results", "outcomes": result["outcomes"]})
    assert [m["role"] for m in stepper.messages] == ["user", "assistant", "toolResult", "toolResult"]
    with pytest.raises(ValueError, match="not `execute_tools`"):
        pi_agent.execute_tool_calls_sync({**action, "type": "call_model"}, [tool])


def test_execute_tool_calls_sync_hands_each_event_over_as_it_happens(faux: pi_agent.FauxProvider) -> None:
    """``on_event`` gets a call's start and its updates while the tool still runs (the tool
    here goes on only once its update was seen), then the rest, in order: the same events as
    the returned list. What it raises goes to ``sys.unraisablehook``; the calls go on."""
    seen_update = threading.Event()

    def multiply(a: float, b: float, ctx: pi_agent.ToolContext) -> str:
        ctx.update(f"multiplying {a}")
        return str(a * b) if seen_update.wait(60.0) else "the update was not seen while running"

    script(faux)
    tool = pi_agent.Tool("multiply", "Multiplies", SCHEMA, multiply)
    stepper, step = pi_agent.AgentStepper.start(prompts=[{"role": "user", "content": "go", "timestamp": 0}])
    step = stepper.resume({"type": "steering", "messages": []})
    context = {"messages": pi_agent.default_convert_to_llm(stepper.messages), "tools": [tool.to_dict()]}
    step = stepper.resume({"type": "model_result", "message": pi_agent.complete_simple_sync(faux.model, context)})
    live: List[Dict[str, Any]] = []
    threads = set()
    inner: List[Any] = []

    def on_event(event: Dict[str, Any]) -> None:
        live.append(event)
        threads.add(threading.get_ident())
        if event["type"] == "tool_execution_update":
            # On the calling thread: it may call the library, even blocking (this hung on a
            # runtime worker).
            if not inner:
                with pi_agent.FauxProvider() as other:
                    other.push("inner")
                    inner.append(pi_agent.complete_sync(other.model, {"messages": []}))
            seen_update.set()

    result = pi_agent.execute_tool_calls_sync(step["action"], [tool], on_event=on_event)
    assert [o["message"]["content"][0]["text"] for o in result["outcomes"]] == ["42", "6"]
    assert live == result["events"]
    assert "tool_execution_update" in [e["type"] for e in live]
    assert threads == {threading.get_ident()}
    assert inner[0]["content"][0]["text"] == "inner"

    unraisable: List[Any] = []
    previous = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:

        def broken(event: Dict[str, Any]) -> None:
            raise RuntimeError("subscriber bug")

        again = pi_agent.execute_tool_calls_sync(step["action"], [tool], on_event=broken)
    finally:
        sys.unraisablehook = previous
    assert [o["message"]["content"][0]["text"] for o in again["outcomes"]] == ["42", "6"]
    assert len(unraisable) == len(again["events"]) and "subscriber bug" in str(unraisable[0].exc_value)
    with pytest.raises(TypeError, match="callable"):
        pi_agent.execute_tool_calls_sync(step["action"], [tool], on_event=42)  # type: ignore[arg-type]


def test_a_ctrl_c_in_on_event_stops_execute_tool_calls_sync(faux: pi_agent.FauxProvider) -> None:
    """``on_event`` runs on the calling thread, where Ctrl-C lands: a ``KeyboardInterrupt``
    in it ends the wait with that exception (the calls are aborted), not in the
    unraisable hook while the calls go on."""
    released = threading.Event()

    def multiply(a: float, b: float) -> str:
        released.wait(20.0)
        return str(a * b)

    script(faux)
    tool = pi_agent.Tool("multiply", "Multiplies", SCHEMA, multiply)
    stepper, step = pi_agent.AgentStepper.start(prompts=[{"role": "user", "content": "go", "timestamp": 0}])
    step = stepper.resume({"type": "steering", "messages": []})
    context = {"messages": pi_agent.default_convert_to_llm(stepper.messages), "tools": [tool.to_dict()]}
    step = stepper.resume({"type": "model_result", "message": pi_agent.complete_simple_sync(faux.model, context)})

    def on_event(event: Dict[str, Any]) -> None:
        if event["type"] == "tool_execution_start":
            raise KeyboardInterrupt

    started = time.monotonic()
    # Python's own Ctrl-C handler, also where the suite runs with SIGINT ignored (a background
    # job): a Ctrl-C is put back only for a process that takes them.
    previous_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            pi_agent.execute_tool_calls_sync(step["action"], [tool], on_event=on_event)
            for _ in range(10_000):  # without the fix, a Ctrl-C put back would land here
                pass
    finally:
        signal.signal(signal.SIGINT, previous_handler)
        released.set()
    assert time.monotonic() - started < 15.0, "the wait went on until the tools ended"


def test_execute_tool_calls_sync_applies_the_tool_call_hooks_and_the_watchdog(faux: pi_agent.FauxProvider) -> None:
    """``before_tool_call`` / ``after_tool_call`` and ``tool_timeout_ms`` as in an agent run:
    a blocked call is not run (and not seen by after_tool_call), a replaced result is what
    the stepper gets, a call past the watchdog gets core's timeout result."""
    import time

    def slow(a: float, b: float) -> str:
        time.sleep(1.0)
        return "late"

    script(faux)
    stepper, step = pi_agent.AgentStepper.start(prompts=[{"role": "user", "content": "go", "timestamp": 0}])
    step = stepper.resume({"type": "steering", "messages": []})
    tool = pi_agent.Tool("multiply", "Multiplies", SCHEMA, multiply)
    context = {"messages": pi_agent.default_convert_to_llm(stepper.messages), "tools": [tool.to_dict()]}
    step = stepper.resume({"type": "model_result", "message": pi_agent.complete_simple_sync(faux.model, context)})
    action = step["action"]
    after_seen: List[str] = []

    def before(context: Dict[str, Any]) -> Any:
        return {"block": True, "reason": "no 2s"} if context["args"]["a"] == 2 else None

    def after(context: Dict[str, Any]) -> Any:
        after_seen.append(context["toolCall"]["id"])
        return {"content": "replaced", "isError": False}

    result = pi_agent.execute_tool_calls_sync(action, [tool], before_tool_call=before, after_tool_call=after)
    messages = [outcome["message"] for outcome in result["outcomes"]]
    assert [(m["content"][0]["text"], m["isError"]) for m in messages] == [("replaced", False), ("no 2s", True)]
    assert after_seen == ["c1"]
    timed = pi_agent.execute_tool_calls_sync(
        action, [pi_agent.Tool("multiply", "Multiplies", SCHEMA, slow)], tool_timeout_ms=100
    )
    assert [o["message"]["content"][0]["text"] for o in timed["outcomes"]] == ["Tool multiply timed out after 100 ms"] * 2
    with pytest.raises(TypeError, match="callable"):
        pi_agent.execute_tool_calls_sync(action, [tool], before_tool_call=42)  # type: ignore[arg-type]
