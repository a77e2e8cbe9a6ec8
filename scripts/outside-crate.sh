#!/usr/bin/env bash
# Builds and runs tools/outside-crate: a project that depends on rl-models and rl-trainer by path
# in its own workspace, so without the rlvr workspace's [patch.crates-io] section, as a crates.io
# user builds them (docs/crates-io.md). It checks which patched crates the build has, that
# cross-process workers are refused without the patched collective crates, and runs a short
# DA3PO training run.
#
# Usage: scripts/outside-crate.sh [--patched] [--release] [-- ARGS]
#   --patched   add rlvr's [patch.crates-io] section (third_party/), as a user who follows
#               docs/crates-io.md does; the binary then expects every patch
#   --release   an optimised build (for timing: ARGS such as --size default --steps 15)
#   ARGS        passed to the binary (default: --size tiny --steps 2)
# The crate is copied to a temporary folder with absolute paths and the workspace's Cargo.lock
# (the same versions as here; cargo resolves the published burn crates from crates.io). Build
# output goes to $CARGO_TARGET_DIR (default: the workspace's target/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd -P)"
patched=0
profile=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --patched) patched=1 ;;
        --release) profile=(--release) ;;
        --) shift; break ;;
        *) echo "outside-crate: unknown argument $1 (usage: $0 [--patched] [--release] [-- ARGS])" >&2; exit 2 ;;
    esac
    shift
done
args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(--size tiny --steps 2)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
crate="$work/outside-crate"
mkdir -p "$crate"
cp -r "$root/tools/outside-crate/src" "$crate/"
sed "s#\.\./\.\./crates/#$root/crates/#g" "$root/tools/outside-crate/Cargo.toml" >"$crate/Cargo.toml"
cp "$root/Cargo.lock" "$crate/Cargo.lock"
expect=unpatched
if [[ $patched == 1 ]]; then
    expect=patched
    {
        echo
        echo "[patch.crates-io]"
        for c in burn-collective burn-communication burn-flex gemm-common macerator; do
            echo "$c = { path = \"$root/third_party/$c\" }"
        done
    } >>"$crate/Cargo.toml"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
echo "outside-crate: building ($expect, ${profile[*]:-dev}) in $CARGO_TARGET_DIR" >&2
cargo build "${profile[@]}" --manifest-path "$crate/Cargo.toml"
dir=debug
[[ ${#profile[@]} -gt 0 ]] && dir=release
"$CARGO_TARGET_DIR/$dir/rlvr-outside-crate" --expect "$expect" "${args[@]}"
