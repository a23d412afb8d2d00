#!/usr/bin/env bash
# Installs the official MCP reference server (@modelcontextprotocol/server-everything, npm)
# into a cache outside the work tree (default ~/.cache/pi-agent/npm, or $PI_MCP_NPM_CACHE) and
# prints the path of its entry script. A second run finds it and installs nothing. Exits 2
# when node or npm is missing (the MCP tests then skip, saying so).
set -euo pipefail
VERSION="2026.8.31"
CACHE="${PI_MCP_NPM_CACHE:-$HOME/.cache/pi-agent/npm}"
ENTRY="$CACHE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ ! -f "$ENTRY" ]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "node/npm not found" >&2
    exit 2
  fi
  mkdir -p "$CACHE"
  # A lock, so that test binaries started together install once.
  exec 9>"$CACHE/.install.lock"
  flock 9
  if [ ! -f "$ENTRY" ]; then
    npm install --silent --no-audit --no-fund --prefix "$CACHE" \
      "@modelcontextprotocol/server-everything@$VERSION" >&2
  fi
fi
echo "$ENTRY"
