//! [`EstimatorConfig`]: an estimator by name with its paper defaults, validated, serialisable.

use serde::{Deserialize, Serialize};

use super::composed::Estimator;
use super::reinforce_pp::ReinforcePlusPlus;
use super::{AdvantageEstimator, DEFAULT_EPS, DEFAULT_EQUAL_TOL, DrGrpo, Grpo, Rloo, StdMode};
use crate::AdvantageError;
use crate::daa::{DaaConfig, LambdaRule, NegativeAdvantage};
use crate::weight::PromptWeight;

pub(super) fn default_eps() -> f64 {
    DEFAULT_EPS
}
pub(super) fn default_equal_tol() -> f64 {
    DEFAULT_EQUAL_TOL
}
fn default_gamma() -> f64 {
    1.0
}
fn is_one(x: &f64) -> bool {
    *x == 1.0
}
pub(super) fn default_lambda() -> f64 {
    crate::daa::DEFAULT_LAMBDA
}
pub(super) fn default_tau() -> f64 {
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
        /// Discount γ ∈ (0, 1] of the returns over a response's tokens (verl's
        /// `algorithm.gamma`); below 1 the advantages differ token by token.
        #[serde(default = "default_gamma", skip_serializing_if = "is_one")]
        gamma: f64,
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

rl_core::registry! {
    /// Names accepted by [`EstimatorConfig::from_name`], in registry order.
    pub const ESTIMATOR_NAMES;
    /// The estimator registered under `name`, with its paper defaults.
    fn EstimatorConfig::from_name -> AdvantageError, kind "advantage estimator" {
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
            gamma: 1.0,
            daa: None,
            prompt_weight: PromptWeight::None,
        },
        "reinforce_plus_plus_baseline" => EstimatorConfig::ReinforcePlusPlusBaseline {
            equal_tol: DEFAULT_EQUAL_TOL,
            daa: None,
            prompt_weight: PromptWeight::None,
        },
    }
}

impl EstimatorConfig {
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

    /// The discount γ of `reinforce_plus_plus` (1 for every other estimator: their advantages
    /// are the same on every token of a response).
    pub fn gamma(&self) -> f64 {
        match self {
            EstimatorConfig::ReinforcePlusPlus { gamma, .. } => *gamma,
            _ => 1.0,
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
                return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                    field: "std",
                    value: format!("{mode:?} for `{}`", self.name()),
                    expected: "std is a setting of grpo, dapo and da3po only",
                }));
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
        Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field: "lambda_rule",
            value: format!("{rule:?} for `{}`", self.name()),
            expected: DAA_SETTING,
        }))
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
        Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field: "lambda",
            value: format!("{new_lambda} for `{}`", self.name()),
            expected: "lambda and tau are settings of da3po, reinforce_plus_plus and \
                       reinforce_plus_plus_baseline only",
        }))
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
        Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field: "negative_advantage",
            value: format!("{} for `{}`", rule.name(), self.name()),
            expected: DAA_SETTING,
        }))
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

    /// The DAA settings: `da3po`'s, or the `daa` layer of `reinforce_plus_plus[_baseline]` when
    /// set; `None` for the estimators without DAA.
    pub fn daa_config(&self) -> Option<DaaConfig> {
        match *self {
            EstimatorConfig::Da3po {
                lambda,
                tau,
                negative_advantage,
                lambda_rule,
                lambda_min,
                lambda_max,
                ..
            } => Some(DaaConfig {
                lambda,
                tau,
                negative_advantage,
                lambda_rule,
                lambda_min,
                lambda_max,
            }),
            EstimatorConfig::ReinforcePlusPlus { daa, .. }
            | EstimatorConfig::ReinforcePlusPlusBaseline { daa, .. } => daa,
            _ => None,
        }
    }

    /// Validates the settings and the configured group size, and builds the estimator: the
    /// baseline ([`EstimatorConfig::build_baseline`]), then DAA ([`EstimatorConfig::daa_config`])
    /// and the `prompt_weight`, under the config's name ([`Estimator`]).
    pub fn build(&self, group_size: usize) -> Result<Estimator, AdvantageError> {
        let mut estimator =
            Estimator::from_boxed(self.build_baseline(group_size)?).named(self.name());
        if let Some(daa) = self.daa_config() {
            estimator = estimator.with_daa(daa.build()?);
        }
        Ok(estimator.with_prompt_weight(self.prompt_weight()))
    }

    /// The baseline alone, validated: GRPO for `grpo`, `dapo` and `da3po`; Dr. GRPO; RLOO;
    /// REINFORCE++ with or without its group baseline.
    pub fn build_baseline(
        &self,
        group_size: usize,
    ) -> Result<Box<dyn AdvantageEstimator>, AdvantageError> {
        if group_size < 2 {
            return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field: "group_size",
                value: group_size.to_string(),
                expected: "an integer >= 2 (a group needs a baseline)",
            }));
        }
        Ok(match *self {
            EstimatorConfig::Grpo {
                std,
                eps,
                equal_tol,
                ..
            }
            | EstimatorConfig::Dapo {
                std,
                eps,
                equal_tol,
                ..
            }
            | EstimatorConfig::Da3po {
                std,
                eps,
                equal_tol,
                ..
            } => {
                check_nonneg("eps", eps)?;
                check_nonneg("equal_tol", equal_tol)?;
                Box::new(Grpo {
                    std,
                    eps,
                    equal_tol,
                })
            }
            EstimatorConfig::DrGrpo { equal_tol, .. } => {
                check_nonneg("equal_tol", equal_tol)?;
                Box::new(DrGrpo { equal_tol })
            }
            EstimatorConfig::Rloo { equal_tol, .. } => {
                check_nonneg("equal_tol", equal_tol)?;
                Box::new(Rloo { equal_tol })
            }
            EstimatorConfig::ReinforcePlusPlus {
                equal_tol, gamma, ..
            } => {
                check_nonneg("equal_tol", equal_tol)?;
                if !(gamma > 0.0 && gamma <= 1.0) {
                    return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                        field: "gamma",
                        value: gamma.to_string(),
                        expected: "a number in (0, 1]",
                    }));
                }
                Box::new(ReinforcePlusPlus {
                    baseline: false,
                    equal_tol,
                    gamma,
                })
            }
            EstimatorConfig::ReinforcePlusPlusBaseline { equal_tol, .. } => {
                check_nonneg("equal_tol", equal_tol)?;
                Box::new(ReinforcePlusPlus {
                    baseline: true,
                    equal_tol,
                    gamma: 1.0,
                })
            }
        })
    }
}

/// What the DAA setters accept.
pub(super) const DAA_SETTING: &str = "a DAA setting: of da3po, or of reinforce_plus_plus[_baseline] once \
                           `daa` is set (lambda, tau)";

pub(super) fn check_nonneg(field: &'static str, v: f64) -> Result<(), AdvantageError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field,
            value: v.to_string(),
            expected: "a finite number >= 0",
        }))
    }
}
