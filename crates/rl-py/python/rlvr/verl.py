"""verl adapter: a custom reward function module and a ``da3po`` advantage estimator.

Reward (``custom_reward_function.path`` = this file, see ``python -c "import rlvr.verl as m;
print(m.__file__)"``; newer verl: ``reward.custom_reward_function``):

* ``compute_score(data_source, solution_str, ground_truth, extra_info)`` (name
  ``compute_score``, the default) for verl's naive/dapo reward managers;
* ``compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos)`` for the
  ``batch`` reward manager (``custom_reward_function.name=compute_score_batch``), verified in
  parallel with the GIL released.

Both return verl's ``math_dapo`` dict ``{"score", "acc", "pred"}``. The data source picks the
verifier as verl's ``default_compute_score`` does for math: ``math_dapo``, ``math``,
``math_dapo_reasoning`` and ``aime*`` get the ``dapo`` verifier (verl's ``math_dapo``
exactly: score +1/-1), every other source the ``math`` equivalence verifier (score 1/0, as verl's
math-verify scorer). The keys are the same for every sample, as verl's reward managers need.

Advantages: when verl is importable, importing this module registers
:func:`rlvr._verl_da3po.compute_da3po_outcome_advantage` under ``da3po`` in verl's estimator
registry (``algorithm.adv_estimator=da3po``; settings under ``+algorithm.da3po.{lam,tau,eps,
correct_threshold}``). :func:`register_da3po` does it explicitly, with any ``register``
decorator factory.

No torch import at module load (verl's own modules import it when verl is present). Imports are
absolute because verl loads the file by path, outside the package.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any, Callable, Optional, Sequence

from rlvr._rlvr import math_dapo_score, normalize_final_answer, verify, verify_batch
from rlvr._verl_da3po import compute_da3po_outcome_advantage, da3po_settings

__all__ = [
    "DA3PO_REGISTERED",
    "compute_da3po_outcome_advantage",
    "compute_score",
    "compute_score_batch",
    "da3po_settings",
    "math_dapo_score",
    "normalize_final_answer",
    "register_da3po",
    "verifier_for",
]

INVALID = "[INVALID]"
DAPO_SOURCES = ("math_dapo", "math", "math_dapo_reasoning")


def verifier_for(data_source: Any) -> str:
    """``dapo`` for the data sources verl routes to ``math_dapo``, ``math`` otherwise."""
    source = str(data_source)
    return "dapo" if source in DAPO_SOURCES or source.startswith("aime") else "math"


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: str,
    extra_info: Optional[dict] = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's custom reward function signature; returns ``{"score", "acc", "pred"}``."""
    if verifier_for(data_source) == "dapo":
        return math_dapo_score(solution_str, ground_truth)
    o = verify(ground_truth, solution_str, "math")
    return {"score": o.reward, "acc": o.correct, "pred": o.extracted if o.extracted is not None else INVALID}


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[str],
    extra_infos: Optional[Sequence[Any]] = None,
    threads: Optional[int] = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """The batch form (verl's ``batch`` reward manager): one dict per sample, in order."""
    n = len(solution_strs)
    if len(data_sources) != n or len(ground_truths) != n:
        raise ValueError(
            f"data_sources, solution_strs and ground_truths differ in length: "
            f"{len(data_sources)}, {n}, {len(ground_truths)}"
        )
    out: list[Optional[dict[str, Any]]] = [None] * n
    for name in ("dapo", "math"):
        idx = [i for i in range(n) if verifier_for(data_sources[i]) == name]
        if not idx:
            continue
        outcomes = verify_batch(
            [ground_truths[i] for i in idx], [solution_strs[i] for i in idx], name, threads
        )
        for i, o in zip(idx, outcomes):
            out[i] = {
                "score": o.reward,
                "acc": o.correct,
                "pred": o.extracted if o.extracted is not None else INVALID,
            }
    return out  # type: ignore[return-value]


def register_da3po(register: Optional[Callable[[str], Callable]] = None, name: str = "da3po") -> None:
    """Registers the DA3PO estimator under ``name`` with ``register(name)(fn)``.

    ``register`` defaults to verl's ``verl.trainer.ppo.core_algos.register_adv_est``.
    Registering the same function twice is harmless (verl only refuses a different one).
    """
    if register is None:
        from verl.trainer.ppo.core_algos import register_adv_est as register
    register(name)(compute_da3po_outcome_advantage)


def _register_if_verl() -> bool:
    if importlib.util.find_spec("verl") is None:
        return False
    try:
        register_da3po()
    except Exception as e:  # an old or broken verl, or another `da3po` already registered
        warnings.warn(f"rlvr.verl: could not register the da3po advantage estimator with verl: {e}")
        return False
    return True


DA3PO_REGISTERED: bool = _register_if_verl()
"""Whether importing this module registered ``da3po`` in verl's estimator registry."""
