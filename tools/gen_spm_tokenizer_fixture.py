#!/usr/bin/env python3
"""Tokenizer cases for a Llama 2 SentencePiece GGUF vocabulary: llama.cpp's
`ggml-vocab-llama-spm.gguf` (tokenizer metadata only: tokenizer.ggml.model = "llama", 32,000
tokens with scores, no merges), taken from PyPI's llama-cpp-python source archive by
`scripts/fetch-llama-spm-vocab.sh`.

Writes `crates/rl-models/tests/fixtures/gguf/llama_spm_tokenizer_cases.json`: 1,200 strings (the
generator of tools/gen_gemma3_real_fixture.py, with this vocabulary's control tokens) and the ids
transformers' tokenizer of the same file gives (`tokenizer(text)["input_ids"]`, BOS included as
the file asks), with its decode of them.

Run from the repository root:
    ~/.cache/rlvr-trl/venv/bin/python tools/gen_spm_tokenizer_fixture.py
Written with transformers 5.25.0, gguf 0.19.0.
"""

import hashlib
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_gemma3_real_fixture import tokenizer_strings  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures", "gguf",
                   "llama_spm_tokenizer_cases.json")


def main():
    import gguf
    import transformers
    from importlib.metadata import version
    from transformers import AutoTokenizer

    path = subprocess.run([os.path.join(ROOT, "scripts", "fetch-llama-spm-vocab.sh")],
                          check=True, capture_output=True, text=True).stdout.strip()
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    d, name = os.path.split(path)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=name)
    reader = gguf.GGUFReader(path)
    field = reader.fields["tokenizer.ggml.token_type"]
    types = [int(field.parts[i][0]) for i in field.data]
    control = [tok.convert_ids_to_tokens(i) for i, t in enumerate(types) if t == 3]
    cases = []
    for s in tokenizer_strings(random.Random(2027), control):
        ids = tok(s)["input_ids"]
        cases.append({"text": s, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)})
    with open(OUT, "w") as f:
        json.dump({"generated_by": "tools/gen_spm_tokenizer_fixture.py",
                   "transformers": transformers.__version__, "gguf": version("gguf"),
                   "vocab_file": name, "vocab_sha256": sha,
                   "fetched_by": "scripts/fetch-llama-spm-vocab.sh",
                   "tokenizer": type(tok).__name__, "vocab_size": len(tok),
                   "call": "tokenizer(text)['input_ids']; decode(ids, skip_special_tokens=False)",
                   "cases": cases}, f, ensure_ascii=False, separators=(",", ":"))
    print(f"{type(tok).__name__}: {len(cases)} cases, {sum(len(c['ids']) for c in cases)} ids, "
          f"control tokens {control}")


if __name__ == "__main__":
    main()
