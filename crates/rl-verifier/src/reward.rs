//! The mapping from outcomes to scalar rewards.

use serde::{Deserialize, Serialize};

use crate::{ConfigError, Outcome, Side, Verification};

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

    /// The reward of one verification: [`RewardMap::reward`] of its outcome, except for an
    /// incorrect outcome with a graded score s (the `code` verifier's fraction of tests passed,
    /// `reward = "fraction"`), which gets `incorrect + s · (correct − incorrect)` with s clamped
    /// to [0, 1] (a NaN score counts as 0).
    pub fn reward_for(&self, v: &Verification) -> f64 {
        match (&v.outcome, v.score) {
            (Outcome::Incorrect, Some(s)) => {
                let s = if s.is_nan() { 0.0 } else { s.clamp(0.0, 1.0) };
                self.incorrect + s * (self.correct - self.incorrect)
            }
            (outcome, _) => self.reward(outcome),
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
                return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                    field,
                    value: value.to_string(),
                    expected: "a finite number",
                }));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn graded(outcome: Outcome, score: Option<f64>) -> Verification {
        Verification {
            score,
            ..Verification::new(outcome)
        }
    }

    #[test]
    fn reward_for_interpolates_incorrect_scores_only() {
        // By hand: signed map, 3 of 4 tests: -1 + 0.75 * (1 - (-1)) = 0.5; 3 of 5: 0.2.
        let signed = RewardMap::signed();
        assert_eq!(
            signed.reward_for(&graded(Outcome::Incorrect, Some(0.75))),
            0.5
        );
        let r = signed.reward_for(&graded(Outcome::Incorrect, Some(3.0 / 5.0)));
        assert!((r - 0.2).abs() < 1e-15, "{r}");
        let binary = RewardMap::binary();
        assert_eq!(
            binary.reward_for(&graded(Outcome::Incorrect, Some(0.25))),
            0.25
        );
        assert_eq!(
            binary.reward_for(&graded(Outcome::Incorrect, Some(0.0))),
            0.0
        );
        // Out of range and NaN scores are clamped.
        assert_eq!(
            binary.reward_for(&graded(Outcome::Incorrect, Some(1.5))),
            1.0
        );
        assert_eq!(
            binary.reward_for(&graded(Outcome::Incorrect, Some(f64::NAN))),
            0.0
        );
        // Without a score, or for any other outcome: exactly reward().
        let custom = RewardMap {
            correct: 2.0,
            incorrect: -0.5,
            unparseable_response: -3.0,
            unparseable_gold: -4.0,
            over_budget: -5.0,
        };
        let outcomes = [
            Outcome::Correct,
            Outcome::Incorrect,
            Outcome::Unparseable {
                side: Side::Response,
                reason: String::new(),
            },
            Outcome::Unparseable {
                side: Side::Gold,
                reason: String::new(),
            },
            Outcome::OverBudget {
                what: String::new(),
            },
        ];
        for o in outcomes {
            assert_eq!(
                custom.reward_for(&graded(o.clone(), None)),
                custom.reward(&o)
            );
            if o != Outcome::Incorrect {
                assert_eq!(
                    custom.reward_for(&graded(o.clone(), Some(0.5))),
                    custom.reward(&o)
                );
            }
        }
        assert_eq!(
            custom.reward_for(&graded(Outcome::Incorrect, Some(0.5))),
            0.75
        );
    }
}
