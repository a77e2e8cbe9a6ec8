#!/usr/bin/env python3
"""Reference fixtures for the Gemma 3 family in `crates/rl-models` (Gemma3ForCausalLM), produced
by HF transformers in the format of `tools/gen_qwen3_fixtures.py`.

Writes `crates/rl-models/tests/fixtures/`:

* `<model>/`: a small random checkpoint in HF layout (config.json + model.safetensors):
  - `gemma3_mqa`: MQA (4 query heads, 1 KV head) of head_dim 32 with hidden 48 (heads*head_dim
                  != hidden), 4 layers `[sliding, sliding, full, sliding]` given as `layer_types`
                  (transformers-5 style), sliding window 4, query_pre_attn_scalar 24 (not
                  head_dim), global RoPE base 1e6 and local base 100 (`rope_parameters` per layer
                  type), tied embeddings, f32 on disk.
  - `gemma3_gqa_hub`: GQA (4 / 2 heads of 16, hidden 64), 3 layers from `sliding_window_pattern`
                  3 (local, local, global), window 5, query_pre_attn_scalar = head_dim, the Hub's
                  config style of google/gemma-3-270m (`rope_theta`, `rope_local_base_freq`,
                  `rope_scaling: null`, `torch_dtype`, no `layer_types`), bf16 on disk.
* `<model>/reference.safetensors`: the arrays of gen_qwen3_fixtures.py (`seq{i}.ids/logits/
  logprobs/entropy`, `right.*`, `left.*`, `loss`, `grad.<hf name>`), computed by HF in float32
  with eager attention. Every sequence but the shortest is longer than the window, so the local
  layers mask keys; token ids are drawn from 1..vocab (id 0 is Gemma's padding_idx, whose
  embedding row HF's nn.Embedding never gives a gradient) and the pad id is vocab - 1.
* `<model>/reference.json`: greedy continuations (single prompts and a left-padded batch) with the
  smallest top-1/top-2 margin, the parameter count, and `sensitivity`: how far the logits move
  (max |delta|) when one Gemma feature is taken away (every layer global, the local RoPE base set
  to the global one, the attention scale taken from head_dim, the embedding unscaled, the norms
  computing x * w instead of x * (1 + w)); each is asserted to be far above the Rust tests' logit
  tolerance, so a model that ignores the feature fails the fixture.

Weights are random with unit-scale activations (gen_qwen3_fixtures.py's recipe; Gemma's norm
weights are offsets from 1, drawn as 0.3 * N(0, 1), and the embedding is drawn at 0.25 since it is
multiplied by sqrt(hidden)), rounded to the on-disk dtype.

Run from the repository root (CPU only; deterministic: fixed seeds, 1 thread):
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_gemma3_fixtures.py
Written with transformers 5.25.0, torch 2.15.0, safetensors.
"""

import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, Gemma3ForCausalLM, Gemma3TextConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_qwen3_fixtures import (GREEDY_NEW_TOKENS, MIN_MARGIN, greedy, hf_logits,  # noqa: E402
                                pad_batch, token_stats)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures")

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

# The Rust tests compare logits with 1e-4 (f32 CPU) to 2e-4 (GPU).
MIN_SENSITIVITY = 1e-2

MODELS = [
    dict(
        name="gemma3_mqa",
        seed=31,
        disk_dtype=torch.float32,
        hub_style=False,
        lengths=[9, 17, 6, 12, 26],
        config=dict(
            vocab_size=96,
            hidden_size=48,
            intermediate_size=96,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=32,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            query_pre_attn_scalar=24,
            sliding_window=4,
            layer_types=["sliding_attention", "sliding_attention", "full_attention",
                         "sliding_attention"],
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
            },
            tie_word_embeddings=True,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=1,
        ),
    ),
    dict(
        name="gemma3_gqa_hub",
        seed=39,
        disk_dtype=torch.bfloat16,
        hub_style=True,
        lengths=[11, 20, 7, 15],
        config=dict(
            vocab_size=80,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=128,
            rms_norm_eps=1e-6,
            query_pre_attn_scalar=16,
            sliding_window=5,
            sliding_window_pattern=3,
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            },
            tie_word_embeddings=True,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=[1, 3],
        ),
    ),
]


def init_weights(model, seed, disk_dtype):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("post_attention_layernorm.weight",
                              "post_feedforward_layernorm.weight")):
                # Residual-branch outputs larger than the scaled embedding: otherwise a tied
                # model mostly predicts its input token and greedy decoding just repeats it.
                p.copy_(1.5 + 0.3 * torch.randn(p.shape, generator=g))
            elif name.endswith("norm.weight"):
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                p.copy_(4.0 * torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            else:  # Linear [out, in]
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            p.copy_(p.to(disk_dtype).to(torch.float32))


def to_hub_style(config_path, spec):
    """Rewrites a transformers-5 config.json into the Hub style of google/gemma-3-270m:
    rope_theta, rope_local_base_freq and rope_scaling at the top level, torch_dtype, and here the
    layer pattern as sliding_window_pattern instead of layer_types."""
    with open(config_path) as f:
        c = json.load(f)
    rope = c.pop("rope_parameters")
    c["rope_theta"] = rope["full_attention"]["rope_theta"]
    c["rope_local_base_freq"] = rope["sliding_attention"]["rope_theta"]
    c["rope_scaling"] = None
    c["torch_dtype"] = c.pop("dtype")
    c.pop("layer_types")
    c["sliding_window_pattern"] = spec["config"]["sliding_window_pattern"]
    c["transformers_version"] = "4.55.0.dev0"
    with open(config_path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)


def all_logits(model, seqs):
    return [hf_logits(model, s[None])[0] for s in seqs]


def max_delta(model, seqs, ref):
    return max(float((a - b).abs().max()) for a, b in zip(all_logits(model, seqs), ref))


def variant(cfg_dict, state, **changes):
    """The same weights in a model built from the config with `changes`."""
    cfg = Gemma3TextConfig(**{**cfg_dict, **changes})
    cfg._attn_implementation = "eager"
    m = Gemma3ForCausalLM(cfg).float().eval()
    m.load_state_dict(state)
    return m


def sensitivity(spec, model, seqs, ref):
    cfg = spec["config"]
    state = model.state_dict()
    out = {}
    n = cfg["num_hidden_layers"]
    out["all_layers_global"] = max_delta(
        variant(cfg, state, layer_types=["full_attention"] * n, sliding_window_pattern=None),
        seqs, ref)
    glob = cfg["rope_parameters"]["full_attention"]
    out["local_rope_base_global"] = max_delta(
        variant(cfg, state, rope_parameters={"full_attention": dict(glob),
                                             "sliding_attention": dict(glob)}), seqs, ref)
    if cfg["query_pre_attn_scalar"] != cfg["head_dim"]:
        out["scale_from_head_dim"] = max_delta(
            variant(cfg, state, query_pre_attn_scalar=cfg["head_dim"]), seqs, ref)
    unscaled = variant(cfg, state)
    unscaled.model.embed_tokens.embed_scale.fill_(1.0)
    out["embedding_unscaled"] = max_delta(unscaled, seqs, ref)
    plain_norm = variant(cfg, {k: (v - 1.0 if k.endswith("norm.weight") else v)
                               for k, v in state.items()})
    out["norm_weight_without_unit_offset"] = max_delta(plain_norm, seqs, ref)
    for k, d in out.items():
        print(f"  {spec['name']}: sensitivity {k} = {d:.4f}")
        assert d > MIN_SENSITIVITY, f"{spec['name']}: {k} moves the logits by only {d}"
    return out


def build(spec):
    name = spec["name"]
    out_dir = os.path.join(OUT, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    cfg = Gemma3TextConfig(**spec["config"])
    cfg._attn_implementation = "eager"
    torch.manual_seed(spec["seed"])
    model = Gemma3ForCausalLM(cfg).float().eval()
    init_weights(model, spec["seed"], spec["disk_dtype"])
    vocab = cfg.vocab_size
    window = cfg.sliding_window
    print(f"{name}: layer_types {cfg.layer_types}, window {window}")
    assert any(t == "sliding_attention" for t in cfg.layer_types)
    assert any(t == "full_attention" for t in cfg.layer_types)

    # --- checkpoint on disk ---------------------------------------------------------------
    disk = Gemma3ForCausalLM(cfg)
    disk.load_state_dict(model.state_dict())
    disk = disk.to(spec["disk_dtype"])
    disk.save_pretrained(out_dir)
    gen_cfg = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(gen_cfg):
        os.remove(gen_cfg)
    if spec["hub_style"]:
        to_hub_style(os.path.join(out_dir, "config.json"), spec)
    reloaded = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32,
                                                    attn_implementation="eager").eval()
    assert list(reloaded.config.layer_types) == list(cfg.layer_types), reloaded.config.layer_types
    assert reloaded.config.rope_parameters == cfg.rope_parameters, reloaded.config.rope_parameters

    # --- references -------------------------------------------------------------------------
    g = torch.Generator().manual_seed(100 + spec["seed"])
    seqs = [torch.randint(1, vocab - 1, (n,), generator=g) for n in spec["lengths"]]
    assert sum(len(s) > window for s in seqs) >= len(seqs) - 1
    ref = {}
    for i, s in enumerate(seqs):
        logits = hf_logits(model, s[None])[0]
        assert torch.equal(logits, hf_logits(reloaded, s[None])[0]), f"{name}: reload differs"
        lp, ent = token_stats(logits, s)
        ref[f"seq{i}.ids"] = s.clone()
        ref[f"seq{i}.logits"] = logits
        ref[f"seq{i}.logprobs"] = lp
        ref[f"seq{i}.entropy"] = ent
    pad_id = vocab - 1
    for side in ("right", "left"):
        ids, mask = pad_batch(seqs, pad_id, left=(side == "left"))
        ref[f"{side}.ids"] = ids
        ref[f"{side}.mask"] = mask
        ref[f"{side}.logits"] = hf_logits(model, ids, mask)

    ids, mask = pad_batch(seqs, pad_id, left=False)
    model.zero_grad()
    logits = model(input_ids=ids, attention_mask=mask).logits.float()
    lp, ent = token_stats(logits, ids)
    valid = (mask[:, :-1] * mask[:, 1:]).float()
    loss = (lp * valid).sum() + 0.1 * (ent * valid).sum()
    loss.backward()
    ref["loss"] = loss.detach().reshape(1)
    for pname, p in model.named_parameters():
        ref[f"grad.{pname}"] = p.grad.detach().clone()
    model.zero_grad()
    sens = sensitivity(spec, model, seqs, [ref[f"seq{i}.logits"] for i in range(len(seqs))])

    ref = {k: (v.to(torch.int64) if not v.is_floating_point() else v.float()).contiguous()
           for k, v in ref.items()}
    save_file(ref, os.path.join(out_dir, "reference.safetensors"))

    prompts = [s[: max(2, len(s) // 2)] for s in seqs]
    single = []
    margin = float("inf")
    for p in prompts:
        new, m = greedy(model, p[None], torch.ones((1, len(p)), dtype=torch.long), vocab)
        single.append(new[0])
        margin = min(margin, m)
    ids, mask = pad_batch(prompts, pad_id, left=True)
    batched, m = greedy(model, ids, mask, vocab)
    margin = min(margin, m)
    assert margin > MIN_MARGIN, f"{name}: greedy top-2 margin {margin} too small, pick other seeds"
    for row in single + batched:
        assert len(set(row)) >= 3, f"{name}: degenerate greedy continuation {row}"
    meta = {
        "generated_by": "tools/gen_gemma3_fixtures.py",
        "transformers": __import__("transformers").__version__,
        "torch": torch.__version__,
        "pad_id": pad_id,
        "prompts": [p.tolist() for p in prompts],
        "greedy_single": single,
        "greedy_batched": batched,
        "greedy_new_tokens": GREEDY_NEW_TOKENS,
        "min_top2_margin": margin,
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "sensitivity": sens,
    }
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: margin {margin:.4f}, params {meta['num_parameters']}")


if __name__ == "__main__":
    for spec in MODELS:
        build(spec)
