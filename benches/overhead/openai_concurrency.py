"""The openai-python concurrency client of the overhead benchmark: STREAMS
``AsyncOpenAI().chat.completions.create(..., stream=True)`` calls at once (``async for``),
with no connection limit (httpx's default pool holds 1,000).

    python openai_concurrency.py PORT STREAMS FRAMES INTERVAL_US

Prints one JSON line (see concurrency_run.py); ``rss_released_kb`` equals ``rss_after_kb``
(the SDK has no such call).
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

import openai

try:  # openai 3 ships its HTTP client as httpx2
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older SDKs
    import httpx  # type: ignore[no-redef]

STALL_NS = 10_000_000


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


async def one(client: Any, model: str, delays: "array.array[int]") -> int:
    frames = 0
    stream = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "go"}], stream=True)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            frames += 1
            delays.append(time.monotonic_ns() - int(chunk.choices[0].delta.content.split(" ", 1)[0]))
    return frames


async def run(port: int, model: str, streams: int, delays: "array.array[int]") -> int:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
    http = openai.DefaultAsyncHttpxClient(limits=limits, timeout=600)
    async with openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, http_client=http) as client:
        counts = await asyncio.gather(*(one(client, model, delays) for _ in range(streams)))
    return sum(counts)


def main() -> None:
    port, streams, frames, interval_us = (int(arg) for arg in sys.argv[1:5])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(run(port, "paced-1-0", 1, array.array("q")))
    gc.collect()
    idle = status_kb("VmRSS:")
    delays = array.array("q")
    start = time.monotonic()
    total = asyncio.run(run(port, f"paced-{frames}-{interval_us}", streams, delays))
    wall = time.monotonic() - start
    peak = status_kb("VmHWM:")
    gc.collect()
    time.sleep(0.5)
    after = status_kb("VmRSS:")
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
        "rss_released_kb": after,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
