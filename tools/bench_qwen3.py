#!/usr/bin/env python3
"""Side-by-side Qwen3 throughput: rl-models (burn flex, CPU) vs PyTorch + transformers (CPU).

Same machine, same shapes, same thread count, one run. For each case this script runs the Rust
example `crates/rl-models/examples/qwen3_bench.rs` (release build) and the PyTorch equivalent
below, and prints a Markdown table (also written to --out as JSON lines).

Cases (random weights, f32):
  forward  B x T tokens through the model, logits for every position       -> tokens/s
  train    B x T tokens, loss = -sum log p(next token), forward + backward  -> tokens/s
  decode   P-token prompts, N new tokens each, greedy, KV cache, batch B    -> new tokens/s

  python3 tools/bench_qwen3.py                 # tiny config
  python3 tools/bench_qwen3.py --config 0.6b   # Qwen3-0.6B shapes (slow: ~30 min on 2 cores)
  python3 tools/bench_qwen3.py --only torch    # one side only

PyTorch side: `Qwen3ForCausalLM` (transformers 5.x, sdpa attention), torch.set_num_threads(N)
with N = os.cpu_count() (the Rust side's rayon pool uses every core too), inference under
torch.inference_mode(), decode with model.generate(do_sample=False, min_new_tokens=N).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {
    # Qwen3Config::tiny(4096) in rl-models
    "tiny": dict(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 max_position_embeddings=1024, rope_theta=1e6, tie_word_embeddings=True),
    # Qwen3Config::qwen3_0_6b()
    "0.6b": dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072,
                 num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                 head_dim=128, max_position_embeddings=40960, rope_theta=1e6,
                 tie_word_embeddings=True),
}

# (case, batch, seq or prompt, new tokens, repeats)
CASES = {
    "tiny": [
        ("forward", 8, 128, 0, 5),
        ("train", 8, 128, 0, 5),
        ("decode", 1, 16, 64, 3),
        ("decode", 8, 16, 64, 3),
        ("decode", 1, 16, 512, 3),
        ("decode", 8, 16, 512, 3),
    ],
    "0.6b": [
        ("forward", 4, 128, 0, 3),
        ("train", 2, 128, 0, 2),
        ("decode", 1, 16, 64, 1),
        ("decode", 8, 16, 64, 1),
        ("decode", 1, 16, 512, 1),
        ("decode", 8, 16, 512, 1),
    ],
}


def ids(n, vocab, salt):
    """The same pseudo-random ids as the Rust example."""
    return [(i * 7919 + salt * 104729 + 13) % vocab for i in range(n)]


def timed(repeats, fn):
    fn()  # warm-up
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def torch_case(model, cfg, case, batch, seq, new, repeats):
    vocab = cfg.vocab_size
    if case == "forward":
        x = torch.tensor(ids(batch * seq, vocab, 1)).view(batch, seq)

        def f():
            with torch.inference_mode():
                model(input_ids=x).logits
        return timed(repeats, f), batch * seq
    if case == "train":
        x = torch.tensor(ids(batch * seq, vocab, 2)).view(batch, seq)

        def f():
            model.zero_grad(set_to_none=True)
            logits = model(input_ids=x).logits[:, :-1].float()
            lp = torch.log_softmax(logits, -1).gather(-1, x[:, 1:, None]).squeeze(-1)
            (-lp.sum()).backward()
        return timed(repeats, f), batch * seq
    if case == "decode":
        prompts = torch.tensor([ids(seq, vocab, 10 + b) for b in range(batch)])

        def f():
            with torch.inference_mode():
                out = model.generate(input_ids=prompts, attention_mask=torch.ones_like(prompts),
                                     do_sample=False, max_new_tokens=new, min_new_tokens=new,
                                     eos_token_id=None, pad_token_id=0)
            assert out.shape[1] == seq + new
        return timed(repeats, f), batch * new
    raise ValueError(case)


def rust_case(config, case, batch, seq, new, repeats, rust_bin=None):
    if rust_bin:
        cmd = [rust_bin]
    else:
        cmd = ["cargo", "run", "--quiet", "--release", "-p", "rl-models", "--example",
               "qwen3_bench", "--"]
    cmd += ["--config", config, "--case", case, "--batch", str(batch), "--repeats", str(repeats)]
    if case == "decode":
        cmd += ["--prompt", str(seq), "--new-tokens", str(new)]
    else:
        cmd += ["--seq", str(seq)]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    line = res.stdout.strip().splitlines()[-1]
    r = json.loads(line)
    return r["seconds"], r["tokens_per_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
    ap.add_argument("--only", choices=["torch", "rust"])
    ap.add_argument("--case", help="run only this case (forward, train, decode)")
    ap.add_argument("--batch", type=int, help="run only this batch size")
    ap.add_argument("--new", type=int, help="decode: run only this number of new tokens")
    ap.add_argument("--out", help="JSON lines file for the results")
    ap.add_argument("--rust-bin", help="prebuilt qwen3_bench binary (default: cargo run --release)")
    args = ap.parse_args()

    threads = os.cpu_count()
    torch.set_num_threads(threads)
    cfg = Qwen3Config(**CONFIGS[args.config])
    model = None
    if args.only != "rust":
        torch.manual_seed(0)
        model = Qwen3ForCausalLM(cfg).float()
        model.config._attn_implementation = "sdpa"

    rows = []
    print(f"# Qwen3 {args.config}: rl-models (burn flex) vs PyTorch {torch.__version__} "
          f"+ transformers; {threads} threads")
    print("| case | batch | tokens | rl-models tok/s | PyTorch tok/s | ratio |")
    print("|---|---|---|---|---|---|")
    for case, batch, seq, new, repeats in CASES[args.config]:
        if args.case and case != args.case:
            continue
        if args.batch and batch != args.batch:
            continue
        if args.new and case == "decode" and new != args.new:
            continue
        r_tps = t_tps = None
        if args.only != "rust":
            model.train(case == "train")
            secs, tokens = torch_case(model, cfg, case, batch, seq, new, repeats)
            t_tps = tokens / secs
        if args.only != "torch":
            _, r_tps = rust_case(args.config, case, batch, seq, new, repeats, args.rust_bin)
        shape = f"{seq}+{new}" if case == "decode" else f"{seq}"
        ratio = f"{r_tps / t_tps:.2f}x" if (r_tps and t_tps) else "-"
        fmt = lambda x: f"{x:,.1f}" if x is not None else "-"
        print(f"| {case} | {batch} | {shape} | {fmt(r_tps)} | {fmt(t_tps)} | {ratio} |", flush=True)
        rows.append(dict(config=args.config, case=case, batch=batch, seq=seq, new_tokens=new,
                         rust_tokens_per_s=r_tps, torch_tokens_per_s=t_tps, threads=threads))
    if args.out:
        with open(args.out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    sys.exit(main())
