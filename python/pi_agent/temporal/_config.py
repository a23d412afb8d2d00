"""The plain-data shapes a session workflow is started with and carries across
continue-as-new. Pure dataclasses (no Temporal import): the workflow, the activities and the
client share them, and Temporal's JSON converter stores them in the workflow's history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

WORKFLOW_NAME = "pi_agent.Session"
CALL_MODEL = "pi_agent.call_model"
RUN_TOOL = "pi_agent.run_tool"
DESCRIBE_WORKER = "pi_agent.describe_worker"
PUBLISH_EVENTS = "pi_agent.publish_events"
SHOULD_STOP = "pi_agent.should_stop_after_turn"
DEFAULT_TASK_QUEUE = "pi-agent"
TOOL_ABORTED = "Tool execution was aborted"  # core's TOOL_ABORTED: a tool call cut by an abort

SECRET_OPTIONS = frozenset({"api_key", "apiKey", "headers", "bearer_token", "bearerToken", "proxy_token"})
"""Options that never go in a session's input (its history): give them to the worker
(``create_worker(model_options=..., get_api_key=...)``) or let it read its environment."""


@dataclass
class StepPolicy:
    """Timeouts and retries of one kind of step (a model call, or one tool's calls).

    ``maximum_attempts`` counts the first attempt (``1``: never retried, ``0``: unlimited).
    A step whose worker dies is noticed after ``heartbeat_timeout`` seconds (the step
    heartbeats meanwhile) and retried on any worker after ``initial_interval``."""

    start_to_close_timeout: float = 600.0
    heartbeat_timeout: Optional[float] = 4.0
    maximum_attempts: int = 3
    initial_interval: float = 0.5
    backoff_coefficient: float = 2.0
    maximum_interval: float = 30.0


@dataclass
class ToolSpec:
    """A tool as the workflow knows it: its definition for the model and how its calls run.
    Made on the worker from a ``pi_agent.temporal.DurableTool`` and recorded in the history."""

    definition: Dict[str, Any]
    retryable: bool = True
    execution_mode: Optional[str] = None
    policy: StepPolicy = field(default_factory=StepPolicy)


@dataclass
class SessionInput:
    """How a session starts (or continues as new).

    ``prompts`` (texts or user-message dicts) run one after another once the session starts;
    more arrive by the ``prompt`` update or signal. ``model_options`` are
    ``pi_agent.stream_simple`` keyword options (JSON values only, e.g. ``reasoning``,
    ``max_tokens``). API keys and headers are refused here (``ValueError``): they would be
    stored in the history; the worker resolves them (``create_worker(get_api_key=...,
    model_options=...)`` or its environment). ``thinking_level`` is the agent's (``"off"``
    ... ``"xhigh"``; the ``set_thinking_level`` signal changes it), ``tool_timeout_ms`` its tool
    watchdog. ``tools`` names the worker's tools the model may call (``None``: all of them).
    With ``close_when_idle`` the workflow returns once no prompt is left; otherwise it waits
    for ``close``. ``continue_as_new_after`` is a history length (in events) after which the
    session continues as new, between runs or between two steps of a run (``0``: when
    Temporal suggests it). ``publish_events`` appends the session's events to the worker's
    store (what ``SessionHandle.events`` reads) and hands them to its ``on_event``."""

    model: Dict[str, Any]
    system_prompt: str = ""
    messages: List[Dict[str, Any]] = field(default_factory=list)
    prompts: List[Any] = field(default_factory=list)
    tools: Optional[List[str]] = None
    model_options: Dict[str, Any] = field(default_factory=dict)
    model_policy: StepPolicy = field(default_factory=StepPolicy)
    thinking_level: Optional[str] = None
    tool_timeout_ms: Optional[int] = None
    tool_execution: str = "parallel"
    steering_mode: str = "one-at-a-time"
    follow_up_mode: str = "one-at-a-time"
    close_when_idle: bool = False
    publish_events: bool = True
    continue_as_new_after: int = 0
    carried: Optional["Carried"] = None

    def __post_init__(self) -> None:
        secrets = sorted(SECRET_OPTIONS.intersection(self.model_options))
        if self.model.get("headers"):
            secrets.append("model.headers")
        if secrets:
            raise ValueError(
                f"SessionInput: {secrets} would be stored in the workflow's history in plain text; "
                "give secrets to the worker instead (create_worker(get_api_key=..., model_options=...) "
                "or its environment)"
            )


@dataclass
class Carried:
    """What a session carries into its next run after continue-as-new (besides the
    transcript, which goes in ``SessionInput.messages``)."""

    tool_specs: List[ToolSpec] = field(default_factory=list)
    hooks: List[str] = field(default_factory=list)
    steering: List[Dict[str, Any]] = field(default_factory=list)
    follow_ups: List[Dict[str, Any]] = field(default_factory=list)
    runs: int = 0
    generation: int = 0
    thinking_level: Optional[str] = None
    base_version: Optional[str] = None
    stored: int = 0
    #: ``close`` came before: the session ends once idle.
    closing: bool = False
    run: Optional["CarriedRun"] = None


@dataclass
class CarriedRun:
    """A run in flight carried across continue-as-new (between two of its steps): the
    stepper's state, its pending step and the run's number."""

    stepper: Dict[str, Any]
    step: Dict[str, Any]
    number: int


@dataclass
class WorkerInfo:
    """What the workflow learns from the worker: its tools and which hooks it has."""

    tools: List[ToolSpec] = field(default_factory=list)
    hooks: List[str] = field(default_factory=list)


@dataclass
class SessionResult:
    """What a closed session returns: its transcript and how many runs it made."""

    messages: List[Dict[str, Any]]
    runs: int
    generation: int


def failed_message(
    model: Mapping[str, Any], text: str, reason: str = "error", timestamp: int = 0
) -> Dict[str, Any]:
    """The assistant message of a model call that failed (pi's shape: no content, zero usage)."""
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {
        "role": "assistant",
        "content": [],
        "api": model["api"],
        "provider": model["provider"],
        "model": model["id"],
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": zero},
        "stopReason": reason,
        "errorMessage": text,
        "timestamp": timestamp,
    }
