"""Python's cost per stream event: CPU time (user + system, this process) of reading a
20,000-delta response minus a 200-delta one, over the 19,800 extra events, from the
in-process faux provider (no HTTP: the binding's and core's delivery only); median of
``--repeat`` runs. The cases:

- ``for`` / ``async for``: ``pi_agent.stream``'s events;
- ``agent for`` / ``agent async for``: an ``Agent.run``'s events (``message_update`` per
  delta);
- ``agent subscriber``: a subscriber of ``Agent.prompt_sync`` (the run waits for each call,
  on a worker thread).

    python py_per_event.py [--repeat 15] [--only for,async for,...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any, Callable, Dict, List

import pi_agent

CONTEXT: Dict[str, Any] = {"messages": [{"role": "user", "content": "go", "timestamp": 0}]}
SMALL, LARGE = 200, 20000


def read_sync(faux: pi_agent.FauxProvider) -> int:
    count = 0
    with pi_agent.stream(faux.model, CONTEXT) as events:
        for event in events:
            count += event["type"] == "text_delta"
    return count


def read_async(faux: pi_agent.FauxProvider) -> int:
    async def main() -> int:
        count = 0
        async with pi_agent.stream(faux.model, CONTEXT) as events:
            async for event in events:
                count += event["type"] == "text_delta"
        return count

    return asyncio.run(main())


def agent_sync(faux: pi_agent.FauxProvider) -> int:
    count = 0
    with pi_agent.Agent(faux.model).run("go") as run:
        for event in run:
            count += event["type"] == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta"
    return count


def agent_async(faux: pi_agent.FauxProvider) -> int:
    async def main() -> int:
        count = 0
        async with pi_agent.Agent(faux.model).run("go") as run:
            async for event in run:
                count += (
                    event["type"] == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta"
                )
        return count

    return asyncio.run(main())


def agent_subscriber(faux: pi_agent.FauxProvider) -> int:
    seen: List[int] = [0]

    def on_event(event: Dict[str, Any]) -> None:
        if event["type"] == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta":
            seen[0] += 1

    agent = pi_agent.Agent(faux.model)
    agent.subscribe(on_event)
    agent.prompt_sync("go")
    return seen[0]


CASES: Dict[str, Callable[[pi_agent.FauxProvider], int]] = {
    "for": read_sync,
    "async for": read_async,
    "agent for": agent_sync,
    "agent async for": agent_async,
    "agent subscriber": agent_subscriber,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated case names")
    args = parser.parse_args()
    with pi_agent.FauxProvider(token_size=(1, 1)) as faux:
        for name in args.only.split(","):
            read = CASES[name.strip()]
            costs = []
            for _ in range(args.repeat):
                cpu = {}
                for deltas in (SMALL, LARGE):
                    faux.push("abcd" * deltas)
                    began = time.process_time()
                    got = read(faux)
                    cpu[deltas] = time.process_time() - began
                    assert got == deltas, got
                costs.append((cpu[LARGE] - cpu[SMALL]) / (LARGE - SMALL) * 1e6)
            print(f"{name}: {statistics.median(costs):.2f} µs/event (median of {args.repeat}; min {min(costs):.2f})")


if __name__ == "__main__":
    main()
