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
# on an H200 from a cold build.
set -euo pipefail
cd "$(dirname "$0")/.."

step="${1:-all}"
out="${2:-gpu-check}"
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
    local bin=target/release/examples/qwen3_bench
    [ -x "$bin" ] || build
    : > "$out/bench.jsonl"
    for dtype in f32 bf16; do
        for args in "--case forward --batch 4 --seq 512" \
                    "--case train --batch 4 --seq 512" \
                    "--case decode --batch 1 --prompt 64 --new-tokens 64" \
                    "--case decode --batch 8 --prompt 64 --new-tokens 64" \
                    "--case decode --batch 8 --prompt 64 --new-tokens 512"; do
            # shellcheck disable=SC2086
            timeout 120 "$bin" --backend cuda --dtype "$dtype" --config 0.6b $args --repeats 3 \
                >> "$out/bench.jsonl" 2>> "$out/bench.err" || echo "{\"dtype\":\"$dtype\",\"args\":\"$args\",\"error\":\"failed or timed out\"}" >> "$out/bench.jsonl"
        done
    done
    log "bench done"
}

report() {
    log "report"
    {
        echo "# GPU check"
        echo
        echo "- date: $(date -u +%Y-%m-%dT%H:%MZ)"
        echo "- GPU: $(cat "$out/gpu.txt" 2>/dev/null || echo unknown)"
        echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo
        echo "## Backend suites (exit code $(cat "$out/tests.rc" 2>/dev/null || echo 'not run'))"
        echo
        echo '```'
        grep -E "test result|FAILED|panicked" "$out/tests.log" 2>/dev/null || echo "not run"
        echo '```'
        echo
        echo "## Qwen3-0.6B shape, random weights (median of 3 after a warm-up)"
        echo
        echo '```'
        cat "$out/bench.jsonl" 2>/dev/null || echo "not run"
        echo '```'
    } > "$out/report.md"
    cat "$out/report.md"
}

case "$step" in
    build) build ;;
    test) run_tests ;;
    bench) bench ;;
    report) report ;;
    all) build; run_tests; bench; report ;;
    *) echo "usage: $0 [build|test|bench|report|all] [OUT_DIR]" >&2; exit 2 ;;
esac
