"""The concurrency half of the overhead benchmark (run.sh calls it after run.py): memory per
concurrent stream and the most concurrent streams sustained without a stall, per client,
against the one-thread epoll server (server.c; server.py stalls long before the clients do).

    python3 concurrency_run.py --server PATH --client NAME=COMMAND [...] [--streams N]

Every client is a command that gets ``PORT STREAMS FRAMES INTERVAL_US`` appended, opens
STREAMS streams of ``paced-FRAMES-INTERVAL_US`` at once (after one warm-up stream, so the
library's one-time set-up is not counted), and prints one JSON line: ``streams``, ``frames``
(received in all), ``wall_s``, ``late_frames`` (delivered more than 10 ms after the server
wrote them), ``p50_ms`` / ``p99_ms`` / ``max_late_ms`` (frame delays), ``rss_idle_kb``
(after the warm-up), ``rss_peak_kb`` (VmHWM), ``kib_per_stream`` ((peak - idle) / STREAMS),
``rss_after_kb`` (VmRSS 0.5 s after the last stream closed) and ``rss_released_kb`` (VmRSS
after the binding's ``release_memory``).

Two measurements per client, each in a fresh process:
1. memory: STREAMS (default 10,000) streams at once;
2. stalls: STREAMS doubled from ``--from`` until a run has a frame delayed more than 10 ms (or
   fails, or reaches ``--max``), then bisected ``--bisect`` times: the largest count sustained
   with no frame later than 10 ms. Latency figures depend on the machine's load; memory ones
   do not.
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
from typing import Any, Dict, List, Optional


def run_client(command: str, port: str, streams: int, frames: int, interval_us: int) -> Optional[Dict[str, Any]]:
    argv = shlex.split(command) + [port, str(streams), str(frames), str(interval_us)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        print(f"  {argv[0]} {streams}: timed out", file=sys.stderr)
        return None
    if done.returncode != 0 or not done.stdout.strip():
        print(f"  {command} {streams}: exit {done.returncode}: {done.stderr.strip()[-1000:]}", file=sys.stderr)
        return None
    result: Dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["frames"] != streams * frames:
        print(f"  {command} {streams}: {result['frames']} of {streams * frames} frames", file=sys.stderr)
        return None
    return result


def sustained(command: str, port: str, args: argparse.Namespace) -> int:
    """The largest stream count with no frame later than 10 ms (0: not even --from)."""
    good, bad, streams = 0, 0, args.start
    while streams <= args.max:
        result = run_client(command, port, streams, args.frames, args.interval_us)
        ok = result is not None and result["late_frames"] == 0
        print(f"  {streams} streams: {'ok' if ok else 'stalled'} {result and result['max_late_ms']} ms max", file=sys.stderr)
        if not ok:
            bad = streams
            break
        good, streams = streams, streams * 2
    for _ in range(args.bisect if bad else 0):
        middle = (good + bad) // 2
        if middle <= good or middle >= bad:
            break
        result = run_client(command, port, middle, args.frames, args.interval_us)
        ok = result is not None and result["late_frames"] == 0
        print(f"  {middle} streams: {'ok' if ok else 'stalled'}", file=sys.stderr)
        good, bad = (middle, bad) if ok else (good, middle)
    return good


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True, help="the server binary (server.c)")
    parser.add_argument("--client", action="append", default=[], help="NAME=COMMAND")
    parser.add_argument("--streams", type=int, default=10000, help="streams at once for the memory figure")
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--interval-us", type=int, default=250000)
    parser.add_argument("--from", dest="start", type=int, default=250, help="first count of the stall search")
    parser.add_argument("--max", type=int, default=16000, help="last count of the stall search")
    parser.add_argument("--bisect", type=int, default=3)
    parser.add_argument("--no-stalls", action="store_true", help="memory only")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:  # the clients inherit it
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.streams + 1000:
        sys.exit(f"ulimit -n is {hard}: {args.streams} streams need about {args.streams + 1000}")
    server = subprocess.Popen([args.server], stdout=subprocess.PIPE, text=True)
    rows: List[Dict[str, Any]] = []
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        for name, command in (entry.split("=", 1) for entry in args.client):
            print(f"{name}: memory at {args.streams} streams", file=sys.stderr)
            row: Dict[str, Any] = {"client": name, "memory": run_client(command, port, args.streams, args.frames, args.interval_us)}
            if not args.no_stalls:
                print(f"{name}: stall search", file=sys.stderr)
                row["sustained"] = sustained(command, port, args)
            rows.append(row)
    finally:
        server.kill()
        server.wait()
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out)
    print_table(rows, args)


def print_table(rows: List[Dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\n| client | KiB per stream at {args.streams:,} | RSS idle / peak / after / after release_memory (MiB) "
        f"| frame delay p50 / p99 / max (ms) | most streams with no frame > 10 ms |"
    )
    print("|---|---|---|---|---|")
    for row in rows:
        memory = row["memory"]
        most = f"{row['sustained']:,}" if "sustained" in row else "-"
        if memory is None:
            print(f"| {row['client']} | failed | | | {most} |")
            continue
        mib = " / ".join(f"{memory[k] / 1024:.0f}" for k in ("rss_idle_kb", "rss_peak_kb", "rss_after_kb", "rss_released_kb"))
        per = f"{memory['kib_per_stream']:.1f}"
        if "thread_kib" in memory:
            per += f" (threads {memory['thread_kib']:.1f})"
        delay = f"{memory['p50_ms']:.2f} / {memory['p99_ms']:.1f} / {memory['max_late_ms']:.0f}"
        print(f"| {row['client']} | {per} | {mib} | {delay} | {most} |")
    print(f"\n{args.frames} frames {args.interval_us / 1000:g} ms apart per stream.")


if __name__ == "__main__":
    main()
