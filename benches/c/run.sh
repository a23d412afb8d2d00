#!/usr/bin/env bash
# Builds the C library in release mode and benchmarks the C pull stream with
# benches/c/stream_bench.c: microseconds per event and peak RSS for 20,000 text deltas and for
# one tool call of 4 MiB of arguments in 10,000 deltas, each from a local server.
#
#   benches/c/run.sh [RUNS]                 RUNS timed runs per case (default 10)
#   PI_BENCH_LIB=path/libpi_agent_ffi.so benches/c/run.sh    benchmark another build
#
# Uses CARGO_TARGET_DIR (default ./target) and CC (default cc).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs="${1:-10}"
target="${CARGO_TARGET_DIR:-$PWD/target}"
if [ -z "${PI_BENCH_LIB:-}" ]; then
  cargo build -q --release -p pi-agent-ffi
  PI_BENCH_LIB="$target/release/libpi_agent_ffi.so"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Laid out like an installed library: what -lpi_agent finds and the SONAME programs load.
ln -s "$(realpath "$PI_BENCH_LIB")" "$work/libpi_agent.so"
soname="$(objdump -p "$PI_BENCH_LIB" 2>/dev/null | awk '/SONAME/ {print $2}')"
[ -n "$soname" ] && ln -s "$(realpath "$PI_BENCH_LIB")" "$work/$soname"
"${CC:-cc}" -O2 -std=c11 -Wall -Wextra -Werror -Iinclude benches/c/stream_bench.c \
  -o "$work/stream_bench" -L"$work" -Wl,-rpath,"$work" -lpi_agent

echo "machine: $(nproc) cores, $(uname -sm), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/stream_bench" text 20000 "$runs"
PI_BENCH_JSON=1 "$work/stream_bench" text 20000 "$runs" | sed 's/^text/text + event JSON/'
"$work/stream_bench" tool 4 "$runs"
