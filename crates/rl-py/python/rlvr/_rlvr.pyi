"""Type stubs of the extension module rlvr._rlvr (crates/rl-py/src/lib.rs)."""

from collections.abc import Sequence
from typing import Literal, final

import numpy as np
import numpy.typing as npt

__version__: str
VERIFIERS: list[str]
ESTIMATORS: list[str]
OUTCOME_KINDS: list[str]
CODE_VERDICTS: list[str]

OutcomeKind = Literal["correct", "incorrect", "unparseable_gold", "unparseable_response", "over_budget"]
VerifierName = Literal["math", "dapo", "code"]
CodeVerdict = Literal[
    "passed",
    "wrong_answer",
    "runtime_error",
    "timeout",
    "memory",
    "syntax_error",
    "no_code",
    "too_large",
    "sandbox_error",
    "bad_tests",
]

@final
class Outcome:
    """The result of one verification (immutable; compares by value; truthy when correct)."""

    @property
    def correct(self) -> bool: ...
    @property
    def kind(self) -> OutcomeKind: ...
    @property
    def reward(self) -> float:
        """The verifier's default reward: 1/0 for ``math``, +1/-1 for ``dapo``."""
    @property
    def reason(self) -> str | None:
        """Why, for ``unparseable_*`` and ``over_budget``."""
    @property
    def extracted(self) -> str | None:
        """The response's answer as the verifier saw it (``dapo``: verl's normalised pred)."""
    @property
    def source(
        self,
    ) -> Literal["boxed", "answer_line", "math_delimiters", "whole_response", "final_number", "code_block"] | None: ...
    def __init__(
        self,
        correct: bool,
        kind: OutcomeKind,
        reward: float,
        reason: str | None = None,
        extracted: str | None = None,
        source: str | None = None,
    ) -> None: ...
    def __bool__(self) -> bool: ...

def verify(
    answer: str,
    response: str,
    verifier: VerifierName = "math",
    *,
    max_input_bytes: int = ...,
    max_depth: int = ...,
    max_digits: int = ...,
    max_steps: int = ...,
    strict_box: bool = ...,
    gold_in_box: bool = ...,
) -> Outcome:
    """Verify one response against one gold answer (gold first).

    Keyword options: the work budget (``max_input_bytes`` 1 MiB, ``max_depth`` 50 (<= 200),
    ``max_digits`` 10000, ``max_steps`` 1000000) and, for ``dapo`` only, ``strict_box`` (verl's
    ``strict_box_verify``) and ``gold_in_box`` (verl's ``gt_need_extract``). Releases the GIL.

    Raises TypeError for non-str inputs or unknown options, ValueError for unknown verifiers or
    bad budget values.
    """

def verify_batch(
    answers: Sequence[str],
    responses: Sequence[str],
    verifier: VerifierName = "math",
    threads: int | None = None,
    *,
    max_input_bytes: int = ...,
    max_depth: int = ...,
    max_digits: int = ...,
    max_steps: int = ...,
    strict_box: bool = ...,
    gold_in_box: bool = ...,
) -> list[Outcome]:
    """``verify`` over pairs on ``threads`` worker threads (default: the CPU count), GIL released.

    Results are in input order and equal to a serial run. ValueError when the lengths differ.
    """

@final
class CodeResult:
    """The result of :func:`verify_code` (immutable; compares by value; truthy when correct)."""

    @property
    def verdict(self) -> CodeVerdict: ...
    @property
    def kind(self) -> OutcomeKind: ...
    @property
    def correct(self) -> bool: ...
    @property
    def passed(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def reward(self) -> float:
        """1 when every test passed; passed/total with ``reward="fraction"``; else 0."""
    @property
    def score(self) -> float | None:
        """passed/total with ``reward="fraction"``."""
    @property
    def tests(self) -> list[str]:
        """Each run test's verdict, in test order."""
    @property
    def detail(self) -> str: ...
    @property
    def code(self) -> str | None: ...
    def __bool__(self) -> bool: ...

def verify_code(
    response: str,
    tests: str | dict | list,
    *,
    reward: Literal["all_or_nothing", "fraction"] = "all_or_nothing",
    wall_time: float | None = None,
    cpu_time: float | None = None,
    memory_mb: int | None = None,
    max_tests: int | None = None,
    concurrency: int | None = None,
    float_tolerance: float | None = None,
) -> CodeResult:
    """Low-level form of :func:`rlvr.verify_code` (same arguments and result)."""

def math_dapo_score(
    solution_str: str,
    ground_truth: str,
    strict_box_verify: bool = False,
    pause_tokens_index: list[int] | None = None,
) -> dict[str, float | bool | str]:
    """verl's ``math_dapo.compute_score``: ``{"score": 1.0 | -1.0, "acc": bool, "pred": str}``.

    Looks at the last 300 characters; default mode compares verl-normalised ``Answer:`` lines,
    strict-box mode the last ``\\boxed{}`` of the last 100 characters (or, with the 4
    ``pause_tokens_index``, of ``solution[-300:][pause_tokens_index[-1] - 100:]``).
    """

def normalize_final_answer(answer: str) -> str:
    """verl's ``math_dapo.normalize_final_answer`` (what ``dapo`` compares)."""

def group_advantages(
    scores: npt.NDArray[np.float32] | npt.NDArray[np.float64],
    group_ids: npt.NDArray[np.int64] | None = None,
    group_size: int | None = None,
    estimator: Literal["grpo", "dr_grpo", "rloo", "dapo", "da3po"] = "grpo",
    correct: npt.NDArray[np.bool_] | None = None,
    lam: float | Literal["theory"] | None = None,
    tau: float | None = None,
    std: Literal["sample", "population"] | None = None,
    eps: float | None = None,
    nan: Literal["raise", "zero"] = "raise",
    negative_advantage: Literal["keep", "amplify"] | None = None,
    lam_min: float | None = None,
    lam_max: float | None = None,
) -> tuple[npt.NDArray[np.floating], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Low-level form of :func:`rlvr.group_advantages` (which returns a named tuple)."""

def theory(group_size: int, p: float) -> tuple[float, float, float]:
    """Low-level form of :func:`rlvr.theory`: (alpha_plus, alpha_minus, gamma)."""
