#!/usr/bin/env python3
"""The update of `crates/rl-trainer/examples/update_memory.rs` in PyTorch + transformers.

    python tools/update_memory/torch_update.py --shape 0.6b --seqs 8 --prompt 256 --response 1024 \
        [--checkpointing layers|none] [--lora-r 0] [--micro 2] [--repeats 2]

Same work as the Rust example: a random Qwen3 of the given shape (transformers' Qwen3Config,
f32, tied embeddings as the real 0.6B/1.7B), uniform random token ids, advantages +1 for the
first half of the sequences and -1 for the rest; the π_old forward under no_grad; then one
forward + backward of DAPO's token-mean clipped objective (clip 0.2 / 0.28) over all sequences
(in micro-batches of `--micro` sequences whose gradients accumulate in `.grad`, each loss
divided by the batch's token count), and one AdamW step; `--repeats` runs the π_old forward and
the update again on the updated model (from the second update on, AdamW's moments exist
throughout the backward: the steady state). The head runs only on the response positions
(`logits_to_keep`, as TRL does: the response is the last `--response` positions of every row).
Gradient checkpointing is HF's
`gradient_checkpointing_enable()` (non-reentrant). Peak resident memory per phase is Linux's
VmHWM, reset through /proc/self/clear_refs as rl_trainer::memory does. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_mb() -> float | None:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="0.6b", choices=["0.6b", "1.7b"])
    ap.add_argument("--seqs", type=int, default=8)
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--response", type=int, default=1024)
    ap.add_argument("--checkpointing", default="layers", choices=["none", "layers"])
    ap.add_argument("--lora-r", type=int, default=0)
    ap.add_argument("--micro", type=int, default=0, help="sequences per micro-batch (0: all)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    hidden, inter, layers, heads, kv = {
        "0.6b": (1024, 3072, 28, 16, 8),
        "1.7b": (2048, 6144, 28, 16, 8),
    }[a.shape]
    cfg = Qwen3Config(
        vocab_size=151936, hidden_size=hidden, intermediate_size=inter,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv,
        head_dim=128, max_position_embeddings=40960, rope_theta=1000000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=True, attn_implementation="sdpa",
    )
    t = time.perf_counter()
    model = Qwen3ForCausalLM(cfg).to(torch.float32)
    print(f"random Qwen3 ({sum(p.numel() for p in model.parameters())} parameters) in "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    if a.lora_r > 0:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(
            r=a.lora_r, lora_alpha=2 * a.lora_r, lora_dropout=0.0,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                            "down_proj"]))
    if a.checkpointing == "layers":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if a.lora_r > 0:
            model.enable_input_require_grads()
    model.train()

    g = torch.Generator().manual_seed(a.seed)
    n = a.prompt + a.response
    ids = torch.randint(0, cfg.vocab_size, (a.seqs, n), generator=g)
    targets = ids[:, a.prompt:]
    adv = torch.tensor([1.0 if i < a.seqs // 2 else -1.0 for i in range(a.seqs)])[:, None]

    micro = a.micro if a.micro > 0 else a.seqs

    def response_logprobs(m, rows):
        # logits of the positions that predict the response: prompt-1 .. n-2
        logits = m(input_ids=ids[rows, :-1], logits_to_keep=a.response).logits.float()
        return torch.log_softmax(logits, dim=-1).gather(-1, targets[rows, :, None])[..., 0]

    batches = [slice(s, min(s + micro, a.seqs)) for s in range(0, a.seqs, micro)]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-6,
                            betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    runs = []
    for r in range(1, a.repeats + 1):
        per_phase = reset_peak()
        t = time.perf_counter()
        with torch.no_grad():
            old = [response_logprobs(model, rows) for rows in batches]
        old_s = time.perf_counter() - t
        old_peak = peak_mb()
        print(f"[{r}/{a.repeats}] π_old forward: {old_s:.1f} s, peak RSS {old_peak:.0f} MiB",
              flush=True)

        reset_peak()
        t = time.perf_counter()
        total = 0.0
        for rows, old_b in zip(batches, old):
            lp = response_logprobs(model, rows)
            ratio = torch.exp(lp - old_b)
            adv_b = adv[rows]
            pg = -torch.minimum(ratio * adv_b, torch.clamp(ratio, 1 - 0.2, 1 + 0.28) * adv_b)
            # token-mean over the whole batch: every response token is real
            loss = pg.sum() / (a.seqs * a.response)
            loss.backward()
            total += loss.item()
            del lp, ratio, pg, loss
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        update_s = time.perf_counter() - t
        update_peak = peak_mb()
        print(f"[{r}/{a.repeats}] update: {update_s:.1f} s, peak RSS {update_peak:.0f} MiB",
              flush=True)
        runs.append({
            "old_logprobs_s": old_s, "update_s": update_s, "peak_rss_old_logprobs_mb": old_peak,
            "peak_rss_update_mb": update_peak, "per_phase_peaks": per_phase, "loss": total,
            "grad_norm": grad_norm.item(),
        })
    report = {
        "side": "pytorch", "torch": torch.__version__, "shape": a.shape, "seqs": a.seqs,
        "prompt": a.prompt, "response": a.response, "checkpointing": a.checkpointing,
        "lora_r": a.lora_r, "threads": a.threads, "micro_batch": micro, "repeats": a.repeats,
    }
    # the last repeat's seconds and peaks at the top level (as the Rust example)
    report.update(runs[-1])
    report["runs"] = runs
    print(json.dumps(report))


if __name__ == "__main__":
    main()
