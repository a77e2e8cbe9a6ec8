"""rlvr: bounded math verifiers, a sandboxed code verifier and group advantage estimators, in Rust.

The verifiers are rl-verifier's (`math`: math-verify-style equivalence with exact arithmetic;
`dapo`: verl's ``math_dapo`` scorer character for character). Their work is bounded by a budget
(input bytes, nesting depth, digits, steps) instead of signals or timeouts, so they are safe in
threads, asyncio, Ray and worker processes, and never hang. `code` (:func:`verify_code`) runs
the response's final Python block against test cases in rl-sandbox, with the GIL released and
each run bounded by its wall-clock limit. The advantage estimators are
rl-advantage's (GRPO, Dr. GRPO, RLOO, DAPO, DA3PO) over numpy arrays with explicit group ids.

Adapters (pure Python, imported on demand, no torch import at module load):

* :mod:`rlvr.trl` -- ``accuracy_reward`` for TRL's ``GRPOTrainer``;
* :mod:`rlvr.verl` -- ``compute_score`` / ``compute_score_batch`` for verl's
  ``custom_reward_function`` and a ``da3po`` advantage estimator for verl's registry;
* :mod:`rlvr.openrlhf` -- ``reward_func(queries, prompts, labels)``.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

from . import _rlvr
from ._rlvr import (
    CODE_VERDICTS,
    ESTIMATORS,
    OUTCOME_KINDS,
    VERIFIERS,
    CodeResult,
    Outcome,
    __version__,
    math_dapo_score,
    verify,
    verify_batch,
)

__all__ = [
    "CODE_VERDICTS",
    "ESTIMATORS",
    "OUTCOME_KINDS",
    "VERIFIERS",
    "Amplification",
    "CodeResult",
    "GroupAdvantages",
    "Outcome",
    "__version__",
    "group_advantages",
    "math_dapo_score",
    "theory",
    "verify",
    "verify_batch",
    "verify_code",
]


class GroupAdvantages(NamedTuple):
    """What :func:`group_advantages` returns (a tuple: ``adv, kept, amplified = ...`` works)."""

    advantages: "numpy.ndarray"  # noqa: F821  (the scores' dtype, float32 or float64)
    kept: "numpy.ndarray"  # noqa: F821  (bool: the sample's group has a learning signal)
    amplified: "numpy.ndarray"  # noqa: F821  (bool: DA3PO multiplied this advantage by lam)


class Amplification(NamedTuple):
    """DA3PO Theorem 3.1 at one (G, p): see :func:`theory`."""

    alpha_plus: float
    alpha_minus: float
    gamma: float


def group_advantages(
    scores,
    group_ids=None,
    group_size: Optional[int] = None,
    estimator: str = "grpo",
    correct=None,
    lam: Union[float, str, None] = None,
    tau: Optional[float] = None,
    std: Optional[str] = None,
    eps: Optional[float] = None,
    nan: str = "raise",
    negative_advantage: Optional[str] = None,
    lam_min: Optional[float] = None,
    lam_max: Optional[float] = None,
) -> GroupAdvantages:
    """Group-relative advantages of a batch of scored responses.

    Args:
        scores: 1-D float32 or float64 numpy array, one scalar reward per response (any
            strides: slices and views are fine).
        group_ids: 1-D int64 array, the group (prompt) of each response; groups may be
            interleaved and in any order. For verl's string uids use
            ``numpy.unique(uids, return_inverse=True)[1]``.
        group_size: instead of ``group_ids``: contiguous groups of this size (TRL's layout).
        estimator: ``grpo`` (R - mean)/(std + eps); ``dr_grpo`` R - mean; ``rloo``
            R - mean of the others; ``dapo`` as grpo; ``da3po`` dapo then DAA: a positive advantage
            of a correct response in a group with pass rate p < tau is multiplied by lam (a
            correct response below its group's mean, possible only with shaped rewards, keeps
            its advantage unless ``negative_advantage="amplify"``).
        correct: 1-D bool array of the verifier's verdicts. Required for ``da3po`` (the pass
            rate is never inferred from shaped scores); otherwise only length-checked.
        lam, tau: DAA's factor (default 2.0) and threshold (default 0.5); ``da3po`` only.
            ``lam="theory"`` scales by 1/gamma(p, G) = (1 - p**(G-1)) / (1 - (1-p)**(G-1))
            instead, the factor Theorem 3.1 implies (rlvr's extension, not the paper's), bounded
            by ``lam_min``/``lam_max`` when given; with ``tau=1.0`` it applies to every group.
        lam_min, lam_max: bounds of the ``lam="theory"`` factor.
        negative_advantage: ``keep`` (default) leaves a correct response's negative advantage
            unchanged; ``amplify`` is the formula read literally (lam times it whatever its
            sign). The two agree on binary rewards; ``da3po`` only.
        std: ``sample`` (Bessel, default, as verl and TRL) or ``population``; grpo, dapo
            and da3po only.
        eps: added to the std (default 1e-6, verl's value; TRL uses 1e-4); grpo, dapo and
            da3po only.
        nan: ``raise`` (default): a NaN score is a ValueError naming its index. ``zero``: a
            NaN score counts as 0 before the group statistics, which is what TRL does with a
            reward function's ``None`` (its ``nansum`` over reward functions). Infinite
            scores are always an error.

    A group whose scores are all equal (within 1e-6) gets exactly 0 and ``kept`` False;
    every group needs at least 2 responses. Settings that the chosen estimator does not have
    are errors, never silently ignored.

    Returns:
        ``GroupAdvantages(advantages, kept, amplified)``: advantages in the scores' dtype
        (computed in float64), ``kept`` (the group carries a learning signal: the groups
        DAPO's dynamic sampling keeps) and ``amplified`` (DA3PO multiplied it by lam).

    Raises:
        TypeError: an argument of the wrong type or dtype.
        ValueError: wrong lengths or shapes, unknown names, bad settings, a group of one,
            a non-finite score.
    """
    advantages, kept, amplified = _rlvr.group_advantages(
        scores,
        group_ids=group_ids,
        group_size=group_size,
        estimator=estimator,
        correct=correct,
        lam=lam,
        tau=tau,
        std=std,
        eps=eps,
        nan=nan,
        negative_advantage=negative_advantage,
        lam_min=lam_min,
        lam_max=lam_max,
    )
    return GroupAdvantages(advantages, kept, amplified)


def theory(group_size: int, p: float) -> Amplification:
    """DA3PO Theorem 3.1: how DAPO's dynamic sampling amplifies expected advantages.

    For a prompt with success rate ``p`` (0 < p < 1) and groups of ``group_size`` (>= 2):
    alpha_plus = 1/(1 - p^(G-1)) for correct responses, alpha_minus = 1/(1 - (1-p)^(G-1))
    for incorrect ones, gamma = alpha_plus/alpha_minus (< 1 exactly when p < 1/2).
    """
    return Amplification(*_rlvr.theory(group_size, p))


def verify_code(
    response: str,
    tests,
    *,
    reward: str = "all_or_nothing",
    wall_time: Optional[float] = None,
    cpu_time: Optional[float] = None,
    memory_mb: Optional[int] = None,
    max_tests: Optional[int] = None,
    concurrency: Optional[int] = None,
    float_tolerance: Optional[float] = None,
) -> CodeResult:
    """Run a response's final Python code block against test cases in the sandbox.

    Args:
        response: the model's response; its last fenced Python block (```python, ```py or a
            bare ```) is the program. An unterminated last fence runs to the end.
        tests: the test cases, as JSON text or as the dict / list itself:
            ``{"inputs": [...], "outputs": [...]}`` (APPS / TACO / LiveCodeBench; stdin ->
            stdout, or call-based with ``"fn_name"``), a list of ``{"input", "output"}``, or
            assert-style ``{"asserts": [...], "setup": "..."}`` / a list of assert strings.
        reward: ``all_or_nothing`` (stop at the first failure; reward 1 or 0) or ``fraction``
            (run every test; reward = passed / total).
        wall_time, cpu_time: seconds per run (defaults 4 and 2); memory_mb: address space per
            run (default 512); max_tests: tests run at most (default 32); concurrency: runs at
            once (default 2); float_tolerance: for numbers that are not both integers
            (default 1e-6).

    Every run (the syntax check, then each test) is its own sandboxed process, so a call takes
    at most (1 + tests) x wall_time plus start-up. The GIL is released while the programs run,
    and one sandbox per configuration is shared by all threads: calling from many threads at
    once is safe.

    Returns:
        :class:`CodeResult`: ``verdict`` (one of ``CODE_VERDICTS``: ``passed``,
        ``wrong_answer``, ``runtime_error``, ``timeout``, ``memory``, ``syntax_error``,
        ``no_code``, ``too_large``, ``sandbox_error``, or ``bad_tests`` when the tests are
        unusable), ``kind`` (as :class:`Outcome`), ``correct``, ``passed``, ``total``,
        ``reward``, ``score`` (passed / total with ``reward="fraction"``), ``tests`` (each run
        test's verdict), ``detail`` (why it is not ``passed``) and ``code``.

    Raises:
        TypeError: a non-str response, tests of another type, a non-int count.
        ValueError: an unknown reward mode, a non-positive limit, or no sandbox on this machine
            (the message names what is missing).
    """
    return _rlvr.verify_code(
        response,
        tests,
        reward=reward,
        wall_time=wall_time,
        cpu_time=cpu_time,
        memory_mb=memory_mb,
        max_tests=max_tests,
        concurrency=concurrency,
        float_tolerance=float_tolerance,
    )
