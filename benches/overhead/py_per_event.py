"""Python's cost per stream event: CPU time (user + system, this process) of reading a
20,000-delta response minus a 200-delta one, over the 19,800 extra events, from
``pi_agent.stream`` over the in-process faux provider (no HTTP: the binding's and core's
delivery only), with ``for`` and ``async for``; median of ``--repeat`` runs.

    python py_per_event.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any, Dict

import pi_agent

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}


def read_sync(model: pi_agent.Model) -> int:
    count = 0
    with pi_agent.stream(model, CONTEXT) as events:
        for event in events:
            count += event["type"] == "text_delta"
    return count


def read_async(model: pi_agent.Model) -> int:
    async def main() -> int:
        count = 0
        async with pi_agent.stream(model, CONTEXT) as events:
            async for event in events:
                count += event["type"] == "text_delta"
        return count

    return asyncio.run(main())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with pi_agent.FauxProvider(token_size=(1, 1)) as faux:
        for name, read in (("for", read_sync), ("async for", read_async)):
            costs = []
            for _ in range(args.repeat):
                cpu = {}
                for deltas in (200, 20000):
                    faux.push("abcd" * deltas)
                    began = time.process_time()
                    got = read(faux.model)
                    cpu[deltas] = time.process_time() - began
                    assert got == deltas, got
                costs.append((cpu[20000] - cpu[200]) / 19800 * 1e6)
            print(f"{name}: {statistics.median(costs):.2f} µs/event (median of {args.repeat}; min {min(costs):.2f})")


if __name__ == "__main__":
    main()
