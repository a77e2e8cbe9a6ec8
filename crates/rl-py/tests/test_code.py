"""verify_code: the hand-labelled problems of crates/rl-verifier/tests/data/code_problems.jsonl
(the Rust test crates/rl-verifier/tests/code.rs asserts the same labels), threads, the GIL and
argument errors.

The sandbox needs kernel facilities (docs/sandbox.md); where it cannot be created these tests
are skipped with the reason, except under CI (CI=true), where that fails."""

import os
import threading
import time

import pytest

import rlvr

from conftest import load_jsonl

# The limits the labels assume (the Rust test uses the same).
LIMITS = dict(wall_time=2.0, cpu_time=1.0, memory_mb=512)


@pytest.fixture(scope="module")
def rows():
    return load_jsonl("code_problems.jsonl")


@pytest.fixture(scope="module", autouse=True)
def sandbox():
    try:
        rlvr.verify_code("```python\nprint(1)\n```", [{"input": "", "output": "1"}], **LIMITS)
    except ValueError as e:
        if "sandbox" in str(e) and os.environ.get("CI") != "true":
            pytest.skip(f"the sandbox is unavailable here: {e}")
        raise


def check(row):
    # Objects and arrays go in as Python values (json.dumps keeps 25!+1 exact); strings as text.
    return rlvr.verify_code(row["response"], row["tests"], reward=row.get("reward", "all_or_nothing"), **LIMITS)


def test_every_labelled_problem(rows):
    assert len(rows) >= 30
    wrong = []
    for row in rows:
        r = check(row)
        want = (row["verdict"], row["passed"], row["total"])
        if (r.verdict, r.passed, r.total) != want:
            wrong.append(f"{row['id']}: want {want}, got {(r.verdict, r.passed, r.total)} ({r.detail})")
            continue
        assert r.correct == (r.verdict == "passed") == bool(r), row["id"]
        assert r.verdict in rlvr.CODE_VERDICTS
        if row.get("reward") == "fraction":
            assert r.score == r.passed / r.total, row["id"]
            assert r.reward == r.passed / r.total, row["id"]
        else:
            assert r.score is None
            assert r.reward == (1.0 if r.correct else 0.0), row["id"]
        if r.verdict == "bad_tests":
            assert r.kind == "unparseable_gold" and r.detail
        elif r.verdict == "no_code":
            assert r.kind == "unparseable_response" and r.code is None
        else:
            assert r.code, row["id"]
            if r.verdict in ("syntax_error", "too_large", "sandbox_error"):
                ran = 0
            elif row.get("reward") == "fraction" or r.verdict == "passed":
                ran = r.total
            else:
                ran = r.passed + 1  # all-or-nothing stops at the first failure
            assert len(r.tests) == ran, row["id"]
            assert r.tests.count("passed") == r.passed, row["id"]
    assert not wrong, "\n".join(wrong)


def test_four_threads_at_once_equal_a_serial_run(rows):
    quick = [r for r in rows if r["verdict"] != "timeout"]
    key = lambda r: (r.verdict, r.passed, r.total, tuple(r.tests))
    want = [key(check(row)) for row in quick]
    results = [[None] * len(quick) for _ in range(4)]
    start = threading.Barrier(4)

    def worker(t):
        start.wait()
        for k in range(len(quick)):
            i = (k + 7 * t) % len(quick)
            results[t][i] = key(check(quick[i]))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 4


def test_the_gil_is_released_while_programs_run():
    sleeper = "```python\nimport time\ntime.sleep(1.0)\nprint(1)\n```"
    done = []
    t = threading.Thread(target=lambda: done.append(rlvr.verify_code(sleeper, ["assert True"], **LIMITS)))
    begin = time.monotonic()
    t.start()
    # Pure-Python work on this thread progresses while the other waits on the sandbox: it
    # takes timestamps in the middle of the 1 s run.
    stamps = []
    while t.is_alive():
        stamps.append(time.monotonic() - begin)
        time.sleep(0.01)
    t.join()
    assert done[0].verdict == "passed", done[0]
    assert stamps and stamps[-1] >= 0.9, stamps[-3:]
    middle = [s for s in stamps if 0.3 <= s <= 0.8]
    assert len(middle) >= 10, stamps


def test_verify_and_verify_batch_accept_code():
    tests = '{"inputs": ["2", "3"], "outputs": ["4", "6"]}'
    o = rlvr.verify(tests, "```python\nprint(int(input()) * 2)\n```", "code")
    assert o.correct and o.kind == "correct" and o.source == "code_block" and o.reward == 1.0
    outs = rlvr.verify_batch([tests, tests], ["```python\nprint(0)\n```", "no code"], "code", threads=2)
    assert [x.kind for x in outs] == ["incorrect", "unparseable_response"]
    assert rlvr.verify("not json", "```python\nprint(0)\n```", "code").kind == "unparseable_gold"


def test_arguments():
    resp = "```python\nprint(1)\n```"
    with pytest.raises(TypeError, match="tests must be str .JSON., dict or list, got int"):
        rlvr.verify_code(resp, 5)
    with pytest.raises(TypeError, match="response must be str"):
        rlvr.verify_code(None, "[]")
    with pytest.raises(ValueError, match="unknown code reward `partial`; valid names: all_or_nothing, fraction"):
        rlvr.verify_code(resp, "[]", reward="partial")
    with pytest.raises(ValueError, match="wall_time must be a positive number of seconds"):
        rlvr.verify_code(resp, "[]", wall_time=0)
    with pytest.raises(ValueError, match="memory_mb must be >= 1"):
        rlvr.verify_code(resp, "[]", memory_mb=0)
    with pytest.raises(ValueError, match="max_tests"):
        rlvr.verify_code(resp, "[]", max_tests=0)
    with pytest.raises(TypeError, match="max_tests must be int"):
        rlvr.verify_code(resp, "[]", max_tests=2.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'wall_time' for verifier 'code'"):
        rlvr.verify("[]", resp, "code", wall_time=1)
    # max_tests cuts the tests.
    r = rlvr.verify_code("```python\nprint(input())\n```", {"inputs": ["1", "2", "3"], "outputs": ["1", "2", "3"]}, max_tests=2, **LIMITS)
    assert (r.verdict, r.passed, r.total) == ("passed", 2, 2)
    assert repr(r).startswith('CodeResult(verdict="passed", passed=2, total=2, reward=1.0')
