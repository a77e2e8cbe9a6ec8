#!/usr/bin/env bash
# The prompt-format pilot of the Gemma-3-270M base job (docs/results.md, "Gemma-3-270M base works
# problems out"): held-out avg@4 per tier of the untrained model under each few-shot frame and
# sampling temperature, through `rlvr eval` with the job's settings (configs/da3po_gemma3.toml:
# the gsm8k verifier, strict; stop at the blank line; max_new_tokens as set there).
#
#   bash tools/pilot_gemma3_prompts.sh [OUT=runs/pilot_gemma3] [PER_TIER=12]
#
# Frames: `two_shot` (the settings' own template) and `four_shot` (two more worked problems,
# below). Temperatures: 1.0 and 0.6. Prints one table row per (frame, temperature) from each
# OUT/<frame>_t<T>/summary.json; a rerun keeps what is already sampled.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-runs/pilot_gemma3}"
per_tier="${2:-12}"
model=$(bash scripts/fetch-gemma3.sh)
cargo build -q --bin rlvr --example da3po_gemma3
target/debug/examples/da3po_gemma3 --write-data --out "$out" --eval-per-tier "$per_tier" >/dev/null
mkdir -p "$out/configs"
cp configs/da3po_gemma3.toml "$out/configs/two_shot.toml"
python3 - "$out/configs" <<'PY'
import sys, pathlib
d = pathlib.Path(sys.argv[1])
two = (d / "two_shot.toml").read_text()
extra = (
    "Question: Mia has 15 stickers. She gives 7 to her brother and then buys 3 more. How many stickers does she have now?\n"
    "Answer: After giving 7, she has 15 - 7 = 8 stickers. After buying 3 more, 8 + 3 = 11 stickers.\n"
    "#### 11\n\n"
    "Question: A farmer fills 3 baskets with 8 eggs in each basket. Then 5 eggs break. How many eggs are left?\n"
    "Answer: The baskets hold 3 * 8 = 24 eggs. After 5 break, 24 - 5 = 19 eggs are left.\n"
    "#### 19\n\n"
    "Question: {problem}"
)
assert two.count("Question: {problem}") == 1
(d / "four_shot.toml").write_text(two.replace("Question: {problem}", extra))
PY
for frame in two_shot four_shot; do
    for t in 1.0 0.6; do
        echo "== $frame, T = $t" >&2
        target/debug/rlvr eval --model "$model" --data "$out/data/eval.jsonl" \
            --config "$out/configs/$frame.toml" --k 4 --temperature "$t" --seed 0 \
            --out "$out/${frame}_t$t" >/dev/null
    done
done
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = sorted(out.glob("*_t*/summary.json"))
tiers = None
for p in rows:
    s = json.loads(p.read_text())
    if tiers is None:
        tiers = list(s["groups"])
        print("| frame, T | overall avg@4 (95 % CI) | " + " | ".join(tiers) + " | mean tokens | with #### |")
        print("|---" * (len(tiers) + 4) + "|")
    avg = s["overall"]["avg"]
    samples = [json.loads(l) for l in open(p.parent / "samples.jsonl")]
    tokens = sum(x["tokens"] for x in samples) / len(samples)
    hashes = sum("####" in x["text"] for x in samples) / len(samples)
    lo, hi = avg["ci95"]
    cells = [f"{s['groups'][t]['avg']['mean']:.3f}" for t in tiers]
    print(f"| {p.parent.name} | {avg['mean']:.3f} ({lo:.3f}–{hi:.3f}) | " + " | ".join(cells) + f" | {tokens:.0f} | {hashes:.2f} |")
PY
