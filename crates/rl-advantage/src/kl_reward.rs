//! The KL penalty in the reward, for PPO with a critic (verl's `algorithm.use_kl_in_reward`,
//! `ray_trainer.apply_kl_penalty`; Ziegler et al. 2019, arXiv 1909.08593): every response token's
//! reward becomes
//!
//! ```text
//! r_t = score_t − β · KL_t          (KL_t: an estimate of log π_old(y_t) − log π_ref(y_t))
//! ```
//!
//! before GAE ([`crate::gae`]). β is fixed, or adapted after every batch as verl's
//! `AdaptiveKLController` does: e = clip(KL / target − 1, −0.2, 0.2), β ← β·(1 + e·n / horizon),
//! with KL the batch mean of each response's mean KL and n the batch's response count. The
//! estimators are verl's `kl_penalty` ones: `kl` (k1), `abs`, `mse` (k2) and `low_var_kl` (k3,
//! clamped as verl clamps it). Tested against verl's own functions on three successive batches
//! (`tests/kl_reward.rs`, made by `tools/verl/gen_verl_fixtures.py`).

use serde::{Deserialize, Serialize};

use crate::AdvantageError;

/// The per-token KL estimate of the reward's penalty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlPenalty {
    /// k1: log π − log π_ref.
    Kl,
    /// |log π − log π_ref|.
    Abs,
    /// k2: ½ (log π − log π_ref)².
    Mse,
    /// k3: e^x − x − 1 with x = log π_ref − log π clamped to [−20, 20], the result to [−10, 10].
    LowVarKl,
}

impl KlPenalty {
    /// The estimate for one token.
    pub fn estimate(self, logp: f64, ref_logp: f64) -> f64 {
        match self {
            KlPenalty::Kl => logp - ref_logp,
            KlPenalty::Abs => (logp - ref_logp).abs(),
            KlPenalty::Mse => 0.5 * (logp - ref_logp) * (logp - ref_logp),
            KlPenalty::LowVarKl => {
                let x = (ref_logp - logp).clamp(-20.0, 20.0);
                (x.exp() - x - 1.0).clamp(-10.0, 10.0)
            }
        }
    }
}

/// How β moves between batches.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum KlControl {
    /// β stays as set.
    Fixed,
    /// verl's `AdaptiveKLController` (see the module documentation).
    Adaptive {
        /// The KL per token the controller steers towards (> 0).
        target: f64,
        /// Responses over which a full correction is made (> 0).
        horizon: f64,
    },
}

/// One response's inputs: its token scores (an outcome score on the last token), the log-probs
/// of the policy that generated it and of the reference, and the response mask.
#[derive(Clone, Copy, Debug)]
pub struct KlRewardInput<'a> {
    /// Scores per token.
    pub scores: &'a [f64],
    /// log π_old(y_t).
    pub logp: &'a [f64],
    /// log π_ref(y_t).
    pub ref_logp: &'a [f64],
    /// true on the tokens the policy sampled.
    pub mask: &'a [bool],
}

/// The penalised rewards of a batch and what the controller saw.
#[derive(Clone, Debug, PartialEq)]
pub struct KlRewardOutput {
    /// r_t per response and token (0 on masked-out tokens' penalty: their score is kept).
    pub rewards: Vec<Vec<f64>>,
    /// The β these rewards used.
    pub beta: f64,
    /// The batch's KL: the mean over responses of each response's masked mean KL.
    pub kl: f64,
}

/// The KL penalty with its coefficient (its state: β).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KlInReward {
    /// The current β.
    pub beta: f64,
    /// The estimator.
    pub penalty: KlPenalty,
    /// How β moves.
    pub control: KlControl,
}

impl KlInReward {
    /// Checks β ≥ 0 and the controller's target and horizon (> 0), all finite.
    pub fn new(beta: f64, penalty: KlPenalty, control: KlControl) -> Result<Self, AdvantageError> {
        let bad = |field: &'static str, v: f64, expected: &'static str| {
            AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field,
                value: v.to_string(),
                expected,
            })
        };
        if !(beta.is_finite() && beta >= 0.0) {
            return Err(bad("kl_ctrl.kl_coef", beta, "a finite number >= 0"));
        }
        if let KlControl::Adaptive { target, horizon } = control {
            if !(target.is_finite() && target > 0.0) {
                return Err(bad("kl_ctrl.target_kl", target, "a finite number > 0"));
            }
            if !(horizon.is_finite() && horizon > 0.0) {
                return Err(bad("kl_ctrl.horizon", horizon, "a finite number > 0"));
            }
        }
        Ok(Self {
            beta,
            penalty,
            control,
        })
    }

    /// Penalises one batch's rewards with the current β, then updates β from the batch's KL.
    pub fn apply(&mut self, batch: &[KlRewardInput<'_>]) -> Result<KlRewardOutput, AdvantageError> {
        let beta = self.beta;
        let mut rewards = Vec::with_capacity(batch.len());
        let mut kl_sum = 0.0;
        for (i, r) in batch.iter().enumerate() {
            let n = r.scores.len();
            if r.logp.len() != n || r.ref_logp.len() != n || r.mask.len() != n {
                return Err(AdvantageError::KlInputMismatch {
                    response: i,
                    scores: n,
                    logp: r.logp.len(),
                    ref_logp: r.ref_logp.len(),
                    mask: r.mask.len(),
                });
            }
            let (mut sum, mut count) = (0.0, 0.0);
            let mut out = Vec::with_capacity(n);
            for t in 0..n {
                let kl = if r.mask[t] {
                    self.penalty.estimate(r.logp[t], r.ref_logp[t])
                } else {
                    0.0
                };
                if !(kl.is_finite() && r.scores[t].is_finite()) {
                    let (what, value) = if r.scores[t].is_finite() {
                        ("KL estimate", kl)
                    } else {
                        ("score", r.scores[t])
                    };
                    return Err(AdvantageError::NonFiniteToken {
                        response: i,
                        token: t,
                        what,
                        value,
                    });
                }
                sum += kl;
                count += f64::from(u8::from(r.mask[t]));
                out.push(r.scores[t] - beta * kl);
            }
            // verl's masked_mean: the sum over (count + 1e-8).
            kl_sum += sum / (count + 1e-8);
            rewards.push(out);
        }
        let kl = if batch.is_empty() {
            0.0
        } else {
            kl_sum / batch.len() as f64
        };
        if let KlControl::Adaptive { target, horizon } = self.control {
            let error = (kl / target - 1.0).clamp(-0.2, 0.2);
            self.beta *= 1.0 + error * batch.len() as f64 / horizon;
        }
        Ok(KlRewardOutput { rewards, beta, kl })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: k1 on two tokens (0.5 and −0.1), score 1 on the last; β = 0.1 → rewards
    /// (−0.05, 1.01); KL = 0.2; adaptive with target 0.1, horizon 10, one response:
    /// e = clip(0.2/0.1 − 1) = 0.2, β ← 0.1·(1 + 0.2·1/10) = 0.102.
    #[test]
    fn one_batch_by_hand() {
        let mut k = KlInReward::new(
            0.1,
            KlPenalty::Kl,
            KlControl::Adaptive {
                target: 0.1,
                horizon: 10.0,
            },
        )
        .unwrap();
        let out = k
            .apply(&[KlRewardInput {
                scores: &[0.0, 1.0],
                logp: &[-1.0, -2.0],
                ref_logp: &[-1.5, -1.9],
                mask: &[true, true],
            }])
            .unwrap();
        assert!((out.rewards[0][0] + 0.05).abs() < 1e-12, "{out:?}");
        assert!((out.rewards[0][1] - 1.01).abs() < 1e-12, "{out:?}");
        assert!((out.kl - 0.2).abs() < 1e-8);
        assert!((k.beta - 0.102).abs() < 1e-12, "{}", k.beta);
        assert!(KlInReward::new(-1.0, KlPenalty::Kl, KlControl::Fixed).is_err());
        assert!(KlPenalty::LowVarKl.estimate(0.0, 100.0) <= 10.0);
    }
}
