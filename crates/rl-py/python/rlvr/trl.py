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

No torch (or TRL) import: the module only needs the ``rlvr`` extension.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from rlvr._rlvr import verify_batch

__all__ = ["accuracy_reward", "completion_text", "make_accuracy_reward"]


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
