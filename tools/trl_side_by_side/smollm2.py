#!/usr/bin/env python3
"""rlvr beside TRL on the SmolLM2 job: SmolLM2-135M-Instruct, full fine-tune, chat arithmetic.

    python tools/trl_side_by_side/smollm2.py --out /tmp/trl_smollm2 [--seeds 0,1,2] [--steps N]

The job of `cargo run --example da3po_smollm2` (configs/da3po_smollm2.toml) with GRPO advantages
and no filter instead of DA3PO (TRL has no dynamic-sampling filter), in job_smollm2.toml. Needs a
venv with torch, transformers, trl, datasets and matplotlib, an `rlvr` binary with the
`last_number` verifier and `export-hf`, the GGUF of `scripts/fetch-smollm2.sh` and the example's
prompt files (`--data`). Steps:

1. `rlvr export-hf` writes the GGUF as an f32 HF folder (OUT/hf: safetensors, config.json,
   tokenizer.json, tokenizer_config.json with the GGUF's chat template); transformers loads it.
   Both trainers start from the same weights: rlvr's GGUF loader dequantizes to the same f32.
2. Per seed, `rlvr train` on job_smollm2.toml (seed, out_dir, model.path = the GGUF, data paths
   filled in), 2 compute threads (RAYON_NUM_THREADS=2).
3. Per seed, TRL's GRPOTrainer on OUT/hf in this process (torch.set_num_threads(2)), GRPOConfig
   from run.py's `trl_config`, saving the model at the evaluation steps.
4. Both trainers' models evaluated by the same code: rlvr's periodic evaluation is
   `rlvr eval`'s, and TRL's checkpoints (and the step-0 HF folder) are evaluated with
   `rlvr eval` with the rlvr run's config (same held-out file, k, temperature, top-p, seed).
   The step-0 evaluation of the HF folder is compared with rlvr's own step-0 evaluation (GGUF).
   A checkpoint's weights are deleted once evaluated (`--keep-checkpoints` keeps them).
5. results.json, report.md and curves.png in OUT.

Matched settings (job_smollm2.toml field -> GRPOConfig / TRL behaviour):

* prompts: the same train.jsonl; TRL gets each question as the conversation
  [{"role": "user", "content": question}] and renders it with the exported tokenizer's chat
  template (SmolLM2's ChatML with its default system prompt, add_generation_prompt=True), rlvr
  with the GGUF's template (data.chat_template = true, template = "raw"); the token ids of the
  two renderings are tested equal in crates/rl-models/tests/smollm2.rs against
  tools/gen_smollm2_fixture.py's transformers output.
* reward: the `last_number` rule, TRL through tools/verifier/last_number_ref.py (the independent
  Python implementation tested equal to rl-verifier's on its fixture cases), 1 correct, 0 else.
* rollout.group_size 8 -> num_generations; batch.groups_per_step x group_size = 64 ->
  per_device_train_batch_size, gradient_accumulation_steps = 1, steps_per_generation = 1 (so
  TRL's generation_batch_size = 64: one optimizer step per generated batch, as rlvr);
  optim.epochs 1 -> num_iterations.
* rollout.max_new_tokens 24 -> max_completion_length; temperature 1.0, top_p 1.0, top_k 0 (off).
* advantage grpo, std "sample", eps 1e-4 -> scale_rewards = "group" (TRL's z-score, sample std,
  ε = 1e-4); loss token_mean -> loss_type = "dapo"; loss.policy ppo clip 0.2 / 0.2 -> epsilon /
  epsilon_high; no KL -> beta = 0; reward.overlong off -> mask_truncated_completions = False.
* optim: lr 1e-5 constant (lr_scheduler_type "constant", warmup 0), AdamW betas 0.9 / 0.999,
  eps 1e-8, weight decay 0, max_grad_norm 1.0; full fine-tune on both sides (no LoRA, no PEFT).
* f32 on the CPU on both sides (use_cpu = True, bf16 = False), 2 threads per side
  (RAYON_NUM_THREADS=2 / torch.set_num_threads(2)), the two trainers never running at once.

TRL defaults changed: gradient_checkpointing (TRL's default True: activations recomputed in the
backward, ~20 % slower) is off, in TRL's favour; bf16 (TRL's default True: bf16 autocast) is off
so that both sides compute in f32 as rlvr does. On a CPU with AMX/AVX512-BF16 bf16 autocast may
be faster for TRL: `--trl-bf16` runs TRL with its bf16 default (a speed variant; its learning is
then not the same arithmetic). logging_steps = 1 (TRL's 10) to read each step's reward.

TRL defaults left as they are: generation by transformers' `model.generate` (TRL's default path:
no vLLM, no continuous batching) with its KV cache (use_cache, cache_implementation = None), left
padding without pad_to_multiple_of, one forward/backward of all 64 completions padded to the
longest, the fused AdamW (optim = adamw_torch_fused), no torch.compile, disable_dropout and
cast_lm_head_to_fp32 off (SmolLM2 has no dropout and is f32), shuffle_dataset = True with the
run's seed. TRL skips the old log-probs forward when one optimizer step uses the whole generated
batch (its log-probs phase is then 0), and so does rlvr (π_old = π_θ, the ratio exactly 1). Not
matched (no counterpart): rlvr's token-bounded micro-batches (optim.micro_batch_tokens, the same
gradient up to float order), rlvr's shared prompts (model.shared_prompts: a group's prompt
computed once in the prefill and in the update, the same gradient up to float order; TRL
computes it once per completion) and the order prompts are drawn in (each side's own seeded
shuffle).

Timing split per optimizer step. rlvr: metrics.jsonl's time_rollout_s (generating + verifying),
time_logprobs_s (old/reference log-probs), time_train_s (forward, backward, optimizer) and
rollout_tokens_per_s. TRL: `_generate_and_score_completions` timed as a whole, inside it
`_generate_single_turn` (the `model.generate` call) and the no-grad
`_get_per_token_logps_and_entropies` calls (old/reference log-probs); rollout = the whole call
minus the log-prob forwards (tokenizing, generating, rewarding, advantages), log-probs = those
forwards, update = the optimizer step's wall time (callback on_step_begin to on_step_end) minus
the whole call (the loss forward and backward, gradient clipping, AdamW).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools" / "verifier"))
sys.path.insert(0, str(REPO / "tools"))

from paired_t import half_width  # noqa: E402
from run import mean_sd, rlvr_config, rlvr_eval, sh, step_timer, trl_config  # noqa: E402
from last_number_ref import verify as last_number_verify  # noqa: E402

THREADS = 2
# GRPOConfig settings beyond run.py's mapping of the job: TRL's default gradient checkpointing
# (recomputing activations in the backward, ~20 % slower) is off, in TRL's favour.
TRL_OVERRIDES = {"gradient_checkpointing": False}


def default_rlvr() -> str:
    target = os.environ.get("CARGO_TARGET_DIR", "/root/.cache/rlvr-ci-target")
    return str(Path(target) / "debug" / "rlvr")


def default_gguf() -> Path:
    cache = Path(os.environ.get("RLVR_SMOLLM2_DIR", Path.home() / ".cache" / "rlvr-smollm2"))
    return cache / "SmolLM2-135M-Instruct.Q4_1.gguf"


def last_number_reward(completions, answer, **_kw) -> list[float]:
    """TRL reward function: 1.0 when the reply ends in the right number (the `last_number`
    rule of tools/verifier/last_number_ref.py), else 0.0."""
    out = []
    for c, gold in zip(completions, answer):
        text = c[-1]["content"] if isinstance(c, list) else c
        out.append(1.0 if last_number_verify(text, str(gold))[0] == "correct" else 0.0)
    return out


def job_text_for(text: str, *, steps: int | None, eval_every: int | None) -> str:
    """job_smollm2.toml's text with `steps` and `[eval] every` overridden."""
    if steps is not None:
        text, n = re.subn(r"(?m)^steps = \d+$", f"steps = {steps}", text, count=1)
        assert n == 1, "job file has no top-level `steps = N` line"
    if eval_every is not None:
        text, n = re.subn(r"(\[eval\]\n(?:[^\[]*?\n)?)every = \d+", rf"\g<1>every = {eval_every}", text, count=1)
        assert n == 1, "job file has no `every = N` line in [eval]"
    return text


def timed_trainer_class():
    """GRPOTrainer with its rollout, log-prob and generate phases timed per generated batch."""
    import torch
    from trl import GRPOTrainer

    class TimedGRPOTrainer(GRPOTrainer):
        phase: dict = {}

        def _generate_and_score_completions(self, inputs):
            self.phase = {"generate": 0.0, "logprobs": 0.0, "tokens": 0, "in_rollout": True}
            t0 = time.perf_counter()
            try:
                return super()._generate_and_score_completions(inputs)
            finally:
                self.phase["rollout_total"] = time.perf_counter() - t0
                self.phase["in_rollout"] = False

        def _generate_single_turn(self, prompt_ids, *args, **kw):
            t0 = time.perf_counter()
            completion_ids, logprobs = super()._generate_single_turn(prompt_ids, *args, **kw)
            self.phase["generate"] += time.perf_counter() - t0
            self.phase["tokens"] += sum(len(c) for c in completion_ids)
            return completion_ids, logprobs

        def _get_per_token_logps_and_entropies(self, *args, **kw):
            if not (self.phase.get("in_rollout") and not torch.is_grad_enabled()):
                return super()._get_per_token_logps_and_entropies(*args, **kw)
            t0 = time.perf_counter()
            try:
                return super()._get_per_token_logps_and_entropies(*args, **kw)
            finally:
                self.phase["logprobs"] += time.perf_counter() - t0

    return TimedGRPOTrainer


def phase_recorder(steps_out: list[dict]):
    """A callback (after run.py's `step_timer`) that adds the step's phase split to its record."""
    from transformers import TrainerCallback

    class Phases(TrainerCallback):
        trainer = None

        def on_step_end(self, args, state, control, **kw):
            p, rec = self.trainer.phase, steps_out[-1]
            rec.update(
                time_rollout_s=p["rollout_total"] - p["logprobs"],
                time_generate_s=p["generate"],
                time_logprobs_s=p["logprobs"],
                time_train_s=rec["time_step_s"] - p["rollout_total"],
                response_tokens=p["tokens"],
                rollout_tokens_per_s=p["tokens"] / max(p["rollout_total"] - p["logprobs"], 1e-9),
            )

    return Phases()


def read_rows(path: Path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def run_trl(job: dict, hf: Path, train: Path, out_dir: Path, seed: int, steps: int,
            bf16: bool = False) -> tuple[list[dict], dict]:
    """Trains with TRL; returns per-step records and what TRL resolved (eos ids, batch sizes)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(THREADS)
    d = job["data"]
    rows = [{"prompt": [{"role": "user", "content": r[d["prompt_key"]]}],
             "answer": str(r[d["answer_key"]]), "tier": r.get(d.get("tier_key") or "", "")}
            for r in read_rows(train)]
    tok = AutoTokenizer.from_pretrained(hf)
    model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32)
    steps_out: list[dict] = []
    trainer = timed_trainer_class()(
        model=model,
        reward_funcs=[last_number_reward],
        args=trl_config(job, seed=seed, steps=steps, out_dir=out_dir, **TRL_OVERRIDES, bf16=bf16),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        callbacks=[step_timer(steps_out)],
    )
    phases = phase_recorder(steps_out)
    phases.trainer = trainer
    trainer.add_callback(phases)
    a = trainer.args
    resolved = {"eos_token_ids": list(trainer.eos_token_ids), "pad_token_id": tok.pad_token_id,
                "generation_batch_size": a.generation_batch_size,
                "steps_per_generation": a.steps_per_generation,
                "per_device_train_batch_size": a.per_device_train_batch_size,
                "torch_threads": torch.get_num_threads(), "bf16": a.bf16,
                "gradient_checkpointing": a.gradient_checkpointing, "optim": str(a.optim),
                "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
                "params": sum(p.numel() for p in model.parameters())}
    print(f"TRL seed {seed}: {json.dumps(resolved)}", flush=True)
    trainer.train()
    return steps_out, resolved


def tier_avgs(evaluation: dict) -> dict:
    return {**{t: v["avg_at_k"] for t, v in evaluation["tiers"].items()},
            "overall": evaluation["overall"]["avg_at_k"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlvr", default=default_rlvr(), help="rlvr binary (default: $CARGO_TARGET_DIR/debug/rlvr)")
    ap.add_argument("--gguf", type=Path, default=default_gguf(), help="SmolLM2-135M-Instruct GGUF")
    ap.add_argument("--data", type=Path, default=REPO / "runs" / "da3po_smollm2" / "data",
                    help="folder with the example's train.jsonl and eval.jsonl")
    ap.add_argument("--job", type=Path, default=HERE / "job_smollm2.toml")
    ap.add_argument("--out", type=Path, default=Path("/tmp/trl_smollm2"))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--steps", type=int, help="override the job's steps")
    ap.add_argument("--eval-every", type=int, help="override the job's [eval] every (TRL saves there)")
    ap.add_argument("--only", choices=["rlvr", "trl", "both"], default="both")
    ap.add_argument("--trl-bf16", action="store_true",
                    help="TRL in its default bf16 mixed precision instead of f32 (a speed variant; rlvr is f32)")
    ap.add_argument("--keep-checkpoints", action="store_true", help="keep TRL's checkpoints once evaluated")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from results.json")
    a = ap.parse_args()
    out = a.out.resolve()
    if a.report_only:
        results = json.loads((out / "results.json").read_text())
        report(results, out)
        return

    job_text = job_text_for(a.job.read_text(), steps=a.steps, eval_every=a.eval_every)
    job = tomllib.loads(job_text)
    steps, every = job["steps"], job["eval"]["every"]
    if every <= 0 or steps % every:
        sys.exit(f"steps ({steps}) must be a multiple of [eval] every ({every}): TRL saves at its multiples")
    seeds = [int(s) for s in a.seeds.split(",")]
    train, heldout = (a.data / "train.jsonl").resolve(), (a.data / "eval.jsonl").resolve()
    if not (train.exists() and heldout.exists()):
        sys.exit(f"no {train} / {heldout}: run the example once (it writes OUT/data/train.jsonl and "
                 f"eval.jsonl first), e.g.\n"
                 f"  cargo run --example da3po_smollm2 -- --steps 0 --out {a.data.resolve().parent}\n"
                 f"(with --steps 0 it then only evaluates the model at step 0), or pass --data DIR.")
    if not a.gguf.exists():
        sys.exit(f"no {a.gguf}: run `bash scripts/fetch-smollm2.sh` (it prints the path) or pass --gguf")
    out.mkdir(parents=True, exist_ok=True)
    (out / "job.toml").write_text(job_text)
    hf = out / "hf"
    if not (hf / "model.safetensors").exists():
        sh([a.rlvr, "export-hf", "--model", a.gguf, "--out", hf])
    env = {**os.environ, "RLVR_QUIET": "1", "RAYON_NUM_THREADS": str(THREADS)}

    import torch, transformers, trl  # noqa: E401 (versions for the report)

    results_path = out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {"runs": {}}
    results.update({
        "job": job, "steps": steps, "seeds": sorted({*map(int, results.get("seeds", [])), *seeds}),
        "gguf": str(a.gguf), "data": {"train": str(train), "eval": str(heldout)}, "threads": THREADS,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "trl": trl.__version__, "python": sys.version.split()[0]},
    })
    for seed in seeds:
        run = results["runs"].setdefault(str(seed), {})
        rdir = out / "rlvr" / f"seed-{seed}"
        rdir.mkdir(parents=True, exist_ok=True)
        cfg = rdir / "job.toml"
        cfg.write_text(rlvr_config(job_text, seed=seed, out_dir=rdir, model=a.gguf, train=train, heldout=heldout))
        if a.only in ("rlvr", "both"):
            metrics = rdir / "metrics.jsonl"
            if not metrics.exists() or len(metrics.read_text().splitlines()) < steps + 1:
                t0 = time.perf_counter()
                sh([a.rlvr, "train", "--config", cfg], stdout=subprocess.DEVNULL, env=env)
                print(f"rlvr seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
            m = read_rows(metrics)
            run["rlvr"] = {
                "eval": {s["step"]: tier_avgs(s["eval"]) for s in m if s.get("eval")},
                "steps": [{k: s.get(k) for k in ("step", "time_step_s", "time_rollout_s", "time_logprobs_s",
                                                  "time_train_s", "time_sync_s", "rollout_tokens_per_s",
                                                  "response_len_mean")}
                          | {"reward": s["reward_mean"]} for s in m if s["step"] > 0],
            }
        if a.only in ("trl", "both"):
            tdir = out / "trl" / f"seed-{seed}"
            steps_file = tdir / "steps.json"
            if not steps_file.exists():
                t0 = time.perf_counter()
                t_steps, resolved = run_trl(job, hf, train, tdir, seed, steps, bf16=a.trl_bf16)
                steps_file.write_text(json.dumps({"steps": t_steps, "resolved": resolved}))
                print(f"TRL seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
            saved = json.loads(steps_file.read_text())
            ev = lambda model, name: rlvr_eval(a.rlvr, model, hf, cfg, tdir / name,  # noqa: E731
                                               tokenizer=hf / "tokenizer.json", data=heldout)
            t_eval = {0: ev(hf, "eval-0")}
            for s in range(every, steps + 1, every):
                t_eval[s] = ev(tdir / f"checkpoint-{s}", f"eval-{s}")
                if not a.keep_checkpoints:
                    for f in (tdir / f"checkpoint-{s}").glob("*.safetensors"):
                        f.unlink()
            run["trl"] = {"eval": t_eval, **saved}
        results_path.write_text(json.dumps(results, indent=1))
    report(results, out)


def get(d: dict, step: int):
    return d.get(step, d.get(str(step)))


def report(results: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    job, k = results["job"], results["job"]["eval"]["k"]
    runs = {s: r for s, r in sorted(results["runs"].items(), key=lambda x: int(x[0]))
            if "rlvr" in r and "trl" in r}
    if not runs:
        print("no seed with both trainers' results yet")
        return
    first = next(iter(runs.values()))
    eval_steps = sorted(int(s) for s in first["rlvr"]["eval"])
    tiers = [t for t in get(first["rlvr"]["eval"], eval_steps[0]) if t != "overall"] + ["overall"]
    sides = (("rlvr", "rlvr", "tab:blue"), ("trl", "TRL", "tab:orange"))

    # curves.png: every tier and overall, mean over seeds (thick) and each seed (thin)
    cols = 4
    rows = -(-len(tiers) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.4 * rows), sharex=True, squeeze=False)
    handles = []
    for ax, tier in zip(axes.flat, tiers):
        for side, name, colour in sides:
            per_seed = [[get(r[side]["eval"], s)[tier] for s in eval_steps] for r in runs.values()]
            for ys in per_seed:
                ax.plot(eval_steps, ys, color=colour, alpha=0.3, lw=0.8)
            (h,) = ax.plot(eval_steps, [statistics.mean(c) for c in zip(*per_seed)], color=colour, lw=2.2,
                           label=f"{name} (mean of {len(per_seed)} seeds)")
            handles.append(h)
        ax.set_title(f"{tier}: held-out avg@{k}")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(tiers):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("optimizer step")
    axes.flat[0].legend(handles=handles[:2], fontsize=8)
    fig.suptitle("SmolLM2-135M-Instruct, chat arithmetic: rlvr vs TRL GRPOTrainer "
                 "(both evaluated by `rlvr eval`, same seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=110)

    start, end = eval_steps[0], eval_steps[-1]
    md = [f"# rlvr beside TRL: SmolLM2-135M-Instruct, chat arithmetic ({len(runs)} seeds: "
          f"{', '.join(runs)}; {results['steps']} steps)", "",
          f"Versions: {json.dumps(results['versions'])}; {results['threads']} threads a side. "
          f"Held-out avg@{k} by tier (`rlvr eval`, the rlvr run's config and seed, for both trainers).", ""]
    # step-0 check: rlvr's own evaluation of the GGUF vs `rlvr eval` of the exported HF folder
    d0 = [abs(get(r["rlvr"]["eval"], 0)["overall"] - get(r["trl"]["eval"], 0)["overall"])
          for r in runs.values() if get(r["rlvr"]["eval"], 0) and get(r["trl"]["eval"], 0)]
    if d0:
        md += [f"Step 0 (same weights): rlvr's in-training evaluation of the GGUF vs `rlvr eval` of the exported "
               f"HF folder, overall avg@{k}: max |Δ| over seeds = {max(d0):.4f}.", ""]
    md += ["| step | trainer | seed | " + " | ".join(tiers) + " |", "|---|---|---|" + "---|" * len(tiers)]
    for s in (start, end):
        for side, name, _ in sides:
            for seed, r in runs.items():
                md.append(f"| {s} | {name} | {seed} | " + " | ".join(f"{get(r[side]['eval'], s)[t]:.3f}" for t in tiers) + " |")
            md.append(f"| {s} | {name} | mean ± sd | " + " | ".join(
                mean_sd([get(r[side]["eval"], s)[t] for r in runs.values()]) for t in tiers) + " |")
    md += ["", f"Paired by seed (same start, same evaluation seeds), rlvr − TRL at step {end}, "
           f"95 % t interval over seeds:", "", "| tier | per seed | mean | 95 % t interval |", "|---|---|---|---|"]
    diffs = {}
    for t in tiers:
        d = [get(r["rlvr"]["eval"], end)[t] - get(r["trl"]["eval"], end)[t] for r in runs.values()]
        m = statistics.mean(d)
        if len(d) > 1:
            half = half_width(d)
            ci, diffs[t] = f"[{m - half:+.3f}, {m + half:+.3f}]", (m, m - half, m + half)
        else:
            ci, diffs[t] = "– (one seed)", (m, None, None)
        md.append(f"| {t} | {', '.join(f'{x:+.3f}' for x in d)} | {m:+.3f} | {ci} |")

    inside = [t for t, (_, lo, hi) in diffs.items() if lo is not None and lo <= 0 <= hi]
    if len(runs) > 1:
        md += ["", f"Intervals containing 0 (learning equal within intervals): {len(inside)} of {len(tiers)} "
               f"({', '.join(inside) or 'none'})."]
    # speed: medians over a run's steps, then mean ± sd over seeds
    keys = ("time_step_s", "time_rollout_s", "time_logprobs_s", "time_train_s")
    speed = {}
    md += ["", "Seconds per optimizer step (median over a run's steps; mean ± sd over seeds), split into "
           "rollout (generate + verify), old/reference log-probs and update (forward, backward, optimizer); "
           "response tokens per second of rollout time, and of whole-step time:", "",
           "| trainer | step s | rollout s | (of which generate s) | log-probs s | update s | steps/s | "
           "response tok/s (rollout) | response tok/s (step) |", "|---|---|---|---|---|---|---|---|---|"]
    for side, name, _ in sides:
        per = {key: [] for key in (*keys, "time_generate_s", "tps_rollout", "tps_step", "steps_per_s")}
        for r in runs.values():
            st = [x for x in r[side]["steps"] if x.get("time_step_s")]
            for key in keys:
                per[key].append(statistics.median(x[key] for x in st))
            if side == "trl":
                per["time_generate_s"].append(statistics.median(x["time_generate_s"] for x in st))
                tok = [x["response_tokens"] for x in st]
            else:
                tok = [x["rollout_tokens_per_s"] * x["time_rollout_s"] for x in st]
            per["tps_rollout"].append(sum(tok) / sum(x["time_rollout_s"] for x in st))
            per["tps_step"].append(sum(tok) / sum(x["time_step_s"] for x in st))
            per["steps_per_s"].append(1.0 / per["time_step_s"][-1])
        speed[side] = per
        f = lambda xs, p=2: (f"{statistics.mean(xs):.{p}f}" + (f" ± {statistics.stdev(xs):.{p}f}" if len(xs) > 1 else ""))  # noqa: E731
        md.append(f"| {name} | {f(per['time_step_s'])} | {f(per['time_rollout_s'])} | "
                  f"{f(per['time_generate_s']) if per['time_generate_s'] else '–'} | {f(per['time_logprobs_s'])} | "
                  f"{f(per['time_train_s'])} | {f(per['steps_per_s'], 4)} | {f(per['tps_rollout'], 0)} | "
                  f"{f(per['tps_step'], 0)} |")
    ratio = statistics.mean(speed["rlvr"]["steps_per_s"]) / statistics.mean(speed["trl"]["steps_per_s"])
    paired = [a / b for a, b in zip(speed["rlvr"]["steps_per_s"], speed["trl"]["steps_per_s"])]
    md += ["", f"rlvr / TRL steps per second: {ratio:.2f}× (per seed: {', '.join(f'{x:.2f}' for x in paired)}; "
           f"target ≥ 2×)."]
    eos = [r["trl"].get("resolved", {}).get("eos_token_ids") for r in runs.values()]
    md += ["", f"TRL resolved: {json.dumps(next(iter(runs.values()))['trl'].get('resolved', {}))}"
           + ("" if len({json.dumps(e) for e in eos}) == 1 else " (differs between seeds!)")]
    (out / "report.md").write_text("\n".join(md) + "\n")
    results_summary = {"paired_diff_end": diffs, "steps_per_s_ratio": ratio, "steps_per_s_ratio_per_seed": paired,
                       "speed": speed, "eval_steps": eval_steps}
    (out / "summary.json").write_text(json.dumps(results_summary, indent=1))
    print("\n".join(md))


if __name__ == "__main__":
    main()
