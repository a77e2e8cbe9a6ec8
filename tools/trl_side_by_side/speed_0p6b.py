#!/usr/bin/env python3
"""rlvr beside TRL at Qwen3-0.6B shape: time per step and peak memory, a few steps each.

    python tools/trl_side_by_side/speed_0p6b.py --rlvr target/release/rlvr --out runs/speed_0p6b

A random Qwen3-0.6B-shape model (transformers' Qwen3Config: hidden 1024, 28 layers, 16/8 heads
× 128, MLP 3072, vocabulary 151,936, tied embeddings; seed 0) is saved as an HF folder (f32) with
the real Qwen3 tokenizer (`.cache/qwen3-tokenizer`, fetched by scripts/test.sh). Both trainers
then run job_0p6b.toml (1 prompt × 2 responses of 16 new tokens per step, 3 steps, or `--steps`),
each in its own process, one after the other; the peak RSS of each process comes from wait4.
Both sides spend their first steps warming up (allocation, page faults, TRL's first
generation): with 5 or more steps the report also gives the median from step 3 on. The random
model rarely ends a response early, so both sides generate about 16 tokens per response.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run as side_by_side  # noqa: E402

PROMPTS = [(f"What is {a} + {b}? Answer: ", str(a + b)) for a, b in [(12, 30), (7, 8), (21, 21), (5, 6)]]


def make_model(out: Path, tokenizer_dir: Path) -> None:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    if (out / "model.safetensors").exists():
        return
    torch.manual_seed(0)
    cfg = Qwen3Config(
        vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        eos_token_id=[151645, 151643], bos_token_id=None,
    )
    model = Qwen3ForCausalLM(cfg).to(torch.float32)
    model.save_pretrained(out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / f, out / f)
    n = sum(p.numel() for p in model.parameters())
    print(f"random Qwen3-0.6B shape: {n / 1e6:.0f}M parameters -> {out}", flush=True)


def run_measured(cmd: list, log: Path, timeout_s: float) -> tuple[float, int]:
    """Runs cmd; returns (wall seconds, peak RSS in bytes) of the process and its children."""
    t0 = time.perf_counter()
    with open(log, "w") as f:
        p = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT,
                             env={**os.environ, "RLVR_QUIET": "1"})
        deadline = t0 + timeout_s
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                raise SystemExit(f"{cmd[0]} ran past {timeout_s} s (log: {log})")
            time.sleep(0.5)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed (log: {log}):\n{log.read_text()[-3000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss * 1024


def trl_side(job_path: Path, model: Path, data: Path, out: Path) -> None:
    """The TRL process: trains job_0p6b.toml's steps, writes per-step times to out/steps.json."""
    import torch
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    from rlvr.trl import make_accuracy_reward

    job = tomllib.loads(job_path.read_text())
    tok = AutoTokenizer.from_pretrained(model)
    m = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    ds = load_dataset("json", data_files=str(data), split="train")
    steps: list[dict] = []
    args = side_by_side.trl_config(job, seed=0, steps=job["steps"], out_dir=out, save=False)
    GRPOTrainer(model=m, reward_funcs=[make_accuracy_reward(verifier="dapo")], args=args,
                train_dataset=ds, processing_class=tok, callbacks=[side_by_side.step_timer(steps)]).train()
    (out / "steps.json").write_text(json.dumps(steps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlvr", default="target/release/rlvr")
    ap.add_argument("--out", type=Path, default=Path("runs/speed_0p6b"))
    ap.add_argument("--tokenizer", type=Path, default=Path(".cache/qwen3-tokenizer"))
    ap.add_argument("--timeout-s", type=float, default=1800)
    ap.add_argument("--steps", type=int, help="override job_0p6b.toml's 3 steps (both sides)")
    ap.add_argument("--trl-side", nargs=3, metavar=("JOB", "MODEL", "DATA"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    out = a.out.resolve()
    job_path = HERE / "job_0p6b.toml"
    if a.trl_side:
        trl_side(Path(a.trl_side[0]), Path(a.trl_side[1]), Path(a.trl_side[2]), out)
        return
    out.mkdir(parents=True, exist_ok=True)
    if a.steps:
        text = job_path.read_text()
        if "\nsteps = 3\n" not in text:
            raise SystemExit(f"--steps: no `steps = 3` line in {job_path} to override")
        text = text.replace("\nsteps = 3\n", f"\nsteps = {a.steps}\n", 1)
        job_path = out / "job_0p6b.toml"
        job_path.write_text(text)
    model = out / "model"
    make_model(model, a.tokenizer.resolve())
    data = out / "prompts.jsonl"
    data.write_text("".join(json.dumps({"prompt": p, "solution": s}) + "\n" for p, s in PROMPTS))
    job = tomllib.loads(job_path.read_text())
    n = job["batch"]["groups_per_step"] * job["rollout"]["group_size"]

    rdir = out / "rlvr"
    shutil.rmtree(rdir, ignore_errors=True)
    rdir.mkdir()
    cfg = rdir / "job.toml"
    cfg.write_text(side_by_side.rlvr_config(job_path.read_text(), seed=0, out_dir=rdir, model=model,
                                            train=data))
    r_wall, r_rss = run_measured([a.rlvr, "train", "--config", cfg], rdir / "log.txt", a.timeout_s)
    m = [json.loads(l) for l in (rdir / "metrics.jsonl").read_text().splitlines()]
    r_steps = [s for s in m if s["step"] > 0]

    tdir = out / "trl"
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir()
    t_wall, t_rss = run_measured([sys.executable, __file__, "--out", tdir, "--trl-side", job_path, model, data],
                                 tdir / "log.txt", a.timeout_s)
    t_steps = json.loads((tdir / "steps.json").read_text())

    def med(xs):
        return statistics.median(xs)

    def steady(steps, key):
        # from step 3 on (1-based), once there are 5 or more steps
        xs = [s[key] for s in steps]
        return med(xs[2:]) if len(xs) >= 5 else None

    rows = [
        ("rlvr", med(s["time_step_s"] for s in r_steps), steady(r_steps, "time_step_s"),
         med(s["response_len_mean"] for s in r_steps), r_rss, r_wall,
         f"rollout {med(s['time_rollout_s'] for s in r_steps):.1f} s, π_old {med(s['time_logprobs_s'] for s in r_steps):.1f} s, "
         f"update {med(s['time_train_s'] for s in r_steps):.1f} s"),
        ("TRL", med(s["time_step_s"] for s in t_steps), steady(t_steps, "time_step_s"),
         med(s.get("response_len_mean", 0) for s in t_steps), t_rss, t_wall, "–"),
    ]
    md = [f"| trainer | s / step (median of {len(r_steps)}) | from step 3 | response tokens | tokens / s | "
          "peak RSS | process wall | phases |",
          "|---|---|---|---|---|---|---|---|"]
    for name, step, late, length, rss, wall, phases in rows:
        late_s = f"{late:.1f}" if late is not None else "–"
        md.append(f"| {name} | {step:.1f} | {late_s} | {length:.1f} | {length * n / step:.1f} | "
                  f"{rss / 2**30:.1f} GiB | {wall:.0f} s | {phases} |")
    md.append("")
    md.append(f"TRL / rlvr time per step: {rows[1][1] / rows[0][1]:.2f}× (rlvr takes {rows[0][1] / rows[1][1]:.2f}× TRL's time).")
    if rows[0][2] is not None and rows[1][2] is not None:
        md.append(f"From step 3 on: rlvr takes {rows[0][2] / rows[1][2]:.2f}× TRL's time.")
    md.append("per step (s): rlvr " + ", ".join(f"{s['time_step_s']:.1f}" for s in r_steps)
              + "; TRL " + ", ".join(f"{s['time_step_s']:.1f}" for s in t_steps))
    (out / "report.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
