#!/usr/bin/env python3
"""Reference implementation of the `last_number` verifier's rule, for the test fixture.

Written from the rule as documented in crates/rl-verifier/src/last_number.rs (module docs) and
docs/verifier.md, with Python's `re` for the number grammar and `decimal.Decimal` for the
comparison; it shares no code with the Rust verifier.

    python3 tools/verifier/last_number_ref.py > crates/rl-verifier/tests/data/last_number_cases.json
    python3 tools/verifier/last_number_ref.py --cases other_cases.json   # the same for other inputs

A case is {"name", "response", "gold"}; `response` (and `gold`) is either a string or a
generator {"prefix": P, "repeat": S, "times": N, "suffix": Q}, the string P + S * N + Q (the
Rust test builds the same string), so that megabyte inputs stay out of the fixture. The output
is the case list with "expected" added: "correct", "incorrect", "unparseable_gold" or
"unparseable_response", and "extracted": the final number as written, or null.
"""
import argparse
import json
import re
import sys
from decimal import Decimal

# Unicode White_Space (the property list of PropList.txt).
WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
NUMBER = re.compile(r"-?(?:[0-9]+|[0-9]{1,3}(?:,[0-9]{3})+)(?:\.[0-9]+)?")
WINDOW = 64
SENTENCE_END = ".!"
CLOSERS = "*$)"
BAD_BEFORE = "0123456789.,-"


def build(spec):
    if isinstance(spec, str):
        return spec
    return spec.get("prefix", "") + spec["repeat"] * spec["times"] + spec.get("suffix", "")


def value(number):
    return Decimal(number.replace(",", ""))


def verify(response, gold):
    """(expected outcome, extracted number or None)."""
    g = gold.strip(WHITESPACE)
    if len(g) > WINDOW or NUMBER.fullmatch(g) is None:
        return "unparseable_gold", None
    r = response.rstrip(WHITESPACE)
    window = r[-WINDOW:]
    more_before = len(r) > len(window)
    s = window
    if s and s[-1] in SENTENCE_END:
        s = s[:-1]
    s = s.rstrip(CLOSERS)
    start = next((i for i in range(len(s)) if NUMBER.fullmatch(s[i:])), None)
    if start is None:
        return "unparseable_response", None
    if start > 0 and s[start - 1] in BAD_BEFORE:
        return "unparseable_response", None
    if start == 0 and more_before:
        return "unparseable_response", None
    number = s[start:]
    return ("correct" if value(number) == value(g) else "incorrect"), number


def g(prefix="", repeat="", times=0, suffix=""):
    return {"prefix": prefix, "repeat": repeat, "times": times, "suffix": suffix}


CASES = [
    # The typical replies of a small chat model to "What is 37 + 96? Give only the number."
    ("bare", "133", "133"),
    ("equation", "37 + 96 = 133", "133"),
    ("sentence", "The answer is 133.", "133"),
    ("wrong_equation", "40 + 3 = 53", "43"),
    ("trailing_text", "The answer is 15, but I'm here to help. Let's use", "15"),
    ("bold", "**133**", "133"),
    ("dollars", "$133$", "133"),
    ("bold_period", "**133**.", "133"),
    ("bold_math", "**$133$**", "133"),
    ("parenthesised", "(133)", "133"),
    ("period", "133.", "133"),
    ("bang", "133!", "133"),
    ("equals", "= 133", "133"),
    ("newline_after", "37 + 96 = 133\n\n", "133"),
    ("nbsp_after", "133\u00a0\u3000", "133"),
    ("wrong", "134", "133"),
    ("right_number_then_more", "133 is the answer", "133"),
    ("truncated", "First add the tens: 30 + 90 = 120, then the", "133"),
    ("empty", "", "133"),
    ("only_whitespace", " \n\t ", "133"),
    ("two_periods", "133..", "133"),
    ("period_inside_bold", "**133.**", "133"),
    ("space_before_period", "133 .", "133"),
    ("question_mark", "133?", "133"),
    # Signs
    ("negative", "5 - 12 = -7", "-7"),
    ("negative_wrong_sign", "-7", "7"),
    ("negative_zero", "-0", "0"),
    ("expression_minus", "5-3", "-3"),
    ("double_minus", "--3", "-3"),
    ("unicode_minus", "\u22127", "-7"),
    ("letter_before_minus", "x=-7", "-7"),
    # Decimals
    ("decimal_equal", "133.0", "133"),
    ("decimal_trailing_zeros", "2.50", "2.5"),
    ("decimal_sentence", "It is 0.75.", "0.750"),
    ("decimal_wrong", "1.05", "1.5"),
    ("leading_zeros", "0133", "133"),
    ("leading_dot", ".5", "0.5"),
    ("version_string", "v1.2.3", "2.3"),
    # Thousands commas
    ("commas_response", "The total is 1,234.", "1234"),
    ("commas_gold", "1234", "1,234"),
    ("commas_both_decimal", "12,345,678.90", "12345678.9"),
    ("bad_grouping", "12,34", "34"),
    ("bad_grouping_long", "1234,567", "234567"),
    ("comma_then_space", "15, 16", "16"),
    # Not ASCII digits
    ("fullwidth_digits", "\uff11\uff13\uff13", "133"),
    ("arabic_indic_digits", "\u0661\u0663\u0663", "133"),
    ("superscript", "2\u00b2", "4"),
    ("fullwidth_then_ascii", "\uff11133", "133"),
    # Gold side
    ("gold_padded", "133", "  133\n"),
    ("gold_text", "133", "one hundred"),
    ("gold_plus", "133", "+133"),
    ("gold_empty", "133", ""),
    ("gold_fraction", "1/2", "1/2"),
    ("gold_bad_commas", "1,2345", "1,2345"),
    ("gold_65_digits", "1", "1" * 65),
    ("gold_64_digits", "7" * 64, "7" * 64),
    ("big_numbers_differ", "9" * 50, "9" * 49 + "8"),
    ("big_decimal_equal", "1" * 40 + ".000", "1" * 40),
    # The 64-character window and large inputs
    ("long_text_ends_in_number", g("", "blah ", 200_000, "so 37 + 96 = 133."), "133"),
    ("long_number_at_window_start", g("", "1", 100, ""), "1"),
    ("number_fills_window_exactly", "7" * 64, "7" * 64),
    ("number_longer_than_window", "7" * 65, "7"),
    ("number_one_short_of_window", "x" + "7" * 63, "7" * 63),
    ("trailing_whitespace_megabyte", g("133", " ", 1_000_000, ""), "133"),
    ("punctuation_run", g("133", ".", 100_000, ""), "133"),
    ("closers_past_window", g("133", "*", 70, ""), "133"),
    ("closers_in_window", g("133", "*", 60, ""), "133"),
    ("huge_digits_then_text", g("", "9", 500_000, " done"), "9"),
    ("huge_gold", "133", g("", "1", 1_000_000, "")),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="a JSON list of {name, response, gold}")
    args = parser.parse_args()
    if args.cases:
        with open(args.cases, encoding="utf-8") as f:
            cases = json.load(f)
    else:
        cases = [{"name": n, "response": r, "gold": gd} for n, r, gd in CASES]
    out = []
    for case in cases:
        expected, extracted = verify(build(case["response"]), build(case["gold"]))
        out.append({**case, "expected": expected, "extracted": extracted})
    json.dump(out, sys.stdout, indent=1, ensure_ascii=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
