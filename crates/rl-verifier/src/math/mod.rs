//! `math`: mathematical equivalence of a response's final answer and the gold answer, in the
//! spirit of HF math-verify but in plain Rust, with exact big-rational arithmetic and a budget.
//!
//! Pipeline for `verify(response, gold)`:
//! 1. **Sizes.** Either input longer than `budget.max_input_bytes` → over budget.
//! 2. **Gold first.** The gold's last `\boxed{}` (or the inside of a `$…$` that wraps it, or the
//!    whole string) is parsed; failure → `Unparseable { side: Gold }`, never correct.
//! 3. **Extraction** ([`ExtractionConfig`]): candidates in priority order — the last (or first)
//!    `\boxed{…}`/`\fbox{…}` with nested braces, the last `Answer: …` / "answer is …" line, the
//!    last `$…$`/`$$…$$`/`\(…\)`/`\[…\]` span, the whole response when it is short and a bare
//!    expression (no prose), the last number. Candidates form three tiers — explicit answers
//!    (box, answer line), math spans, guesses (whole response, last number) — and only the
//!    first tier that has a candidate is tried: the first of its candidates that parses is the
//!    prediction; none → `Unparseable { side: Response }` (a box that does not parse is never
//!    replaced by a number picked out of it).
//! 4. **Equivalence** of the parsed objects:
//!    * numbers: exact rational arithmetic (`num-bigint`), so 1/2004! ≠ 1/2006! and
//!      1/2^99 ≠ 1/2^98; irrational values (π, e, √2, sin, log, …) as balls with an unbounded
//!      exponent, equal when the balls meet within `rel_tol` (1e-12); when a decimal literal is
//!      involved, equal when |a − b| ≤ 10^−`decimal_digits` · max(|a|, |b|) (6 digits: 1/3 =
//!      0.333333 but ≠ 0.33);
//!    * free variables: both sides evaluated at `eval_points` seeded random rational points
//!      (deterministic; points where an expression is undefined are skipped);
//!    * `x = 5` matches `5` (either side); equations match when lhs − rhs are proportional;
//!      one-variable inequalities are intervals (`1 < x \le 2` = `(1, 2]`);
//!    * tuples in order; sets and bare lists order-insensitively; intervals by endpoints and
//!      open/closed ends (`(a, b)` is also an open interval); unions of sets merge; `\pm`
//!      expands to a set; matrices element-wise;
//!    * a percentage matches its value and its value/100 (`10\%` = 10 = 0.1) when
//!      `percent_lenient`;
//!    * text answers (`\text{Monday}`) by their lower-cased letters and digits.
//! 5. Text identical to the gold (after removing spacing and sizing commands) is correct even
//!    when the comparison could not decide (but a gold without a value stays unparseable).
//! 6. Every token, parser level, arithmetic operation (weighted by operand size) and comparison
//!    is charged to the [`crate::Budget`]; running out gives `OverBudget`, never a hang or a panic.

mod approx;
mod compare;
mod config;
mod eval;
pub(crate) mod extract;
mod lexer;
mod parser;
mod rat;

pub use config::MathConfig;
pub use extract::{BoxedMode, ExtractionConfig};

use crate::budget::Meter;
use crate::{AnswerSource, ConfigError, Outcome, Side, Verification, Verifier};
use compare::{Comparer, Obj, Stop, lower, text_key};
use lexer::ParseFail;

impl MathConfig {
    /// Validates the configuration and builds the verifier.
    pub fn build(self) -> Result<MathVerifier, ConfigError> {
        self.budget.validate()?;
        if !(1..=15).contains(&self.decimal_digits) {
            return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field: "decimal_digits",
                value: self.decimal_digits.to_string(),
                expected: "an integer in 1..=15",
            }));
        }
        if !(self.rel_tol.is_finite() && (0.0..=1e-6).contains(&self.rel_tol)) {
            return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field: "rel_tol",
                value: self.rel_tol.to_string(),
                expected: "a number in [0, 1e-6]",
            }));
        }
        if !(1..=64).contains(&self.eval_points) {
            return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field: "eval_points",
                value: self.eval_points.to_string(),
                expected: "an integer in 1..=64",
            }));
        }
        Ok(MathVerifier { config: self })
    }
}

/// The `math` verifier. See the module documentation.
#[derive(Clone, Debug)]
pub struct MathVerifier {
    config: MathConfig,
}

impl MathVerifier {
    /// The configuration.
    pub fn config(&self) -> &MathConfig {
        &self.config
    }
}

/// Removes what never changes meaning: whitespace, spacing and sizing commands, `$`, a final
/// period, and `\dfrac`/`\tfrac` spellings.
fn canonical(s: &str) -> String {
    let mut out = s.to_string();
    for pat in [
        "\\left",
        "\\right",
        "\\!",
        "\\,",
        "\\;",
        "\\:",
        "\\ ",
        "$",
        "\\displaystyle",
    ] {
        if out.contains(pat) {
            out = out.replace(pat, "");
        }
    }
    out = out
        .replace("\\dfrac", "\\frac")
        .replace("\\tfrac", "\\frac");
    let mut out: String = out.chars().filter(|c| !c.is_whitespace()).collect();
    while out.ends_with('.') {
        out.pop();
    }
    out
}

/// Text of an answer for text comparison: LaTeX command names removed.
fn text_of(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            while chars.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    text_key(&out)
}

/// Extraction tiers: explicit answers (box, answer line), then math spans, then guesses.
fn tier(source: AnswerSource) -> u8 {
    match source {
        AnswerSource::Boxed | AnswerSource::AnswerLine => 0,
        AnswerSource::MathDelimiters => 1,
        // Code blocks are the `code` verifier's; `math` never extracts one.
        AnswerSource::WholeResponse | AnswerSource::FinalNumber | AnswerSource::CodeBlock => 2,
    }
}

fn parse_fail(side: Side, text: &str, e: ParseFail) -> Outcome {
    match e {
        ParseFail::Budget(b) => Outcome::OverBudget { what: b.0 },
        ParseFail::Syntax(m) => Outcome::Unparseable {
            side,
            reason: format!("cannot parse `{}`: {m}", preview(text)),
        },
    }
}

fn preview(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let mut p: String = s.chars().take(MAX).collect();
        p.push('…');
        p
    }
}

impl Verifier for MathVerifier {
    fn name(&self) -> &'static str {
        "math"
    }

    fn verify(&self, response: &str, gold: &str) -> Verification {
        let cfg = &self.config;
        let mut meter = Meter::new(cfg.budget);
        for (len, what) in [(gold.len(), "gold answer"), (response.len(), "response")] {
            if let Err(e) = meter.input(len, what) {
                return Verification::new(Outcome::OverBudget { what: e.0 });
            }
        }
        // Gold first.
        let gold_text = extract::gold_answer(gold);
        if gold_text.is_empty() {
            return Verification::new(Outcome::Unparseable {
                side: Side::Gold,
                reason: "empty gold answer".into(),
            });
        }
        let gold_obj = match parser::parse(gold_text, &mut meter).and_then(lower) {
            Ok(o) => o,
            Err(e) => return Verification::new(parse_fail(Side::Gold, gold_text, e)),
        };
        // Then the response.
        let cands = extract::candidates(response, &cfg.extraction);
        if cands.is_empty() {
            return Verification::new(Outcome::Unparseable {
                side: Side::Response,
                reason: "no answer found (no \\boxed{}, answer line, math span or number)".into(),
            });
        }
        // Candidates of a weaker kind are only tried when no stronger kind was found: a boxed
        // answer that does not parse is not replaced by a number picked out of it.
        let tier = tier(cands[0].0);
        let mut first_error = None;
        let mut chosen = None;
        for (source, text) in cands.iter().filter(|(s, _)| self::tier(*s) == tier) {
            if let Obj::Text(g) = &gold_obj {
                // Text answers compare as text; no parse needed.
                let ok = text_of(text) == text_key(g) || text_of(text) == text_of(gold_text);
                return Verification {
                    outcome: if ok {
                        Outcome::Correct
                    } else {
                        Outcome::Incorrect
                    },
                    extracted: Some((*text).to_string()),
                    source: Some(*source),
                    score: None,
                };
            }
            let allow_words = *source != AnswerSource::WholeResponse;
            match parser::parse_with(text, &mut meter, allow_words).and_then(lower) {
                Ok(obj) => {
                    chosen = Some((*source, *text, obj));
                    break;
                }
                Err(ParseFail::Budget(b)) => {
                    return Verification {
                        outcome: Outcome::OverBudget { what: b.0 },
                        extracted: Some((*text).to_string()),
                        source: Some(*source),
                        score: None,
                    };
                }
                Err(e) => {
                    if first_error.is_none() {
                        first_error = Some((*source, *text, e));
                    }
                }
            }
        }
        let Some((source, text, pred_obj)) = chosen else {
            let (source, text, e) = first_error.expect("a candidate failed");
            return Verification {
                outcome: parse_fail(Side::Response, text, e),
                extracted: Some(text.to_string()),
                source: Some(source),
                score: None,
            };
        };
        let mut cmp = Comparer {
            meter: &mut meter,
            cfg,
        };
        // Identical text settles "equal" only once the gold is known to have a value (an
        // identical pair that is too expensive to evaluate is still correct).
        let same_text = || canonical(text) == canonical(gold_text);
        let outcome = match cmp.eq(&gold_obj, &pred_obj) {
            Ok(true) => Outcome::Correct,
            Ok(false) if same_text() => Outcome::Correct,
            Ok(false) => Outcome::Incorrect,
            Err(Stop::Budget(_)) if same_text() => Outcome::Correct,
            Err(Stop::Budget(b)) => Outcome::OverBudget { what: b.0 },
            Err(Stop::Gold(m)) => Outcome::Unparseable {
                side: Side::Gold,
                reason: format!("the gold answer has no value: {m}"),
            },
        };
        Verification {
            outcome,
            extracted: Some(text.to_string()),
            source: Some(source),
            score: None,
        }
    }
}
