#!/usr/bin/env python3
"""The pilot and the study of "Does DA3PO beat DAPO on SmolLM2's hard tiers?" (docs/results.md).

    python3 tools/pilot_smollm2.py --out ~/rlvr-pilot [--seeds 0,1,2] [--arms dapo,da3po]
    python3 tools/pilot_smollm2.py --out ~/rlvr-study --seeds 0,1,2,3,4,5   # the study, n = 6

Runs what the pre-registration in docs/results.md fixes, one run per (seed, arm):

1. `cargo run --example da3po_smollm2 -- --algorithm ARM --seed SEED` with the overrides of
   PILOT (the budget: 5,120 generated responses, `steps = 100` so that the budget binds; the
   in-run evaluation reduced to one held-out prompt, since the primary metric is measured once,
   at the end, by step 2). Every other setting is configs/da3po_smollm2.toml's.
2. `rlvr eval` of the run's last checkpoint on the held-out prompts of the hard tiers
   (3d+2d, 3d+3d, 2dx1d; 32 each) with avg@16 at temperature 1.0, top-p 1.0, the run's config
   and seed (the trainer's evaluation code and per-prompt seeds), and the tokenizer and chat
   template of the GGUF exported once by `rlvr export-hf`.
3. results.json and report.md in OUT: each run's primary metric, per-tier avg@16, generated
   responses, steps and wall time; the paired differences DA3PO - DAPO, their mean, standard
   deviation and 95 % t-interval, and the pre-registered n = ceil(((1.96 + 0.84) sd / 0.03)^2),
   at least 5.

A finished run (its eval summary present) is not run again, so the pilot can be continued in
another sitting. Standard library only; needs the example and `rlvr` built
(`cargo build --example da3po_smollm2 --bin rlvr`).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from paired_t import half_width

HARD = ["3d+2d", "3d+3d", "2dx1d"]
K = 16
BUDGET = 5120
PILOT = f"""steps = 100
rollout_budget = {BUDGET}
[eval]
every = 0
max_prompts = 1
[checkpoint]
every = 0
keep = 1
"""


def sh(cmd, log=None):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    with open(log, "a") if log else open(os.devnull, "w") as f:
        r = subprocess.run([str(c) for c in cmd], stdout=f if log else None,
                           stderr=subprocess.STDOUT if log else None)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(str(c) for c in cmd)}"
                 + (f"; log: {log}" if log else ""))


def run_one(a, seed: int, arm: str, hf: Path) -> dict:
    run = a.out / f"{arm}_s{seed}"
    summary = run / "eval_hard" / "summary.json"
    if not summary.exists():
        run.mkdir(parents=True, exist_ok=True)
        over = run / "pilot.toml"
        over.write_text(PILOT)
        ckpt = run / "checkpoints" / "latest"
        if not ckpt.exists():
            t0 = time.time()
            sh([a.example, "--model", a.gguf, "--algorithm", arm, "--seed", seed,
                "--config", over, "--out", run], log=run / "train.log")
            (run / "wall_s").write_text(f"{time.time() - t0:.0f}\n")
        hard = run / "data" / "eval_hard.jsonl"
        rows = [json.loads(l) for l in (run / "data" / "eval.jsonl").read_text().splitlines() if l]
        hard.write_text("".join(json.dumps(r) + "\n" for r in rows if r["tier"] in HARD))
        model = run / "checkpoints" / ckpt.read_text().strip() / "model"
        sh([a.rlvr, "eval", "--model", model, "--tokenizer", hf / "tokenizer.json",
            "--config", run / "config.toml", "--data", hard, "--k", K, "--limit", 0,
            "--temperature", "1.0", "--top-p", "1.0", "--seed", seed,
            "--out", run / "eval_hard"], log=run / "eval.log")
    s = json.loads(summary.read_text())
    metrics = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines() if l]
    last = metrics[-1]
    wall = run / "wall_s"
    return {
        "seed": seed, "arm": arm,
        "hard_avg16": s["overall"]["avg"]["mean"],
        "tiers": {g: v["avg"]["mean"] for g, v in s["groups"].items()},
        "steps": last["step"],
        "responses": last.get("rollouts_total"),
        "wall_s": float(wall.read_text()) if wall.exists() else None,
    }


def analyse(runs: list[dict], arms: list[str]) -> dict:
    by = {(r["seed"], r["arm"]): r for r in runs}
    seeds = sorted({r["seed"] for r in runs if all((r["seed"], x) in by for x in arms)})
    diffs = [by[(s, arms[1])]["hard_avg16"] - by[(s, arms[0])]["hard_avg16"] for s in seeds]
    out = {"pairs": seeds, "diffs": diffs}
    if len(diffs) >= 2:
        mean = statistics.fmean(diffs)
        sd = statistics.stdev(diffs)
        half = half_width(diffs)
        out.update(mean=mean, sd=sd, ci=[mean - half, mean + half],
                   n_study=max(5, math.ceil(((1.96 + 0.84) * sd / 0.03) ** 2)))
    return out


def report(a, runs, stats, arms) -> str:
    lines = ["| seed | arm | hard avg@16 | " + " | ".join(HARD) + " | steps | responses | wall |",
             "|---|---|---|" + "---|" * len(HARD) + "---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["seed"], r["arm"])):
        wall = f"{r['wall_s'] / 60:.1f} min" if r["wall_s"] else "?"
        lines.append(f"| {r['seed']} | {r['arm']} | {r['hard_avg16']:.4f} | "
                     + " | ".join(f"{r['tiers'].get(t, float('nan')):.4f}" for t in HARD)
                     + f" | {r['steps']} | {r['responses']} | {wall} |")
    lines.append("")
    lines.append(f"Paired differences {arms[1]} - {arms[0]} (seeds {stats['pairs']}): "
                 + ", ".join(f"{d:+.4f}" for d in stats["diffs"]))
    if "sd" in stats:
        lines.append(f"mean {stats['mean']:+.4f}, sd {stats['sd']:.4f}, 95 % t-interval "
                     f"[{stats['ci'][0]:+.4f}, {stats['ci'][1]:+.4f}]; pre-registered n = "
                     f"ceil((2.8 sd / 0.03)^2), at least 5: {stats['n_study']}")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    repo = Path(__file__).resolve().parent.parent
    target = Path(os.environ.get("CARGO_TARGET_DIR", repo / "target")) / "debug"
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--arms", default="dapo,da3po", help="control,treatment")
    p.add_argument("--example", type=Path, default=target / "examples" / "da3po_smollm2")
    p.add_argument("--rlvr", type=Path, default=target / "rlvr")
    p.add_argument("--gguf", type=Path,
                   default=Path.home() / ".cache/rlvr-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    a = p.parse_args()
    a.out = a.out.expanduser().resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    arms = a.arms.split(",")
    hf = a.out / "hf"
    if not (hf / "tokenizer.json").exists():
        sh([a.rlvr, "export-hf", "--model", a.gguf, "--out", hf], log=a.out / "export.log")
    runs = []
    for seed in [int(s) for s in a.seeds.split(",")]:
        for arm in arms:
            runs.append(run_one(a, seed, arm, hf))
            stats = analyse(runs, arms)
            (a.out / "results.json").write_text(json.dumps({"runs": runs, "stats": stats}, indent=1))
            (a.out / "report.md").write_text(report(a, runs, stats, arms))
            print(report(a, runs, stats, arms), flush=True)


if __name__ == "__main__":
    main()
