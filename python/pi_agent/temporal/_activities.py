"""The session's effects as Temporal activities, run by the worker: a model call (streamed,
heartbeating, aborted on cancellation), one tool call (core's tool execution through
``pi_agent.execute_tool_calls_sync``), the tools' description, and event delivery.

Everything a step needs arrives in its input, and everything it produces is its result (or an
``ApplicationError`` carrying pi's failure message), so a retried step starts from scratch."""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from temporalio import activity
from temporalio.exceptions import ApplicationError

import pi_agent

from ._config import CALL_MODEL, DESCRIBE_TOOLS, PUBLISH_EVENTS, RUN_TOOL, StepPolicy, ToolSpec

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


def _heartbeat_interval() -> float:
    timeout = activity.info().heartbeat_timeout
    seconds = timeout.total_seconds() if timeout else 10.0
    return max(0.05, seconds / 4)


async def _heartbeat_forever(interval: float) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(interval)


class SessionActivities:
    """The activities of one worker: its tools (by name) and its event subscriber."""

    def __init__(
        self,
        tools: Sequence[Any] = (),
        on_event: Optional[EventCallback] = None,
        tool_threads: int = 32,
    ) -> None:
        durable = [tool if isinstance(tool, DurableTool) else DurableTool(tool) for tool in tools]
        self.tools: Dict[str, DurableTool] = {tool.name: tool for tool in durable}
        self.on_event = on_event
        # Sync tool functions block a thread of this pool while the activity heartbeats.
        self._pool = concurrent.futures.ThreadPoolExecutor(tool_threads, thread_name_prefix="pi-tool")

    def activities(self) -> List[Callable[..., Any]]:
        """The activity functions to give the Temporal worker."""
        return [self.describe_tools, self.call_model, self.run_tool, self.publish_events]

    def close(self) -> None:
        """Stops the tool thread pool (after the worker stopped)."""
        self._pool.shutdown(wait=False)

    def _deliver(self, session: str, event: Dict[str, Any]) -> None:
        if self.on_event is not None:
            try:
                self.on_event(session, event)
            except Exception:  # a subscriber's bug must not fail the step
                activity.logger.exception("pi_agent.temporal: the event subscriber raised")

    @activity.defn(name=DESCRIBE_TOOLS)
    async def describe_tools(self, names: Optional[List[str]]) -> List[ToolSpec]:
        """The specs of the named tools (all when ``names`` is None), in the given order;
        ``ApplicationError`` (not retried) for a name this worker does not have."""
        if names is None:
            return [tool.spec() for tool in self.tools.values()]
        missing = [name for name in names if name not in self.tools]
        if missing:
            raise ApplicationError(f"unknown tools on this worker: {missing}", non_retryable=True)
        return [self.tools[name].spec() for name in names]

    @activity.defn(name=CALL_MODEL)
    async def call_model(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """Streams one model response (``stream_simple``), delivering each event to the
        subscriber as ``message_update`` and heartbeating; returns the assistant message, or
        raises ``PiModelError`` (retryable) carrying it when it ended with an error. Cancelling
        the activity aborts the request."""
        session = str(request["session"])
        model = pi_agent.Model.from_dict(request["model"])
        context = {
            "systemPrompt": request["systemPrompt"],
            "messages": pi_agent.default_convert_to_llm(request["messages"]),
            "tools": request["tools"],
        }
        signal = pi_agent.Signal()
        heartbeat = asyncio.ensure_future(_heartbeat_forever(_heartbeat_interval()))
        try:
            events = pi_agent.stream_simple(model, context, signal=signal, **request["options"])
            with events:
                async for event in events:
                    self._deliver(session, {"type": "message_update", "assistantMessageEvent": event})
                message = await events.result()
        except asyncio.CancelledError:
            signal.abort()
            raise
        finally:
            heartbeat.cancel()
        if message.get("stopReason") == "error":
            raise ApplicationError(
                str(message.get("errorMessage") or "model call failed"),
                dict(message),
                type=MODEL_ERROR,
            )
        return dict(message)

    @activity.defn(name=RUN_TOOL)
    async def run_tool(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """Runs one tool call (``request["action"]``, an ``execute_tools`` action with one call)
        as the agent does; returns its outcome. Heartbeats while the tool runs; cancelling the
        activity aborts the call's signal (a sync tool sees ``ctx.aborted``)."""
        session = str(request["session"])
        action = request["action"]
        tools = [tool.tool for tool in self.tools.values()]
        signal = pi_agent.Signal()
        loop = asyncio.get_running_loop()
        running = loop.run_in_executor(
            self._pool, lambda: pi_agent.execute_tool_calls_sync(action, tools, signal=signal)
        )
        heartbeat = asyncio.ensure_future(_heartbeat_forever(_heartbeat_interval()))
        try:
            result = await asyncio.shield(running)
        except asyncio.CancelledError:
            signal.abort()
            raise
        finally:
            heartbeat.cancel()
        for event in result["events"]:
            self._deliver(session, event)
        return dict(result["outcomes"][0])

    @activity.defn(name=PUBLISH_EVENTS)
    async def publish_events(self, request: Dict[str, Any]) -> None:
        """Hands a step's events (the workflow's: run, turn and message boundaries with the
        final messages) to the subscriber."""
        session = str(request["session"])
        for event in request["events"]:
            self._deliver(session, event)
