//! The mapping from outcomes to scalar rewards.

use serde::{Deserialize, Serialize};

use crate::{ConfigError, Outcome, Side};

/// The reward for each outcome kind. It is configuration, never hard-coded: DAPO trains with
/// +1 / −1 ([`RewardMap::signed`]), TRL and most GRPO recipes with 1 / 0 ([`RewardMap::binary`]).
///
/// Failures (unparseable, over budget) get their own values so that a run can, e.g., punish a
/// missing answer like a wrong one while the [`crate::OutcomeCounts`] still tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RewardMap {
    /// Reward for [`Outcome::Correct`].
    pub correct: f64,
    /// Reward for [`Outcome::Incorrect`].
    pub incorrect: f64,
    /// Reward when the response has no usable answer.
    pub unparseable_response: f64,
    /// Reward when the gold answer is unusable (a data problem; counted separately).
    pub unparseable_gold: f64,
    /// Reward when the verification ran out of budget.
    pub over_budget: f64,
}

impl RewardMap {
    /// 1 for correct, 0 for everything else (TRL's `accuracy_reward`, most GRPO recipes).
    pub const fn binary() -> Self {
        RewardMap {
            correct: 1.0,
            incorrect: 0.0,
            unparseable_response: 0.0,
            unparseable_gold: 0.0,
            over_budget: 0.0,
        }
    }

    /// +1 for correct, −1 for everything else (verl's `math_dapo.compute_score`, DAPO).
    pub const fn signed() -> Self {
        RewardMap {
            correct: 1.0,
            incorrect: -1.0,
            unparseable_response: -1.0,
            unparseable_gold: -1.0,
            over_budget: -1.0,
        }
    }

    /// `correct` for correct answers and `other` for every other outcome.
    pub const fn two_valued(correct: f64, other: f64) -> Self {
        RewardMap {
            correct,
            incorrect: other,
            unparseable_response: other,
            unparseable_gold: other,
            over_budget: other,
        }
    }

    /// The reward of one outcome.
    pub fn reward(&self, outcome: &Outcome) -> f64 {
        match outcome {
            Outcome::Correct => self.correct,
            Outcome::Incorrect => self.incorrect,
            Outcome::Unparseable {
                side: Side::Response,
                ..
            } => self.unparseable_response,
            Outcome::Unparseable {
                side: Side::Gold, ..
            } => self.unparseable_gold,
            Outcome::OverBudget { .. } => self.over_budget,
        }
    }

    /// Checks that every value is finite.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fields = [
            ("rewards.correct", self.correct),
            ("rewards.incorrect", self.incorrect),
            ("rewards.unparseable_response", self.unparseable_response),
            ("rewards.unparseable_gold", self.unparseable_gold),
            ("rewards.over_budget", self.over_budget),
        ];
        for (field, value) in fields {
            if !value.is_finite() {
                return Err(ConfigError::InvalidValue {
                    field,
                    value: value.to_string(),
                    expected: "a finite number",
                });
            }
        }
        Ok(())
    }
}

impl Default for RewardMap {
    /// [`RewardMap::binary`].
    fn default() -> Self {
        RewardMap::binary()
    }
}
