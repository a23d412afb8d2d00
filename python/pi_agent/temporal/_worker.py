"""A Temporal worker that serves pi-agent sessions: the ``Session`` workflow (in Temporal's
sandbox, with pi-agent's native extension passed through: the stepper has no clock or I/O)
and the activities with this worker's tools and event subscriber."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ._activities import EventCallback, SessionActivities
from ._config import DEFAULT_TASK_QUEUE
from ._store import SessionStore
from ._workflow import Session

RECOVERY_DEFAULTS: Dict[str, Any] = {
    # A cancellation (abort) arrives with a heartbeat's answer: send them often.
    "max_heartbeat_throttle_interval": timedelta(seconds=1),
    "default_heartbeat_throttle_interval": timedelta(seconds=1),
    # A dead worker's sticky workflow tasks move to the shared queue after this.
    "sticky_queue_schedule_to_start_timeout": timedelta(seconds=2),
}
"""The ``temporalio.worker.Worker`` options ``create_worker`` sets unless given: with the
default ``StepPolicy`` (heartbeat timeout 4 s, first retry after 0.5 s), a session whose
worker dies goes on on another one within about 7 s."""


def workflow_runner() -> SandboxedWorkflowRunner:
    """Temporal's sandbox, with ``pi_agent`` (its native extension) passed through: it is
    imported once, not re-imported per workflow run."""
    return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules("pi_agent"))


def create_worker(
    client: Client,
    *,
    task_queue: str = DEFAULT_TASK_QUEUE,
    tools: Sequence[Any] = (),
    on_event: Optional[EventCallback] = None,
    store: Union[SessionStore, str, None] = None,
    model_options: Optional[Mapping[str, Any]] = None,
    before_tool_call: Optional[Callable[..., Any]] = None,
    after_tool_call: Optional[Callable[..., Any]] = None,
    should_stop_after_turn: Optional[Callable[..., Any]] = None,
    transform_context: Optional[Callable[..., Any]] = None,
    convert_to_llm: Optional[Callable[..., Any]] = None,
    get_api_key: Optional[Callable[..., Any]] = None,
    **worker_options: Any,
) -> Worker:
    """A worker for ``task_queue`` running sessions with ``tools`` (``pi_agent.Tool``s, plain
    functions or ``DurableTool``s). ``store`` is the ``SessionStore`` (or its SQLite path;
    default ``pi_agent.temporal.default_store_path()``) where transcripts and events live:
    every worker of the task queue and every client reading events must reach the same one.
    ``model_options`` are request options only this worker knows (``headers``, ``api_key``,
    ...: never in the history); the hooks are the agent's of the same names (all workers of a
    task queue should have the same), run on the worker. ``on_event(session_id, event)``
    receives the session events this worker produces. ``worker_options`` go to
    ``temporalio.worker.Worker`` (e.g. ``max_concurrent_activities``; ``RECOVERY_DEFAULTS``
    apply unless given)."""
    hooks = {
        "before_tool_call": before_tool_call,
        "after_tool_call": after_tool_call,
        "should_stop_after_turn": should_stop_after_turn,
        "transform_context": transform_context,
        "convert_to_llm": convert_to_llm,
        "get_api_key": get_api_key,
    }
    session_store = store if isinstance(store, SessionStore) else SessionStore(store)
    activities = SessionActivities(tools, on_event, store=session_store, model_options=model_options, hooks=hooks)
    options = {**RECOVERY_DEFAULTS, **worker_options}
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[Session],
        activities=activities.activities(),
        workflow_runner=workflow_runner(),
        **options,
    )
