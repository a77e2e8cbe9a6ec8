#!/usr/bin/env python3
"""PPO (with its critic) against GRPO at equal generated responses, from a folder of paired
runs `ROOT/seed-S/{grpo,ppo}/metrics.jsonl` (what `rlvr compare --algorithms grpo,ppo` writes;
the SmolLM2 runs are laid out the same way by hand).

    python3 tools/ppo_vs_grpo.py ROOT [--plot FILE.png] [--title TEXT]

Prints, per seed, the last held-out evaluation of each run (overall avg@k and generated
responses) and the paired difference PPO − GRPO with its mean and 95 % t-interval
(tools/paired_t.py), per tier too; then the critic's value loss and explained variance at the
first and last steps. With --plot (matplotlib), a figure of three panels: held-out avg@k against
generated responses (each seed), the critic's value loss per step, its explained variance per
step.
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paired_t import half_width  # noqa: E402


def rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def evaluations(run: Path) -> list[tuple[int, dict]]:
    """(generated responses so far, the evaluation) of every evaluated step."""
    return [(r["rollouts_total"], r["eval"]) for r in rows(run) if r.get("eval")]


def interval(diffs: list[float]) -> str:
    m = statistics.mean(diffs)
    if len(diffs) < 2:
        return f"{m:+.3f} (one seed: no interval)"
    h = half_width(diffs)
    return f"{m:+.3f} [{m - h:+.3f}, {m + h:+.3f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--title", default="PPO against GRPO")
    args = ap.parse_args()
    seeds = sorted(args.root.glob("seed-*"), key=lambda p: int(p.name.split("-")[1]))
    seeds = [s for s in seeds if (s / "grpo/metrics.jsonl").exists() and (s / "ppo/metrics.jsonl").exists()]
    if not seeds:
        sys.exit(f"{args.root}: no seed-*/grpo and seed-*/ppo run folders")
    diffs: dict[str, list[float]] = {}
    print("| seed | GRPO: responses, avg@k | PPO: responses, avg@k | PPO − GRPO |")
    print("|---|---|---|---|")
    for s in seeds:
        (ng, eg), (np_, ep) = evaluations(s / "grpo")[-1], evaluations(s / "ppo")[-1]
        if ng != np_:
            print(f"warning: {s.name}: unequal responses ({ng} vs {np_})", file=sys.stderr)
        g, p = eg["overall"]["avg_at_k"], ep["overall"]["avg_at_k"]
        diffs.setdefault("overall", []).append(p - g)
        for tier, te in ep["tiers"].items():
            diffs.setdefault(tier, []).append(te["avg_at_k"] - eg["tiers"][tier]["avg_at_k"])
        print(f"| {s.name} | {ng}, {g:.3f} | {np_}, {p:.3f} | {p - g:+.3f} |")
    print()
    print("| tier | mean PPO − GRPO, 95 % t-interval |")
    print("|---|---|")
    for tier in sorted(diffs, key=lambda t: (t == "overall", t)):
        print(f"| {tier} | {interval(diffs[tier])} |")
    print()
    print("| seed | value loss, first → last step | explained variance, first → last step |")
    print("|---|---|---|")
    for s in seeds:
        c = [r["critic"] for r in rows(s / "ppo") if r.get("critic")]
        print(f"| {s.name} | {c[0]['value_loss']:.3f} → {c[-1]['value_loss']:.3f} | "
              f"{c[0]['vf_explained_var']:+.3f} → {c[-1]['vf_explained_var']:+.3f} |")
    if args.plot:
        plot(seeds, args.plot, args.title)


def plot(seeds: list[Path], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    colours = {"grpo": "tab:blue", "ppo": "tab:red"}
    for i, s in enumerate(seeds):
        for algo in ("grpo", "ppo"):
            ev = evaluations(s / algo)
            ax[0].plot([n for n, _ in ev], [e["overall"]["avg_at_k"] for _, e in ev],
                       color=colours[algo], alpha=0.8, marker="o", ms=3,
                       label=algo.upper() if i == 0 else None)
        c = [(r["step"], r["critic"]) for r in rows(s / "ppo") if r.get("critic")]
        ax[1].plot([t for t, _ in c], [x["value_loss"] for _, x in c], color="tab:red", alpha=0.4 + 0.2 * i,
                   label=s.name)
        ax[2].plot([t for t, _ in c], [x["vf_explained_var"] for _, x in c], color="tab:red",
                   alpha=0.4 + 0.2 * i, label=s.name)
    k = evaluations(seeds[0] / "grpo")[-1][1]["overall"]["k"]
    ax[0].set(xlabel="generated responses", ylabel=f"held-out avg@{k}", title="accuracy")
    ax[1].set(xlabel="step", ylabel="value loss (token mean)", title="PPO's critic: value loss")
    # A step whose returns are all equal (every reward 0) has Var(R) = 0 and an unbounded ratio.
    ax[2].set(xlabel="step", ylabel="1 − Var(R − V)/Var(R)", ylim=(-2, 1),
              title="PPO's critic: explained variance (clipped to [−2, 1])")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
