#!/usr/bin/env python3
"""Two held-out evaluations of one run side by side: avg@k overall (± standard error over
problems) and per group, and a paired bootstrap interval of the change.

    python3 tools/eval_compare.py runs/RUN/eval/step-000000.jsonl runs/RUN/eval/step-000024.jsonl

Each file is what the trainer writes per held-out evaluation (one line per sample: `prompt`,
`sample`, `group`, `correct`, `tokens`, `answer`). A problem's score is the mean of its samples'
`correct` (avg@k); the overall score is the mean over problems. The bootstrap resamples problems
(the same problems in both files, paired), 10,000 times with a fixed seed, and reports the 2.5 %
and 97.5 % quantiles of the change in the overall score.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections import defaultdict
from pathlib import Path


def load(path: Path) -> tuple[dict[int, float], dict[int, str], float, int, int]:
    """Per-problem avg@k, each problem's group, mean tokens per reply, replies with an answer,
    replies."""
    correct: dict[int, list[float]] = defaultdict(list)
    group: dict[int, str] = {}
    tokens: list[int] = []
    answered = 0
    with path.open() as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                p = int(r["prompt"])
                correct[p].append(1.0 if r["correct"] else 0.0)
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"{path}:{n}: not an evaluation record ({e})")
            group[p] = str(r.get("group", ""))
            tokens.append(int(r.get("tokens", 0)))
            answered += r.get("answer") is not None
    scores = {p: sum(v) / len(v) for p, v in correct.items()}
    return scores, group, statistics.fmean(tokens), answered, len(tokens)


def summary(scores: dict[int, float]) -> str:
    values = list(scores.values())
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {se:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    a, groups, a_tok, a_ans, a_n = load(args.before)
    b, _, b_tok, b_ans, b_n = load(args.after)
    if set(a) != set(b):
        raise SystemExit("the two evaluations hold different problems")
    problems = sorted(a)
    print(f"| | {args.before.stem} | {args.after.stem} |")
    print("|---|---|---|")
    print(f"| overall (± s.e.) | {summary(a)} | {summary(b)} |")
    for g in sorted(set(groups.values())):
        ps = [p for p in problems if groups[p] == g]
        mean = lambda s: statistics.fmean(s[p] for p in ps)  # noqa: E731
        print(f"| {g} ({len(ps)} problems) | {mean(a):.3f} | {mean(b):.3f} |")
    print(f"| tokens per reply; replies with an answer | {a_tok:.0f}; {a_ans} of {a_n} | {b_tok:.0f}; {b_ans} of {b_n} |")
    rng = random.Random(args.seed)
    diffs = [b[p] - a[p] for p in problems]
    boot = sorted(
        statistics.fmean(rng.choice(diffs) for _ in diffs) for _ in range(args.resamples)
    )
    lo, hi = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
    print(f"\nchange {statistics.fmean(diffs):+.3f}, paired bootstrap 95 % interval {lo:+.3f} to {hi:+.3f} "
          f"({len(problems)} problems, {args.resamples} resamples)")


if __name__ == "__main__":
    main()
