#!/usr/bin/env python3
"""How far HF transformers' own bf16 logits move on a fixture when one rounding step is done in
another legitimate order: the spread that rounding-order differences alone produce, to compare
with rlvr's bf16 − HF bf16 gap (`bf16_compute_matches_hf_bf16`, docs/models.md).

For each fixture of crates/rl-models/tests/fixtures given (default: tied_bf16, qwen2_bias,
llama_untied_rope3), loads it with `dtype=torch.bfloat16` and eager attention, as
tools/gen_bf16_fixture.py does, runs the sequences of its reference.safetensors, then runs them
again with one change at a time, patched into the model's own transformers module:

* `linear_f32`: every nn.Linear computed in f32 and rounded once (f32 accumulation, one order);
* `rope_f32`: `q·cos + rotate_half(q)·sin` (and k) in f32, rounded once instead of per op;
* `norm_f32`: RMSNorm's weight multiply in f32 (HF rounds the normalised activations first);
* `libm_tables`: the cos/sin tables from glibc's cosf/sinf (what Rust's f32::cos calls) instead
  of torch's vectorised ones, before the cast to bf16.

and prints max and rms |Δlogit| against the native bf16 logits, beside HF's own bf16 − f32 gap.

Run from the repository root (torch + transformers 5.x + safetensors, CPU, 1 thread):
    python3 tools/bf16_sensitivity.py [fixture-name ...]
"""

import ctypes
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures")
LIBM = ctypes.CDLL("libm.so.6")
for fn in (LIBM.cosf, LIBM.sinf):
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def logits(model, ref):
    out, i = [], 0
    while f"seq{i}.ids" in ref:
        with torch.no_grad():
            out.append(model(input_ids=ref[f"seq{i}.ids"].long()[None]).logits[0].float())
        i += 1
    return out


def libm(t, fn):
    return torch.tensor([fn(x) for x in t.reshape(-1).tolist()], dtype=torch.float32).reshape(t.shape)


def patches(model):
    """(name, apply, undo) for each change, on the model's own modeling module."""
    mod = sys.modules[type(model).__module__]
    norm_cls = type(model.model.norm)
    rot = model.model.rotary_emb
    rot_cls = type(rot)
    saved = {"rope": mod.apply_rotary_pos_emb, "norm": norm_cls.forward, "rot": rot_cls.forward,
             "linear": torch.nn.Linear.forward}

    def linear_f32(self, x):
        b = None if self.bias is None else self.bias.float()
        return F.linear(x.float(), self.weight.float(), b).to(x.dtype)

    def rope_f32(q, k, cos, sin, position_ids=None, unsqueeze_dim=1):
        c, s = cos.unsqueeze(unsqueeze_dim).float(), sin.unsqueeze(unsqueeze_dim).float()
        rh = mod.rotate_half
        return ((q.float() * c + rh(q.float()) * s).to(q.dtype),
                (k.float() * c + rh(k.float()) * s).to(k.dtype))

    def norm_f32(self, h):
        dt = h.dtype
        h = h.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return (self.weight.float() * h).to(dt)

    def libm_tables(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return ((libm(emb, LIBM.cosf) * self.attention_scaling).to(x.dtype),
                (libm(emb, LIBM.sinf) * self.attention_scaling).to(x.dtype))

    def setter(obj, attr, value):
        return lambda: setattr(obj, attr, value)

    return [
        ("linear_f32", setter(torch.nn.Linear, "forward", linear_f32),
         setter(torch.nn.Linear, "forward", saved["linear"])),
        ("rope_f32", setter(mod, "apply_rotary_pos_emb", rope_f32),
         setter(mod, "apply_rotary_pos_emb", saved["rope"])),
        ("norm_f32", setter(norm_cls, "forward", norm_f32), setter(norm_cls, "forward", saved["norm"])),
        ("libm_tables", setter(rot_cls, "forward", libm_tables), setter(rot_cls, "forward", saved["rot"])),
    ]


def main(names):
    for name in names:
        d = os.path.join(FIXTURES, name)
        ref = load_file(os.path.join(d, "reference.safetensors"))
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16, attn_implementation="eager")
        model.eval()
        native = logits(model, ref)
        gaps = [(n - ref[f"seq{i}.logits"]).abs() for i, n in enumerate(native)]
        print(f"{name}: HF bf16 - f32: max {max(g.max().item() for g in gaps):.3f} "
              f"rms {max((g ** 2).mean().sqrt().item() for g in gaps):.4f} (worst sequence)")
        for label, apply, undo in patches(model):
            apply()
            try:
                other = logits(model, ref)
            finally:
                undo()
            diffs = [(a - b).abs() for a, b in zip(native, other)]
            print(f"  {label:12s} vs native bf16: max {max(x.max().item() for x in diffs):.3f} "
                  f"rms {max((x ** 2).mean().sqrt().item() for x in diffs):.4f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["tied_bf16", "qwen2_bias", "llama_untied_rope3"])
