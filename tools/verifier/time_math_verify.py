#!/usr/bin/env python3
"""Time HF math-verify on the corpus that `cargo bench --bench verifier` uses.

For every (gold, response) pair of crates/rl-verifier/tests/data/math_corpus.jsonl it does the
same work as the Rust bench: parse the gold ("$" + gold + "$", as the corpus builder does),
parse the response, verify. Default configs (math-verify 0.9.0, timeouts on, main thread).
Reports verifications per second over `--repeats` passes (after one warm-up pass).

Usage: python3 tools/verifier/time_math_verify.py [--repeats 3]
"""
import argparse
import json
import pathlib
import platform
import time

from math_verify import parse, verify

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "crates/rl-verifier/tests/data/math_corpus.jsonl"


def one_pass(pairs):
    correct = 0
    for gold, response in pairs:
        try:
            correct += bool(verify(parse(f"${gold}$"), parse(response)))
        except Exception:
            pass
    return correct


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    pairs = [(r["gold"], r["response"]) for r in map(json.loads, CORPUS.open())]
    one_pass(pairs)  # warm-up (imports, SymPy caches)
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        one_pass(pairs)
        times.append(time.perf_counter() - t0)
    best = min(times)
    mean = sum(times) / len(times)
    import math_verify
    print(json.dumps({
        "pairs": len(pairs),
        "repeats": args.repeats,
        "best_s_per_pass": round(best, 4),
        "mean_s_per_pass": round(mean, 4),
        "verifications_per_s_best": round(len(pairs) / best, 1),
        "us_per_verification_best": round(best / len(pairs) * 1e6, 1),
        "math_verify": getattr(math_verify, "__version__", "0.9.0"),
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
    }))


if __name__ == "__main__":
    main()
