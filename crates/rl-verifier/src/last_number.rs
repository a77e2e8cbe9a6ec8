//! `last_number`: the number a short reply ends with, strict about trailing text.
//!
//! For short arithmetic replies of small chat models ("What is 37 + 96? Give only the
//! number." → `133`, `37 + 96 = 133`, `The answer is 133.`, `**133**`). The reply must *end*
//! with its answer: a reply that goes on after a number (`The answer is 15, but I'm here to
//! help. Let's use…`), or that was cut off mid-sentence, has no answer, even when the right
//! number appears earlier.
//!
//! ## The rule
//!
//! A **number** is, in ASCII only, `-?(?:[0-9]+|[0-9]{1,3}(?:,[0-9]{3})+)(?:\.[0-9]+)?`: an
//! optional `-`, an integer part that is either plain digits or 1–3 digits followed by
//! thousands groups of exactly three digits each led by a comma (`1,234`, `12,345,678`), and
//! an optional decimal part (a `.` and at least one digit). There is no `+` sign, no exponent,
//! no leading `.` (`.5`), no other minus sign (U+2212) and no other digits (`１３３`, `١٣٣`,
//! `²` are not digits). **Whitespace** is Unicode `White_Space` ([`char::is_whitespace`]).
//!
//! 1. **Gold.** The gold answer without leading and trailing whitespace must be a number as a
//!    whole, at most [`WINDOW_CHARS`] (64) characters long; otherwise the outcome is
//!    [`Outcome::Unparseable`] with [`Side::Gold`].
//! 2. **Window.** Trailing whitespace is removed from the response; the last
//!    [`WINDOW_CHARS`] characters (Unicode scalar values) of what remains are the *window*.
//!    Nothing before the window is read, except to know whether there is anything.
//! 3. **Stripping**, inside the window, in this order:
//!    1. at most one final `.` or `!`;
//!    2. then every final `*`, `$` and `)`, any number in any mix (`**133**`, `$133$`,
//!       `(133)`, `**$133$**`).
//!
//!    Nothing else is removed: no whitespace after that, no second punctuation mark, no other
//!    closer (`133..`, `**133.**`, `133 .`, `133?` and `\(133\)` have no answer).
//! 4. **The final number** is the longest suffix of the stripped window that is a number.
//!    The response has no answer ([`Outcome::Unparseable`] with [`Side::Response`], rewarded
//!    like a wrong answer) when
//!    * there is no such suffix (the stripped window does not end in an ASCII digit: trailing
//!      text, an empty response);
//!    * the character just before the suffix is an ASCII digit, `.`, `,` or `-` (the end of a
//!      malformed number or of an expression: `1.2.3`, `12,34`, `1234,567`, `5-3`, `--3`);
//!    * the suffix starts at the window's first character and the response has characters
//!      before the window (the number may go on beyond the window).
//!
//!    Any other character may precede it (`= 133`, `is 133`, `x=-7`, `:133`).
//! 5. **Comparison.** Both numbers are normalised (commas removed, leading zeros of the
//!    integer part and trailing zeros of the decimal part removed, a decimal point left
//!    without digits removed, the sign of zero dropped) and the normalised strings compared:
//!    [`Outcome::Correct`] when equal, [`Outcome::Incorrect`] otherwise. This is exact
//!    equality of the decimal values (`133.0` = `133` = `0133`, `-0` = `0`, `1,234` = `1234`,
//!    `2.50` = `2.5`) at any length, without floats or overflow.
//!
//! The [`Verification`] carries the final number as written in the response (`1,234`) in
//! `extracted` and [`AnswerSource::FinalNumber`] as its source.
//!
//! ## Work and rewards
//!
//! Work is linear in the response's trailing whitespace and in the gold's length (trimming
//! it, then at most 65 characters counted) and otherwise bounded by the 64-character window
//! (at most 64 × 64 character steps), so inputs of any size finish quickly and nothing
//! panics. There is no [`crate::Budget`]. The reward mapping the verifier comes with
//! ([`crate::VerifierConfig::default_rewards`]) is binary: 1 for correct, 0 for everything
//! else.

use serde::{Deserialize, Serialize};

use crate::{AnswerSource, ConfigError, Outcome, Side, Verification, Verifier};

/// Characters of the response (after its trailing whitespace) that are read, and the longest
/// accepted gold answer.
pub const WINDOW_CHARS: usize = 64;

/// Configuration of the `last_number` verifier. It has no settings: the rule is fixed (see
/// the module documentation). In TOML, `verifier = { name = "last_number" }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LastNumberConfig {}

impl LastNumberConfig {
    /// Builds the verifier (there is nothing to validate).
    pub fn build(self) -> Result<LastNumberVerifier, ConfigError> {
        Ok(LastNumberVerifier { config: self })
    }
}

/// The `last_number` verifier. See the module documentation.
#[derive(Clone, Debug)]
pub struct LastNumberVerifier {
    config: LastNumberConfig,
}

impl LastNumberVerifier {
    /// The configuration.
    pub fn config(&self) -> &LastNumberConfig {
        &self.config
    }
}

impl Verifier for LastNumberVerifier {
    fn name(&self) -> &'static str {
        "last_number"
    }

    fn verify(&self, response: &str, gold: &str) -> Verification {
        let gold = gold.trim();
        if gold.chars().nth(WINDOW_CHARS).is_some() {
            return unparseable(Side::Gold, "the gold answer is longer than 64 characters");
        }
        let Some(gold_value) = Decimal::parse(gold) else {
            return unparseable(Side::Gold, "the gold answer is not a number");
        };
        let answer = match final_number(response) {
            Ok(answer) => answer,
            Err(reason) => return unparseable(Side::Response, reason),
        };
        let Some(value) = Decimal::parse(answer) else {
            // final_number only returns text that parses.
            return unparseable(Side::Response, "the final number does not parse");
        };
        Verification {
            outcome: if value == gold_value {
                Outcome::Correct
            } else {
                Outcome::Incorrect
            },
            extracted: Some(answer.to_string()),
            source: Some(AnswerSource::FinalNumber),
            score: None,
        }
    }
}

fn unparseable(side: Side, reason: &str) -> Verification {
    Verification::new(Outcome::Unparseable {
        side,
        reason: reason.to_string(),
    })
}

/// The number `response` ends with (steps 2–4 of the rule), as written; or why there is none.
pub fn final_number(response: &str) -> Result<&str, &'static str> {
    let text = response.trim_end();
    let start = match text.char_indices().rev().nth(WINDOW_CHARS - 1) {
        Some((i, _)) => i,
        None => 0,
    };
    let more_before = start > 0;
    let mut window = &text[start..];
    if let Some(rest) = window.strip_suffix(['.', '!']) {
        window = rest;
    }
    let window = window.trim_end_matches(['*', '$', ')']);
    if !window.ends_with(|c: char| c.is_ascii_digit()) {
        return Err("the response does not end with a number");
    }
    // The longest suffix that is a number: the first start position, from the left.
    let Some(at) = window
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| Decimal::parse(&window[i..]).is_some())
    else {
        return Err("the response does not end with a number");
    };
    if let Some(before) = window[..at].chars().next_back()
        && (before.is_ascii_digit() || matches!(before, '.' | ',' | '-'))
    {
        return Err("the response ends with a malformed number or an expression");
    }
    if at == 0 && more_before {
        return Err("the final number does not fit in the last 64 characters");
    }
    Ok(&window[at..])
}

/// A number in normal form: sign, integer digits without commas and leading zeros, decimal
/// digits without trailing zeros; zero is `("", "")` and never negative.
#[derive(Debug, PartialEq, Eq)]
struct Decimal<'a> {
    negative: bool,
    integer: String,
    fraction: &'a str,
}

impl<'a> Decimal<'a> {
    /// Parses a whole string as a number (the grammar of the module documentation).
    fn parse(s: &'a str) -> Option<Self> {
        let (negative, rest) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let (integer, fraction) = match rest.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (rest, None),
        };
        if integer.is_empty() || !(all_digits(integer) || grouped(integer)) {
            return None;
        }
        let fraction = match fraction {
            Some(f) if f.is_empty() || !all_digits(f) => return None,
            Some(f) => f.trim_end_matches('0'),
            None => "",
        };
        let integer: String = integer
            .chars()
            .filter(|&c| c != ',')
            .skip_while(|&c| c == '0')
            .collect();
        let zero = integer.is_empty() && fraction.is_empty();
        Some(Decimal {
            negative: negative && !zero,
            integer,
            fraction,
        })
    }
}

fn all_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// `1–3 digits (,3 digits)+`.
fn grouped(s: &str) -> bool {
    let mut parts = s.split(',');
    let first_ok = parts
        .next()
        .is_some_and(|p| (1..=3).contains(&p.len()) && all_digits(p));
    let mut rest = 0;
    let rest_ok = parts.all(|p| {
        rest += 1;
        p.len() == 3 && all_digits(p)
    });
    first_ok && rest_ok && rest > 0
}
