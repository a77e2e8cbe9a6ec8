#!/usr/bin/env python3
"""Generate the `dapo` parity fixture by running verl's own scorer.

Reference: verl `verl/utils/reward_score/math_dapo.py` (volcengine/verl, commit
012542c42542738709ccd0db619cff949cb0337a). That file is Apache-2.0 code of another project and is
NOT part of this repository: fetch it yourself and pass its path, e.g.

    curl -o /tmp/math_dapo.py https://raw.githubusercontent.com/volcengine/verl/012542c42542738709ccd0db619cff949cb0337a/verl/utils/reward_score/math_dapo.py
    python3 tools/verifier/gen_dapo_parity.py /tmp/math_dapo.py > crates/rl-verifier/tests/data/dapo_parity.jsonl

Each output line is one case, with verl's results:
  {"kind": "score", "solution", "gt", "strict_box", "score", "acc", "pred"}   compute_score(...)
  {"kind": "gold_in_box", "solution", "gt", "acc", "pred"} or {..., "error": "..."}
      is_correct_minerva(solution[-300:], gt, gt_need_extract=True)
  {"kind": "normalize", "input", "output"}                                     normalize_final_answer
The inputs are the vectors of issue 3 and algorithms.md §10.3 plus seeded random combinations of
answer keys, values, units, LaTeX, CPython-specific whitespace/digits and the 300/100-character
windows. Deterministic (seed 20250611).
"""
import importlib.util
import json
import random
import sys


def load(path):
    spec = importlib.util.spec_from_file_location("math_dapo", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ISSUE_AND_REFERENCE = [
    # issue 3
    ("Let me think.\nAnswer: 42", "42"),
    ("answer : 1,000", "1000"),
    ("Answer: x = 5", "5"),
    ("Answer: \\frac12", "\\frac{1}{2}"),
    ("Answer: \\dfrac{1}{2}", "\\frac{1}{2}"),
    ("The answer is \\boxed{7}", "7"),
    ("Answer: 3\nAnswer: 4", "4"),
    ("Answer: 3.", "3"),
    ("Answer: 12^\\circ", "12"),
    # algorithms.md §10.3
    ("Answer: $42$", "42"),
    ("Answer: 0.5", "\\frac{1}{2}"),
    ("Answer: 10 degrees", "10"),
    ("Answer: \\boxed{7}", "7"),
    ("Answer: 5 cm", "5"),
    ("Answer: \\text{(A)}", "A"),
]

STRICT = [
    ("The final answer is \\boxed{42}", "42"),
    ("The final answer is \\boxed{ 42}", "42"),
    ("\\boxed{1} then \\boxed{2}", "2"),
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("\\boxed{\\frac{1}{2}", "\\frac{1}{2}"),
    ("no box at all", "[INVALID]"),
    ("no box at all", "5"),
    ("\\boxed{" + "x" * 120 + "}", "x" * 120),
    ("\\boxed{7}" + " " * 95, "7"),
    ("\\boxed{7}" + " " * 91, "7"),
    ("\\boxed{{7}}", "{7}"),
    ("\\boxed{\\{1,2\\}}", "\\{1,2\\}"),
]

NORMALIZE = [
    "\\frac12", "\\sqrt2", "1,000", "x=\\frac{3}{4}", "\\text{east}", "\\$5", "5\\%",
    "\\boxed{\\frac{1}{2}}", "area 5", "\\dfrac{3}{4}", "\\fracabc", "\\sqrtab", "a$b$c$d$e",
    "$1$\n$2$", "\\text{a}\\text{b}", "\\boxed{1}+\\boxed{2}", "12,345,678", "1,2,3", "²,³",
    "١٢,٣٤", "½", " \x1c42\x1f ", "\u3000 7 \u3000", "\\text{\n}5", "\\text{\ns}", "9\\text{}^2",
    "1{,}000", '"quoted"', "4\\dots", "5\\mathrm{th}", "x = y = 3", "=", "", "mbox{5}", "\\mbox{5}",
    "5,\\text{and}6", "\\text{m}", "frac", "sqrt", "\\frac{1}2", "\\frac1{2}", "frac\n12",
    "\\overline{AB}", "\\textbf{bold}", "$$", "$x$ and $y$", "3\\;4", "1,\\!000",
    "an answer", "a a a", "an an", ".$5$", "\\ldots", "\\dots", "7 units", "7 ways", "8 km",
    "8 kmh", "ſ", "K", "\\boxed{\\boxed{3}}", "\\text{ }", "   ", "\t5\n", "0,5", ",", ",,",
]

KEYS = [
    "Answer:", "answer :", "ANSWER:", "Answer :", "Answer:\t", "answer:\u00a0", "Answer\u3000:",
    "Answer\x1c:", "Anſwer:", "Final Answer:", "The answer is", "**Answer:**", "answer:",
    "Answer:\u2003", "Answer\x0b:", "AnSwEr  :  ", "Answer:\u0085",
]

VALUES = [
    "42", "1,000", "x = 5", "\\frac12", "\\frac{1}{2}", "\\dfrac{1}{2}", "0.5", "10 degrees",
    "\\boxed{7}", "3.", "5 cm", "\\text{(A)}", "12^\\circ", "$42$", "\\$5", "5\\%", "\\sqrt2",
    "area 5", "\\text{east}", "a = 3", "an apple", "1,2", "1, 2", "²", "١٢,٣", "\\text{and}",
    "7\\text{ units}", "$\\frac{3}{4}$.", "\\boxed{\\frac{1}{2}}", "\\fracabc", "\\sqrt{x}",
    "\\overline{AB}", "\\textbf{9}", "9\\;", "1{,}000", '"42"', "4\\dots", "5\\mathrm{th}",
    " 42 ", "42\u3000", "42\x1f", "\\left( 1, 2 \\right)", "(1,2)", "[0, 1)", "-3", "−3",
    "2\\sqrt{3}", "\\pi", "x^2+1", "\\{1,2\\}", "10^{5}", "1.5\\times 10^3", "\\text{Monday}",
    "$x = 7$ cm", "12,345", "0.333", "\\frac{1}{3}", "7\r", "",
]

GOLDS = [
    "42", "1000", "5", "\\frac{1}{2}", "7", "3", "12", "10", "A", "(A)", "east", "3", "0.5",
    "\\sqrt{2}", "5\\%", "1,2", "(1,2)", "[0,1)", "-3", "2\\sqrt{3}", "\\pi", "x^2+1", "\\{1,2\\}",
    "10^{5}", "Monday", "12345", "\\frac{1}{3}", "\\frac{3}{4}", "9", "4", "[INVALID]", "apple",
    "\\boxed{42}", "x = 5",
]

SUFFIXES = ["", ".", " units", "\nThat's all.", "\r", "  ", "\nAnswer: 1", " $", "\x1c"]
PREFIXES = ["", "Let me think.\n", "We compute step by step.\n", "So the final result follows.\n\n"]
FILLER = "We carefully simplify the expression, check each case, and verify the arithmetic. "


def random_solution(rng):
    parts = [rng.choice(PREFIXES)]
    if rng.random() < 0.25:
        parts.append(FILLER * rng.randint(2, 4))
    if rng.random() < 0.2:
        parts.append(f"{rng.choice(KEYS)} {rng.choice(VALUES)}\n")
    value = rng.choice(VALUES)
    parts.append(f"{rng.choice(KEYS)} {value}{rng.choice(SUFFIXES)}")
    if rng.random() < 0.15:
        parts.append("\n" + FILLER * rng.randint(1, 3))
    return "".join(parts), value


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    m = load(sys.argv[1])
    rng = random.Random(20250611)
    out = []

    def score(solution, gt, strict):
        r = m.compute_score(solution, gt, strict_box_verify=strict)
        out.append({"kind": "score", "solution": solution, "gt": gt, "strict_box": strict,
                    "score": r["score"], "acc": bool(r["acc"]), "pred": r["pred"]})

    for s, g in ISSUE_AND_REFERENCE:
        score(s, g, False)
    for s, g in STRICT:
        score(s, g, True)
    for _ in range(360):
        s, value = random_solution(rng)
        # Half the golds are the value itself or a plain variant, so that positives are common.
        r = rng.random()
        if r < 0.35:
            g = value.strip()
        elif r < 0.5:
            g = m.normalize_final_answer(value)
        else:
            g = rng.choice(GOLDS)
        score(s, g, False)
    # The 300-character window: an answer line that starts just before or after the cut.
    for k in range(20):
        tail = "x" * (280 + 2 * k)
        score("Answer: 42\n" + tail[: rng.randint(250, 320)], "42", False)
        score(FILLER * 4 + "Answer: 17 and more text " + "y" * (k * 7), "17and", False)
    for _ in range(60):
        s, value = random_solution(rng)
        s = s + " \\boxed{" + value + "}" + " " * rng.randint(0, 110)
        g = value if rng.random() < 0.6 else rng.choice(GOLDS)
        score(s, g, True)
    # gt_need_extract=True (our `gold_in_box`).
    for s, g in [("Answer: 42", "\\boxed{42}"), ("Answer: 1,000", "so \\boxed{1,000}"),
                 ("Answer: 5", "5"), ("Answer: \\frac12", "\\boxed{\\frac12}"),
                 ("Answer: 3", "\\boxed{3"), ("Answer: x", "\\boxed{\\boxed{x}}")]:
        try:
            acc, pred = m.is_correct_minerva(s[-300:], g, gt_need_extract=True)
            out.append({"kind": "gold_in_box", "solution": s, "gt": g, "acc": bool(acc), "pred": pred})
        except Exception as e:  # verl raises on a gold without a balanced box
            out.append({"kind": "gold_in_box", "solution": s, "gt": g, "error": type(e).__name__})
    for s in NORMALIZE + [v for v in VALUES] + GOLDS:
        out.append({"kind": "normalize", "input": s, "output": m.normalize_final_answer(s)})
    for row in out:
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
