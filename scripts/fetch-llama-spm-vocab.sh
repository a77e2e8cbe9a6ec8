#!/usr/bin/env bash
# Installs llama.cpp's Llama 2 SentencePiece vocabulary file (`ggml-vocab-llama-spm.gguf`: a
# GGUF with the tokenizer metadata only, tokenizer.ggml.model = "llama", 32,000 tokens with
# scores) from the llama.cpp tree in PyPI's llama-cpp-python source archive, for rl-models'
# sentencepiece tests, and prints its path. Cache: $RLVR_LLAMA_DIR/vocab (default
# ~/.cache/rlvr-llama/vocab); the file's sha256 is checked.
set -euo pipefail
SHA256=16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69
MEMBER="llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf"
ROOT="${RLVR_LLAMA_DIR:-$HOME/.cache/rlvr-llama}"
OUT="$ROOT/vocab/ggml-vocab-llama-spm.gguf"
if [ -f "$OUT" ] && echo "$SHA256  $OUT" | sha256sum -c --quiet - 2>/dev/null; then
    echo "$OUT"
    exit 0
fi
SDIST="$(bash "$(dirname "$0")/fetch-llama-cpp-sdist.sh")"
mkdir -p "$ROOT/vocab"
tmp="$(mktemp -d "$ROOT/vocab/.fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$SDIST" -C "$tmp" "$MEMBER"
echo "$SHA256  $tmp/$MEMBER" | sha256sum -c --quiet - >&2
mv "$tmp/$MEMBER" "$OUT"
echo "$OUT"
