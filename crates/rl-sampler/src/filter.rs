use std::fmt;

use serde::{Deserialize, Serialize};

use crate::SamplerError;

/// Decides whether a group of scored responses is kept for training.
pub trait GroupFilter: Send + Sync + fmt::Debug {
    /// Registry name.
    fn name(&self) -> &'static str;
    /// `rewards[i]` and `correct[i]` describe response i of the group.
    fn keep(&self, rewards: &[f64], correct: &[bool]) -> bool;
}

/// What dynamic sampling measures the spread of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilterMetric {
    /// The verifier's correctness flag (verl `acc`, DAPO's constraint).
    #[default]
    Correct,
    /// The (possibly shaped) scalar reward (verl `seq_final_reward`).
    Reward,
}

/// DAPO dynamic sampling: keep a group iff its metric has non-zero spread.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DynamicSampling {
    /// The metric.
    pub metric: FilterMetric,
    /// Rewards whose max − min is at most this count as equal (metric `reward` only).
    pub reward_tol: f64,
}

impl GroupFilter for DynamicSampling {
    fn name(&self) -> &'static str {
        "dynamic_sampling"
    }

    fn keep(&self, rewards: &[f64], correct: &[bool]) -> bool {
        match self.metric {
            FilterMetric::Correct => correct.iter().any(|&c| c) && correct.iter().any(|&c| !c),
            FilterMetric::Reward => {
                let (lo, hi) = rewards
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
                        (lo.min(r), hi.max(r))
                    });
                hi - lo > self.reward_tol
            }
        }
    }
}

/// Keep iff min < p̂ < max, with p̂ = #correct / G.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PassRateBand {
    /// Exclusive lower bound.
    pub min: f64,
    /// Exclusive upper bound.
    pub max: f64,
}

impl GroupFilter for PassRateBand {
    fn name(&self) -> &'static str {
        "pass_rate_band"
    }

    fn keep(&self, _rewards: &[f64], correct: &[bool]) -> bool {
        if correct.is_empty() {
            return false;
        }
        let p = correct.iter().filter(|&&c| c).count() as f64 / correct.len() as f64;
        self.min < p && p < self.max
    }
}

/// Keeps every group (plain GRPO).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NoFilter;

impl GroupFilter for NoFilter {
    fn name(&self) -> &'static str {
        "none"
    }

    fn keep(&self, _rewards: &[f64], _correct: &[bool]) -> bool {
        true
    }
}

/// Serializable filter choice (`name` is the tag).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case", deny_unknown_fields)]
pub enum FilterConfig {
    /// DAPO dynamic sampling.
    DynamicSampling {
        /// Spread of what.
        #[serde(default)]
        metric: FilterMetric,
        /// Equal-reward tolerance for metric `reward`.
        #[serde(default)]
        reward_tol: f64,
    },
    /// Pass-rate band.
    PassRateBand {
        /// Exclusive lower bound on p̂.
        min: f64,
        /// Exclusive upper bound on p̂.
        max: f64,
    },
    /// No filtering.
    None,
}

rl_core::registry! {
    /// Registered filter names.
    pub const FILTER_NAMES;
    /// The filter registered under `name` with its defaults (band: 0 < p̂ < 1).
    fn FilterConfig::from_name -> SamplerError, kind "group filter" {
        "dynamic_sampling" => FilterConfig::DynamicSampling {
            metric: FilterMetric::Correct,
            reward_tol: 0.0,
        },
        "pass_rate_band" => FilterConfig::PassRateBand { min: 0.0, max: 1.0 },
        "none" => FilterConfig::None,
    }
}

impl FilterConfig {
    /// Validates and builds.
    pub fn build(&self) -> Result<Box<dyn GroupFilter>, SamplerError> {
        Ok(match *self {
            FilterConfig::DynamicSampling { metric, reward_tol } => {
                if !(reward_tol.is_finite() && reward_tol >= 0.0) {
                    return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                        field: "reward_tol",
                        value: reward_tol.to_string(),
                        expected: "a finite number >= 0",
                    }));
                }
                Box::new(DynamicSampling { metric, reward_tol })
            }
            FilterConfig::PassRateBand { min, max } => {
                if !(min.is_finite()
                    && max.is_finite()
                    && (0.0..1.0).contains(&min)
                    && min < max
                    && max <= 1.0)
                {
                    return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                        field: "min/max",
                        value: format!("min={min}, max={max}"),
                        expected: "0 <= min < max <= 1",
                    }));
                }
                Box::new(PassRateBand { min, max })
            }
            FilterConfig::None => Box::new(NoFilter),
        })
    }
}
