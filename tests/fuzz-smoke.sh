#!/usr/bin/env bash
# Builds every fuzz target in fuzz/ and runs each briefly from its seeds: the decoders (SSE,
# partial JSON, each wire API's response stream including Bedrock's binary AWS eventstream, the
# agent proxy protocol) must never panic or break their invariants on hostile bytes (issue 9).
# About 4 minutes on 2 cores from a clean
# build (3 of them the build); FUZZ_SECONDS sets the time per target (default 6).
#
# cargo-fuzz needs nightly features; on a stable toolchain this sets RUSTC_BOOTSTRAP=1. The
# build uses no sanitizer (core has no unsafe code) and opt-level 1 (fuzz/Cargo.toml) to stay
# within that budget. For a longer hunt: `RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz
# <target> -- -max_len=16384`. A crash leaves its input in fuzz/artifacts/<target>/ and fails
# this script; replay it with `cargo fuzz run --fuzz-dir fuzz <target> <file>`, then add a
# regression test.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-6}"
export RUSTC_BOOTSTRAP=1
# No debug info (cargo-fuzz asks for line tables in every crate) and no default features of
# pi-agent (fuzz/Cargo.toml): with both, each of the twelve binaries was 110 MB and the build
# 2.5 GB of disk, enough to fill a CI machine's disk at link time; without, 29 MB and 1.3 GB
# (and 3.2 minutes of build, not 4.3). A crash's input is kept either way; replay it with a
# plain `cargo fuzz run` for a backtrace with lines. The caller's RUSTFLAGS come after: they win.
export RUSTFLAGS="-Cdebuginfo=0${RUSTFLAGS:+ $RUSTFLAGS}"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
target_dir="${CARGO_TARGET_DIR:-$PWD/target}/fuzz"
flags=(--fuzz-dir fuzz --target-dir "$target_dir" --sanitizer none --codegen-units 16)

started=$SECONDS
cargo fuzz build "${flags[@]}"
echo "fuzz-smoke: built in $((SECONDS - started)) s"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failed=()
for target in $(cargo fuzz list --fuzz-dir fuzz); do
    mkdir -p "$work/$target"
    log="$work/$target.log"
    if cargo fuzz run "${flags[@]}" "$target" "$work/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        >"$log" 2>&1; then
        echo "fuzz-smoke: $target: $(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1)"
    else
        echo "fuzz-smoke: $target FAILED:"
        tail -n 40 "$log"
        failed+=("$target")
    fi
done
echo "fuzz-smoke: total $((SECONDS - started)) s"
if ((${#failed[@]})); then
    echo "fuzz-smoke: failing targets: ${failed[*]} (inputs in fuzz/artifacts/)"
    exit 1
fi
