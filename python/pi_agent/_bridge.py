"""asyncio and thread glue for pi_agent._core (imported by the extension; not a public module).

Everything here is plumbing between Python and the binding's tokio runtime: no agent or
provider behaviour lives in this file.

Python code that the runtime calls (tools, hooks, subscribers, factories) runs on the daemon
threads of `Pool`, started by Python itself: the user's function is called from a pure-Python
frame, never from under a Rust frame. CPython ends such threads with `pthread_exit` when they
touch the interpreter during its exit, and that forced unwind must not cross Rust code.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

#: What a pool job reports back: `done(True, value)` or `done(False, exception)`.
Done = Callable[[bool, Any], None]
#: One pool job: the function, its arguments, where its outcome goes, the owners it sees.
Job = tuple[Callable[..., Any], tuple[Any, ...], Done, frozenset[int]]
T = TypeVar("T")

# ---------------------------------------------------------------------------------------------
# Which agents' runs the running code belongs to (a frozenset of agent ids), so that a tool,
# hook or subscriber that waits for its own agent's run to end can be refused instead of
# waiting for itself forever.

_OWNERS: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "pi_agent_owners", default=frozenset()
)


def owners() -> frozenset[int]:
    """The ids of the agents whose run the calling code is part of."""
    return _OWNERS.get()


def owners_with(agent_id: int) -> frozenset[int]:
    """The current owners plus `agent_id` (what the callbacks of a run started here see)."""
    return _OWNERS.get() | {agent_id}


# ---------------------------------------------------------------------------------------------
# The worker pool


class _Worker:
    __slots__ = ("job", "wake")

    def __init__(self) -> None:
        self.job: Job | None = None
        self.wake = threading.Event()


class Pool:
    """Runs jobs on daemon threads: an idle worker if there is one, else a new thread (so a
    job that waits for another job never starves it). Workers idle for a while exit."""

    IDLE_SECONDS = 30.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []

    def spawn(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        done: Done,
        job_owners: frozenset[int],
    ) -> None:
        """Calls `function(*args)` on a worker, then `done(True, value)` or
        `done(False, exception)`; `job_owners` is the `owners()` the call sees."""
        job: Job = (function, args, done, job_owners)
        with self._lock:
            if self._idle:
                worker = self._idle.pop()
                worker.job = job
                worker.wake.set()
                return
        # The job goes in the worker's slot, not in the thread's arguments: those stay
        # referenced for the thread's life, and so would the job's function and arguments
        # (an agent's subscriber, a tool's result) while the worker idles.
        worker = _Worker()
        worker.job = job
        del job
        thread = threading.Thread(
            target=self._work, args=(worker,), name="pi-agent-python", daemon=True
        )
        thread.start()

    def _work(self, me: _Worker) -> None:
        job = me.job
        while job is not None:
            _run(*job)
            job = None
            with self._lock:
                me.wake.clear()
                me.job = None
                self._idle.append(me)
            if not me.wake.wait(self.IDLE_SECONDS):
                with self._lock:
                    if me in self._idle:
                        self._idle.remove(me)
                        return
                # Handed a job while timing out: `spawn` set it under the lock.
            job = me.job


def _run(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    done: Done,
    job_owners: frozenset[int],
) -> None:
    token = _OWNERS.set(job_owners) if job_owners else None
    try:
        try:
            value = function(*args)
        except BaseException as error:  # noqa: BLE001 - everything goes back to the runtime
            done(False, error)
        else:
            done(True, value)
    except BaseException:  # noqa: BLE001 - a delivery failure must not kill the worker
        pass
    finally:
        if token is not None:
            _OWNERS.reset(token)


POOL = Pool()


def after_fork_in_child() -> None:
    """In a forked child the parent's idle workers do not exist: start a fresh pool. Wake
    channels are made afresh too: the inherited sockets are shared with the parent."""
    global POOL
    POOL = Pool()
    for loop, channel in list(_WAKE_CHANNELS.items()):
        if channel:
            try:  # an inherited loop must not read the parent's wake-ups
                loop.remove_reader(channel.fileno())
            except Exception:  # noqa: BLE001 - a closed or foreign loop: nothing to undo
                pass
    _WAKE_CHANNELS.clear()


def spawn(
    function: Callable[..., Any],
    args: tuple[Any, ...],
    done: Done,
    job_owners: frozenset[int],
) -> None:
    POOL.spawn(function, args, done, job_owners)


def is_awaitable(value: object) -> bool:
    return inspect.isawaitable(value)


# ---------------------------------------------------------------------------------------------
# asyncio


async def drive(start: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """A real coroutine around a Rust operation.

    `start(*args)` runs when the coroutine is first awaited (so `asyncio.run(agent.prompt(..))`
    and `asyncio.create_task(..)` work, and errors such as AgentBusyError surface at the
    `await`), and returns an asyncio future that the binding completes from its runtime.
    """
    return await start(*args)


async def finish_run(run: Any, raise_on_error: bool = False) -> Any:
    """Waits for an agent run to end (raising its failure with `raise_on_error`). If the
    awaiting task is cancelled, the run is aborted and the abort completes (the agent is idle
    again) before the cancellation propagates, so the caller can start a new run at once."""
    try:
        return await run._finish_future(raise_on_error)
    except asyncio.CancelledError:
        run.abort()
        await _until_finished(run)
        raise
    except GeneratorExit:  # the coroutine was closed without a loop: abort, do not wait
        run.abort()
        raise


async def text_deltas(run: Any) -> AsyncIterator[str]:
    """The `text_delta`s of an agent run's events, as they arrive."""
    async for event in run:
        if event["type"] == "message_update":
            update = event["assistantMessageEvent"]
            if update["type"] == "text_delta":
                yield update["delta"]


async def exit_run(run: Any) -> bool:
    """`async with agent.run(...)`: leaving the block before the run ended aborts it and waits
    for the abort to complete."""
    if not run.is_finished:
        run.abort()
        await _until_finished(run)
    return False


async def _until_finished(run: Any) -> None:
    # Further cancellations do not cut this short: the abort ends the run promptly.
    while True:
        try:
            await run._finish_future()
            return
        except asyncio.CancelledError:
            continue


def on_collect(future: object, callback: Callable[[], object]) -> None:
    """Calls `callback()` when `future` is garbage-collected (it was abandoned)."""
    weakref.finalize(future, callback)


# One wake channel per event loop (see python/src/loop_wake.rs): a reader callback that the
# runtime's threads trigger by writing to a socket, without the GIL. `False` for a loop that
# cannot watch a file descriptor; looked up weakly, so a finished loop takes its channel along.
_WAKE_CHANNELS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]" = (
    weakref.WeakKeyDictionary()
)


def wake_channel(loop: asyncio.AbstractEventLoop, make: Callable[[], Any]) -> Any:
    """The wake channel of `loop` (the running loop), made on first use; None if it has none."""
    try:
        channel = _WAKE_CHANNELS.get(loop)
    except TypeError:  # a loop that cannot be weakly referenced
        return None
    if channel is None:
        channel = make()
        try:
            loop.add_reader(channel.fileno(), channel)
        except (NotImplementedError, AttributeError, RuntimeError):
            channel = False
        _WAKE_CHANNELS[loop] = channel
    return channel or None


async def next_when_ready(ready: Awaitable[None], source: AsyncIterator[T]) -> T:
    """`source`'s next event once a runtime task has put it in front of the stream (the general
    path of `async for`, python/src/put_back.rs): taken here, on the loop's thread, so a wait
    cancelled before leaves it there for the next read."""
    await ready
    return await source.__anext__()


def set_result(future: "asyncio.Future[Any]", value: object) -> None:
    """Completes `future` unless it was cancelled meanwhile (called on the loop's thread)."""
    if not future.done():
        future.set_result(value)


def set_exception(future: "asyncio.Future[Any]", exception: BaseException) -> None:
    """Fails `future` unless it was cancelled meanwhile (called on the loop's thread)."""
    if not future.done():
        future.set_exception(exception)


# ---------------------------------------------------------------------------------------------
# Coroutines sent to another thread's loop, and loops whose thread is blocked in a pi wait
#
# A run started inside a coroutine sends its `async def` callbacks to that coroutine's loop. If
# the same thread then blocks on the run (`for event in run`, `run.result_sync()`), that loop
# cannot run them, and the run waits for them: a deadlock. So while a wait for a run blocks a
# loop's thread (`block_loop` .. `unblock_loop`), the coroutines of that run's callbacks queued
# on the loop and not started yet, and those sent to it meanwhile, run with `asyncio.run` on a
# worker instead. (One the loop already started and suspended cannot move; one that uses
# objects bound to its loop, such as an `asyncio.Lock` made there, fails there.)

_LOOPS_LOCK = threading.Lock()
#: Loops whose thread is blocked in a wait for a run, with the owners (agent ids) waited for,
#: one entry per wait.
_BLOCKED: dict[asyncio.AbstractEventLoop, list[int]] = {}
#: Per loop, the `LoopCall`s sent to it that it has not started.
_QUEUED: dict[asyncio.AbstractEventLoop, set[LoopCall]] = {}


#: How often queued calls are checked for a loop that closed before starting them, and how
#: long the checking thread stays when nothing is queued.
_SWEEP_INTERVAL = 0.5
_SWEEPER_IDLE = 30.0
_sweeper: threading.Thread | None = None


def _ensure_sweeper() -> None:
    """Starts the thread that rescues stranded calls, unless it runs (with `_LOOPS_LOCK`)."""
    global _sweeper
    if _sweeper is None:
        _sweeper = threading.Thread(target=_sweep, name="pi_agent-loop-sweeper", daemon=True)
        _sweeper.start()


def _sweep() -> None:
    """A loop checked as running may stop before it starts a call sent to it, and be closed:
    its pending callbacks are dropped and nothing would ever start the call (the run would
    wait for it for ever). Such calls move to workers. Ends after `_SWEEPER_IDLE` seconds with
    nothing queued."""
    global _sweeper
    idle_since = time.monotonic()
    while True:
        time.sleep(_SWEEP_INTERVAL)
        with _LOOPS_LOCK:
            if _QUEUED:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > _SWEEPER_IDLE:
                _sweeper = None
                return
            stranded = [call for loop, calls in _QUEUED.items() if loop.is_closed() for call in calls]
        for call in stranded:
            try:
                call.move()
            except Exception:  # noqa: BLE001 - no worker thread (the interpreter is exiting)
                pass


def _forget_sweeper_in_child() -> None:
    global _sweeper
    _sweeper = None  # the parent's thread is not in the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_sweeper_in_child)


def loop_is_usable(loop: asyncio.AbstractEventLoop | None) -> bool:
    """Whether coroutines submitted to `loop` from another thread will run."""
    return loop is not None and loop.is_running() and not loop.is_closed()


def _blocked_for(loop: asyncio.AbstractEventLoop, job_owners: frozenset[int] | None) -> bool:
    waited = _BLOCKED.get(loop)
    return bool(waited and job_owners and any(owner in job_owners for owner in waited))


def block_loop(owner: int) -> asyncio.AbstractEventLoop | None:
    """The calling thread is about to block until a run of `owner` (an agent id) ends: if it
    runs a loop, the coroutines of that run's callbacks queued on the loop move to workers, and
    new ones go there until `unblock_loop`. Returns the loop."""
    loop = asyncio._get_running_loop()
    if loop is None:
        return None
    with _LOOPS_LOCK:
        _BLOCKED.setdefault(loop, []).append(owner)
        queued = [call for call in _QUEUED.get(loop, ()) if _blocked_for(loop, call.owners)]
    for call in queued:
        try:
            call.move()
        except Exception:  # noqa: BLE001 - no worker thread (the interpreter is exiting): it stays queued
            pass
    return loop


def unblock_loop(loop: asyncio.AbstractEventLoop, owner: int) -> None:
    """The wait that `block_loop(owner)` announced has ended."""
    with _LOOPS_LOCK:
        waited = _BLOCKED.get(loop, [])
        if owner in waited:
            waited.remove(owner)
        if not waited:
            _BLOCKED.pop(loop, None)


async def _await(awaitable: Awaitable[Any], job_owners: frozenset[int]) -> Any:
    if job_owners:
        _OWNERS.set(job_owners)  # this task's own context
    return await awaitable


class LoopCall:
    """A coroutine sent to another thread's running loop (`submit`): `done(future)` gets a
    `concurrent.futures.Future` with its outcome; `cancel()` cancels it from any thread. Until
    the loop starts it, `move()` runs it with `asyncio.run` on a worker instead."""

    __slots__ = ("_lock", "_state", "_loop", "_awaitable", "owners", "_future", "_handle")

    def __init__(
        self,
        awaitable: Awaitable[Any],
        loop: asyncio.AbstractEventLoop,
        done: Callable[["concurrent.futures.Future[Any]"], object],
        job_owners: frozenset[int],
    ) -> None:
        self._lock = threading.Lock()
        self._state = "queued"  # then "started" (on the loop), "moved" or "cancelled"
        self._loop = loop
        self._awaitable = awaitable
        self.owners = job_owners
        self._future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._future.add_done_callback(done)
        self._handle: Any = None  # the loop's task, or the worker's FreshLoop

    def _forget(self) -> None:
        with _LOOPS_LOCK:
            queued = _QUEUED.get(self._loop)
            if queued is not None:
                queued.discard(self)
                if not queued:
                    del _QUEUED[self._loop]

    def start(self) -> None:
        """On the loop's thread: runs the coroutine there, unless it moved or was cancelled."""
        self._forget()
        with self._lock:
            if self._state != "queued":
                return
            self._state = "started"
            task = self._handle = self._loop.create_task(_await(self._awaitable, self.owners))
        task.add_done_callback(self._task_done)

    def _task_done(self, task: "asyncio.Task[Any]") -> None:
        if task.cancelled():
            self._future.cancel()
        elif task.exception() is not None:
            self._future.set_exception(task.exception())
        else:
            self._future.set_result(task.result())

    def move(self) -> None:
        """Runs the coroutine with `asyncio.run` on a worker, unless the loop started it."""
        with self._lock:
            if self._state != "queued":
                return
            self._state = "moved"
            runner = self._handle = FreshLoop()
        try:
            POOL.spawn(runner.run, (self._awaitable,), self._moved_done, self.owners)
        except BaseException:
            with self._lock:  # not moved after all: the loop still runs it
                self._state, self._handle = "queued", None
            raise
        self._forget()

    def _moved_done(self, ok: bool, value: Any) -> None:
        if ok:
            self._future.set_result(value)
        elif isinstance(value, asyncio.CancelledError):
            self._future.cancel()
        else:
            self._future.set_exception(value)

    def cancel(self) -> None:
        with self._lock:
            state, handle = self._state, self._handle
            if state == "queued":
                self._state = "cancelled"
        if state == "queued":
            self._forget()
            close = getattr(self._awaitable, "close", None)
            if callable(close):
                close()  # never started: no "never awaited" warning
            self._future.cancel()
        elif state == "started":
            try:
                self._loop.call_soon_threadsafe(handle.cancel)
            except RuntimeError:  # the loop closed meanwhile
                pass
        elif state == "moved":
            handle.cancel()


def submit(
    awaitable: Awaitable[Any],
    loop: asyncio.AbstractEventLoop,
    done: Callable[["concurrent.futures.Future[Any]"], object],
    job_owners: frozenset[int],
) -> LoopCall:
    """Schedules `awaitable` on `loop` (another thread's running loop); `done(future)` is
    called with a concurrent.futures.Future when it finishes. Returns the `LoopCall`."""
    call = LoopCall(awaitable, loop, done, job_owners)
    with _LOOPS_LOCK:
        blocked = _blocked_for(loop, job_owners)
        if not blocked:
            _QUEUED.setdefault(loop, set()).add(call)
            _ensure_sweeper()
    if blocked:
        call.move()
        return call
    try:
        loop.call_soon_threadsafe(call.start)
    except BaseException:
        call._forget()
        raise
    return call


class FreshLoop:
    """Runs one coroutine with `asyncio.run` on the calling (worker) thread, cancellable from
    any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False

    def run(self, awaitable: Awaitable[Any]) -> Any:
        return asyncio.run(self._main(awaitable))

    async def _main(self, awaitable: Awaitable[Any]) -> Any:
        with self._lock:
            if self._cancelled:
                # A coroutine that never ran is closed so Python does not warn it was
                # never awaited; other awaitables have nothing to close.
                close = getattr(awaitable, "close", None)
                if callable(close):
                    close()
                raise asyncio.CancelledError()
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
        try:
            return await awaitable
        finally:
            with self._lock:
                self._loop = None
                self._task = None

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._loop is not None and self._task is not None:
                try:
                    self._loop.call_soon_threadsafe(self._task.cancel)
                except RuntimeError:  # the loop closed meanwhile
                    pass


# ---------------------------------------------------------------------------------------------
# Helpers of particular callbacks


def call_tool(
    function: Callable[..., Any],
    converter: Callable[[dict[str, Any]], dict[str, Any]] | None,
    arguments: object,
    context_name: str | None,
    context: object,
) -> Any:
    """Calls a tool function with the model's arguments as keywords (converted to the
    dataclass/enum/pydantic values its hints ask for) and its `ToolContext`, if it takes one."""
    if not isinstance(arguments, dict):
        return function(arguments)
    if converter is not None:
        arguments = converter(arguments)
    if context_name is not None:
        arguments[context_name] = context
    return function(**arguments)


def takes_second_argument(function: Callable[..., Any]) -> bool:
    """Whether `function` can be called with two positional arguments (a subscriber that wants
    the run's signal besides the event)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return False
    positional = 0
    for parameter in signature.parameters.values():
        if parameter.kind == parameter.VAR_POSITIONAL:
            return True
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2


_END = object()


async def _anext(iterator: AsyncIterator[Any]) -> Any:
    try:
        return await iterator.__anext__()
    except StopAsyncIteration:
        return _END


async def _anext_started(iterator: AsyncIterator[Any], started: threading.Event) -> Any:
    started.set()
    return await _anext(iterator)


class _LoopStuck(Exception):
    """The caller's loop cannot run a read that has not started (see `EventPump._on_loop`)."""


class EventPump:
    """Reads a stream function's events — a sync or async iterable — one item per `next()`
    call, made on a worker thread. Async iterables run on the caller's loop when it is usable,
    else on a private loop kept for the whole iteration (one `asyncio.run` per item would
    close an async generator after its first item); `close()` shuts that loop down, at once
    or after the read in progress. A caller's loop that a wait for this run blocks (`for event
    in run` inside a coroutine), or that closes, hands the reads over to the private loop, as
    tools and subscribers move to workers (`block_loop`)."""

    def __init__(
        self,
        source: Any,
        loop: asyncio.AbstractEventLoop | None,
        owners: frozenset[int] | None = None,
    ) -> None:
        self._owners = owners
        self._aiter: AsyncIterator[Any] | None
        self._iter: Iterator[Any] | None
        if hasattr(source, "__aiter__"):
            self._aiter = source.__aiter__()
            self._iter = None
        else:
            self._iter = iter(source)
            self._aiter = None
        self._loop = loop if loop_is_usable(loop) else None
        self._private: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._pending: concurrent.futures.Future[Any] | asyncio.Task[Any] | None = None
        self._cancelled = False
        self._closing = False

    def next(self) -> tuple[bool, Any]:
        """`(True, event)`, or `(False, None)` at the end."""
        if self._iter is not None:
            for item in self._iter:
                return True, item
            return False, None
        aiter = self._aiter
        if aiter is None:  # not reached: one of the two is set
            return False, None
        read: Any = _END
        on_loop = self._loop is not None and not self._stuck(self._loop)
        if on_loop:
            try:
                read = self._on_loop(aiter)
            except _LoopStuck:
                on_loop = False
                self._loop = None  # from now on, the private loop
        if not on_loop:
            with self._lock:
                if self._closing:
                    return False, None
                if self._private is None:
                    self._private = asyncio.new_event_loop()
                task = self._private.create_task(_anext(aiter))
                if self._cancelled:
                    task.cancel()
                self._pending = task
            try:
                read = self._private.run_until_complete(task)
            finally:
                with self._lock:
                    self._pending = None
                    closing = self._closing
                if closing:
                    self._close_private()
        if read is _END:
            self.close()
            return False, None
        return True, read

    def _stuck(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether `loop` cannot run a read now: closed, or blocked by a wait for this run."""
        with _LOOPS_LOCK:
            blocked = _blocked_for(loop, self._owners)
        return blocked or not loop_is_usable(loop)

    def _on_loop(self, aiter: AsyncIterator[Any]) -> Any:
        """One read on the caller's loop; `_LoopStuck` when the loop cannot start it (checked
        now and then while waiting: a read that has started is waited for)."""
        loop = self._loop
        assert loop is not None
        started = threading.Event()
        future = asyncio.run_coroutine_threadsafe(_anext_started(aiter, started), loop)
        with self._lock:
            if self._cancelled:
                future.cancel()
            self._pending = future
        try:
            while True:
                try:
                    return future.result(timeout=_SWEEP_INTERVAL)
                except concurrent.futures.TimeoutError:
                    if not started.is_set() and self._stuck(loop) and future.cancel():
                        raise _LoopStuck from None
        finally:
            with self._lock:
                self._pending = None

    def cancel(self) -> None:
        """Stops a pending read (the run was aborted)."""
        with self._lock:
            self._cancelled = True
            pending = self._pending
            private = self._private
        if pending is None:
            return
        if private is not None and isinstance(pending, asyncio.Future):
            try:
                private.call_soon_threadsafe(pending.cancel)
            except RuntimeError:
                pass
        else:
            pending.cancel()

    def close(self) -> None:
        """Shuts the private loop down (after the read in progress, if any)."""
        with self._lock:
            self._closing = True
            busy = self._pending is not None
        if not busy:
            self._close_private()

    def _close_private(self) -> None:
        with self._lock:
            loop, self._private = self._private, None
        if loop is not None:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
