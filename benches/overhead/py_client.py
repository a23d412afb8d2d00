"""The Python clients of the overhead benchmark: ``pi_agent.stream`` read with ``for`` (sync)
or ``async for`` (``--async``), each ``text_delta`` dict read as a user would.

    python py_client.py [--async] PORT ROUNDS FRAMES INTERVAL_US BURST

Prints one JSON line (see run.py for the contract).
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from typing import Any, Dict, List, Optional

import pi_agent

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def on_event(event: Dict[str, Any], first: List[int], lat: Optional[List[int]]) -> None:
    if event["type"] != "text_delta":
        return
    now = time.monotonic_ns()
    if not first:
        first.append(now)
    if lat is not None:
        lat.append(now - int(event["delta"].split(" ", 1)[0]))


def request_sync(model: pi_agent.Model, lat: Optional[List[int]]) -> int:
    first: List[int] = []
    with pi_agent.stream(model, CONTEXT, api_key="k") as events:
        for event in events:
            on_event(event, first, lat)
    return first[0] if first else 0


async def request_async(model: pi_agent.Model, lat: Optional[List[int]]) -> int:
    first: List[int] = []
    async with pi_agent.stream(model, CONTEXT, api_key="k") as events:
        async for event in events:
            on_event(event, first, lat)
    return first[0] if first else 0


async def main_async(paced: pi_agent.Model, bursty: pi_agent.Model, rounds: int) -> Dict[str, Any]:
    ttfe: List[int] = []
    lat: List[int] = []
    for _ in range(rounds):
        start = time.monotonic_ns()
        ttfe.append(await request_async(paced, lat) - start)
    cpu = cpu_seconds()
    await request_async(bursty, None)
    return {"ttfe_ns": ttfe, "lat_ns": lat, "cpu_s": cpu_seconds() - cpu}


def main() -> None:
    args = sys.argv[1:]
    use_async = args[0] == "--async"
    if use_async:
        args = args[1:]
    port, rounds, frames, interval, burst = args
    url = f"http://127.0.0.1:{port}/v1"
    paced = pi_agent.Model(f"paced-{frames}-{interval}", api="openai-completions", provider="openai", base_url=url)
    bursty = pi_agent.Model(f"burst-{burst}", api="openai-completions", provider="openai", base_url=url)
    idle = status_kb("VmRSS:")
    if use_async:
        result = asyncio.run(main_async(paced, bursty, int(rounds)))
    else:
        ttfe: List[int] = []
        lat: List[int] = []
        for _ in range(int(rounds)):
            start = time.monotonic_ns()
            ttfe.append(request_sync(paced, lat) - start)
        cpu = cpu_seconds()
        request_sync(bursty, None)
        result = {"ttfe_ns": ttfe, "lat_ns": lat, "cpu_s": cpu_seconds() - cpu}
    result.update(
        burst=int(burst), rss_idle_kb=idle, rss_peak_kb=status_kb("VmHWM:"), rss_after_kb=status_kb("VmRSS:")
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
