"""Durable, distributed agent sessions on Temporal (``pip install "pi-agent[temporal]"``).

One workflow (``Session``) per agent session drives core's sans-IO ``AgentStepper``; every
model call and every tool call is an activity with its own timeout, retry policy and
heartbeats, so a session survives the loss of any worker and a replay never calls a model or
a tool again for a step already recorded. Any number of workers serve one task queue::

    from temporalio.client import Client
    from pi_agent.temporal import Session, SessionInput, create_worker

    client = await Client.connect("127.0.0.1:7233")
    worker = create_worker(client, tools=[add])          # in each worker process
    handle = await client.start_workflow(
        Session.run, SessionInput(model=model.to_dict(), prompts=["2 + 3?"]),
        id="session-1", task_queue="pi-agent")
    reply = await handle.execute_update(Session.prompt, "and times 4?")
    transcript = await handle.query(Session.transcript)

Conversation: update ``prompt`` (waits for the run) or signal ``send_prompt``; signals
``steer``, ``follow_up``, ``abort``, ``close``; queries ``transcript``, ``status``.

Tools run at least once per call: a call whose worker dies is run again on another worker
(per its ``StepPolicy``) unless it is registered as ``DurableTool(tool, retryable=False)``,
whose lost call ends with an error result instead.

Events: ``create_worker(on_event=...)`` gets ``(session_id, event)`` for what its worker
produces: a model call's streamed ``message_update``s (from the model activity, live; a retried
call streams again from its start), a tool call's ``tool_execution_*`` events (from the tool
activity, when the call ends), and, with ``SessionInput(publish_events=True)``, the
workflow's own events (``agent_start``, ``message_start``/``message_end`` with the final
messages, ``turn_end``, ``agent_end``) through a local activity, once per recorded step.
"""

from ._activities import MODEL_ERROR, DurableTool, EventCallback, SessionActivities
from ._config import (
    DEFAULT_TASK_QUEUE,
    WORKFLOW_NAME,
    Carried,
    SessionInput,
    SessionResult,
    StepPolicy,
    ToolSpec,
)
from ._worker import create_worker, workflow_runner
from ._workflow import Session

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "MODEL_ERROR",
    "WORKFLOW_NAME",
    "Carried",
    "DurableTool",
    "EventCallback",
    "Session",
    "SessionActivities",
    "SessionInput",
    "SessionResult",
    "StepPolicy",
    "ToolSpec",
    "create_worker",
    "workflow_runner",
]
