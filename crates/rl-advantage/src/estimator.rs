//! The estimator trait, the built-ins and the name registry.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::AdvantageError;
use crate::group::{GroupedBatch, all_equal, check_group};
use rl_core::GroupId;

pub(crate) mod composed;
pub(crate) mod config;
pub(crate) mod reinforce_pp;

/// Default ε added to the group std (verl's value).
pub const DEFAULT_EPS: f64 = 1e-6;
/// Default tolerance under which a group's rewards count as all equal (max − min ≤ tol).
pub const DEFAULT_EQUAL_TOL: f64 = 1e-6;

/// Which standard deviation normalises GRPO-style advantages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StdMode {
    /// Unbiased (Bessel, divide by G−1): `torch.std`, as verl and TRL compute it.
    #[default]
    Sample,
    /// Population (divide by G).
    Population,
}

rl_core::registry! {
    /// Valid values of [`StdMode`], as written in configs.
    pub const STD_NAMES;
    /// Parses `sample` or `population`.
    fn StdMode::from_name -> AdvantageError, kind "`std` value" {
        "sample" => StdMode::Sample,
        "population" => StdMode::Population,
    }
}

/// An advantage baseline: the advantages of a batch from its rewards, before any modifier
/// (DAA, prompt weighting), which [`crate::Estimator`] applies on top of it.
///
/// Most baselines are pure functions of one group's rewards and correctness flags
/// ([`AdvantageEstimator::group_advantages`]); their batch form calls it per group. An
/// estimator that normalises over the whole batch (REINFORCE++) overrides
/// [`AdvantageEstimator::batch_advantages`] and says so in
/// [`AdvantageEstimator::batch_level`]. Groups have already been validated by the batch
/// checks when called through [`crate::compute_batch`].
pub trait AdvantageEstimator: Send + Sync + fmt::Debug {
    /// Registry name.
    fn name(&self) -> &'static str;

    /// Writes the advantages of one group into `out` (same length as `rewards`). For a
    /// batch-level estimator this is its value on a batch made of this group alone.
    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError>;

    /// Writes the advantages of a whole batch into `out` (one per sample, input order). The
    /// default runs [`AdvantageEstimator::group_advantages`] on every group.
    fn batch_advantages(
        &self,
        batch: &GroupedBatch<'_>,
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        batch.per_group(out, |group, rewards, correct, values| {
            self.group_advantages(group, rewards, correct, values)
        })
    }

    /// Whether a sample's advantage depends on other groups of the batch (and on the token
    /// counts of [`crate::compute_batch_with_tokens`]); false for per-group estimators.
    fn batch_level(&self) -> bool {
        false
    }

    /// Advantages that differ token by token: one vector per sample with
    /// [`GroupedBatch::tokens`] values (its loss tokens, in order). `None` (the default, every
    /// estimator but discounted REINFORCE++): each token takes its sample's advantage from
    /// [`AdvantageEstimator::batch_advantages`].
    fn token_advantages(
        &self,
        batch: &GroupedBatch<'_>,
    ) -> Option<Result<Vec<Vec<f64>>, AdvantageError>> {
        let _ = batch;
        None
    }
}

pub(crate) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// GRPO: Â_i = (R_i − mean R) / (std R + ε); all-equal groups get exactly 0. Also the
/// baseline of `dapo` (dynamic sampling, in rl-sampler, removes zero-spread groups first) and of
/// `da3po` (the same, then DAA: [`crate::Estimator::with_daa`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grpo {
    /// Which std.
    pub std: StdMode,
    /// Added to the std.
    pub eps: f64,
    /// max − min ≤ this ⇒ all advantages exactly 0.
    pub equal_tol: f64,
}

impl Default for Grpo {
    fn default() -> Self {
        Self {
            std: StdMode::Sample,
            eps: DEFAULT_EPS,
            equal_tol: DEFAULT_EQUAL_TOL,
        }
    }
}

impl Grpo {
    fn compute(&self, rewards: &[f64], out: &mut [f64]) {
        if all_equal(rewards, self.equal_tol) {
            out.fill(0.0);
            return;
        }
        let g = rewards.len() as f64;
        let m = mean(rewards);
        let ss: f64 = rewards.iter().map(|r| (r - m) * (r - m)).sum();
        let denom = match self.std {
            StdMode::Sample => g - 1.0,
            StdMode::Population => g,
        };
        let std = (ss / denom).sqrt();
        for (o, r) in out.iter_mut().zip(rewards) {
            *o = (r - m) / (std + self.eps);
        }
    }
}

impl AdvantageEstimator for Grpo {
    fn name(&self) -> &'static str {
        "grpo"
    }

    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        check_group(group, rewards, correct)?;
        self.compute(rewards, out);
        Ok(())
    }
}

/// Dr. GRPO: Â_i = R_i − mean R (no std normalisation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrGrpo {
    /// max − min ≤ this ⇒ all advantages exactly 0.
    pub equal_tol: f64,
}

impl Default for DrGrpo {
    fn default() -> Self {
        Self {
            equal_tol: DEFAULT_EQUAL_TOL,
        }
    }
}

impl AdvantageEstimator for DrGrpo {
    fn name(&self) -> &'static str {
        "dr_grpo"
    }

    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        check_group(group, rewards, correct)?;
        if all_equal(rewards, self.equal_tol) {
            out.fill(0.0);
            return Ok(());
        }
        let m = mean(rewards);
        for (o, r) in out.iter_mut().zip(rewards) {
            *o = r - m;
        }
        Ok(())
    }
}

/// RLOO: Â_i = R_i − (Σ_{j≠i} R_j)/(G−1), the leave-one-out baseline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rloo {
    /// max − min ≤ this ⇒ all advantages exactly 0.
    pub equal_tol: f64,
}

impl Default for Rloo {
    fn default() -> Self {
        Self {
            equal_tol: DEFAULT_EQUAL_TOL,
        }
    }
}

impl AdvantageEstimator for Rloo {
    fn name(&self) -> &'static str {
        "rloo"
    }

    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        check_group(group, rewards, correct)?;
        if all_equal(rewards, self.equal_tol) {
            out.fill(0.0);
            return Ok(());
        }
        let total: f64 = rewards.iter().sum();
        let others = (rewards.len() - 1) as f64;
        for (o, r) in out.iter_mut().zip(rewards) {
            *o = r - (total - r) / others;
        }
        Ok(())
    }
}
