#!/usr/bin/env python3
"""Reference fixtures for `crates/rl-models`, produced by HF transformers (the reference
implementation of Qwen3).

Writes `crates/rl-models/tests/fixtures/`:

* `<model>/`  a small random Qwen3 checkpoint in HF layout (config.json + safetensors):
  - `tied_bf16`      : tied embeddings, bf16 on disk, single file, transformers-5 config style
  - `untied_f16_sharded`: untied lm_head, f16 on disk, sharded with model.safetensors.index.json
  - `wide_f32_hub`   : num_heads*head_dim != hidden_size, MQA (1 kv head), f32 on disk,
                       Hub-style config (rope_theta/torch_dtype/rope_scaling) and a stored
                       `lm_head.weight` although the embeddings are tied (as Qwen/Qwen3-0.6B ships).
* `<model>/reference.safetensors` arrays computed by HF in float32 (eager attention):
  - `seq{i}.ids`, `seq{i}.logits` [len, vocab], `seq{i}.logprobs` [len-1], `seq{i}.entropy` [len-1]
  - `right.ids`, `right.mask`, `right.logits` and `left.*`: padded batches of the same sequences
    (pad id = vocab-1, a real token, so that masks cannot come from pad ids)
  - `loss` and `grad.<hf tensor name>`: gradients of
    loss = sum(valid * logprob) + 0.1 * sum(valid * entropy) on the right-padded batch
* `<model>/reference.json`: greedy continuations from `model.generate(do_sample=False)` for single
  prompts and for a left-padded batch, with the smallest top-1/top-2 logit margin seen (the test is
  only meaningful when that margin is far above float noise; the script asserts it).
* `presets.json`: parameter counts HF computes for the Qwen3-0.6B/1.7B/4B/8B shapes.
* `config_cases.json`: how transformers resolves partial config.json files (its defaults for
  head_dim / num_key_value_heads / rope_theta ..., both rope spellings).
* `qwen3_chat_cases.json` (only when the real tokenizer is installed by
  `scripts/fetch-qwen3-tokenizer.sh`): chat-template renderings and ids from
  `AutoTokenizer.apply_chat_template`.

Run from the repository root:  python3 tools/gen_qwen3_fixtures.py
(torch + transformers 5.x + safetensors, CPU only; deterministic: fixed seeds, 1 thread).
"""

import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file
from transformers import Qwen3Config, Qwen3ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures")
TOKENIZER_DIR = os.path.join(ROOT, ".cache", "qwen3-tokenizer")

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

MODELS = [
    dict(
        name="tied_bf16",
        seed=1,
        disk_dtype=torch.bfloat16,
        shard=None,
        hub_style=False,
        store_tied_head=False,
        lengths=[9, 16, 5],
        config=dict(
            vocab_size=128,
            hidden_size=64,
            intermediate_size=160,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=64,
            rope_theta=10000.0,
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
        ),
    ),
    dict(
        name="untied_f16_sharded",
        seed=2,
        disk_dtype=torch.float16,
        shard="40KB",
        hub_style=False,
        store_tied_head=False,
        lengths=[12, 7],
        config=dict(
            vocab_size=100,
            hidden_size=48,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=6,
            num_key_value_heads=2,
            head_dim=8,
            max_position_embeddings=64,
            rope_theta=1000000.0,
            rms_norm_eps=1e-6,
            tie_word_embeddings=False,
        ),
    ),
    dict(
        name="wide_f32_hub",
        seed=3,
        disk_dtype=torch.float32,
        shard=None,
        hub_style=True,
        store_tied_head=True,
        lengths=[6, 11, 14],
        config=dict(
            vocab_size=80,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=1,
            head_dim=24,
            max_position_embeddings=64,
            rope_theta=1000000.0,
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
        ),
    ),
]

GREEDY_NEW_TOKENS = 12
MIN_MARGIN = 1e-3


def init_weights(model, seed, disk_dtype):
    """Weights with unit-scale activations (HF's std 0.02 init gives near-uniform logits, a weak
    test), rounded to the on-disk dtype so that the file holds exactly the values HF computes with."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name or name == "lm_head.weight":
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            elif name.endswith(("o_proj.weight", "down_proj.weight")):
                # Residual-branch outputs larger than the embedding: otherwise a tied model
                # mostly predicts its input token and greedy decoding just repeats it.
                p.copy_(4.0 * torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            else:  # Linear [out, in]
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
            p.copy_(p.to(disk_dtype).to(torch.float32))


def hf_logits(model, ids, mask=None):
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask).logits.float()


def token_stats(logits, ids):
    """logprob[t] = log p(ids[t+1] | ids[..=t]) and the entropy of that distribution."""
    logp = torch.log_softmax(logits[..., :-1, :].float(), dim=-1)
    lp = logp.gather(-1, ids[..., 1:, None]).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1)
    return lp, ent


def pad_batch(seqs, pad_id, left):
    t = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), t), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), t), dtype=torch.long)
    for i, s in enumerate(seqs):
        if left:
            ids[i, t - len(s):] = s
            mask[i, t - len(s):] = 1
        else:
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
    return ids, mask


def greedy(model, ids, mask, vocab):
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        do_sample=False,
        max_new_tokens=GREEDY_NEW_TOKENS,
        min_new_tokens=GREEDY_NEW_TOKENS,
        eos_token_id=None,
        pad_token_id=vocab - 1,
        output_logits=True,
        return_dict_in_generate=True,
        use_cache=True,
    )
    new = out.sequences[:, ids.shape[1]:]
    margin = float("inf")
    for step_logits in out.logits:
        top2 = step_logits.float().topk(2, dim=-1).values
        margin = min(margin, float((top2[:, 0] - top2[:, 1]).min()))
    return new.tolist(), margin


def to_hub_style(config_path):
    """Rewrite a transformers-5 config.json into the 4.51 Hub style of Qwen/Qwen3-0.6B."""
    with open(config_path) as f:
        c = json.load(f)
    c["rope_theta"] = c.pop("rope_parameters")["rope_theta"]
    c["rope_scaling"] = None
    c["torch_dtype"] = c.pop("dtype")
    c.pop("layer_types", None)
    c["transformers_version"] = "4.51.0"
    with open(config_path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)


def build(spec):
    name = spec["name"]
    out_dir = os.path.join(OUT, name)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    cfg = Qwen3Config(**spec["config"])
    cfg._attn_implementation = "eager"
    torch.manual_seed(spec["seed"])
    model = Qwen3ForCausalLM(cfg).float().eval()
    init_weights(model, spec["seed"], spec["disk_dtype"])
    vocab = cfg.vocab_size

    # --- checkpoint on disk ---------------------------------------------------------------
    disk = Qwen3ForCausalLM(cfg)
    disk.load_state_dict(model.state_dict())
    disk = disk.to(spec["disk_dtype"])
    if spec["shard"]:
        disk.save_pretrained(out_dir, max_shard_size=spec["shard"])
    else:
        disk.save_pretrained(out_dir)
    gen_cfg = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(gen_cfg):
        os.remove(gen_cfg)
    if spec["store_tied_head"]:
        # Qwen/Qwen3-0.6B ships a duplicate lm_head.weight although tied: write it explicitly.
        sd = {k: v.contiguous() for k, v in disk.state_dict().items()}
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"].clone()
        save_file(sd, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
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

    # gradients of a masked log-prob + entropy loss on the right-padded batch
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

    # greedy continuations: each prompt alone, then the left-padded batch
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
        "generated_by": "tools/gen_qwen3_fixtures.py",
        "transformers": __import__("transformers").__version__,
        "torch": torch.__version__,
        "pad_id": pad_id,
        "prompts": [p.tolist() for p in prompts],
        "greedy_single": single,
        "greedy_batched": batched,
        "greedy_new_tokens": GREEDY_NEW_TOKENS,
        "min_top2_margin": margin,
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}: margin {margin:.4f}, params {meta['num_parameters']}")


PRESETS = {
    "qwen3_0_6b": dict(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, intermediate_size=3072,
                       tie_word_embeddings=True),
    "qwen3_1_7b": dict(hidden_size=2048, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, intermediate_size=6144,
                       tie_word_embeddings=True),
    "qwen3_4b": dict(hidden_size=2560, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, intermediate_size=9728,
                     tie_word_embeddings=True),
    "qwen3_8b": dict(hidden_size=4096, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, intermediate_size=12288,
                     tie_word_embeddings=False),
}


def presets():
    out = {}
    for name, kw in PRESETS.items():
        cfg = Qwen3Config(vocab_size=151936, max_position_embeddings=40960, rope_theta=1000000.0,
                          rms_norm_eps=1e-6, **kw)
        with torch.device("meta"):
            m = Qwen3ForCausalLM(cfg)
        # parameters() deduplicates the tied lm_head/embedding
        out[name] = {"num_parameters": sum(p.numel() for p in m.parameters()), **kw}
    with open(os.path.join(OUT, "presets.json"), "w") as f:
        json.dump(out, f, indent=1)


BASE_CONFIG = dict(vocab_size=10, hidden_size=64, intermediate_size=8, num_hidden_layers=1,
                   num_attention_heads=32)
CONFIG_CASES = [
    dict(BASE_CONFIG),
    dict(BASE_CONFIG, num_attention_heads=16, num_key_value_heads=None),
    dict(BASE_CONFIG, num_key_value_heads=2, head_dim=8, rope_theta=5.0, rope_scaling=None,
         torch_dtype="bfloat16", tie_word_embeddings=True, eos_token_id=[3, 4]),
    dict(BASE_CONFIG, rope_parameters={"rope_theta": 7.0, "rope_type": "default"},
         dtype="float16", rms_norm_eps=1e-5, max_position_embeddings=128, eos_token_id=2),
]


def config_cases():
    """How transformers resolves partial config.json files (defaults, both rope spellings)."""
    out = []
    for raw in CONFIG_CASES:
        c = Qwen3Config.from_dict(dict(raw))
        eos = c.eos_token_id
        out.append({
            "input": raw,
            "resolved": {
                "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
                "intermediate_size": c.intermediate_size,
                "num_hidden_layers": c.num_hidden_layers,
                "num_attention_heads": c.num_attention_heads,
                "num_key_value_heads": c.num_key_value_heads, "head_dim": c.head_dim,
                "rope_theta": c.rope_parameters["rope_theta"], "rms_norm_eps": c.rms_norm_eps,
                "max_position_embeddings": c.max_position_embeddings,
                "tie_word_embeddings": c.tie_word_embeddings,
                "eos_token_id": [] if eos is None else (eos if isinstance(eos, list) else [eos]),
            },
        })
    with open(os.path.join(OUT, "config_cases.json"), "w") as f:
        json.dump({"generated_by": "tools/gen_qwen3_fixtures.py", "cases": out}, f, indent=1)


CHAT_CASES = [
    dict(messages=[{"role": "user", "content": "What is 1+1?"}], add_generation_prompt=True),
    dict(messages=[{"role": "user", "content": "What is 1+1?"}], add_generation_prompt=True,
         enable_thinking=False),
    dict(messages=[{"role": "system", "content": "You are a careful mathematician."},
                   {"role": "user", "content": "Compute 12*12."}], add_generation_prompt=True),
    dict(messages=[{"role": "user", "content": "What is 2+2?"},
                   {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
                   {"role": "user", "content": "And 3+3?"}], add_generation_prompt=True,
         enable_thinking=False),
    dict(messages=[{"role": "user", "content": "Say hi."},
                   {"role": "assistant", "content": "<think>\nshort\n</think>\n\nhi"}],
         add_generation_prompt=False),
    dict(messages=[{"role": "user", "content": "Say hi."},
                   {"role": "assistant", "content": "hello"}],
         add_generation_prompt=False),
    dict(messages=[{"role": "system", "content": "S"}, {"role": "user", "content": "u1"},
                   {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2 你好"}],
         add_generation_prompt=True),
]


def chat_cases():
    if not os.path.exists(os.path.join(TOKENIZER_DIR, "tokenizer.json")):
        print("skipping chat cases: run scripts/fetch-qwen3-tokenizer.sh first", file=sys.stderr)
        return
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    out = []
    for case in CHAT_CASES:
        kw = {k: v for k, v in case.items() if k != "messages"}
        text = tok.apply_chat_template(case["messages"], tokenize=False, **kw)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        out.append({**case, "enable_thinking": case.get("enable_thinking", True),
                    "text": text, "ids": ids})
    with open(os.path.join(OUT, "qwen3_chat_cases.json"), "w") as f:
        json.dump({"generated_by": "tools/gen_qwen3_fixtures.py", "cases": out}, f, indent=1,
                  ensure_ascii=False)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for spec in MODELS:
        build(spec)
    presets()
    config_cases()
    chat_cases()
