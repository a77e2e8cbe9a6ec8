#!/usr/bin/env python3
"""Decode throughput: rl-models (burn flex, CPU) vs llama.cpp's llama-server, same model file.

Same machine, same shapes, one run, each case on both sides back to back (never concurrently).
The model is qwen3_bench's random Qwen3 (seed 0) for the chosen config, saved with
`qwen3_bench --save`, given the real Qwen3 tokenizer and exported with `rlvr export-gguf`
(f32), so both sides run the same weights. Decode = greedy generation of N new tokens after a
P-token prompt, B streams at once (rl-models: one batch of B; llama-server: B concurrent
requests over B slots), counted as B*N new tokens over the wall time including the prompt pass.
llama-server runs as the trainer starts it (-ctk f32 -ctv f32 -fa off, 2 threads) with
`ignore_eos` so every stream generates N tokens.

  python3 tools/bench_llama_server.py --qwen3-bench BIN --rlvr BIN --llama-server BIN \
      --tokenizer .cache/qwen3-tokenizer/tokenizer.json [--config 0.6b] [--out FILE.jsonl]
"""

import argparse
import datetime
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def post(url, body, timeout=600):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def llama_decode(url, batch, prompt, new, vocab, repeats):
    rng = random.Random(0)
    prompts = [[rng.randrange(vocab) for _ in range(prompt)] for _ in range(batch)]
    body = lambda p: {"prompt": p, "n_predict": new, "temperature": 0.0, "ignore_eos": True,
                      "cache_prompt": False, "return_tokens": True}
    post(url + "/completion", body(prompts[0]))  # warm-up
    times = []
    for _ in range(repeats):
        out = [None] * batch

        def run(i):
            out[i] = post(url + "/completion", body(prompts[i]))

        t = time.perf_counter()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(batch)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        times.append(time.perf_counter() - t)
        got = sum(len(o["tokens"]) for o in out)
        if got != batch * new:
            sys.exit(f"llama-server generated {got} tokens, expected {batch * new}")
    times.sort()
    return batch * new / times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qwen3-bench", required=True)
    ap.add_argument("--rlvr", required=True)
    ap.add_argument("--llama-server", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--config", default="0.6b")
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="bench-llama-")
    model = os.path.join(work, "model")
    subprocess.run([args.qwen3_bench, "--config", args.config, "--save", model], check=True)
    shutil.copy(args.tokenizer, os.path.join(model, "tokenizer.json"))
    gguf = os.path.join(work, "model.gguf")
    subprocess.run([args.rlvr, "export-gguf", "--model", model, "--out", gguf], check=True)
    vocab = json.load(open(os.path.join(model, "config.json")))["vocab_size"]
    batches = [int(b) for b in args.batches.split(",")]
    port = free_port()
    log = open(os.path.join(work, "server.log"), "w")
    srv = subprocess.Popen([args.llama_server, "-m", gguf, "--host", "127.0.0.1", "--port", str(port),
                            "-c", str(max(batches) * (args.prompt + args.new + 16)),
                            "-np", str(max(batches)), "-t", "2", "-ctk", "f32", "-ctv", "f32",
                            "-fa", "off", "--no-warmup"], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/health", timeout=5)
                break
            except Exception:
                time.sleep(0.5)
        rows = []
        print(f"# decode, Qwen3 {args.config} random f32, {args.prompt}-token prompts, {args.new} new tokens, 2 threads")
        print("| streams | rl-models tok/s | llama-server tok/s | rl-models / llama.cpp |")
        print("|---|---|---|---|")
        for b in batches:
            lt = llama_decode(url, b, args.prompt, args.new, vocab, args.repeats)
            r = subprocess.run([args.qwen3_bench, "--config", args.config, "--case", "decode",
                                "--batch", str(b), "--prompt", str(args.prompt),
                                "--new-tokens", str(args.new), "--repeats", str(args.repeats)],
                               check=True, capture_output=True, text=True)
            rt = json.loads(r.stdout.strip().splitlines()[-1])["tokens_per_s"]
            print(f"| {b} | {rt:.1f} | {lt:.1f} | {rt / lt:.2f}x |", flush=True)
            rows.append({"config": args.config, "case": "decode", "streams": b, "prompt": args.prompt,
                         "new_tokens": args.new, "rust_tokens_per_s": rt, "llama_server_tokens_per_s": lt,
                         "threads": 2, "date": datetime.date.today().isoformat(),
                         "loadavg_1min": os.getloadavg()[0]})
        if args.out:
            with open(args.out, "a") as f:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
    finally:
        srv.kill()
        srv.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
