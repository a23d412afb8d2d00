#!/usr/bin/env python3
"""Removes from tests/fixtures/pi/known_gaps.json the gaps a replay no longer shows.

Run a replay with PI_FIXTURES_REPORT=<report.json> (Rust: `cargo test -p pi-agent --test
pi_fixtures`, C: `cargo test -p pi-agent-ffi --test pi_fixtures`, Python: the pytest module),
then: `python3 scripts/pi-fixtures/prune_known_gaps.py <layer> <report.json>`. Only removes:
new mismatches still fail the replay and must be understood, then listed or fixed by hand.
"""

import json
import pathlib
import re
import sys

GAPS = pathlib.Path(__file__).resolve().parents[2] / "tests/fixtures/pi/known_gaps.json"


def matches(pattern: str, path: str) -> bool:
    regex = "^" + "/".join(
        "[^/]+" if part == "*" else re.escape(part) for part in pattern.split("/")
    ) + "$"
    return re.match(regex, path) is not None


def main() -> None:
    layer, report_path = sys.argv[1], sys.argv[2]
    report = {o["fixture"]: [m["path"] for m in o["mismatches"]] for o in json.load(open(report_path))}
    data = json.loads(GAPS.read_text())
    pruned = []
    for gap in data["gaps"]:
        if layer not in gap["layers"]:
            pruned.append(gap)
            continue
        keep, fixed = [], []
        for fixture in gap["fixtures"]:
            seen = report.get(fixture)
            still = seen is None or any(matches(p, m) for p in gap["paths"] for m in seen)
            (keep if still else fixed).append(fixture)
        others = [l for l in gap["layers"] if l != layer]
        if keep:
            pruned.append({**gap, "fixtures": keep})
        if fixed and others:
            pruned.append({**gap, "layers": others, "fixtures": fixed})
    data["gaps"] = pruned
    GAPS.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
