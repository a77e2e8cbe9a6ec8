"""TRL adapter: reward functions for ``trl.GRPOTrainer`` (and its relatives).

TRL calls each reward function as ``f(prompts=..., completions=..., completion_ids=...,
**kwargs)`` where ``kwargs`` holds every dataset column (per-sample lists) plus ``trainer_state``
and logging hooks, and expects one ``float`` (or ``None``: "no reward", which TRL turns into
NaN) per completion. Completions are strings, or for conversational data lists of
``{"role", "content"}`` messages (the last message is the answer).

Unlike math-verify's signal-based timeout, the verifier's work budget works on any thread, so
these functions are safe where TRL runs reward functions off the main thread.

    from rlvr.trl import accuracy_reward
    trainer = GRPOTrainer(model=..., reward_funcs=[accuracy_reward], train_dataset=dataset)

DA3PO inside TRL: :func:`da3po_trainer_class` returns a ``GRPOTrainer`` subclass whose
advantages are DA3PO's (``rlvr.group_advantages(..., estimator="da3po")`` on TRL's rewards), with
DAPO's filter of uniform groups as an option. TRL is imported only when it is called.

No torch (or TRL) import at module load: the reward functions only need the ``rlvr`` extension.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from rlvr._rlvr import verify_batch

__all__ = [
    "accuracy_reward",
    "completion_text",
    "da3po_trainer_class",
    "make_accuracy_reward",
    "TRL_VERSIONS",
]


def completion_text(completion: Any) -> str:
    """The text of one TRL completion: the string itself, or the last message's ``content``."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)) and completion:
        last = completion[-1]
        if isinstance(last, dict) and isinstance(last.get("content"), str):
            return last["content"]
    raise TypeError(
        "a completion must be a str or a non-empty list of {'role', 'content'} messages, got "
        f"{type(completion).__name__}"
    )


def make_accuracy_reward(
    answer_column: str = "solution",
    verifier: str = "math",
    threads: Optional[int] = None,
    **options: Any,
) -> Callable[..., list[Optional[float]]]:
    """A TRL reward function that verifies each completion against a dataset column.

    Args:
        answer_column: the dataset column with the gold answers (TRL's own
            ``accuracy_reward`` reads ``solution``).
        verifier: ``math`` (reward 1/0, like TRL's math-verify reward) or ``dapo`` (verl's
            ``math_dapo``: +1/-1).
        threads: worker threads for the batch (default: the CPU count).
        options: budget fields or dapo options, as for :func:`rlvr.verify`.

    The reward is ``None`` when the gold answer cannot be parsed (as TRL's ``accuracy_reward``
    does: a data problem, not a wrong answer).
    """

    def accuracy_reward(
        prompts: Any = None,
        completions: Any = None,
        completion_ids: Any = None,
        **kwargs: Any,
    ) -> list[Optional[float]]:
        if completions is None:
            raise TypeError("accuracy_reward needs completions= (TRL passes it)")
        if answer_column not in kwargs:
            columns = sorted(k for k in kwargs if k not in ("trainer_state", "log_extra", "log_metric"))
            raise TypeError(
                f"accuracy_reward needs the dataset column '{answer_column}' (TRL passes every "
                f"dataset column as a keyword argument); got columns {columns}. Use "
                "rlvr.trl.make_accuracy_reward(answer_column=...) for another column"
            )
        answers = kwargs[answer_column]
        texts = [completion_text(c) for c in completions]
        if len(answers) != len(texts):
            raise ValueError(
                f"{len(texts)} completions but {len(answers)} values in column '{answer_column}'"
            )
        outcomes = verify_batch(answers, texts, verifier, threads, **options)
        return [None if o.kind == "unparseable_gold" else o.reward for o in outcomes]

    accuracy_reward.__name__ = "accuracy_reward"
    accuracy_reward.__qualname__ = "accuracy_reward"
    return accuracy_reward


accuracy_reward = make_accuracy_reward()
"""TRL reward: 1.0 if the completion's final answer equals the ``solution`` column's
(mathematical equivalence, ``math`` verifier), 0.0 otherwise, ``None`` for an unparseable gold."""


TRL_VERSIONS = ("1.16", "2")
"""The TRL releases :func:`da3po_trainer_class` supports: ``>= 1.16`` (tested: 1.16.0) and
``< 2``; it overrides ``GRPOTrainer._calculate_rewards`` and
``GRPOTrainer._generate_and_score_completions``, which are private."""


def _version_tuple(v: str) -> tuple:
    out = []
    for part in v.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def da3po_trainer_class(base: Any = None) -> type:
    """A subclass of TRL's ``GRPOTrainer`` (or of ``base``) that trains on DA3PO's advantages.

    TRL computes GRPO advantages inside ``_generate_and_score_completions`` and has no
    pluggable advantage step, so the subclass keeps the rewards TRL computed (summed over reward
    functions with ``reward_weights``, as TRL does) and replaces the advantages of the batch with
    ``rlvr.group_advantages(rewards, group_size=num_generations, estimator="da3po",
    correct=rewards > correct_threshold, eps=1e-4)``: TRL's own GRPO advantage
    (r - mean) / (sample std + 1e-4), then DAA (a correct response of a group with pass rate
    below ``tau`` gets ``lam`` times its advantage; ``lam="theory"`` for the Theorem 3.1
    factor). At ``lam=1`` the advantages are TRL's (tested against the real TRL).

    Constructor keywords besides ``GRPOTrainer``'s:
        lam, tau, lam_min, lam_max, negative_advantage: as for :func:`rlvr.group_advantages`.
        correct_threshold: a reward above it counts as correct (0.0: right for 1/0 and +1/-1
            rewards).
        dynamic_sampling: drop groups whose rewards are all equal from the loss (their tokens
            leave the token-mean's denominator too). DAPO re-samples to fill the batch; TRL's
            batch size is fixed, so the step trains on the remaining groups.

    Only ``scale_rewards="group"`` with ``multi_objective_aggregation="sum_then_normalize"`` is
    supported (TRL's defaults); other settings are a ``ValueError``. A completion for which
    every reward function returned ``None`` counts as reward 0 here (TRL leaves it out of its
    group's mean).
    """
    import numpy as np
    import torch
    import trl
    from trl import GRPOTrainer

    from rlvr import group_advantages

    v = _version_tuple(trl.__version__)
    lo, hi = (_version_tuple(x) for x in TRL_VERSIONS)
    if not (lo <= v < hi):
        raise ImportError(
            f"rlvr.trl.da3po_trainer_class supports TRL >= {TRL_VERSIONS[0]}, < {TRL_VERSIONS[1]}; "
            f"found {trl.__version__}"
        )
    base = base or GRPOTrainer
    for hook in ("_calculate_rewards", "_generate_and_score_completions"):
        if not callable(getattr(base, hook, None)):
            raise ImportError(f"TRL {trl.__version__}'s {base.__name__} has no {hook}; rlvr needs it")

    class DA3POTrainer(base):
        def __init__(
            self,
            *args: Any,
            lam: Any = 2.0,
            tau: float = 0.5,
            lam_min: Optional[float] = None,
            lam_max: Optional[float] = None,
            negative_advantage: str = "keep",
            correct_threshold: float = 0.0,
            dynamic_sampling: bool = False,
            **kwargs: Any,
        ) -> None:
            super().__init__(*args, **kwargs)
            if self.scale_rewards != "group" or self.multi_objective_aggregation != "sum_then_normalize":
                raise ValueError(
                    "DA3POTrainer needs scale_rewards='group' and "
                    "multi_objective_aggregation='sum_then_normalize' (TRL's defaults), got "
                    f"{self.scale_rewards!r} and {self.multi_objective_aggregation!r}"
                )
            self.da3po = dict(
                lam=lam, tau=tau, lam_min=lam_min, lam_max=lam_max, negative_advantage=negative_advantage
            )
            self.correct_threshold = correct_threshold
            self.dynamic_sampling = dynamic_sampling
            self._rlvr_rewards = None
            self.da3po_last: dict = {}

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._rlvr_rewards = rewards
            return rewards

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            per_func = self._rlvr_rewards
            if per_func is None or not self.model.training:
                return out
            self._rlvr_rewards = None
            weights = self.reward_weights.to(per_func.device).unsqueeze(0)
            rewards = (per_func * weights).nansum(dim=1).double().cpu().numpy()
            g = self.num_generations
            adv, kept, amplified = group_advantages(
                rewards,
                group_size=g,
                estimator="da3po",
                correct=rewards > self.correct_threshold,
                std="sample",
                eps=1e-4,
                **self.da3po,
            )
            trl_advantages = out["advantages"]
            n_local = trl_advantages.shape[0]
            local = slice(self.accelerator.process_index * n_local, (self.accelerator.process_index + 1) * n_local)
            device = out["advantages"].device
            out["advantages"] = torch.as_tensor(np.asarray(adv)[local], dtype=out["advantages"].dtype, device=device)
            if self.dynamic_sampling:
                keep = torch.as_tensor(np.asarray(kept)[local], device=out["completion_mask"].device)
                out["completion_mask"] = out["completion_mask"] * keep.unsqueeze(1).to(out["completion_mask"].dtype)
                loss_mask = out["completion_mask"]
                if "tool_mask" in out:
                    loss_mask = loss_mask * out["tool_mask"]
                out["num_items_in_batch"] = self.accelerator.gather(loss_mask.sum()).sum()
            self.da3po_last = {
                "rewards": rewards[local].tolist(),
                "trl_advantages": trl_advantages.tolist(),
                "advantages": out["advantages"].tolist(),
                "amplified": np.asarray(amplified)[local].tolist(),
                "kept": np.asarray(kept)[local].tolist(),
                "completion_mask": out["completion_mask"].tolist(),
                "frac_amplified": float(np.mean(amplified)),
                "frac_kept": float(np.mean(kept)),
            }
            mode = "train"
            self._metrics[mode]["da3po/frac_amplified"].append(self.da3po_last["frac_amplified"])
            self._metrics[mode]["da3po/frac_kept_groups"].append(self.da3po_last["frac_kept"])
            return out

    DA3POTrainer.__name__ = DA3POTrainer.__qualname__ = "DA3POTrainer"
    return DA3POTrainer
