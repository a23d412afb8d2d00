#!/usr/bin/env bash
# Runs the main example (examples/rust/agent.rs) against a local model: llama.cpp's
# llama-server serving SmolLM2-135M-Instruct on 127.0.0.1 (built and cached by build.sh on first
# use), stopped when the example ends. Any argument replaces the example command, e.g.
#   bash scripts/llama-server/run-example.sh python3 examples/python/agent.py
# The example picks the model from PI_MODEL_JSON, which this script sets.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${PI_LLAMA_SERVER:-}" ] || [ -z "${PI_LLAMA_MODEL:-}" ]; then
  eval "$(bash scripts/llama-server/build.sh)"
fi
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
log="$(mktemp)"
"$PI_LLAMA_SERVER" -m "$PI_LLAMA_MODEL" --host 127.0.0.1 --port "$port" -c 2048 --parallel 1 \
  --temp 0 --top-k 1 --threads 2 --no-warmup >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 600); do
  python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=5)" \
    "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
export PI_MODEL_JSON="{\"id\":\"SmolLM2-135M-Instruct\",\"api\":\"openai-completions\",\"provider\":\"llama.cpp\",\"baseUrl\":\"http://127.0.0.1:$port/v1\",\"contextWindow\":2048,\"maxTokens\":64}"
if [ "$#" -gt 0 ]; then
  "$@"
else
  cargo run -q -p pi-agent-examples --example agent
fi
