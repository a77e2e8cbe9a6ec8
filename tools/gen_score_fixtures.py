#!/usr/bin/env python3
"""Reference fixtures for score models in `crates/rl-models` (`ScoreModel`): reward models
(`*ForSequenceClassification`) and value models (`*ForTokenClassification`), made and evaluated by
HF transformers.

Writes `crates/rl-models/tests/fixtures/score/<name>/`: a small random checkpoint in HF layout
(config.json + model.safetensors, as `save_pretrained` writes it) and `reference.json`:
`ids` (a right-padded batch, pad id 0, no real token is 0), `lengths`, and `scores`: for a
sequence classifier HF's pooled logits `[batch, num_labels]` (the last non-pad token), for a token
classifier the logits of every real token `[batch][length][num_labels]`. float32, eager attention.

Models (every family rl-models reads, both heads, both bias settings):
  * rm_llama_untied  LlamaForSequenceClassification, untied embeddings (so no lm_head in the file),
                     GQA 4/2, 1 label
  * rm_qwen3         Qwen3ForSequenceClassification, tied, 2 labels
  * rm_gemma3        Gemma3TextForSequenceClassification, sliding window 4 with sequences longer
                     than it, MQA, head_dim 32 != hidden/heads, 1 label
  * vm_qwen2         Qwen2ForTokenClassification (q/k/v biases), 1 label, score with a bias
                     (verl's critic: AutoModelForTokenClassification, num_labels = 1)
  * vm_llama_nobias  LlamaForTokenClassification with token_classification_bias = false, 2 labels

Each checkpoint is loaded back with AutoModelFor{Sequence,Token}Classification and must give the
reference scores. `sensitivity` in reference.json: how far the scores move when the score head
reads the token before the last (pooling off by one) and when the final norm is skipped; the Rust
test checks its tolerance is far below both.

Run from the repository root (CPU only; deterministic: fixed seeds, 1 thread):
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_score_fixtures.py
Check a folder that rlvr saved (`ScoreModel::save`) from fixture NAME: transformers' Auto class
must load it and give the fixture's reference scores:
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_score_fixtures.py --check DIR NAME
Written with transformers 5.25.0, torch 2.15.0.
"""

import json
import os
import shutil
import sys

import torch
import transformers
from transformers import (AutoModelForSequenceClassification, AutoModelForTokenClassification,
                          Gemma3TextConfig, LlamaConfig, Qwen2Config, Qwen3Config)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates/rl-models/tests/fixtures/score")

SMALL = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
             pad_token_id=0, bos_token_id=1, eos_token_id=2)

MODELS = [
    dict(name="rm_llama_untied", cls=transformers.LlamaForSequenceClassification,
         config=LlamaConfig(**SMALL, tie_word_embeddings=False, num_labels=1, rope_theta=10000.0)),
    dict(name="rm_qwen3", cls=transformers.Qwen3ForSequenceClassification,
         config=Qwen3Config(**SMALL, head_dim=8, tie_word_embeddings=True, num_labels=2)),
    dict(name="rm_gemma3", cls=transformers.Gemma3TextForSequenceClassification,
         config=Gemma3TextConfig(
             **{**SMALL, "num_key_value_heads": 1}, head_dim=32, query_pre_attn_scalar=24,
             sliding_window=4,
             layer_types=["sliding_attention", "full_attention"],
             rope_parameters={
                 "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                 "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
             },
             tie_word_embeddings=True, num_labels=1)),
    dict(name="vm_qwen2", cls=transformers.Qwen2ForTokenClassification,
         config=Qwen2Config(**SMALL, tie_word_embeddings=True, num_labels=1)),
    dict(name="vm_llama_nobias", cls=transformers.LlamaForTokenClassification,
         config=LlamaConfig(**SMALL, tie_word_embeddings=True, num_labels=2,
                            token_classification_bias=False)),
]

LENGTHS = [9, 5, 7]


def init_weights(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                base = 0.0 if "gemma" in type(model).__name__.lower() else 1.0
                p.copy_(base + 0.3 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:  # biases
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            else:  # Linear [out, in]
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)


def batch(seed, vocab):
    g = torch.Generator().manual_seed(seed)
    t = max(LENGTHS)
    ids = torch.zeros(len(LENGTHS), t, dtype=torch.long)
    mask = torch.zeros(len(LENGTHS), t, dtype=torch.long)
    for i, n in enumerate(LENGTHS):
        ids[i, :n] = torch.randint(3, vocab, (n,), generator=g)
        mask[i, :n] = 1
    return ids, mask


def scores(model, ids, mask, sequence):
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits
    if sequence:
        return logits.tolist()
    return [logits[i, :n].tolist() for i, n in enumerate(LENGTHS)]


def max_delta(a, b):
    fa = torch.tensor(a if isinstance(a[0][0], float) else [x for r in a for x in r]).flatten()
    fb = torch.tensor(b if isinstance(b[0][0], float) else [x for r in b for x in r]).flatten()
    return float((fa - fb).abs().max())


def main():
    torch.set_num_threads(1)
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for k, spec in enumerate(MODELS):
        cfg = spec["config"]
        cfg._attn_implementation = "eager"
        torch.manual_seed(100 + k)
        model = spec["cls"](cfg).float().eval()
        init_weights(model, 100 + k)
        sequence = spec["name"].startswith("rm_")
        ids, mask = batch(200 + k, cfg.vocab_size)
        ref = scores(model, ids, mask, sequence)

        out_dir = os.path.join(OUT, spec["name"])
        model.save_pretrained(out_dir)
        gen_cfg = os.path.join(out_dir, "generation_config.json")
        if os.path.exists(gen_cfg):
            os.remove(gen_cfg)
        auto = AutoModelForSequenceClassification if sequence else AutoModelForTokenClassification
        back = auto.from_pretrained(out_dir, dtype=torch.float32, attn_implementation="eager").eval()
        assert type(back) is spec["cls"], type(back)
        assert max_delta(scores(back, ids, mask, sequence), ref) == 0.0, spec["name"]

        # What a wrong implementation would be off by.
        with torch.no_grad():
            h = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
        sensitivity = {}
        with torch.no_grad():
            norm = model.model.norm
            model.model.norm = torch.nn.Identity()
            skip_norm = scores(model, ids, mask, sequence)
            model.model.norm = norm
        sensitivity["final_norm_skipped"] = max_delta(skip_norm, ref)
        if sequence:
            logits = model.score(h)
            prev = [logits[i, n - 2].tolist() for i, n in enumerate(LENGTHS)]
            sensitivity["pooled_one_token_early"] = max_delta(prev, ref)

        ref_json = {
            "source": f"transformers {transformers.__version__}, torch {torch.__version__}: "
            f"{spec['cls'].__name__}, float32, eager attention",
            "command": "~/.cache/rlvr-trl/venv/bin/python tools/gen_score_fixtures.py",
            "kind": "sequence" if sequence else "token",
            "num_labels": cfg.num_labels,
            "ids": ids.tolist(),
            "lengths": LENGTHS,
            "scores": ref,
            "sensitivity": sensitivity,
        }
        with open(os.path.join(out_dir, "reference.json"), "w") as f:
            json.dump(ref_json, f, indent=1)
        print(spec["name"], spec["cls"].__name__, "labels", cfg.num_labels, "sensitivity", sensitivity)


def check(saved, name):
    with open(os.path.join(OUT, name, "reference.json")) as f:
        ref = json.load(f)
    sequence = ref["kind"] == "sequence"
    auto = AutoModelForSequenceClassification if sequence else AutoModelForTokenClassification
    model = auto.from_pretrained(saved, dtype=torch.float32, attn_implementation="eager").eval()
    ids = torch.tensor(ref["ids"])
    mask = (torch.arange(ids.shape[1])[None, :] < torch.tensor(ref["lengths"])[:, None]).long()
    got = scores(model, ids, mask, sequence)
    delta = max_delta(got, ref["scores"])
    print(f"{saved}: {type(model).__name__}, max |delta| {delta:.3g} against {name}'s reference")
    assert delta < 1e-5, delta


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3])
    else:
        main()
