"""The session's effects as Temporal activities, run by the worker: a model call (streamed,
heartbeating, aborted on cancellation with its partial message kept), one tool call (core's
tool execution through ``pi_agent.execute_tool_calls_sync``, with the tool-call hooks and the
watchdog), ``should_stop_after_turn``, the worker's description, and event delivery.

The agent's hooks are user code, so they run here, on the worker, never in the workflow:
``transform_context``, ``convert_to_llm`` and ``get_api_key`` in the model call,
``before_tool_call`` / ``after_tool_call`` in the tool call, ``should_stop_after_turn`` in its
own activity. Secrets (``get_api_key``, the worker's ``model_options``) are resolved here and
never enter an activity's input or result.

Transcripts travel by reference: a step's input names a transcript version in the worker's
``SessionStore`` plus the messages added since, and the messages a step returns are slim (their
large blocks are in the store). A retried step starts from scratch."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

import pi_agent

from ._config import (
    CALL_MODEL,
    DESCRIBE_WORKER,
    PUBLISH_EVENTS,
    RUN_TOOL,
    SHOULD_STOP,
    TOOL_ABORTED,
    StepPolicy,
    ToolSpec,
    WorkerInfo,
    failed_message,
)
from ._store import SessionStore

EventCallback = Callable[[str, Dict[str, Any]], None]
"""A worker-side subscriber: ``on_event(session_id, event)``."""

MODEL_ERROR = "PiModelError"
"""The ``ApplicationError`` type of a model call that ended with ``stopReason`` error; its
first detail is the assistant message."""


@dataclass
class DurableTool:
    """A ``pi_agent.Tool`` (or a plain function) registered on a worker, with how its calls run
    as activities. ``retryable=False`` makes a call run at most once: a call lost with its worker
    then ends with an error result instead of running again (tools are at-least-once
    otherwise)."""

    tool: Any
    retryable: bool = True
    policy: StepPolicy = field(default_factory=StepPolicy)

    def __post_init__(self) -> None:
        if not isinstance(self.tool, pi_agent.Tool):
            self.tool = pi_agent.Tool.from_function(self.tool)

    @property
    def name(self) -> str:
        """The tool's name."""
        return str(self.tool.name)

    def spec(self) -> ToolSpec:
        """The tool as the workflow records it."""
        policy = self.policy
        if not self.retryable:
            policy = StepPolicy(**{**policy.__dict__, "maximum_attempts": 1})
        return ToolSpec(
            definition={
                "name": self.tool.name,
                "description": self.tool.description,
                "parameters": self.tool.parameters,
            },
            retryable=self.retryable,
            execution_mode=self.tool.execution_mode,
            policy=policy,
        )


HEARTBEAT_INTERVAL = 0.5
"""Seconds between two heartbeats of a running step: the worker sends them to the server at
most once a second (``create_worker``), and a cancellation (an abort) arrives with the answer
to one, so an abort reaches a running step within about a second."""

FLUSH_INTERVAL = 0.05
"""Seconds a streamed event may wait to be appended with the next ones (one write for all)."""

HOOKS = (
    "before_tool_call",
    "after_tool_call",
    "should_stop_after_turn",
    "transform_context",
    "convert_to_llm",
    "get_api_key",
)


async def _heartbeat_forever() -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(HEARTBEAT_INTERVAL)


def _cancelled_by_the_workflow() -> bool:
    """Whether the running activity's cancellation is the workflow's request (an abort). A step
    cut short by its worker shutting down, or by the activity being paused or reset, is not
    one: it must fail, so that the step is retried (on another worker) instead of recorded as
    aborted."""
    details = activity.cancellation_details() if hasattr(activity, "cancellation_details") else None
    if details is not None:
        # `paused` and `reset` came in later versions than the details themselves.
        other = ("worker_shutdown", "paused", "reset")
        return bool(details.cancel_requested) and not any(getattr(details, name, False) for name in other)
    return not activity.is_worker_shutdown()  # temporalio before 1.12 gives no details


def _was_aborted(result: Dict[str, Any]) -> bool:
    """Whether a one-call `execute_tool_calls_sync` result is core's aborted result."""
    message = result["outcomes"][0]["message"]
    content = message.get("content") or []
    return bool(message.get("isError")) and [block.get("text") for block in content] == [TOOL_ABORTED]


T = TypeVar("T")


async def _to_the_end(work: Awaitable[T]) -> T:
    """Awaits `work` to its end: a cancellation of the awaiting activity meanwhile does not cut
    it short (the step's outcome is in; only recording it is left)."""
    task = asyncio.ensure_future(work)
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                return task.result()


def _takes_signal(function: Callable[..., Any]) -> bool:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


class _HookFailed(Exception):
    pass


class _EventBatches:
    """A step's events, appended to the session's log in batches every FLUSH_INTERVAL (one
    store write for all), in order: live while the step runs. `add` may be called from any
    thread; `close` writes what is left (call it once the step's last event was added). A
    batch whose write fails goes back in front and is written with the next one; `close`
    raises if what is left still cannot be written (the activity fails and is retried, the
    batches keyed as before), so no event is dropped."""

    def __init__(
        self,
        deliver: Callable[[str, int, List[Dict[str, Any]]], Awaitable[None]],
        origin: str,
        attempt: int,
        slim: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None,
    ) -> None:
        self._deliver = deliver
        self._origin = origin
        self._attempt = attempt
        self._slim = slim
        self._lock = threading.Lock()
        self._pending: List[Dict[str, Any]] = []
        self._batches = 0
        self._stop = asyncio.Event()
        self._task = asyncio.ensure_future(self._flush_forever())

    def add(self, event: Dict[str, Any]) -> None:
        with self._lock:
            self._pending.append(event)

    async def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            written = batch
            slim = self._slim
            if slim is not None:  # may write blobs to the store: in a thread
                written = await asyncio.to_thread(lambda: [slim(event) for event in batch])
            await self._deliver(f"{self._origin}:{self._batches}", self._attempt, written)
        except BaseException:
            with self._lock:  # back in front, in order, for the next write
                self._pending[:0] = batch
            raise
        self._batches += 1

    async def _flush_forever(self) -> None:
        # Never cancelled mid-write (a write cut short would race the next one): it stops when
        # asked, after writing what is left.
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), FLUSH_INTERVAL)
            except asyncio.TimeoutError:
                pass
            try:
                await self._flush()
            except Exception:  # noqa: BLE001 - the batch is back in front: tried again next time
                continue

    async def close(self) -> None:
        """Writes what is left and stops (at once if already stopped); raises when what is
        left cannot be written."""
        self._stop.set()
        if not self._task.done():
            await asyncio.shield(self._task)
        if self._pending:
            # The last write failed (or the task ended early): once more, its error raised.
            await self._flush()


class SessionActivities:
    """The activities of one worker: its tools (by name), hooks, secrets, store and event
    subscriber."""

    def __init__(
        self,
        tools: Sequence[Any] = (),
        on_event: Optional[EventCallback] = None,
        tool_threads: int = 32,
        *,
        store: Optional[SessionStore] = None,
        model_options: Optional[Mapping[str, Any]] = None,
        hooks: Optional[Mapping[str, Optional[Callable[..., Any]]]] = None,
    ) -> None:
        durable = [tool if isinstance(tool, DurableTool) else DurableTool(tool) for tool in tools]
        self.tools: Dict[str, DurableTool] = {tool.name: tool for tool in durable}
        self.on_event = on_event
        self.store = store if store is not None else SessionStore()
        self.model_options: Dict[str, Any] = dict(model_options or {})
        self.hooks: Dict[str, Callable[..., Any]] = {name: hook for name, hook in (hooks or {}).items() if hook is not None}
        unknown = sorted(set(self.hooks) - set(HOOKS))
        if unknown:
            raise ValueError(f"unknown hooks {unknown}; the hooks are {list(HOOKS)}")
        # Sync tool functions and sync hooks block a thread of this pool while the step
        # heartbeats.
        self._pool = concurrent.futures.ThreadPoolExecutor(tool_threads, thread_name_prefix="pi-tool")

    def activities(self) -> List[Callable[..., Any]]:
        """The activity functions to give the Temporal worker."""
        return [self.describe_worker, self.call_model, self.run_tool, self.should_stop_after_turn, self.publish_events]

    def close(self) -> None:
        """Stops the tool thread pool (after the worker stopped)."""
        self._pool.shutdown(wait=False)

    async def _deliver(self, session: str, origin: str, attempt: int, events: List[Dict[str, Any]]) -> None:
        """Appends ``events`` to the session's log in the store (in a thread: another process
        may hold the write lock), then hands them to the subscriber."""
        await asyncio.to_thread(self.store.append_events, session, origin, attempt, events)
        if self.on_event is not None:
            for event in events:
                try:
                    self.on_event(session, event)
                except Exception:  # a subscriber's bug must not fail the step
                    activity.logger.exception("pi_agent.temporal: the event subscriber raised")

    def _event_batches(
        self, session: str, origin: str, attempt: int, slim: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None
    ) -> _EventBatches:
        async def deliver(batch_origin: str, batch_attempt: int, events: List[Dict[str, Any]]) -> None:
            await self._deliver(session, batch_origin, batch_attempt, events)

        return _EventBatches(deliver, origin, attempt, slim)

    async def _call_hook(self, name: str, argument: Any, signal: pi_agent.Signal) -> Any:
        hook = self.hooks[name]
        args = (argument, signal) if _takes_signal(hook) else (argument,)
        try:
            if inspect.iscoroutinefunction(hook):
                return await hook(*args)
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(self._pool, lambda: hook(*args))
            if inspect.isawaitable(value):
                value = await value
            return value
        except Exception as error:
            raise _HookFailed(f"{name} raised {type(error).__name__}: {error}") from error

    @activity.defn(name=DESCRIBE_WORKER)
    async def describe_worker(self, names: Optional[List[str]]) -> WorkerInfo:
        """The specs of the named tools (all when ``names`` is None), in the given order, and
        the names of the worker's hooks; ``ApplicationError`` (not retried) for a tool name
        this worker does not have."""
        hooks = sorted(self.hooks)
        if names is None:
            return WorkerInfo(tools=[tool.spec() for tool in self.tools.values()], hooks=hooks)
        missing = [name for name in names if name not in self.tools]
        if missing:
            raise ApplicationError(f"unknown tools on this worker: {missing}", non_retryable=True)
        return WorkerInfo(tools=[self.tools[name].spec() for name in names], hooks=hooks)

    async def _context(self, request: Dict[str, Any], signal: pi_agent.Signal) -> Dict[str, Any]:
        """The model's context: the stored transcript version, expanded, through the hooks."""
        messages: Any = await asyncio.to_thread(self._transcript, request)
        if "transform_context" in self.hooks:
            messages = await self._call_hook("transform_context", messages, signal)
            if not isinstance(messages, list):
                raise _HookFailed("transform_context returned something that is not a list of messages")
        if "convert_to_llm" in self.hooks:
            messages = await self._call_hook("convert_to_llm", messages, signal)
            if not isinstance(messages, list):
                raise _HookFailed("convert_to_llm returned something that is not a list of messages")
        else:
            messages = pi_agent.default_convert_to_llm(messages)
        return {"systemPrompt": request["systemPrompt"], "messages": messages, "tools": request["tools"]}

    def _transcript(self, request: Dict[str, Any]) -> List[Dict[str, Any]]:
        store = self.store
        store.save_version(request["version"], request["parent"], request["delta"])
        slim = store.load_version(request["parent"]) + list(request["delta"])
        return [store.expand(message) for message in slim]

    async def _options(self, request: Dict[str, Any], provider: str, signal: pi_agent.Signal) -> Dict[str, Any]:
        options: Dict[str, Any] = {**request["options"], **self.model_options}
        reasoning = request.get("reasoning")
        if reasoning and reasoning != "off":
            options["reasoning"] = reasoning
        if "get_api_key" in self.hooks:
            key = await self._call_hook("get_api_key", provider, signal)
            if key:
                options["api_key"] = key
        return options

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """Streams one model response (``stream_simple``) on the stored transcript version
        ``request["parent"]`` plus ``request["delta"]``, appending ``message_start`` and each
        ``message_update`` to the session's events (with this attempt's number) and
        heartbeating. Returns ``{"message", "started"}`` (the slim assistant message;
        ``started``: ``message_start`` was appended), or raises ``PiModelError`` (retryable)
        carrying both when it ended with an error. Cancelling the activity (an abort) cancels
        the HTTP request and returns the partial message (``stopReason`` aborted), as an
        in-process agent keeps it."""
        info = activity.info()
        session = str(request["session"])
        origin = f"{info.workflow_run_id}:{info.activity_id}:{info.attempt}"
        model_dict = request["model"]
        model = pi_agent.Model.from_dict(model_dict)
        signal = pi_agent.Signal()
        heartbeat = asyncio.ensure_future(_heartbeat_forever())
        batches = self._event_batches(session, origin, info.attempt)
        deliver = batches.add
        try:
            try:
                context = await self._context(request, signal)
                options = await self._options(request, str(model_dict["provider"]), signal)
            except _HookFailed as failure:
                return {"message": failed_message(model_dict, str(failure)), "started": False}
            message: Optional[Dict[str, Any]] = None
            started = False
            events = pi_agent.stream_simple(model, context, signal=signal, **options)
            with events:
                try:
                    async for event in events:
                        kind = event.get("type")
                        # As the agent loop: `start` is message_start, the end is the
                        # workflow's message_end; the rest are message_updates.
                        if kind == "start":
                            partial: Any = event.get("partial") or {}
                            deliver({"type": "message_start", "message": self.store.slim(dict(partial))})
                            started = True
                        elif kind not in ("done", "error"):
                            update = {key: value for key, value in event.items() if key != "partial"}
                            deliver({"type": "message_update", "assistantMessageEvent": update})
                    message = dict(await events.result())
                except asyncio.CancelledError:
                    # An abort: stop the request, keep what was streamed.
                    signal.abort()
                    message = dict(await asyncio.shield(events.result()))
                    if not _cancelled_by_the_workflow():
                        raise
            # The answer is in. Writing its last events and slimming it heartbeat on (a store
            # write may wait for another process's lock) and are not cut short by a cancellation
            # that comes meanwhile: the workflow gets this answer.
            await _to_the_end(batches.close())
            slim = await _to_the_end(asyncio.to_thread(self.store.slim, message))
        finally:
            heartbeat.cancel()
            await batches.close()  # the call failed or was cut: what was streamed is written
        if message.get("stopReason") == "error":
            raise ApplicationError(
                str(message.get("errorMessage") or "model call failed"), slim, started, type=MODEL_ERROR
            )
        return {"message": slim, "started": started}

    @activity.defn(name=RUN_TOOL)
    async def run_tool(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """Runs one tool call (``request["action"]``, an ``execute_tools`` action with one call,
        slim) as the agent does, with the worker's ``before_tool_call`` / ``after_tool_call``
        and the session's tool watchdog; returns its outcome (slim). Its ``tool_execution_*``
        events reach the session's events as they happen (with this attempt's number), a
        tool's updates while it still runs. Heartbeats while the tool runs; cancelling the activity (an abort) aborts the call's signal — the tool sees
        ``ctx.aborted`` and the outcome is core's aborted result, as in an agent — unless the
        call ended first: then its real outcome is returned."""
        info = activity.info()
        session = str(request["session"])
        store = self.store
        action = await asyncio.to_thread(store.expand_value, request["action"])
        # Only the session's tools (a request from an older workflow names none: all of them).
        allowed = request.get("tools")
        tools = [
            tool.tool for name, tool in self.tools.items() if allowed is None or name in allowed
        ]
        signal = pi_agent.Signal()
        timeout = request.get("toolTimeoutMs")
        # The call's events (its start, its updates) reach the session's log while it runs.
        origin = f"{info.workflow_run_id}:{info.activity_id}:{info.attempt}"
        heartbeat = asyncio.ensure_future(_heartbeat_forever())
        batches = self._event_batches(session, origin, info.attempt, self._slim_tool_event)
        try:
            running = asyncio.get_running_loop().run_in_executor(
                self._pool,
                lambda: pi_agent.execute_tool_calls_sync(
                    action,
                    tools,
                    signal=signal,
                    before_tool_call=self.hooks.get("before_tool_call"),
                    after_tool_call=self.hooks.get("after_tool_call"),
                    tool_timeout_ms=timeout,
                    on_event=batches.add,
                ),
            )
            try:
                result = await asyncio.shield(running)
            except asyncio.CancelledError:
                signal.abort()
                result = await running
                if not _cancelled_by_the_workflow() and _was_aborted(result):
                    # The attempt fails: the tool runs again (or fails, if not retryable). A
                    # call that ended before the abort keeps its real outcome.
                    raise

            async def record() -> Dict[str, Any]:
                await batches.close()
                outcome = dict(result["outcomes"][0])
                outcome["message"] = await asyncio.to_thread(store.slim, outcome["message"])
                return outcome

            # Still heartbeating (a store write may wait for another process's lock), and not
            # cut short by a cancellation that comes meanwhile: the call has ended, and its real
            # outcome is what the workflow gets.
            return await _to_the_end(record())
        finally:
            heartbeat.cancel()
            await batches.close()  # the attempt failed or was cut: what happened is written

    def _slim_tool_event(self, event: Dict[str, Any]) -> Dict[str, Any]:
        if "args" in event:
            event = {**event, "args": self.store.slim_json(event["args"])}
        result = event.get("result")
        if isinstance(result, dict) and isinstance(result.get("content"), list):
            slim = self.store.slim({"role": "toolResult", "content": result["content"]})
            event = {**event, "result": {**result, "content": slim["content"]}}
        return event

    @activity.defn(name=SHOULD_STOP)
    async def should_stop_after_turn(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """The worker's ``should_stop_after_turn`` on the turn's context (expanded):
        ``{"stop": bool}``, or ``{"error": text}`` if it raised (the run then ends with that
        error, as in an agent)."""
        context = await asyncio.to_thread(self.store.expand_value, request["context"])
        signal = pi_agent.Signal()
        heartbeat = asyncio.ensure_future(_heartbeat_forever())
        try:
            return {"stop": bool(await self._call_hook("should_stop_after_turn", context, signal))}
        except _HookFailed as failure:
            return {"error": str(failure)}
        except asyncio.CancelledError:
            signal.abort()  # an abort, or the worker going away: the hook's signal fires
            raise
        finally:
            heartbeat.cancel()

    @activity.defn(name=PUBLISH_EVENTS)
    async def publish_events(self, request: Dict[str, Any]) -> None:
        """Appends a step's events (the workflow's: run, turn and message boundaries with the
        final messages, slim) to the session's log and hands them to the subscriber; a
        re-run of the same step (same ``origin``) adds nothing to the log."""
        await self._deliver(str(request["session"]), str(request["origin"]), 1, list(request["events"]))
