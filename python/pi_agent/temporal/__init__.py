"""Durable, distributed agent sessions on Temporal (``pip install "pi-agent[temporal]"``).

One workflow (``Session``) per agent session drives core's sans-IO ``AgentStepper``; every
model call and every tool call is an activity with its own timeout, retry policy and
heartbeats, so a session survives the loss of any worker and a replay never calls a model or
a tool again for a step already recorded. Any number of workers serve one task queue; they
share a ``SessionStore`` (a SQLite file) where transcripts and events live, so the history
holds references and deltas, never a whole transcript::

    from temporalio.client import Client
    from pi_agent.temporal import SessionInput, create_worker, start_session

    client = await Client.connect("127.0.0.1:7233")
    worker = create_worker(client, tools=[add], store="sessions.sqlite",
                           get_api_key=lambda provider: vault[provider])   # each worker
    session = await start_session(client, SessionInput(model=model.to_dict()),
                                  id="session-1", store="sessions.sqlite")
    reply = await session.prompt("2 + 3?")
    async for record in session.events(after=last_seen):   # {"seq", "attempt", "event"}
        ...

Conversation: update ``prompt`` (waits for the run) or signal ``send_prompt``; signals
``steer``, ``follow_up``, ``abort``, ``set_thinking_level``, ``close``; queries ``transcript``,
``status`` (``SessionHandle`` wraps them and expands what the store holds).

Hooks (``create_worker(before_tool_call=..., ...)``, the agent's) are user code: they run on
the worker, inside the activities; the workflow only runs the stepper. Secrets (API keys,
headers) are the worker's: ``SessionInput`` refuses them.

Tools run at least once per call: a call whose worker dies is run again on another worker
(per its ``StepPolicy``) unless it is registered as ``DurableTool(tool, retryable=False)``,
whose lost call ends with an error result instead.
"""

from ._activities import HOOKS, MODEL_ERROR, DurableTool, EventCallback, SessionActivities
from ._client import SessionHandle, get_session, start_session
from ._config import (
    DEFAULT_TASK_QUEUE,
    SECRET_OPTIONS,
    WORKFLOW_NAME,
    Carried,
    CarriedRun,
    SessionInput,
    SessionResult,
    StepPolicy,
    ToolSpec,
    WorkerInfo,
)
from ._store import SessionStore, StoreError, default_store_path
from ._worker import RECOVERY_DEFAULTS, create_worker, workflow_runner
from ._workflow import Session

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "HOOKS",
    "MODEL_ERROR",
    "RECOVERY_DEFAULTS",
    "SECRET_OPTIONS",
    "WORKFLOW_NAME",
    "Carried",
    "CarriedRun",
    "DurableTool",
    "EventCallback",
    "Session",
    "SessionActivities",
    "SessionHandle",
    "SessionInput",
    "SessionResult",
    "SessionStore",
    "StepPolicy",
    "StoreError",
    "ToolSpec",
    "WorkerInfo",
    "create_worker",
    "default_store_path",
    "get_session",
    "start_session",
    "workflow_runner",
]
