"""verify_batch and verify from threads, asyncio and worker processes equal a serial run; the
inputs that make math-verify hang return quickly, with a verdict."""

import asyncio
import concurrent.futures
import multiprocessing
import pickle
import threading
import time

import rlvr


def serial(pairs):
    return [rlvr.verify(a, r, v) for a, r, v in pairs]


def test_threads_and_asyncio_equal_serial(corpus_pairs):
    want = serial(corpus_pairs)
    by_verifier = {}
    for i, (a, r, v) in enumerate(corpus_pairs):
        by_verifier.setdefault(v, []).append(i)

    def batch(threads):
        got = [None] * len(corpus_pairs)
        for v, idx in by_verifier.items():
            outs = rlvr.verify_batch([corpus_pairs[i][0] for i in idx], [corpus_pairs[i][1] for i in idx], v, threads)
            for i, o in zip(idx, outs):
                got[i] = o
        return got

    assert batch(1) == want
    assert batch(8) == want
    assert batch(None) == want

    # 8 Python threads, each verifying an interleaved share one pair at a time, plus one
    # thread running verify_batch on everything, all at once.
    results = [None] * len(corpus_pairs)
    batch_result = []
    start = threading.Barrier(9)

    def worker(k):
        start.wait()
        for i in range(k, len(corpus_pairs), 8):
            results[i] = rlvr.verify(*corpus_pairs[i])

    def batch_worker():
        start.wait()
        batch_result.append(batch(4))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    threads.append(threading.Thread(target=batch_worker))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == want
    assert batch_result == [want]

    async def via_asyncio():
        return await asyncio.gather(*(asyncio.to_thread(rlvr.verify, a, r, v) for a, r, v in corpus_pairs))

    assert asyncio.run(via_asyncio()) == want


def _verify_chunk(chunk):
    return [rlvr.verify(a, r, v) for a, r, v in chunk]


def test_worker_processes(corpus_pairs):
    pairs = corpus_pairs[::5]
    want = serial(pairs)
    chunks = [pairs[k::3] for k in range(3)]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        outs = list(pool.map(_verify_chunk, chunks))
    got = [None] * len(pairs)
    for k, out in enumerate(outs):
        got[k::3] = out
    assert got == want
    assert pickle.loads(pickle.dumps(want)) == want


# Inputs that hang or time out math-verify / sympy (huge powers, factorials, nesting, megabytes).
HANGING = [
    "\\boxed{2^{2^{2^{2^{2}}}}}",
    "\\boxed{10^{100000}}",
    "\\boxed{100000!}",
    "\\boxed{(10^{5000})^{5000}}",
    "\\boxed{\\binom{10^{9}}{10^{6}}}",
    "\\boxed{2^{10^{18}}}",
    "\\boxed{0.5^{99999999999}}",
    "\\boxed{" + "(" * 5000 + "1" + ")" * 5000 + "}",
    "\\boxed{" + "\\sqrt{" * 5000 + "2" + "}" * 5000 + "}",
    "\\boxed{" + "\\frac{1}{" * 3000 + "2" + "}" * 3000 + "}",
    "\\boxed{1" + "\\pm 1" * 20000 + "}",
    "\\boxed{" * 100000,
    "$" * 500000,
    "9," * 300000,
]


def test_hanging_inputs_return_fast():
    for text in HANGING:
        for gold, response in [("7", text), (text, "\\boxed{7}")]:
            t0 = time.perf_counter()
            o = rlvr.verify(gold, response)
            elapsed = time.perf_counter() - t0
            assert elapsed < 1.0, (text[:40], elapsed)
            assert not o.correct, (text[:40], o)
    # The same on worker threads, all at once.
    t0 = time.perf_counter()
    outs = rlvr.verify_batch(["7"] * len(HANGING), HANGING, threads=4)
    assert time.perf_counter() - t0 < 1.0 * len(HANGING) / 2
    assert not any(o.correct for o in outs)
    big_exact = rlvr.verify("4^{500}", "\\boxed{2^{1000}}")
    assert big_exact.correct  # within the budget, large exact values are still compared


def test_verify_batch_releases_the_gil(corpus_pairs):
    # While one thread is inside verify_batch, another thread must be able to run Python code.
    # With the GIL held for the whole call, the other thread could not record any progress
    # strictly inside the call's time span.
    math = [(a, r) for a, r, v in corpus_pairs if v == "math"] * 40
    answers, responses = [a for a, _ in math], [r for _, r in math]
    span = {}
    stamps = []
    done = threading.Event()

    def call():
        span["start"] = time.perf_counter()
        rlvr.verify_batch(answers, responses, threads=1)
        span["end"] = time.perf_counter()
        done.set()

    t = threading.Thread(target=call)
    t.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
        sum(range(1000))  # pure Python work
    t.join()
    duration = span["end"] - span["start"]
    assert duration > 0.05, duration  # enough work to see the other thread run
    inside = [s for s in stamps if span["start"] + 0.2 * duration < s < span["end"] - 0.2 * duration]
    assert len(inside) > 10, (len(inside), duration)
