#!/usr/bin/env bash
# GPU check on a machine with an NVIDIA GPU (CUDA driver + libraries):
#   1. build:  release build with the `cuda` feature (cold: a few minutes on 16 cores);
#   2. test:   the backend test suites (losses, trainer steps, Qwen3 vs HF fixtures) on CUDA;
#   3. bench:  Qwen3-0.6B-shaped forward, forward+backward and decode throughput in f32 and bf16;
#   4. update: one DA3PO update at Qwen3-0.6B shape (8 x (256 + 1024) tokens), f32 and then bf16
#              with f32 master weights (model.dtype = "bf16"), each twice in one process (cold,
#              then warm), with seconds and the device's peak memory;
#   5. report: a short markdown report from steps 2-4.
#
#   bash scripts/gpu-check.sh            # all steps, report in gpu-check/report.md
#   bash scripts/gpu-check.sh build|test|bench|update|report [OUT_DIR]
#
# For a GPU machine without a Rust toolchain, build here and carry the binaries:
#   bash scripts/gpu-check.sh bundle      # here: release build of the bench, the update example
#                                         # and the three suites' test binaries with `cuda`,
#                                         # stripped and xz-compressed into gpu-bundle/ (ignored),
#                                         # with gpu-bundle/manifest.tsv naming the crate
#                                         # directory each test binary reads its fixtures from
#   bash scripts/gpu-check.sh prebuilt    # there, in a copy of the repo with gpu-bundle/: the
#                                         # steps below within DEADLINE_S; output in $OUT if set,
#                                         # else OUT_DIR / gpu-check
#
# prebuilt, in this order (each phase capped so that the whole run ends by DEADLINE_S, default
# 560 s, leaving time for the report): the f32 bench (forward, the same forward again in a new
# process to measure the warm caches, forward+backward), the 0.6B DA3PO update, the three
# suites concurrently (cold), the rest of the bench (bf16, decode), the bf16 update if at least
# 60 s are left, the suites again (warm caches) if at least 75 s are left.
#
# Why it is built this way (docs/performance.md, "Why the CUDA suites were slow"):
# - cubecl 0.10 compiles every kernel with NVRTC on first use in every process and keeps no
#   compiled kernel across processes unless `[compilation] cache` is set in a cubecl.toml found
#   by walking up from the working directory. This script writes one at the repository root for
#   the run (removed at exit; an existing cubecl.toml is used as it is) with the PTX cache and
#   the autotune cache in GPU_CACHE_DIR (default .cache/gpu-check), and points the driver's
#   PTX->SASS JIT cache there too (CUDA_CACHE_PATH). A killed case leaves what it compiled and
#   tuned in the cache, so its retry (one per bench case) continues from there.
# - the same cubecl.toml logs every kernel compilation and every autotune decision to stderr;
#   every process's output is time-stamped (seconds since the script started) into its log, so
#   the gaps between compilations bound each one's cost. CUBECL_DEBUG_LOG is not used: it also
#   profiles every kernel launch (a device sync per launch) and distorts every timing.
# - all work of a device runs on cubecl's two runner threads for that device (fusion, then
#   compilation and launches), so libtest's 13 concurrent Qwen3 tests only interleave: the suites
#   run with --test-threads=1 (TEST_ARGS replaces it), and --nocapture so that cubecl's log lines
#   written from its runner threads reach the log.
# - nvidia-smi samples memory.used and utilization.gpu every 250 ms for the whole run; the report
#   gives each phase's peak device memory and mean utilisation (a phase at ~0 % utilisation for
#   minutes is compiling or tuning on the host, not computing).
#
# Environment: DEADLINE_S (prebuilt; 0 = none), TEST_TIMEOUT (s per suite run, default 120),
# TEST_WARM_TIMEOUT (90), TEST_ARGS (libtest arguments, default --test-threads=1),
# BENCH_CASE_TIMEOUT (s per bench case, default 150), BENCH_F32_S (f32 bench phase, 200),
# BENCH_REST_S (bf16/decode phase, 150), UPDATE_TIMEOUT (150), UPDATE_ARGS (extra arguments of
# the update example), GPU_CACHE_DIR, CUBECL_TOML=off (no cubecl.toml: no caches, no logs),
# CACHE_RETURN_MB (the caches are packed into $OUT/gpu-cache.tar.xz when at most this size
# compressed, default 24; carry it back as gpu-bundle/cache.tar.xz and the next prebuilt run
# starts warm). cubecl's own CUBECL_AUTOTUNE_LEVEL passes through (it only changes how shapes
# are bucketed into autotune keys, not how many candidates are tuned per key).
# bundle: CARGO_TARGET_DIR, JOBS (cargo -j) and BUNDLE_COMMIT (for a tree without .git) are
# honoured; with no nvcc on the build machine cudarc's bindings are set to CUDA 13.0
# (CUDARC_CUDA_VERSION=13000; cudarc loads libcuda and libnvrtc at run time, it does not link
# them).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

step="${1:-all}"
out="${2:-gpu-check}"
# on the lent device machine the files under $OUT are the ones that come back
if [ "$step" = prebuilt ] && [ -z "${2:-}" ] && [ -n "${OUT:-}" ]; then out="$OUT"; fi
bundle_dir=gpu-bundle
mkdir -p "$out"
out=$(cd "$out" && pwd) # absolute: the suites run from their crate directories
export CARGO_TERM_COLOR=never
features="cuda"
t0=$(date +%s)
if [ "$step" = prebuilt ]; then deadline_s="${DEADLINE_S:-560}"; else deadline_s="${DEADLINE_S:-0}"; fi
log() { echo "[$(($(date +%s) - t0))s] $*"; }
tmp=$(mktemp -d)
sampler_pid=""
created_toml=""
# The processes this script started, children after their own descendants.
descendants() {
    local p
    for p in $(ps -o pid= --ppid "$1" 2> /dev/null); do
        descendants "$p"
        echo "$p"
    done
}
# limited SECONDS CMD...: CMD under `timeout`, whose process group (timeout leads its own) is
# recorded so that stopping this script stops CMD too.
limited() {
    bash -c 'echo $$ >> "$0"; exec timeout -k 5 "$@"' "$tmp/groups" "$@"
}
cleanup() {
    set +e
    local g pids
    if [ -f "$tmp/groups" ]; then
        while read -r g; do kill -TERM -- "-$g" 2> /dev/null; done < "$tmp/groups"
    fi
    pids=$(descendants $$)
    [ -n "$pids" ] && kill $pids 2> /dev/null
    [ -n "$created_toml" ] && rm -f "$created_toml"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM # so that the EXIT trap runs (the GPU sampler, the cubecl.toml)

# Seconds left before the deadline (a large number without one).
left() {
    if [ "$deadline_s" -gt 0 ]; then echo $((t0 + deadline_s - $(date +%s))); else echo 100000; fi
}
# cap WANT RESERVE: WANT, or less so that RESERVE seconds (scaled by DEADLINE_S / 560) remain
# for what follows; never below 0.
cap() {
    local r=$2
    [ "$deadline_s" -gt 0 ] && r=$(($2 * deadline_s / 560))
    local c=$(($(left) - r))
    [ "$c" -gt "$1" ] && c=$1
    [ "$c" -lt 0 ] && c=0
    echo "$c"
}
# One line per phase boundary: epoch seconds, start|end, name (the report joins the GPU samples).
mark() { printf '%s\t%s\t%s\n' "$(date +%s.%N)" "$1" "$2" >> "$out/timeline.tsv"; }
# run_logged LOG LIMIT CMD...: CMD under a time limit, its stdout to $tmp/stdout, its stderr
# time-stamped into LOG; its exit code in $run_rc (124/137: killed by the limit).
run_logged() {
    local logf=$1 limit=$2
    shift 2
    set +e
    {
        limited "$limit" "$@" 2>&1 1>&3 | tstamp "$logf"
        echo "${PIPESTATUS[0]}" > "$tmp/rc"
    } 3> "$tmp/stdout"
    set -e
    run_rc=$(cat "$tmp/rc")
}
# Seconds since the epoch time $1, one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# stdin -> FILE (appended), each line prefixed with [seconds since the script started].
tstamp() {
    if command -v python3 > /dev/null; then
        python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
with open(sys.argv[2], "ab") as f:
    for line in sys.stdin.buffer:
        f.write(b"[%8.2f] " % (time.time() - t0) + line)
        f.flush()
' "$t0" "$1"
    else
        cat >> "$1"
    fi
}

build() {
    log "build (release, --features $features)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
    cargo build --release -p rl-models --features "$features" --example qwen3_bench 2>&1 | tail -n 3
    cargo build --release -p rl-trainer --features "$features" --example update_memory 2>&1 | tail -n 3
}

# The caches and logs cubecl and the CUDA driver keep for this run (see the header).
cache_setup() {
    cache_dir="${GPU_CACHE_DIR:-$root/.cache/gpu-check}"
    mkdir -p "$cache_dir/cubecl" "$cache_dir/nv"
    cache_dir=$(cd "$cache_dir" && pwd)
    if [ -f "$bundle_dir/cache.tar.xz" ] && [ ! -e "$cache_dir/.carried" ]; then
        xz -dc "$bundle_dir/cache.tar.xz" | tar -C "$cache_dir" -xf - && touch "$cache_dir/.carried"
    fi
    export CUDA_CACHE_PATH="$cache_dir/nv" CUDA_CACHE_MAXSIZE=4294967296
    {
        echo "cache dir: $cache_dir (carried from gpu-bundle/cache.tar.xz: $([ -e "$cache_dir/.carried" ] && echo yes || echo no))"
        echo "before: $(du -sh "$cache_dir" | cut -f1), $(cache_counts)"
        echo "CUDA_CACHE_PATH=$CUDA_CACHE_PATH CUDA_CACHE_MAXSIZE=$CUDA_CACHE_MAXSIZE CUDA_CACHE_DISABLE=${CUDA_CACHE_DISABLE:-unset}"
        echo "CUBECL_AUTOTUNE_LEVEL=${CUBECL_AUTOTUNE_LEVEL:-unset (balanced)}"
        if [ -n "${CUBECL_DEBUG_LOG:-}" ]; then
            echo "WARNING: CUBECL_DEBUG_LOG=$CUBECL_DEBUG_LOG profiles every kernel launch (a device sync each): timings are distorted"
        fi
    } > "$out/cache.txt"
    if [ "${CUBECL_TOML:-on}" = off ]; then
        echo "cubecl.toml: off (CUBECL_TOML=off): no PTX or autotune cache configured, no logs" >> "$out/cache.txt"
        return
    fi
    if [ -e "$root/cubecl.toml" ] && head -n 1 "$root/cubecl.toml" | grep -q "^# Written by scripts/gpu-check.sh"; then
        rm -f "$root/cubecl.toml" # left by a run that was killed
    fi
    if [ -e "$root/cubecl.toml" ] || [ -e "$root/CubeCL.toml" ]; then
        echo "cubecl.toml: an existing one at the repository root is used as it is" >> "$out/cache.txt"
        return
    fi
    created_toml="$root/cubecl.toml"
    cat > "$created_toml" << EOF
# Written by scripts/gpu-check.sh for one run and removed when it ends. cubecl 0.10 reads the
# first cubecl.toml found walking up from the working directory (cubecl-common config/mod.rs).
[compilation]
# PTX of every compiled kernel, reused by later processes (cubecl-cuda compute/context.rs)
cache = { file = '$cache_dir/cubecl' }
# one line per kernel compiled, written just before NVRTC runs
logger = { level = "basic", stderr = true }

[autotune]
# autotune decisions (the default, "target", is <nearest Cargo.toml dir>/target)
cache = { file = '$cache_dir/cubecl' }
# every tuned key with every candidate's time
logger = { level = "full", stderr = true }
EOF
    { echo "cubecl.toml (written for this run):"; sed 's/^/    /' "$created_toml"; } >> "$out/cache.txt"
}

# "N PTX entries, M autotune entries" in the cache directory.
cache_counts() {
    local ptx=0 tune=0 f
    for f in "$cache_dir"/cubecl/cuda/*/ptx/toc.json.log; do
        [ -f "$f" ] && ptx=$((ptx + $(wc -l < "$f")))
    done
    while IFS= read -r f; do
        tune=$((tune + $(wc -l < "$f")))
    done < <(find "$cache_dir/cubecl/autotune" -name '*.json.log' 2> /dev/null)
    echo "$ptx PTX entries, $tune autotune lines"
}

# After the run: sizes and counts, the autotune logs, and the caches packed to carry back.
cache_pack() {
    [ -n "${cache_dir:-}" ] || return 0
    echo "after: $(du -sh "$cache_dir" | cut -f1), $(cache_counts)" >> "$out/cache.txt"
    (cd "$cache_dir" && find . -type f -printf '%s\t%p\n' | sort -k2) > "$out/cache-files.tsv"
    if [ -d "$cache_dir/cubecl/autotune" ]; then
        mkdir -p "$out/autotune"
        (cd "$cache_dir/cubecl" && find autotune -name '*.json.log' -size -2M -exec cp --parents {} "$out/" \;)
    fi
    local mb
    if ! timeout 20 bash -c 'tar -C "$1" --exclude=.carried -cf - . | xz -T0 -3 > "$2"' _ \
        "$cache_dir" "$tmp/cache.tar.xz"; then
        echo "not packed: tar | xz failed or took over 20 s" >> "$out/cache.txt"
        return 0
    fi
    mb=$(($(stat -c %s "$tmp/cache.tar.xz") >> 20))
    if [ "$mb" -le "${CACHE_RETURN_MB:-24}" ]; then
        mv "$tmp/cache.tar.xz" "$out/gpu-cache.tar.xz"
        echo "packed: gpu-cache.tar.xz (${mb} MiB): copy it to gpu-bundle/cache.tar.xz to start the next run warm" >> "$out/cache.txt"
    else
        echo "not packed: ${mb} MiB compressed > CACHE_RETURN_MB=${CACHE_RETURN_MB:-24}" >> "$out/cache.txt"
    fi
}

sampler_start() {
    command -v nvidia-smi > /dev/null || return 0
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader,nounits \
        -lms 250 > "$out/gpu-samples.csv" 2> /dev/null &
    sampler_pid=$!
}

# The test suites from the cargo build (step `test`).
run_tests() {
    log "backend suites on CUDA"
    set +e
    local rc=0 r pt
    : > "$out/tests.log"
    for pt in rl-loss:loss rl-trainer:steps rl-models:qwen3_hf; do
        mark start "suite ${pt##*:}"
        # shellcheck disable=SC2086
        cargo test --release -p "${pt%%:*}" --features "$features" --test "${pt##*:}" -- cuda:: \
            ${TEST_ARGS---test-threads=1} --nocapture 2>&1 | tstamp "$out/tests.log"
        r=${PIPESTATUS[0]}
        mark end "suite ${pt##*:}"
        [ "$r" -ne 0 ] && rc=$r
    done
    set -e
    echo "$rc" > "$out/tests.rc"
    log "tests exit code $rc"
}

# The three suites of the bundle, concurrently: run_suites LABEL TIMEOUT.
run_suites() {
    local label=$1 limit=$2 name dir kind r secs rc=0 pids=()
    if [ "$limit" -lt 10 ]; then
        log "suites ($label): skipped, ${limit}s left"
        echo "=== suites ($label): skipped, ${limit}s left before the deadline" >> "$out/tests.log"
        return 0
    fi
    log "backend suites on CUDA ($label caches, concurrently, ${limit}s each)"
    mark start "suites $label"
    while IFS=$'\t' read -r name dir kind; do
        [ "$kind" = test ] || continue
        (
            set +e
            s0=$(date +%s)
            cd "$root/$dir" || exit 1
            echo "=== $name ($label): $bin/$name cuda:: ${TEST_ARGS---test-threads=1} --nocapture" > "$tmp/$label-$name.log"
            # shellcheck disable=SC2086
            CARGO_MANIFEST_DIR="$root/$dir" limited "$limit" "$bin/$name" cuda:: \
                ${TEST_ARGS---test-threads=1} --nocapture 2>&1 | tstamp "$tmp/$label-$name.log"
            echo "${PIPESTATUS[0]} $(($(date +%s) - s0))" > "$tmp/$label-$name.rc"
        ) &
        pids+=($!)
    done < "$bundle_dir/manifest.tsv"
    wait "${pids[@]}" # not the GPU sampler
    mark end "suites $label"
    while IFS=$'\t' read -r name dir kind; do
        [ "$kind" = test ] || continue
        r=1 secs=0
        [ -f "$tmp/$label-$name.rc" ] && read -r r secs < "$tmp/$label-$name.rc"
        cp "$tmp/$label-$name.log" "$out/suite-$label-$name.log"
        {
            echo "=== $name [$label] ($dir, CARGO_MANIFEST_DIR=$root/$dir): exit $r after ${secs}s (limit ${limit}s)"
            grep -E "test result|panicked|FAILED" "$tmp/$label-$name.log" || true
        } >> "$out/tests.log"
        log "  $name ($label): exit $r after ${secs}s"
        if [ "$r" -ne 0 ]; then rc=$r; fi
    done < "$bundle_dir/manifest.tsv"
    echo "$label $rc" >> "$out/tests.rc"
}

# The bench cases "DTYPE|ARGS|LABEL" within BUDGET seconds: bench_cases BUDGET CASE...
bench_cases() {
    local budget=$1
    shift
    local b0 c dtype args label rest limit s0 r secs tries name case_timeout="${BENCH_CASE_TIMEOUT:-150}"
    b0=$(date +%s)
    for c in "$@"; do
        dtype="${c%%|*}" rest="${c#*|}"
        args="${rest%%|*}" label="${rest#*|}"
        [ "$label" = "$rest" ] && label=""
        tries=0
        while :; do
            tries=$((tries + 1))
            limit=$((budget - ($(date +%s) - b0)))
            if [ "$limit" -lt 15 ]; then
                echo "{\"dtype\":\"$dtype\",\"args\":\"$args\",\"label\":\"$label\",\"error\":\"skipped: bench phase budget spent\"}" >> "$out/bench.jsonl"
                break
            fi
            [ "$limit" -gt "$case_timeout" ] && limit=$case_timeout
            name="$dtype $args${label:+ ($label)}$([ "$tries" -gt 1 ] && echo ' (retry, warm caches)' || true)"
            log "  bench $name (limit ${limit}s)"
            echo "== $name" | tstamp "$out/bench.err"
            mark start "bench $name"
            s0=$(date +%s.%N)
            # shellcheck disable=SC2086
            run_logged "$out/bench.err" "$limit" "$bench_bin" --backend cuda --dtype "$dtype" \
                --config 0.6b $args --repeats 3
            r=$run_rc
            mark end "bench $name"
            secs=$(since "$s0")
            if [ "$r" -eq 0 ] && grep -q '^{' "$tmp/stdout"; then
                grep '^{' "$tmp/stdout" | tail -n 1 \
                    | sed "s|}\$|,\"args\":\"$args\",\"label\":\"$label\",\"wall_s\":$secs,\"try\":$tries}|" >> "$out/bench.jsonl"
                break
            fi
            echo "{\"dtype\":\"$dtype\",\"args\":\"$args\",\"label\":\"$label\",\"error\":\"exit $r after ${secs}s (limit ${limit}s)\",\"wall_s\":$secs,\"try\":$tries}" >> "$out/bench.jsonl"
            # a timed-out case is retried once: what it compiled and tuned is in the caches now
            if [ "$r" -eq 124 ] || [ "$r" -eq 137 ]; then [ "$tries" -lt 2 ] && continue; fi
            break
        done
    done
}

# Qwen3-0.6B-shaped throughput cases: bench [BUDGET] (step `bench`: all cases).
bench() {
    log "Qwen3-0.6B-shaped benchmarks on CUDA"
    bench_bin="${BENCH_BIN:-target/release/examples/qwen3_bench}"
    [ -x "$bench_bin" ] || build
    bench_cases "${1:-100000}" "${bench_f32[@]}" "${bench_rest[@]}"
    log "bench done"
}
bench_f32=("f32|--case forward --batch 4 --seq 512|cold"
    "f32|--case forward --batch 4 --seq 512|again, new process: warm caches"
    "f32|--case train --batch 4 --seq 512|")
bench_rest=("bf16|--case forward --batch 4 --seq 512|" "bf16|--case train --batch 4 --seq 512|"
    "f32|--case decode --batch 1 --prompt 64 --new-tokens 64|"
    "f32|--case decode --batch 8 --prompt 64 --new-tokens 64|"
    "bf16|--case decode --batch 1 --prompt 64 --new-tokens 64|"
    "bf16|--case decode --batch 8 --prompt 64 --new-tokens 64|"
    "f32|--case decode --batch 8 --prompt 64 --new-tokens 512|"
    "bf16|--case decode --batch 8 --prompt 64 --new-tokens 512|")

# One DA3PO update at Qwen3-0.6B shape (crates/rl-trainer/examples/update_memory.rs), twice in
# one process, appended to update.jsonl: update_bench TIMEOUT [DTYPE (f32, default, or bf16)].
update_bench() {
    local limit=$1 dtype=${2:-f32} r s0 secs
    local bin_u="${UPDATE_BIN:-target/release/examples/update_memory}"
    if [ ! -x "$bin_u" ]; then
        echo "{\"error\":\"no update_memory binary ($bin_u): a bundle from before it was added\"}" >> "$out/update.jsonl"
        return 0
    fi
    if [ "$limit" -lt 30 ]; then
        echo "{\"dtype\":\"$dtype\",\"error\":\"skipped: ${limit}s left before the deadline\"}" >> "$out/update.jsonl"
        return 0
    fi
    log "0.6B DA3PO update on CUDA, $dtype, 8 x (256 + 1024) tokens, twice (limit ${limit}s)"
    mark start "update 0.6b $dtype"
    s0=$(date +%s.%N)
    # shellcheck disable=SC2086
    run_logged "$out/update-$dtype.err" "$limit" "$bin_u" --backend cuda --shape 0.6b --seqs 8 \
        --prompt 256 --response 1024 --repeats 2 --dtype "$dtype" ${UPDATE_ARGS:-}
    r=$run_rc
    mark end "update 0.6b $dtype"
    secs=$(since "$s0")
    if [ "$r" -eq 0 ] && grep -q '^{' "$tmp/stdout"; then
        grep '^{' "$tmp/stdout" | tail -n 1 | sed "s/}\$/,\"wall_s\":$secs}/" >> "$out/update.jsonl"
    else
        echo "{\"dtype\":\"$dtype\",\"error\":\"exit $r after ${secs}s (limit ${limit}s); progress in update-$dtype.err\",\"wall_s\":$secs}" >> "$out/update.jsonl"
    fi
}

# Here: the binaries for a GPU machine without a Rust toolchain (see the header).
bundle() {
    local target="${CARGO_TARGET_DIR:-target}" json
    export CUDARC_CUDA_VERSION="${CUDARC_CUDA_VERSION:-13000}"
    log "bundle: release build, --features cuda, cudarc bindings for CUDA $CUDARC_CUDA_VERSION, target $target"
    json=$(mktemp)
    cargo build ${JOBS:+-j "$JOBS"} --release -p rl-loss -p rl-trainer -p rl-models \
        --features rl-loss/cuda,rl-trainer/cuda,rl-models/cuda \
        --example qwen3_bench --example update_memory --test loss --test steps --test qwen3_hf \
        --message-format=json-render-diagnostics > "$json"
    rm -rf "$bundle_dir"
    mkdir -p "$bundle_dir/bin"
    # executables and the crate directory each one belongs to, from cargo's own messages
    python3 - "$json" "$bundle_dir" "$PWD" << 'PY'
import json, os, shutil, sys
msgs, dest, root = sys.argv[1], sys.argv[2], sys.argv[3]
want = {"qwen3_bench": "example", "update_memory": "example", "loss": "test", "steps": "test",
        "qwen3_hf": "test"}
found = {}
for line in open(msgs):
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    name = m["target"]["name"]
    if name in want and want[name] in m["target"]["kind"]:
        crate = os.path.relpath(os.path.dirname(m["manifest_path"]), root)
        found[name] = (m["executable"], crate)
missing = sorted(set(want) - set(found))
if missing:
    sys.exit(f"bundle: no executable for {missing}")
with open(os.path.join(dest, "manifest.tsv"), "w") as f:
    for name in want:  # examples first, then the suites in gpu-check's order
        exe, crate = found[name]
        shutil.copy2(exe, os.path.join(dest, "bin", name))
        f.write(f"{name}\t{crate}\t{want[name]}\n")
PY
    strip --strip-debug "$bundle_dir"/bin/*
    {
        echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(rustc --version)"
        echo "commit: ${BUNDLE_COMMIT:-$(git describe --always --dirty 2> /dev/null || echo unknown)}"
        echo "CUDARC_CUDA_VERSION=$CUDARC_CUDA_VERSION"
        (cd "$bundle_dir/bin" && ls -l)
    } > "$bundle_dir/info.txt"
    tar -C "$bundle_dir" -cf - bin | xz -T1 -6 > "$bundle_dir/bin.tar.xz"
    rm -rf "$bundle_dir/bin"
    cat "$bundle_dir/info.txt" "$bundle_dir/manifest.tsv"
    log "bundle: $(du -h "$bundle_dir/bin.tar.xz" | cut -f1) compressed, in $bundle_dir/"
}

# There: where cubecl (CUDA headers for NVRTC) and cudarc (libcuda, libnvrtc via dlopen) look.
cuda_env() {
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
    if [ -z "${CUDA_PATH:-}" ] && [ ! -d /usr/local/cuda ] && command -v nvcc > /dev/null; then
        CUDA_PATH="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
        export CUDA_PATH
    fi
    local cuda="${CUDA_PATH:-/usr/local/cuda}" d
    for d in "$cuda/lib64" "$cuda/targets/x86_64-linux/lib" /usr/local/nvidia/lib64; do
        [ -d "$d" ] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
    export LD_LIBRARY_PATH
    {
        echo "CUDA_PATH=${CUDA_PATH:-unset (cubecl uses /usr/local/cuda)}"
        echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
        nvcc --version 2>&1 | tail -n 2 || true
        ls "$cuda/include/cuda_bf16.h" 2>&1 || true
        ls "$cuda"/lib64/libnvrtc.so* 2>&1 || true
        ldconfig -p 2> /dev/null | grep -E "libcuda\.so|libnvrtc" || true
        echo "host: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
        echo "--- bundle"
        cat "$bundle_dir/info.txt" 2> /dev/null
    } > "$out/env.txt" 2>&1
}

prebuilt() {
    log "prebuilt: bundled binaries from $bundle_dir/ on CUDA (deadline ${deadline_s}s)"
    [ -f "$bundle_dir/manifest.tsv" ] || {
        echo "no $bundle_dir/manifest.tsv: run 'bash scripts/gpu-check.sh bundle' on the build machine first" >&2
        exit 2
    }
    bin="$bundle_dir/bin"
    if [ ! -d "$bin" ]; then
        bin="$tmp/bin"
        xz -dc "$bundle_dir/bin.tar.xz" | tar -C "$tmp" -xf -
    fi
    bin=$(cd "$bin" && pwd)
    : > "$out/tests.log" && : > "$out/tests.rc" && : > "$out/bench.jsonl" && : > "$out/bench.err" && : > "$out/update.jsonl"
    printf '%s\tt0\tscript\n' "$t0" > "$out/timeline.tsv"
    cuda_env
    cache_setup
    sampler_start
    bench_bin="$bin/qwen3_bench"
    log "bench, f32"
    bench_cases "$(cap "${BENCH_F32_S:-200}" 300)" "${bench_f32[@]}"
    UPDATE_BIN="$bin/update_memory" update_bench "$(cap "${UPDATE_TIMEOUT:-150}" 160)"
    run_suites cold "$(cap "${TEST_TIMEOUT:-120}" 100)"
    log "bench, bf16 and decode"
    bench_cases "$(cap "${BENCH_REST_S:-150}" 75)" "${bench_rest[@]}"
    if [ "$(left)" -ge 60 ]; then
        UPDATE_BIN="$bin/update_memory" update_bench "$(cap "${UPDATE_TIMEOUT:-150}" 45)" bf16
    fi
    if [ "$(left)" -ge 75 ]; then
        run_suites warm "$(cap "${TEST_WARM_TIMEOUT:-90}" 30)"
    else
        echo "=== suites (warm): skipped, $(left)s left before the deadline" >> "$out/tests.log"
    fi
    report
}

# Every step of a local run with cargo (a GPU machine with a Rust toolchain).
all() {
    : > "$out/bench.jsonl" && : > "$out/bench.err" && : > "$out/update.jsonl"
    printf '%s\tt0\tscript\n' "$t0" > "$out/timeline.tsv"
    build
    cache_setup
    sampler_start
    run_tests
    bench
    update_bench "${UPDATE_TIMEOUT:-600}" f32
    update_bench "${UPDATE_TIMEOUT:-600}" bf16
    report
}

# The tables of the report, from the files of one run in OUT (python3; stdlib only).
report_tables() {
    python3 - "$1" << 'PY'
import datetime, glob, json, os, re, sys
from collections import Counter

out = sys.argv[1]
TS = re.compile(r"^\[ *([0-9.]+)\] ?(.*)$")


def read(name):
    try:
        with open(os.path.join(out, name), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def jsonl(name):
    rows = []
    for line in read(name).splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows


# phases from timeline.tsv, GPU samples from gpu-samples.csv (nvidia-smi's local time)
phases, opened, t0 = [], {}, None
for line in read("timeline.tsv").splitlines():
    parts = line.split("\t")
    if len(parts) != 3:
        continue
    t, ev, name = float(parts[0]), parts[1], parts[2]
    if ev == "t0":
        t0 = t
    elif ev == "start":
        opened[name] = t
    elif name in opened:
        phases.append((name, opened.pop(name), t))
samples = []
for line in read("gpu-samples.csv").splitlines():
    parts = [p.strip() for p in line.split(",")]
    try:
        t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        samples.append((t, float(parts[1]), float(parts[2])))
    except (ValueError, IndexError):
        pass
base = min((s[1] for s in samples), default=None)


def gpu(start, end):
    """(peak memory.used MiB, peak above the run's lowest, mean utilisation %) in [start, end]."""
    inside = [s for s in samples if start <= s[0] <= end]
    if not inside:
        return None
    peak = max(s[1] for s in inside)
    return peak, peak - base, sum(s[2] for s in inside) / len(inside)


def phase(name):
    for n, a, b in phases:
        if n == name:
            return a, b
    return None


def phase_end(name):
    """A phase's end in seconds since the script started (the logs' time stamps)."""
    ph = phase(name)
    return ph[1] - t0 if ph and t0 is not None else None


def fmt_gpu(g):
    return ("%.0f | %.0f | %.0f" % g) if g else "| |"


print("## Phases")
print()
if phases:
    print("Device memory: nvidia-smi memory.used, sampled every 250 ms (includes the CUDA context")
    print("and every pool cubecl reserved); above base = minus the run's lowest sample"
          + (" (%.0f MiB)." % base if base is not None else "."))
    print()
    print("| phase | seconds | peak device MiB | above base MiB | mean GPU util % |")
    print("|---|---:|---:|---:|---:|")
    for n, a, b in phases:
        print("| %s | %.1f | %s |" % (n, b - a, fmt_gpu(gpu(a, b))))
else:
    print("no timeline")
print()


def compile_summary(lines, end=None):
    """Compilations and autotune decisions in a time-stamped log; each compilation's cost is
    bounded by the gap to the next line (the log line is written just before NVRTC runs), the
    last line's by `end` (seconds since the script started) when given."""
    stamped = []
    for line in lines:
        m = TS.match(line)
        if m:
            stamped.append((float(m.group(1)), m.group(2)))
    comp, gaps, open_at_end = [], [], None
    for i, (t, text) in enumerate(stamped):
        k = text.find("[Compiling kernel]")
        if k >= 0:
            name = text[k + len("[Compiling kernel]"):].strip() or "?"
            comp.append(name)
            if i + 1 < len(stamped):
                gaps.append((stamped[i + 1][0] - t, name))
            elif end is not None:
                gaps.append((end - t, name + " (last line of the log)"))
                open_at_end = (name, end - t)
    tuned = sum(1 for _, text in stamped if "Fastest result" in text)
    return comp, gaps, tuned, open_at_end


def print_compile(label, lines, end=None):
    comp, gaps, tuned, open_at_end = compile_summary(lines, end)
    if not comp and not tuned:
        return
    total = sum(g for g, _ in gaps)
    print("- %s: %d kernels compiled, %d autotune decisions; gaps after compilations sum to "
          "%.1f s (upper bound of NVRTC + module load time)" % (label, len(comp), tuned, total))
    if open_at_end:
        print("  - the log ends %.1f s after compiling %s began: the process stopped there"
              % (open_at_end[1], open_at_end[0]))
    top = Counter(comp).most_common(6)
    print("  - most compiled names: " + ", ".join("%s x%d" % (n, c) for n, c in top))
    worst = sorted(gaps, reverse=True)[:6]
    print("  - largest gaps: " + ", ".join("%.2f s %s" % (g, n) for g, n in worst))


print("## Backend suites")
print()
heads = [l for l in read("tests.log").splitlines() if l.startswith("===")]
for h in heads:
    print("- " + h.strip("= "))
print()
for path in sorted(glob.glob(os.path.join(out, "suite-*.log"))) + (
        [os.path.join(out, "tests.log")] if not heads else []):
    lines = open(path, errors="replace").read().splitlines()
    name = os.path.basename(path)
    results, current, prev_end = [], None, None
    for line in lines:
        m = TS.match(line)
        t, text = (float(m.group(1)), m.group(2)) if m else (None, line)
        if prev_end is None and t is not None:
            prev_end = t
        mt = re.match(r"test (\S+) \.\.\. ?(.*)$", text)
        if mt:
            current, rest = mt.group(1), mt.group(2).strip()
            if rest in ("ok", "FAILED", "ignored"):
                results.append((current, rest, t, prev_end))
                prev_end, current = t, None
            continue
        if current and text.strip() in ("ok", "FAILED", "ignored"):
            results.append((current, text.strip(), t, prev_end))
            prev_end, current = t, None
    summary = [l for l in lines if "test result" in l]
    print("### %s" % name)
    print()
    print("```")
    for test, status, t, start in results:
        dur = "%.1f s" % (t - start) if t is not None and start is not None else ""
        print("%-70s %-7s %s" % (test, status, dur))
    if current:
        print("%-70s running when the log ends" % current)
    for l in summary:
        print(l)
    print("```")
    label = re.match(r"suite-(\w+)-", name)
    print_compile(name, lines, phase_end("suites %s" % label.group(1)) if label else None)
    print()

print("## Qwen3-0.6B shape, random weights (median of 3 after a warm-up)")
print()
print("`init s`: seeded initialisation (host draw, upload, sync); `first s`: the warm-up run "
      "(compilation + autotune in a cold process); `wall s`: the whole process.")
print()
print("| dtype | case | batch | tokens | label | tok/s | s per repeat | init s | first s | wall s "
      "| peak device MiB | above base MiB | mean util % |")
print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in jsonl("bench.jsonl"):
    label = r.get("label", "")
    tries = r.get("try", 1)
    ph = phase("bench %s %s%s%s" % (r.get("dtype"), r.get("args"), " (%s)" % label if label else "",
                                    " (retry, warm caches)" if tries > 1 else ""))
    g = gpu(*ph) if ph else None
    label += " (try %d)" % tries if tries > 1 else ""
    if "error" in r:
        print("| %s | %s | | | %s | %s | | | | %s | %s |" % (
            r.get("dtype"), r.get("args"), label, r["error"], r.get("wall_s", ""), fmt_gpu(g)))
        continue
    shape = ("%s+%s" % (r["prompt"], r["new_tokens"])) if r["case"] == "decode" else str(r["seq"])
    print("| %s | %s | %s | %s | %s | %.1f | %.4f | %.1f | %.1f | %s | %s |" % (
        r["dtype"], r["case"], r["batch"], shape, label, r["tokens_per_s"], r["seconds"],
        r.get("init_s", float("nan")), r.get("first_s", float("nan")), r.get("wall_s", ""),
        fmt_gpu(g)))
print()
# per case: a kernel found in the PTX cache is loaded without a "[Compiling kernel]" line
# (cubecl-cuda compute/context.rs), so a warm case's count is what the cache did not hold
case_name, case_lines = None, []
for line in read("bench.err").splitlines() + ["[0] == end"]:
    m = TS.match(line)
    if m and m.group(2).startswith("== "):
        if case_name:
            print_compile(case_name, case_lines, phase_end("bench " + case_name))
        case_name, case_lines = m.group(2)[3:], []
    else:
        case_lines.append(line)
print()

print("## One DA3PO update at Qwen3-0.6B shape (f32, and bf16 with f32 master weights)")
print()
print("8 responses of 1,024 tokens after a 256-token prompt: pi_old forward, pi_theta forward +")
print("backward, AdamW step; twice in one process (1 = cold: compilation and autotuning; 2 = warm).")
print("Peak RSS is the host's; device memory is nvidia-smi's. bf16 also scores the sequences in f32")
print("first and gives the largest and mean |log-prob difference| of bf16 against f32.")
print()
for r in jsonl("update.jsonl"):
    dt = r.get("dtype", "f32")
    print()
    print("### %s" % dt)
    print()
    if "error" in r:
        print("- not measured: %s" % r["error"])
        continue
    gap = r.get("logprob_gap_vs_f32")
    if gap:
        print("- log-probs against f32: max |diff| %.4g, mean |diff| %.4g over %d tokens" % (
            gap["max"], gap["mean"], gap["tokens"]))
        print()
    ph = phase("update 0.6b %s" % dt)
    g = gpu(*ph) if ph else None
    tokens = r["seqs"] * (r["prompt"] + r["response"])
    print("| repeat | pi_old s | update s | update tokens/s | loss | grad norm | host peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for i, run in enumerate(r.get("runs", [r]), 1):
        print("| %d | %.2f | %.2f | %.0f | %.4g | %.4g | %s |" % (
            i, run["old_logprobs_s"], run["update_s"], tokens / run["update_s"], run["loss"],
            run["grad_norm"], run.get("peak_rss_update_mb")))
    print()
    print("- init %.1f s, process wall %s s; device memory over the process: %s" % (
        r.get("init_s", float("nan")), r.get("wall_s", "?"),
        ("peak %.0f MiB (%.0f above base), mean util %.0f %%" % g) if g else "no samples"))
print()
for dt in ("f32", "bf16"):
    print_compile("update-%s.err" % dt, read("update-%s.err" % dt).splitlines(),
                  phase_end("update 0.6b %s" % dt))
PY
}

report() {
    log "report"
    [ -n "${cache_dir:-}" ] && cache_pack
    [ -n "$sampler_pid" ] && kill "$sampler_pid" 2> /dev/null && sampler_pid=""
    {
        echo "# GPU check"
        echo
        echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "- GPU: $(cat "$out/gpu.txt" 2> /dev/null || echo unknown)"
        if [ "$step" = prebuilt ]; then
            echo "- binaries: commit $(sed -n 's/^commit: //p' "$bundle_dir/info.txt"), built $(sed -n 's/^built: //p' "$bundle_dir/info.txt")"
            echo "- checkout that ran them (fixtures): $(git rev-parse --short HEAD 2> /dev/null || echo 'no .git')"
        else
            echo "- commit: $(git rev-parse --short HEAD 2> /dev/null || echo unknown)"
        fi
        echo "- wall time of this run: $(($(date +%s) - t0)) s (deadline ${deadline_s} s)"
        echo
        echo "## Caches and cubecl configuration"
        echo
        echo '```'
        cat "$out/cache.txt" 2> /dev/null || echo "not set up"
        echo '```'
        echo
        if command -v python3 > /dev/null; then
            report_tables "$out" || echo "(the tables failed: raw files in $out)"
        else
            echo "## Raw results (no python3 for the tables)"
            echo
            echo '```'
            cat "$out/tests.log" "$out/bench.jsonl" "$out/update.jsonl" 2> /dev/null
            echo '```'
        fi
    } > "$out/report.md"
    cat "$out/report.md"
}

case "$step" in
    build) build ;;
    test)
        cache_setup
        run_tests
        ;;
    bench)
        : > "$out/bench.jsonl" && : > "$out/bench.err"
        cache_setup
        bench
        ;;
    update)
        : > "$out/update.jsonl"
        cache_setup
        update_bench "${UPDATE_TIMEOUT:-600}" f32
        update_bench "${UPDATE_TIMEOUT:-600}" bf16
        ;;
    report) report ;;
    all) all ;;
    bundle) bundle ;;
    prebuilt) prebuilt ;;
    *)
        echo "usage: $0 [build|test|bench|update|report|all|bundle|prebuilt] [OUT_DIR]" >&2
        exit 2
        ;;
esac
