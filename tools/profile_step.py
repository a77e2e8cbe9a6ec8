#!/usr/bin/env python3
"""Where a training step's CPU time goes, by operation kind: `perf record` on `rlvr train`, the
samples' symbols bucketed into kinds (matmul, layout copies, element-wise, exp/log, allocation and
page zeroing, threading, bookkeeping, other). Prints a markdown table and the top symbols.

    python3 tools/profile_step.py --rlvr target/release/rlvr --config JOB.toml [--freq 499]

JOB.toml is a `rlvr train` config; give it few steps and no held-out set so that the profile is
the training steps (plus start-up: loading, the first step's warm-up). Needs `perf` (Debian
`linux-perf`) with permission to sample the process (root, or perf_event_paranoid <= 2 for
one's own processes). The phase split (rollout, π_old, update) comes from the run's
metrics.jsonl beside the table. A release build has symbols but no inlined frames, so the
buckets are those of the innermost non-inlined function.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import tomllib
from collections import defaultdict
from pathlib import Path

# First match wins; patterns are matched against "dso symbol".
KINDS = [
    ("matmul (gemm kernels)", r"gemm"),
    ("layout copies (strided iteration, to_contiguous, memmove, slice/cat writes, collecting iterators)",
     r"StridedIter|to_contiguous|memmove|memcpy|slice_write|::cat::|copy_from|gather|scatter|permute|swap_dims|from_iter"),
    ("exp / log (softmax, log-softmax, SiLU; vexp: burn-flex's vectorised exp)",
     r"expf|logf|xflowf|exp_|log_|libm|vexp"),
    ("element-wise and reductions (unary, binary, broadcast, scalar, sum/max)",
     r"unary_op|binary_op|scalar_op|run_vectorized|broadcast|reduce|sum_dim|max_dim|macerator"),
    ("allocation and page zeroing (memset, page faults, allocator)",
     r"memset|clear_page|_mi_|mi_|malloc|free|page_fault|do_anonymous_page|alloc_pages"),
    ("threading and scheduling (rayon, futex, yields)",
     r"rayon|crossbeam|futex|sched|spin_unlock|finish_task_switch|switch_to|idle"),
    ("bookkeeping (shapes, autodiff graph, reference counts)",
     r"Shape::|burn_autodiff|LocalKey|Arc<|drop_in_place|hashbrown|HashMap"),
]


def bucket(dso: str, sym: str) -> str:
    text = f"{dso} {sym}"
    for name, pat in KINDS:
        if re.search(pat, text):
            return name
    return "other (tokenizer, verifier, sampling, kernel, …)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlvr", default="target/release/rlvr")
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--freq", type=int, default=499)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--window", help="perf report --time window, e.g. 45%%-80%% (the steps of a long-loading run)")
    ap.add_argument("--report-only", action="store_true", help="re-read the last perf.data of this config")
    a = ap.parse_args()
    out_dir = Path(tomllib.loads(a.config.read_text())["out_dir"])
    data = out_dir.parent / (out_dir.name + ".perf.data")
    if not a.report_only:
        record(a, out_dir, data)
    window = ["--time", a.window] if a.window else []
    rep = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "dso,symbol",
                          "--stdio", "-q", "--percent-limit", "0", *window],
                         check=True, capture_output=True, text=True).stdout
    summarize(rep, a.top, out_dir)


def record(a, out_dir: Path, data: Path) -> None:
    subprocess.run(["rm", "-rf", str(out_dir)], check=True)
    subprocess.run(["perf", "record", "-q", "-F", str(a.freq), "-o", str(data), "--",
                    a.rlvr, "train", "--config", str(a.config)],
                   check=True, stdout=subprocess.DEVNULL, env={"RLVR_QUIET": "1", "PATH": "/usr/bin:/bin"})


def summarize(rep: str, top_n: int, out_dir: Path) -> None:
    kinds: dict[str, float] = defaultdict(float)
    top: list[tuple[float, str]] = []
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.*?)\s*$", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2), m.group(3)
        kinds[bucket(dso, sym)] += pct
        top.append((pct, f"{sym[:90]} ({dso})"))
    print("| operation kind | share of CPU samples |\n|---|---|")
    for name, pct in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {pct:.1f} % |")
    print("\nTop symbols:\n")
    for pct, s in sorted(top, reverse=True)[:top_n]:
        print(f"- {pct:.1f} % {s}")
    metrics = out_dir / "metrics.jsonl"
    if metrics.exists():
        m = [json.loads(l) for l in metrics.read_text().splitlines()]
        m = [x for x in m if x["step"] > 1]
        if m:
            med = lambda k: statistics.median(x[k] for x in m)  # noqa: E731
            print(f"\nPhases (median of steps 2–{m[-1]['step']}): step {med('time_step_s'):.2f} s = rollout "
                  f"{med('time_rollout_s'):.2f} s + π_old {med('time_logprobs_s'):.2f} s + update "
                  f"{med('time_train_s'):.2f} s (+ sync {med('time_sync_s'):.2f} s)")


if __name__ == "__main__":
    main()
