#!/usr/bin/env python3
"""Parity cases for rl-verifier's `gsm8k` verifier from verl's own GSM8K scorer
(`verl.utils.reward_score.gsm8k`, verl 0.9.1): for each (response, gold) pair and both methods,
verl's `extract_solution` and `compute_score` (score 1, format_score 0).

Writes `crates/rl-verifier/tests/data/gsm8k_parity.json`. The responses: hand-written cases
(`#### N` with signs, commas, decimals, dots, several answers, no answer, `####N` without the
space, a dollar sign, answers before and after the 300-character clip, multi-byte characters
before the clip point, gold answers with spaces) and 600 seeded random ones mixing words,
numbers, `####`, punctuation and non-ASCII text.

Run from the repository root:
    ~/.cache/rlvr-trl/venv/bin/python tools/verifier/gen_gsm8k_parity.py
"""

import json
import os
import random

from verl.utils.reward_score import gsm8k

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "crates", "rl-verifier", "tests", "data", "gsm8k_parity.json")


def hand_cases():
    pad = "x" * 320
    greek = "λ" * 310
    return [
        ("Natalia sold 48/2 = 24 clips in May.\n#### 72", "72"),
        ("#### 72", "72"),
        ("#### -5", "-5"),
        ("#### 1,234", "1234"),
        ("#### 1,234", "1,234"),
        ("#### 3.50", "3.5"),
        ("#### 3.50", "3.50"),
        ("#### 12\n#### 13", "13"),
        ("#### 12\n#### 13", "12"),
        ("####72", "72"),
        ("#### $72", "72"),
        ("The answer is 72.", "72"),
        ("The answer is 72. #### .", "72"),
        ("no numbers at all", "3"),
        ("", "0"),
        (".", "0"),
        ("... . ..", "0"),
        ("1, 2, 3.", "3."),
        ("-", "0"),
        ("#### -", "0"),
        ("#### 7" + pad, "7"),
        (pad + "#### 7", "7"),
        ("#### 9 " + greek, "9"),
        (greek + " #### 9", "9"),
        ("answer 5 and then 6,", "6,"),
        ("#### 10", " 10"),
        ("#### 10 ", "10"),
        ("#### 0x1F", "0"),
        ("#### 1e5", "1"),
        ("## 4 ### 5 #### 6 ##### 7", "7"),
        ("#### ７", "7"),
    ]


def random_cases(rng, n):
    pieces = ["the", "answer", "is", "####", "#### ", "=", "+", "-", ",", ".", "$", "\n",
              "total", "apples", "λ", "日本", "🎉", " ", "  "]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(0, 30)):
            r = rng.random()
            if r < 0.35:
                parts.append(str(rng.choice([rng.randint(0, 99), rng.randint(100, 99999),
                                             -rng.randint(1, 50)])))
                if rng.random() < 0.2:
                    parts.append(rng.choice([".5", ",000", ".", ","]))
            else:
                parts.append(rng.choice(pieces))
            if rng.random() < 0.5:
                parts.append(" ")
        if rng.random() < 0.2:
            parts.insert(0, "word " * rng.randint(40, 80))
        text = "".join(parts)
        gold = str(rng.choice([rng.randint(0, 99), rng.randint(100, 99999)]))
        if rng.random() < 0.4:
            gold = (gsm8k.extract_solution(text, rng.choice(["strict", "flexible"])) or gold)
        out.append((text, gold))
    return out


def main():
    rng = random.Random(58)
    cases = []
    for response, gold in hand_cases() + random_cases(rng, 600):
        row = {"response": response, "gold": gold}
        for method in ("strict", "flexible"):
            row[method] = {"extracted": gsm8k.extract_solution(response, method),
                           "score": gsm8k.compute_score(response, gold, method=method)}
        cases.append(row)
    with open(OUT, "w") as f:
        json.dump({"generated_by": "tools/verifier/gen_gsm8k_parity.py",
                   "reference": "verl 0.9.1 verl/utils/reward_score/gsm8k.py",
                   "cases": cases}, f, ensure_ascii=False, indent=0)
    correct = sum(c[m]["score"] == 1 for c in cases for m in ("strict", "flexible"))
    print(f"{len(cases)} cases, {correct} correct verdicts of {2 * len(cases)}")


if __name__ == "__main__":
    main()
