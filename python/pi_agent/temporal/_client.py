"""The client side of a session: ``start_session`` / ``get_session`` give a ``SessionHandle``,
which talks to the workflow (updates, signals, queries) and reads what travels by reference
from the workers' ``SessionStore``: full transcripts, and the live events from a cursor."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Dict, List, Optional, Union

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from ._config import DEFAULT_TASK_QUEUE, SessionInput, SessionResult
from ._store import SessionStore
from ._workflow import Session

StoreLike = Union[SessionStore, str, None]


def _store(store: StoreLike) -> SessionStore:
    return store if isinstance(store, SessionStore) else SessionStore(store)


class SessionHandle:
    """One session as a client sees it. ``store`` must be the workers' store (the same SQLite
    file)."""

    def __init__(self, client: Client, id: str, store: StoreLike = None) -> None:
        self.client = client
        self.workflow: WorkflowHandle[Any, SessionResult] = client.get_workflow_handle_for(Session.run, id)
        self.store = _store(store)

    @property
    def id(self) -> str:
        """The session's id (its workflow id, the same across continue-as-new)."""
        return self.workflow.id

    async def prompt(self, prompt: Any) -> Dict[str, Any]:
        """Queues a prompt and waits for its run: ``{"newMessages", "error"}`` (expanded)."""
        reply: Dict[str, Any] = await self.workflow.execute_update(Session.prompt, prompt)
        return {**reply, "newMessages": [self.store.expand(m) for m in reply["newMessages"]]}

    async def send_prompt(self, prompt: Any) -> None:
        """Queues a prompt without waiting for it."""
        await self.workflow.signal(Session.send_prompt, prompt)

    async def steer(self, message: Any) -> None:
        """Queues a steering message."""
        await self.workflow.signal(Session.steer, message)

    async def follow_up(self, message: Any) -> None:
        """Queues a follow-up message."""
        await self.workflow.signal(Session.follow_up, message)

    async def abort(self) -> None:
        """Aborts the running run (its running step is cancelled at once)."""
        await self.workflow.signal(Session.abort)

    async def set_thinking_level(self, level: Optional[str]) -> None:
        """Sets the thinking level of the next model calls."""
        await self.workflow.signal(Session.set_thinking_level, level)

    async def close(self) -> None:
        """Ends the session once idle."""
        await self.workflow.signal(Session.close)

    async def status(self) -> Dict[str, Any]:
        """The ``status`` query."""
        status: Dict[str, Any] = await self.workflow.query(Session.status)
        return status

    async def transcript(self) -> List[Dict[str, Any]]:
        """The transcript so far, with every message whole."""
        messages: List[Dict[str, Any]] = await self.workflow.query(Session.transcript)
        return [self.store.expand(message) for message in messages]

    async def result(self) -> SessionResult:
        """Waits for the session to end; its result with every message whole (across
        continue-as-new)."""
        result: SessionResult = await self.workflow.result()
        result.messages = [self.store.expand(message) for message in result.messages]
        return result

    async def events(self, after: int = 0, *, poll_interval: float = 0.05) -> AsyncIterator[Dict[str, Any]]:
        """The session's events with ``seq > after``, then live ones as they are appended, as
        ``{"seq", "attempt", "event"}`` (the event whole, with its ``type``). ``attempt`` is
        the number of the step's attempt that produced it: when a model call is retried, its
        deltas come again with the next number (drop a superseded attempt's). Resume after a
        restart with the last ``seq`` seen: nothing is missed or repeated. Ends once the
        session has ended and every event was given."""
        cursor = after
        idle = 0.0
        while True:
            batch = await asyncio.to_thread(self.store.read_events, self.id, cursor)
            for record in batch:
                cursor = record["seq"]
                yield {**record, "event": self.store.expand_value(record["event"])}
            if batch:
                idle = 0.0
                continue
            if idle >= 1.0:
                idle = 0.0
                if not await self._running():
                    final = await asyncio.to_thread(self.store.read_events, self.id, cursor)
                    if not final:
                        return
                    continue
            await asyncio.sleep(poll_interval)
            idle += poll_interval

    async def _running(self) -> bool:
        description = await self.workflow.describe()
        return description.status == WorkflowExecutionStatus.RUNNING


async def start_session(
    client: Client,
    config: SessionInput,
    *,
    id: str,
    task_queue: str = DEFAULT_TASK_QUEUE,
    store: StoreLike = None,
    **start_options: Any,
) -> SessionHandle:
    """Starts session ``id`` (a ``Session`` workflow) and returns its handle; ``store`` is the
    workers' store, ``start_options`` go to ``Client.start_workflow``."""
    await client.start_workflow(Session.run, config, id=id, task_queue=task_queue, **start_options)
    return SessionHandle(client, id, store)


def get_session(client: Client, id: str, *, store: StoreLike = None) -> SessionHandle:
    """The handle of a running (or ended) session, e.g. after a client restart."""
    return SessionHandle(client, id, store)
