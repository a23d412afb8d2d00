"""The openai-python client of the overhead benchmark (the SDK installed by run.sh into a
scratch venv): ``client.chat.completions.create(..., stream=True)`` read with ``for``.

    python openai_client.py PORT ROUNDS FRAMES INTERVAL_US BURST
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any, List, Optional

import openai


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def request(client: Any, model: str, lat: Optional[List[int]]) -> int:
    first = 0
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "go"}], stream=True
    )
    for chunk in stream:
        if not chunk.choices or not chunk.choices[0].delta.content:
            continue
        now = time.monotonic_ns()
        if not first:
            first = now
        if lat is not None:
            lat.append(now - int(chunk.choices[0].delta.content.split(" ", 1)[0]))
    return first


def main() -> None:
    port, rounds, frames, interval, burst = sys.argv[1:]
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0)
    idle = status_kb("VmRSS:")
    ttfe: List[int] = []
    lat: List[int] = []
    for _ in range(int(rounds)):
        start = time.monotonic_ns()
        ttfe.append(request(client, f"paced-{frames}-{interval}", lat) - start)
    cpu = cpu_seconds()
    request(client, f"burst-{burst}", None)
    cpu = cpu_seconds() - cpu
    print(
        json.dumps(
            {
                "ttfe_ns": ttfe,
                "lat_ns": lat,
                "cpu_s": cpu,
                "burst": int(burst),
                "rss_idle_kb": idle,
                "rss_peak_kb": status_kb("VmHWM:"),
                "rss_after_kb": status_kb("VmRSS:"),
            }
        )
    )


if __name__ == "__main__":
    main()
