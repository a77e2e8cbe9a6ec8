//! `gsm8k`: verl's GSM8K scorer (`verl/utils/reward_score/gsm8k.py`, verl 0.9.1), for answers
//! written as `#### N` after the working out.
//!
//! 1. Only the last 300 characters (Unicode scalar values, as Python slices a `str`) of the
//!    response are read.
//! 2. **strict** (the default): the last match of `#### (-?[0-9.,]+)` (a space after the four
//!    `#`), with every `,` removed, is the answer; no match: no answer.
//!    **flexible**: the last match of `(-?[0-9.,]+)` that is not `.` is the answer, unchanged
//!    (commas kept); when every match is `.`, verl's loop leaves the first match, `.`, as the
//!    answer; no match: no answer.
//! 3. The answer is compared with the gold answer as strings, exactly (verl does not trim or
//!    normalise either side): [`Outcome::Correct`] when equal, [`Outcome::Incorrect`]
//!    otherwise; no answer is [`Outcome::Unparseable`] on the response side.
//!
//! verl's `compute_score` gives `score` (1) for correct, `format_score` (0) for an answer that
//! differs and 0 for no answer: the binary [`crate::RewardMap`] this verifier comes with, or
//! any other map for a non-zero `format_score`. Parity: `tests/gsm8k.rs` against verl's own
//! `extract_solution` / `compute_score` on the cases of `tools/verifier/gen_gsm8k_parity.py`.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::{AnswerSource, ConfigError, Outcome, Side, Verification, Verifier};

/// Characters of the response read (verl's `_SOLUTION_CLIP_CHARS`).
pub const CLIP_CHARS: usize = 300;

static STRICT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"#### (-?[0-9.,]+)").expect("a valid pattern"));
static FLEXIBLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(-?[0-9.,]+)").expect("a valid pattern"));

/// How the answer is found (verl's `method`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gsm8kMethod {
    /// The last `#### N`.
    #[default]
    Strict,
    /// The last number anywhere.
    Flexible,
}

/// Configuration of the `gsm8k` verifier. In TOML,
/// `verifier = { name = "gsm8k", method = "strict" }` (or `"flexible"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Gsm8kConfig {
    /// How the answer is found.
    pub method: Gsm8kMethod,
}

impl Gsm8kConfig {
    /// Builds the verifier (there is nothing to validate).
    pub fn build(self) -> Result<Gsm8kVerifier, ConfigError> {
        Ok(Gsm8kVerifier { config: self })
    }
}

/// The `gsm8k` verifier. See the module documentation.
#[derive(Clone, Debug)]
pub struct Gsm8kVerifier {
    config: Gsm8kConfig,
}

/// verl's `extract_solution(solution_str, method)`: the answer, or `None`.
pub fn extract_solution(response: &str, method: Gsm8kMethod) -> Option<String> {
    let text = match response.char_indices().rev().nth(CLIP_CHARS - 1) {
        Some((i, _)) => &response[i..],
        None => response,
    };
    match method {
        Gsm8kMethod::Strict => STRICT
            .captures_iter(text)
            .last()
            .map(|c| c[1].replace(',', "")),
        Gsm8kMethod::Flexible => {
            let all: Vec<&str> = FLEXIBLE.find_iter(text).map(|m| m.as_str()).collect();
            let first = *all.first()?;
            Some(
                all.iter()
                    .rev()
                    .find(|a| **a != "." && !a.is_empty())
                    .copied()
                    .unwrap_or(first)
                    .to_string(),
            )
        }
    }
}

impl Verifier for Gsm8kVerifier {
    fn name(&self) -> &'static str {
        "gsm8k"
    }

    fn verify(&self, response: &str, gold: &str) -> Verification {
        let method = self.config.method;
        let Some(answer) = extract_solution(response, method) else {
            return Verification::new(Outcome::Unparseable {
                side: Side::Response,
                reason: match method {
                    Gsm8kMethod::Strict => "no `#### N` in the last 300 characters".into(),
                    Gsm8kMethod::Flexible => "no number in the last 300 characters".into(),
                },
            });
        };
        Verification {
            outcome: if answer == gold {
                Outcome::Correct
            } else {
                Outcome::Incorrect
            },
            extracted: Some(answer),
            source: Some(match method {
                Gsm8kMethod::Strict => AnswerSource::AnswerLine,
                Gsm8kMethod::Flexible => AnswerSource::FinalNumber,
            }),
            score: None,
        }
    }
}
