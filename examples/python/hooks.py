"""Guarding and observing tools: a ``before_tool_call`` hook refuses to delete outside a sandbox
folder, a tool reports its progress through its ``ToolContext``, and the transcript is saved
and restored into a new agent.

Offline: the faux provider plays the model (it asks to delete two paths, then answers).

Run: ``pip install . && python examples/python/hooks.py``
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Optional

import pi_agent
from pi_agent.types import AgentEvent, BeforeToolCallContext, BeforeToolCallResult

SANDBOX = "/tmp/sandbox/"


@pi_agent.tool
async def delete(path: str, ctx: pi_agent.ToolContext) -> str:
    """Deletes a file.

    Args:
        path: Absolute path of the file.
    """
    for step in ("locating", "deleting"):
        if ctx.aborted:
            return "stopped"
        ctx.update(f"{step} {path}")  # a tool_execution_update event
        await asyncio.sleep(0.01)
    return f"deleted {path}"


def only_in_sandbox(ctx: BeforeToolCallContext) -> Optional[BeforeToolCallResult]:
    path = str(ctx["args"].get("path", ""))
    if ctx["toolCall"]["name"] == "delete" and not path.startswith(SANDBOX):
        return {"block": True, "reason": f"{path} is outside {SANDBOX}"}
    return None


def show(event: AgentEvent) -> None:
    if event["type"] == "tool_execution_update":
        print(f"  … {event['partialResult']['content'][0]}")
    elif event["type"] == "tool_execution_end":
        status = "error" if event["isError"] else "ok"
        print(f"← {event['toolName']} {status}: {json.dumps(event['result']['content'])}")


async def main() -> int:
    with pi_agent.FauxProvider() as faux:
        faux.push(
            [
                pi_agent.faux_tool_call("delete", {"path": "/tmp/sandbox/old.log"}),
                pi_agent.faux_tool_call("delete", {"path": "/etc/passwd"}),
            ]
        )
        faux.push("I deleted old.log; /etc/passwd is off limits.")
        agent = pi_agent.Agent(faux.model, tools=[delete], before_tool_call=only_in_sandbox)
        agent.subscribe(show)
        await agent.prompt("Clean up old.log and /etc/passwd.")

        saved = json.dumps(agent.snapshot())  # plain JSON: store it anywhere
        restored = pi_agent.Agent.restore(
            json.loads(saved), tools=[delete], before_tool_call=only_in_sandbox
        )
        print(f"restored {len(restored.messages)} messages; last: {restored.messages[-1]['content']}")
    return 0 if restored.messages == agent.messages else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
