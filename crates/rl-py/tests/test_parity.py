"""Parity with the Rust side on every case of the verifier corpora.

Mirrors crates/rl-verifier/tests/verifier.rs: the expected values are verl's own outputs
(dapo_parity.jsonl, produced by running verl's math_dapo.py) and the corpus labels
(math_corpus.jsonl, each with its mathematical justification).
"""

import rlvr
from rlvr.verl import normalize_final_answer


def test_dapo_parity_with_verl(dapo_rows):
    counts = {"score": 0, "normalize": 0, "gold_in_box": 0}
    for line, row in enumerate(dapo_rows, start=1):
        kind = row["kind"]
        counts[kind] += 1
        if kind == "score":
            sol, gt, strict = row["solution"], row["gt"], row["strict_box"]
            got = rlvr.math_dapo_score(sol, gt, strict_box_verify=strict)
            want = {"score": row["score"], "acc": row["acc"], "pred": row["pred"]}
            assert got == want, (line, row)
            assert type(got["acc"]) is bool and type(got["score"]) is float
            o = rlvr.verify(gt, sol, "dapo", strict_box=strict)
            assert o.correct == row["acc"], (line, row, o)
            assert o.reward == row["score"], (line, o)
            if o.extracted is None:
                assert row["pred"] == "[INVALID]", (line, o)
            else:
                assert o.extracted == row["pred"], (line, o)
        elif kind == "gold_in_box":
            o = rlvr.verify(row["gt"], row["solution"], "dapo", gold_in_box=True)
            if "error" in row:
                assert o.kind == "unparseable_gold", (line, o)
                assert not o.correct
            else:
                assert o.correct == row["acc"], (line, o)
                assert o.extracted == row["pred"], (line, o)
        elif kind == "normalize":
            assert normalize_final_answer(row["input"]) == row["output"], (line, row)
        else:
            raise AssertionError(f"line {line}: unknown kind {kind}")
    assert counts["score"] >= 480 and counts["normalize"] >= 100 and counts["gold_in_box"] >= 5, counts


def test_dapo_issue_vectors():
    cases = [
        ("Let me think.\nAnswer: 42", "42", True),
        ("answer : 1,000", "1000", True),
        ("Answer: x = 5", "5", True),
        ("Answer: \\frac12", "\\frac{1}{2}", True),
        ("Answer: \\dfrac{1}{2}", "\\frac{1}{2}", False),
        ("The answer is \\boxed{7}", "7", False),
        ("Answer: 3\nAnswer: 4", "4", True),
        ("Answer: 3.", "3", False),
        ("Answer: 12^\\circ", "12", True),
    ]
    for sol, gold, want in cases:
        assert rlvr.verify(gold, sol, "dapo").correct == want, (sol, gold)
    o = rlvr.verify("7", "The answer is \\boxed{7}", "dapo")
    assert o.kind == "unparseable_response" and o.reward == -1.0 and "Answer" in o.reason


def test_math_corpus(math_rows):
    assert len(math_rows) >= 300
    wrong, kinds = [], {}
    for row in math_rows:
        o = rlvr.verify(row["gold"], row["response"], "math")
        kinds[o.kind] = kinds.get(o.kind, 0) + 1
        if o.correct != row["expected"]:
            wrong.append((row["id"], row["gold"], row["response"], o))
        assert o.reward == (1.0 if o.correct else 0.0)
    assert not wrong, wrong
    # Gold answers in the corpus are all well formed.
    assert kinds.get("unparseable_gold", 0) + kinds.get("over_budget", 0) == 0, kinds


def test_batch_equals_single_calls(math_rows, dapo_rows):
    golds = [r["gold"] for r in math_rows]
    responses = [r["response"] for r in math_rows]
    assert rlvr.verify_batch(golds, responses) == [rlvr.verify(g, r) for g, r in zip(golds, responses)]
    rows = [r for r in dapo_rows if r["kind"] == "score" and not r["strict_box"]]
    batch = rlvr.verify_batch([r["gt"] for r in rows], [r["solution"] for r in rows], "dapo")
    for row, o in zip(rows, batch):
        assert (o.reward, o.correct) == (row["score"], row["acc"]), row


def test_outcome_fields():
    o = rlvr.verify("\\frac{1}{2}", "so the answer is $\\boxed{\\dfrac{1}{2}}$.")
    assert o.correct and bool(o) and o.kind == "correct" and o.reward == 1.0
    assert o.source == "boxed" and o.reason is None and o.extracted is not None
    bad_gold = rlvr.verify("\\frac{1}{", "\\boxed{1}")
    assert bad_gold.kind == "unparseable_gold" and not bad_gold and bad_gold.reward == 0.0
    assert bad_gold.reason
    assert rlvr.Outcome(*o.__getnewargs__()) == o
    assert "Outcome(correct=True" in repr(o)


def test_pause_tokens_index_window():
    # Reference: verl's strict-box path written out in Python (math_dapo.is_correct_strict_box):
    # pred = solution[-300:][pause_tokens_index[-1] - 100:], then the last balanced \boxed{}.
    def last_boxed(s):
        i = s.rfind("\\boxed{")
        if i < 0:
            return "[INVALID]"
        depth = 0
        for j in range(i, len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    return s[i + len("\\boxed{") : j]
        return "[INVALID]"

    solution = "x" * 50 + "\\boxed{1}" + "y" * 150 + "\\boxed{2}" + "z" * 40
    for last in [0, 30, 60, 120, 150, 201, 260, 400, -10]:
        idx = [0, 0, 0, last]
        for gold in ["1", "2"]:
            want = last_boxed(solution[-300:][last - 100 :])
            got = rlvr.math_dapo_score(solution, gold, strict_box_verify=True, pause_tokens_index=idx)
            assert got == {"score": 1.0 if want == gold else -1.0, "acc": want == gold, "pred": want}, (last, gold)
    # Ignored in the default mode, as in verl.
    assert rlvr.math_dapo_score("Answer: 3", "3", pause_tokens_index=[1, 2]) == {"score": 1.0, "acc": True, "pred": "3"}
