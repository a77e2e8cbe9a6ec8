"""DA3PO advantages in verl's estimator calling convention (registered by :mod:`rlvr.verl`).

Kept in its own module so that the function object is the same however often verl loads
``rlvr/verl.py`` by path: verl's registry refuses a second, different function under one name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import group_advantages

__all__ = ["compute_da3po_outcome_advantage", "da3po_settings"]


def _get(config: Any, key: str, default: Any = None) -> Any:
    """``config[key]`` for dicts, OmegaConf DictConfigs and verl's dataclass configs."""
    if config is None:
        return default
    if hasattr(config, "get"):
        try:
            value = config.get(key, default)
            return default if value is None else value
        except Exception:  # a Mapping-like object that rejects unknown keys
            pass
    value = getattr(config, key, default)
    return default if value is None else value


def da3po_settings(config: Any, epsilon: float = 1e-6) -> dict[str, Any]:
    """DA3PO's settings from verl's ``algorithm`` config: ``algorithm.da3po.{lam, tau, eps,
    correct_threshold, negative_advantage, lam_min, lam_max}`` (defaults 2.0, 0.5, verl's
    ``epsilon``, 0.0, ``keep``, unset, unset). ``lam`` may be ``theory`` (1/gamma(p, G), bounded
    by ``lam_min``/``lam_max``)."""
    section = _get(config, "da3po", None)
    lam = _get(section, "lam", 2.0)
    bound = lambda key: None if _get(section, key, None) is None else float(_get(section, key, None))  # noqa: E731
    return {
        "lam": lam if lam == "theory" else float(lam),
        "lam_min": bound("lam_min"),
        "lam_max": bound("lam_max"),
        "tau": float(_get(section, "tau", 0.5)),
        "eps": float(_get(section, "eps", epsilon)),
        "correct_threshold": float(_get(section, "correct_threshold", 0.0)),
        "negative_advantage": str(_get(section, "negative_advantage", "keep")),
    }


def compute_da3po_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any = None,
    epsilon: float = 1e-6,
    config: Any = None,
    correct: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """DA3PO outcome advantages for verl (``algorithm.adv_estimator=da3po``).

    verl calls it with ``token_level_rewards`` (bs, L), ``response_mask`` (bs, L), ``config``
    (the ``algorithm`` section) and ``index`` (the uid of each response's prompt). The
    per-response score is the row sum; groups come from the uids (any layout); advantages are
    DAPO's (Bessel std, ``eps``) with Difficulty-aware Advantage Amplification: a correct
    response in a group with pass rate p < tau gets lam times its advantage. The result is
    broadcast over the mask and returned twice (advantages, returns), as verl's estimators do.

    verl does not pass the verifier's verdicts to estimators, so a response counts as correct
    when its score is above ``algorithm.da3po.correct_threshold`` (0.0: right for 1/0 and +1/-1
    rewards; use -0.5 with math_dapo's +1/-1 plus the overlong penalty in [-1, 0]). Callers
    that have the verdicts pass ``correct=`` (a bool array) instead.

    Torch tensors in, torch tensors out (same dtype and device); numpy arrays in, numpy out.
    Every group needs at least 2 responses (``rollout.n >= 2``).
    """
    if index is None:
        raise ValueError("da3po needs index= (verl's per-response prompt uids)")
    settings = da3po_settings(config, epsilon)
    is_torch = hasattr(token_level_rewards, "detach")
    if is_torch:
        scores = token_level_rewards.detach().float().sum(dim=-1).cpu().numpy()
    else:
        scores = np.asarray(token_level_rewards, dtype=np.float64).sum(axis=-1)
    scores = np.ascontiguousarray(scores, dtype=np.float64).reshape(-1)
    uids = np.asarray(index)
    if uids.shape != scores.shape:
        raise ValueError(f"index has shape {uids.shape} but there are {scores.shape[0]} responses")
    group_ids = np.unique(uids, return_inverse=True)[1].reshape(-1).astype(np.int64)
    if correct is None:
        flags = scores > settings["correct_threshold"]
    else:
        flags = np.asarray(correct, dtype=bool).reshape(-1)
    result = group_advantages(
        scores,
        group_ids=group_ids,
        estimator="da3po",
        correct=flags,
        lam=settings["lam"],
        tau=settings["tau"],
        eps=settings["eps"],
        negative_advantage=settings["negative_advantage"],
        lam_min=settings["lam_min"],
        lam_max=settings["lam_max"],
    )
    if is_torch:
        import torch  # only here: verl runs with torch; rlvr itself never imports it

        adv = torch.as_tensor(result.advantages, device=token_level_rewards.device)
        adv = adv.to(token_level_rewards.dtype).unsqueeze(-1) * response_mask
    else:
        adv = result.advantages[:, None] * np.asarray(response_mask)
    return adv, adv
