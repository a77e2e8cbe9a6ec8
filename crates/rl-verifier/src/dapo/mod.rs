//! `dapo`: the behaviour of verl's `math_dapo` scorer (the reward DAPO and DA3PO were trained
//! with), reproduced character for character.
//!
//! Reference: `verl/utils/reward_score/math_dapo.py` (volcengine/verl, commit `012542c`), itself
//! adapted from lm-evaluation-harness' Minerva MATH utilities. Parity is tested against
//! fixtures produced by running that file (`tools/verifier/gen_dapo_parity.py`).
//!
//! Behaviour of `compute_score(solution, gt)`:
//! 1. keep the last 300 characters (Unicode scalar values, as Python slices) of the solution;
//! 2. default ("Minerva") mode: the prediction is the capture of the **last** match of
//!    `(?i)Answer\s*:\s*([^\n]+)` (or `[INVALID]` when there is none); prediction and gold both
//!    go through [`normalize_final_answer`]; correct iff the two strings are equal;
//! 3. strict-box mode: the content of the last balanced `\boxed{…}` in the last 100 characters,
//!    compared unnormalised with the gold string.
//!
//! Python semantics that differ from Rust's defaults and are reproduced here: `\s` and
//! `str.strip()` use `str.isspace()` (which includes U+001C..U+001F), and the digit test is
//! `str.isdigit()` (Unicode Numeric_Type Decimal or Digit, e.g. `²`); both tables are generated
//! from CPython by `tools/verifier/gen_pyunicode.py`.

mod pyunicode;

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde::{Deserialize, Serialize};

use crate::budget::Meter;
use crate::{AnswerSource, Budget, ConfigError, Outcome, Side, Verification, Verifier};

/// What verl's scorer reports when no answer was found.
pub const INVALID: &str = "[INVALID]";

/// Characters of the solution that the scorer looks at.
pub const SOLUTION_TAIL_CHARS: usize = 300;
/// Characters (of the 300) that strict-box mode looks at.
pub const STRICT_BOX_TAIL_CHARS: usize = 100;

/// Configuration of the `dapo` verifier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DapoConfig {
    /// verl's `strict_box_verify`: compare the last `\boxed{}` content, unnormalised.
    pub strict_box: bool,
    /// verl's `gt_need_extract` (Minerva mode only): take the gold from its last `\boxed{}`
    /// before normalising; a gold without one is reported as unparseable.
    pub gold_in_box: bool,
    /// Work limits; only `max_input_bytes` matters here (applied to the gold answer: the
    /// response is cut to its last 300 characters before anything else).
    pub budget: Budget,
}

impl DapoConfig {
    /// Validates the configuration and builds the verifier.
    pub fn build(self) -> Result<DapoVerifier, ConfigError> {
        self.budget.validate()?;
        Ok(DapoVerifier { config: self })
    }
}

/// The `dapo` verifier. See the module documentation.
#[derive(Clone, Debug)]
pub struct DapoVerifier {
    config: DapoConfig,
}

impl DapoVerifier {
    /// The configuration.
    pub fn config(&self) -> &DapoConfig {
        &self.config
    }
}

impl Verifier for DapoVerifier {
    fn name(&self) -> &'static str {
        "dapo"
    }

    fn verify(&self, response: &str, gold: &str) -> Verification {
        let meter = Meter::new(self.config.budget);
        if let Err(e) = meter.input(gold.len(), "gold answer") {
            return Verification::new(Outcome::OverBudget { what: e.0 });
        }
        let solution = last_chars(response, SOLUTION_TAIL_CHARS);
        if self.config.strict_box {
            let tail = last_chars(solution, STRICT_BOX_TAIL_CHARS);
            return match last_boxed_content(tail) {
                Some(pred) => Verification {
                    outcome: if pred == gold {
                        Outcome::Correct
                    } else {
                        Outcome::Incorrect
                    },
                    extracted: Some(pred.to_string()),
                    source: Some(AnswerSource::Boxed),
                    score: None,
                },
                None if gold == INVALID => Verification {
                    outcome: Outcome::Correct,
                    extracted: Some(INVALID.to_string()),
                    source: None,
                    score: None,
                },
                None => Verification::new(Outcome::Unparseable {
                    side: Side::Response,
                    reason: "no balanced \\boxed{} in the last 100 characters".into(),
                }),
            };
        }
        let gold_norm = if self.config.gold_in_box {
            match last_boxed_content(gold) {
                Some(inner) => normalize_final_answer(inner),
                None => {
                    return Verification::new(Outcome::Unparseable {
                        side: Side::Gold,
                        reason: "gold_in_box is set but the gold has no balanced \\boxed{}".into(),
                    });
                }
            }
        } else {
            normalize_final_answer(gold)
        };
        match last_answer_line(solution) {
            Some(line) => {
                let pred = normalize_final_answer(line);
                Verification {
                    outcome: if pred == gold_norm {
                        Outcome::Correct
                    } else {
                        Outcome::Incorrect
                    },
                    extracted: Some(pred),
                    source: Some(AnswerSource::AnswerLine),
                    score: None,
                }
            }
            None => {
                let pred = normalize_final_answer(INVALID);
                if pred == gold_norm {
                    // verl compares the placeholder like any prediction.
                    Verification {
                        outcome: Outcome::Correct,
                        extracted: Some(pred),
                        source: None,
                        score: None,
                    }
                } else {
                    Verification::new(Outcome::Unparseable {
                        side: Side::Response,
                        reason: "no `Answer:` line in the last 300 characters".into(),
                    })
                }
            }
        }
    }
}

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// CPython's `str.isspace()` for one character.
pub fn py_isspace(c: char) -> bool {
    in_table(pyunicode::PY_SPACE, c)
}

/// CPython's `str.isdigit()` for one character.
pub fn py_isdigit(c: char) -> bool {
    in_table(pyunicode::PY_DIGIT, c)
}

/// The last `n` characters of `s` (Python's `s[-n:]`).
pub fn last_chars(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

/// The capture of the last match of `(?i)Answer\s*:\s*([^\n]+)` (Python `\s`).
pub fn last_answer_line(solution: &str) -> Option<&str> {
    ANSWER_RE
        .captures_iter(solution)
        .last()
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// verl's `last_boxed_only_string` followed by `remove_boxed`: the text between the last
/// `\boxed{` and the `}` that balances the braces counted from that `{`, or `None` when the
/// braces never balance. Braces are counted raw (`\{` counts), as verl does.
pub fn last_boxed_content(s: &str) -> Option<&str> {
    const OPEN: &str = "\\boxed{";
    let start = s.rfind(OPEN)?;
    let mut depth: i64 = 0;
    for (i, b) in s.as_bytes()[start..].iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[start + OPEN.len()..start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

// Python's `\s` for str patterns (CPython 3.11, Unicode 14.0; see pyunicode.rs).
const PY_S: &str = r"[\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]";

static ANSWER_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)Answer{PY_S}*:{PY_S}*([^\n]+)")).expect("static regex")
});
static DOLLAR_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(.*?)(\$)(.*?)(\$)(.*)").expect("static regex"));
static TEXT_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\\text\{)(.*?)(\})").expect("static regex"));
static TEXTBF_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\\textbf\{)(.*?)(\})").expect("static regex"));
static OVERLINE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\\overline\{)(.*?)(\})").expect("static regex"));
static BOXED_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\\boxed\{)(.*)(\})").expect("static regex"));
static FRAC_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(frac)([^{])(.)").expect("static regex"));
static SQRT_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(sqrt)([^{])").expect("static regex"));

/// Plain substring substitutions, applied in order (verl's `SUBSTITUTIONS`).
const SUBSTITUTIONS: [(&str, &str); 10] = [
    ("an ", ""),
    ("a ", ""),
    (".$", "$"),
    ("\\$", ""),
    ("\\ ", ""),
    (" ", ""),
    ("mbox", "text"),
    (",\\text{and}", ","),
    ("\\text{and}", ","),
    ("\\text{m}", "\\text{}"),
];

/// Substrings deleted, in order (verl's `REMOVED_EXPRESSIONS`).
const REMOVED: [&str; 41] = [
    "square",
    "ways",
    "integers",
    "dollars",
    "mph",
    "inches",
    "hours",
    "km",
    "units",
    "\\ldots",
    "sue",
    "points",
    "feet",
    "minutes",
    "digits",
    "cents",
    "degrees",
    "cm",
    "gm",
    "pounds",
    "meters",
    "meals",
    "edges",
    "students",
    "childrentickets",
    "multiples",
    "\\text{s}",
    "\\text{.}",
    "\\text{\ns}",
    "\\text{}^2",
    "\\text{}^3",
    "\\text{\n}",
    "\\text{}",
    "\\mathrm{th}",
    "^\\circ",
    "^{\\circ}",
    "\\;",
    ",\\!",
    "{,}",
    "\"",
    "\\dots",
];

fn replace_group(re: &Regex, s: &str, f: impl Fn(&Captures<'_>) -> String) -> String {
    re.replace_all(s, |c: &Captures<'_>| f(c)).into_owned()
}

/// verl's `normalize_final_answer`, step for step:
/// 1. keep the text after the last `=`;
/// 2. the substring substitutions and then the removals above, each over the whole string in
///    order (so "area 5" becomes "are5": "a " is removed);
/// 3. keep `$…$` of the first `$` pair on each line, unwrap `\text{}`, `\textbf{}`,
///    `\overline{}` (lazily) and `\boxed{}` (greedily);
/// 4. `\fracab` → `\frac{a}{b}`, `\sqrta` → `\sqrt{a}`; delete `$`;
/// 5. if the string without commas is non-empty and all `str.isdigit()`, drop the commas;
/// 6. strip Python whitespace at both ends.
pub fn normalize_final_answer(answer: &str) -> String {
    let mut s: String = match answer.rfind('=') {
        Some(i) => answer[i + 1..].to_string(),
        None => answer.to_string(),
    };
    for (before, after) in SUBSTITUTIONS {
        if s.contains(before) {
            s = s.replace(before, after);
        }
    }
    for expr in REMOVED {
        if s.contains(expr) {
            s = s.replace(expr, "");
        }
    }
    s = replace_group(&DOLLAR_RE, &s, |c| format!("${}$", &c[3]));
    s = replace_group(&TEXT_RE, &s, |c| c[2].to_string());
    s = replace_group(&TEXTBF_RE, &s, |c| c[2].to_string());
    s = replace_group(&OVERLINE_RE, &s, |c| c[2].to_string());
    s = replace_group(&BOXED_RE, &s, |c| c[2].to_string());
    s = replace_group(&FRAC_RE, &s, |c| format!("frac{{{}}}{{{}}}", &c[2], &c[3]));
    s = replace_group(&SQRT_RE, &s, |c| format!("sqrt{{{}}}", &c[2]));
    s = s.replace('$', "");
    let no_commas = s.replace(',', "");
    if !no_commas.is_empty() && no_commas.chars().all(py_isdigit) {
        s = no_commas;
    }
    s.trim_matches(py_isspace).to_string()
}

/// verl's `compute_score(solution, gt)` in Minerva mode: (+1 or −1, acc, pred).
///
/// A convenience for parity checks; verifiers should use [`DapoVerifier`], whose outcome also
/// separates "no answer line" from "wrong answer".
pub fn compute_score(solution: &str, gold: &str, strict_box: bool) -> (f64, bool, String) {
    let solution = last_chars(solution, SOLUTION_TAIL_CHARS);
    let (acc, pred) = if strict_box {
        let tail = last_chars(solution, STRICT_BOX_TAIL_CHARS);
        let pred = last_boxed_content(tail).unwrap_or(INVALID);
        (pred == gold, pred.to_string())
    } else {
        let pred = normalize_final_answer(last_answer_line(solution).unwrap_or(INVALID));
        (pred == normalize_final_answer(gold), pred)
    };
    (if acc { 1.0 } else { -1.0 }, acc, pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Spot checks measured by running verl's file (algorithms.md §10.3).
    #[test]
    fn normalize_spot_checks() {
        let cases = [
            ("\\frac12", "\\frac{1}{2}"),
            ("\\sqrt2", "\\sqrt{2}"),
            ("1,000", "1000"),
            ("x=\\frac{3}{4}", "\\frac{3}{4}"),
            ("\\text{east}", "east"),
            ("\\$5", "5"),
            ("5\\%", "5\\%"),
            ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
            ("area 5", "are5"),
            ("\\dfrac{3}{4}", "\\dfrac{3}{4}"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_final_answer(input), want, "input {input:?}");
        }
    }

    #[test]
    fn python_character_classes() {
        // Derivation: U+001C..U+001F have bidi class B/S, so CPython's isspace() is true, while
        // they are not Unicode White_Space; '²' has Numeric_Type=Digit, '½' has Numeric.
        assert!(py_isspace('\u{1c}') && !'\u{1c}'.is_whitespace());
        assert!(py_isdigit('²') && !py_isdigit('½') && py_isdigit('٣'));
        assert_eq!(last_chars("abcdef", 2), "ef");
        assert_eq!(last_chars("ab", 5), "ab");
        assert_eq!(last_chars("é€x", 2), "€x");
    }

    #[test]
    fn boxed_content() {
        assert_eq!(
            last_boxed_content("a \\boxed{1} b \\boxed{{2}}"),
            Some("{2}")
        );
        assert_eq!(last_boxed_content("\\boxed{1"), None);
        assert_eq!(last_boxed_content("none"), None);
    }
}
