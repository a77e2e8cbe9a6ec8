#!/usr/bin/env python3
"""Paired (same-seed) comparisons from a `rlvr mix` run folder's metrics.jsonl.

    python3 tools/datamix/paired.py runs/mix-synthetic [reference-method]

Seeds fix the model initialisation and the data stream, so runs of two methods with the same seed
differ only by the mixture. Prints, for every method, the final target validation loss minus the
reference method's (default `uniform`) per seed, their mean and standard deviation, and the mean
validation loss over the second half of training (an average over 10 evaluations, less noisy than
the last one).
"""

import collections
import json
import statistics
import sys


def main():
    folder = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else "uniform"
    curves = collections.defaultdict(dict)  # (method, seed) -> {step: loss}
    for line in open(f"{folder}/metrics.jsonl"):
        r = json.loads(line)
        if "val/target_loss" in r:
            curves[(r["method"], r["seed"])][r["step"]] = r["val/target_loss"]
    methods = list(dict.fromkeys(m for m, _ in curves))
    seeds = sorted({s for _, s in curves})
    last = max(max(c) for c in curves.values())

    def late_mean(c):
        vals = [v for s, v in c.items() if s > last // 2]
        return sum(vals) / len(vals)

    print(f"reference: {ref}; seeds {seeds}; final step {last}")
    print("| method | final − ref per seed | mean ± std | late-half mean − ref per seed | mean ± std |")
    print("|---|---|---|---|---|")
    for m in methods:
        if (ref, seeds[0]) not in curves:
            break
        done = [s for s in seeds if last in curves.get((m, s), {})]
        if not done:
            continue
        d_final = [curves[(m, s)][last] - curves[(ref, s)][last] for s in done]
        d_late = [late_mean(curves[(m, s)]) - late_mean(curves[(ref, s)]) for s in done]
        sd = lambda x: statistics.pstdev(x) if len(x) > 1 else 0.0
        print(
            f"| {m} | {', '.join(f'{d:+.4f}' for d in d_final)} | {statistics.mean(d_final):+.4f} ± {sd(d_final):.4f} "
            f"| {', '.join(f'{d:+.4f}' for d in d_late)} | {statistics.mean(d_late):+.4f} ± {sd(d_late):.4f} |"
        )


if __name__ == "__main__":
    main()
