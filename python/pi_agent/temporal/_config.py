"""The plain-data shapes a session workflow is started with and carries across
continue-as-new. Pure dataclasses (no Temporal import): the workflow, the activities and the
client share them, and Temporal's JSON converter stores them in the workflow's history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

WORKFLOW_NAME = "pi_agent.Session"
CALL_MODEL = "pi_agent.call_model"
RUN_TOOL = "pi_agent.run_tool"
DESCRIBE_TOOLS = "pi_agent.describe_tools"
PUBLISH_EVENTS = "pi_agent.publish_events"
DEFAULT_TASK_QUEUE = "pi-agent"


@dataclass
class StepPolicy:
    """Timeouts and retries of one kind of step (a model call, or one tool's calls).

    ``maximum_attempts`` counts the first attempt (``1``: never retried, ``0``: unlimited).
    A step whose worker dies is noticed after ``heartbeat_timeout`` seconds (the step
    heartbeats meanwhile) and retried on any worker after ``initial_interval``."""

    start_to_close_timeout: float = 600.0
    heartbeat_timeout: Optional[float] = 30.0
    maximum_attempts: int = 3
    initial_interval: float = 1.0
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
    ``max_tokens``; API keys come from the worker's environment). ``tools`` names the
    worker's tools the model may call (``None``: all of them). With ``close_when_idle`` the
    workflow returns once no prompt is left; otherwise it waits for ``close``.
    ``continue_as_new_after`` is a history length (in events) after which the idle session
    continues as new (``0``: when Temporal suggests it)."""

    model: Dict[str, Any]
    system_prompt: str = ""
    messages: List[Dict[str, Any]] = field(default_factory=list)
    prompts: List[Any] = field(default_factory=list)
    tools: Optional[List[str]] = None
    model_options: Dict[str, Any] = field(default_factory=dict)
    model_policy: StepPolicy = field(default_factory=StepPolicy)
    tool_execution: str = "parallel"
    steering_mode: str = "one-at-a-time"
    follow_up_mode: str = "one-at-a-time"
    close_when_idle: bool = False
    publish_events: bool = False
    continue_as_new_after: int = 0
    carried: Optional["Carried"] = None


@dataclass
class Carried:
    """What a session carries into its next run after continue-as-new (besides the
    transcript, which goes in ``SessionInput.messages``)."""

    tool_specs: List[ToolSpec] = field(default_factory=list)
    steering: List[Dict[str, Any]] = field(default_factory=list)
    follow_ups: List[Dict[str, Any]] = field(default_factory=list)
    runs: int = 0
    generation: int = 0


@dataclass
class SessionResult:
    """What a closed session returns: its transcript and how many runs it made."""

    messages: List[Dict[str, Any]]
    runs: int
    generation: int
