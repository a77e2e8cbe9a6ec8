#!/usr/bin/env python3
"""Distillation against RL at equal generated responses, from a `distill_embedded` run folder.

    python3 tools/distill_vs_rl.py runs/distill_embedded [OTHER]

For each seed s: the last held-out evaluation of `distill-sS` (overall avg@k) and the
evaluation of `rl-sS` whose `rollouts_total` is nearest to that run's; the paired differences
(distillation − RL), their mean and 95 % t-interval (tools/paired_t.py). With OTHER (another
run folder of the example, e.g. with another `[distill]` config), also the paired differences
of the last evaluations of the two folders' distillation runs (OTHER − first).
"""
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_t import half_width  # noqa: E402


def evaluations(run: Path) -> list[tuple[int, float]]:
    """(generated responses so far, overall held-out avg@k) of every evaluated step."""
    out = []
    for line in (run / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("eval"):
            out.append((row["rollouts_total"], row["eval"]["overall"]["avg_at_k"]))
    return out


def interval(diffs: list[float]) -> str:
    m, h = statistics.mean(diffs), half_width(diffs)
    return f"mean {m:+.3f}, 95 % interval [{m - h:+.3f}, {m + h:+.3f}] over {len(diffs)} seeds"


def main() -> None:
    root = Path(sys.argv[1])
    diffs = []
    print("| seed | distillation: responses, avg@k | RL nearest: responses, avg@k | difference |")
    print("|---|---|---|---|")
    for d in sorted(root.glob("distill-s*")):
        seed = d.name.removeprefix("distill-s")
        n, dist = evaluations(d)[-1]
        rn, rl = min(evaluations(root / f"rl-s{seed}"), key=lambda e: abs(e[0] - n))
        diffs.append(dist - rl)
        print(f"| {seed} | {n}, {dist:.3f} | {rn}, {rl:.3f} | {dist - rl:+.3f} |")
    print(f"\ndistillation - RL: {interval(diffs)}")
    if len(sys.argv) > 2:
        other = Path(sys.argv[2])
        pairs = [(evaluations(d)[-1][1], evaluations(other / d.name)[-1][1])
                 for d in sorted(root.glob("distill-s*"))]
        print(f"{other.name} - {root.name}, last evaluations: "
              + ", ".join(f"{b - a:+.3f}" for a, b in pairs)
              + f"; {interval([b - a for a, b in pairs])}")


if __name__ == "__main__":
    main()
