"""Fixtures from verl's own code for REINFORCE++ and GAE (rl-advantage), CISPO and PPO's value
loss (rl-loss).

Calls, from the installed verl 0.9.1 (`verl/trainer/ppo/core_algos.py`):
  * compute_reinforce_plus_plus_outcome_advantage           (adv_estimator=reinforce_plus_plus)
  * compute_reinforce_plus_plus_baseline_outcome_advantage  (adv_estimator=reinforce_plus_plus_baseline)
  * compute_gae_advantage_return                            (adv_estimator=gae)
  * ray_trainer.apply_kl_penalty with Adaptive/FixedKLController (use_kl_in_reward; its source
    run without importing ray_trainer's serving dependencies)
  * compute_policy_loss_cispo                               (policy_loss.loss_mode=cispo)
  * compute_value_loss                                      (the critic's clipped value loss)
on seeded inputs, in float64, and writes
  crates/rl-advantage/tests/data/reinforce_pp_verl.json
  crates/rl-advantage/tests/data/gae_verl.json
  crates/rl-advantage/tests/data/kl_reward_verl.json
  crates/rl-loss/tests/data/cispo_verl.json
  crates/rl-loss/tests/data/value_loss_verl.json

REINFORCE++ inputs are outcome rewards as verl's reward managers write them (the sequence's score
on its last response token, zeros elsewhere), response masks (optionally with holes: the
observation tokens of a multi-turn episode), group ids (`index`, verl's uid), with AlgoConfig's
default gamma = 1.0, and for five cases also gamma < 1 (`reinforce_plus_plus_discounted`: the
advantage of every valid token, since discounted returns differ token by token). Batches: several sizes, uneven and interleaved groups, shaped rewards, a
batch whose rewards are all equal. The script checks that verl's advantage is the same on every
valid token of a response (true for outcome rewards with gamma = 1) and stores one value per
response.

CISPO inputs are [sequences, tokens] log-probs, old log-probs, advantages, masks and optional
rollout IS weights; the loss is aggregated as verl does (token-mean with the global token count
of `global_batch_info`, or seq-mean-token-mean), and its gradient with respect to `log_prob` comes
from torch autograd.

Setup (see ../shared/reference/realsize.md):
  pip install --no-deps verl==0.9.1
  pip install 'tensordict<=0.10.0,>=0.8.0' hydra-core codetiming pylatexenc dill pandas ray
Run from the repository root:
  $HOME/.cache/rlvr-trl/venv/bin/python tools/verl/gen_verl_fixtures.py
"""

import json
import pathlib

import numpy as np
import torch
import verl
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos
from verl.workers.config import ActorConfig

ROOT = pathlib.Path(__file__).resolve().parents[2]
ADV_OUT = ROOT / "crates/rl-advantage/tests/data/reinforce_pp_verl.json"
LOSS_OUT = ROOT / "crates/rl-loss/tests/data/cispo_verl.json"
GAE_OUT = ROOT / "crates/rl-advantage/tests/data/gae_verl.json"
KL_REWARD_OUT = ROOT / "crates/rl-advantage/tests/data/kl_reward_verl.json"
VALUE_OUT = ROOT / "crates/rl-loss/tests/data/value_loss_verl.json"
DT = torch.float64


def r(x, nd=15):
    return float(f"{float(x):.{nd}g}")


def rows_of(t):
    return [[r(x) for x in row] for row in t.tolist()]


# --------------------------------------------------------------------------------------------
# REINFORCE++ and REINFORCE++-baseline
# --------------------------------------------------------------------------------------------


def make_mask(rng, length, t_max, holes):
    """A response mask of `length` valid tokens inside `t_max` columns; with `holes`, a few
    observation spans (mask 0) are cut inside the response but the valid count stays `length`."""
    if not holes:
        row = [1] * length + [0] * (t_max - length)
        return row, length
    row = []
    valid = 0
    while valid < length:
        if valid > 0 and rng.random() < 0.25:
            span = int(rng.integers(1, 4))
            row.extend([0] * span)
        row.append(1)
        valid += 1
    row = row[:t_max]
    valid = sum(row)
    row += [0] * (t_max - len(row))
    return row, valid


def reinforce_case(name, rng, group_sizes, reward_kind, max_len, interleave=False, holes=False, lengths=None,
                   gammas=()):
    ids = []
    for g, size in enumerate(group_sizes):
        ids.extend([g] * size)
    if interleave:
        order = rng.permutation(len(ids))
        ids = [ids[i] for i in order]
    n = len(ids)
    if reward_kind == "pm1":
        correct = rng.random(n) < 0.4
        rewards = np.where(correct, 1.0, -1.0)
    elif reward_kind == "binary":
        correct = rng.random(n) < 0.5
        rewards = np.where(correct, 1.0, 0.0)
    elif reward_kind == "shaped":
        correct = rng.random(n) < 0.5
        penalty = np.where(rng.random(n) < 0.3, -rng.random(n), 0.0)
        rewards = np.where(correct, 1.0, -1.0) + penalty
    elif reward_kind == "normal":
        rewards = rng.normal(0.3, 1.7, n)
        correct = rewards > 0.0
    elif reward_kind == "constant":
        rewards = np.full(n, 1.0)
        correct = np.ones(n, dtype=bool)
    else:
        raise ValueError(reward_kind)
    if reward_kind == "binary":
        # Make some groups all-equal (zero spread) on purpose.
        for g in range(0, len(group_sizes), 3):
            for i in range(n):
                if ids[i] == g:
                    rewards[i], correct[i] = 1.0, True
    if lengths is None:
        lengths = [int(rng.integers(1, max_len + 1)) for _ in range(n)]
    t_max = max_len * (3 if holes else 1) + 2
    masks, counts = [], []
    for length in lengths:
        row, valid = make_mask(rng, length, t_max, holes)
        masks.append(row)
        counts.append(valid)
    mask = torch.tensor(masks, dtype=DT)
    tlr = torch.zeros(n, t_max, dtype=DT)
    for i, row in enumerate(masks):
        last = max(k for k, m in enumerate(row) if m == 1)
        tlr[i, last] = float(rewards[i])
    index = np.array([f"uid{g}" for g in ids], dtype=object)

    cfg = AlgoConfig()  # gamma = 1.0, verl's default
    adv_pp, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(
        token_level_rewards=tlr.clone(), response_mask=mask, config=cfg
    )
    adv_base, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(
        token_level_rewards=tlr.clone(), response_mask=mask, index=index, config=cfg
    )

    def per_response(adv):
        out = []
        for i in range(n):
            vals = adv[i][mask[i] == 1]
            assert torch.allclose(vals, vals[0].expand_as(vals), rtol=0, atol=1e-12), (name, i, vals)
            assert torch.all(adv[i][mask[i] == 0] == 0)
            out.append(r(vals[0]))
        return out

    def per_token(gamma):
        adv, _ = core_algos.compute_reinforce_plus_plus_outcome_advantage(
            token_level_rewards=tlr.clone(), response_mask=mask, config=AlgoConfig(gamma=gamma)
        )
        out = []
        for i in range(n):
            assert torch.all(adv[i][mask[i] == 0] == 0)
            out.append([r(x) for x in adv[i][mask[i] == 1]])
        return {"gamma": gamma, "advantages": out}

    case = {
        "name": name,
        "group": ids,
        "reward": [r(x) for x in rewards],
        "correct": [bool(c) for c in correct],
        "tokens": counts,
        "reinforce_plus_plus": per_response(adv_pp),
        "reinforce_plus_plus_baseline": per_response(adv_base),
    }
    if gammas:
        case["reinforce_plus_plus_discounted"] = [per_token(g) for g in gammas]
    return case


def reinforce_fixtures():
    rng = np.random.default_rng(20261204)
    cases = [
        reinforce_case("g8x4_pm1", rng, [8] * 4, "pm1", 40, gammas=(0.99,)),
        reinforce_case("uneven_interleaved_binary", rng, [2, 3, 5, 8, 4, 6], "binary", 24, interleave=True),
        reinforce_case("g16x6_normal", rng, [16] * 6, "normal", 64),
        reinforce_case("uneven_shaped", rng, [3, 7, 2, 5], "shaped", 30, interleave=True, gammas=(0.9,)),
        reinforce_case("multi_turn_holes", rng, [4, 4, 4], "pm1", 20, holes=True, gammas=(0.9, 0.5)),
        reinforce_case("one_group", rng, [6], "shaped", 12),
        reinforce_case("one_token_each", rng, [4, 5, 3], "normal", 1, lengths=[1] * 12, gammas=(0.5,)),
        reinforce_case("all_equal_rewards", rng, [4, 4], "constant", 10, gammas=(0.9,)),
    ]
    return {
        "source": f"verl {verl.__version__} verl/trainer/ppo/core_algos.py: "
        "compute_reinforce_plus_plus_outcome_advantage, "
        "compute_reinforce_plus_plus_baseline_outcome_advantage (AlgoConfig() defaults, gamma = 1.0; "
        "reinforce_plus_plus_discounted: AlgoConfig(gamma=g), the advantage of every valid token), float64",
        "command": "$HOME/.cache/rlvr-trl/venv/bin/python tools/verl/gen_verl_fixtures.py",
        "cases": cases,
    }


# --------------------------------------------------------------------------------------------
# CISPO
# --------------------------------------------------------------------------------------------


def cispo_case(name, rng, lengths, t_max, clip_low, clip_high, spread, agg="token-mean",
               is_weights=False, rows=None):
    n = len(lengths)
    mask = torch.zeros(n, t_max, dtype=DT)
    for i, length in enumerate(lengths):
        mask[i, :length] = 1.0
    old = torch.tensor(rng.uniform(-3.0, -0.05, (n, t_max)), dtype=DT)
    logp = old + torch.tensor(rng.uniform(-spread, spread, (n, t_max)), dtype=DT)
    seq_adv = rng.uniform(-1.5, 1.5, n)
    adv = torch.tensor(np.repeat(seq_adv[:, None], t_max, axis=1), dtype=DT)
    old, logp, adv = old * mask, logp * mask, adv * mask
    w = None
    if is_weights:
        w = torch.tensor(np.minimum(rng.uniform(0.3, 3.0, (n, t_max)), 2.0), dtype=DT) * mask
    global_tokens = int(mask.sum().item())
    global_seqs = int((mask.sum(-1) > 0).sum().item())
    sel = list(range(n)) if rows is None else rows

    cfg = ActorConfig(
        strategy="fsdp",
        clip_ratio_low=clip_low,
        clip_ratio_high=clip_high,
        ppo_micro_batch_size_per_gpu=1,
        rollout_n=1,
        loss_agg_mode=agg,
        # The normalisers of the whole batch, as verl passes them to every micro-batch.
        global_batch_info={"dp_size": 1, "batch_num_tokens": global_tokens, "global_batch_size": global_seqs},
    )
    lp = logp[sel].clone().requires_grad_(True)
    loss, metrics = core_algos.compute_policy_loss_cispo(
        old_log_prob=old[sel],
        log_prob=lp,
        advantages=adv[sel],
        response_mask=mask[sel],
        loss_agg_mode=agg,
        config=cfg,
        rollout_is_weights=None if w is None else w[sel],
    )
    loss.backward()
    grad = lp.grad * mask[sel]

    return {
        "name": name,
        "clip_low": clip_low,
        "clip_high": clip_high,
        "aggregation": agg,
        "lengths": [lengths[i] for i in sel],
        "global_tokens": global_tokens,
        "global_sequences": global_seqs,
        "logp": rows_of(logp[sel]),
        "old_logp": rows_of(old[sel]),
        "advantages": rows_of(adv[sel]),
        "is_weights": None if w is None else rows_of(w[sel]),
        "loss": r(loss.item()),
        "grad_logp": rows_of(grad),
        "pg_clipfrac": r(metrics["actor/pg_clipfrac"]),
    }


def cispo_fixtures():
    rng = np.random.default_rng(506135851)
    lengths = [7, 3, 5, 1, 6, 4]
    cases = [
        # verl's example (examples/cispo_trainer): clip_ratio_low = 10 (no lower bound), high 0.2.
        cispo_case("verl_example_bounds", rng, lengths, 8, 10.0, 0.2, 0.5),
        # Both bounds active: ratios e^±0.6 against [0.8, 1.28].
        cispo_case("both_bounds", rng, lengths, 8, 0.2, 0.28, 0.6),
        # Ratios near 1: nothing clipped, the loss is −A·logp per token, token-mean.
        cispo_case("unclipped", rng, lengths, 8, 0.2, 0.2, 0.05),
        # Rollout IS weights (truncated at 2) multiply the per-token loss, as for PPO.
        cispo_case("is_weights", rng, lengths, 8, 10.0, 0.2, 0.5, is_weights=True),
        # A micro-batch of rows 1, 2, 4 normalised by the whole batch's token count.
        cispo_case("micro_batch_global_counts", rng, lengths, 8, 10.0, 0.2, 0.5, rows=[1, 2, 4]),
        # seq-mean-token-mean aggregation.
        cispo_case("seq_mean_token_mean", rng, lengths, 8, 0.2, 0.28, 0.6, agg="seq-mean-token-mean"),
    ]
    return {
        "source": f"verl {verl.__version__} verl/trainer/ppo/core_algos.py: compute_policy_loss_cispo "
        "(agg_loss with global_batch_info), gradient by torch autograd, float64",
        "command": "$HOME/.cache/rlvr-trl/venv/bin/python tools/verl/gen_verl_fixtures.py",
        "cases": cases,
    }


# --------------------------------------------------------------------------------------------
# GAE (PPO's advantages from a critic)
# --------------------------------------------------------------------------------------------


def gae_case(name, rng, lengths, gamma, lam, holes=False, kl_coef=0.0, reward_kind="pm1"):
    """Token rewards as verl's PPO builds them: the outcome score on the last response token, minus
    kl_coef times a per-token KL estimate on every response token when the KL is in the reward
    (`use_kl_in_reward`); critic values everywhere, padding included (garbage a correct GAE
    ignores); masks with observation holes when `holes`."""
    n = len(lengths)
    t_max = max(lengths) * (3 if holes else 1) + 3
    masks = [make_mask(rng, length, t_max, holes)[0] for length in lengths]
    mask = torch.tensor(masks, dtype=DT)
    values = torch.tensor(rng.normal(0.2, 0.8, (n, t_max)), dtype=DT)
    if reward_kind == "pm1":
        scores = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    else:
        scores = rng.normal(0.0, 1.5, n)
    tlr = torch.zeros(n, t_max, dtype=DT)
    ends = []
    for i, row in enumerate(masks):
        last = max(k for k, m in enumerate(row) if m == 1)
        ends.append(last + 1)
        tlr[i, last] = float(scores[i])
    if kl_coef:
        tlr = tlr - kl_coef * torch.tensor(rng.uniform(-0.05, 0.3, (n, t_max)), dtype=DT) * mask
    adv, ret = core_algos.compute_gae_advantage_return(
        token_level_rewards=tlr, values=values, response_mask=mask,
        gamma=torch.tensor(gamma, dtype=DT), lam=torch.tensor(lam, dtype=DT),
    )
    responses = []
    for i in range(n):
        e = ends[i]
        responses.append({
            "rewards": [r(x) for x in tlr[i, :e].tolist()],
            "values": [r(x) for x in values[i, :e].tolist()],
            "mask": [bool(m) for m in masks[i][:e]],
            # verl whitens every column; only the masked-in ones reach a loss.
            "advantages": [r(x) if m else None for x, m in zip(adv[i, :e].tolist(), masks[i][:e])],
            "returns": [r(x) for x in ret[i, :e].tolist()],
        })
    return {"name": name, "gamma": gamma, "lam": lam, "responses": responses}


def gae_fixtures():
    rng = np.random.default_rng(20261207)
    cases = [
        gae_case("defaults_outcome", rng, [5, 9, 2, 7, 12, 1], 1.0, 1.0),
        gae_case("gamma_lam_below_one", rng, [8, 3, 15, 6], 0.99, 0.95),
        gae_case("strong_discount", rng, [10, 4, 7], 0.7, 0.5, reward_kind="normal"),
        gae_case("multi_turn_holes", rng, [6, 9, 4, 11], 0.95, 0.9, holes=True),
        gae_case("holes_defaults", rng, [7, 5, 8], 1.0, 1.0, holes=True),
        gae_case("kl_in_reward", rng, [9, 4, 6, 13, 2], 1.0, 0.95, kl_coef=0.05),
        gae_case("lam_zero_td", rng, [6, 3, 5], 0.9, 0.0, holes=True, reward_kind="normal"),
    ]
    return {
        "source": f"verl {verl.__version__} verl/trainer/ppo/core_algos.py: compute_gae_advantage_return "
        "(values at padding columns random; advantages of masked-out tokens omitted: verl whitens them, "
        "no loss reads them), float64",
        "command": "$HOME/.cache/rlvr-trl/venv/bin/python tools/verl/gen_verl_fixtures.py",
        "cases": cases,
    }


# --------------------------------------------------------------------------------------------
# The KL penalty in the reward (use_kl_in_reward)
# --------------------------------------------------------------------------------------------


def verl_apply_kl_penalty():
    """verl's own `apply_kl_penalty`: its source, taken from the installed
    `verl/trainer/ppo/ray_trainer.py` and run with the names it uses, because importing that module
    pulls in Ray's serving stack (uvicorn, fastapi, opentelemetry) that the fixtures do not need."""
    import ast
    import inspect

    from verl import DataProto
    from verl.utils.torch_functional import masked_mean

    path = pathlib.Path(inspect.getfile(core_algos)).with_name("ray_trainer.py")
    tree = ast.parse(path.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "apply_kl_penalty")
    namespace = {"torch": torch, "core_algos": core_algos, "DataProto": DataProto, "masked_mean": masked_mean}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["apply_kl_penalty"]


def kl_reward_case(name, rng, controller, penalty, batches):
    """verl's apply_kl_penalty on successive batches with one controller: the rewards of each
    batch, the beta it used, the batch KL (verl's `actor/reward_kl_penalty`) and beta after."""
    from verl import DataProto
    apply_kl_penalty = verl_apply_kl_penalty()

    if controller["kind"] == "adaptive":
        ctrl = core_algos.AdaptiveKLController(controller["beta"], controller["target"], controller["horizon"])
    else:
        ctrl = core_algos.FixedKLController(controller["beta"])
    out = []
    for lengths, holes in batches:
        n = len(lengths)
        t_max = max(lengths) * (3 if holes else 1) + 2
        masks = [make_mask(rng, length, t_max, holes)[0] for length in lengths]
        mask = torch.tensor(masks, dtype=DT)
        scores = torch.zeros(n, t_max, dtype=DT)
        ends = []
        for i, row in enumerate(masks):
            last = max(k for k, m in enumerate(row) if m == 1)
            ends.append(last + 1)
            scores[i, last] = float(rng.choice([-1.0, 1.0]))
        old = torch.tensor(rng.uniform(-4.0, -0.05, (n, t_max)), dtype=DT)
        ref = old + torch.tensor(rng.normal(0.0, 0.4, (n, t_max)), dtype=DT)
        data = DataProto.from_dict(tensors={
            "response_mask": mask, "token_level_scores": scores.clone(),
            "old_log_probs": old, "ref_log_prob": ref,
        })
        data, metrics = apply_kl_penalty(data, ctrl, kl_penalty=penalty)
        rewards = data.batch["token_level_rewards"]
        out.append({
            "responses": [{
                "scores": [r(x) for x in scores[i, :ends[i]].tolist()],
                "logp": [r(x) for x in old[i, :ends[i]].tolist()],
                "ref_logp": [r(x) for x in ref[i, :ends[i]].tolist()],
                "mask": [bool(m) for m in masks[i][:ends[i]]],
                "rewards": [r(x) for x in rewards[i, :ends[i]].tolist()],
            } for i in range(n)],
            "beta_used": r(metrics["actor/reward_kl_penalty_coeff"]),
            "kl": r(metrics["actor/reward_kl_penalty"]),
            "beta_after": r(ctrl.value),
        })
    return {"name": name, "controller": controller, "penalty": penalty, "batches": out}


def kl_reward_fixtures():
    rng = np.random.default_rng(1909)
    three = [([5, 9, 3, 7], False), ([6, 2, 8, 4, 5], True), ([4, 10, 6], False)]
    cases = [
        kl_reward_case("adaptive_kl", rng, {"kind": "adaptive", "beta": 0.05, "target": 0.1, "horizon": 10.0},
                       "kl", three),
        kl_reward_case("adaptive_low_var_kl_small_kl", rng,
                       {"kind": "adaptive", "beta": 0.2, "target": 6.0, "horizon": 5.0}, "low_var_kl", three),
        kl_reward_case("fixed_abs", rng, {"kind": "fixed", "beta": 0.1}, "abs", three[:2]),
        kl_reward_case("fixed_mse", rng, {"kind": "fixed", "beta": 0.3}, "mse", three[1:]),
    ]
    return {
        "source": f"verl {verl.__version__} verl/trainer/ppo/ray_trainer.py: apply_kl_penalty with "
        "core_algos.AdaptiveKLController / FixedKLController and core_algos.kl_penalty, successive "
        "batches through one controller, float64",
        "command": "$HOME/.cache/rlvr-trl/venv/bin/python tools/verl/gen_verl_fixtures.py",
        "cases": cases,
    }


# --------------------------------------------------------------------------------------------
# PPO's clipped value loss
# --------------------------------------------------------------------------------------------


def value_case(name, rng, lengths, t_max, cliprange, spread, agg="token-mean", rows=None):
    n = len(lengths)
    mask = torch.zeros(n, t_max, dtype=DT)
    for i, length in enumerate(lengths):
        mask[i, :length] = 1.0
    old = torch.tensor(rng.normal(0.0, 1.0, (n, t_max)), dtype=DT) * mask
    vpred = (old + torch.tensor(rng.uniform(-spread, spread, (n, t_max)), dtype=DT)) * mask
    returns = torch.tensor(rng.normal(0.3, 1.2, (n, t_max)), dtype=DT) * mask
    global_tokens = int(mask.sum().item())
    global_seqs = int((mask.sum(-1) > 0).sum().item())
    sel = list(range(n)) if rows is None else rows
    vp = vpred[sel].clone().requires_grad_(True)
    loss, clipfrac = core_algos.compute_value_loss(
        vpreds=vp, returns=returns[sel], values=old[sel], response_mask=mask[sel],
        cliprange_value=cliprange, loss_agg_mode=agg,
        batch_num_tokens=global_tokens, global_batch_size=global_seqs,
    )
    loss.backward()

    return {
        "name": name,
        "cliprange_value": cliprange,
        "aggregation": agg,
        "lengths": [lengths[i] for i in sel],
        "global_tokens": global_tokens,
        "global_sequences": global_seqs,
        "vpreds": rows_of(vpred[sel]),
        "old_values": rows_of(old[sel]),
        "returns": rows_of(returns[sel]),
        "loss": r(loss.item()),
        "grad_vpreds": rows_of(vp.grad * mask[sel]),
        "clipfrac": r(clipfrac.item()),
    }


def value_fixtures():
    rng = np.random.default_rng(60210)
    lengths = [7, 3, 5, 1, 6, 4]
    cases = [
        # verl's default critic.cliprange_value = 0.5; predictions moved up to ±1.2 from the old values.
        value_case("verl_default_clip", rng, lengths, 8, 0.5, 1.2),
        # Predictions inside the clip range: the loss is 0.5·(v − R)², token-mean.
        value_case("unclipped", rng, lengths, 8, 0.5, 0.1),
        # A tight clip: most tokens take the clipped branch where it is larger.
        value_case("tight_clip", rng, lengths, 8, 0.05, 0.8),
        # A micro-batch of rows 0, 3, 5 normalised by the whole batch's token count.
        value_case("micro_batch_global_counts", rng, lengths, 8, 0.5, 1.2, rows=[0, 3, 5]),
        value_case("seq_mean_token_mean", rng, lengths, 8, 0.2, 0.8, agg="seq-mean-token-mean"),
    ]
    return {
        "source": f"verl {verl.__version__} verl/trainer/ppo/core_algos.py: compute_value_loss "
        "(agg_loss with the whole batch's token and sequence counts), gradient by torch autograd, float64",
        "command": "$HOME/.cache/rlvr-trl/venv/bin/python tools/verl/gen_verl_fixtures.py",
        "cases": cases,
    }


def main():
    torch.set_default_dtype(DT)
    for path, data in [(ADV_OUT, reinforce_fixtures()), (LOSS_OUT, cispo_fixtures()),
                       (GAE_OUT, gae_fixtures()), (VALUE_OUT, value_fixtures()),
                       (KL_REWARD_OUT, kl_reward_fixtures())]:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(data, separators=(",", ":")) + "\n"
        path.write_text(text)
        print(f"{path.relative_to(ROOT)}: {len(data['cases'])} cases, {len(text)} bytes")


if __name__ == "__main__":
    main()
