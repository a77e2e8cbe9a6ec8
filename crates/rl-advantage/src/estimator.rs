//! The estimator trait, the built-ins and the name registry.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::daa::{Daa, DaaConfig, LambdaRule, NegativeAdvantage};
use crate::weight::{PromptWeight, PromptWeighted};
use crate::{AdvantageError, GroupId, GroupedBatch};

/// Names accepted by [`EstimatorConfig::from_name`], in registry order.
pub const ESTIMATOR_NAMES: [&str; 7] = [
    "grpo",
    "dr_grpo",
    "rloo",
    "dapo",
    "da3po",
    "reinforce_plus_plus",
    "reinforce_plus_plus_baseline",
];

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

impl StdMode {
    /// Parses `sample` or `population`.
    pub fn from_name(name: &str) -> Result<Self, AdvantageError> {
        match name {
            "sample" => Ok(StdMode::Sample),
            "population" => Ok(StdMode::Population),
            other => Err(AdvantageError::InvalidConfig {
                field: "std",
                value: other.to_string(),
                expected: "one of: sample, population",
            }),
        }
    }
}

/// An advantage estimator.
///
/// Most estimators are pure functions of one group's rewards and correctness flags
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

    /// The Difficulty-aware Advantage Amplification this estimator applies, if any (used to
    /// report which samples were amplified).
    fn daa(&self) -> Option<Daa> {
        None
    }

    /// The weight this estimator applies to each group's advantages ([`PromptWeight::None`]
    /// unless built with a `prompt_weight`).
    fn prompt_weight(&self) -> PromptWeight {
        PromptWeight::None
    }
}

/// Validates one group: matching lengths, at least 2 samples, finite rewards.
pub fn check_group(
    group: GroupId,
    rewards: &[f64],
    correct: &[bool],
) -> Result<(), AdvantageError> {
    if rewards.len() != correct.len() {
        return Err(AdvantageError::LengthMismatch {
            group,
            rewards: rewards.len(),
            correct: correct.len(),
        });
    }
    if rewards.len() < 2 {
        return Err(AdvantageError::GroupTooSmall {
            group,
            size: rewards.len(),
        });
    }
    if let Some((index, &value)) = rewards.iter().enumerate().find(|(_, r)| !r.is_finite()) {
        return Err(AdvantageError::NonFiniteReward {
            group,
            index,
            value,
        });
    }
    Ok(())
}

fn all_equal(rewards: &[f64], tol: f64) -> bool {
    let (lo, hi) = rewards
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    hi - lo <= tol
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// GRPO: Â_i = (R_i − mean R) / (std R + ε); all-equal groups get exactly 0.
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

/// DAPO: GRPO advantages. Dynamic sampling (in `rl-sampler`) removes zero-spread groups first.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Dapo {
    /// The underlying group normalisation.
    pub grpo: Grpo,
}

impl AdvantageEstimator for Dapo {
    fn name(&self) -> &'static str {
        "dapo"
    }

    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        self.grpo.group_advantages(group, rewards, correct, out)
    }
}

/// DA3PO: DAPO advantages followed by Difficulty-aware Advantage Amplification ([`Daa`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Da3po {
    /// The DAPO (GRPO) advantages.
    pub dapo: Dapo,
    /// The amplification.
    pub daa: Daa,
}

impl AdvantageEstimator for Da3po {
    fn name(&self) -> &'static str {
        "da3po"
    }

    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        self.dapo.group_advantages(group, rewards, correct, out)?;
        self.daa.apply(out, correct);
        Ok(())
    }

    fn daa(&self) -> Option<Daa> {
        Some(self.daa)
    }
}

/// verl's `masked_whiten` constants: the ε added to the token count in each masked mean and the
/// ε added to the variance under the square root.
pub const REINFORCE_PP_WHITEN_EPS: f64 = 1e-8;

/// verl's `masked_whiten` (shift_mean = True) over a batch of per-response values, each repeated
/// over `weights[i]` tokens: with N = Σ w,
/// mean = Σ w·v / (N + 1e-8), var = Σ w·(v − mean)² / (N + 1e-8) · N/(N − 1) (Bessel over
/// tokens), v ← (v − mean)/√(var + 1e-8); the mean is not added back. Responses without tokens
/// get 0 (verl multiplies by the mask). Fewer than 2 tokens, or values equal within `equal_tol`
/// over the responses with tokens, give exactly 0 everywhere (verl raises on fewer than 2
/// tokens, and turns an all-equal batch into values of order 1e-4·|v|/N).
fn verl_masked_whiten(values: &mut [f64], weights: &[f64], equal_tol: f64) {
    let n: f64 = weights.iter().sum();
    let (lo, hi) = values
        .iter()
        .zip(weights)
        .filter(|(_, w)| **w > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (&v, _)| {
            (lo.min(v), hi.max(v))
        });
    if n < 2.0 || hi - lo <= equal_tol {
        values.fill(0.0);
        return;
    }
    let eps = REINFORCE_PP_WHITEN_EPS;
    let mean = values.iter().zip(weights).map(|(v, w)| w * v).sum::<f64>() / (n + eps);
    let var = values
        .iter()
        .zip(weights)
        .map(|(v, w)| w * (v - mean) * (v - mean))
        .sum::<f64>()
        / (n + eps)
        * (n / (n - 1.0));
    let inv_std = 1.0 / (var + eps).sqrt();
    for (v, &w) in values.iter_mut().zip(weights) {
        *v = if w > 0.0 { (*v - mean) * inv_std } else { 0.0 };
    }
}

/// The token weights of a batch (1 per response without token counts).
fn token_weights(batch: &GroupedBatch<'_>) -> Vec<f64> {
    (0..batch.len()).map(|i| batch.tokens(i) as f64).collect()
}

/// REINFORCE++ (arXiv 2501.03262) for outcome rewards with γ = 1: every token of response i
/// has the value v_i, and the values are whitened over all tokens of the batch (verl's
/// `masked_whiten`, see [`REINFORCE_PP_WHITEN_EPS`]), then DAA is applied per group if set.
/// `baseline = false` (verl `reinforce_plus_plus`): v_i = R_i, no group baseline.
/// `baseline = true` (verl `reinforce_plus_plus_baseline`): v_i = R_i minus its group's mean, a
/// group whose rewards are equal within `equal_tol` centred to exactly 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReinforcePlusPlus {
    /// Subtract each group's mean reward before the whitening.
    pub baseline: bool,
    /// Equal-value tolerance: of a group's rewards (baseline), and of the batch's values
    /// before the whitening (equal ⇒ all advantages exactly 0).
    pub equal_tol: f64,
    /// DAA applied per group to the whitened advantages.
    pub daa: Option<Daa>,
}

impl ReinforcePlusPlus {
    /// Without (`reinforce_plus_plus`) or with (`reinforce_plus_plus_baseline`) the group
    /// baseline, default tolerance, no DAA.
    pub fn new(baseline: bool) -> Self {
        Self {
            baseline,
            equal_tol: DEFAULT_EQUAL_TOL,
            daa: None,
        }
    }

    /// One group's values before the whitening: its rewards, centred when `baseline`.
    fn values(&self, rewards: &[f64], out: &mut [f64]) {
        if !self.baseline {
            out.copy_from_slice(rewards);
        } else if all_equal(rewards, self.equal_tol) {
            out.fill(0.0);
        } else {
            let m = mean(rewards);
            for (o, r) in out.iter_mut().zip(rewards) {
                *o = r - m;
            }
        }
    }
}

impl AdvantageEstimator for ReinforcePlusPlus {
    fn name(&self) -> &'static str {
        if self.baseline {
            "reinforce_plus_plus_baseline"
        } else {
            "reinforce_plus_plus"
        }
    }

    /// The group seen as a batch of one-token responses.
    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        check_group(group, rewards, correct)?;
        self.values(rewards, out);
        verl_masked_whiten(out, &vec![1.0; out.len()], self.equal_tol);
        if let Some(d) = self.daa {
            d.apply(out, correct);
        }
        Ok(())
    }

    /// The groups' values, whitened over the batch's tokens, then DAA per group.
    fn batch_advantages(
        &self,
        batch: &GroupedBatch<'_>,
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        batch.per_group(out, |_, rewards, _, values| {
            self.values(rewards, values);
            Ok(())
        })?;
        verl_masked_whiten(out, &token_weights(batch), self.equal_tol);
        if let Some(d) = self.daa {
            batch.per_group(out, |_, _, correct, values| {
                d.apply(values, correct);
                Ok(())
            })?;
        }
        Ok(())
    }

    fn batch_level(&self) -> bool {
        true
    }

    fn daa(&self) -> Option<Daa> {
        self.daa
    }
}

fn default_eps() -> f64 {
    DEFAULT_EPS
}
fn default_equal_tol() -> f64 {
    DEFAULT_EQUAL_TOL
}
fn default_lambda() -> f64 {
    crate::daa::DEFAULT_LAMBDA
}
fn default_tau() -> f64 {
    crate::daa::DEFAULT_TAU
}

/// Serializable choice of estimator with its settings (`name` is the tag).
///
/// ```
/// use rl_advantage::EstimatorConfig;
/// let cfg: EstimatorConfig = serde_json::from_str(r#"{"name":"da3po","lambda":3.0}"#).unwrap();
/// assert_eq!(cfg.name(), "da3po");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case", deny_unknown_fields)]
pub enum EstimatorConfig {
    /// Group z-score.
    Grpo {
        /// Which std.
        #[serde(default)]
        std: StdMode,
        /// Added to the std.
        #[serde(default = "default_eps")]
        eps: f64,
        /// Equal-reward tolerance.
        #[serde(default = "default_equal_tol")]
        equal_tol: f64,
        /// Weight of each group's advantages from its pass rate, applied last: `none`
        /// (default) or `linear_r` (w = 1/p̂). See [`PromptWeight`].
        #[serde(default, skip_serializing_if = "PromptWeight::is_none")]
        prompt_weight: PromptWeight,
    },
    /// Mean-centred, no std.
    DrGrpo {
        /// Equal-reward tolerance.
        #[serde(default = "default_equal_tol")]
        equal_tol: f64,
        /// Weight of each group's advantages from its pass rate, applied last: `none`
        /// (default) or `linear_r` (w = 1/p̂). See [`PromptWeight`].
        #[serde(default, skip_serializing_if = "PromptWeight::is_none")]
        prompt_weight: PromptWeight,
    },
    /// Leave-one-out baseline.
    Rloo {
        /// Equal-reward tolerance.
        #[serde(default = "default_equal_tol")]
        equal_tol: f64,
        /// Weight of each group's advantages from its pass rate, applied last: `none`
        /// (default) or `linear_r` (w = 1/p̂). See [`PromptWeight`].
        #[serde(default, skip_serializing_if = "PromptWeight::is_none")]
        prompt_weight: PromptWeight,
    },
    /// GRPO advantages after dynamic sampling.
    Dapo {
        /// Which std.
        #[serde(default)]
        std: StdMode,
        /// Added to the std.
        #[serde(default = "default_eps")]
        eps: f64,
        /// Equal-reward tolerance.
        #[serde(default = "default_equal_tol")]
        equal_tol: f64,
        /// Weight of each group's advantages from its pass rate, applied last: `none`
        /// (default) or `linear_r` (w = 1/p̂). See [`PromptWeight`].
        #[serde(default, skip_serializing_if = "PromptWeight::is_none")]
        prompt_weight: PromptWeight,
    },
    /// DAPO + Difficulty-aware Advantage Amplification.
    Da3po {
        /// Which std.
        #[serde(default)]
        std: StdMode,
        /// Added to the std.
        #[serde(default = "default_eps")]
        eps: f64,
        /// Equal-reward tolerance.
        #[serde(default = "default_equal_tol")]
        equal_tol: f64,
        /// Amplification factor λ for correct responses of hard groups.
        #[serde(default = "default_lambda")]
        lambda: f64,
        /// Difficulty threshold τ: groups with p̂ < τ are hard (strict).
        #[serde(default = "default_tau")]
        tau: f64,
        /// What DAA does to a correct response of a hard group whose advantage is negative
        /// (possible only with shaped rewards): `keep` (default) or `amplify` (λ·Â whatever the
        /// sign). See [`NegativeAdvantage`].
        #[serde(default)]
        negative_advantage: NegativeAdvantage,
        /// How λ is chosen: `constant` (default, `lambda`) or `theory` (1/γ(p̂, G), see
        /// [`LambdaRule`]).
        #[serde(default)]
        lambda_rule: LambdaRule,
        /// Lower bound of the theory factor (unset: unbounded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lambda_min: Option<f64>,
        /// Upper bound of the theory factor (unset: unbounded).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lambda_max: Option<f64>,
        /// Weight of each group's advantages from its pass rate, applied last: `none`
        /// (default) or `linear_r` (w = 1/p̂). See [`PromptWeight`].
        #[serde(default, skip_serializing_if = "PromptWeight::is_none")]
        prompt_weight: PromptWeight,
    },
    /// REINFORCE++: outcome rewards whitened over the batch's tokens, no group baseline.
    ReinforcePlusPlus {
        /// The batch's rewards equal within this ⇒ all advantages exactly 0.
        #[serde(default = "default_equal_tol")]
        equal_tol: f64,
        /// DAA after the whitening (unset: none). See [`DaaConfig`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        daa: Option<DaaConfig>,
        /// Weight of each group's advantages from its pass rate, applied last: `none`
        /// (default) or `linear_r` (w = 1/p̂). See [`PromptWeight`].
        #[serde(default, skip_serializing_if = "PromptWeight::is_none")]
        prompt_weight: PromptWeight,
    },
    /// REINFORCE++-baseline: group-mean-centred rewards whitened over the batch's tokens.
    ReinforcePlusPlusBaseline {
        /// Equal-reward tolerance (of a group, and of the batch after centring).
        #[serde(default = "default_equal_tol")]
        equal_tol: f64,
        /// DAA after the whitening (unset: none). See [`DaaConfig`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        daa: Option<DaaConfig>,
        /// Weight of each group's advantages from its pass rate, applied last: `none`
        /// (default) or `linear_r` (w = 1/p̂). See [`PromptWeight`].
        #[serde(default, skip_serializing_if = "PromptWeight::is_none")]
        prompt_weight: PromptWeight,
    },
}

impl EstimatorConfig {
    /// The estimator registered under `name`, with its paper defaults.
    pub fn from_name(name: &str) -> Result<Self, AdvantageError> {
        Ok(match name {
            "grpo" => EstimatorConfig::Grpo {
                std: StdMode::Sample,
                eps: DEFAULT_EPS,
                equal_tol: DEFAULT_EQUAL_TOL,
                prompt_weight: PromptWeight::None,
            },
            "dr_grpo" => EstimatorConfig::DrGrpo {
                equal_tol: DEFAULT_EQUAL_TOL,
                prompt_weight: PromptWeight::None,
            },
            "rloo" => EstimatorConfig::Rloo {
                equal_tol: DEFAULT_EQUAL_TOL,
                prompt_weight: PromptWeight::None,
            },
            "dapo" => EstimatorConfig::Dapo {
                std: StdMode::Sample,
                eps: DEFAULT_EPS,
                equal_tol: DEFAULT_EQUAL_TOL,
                prompt_weight: PromptWeight::None,
            },
            "da3po" => EstimatorConfig::Da3po {
                std: StdMode::Sample,
                eps: DEFAULT_EPS,
                equal_tol: DEFAULT_EQUAL_TOL,
                lambda: crate::daa::DEFAULT_LAMBDA,
                tau: crate::daa::DEFAULT_TAU,
                negative_advantage: NegativeAdvantage::Keep,
                lambda_rule: LambdaRule::Constant,
                lambda_min: None,
                lambda_max: None,
                prompt_weight: PromptWeight::None,
            },
            "reinforce_plus_plus" => EstimatorConfig::ReinforcePlusPlus {
                equal_tol: DEFAULT_EQUAL_TOL,
                daa: None,
                prompt_weight: PromptWeight::None,
            },
            "reinforce_plus_plus_baseline" => EstimatorConfig::ReinforcePlusPlusBaseline {
                equal_tol: DEFAULT_EQUAL_TOL,
                daa: None,
                prompt_weight: PromptWeight::None,
            },
            other => {
                return Err(AdvantageError::UnknownEstimator {
                    name: other.to_string(),
                    valid: ESTIMATOR_NAMES.to_vec(),
                });
            }
        })
    }

    /// The registry name.
    pub fn name(&self) -> &'static str {
        match self {
            EstimatorConfig::Grpo { .. } => "grpo",
            EstimatorConfig::DrGrpo { .. } => "dr_grpo",
            EstimatorConfig::Rloo { .. } => "rloo",
            EstimatorConfig::Dapo { .. } => "dapo",
            EstimatorConfig::Da3po { .. } => "da3po",
            EstimatorConfig::ReinforcePlusPlus { .. } => "reinforce_plus_plus",
            EstimatorConfig::ReinforcePlusPlusBaseline { .. } => "reinforce_plus_plus_baseline",
        }
    }

    /// The DAA layer of `reinforce_plus_plus` and `reinforce_plus_plus_baseline`, if set.
    fn daa_layer(&mut self) -> Option<&mut Option<DaaConfig>> {
        match self {
            EstimatorConfig::ReinforcePlusPlus { daa, .. }
            | EstimatorConfig::ReinforcePlusPlusBaseline { daa, .. } => Some(daa),
            _ => None,
        }
    }

    /// Sets the std mode where the estimator has one; errors for estimators without std.
    pub fn with_std(mut self, mode: StdMode) -> Result<Self, AdvantageError> {
        match &mut self {
            EstimatorConfig::Grpo { std, .. }
            | EstimatorConfig::Dapo { std, .. }
            | EstimatorConfig::Da3po { std, .. } => *std = mode,
            _ => {
                return Err(AdvantageError::InvalidConfig {
                    field: "std",
                    value: format!("{mode:?} for `{}`", self.name()),
                    expected: "std is a setting of grpo, dapo and da3po only",
                });
            }
        }
        Ok(self)
    }

    /// Sets how DAA chooses λ ([`LambdaRule`]) and the theory factor's bounds: `da3po`'s, or the
    /// DAA layer of `reinforce_plus_plus[_baseline]` once set ([`EstimatorConfig::with_daa`]);
    /// errors otherwise. The values are checked by [`EstimatorConfig::build`].
    pub fn with_lambda_rule(
        mut self,
        rule: LambdaRule,
        min: Option<f64>,
        max: Option<f64>,
    ) -> Result<Self, AdvantageError> {
        if let EstimatorConfig::Da3po {
            lambda_rule,
            lambda_min,
            lambda_max,
            ..
        } = &mut self
        {
            (*lambda_rule, *lambda_min, *lambda_max) = (rule, min, max);
            return Ok(self);
        }
        if let Some(Some(d)) = self.daa_layer() {
            (d.lambda_rule, d.lambda_min, d.lambda_max) = (rule, min, max);
            return Ok(self);
        }
        Err(AdvantageError::InvalidConfig {
            field: "lambda_rule",
            value: format!("{rule:?} for `{}`", self.name()),
            expected: DAA_SETTING,
        })
    }

    /// Sets DAA's λ and τ: `da3po`'s, or the DAA layer of `reinforce_plus_plus[_baseline]`
    /// (added with its other defaults when unset); errors for the other estimators.
    pub fn with_daa(mut self, new_lambda: f64, new_tau: f64) -> Result<Self, AdvantageError> {
        if let EstimatorConfig::Da3po { lambda, tau, .. } = &mut self {
            *lambda = new_lambda;
            *tau = new_tau;
            return Ok(self);
        }
        if let Some(layer) = self.daa_layer() {
            let d = layer.get_or_insert_with(DaaConfig::default);
            d.lambda = new_lambda;
            d.tau = new_tau;
            return Ok(self);
        }
        Err(AdvantageError::InvalidConfig {
            field: "lambda",
            value: format!("{new_lambda} for `{}`", self.name()),
            expected: "lambda and tau are settings of da3po, reinforce_plus_plus and \
                       reinforce_plus_plus_baseline only",
        })
    }

    /// Sets DAA's rule for negative advantages of correct responses: `da3po`'s, or the DAA layer
    /// of `reinforce_plus_plus[_baseline]` once set ([`EstimatorConfig::with_daa`]); errors
    /// otherwise.
    pub fn with_negative_advantage(
        mut self,
        rule: NegativeAdvantage,
    ) -> Result<Self, AdvantageError> {
        if let EstimatorConfig::Da3po {
            negative_advantage, ..
        } = &mut self
        {
            *negative_advantage = rule;
            return Ok(self);
        }
        if let Some(Some(d)) = self.daa_layer() {
            d.negative_advantage = rule;
            return Ok(self);
        }
        Err(AdvantageError::InvalidConfig {
            field: "negative_advantage",
            value: format!("{} for `{}`", rule.name(), self.name()),
            expected: DAA_SETTING,
        })
    }

    /// The weight of each group's advantages (`prompt_weight`).
    pub fn prompt_weight(&self) -> PromptWeight {
        match *self {
            EstimatorConfig::Grpo { prompt_weight, .. }
            | EstimatorConfig::DrGrpo { prompt_weight, .. }
            | EstimatorConfig::Rloo { prompt_weight, .. }
            | EstimatorConfig::Dapo { prompt_weight, .. }
            | EstimatorConfig::Da3po { prompt_weight, .. }
            | EstimatorConfig::ReinforcePlusPlus { prompt_weight, .. }
            | EstimatorConfig::ReinforcePlusPlusBaseline { prompt_weight, .. } => prompt_weight,
        }
    }

    /// Sets the weight of each group's advantages ([`PromptWeight`]); every estimator has it.
    pub fn with_prompt_weight(mut self, weight: PromptWeight) -> Self {
        match &mut self {
            EstimatorConfig::Grpo { prompt_weight, .. }
            | EstimatorConfig::DrGrpo { prompt_weight, .. }
            | EstimatorConfig::Rloo { prompt_weight, .. }
            | EstimatorConfig::Dapo { prompt_weight, .. }
            | EstimatorConfig::Da3po { prompt_weight, .. }
            | EstimatorConfig::ReinforcePlusPlus { prompt_weight, .. }
            | EstimatorConfig::ReinforcePlusPlusBaseline { prompt_weight, .. } => {
                *prompt_weight = weight
            }
        }
        self
    }

    /// Validates the settings and the configured group size, and builds the estimator. With a
    /// `prompt_weight` other than `none`, the estimator is wrapped in [`PromptWeighted`]: its
    /// advantages (after DAA, for `da3po`) are multiplied per group by w(p̂).
    pub fn build(&self, group_size: usize) -> Result<Box<dyn AdvantageEstimator>, AdvantageError> {
        let base = self.build_unweighted(group_size)?;
        Ok(match self.prompt_weight() {
            PromptWeight::None => base,
            weight => Box::new(PromptWeighted {
                inner: base,
                weight,
            }),
        })
    }

    fn build_unweighted(
        &self,
        group_size: usize,
    ) -> Result<Box<dyn AdvantageEstimator>, AdvantageError> {
        if group_size < 2 {
            return Err(AdvantageError::InvalidConfig {
                field: "group_size",
                value: group_size.to_string(),
                expected: "an integer >= 2 (a group needs a baseline)",
            });
        }
        let grpo = |std: StdMode, eps: f64, equal_tol: f64| -> Result<Grpo, AdvantageError> {
            check_nonneg("eps", eps)?;
            check_nonneg("equal_tol", equal_tol)?;
            Ok(Grpo {
                std,
                eps,
                equal_tol,
            })
        };
        Ok(match *self {
            EstimatorConfig::Grpo {
                std,
                eps,
                equal_tol,
                ..
            } => Box::new(grpo(std, eps, equal_tol)?),
            EstimatorConfig::DrGrpo { equal_tol, .. } => {
                check_nonneg("equal_tol", equal_tol)?;
                Box::new(DrGrpo { equal_tol })
            }
            EstimatorConfig::Rloo { equal_tol, .. } => {
                check_nonneg("equal_tol", equal_tol)?;
                Box::new(Rloo { equal_tol })
            }
            EstimatorConfig::Dapo {
                std,
                eps,
                equal_tol,
                ..
            } => Box::new(Dapo {
                grpo: grpo(std, eps, equal_tol)?,
            }),
            EstimatorConfig::Da3po {
                std,
                eps,
                equal_tol,
                lambda,
                tau,
                negative_advantage,
                lambda_rule,
                lambda_min,
                lambda_max,
                ..
            } => Box::new(Da3po {
                dapo: Dapo {
                    grpo: grpo(std, eps, equal_tol)?,
                },
                daa: DaaConfig {
                    lambda,
                    tau,
                    negative_advantage,
                    lambda_rule,
                    lambda_min,
                    lambda_max,
                }
                .build()?,
            }),
            EstimatorConfig::ReinforcePlusPlus { equal_tol, daa, .. }
            | EstimatorConfig::ReinforcePlusPlusBaseline { equal_tol, daa, .. } => {
                check_nonneg("equal_tol", equal_tol)?;
                Box::new(ReinforcePlusPlus {
                    baseline: matches!(self, EstimatorConfig::ReinforcePlusPlusBaseline { .. }),
                    equal_tol,
                    daa: daa.map(|d| d.build()).transpose()?,
                })
            }
        })
    }
}

/// What the DAA setters accept.
const DAA_SETTING: &str = "a DAA setting: of da3po, or of reinforce_plus_plus[_baseline] once \
                           `daa` is set (lambda, tau)";

fn check_nonneg(field: &'static str, v: f64) -> Result<(), AdvantageError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(AdvantageError::InvalidConfig {
            field,
            value: v.to_string(),
            expected: "a finite number >= 0",
        })
    }
}
