#!/usr/bin/env bash
# GPU check on a machine with an NVIDIA GPU (CUDA driver + libraries):
#   1. build:  release build with the `cuda` feature (cold: a few minutes on 16 cores);
#   2. test:   the backend test suites (losses, trainer steps, Qwen3 vs HF fixtures) on CUDA;
#   3. bench:  Qwen3-0.6B-shaped forward, forward+backward and decode throughput in f32 and bf16;
#   4. report: a short markdown report from steps 2-3.
#
#   bash scripts/gpu-check.sh            # all steps, report in gpu-check/report.md
#   bash scripts/gpu-check.sh build|test|bench|report [OUT_DIR]
#
# Each step can run on its own (test and bench build what they need). Budget: under 8 minutes
# on an H200 from a cold build (estimate; the first H200 run, 2026-11-30, did not finish the
# trainer-steps and Qwen3 suites in 170 s: docs/performance.md).
#
# For a GPU machine without a Rust toolchain, build here and carry the binaries:
#   bash scripts/gpu-check.sh bundle      # here: release build of the bench and the three suites'
#                                         # test binaries with `cuda`, stripped and xz-compressed
#                                         # into gpu-bundle/ (ignored), with gpu-bundle/manifest.tsv
#                                         # naming the crate directory each test binary reads
#                                         # its fixtures from (the run-time CARGO_MANIFEST_DIR)
#   bash scripts/gpu-check.sh prebuilt    # there, in a copy of the repo with gpu-bundle/: the
#                                         # suites (filter `cuda::`), the bench matrix, the report;
#                                         # output in $OUT if set, else OUT_DIR / gpu-check
# bundle: CARGO_TARGET_DIR, JOBS (cargo -j) and BUNDLE_COMMIT (for a tree without .git) are
# honoured; with no nvcc on the build machine cudarc's bindings are set to CUDA 13.0 (CUDARC_CUDA_VERSION=13000; cudarc loads libcuda
# and libnvrtc at run time, it does not link them). prebuilt: TEST_TIMEOUT (s per suite, the
# three run concurrently), TEST_ARGS (extra libtest arguments, e.g. --test-threads=1),
# BENCH_BUDGET_S (no new bench case after this many seconds) and BENCH_CASE_TIMEOUT (s per
# case). cubecl's own variables pass through (CUBECL_AUTOTUNE_LEVEL, CUBECL_DEBUG_LOG=FILE logs
# every kernel compilation and autotune run).
set -euo pipefail
cd "$(dirname "$0")/.."

step="${1:-all}"
out="${2:-gpu-check}"
# on the lent device machine the files under $OUT are the ones that come back
if [ "$step" = prebuilt ] && [ -z "${2:-}" ] && [ -n "${OUT:-}" ]; then out="$OUT"; fi
bundle_dir=gpu-bundle
mkdir -p "$out"
export CARGO_TERM_COLOR=never
features="cuda"
t0=$(date +%s)
log() { echo "[$(( $(date +%s) - t0 ))s] $*"; }

build() {
    log "build (release, --features $features)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1 || true
    cargo build --release -p rl-models --features "$features" --example qwen3_bench 2>&1 | tail -n 3
}

run_tests() {
    log "backend suites on CUDA"
    set +e
    local rc=0 r
    : > "$out/tests.log"
    for pt in rl-loss:loss rl-trainer:steps rl-models:qwen3_hf; do
        cargo test --release -p "${pt%%:*}" --features "$features" --test "${pt##*:}" -- cuda:: \
            2>&1 | tee -a "$out/tests.log" | grep -E "^test |test result"
        r=${PIPESTATUS[0]}
        [ "$r" -ne 0 ] && rc=$r
    done
    set -e
    echo "$rc" > "$out/tests.rc"
    log "tests exit code $rc"
}

bench() {
    log "Qwen3-0.6B-shaped benchmarks on CUDA"
    local bin="${BENCH_BIN:-target/release/examples/qwen3_bench}"
    [ -x "$bin" ] || build
    local budget="${BENCH_BUDGET_S:-0}" case_timeout="${BENCH_CASE_TIMEOUT:-120}" b0 dtype args
    b0=$(date +%s)
    : > "$out/bench.jsonl"
    : > "$out/bench.err"
    # the short cases of both dtypes first, the 512-token decodes last (dropped first by the budget)
    local cases=()
    for dtype in f32 bf16; do
        for args in "--case forward --batch 4 --seq 512" \
                    "--case train --batch 4 --seq 512" \
                    "--case decode --batch 1 --prompt 64 --new-tokens 64" \
                    "--case decode --batch 8 --prompt 64 --new-tokens 64"; do
            cases+=("$dtype|$args")
        done
    done
    cases+=("f32|--case decode --batch 8 --prompt 64 --new-tokens 512"
            "bf16|--case decode --batch 8 --prompt 64 --new-tokens 512")
    for c in "${cases[@]}"; do
        dtype="${c%%|*}"; args="${c#*|}"
        if [ "$budget" -gt 0 ] && [ $(( $(date +%s) - b0 )) -ge "$budget" ]; then
            echo "{\"dtype\":\"$dtype\",\"args\":\"$args\",\"error\":\"skipped: bench budget of ${budget}s spent\"}" >> "$out/bench.jsonl"
            continue
        fi
        log "  $dtype $args"
        echo "== $dtype $args" >> "$out/bench.err"
        # shellcheck disable=SC2086
        timeout "$case_timeout" "$bin" --backend cuda --dtype "$dtype" --config 0.6b $args --repeats 3 \
            >> "$out/bench.jsonl" 2>> "$out/bench.err" || echo "{\"dtype\":\"$dtype\",\"args\":\"$args\",\"error\":\"failed or timed out (${case_timeout}s)\"}" >> "$out/bench.jsonl"
    done
    log "bench done"
}

# Here: the binaries for a GPU machine without a Rust toolchain (see the header).
bundle() {
    local target="${CARGO_TARGET_DIR:-target}" json
    export CUDARC_CUDA_VERSION="${CUDARC_CUDA_VERSION:-13000}"
    log "bundle: release build, --features cuda, cudarc bindings for CUDA $CUDARC_CUDA_VERSION, target $target"
    json=$(mktemp)
    cargo build ${JOBS:+-j "$JOBS"} --release -p rl-loss -p rl-trainer -p rl-models \
        --features rl-loss/cuda,rl-trainer/cuda,rl-models/cuda \
        --example qwen3_bench --test loss --test steps --test qwen3_hf \
        --message-format=json-render-diagnostics > "$json"
    rm -rf "$bundle_dir"
    mkdir -p "$bundle_dir/bin"
    # executables and the crate directory each one belongs to, from cargo's own messages
    python3 - "$json" "$bundle_dir" "$PWD" <<'PY'
import json, os, shutil, sys
msgs, dest, root = sys.argv[1], sys.argv[2], sys.argv[3]
want = {"qwen3_bench": "example", "loss": "test", "steps": "test", "qwen3_hf": "test"}
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
    for name in want:  # bench first, then the suites in gpu-check's order
        exe, crate = found[name]
        shutil.copy2(exe, os.path.join(dest, "bin", name))
        f.write(f"{name}\t{crate}\t{want[name]}\n")
PY
    strip --strip-debug "$bundle_dir"/bin/*
    {
        echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(rustc --version)"
        echo "commit: ${BUNDLE_COMMIT:-$(git describe --always --dirty 2>/dev/null || echo unknown)}"
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
        ldconfig -p 2>/dev/null | grep -E "libcuda\.so|libnvrtc" || true
        echo "--- bundle"
        cat "$bundle_dir/info.txt" 2>/dev/null
    } > "$out/env.txt" 2>&1
}

prebuilt() {
    log "prebuilt: bundled binaries from $bundle_dir/ on CUDA"
    [ -f "$bundle_dir/manifest.tsv" ] || {
        echo "no $bundle_dir/manifest.tsv: run 'bash scripts/gpu-check.sh bundle' on the build machine first" >&2
        exit 2
    }
    local bin="$bundle_dir/bin" root="$PWD" tmp name dir kind rc=0 r
    if [ ! -d "$bin" ]; then
        bin=$(mktemp -d)/bin
        xz -dc "$bundle_dir/bin.tar.xz" | tar -C "$(dirname "$bin")" -xf -
    fi
    cuda_env
    log "backend suites on CUDA (concurrently, ${TEST_TIMEOUT:-240}s each)"
    tmp=$(mktemp -d)
    while IFS=$'\t' read -r name dir kind; do
        [ "$kind" = test ] || continue
        (
            set +e
            s0=$(date +%s)
            cd "$root/$dir" || exit 1
            # shellcheck disable=SC2086
            CARGO_MANIFEST_DIR="$root/$dir" timeout "${TEST_TIMEOUT:-240}" "$bin/$name" cuda:: \
                ${TEST_ARGS:-} > "$tmp/$name.log" 2>&1
            echo "$? $(( $(date +%s) - s0 ))" > "$tmp/$name.rc"
        ) &
    done < "$bundle_dir/manifest.tsv"
    wait
    : > "$out/tests.log"
    while IFS=$'\t' read -r name dir kind; do
        [ "$kind" = test ] || continue
        r=1 secs=0
        [ -f "$tmp/$name.rc" ] && read -r r secs < "$tmp/$name.rc"
        { echo "=== $name ($dir, CARGO_MANIFEST_DIR=$root/$dir): exit $r after ${secs}s"; cat "$tmp/$name.log"; } >> "$out/tests.log"
        grep -E "^test |test result" "$tmp/$name.log" || true
        log "  $name: exit $r after ${secs}s"
        if [ "$r" -ne 0 ]; then rc=$r; fi
    done < "$bundle_dir/manifest.tsv"
    echo "$rc" > "$out/tests.rc"
    BENCH_BIN="$bin/qwen3_bench" bench
    report
}

report() {
    log "report"
    {
        echo "# GPU check"
        echo
        echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "- GPU: $(cat "$out/gpu.txt" 2>/dev/null || echo unknown)"
        if [ "$step" = prebuilt ]; then
            echo "- binaries: commit $(sed -n 's/^commit: //p' "$bundle_dir/info.txt"), built $(sed -n 's/^built: //p' "$bundle_dir/info.txt")"
            echo "- checkout that ran them (fixtures): $(git rev-parse --short HEAD 2>/dev/null || echo 'no .git')"
        else
            echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
        fi
        echo
        echo "## Backend suites (exit code $(cat "$out/tests.rc" 2>/dev/null || echo 'not run'))"
        echo
        echo '```'
        grep -E "^=== |test result|FAILED|panicked" "$out/tests.log" 2>/dev/null || echo "not run"
        echo '```'
        echo
        echo "## Qwen3-0.6B shape, random weights (median of 3 after a warm-up)"
        echo
        echo '```'
        cat "$out/bench.jsonl" 2>/dev/null || echo "not run"
        echo '```'
        echo
        python3 - "$out/bench.jsonl" <<'PY' 2>/dev/null || true
import json, sys
print("| dtype | case | batch | tokens | tok/s | s per repeat |")
print("|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "error" in r:
        print(f"| {r['dtype']} | {r['args']} | | | {r['error']} | |")
        continue
    shape = f"{r['prompt']}+{r['new_tokens']}" if r["case"] == "decode" else f"{r['seq']}"
    print(f"| {r['dtype']} | {r['case']} | {r['batch']} | {shape} | {r['tokens_per_s']:,.1f} | {r['seconds']:.4f} |")
PY
    } > "$out/report.md"
    cat "$out/report.md"
}

case "$step" in
    build) build ;;
    test) run_tests ;;
    bench) bench ;;
    report) report ;;
    all) build; run_tests; bench; report ;;
    bundle) bundle ;;
    prebuilt) prebuilt ;;
    *) echo "usage: $0 [build|test|bench|report|all|bundle|prebuilt] [OUT_DIR]" >&2; exit 2 ;;
esac
