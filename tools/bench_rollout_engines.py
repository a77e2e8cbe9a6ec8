#!/usr/bin/env python3
"""Rollout throughput of a training step: the in-process engine vs llama.cpp's llama-server.

Runs the main example (the embedded arithmetic task, DA3PO, the tiny Qwen3 of the demo) for the
same number of steps with the same seed, once per engine, one run after another on an idle
machine (never concurrently), and summarises each run's step metrics (metrics.jsonl):
generated tokens per second of the rollout phase (generation + verification, the trainer's
`rollout_tokens_per_s`), seconds per step in rollout / log-probs / update / weight sync, and the
engine/trainer log-prob gap, over every training step (the row of step 0 is the evaluation
before training; the llama.cpp server starts before step 1, outside the step times). With synchronous rollouts (max_staleness = 0) every phase is on the critical path; the
llama.cpp engine pays a GGUF re-export and a server restart per step (`time_sync_s`).

  python3 tools/bench_rollout_engines.py --example target/debug/examples/da3po_qwen3 \
      --llama-server ~/.cache/rlvr-llama/bin/llama-server --steps 10 \
      --out docs/data/bench_rollout_engines.jsonl
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(example, out_dir, steps, toml):
    cmd = [example, "--steps", str(steps), "--out", out_dir]
    if toml:
        path = os.path.join(out_dir + "-config.toml")
        with open(path, "w") as f:
            f.write(toml)
        cmd += ["--config", path]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    with open(os.path.join(out_dir, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return rows, wall


def summary(name, rows, wall, steps):
    body = [r for r in rows if r["step"] >= 1]  # step 0: the evaluation before training
    mean = lambda k: statistics.fmean(r[k] for r in body)
    gen_tokens = sum(r["rollout_tokens_per_s"] * r["time_rollout_s"] for r in body)
    rollout_time = sum(r["time_rollout_s"] for r in body)
    return {
        "engine": name,
        "steps": steps,
        "steps_measured": len(body),
        "rollout_tokens_per_s": gen_tokens / rollout_time,
        "time_rollout_s": mean("time_rollout_s"),
        "time_logprobs_s": mean("time_logprobs_s"),
        "time_train_s": mean("time_train_s"),
        "time_sync_s": mean("time_sync_s"),
        "time_step_s": mean("time_step_s"),
        "responses_per_step": mean("responses_generated"),
        "logprob_mismatch": mean("logprob_mismatch"),
        "logprob_mismatch_max": max(r["logprob_mismatch_max"] for r in body),
        "wall_s": wall,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--example", required=True, help="the built da3po_qwen3 example binary")
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--out", help="append the results as JSON lines")
    args = ap.parse_args()
    date = datetime.date.today().isoformat()
    cases = [("local", "")]
    for c in args.concurrency:
        toml = (f'[rollout.engine]\nkind = "llama_cpp"\nserver = {json.dumps(args.llama_server)}\n'
                f"concurrency = {c}\ntimeout_s = 120.0\n")
        cases.append((f"llama_cpp c={c}", toml))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, toml in cases:
            out_dir = os.path.join(tmp, name.replace(" ", "_").replace("=", ""))
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows, wall = run(args.example, out_dir, args.steps, toml)
            r = summary(name, rows, wall, args.steps)
            r["date"] = date
            results.append(r)
    print("| engine | rollout tok/s | rollout s/step | log-probs s | update s | sync s | step s | mismatch mean / max |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['engine']} | {r['rollout_tokens_per_s']:.0f} | {r['time_rollout_s']:.2f} | "
              f"{r['time_logprobs_s']:.2f} | {r['time_train_s']:.2f} | {r['time_sync_s']:.2f} | "
              f"{r['time_step_s']:.2f} | {r['logprob_mismatch']:.1e} / {r['logprob_mismatch_max']:.1e} |")
    if args.out:
        with open(args.out, "a") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
