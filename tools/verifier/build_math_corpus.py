#!/usr/bin/env python3
"""Build the `math` verifier's labelled corpus: crates/rl-verifier/tests/data/math_corpus.jsonl.

Every case is (gold, response, expected) plus `why`, the mathematical justification of the label
(or the convention it follows, stated as such), and `mv`, the verdict of HF math-verify 0.9.0
(`verify(parse("$" + gold + "$"), parse(response))`, default configs), plus `mv_math`, its verdict
on the bare answer wrapped in `$…$` (separating its extraction from its comparison), recorded so
that the disagreements between our verifier, math-verify and the truth can be listed
(docs/verifier.md).
The labels never come from our verifier.

Usage: python3 tools/verifier/build_math_corpus.py > crates/rl-verifier/tests/data/math_corpus.jsonl
       (pip install math-verify==0.9.0; pass --no-mv to skip math-verify and write mv = null)
Deterministic: the generated families use random.Random(17).
"""
import json
import random
import sys

# ---------------------------------------------------------------------------------------------
# Response styles (real answer formats: boxed CoT, Minerva, "Answer:" lines, inline math, bare)
# ---------------------------------------------------------------------------------------------
STYLES = {
    "boxed": lambda a: (
        "We simplify step by step and check the result.\n"
        f"Therefore, the final answer is $\\boxed{{{a}}}$."
    ),
    "answer": lambda a: f"Working through the cases gives the value below.\nAnswer: {a}",
    "minerva": lambda a: f"Final Answer: The final answer is ${a}$. I hope it is correct.",
    "dollar": lambda a: f"Putting everything together, the answer is ${a}$.",
    "bare": lambda a: a,
}
STYLE_ORDER = ["boxed", "dollar", "minerva", "bare", "answer"]

CASES = []


def add(cat, gold, pred, expected, why, style=None, raw=False):
    """Adds a case; `pred` is wrapped in a response style unless `raw`."""
    CASES.append((cat, gold, pred, expected, why, style, raw))


# ---------------------------------------------------------------------------------------------
# 1. DAPO-Math-17K style integer answers (generated, seeded)
# ---------------------------------------------------------------------------------------------
def with_commas(n):
    return f"{n:,}"


rng = random.Random(17)
ints = sorted({rng.randint(2, 999) for _ in range(12)} | {rng.randint(1000, 999_999) for _ in range(10)})
for n in ints:
    add("integer", str(n), str(n), True, f"the same integer {n}", style="boxed")
    add("integer", str(n), str(n), True, f"the same integer {n}", style="answer")
    if n >= 1000:
        add("integer", str(n), with_commas(n), True,
            f"{with_commas(n)} is {n} written with thousands separators", style="dollar")
        add("integer", str(n), with_commas(n).replace(",", "{,}"), True,
            f"{{,}} is LaTeX for a thousands comma: {n}", style="boxed")
    else:
        add("integer", str(n), f"{n}.", True, f"{n} followed by a sentence period", style="bare")
    wrong = n + rng.choice([-1, 1, 10, -10])
    add("integer", str(n), str(wrong), False, f"{wrong} ≠ {n}", style=rng.choice(STYLE_ORDER))
    rev = int(str(n)[::-1])
    if rev != n:
        add("integer", str(n), str(rev), False, f"digits reversed: {rev} ≠ {n}", style="boxed")
for n in [-7, -120, -3]:
    add("integer", str(n), f"{n}", True, f"the same negative integer {n}", style="boxed")
    add("integer", str(n), f"{-n}", False, f"{-n} has the wrong sign", style="boxed")
add("integer", "0", "0", True, "0 = 0", style="boxed")
add("integer", "0", "-0", True, "−0 = 0", style="boxed")

# ---------------------------------------------------------------------------------------------
# 2. Fractions
# ---------------------------------------------------------------------------------------------
F = "fraction"
add(F, "\\frac{1}{2}", "0.5", True, "1/2 = 0.5 exactly")
add(F, "\\frac{1}{2}", "\\dfrac12", True, "\\dfrac12 (malformed, TeX reads \\dfrac{1}{2}) = 1/2")
add(F, "\\frac{1}{2}", "\\tfrac{1}{2}", True, "\\tfrac is \\frac in text style")
add(F, "\\frac{1}{2}", "1/2", True, "plain-text fraction 1/2")
add(F, "\\frac{1}{2}", "\\frac{2}{4}", True, "2/4 reduces to 1/2")
add(F, "\\frac{3}{4}", "0.75", True, "3/4 = 0.75 exactly")
add(F, "\\frac{3}{4}", "\\frac{4}{3}", False, "4/3 is the reciprocal of 3/4")
add(F, "\\frac{1}{3}", "0.333333", True,
    "0.333333 agrees with 1/3 to 6 significant digits (the decimal-answer convention, as math-verify)")
add(F, "\\frac{1}{3}", "0.33", False, "0.33 differs from 1/3 by 1%: too coarse (math-verify agrees)")
add(F, "\\frac{2}{3}", "0.666667", True, "2/3 = 0.6666666…, correctly rounded to 6 digits")
add(F, "\\frac{1}{7}", "0.142857", True, "1/7 = 0.142857142857…, 6 significant digits")
add(F, "\\frac{1}{7}", "0.142", False, "0.142 has only 3 correct digits of 1/7")
add(F, "\\frac{1}{6}", "0.1667", False, "1/6 rounded to 4 digits; fewer than the 6 required")
add(F, "-\\frac{1}{2}", "\\frac{-1}{2}", True, "(−1)/2 = −(1/2)")
add(F, "-\\frac{1}{2}", "\\frac{1}{-2}", True, "1/(−2) = −1/2")
add(F, "-\\frac{1}{2}", "\\frac{1}{2}", False, "sign differs")
add(F, "\\frac{22}{7}", "\\pi", False, "22/7 − π ≈ 0.00126: an approximation, not equal")
add(F, "\\frac{5}{6}", "\\frac{10}{12}", True, "10/12 reduces to 5/6")
add(F, "\\dfrac{5}{2}", "2.5", True, "5/2 = 2.5")
add(F, "\\dfrac{5}{2}", "\\frac{2}{5}", False, "2/5 ≠ 5/2")
add(F, "\\frac{9}{4}", "2\\frac{1}{4}", True, "2\\frac{1}{4} typesets as the mixed number 2¼ = 9/4")
add(F, "-\\frac{7}{2}", "-3\\frac{1}{2}", True, "−3½ = −(3 + 1/2) = −7/2")
add(F, "\\frac{1}{2}", "2 \\cdot \\frac{1}{4}", True, "an explicit product: 2·(1/4) = 1/2")
add(F, "\\frac{1}{2004!}", "\\frac{1}{2006!}", False,
    "2006! = 2006·2005·2004!, so 1/2006! = (1/2004!)/4022030 ≠ 1/2004! (math-verify false positive, issue #14)")
add(F, "\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}", False,
    "1/2^98 = 2·(1/2^99) (math-verify false positive, issue #14)")
add(F, "\\frac{1}{2^{99}}", "2^{-99}", True, "2^(−99) = 1/2^99 by definition")
add(F, "\\frac{1}{2004!}", "\\frac{2005 \\cdot 2006}{2006!}", True, "2006! = 2006·2005·2004!")
add(F, "\\frac{x}{2}", "0.5x", True, "x/2 = 0.5·x for every x")
add(F, "\\frac{a}{b}", "a/b", True, "the same quotient")
add(F, "\\frac{a}{b}", "\\frac{b}{a}", False, "b/a ≠ a/b in general")
add(F, "\\frac{1}{2}", "\\frac{1}{2}x", False, "x/2 is not the constant 1/2")
add(F, "\\frac{3}{2}", "1.5", True, "3/2 = 1.5")
add(F, "\\frac{100}{3}", "33.3333", True, "100/3 = 33.33333…, 6 significant digits")
add(F, "\\frac{100}{3}", "33.3", False, "33.3 has 3 significant digits of 33.333…")

# ---------------------------------------------------------------------------------------------
# 3. Radicals
# ---------------------------------------------------------------------------------------------
R = "radical"
add(R, "\\sqrt{8}", "2\\sqrt{2}", True, "√8 = √(4·2) = 2√2")
add(R, "2\\sqrt{2}", "\\sqrt{8}", True, "2√2 = √8")
add(R, "\\sqrt{2}", "\\frac{2}{\\sqrt{2}}", True, "2/√2 = √2")
add(R, "\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", True, "1/√2 = √2/2 (rationalised)")
add(R, "\\sqrt{3}", "1.732", False, "1.732 has 4 significant digits of √3 = 1.7320508…")
add(R, "\\sqrt{3}", "1.7320508", True, "√3 = 1.73205080757…; 8 correct digits")
add(R, "4", "4\\sqrt(2)", False,
    "4\\sqrt(2) means 4√2 ≈ 5.657 ≠ 4 (math-verify parses it as 4: issue #41)")
add(R, "\\sqrt[3]{27}", "3", True, "3³ = 27")
add(R, "\\sqrt[3]{-8}", "-2", True, "(−2)³ = −8 (real cube root)")
add(R, "\\sqrt[4]{16}", "2", True, "2⁴ = 16")
add(R, "\\sqrt[3]{2}", "2^{1/3}", True, "the cube root is the 1/3 power")
add(R, "\\sqrt[3]{2}", "\\sqrt{2}", False, "2^(1/3) ≈ 1.26 ≠ 2^(1/2) ≈ 1.414")
add(R, "3\\sqrt{5}", "\\sqrt{45}", True, "√45 = √(9·5) = 3√5")
add(R, "\\sqrt{12}", "3\\sqrt{2}", False, "√12 = 2√3 ≈ 3.464 ≠ 3√2 ≈ 4.243")
add(R, "2+\\sqrt{3}", "\\sqrt{3}+2", True, "addition commutes")
add(R, "\\frac{1+\\sqrt{5}}{2}", "\\frac{1}{2}+\\frac{\\sqrt5}{2}", True, "distribute the division")
add(R, "\\sqrt2", "\\sqrt{2}", True, "\\sqrt2 is TeX for \\sqrt{2}")
add(R, "5\\sqrt{2}", "\\sqrt{50}", True, "√50 = 5√2")
add(R, "\\frac{\\sqrt{3}}{2}", "\\dfrac{\\sqrt 3}{2}", True, "same expression, \\dfrac spelling")
add(R, "\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{2}}{2}", False, "√3/2 ≈ 0.866 ≠ √2/2 ≈ 0.707")
add(R, "6\\sqrt{6}", "\\sqrt{216}", True, "216 = 36·6")
add(R, "\\sqrt{\\frac{4}{9}}", "\\frac{2}{3}", True, "(2/3)² = 4/9")
add(R, "\\left(-\\frac{1}{2}, \\frac{\\sqrt{3}}{2}\\right)", "(-0.5, \\frac{\\sqrt3}{2})", True,
    "same point: −1/2 = −0.5")

# ---------------------------------------------------------------------------------------------
# 4. Powers, π, e, logarithms, scientific notation
# ---------------------------------------------------------------------------------------------
P = "power_const"
add(P, "2^{10}", "1024", True, "2^10 = 1024")
add(P, "1024", "2^{10}", True, "2^10 = 1024")
add(P, "2^{10}", "1000", False, "1000 ≠ 1024")
add(P, "3^{4}", "81", True, "3^4 = 81")
add(P, "\\pi", "3.14", False, "3.14 has 3 significant digits of π = 3.14159…")
add(P, "\\pi", "3.14159265", True, "π = 3.14159265358…; 9 correct digits")
add(P, "2\\pi", "\\pi \\cdot 2", True, "multiplication commutes")
add(P, "\\frac{\\pi}{2}", "\\frac{1}{2}\\pi", True, "π/2 = (1/2)π")
add(P, "\\pi^2", "\\pi\\pi", True, "implicit product π·π")
add(P, "\\frac{\\pi}{3}", "\\frac{\\pi}{6}", False, "π/3 = 2·(π/6)")
add(P, "e^2", "\\mathrm{e}^2", True, "\\mathrm{e} is Euler's number")
add(P, "e", "2.718281828", True, "e = 2.718281828459…")
add(P, "1-\\frac{1}{e}", "1+\\frac{1}{e}", False, "they differ by 2/e ≈ 0.736")
add(P, "1-\\frac{1}{\\mathrm{e}}", "1+\\frac{1}{\\mathrm{e}}", False,
    "they differ by 2/e (math-verify parses both as 1: false positive, issue #14)")
add(P, "e^{-1}", "\\frac{1}{e}", True, "e^(−1) = 1/e")
add(P, "\\ln 8", "3\\ln 2", True, "ln 8 = ln 2³ = 3 ln 2")
add(P, "\\log_2 8", "3", True, "2³ = 8")
add(P, "\\log_{3} 81", "4", True, "3⁴ = 81")
add(P, "\\log_2 10", "\\frac{\\ln 10}{\\ln 2}", True, "change of base")
add(P, "e^{\\ln 5}", "5", True, "exp and ln are inverse")
add(P, "\\log_2 9", "2\\log_2 3", True, "log 9 = log 3² = 2 log 3")
add(P, "\\log_2 9", "3", False, "2³ = 8 ≠ 9")
add(P, "10^{-3}", "0.001", True, "10^(−3) = 0.001")
add(P, "1.5\\times 10^{3}", "1500", True, "1.5·1000 = 1500")
add(P, "1.5 \\times 10^{3}", "1.5e3", True, "1.5e3 is scientific notation for 1500")
add(P, "6.02\\times10^{23}", "6.02 \\times 10^{22}", False, "the exponents differ: a factor 10")
add(P, "\\frac{\\pi}{2006!}", "\\frac{\\pi}{2004!}", False,
    "π/2004! = 4022030·π/2006!; the values differ by a factor 4022030 (math-verify: true, both underflow)")
add(P, "(-1)^{2023}", "-1", True, "an odd power of −1")
add(P, "2^{2^{3}}", "256", True, "2^(2^3) = 2^8 = 256 (powers associate to the right)")
add(P, "0.000123", "1.23\\times10^{-4}", True, "1.23·10^(−4) = 0.000123")
add(P, "0.000123", "1.24\\times10^{-4}", False, "1.24·10^(−4) = 0.000124")
add(P, "100", "1e2", True, "1e2 = 100")
add(P, "\\sqrt{2}^{2}", "2", True, "(√2)² = 2")
add(P, "\\sin\\frac{\\pi}{6}", "\\frac{1}{2}", True, "sin 30° = 1/2")
add(P, "\\cos\\frac{\\pi}{3}", "0.5", True, "cos 60° = 1/2")
add(P, "\\tan\\frac{\\pi}{4}", "1", True, "tan 45° = 1")
add(P, "\\sin(\\pi)", "0", True, "sin π = 0")
add(P, "\\arctan 1", "\\frac{\\pi}{4}", True, "tan(π/4) = 1")
add(P, "\\cos\\frac{\\pi}{6}", "\\frac{1}{2}", False, "cos 30° = √3/2, not 1/2")

# ---------------------------------------------------------------------------------------------
# 5. Decimals and separators
# ---------------------------------------------------------------------------------------------
D = "decimal"
add(D, "1000000", "1,000,000", True, "thousands separators")
add(D, "1000000", "10^6", True, "10^6 = 1,000,000")
add(D, "10000", "10,\\!000", True, "TeX thousands comma with negative thin space")
add(D, "0.25", ".25", True, ".25 = 0.25")
add(D, "2.50", "2.5", True, "trailing zero")
add(D, "3.0", "3", True, "3.0 = 3")
add(D, "0.1", "0.10", True, "trailing zero")
add(D, "0.1", "0.01", False, "0.01 = 0.1/10")
add(D, "18.90", "\\$18.9", True, "dollar amount 18.90 = 18.9 (\\$ is the dollar sign)")
add(D, "3.14", "3.15", False, "different decimals")
add(D, "2.718", "2.7180", True, "trailing zero")
add(D, "1.05", "1.5", False, "1.05 ≠ 1.5")
add(D, "-0.5", "-\\frac{1}{2}", True, "−1/2 = −0.5")
add(D, "123.456", "123.456", True, "identical")
add(D, "123.456", "123.465", False, "digits transposed")
add(D, "\\frac{1}{3}", "0.\\overline{3}", True, "0.333… = 3/9 = 1/3")
add(D, "\\frac{1}{6}", "0.1\\overline{6}", True, "0.1666… = (16 − 1)/90 = 1/6")
add(D, "\\frac{1}{3}", "0.\\overline{30}", False, "0.3030… = 30/99 = 10/33")

# ---------------------------------------------------------------------------------------------
# 6. Percentages
# ---------------------------------------------------------------------------------------------
C = "percent"
add(C, "10\\%", "0.1", True, "10% = 10/100 = 0.1")
add(C, "10\\%", "10", True, "convention: a percentage answer also accepts the bare number of percent (math-verify too)")
add(C, "25\\%", "\\frac14", True, "25% = 1/4")
add(C, "25\\%", "25", True, "convention: the bare number of percent")
add(C, "50\\%", "5", False, "5 is neither 50 nor 0.5")
add(C, "12.5\\%", "0.125", True, "12.5/100 = 0.125")
add(C, "12.5\\%", "\\frac{1}{8}", True, "12.5% = 1/8")
add(C, "30", "30\\%", True, "convention: 30% answers a question whose gold is 30 (percent)")
add(C, "0.3", "30\\%", True, "30% = 0.3")
add(C, "20\\%", "25\\%", False, "20 ≠ 25")
add(C, "40\\%", "40 \\%", True, "spacing")

# ---------------------------------------------------------------------------------------------
# 7. Units, degrees, text
# ---------------------------------------------------------------------------------------------
U = "units_text"
add(U, "10", "10 \\text{ cm}", True, "unit dropped: 10 cm")
add(U, "10", "10\\text{ meters}", True, "unit dropped")
add(U, "5", "5 \\text{ dollars}", True, "unit dropped")
add(U, "5", "\\$5", True, "dollar sign dropped")
add(U, "12", "12^\\circ", True, "degree mark dropped")
add(U, "12", "12^{\\circ}", True, "degree mark dropped")
add(U, "90", "90°", True, "degree sign dropped")
add(U, "3", "3 \\text{ hours}", True, "unit dropped")
add(U, "3", "4 \\text{ hours}", False, "4 ≠ 3")
add(U, "20", "20 \\mbox{ inches}", True, "unit dropped (\\mbox)")
add(U, "16", "16 \\text{ cm}^2", True, "squared unit dropped")
add(U, "13", "\\text{13}", True, "a number inside \\text (math-verify issue #37)")
add(U, "\\text{13}", "13", True, "a number inside \\text")
add(U, "7", "\\textbf{7}", True, "bold 7")
add(U, "\\text{Monday}", "Monday", True, "same word")
add(U, "\\text{Monday}", "\\text{Tuesday}", False, "different days")
add(U, "\\text{(A)}", "A", True, "choice A")
add(U, "\\text{(B)}", "A", False, "choice A is not B")
add(U, "\\text{east}", "\\text{East}", True, "same word, case differs")
add(U, "\\text{yes}", "Yes", True, "same word")
add(U, "\\text{odd}", "\\text{even}", False, "different words")
add(U, "25", "25\\text{ square units}", True, "unit dropped")
add(U, "6", "6 \\text{ ways}", True, "filler word dropped")
add(U, "12", "12 \\text{ hundred}", False, "12 hundred is 1200, not 12 (a number word is not a unit)")
add(U, "5", "\\text{not } 5", False, "the answer says it is not 5")
add(U, "50\\%", "50 \\text{ percent}", True, "50 percent = 50%")

# ---------------------------------------------------------------------------------------------
# 8. Assignments and equations
# ---------------------------------------------------------------------------------------------
E = "equation"
add(E, "x=5", "5", True, "x = 5 gives the value 5")
add(E, "5", "x=5", True, "the assignment x = 5 states the value 5")
add(E, "5", "x = 6", False, "6 ≠ 5")
add(E, "k = 7", "7", True, "the value of k")
add(E, "y = 2x+3", "y = 3 + 2x", True, "same line, terms reordered")
add(E, "y=2x+3", "2x+3", True, "the right-hand side of y = 2x + 3")
add(E, "2x+4y-3=0", "y=-\\frac{1}{2}x+\\frac34", True,
    "y = −x/2 + 3/4 ⇔ 4y = −2x + 3 ⇔ 2x + 4y − 3 = 0 (math-verify issue #26)")
add(E, "x^2+y^2=1", "y^2 + x^2 = 1", True, "same circle")
add(E, "x^2+y^2=1", "x^2+y^2=2", False, "different radius")
add(E, "y = 2x + 3", "y = 2x - 3", False, "different intercept")
add(E, "3x+4y+14=0", "3x-y+13=0", False, "different lines (math-verify issue #60 analogue)")
add(E, "2x-y=1", "4x-2y=2", True, "both sides doubled: same line")
add(E, "2x-y=1", "4x-2y=1", False, "parallel but different lines")
add(E, "n=2,3,4", "n=1,2,3", False, "different solution sets (math-verify fixed this)")
add(E, "5", "2+3=5", True, "a computation chain ending in 5")
add(E, "5", "x = 2 + 3 = 5", True, "an assignment chain ending in 5")
add(E, "x = 3", "x = 3.0", True, "3.0 = 3")
add(E, "x = -1", "x = 1", False, "sign differs")

# ---------------------------------------------------------------------------------------------
# 9. Tuples, sets, intervals, ±, matrices
# ---------------------------------------------------------------------------------------------
S = "structure"
add(S, "(1,2)", "(1, 2)", True, "same ordered pair")
add(S, "(1,2)", "(2,1)", False, "an ordered pair: order matters")
add(S, "(1,2)", "\\left(1,2\\right)", True, "\\left/\\right are sizing only")
add(S, "(3,-4)", "(3, -4)", True, "same pair")
add(S, "(0,\\frac12)", "(0, 0.5)", True, "1/2 = 0.5")
add(S, "(1,2,3)", "(1,3,2)", False, "an ordered triple: order matters")
add(S, "(1,2,3)", "(1,2)", False, "different lengths")
add(S, "\\{1,2\\}", "\\{2,1\\}", True, "sets are unordered")
add(S, "\\{1,3\\}\\cup\\{2,4\\}", "\\{1,2,3,4\\}", True, "the union of {1,3} and {2,4}")
add(S, "1, 2, 3", "3, 2, 1", True, "a list of all solutions is an unordered set")
add(S, "1,2,3", "1, 2", False, "a solution is missing")
add(S, "-2, 3", "3, -2", True, "unordered solutions")
add(S, "\\{1,2\\}", "\\{1,2,3\\}", False, "an extra element")
add(S, "[1,2)", "[1, 2)", True, "same interval")
add(S, "[1,2)", "(1,2]", False, "the closed end differs")
add(S, "(1,2)", "1<x<2", True,
    "{x : 1 < x < 2} is the open interval (1, 2) (math-verify: false, by its deliberate asymmetry)")
add(S, "1<x<2", "(1,2)", True, "the open interval (1, 2) is {x : 1 < x < 2}")
add(S, "[0,\\infty)", "[0, \\infty)", True, "same interval")
add(S, "[0,\\infty)", "x \\ge 0", True, "{x : x ≥ 0} = [0, ∞)")
add(S, "(-\\infty, 3)", "x<3", True, "{x : x < 3} = (−∞, 3)")
add(S, "(-\\infty,3]", "x<3", False, "3 belongs to (−∞, 3] but not to {x < 3}")
add(S, "(-\\infty, 1) \\cup (2, \\infty)", "(2,\\infty)\\cup(-\\infty,1)", True, "union is commutative")
add(S, "(-\\infty,1)\\cup(2,\\infty)", "(-\\infty, 1]\\cup(2,\\infty)", False, "1 is included on one side only")
add(S, "[2,5]", "[2, 5]", True, "same interval")
add(S, "[2,5]", "(2,5)", False, "closed vs open")
add(S, "(0,1]", "0 < x \\le 1", True, "{x : 0 < x ≤ 1} = (0, 1]")
add(S, "\\pm 2021", "2021", False, "±2021 denotes two values; 2021 gives only one (math-verify agrees)")
add(S, "2 \\pm \\sqrt{3}", "2+\\sqrt{3}, 2-\\sqrt{3}", True, "the two values of 2 ± √3")
add(S, "\\pm 3", "3, -3", True, "±3 = {3, −3}")
add(S, "\\pm 3", "-3, 3", True, "order of the two values does not matter")
add(S, "x = \\pm 2", "x = 2, x = -2", True, "both roots listed")
add(S, "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", True, "same vector")
add(S, "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 4 & 3 \\end{pmatrix}", False,
    "entries differ")
add(S, "\\begin{pmatrix} 1/2 \\\\ 2 \\end{pmatrix}", "\\begin{pmatrix} 0.5 \\\\ 2 \\end{pmatrix}", True, "1/2 = 0.5")
add(S, "\\begin{pmatrix} -1 \\\\ 3 \\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 3 \\end{pmatrix}", False, "sign of the first entry")
add(S, "\\emptyset", "\\varnothing", True, "both denote the empty set")
add(S, "\\emptyset", "\\{0\\}", False, "{0} has one element")
add(S, "\\{1, 2\\}", "\\{1, 2, 2\\}", True, "a set has no repeated elements: {1,2,2} = {1,2}")

# ---------------------------------------------------------------------------------------------
# 10. Expressions with free variables
# ---------------------------------------------------------------------------------------------
V = "variables"
add(V, "x^2+2x+1", "(x+1)^2", True, "(x+1)² = x² + 2x + 1")
add(V, "(x+1)^2", "x^2+1", False, "missing the 2x term")
add(V, "2x", "x+x", True, "x + x = 2x")
add(V, "\\frac{x^2-1}{x-1}", "x+1", True, "x² − 1 = (x − 1)(x + 1); equal wherever defined (x ≠ 1)")
add(V, "a^2-b^2", "(a-b)(a+b)", True, "difference of squares")
add(V, "a^2-b^2", "(a-b)^2", False, "(a − b)² = a² − 2ab + b²")
add(V, "\\frac{1}{x}+\\frac{1}{y}", "\\frac{x+y}{xy}", True, "common denominator")
add(V, "x^3", "x \\cdot x \\cdot x", True, "definition of the cube")
add(V, "3xy", "3yx", True, "multiplication commutes")
add(V, "\\sin^2 x + \\cos^2 x", "1", True, "Pythagorean identity")
add(V, "\\sin(2x)", "2\\sin x\\cos x", True, "double-angle formula")
add(V, "\\cos(2x)", "2\\cos^2 x - 1", True, "double-angle formula")
add(V, "\\cos(2x)", "2\\sin x\\cos x", False, "that is sin 2x")
add(V, "e^{x+y}", "e^x e^y", True, "exponential of a sum")
add(V, "\\sqrt{x}", "x^{1/2}", True, "the square root is the 1/2 power")
add(V, "\\sqrt{x}", "x^{1/3}", False, "cube root ≠ square root")
add(V, "2x+1", "2y+1", False, "different variable")
add(V, "x^2", "|x|^2", True, "|x|² = x² for real x")
add(V, "|x|", "x", False, "|x| ≠ x for x < 0")
add(V, "\\frac{n(n+1)}{2}", "\\frac{n^2+n}{2}", True, "expand n(n+1)")
add(V, "\\frac{n(n+1)}{2}", "\\frac{n(n-1)}{2}", False, "differ by n")
add(V, "2^{n+1}", "2 \\cdot 2^n", True, "2^(n+1) = 2·2^n")
add(V, "\\binom{n}{2}", "\\frac{n(n-1)}{2}", True, "C(n,2) = n(n−1)/2")
add(V, "x^2-5x+6", "(x-2)(x-3)", True, "(x−2)(x−3) = x² − 5x + 6")
add(V, "x^2-5x+6", "(x+2)(x+3)", False, "(x+2)(x+3) = x² + 5x + 6")
add(V, "3t^2", "3t^{2}", True, "same expression")
add(V, "\\frac{a+b}{2}", "\\frac{a}{2}+\\frac{b}{2}", True, "distribute")

# ---------------------------------------------------------------------------------------------
# 11. Combinatorics / number-theory style exact answers
# ---------------------------------------------------------------------------------------------
N = "exact"
add(N, "120", "5!", True, "5! = 120")
add(N, "\\binom{10}{3}", "120", True, "C(10,3) = 120")
add(N, "\\binom{10}{3}", "\\binom{10}{7}", True, "symmetry C(n,k) = C(n,n−k)")
add(N, "\\binom{10}{3}", "720", False, "720 = 10·9·8 counts ordered triples")
add(N, "\\frac{10!}{3!7!}", "120", True, "10!/(3!·7!) = 120")
add(N, "2^{100}", "1267650600228229401496703205376", True, "2^100 written out")
add(N, "2^{100}", "1267650600228229401496703205377", False, "2^100 + 1")
add(N, "\\frac{1}{2^{100}}", "2^{-100}", True, "definition of a negative power")
add(N, "3^{200}", "9^{100}", True, "9^100 = (3²)^100 = 3^200")
add(N, "3^{200}", "9^{101}", False, "9^101 = 3^202")
add(N, "1000!", "1000!", True, "identical")
add(N, "\\frac{999!}{1000!}", "\\frac{1}{1000}", True, "1000! = 1000·999!")
add(N, "\\frac{999!}{1000!}", "\\frac{1}{999}", False, "1000! = 1000·999!, not 999·999!")

# ---------------------------------------------------------------------------------------------
# 12. Extraction: where the answer sits in a realistic response
# ---------------------------------------------------------------------------------------------
X = "extraction"
cot = "Let x be the number of apples. Then 2x + 3 = 87, so 2x = 84 and x = 42. "
add(X, "42", cot + "Therefore, the final answer is $\\boxed{42}$.", True, "boxed 42", raw=True)
add(X, "42", "First guess: \\boxed{41}. Wait, I made an arithmetic error. " + cot + "\\boxed{42}", True,
    "the last box holds the final answer 42", raw=True)
add(X, "42", cot + "\\boxed{42}. Hmm, actually recheck: the answer is \\boxed{43}.", False,
    "the final (last) box says 43", raw=True)
add(X, "42", cot + "So \\fbox{42}.", True, "\\fbox is a box too", raw=True)
add(X, "\\frac{\\sqrt{3}}{2}", "The height is \\boxed{\\frac{\\sqrt{3}}{2}}.", True, "nested braces in a box", raw=True)
add(X, "42", cot + "\nFinal Answer: The final answer is $42$. I hope it is correct.", True, "Minerva format", raw=True)
add(X, "42", cot + "\n**Answer:** 42", True, "markdown answer line", raw=True)
add(X, "42", cot + "\n\\[ x = 42 \\]", True, "display math with an assignment", raw=True)
add(X, "42", "The count is \\( 42 \\).", True, "inline \\( \\) math", raw=True)
add(X, "42", "The answer is 42.", True, "plain sentence", raw=True)
add(X, "42", "The answer is 41.", False, "41 ≠ 42", raw=True)
add(X, "42", "I counted them one by one and got 42 apples", True, "final number 42", raw=True)
add(X, "73", "The total is **73**.", True, "markdown bold 73 (math-verify issue #76)", raw=True)
add(X, "42", "", False, "an empty response has no answer", raw=True)
add(X, "42", "I don't know how to solve this.", False, "no answer given", raw=True)
add(X, "\\frac{1}{2}", "So the probability is $\\frac{1}{2}$, i.e. $50\\%$ of the time... wait it is $\\frac13$.",
    False, "the last stated value is 1/3", raw=True)
add(X, "\\frac{1}{2}", "The probability is $\\boxed{\\dfrac12}$.", True, "\\dfrac12 = 1/2 in a box", raw=True)
add(X, "(1,2)", "The point is $\\boxed{(1,2)}$", True, "boxed pair", raw=True)
add(X, "\\{1,2,3,4\\}", "The solution set is $\\boxed{\\{1,2,3,4\\}}$.", True, "boxed set", raw=True)
add(X, "2\\sqrt{2}", "So $d = \\boxed{2\\sqrt{2}}$.", True, "boxed radical", raw=True)
add(X, "0.5", "The answer is $\\boxed{0.5}$.", True, "boxed decimal", raw=True)
add(X, "42", "$$\\boxed{42}$$", True, "box in display math", raw=True)
add(X, "-3", "Thus $x = \\boxed{-3}$.", True, "negative boxed", raw=True)
add(X, "10", "The length is $\\boxed{10\\text{ cm}}$.", True, "unit inside the box", raw=True)
add(X, "12", "Each angle is $12^\\circ$, so the answer is $\\boxed{12^\\circ}$.", True, "degrees in a box", raw=True)
add(X, "1000", "Answer: 1,000", True, "answer line with separators", raw=True)
add(X, "5", "Answer: x = 5", True, "answer line with an assignment", raw=True)
add(X, "7", "The answer is \\boxed{7}", True, "plain boxed (verl's dapo rejects this one)", raw=True)
add(X, "3", "Answer: 3.", True, "a trailing period is punctuation (verl's dapo rejects this one)", raw=True)
add(X, "\\frac{1}{2}", "Answer: \\dfrac{1}{2}", True, "\\dfrac = \\frac (verl's dapo rejects this one)", raw=True)

# ---------------------------------------------------------------------------------------------
# 13. Near misses
# ---------------------------------------------------------------------------------------------
M = "near_miss"
add(M, "2", "-2", False, "sign")
add(M, "0", "0.0001", False, "0.0001 ≠ 0")
add(M, "100", "1000", False, "a factor 10")
add(M, "3", "3x", False, "3x is not a constant")
add(M, "\\infty", "-\\infty", False, "opposite infinities")
add(M, "\\infty", "\\infty", True, "same")
add(M, "1", "0.99", False, "0.99 ≠ 1")
add(M, "\\frac{1}{1000000}", "\\frac{1}{1000001}", False, "different denominators (relative gap 1e-6: exact arithmetic needed)")
add(M, "1000000", "1000001", False, "differ by 1")
add(M, "10^{20}", "10^{20}+1", False, "differ by 1 at 10^20 (beyond double precision)")
add(M, "\\sqrt{2}", "1.4142135623730951", True, "√2 to double precision")
add(M, "2^{0.5}", "\\sqrt{2}", True, "2^0.5 = √2")
add(M, "e^{\\pi}", "\\pi^{e}", False, "e^π ≈ 23.14 ≠ π^e ≈ 22.46")
add(M, "\\frac{1}{3}", "\\frac{1}{3.0001}", False, "3.0001 ≠ 3")


def run_mv(parse, verify, gold, response):
    try:
        return bool(verify(parse(gold), parse(response)))
    except Exception as e:  # recorded, never raised
        return f"error: {type(e).__name__}"


def main():
    use_mv = "--no-mv" not in sys.argv
    if use_mv:
        from math_verify import parse, verify
    rows = []
    for i, (cat, gold, pred, expected, why, style, raw) in enumerate(CASES):
        if raw:
            response = pred
        else:
            style = style or STYLE_ORDER[i % len(STYLE_ORDER)]
            response = STYLES[style](pred)
        mv = mv_math = None
        if use_mv:
            mv = run_mv(parse, verify, f"${gold}$", response)
            # The bare answer in $…$: separates math-verify's extraction from its comparison.
            mv_math = run_mv(parse, verify, f"${gold}$", f"${pred}$") if not raw else mv
        rows.append({"id": i + 1, "category": cat, "gold": gold, "response": response,
                     "expected": expected, "why": why, "mv": mv, "mv_math": mv_math})
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))
    print(f"{len(rows)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
