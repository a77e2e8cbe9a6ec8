//! Difficulty-aware Advantage Amplification (DAA), the DA3PO paper's correction.

use serde::{Deserialize, Serialize};

use crate::AdvantageError;

/// Default amplification factor λ.
pub const DEFAULT_LAMBDA: f64 = 2.0;
/// Default difficulty threshold τ.
pub const DEFAULT_TAU: f64 = 0.5;

/// DAA: for a kept group with pass rate p̂ = #correct/G, Ã_i = λ·Â_i when response i is correct
/// and p̂ < τ (strict), else Â_i.
///
/// Correctness and p̂ come from the verifier's flags, never from the shaped reward: with DAPO's
/// ±1 reward plus an overlong penalty a correct but long answer can have a reward ≤ 0, and must
/// still be amplified. Groups that are all wrong contain nothing to amplify; groups that are
/// all correct have p̂ = 1 ≥ τ, so DAA never touches the groups dynamic sampling drops.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Daa {
    /// Amplification factor λ (> 0).
    pub lambda: f64,
    /// Difficulty threshold τ in (0, 1].
    pub tau: f64,
}

impl Default for Daa {
    fn default() -> Self {
        Self {
            lambda: DEFAULT_LAMBDA,
            tau: DEFAULT_TAU,
        }
    }
}

/// What [`Daa::apply`] did to one group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DaaOutcome {
    /// p̂ = #correct / G.
    pub pass_rate: f64,
    /// Number of advantages multiplied by λ.
    pub amplified: usize,
}

impl Daa {
    /// Validated constructor.
    pub fn new(lambda: f64, tau: f64) -> Result<Self, AdvantageError> {
        if !(lambda.is_finite() && lambda > 0.0) {
            return Err(AdvantageError::InvalidConfig {
                field: "lambda",
                value: lambda.to_string(),
                expected: "a finite number > 0 (1 disables amplification)",
            });
        }
        if !(tau.is_finite() && tau > 0.0 && tau <= 1.0) {
            return Err(AdvantageError::InvalidConfig {
                field: "tau",
                value: tau.to_string(),
                expected: "a number in (0, 1]",
            });
        }
        Ok(Self { lambda, tau })
    }

    /// Whether a response with this correctness in a group with pass rate `pass_rate` is
    /// amplified.
    pub fn amplifies(&self, pass_rate: f64, correct: bool) -> bool {
        correct && pass_rate < self.tau
    }

    /// Pass rate of a group from its correctness flags.
    pub fn pass_rate(correct: &[bool]) -> f64 {
        if correct.is_empty() {
            return 0.0;
        }
        correct.iter().filter(|&&c| c).count() as f64 / correct.len() as f64
    }

    /// Amplifies one group's advantages in place.
    pub fn apply(&self, advantages: &mut [f64], correct: &[bool]) -> DaaOutcome {
        let pass_rate = Self::pass_rate(correct);
        let mut amplified = 0;
        for (a, &c) in advantages.iter_mut().zip(correct) {
            if self.amplifies(pass_rate, c) {
                *a *= self.lambda;
                amplified += 1;
            }
        }
        DaaOutcome {
            pass_rate,
            amplified,
        }
    }
}
