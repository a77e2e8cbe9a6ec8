"""The TRL, verl and OpenRLHF adapters, each called with exactly the arguments its framework
passes (../shared/reference/python.md), checked against rlvr's own functions."""

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import rlvr
import rlvr.openrlhf
import rlvr.trl
import rlvr.verl

# --------------------------------------------------------------------------------------------
# TRL: f(prompts=, completions=, completion_ids=, **dataset columns, trainer_state=, ...)
# --------------------------------------------------------------------------------------------

GOLDS = ["\\frac{1}{2}", "42", "\\frac{1}{", "x^2+1"]
TEXTS = [
    "so the answer is $\\boxed{0.5}$",
    "I think it is 41. Answer: 41",
    "\\boxed{1}",
    "Expanding, $\\boxed{1 + x^2}$.",
]


def test_trl_accuracy_reward_plain_and_conversational():
    expected = [1.0, 0.0, None, 1.0]  # the unparseable gold gives None, as in TRL
    kwargs = dict(
        prompts=[[{"role": "user", "content": f"q{i}"}] for i in range(4)],
        completion_ids=[[1, 2, 3]] * 4,
        solution=GOLDS,
        problem=["p"] * 4,
        trainer_state=object(),
        log_extra=lambda *a, **k: None,
        log_metric=lambda *a, **k: None,
    )
    plain = rlvr.trl.accuracy_reward(completions=TEXTS, **kwargs)
    chat = rlvr.trl.accuracy_reward(
        completions=[[{"role": "assistant", "content": "draft"}, {"role": "assistant", "content": t}] for t in TEXTS],
        **kwargs,
    )
    assert plain == chat == expected
    for g, t, r in zip(GOLDS, TEXTS, plain):
        o = rlvr.verify(g, t)
        assert r == (None if o.kind == "unparseable_gold" else o.reward)
    assert rlvr.trl.accuracy_reward.__name__ == "accuracy_reward"


def test_trl_other_column_and_verifier():
    f = rlvr.trl.make_accuracy_reward(answer_column="answer", verifier="dapo")
    out = f(prompts=["a", "b"], completions=["Answer: 5", "Answer: 6"], completion_ids=[[1], [2]], answer=["5", "5"], trainer_state=None)
    assert out == [1.0, -1.0]
    try:
        rlvr.trl.accuracy_reward(prompts=["a"], completions=["x"], completion_ids=[[1]], answer=["1"], trainer_state=None)
    except TypeError as e:
        assert "'solution'" in str(e) and "answer" in str(e) and "make_accuracy_reward" in str(e)
    else:
        raise AssertionError("a missing answer column must be an error")


# --------------------------------------------------------------------------------------------
# verl: compute_score(data_source=, solution_str=, ground_truth=, extra_info=) and the batch form
# --------------------------------------------------------------------------------------------


def test_verl_compute_score_routes_like_verl(dapo_rows):
    for row in dapo_rows:
        if row["kind"] != "score" or row["strict_box"]:
            continue
        for source in ["math_dapo", "math", "aime2024"]:
            got = rlvr.verl.compute_score(
                data_source=source, solution_str=row["solution"], ground_truth=row["gt"], extra_info={"index": 0}
            )
            assert got == {"score": row["score"], "acc": row["acc"], "pred": row["pred"]}, row
    got = rlvr.verl.compute_score(
        data_source="lighteval/MATH", solution_str="thus $\\boxed{\\frac{2}{4}}$", ground_truth="0.5", extra_info=None
    )
    assert got == {"score": 1.0, "acc": True, "pred": rlvr.verify("0.5", "thus $\\boxed{\\frac{2}{4}}$").extracted}


def test_verl_batch_equals_single(dapo_rows, math_rows):
    rows = [r for r in dapo_rows if r["kind"] == "score" and not r["strict_box"]]
    sources = ["math_dapo"] * len(rows) + ["HuggingFaceH4/MATH-500"] * len(math_rows)
    sols = [r["solution"] for r in rows] + [r["response"] for r in math_rows]
    gts = [r["gt"] for r in rows] + [r["gold"] for r in math_rows]
    # Interleave the sources so that the batch form must put results back in order.
    order = np.random.default_rng(0).permutation(len(sols))
    sources, sols, gts = ([x[i] for i in order] for x in (sources, sols, gts))
    batch = rlvr.verl.compute_score_batch(
        data_sources=sources, solution_strs=sols, ground_truths=gts, extra_infos=[{}] * len(sols)
    )
    single = [
        rlvr.verl.compute_score(data_source=s, solution_str=x, ground_truth=g, extra_info={})
        for s, x, g in zip(sources, sols, gts)
    ]
    assert batch == single
    assert {tuple(sorted(d)) for d in batch} == {("acc", "pred", "score")}


STAND_IN_CORE_ALGOS = '''
"""Stand-in for verl.trainer.ppo.core_algos: the registry API as verl documents it."""
from enum import Enum

ADV_ESTIMATOR_REGISTRY = {}


def register_adv_est(name_or_enum):
    def decorator(fn):
        name = name_or_enum.value if isinstance(name_or_enum, Enum) else name_or_enum
        if name in ADV_ESTIMATOR_REGISTRY and ADV_ESTIMATOR_REGISTRY[name] != fn:
            raise ValueError(f"Adv estimator {name} has already been registered: "
                             f"{ADV_ESTIMATOR_REGISTRY[name]} vs {fn}")
        ADV_ESTIMATOR_REGISTRY[name] = fn
        return fn
    return decorator


def get_adv_estimator_fn(name_or_enum):
    name = name_or_enum.value if isinstance(name_or_enum, Enum) else name_or_enum
    if name not in ADV_ESTIMATOR_REGISTRY:
        raise ValueError(f"Unknown advantage estimator simply: {name}")
    return ADV_ESTIMATOR_REGISTRY[name]
'''

VERL_SIDE = '''
import importlib.util, json, sys
import numpy as np
import rlvr.verl
from verl.trainer.ppo import core_algos

assert rlvr.verl.DA3PO_REGISTERED
# verl loads custom reward files by path, possibly more than once: no duplicate-registration error.
for _ in range(2):
    spec = importlib.util.spec_from_file_location("custom_module", rlvr.verl.__file__)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
fn = core_algos.get_adv_estimator_fn("da3po")
rng = np.random.default_rng(5)
uids = np.array([f"uid-{k}" for k in rng.integers(0, 6, size=48)], dtype=object)
L = 7
lengths = rng.integers(1, L + 1, size=48)
mask = (np.arange(L)[None, :] < lengths[:, None]).astype(np.float32)
score = np.where(rng.random(48) < 0.3, 1.0, -1.0) - 0.5 * rng.random(48) * (rng.random(48) < 0.3)
rewards = np.zeros((48, L), dtype=np.float32)
rewards[np.arange(48), lengths - 1] = score  # verl puts the reward on the last valid token
config = {"norm_adv_by_std_in_grpo": True, "da3po": {"lam": 3.0, "tau": 0.5, "correct_threshold": -0.75}}
adv, ret = fn(token_level_rewards=rewards, response_mask=mask, config=config, index=uids)
print(json.dumps({"adv": np.asarray(adv).tolist(), "ret": np.asarray(ret).tolist(), "uids": uids.tolist(),
                  "score": rewards.sum(-1).tolist(), "mask": mask.tolist(),
                  "torch": "torch" in sys.modules}))
'''


def _run_python(code, tmp_path, extra_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(extra_path)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_verl_da3po_registers_with_the_registry(tmp_path):
    pkg = tmp_path / "verl" / "trainer" / "ppo"
    pkg.mkdir(parents=True)
    for d in [tmp_path / "verl", tmp_path / "verl" / "trainer", pkg]:
        (d / "__init__.py").write_text("")
    (pkg / "core_algos.py").write_text(STAND_IN_CORE_ALGOS)
    data = json.loads(_run_python(VERL_SIDE, tmp_path, tmp_path))
    assert not data["torch"]
    score = np.array(data["score"], dtype=np.float64)
    mask = np.array(data["mask"])
    ids = np.unique(np.array(data["uids"]), return_inverse=True)[1].astype(np.int64)
    # Reference: DA3PO with lam 3 on the row sums, correct = score > -0.75, broadcast over the mask.
    want = rlvr.group_advantages(score, group_ids=ids, estimator="da3po", correct=score > -0.75, lam=3.0)
    np.testing.assert_allclose(np.array(data["adv"]), want.advantages[:, None] * mask, rtol=1e-6, atol=1e-7)
    assert data["adv"] == data["ret"]
    assert want.amplified.any()


def test_no_verl_no_registration():
    assert importlib.util.find_spec("verl") is None or rlvr.verl.DA3PO_REGISTERED
    registry = {}

    def register(name):
        def deco(fn):
            registry[name] = fn
            return fn

        return deco

    rlvr.verl.register_da3po(register)
    assert registry == {"da3po": rlvr.verl.compute_da3po_outcome_advantage}


def test_adapters_do_not_import_torch(tmp_path):
    # A stand-in torch that fails on import: loading the adapters must not touch it.
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise RuntimeError('torch was imported')\n")
    code = "import rlvr, rlvr.trl, rlvr.verl, rlvr.openrlhf, sys; print('torch' in sys.modules)"
    assert _run_python(code, tmp_path, tmp_path).strip() == "False"


# --------------------------------------------------------------------------------------------
# OpenRLHF: reward_func(queries, prompts, labels), positionally, via asyncio.to_thread
# --------------------------------------------------------------------------------------------


def test_openrlhf_reward_func():
    prompts = ["<|im_start|>user\nWhat is 6*7? Answer: $Answer<|im_end|>\n<|im_start|>assistant\n"] * 3
    responses = ["6*7 = 42.\nAnswer: 42<|im_end|>", "Answer: 41<|im_end|><|endoftext|>", "no idea"]
    labels = ["42", "42", "42"]
    queries = [p + r for p, r in zip(prompts, responses)]

    async def call():
        return await asyncio.gather(
            *(asyncio.to_thread(rlvr.openrlhf.reward_func, [q], [p], [l]) for q, p, l in zip(queries, prompts, labels))
        )

    per_sample = asyncio.run(call())
    rewards = [float(r["rewards"][0]) for r in per_sample]
    assert rewards == [1.0, 0.0, 0.0]
    assert [float(r["extra_logs"]["failed"][0]) for r in per_sample] == [0.0, 0.0, 1.0]
    batch = rlvr.openrlhf.reward_func(queries, prompts, labels)
    assert [float(x) for x in batch["rewards"]] == rewards == [float(x) for x in batch["scores"]]
    # OpenRLHF loads the file by path (spec_from_file_location("reward_func", path)).
    spec = importlib.util.spec_from_file_location("reward_func", rlvr.openrlhf.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert [float(x) for x in module.reward_func(queries, prompts, labels)["rewards"]] == rewards
    dapo = rlvr.openrlhf.make_reward_func(verifier="dapo")(queries, prompts, labels)
    assert [float(x) for x in dapo["rewards"]] == [1.0, -1.0, -1.0]
    assert rlvr.openrlhf.response_of(queries[1], prompts[1]) == "Answer: 41"


def test_verl_settings_accept_the_theory_factor():
    # algorithm.da3po.lam = "theory" (with a bound) reaches group_advantages unchanged.
    from rlvr._verl_da3po import compute_da3po_outcome_advantage, da3po_settings

    config = {"da3po": {"lam": "theory", "tau": 1.0, "lam_max": 1.5}}
    s = da3po_settings(config)
    assert (s["lam"], s["tau"], s["lam_min"], s["lam_max"]) == ("theory", 1.0, None, 1.5)
    rng = np.random.default_rng(3)
    score = np.where(rng.random(32) < 0.3, 1.0, 0.0)
    rewards = score[:, None] * np.eye(1, 4, 3)  # reward on the last of 4 tokens
    uids = np.repeat(np.arange(4), 8)
    adv, _ = compute_da3po_outcome_advantage(rewards, np.ones((32, 4)), index=uids, config=config)
    want = rlvr.group_advantages(score, group_ids=uids.astype(np.int64), estimator="da3po", correct=score > 0,
                                 lam="theory", tau=1.0, lam_max=1.5)
    np.testing.assert_allclose(np.asarray(adv)[:, 0], want.advantages, rtol=1e-12, atol=1e-12)
    assert want.amplified.any()
