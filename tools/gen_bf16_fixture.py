#!/usr/bin/env python3
"""bf16 reference for `crates/rl-models` (`model.dtype = "bf16"`), computed by HF transformers.

Loads a fixture checkpoint written by tools/gen_qwen3_fixtures.py or tools/gen_llama_fixtures.py
(default `tied_bf16`; `llama_untied_rope3` for the Llama family), whose weights are exactly
representable in bf16, so HF's bf16 model and rlvr's f32 masters cast to bf16
hold the same numbers) with `dtype=torch.bfloat16` and eager attention, and writes
`<fixture>/bf16_reference.safetensors`, for the same sequences as `reference.safetensors`:

* `seq{i}.logits` [len, vocab]: HF's bf16 logits, as f32 (`.float()`);
* `seq{i}.logprobs`, `seq{i}.entropy` [len-1]: f32 log-softmax of those logits (what trainers
  such as TRL and verl do with bf16 logits);
* `right.logits`: the right-padded batch of `reference.safetensors`;
* `loss`, `grad.<hf name>`: the loss of gen_qwen3_fixtures.py (sum of valid log-probs + 0.1 x
  entropies on the right-padded batch) and its gradients, computed with bf16 parameters (HF
  keeps bf16 gradients; stored as f32).

Run from the repository root (torch + transformers 5.x + safetensors, CPU, 1 thread):
    python3 tools/gen_bf16_fixture.py [fixture-name ...]
"""

import os
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures")

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def token_stats(logits, ids):
    """logprob[t] = log p(ids[t+1] | ids[..=t]) and the entropy, in f32."""
    logp = torch.log_softmax(logits[..., :-1, :].float(), dim=-1)
    lp = logp.gather(-1, ids[..., 1:, None]).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1)
    return lp, ent


def build(name):
    d = os.path.join(FIXTURES, name)
    f32_ref = load_file(os.path.join(d, "reference.safetensors"))
    model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager")
    model.eval()
    ref = {}
    i = 0
    while f"seq{i}.ids" in f32_ref:
        ids = f32_ref[f"seq{i}.ids"].long()
        with torch.no_grad():
            logits = model(input_ids=ids[None]).logits[0].float()
        lp, ent = token_stats(logits, ids)
        ref[f"seq{i}.logits"] = logits
        ref[f"seq{i}.logprobs"] = lp
        ref[f"seq{i}.entropy"] = ent
        gap = (logits - f32_ref[f"seq{i}.logits"]).abs().max().item()
        print(f"{name} seq{i}: max |bf16 - f32 logit| (both HF) = {gap:.3e}")
        i += 1
    ids, mask = f32_ref["right.ids"].long(), f32_ref["right.mask"].long()
    with torch.no_grad():
        ref["right.logits"] = model(input_ids=ids, attention_mask=mask).logits.float()

    model.zero_grad()
    logits = model(input_ids=ids, attention_mask=mask).logits
    lp, ent = token_stats(logits, ids)
    valid = (mask[:, :-1] * mask[:, 1:]).float()
    loss = (lp * valid).sum() + 0.1 * (ent * valid).sum()
    loss.backward()
    ref["loss"] = loss.detach().float().reshape(1)
    print(f"{name}: loss bf16 {loss.item():.6f}, f32 {f32_ref['loss'].item():.6f}")
    for pname, p in model.named_parameters():
        if p.grad is not None:
            ref[f"grad.{pname}"] = p.grad.float()
    ref = {k: v.contiguous() for k, v in ref.items()}
    save_file(ref, os.path.join(d, "bf16_reference.safetensors"),
              metadata={"torch": torch.__version__, "dtype": "bfloat16", "attn": "eager"})


if __name__ == "__main__":
    for n in sys.argv[1:] or ["tied_bf16"]:
        build(n)
