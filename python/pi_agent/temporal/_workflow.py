"""The session workflow: drives core's ``AgentStepper`` (pure, no clock or I/O) for one agent
session and performs each step's effect as an activity, so a replay feeds the recorded results
back to the stepper and never calls a model or a tool again. It holds slim messages only (their
large blocks live in the worker's store) and gives each model call a transcript version: the
last stored one and the messages added since.

A session is a conversation: prompts (update ``prompt`` or signal ``send_prompt``) start runs one
after another; ``steer`` / ``follow_up`` feed the running loop's queues; ``abort`` cancels the
running step and ends the run; queries return the transcript and the status. Between runs, once
the history is long, the session continues as new with its transcript (also between two steps
of a run that no ``prompt`` update waits for)."""

from __future__ import annotations

import asyncio
from collections import deque
from datetime import timedelta
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityCancellationType
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    import pi_agent

    from ._config import (
        CALL_MODEL,
        DESCRIBE_WORKER,
        PUBLISH_EVENTS,
        RUN_TOOL,
        SHOULD_STOP,
        TOOL_ABORTED,
        WORKFLOW_NAME,
        Carried,
        CarriedRun,
        SessionInput,
        SessionResult,
        StepPolicy,
        ToolSpec,
        WorkerInfo,
        failed_message,
    )

MODEL_ABORTED = "Request was aborted"  # core's ABORTED
#: `workflow.patched` ids of changes that a history recorded before them must replay without.
CANCELLABLE_SHOULD_STOP = "pi-agent-cancellable-should-stop"


def _retry(policy: StepPolicy) -> RetryPolicy:
    return RetryPolicy(
        initial_interval=timedelta(seconds=policy.initial_interval),
        backoff_coefficient=policy.backoff_coefficient,
        maximum_interval=timedelta(seconds=policy.maximum_interval),
        maximum_attempts=policy.maximum_attempts,
        non_retryable_error_types=[],
    )


def _timeouts(policy: StepPolicy) -> Dict[str, Any]:
    return {
        "start_to_close_timeout": timedelta(seconds=policy.start_to_close_timeout),
        "heartbeat_timeout": None if policy.heartbeat_timeout is None else timedelta(seconds=policy.heartbeat_timeout),
        "retry_policy": _retry(policy),
        # An abort waits for the step's own answer: the partial message, or the tool's real
        # outcome when it ended first.
        "cancellation_type": ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    }


def _dicts(messages: Any) -> List[Dict[str, Any]]:
    """The stepper's messages as plain dicts (they are, typed as pi's message shapes)."""
    return [dict(message) for message in messages]


def _failure_text(error: BaseException) -> str:
    """The innermost message of an activity failure (the tool's or model's own words)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return str(error) or type(error).__name__


@workflow.defn(name=WORKFLOW_NAME)
class Session:
    """One agent session (see the module docstring)."""

    @workflow.init
    def __init__(self, config: SessionInput) -> None:
        # The state comes from the input here, not in `run`: the signals and updates of the
        # first workflow task (a prompt sent with the start, one sent across continue-as-new)
        # are handled before `run` begins, and must find it (their queue order, their run
        # numbers) rather than have `run` overwrite it.
        carried = config.carried or Carried()
        self._input = config
        self._transcript: List[Dict[str, Any]] = list(config.messages)
        if carried.run is not None and not config.messages:
            # A run carried across continue-as-new brings the transcript in its stepper only
            # (see `_continue_as_new`): the run's messages so far, as the query shows mid-run.
            self._transcript = _dicts(pi_agent.AgentStepper.from_dict(carried.run.stepper).messages)
        self._prompts: Deque[Dict[str, Any]] = deque()
        self._steering: Deque[Dict[str, Any]] = deque(carried.steering)
        self._follow_ups: Deque[Dict[str, Any]] = deque(carried.follow_ups)
        self._stepper: Optional[pi_agent.AgentStepper] = None
        self._action = "idle"
        self._running: List[asyncio.Task[Any]] = []
        self._aborted = False
        self._closing = carried.closing
        self._runs = carried.runs
        self._generation = carried.generation
        # The outcomes of the runs a `prompt` update waits for, by run number (a run queued by
        # `send_prompt` has nobody to hand its outcome to: keeping it would hold every such
        # run's messages until continue-as-new).
        self._awaited: Set[int] = set()
        self._finished_runs: Dict[int, Dict[str, Any]] = {}
        self._last_error: Optional[str] = None
        self._specs: Optional[List[ToolSpec]] = carried.tool_specs or None
        self._hooks: List[str] = list(carried.hooks)
        self._thinking: Optional[str] = carried.thinking_level if config.carried else config.thinking_level
        self._base: Optional[str] = carried.base_version  # the stored transcript version ...
        self._stored = carried.stored  # ... holds this many of the stepper's messages
        self._versions = 0
        self._published = 0
        for prompt in config.prompts:
            self._prompts.append(self._user_message(prompt))

    # -- messages -----------------------------------------------------------------------------

    def _user_message(self, prompt: Any) -> Dict[str, Any]:
        if isinstance(prompt, str):
            return {
                "role": "user",
                "content": [{"type": "text", "text": prompt}],
                "timestamp": int(workflow.now().timestamp() * 1000),
            }
        return dict(prompt)

    # -- handlers -----------------------------------------------------------------------------

    @workflow.update
    async def prompt(self, prompt: Any) -> Dict[str, Any]:
        """Queues a prompt (a text or a message dict) and waits for its run: returns
        ``{"newMessages", "error"}`` (``error``: the run's ``errorMessage``, or None)."""
        ticket = self._runs + len(self._prompts) + 1
        self._prompts.append(self._user_message(prompt))
        self._awaited.add(ticket)
        try:
            await workflow.wait_condition(lambda: ticket in self._finished_runs)
            return self._finished_runs.pop(ticket)
        finally:
            self._awaited.discard(ticket)

    @workflow.signal
    def send_prompt(self, prompt: Any) -> None:
        """Queues a prompt without waiting for it."""
        self._prompts.append(self._user_message(prompt))

    @workflow.signal
    def steer(self, message: Any) -> None:
        """Queues a steering message for the running loop (delivered before its next model
        call; when idle, before the next run's first call)."""
        self._steering.append(self._user_message(message))

    @workflow.signal
    def follow_up(self, message: Any) -> None:
        """Queues a follow-up message (delivered when the running loop would stop)."""
        self._follow_ups.append(self._user_message(message))

    @workflow.signal
    def abort(self) -> None:
        """Aborts the running run: its running step is cancelled (the model call ends
        ``aborted``, running tools get pi's aborted result) and the run ends. Idle: nothing."""
        if self._stepper is None:
            return
        self._aborted = True
        self._stepper.abort()
        for task in self._running:
            task.cancel()

    @workflow.signal
    def set_thinking_level(self, level: Optional[str]) -> None:
        """Sets the thinking level of the next model calls (``"off"`` ... ``"xhigh"``)."""
        self._thinking = level

    @workflow.signal
    def close(self) -> None:
        """Ends the session once idle (queued prompts run first)."""
        self._closing = True

    @workflow.query
    def transcript(self) -> List[Dict[str, Any]]:
        """The messages so far, the running run's included, slim (large blocks are references
        into the worker's store: ``SessionHandle.transcript`` expands them)."""
        if self._stepper is not None:
            return _dicts(self._stepper.messages)
        return list(self._transcript)

    @workflow.query
    def status(self) -> Dict[str, Any]:
        """``{"state": "idle" | "running" | "closed", "action", "runs", "queued", "lastError",
        "generation", "thinkingLevel"}``; ``action`` is the step being performed
        (``call_model``, ...)."""
        state = "closed" if self._action == "closed" else ("running" if self._stepper is not None else "idle")
        return {
            "state": state,
            "action": self._action,
            "runs": self._runs,
            "queued": {"prompts": len(self._prompts), "steering": len(self._steering), "followUps": len(self._follow_ups)},
            "lastError": self._last_error,
            "generation": self._generation,
            "thinkingLevel": self._thinking,
        }

    # -- the session --------------------------------------------------------------------------

    @workflow.run
    async def run(self, config: SessionInput) -> SessionResult:
        """Runs the session until it is closed (or idle, with ``close_when_idle``)."""
        carried = config.carried or Carried()
        if carried.run is not None:
            await self._run(None, carried.run.number, carried.run)
        while True:
            await workflow.wait_condition(
                lambda: bool(self._prompts) or self._closing or config.close_when_idle or self._should_continue_as_new()
            )
            if self._prompts:
                prompt = self._prompts.popleft()
                self._runs += 1  # with the pop: a `prompt` update counts its ticket from both
                await self._run(prompt, self._runs)
                continue
            if self._closing or config.close_when_idle:
                await workflow.wait_condition(workflow.all_handlers_finished)
                self._action = "closed"
                return SessionResult(messages=self._transcript, runs=self._runs, generation=self._generation)
            await workflow.wait_condition(workflow.all_handlers_finished)
            if self._prompts:
                continue
            self._continue_as_new(None)

    def _continue_as_new(self, run: Optional[CarriedRun]) -> None:
        assert self._input is not None
        workflow.continue_as_new(
            SessionInput(
                **{
                    **self._input.__dict__,
                    # A carried run's stepper holds the whole transcript: not twice in the input.
                    "messages": [] if run is not None else self._transcript,
                    "prompts": list(self._prompts),  # queued while a run was carried
                    "carried": Carried(
                        tool_specs=self._specs or [],
                        hooks=self._hooks,
                        steering=list(self._steering),
                        follow_ups=list(self._follow_ups),
                        runs=self._runs,
                        generation=self._generation + 1,
                        thinking_level=self._thinking,
                        base_version=self._base,
                        stored=self._stored,
                        closing=self._closing,
                        run=run,
                    ),
                }
            )
        )

    def _should_continue_as_new(self) -> bool:
        assert self._input is not None
        info = workflow.info()
        limit = self._input.continue_as_new_after
        if limit > 0:
            return info.get_current_history_length() >= limit
        return info.is_continue_as_new_suggested()

    async def _tool_specs(self) -> List[ToolSpec]:
        assert self._input is not None
        if self._specs is None:
            info: WorkerInfo = await workflow.execute_activity(
                DESCRIBE_WORKER,
                self._input.tools,
                result_type=WorkerInfo,
                start_to_close_timeout=timedelta(seconds=60),
            )
            self._specs = info.tools
            self._hooks = info.hooks
        return self._specs

    def _take(self, queue: Deque[Dict[str, Any]], mode: str) -> List[Dict[str, Any]]:
        if self._aborted:
            return []
        if mode == "all":
            taken = list(queue)
            queue.clear()
            return taken
        return [queue.popleft()] if queue else []

    async def _publish(self, events: List[Dict[str, Any]]) -> None:
        assert self._input is not None
        if self._input.publish_events and events:
            self._published += 1
            info = workflow.info()
            await workflow.execute_local_activity(
                PUBLISH_EVENTS,
                {"session": info.workflow_id, "origin": f"{info.run_id}:step:{self._published}", "events": events},
                start_to_close_timeout=timedelta(seconds=30),
            )

    async def _run(self, prompt: Optional[Dict[str, Any]], run_number: int, carried: Optional[CarriedRun] = None) -> None:
        assert self._input is not None
        config = self._input
        specs = await self._tool_specs()
        tool_modes = {spec.definition["name"]: spec.execution_mode for spec in specs if spec.execution_mode}
        if carried is not None:
            stepper = pi_agent.AgentStepper.from_dict(carried.stepper)
            step: Dict[str, Any] = dict(carried.step)
        else:
            assert prompt is not None
            stepper, first = pi_agent.AgentStepper.start(
                system_prompt=config.system_prompt,
                messages=self._transcript,
                prompts=[prompt],
                config={
                    "toolExecution": config.tool_execution,
                    "toolModes": tool_modes,
                    "shouldStopAfterTurn": "should_stop_after_turn" in self._hooks,
                },
            )
            step = dict(first)
        self._stepper = stepper
        self._aborted = stepper.is_aborted
        while True:
            action = step["action"]
            kind = action["type"]
            if kind != "finished" and self._should_continue_as_new() and workflow.all_handlers_finished():
                # Mid-run: the history is long and no update waits for this run.
                self._continue_as_new(CarriedRun(stepper=stepper.to_dict(), step=step, number=run_number))
            await self._publish(step["events"])
            self._action = kind
            if kind == "finished":
                break
            if kind == "poll_steering":
                answer: Dict[str, Any] = {"type": "steering", "messages": self._take(self._steering, config.steering_mode)}
            elif kind == "poll_follow_up":
                answer = {"type": "follow_up", "messages": self._take(self._follow_ups, config.follow_up_mode)}
            elif kind == "call_model":
                message, started = await self._call_model(stepper, specs)
                answer = {"type": "model_result", "message": message, "startEmitted": started}
            elif kind == "execute_tools":
                answer = {"type": "tool_results", "outcomes": await self._run_tools(action, specs)}
            elif kind == "should_stop_after_turn":
                answer = await self._should_stop(action)
            else:
                raise ApplicationError(f"pi_agent.temporal: unknown step action {kind!r}", non_retryable=True)
            step = dict(stepper.resume(answer))
        new_messages = _dicts(stepper.new_messages)
        self._transcript = _dicts(stepper.messages)
        self._stepper = None
        self._action = "idle"
        last: Dict[str, Any] = new_messages[-1] if new_messages else {}
        error = last.get("errorMessage") if last.get("role") == "assistant" else None
        self._last_error = None if error is None else str(error)
        if run_number in self._awaited:
            self._finished_runs[run_number] = {"newMessages": new_messages, "error": self._last_error}

    async def _should_stop(self, action: Dict[str, Any]) -> Dict[str, Any]:
        if "should_stop_after_turn" not in self._hooks:
            return {"type": "should_stop", "stop": False}
        context = {key: action[key] for key in ("message", "toolResults", "newMessages")}
        request = {"session": workflow.info().workflow_id, "context": context}
        if not workflow.patched(CANCELLABLE_SHOULD_STOP):
            # Histories recorded before: the step as it was then (no heartbeat, no abort).
            answer = await workflow.execute_activity(
                SHOULD_STOP, request, result_type=dict, start_to_close_timeout=timedelta(seconds=600),
                heartbeat_timeout=None, retry_policy=RetryPolicy(maximum_attempts=3),
            )
            if "error" in answer:
                return {"type": "failed", "message": self._failed_model_message(str(answer["error"]), aborted=False)}
            return {"type": "should_stop", "stop": bool(answer["stop"])}
        if self._aborted:
            return {"type": "should_stop", "stop": True}
        try:
            # As the model step: heartbeats (a dead worker is noticed), and an abort cancels
            # it (the hook's signal fires).
            answer = await self._cancellable(
                workflow.execute_activity(SHOULD_STOP, request, result_type=dict, **_timeouts(self._input.model_policy))
            )
        except (ActivityError, CancelledError, asyncio.CancelledError) as error:
            if self._aborted:
                return {"type": "should_stop", "stop": True}
            return {"type": "failed", "message": self._failed_model_message(_failure_text(error), aborted=False)}
        if "error" in answer:
            return {"type": "failed", "message": self._failed_model_message(str(answer["error"]), aborted=False)}
        return {"type": "should_stop", "stop": bool(answer["stop"])}

    def _failed_model_message(self, text: str, aborted: bool) -> Dict[str, Any]:
        assert self._input is not None
        return failed_message(
            self._input.model,
            text,
            "aborted" if aborted else "error",
            int(workflow.now().timestamp() * 1000),
        )

    async def _cancellable(self, awaitable: Any) -> Any:
        task = asyncio.ensure_future(awaitable)
        self._running.append(task)
        try:
            return await task
        finally:
            self._running.remove(task)

    async def _call_model(self, stepper: pi_agent.AgentStepper, specs: List[ToolSpec]) -> Tuple[Dict[str, Any], bool]:
        """The model's answer and whether its ``message_start`` was published already."""
        assert self._input is not None
        config = self._input
        if self._aborted:
            return self._failed_model_message(MODEL_ABORTED, aborted=True), False
        messages = stepper.messages
        info = workflow.info()
        version = f"{info.workflow_id}/{info.run_id}/{self._versions}"
        self._versions += 1
        request = {
            "session": info.workflow_id,
            "model": config.model,
            "version": version,
            "parent": self._base,
            "delta": messages[self._stored:],
            "systemPrompt": stepper.system_prompt,
            "tools": [spec.definition for spec in specs],
            "options": config.model_options,
            "reasoning": self._thinking,
        }
        try:
            answer = await self._cancellable(
                workflow.execute_activity(CALL_MODEL, request, result_type=dict, **_timeouts(config.model_policy))
            )
            # The activity stored the version before it called the model.
            self._base, self._stored = version, len(messages)
            return dict(answer["message"]), bool(answer["started"])
        except (ActivityError, CancelledError, asyncio.CancelledError) as error:
            if self._aborted:
                return self._failed_model_message(MODEL_ABORTED, aborted=True), False
            cause = error.__cause__
            if isinstance(cause, ApplicationError) and cause.details:
                # pi's own failure message, after the last retry
                started = len(cause.details) > 1 and bool(cause.details[1])
                return dict(cause.details[0]), started
            return self._failed_model_message(_failure_text(error), aborted=False), False

    async def _run_tools(self, action: Dict[str, Any], specs: List[ToolSpec]) -> List[Dict[str, Any]]:
        by_name = {spec.definition["name"]: spec for spec in specs}
        calls = action["toolCalls"]
        if action["mode"] == "sequential":
            return [await self._run_tool(action, call, by_name.get(call["name"])) for call in calls]
        return list(await asyncio.gather(*(self._run_tool(action, call, by_name.get(call["name"])) for call in calls)))

    async def _run_tool(self, action: Dict[str, Any], call: Dict[str, Any], spec: Optional[ToolSpec]) -> Dict[str, Any]:
        if self._aborted:
            return self._tool_error(call, TOOL_ABORTED)
        assert self._input is not None
        policy = spec.policy if spec is not None else StepPolicy(maximum_attempts=1)
        request = {
            "session": workflow.info().workflow_id,
            "action": {**action, "toolCalls": [call], "mode": "sequential"},
            "toolTimeoutMs": self._input.tool_timeout_ms,
            # The session's tools: a call to another of the worker's is "not found", as in an
            # agent without that tool.
            "tools": [] if self._specs is None else [spec.definition["name"] for spec in self._specs],
        }
        try:
            outcome: Dict[str, Any] = await self._cancellable(
                workflow.execute_activity(RUN_TOOL, request, result_type=dict, **_timeouts(policy))
            )
            return outcome
        except (ActivityError, CancelledError, asyncio.CancelledError) as error:
            if self._aborted:
                return self._tool_error(call, TOOL_ABORTED)
            retried = "" if spec is None or spec.retryable else " (the tool is not retryable)"
            return self._tool_error(call, f"Tool call failed{retried}: {_failure_text(error)}")

    def _tool_error(self, call: Dict[str, Any], text: str) -> Dict[str, Any]:
        return {
            "message": {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": [{"type": "text", "text": text}],
                "isError": True,
                "timestamp": int(workflow.now().timestamp() * 1000),
            },
            "terminate": False,
        }
