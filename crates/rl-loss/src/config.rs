use serde::{Deserialize, Serialize};

use crate::{IsCorrection, LossError};

/// Registered aggregation names.
pub const AGGREGATION_NAMES: [&str; 4] = [
    "token_mean",
    "seq_mean_token_mean",
    "seq_mean_token_sum",
    "seq_mean_token_sum_norm",
];

/// The per-token policy loss.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case", deny_unknown_fields)]
pub enum PolicyLoss {
    /// PPO clipped surrogate with decoupled ε_low / ε_high and optional dual-clip c.
    Ppo {
        /// ε_low (ratio floor 1 − ε_low).
        clip_low: f64,
        /// ε_high (ratio ceiling 1 + ε_high).
        clip_high: f64,
        /// Dual-clip constant c > 1 for negative advantages; None disables it.
        #[serde(default)]
        dual_clip: Option<f64>,
    },
    /// GSPO: sequence-level ratio, clipped per sequence.
    Gspo {
        /// ε_low.
        clip_low: f64,
        /// ε_high.
        clip_high: f64,
    },
    /// GSPO-token: the sequence ratio attached to every token with a stop-gradient.
    GspoToken {
        /// ε_low.
        clip_low: f64,
        /// ε_high.
        clip_high: f64,
    },
    /// REINFORCE: −A·logp, no ratio.
    Reinforce,
    /// CISPO (MiniMax-M1, arXiv 2506.13585; verl `cispo`): ℓ = −sg(clip(r, 1−ε_low, 1+ε_high))·A·logp.
    /// The clipped ratio is a detached weight, so every token keeps a REINFORCE gradient.
    Cispo {
        /// ε_low (weight floor 1 − ε_low; any value >= 1 leaves the weight without a floor, as
        /// the paper runs it).
        clip_low: f64,
        /// ε_high (weight ceiling 1 + ε_high).
        clip_high: f64,
    },
}

rl_core::registry! {
    /// Registered policy-loss names.
    pub const POLICY_LOSS_NAMES;
    /// Paper defaults by name: `ppo` 0.2/0.2 (GRPO), `gspo`/`gspo_token` 3e-4/4e-4, `reinforce`,
    /// `cispo` ε_low = 10 (no floor: the paper sets ε_low "to a large value") and ε_high = 0.2
    /// (verl's `examples/cispo_trainer`; the paper does not publish its ε_high).
    fn PolicyLoss::from_name -> LossError, kind "policy loss" {
        "ppo" => PolicyLoss::Ppo {
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: None,
        },
        "gspo" => PolicyLoss::Gspo {
            clip_low: 3e-4,
            clip_high: 4e-4,
        },
        "gspo_token" => PolicyLoss::GspoToken {
            clip_low: 3e-4,
            clip_high: 4e-4,
        },
        "reinforce" => PolicyLoss::Reinforce,
        "cispo" => PolicyLoss::Cispo {
            clip_low: 10.0,
            clip_high: 0.2,
        },
    }
}

impl PolicyLoss {
    /// Registry name.
    pub fn name(&self) -> &'static str {
        match self {
            PolicyLoss::Ppo { .. } => "ppo",
            PolicyLoss::Gspo { .. } => "gspo",
            PolicyLoss::GspoToken { .. } => "gspo_token",
            PolicyLoss::Reinforce => "reinforce",
            PolicyLoss::Cispo { .. } => "cispo",
        }
    }

    /// Checks ranges.
    pub fn validate(&self) -> Result<(), LossError> {
        let clips = match *self {
            PolicyLoss::Ppo {
                clip_low,
                clip_high,
                dual_clip,
            } => {
                if let Some(c) = dual_clip
                    && !(c.is_finite() && c > 1.0)
                {
                    return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                        field: "dual_clip",
                        value: c.to_string(),
                        expected: "a number > 1 (verl asserts clip_ratio_c > 1), or absent",
                    }));
                }
                Some((clip_low, clip_high))
            }
            PolicyLoss::Gspo {
                clip_low,
                clip_high,
            }
            | PolicyLoss::GspoToken {
                clip_low,
                clip_high,
            } => Some((clip_low, clip_high)),
            PolicyLoss::Reinforce => None,
            PolicyLoss::Cispo {
                clip_low,
                clip_high,
            } => {
                // A weight floor 1 − ε_low <= 0 is no floor: the ratio is positive.
                if !(clip_low.is_finite() && clip_low >= 0.0) {
                    return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                        field: "clip_low",
                        value: clip_low.to_string(),
                        expected: "a finite number >= 0 (>= 1: no lower bound on the weight)",
                    }));
                }
                Some((0.0, clip_high))
            }
        };
        if let Some((lo, hi)) = clips {
            if !(lo.is_finite() && (0.0..1.0).contains(&lo)) {
                return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                    field: "clip_low",
                    value: lo.to_string(),
                    expected: "a number in [0, 1)",
                }));
            }
            if !(hi.is_finite() && hi >= 0.0) {
                return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                    field: "clip_high",
                    value: hi.to_string(),
                    expected: "a finite number >= 0",
                }));
            }
        }
        Ok(())
    }
}

/// How per-token losses become one scalar.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Aggregation {
    /// Σ m·ℓ / N_tokens (DAPO's token-level loss).
    TokenMean,
    /// Σ_i (Σ_t m·ℓ / |o_i|) / N_seqs (GRPO).
    SeqMeanTokenMean,
    /// Σ_i Σ_t m·ℓ / N_seqs.
    SeqMeanTokenSum,
    /// Σ_i Σ_t m·ℓ / (N_seqs · constant) (Dr. GRPO).
    SeqMeanTokenSumNorm {
        /// The fixed length constant L (e.g. the maximum generation length).
        constant: f64,
    },
}

impl Aggregation {
    /// By name; `seq_mean_token_sum_norm` takes its constant from `constant`.
    pub fn from_name(name: &str, constant: Option<f64>) -> Result<Self, LossError> {
        match name {
            "token_mean" => Ok(Aggregation::TokenMean),
            "seq_mean_token_mean" => Ok(Aggregation::SeqMeanTokenMean),
            "seq_mean_token_sum" => Ok(Aggregation::SeqMeanTokenSum),
            "seq_mean_token_sum_norm" => match constant {
                Some(c) => Ok(Aggregation::SeqMeanTokenSumNorm { constant: c }),
                None => Err(LossError::InvalidConfig(rl_core::InvalidValue {
                    field: "constant",
                    value: "absent".into(),
                    expected: "seq_mean_token_sum_norm needs a fixed constant (e.g. max response length)",
                })),
            },
            other => {
                Err(rl_core::UnknownName::new("aggregation", other, &AGGREGATION_NAMES).into())
            }
        }
    }

    /// Registry name.
    pub fn name(&self) -> &'static str {
        match self {
            Aggregation::TokenMean => "token_mean",
            Aggregation::SeqMeanTokenMean => "seq_mean_token_mean",
            Aggregation::SeqMeanTokenSum => "seq_mean_token_sum",
            Aggregation::SeqMeanTokenSumNorm { .. } => "seq_mean_token_sum_norm",
        }
    }

    /// Checks the constant.
    pub fn validate(&self) -> Result<(), LossError> {
        if let Aggregation::SeqMeanTokenSumNorm { constant } = *self
            && !(constant.is_finite() && constant > 0.0)
        {
            return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                field: "constant",
                value: constant.to_string(),
                expected: "a finite number > 0",
            }));
        }
        Ok(())
    }
}

/// KL estimator of KL(π_θ ‖ π_ref) per token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlEstimator {
    /// x.
    K1,
    /// x²/2.
    K2,
    /// e^{−x} + x − 1 (verl `low_var_kl`, GRPO's estimator).
    K3,
    /// |x|.
    Abs,
}

rl_core::registry! {
    /// Registered KL estimator names.
    pub const KL_NAMES;
    /// By name.
    fn KlEstimator::from_name -> LossError, kind "KL estimator" {
        "k1" => KlEstimator::K1,
        "k2" => KlEstimator::K2,
        "k3" => KlEstimator::K3,
        "abs" => KlEstimator::Abs,
    }
}

/// The KL penalty in the loss.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KlConfig {
    /// Estimator.
    pub estimator: KlEstimator,
    /// Coefficient β.
    pub coef: f64,
    /// Forward value of the estimator, gradient of k2 (verl's "+" suffix).
    #[serde(default)]
    pub straight_through: bool,
}

/// A whole loss configuration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossConfig {
    /// The per-token policy loss.
    pub policy: PolicyLoss,
    /// The aggregation.
    pub aggregation: Aggregation,
    /// KL penalty to a reference model (None: no KL, no reference model needed).
    #[serde(default)]
    pub kl: Option<KlConfig>,
    /// Entropy bonus coefficient (subtracted from the loss); default 0.
    #[serde(default)]
    pub entropy_coef: f64,
    /// Importance-sampling correction for the rollout engine's log-probs (default `auto`).
    #[serde(default)]
    pub is_correction: IsCorrection,
}

impl LossConfig {
    /// Validates every part. GSPO forces `seq_mean_token_mean` (as in the paper and verl).
    pub fn validate(&self) -> Result<(), LossError> {
        self.policy.validate()?;
        self.aggregation.validate()?;
        if matches!(
            self.policy,
            PolicyLoss::Gspo { .. } | PolicyLoss::GspoToken { .. }
        ) && self.aggregation != Aggregation::SeqMeanTokenMean
        {
            return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                field: "aggregation",
                value: self.aggregation.name().into(),
                expected: "seq_mean_token_mean (GSPO normalises per sequence)",
            }));
        }
        if let Some(kl) = self.kl
            && !(kl.coef.is_finite() && kl.coef >= 0.0)
        {
            return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                field: "kl.coef",
                value: kl.coef.to_string(),
                expected: "a finite number >= 0",
            }));
        }
        self.is_correction.validate()?;
        if !self.entropy_coef.is_finite() {
            return Err(LossError::InvalidConfig(rl_core::InvalidValue {
                field: "entropy_coef",
                value: self.entropy_coef.to_string(),
                expected: "a finite number",
            }));
        }
        Ok(())
    }
}
