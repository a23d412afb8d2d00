"""Peak memory of an agent run whose Python tool returns one big str (issue 17).

    python python/benches/big_result_rss.py [MEGABYTES]     default 200

A faux model calls the tool, the tool returns MEGABYTES MiB of text, the model answers "done",
and the transcript is read once (``agent.messages``), as an application saving it would.
Prints the process's peak resident set (``resource.getrusage``) and its ratio to the result.
No timing.
"""

from __future__ import annotations

import resource
import sys

import pi_agent


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    size = megabytes << 20

    def big() -> str:
        return "abcdefghijklmnopqrstuvwxyz" * (size // 26) + "a" * (size % 26)

    with pi_agent.FauxProvider() as faux:
        faux.push([pi_agent.faux_tool_call("big", {})])
        faux.push("done")
        agent = pi_agent.Agent(faux.model, tools=[pi_agent.Tool("big", "Returns a big text", {"type": "object"}, big)])
        agent.prompt_sync("go")
        transcript = agent.messages
        sizes = [len(pi_agent.text_of(m)) for m in transcript if m["role"] == "toolResult"]
        assert sizes == [size], sizes
        del transcript, agent
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"big result {megabytes} MiB: peak RSS {peak:.1f} MiB ({peak / megabytes:.2f} x the result)")


if __name__ == "__main__":
    main()
