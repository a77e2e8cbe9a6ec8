#!/usr/bin/env bash
# One DA3PO update at Qwen3-0.6B shape, rlvr (crates/rl-trainer/examples/update_memory.rs) and
# PyTorch + transformers (torch_update.py) side by side, one process per configuration, one
# after the other, each under an address-space limit so that a configuration that does not fit
# fails with an allocation error instead of waking the OOM killer. Results (one JSON object per
# line; failures as {"failed": ...}) go to $OUT (default runs/update_memory/results.jsonl).
#
#   bash tools/update_memory/run.sh SEQS PROMPT RESPONSE [CASES...]
#
# CASES (default: all) name configurations:
#   plain chunk layers chunk_layers chunk_layers_micro   (rlvr)
#   chunk_layers_lora                                     (rlvr, LoRA r = $LORA_R, alpha 2r)
#   torch torch_ckpt                                      (PyTorch; torch_ckpt = checkpointing)
#   torch_ckpt_lora                                       (PyTorch + peft, LoRA r = $LORA_R)
# Environment: RLVR_UPDATE_MEMORY (the example binary; default target/debug/examples/
# update_memory, built with `cargo build -p rl-trainer --example update_memory`), PYTHON (a
# Python with torch and transformers; default ~/.cache/rlvr-trl/venv/bin/python), LIMIT_GB
# (address-space limit, default 22), CHUNK (log-prob chunk, default 512), SHAPE (0.6b or 1.7b,
# default 0.6b), LORA_R (default 16), MICRO (sequences per micro-batch on both sides; default:
# all in one), REPEATS (updates per process on both sides, default 1; from the second on AdamW's
# moments exist throughout the backward: the steady state).
set -uo pipefail
cd "$(dirname "$0")/../.."
seqs=$1 prompt=$2 response=$3
shift 3
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(plain chunk layers chunk_layers chunk_layers_micro torch torch_ckpt)
BIN="${RLVR_UPDATE_MEMORY:-target/debug/examples/update_memory}"
PYTHON="${PYTHON:-$HOME/.cache/rlvr-trl/venv/bin/python}"
LIMIT_GB="${LIMIT_GB:-22}"
CHUNK="${CHUNK:-512}"
SHAPE="${SHAPE:-0.6b}"
LORA_R="${LORA_R:-16}"
MICRO="${MICRO:-0}"
REPEATS="${REPEATS:-1}"
OUT="${OUT:-runs/update_memory/results.jsonl}"
mkdir -p "$(dirname "$OUT")"
common=(--shape "$SHAPE" --seqs "$seqs" --prompt "$prompt" --response "$response" --repeats "$REPEATS")
[ "$MICRO" -gt 0 ] && common+=(--micro "$MICRO")
for c in "${cases[@]}"; do
    case $c in
        plain) cmd=("$BIN" "${common[@]}") ;;
        chunk) cmd=("$BIN" "${common[@]}" --logprob-chunk "$CHUNK") ;;
        layers) cmd=("$BIN" "${common[@]}" --checkpointing layers) ;;
        chunk_layers) cmd=("$BIN" "${common[@]}" --logprob-chunk "$CHUNK" --checkpointing layers) ;;
        chunk_layers_micro)
            # token-budget micro-batches of half the sequences' padded tokens
            cmd=("$BIN" "${common[@]}" --logprob-chunk "$CHUNK" --checkpointing layers
                 --micro-tokens $(( (prompt + response) * (seqs / 2 > 0 ? seqs / 2 : 1) ))) ;;
        chunk_layers_lora)
            cmd=("$BIN" "${common[@]}" --logprob-chunk "$CHUNK" --checkpointing layers --lora-r "$LORA_R") ;;
        torch) cmd=("$PYTHON" tools/update_memory/torch_update.py "${common[@]}" --checkpointing none) ;;
        torch_ckpt) cmd=("$PYTHON" tools/update_memory/torch_update.py "${common[@]}" --checkpointing layers) ;;
        torch_ckpt_lora)
            cmd=("$PYTHON" tools/update_memory/torch_update.py "${common[@]}" --checkpointing layers --lora-r "$LORA_R") ;;
        *) echo "unknown case $c" >&2; exit 2 ;;
    esac
    log="$(dirname "$OUT")/$c-$SHAPE-$seqs-$prompt-$response-m$MICRO-r$REPEATS.log"
    echo "== $c: ${cmd[*]}" >&2
    start=$(date +%s)
    if line=$( (ulimit -v $((LIMIT_GB << 20)); "${cmd[@]}" 2>"$log") | tail -1) && [ -n "$line" ]; then
        echo "{\"case\": \"$c\", \"result\": $line}" >> "$OUT"
    else
        echo "{\"case\": \"$c\", \"seqs\": $seqs, \"prompt\": $prompt, \"response\": $response, \"failed\": \"exit after $(( $(date +%s) - start )) s under a ${LIMIT_GB} GiB address-space limit: $( (grep -m1 -E 'memory allocation|MemoryError|Killed|error' "$log" || tail -1 "$log") | tr -d '"\\')\"}" >> "$OUT"
    fi
    tail -1 "$OUT" >&2
done
