"""The Python concurrency client of the overhead benchmark (issue 23): STREAMS
``pi_agent.stream`` calls at once (``async for``), each reading ``paced-FRAMES-INTERVAL_US``
from the benchmark's server, so every stream is open at the same time.

    python concurrency.py PORT STREAMS FRAMES INTERVAL_US

Prints one JSON line (see concurrency_run.py for the contract, which starts the server and
every client). Not a test; needs the ``pi_agent`` wheel (run.sh installs one).
"""

from __future__ import annotations

import array
import asyncio
import gc
import json
import resource
import sys
import time
from typing import Any, Dict

import pi_agent

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}
STALL_NS = 10_000_000


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


async def one(model: pi_agent.Model, delays: "array.array[int]") -> int:
    frames = 0
    async with pi_agent.stream(model, CONTEXT, api_key="k", max_retries=0) as events:
        async for event in events:
            if event["type"] == "text_delta":
                frames += 1
                delays.append(time.monotonic_ns() - int(event["delta"].split(" ", 1)[0]))
            elif event["type"] == "error":
                raise RuntimeError(event["error"].get("errorMessage"))
    return frames


async def run(model: pi_agent.Model, streams: int, delays: "array.array[int]") -> int:
    counts = await asyncio.gather(*(one(model, delays) for _ in range(streams)))
    return sum(counts)


def main() -> None:
    port, streams, frames, interval_us = (int(arg) for arg in sys.argv[1:5])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    base = f"http://127.0.0.1:{port}/v1"
    model = pi_agent.Model(f"paced-{frames}-{interval_us}", api="openai-completions", provider="openai", base_url=base)
    warm = pi_agent.Model("paced-1-0", api="openai-completions", provider="openai", base_url=base)
    # One stream first: the one-time set-up (runtime, HTTP client) is not a stream's cost.
    asyncio.run(run(warm, 1, array.array("q")))
    gc.collect()
    idle = status_kb("VmRSS:")
    # An array of int64, not a list of ints: the measurement's own memory stays small.
    delays = array.array("q")
    start = time.monotonic()
    total = asyncio.run(run(model, streams, delays))
    wall = time.monotonic() - start
    peak = status_kb("VmHWM:")
    gc.collect()
    time.sleep(0.5)
    after = status_kb("VmRSS:")
    trim_start = time.perf_counter()
    pi_agent.release_memory()
    release_ms = (time.perf_counter() - trim_start) * 1e3
    released = status_kb("VmRSS:")
    ordered = sorted(delays)
    pick = lambda p: ordered[int((len(ordered) - 1) * p)] if ordered else 0  # noqa: E731
    result: Dict[str, Any] = {
        "streams": streams,
        "frames": total,
        "wall_s": round(wall, 3),
        "late_frames": sum(1 for ns in delays if ns > STALL_NS),
        "p50_ms": round(pick(0.5) / 1e6, 3),
        "p99_ms": round(pick(0.99) / 1e6, 3),
        "max_late_ms": round(max(delays, default=0) / 1e6, 1),
        "rss_idle_kb": idle,
        "rss_peak_kb": peak,
        "kib_per_stream": round((peak - idle) / streams, 1),
        "rss_after_kb": after,
        "rss_released_kb": released,
        "release_ms": round(release_ms, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
