#!/usr/bin/env python3
"""Checks `rlvr export-hf` of the real Gemma-3-270M GGUF with transformers: the exported folder
(config.json, model.safetensors, tokenizer.json, tokenizer_config.json) loads with
AutoModelForCausalLM / AutoTokenizer, its tokenizer gives the ids of
`crates/rl-models/tests/fixtures/gemma3_270m/tokenizer_cases.json` (transformers' tokenizer of the
GGUF itself), and its logits on the fixture's texts equal those of transformers' model loaded from
the GGUF (same weights: equal bit for bit is expected, both dequantize the same blocks).

    target/debug/rlvr export-hf --model ~/.cache/rlvr-gemma3/gemma-3-270m-q4_k_m.gguf --out /tmp/gemma_hf
    ~/.cache/rlvr-trl/venv/bin/python tools/check_gemma3_export_hf.py /tmp/gemma_hf
"""

import json
import os
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "crates", "rl-models", "tests", "fixtures", "gemma3_270m")


def main():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = sys.argv[1]
    tok = AutoTokenizer.from_pretrained(folder)
    cases = json.load(open(os.path.join(FIX, "tokenizer_cases.json")))["cases"]
    bad = [c["text"] for c in cases if tok(c["text"])["input_ids"] != c["ids"]]
    print(f"tokenizer ({type(tok).__name__}): {len(cases) - len(bad)} of {len(cases)} cases "
          f"equal to the GGUF tokenizer's ids")
    assert not bad, bad[:5]
    decoded = [c for c in cases if tok.decode(c["ids"], skip_special_tokens=False) != c["decoded"]]
    assert not decoded, decoded[:3]

    gguf = subprocess.run([os.path.join(ROOT, "scripts", "fetch-gemma3.sh")], check=True,
                          capture_output=True, text=True).stdout.strip()
    d, n = os.path.split(gguf)
    ours = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                attn_implementation="eager").eval()
    ref = AutoModelForCausalLM.from_pretrained(d, gguf_file=n, dtype=torch.float32,
                                               attn_implementation="eager").eval()
    assert type(ours).__name__ == "Gemma3ForCausalLM", type(ours)
    worst = 0.0
    with torch.no_grad():
        for text in json.load(open(os.path.join(FIX, "logprobs.json")))["texts"][:2]:
            x = torch.tensor([text["ids"]])
            worst = max(worst, float((ours(input_ids=x).logits - ref(input_ids=x).logits)
                                     .abs().max()))
    print(f"exported folder vs the GGUF in transformers: max |delta logit| = {worst:.3e}")
    assert worst == 0.0


if __name__ == "__main__":
    main()
