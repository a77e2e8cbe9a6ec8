#!/usr/bin/env python3
"""Preference pairs from a policy's own verified samples, for `rlvr train-rm`.

    python3 tools/preferences_from_samples.py PROMPTS.jsonl SAMPLES.jsonl OUT.jsonl [--per-prompt 2] [--seed 0]

PROMPTS.jsonl: the prompt file `rlvr eval` read (one JSON object per line with `prompt`, e.g.
`rlvr export-demo`'s train.jsonl); SAMPLES.jsonl: `rlvr eval`'s samples.jsonl of it (`prompt` is
the line index, `text` the response, `correct` the verifier's verdict). For every prompt with at
least one right and one wrong sample, up to --per-prompt pairs: a wrong response (distinct texts,
drawn without replacement, seeded) as `rejected` and a right one as `chosen`, written as TRL's
`prompt`/`chosen`/`rejected` text columns. With --cross N, also N pairs per prompt with a right
sample whose `rejected` is a right response to another prompt (drawn, seeded, with another
text): pairs that only a model reading the question ranks right. Samples whose text holds `--unknown` (default
`<unk>`: a sampled unknown-token id, which text cannot carry back to the same ids) are left out
and counted. Prints how many prompts and pairs it wrote.
"""
import argparse
import json
import random
from collections import defaultdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("prompts")
    ap.add_argument("samples")
    ap.add_argument("out")
    ap.add_argument("--per-prompt", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--unknown", default="<unk>")
    ap.add_argument("--cross", type=int, default=0)
    a = ap.parse_args()
    prompts = [json.loads(line)["prompt"] for line in open(a.prompts) if line.strip()]
    right, wrong = defaultdict(set), defaultdict(set)
    unknown = 0
    for n, line in enumerate(open(a.samples), 1):
        if not line.strip():
            continue
        s = json.loads(line)
        i = s["prompt"]
        if not 0 <= i < len(prompts):
            raise SystemExit(f"{a.samples}:{n}: prompt {i} is not a line of {a.prompts}")
        if a.unknown and a.unknown in s["text"]:
            unknown += 1
            continue
        (right if s["correct"] else wrong)[i].add(s["text"])
    rng = random.Random(a.seed)
    pairs = 0
    used = 0
    with open(a.out, "w") as out:
        for i in sorted(set(right) & set(wrong)):
            chosen, rejected = sorted(right[i]), sorted(wrong[i])
            rng.shuffle(rejected)
            used += 1
            for r in rejected[: a.per_prompt]:
                line = {"prompt": prompts[i], "chosen": rng.choice(chosen), "rejected": r}
                out.write(json.dumps(line) + "\n")
                pairs += 1
        answered = sorted(right)
        cross = 0
        for i in answered if a.cross else []:
            for _ in range(a.cross):
                other = sorted(right[rng.choice(answered)] - right[i])
                if other:
                    line = {"prompt": prompts[i], "chosen": rng.choice(sorted(right[i])),
                            "rejected": rng.choice(other)}
                    out.write(json.dumps(line) + "\n")
                    cross += 1
    print(f"{cross} cross-prompt pairs")
    print(f"{pairs} pairs from {used} of {len(prompts)} prompts (those with right and wrong samples); "
          f"{unknown} samples holding {a.unknown!r} left out")


if __name__ == "__main__":
    main()
