#!/usr/bin/env python3
"""Verifications per second of `rlvr.verify_batch` vs HF math-verify, from Python, in one process.

Needs the `rlvr` wheel (scripts/test-python.sh builds one; or `pip install ./crates/rl-py`) and
`pip install math-verify` (0.9.0 measured).

1. The 417-case corpus of crates/rl-verifier/tests/data/math_corpus.jsonl, the work of
   tools/verifier/time_math_verify.py: math-verify parses the gold (as "$gold$") and the
   response and verifies; rlvr runs `verify_batch(golds, responses, "math", threads=k)`.
   math-verify on the main thread (its signal timeouts on) and on 1 and 2 worker threads
   (timeouts off, as TRL runs it off the main thread); rlvr with 1 and 2 threads and a plain
   Python loop of `rlvr.verify`. Best of --repeats passes after a warm-up.
2. A verl-sized reward step: 2,048 responses (corpus responses behind ~2,000 characters of
   reasoning text, as long generations are), through `rlvr.verl.compute_score_batch` (the
   `math` route and the `math_dapo` route) and through math-verify.

Usage: python3 tools/python/bench_python.py [--repeats 5] [--json out.json]
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import platform
import random
import time

import math_verify
from math_verify import parse, verify

import rlvr
import rlvr.verl

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "crates/rl-verifier/tests/data/math_corpus.jsonl"
FILLER = (
    "Let us consider the problem carefully. We first rewrite the expression, then check each "
    "case in turn and simplify, keeping track of the constraints on the variables. "
)


def best_time(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def mv_one(gold, response, timeouts=True):
    kw = {} if timeouts else {"parsing_timeout": None}
    try:
        g = parse(f"${gold}$", **kw)
        p = parse(response, **kw)
        return bool(verify(g, p, **({} if timeouts else {"timeout_seconds": None})))
    except Exception:
        return False


def mv_pass(golds, responses, threads=0):
    if threads == 0:  # main thread, signal timeouts on
        return [mv_one(g, r) for g, r in zip(golds, responses)]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda gr: mv_one(gr[0], gr[1], timeouts=False), zip(golds, responses)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    rows = [json.loads(line) for line in CORPUS.open()]
    golds = [r["gold"] for r in rows]
    responses = [r["response"] for r in rows]
    n = len(rows)
    out = {
        "pairs": n,
        "repeats": args.repeats,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "math_verify": getattr(math_verify, "__version__", "0.9.0"),
        "rlvr": rlvr.__version__,
    }
    rates = {}
    for label, threads in [("math-verify, main thread", 0), ("math-verify, 1 worker thread", 1), ("math-verify, 2 worker threads", 2)]:
        t = best_time(lambda: mv_pass(golds, responses, threads), args.repeats)
        rates[label] = n / t
    reps = 20  # 8,340 pairs per rlvr pass: enough work to time
    big_g, big_r = golds * reps, responses * reps
    for threads in (1, 2):
        t = best_time(lambda: rlvr.verify_batch(big_g, big_r, "math", threads=threads), args.repeats)
        rates[f"rlvr.verify_batch, {threads} thread{'s' if threads > 1 else ''}"] = n * reps / t
    t = best_time(lambda: [rlvr.verify(g, r) for g, r in zip(big_g, big_r)], args.repeats)
    rates["rlvr.verify, Python loop"] = n * reps / t
    out["corpus_verifications_per_s"] = {k: round(v, 1) for k, v in rates.items()}
    base = rates["math-verify, main thread"]
    out["speedup_vs_math_verify_main_thread"] = {k: round(v / base, 1) for k, v in rates.items() if k.startswith("rlvr")}

    # A verl-sized reward step: 2,048 long responses.
    rng = random.Random(2048)
    picks = [rng.randrange(n) for _ in range(2048)]
    step_g = [golds[i] for i in picks]
    step_r = [FILLER * rng.randint(10, 14) + responses[i] for i in picks]
    out["step_responses"] = len(step_r)
    out["step_mean_chars"] = round(sum(map(len, step_r)) / len(step_r))
    step = {}
    for source, name in [("HuggingFaceH4/MATH-500", "math"), ("math_dapo", "dapo")]:
        for threads in (1, 2):
            t = best_time(
                lambda: rlvr.verl.compute_score_batch([source] * 2048, step_r, step_g, None, threads=threads),
                args.repeats,
            )
            step[f"rlvr.verl.compute_score_batch ({name}), {threads} thread{'s' if threads > 1 else ''}"] = t
    step["math-verify, main thread"] = best_time(lambda: mv_pass(step_g, step_r, 0), 1)
    out["step_seconds"] = {k: round(v, 4) for k, v in step.items()}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
