"""The session workflow: drives core's ``AgentStepper`` (pure, no clock or I/O) for one agent
session and performs each step's effect as an activity, so a replay feeds the recorded results
back to the stepper and never calls a model or a tool again.

A session is a conversation: prompts (update ``prompt`` or signal ``send_prompt``) start runs one
after another; ``steer`` / ``follow_up`` feed the running loop's queues; ``abort`` cancels the
running step and ends the run; queries return the transcript and the status. Between runs, once
the history is long, the session continues as new with its transcript."""

from __future__ import annotations

import asyncio
from collections import deque
from datetime import timedelta
from typing import Any, Deque, Dict, List, Optional

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    import pi_agent

    from ._config import (
        CALL_MODEL,
        DESCRIBE_TOOLS,
        PUBLISH_EVENTS,
        RUN_TOOL,
        WORKFLOW_NAME,
        Carried,
        SessionInput,
        SessionResult,
        StepPolicy,
        ToolSpec,
    )

MODEL_ABORTED = "Request was aborted"  # core's ABORTED
TOOL_ABORTED = "Tool execution was aborted"  # core's TOOL_ABORTED


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
    }


def _failure_text(error: BaseException) -> str:
    """The innermost message of an activity failure (the tool's or model's own words)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return str(error) or type(error).__name__


@workflow.defn(name=WORKFLOW_NAME)
class Session:
    """One agent session (see the module docstring)."""

    def __init__(self) -> None:
        self._input: Optional[SessionInput] = None
        self._transcript: List[Dict[str, Any]] = []
        self._prompts: Deque[Dict[str, Any]] = deque()
        self._steering: Deque[Dict[str, Any]] = deque()
        self._follow_ups: Deque[Dict[str, Any]] = deque()
        self._stepper: Optional[pi_agent.AgentStepper] = None
        self._action = "idle"
        self._running: List[asyncio.Task[Any]] = []
        self._aborted = False
        self._closing = False
        self._runs = 0
        self._generation = 0
        self._finished_runs: Dict[int, Dict[str, Any]] = {}
        self._last_error: Optional[str] = None
        self._specs: Optional[List[ToolSpec]] = None

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
        await workflow.wait_condition(lambda: ticket in self._finished_runs)
        return self._finished_runs.pop(ticket)

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
    def close(self) -> None:
        """Ends the session once idle (queued prompts run first)."""
        self._closing = True

    @workflow.query
    def transcript(self) -> List[Dict[str, Any]]:
        """The messages so far, the running run's included."""
        if self._stepper is not None:
            return list(self._stepper.messages)
        return list(self._transcript)

    @workflow.query
    def status(self) -> Dict[str, Any]:
        """``{"state": "idle" | "running" | "closed", "action", "runs", "queued", "lastError",
        "generation"}``; ``action`` is the step being performed (``call_model``, ...)."""
        state = "closed" if self._action == "closed" else ("running" if self._stepper is not None else "idle")
        return {
            "state": state,
            "action": self._action,
            "runs": self._runs,
            "queued": {"prompts": len(self._prompts), "steering": len(self._steering), "followUps": len(self._follow_ups)},
            "lastError": self._last_error,
            "generation": self._generation,
        }

    # -- the session --------------------------------------------------------------------------

    @workflow.run
    async def run(self, config: SessionInput) -> SessionResult:
        """Runs the session until it is closed (or idle, with ``close_when_idle``)."""
        self._input = config
        self._transcript = list(config.messages)
        carried = config.carried or Carried()
        self._steering.extend(carried.steering)
        self._follow_ups.extend(carried.follow_ups)
        self._runs = carried.runs
        self._generation = carried.generation
        self._specs = carried.tool_specs or None
        for prompt in config.prompts:
            self._prompts.append(self._user_message(prompt))
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
            workflow.continue_as_new(
                SessionInput(
                    **{
                        **config.__dict__,
                        "messages": self._transcript,
                        "prompts": [],
                        "carried": Carried(
                            tool_specs=self._specs or [],
                            steering=list(self._steering),
                            follow_ups=list(self._follow_ups),
                            runs=self._runs,
                            generation=self._generation + 1,
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
            self._specs = await workflow.execute_activity(
                DESCRIBE_TOOLS,
                self._input.tools,
                result_type=List[ToolSpec],
                start_to_close_timeout=timedelta(seconds=60),
            )
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
            await workflow.execute_local_activity(
                PUBLISH_EVENTS,
                {"session": workflow.info().workflow_id, "events": events},
                start_to_close_timeout=timedelta(seconds=30),
            )

    async def _run(self, prompt: Dict[str, Any], run_number: int) -> None:
        assert self._input is not None
        config = self._input
        specs = await self._tool_specs()
        tool_modes = {spec.definition["name"]: spec.execution_mode for spec in specs if spec.execution_mode}
        stepper, step = pi_agent.AgentStepper.start(
            system_prompt=config.system_prompt,
            messages=self._transcript,
            prompts=[prompt],
            config={"toolExecution": config.tool_execution, "toolModes": tool_modes},
        )
        self._stepper = stepper
        self._aborted = False
        while True:
            await self._publish(step["events"])
            action = step["action"]
            kind = action["type"]
            self._action = kind
            if kind == "finished":
                break
            if kind == "poll_steering":
                answer: Dict[str, Any] = {"type": "steering", "messages": self._take(self._steering, config.steering_mode)}
            elif kind == "poll_follow_up":
                answer = {"type": "follow_up", "messages": self._take(self._follow_ups, config.follow_up_mode)}
            elif kind == "call_model":
                answer = {"type": "model_result", "message": await self._call_model(stepper, specs), "startEmitted": False}
            elif kind == "execute_tools":
                answer = {"type": "tool_results", "outcomes": await self._run_tools(action, specs)}
            elif kind == "should_stop_after_turn":
                answer = {"type": "should_stop", "stop": False}
            else:
                raise ApplicationError(f"pi_agent.temporal: unknown step action {kind!r}", non_retryable=True)
            step = stepper.resume(answer)
        new_messages = list(stepper.new_messages)
        self._transcript = list(stepper.messages)
        self._stepper = None
        self._action = "idle"
        last = new_messages[-1] if new_messages else {}
        self._last_error = last.get("errorMessage") if last.get("role") == "assistant" else None
        self._finished_runs[run_number] = {"newMessages": new_messages, "error": self._last_error}

    def _failed_model_message(self, text: str, aborted: bool) -> Dict[str, Any]:
        assert self._input is not None
        model = self._input.model
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        return {
            "role": "assistant",
            "content": [],
            "api": model["api"],
            "provider": model["provider"],
            "model": model["id"],
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": zero},
            "stopReason": "aborted" if aborted else "error",
            "errorMessage": text,
            "timestamp": int(workflow.now().timestamp() * 1000),
        }

    async def _cancellable(self, awaitable: Any) -> Any:
        task = asyncio.ensure_future(awaitable)
        self._running.append(task)
        try:
            return await task
        finally:
            self._running.remove(task)

    async def _call_model(self, stepper: pi_agent.AgentStepper, specs: List[ToolSpec]) -> Dict[str, Any]:
        assert self._input is not None
        config = self._input
        if self._aborted:
            return self._failed_model_message(MODEL_ABORTED, aborted=True)
        request = {
            "session": workflow.info().workflow_id,
            "model": config.model,
            "systemPrompt": stepper.system_prompt,
            "messages": stepper.messages,
            "tools": [spec.definition for spec in specs],
            "options": config.model_options,
        }
        try:
            return await self._cancellable(
                workflow.execute_activity(CALL_MODEL, request, result_type=dict, **_timeouts(config.model_policy))
            )
        except (ActivityError, CancelledError, asyncio.CancelledError) as error:
            if self._aborted:
                return self._failed_model_message(MODEL_ABORTED, aborted=True)
            cause = error.__cause__
            if isinstance(cause, ApplicationError) and cause.details:
                return dict(cause.details[0])  # pi's own failure message, after the last retry
            return self._failed_model_message(_failure_text(error), aborted=False)

    async def _run_tools(self, action: Dict[str, Any], specs: List[ToolSpec]) -> List[Dict[str, Any]]:
        by_name = {spec.definition["name"]: spec for spec in specs}
        calls = action["toolCalls"]
        one = lambda call: self._run_tool(action, call, by_name.get(call["name"]))  # noqa: E731
        if action["mode"] == "sequential":
            return [await one(call) for call in calls]
        return list(await asyncio.gather(*(one(call) for call in calls)))

    async def _run_tool(self, action: Dict[str, Any], call: Dict[str, Any], spec: Optional[ToolSpec]) -> Dict[str, Any]:
        if self._aborted:
            return self._tool_error(call, TOOL_ABORTED)
        policy = spec.policy if spec is not None else StepPolicy(maximum_attempts=1)
        request = {"session": workflow.info().workflow_id, "action": {**action, "toolCalls": [call], "mode": "sequential"}}
        try:
            return await self._cancellable(
                workflow.execute_activity(RUN_TOOL, request, result_type=dict, **_timeouts(policy))
            )
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
