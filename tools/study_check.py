#!/usr/bin/env python3
"""Independent check of the DA3PO study's statistics (docs/results.md), with scipy.

Reads the committed run folders (crates/rl-lab/data/study_da3po/<setting>/seed-<s>/<run>/metrics.jsonl),
takes each run's last held-out evaluation, and recomputes without any rlvr code:
- the paired DA3PO - DAPO t test (mean, s.d., 95 % CI, p) for the hard and mixed settings, to
  compare with the report `rlvr study` writes;
- the same for every λ × τ ablation cell (λ = 2, τ = 0.5 is the primary `da3po` run);
- that every run's step-0 evaluation equals its seed's DAPO run's (one shared warm-start);
- two exploratory tests the report's prose quotes, which were not pre-registered: Welch's t
  between the two settings' paired differences, and a Friedman test across the 9 DAA cells.

  python3 -m venv /tmp/sv && /tmp/sv/bin/pip install scipy
  /tmp/sv/bin/python tools/study_check.py [--data crates/rl-lab/data/study_da3po]
"""

import argparse
import json
import os

import numpy as np
from scipy import stats

TIER = "hard"


def evals(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    ev = [r["eval"] for r in rows if r.get("eval")]
    if len(ev) < 2:
        raise SystemExit(f"{path}: expected evaluations before and after training")
    return ev[0], ev[-1]


def tier_avg(ev, tier):
    return ev["tiers"][tier]["avg_at_k"] if tier else ev["overall"]["avg_at_k"]


def paired(data, setting, run, seeds, tier=TIER):
    diffs = []
    for s in seeds:
        d = os.path.join(data, setting, f"seed-{s}")
        base0, base = evals(os.path.join(d, "dapo", "metrics.jsonl"))
        run0, last = evals(os.path.join(d, run, "metrics.jsonl"))
        if run0 != base0:
            raise SystemExit(f"{setting} seed {s} {run}: step-0 evaluation differs from dapo's")
        diffs.append(tier_avg(last, tier) - tier_avg(base, tier))
    return np.array(diffs)


def show(name, x):
    r = stats.ttest_1samp(x, 0.0)
    ci = r.confidence_interval(0.95)
    print(
        f"{name:28s} n={len(x):2d} mean={x.mean():+.4f} sd={x.std(ddof=1):.4f} "
        f"CI=[{ci.low:+.4f}, {ci.high:+.4f}] p={r.pvalue:.3f}"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="crates/rl-lab/data/study_da3po")
    args = ap.parse_args()
    hard = paired(args.data, "hard", "da3po", range(11))
    mixed = paired(args.data, "mixed", "da3po", range(5))
    show("hard, hard tier", hard)
    show("hard, overall", paired(args.data, "hard", "da3po", range(11), None))
    show("mixed, hard tier", mixed)
    show("mixed, overall", paired(args.data, "mixed", "da3po", range(5), None))
    w = stats.ttest_ind(hard, mixed, equal_var=False)
    print(f"exploratory Welch hard vs mixed: t={w.statistic:.2f} df={w.df:.1f} p={w.pvalue:.3f}")

    cells = []
    for lam in ["1.5", "2", "3"]:
        for tau in ["0.3", "0.5", "0.7"]:
            run = "da3po" if (lam, tau) == ("2", "0.5") else f"da3po_lambda={lam}_tau={tau}"
            x = paired(args.data, "hard", run, range(3))
            cells.append(x)
            show(f"ablation λ={lam} τ={tau}", x)
    cells = np.array(cells)
    pooled = np.sqrt(np.mean(cells.var(axis=1, ddof=1)))
    print(f"ablation: per-seed mean Δ over the 9 cells {np.round(cells.mean(axis=0), 4)}")
    print(f"ablation: pooled paired s.d. {pooled:.4f}")
    for delta in [0.005, 0.01, 0.02]:
        n = 2
        while n < (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) ** 2 * (pooled / delta) ** 2:
            n += 1
        print(f"ablation: pairs to detect {delta} with 80 % power at 5 %: {n}")
    f = stats.friedmanchisquare(*cells)
    print(f"exploratory Friedman across the 9 cells: chi2={f.statistic:.2f} p={f.pvalue:.3f}")


if __name__ == "__main__":
    main()
