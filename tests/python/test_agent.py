"""Agent behaviour through the binding, on the faux provider."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

import pytest

import pi_agent
from pi_agent import faux_text, faux_tool_call

BUSY_MESSAGE = (
    "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
    "or wait for completion."
)


def text_of(message: Dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block["type"] == "text")


def assert_transcript_valid(messages: List[Dict[str, Any]]) -> None:
    """Every tool call has exactly one tool result."""
    calls = [
        block["id"]
        for message in messages
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "toolCall"
    ]
    results = [message["toolCallId"] for message in messages if message["role"] == "toolResult"]
    assert sorted(calls) == sorted(results)


def test_text_prompt_emits_pis_event_order(faux: pi_agent.FauxProvider) -> None:
    faux.push("Hello from the faux provider, streamed in several deltas.")
    agent = pi_agent.Agent(faux.model, system_prompt="Be nice.")
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)

    agent.prompt_sync("Hi!")

    kinds = [event["type"] for event in events]
    updates = [e["assistantMessageEvent"]["type"] for e in events if e["type"] == "message_update"]
    assert kinds[:5] == ["agent_start", "turn_start", "message_start", "message_end", "message_start"]
    assert kinds[-3:] == ["message_end", "turn_end", "agent_end"]
    assert set(kinds[5:-3]) == {"message_update"}
    # pi's order: `start` is the assistant's message_start, `done` its message_end.
    assert updates[0] == "text_start" and updates[-1] == "text_end"
    assert updates.count("text_delta") >= 2
    assert events[2]["message"]["role"] == "user"
    assert events[4]["message"]["role"] == "assistant"
    assert "partial" not in events[5]["assistantMessageEvent"]

    messages = agent.messages
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[0]["content"] == [{"type": "text", "text": "Hi!"}]
    assert text_of(messages[1]) == "Hello from the faux provider, streamed in several deltas."
    assert messages[1]["stopReason"] == "stop"
    assert events[-1]["messages"] == messages
    assert not agent.is_streaming and agent.error_message is None
    assert faux.call_count == 1 and faux.pending == 0


def test_calculator_tool_is_called_and_answered(faux: pi_agent.FauxProvider) -> None:
    @pi_agent.tool
    def calculate(expression: str) -> str:
        """Evaluates an arithmetic expression.

        Args:
            expression: The expression, e.g. "6 * 7".
        """
        return str(eval(expression, {"__builtins__": {}}))

    seen_contexts: List[Dict[str, Any]] = []

    def answer(context: Dict[str, Any], call: int, model: pi_agent.Model) -> str:
        seen_contexts.append(context)
        return f"The answer is {text_of(context['messages'][-1])}."

    faux.push([faux_tool_call("calculate", {"expression": "6 * 7"}, id="call-1")])
    faux.push(answer)
    agent = pi_agent.Agent(faux.model, tools=[calculate])
    agent.prompt_sync("What is 6 * 7?")

    messages = agent.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[1]["stopReason"] == "toolUse"
    assert messages[2]["toolCallId"] == "call-1"
    assert messages[2]["toolName"] == "calculate"
    assert messages[2]["isError"] is False
    assert messages[2]["content"] == [{"type": "text", "text": "42"}]
    assert text_of(messages[3]) == "The answer is 42."
    (tool,) = seen_contexts[0]["tools"]
    assert tool["name"] == "calculate"
    assert tool["description"] == "Evaluates an arithmetic expression."
    assert tool["parameters"]["properties"]["expression"]["description"] == (
        'The expression, e.g. "6 * 7".'
    )
    assert calculate(expression="1 + 1") == "2"  # still callable


def test_sync_and_async_tools_run_where_documented(faux: pi_agent.FauxProvider) -> None:
    where: Dict[str, Any] = {}

    def sync_tool(x: int) -> int:
        where["sync"] = threading.get_ident()
        return x * 2

    async def async_tool(x: int) -> Dict[str, Any]:
        await asyncio.sleep(0.01)
        where["async_loop"] = asyncio.get_running_loop()
        return {"content": f"async {x}", "details": {"x": x}}

    def script() -> None:
        faux.push([faux_tool_call("sync_tool", {"x": 2}), faux_tool_call("async_tool", {"x": 3})])
        faux.push("done")

    agent = pi_agent.Agent(faux.model, tools=[sync_tool, async_tool])

    async def main() -> None:
        where["caller_loop"] = asyncio.get_running_loop()
        script()
        await agent.prompt("go")

    asyncio.run(main())
    results = {m["toolName"]: m for m in agent.messages if m["role"] == "toolResult"}
    assert results["sync_tool"]["content"] == [{"type": "text", "text": "4"}]
    assert results["async_tool"]["content"] == [{"type": "text", "text": "async 3"}]
    assert results["async_tool"]["details"] == {"x": 3}
    assert where["async_loop"] is where["caller_loop"]
    assert where["sync"] != threading.get_ident()

    # Without an awaiting caller, the coroutine runs in a fresh loop on a worker thread.
    agent.reset()
    script()
    agent.prompt_sync("go")
    assert where["async_loop"] is not where["caller_loop"]
    results = {m["toolName"]: m for m in agent.messages if m["role"] == "toolResult"}
    assert results["async_tool"]["content"] == [{"type": "text", "text": "async 3"}]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_raising_tool_is_an_error_result_and_the_run_goes_on(
    faux: pi_agent.FauxProvider, kind: str
) -> None:
    def broken_sync(path: str) -> str:
        raise FileNotFoundError(f"no such file: {path}")

    async def broken_async(path: str) -> str:
        raise FileNotFoundError(f"no such file: {path}")

    broken = pi_agent.Tool.from_function(
        broken_sync if kind == "sync" else broken_async, name="read_file"
    )
    faux.push([faux_tool_call("read_file", {"path": "/nope"})])
    faux.push("Sorry, that file does not exist.")
    agent = pi_agent.Agent(faux.model, tools=[broken])
    events: List[Dict[str, Any]] = []
    agent.subscribe(events.append)

    if kind == "sync":
        agent.prompt_sync("read /nope")
    else:
        asyncio.run(agent.prompt("read /nope"))

    result = next(m for m in agent.messages if m["role"] == "toolResult")
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "no such file: /nope"}]
    end = next(e for e in events if e["type"] == "tool_execution_end")
    assert end["isError"] is True
    assert text_of(agent.messages[-1]) == "Sorry, that file does not exist."
    assert faux.call_count == 2


def test_tool_return_values(faux: pi_agent.FauxProvider) -> None:
    def as_json() -> Dict[str, Any]:
        return {"total": 3, "items": [1, 2]}

    def nothing() -> None:
        return None

    def full() -> Dict[str, Any]:
        return {"content": [{"type": "text", "text": "full"}], "details": {"k": 1}}

    faux.push([faux_tool_call("as_json"), faux_tool_call("nothing"), faux_tool_call("full")])
    faux.push("ok")
    agent = pi_agent.Agent(faux.model, tools=[as_json, nothing, full])
    agent.prompt_sync("go")
    results = {m["toolName"]: m for m in agent.messages if m["role"] == "toolResult"}
    assert results["as_json"]["content"][0]["text"] in (
        '{"items":[1,2],"total":3}',
        '{"total":3,"items":[1,2]}',
    )
    assert results["nothing"]["content"] == [{"type": "text", "text": "null"}]
    assert results["full"]["content"] == [{"type": "text", "text": "full"}]
    assert results["full"]["details"] == {"k": 1}


def test_prompt_while_busy_raises_pis_error(faux: pi_agent.FauxProvider) -> None:
    release = threading.Event()
    started = threading.Event()

    def wait_for_release() -> str:
        started.set()
        release.wait(30)  # a hang guard: released by the test
        return "released"

    faux.push([faux_tool_call("wait_for_release")])
    faux.push("finished")
    agent = pi_agent.Agent(faux.model, tools=[wait_for_release])

    async def main() -> None:
        task = asyncio.ensure_future(agent.prompt("start"))
        while not started.is_set():
            await asyncio.sleep(0.005)
        assert agent.is_streaming
        with pytest.raises(pi_agent.AgentBusyError) as busy:
            await agent.prompt("again")
        assert str(busy.value) == BUSY_MESSAGE
        with pytest.raises(pi_agent.PiError, match="already processing a prompt"):
            agent.prompt_sync("again")
        with pytest.raises(pi_agent.AgentBusyError):
            async for _ in agent.run("again"):
                pass
        release.set()
        await task

    asyncio.run(main())
    assert text_of(agent.messages[-1]) == "finished"
    assert [m["role"] for m in agent.messages].count("user") == 1


def test_abort_from_another_thread_during_a_slow_sync_tool(faux: pi_agent.FauxProvider) -> None:
    release = threading.Event()
    started = threading.Event()
    returned = threading.Event()

    def slow(seconds: float) -> str:
        started.set()
        release.wait(seconds)  # a hang guard: released once prompt_sync has returned
        returned.set()
        return "too late"

    faux.push([faux_tool_call("slow", {"seconds": 30})])
    faux.push("never used")
    agent = pi_agent.Agent(faux.model, tools=[slow])
    aborter = threading.Thread(target=lambda: (started.wait(30), agent.abort()))
    aborter.start()
    try:
        agent.prompt_sync("go")
        # The run ended on the abort, while the sync tool was still blocked.
        assert not returned.is_set()
    finally:
        release.set()
        aborter.join()
    assert not agent.is_streaming
    messages = agent.messages
    assert_transcript_valid(messages)
    result = next(m for m in messages if m["role"] == "toolResult")
    assert result["isError"] is True
    assert text_of(result) == "Tool execution was aborted"
    assert faux.pending == 1  # the model was not called again


def test_abort_from_a_task_cancels_an_async_tool(faux: pi_agent.FauxProvider) -> None:
    state: Dict[str, Any] = {}

    async def slow(seconds: float) -> str:
        state["started"].set()
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            state["cancelled"].set()
            raise
        return "too late"

    faux.push([faux_tool_call("slow", {"seconds": 30})])
    agent = pi_agent.Agent(faux.model, tools=[slow])

    async def main() -> None:
        state["started"], state["cancelled"] = asyncio.Event(), asyncio.Event()

        async def abort_when_started() -> None:
            await state["started"].wait()
            agent.abort()

        await asyncio.wait_for(asyncio.gather(agent.prompt("go"), abort_when_started()), 30)
        await asyncio.wait_for(state["cancelled"].wait(), 30)  # the coroutine was cancelled

    asyncio.run(main())
    assert not agent.is_streaming
    assert_transcript_valid(agent.messages)


def test_cancelling_the_awaiting_task_aborts_the_run(faux: pi_agent.FauxProvider) -> None:
    with pi_agent.FauxProvider(tokens_per_second=50) as faux_slow:
        faux_slow.push("word " * 200)
        agent = pi_agent.Agent(faux_slow.model)

        async def main() -> None:
            loop = asyncio.get_running_loop()
            streaming = asyncio.Event()
            agent.subscribe(
                lambda event: loop.call_soon_threadsafe(streaming.set)
                if event["type"] == "message_update"
                else None
            )
            task = asyncio.create_task(agent.prompt("talk"))
            await asyncio.wait_for(streaming.wait(), 30)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not agent.is_streaming  # the abort completed before the await returned

        asyncio.run(main())
        assert agent.messages[-1]["stopReason"] == "aborted"
        assert agent.error_message


def test_subscribe_and_unsubscribe(faux: pi_agent.FauxProvider) -> None:
    faux.set_responses(["one", "two"])
    agent = pi_agent.Agent(faux.model)
    first: List[str] = []
    second: List[str] = []
    unsubscribe = agent.subscribe(lambda event: first.append(event["type"]))
    agent.subscribe(lambda event: second.append(event["type"]))
    agent.prompt_sync("1")
    unsubscribe()
    unsubscribe()  # idempotent
    agent.prompt_sync("2")
    assert first.count("agent_end") == 1
    assert second.count("agent_end") == 2


def test_a_raising_subscriber_does_not_break_the_run(
    faux: pi_agent.FauxProvider, unraisable: List[Any]
) -> None:
    faux.push("still fine")
    agent = pi_agent.Agent(faux.model)

    def bad(event: Dict[str, Any]) -> None:
        raise RuntimeError(f"subscriber failed on {event['type']}")

    good: List[str] = []
    agent.subscribe(bad)
    agent.subscribe(lambda event: good.append(event["type"]))
    agent.prompt_sync("hi")
    assert good[0] == "agent_start" and good[-1] == "agent_end"
    assert text_of(agent.messages[-1]) == "still fine"
    # One traceback per failing subscriber, not one per event; every failure is recorded.
    assert len(unraisable) == 1
    assert all(isinstance(report.exc_value, RuntimeError) for report in unraisable)
    assert str(unraisable[0].exc_value) == "subscriber failed on agent_start"
    errors = agent.listener_errors
    assert len(errors) == len(good)
    assert errors[0] == (
        "subscriber raised on agent_start: RuntimeError: subscriber failed on agent_start"
    )


def test_async_for_over_one_runs_events(faux: pi_agent.FauxProvider) -> None:
    faux.push([faux_tool_call("double", {"x": 21})])
    faux.push("It is 42.")

    def double(x: int) -> int:
        return 2 * x

    agent = pi_agent.Agent(faux.model, tools=[double])

    async def main() -> List[Dict[str, Any]]:
        return [event async for event in agent.run("double 21")]

    events = asyncio.run(main())
    kinds = [event["type"] for event in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert kinds.count("turn_start") == 2
    assert "tool_execution_start" in kinds and "tool_execution_end" in kinds
    start = next(e for e in events if e["type"] == "tool_execution_start")
    assert start["toolName"] == "double" and start["args"] == {"x": 21}
    assert text_of(agent.messages[-1]) == "It is 42."

    # A plain `for` works too.
    faux.push("again")
    kinds = [event["type"] for event in agent.run("once more")]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"


def test_prompt_sync_inside_a_running_event_loop(faux: pi_agent.FauxProvider) -> None:
    loops: List[Any] = []

    async def where_am_i() -> str:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return "here"

    faux.push([faux_tool_call("where_am_i")])
    faux.push("done")
    agent = pi_agent.Agent(faux.model, tools=[where_am_i])

    async def main() -> Any:
        agent.prompt_sync("go")  # a plain blocking call, as in a Jupyter cell
        return asyncio.get_running_loop()

    caller_loop = asyncio.run(main())
    assert text_of(agent.messages[-1]) == "done"
    assert loops and loops[0] is not caller_loop


def test_prompt_coroutine_can_be_created_before_the_loop(faux: pi_agent.FauxProvider) -> None:
    faux.push("ok")
    agent = pi_agent.Agent(faux.model)
    coroutine = agent.prompt("hi")  # no running loop yet: nothing starts until awaited
    assert not agent.is_streaming
    asyncio.run(coroutine)
    assert text_of(agent.messages[-1]) == "ok"


def test_continue_after_an_error_and_cannot_continue(faux: pi_agent.FauxProvider) -> None:
    agent = pi_agent.Agent(faux.model)
    with pytest.raises(pi_agent.CannotContinueError, match="No messages to continue from"):
        agent.continue_sync()

    faux.push({"content": [faux_text("partial")], "stopReason": "error", "errorMessage": "boom"})
    agent.prompt_sync("hi")
    assert agent.error_message == "boom"
    assert agent.messages[-1]["stopReason"] == "error"
    with pytest.raises(pi_agent.CannotContinueError, match="Cannot continue from message role"):
        agent.continue_sync()

    agent.messages = agent.messages[:-1]  # drop the failed answer and retry
    faux.push("recovered")
    asyncio.run(agent.continue_())
    assert text_of(agent.messages[-1]) == "recovered"
    assert agent.error_message is None


def test_follow_up_and_steer_queue_messages(faux: pi_agent.FauxProvider) -> None:
    faux.set_responses(["first answer", "follow-up answer"])
    agent = pi_agent.Agent(faux.model)
    agent.follow_up("and then?")
    assert agent.has_queued_messages
    agent.prompt_sync("start")
    assert [text_of(m) for m in agent.messages] == [
        "start",
        "first answer",
        "and then?",
        "follow-up answer",
    ]
    agent.steer({"role": "user", "content": "steered", "timestamp": 1})
    agent.clear_all_queues()
    assert not agent.has_queued_messages


def test_state_accessors(faux: pi_agent.FauxProvider) -> None:
    agent = pi_agent.Agent(
        faux.model,
        system_prompt="one",
        messages=[{"role": "user", "content": "earlier", "timestamp": 1}],
        thinking_level="low",
    )
    assert agent.system_prompt == "one"
    agent.system_prompt = "two"
    assert agent.system_prompt == "two"
    assert agent.model == faux.model
    agent.model = faux.model.to_dict()
    assert agent.model.id == "faux-1"
    assert agent.thinking_level == "low"
    agent.thinking_level = None
    assert agent.thinking_level == "off"
    assert agent.messages == [{"role": "user", "content": "earlier", "timestamp": 1}]
    agent.append_message({"role": "notification", "text": "custom entries round-trip"})
    assert agent.messages[-1] == {"role": "notification", "text": "custom entries round-trip"}
    assert agent.streaming_message is None and agent.pending_tool_calls == []

    def echo(text: str) -> str:
        return text

    agent.tools = [echo]
    assert [tool.name for tool in agent.tools] == ["echo"]
    assert agent.remove_tool("echo") is True
    assert agent.remove_tool("echo") is False
    assert agent.tools == [] and agent.snapshot()["toolNames"] == []
    agent.reset()
    assert agent.messages == []
    with pytest.raises(ValueError, match="invalid messages"):
        agent.messages = [{"text": "an entry without a role"}]
    with pytest.raises(ValueError, match="tool_execution"):
        pi_agent.Agent(faux.model, tool_execution="sometimes")


def test_no_model_fails_as_a_message(faux: pi_agent.FauxProvider) -> None:
    agent = pi_agent.Agent()
    agent.prompt_sync("hi")
    last = agent.messages[-1]
    assert last["stopReason"] == "error"
    assert agent.error_message == last["errorMessage"]
