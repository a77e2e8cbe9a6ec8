"""OpenRLHF adapter: ``reward_func(queries, prompts, labels)`` for ``--remote_rm_url``.

OpenRLHF loads a Python file given as ``--remote_rm_url /path/to/file.py`` and calls its
``reward_func(queries, prompts, labels)`` (per sample through ``asyncio.to_thread``, or per
micro-batch in Ray tasks). ``queries`` are prompt + response as decoded with special tokens,
``labels`` the dataset's answers. It expects ``{"rewards", "scores", "extra_logs"}``.

Use this module's file directly (``python -c "import rlvr.openrlhf as m; print(m.__file__)"``),
or write a two-line file: ``from rlvr.openrlhf import make_reward_func;
reward_func = make_reward_func(verifier="dapo")``.

No torch import at module load; the returned values are torch tensors when torch is importable
(it always is under OpenRLHF), plain lists otherwise. Imports are absolute because OpenRLHF
loads the file by path, outside the package.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from rlvr._rlvr import verify_batch

__all__ = ["END_TOKENS", "make_reward_func", "response_of", "reward_func"]

END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>", "<｜end▁of▁sentence｜>")
"""End-of-sequence markers removed from the end of a response before verification."""


def response_of(query: str, prompt: str, end_tokens: Sequence[str] = END_TOKENS) -> str:
    """The response part of an OpenRLHF query (the query minus the prompt it starts with),
    without trailing end-of-sequence tokens."""
    if not isinstance(query, str) or not isinstance(prompt, str):
        raise TypeError(
            f"queries and prompts must be str, got {type(query).__name__} and {type(prompt).__name__}"
        )
    response = query[len(prompt):] if query.startswith(prompt) else query
    stripped = True
    while stripped:
        stripped = False
        response = response.rstrip()
        for token in end_tokens:
            if token and response.endswith(token):
                response = response[: -len(token)]
                stripped = True
    return response


def _values(values: list[float]) -> Any:
    try:
        import torch
    except ImportError:
        return values
    return torch.tensor(values, dtype=torch.float32)


def make_reward_func(
    verifier: str = "math",
    threads: Optional[int] = None,
    end_tokens: Sequence[str] = END_TOKENS,
    **options: Any,
) -> Callable[[Sequence[str], Sequence[str], Sequence[str]], dict[str, Any]]:
    """An OpenRLHF ``reward_func``: ``rewards`` are the verifier's (1/0 for ``math``, +1/-1 for
    ``dapo``), ``scores`` are 1/0 correctness (OpenRLHF's dynamic filtering), ``extra_logs``
    holds ``acc`` and ``failed`` (no verdict: unparseable either side or over budget)."""

    def reward_func(queries: Sequence[str], prompts: Sequence[str], labels: Sequence[str]) -> dict[str, Any]:
        if not (len(queries) == len(prompts) == len(labels)):
            raise ValueError(
                f"queries, prompts and labels differ in length: {len(queries)}, {len(prompts)}, {len(labels)}"
            )
        responses = [response_of(q, p, end_tokens) for q, p in zip(queries, prompts)]
        outcomes = verify_batch(labels, responses, verifier, threads, **options)
        rewards = [o.reward for o in outcomes]
        acc = [1.0 if o.correct else 0.0 for o in outcomes]
        failed = [0.0 if o.kind in ("correct", "incorrect") else 1.0 for o in outcomes]
        return {
            "rewards": _values(rewards),
            "scores": _values(acc),
            "extra_logs": {"acc": _values(acc), "failed": _values(failed)},
        }

    return reward_func


reward_func = make_reward_func()
"""OpenRLHF reward with the ``math`` verifier: 1.0 for a correct final answer, else 0.0."""
