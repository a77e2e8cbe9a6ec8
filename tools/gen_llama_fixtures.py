#!/usr/bin/env python3
"""Reference fixtures for the Llama family in `crates/rl-models` (LlamaForCausalLM and
Qwen2ForCausalLM), produced by HF transformers in the format of `tools/gen_qwen3_fixtures.py`.

Writes `crates/rl-models/tests/fixtures/`:

* `<model>/`: a small random checkpoint in HF layout (config.json + model.safetensors):
  - `llama_tied_gqa`    : LlamaForCausalLM, tied embeddings, GQA (4 query / 2 KV heads),
                          head_dim 16 with hidden 48 (heads*head_dim != hidden), rope_theta 1e5,
                          rms_norm_eps 1e-5, f32 on disk, transformers-5 config style.
  - `llama_untied_rope3`: untied lm_head, GQA (4 / 2), `rope_scaling` of type `llama3` (factor 8,
                          low/high_freq_factor 1/4, original_max_position_embeddings 64) chosen
                          so that the unscaled, the scaled and the smoothly interpolated frequency
                          bands all occur; bf16 on disk, Hub config style (rope_theta and
                          rope_scaling at the top level, torch_dtype) as meta-llama/Llama-3.2 ships.
  - `llama_bias`        : LlamaForCausalLM with attention_bias = true (random non-zero biases on
                          q/k/v AND o_proj, which is what HF Llama builds), MQA (1 KV head),
                          f16 on disk.
  - `qwen2_bias`        : Qwen2ForCausalLM (random non-zero q/k/v biases, o_proj without bias),
                          tied, GQA (6 / 2), bf16 on disk, transformers-5 config style.
* `<model>/reference.safetensors`: the arrays of gen_qwen3_fixtures.py (`seq{i}.ids/logits/
  logprobs/entropy`, `right.*`, `left.*`, `loss`, `grad.<hf name>`), computed by HF in float32
  with eager attention, plus `rope.inv_freq` (HF's inverse frequencies, f32).
* `<model>/reference.json`: greedy continuations (single prompts and a left-padded batch) with the
  smallest top-1/top-2 margin (asserted far above float noise), the parameter count, and
  `sensitivity`: how far the logits move (max |delta|) when one feature is taken away (biases
  zeroed, another rope band, GQA heads grouped the wrong way); each is asserted to be far above
  the Rust tests' logit tolerance, so a model that ignores the feature fails the fixture.
* `config_cases_llama.json`: how transformers resolves partial LlamaConfig / Qwen2Config
  config.json files (defaults for head_dim, num_key_value_heads, rope_theta, rms_norm_eps,
  tie_word_embeddings, attention_bias; both rope spellings; llama3 rope parameters and the
  resulting inverse frequencies).

Checks made while writing: each checkpoint is loaded back with `AutoModelForCausalLM.from_pretrained`
and must give the reference logits; Qwen2 must equal Llama with attention_bias and a zero o_proj
bias; HF's llama3 inverse frequencies must equal an independent float64 computation to f32
rounding, with every band hit (the band of each index is printed).

Run from the repository root (CPU only; deterministic: fixed seeds, 1 thread):
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_llama_fixtures.py
Written with transformers 5.25.0, torch 2.15.0, safetensors.
"""

import json
import math
import os
import shutil
import sys

import torch
from safetensors.torch import save_file
from transformers import (AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM)
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The Qwen3 script's helpers define the shared fixture format (same functions, same layout).
from gen_qwen3_fixtures import (GREEDY_NEW_TOKENS, MIN_MARGIN, greedy, hf_logits,  # noqa: E402
                                pad_batch, token_stats)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures")

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

# The Rust tests compare logits with 1e-4 (f32 CPU) to 2e-4 (GPU); every feature must move the
# logits by far more than that.
MIN_SENSITIVITY = 1e-2

LLAMA3_ROPE = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                   original_max_position_embeddings=64)

MODELS = [
    dict(
        name="llama_tied_gqa",
        family="llama",
        seed=15,
        disk_dtype=torch.float32,
        hub_style=False,
        lengths=[9, 16, 5],
        config=dict(
            vocab_size=128,
            hidden_size=48,
            intermediate_size=112,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=128,
            rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
            rms_norm_eps=1e-5,
            tie_word_embeddings=True,
            bos_token_id=1,
            eos_token_id=2,
        ),
    ),
    dict(
        name="llama_untied_rope3",
        family="llama",
        seed=12,
        disk_dtype=torch.bfloat16,
        hub_style=True,
        # positions up to ~50: the scaled (low-frequency) bands turn by whole radians
        lengths=[10, 40, 23],
        config=dict(
            vocab_size=128,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=512,
            rope_parameters=dict(rope_theta=10000.0, **LLAMA3_ROPE),
            rms_norm_eps=1e-5,
            tie_word_embeddings=False,
            bos_token_id=1,
            eos_token_id=[2, 3],
        ),
    ),
    dict(
        name="llama_bias",
        family="llama",
        seed=21,
        disk_dtype=torch.float16,
        hub_style=False,
        lengths=[8, 13, 6],
        config=dict(
            vocab_size=128,
            hidden_size=32,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=1,
            max_position_embeddings=64,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
            attention_bias=True,
        ),
    ),
    dict(
        name="qwen2_bias",
        family="qwen2",
        seed=19,
        disk_dtype=torch.bfloat16,
        hub_style=False,
        lengths=[11, 7, 14],
        config=dict(
            vocab_size=128,
            hidden_size=48,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=6,
            num_key_value_heads=2,
            max_position_embeddings=64,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
            eos_token_id=2,
        ),
    ),
]

FAMILIES = {
    "llama": (LlamaConfig, LlamaForCausalLM),
    "qwen2": (Qwen2Config, Qwen2ForCausalLM),
}


def init_weights(model, seed, disk_dtype):
    """Weights with unit-scale activations as in gen_qwen3_fixtures.py, plus random non-zero
    biases (HF initialises biases to zero, which would test nothing), all rounded to the
    on-disk dtype so that the file holds exactly the values HF computes with."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name or name == "lm_head.weight":
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                p.copy_(4.0 * torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            else:  # Linear [out, in]
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            p.copy_(p.to(disk_dtype).to(torch.float32))


def llama3_bands(inv_freq_default, rope):
    """Independent float64 computation of the llama3 inverse frequencies (the formulas of Meta's
    reference `apply_scaling`) and the band of each index: 'unscaled' (wavelength below
    original_max / high_freq_factor), 'scaled' (above original_max / low_freq_factor, divided by
    factor) or 'smooth' (in between, inclusive of both ends, interpolated)."""
    factor = rope["factor"]
    lo, hi = rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / lo, old / hi
    out, bands = [], []
    for f in inv_freq_default:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(f)
            bands.append("unscaled")
        elif wavelen > low_wavelen:
            out.append(f / factor)
            bands.append("scaled")
        else:
            s = (old / wavelen - lo) / (hi - lo)
            out.append((1 - s) * f / factor + s * f)
            bands.append("smooth")
    return out, bands


def check_rope(model, spec):
    """Checks HF's inverse frequencies against an independent computation; returns them."""
    cfg = spec["config"]
    rope = cfg["rope_parameters"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    theta = rope["rope_theta"]
    default = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    hf = model.model.rotary_emb.inv_freq.detach().double().tolist()
    assert model.model.rotary_emb.attention_scaling == 1.0
    if rope["rope_type"] == "default":
        want, bands = default, None
    else:
        want, bands = llama3_bands(default, rope)
        for i, (b, f, w) in enumerate(zip(bands, default, want)):
            print(f"  {spec['name']}: inv_freq[{i}] wavelength {2 * math.pi / f:9.2f} -> {b:8s} "
                  f"default {f:.6g} llama3 {w:.6g} (HF {hf[i]:.6g})")
        assert {"unscaled", "scaled", "smooth"} <= set(bands), f"not every band is hit: {bands}"
    for i, (a, b) in enumerate(zip(hf, want)):
        assert abs(a - b) <= 4e-7 * abs(b), f"{spec['name']}: inv_freq[{i}] HF {a} vs {b}"
    return bands


def to_hub_style(config_path):
    """Rewrites a transformers-5 config.json into the 4.x Hub style of meta-llama/Llama-3.2:
    rope_theta and rope_scaling (without rope_theta) at the top level, torch_dtype."""
    with open(config_path) as f:
        c = json.load(f)
    rope = c.pop("rope_parameters")
    c["rope_theta"] = rope.pop("rope_theta")
    c["rope_scaling"] = None if rope.get("rope_type", "default") == "default" else rope
    c["torch_dtype"] = c.pop("dtype")
    c["transformers_version"] = "4.45.0"
    with open(config_path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)


def all_logits(model, seqs):
    return [hf_logits(model, s[None])[0] for s in seqs]


def max_delta(model, seqs, ref):
    return max(float((a - b).abs().max()) for a, b in zip(all_logits(model, seqs), ref))


def sensitivity(spec, model, seqs, ref):
    """max |delta logits| over the fixture's sequences when one feature is taken away."""
    out = {}
    sd = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = model.config

    def with_state(edit):
        with torch.no_grad():
            for k, v in sd.items():
                model.state_dict()[k].copy_(v)
            edit(model.state_dict())
        d = max_delta(model, seqs, ref)
        with torch.no_grad():
            for k, v in sd.items():
                model.state_dict()[k].copy_(v)
        return d

    def zero(suffixes):
        def edit(state):
            for k, v in state.items():
                if k.endswith(suffixes):
                    v.zero_()
        return edit

    if any(k.endswith("o_proj.bias") for k in sd):
        out["o_proj_bias_zeroed"] = with_state(zero(("o_proj.bias",)))
    if any(k.endswith("q_proj.bias") for k in sd):
        out["qkv_bias_zeroed"] = with_state(zero(("q_proj.bias", "k_proj.bias", "v_proj.bias")))
        for p in ("q", "k", "v"):
            out[f"{p}_bias_zeroed"] = with_state(zero((f"{p}_proj.bias",)))

    n_heads, n_kv = cfg.num_attention_heads, cfg.num_key_value_heads
    if 1 < n_kv < n_heads:
        # HF pairs query head h with KV head h // (n_heads / n_kv) (repeat_interleave). The other
        # grouping, h with KV head h % n_kv, is emulated exactly by moving query head h (its
        # q_proj rows and bias, and its o_proj columns) to slot src[h] = (h % n_kv) * rep + h // n_kv.
        rep = n_heads // n_kv
        src = [(h % n_kv) * rep + h // n_kv for h in range(n_heads)]
        slot_from = [src.index(j) for j in range(n_heads)]  # slot j holds query head slot_from[j]
        hd = model.model.layers[0].self_attn.head_dim

        def regroup(state):
            for k, v in state.items():
                if k.endswith(("q_proj.weight", "q_proj.bias")):
                    heads = v.clone().reshape(n_heads, hd, *v.shape[1:])
                    v.copy_(heads[slot_from].reshape(v.shape))
                elif k.endswith("o_proj.weight"):
                    cols = v.clone().reshape(v.shape[0], n_heads, hd)
                    v.copy_(cols[:, slot_from].reshape(v.shape))
        out["gqa_grouped_modulo"] = with_state(regroup)

    rot = model.model.rotary_emb
    inv = rot.inv_freq.clone()
    rope = spec["config"]["rope_parameters"]
    head_dim = inv.numel() * 2
    default = 1.0 / (rope["rope_theta"] ** (torch.arange(0, head_dim, 2, dtype=torch.float)
                                            / head_dim))

    def with_inv(new):
        rot.inv_freq.copy_(new)
        d = max_delta(model, seqs, ref)
        rot.inv_freq.copy_(inv)
        return d

    if rope["rope_type"] == "llama3":
        _, bands = llama3_bands(default.double().tolist(), rope)
        smooth = torch.tensor([b == "smooth" for b in bands])
        scaled = torch.tensor([b == "scaled" for b in bands])
        out["rope_llama3_ignored"] = with_inv(default)
        out["rope_smooth_band_unscaled"] = with_inv(torch.where(smooth, default, inv))
        out["rope_smooth_band_fully_scaled"] = with_inv(
            torch.where(smooth, default / rope["factor"], inv))
        out["rope_scaled_band_unscaled"] = with_inv(torch.where(scaled, default, inv))
    else:
        out["rope_theta_1e4_instead"] = with_inv(
            1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim)))
        if rope["rope_theta"] == 10000.0:
            del out["rope_theta_1e4_instead"]

    eps = cfg.rms_norm_eps
    for m in model.modules():
        if hasattr(m, "variance_epsilon"):
            m.variance_epsilon = 1e-6 if eps != 1e-6 else 1e-5
    out["rms_norm_eps_other"] = max_delta(model, seqs, ref)
    for m in model.modules():
        if hasattr(m, "variance_epsilon"):
            m.variance_epsilon = eps
    assert max_delta(model, seqs, ref) == 0.0
    return out


def build(spec):
    name = spec["name"]
    out_dir = os.path.join(OUT, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    config_cls, model_cls = FAMILIES[spec["family"]]
    cfg = config_cls(**json.loads(json.dumps(spec["config"])))
    cfg._attn_implementation = "eager"
    torch.manual_seed(spec["seed"])
    model = model_cls(cfg).float().eval()
    init_weights(model, spec["seed"], spec["disk_dtype"])
    vocab = cfg.vocab_size
    bands = check_rope(model, spec)

    # --- checkpoint on disk ---------------------------------------------------------------
    disk = model_cls(cfg)
    disk.load_state_dict(model.state_dict())
    disk = disk.to(spec["disk_dtype"])
    disk.save_pretrained(out_dir)
    gen_cfg = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(gen_cfg):
        os.remove(gen_cfg)
    if spec["hub_style"]:
        to_hub_style(os.path.join(out_dir, "config.json"))

    # --- references -------------------------------------------------------------------------
    g = torch.Generator().manual_seed(100 + spec["seed"])
    seqs = [torch.randint(0, vocab, (n,), generator=g) for n in spec["lengths"]]
    ref = {}
    for i, s in enumerate(seqs):
        logits = hf_logits(model, s[None])[0]
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
    ref["rope.inv_freq"] = model.model.rotary_emb.inv_freq.detach().clone()

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

    ref = {k: (v.to(torch.int64) if not v.is_floating_point() else v.float()).contiguous()
           for k, v in ref.items()}
    save_file(ref, os.path.join(out_dir, "reference.safetensors"))

    # --- the files on disk give the same model to transformers ------------------------------
    back = AutoModelForCausalLM.from_pretrained(out_dir, dtype=torch.float32,
                                                attn_implementation="eager").eval()
    assert type(back) is model_cls, f"{name}: reloaded as {type(back).__name__}"
    assert torch.equal(back.model.rotary_emb.inv_freq, model.model.rotary_emb.inv_freq), name
    if cfg.tie_word_embeddings:
        assert back.lm_head.weight.data_ptr() == back.model.embed_tokens.weight.data_ptr()
    reload_delta = max(float((a - ref[f"seq{i}.logits"]).abs().max())
                       for i, a in enumerate(all_logits(back, seqs)))
    assert reload_delta == 0.0, f"{name}: from_pretrained logits differ by {reload_delta}"

    sens = sensitivity(spec, model, seqs, [ref[f"seq{i}.logits"] for i in range(len(seqs))])
    for k, v in sens.items():
        if k == "rms_norm_eps_other":
            continue  # recorded only: eps 1e-5 vs 1e-6 may be below float noise
        assert v > MIN_SENSITIVITY, f"{name}: {k} moves the logits only by {v}"

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
        "generated_by": "tools/gen_llama_fixtures.py",
        "architecture": model_cls.__name__,
        "transformers": __import__("transformers").__version__,
        "torch": torch.__version__,
        "pad_id": pad_id,
        "prompts": [p.tolist() for p in prompts],
        "greedy_single": single,
        "greedy_batched": batched,
        "greedy_new_tokens": GREEDY_NEW_TOKENS,
        "min_top2_margin": margin,
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "rope_bands": bands,
        "sensitivity": sens,
    }
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: margin {margin:.4f}, params {meta['num_parameters']}, "
          f"sensitivity {json.dumps({k: round(v, 4) for k, v in sens.items()})}")
    return model, seqs, ref


def qwen2_is_llama_with_qkv_bias(qwen2_model, seqs, ref):
    """Qwen2 = Llama with attention_bias and a zero o_proj bias: same weights, same logits."""
    c = qwen2_model.config
    lcfg = LlamaConfig(vocab_size=c.vocab_size, hidden_size=c.hidden_size,
                       intermediate_size=c.intermediate_size,
                       num_hidden_layers=c.num_hidden_layers,
                       num_attention_heads=c.num_attention_heads,
                       num_key_value_heads=c.num_key_value_heads,
                       max_position_embeddings=c.max_position_embeddings,
                       rope_parameters=dict(c.rope_parameters), rms_norm_eps=c.rms_norm_eps,
                       tie_word_embeddings=c.tie_word_embeddings, attention_bias=True)
    lcfg._attn_implementation = "eager"
    llama = LlamaForCausalLM(lcfg).float().eval()
    sd = dict(qwen2_model.state_dict())
    for k, v in llama.state_dict().items():
        if k.endswith("o_proj.bias"):
            sd[k] = torch.zeros_like(v)
    llama.load_state_dict(sd)
    d = max(float((a - ref[f"seq{i}.logits"]).abs().max())
            for i, a in enumerate(all_logits(llama, seqs)))
    assert d <= 1e-5, f"qwen2 vs llama+qkv bias: {d}"
    print(f"qwen2_bias equals LlamaForCausalLM(attention_bias, o_proj.bias = 0): max |delta| {d}")


BASE = dict(vocab_size=10, hidden_size=64, intermediate_size=8, num_hidden_layers=1,
            num_attention_heads=4)
LLAMA3_HUB = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
              "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
CONFIG_CASES = [
    ("llama", dict(BASE)),
    ("llama", dict(BASE, num_key_value_heads=None, head_dim=None, rms_norm_eps=1e-5)),
    ("llama", dict(BASE, num_key_value_heads=1, head_dim=32, rope_theta=500000.0,
                   rope_scaling=None, torch_dtype="bfloat16", tie_word_embeddings=True,
                   vocab_size=128256, eos_token_id=[128001, 128008, 128009],
                   bos_token_id=128000)),
    ("llama", dict(BASE, num_key_value_heads=2, rope_theta=500000.0, rope_scaling=LLAMA3_HUB,
                   max_position_embeddings=131072, tie_word_embeddings=True)),
    ("llama", dict(BASE, rope_theta=50.0, max_position_embeddings=256,
                   rope_scaling={"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0})),
    ("llama", dict(BASE, rope_parameters=dict(rope_theta=10000.0, **LLAMA3_ROPE),
                   dtype="float16", attention_bias=True, eos_token_id=None)),
    ("llama", dict(BASE, rope_parameters={"rope_type": "default", "rope_theta": 7.0},
                   mlp_bias=False, attention_bias=False)),
    # Qwen2Config's num_key_value_heads defaults to 32 when the key is absent (only an explicit
    # null means num_attention_heads): valid with 32 heads, an invalid model with 4 ("valid").
    ("qwen2", dict(BASE, hidden_size=512, num_attention_heads=32)),
    ("qwen2", dict(BASE)),
    ("qwen2", dict(BASE, num_key_value_heads=None)),
    ("qwen2", dict(BASE, num_key_value_heads=2, rope_theta=1000000.0, rope_scaling=None,
                   torch_dtype="bfloat16", tie_word_embeddings=True, use_sliding_window=False,
                   sliding_window=32768, max_window_layers=21, vocab_size=151936,
                   eos_token_id=151645, bos_token_id=151643)),
    ("qwen2", dict(BASE, rope_parameters={"rope_type": "default", "rope_theta": 5.0},
                   dtype="float32", rms_norm_eps=1e-5, max_position_embeddings=128)),
    ("qwen2", dict(BASE, num_key_value_heads=1, head_dim=8)),
]


def config_cases():
    """How transformers resolves partial config.json files of both families; head_dim and the
    biases come from the modules HF builds (on the meta device), not from config attributes."""
    out = []
    for family, raw in CONFIG_CASES:
        config_cls, model_cls = FAMILIES[family]
        c = config_cls.from_dict(json.loads(json.dumps(raw)))
        with torch.device("meta"):
            m = model_cls(c)
        attn = m.model.layers[0].self_attn
        mlp = m.model.layers[0].mlp
        head_dim = attn.head_dim
        assert attn.q_proj.weight.shape[0] == c.num_attention_heads * head_dim
        rope = dict(c.rope_parameters)
        inv = LlamaRotaryEmbedding(c).inv_freq  # same code path as Qwen2RotaryEmbedding
        eos = c.eos_token_id
        kv = c.num_key_value_heads
        out.append({
            "family": family,
            # whether HF's resolved shapes make a working model (query heads a multiple of the
            # KV heads); HF itself builds the module either way
            "valid": kv <= c.num_attention_heads and c.num_attention_heads % kv == 0,
            "architecture": model_cls.__name__,
            "input": raw,
            "resolved": {
                "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
                "intermediate_size": c.intermediate_size,
                "num_hidden_layers": c.num_hidden_layers,
                "num_attention_heads": c.num_attention_heads,
                "num_key_value_heads": c.num_key_value_heads, "head_dim": head_dim,
                "rope_theta": rope["rope_theta"], "rope_type": rope["rope_type"],
                "rope_parameters": rope,
                "rms_norm_eps": c.rms_norm_eps,
                "max_position_embeddings": c.max_position_embeddings,
                "tie_word_embeddings": c.tie_word_embeddings,
                "q_bias": attn.q_proj.bias is not None, "k_bias": attn.k_proj.bias is not None,
                "v_bias": attn.v_proj.bias is not None, "o_bias": attn.o_proj.bias is not None,
                "mlp_bias": mlp.gate_proj.bias is not None,
                "bos_token_id": c.bos_token_id,
                "eos_token_id": [] if eos is None else (eos if isinstance(eos, list) else [eos]),
                "inv_freq": inv.tolist(),
            },
        })
    with open(os.path.join(OUT, "config_cases_llama.json"), "w") as f:
        json.dump({"generated_by": "tools/gen_llama_fixtures.py",
                   "transformers": __import__("transformers").__version__,
                   "cases": out}, f, indent=1)


def differ(models):
    """The variants are different models: pairwise, their first sequence's logits differ."""
    names = list(models)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            la, lb = models[a], models[b]
            n = min(la.shape[0], lb.shape[0])
            d = float((la[:n] - lb[:n]).abs().max())
            assert d > MIN_SENSITIVITY, f"{a} and {b} give the same logits"


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    built = {}
    for spec in MODELS:
        model, seqs, ref = build(spec)
        built[spec["name"]] = ref["seq0.logits"]
        if spec["family"] == "qwen2":
            qwen2_is_llama_with_qkv_bias(model, seqs, ref)
    differ(built)
    config_cases()
    for spec in MODELS:
        d = os.path.join(OUT, spec["name"])
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        assert size < 1_000_000, f"{spec['name']}: {size} bytes"
        print(f"{spec['name']}: {size} bytes")
