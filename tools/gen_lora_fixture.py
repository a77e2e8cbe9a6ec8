#!/usr/bin/env python3
"""Reference fixture for rl-models' LoRA (`crates/rl-models/src/qwen3/lora.rs`), produced by HF
transformers + PEFT (the reference implementation of LoRA and of its file format).

Writes `crates/rl-models/tests/fixtures/lora_peft/`:

* `base/`      a small random Qwen3 (untied head, f32 on disk) saved by `save_pretrained`;
* `adapter/`   a LoRA adapter on it saved by PEFT's `save_pretrained` (`adapter_config.json` +
               `adapter_model.safetensors`): r = 4, lora_alpha = 8, q/k/v/o/gate/up/down_proj,
               `init_lora_weights=False` so that B is random too (PEFT's default B = 0 would make
               the adapter a no-op and the test blind);
* `reference.safetensors`:
  - `ids` [2, 11] and `mask` [2, 11] (row 1 right-padded to 7 tokens);
  - `logits` [2, 11, vocab] of the PEFT model, `merged_logits` of `merge_and_unload()`;
  - `loss` = Σ valid · log p(next token) on that batch, and `grad.<PEFT key>` for every
    `lora_A` / `lora_B` tensor (the base is frozen by PEFT: no base gradients exist).

Run from the repository root with torch, transformers 5.x and peft installed:
    python3 tools/gen_lora_fixture.py                   # Qwen3: tests/fixtures/lora_peft/
    python3 tools/gen_lora_fixture.py --family llama    # Llama (GQA, head_dim 12 x 4 heads
                                                        # != hidden 32): lora_peft_llama/
(CPU, float32, eager attention, 1 thread, fixed seeds.)

    python3 tools/gen_lora_fixture.py --check DIR

loads `base/` with the adapter in DIR through `PeftModel.from_pretrained` and prints the largest
|Δlogit| against `reference`. An adapter written by rl-models' `save_adapter` (the fixture's
adapter loaded and saved again):
    RLVR_LORA_SAVE_TO=/tmp/ours cargo test -p rl-models --test lora_peft saved_adapters
    python3 tools/gen_lora_fixture.py --check /tmp/ours
"""

import argparse
import os
import shutil

import torch
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures")
# family -> (config class, model class, output folder, config fields beside the common ones)
FAMILIES = {
    "qwen3": (Qwen3Config, Qwen3ForCausalLM, "lora_peft", dict(head_dim=8)),
    # GQA with head_dim x heads (48) != hidden (32), rope theta 1e5 as SmolLM2.
    "llama": (LlamaConfig, LlamaForCausalLM, "lora_peft_llama",
              dict(head_dim=12, attention_bias=False, mlp_bias=False)),
}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def batch():
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, 96, (2, 11), generator=g)
    mask = torch.ones(2, 11, dtype=torch.long)
    mask[1, 7:] = 0
    ids[1, 7:] = 0
    return ids, mask


def logprob_loss(logits, ids, mask):
    lp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
    valid = (mask[:, :-1] * mask[:, 1:]).float()
    return (lp * valid).sum()


def generate(family):
    from peft import LoraConfig, get_peft_model

    config_cls, model_cls, folder, extra = FAMILIES[family]
    OUT = os.path.join(FIXTURES, folder)
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    torch.manual_seed(3)
    cfg = config_cls(
        vocab_size=96, hidden_size=32, intermediate_size=80, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        rope_theta=10000.0 if family == "qwen3" else 100000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=False, attn_implementation="eager", initializer_range=0.2, **extra,
    )
    base = model_cls(cfg).to(torch.float32)
    base.save_pretrained(os.path.join(OUT, "base"), safe_serialization=True)
    torch.manual_seed(4)
    model = get_peft_model(base, LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules=TARGETS, bias="none",
        init_lora_weights=False, task_type="CAUSAL_LM"))
    model.save_pretrained(os.path.join(OUT, "adapter"))
    ids, mask = batch()
    model.eval()
    logits = model(input_ids=ids, attention_mask=mask).logits
    loss = logprob_loss(logits, ids, mask)
    loss.backward()
    ref = {"ids": ids.to(torch.int64), "mask": mask.to(torch.int64),
           "logits": logits.detach().float().contiguous(), "loss": loss.detach().reshape(1)}
    n_grads = 0
    for name, p in model.named_parameters():
        if p.requires_grad:
            assert "lora_" in name, name
            # PEFT's saved key drops the adapter name: ...lora_A.default.weight -> ...lora_A.weight
            ref["grad." + name.replace(".default", "")] = p.grad.detach().float().contiguous()
            n_grads += 1
        else:
            assert p.grad is None, name
    merged = model.merge_and_unload()
    with torch.no_grad():
        ref["merged_logits"] = merged(input_ids=ids, attention_mask=mask).logits.float().contiguous()
    save_file(ref, os.path.join(OUT, "reference.safetensors"))
    saved = load_file(os.path.join(OUT, "adapter", "adapter_model.safetensors"))
    assert set(k[len("grad."):] for k in ref if k.startswith("grad.")) == set(saved), "key names"
    print(f"wrote {OUT}: {len(saved)} adapter tensors, {n_grads} gradients, loss {loss.item():.6f}")


def check(adapter_dir, family):
    from peft import PeftModel

    _, model_cls, folder, _ = FAMILIES[family]
    OUT = os.path.join(FIXTURES, folder)
    base = model_cls.from_pretrained(os.path.join(OUT, "base"), torch_dtype=torch.float32,
                                            attn_implementation="eager")
    model = PeftModel.from_pretrained(base, adapter_dir)
    model.eval()
    ref = load_file(os.path.join(OUT, "reference.safetensors"))
    with torch.no_grad():
        logits = model(input_ids=ref["ids"], attention_mask=ref["mask"]).logits
    valid = ref["mask"].bool()
    d = (logits - ref["logits"]).abs()[valid].max().item()
    print(f"PEFT with the adapter in {adapter_dir}: max |Δlogit| against the reference = {d:.3e}")
    assert d < 1e-4, d


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="DIR")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="qwen3")
    a = ap.parse_args()
    if a.check:
        check(a.check, a.family)
    else:
        generate(a.family)
