//! The `math` verifier's configuration.

use serde::{Deserialize, Serialize};

use super::extract::ExtractionConfig;
use crate::Budget;

/// Configuration of the `math` verifier.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MathConfig {
    /// Where to look for the answer.
    pub extraction: ExtractionConfig,
    /// Work limits.
    pub budget: Budget,
    /// Significant decimal digits that must agree when a decimal literal is involved (1..=15).
    pub decimal_digits: u32,
    /// Relative tolerance for irrational values, on top of the rounding error bounds (≥ 0,
    /// at most 1e-6).
    pub rel_tol: f64,
    /// Random points at which expressions with free variables are compared (1..=64).
    pub eval_points: usize,
    /// Seed of those points.
    pub seed: u64,
    /// A percentage also matches the bare number (`10\%` vs `10`).
    pub percent_lenient: bool,
}

impl Default for MathConfig {
    fn default() -> Self {
        MathConfig {
            extraction: ExtractionConfig::default(),
            budget: Budget::default(),
            decimal_digits: 6,
            rel_tol: 1e-12,
            eval_points: 4,
            seed: 0x5EED_2025,
            percent_lenient: true,
        }
    }
}
