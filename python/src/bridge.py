"""asyncio glue for pi_agent._core (compiled into the extension; not a public module).

Everything here is plumbing between asyncio and the binding's tokio runtime: no agent or
provider behaviour lives in this file.
"""

import asyncio
import threading


async def drive(start, *args):
    """A real coroutine around a Rust operation.

    `start(*args)` runs when the coroutine is first awaited (so `asyncio.run(agent.prompt(..))`
    and `asyncio.create_task(..)` work, and errors such as AgentBusyError surface at the
    `await`), and returns an asyncio future that the binding completes from its runtime.
    """
    return await start(*args)


def set_result(future, value):
    """Completes `future` unless it was cancelled meanwhile (called on the loop's thread)."""
    if not future.done():
        future.set_result(value)


def set_exception(future, exception):
    """Fails `future` unless it was cancelled meanwhile (called on the loop's thread)."""
    if not future.done():
        future.set_exception(exception)


def loop_is_usable(loop):
    """Whether coroutines submitted to `loop` from another thread will run."""
    return loop is not None and loop.is_running() and not loop.is_closed()


async def _await(awaitable):
    return await awaitable


def submit(awaitable, loop, done):
    """Schedules `awaitable` on `loop` (another thread's running loop); `done(future)` is
    called with the concurrent.futures.Future when it finishes. Returns that future."""
    future = asyncio.run_coroutine_threadsafe(_await(awaitable), loop)
    future.add_done_callback(done)
    return future


class FreshLoop:
    """Runs one coroutine with `asyncio.run` on the calling (worker) thread, cancellable from
    any thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._loop = None
        self._task = None
        self._cancelled = False

    def run(self, awaitable):
        return asyncio.run(self._main(awaitable))

    async def _main(self, awaitable):
        with self._lock:
            if self._cancelled:
                if hasattr(awaitable, "close"):
                    awaitable.close()
                raise asyncio.CancelledError()
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
        try:
            return await awaitable
        finally:
            with self._lock:
                self._loop = None
                self._task = None

    def cancel(self):
        with self._lock:
            self._cancelled = True
            if self._loop is not None:
                try:
                    self._loop.call_soon_threadsafe(self._task.cancel)
                except RuntimeError:  # the loop closed meanwhile
                    pass
