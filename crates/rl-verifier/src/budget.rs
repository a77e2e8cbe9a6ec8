//! The work budget every verification runs under, and the meter that enforces it.

use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// Explicit limits on the work one verification may do.
///
/// Every verifier checks the input sizes first and then charges each unit of work (a token, a
/// parser step, an arithmetic operation weighted by operand size) to a meter. When a limit is
/// reached the verification stops with [`crate::Outcome::OverBudget`] naming the limit; nothing
/// relies on threads, signals or wall-clock timeouts, so the same input always gets the same
/// outcome on any machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budget {
    /// Largest accepted input, in bytes, for the response and for the gold answer separately.
    pub max_input_bytes: usize,
    /// Deepest accepted nesting of groups (`{}`, `()`, `[]`, `\frac`, `\sqrt`, …) in a parsed
    /// answer. Also bounds recursion, so it must stay small (≤ [`Budget::MAX_DEPTH_LIMIT`]).
    pub max_depth: usize,
    /// Largest number of decimal digits of any number literal, and of the numerator or the
    /// denominator of any exact intermediate result.
    pub max_digits: usize,
    /// Work units for lexing, parsing, evaluating and comparing one (response, gold) pair.
    pub max_steps: u64,
}

impl Budget {
    /// Upper bound accepted for `max_depth` (recursion is proportional to it).
    pub const MAX_DEPTH_LIMIT: usize = 200;
    /// Names of the fields, as written in configs and in `--budget KEY=VALUE`.
    pub const FIELDS: [&'static str; 4] =
        ["max_input_bytes", "max_depth", "max_digits", "max_steps"];

    /// Checks that every limit is usable.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field: &'static str, value: String, expected: &'static str| {
            Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field,
                value,
                expected,
            }))
        };
        if self.max_input_bytes == 0 {
            return bad(
                "budget.max_input_bytes",
                "0".into(),
                "a positive number of bytes",
            );
        }
        if self.max_depth == 0 || self.max_depth > Self::MAX_DEPTH_LIMIT {
            return bad(
                "budget.max_depth",
                self.max_depth.to_string(),
                "an integer in 1..=200",
            );
        }
        if self.max_digits == 0 {
            return bad(
                "budget.max_digits",
                "0".into(),
                "a positive number of digits",
            );
        }
        if self.max_steps == 0 {
            return bad("budget.max_steps", "0".into(), "a positive number of steps");
        }
        Ok(())
    }

    /// Sets one field from its name and a decimal value (`max_depth=40`), as the CLI's
    /// `--budget` does. Unknown names and unparsable values are errors naming the valid keys.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let parse = |field: &'static str| {
            value.trim().parse::<u64>().map_err(|_| {
                ConfigError::InvalidValue(rl_core::InvalidValue {
                    field,
                    value: value.to_string(),
                    expected: "a non-negative integer",
                })
            })
        };
        match key.trim() {
            "max_input_bytes" => self.max_input_bytes = parse("budget.max_input_bytes")? as usize,
            "max_depth" => self.max_depth = parse("budget.max_depth")? as usize,
            "max_digits" => self.max_digits = parse("budget.max_digits")? as usize,
            "max_steps" => self.max_steps = parse("budget.max_steps")?,
            other => {
                return Err(rl_core::UnknownName::new("budget field", other, &Self::FIELDS).into());
            }
        }
        self.validate()
    }
}

impl Default for Budget {
    /// 1 MiB inputs, depth 50, 10,000 digits (2006! has 5,761), 1,000,000 steps.
    fn default() -> Self {
        Budget {
            max_input_bytes: 1 << 20,
            max_depth: 50,
            max_digits: 10_000,
            max_steps: 1_000_000,
        }
    }
}

/// Why a verification stopped early.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Exceeded(pub String);

/// Counts work against a [`Budget`].
#[derive(Debug)]
pub(crate) struct Meter {
    left: u64,
    pub(crate) budget: Budget,
}

impl Meter {
    pub(crate) fn new(budget: Budget) -> Self {
        Meter {
            left: budget.max_steps,
            budget,
        }
    }

    /// Charges `n` steps.
    #[inline]
    pub(crate) fn charge(&mut self, n: u64) -> Result<(), Exceeded> {
        if n > self.left {
            self.left = 0;
            return Err(Exceeded(format!(
                "more than max_steps = {} evaluation steps",
                self.budget.max_steps
            )));
        }
        self.left -= n;
        Ok(())
    }

    /// Checks a nesting depth.
    #[inline]
    pub(crate) fn depth(&self, depth: usize) -> Result<(), Exceeded> {
        if depth > self.budget.max_depth {
            Err(Exceeded(format!(
                "nesting deeper than max_depth = {}",
                self.budget.max_depth
            )))
        } else {
            Ok(())
        }
    }

    /// Checks a number size given in bits (numerator or denominator of an exact value).
    #[inline]
    pub(crate) fn bits(&self, bits: u64, what: &str) -> Result<(), Exceeded> {
        // digits = ceil(bits · log10 2); compare with a small margin in favour of the input.
        let digits = (bits as f64 * std::f64::consts::LOG10_2).floor() as u64 + 1;
        if digits > self.budget.max_digits as u64 {
            Err(Exceeded(format!(
                "{what} with about {digits} digits exceeds max_digits = {}",
                self.budget.max_digits
            )))
        } else {
            Ok(())
        }
    }

    /// Checks one input's size.
    pub(crate) fn input(&self, len: usize, what: &str) -> Result<(), Exceeded> {
        if len > self.budget.max_input_bytes {
            Err(Exceeded(format!(
                "{what} of {len} bytes exceeds max_input_bytes = {}",
                self.budget.max_input_bytes
            )))
        } else {
            Ok(())
        }
    }
}
