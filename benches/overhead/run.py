"""Runs the overhead benchmark's clients against server.py and prints the table (Markdown).
run.sh builds and installs everything and calls this; call it directly to rerun a subset:

    python3 run.py --client floor=/path/floor --client rust=/path/overhead_client [...]

Every client is a command that gets ``PORT ROUNDS FRAMES INTERVAL_US BURST`` appended, then:

1. makes ROUNDS requests for ``paced-FRAMES-INTERVAL_US`` (FRAMES deltas, one every
   INTERVAL_US µs, each carrying its send time), recording for each request the time from just
   before the request to the first text delta, and for each delta its receive time minus its
   send time (CLOCK_MONOTONIC, the same clock in every process);
2. makes one request for ``burst-BURST`` (BURST deltas written at once) and measures its own
   CPU time (user + system) across it;
3. prints one JSON line: ``ttfe_ns``, ``lat_ns``, ``cpu_s``, ``burst``, ``rss_idle_kb`` (before
   the first request), ``rss_peak_kb`` (VmHWM at the end), ``rss_after_kb`` (VmRSS at the end).

The clients run in turn, ``--repeat`` times, so a drift of the machine's speed touches them
alike. The floor runs first in every round and the others in rotated order (F A B C, F B C A,
F C A B, ...): on this virtual machine a client measured right after a similar process comes
out 20-25 µs slower to its first event than when it runs first, whichever build it is, so a
fixed order would favour the same client in every round. The first request of each run (connection set-up, runtime start) is
left out of the percentiles. "Added" figures are the client's percentile minus the floor's
(the raw-socket client), so the server's and the kernel's share cancels out.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shlex
import statistics
import subprocess
import sys
from typing import Any, Dict, List

HERE = pathlib.Path(__file__).resolve().parent


def percentile(values: List[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", action="append", default=[], help="NAME=COMMAND (the first is the floor)")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--interval-us", type=int, default=500)
    parser.add_argument("--burst", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=pathlib.Path, help="write every run's figures here")
    parser.add_argument("--server", help="the server command (default: server.py; run.sh passes server.c's binary)")
    args = parser.parse_args()
    clients = [entry.split("=", 1) for entry in args.client]
    server_argv = shlex.split(args.server) if args.server else [sys.executable, str(HERE / "server.py")]
    server = subprocess.Popen(server_argv, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name, _ in clients}
        floor, others = clients[0], clients[1:]
        for repetition in range(args.repeat):
            shift = repetition % len(others) if others else 0
            for name, command in [floor] + others[shift:] + others[:shift]:
                argv = shlex.split(command) + [port, str(args.rounds), str(args.frames), str(args.interval_us), str(args.burst)]
                done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    print(f"{name}: exit {done.returncode}: {done.stderr.strip()[-2000:]}", file=sys.stderr)
                    continue
                result = json.loads(done.stdout.strip().splitlines()[-1])
                result["ttfe_ns"] = result["ttfe_ns"][1:]
                result["lat_ns"] = result["lat_ns"][args.frames :]
                runs[name].append(result)
                print(f"  run {repetition + 1}/{args.repeat} {name} done", file=sys.stderr)
    finally:
        server.kill()
        server.wait()
    if args.json:
        args.json.write_text(json.dumps(runs))
    print_table(runs, clients[0][0])


def pooled(runs: List[Dict[str, Any]], key: str) -> List[float]:
    return [value for run in runs for value in run[key]]


def print_table(runs: Dict[str, List[Dict[str, Any]]], floor: str) -> None:
    base = runs[floor]
    floor_ttfe = pooled(base, "ttfe_ns")
    floor_lat = pooled(base, "lat_ns")
    print(
        "| client | added first event p50 / p99 (µs) | added per frame p50 / p99 (µs) "
        "| CPU per 1,000 frames (ms) | RSS idle / peak / after (MiB) |"
    )
    print("|---|---|---|---|---|")
    for name, results in runs.items():
        if not results:
            print(f"| {name} | failed | | | |")
            continue
        ttfe, lat = pooled(results, "ttfe_ns"), pooled(results, "lat_ns")
        cpu = statistics.median(r["cpu_s"] / r["burst"] * 1e6 for r in results)
        rss = [statistics.median(r[k] for r in results) / 1024 for k in ("rss_idle_kb", "rss_peak_kb", "rss_after_kb")]
        if name == floor:
            first = f"{percentile(ttfe, 50) / 1e3:.1f} / {percentile(ttfe, 99) / 1e3:.1f} (absolute)"
            frame = f"{percentile(lat, 50) / 1e3:.1f} / {percentile(lat, 99) / 1e3:.1f} (absolute)"
        else:
            first = " / ".join(
                f"{(percentile(ttfe, p) - percentile(floor_ttfe, p)) / 1e3:+.1f}" for p in (50, 99)
            )
            frame = " / ".join(f"{(percentile(lat, p) - percentile(floor_lat, p)) / 1e3:+.1f}" for p in (50, 99))
        print(f"| {name} | {first} | {frame} | {cpu:.2f} | {rss[0]:.1f} / {rss[1]:.1f} / {rss[2]:.1f} |")
    runs_each = min(len(r) for r in runs.values())
    print(
        f"\n{runs_each} runs per client, interleaved; {len(floor_ttfe)} first events and {len(floor_lat)} "
        "frames per client in the percentiles."
    )


if __name__ == "__main__":
    main()
