//! Algorithm presets: the paper defaults of each registered algorithm over one configuration
//! ([`TrainConfig::apply_preset`], names in [`ALGORITHMS`]).

use rl_advantage::{EstimatorConfig, StdMode};
use rl_loss::{Aggregation, KlConfig, KlEstimator, LossConfig, PolicyLoss};
use rl_sampler::{FilterConfig, FilterMetric};
use rl_verifier::OverlongPolicy;

use super::{ALGORITHMS, TrainConfig};
use crate::TrainerError;

impl TrainConfig {
    /// Sets the algorithm sections (filter, estimator, loss, shaping, mini-batching) to the
    /// preset's paper defaults, keeping the run-size fields.
    ///
    /// * `grpo` (DeepSeekMath): no filter, z-score (sample std), PPO ε 0.2, seq-mean-token-mean,
    ///   k3 KL with β = 0.04 to the initial policy.
    /// * `dr_grpo`: mean-centred advantages, PPO ε 0.2, token sum over a constant (max length).
    /// * `dapo`: dynamic sampling on correctness, clip-higher 0.2/0.28 with dual-clip c = 10
    ///   (verl's DAPO script), token-mean, soft overlong punishment with L_max =
    ///   `rollout.max_new_tokens` and L_cache = L_max/5 (20480/4096 in the paper), no KL. (The
    ///   paper's ±1 rewards come from the `dapo` verifier's default reward map.)
    /// * `da3po`: `dapo` + DAA (λ = 2, τ = 0.5).
    /// * `rloo`: leave-one-out baseline with the REINFORCE loss summed over each sequence
    ///   (Ahmadian et al. 2024, arXiv 2402.14740); the paper's KL-in-reward is not offered.
    /// * `gspo`: sequence-level ratio with ε 3e-4/4e-4, seq-mean-token-mean, 4 mini-batches per
    ///   rollout batch (TRL's steps_per_generation = 4), no KL.
    /// * `cispo` (MiniMax-M1, arXiv 2506.13585): GRPO's group advantages (sample std, ε 1e-6),
    ///   the CISPO loss with ε_low = 10 (no floor on the weight: the paper sets ε_low "to a large
    ///   value") and ε_high = 0.2 (verl's `examples/cispo_trainer`; the paper does not publish
    ///   its value), token-mean over the whole batch (the paper's 1/Σ|o_i|), no KL (the paper's
    ///   objective has none; verl's example script adds a k3 KL loss with β = 0.001), no filter.
    /// * `reinforce_pp` / `reinforce_pp_baseline` (REINFORCE++, arXiv 2501.03262; verl's
    ///   `examples/reinforce_plus_plus_trainer`): the `reinforce_plus_plus[_baseline]` estimator
    ///   (advantages whitened over the batch's tokens), PPO clip 0.2/0.2 and token-mean (verl's
    ///   actor defaults, which that script keeps), no KL loss, no filter. verl's script puts a KL
    ///   penalty in the reward (`use_kl_in_reward`), which rlvr offers only with `ppo`'s critic.
    /// * `ppo` (verl's default algorithm, `ppo_trainer.yaml`): a critic (`[critic]`, its verl
    ///   defaults: lr 10 × `optim.lr`, value clip 0.5, γ = λ = 1, no warm-up, no KL in the reward) whose GAE
    ///   advantages replace `[advantage]`'s estimator, PPO clip 0.2/0.2, token-mean, no KL loss,
    ///   no filter.
    ///
    /// Run-size fields (group size, batch sizes, lengths, learning rate, epochs, and the number of
    /// mini-batches except for GSPO) are left as they are.
    pub fn apply_preset(&mut self, name: &str) -> Result<(), TrainerError> {
        let max_len = self.rollout.max_new_tokens.max(1);
        let ppo = |lo: f64, hi: f64, dual: Option<f64>| PolicyLoss::Ppo {
            clip_low: lo,
            clip_high: hi,
            dual_clip: dual,
        };
        let dapo_overlong = OverlongPolicy::SoftPunish {
            max_len,
            cache_len: (max_len / 5).max(1),
            penalty_factor: 1.0,
            mask_truncated: false,
        };
        let est = |n: &str| EstimatorConfig::from_name(n).expect("registered estimator");
        match name {
            "grpo" => {
                self.filter = FilterConfig::None;
                self.advantage = est("grpo").with_std(StdMode::Sample).expect("grpo has std");
                self.loss = LossConfig {
                    policy: ppo(0.2, 0.2, None),
                    aggregation: Aggregation::SeqMeanTokenMean,
                    kl: Some(KlConfig {
                        estimator: KlEstimator::K3,
                        coef: 0.04,
                        straight_through: false,
                    }),
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = OverlongPolicy::Off;
            }
            "dr_grpo" => {
                self.filter = FilterConfig::None;
                self.advantage = est("dr_grpo");
                self.loss = LossConfig {
                    policy: ppo(0.2, 0.2, None),
                    aggregation: Aggregation::SeqMeanTokenSumNorm {
                        constant: max_len as f64,
                    },
                    kl: None,
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = OverlongPolicy::Off;
            }
            "rloo" => {
                self.filter = FilterConfig::None;
                self.advantage = est("rloo");
                self.loss = LossConfig {
                    policy: PolicyLoss::Reinforce,
                    aggregation: Aggregation::SeqMeanTokenSum,
                    kl: None,
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = OverlongPolicy::Off;
            }
            "dapo" | "da3po" => {
                self.filter = FilterConfig::DynamicSampling {
                    metric: FilterMetric::Correct,
                    reward_tol: 0.0,
                };
                self.advantage = if name == "dapo" {
                    est("dapo")
                } else {
                    est("da3po")
                };
                self.loss = LossConfig {
                    policy: ppo(0.2, 0.28, Some(10.0)),
                    aggregation: Aggregation::TokenMean,
                    kl: None,
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = dapo_overlong;
            }
            "gspo" => {
                self.filter = FilterConfig::None;
                self.advantage = est("grpo");
                self.loss = LossConfig {
                    policy: PolicyLoss::from_name("gspo").expect("registered"),
                    aggregation: Aggregation::SeqMeanTokenMean,
                    kl: None,
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = OverlongPolicy::Off;
                self.optim.mini_batches = 4;
            }
            "cispo" => {
                self.filter = FilterConfig::None;
                self.advantage = est("grpo").with_std(StdMode::Sample).expect("grpo has std");
                self.loss = LossConfig {
                    policy: PolicyLoss::from_name("cispo").expect("registered"),
                    aggregation: Aggregation::TokenMean,
                    kl: None,
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = OverlongPolicy::Off;
            }
            "reinforce_pp" | "reinforce_pp_baseline" => {
                self.filter = FilterConfig::None;
                self.advantage = if name == "reinforce_pp" {
                    est("reinforce_plus_plus")
                } else {
                    est("reinforce_plus_plus_baseline")
                };
                self.loss = LossConfig {
                    policy: ppo(0.2, 0.2, None),
                    aggregation: Aggregation::TokenMean,
                    kl: None,
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = OverlongPolicy::Off;
            }
            "ppo" => {
                self.filter = FilterConfig::None;
                self.loss = LossConfig {
                    policy: ppo(0.2, 0.2, None),
                    aggregation: Aggregation::TokenMean,
                    kl: None,
                    entropy_coef: 0.0,
                    is_correction: Default::default(),
                };
                self.reward.overlong = OverlongPolicy::Off;
            }
            other => {
                return Err(TrainerError::Config {
                    field: "algorithm".into(),
                    message: rl_advantage::UnknownName::new("algorithm", other, &ALGORITHMS)
                        .to_string(),
                });
            }
        }
        // The critic is PPO's: the preset adds it with verl's defaults, the others drop it.
        self.critic = (name == "ppo").then(super::CriticSection::default);
        self.algorithm = name.to_string();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three presets of issue 44 with their sources' values (see `apply_preset`), and the
    /// registry listing them.
    #[test]
    fn cispo_and_reinforce_pp_presets() {
        for name in ["cispo", "reinforce_pp", "reinforce_pp_baseline"] {
            assert!(ALGORITHMS.contains(&name), "{name}");
        }
        let mut c = TrainConfig::default();
        c.apply_preset("cispo").unwrap();
        assert_eq!(c.algorithm, "cispo");
        assert_eq!(
            c.loss.policy,
            PolicyLoss::Cispo {
                clip_low: 10.0,
                clip_high: 0.2
            }
        );
        assert_eq!(c.loss.aggregation, Aggregation::TokenMean);
        assert!(c.loss.kl.is_none());
        assert_eq!(c.filter, FilterConfig::None);
        assert_eq!(
            c.advantage,
            EstimatorConfig::from_name("grpo")
                .unwrap()
                .with_std(StdMode::Sample)
                .unwrap()
        );
        assert_eq!(c.reward.overlong, OverlongPolicy::Off);
        assert_eq!(c.loss.entropy_coef, 0.0);
        c.loss.validate().unwrap();
        for (preset, estimator) in [
            ("reinforce_pp", "reinforce_plus_plus"),
            ("reinforce_pp_baseline", "reinforce_plus_plus_baseline"),
        ] {
            let mut c = TrainConfig::default();
            c.apply_preset(preset).unwrap();
            assert_eq!(c.advantage, EstimatorConfig::from_name(estimator).unwrap());
            assert_eq!(
                c.loss.policy,
                PolicyLoss::Ppo {
                    clip_low: 0.2,
                    clip_high: 0.2,
                    dual_clip: None
                }
            );
            assert_eq!(c.loss.aggregation, Aggregation::TokenMean);
            assert!(c.loss.kl.is_none());
            assert_eq!(c.filter, FilterConfig::None);
            assert!(c.build_estimator().unwrap().batch_level());
        }
    }
}
