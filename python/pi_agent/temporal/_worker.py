"""A Temporal worker that serves pi-agent sessions: the ``Session`` workflow (in Temporal's
sandbox, with pi-agent's native extension passed through: the stepper has no clock or I/O)
and the activities with this worker's tools and event subscriber."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ._activities import EventCallback, SessionActivities
from ._config import DEFAULT_TASK_QUEUE
from ._workflow import Session


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
    **worker_options: Any,
) -> Worker:
    """A worker for ``task_queue`` running sessions with ``tools`` (``pi_agent.Tool``s, plain
    functions or ``DurableTool``s); ``on_event(session_id, event)`` receives the session
    events this worker produces (see ``pi_agent.temporal``). ``worker_options`` go to
    ``temporalio.worker.Worker`` (e.g. ``max_concurrent_activities``)."""
    activities = SessionActivities(tools, on_event)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[Session],
        activities=activities.activities(),
        workflow_runner=workflow_runner(),
        **worker_options,
    )
