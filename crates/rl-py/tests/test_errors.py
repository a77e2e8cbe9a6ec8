"""Bad input gives a TypeError or ValueError with a message that names the problem; never a
crash of the interpreter."""

import numpy as np
import pytest

import rlvr


def raises(exc, match, fn, *args, **kwargs):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


def test_verify_arguments():
    raises(TypeError, "answer must be str, got int", rlvr.verify, 1, "x")
    raises(TypeError, "response must be str, got NoneType", rlvr.verify, "1", None)
    raises(TypeError, "response must be str, got bytes", rlvr.verify, "1", b"1")
    raises(ValueError, "unknown verifier `sympy`; valid names: code, dapo, gsm8k, last_number, math", rlvr.verify, "1", "1", "sympy")
    raises(ValueError, "budget.max_steps", rlvr.verify, "1", "1", max_steps=0)
    raises(ValueError, "max_steps must be a non-negative integer", rlvr.verify, "1", "1", max_steps=-1)
    raises(TypeError, "max_steps must be int, got str", rlvr.verify, "1", "1", max_steps="10")
    raises(TypeError, "max_depth must be int, got bool", rlvr.verify, "1", "1", max_depth=True)
    raises(ValueError, "budget.max_depth", rlvr.verify, "1", "1", max_depth=1000)
    raises(TypeError, "unexpected keyword argument 'timeout'.*max_steps", rlvr.verify, "1", "1", timeout=5)
    raises(TypeError, "'strict_box' for verifier 'math'", rlvr.verify, "1", "1", strict_box=True)
    raises(TypeError, "strict_box must be bool", rlvr.verify, "1", "1", "dapo", strict_box=1)
    # A lone surrogate cannot be verified: UnicodeEncodeError, a ValueError.
    raises(ValueError, "surrogate", rlvr.verify, "1", "\ud800")
    # Budgets take effect.
    assert rlvr.verify("\\frac56", "\\boxed{\\frac{1}{2} + \\frac{1}{3}}", max_steps=5).kind == "over_budget"
    assert rlvr.verify("\\frac56", "\\boxed{\\frac{1}{2} + \\frac{1}{3}}").correct


def test_verify_batch_arguments():
    raises(ValueError, "1 answers, 2 responses", rlvr.verify_batch, ["1"], ["1", "2"])
    raises(TypeError, "answers must be a sequence of str, not a single str", rlvr.verify_batch, "12", ["1", "2"])
    raises(TypeError, r"answers\[1\] must be str, got int", rlvr.verify_batch, ["1", 2], ["1", "2"])
    raises(TypeError, "responses must be a sequence of str, got int", rlvr.verify_batch, ["1"], 5)
    raises(ValueError, "threads must be >= 1", rlvr.verify_batch, ["1"], ["1"], threads=0)
    raises(TypeError, "threads must be int", rlvr.verify_batch, ["1"], ["1"], threads=2.0)
    raises(ValueError, "unknown verifier", rlvr.verify_batch, ["1"], ["1"], "nope")
    assert rlvr.verify_batch([], []) == []
    assert rlvr.verify_batch(("1",), ("\\boxed{1}",))[0].correct


def test_math_dapo_score_arguments():
    raises(TypeError, "solution_str must be str, got int", rlvr.math_dapo_score, 1, "1")
    raises(TypeError, "ground_truth must be str", rlvr.math_dapo_score, "Answer: 1", 1)
    raises(ValueError, "must have 4 entries", rlvr.math_dapo_score, "\\boxed{1}", "1", True, [1, 2, 3])
    raises(TypeError, "list of 4 ints", rlvr.math_dapo_score, "\\boxed{1}", "1", True, "abcd")


def test_group_advantages_arguments():
    s = np.array([1.0, 0.0, 1.0, 0.0])
    g = np.array([0, 0, 1, 1], dtype=np.int64)
    ga = rlvr.group_advantages
    raises(TypeError, "scores must be a numpy array, got list", ga, [1.0, 0.0], group_size=2)
    raises(TypeError, "float32 or float64 array, got dtype int64", ga, np.array([1, 0]), group_size=2)
    raises(ValueError, r"scores must be 1-D, got shape \[2, 2\]", ga, s.reshape(2, 2), group_size=2)
    raises(TypeError, "group_ids must be an int64 array, got dtype int32.*numpy.unique", ga, s, g.astype(np.int32))
    raises(TypeError, "group_ids must be an int64 array, got dtype <U1", ga, s, np.array(list("aabb")))
    raises(ValueError, "group_ids has 3 entries but scores has 4", ga, s, g[:3])
    raises(ValueError, "not both", ga, s, g, 2)
    raises(ValueError, "pass group_ids", ga, s)
    raises(ValueError, "4 scores do not split into groups of 3", ga, s, group_size=3)
    raises(ValueError, "group_size must be >= 2", ga, s, group_size=1)
    raises(ValueError, "unknown advantage estimator `ppo`; valid names: grpo, dr_grpo, rloo, dapo, da3po", ga, s, g, estimator="ppo")
    raises(ValueError, "std", ga, s, g, std="biased")
    raises(ValueError, "std is a setting of grpo, dapo and da3po only", ga, s, g, estimator="rloo", std="sample")
    raises(ValueError, "eps is a setting of grpo, dapo and da3po only", ga, s, g, estimator="dr_grpo", eps=1e-4)
    raises(ValueError, "lam and tau are settings of da3po only", ga, s, g, lam=2.0)
    raises(ValueError, "nan must be 'raise' or 'zero'", ga, s, g, nan="omit")
    raises(ValueError, "da3po needs correct=", ga, s, g, estimator="da3po")
    raises(TypeError, "correct must be a bool array, got dtype float64", ga, s, g, estimator="da3po", correct=s)
    raises(ValueError, "correct has 2 entries but scores has 4", ga, s, g, estimator="da3po", correct=np.array([True, False]))
    raises(ValueError, "lambda", ga, s, g, estimator="da3po", correct=s > 0, lam=-1.0)
    raises(ValueError, "tau", ga, s, g, estimator="da3po", correct=s > 0, tau=2.0)
    raises(ValueError, "lam must be a number or 'theory', got 'gamma'", ga, s, g, estimator="da3po", correct=s > 0, lam="gamma")
    raises(ValueError, "pass lam='theory' with them", ga, s, g, estimator="da3po", correct=s > 0, lam_max=1.5)
    raises(ValueError, "lambda_min", ga, s, g, estimator="da3po", correct=s > 0, lam="theory", lam_min=2.0, lam_max=1.5)
    raises(ValueError, "eps", ga, s, g, eps=-1.0)
    raises(ValueError, "negative_advantage", ga, s, g, estimator="da3po", correct=s > 0, negative_advantage="flip")
    raises(ValueError, "`negative_advantage`: keep for `grpo` \\(a DAA setting", ga, s, g, negative_advantage="keep")
    raises(ValueError, "group -5 has 1 sample", ga, s, np.array([0, 0, 0, -5], dtype=np.int64))


def test_theory_arguments():
    raises(ValueError, "group_size", rlvr.theory, 1, 0.5)
    raises(ValueError, "strictly between 0 and 1", rlvr.theory, 8, 1.0)
    raises(ValueError, "strictly between 0 and 1", rlvr.theory, 8, float("nan"))
    raises(ValueError, "non-negative", rlvr.theory, -3, 0.5)
    raises(TypeError, "group_size must be int", rlvr.theory, 8.0, 0.5)
