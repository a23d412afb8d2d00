"""Throughput of the Python binding: events per second of a streamed response, and tool calls
per second of an agent run. A standalone script, not part of the test suite.

    cargo build -p pi-mock-server          # for the HTTP rows (or set PI_MOCK_SERVER)
    python python/benches/bench_stream.py  # [--deltas 20000] [--tool-calls 200] [--repeat 3]

Rows:

- faux: an AI-level ``pi_agent.stream`` over the in-process faux provider, one text delta per
  4-character token (``token_size=(1, 1)``), iterated with ``for`` and with ``async for``.
- http: the same through ``pi-mock-server`` (openai-completions over local HTTP, SSE), one
  delta per character (``delta_size: 1``).
- agent: ``prompt_sync`` of one run whose model asks for N calls of a trivial sync tool, in
  one assistant message (run in parallel) and as N turns of one call each.

Each row runs ``--repeat`` times; the table shows the best and the median rate. Build the
wheel with ``--release`` for figures worth comparing (a ``--profile dev`` build is several
times slower).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import subprocess
import time
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pi_agent

REPO = pathlib.Path(__file__).resolve().parents[2]
CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}


def stream_sync(model: pi_agent.Model) -> int:
    count = 0
    with pi_agent.stream(model, CONTEXT, api_key="bench") as events:
        for _ in events:
            count += 1
        message = events.result_sync()
    assert message["stopReason"] == "stop", message.get("errorMessage")
    return count


def stream_async(model: pi_agent.Model) -> int:
    async def main() -> int:
        count = 0
        async with pi_agent.stream(model, CONTEXT, api_key="bench") as events:
            async for _ in events:
                count += 1
            message = await events.result()
        assert message["stopReason"] == "stop", message.get("errorMessage")
        return count

    return asyncio.run(main())


def measure(run: Callable[[], int], prepare: Callable[[], None], repeat: int) -> Tuple[int, List[float]]:
    """(units per run, seconds of each run); `prepare` scripts the next response untimed."""
    seconds: List[float] = []
    units = 0
    for _ in range(repeat):
        prepare()
        began = time.perf_counter()
        units = run()
        seconds.append(time.perf_counter() - began)
    return units, seconds


class MockServer:
    """A `pi-mock-server` process (see tests/mock_server/src/lib.rs)."""

    def __init__(self) -> None:
        binary = os.environ.get("PI_MOCK_SERVER") or str(
            pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "debug" / "pi-mock-server"
        )
        if not pathlib.Path(binary).exists():
            raise SystemExit(f"{binary} not found: run `cargo build -p pi-mock-server` first")
        self.process = subprocess.Popen(
            [binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        info = json.loads(self.process.stdout.readline())
        self.url, self.port = info["url"], info["port"]

    def push(self, reply: Dict[str, Any]) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/_mock/replies",
            data=json.dumps([reply]).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=10).read()

    def model(self) -> pi_agent.Model:
        return pi_agent.Model("mock-gpt", api="openai-completions", provider="openai", base_url=self.url)

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()  # the server exits at EOF on stdin
        self.process.wait(timeout=5)
        self.process.stdout.close()


def rows(args: argparse.Namespace) -> Iterator[Tuple[str, str, int, List[float]]]:
    deltas: int = args.deltas
    calls: int = args.tool_calls
    repeat: int = args.repeat

    with pi_agent.FauxProvider(token_size=(1, 1)) as faux:
        text = "abcd" * deltas  # one 4-character token per delta

        def script_faux() -> None:
            faux.push(text)

        for name, run in (("for", stream_sync), ("async for", stream_async)):
            events, seconds = measure(lambda: run(faux.model), script_faux, repeat)
            yield f"faux stream, {deltas} deltas, {name}", "events", events, seconds

    if not args.no_http:
        server = MockServer()
        try:
            model = server.model()

            def script_http() -> None:
                server.push({"text": "x" * deltas, "delta_size": 1})

            for name, run in (("for", stream_sync), ("async for", stream_async)):
                events, seconds = measure(lambda: run(model), script_http, repeat)
                yield f"http stream, {deltas} deltas, {name}", "events", events, seconds
        finally:
            server.close()

    def noop(n: int) -> str:
        return "ok"

    with pi_agent.FauxProvider() as faux:
        agent = pi_agent.Agent(faux.model, tools=[noop])

        def one_batch() -> None:
            agent.reset()
            faux.push([pi_agent.faux_tool_call("noop", {"n": i}) for i in range(calls)])
            faux.push("done")

        def many_turns() -> None:
            agent.reset()
            faux.set_responses(
                [[pi_agent.faux_tool_call("noop", {"n": i})] for i in range(calls)] + ["done"]
            )

        def run_agent() -> int:
            agent.prompt_sync("go")
            results = [m for m in agent.messages if m["role"] == "toolResult"]
            assert len(results) == calls, agent.error_message
            return calls

        _, seconds = measure(run_agent, one_batch, repeat)
        yield f"agent, {calls} tool calls in one turn", "tool calls", calls, seconds
        _, seconds = measure(run_agent, many_turns, repeat)
        yield f"agent, {calls} turns of one tool call", "tool calls", calls, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--tool-calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-http", action="store_true", help="skip the mock-server rows")
    args = parser.parse_args()

    print(f"pi_agent {pi_agent.__version__}, best and median of {args.repeat} runs\n")
    header = f"{'benchmark':<42} {'per run':>16} {'best /s':>12} {'median /s':>12} {'best ms':>9}"
    print(header)
    print("-" * len(header))
    for name, unit, count, seconds in rows(args):
        best, median = min(seconds), statistics.median(seconds)
        print(
            f"{name:<42} {f'{count} {unit}':>16} {count / best:>12,.0f} {count / median:>12,.0f}"
            f" {best * 1000:>9.1f}"
        )


if __name__ == "__main__":
    main()
