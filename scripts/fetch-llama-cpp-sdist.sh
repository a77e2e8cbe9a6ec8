#!/usr/bin/env bash
# Downloads PyPI's llama-cpp-python source archive (sha256-checked), whose vendor/llama.cpp tree
# scripts/build-llama-server.sh builds and whose llama.cpp vocabulary files
# (vendor/llama.cpp/models/ggml-vocab-*.gguf) scripts/fetch-llama-spm-vocab.sh takes, and prints
# its path. Cached in $RLVR_LLAMA_DIR/dl (default ~/.cache/rlvr-llama/dl); a no-op when present.
set -euo pipefail
VERSION=0.3.36
SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
ROOT="${RLVR_LLAMA_DIR:-$HOME/.cache/rlvr-llama}"
mkdir -p "$ROOT/dl"
SDIST="$ROOT/dl/llama_cpp_python-$VERSION.tar.gz"
if [ ! -f "$SDIST" ]; then
    # Straight from PyPI's file host: `pip download --no-binary :all:` would prepare the sdist's
    # metadata, which builds its build backend (and cmake) from source.
    echo "fetch-llama-cpp-sdist: downloading llama-cpp-python==$VERSION (source archive, ~77 MB)" >&2
    python3 - "$SDIST.part" <<'PY'
import sys, urllib.request
url = ("https://files.pythonhosted.org/packages/ec/e9/"
       "e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/"
       "llama_cpp_python-0.3.36.tar.gz")
with urllib.request.urlopen(url, timeout=600) as r, open(sys.argv[1], "wb") as f:
    while chunk := r.read(1 << 20):
        f.write(chunk)
PY
    echo "$SHA256  $SDIST.part" | sha256sum -c --quiet - >&2
    mv "$SDIST.part" "$SDIST"
fi
echo "$SDIST"
