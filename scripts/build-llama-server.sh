#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` for the engine tests, from the llama.cpp sources vendored in
# PyPI's llama-cpp-python source archive (Debian 12 has no llama.cpp package, and only package
# registries are reachable). The result is cached outside the clone and reused:
#
#   bash scripts/build-llama-server.sh      # prints the path of llama-server
#
# Cache: $RLVR_LLAMA_DIR (default ~/.cache/rlvr-llama): dl/ (the sdist), src/, build/, bin/.
# Cold build: 510 s with -j2 on the idle 2-core machine (a cold CI run on a fresh machine,
# 2026-12-01, download included); warm: a version check, under a second.
# Needs cmake >= 3.21 (Debian: apt-get install cmake) and a C++17 compiler.
set -euo pipefail
VERSION=0.3.36
ROOT="${RLVR_LLAMA_DIR:-$HOME/.cache/rlvr-llama}"
BIN="$ROOT/bin/llama-server"

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
    echo "$BIN"
    exit 0
fi

if ! command -v cmake >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "build-llama-server: installing cmake from Debian" >&2
        apt-get install -y cmake >&2
    else
        echo "build-llama-server: cmake >= 3.21 is needed (Debian: apt-get install cmake)" >&2
        exit 1
    fi
fi

mkdir -p "$ROOT/bin"
SDIST="$(bash "$(dirname "$0")/fetch-llama-cpp-sdist.sh")"
SRC="$ROOT/src/llama_cpp_python-$VERSION"
if [ ! -d "$SRC/vendor/llama.cpp" ]; then
    rm -rf "$ROOT/src"
    mkdir -p "$ROOT/src"
    tar -xzf "$SDIST" -C "$ROOT/src"
fi
start=$(date +%s)
cmake -S "$SRC/vendor/llama.cpp" -B "$ROOT/build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$ROOT/build" --target llama-server -j"$(nproc)" >&2
cp "$ROOT/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "build-llama-server: built in $(( $(date +%s) - start )) s" >&2
"$BIN" --version >&2
echo "$BIN"
