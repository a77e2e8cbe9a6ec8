//! `[critic]`: PPO's value model and GAE (docs/algorithms/ppo.md), present exactly when
//! `algorithm = "ppo"`; checked by `validate.rs`. The defaults are verl 0.9.1's
//! (`ppo_trainer.yaml`: `algorithm.gamma`, `algorithm.lam`, the ratio of `critic.optim.lr` to the actor's,
//! `critic.cliprange_value`, `trainer.critic_warmup`, `algorithm.kl_ctrl`).

use std::path::PathBuf;

use rl_advantage::gae::Gae;
use rl_advantage::kl_reward::{KlControl, KlInReward, KlPenalty};
use serde::{Deserialize, Serialize};

/// The critic and its advantages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CriticSection {
    /// An HF `*ForTokenClassification` folder with one label to start the critic from; absent:
    /// the policy's decoder with a new value head (verl's default: the critic loads the actor's
    /// weights).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<PathBuf>,
    /// The critic's learning rate (its AdamW takes every other setting from `[optim]`); absent:
    /// 10 × `optim.lr`, the ratio of verl's defaults (actor 1e-6, critic 1e-5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// Steps at the start of the run that train only the critic (the policy waits).
    #[serde(default)]
    pub warmup_steps: usize,
    /// ε of the clipped value loss.
    #[serde(default = "default_cliprange")]
    pub cliprange_value: f64,
    /// GAE's discount γ.
    #[serde(default = "one")]
    pub gamma: f64,
    /// GAE's trace decay λ.
    #[serde(default = "one")]
    pub lam: f64,
    /// A KL penalty to the reference policy in every token's reward (verl's
    /// `use_kl_in_reward`); off unless present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kl_in_reward: Option<KlInRewardSection>,
}

/// `[critic.kl_in_reward]`: r_t = score_t − β·KL(π_old ‖ π_ref)_t.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KlInRewardSection {
    /// β, the starting value when adaptive.
    #[serde(default = "default_kl_coef")]
    pub coef: f64,
    /// The per-token estimate: `kl` (k1), `abs`, `mse` (k2) or `low_var_kl` (k3).
    #[serde(default = "default_penalty")]
    pub penalty: KlPenalty,
    /// Adapt β towards this batch KL (verl's `AdaptiveKLController`); absent: β fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_kl: Option<f64>,
    /// The adaptive controller's horizon (responses).
    #[serde(default = "default_horizon")]
    pub horizon: f64,
}

fn default_cliprange() -> f64 {
    rl_loss::DEFAULT_CLIPRANGE_VALUE
}

fn one() -> f64 {
    1.0
}

fn default_kl_coef() -> f64 {
    0.001
}

fn default_penalty() -> KlPenalty {
    KlPenalty::Kl
}

fn default_horizon() -> f64 {
    10_000.0
}

impl Default for CriticSection {
    fn default() -> Self {
        Self {
            model: None,
            lr: None,
            warmup_steps: 0,
            cliprange_value: default_cliprange(),
            gamma: 1.0,
            lam: 1.0,
            kl_in_reward: None,
        }
    }
}

impl CriticSection {
    /// The critic's learning rate given the policy's `optim.lr`.
    pub fn lr(&self, policy_lr: f64) -> f64 {
        self.lr.unwrap_or(10.0 * policy_lr)
    }

    /// GAE with this section's γ and λ (checked).
    pub fn gae(&self) -> Result<Gae, rl_advantage::AdvantageError> {
        Gae::new(self.gamma, self.lam)
    }

    /// The KL penalty in the reward at the start of a run (checked); `None` when off.
    pub fn kl_in_reward(&self) -> Result<Option<KlInReward>, rl_advantage::AdvantageError> {
        self.kl_in_reward
            .as_ref()
            .map(|k| {
                let control = match k.target_kl {
                    Some(target) => KlControl::Adaptive {
                        target,
                        horizon: k.horizon,
                    },
                    None => KlControl::Fixed,
                };
                KlInReward::new(k.coef, k.penalty, control)
            })
            .transpose()
    }
}
