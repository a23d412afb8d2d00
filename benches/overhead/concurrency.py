"""Concurrent streams in one Python process (issue 23): N ``pi_agent.stream`` calls at once
(``async for``) against the overhead benchmark's local server (server.py), each reading
FRAMES text deltas paced INTERVAL_US apart, so every stream is open at the same time.

    python concurrency.py [--streams N] [--frames F] [--interval-us US]     defaults 1000 20 50000

Prints one JSON line: ``streams``, ``frames`` (received in all), ``wall_s``, ``frames_per_s``,
``late_frames`` (delivered more than 10 ms after the server wrote them: a stall),
``max_late_ms``, ``rss_idle_kb`` (before), ``rss_peak_kb`` (VmHWM), ``kib_per_stream`` ((peak
- idle) / N) and ``rss_after_kb`` (VmRSS once every stream is closed). Not a test; needs the
``pi_agent`` wheel (run.sh installs one) and ``ulimit -n`` above N.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import pathlib
import subprocess
import sys
import time
from typing import Any, Dict, List

import pi_agent

HERE = pathlib.Path(__file__).resolve().parent
CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}
STALL_NS = 10_000_000


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


async def one(model: pi_agent.Model, late: List[int]) -> int:
    frames = 0
    async with pi_agent.stream(model, CONTEXT, api_key="k", max_retries=0) as events:
        async for event in events:
            if event["type"] == "text_delta":
                frames += 1
                late.append(time.monotonic_ns() - int(event["delta"].split(" ", 1)[0]))
            elif event["type"] == "error":
                raise RuntimeError(event["error"].get("errorMessage"))
    return frames


async def run(model: pi_agent.Model, streams: int) -> Dict[str, Any]:
    late: List[int] = []
    start = time.monotonic()
    counts = await asyncio.gather(*(one(model, late) for _ in range(streams)))
    wall = time.monotonic() - start
    total = sum(counts)
    return {
        "frames": total,
        "wall_s": round(wall, 3),
        "frames_per_s": round(total / wall),
        "late_frames": sum(1 for ns in late if ns > STALL_NS),
        "max_late_ms": round(max(late, default=0) / 1e6, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--interval-us", type=int, default=50000)
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, str(HERE / "server.py")], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        model = pi_agent.Model(
            f"paced-{args.frames}-{args.interval_us}",
            api="openai-completions",
            provider="openai",
            base_url=f"http://127.0.0.1:{port}/v1",
        )
        idle = status_kb("VmRSS:")
        result: Dict[str, Any] = {"streams": args.streams}
        result.update(asyncio.run(run(model, args.streams)))
        gc.collect()
        peak = status_kb("VmHWM:")
        result.update(
            rss_idle_kb=idle,
            rss_peak_kb=peak,
            kib_per_stream=round((peak - idle) / args.streams, 1),
            rss_after_kb=status_kb("VmRSS:"),
        )
        print(json.dumps(result))
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
