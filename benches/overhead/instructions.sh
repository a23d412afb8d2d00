#!/usr/bin/env bash
# Instructions per request and per frame of one overhead client, counted by callgrind (the
# robust figure on a virtual machine, where latency moves with the host's state): the README's
# "Performance" section and benches/overhead/ROUNDS.md quote these.
#
#   benches/overhead/instructions.sh CLIENT...
#
# CLIENT is a client command as run.py takes it (e.g. `env PI_OVERHEAD_BLOCKING=1
# target/release/examples/overhead_client`, `~/.cache/pi-agent/overhead/bin/c_client`); it gets
# `PORT ROUNDS FRAMES INTERVAL_US BURST` appended. Starts server.c's binary from run.sh's cache
# (PI_OVERHEAD_CACHE, default ~/.cache/pi-agent/overhead; run run.sh once first), then prints,
# from the differences between runs of 1 and 101 one-frame requests, 1 request of 1 and of
# 201 frames paced 500 µs apart, and a burst of 2,000 frames:
#   per request (one frame) / per paced frame (one frame per read) / per burst frame
set -euo pipefail
cache="${PI_OVERHEAD_CACHE:-$HOME/.cache/pi-agent/overhead}"
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind" >&2; exit 1; }
[ -x "$cache/bin/server" ] || { echo "instructions.sh: run benches/overhead/run.sh first" >&2; exit 1; }
ports="$(mktemp)"
"$cache/bin/server" >"$ports" &
server=$!
trap 'kill "$server" 2>/dev/null; rm -f "$ports"' EXIT
for _ in $(seq 50); do [ -s "$ports" ] && break; sleep 0.1; done
port="$(head -n 1 "$ports")"
# Instructions of one run of the client (user space, every thread).
count() {
    # shellcheck disable=SC2086 # the client command is split on purpose
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=/dev/null $client "$port" "$@" 2>&1 >/dev/null |
        awk '/Collected/ { n = $4 } END { print n }'
}
for client in "$@"; do
    base=$(count 1 1 500 1)
    requests=$(count 101 1 500 1)
    paced=$(count 1 201 500 1)
    burst=$(count 1 1 500 2001)
    echo "$client: per request $(( (requests - base) / 100 )), per paced frame" \
        "$(( (paced - base) / 200 )), per burst frame $(( (burst - base) / 2000 ))"
done
