"""group_advantages against a NumPy reference written here from the formulas
(../shared/reference/algorithms.md §1-§4, DA3PO §7), on random non-contiguous group ids."""

import math

import numpy as np
import pytest

import rlvr

EQUAL_TOL = 1e-6


def reference(scores, ids, estimator, correct=None, lam=2.0, tau=0.5, std="sample", eps=1e-6, negative="keep",
              lam_min=None, lam_max=None):
    """Per group of G rewards R: grpo/dapo (R - mean)/(std + eps) with std Bessel (ddof 1) or
    population; dr_grpo R - mean; rloo R_i - (sum R - R_i)/(G - 1); all-equal groups (max - min
    <= 1e-6) get 0. da3po: dapo, then a correct response of a group with pass rate
    p = #correct/G < tau gets lam times its advantage when that advantage is positive (DAA
    strengthens the pull towards rare correct answers; a correct response below its group's
    mean, possible only with shaped rewards, keeps its advantage by default; with
    negative="amplify" every such advantage is multiplied). lam="theory": the factor of a group
    of G with pass rate p is (1 - p**(G-1)) / (1 - (1-p)**(G-1)), clipped to [lam_min, lam_max]."""
    scores = np.asarray(scores, dtype=np.float64)
    n = len(scores)
    adv = np.zeros(n)
    kept = np.zeros(n, dtype=bool)
    amplified = np.zeros(n, dtype=bool)
    correct = np.zeros(n, dtype=bool) if correct is None else np.asarray(correct)
    for g in np.unique(ids):
        m = ids == g
        r = scores[m]
        G = len(r)
        if r.max() - r.min() <= EQUAL_TOL:
            a = np.zeros(G)
        elif estimator in ("grpo", "dapo", "da3po"):
            sd = r.std(ddof=1 if std == "sample" else 0)
            a = (r - r.mean()) / (sd + eps)
        elif estimator == "dr_grpo":
            a = r - r.mean()
        elif estimator == "rloo":
            a = r - (r.sum() - r) / (G - 1)
        else:
            raise ValueError(estimator)
        if estimator == "da3po":
            c = correct[m]
            amp = c & (c.mean() < tau) & ((a > 0) | (negative == "amplify"))
            if lam == "theory":
                p = c.mean()
                f = (1 - p ** (G - 1)) / (1 - (1 - p) ** (G - 1)) if 0 < p < 1 else 1.0
                f = max(f, lam_min) if lam_min is not None else f
                f = min(f, lam_max) if lam_max is not None else f
            else:
                f = lam
            a = np.where(amp, f * a, a)
            amplified[m] = amp
        adv[m] = a
        kept[m] = np.any(a != 0)
    return adv, kept, amplified


def random_batch(rng, groups=40):
    """Interleaved groups of random sizes with arbitrary int64 ids, as strided (non-contiguous)
    views; binary, +-1 and continuous rewards, some groups all equal."""
    ids, scores, correct = [], [], []
    id_values = []
    while len(id_values) < groups:  # distinct arbitrary int64 ids, negative ones included
        v = int(rng.integers(-(2**40), 2**40))
        if v not in id_values:
            id_values.append(v)
    for gid in id_values:
        G = int(rng.integers(2, 10))
        kind = rng.integers(0, 4)
        c = rng.random(G) < rng.random()
        if kind == 0:
            s = np.where(c, 1.0, -1.0)
        elif kind == 1:
            s = c.astype(float)
        elif kind == 2:
            s = rng.normal(size=G) + np.where(c, 1.0, 0.0)
        else:
            s = np.full(G, 0.25)
        ids += [gid] * G
        scores += list(s)
        correct += list(c)
    perm = rng.permutation(len(ids))
    ids = np.asarray(ids, dtype=np.int64)[perm]
    scores = np.asarray(scores)[perm]
    correct = np.asarray(correct, dtype=bool)[perm]
    # Non-contiguous views: every other element of a longer buffer, a column of a 2-D array,
    # a reversed view.
    buf = np.zeros(2 * len(scores))
    buf[::2] = scores
    table = np.zeros((len(ids), 3), dtype=np.int64)
    table[:, 1] = ids
    return buf[::2], table[:, 1], correct[::-1][::-1]


@pytest.mark.parametrize("estimator", ["grpo", "dr_grpo", "rloo", "dapo", "da3po"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_numpy_reference(estimator, seed):
    rng = np.random.default_rng(seed)
    scores, ids, correct = random_batch(rng)
    assert not scores.flags["C_CONTIGUOUS"] and not ids.flags["C_CONTIGUOUS"]
    got = rlvr.group_advantages(scores, group_ids=ids, estimator=estimator, correct=correct)
    want = reference(scores, ids, estimator, correct)
    np.testing.assert_allclose(got.advantages, want[0], rtol=1e-10, atol=1e-12)
    assert got.advantages.dtype == np.float64
    np.testing.assert_array_equal(got.kept, want[1])
    np.testing.assert_array_equal(got.amplified, want[2])
    assert got.kept.any() and not got.kept.all()
    if estimator == "da3po":
        assert got.amplified.any()


@pytest.mark.parametrize("std", ["sample", "population"])
def test_settings(std):
    rng = np.random.default_rng(7)
    scores, ids, correct = random_batch(rng)
    for est in ["grpo", "dapo"]:
        got = rlvr.group_advantages(scores, group_ids=ids, estimator=est, std=std, eps=1e-4)
        want = reference(scores, ids, est, std=std, eps=1e-4)
        np.testing.assert_allclose(got.advantages, want[0], rtol=1e-10, atol=1e-12)
    got = rlvr.group_advantages(scores, group_ids=ids, estimator="da3po", correct=correct, lam=3.0, tau=0.75, std=std)
    want = reference(scores, ids, "da3po", correct, lam=3.0, tau=0.75, std=std)
    np.testing.assert_allclose(got.advantages, want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(got.amplified, want[2])
    lit = rlvr.group_advantages(scores, group_ids=ids, estimator="da3po", correct=correct, std=std, negative_advantage="amplify")
    want = reference(scores, ids, "da3po", correct, std=std, negative="amplify")
    np.testing.assert_allclose(lit.advantages, want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(lit.amplified, want[2])

@pytest.mark.parametrize("bounds", [(None, None), (1.0, 1.5)])
def test_theory_lambda(bounds):
    # lam="theory" against the reference's closed form, gate open (tau=1) and paper's (0.5).
    rng = np.random.default_rng(11)
    scores, ids, correct = random_batch(rng)
    lo, hi = bounds
    for tau in [1.0, 0.5]:
        got = rlvr.group_advantages(scores, group_ids=ids, estimator="da3po", correct=correct, lam="theory", tau=tau,
                                    lam_min=lo, lam_max=hi)
        want = reference(scores, ids, "da3po", correct, lam="theory", tau=tau, lam_min=lo, lam_max=hi)
        np.testing.assert_allclose(got.advantages, want[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(got.amplified, want[2])
        assert got.amplified.any()


def test_negative_advantage_rule():
    # A hard group (p = 1/5) whose one correct response scores below the mean (0.22): `keep`
    # leaves its negative advantage, `amplify` doubles it; the positive ones never differ.
    scores = np.array([0.1, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    correct = np.array([True, False, False, False, False, True, False, False, False, False])
    ids = np.array([3, 3, 3, 3, 3, 9, 9, 9, 9, 9], dtype=np.int64)
    base = rlvr.group_advantages(scores, group_ids=ids, estimator="dapo").advantages
    assert base[0] < 0 < base[5]
    keep = rlvr.group_advantages(scores, group_ids=ids, estimator="da3po", correct=correct)
    lit = rlvr.group_advantages(scores, group_ids=ids, estimator="da3po", correct=correct, negative_advantage="amplify")
    for got, rule in [(keep, "keep"), (lit, "amplify")]:
        want = reference(scores, ids, "da3po", correct, negative=rule)
        np.testing.assert_allclose(got.advantages, want[0], rtol=1e-12)
        np.testing.assert_array_equal(got.amplified, want[2])
    assert keep.advantages[0] == base[0] and lit.advantages[0] == 2 * base[0]
    assert keep.advantages[5] == lit.advantages[5] == 2 * base[5]


def test_float32_and_group_size():
    rng = np.random.default_rng(11)
    G = 8
    scores = (rng.random(16 * G) < 0.3).astype(np.float32)
    got = rlvr.group_advantages(scores, group_size=G)
    want = reference(scores.astype(np.float64), np.arange(16 * G) // G, "grpo")
    assert got.advantages.dtype == np.float32
    np.testing.assert_allclose(got.advantages, want[0].astype(np.float32), rtol=1e-6, atol=1e-7)
    same = rlvr.group_advantages(scores, group_ids=np.arange(16 * G, dtype=np.int64) // G)
    np.testing.assert_array_equal(got.advantages, same.advantages)


def test_hand_value():
    # G = 8, 3 correct of +-1 rewards: A+ = sqrt((1-p)/p) * sqrt((G-1)/G) with p = 3/8, Bessel
    # std (algorithms.md §1), times (std/(std + eps)) for eps = 1e-6.
    scores = np.array([1.0] * 3 + [-1.0] * 5)
    adv = rlvr.group_advantages(scores, group_size=8).advantages
    sd = math.sqrt(8 * (3 / 8) * (5 / 8) * 4 / 7)  # Bessel std of {+1 x3, -1 x5}
    a_plus = math.sqrt((5 / 8) / (3 / 8)) * math.sqrt(7 / 8)
    assert abs(adv[0] - a_plus * sd / (sd + 1e-6)) < 1e-12
    assert abs(a_plus - 1.2076) < 1e-4
    # DA3PO with lam = 2: p = 3/8 < 0.5, the correct ones are doubled.
    d = rlvr.group_advantages(scores, group_size=8, estimator="da3po", correct=scores > 0)
    np.testing.assert_allclose(d.advantages, np.where(scores > 0, 2 * adv, adv), rtol=1e-15)
    assert d.amplified.tolist() == [True] * 3 + [False] * 5


def test_nan_policy():
    scores = np.array([1.0, np.nan, 0.0, 1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"scores\[1\] is NaN.*nan='zero'"):
        rlvr.group_advantages(scores, group_size=3)
    zero = rlvr.group_advantages(scores, group_size=3, nan="zero")
    np.testing.assert_array_equal(
        zero.advantages, rlvr.group_advantages(np.nan_to_num(scores, nan=0.0), group_size=3).advantages
    )
    for bad in [np.inf, -np.inf]:
        with pytest.raises(ValueError, match=r"scores\[2\] is"):
            rlvr.group_advantages(np.array([1.0, 0.0, bad, 1.0]), group_size=2, nan="zero")


def test_theory_against_closed_form():
    for G in [2, 4, 8, 16]:
        for p in [0.05, 0.3, 0.5, 0.8]:
            a = rlvr.theory(G, p)
            ap = 1 / (1 - p ** (G - 1))
            am = 1 / (1 - (1 - p) ** (G - 1))
            assert abs(a.alpha_plus - ap) <= 1e-12 * ap
            assert abs(a.alpha_minus - am) <= 1e-12 * am
            assert abs(a.gamma - ap / am) <= 1e-12 * ap / am
            assert (a.gamma < 1) == (p < 0.5)
