#!/usr/bin/env bash
# The patched copies of crates.io packages in third_party/ (used through `[patch.crates-io]` in
# the workspace's Cargo.toml), as the published .crate plus the files in
# third_party/patches/NAME-VERSION/ (described in third_party/PATCHED.md).
#
# Usage:
#   scripts/vendor.sh check [NAME...]
#       Rebuilds each copy from the published crate and its patches in a temporary folder and
#       compares it with third_party/NAME (`diff -r`). Exits 1 and names the differing files
#       when a copy is not exactly crate + patches, or when third_party/ or third_party/patches/
#       holds a folder this script does not know.
#   scripts/vendor.sh regenerate [--rejects] [NAME...]
#       Replaces third_party/NAME with crate + patches. Without --rejects, third_party/ is left
#       untouched unless every patch applies exactly. With --rejects (for a version bump), the
#       hunks that apply are kept, the others are left beside their files as *.rej, and the
#       script exits 2; resolve them by hand, delete the *.rej files, then run `diff NAME`.
#   scripts/vendor.sh diff NAME...
#       Rewrites third_party/patches/NAME-VERSION/ from the current third_party/NAME: one patch
#       per changed or added file (`NNNN-<path, / as ->.patch`, in path order, `diff -u`
#       without timestamps) and `removed-files`, the published files the copy leaves out. Then
#       runs `check NAME`.
#
# Patches dir: NNNN-*.patch are applied in name order with `patch -p1 -F0` (no fuzz). The
# optional `removed-files` lists one path per line (`#` starts a comment); each must exist in
# the published crate and is deleted before the patches are applied. Lock files are listed
# there rather than written as deletion patches: cargo ignores a dependency's Cargo.lock, and a
# deletion patch would carry all its thousands of lines.
#
# Each crate's sha256 is the `cksum` of its version in the crates.io index (Cargo.lock has none
# for a patched package), e.g. `curl -s https://index.crates.io/bu/rn/burn-flex`.
# Download cache: ${XDG_CACHE_HOME:-$HOME/.cache}/rlvr-vendor/NAME-VERSION.crate, reused while
# its sha256 matches, so `check` runs offline after the first time.
# Needs bash, curl, tar, patch (GNU), diff, cmp, sha256sum or shasum.
set -euo pipefail
export LC_ALL=C

# NAME VERSION SHA256
CRATES=(
    "burn-collective 0.21.0 427bdb9240bd1a41199066d44bc042341aa0cb0f46590d9af15eb88dd81066e7"
    "burn-communication 0.21.0 0da93381634fb6ef2fbf9a19415439b1658bcdf2e044a8909caa54b8960e63bb"
    "burn-flex 0.21.0 0098bf6555c151517b4c98ca0e8ed1ab6a976e40f5f4e967c117b00eee21e192"
    "gemm-common 0.19.0 88027625910cc9b1085aaaa1c4bc46bb3a36aad323452b33c25b5e4e7c8e2a3e"
    "macerator 0.3.4 2ddeaadb76e307b1d2b4836adee77910d405b9f6c1ca031bc81a7a398e2b22f2"
)

root="$(cd "$(dirname "$0")/.." && pwd -P)"
third="$root/third_party"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rlvr-vendor"

log() { echo "vendor: $*" >&2; }
die() { echo "vendor: error: $*" >&2; exit 1; }

work=""
cleanup() { if [[ -n "$work" ]]; then rm -rf "$work"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

sha_of() {
    if command -v sha256sum >/dev/null; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        die "neither sha256sum nor shasum is installed"
    fi
}

# Sets VERSION and SHA for crate $1; dies if this script does not vendor it.
lookup() {
    local entry n v s
    for entry in "${CRATES[@]}"; do
        read -r n v s <<<"$entry"
        if [[ "$n" == "$1" ]]; then
            VERSION="$v" SHA="$s"
            return 0
        fi
    done
    die "$1 is not a vendored crate (known: $(known_names))"
}

known_names() {
    local entry
    for entry in "${CRATES[@]}"; do printf '%s ' "${entry%% *}"; done
}

# Prints the path of the verified NAME-VERSION.crate, downloading it when the cache lacks it.
fetch_crate() {
    local name="$1" version="$2" sha="$3"
    local file="$cache/$name-$version.crate" got
    mkdir -p "$cache" || die "cannot create the cache folder $cache"
    if [[ -f "$file" ]]; then
        got="$(sha_of "$file")"
        if [[ "$got" == "$sha" ]]; then
            echo "$file"
            return 0
        fi
        log "$file has sha256 $got, expected $sha: downloading it again"
        rm -f "$file"
    fi
    command -v curl >/dev/null || die "curl is needed to download $name $version"
    local url="https://static.crates.io/crates/$name/$name-$version.crate"
    local part="$file.part.$$"
    log "downloading $url"
    if ! curl --fail --silent --show-error --location --connect-timeout 15 --max-time 300 \
        --retry 3 --retry-delay 2 --retry-connrefused -o "$part" "$url"; then
        rm -f "$part"
        die "could not download $url"
    fi
    got="$(sha_of "$part")"
    if [[ "$got" != "$sha" ]]; then
        rm -f "$part"
        die "$url has sha256 $got, expected $sha (the cksum of $name $version in the crates.io index)"
    fi
    mv -f "$part" "$file"
    echo "$file"
}

# Extracts the published crate into $2 (which must not exist).
unpack() {
    local name="$1" dest="$2" crate tmp
    crate="$(fetch_crate "$name" "$VERSION" "$SHA")"
    tmp="$(mktemp -d "$work/unpack.XXXXXX")"
    tar -xzf "$crate" -C "$tmp" --no-same-owner --no-same-permissions
    [[ -d "$tmp/$name-$VERSION" ]] || die "$crate has no top folder $name-$VERSION/"
    mv "$tmp/$name-$VERSION" "$dest"
    rmdir "$tmp" 2>/dev/null || die "$crate holds more than $name-$VERSION/"
}

# Applies third_party/patches/NAME-VERSION to the unpacked crate in $2. With $3 = rejects, a
# patch that does not apply leaves *.rej files and the function returns 2 at the end.
apply_patches() {
    local name="$1" dir="$2" mode="${3:-strict}"
    local pdir="$third/patches/$name-$VERSION" p path failed=0
    [[ -d "$pdir" ]] || die "no patches folder third_party/patches/$name-$VERSION"
    if [[ -f "$pdir/removed-files" ]]; then
        while IFS= read -r path || [[ -n "$path" ]]; do
            path="${path%%#*}"
            path="${path#"${path%%[![:space:]]*}"}"
            path="${path%"${path##*[![:space:]]}"}"
            [[ -z "$path" ]] && continue
            [[ "$path" != /* && "$path" != *..* ]] || die "third_party/patches/$name-$VERSION/removed-files: bad path $path"
            [[ -f "$dir/$path" ]] ||
                die "third_party/patches/$name-$VERSION/removed-files lists $path, which $name $VERSION does not have"
            rm -f "$dir/$path"
        done <"$pdir/removed-files"
    fi
    for p in "$pdir"/*; do
        [[ -e "$p" ]] || continue
        case "${p##*/}" in
            *.patch) ;;
            removed-files) continue ;;
            *) die "unexpected file in third_party/patches/$name-$VERSION: ${p##*/}" ;;
        esac
        if [[ "$mode" == rejects ]]; then
            if ! patch -p1 -F0 -N -s --no-backup-if-mismatch -d "$dir" -i "$p"; then
                log "${p##*/} did not apply cleanly (rejected hunks in *.rej)"
                failed=1
            fi
        elif ! patch -p1 -F0 -N -s --no-backup-if-mismatch -r - -d "$dir" -i "$p" >"$work/patch.log" 2>&1; then
            cat "$work/patch.log" >&2
            die "third_party/patches/$name-$VERSION/${p##*/} does not apply to $name $VERSION"
        fi
    done
    if [[ "$failed" == 1 ]]; then return 2; fi
    return 0
}

# Dies when third_party/ or third_party/patches/ holds a folder no CRATES entry accounts for.
check_layout() {
    local d base entry n v s ok bad=0
    for d in "$third"/*/ "$third"/patches/*/; do
        [[ -d "$d" ]] || continue
        base="${d%/}"
        base="${base##*/}"
        [[ "$d" == "$third/patches/" ]] && continue
        ok=0
        for entry in "${CRATES[@]}"; do
            read -r n v s <<<"$entry"
            if [[ "$d" == "$third/patches/"* ]]; then
                [[ "$base" == "$n-$v" ]] && ok=1
            else
                [[ "$base" == "$n" ]] && ok=1
            fi
        done
        if [[ "$ok" == 0 ]]; then
            echo "vendor: ${d#"$root/"} belongs to no crate in scripts/vendor.sh's CRATES" >&2
            bad=1
        fi
    done
    return "$bad"
}

names_or_all() {
    if [[ $# -gt 0 ]]; then printf '%s\n' "$@"; else
        local entry
        for entry in "${CRATES[@]}"; do echo "${entry%% *}"; done
    fi
}

cmd_check() {
    local name bad=0
    work="$(mktemp -d "${TMPDIR:-/tmp}/rlvr-vendor.XXXXXX")"
    check_layout || bad=1
    while IFS= read -r name; do
        lookup "$name"
        [[ -d "$third/$name" ]] || { echo "vendor: third_party/$name is missing" >&2; bad=1; continue; }
        unpack "$name" "$work/$name"
        apply_patches "$name" "$work/$name"
        if diff -r -q "$work/$name" "$third/$name" >"$work/diff.out" 2>&1; then
            log "$name $VERSION: third_party/$name equals the crate + $(patch_count "$name") patches"
        else
            bad=1
            echo "vendor: third_party/$name differs from $name $VERSION + third_party/patches/$name-$VERSION:" >&2
            sed -e "s#$work/$name#(crate + patches)#g" -e "s#$root/##g" "$work/diff.out" >&2
        fi
    done < <(names_or_all "$@")
    if [[ "$bad" == 1 ]]; then
        die "the vendored copies are not their crate + patches; after editing a copy, run scripts/vendor.sh diff NAME"
    fi
}

patch_count() {
    local n=0 p
    for p in "$third/patches/$1-$VERSION"/*.patch; do [[ -e "$p" ]] && n=$((n + 1)); done
    echo "$n"
}

cmd_regenerate() {
    local mode=strict name rc any_rejects=0
    if [[ "${1:-}" == --rejects ]]; then mode=rejects; shift; fi
    work="$(mktemp -d "${TMPDIR:-/tmp}/rlvr-vendor.XXXXXX")"
    while IFS= read -r name; do
        lookup "$name"
        unpack "$name" "$work/$name"
        rc=0
        apply_patches "$name" "$work/$name" "$mode" || rc=$?
        [[ "$rc" == 0 || "$rc" == 2 ]] || exit "$rc"
        rm -rf "${third:?}/$name"
        cp -R "$work/$name" "$third/$name"
        if [[ "$rc" == 2 ]]; then
            any_rejects=1
            log "third_party/$name rebuilt with rejected hunks:"
            (cd "$third/$name" && find . -name '*.rej' | sed 's#^\./#  #') >&2
        else
            log "third_party/$name rebuilt from $name $VERSION + $(patch_count "$name") patches"
        fi
    done < <(names_or_all "$@")
    if [[ "$any_rejects" == 1 ]]; then
        log "resolve the *.rej hunks by hand, delete the *.rej files, then run scripts/vendor.sh diff NAME"
        exit 2
    fi
}

# Writes the patch for one path into $4 (a/ = published crate $1, b/ = copy $2).
write_patch() {
    local up="$1" copy="$2" path="$3" out="$4" name="$5" rc=0
    {
        echo "rlvr patch of $name $VERSION (crates.io): $path. Described in third_party/PATCHED.md."
        echo "Written by scripts/vendor.sh diff $name; applied by scripts/vendor.sh with patch -p1."
        echo
        if [[ -f "$up/$path" ]]; then
            diff -u --label "a/$path" --label "b/$path" "$up/$path" "$copy/$path" || rc=$?
        else
            diff -u --label /dev/null --label "b/$path" /dev/null "$copy/$path" || rc=$?
        fi
    } >"$out"
    [[ "$rc" == 1 ]] || die "diff failed on $path (status $rc)"
    if grep -q '^Binary files ' "$out"; then die "$path is a binary file; patches cannot carry it"; fi
}

cmd_diff() {
    [[ $# -gt 0 ]] || die "usage: scripts/vendor.sh diff NAME..."
    local name up copy pdir stage path n file
    work="$(mktemp -d "${TMPDIR:-/tmp}/rlvr-vendor.XXXXXX")"
    for name in "$@"; do
        lookup "$name"
        copy="$third/$name"
        [[ -d "$copy" ]] || die "third_party/$name does not exist"
        if [[ -n "$(cd "$copy" && find . -name '*.rej' -print -quit)" ]]; then
            die "third_party/$name still holds *.rej files"
        fi
        if [[ -n "$(cd "$copy" && find . ! -type f ! -type d -print -quit)" ]]; then
            die "third_party/$name holds something that is neither a file nor a folder"
        fi
        up="$work/$name"
        unpack "$name" "$up"
        stage="$work/patches-$name"
        mkdir -p "$stage"
        (cd "$up" && find . -type f | sed 's#^\./##' | sort) >"$work/up.list"
        (cd "$copy" && find . -type f | sed 's#^\./##' | sort) >"$work/copy.list"
        comm -23 "$work/up.list" "$work/copy.list" >"$work/removed"
        if [[ -s "$work/removed" ]]; then
            {
                echo "# Files of $name $VERSION (crates.io) that third_party/$name leaves out."
                echo "# Written by scripts/vendor.sh diff $name. Described in third_party/PATCHED.md."
                cat "$work/removed"
            } >"$stage/removed-files"
        fi
        n=0
        while IFS= read -r path; do
            if [[ -f "$up/$path" ]] && cmp -s "$up/$path" "$copy/$path"; then continue; fi
            n=$((n + 1))
            file="$(printf '%04d' "$n")-${path//\//-}.patch"
            write_patch "$up" "$copy" "$path" "$stage/$file" "$name"
        done <"$work/copy.list"
        pdir="$third/patches/$name-$VERSION"
        mkdir -p "$pdir"
        rm -f "$pdir"/*.patch "$pdir/removed-files"
        if compgen -G "$stage/*" >/dev/null; then cp "$stage"/* "$pdir"/; fi
        log "third_party/patches/$name-$VERSION: $n patches$([[ -s "$work/removed" ]] && echo ", $(wc -l <"$work/removed") removed files")"
    done
    local w="$work"
    work=""
    rm -rf "$w"
    cmd_check "$@"
}

case "${1:-}" in
    check) shift; cmd_check "$@" ;;
    regenerate) shift; cmd_regenerate "$@" ;;
    diff) shift; cmd_diff "$@" ;;
    *)
        echo "usage: scripts/vendor.sh check [NAME...] | regenerate [--rejects] [NAME...] | diff NAME..." >&2
        exit 64
        ;;
esac
