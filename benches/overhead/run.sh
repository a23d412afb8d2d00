#!/usr/bin/env bash
# The overhead benchmark, in one command: builds the release library, the Rust and C clients
# and the Python wheel, installs openai-python and pi-ai (Node) into a scratch directory
# outside the repository, then runs every client against the local timestamping server
# (server.c, one thread with epoll; server.py speaks the same protocol) and prints the table.
# Not part of the test suite.
#
#   benches/overhead/run.sh [run.py options]     e.g. --repeat 5 --rounds 101
#
# Scratch directory: PI_OVERHEAD_CACHE (default ~/.cache/pi-agent/overhead): a venv with the
# wheel, maturin and openai, and node_modules with @mariozechner/pi-ai@0.73.1. A second run
# reuses it. Without node (or npm), the pi-ai row is left out; PI_OVERHEAD_OFFLINE=1 skips
# the installs (the rows whose SDK is missing are left out).
#
# Then the concurrency half (concurrency_run.py, against the one-thread epoll server.c): memory
# per stream at PI_OVERHEAD_STREAMS (default 10,000) concurrent streams and the most streams
# sustained with no frame delayed more than 10 ms, per client. PI_OVERHEAD_CONCURRENCY=0 skips
# it; PI_OVERHEAD_CONCURRENCY_ARGS adds concurrency_run.py options (e.g. "--no-stalls").
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$PWD"
here="$repo/benches/overhead"
target="${CARGO_TARGET_DIR:-$repo/target}"
cache="${PI_OVERHEAD_CACHE:-$HOME/.cache/pi-agent/overhead}"
mkdir -p "$cache/bin" "$cache/wheels"

echo "building (release)..." >&2
# Two calls: a target filter (--example) would leave the ffi's library out of the first.
cargo build -q --release -p pi-agent-ffi
cargo build -q --release -p pi-agent-examples --example overhead_client --example overhead_concurrency
lib="$target/release/libpi_agent_ffi.so"
# Laid out like an installed library: what -lpi_agent finds and the SONAME programs load.
ln -sf "$(realpath "$lib")" "$cache/bin/libpi_agent.so"
soname="$(objdump -p "$lib" 2>/dev/null | awk '/SONAME/ {print $2}')"
[ -n "$soname" ] && ln -sf "$(realpath "$lib")" "$cache/bin/$soname"
"${CC:-cc}" -O2 -std=c11 -Wall -Wextra -Werror "$here/floor.c" -o "$cache/bin/floor"
"${CC:-cc}" -O2 -std=c11 -Wall -Wextra -Werror -Iinclude "$here/c_client.c" -o "$cache/bin/c_client" \
  -L"$cache/bin" -Wl,-rpath,"$cache/bin" -lpi_agent
"${CC:-cc}" -O2 -std=c11 -Wall -Wextra -Werror "$here/server.c" -o "$cache/bin/server"
"${CC:-cc}" -O2 -std=c11 -Wall -Wextra -Werror "$here/floor_concurrency.c" -o "$cache/bin/floor_concurrency"
"${CC:-cc}" -O2 -std=c11 -Wall -Wextra -Werror -Iinclude "$here/c_concurrency.c" \
  -o "$cache/bin/c_concurrency" -L"$cache/bin" -Wl,-rpath,"$cache/bin" -lpi_agent -lpthread

venv="$cache/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ "${PI_OVERHEAD_OFFLINE:-0}" != 1 ]; then
  "$venv/bin/python" -c 'import maturin, openai' 2>/dev/null ||
    "$venv/bin/pip" install -q maturin openai
fi
rm -f "$cache/wheels"/*.whl
VIRTUAL_ENV="$venv" "$venv/bin/maturin" build -q --release -o "$cache/wheels" >&2
"$venv/bin/pip" install -q --force-reinstall --no-deps "$cache/wheels"/*.whl

clients=(
  --client "floor=$cache/bin/floor"
  --client "floor-epoll=env FLOOR_EPOLL=1 $cache/bin/floor"
  --client "rust=$target/release/examples/overhead_client"
  --client "rust-current-thread=env PI_OVERHEAD_CURRENT_THREAD=1 $target/release/examples/overhead_client"
  --client "rust-blocking=env PI_OVERHEAD_BLOCKING=1 $target/release/examples/overhead_client"
  --client "rust-spawned=env PI_OVERHEAD_SPAWNED=1 $target/release/examples/overhead_client"
  --client "c=$cache/bin/c_client"
  --client "python=$venv/bin/python $here/py_client.py"
  --client "python-async=$venv/bin/python $here/py_client.py --async"
)
"$venv/bin/python" -c 'import openai' 2>/dev/null &&
  clients+=(--client "openai-python=$venv/bin/python $here/openai_client.py")
if command -v node >/dev/null; then
  if [ ! -d "$cache/node/node_modules/@mariozechner/pi-ai" ] && [ "${PI_OVERHEAD_OFFLINE:-0}" != 1 ] &&
    command -v npm >/dev/null; then
    mkdir -p "$cache/node"
    (cd "$cache/node" && npm install -q --no-audit --no-fund @mariozechner/pi-ai@0.73.1 >&2)
  fi
  [ -d "$cache/node/node_modules/@mariozechner/pi-ai" ] &&
    clients+=(--client "pi-ai=env PIAI_DIR=$cache/node node $here/piai_client.mjs")
fi

echo "machine: $(nproc) cores, $(uname -sm), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "load $(cut -d' ' -f1-3 /proc/loadavg); rustc $(rustc --version | cut -d' ' -f2)," \
  "$("$venv/bin/python" --version), node $(node --version 2>/dev/null || echo none)," \
  "openai $("$venv/bin/python" -c 'import openai; print(openai.__version__)' 2>/dev/null || echo none)"
python3 "$here/run.py" --server "$cache/bin/server" "${clients[@]}" "$@"

[ "${PI_OVERHEAD_CONCURRENCY:-1}" = 0 ] && exit 0
concurrency=(
  --client "floor=$cache/bin/floor_concurrency"
  --client "rust=$target/release/examples/overhead_concurrency"
  --client "c=$cache/bin/c_concurrency"
  --client "c-event-loop=env PI_OVERHEAD_C_EVENT_LOOP=1 $cache/bin/c_concurrency"
  --client "python=$venv/bin/python $here/concurrency.py"
)
"$venv/bin/python" -c 'import openai' 2>/dev/null &&
  concurrency+=(--client "openai-python=$venv/bin/python $here/openai_concurrency.py")
[ -d "$cache/node/node_modules/@mariozechner/pi-ai" ] && command -v node >/dev/null &&
  concurrency+=(--client "pi-ai=env PIAI_DIR=$cache/node node --expose-gc $here/piai_concurrency.mjs")
# The clients raise their soft limit on open files to the hard one; say what that is.
echo "concurrency: ulimit -n soft $(ulimit -Sn), hard $(ulimit -Hn)" >&2
# shellcheck disable=SC2086 # the extra options are words on purpose
python3 "$here/concurrency_run.py" --server "$cache/bin/server" --streams "${PI_OVERHEAD_STREAMS:-10000}" \
  "${concurrency[@]}" ${PI_OVERHEAD_CONCURRENCY_ARGS:-}
