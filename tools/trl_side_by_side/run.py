#!/usr/bin/env python3
"""rlvr beside TRL on the same job, one run: learning curves and speed (docs/results.md).

    python tools/trl_side_by_side/run.py --rlvr target/release/rlvr --out runs/side_by_side

needs a venv with torch, transformers, trl, datasets, matplotlib and the rlvr wheel (see
docs/results.md, "rlvr beside TRL"). Steps:

1. `rlvr export-demo` writes the embedded arithmetic job: the warm-started tiny Qwen3 as an HF
   folder with its tokenizer, and the training and held-out prompts as JSON lines.
2. Parity of the starting point: per-token log-probs of held-out prompts with their reference
   answers under transformers and under `rlvr score` (same weights, max |Δ| reported).
3. For each seed: `rlvr train` on job.toml, then TRL's GRPOTrainer with every setting of job.toml
   mapped onto GRPOConfig (`trl_config` below), saving the model at rlvr's evaluation steps.
4. Both trainers' models are evaluated by the same code: rlvr's periodic evaluation is
   `rlvr eval`'s (tested to equal it on a checkpoint), and each TRL checkpoint is evaluated with
   `rlvr eval` with the run's config and seed.
5. results.json, report.md (tables) and curves.png (held-out avg@k by tier, both trainers).

Times come from the same machine in one invocation, the two trainers never running at once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from paired_t import half_width  # noqa: E402


def sh(cmd: list, **kw) -> subprocess.CompletedProcess:
    cmd = [str(c) for c in cmd]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def rlvr_config(job_text: str, *, seed: int, out_dir: Path, model: Path, train: Path,
                heldout: Path | None = None) -> str:
    """job.toml with the run's seed, output folder, model and data paths (the model path goes
    into the job's own [model] section when it has one)."""
    head = f'seed = {seed}\nout_dir = "{out_dir}"\n'
    data = f'train = "{train}"\n' + (f'eval = "{heldout}"\n' if heldout else "")
    text = job_text.replace("[data]\n", f"[data]\n{data}", 1)
    if "\n[model]\n" in "\n" + text:
        return head + text.replace("[model]\n", f'[model]\npath = "{model}"\n', 1)
    return head + text.replace("[data]\n", f'[model]\npath = "{model}"\n\n[data]\n', 1)


def trl_config(job: dict, *, seed: int, steps: int, out_dir: Path, save: bool = True, **overrides):
    """GRPOConfig with every field of job.toml that TRL has (saving the model at the evaluation
    steps unless `save` is false); `overrides` are further GRPOConfig arguments."""
    from trl import GRPOConfig

    r, o, b, p = job["rollout"], job["optim"], job["batch"], job["loss"]["policy"]
    completions = b["groups_per_step"] * r["group_size"]
    assert job["advantage"]["name"] == "grpo" and job["filter"]["name"] == "none"
    assert job["loss"]["aggregation"] == "token_mean" and o["epochs"] == 1 and o["mini_batches"] == 1
    return GRPOConfig(
        output_dir=str(out_dir),
        seed=seed,
        data_seed=seed,
        max_steps=steps,
        num_generations=r["group_size"],
        per_device_train_batch_size=completions,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_iterations=o["epochs"],
        max_completion_length=r["max_new_tokens"],
        temperature=r["temperature"],
        top_p=r["top_p"],
        top_k=r["top_k"],
        beta=0.0,
        epsilon=p["clip_low"],
        epsilon_high=p["clip_high"],
        loss_type="dapo",
        scale_rewards="group",
        mask_truncated_completions=False,
        learning_rate=o["lr"],
        lr_scheduler_type="constant",
        warmup_steps=o["warmup_steps"],
        max_grad_norm=o["grad_clip"],
        adam_beta1=o["beta1"],
        adam_beta2=o["beta2"],
        adam_epsilon=o["eps"],
        weight_decay=o["weight_decay"],
        use_cpu=True,
        bf16=overrides.pop("bf16", False),
        save_strategy="steps" if save else "no",
        save_steps=job["eval"]["every"],
        save_only_model=True,
        logging_steps=1,
        report_to="none",
        disable_tqdm=True,
        **overrides,
    )


def step_timer(steps_out: list[dict]):
    """A TRL callback that appends each optimizer step's wall time, mean reward and mean
    completion length to `steps_out`."""
    from transformers import TrainerCallback

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            steps_out.append({"step": state.global_step, "time_step_s": time.perf_counter() - self.t0})

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and steps_out and "reward" in logs:
                steps_out[-1].update(
                    reward=logs.get("reward"),
                    response_len_mean=logs.get("completions/mean_length"),
                )

    return Timer()


def run_trl(job: dict, export: Path, out_dir: Path, seed: int, steps: int) -> list[dict]:
    """Trains with TRL; returns per-step records (wall time, completion length, reward)."""
    import torch
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    from rlvr.trl import make_accuracy_reward

    tok = AutoTokenizer.from_pretrained(export / "model")
    model = AutoModelForCausalLM.from_pretrained(export / "model", dtype=torch.float32)
    data = load_dataset("json", data_files=str(export / "train.jsonl"), split="train")
    reward = make_accuracy_reward(answer_column="solution", verifier=job["reward"]["verifier"]["name"])
    steps_out: list[dict] = []

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=trl_config(job, seed=seed, steps=steps, out_dir=out_dir),
        train_dataset=data,
        processing_class=tok,
        callbacks=[step_timer(steps_out)],
    )
    trainer.train()
    return steps_out


def rlvr_eval(rlvr: str, model: Path, export: Path, config: Path, out: Path, *,
              tokenizer: Path | None = None, data: Path | None = None) -> dict:
    """avg@k by tier of `model` through `rlvr eval` with the run's config (its seed), on `data`
    (default: the export's held-out prompts) with `tokenizer` (default: the export's)."""
    tokenizer = tokenizer or export / "model" / "tokenizer.json"
    data = data or export / "heldout.jsonl"
    if not (out / "summary.json").exists():
        sh([rlvr, "eval", "--model", model, "--tokenizer", tokenizer,
            "--config", config, "--data", data, "--out", out],
           stdout=subprocess.DEVNULL)
    s = json.loads((out / "summary.json").read_text())
    tiers = {g: v["avg"]["mean"] for g, v in s["groups"].items()}
    tiers["overall"] = s["overall"]["avg"]["mean"]
    return tiers


def logprob_parity(rlvr: str, export: Path, n: int = 16) -> float:
    """max |Δ| of per-token log-probs, transformers vs `rlvr score`, on n held-out prompts with
    their reference answers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(export / "model")
    model = AutoModelForCausalLM.from_pretrained(export / "model", dtype=torch.float32).eval()
    rows = [json.loads(l) for l in (export / "heldout.jsonl").read_text().splitlines()[:n]]
    seqs = [tok(r["prompt"] + r["solution"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
            for r in rows]
    out = sh([rlvr, "score", "--model", export / "model"],
             input="".join(json.dumps({"ids": s}) + "\n" for s in seqs), capture_output=True, text=True)
    ours = [json.loads(l)["logprobs"] for l in out.stdout.splitlines()]
    worst = 0.0
    with torch.no_grad():
        for s, mine in zip(seqs, ours):
            ids = torch.tensor([s])
            lp = torch.log_softmax(model(ids).logits.float(), -1)[0, :-1].gather(-1, ids[0, 1:, None])[:, 0]
            worst = max(worst, max(abs(a - b) for a, b in zip(lp.tolist(), mine)))
    return worst


def mean_sd(xs: list[float]) -> str:
    if len(xs) == 1:
        return f"{xs[0]:.3f}"
    return f"{statistics.mean(xs):.3f} ± {statistics.stdev(xs):.3f}"


def main() -> None:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlvr", default="target/release/rlvr")
    ap.add_argument("--out", type=Path, default=Path("runs/side_by_side"))
    ap.add_argument("--job", type=Path, default=here / "job.toml")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, help="override job.toml's steps")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from results.json")
    a = ap.parse_args()
    out = a.out.resolve()
    job_text = a.job.read_text()
    job = tomllib.loads(job_text)
    if a.report_only:
        report(json.loads((out / "results.json").read_text()), out, job)
        return
    steps = a.steps or job["steps"]
    if a.steps:
        job_text = job_text.replace(f"steps = {job['steps']}\n", f"steps = {steps}\n", 1)
    seeds = [int(s) for s in a.seeds.split(",")]
    export = out / "export"
    if not (export / "model" / "model.safetensors").exists():
        sh([a.rlvr, "export-demo", "--out", export])
    parity = logprob_parity(a.rlvr, export)
    print(f"log-prob parity, transformers vs rlvr score: max |Δ| = {parity:.2e}", flush=True)
    import torch, transformers, trl  # noqa: E401 (versions for the report)

    results = {"steps": steps, "seeds": seeds, "logprob_max_abs_diff": parity,
               "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                            "trl": trl.__version__, "python": sys.version.split()[0]},
               "threads": torch.get_num_threads(), "runs": {}}
    every = job["eval"]["every"]
    for seed in seeds:
        # rlvr
        rdir = out / "rlvr" / f"seed-{seed}"
        rdir.mkdir(parents=True, exist_ok=True)
        cfg = rdir / "job.toml"
        cfg.write_text(rlvr_config(job_text, seed=seed, out_dir=rdir, model=export / "model",
                                   train=export / "train.jsonl", heldout=export / "heldout.jsonl"))
        if not (rdir / "metrics.jsonl").exists() or len((rdir / "metrics.jsonl").read_text().splitlines()) < steps + 1:
            t0 = time.perf_counter()
            sh([a.rlvr, "train", "--config", cfg], stdout=subprocess.DEVNULL,
               env={**os.environ, "RLVR_QUIET": "1"})
            print(f"rlvr seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
        m = [json.loads(l) for l in (rdir / "metrics.jsonl").read_text().splitlines()]
        r_eval = {s["step"]: {**{t: v["avg_at_k"] for t, v in s["eval"]["tiers"].items()},
                              "overall": s["eval"]["overall"]["avg_at_k"]}
                  for s in m if s.get("eval")}
        r_steps = [{"step": s["step"], "time_step_s": s["time_step_s"], "reward": s["reward_mean"],
                    "response_len_mean": s["response_len_mean"],
                    "time_rollout_s": s["time_rollout_s"], "time_logprobs_s": s["time_logprobs_s"],
                    "time_train_s": s["time_train_s"]} for s in m if s["step"] > 0]
        # TRL
        tdir = out / "trl" / f"seed-{seed}"
        steps_file = tdir / "steps.json"
        if not steps_file.exists():
            t0 = time.perf_counter()
            t_steps = run_trl(job, export, tdir, seed, steps)
            steps_file.write_text(json.dumps(t_steps))
            print(f"TRL seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
        t_steps = json.loads(steps_file.read_text())
        t_eval = {0: rlvr_eval(a.rlvr, export / "model", export, cfg, tdir / "eval-0")}
        for s in range(every, steps + 1, every):
            t_eval[s] = rlvr_eval(a.rlvr, tdir / f"checkpoint-{s}", export, cfg, tdir / f"eval-{s}")
        results["runs"][seed] = {"rlvr": {"eval": r_eval, "steps": r_steps},
                                 "trl": {"eval": t_eval, "steps": t_steps}}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    report(results, out, job)


def report(results: dict, out: Path, job: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["runs"]
    tiers = ["easy", "medium", "hard", "overall"]
    first = next(iter(runs.values()))
    eval_steps = sorted(int(s) for s in first["rlvr"]["eval"])
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8), sharex=True)
    lines = []
    for ax, tier in zip(axes, tiers):
        for side, colour in (("rlvr", "tab:blue"), ("trl", "tab:orange")):
            per_seed = [[r[side]["eval"][s][tier] if s in r[side]["eval"] else r[side]["eval"][str(s)][tier]
                         for s in eval_steps] for r in runs.values()]
            for ys in per_seed:
                ax.plot(eval_steps, ys, color=colour, alpha=0.25, lw=1)
            mean = [statistics.mean(c) for c in zip(*per_seed)]
            (l,) = ax.plot(eval_steps, mean, color=colour, lw=2, label="rlvr" if side == "rlvr" else "TRL")
            lines.append(l)
        ax.set_title(f"{tier} held-out avg@{job['eval']['k']}")
        ax.set_xlabel("optimizer step")
    axes[0].legend(handles=lines[:2])
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=110)

    def get(r, s):
        return r.get(s, r.get(str(s)))

    md = [f"Log-prob parity at the start (transformers vs `rlvr score`, 16 held-out prompts with "
          f"their answers): max |Δ| = {results['logprob_max_abs_diff']:.1e}.", "",
          "| step | trainer | " + " | ".join(f"{t} avg@{job['eval']['k']}" for t in tiers) + " |",
          "|---|---|" + "---|" * len(tiers)]
    for s in eval_steps:
        for side, name in (("rlvr", "rlvr"), ("trl", "TRL")):
            cells = [mean_sd([get(r[side]["eval"], s)[t] for r in runs.values()]) for t in tiers]
            md.append(f"| {s} | {name} | " + " | ".join(cells) + " |")
    last = eval_steps[-1]
    md += ["", f"Paired by seed (same warm-start, same evaluation seeds), TRL − rlvr at step {last}:", "",
           "| tier | per seed | mean | 95 % t interval |", "|---|---|---|---|"]
    for t in tiers:
        d = [get(r["trl"]["eval"], last)[t] - get(r["rlvr"]["eval"], last)[t] for r in runs.values()]
        if len(d) > 1:
            half = half_width(d)
            ci = f"[{statistics.mean(d) - half:+.3f}, {statistics.mean(d) + half:+.3f}]"
        else:
            ci = "–"
        md.append(f"| {t} | {', '.join(f'{x:+.3f}' for x in d)} | {statistics.mean(d):+.3f} | {ci} |")
    md += ["", "| trainer | seconds per step (median over steps, mean over seeds) | response tokens per second |",
           "|---|---|---|"]
    n = job["batch"]["groups_per_step"] * job["rollout"]["group_size"]
    speed = {}
    for side, name in (("rlvr", "rlvr"), ("trl", "TRL")):
        secs, tps = [], []
        for r in runs.values():
            st = [x for x in r[side]["steps"] if x.get("time_step_s")]
            secs.append(statistics.median(x["time_step_s"] for x in st))
            tps.append(statistics.mean(x["response_len_mean"] * n / x["time_step_s"] for x in st
                                       if x.get("response_len_mean")))
        speed[side] = statistics.mean(secs)
        md.append(f"| {name} | {statistics.mean(secs):.2f} | {statistics.mean(tps):,.0f} |")
    md.append("")
    split = {k: statistics.mean(statistics.median(x[k] for x in r["rlvr"]["steps"]) for r in runs.values())
             for k in ("time_rollout_s", "time_logprobs_s", "time_train_s")}
    md.append(f"rlvr's step, median phases: rollout {split['time_rollout_s']:.2f} s, π_old log-probs "
              f"{split['time_logprobs_s']:.2f} s, update {split['time_train_s']:.2f} s (TRL logs no phase split).")
    md.append(f"TRL / rlvr time per step: {speed['trl'] / speed['rlvr']:.2f}× "
              f"(rlvr takes {speed['rlvr'] / speed['trl']:.2f}× TRL's time).")
    (out / "report.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
