"""DA3PO in the real verl (0.9.1, installed with --no-deps plus the packages its estimator
module imports; scripts/test-python-real.sh): ``import rlvr.verl`` registers ``da3po`` in verl's
own registry, and ``get_adv_estimator_fn("da3po")`` called the way verl's trainer calls it, on
torch tensors, is verl's own ``grpo`` estimator at lam = 1 (the independent reference) and doubles
exactly the advantages of correct responses of groups with pass rate < tau at lam = 2.
"""

import pytest

torch = pytest.importorskip("torch")
core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

import numpy as np  # noqa: E402

import rlvr.verl  # noqa: E402

G, GROUPS, L = 4, 6, 5


def batch(seed: int = 0):
    """Interleaved uids; +1/-1 scores on the last valid token of each response."""
    rng = np.random.default_rng(seed)
    uids = np.array([f"uid-{i % GROUPS}" for i in range(G * GROUPS)], dtype=object)
    lengths = rng.integers(1, L + 1, size=len(uids))
    mask = torch.tensor(np.arange(L)[None, :] < lengths[:, None], dtype=torch.float32)
    # Pass rates per group: 0, 1/4, 1/4, 2/4, 3/4, 4/4 (uniform groups at both ends).
    correct_per_group = [0, 1, 1, 2, 3, 4]
    seen = [0] * GROUPS
    scores = []
    for u in range(len(uids)):
        g = u % GROUPS
        scores.append(1.0 if seen[g] < correct_per_group[g] else -1.0)
        seen[g] += 1
    rewards = torch.zeros(len(uids), L)
    rewards[torch.arange(len(uids)), torch.tensor(lengths - 1)] = torch.tensor(scores)
    return rewards, mask, uids, np.array(scores)


def test_import_registers_da3po_in_verls_registry():
    assert rlvr.verl.DA3PO_REGISTERED
    assert core_algos.get_adv_estimator_fn("da3po") is not None


@pytest.mark.parametrize("seed", [0, 1])
def test_at_lambda_one_da3po_is_verls_own_grpo(seed):
    rewards, mask, uids, _ = batch(seed)
    grpo = core_algos.get_adv_estimator_fn("grpo")
    ref, _ = grpo(token_level_rewards=rewards, response_mask=mask, index=uids, epsilon=1e-6)
    da3po = core_algos.get_adv_estimator_fn("da3po")
    adv, ret = da3po(token_level_rewards=rewards, response_mask=mask, index=uids, epsilon=1e-6,
                     config={"da3po": {"lam": 1.0}})
    assert isinstance(adv, torch.Tensor) and adv.dtype == ref.dtype and adv.shape == ref.shape
    torch.testing.assert_close(adv, ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ret, adv)


def test_at_lambda_two_amplified_advantages_are_twice_grpos():
    rewards, mask, uids, scores = batch(0)
    ref, _ = core_algos.get_adv_estimator_fn("grpo")(
        token_level_rewards=rewards, response_mask=mask, index=uids, epsilon=1e-6)
    adv, _ = core_algos.get_adv_estimator_fn("da3po")(
        token_level_rewards=rewards, response_mask=mask, index=uids, epsilon=1e-6,
        config={"da3po": {"lam": 2.0, "tau": 0.5}})
    # Hand rule: groups 1 and 2 (pass rate 1/4) have one correct response each; group 3 has
    # p = 1/2, not below tau.
    group = np.array([u % GROUPS for u in range(len(uids))])
    amplified = (scores > 0) & np.isin(group, [1, 2])
    assert amplified.sum() == 2
    for i in range(len(uids)):
        factor = 2.0 if amplified[i] else 1.0
        torch.testing.assert_close(adv[i], factor * ref[i], rtol=1e-5, atol=1e-6)
