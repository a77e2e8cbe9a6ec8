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
  python3 tools/bench_qwen3.py --config embedded  # the side-by-side job's model
  python3 tools/bench_qwen3.py --config 0.6b   # Qwen3-0.6B shapes (slow: ~30 min on 2 cores)
  python3 tools/bench_qwen3.py --only torch    # one side only
  python3 tools/bench_qwen3.py --torch-alloc glibc,mimalloc-tuned --rounds 3 --out FILE.jsonl

PyTorch side: `Qwen3ForCausalLM` (transformers 5.x, sdpa attention), torch.set_num_threads(N)
with N = os.cpu_count() (the Rust side's rayon pool uses every core too), inference under
torch.inference_mode(), decode with model.generate(do_sample=False, min_new_tokens=N).

Allocators (--torch-alloc, a comma list; each case runs PyTorch once per allocator, then
rl-models, back to back). The Rust binary always uses mimalloc with purging off and large OS
pages allowed (`rl_models::allocator::tune_for_tensors`). PyTorch's side runs in a fresh
subprocess per case and allocator:
  glibc           glibc malloc, the default
  mimalloc        Debian's mimalloc (apt-get install libmimalloc2.0) through LD_PRELOAD, defaults
  mimalloc-tuned  the same, with the Rust side's settings in mimalloc 2.0's option names:
                  MIMALLOC_ALLOW_DECOMMIT=0 (freed memory stays mapped) and
                  MIMALLOC_LARGE_OS_PAGES=1
The worker checks /proc/self/maps that mimalloc is really loaded. Every row written to --out
holds the measured values unrounded, the allocators, the date and the load average.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {
    # Qwen3Config::tiny(4096) in rl-models
    "tiny": dict(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                 max_position_embeddings=1024, rope_theta=1e6, tie_word_embeddings=True),
    # the embedded task's model (rl-trainer's demo task; tools/trl_side_by_side trains it)
    "embedded": dict(vocab_size=22, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                     num_attention_heads=8, num_key_value_heads=4, head_dim=32,
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
    # the side-by-side job's update: 256 sequences of about 12 tokens ("97+3=" and a
    # 5-6-token answer), one batch; and its rollout: 256 prompts, 6 new tokens
    "embedded": [
        ("forward", 256, 12, 0, 5),
        ("train", 256, 12, 0, 5),
        ("decode", 256, 6, 6, 5),
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


MIMALLOC = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
ALLOCATORS = {
    "glibc": {},
    "mimalloc": {"LD_PRELOAD": MIMALLOC},
    "mimalloc-tuned": {"LD_PRELOAD": MIMALLOC, "MIMALLOC_ALLOW_DECOMMIT": "0",
                       "MIMALLOC_LARGE_OS_PAGES": "1"},
}
RUST_ALLOCATOR = "mimalloc (rl_models::allocator: purge_delay=-1, allow_large_os_pages=1)"


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
    import torch
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


def torch_worker(args):
    """One PyTorch case in this process (started by torch_subprocess); prints one JSON line."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.set_num_threads(os.cpu_count())
    cfg = Qwen3Config(**CONFIGS[args.config])
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).float()
    model.config._attn_implementation = "sdpa"
    model.train(args.case == "train")
    seq = args.seq
    secs, tokens = torch_case(model, cfg, args.case, args.batch, seq, args.new, args.repeats)
    with open("/proc/self/maps") as f:
        mimalloc_loaded = "libmimalloc" in f.read()
    print(json.dumps(dict(seconds=secs, tokens=tokens, tokens_per_s=tokens / secs,
                          torch_version=torch.__version__, mimalloc_loaded=mimalloc_loaded)))


def torch_subprocess(config, case, batch, seq, new, repeats, alloc):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "MIMALLOC_ALLOW_DECOMMIT", "MIMALLOC_LARGE_OS_PAGES"):
        env.pop(k, None)
    env.update(ALLOCATORS[alloc])
    if "LD_PRELOAD" in env and not os.path.exists(env["LD_PRELOAD"]):
        sys.exit(f"{env['LD_PRELOAD']} missing: apt-get install libmimalloc2.0")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "torch", "--config", config,
           "--case", case, "--batch", str(batch), "--seq", str(seq), "--new", str(new),
           "--repeats", str(repeats)]
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"PyTorch worker failed ({alloc}):\n{res.stderr}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    if r["mimalloc_loaded"] != ("LD_PRELOAD" in ALLOCATORS[alloc]):
        sys.exit(f"allocator {alloc}: mimalloc loaded = {r['mimalloc_loaded']}")
    return r


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
    ap.add_argument("--out", help="JSON lines file the results are appended to")
    ap.add_argument("--rust-bin", help="prebuilt qwen3_bench binary (default: cargo run --release)")
    ap.add_argument("--torch-alloc", default="glibc",
                    help="comma list of PyTorch allocators: " + ", ".join(ALLOCATORS))
    ap.add_argument("--rounds", type=int, default=1, help="repeat the whole set of cases")
    ap.add_argument("--note", help="free text stored in every row (e.g. the machine's state)")
    # internal: one PyTorch case in a subprocess
    ap.add_argument("--worker", choices=["torch"], help=argparse.SUPPRESS)
    ap.add_argument("--seq", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return torch_worker(args)

    allocs = [a for a in args.torch_alloc.split(",") if a]
    for a in allocs:
        if a not in ALLOCATORS:
            ap.error(f"unknown allocator {a}")
    threads = os.cpu_count()
    date = time.strftime("%Y-%m-%d", time.gmtime())
    print(f"# Qwen3 {args.config}: rl-models (burn flex) vs PyTorch + transformers; "
          f"{threads} threads; PyTorch allocators: {', '.join(allocs)}")
    print("| round | case | batch | tokens | rl-models tok/s | PyTorch allocator | PyTorch tok/s "
          "| ratio | load avg |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    pair = 0
    for rnd in range(1, args.rounds + 1):
        for case, batch, seq, new, repeats in CASES[args.config]:
            if args.case and case != args.case:
                continue
            if args.batch and batch != args.batch:
                continue
            if args.new and case == "decode" and new != args.new:
                continue
            pair += 1
            load_before = os.getloadavg()[0]
            torch_res = {}
            if args.only != "rust":
                for a in allocs:
                    torch_res[a] = torch_subprocess(args.config, case, batch, seq, new, repeats, a)
            r_tps = None
            if args.only != "torch":
                _, r_tps = rust_case(args.config, case, batch, seq, new, repeats, args.rust_bin)
            load_after = os.getloadavg()[0]
            shape = f"{seq}+{new}" if case == "decode" else f"{seq}"
            for a in (allocs if args.only != "rust" else [None]):
                t = torch_res.get(a)
                t_tps = t["tokens_per_s"] if t else None
                ratio = f"{r_tps / t_tps:.2f}x" if (r_tps and t_tps) else "-"
                fmt = lambda x: f"{x:,.1f}" if x is not None else "-"
                print(f"| {rnd} | {case} | {batch} | {shape} | {fmt(r_tps)} | {a or '-'} | "
                      f"{fmt(t_tps)} | {ratio} | {load_before:.2f}/{load_after:.2f} |", flush=True)
                row = dict(config=args.config, case=case, batch=batch, seq=seq, new_tokens=new,
                           rust_tokens_per_s=r_tps, torch_tokens_per_s=t_tps, threads=threads,
                           date=date, rust_allocator=RUST_ALLOCATOR if r_tps else None,
                           torch_allocator=a, torch_env=ALLOCATORS[a] if a else None,
                           torch_version=t["torch_version"] if t else None,
                           round=rnd, pair=pair, loadavg_1min=[load_before, load_after])
                if args.note:
                    row["note"] = args.note
                rows.append(row)
                if args.out:  # appended as measured, nothing rounded
                    with open(args.out, "a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
