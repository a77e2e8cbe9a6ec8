//! PPO's phases around its critic (`critic.rs`, docs/algorithms/ppo.md). With `[critic]` they
//! replace the advantages and token-advantage phases and add one beside the update:
//!
//! - **values + GAE** ([`Trainer::gae_advantages`], after the behaviour phase): the critic's
//!   V_t of every response token; token rewards — the response's shaped reward on its last
//!   sampled token, minus β·KL_t on every token with `[critic.kl_in_reward]` (π_old against
//!   π_ref, β adapted after the batch when a target is set); then GAE (γ, λ) over the sampled
//!   tokens, whitened over the batch ([`rl_advantage::gae::Gae::batch`]), and the returns.
//! - **critic update** ([`Trainer::critic_update`]): one critic optimizer update per policy
//!   mini-batch (the same plan), the clipped value loss against the returns.

use burn::tensor::backend::AutodiffBackend;
use rl_advantage::gae::TokenTrajectory;
use rl_advantage::kl_reward::KlRewardInput;
use rl_advantage::{BatchAdvantages, BatchStats};
use rl_sampler::RolloutGroup;

use super::critic::ValueSeq;
use super::logprobs::Behaviour;
use super::state::Trainer;
use super::token_advantages::TokenAdvantages;
use super::update::group_starts;
use crate::TrainerError;
use crate::policy::Policy;
use crate::scoring::ScoredResponse;
use crate::step_stats::CriticStats;

/// What the critic regresses on for a batch, one vector per response (group order), each of
/// the response's length.
#[derive(Clone, Debug, Default)]
pub struct CriticTargets {
    /// V_old: the critic's values when the batch was generated.
    pub values: Vec<Vec<f32>>,
    /// The GAE returns.
    pub returns: Vec<Vec<f32>>,
    /// True on the tokens in the value loss (sampled and trained).
    pub masks: Vec<Vec<bool>>,
    /// With the KL penalty in the reward: the β used and the batch KL.
    pub kl_in_reward: Option<(f64, f64)>,
}

/// The values + GAE phase's output.
#[derive(Clone, Debug)]
pub struct GaeAdvantages {
    /// One advantage per response (its tokens' mean), for the metrics; the loss reads `tokens`.
    pub advantages: BatchAdvantages,
    /// The whitened GAE advantage of every response token.
    pub tokens: TokenAdvantages,
    /// The critic's targets.
    pub targets: CriticTargets,
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// The values + GAE phase (module documentation) over the kept `groups`, with the
    /// behaviour phase's π_old and π_ref for the KL penalty in the reward.
    pub fn gae_advantages(
        &mut self,
        groups: &[RolloutGroup<ScoredResponse>],
        behaviour: &Behaviour,
    ) -> Result<GaeAdvantages, TrainerError> {
        let section = self.config.critic.as_ref().ok_or_else(no_critic)?;
        let gae = section.gae()?;
        let items: Vec<&ScoredResponse> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let seqs: Vec<ValueSeq<'_>> = items.iter().map(|r| value_seq(r)).collect();
        let critic = self.critic.as_ref().ok_or_else(no_critic)?;
        let values = critic.values(&seqs, self.micro_batching())?;
        let masks: Vec<Vec<bool>> = items
            .iter()
            .map(|r| {
                (0..r.response.len())
                    .map(|j| r.train && r.is_sampled(j))
                    .collect()
            })
            .collect();
        let scores: Vec<Vec<f64>> = items
            .iter()
            .zip(&masks)
            .map(|(r, m)| {
                let mut s = vec![0.0; m.len()];
                if let Some(last) = m.iter().rposition(|&x| x) {
                    s[last] = r.reward;
                }
                s
            })
            .collect();
        let (rewards, kl_in_reward) =
            match self.state.kl_in_reward.as_mut() {
                None => (scores, None),
                Some(control) => {
                    let reference = behaviour.logprobs.reference.as_ref().ok_or_else(|| {
                        TrainerError::Batch {
                            sequence: 0,
                            message: "the KL penalty in the reward needs reference log-probs"
                                .into(),
                        }
                    })?;
                    let as64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
                    let old: Vec<Vec<f64>> =
                        behaviour.logprobs.old.iter().map(|v| as64(v)).collect();
                    let reference: Vec<Vec<f64>> = reference.iter().map(|v| as64(v)).collect();
                    let inputs: Vec<KlRewardInput<'_>> = (0..items.len())
                        .map(|i| KlRewardInput {
                            scores: &scores[i],
                            logp: &old[i],
                            ref_logp: &reference[i],
                            mask: &masks[i],
                        })
                        .collect();
                    let out = control.apply(&inputs)?;
                    (out.rewards, Some((out.beta, out.kl)))
                }
            };
        let values64: Vec<Vec<f64>> = values
            .iter()
            .map(|v| v.iter().map(|&x| x as f64).collect())
            .collect();
        let trajectories: Vec<TokenTrajectory<'_>> = (0..items.len())
            .map(|i| TokenTrajectory {
                rewards: &rewards[i],
                values: &values64[i],
                mask: &masks[i],
            })
            .collect();
        let out = gae.batch(&trajectories)?;
        let advantages = response_summary(groups.len(), &out.advantages, &masks);
        let to32 = |v: &Vec<f64>| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        Ok(GaeAdvantages {
            advantages,
            tokens: TokenAdvantages {
                per_response: out.advantages.iter().map(to32).collect(),
                reverse_kl: None,
            },
            targets: CriticTargets {
                values,
                returns: out.returns.iter().map(to32).collect(),
                masks,
                kl_in_reward,
            },
        })
    }

    /// The critic-update phase: one critic update per entry of `minibatches` (group indices in
    /// `groups`) on `targets`, and the batch's value statistics.
    pub fn critic_update(
        &mut self,
        groups: &[RolloutGroup<ScoredResponse>],
        targets: &CriticTargets,
        minibatches: &[Vec<usize>],
    ) -> Result<CriticStats, TrainerError> {
        let items: Vec<&ScoredResponse> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let starts = group_starts(groups);
        let mut stats = value_statistics(targets);
        let micro = self.micro_batching();
        let critic = self.critic.as_mut().ok_or_else(no_critic)?;
        for minibatch in minibatches {
            let seqs: Vec<ValueSeq<'_>> = minibatch
                .iter()
                .flat_map(|&gi| starts[gi]..starts[gi] + groups[gi].items.len())
                .map(|i| ValueSeq {
                    old_values: &targets.values[i],
                    returns: &targets.returns[i],
                    mask: &targets.masks[i],
                    ..value_seq(items[i])
                })
                .collect();
            let out = critic.update(&seqs, micro)?;
            if out.applied {
                stats.loss_sum += out.loss;
                stats.applied += 1;
                stats.grad_norm_sum += out.grad_norm;
                stats.clipped += out.clipped;
                stats.tokens += out.tokens;
            } else {
                stats.skipped += 1;
            }
        }
        Ok(stats)
    }
}

fn no_critic() -> TrainerError {
    TrainerError::Config {
        field: "critic".into(),
        message: "this phase needs PPO's critic (algorithm = \"ppo\")".into(),
    }
}

fn value_seq(r: &ScoredResponse) -> ValueSeq<'_> {
    ValueSeq {
        prompt: &r.prompt_ids,
        response: &r.response,
        old_values: &[],
        returns: &[],
        mask: &[],
    }
}

/// One advantage per response (the mean over its sampled tokens, 0 without any) and the
/// statistics of the token advantages over the batch's sampled tokens.
fn response_summary(
    groups: usize,
    advantages: &[Vec<f64>],
    masks: &[Vec<bool>],
) -> BatchAdvantages {
    let mut per_response = Vec::with_capacity(advantages.len());
    let (mut sum, mut sq, mut n) = (0.0, 0.0, 0usize);
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut nonzero = 0;
    for (a, m) in advantages.iter().zip(masks) {
        let kept: Vec<f64> = a
            .iter()
            .zip(m)
            .filter(|(_, m)| **m)
            .map(|(x, _)| *x)
            .collect();
        per_response.push(if kept.is_empty() {
            0.0
        } else {
            kept.iter().sum::<f64>() / kept.len() as f64
        });
        nonzero += usize::from(kept.iter().any(|&x| x != 0.0));
        for x in kept {
            sum += x;
            sq += x * x;
            n += 1;
            min = min.min(x);
            max = max.max(x);
        }
    }
    let mean = if n > 0 { sum / n as f64 } else { 0.0 };
    let std = if n > 0 {
        (sq / n as f64 - mean * mean).max(0.0).sqrt()
    } else {
        0.0
    };
    BatchAdvantages {
        amplified: vec![false; per_response.len()],
        stats: BatchStats {
            groups,
            samples: per_response.len(),
            zero_spread_groups: 0,
            amplified: 0,
            nonzero,
            mean,
            std,
            min: if n > 0 { min } else { 0.0 },
            max: if n > 0 { max } else { 0.0 },
        },
        advantages: per_response,
    }
}

/// verl's `critic/*` batch statistics over the loss tokens: the mean value and return, and
/// explained variance 1 − Var(R − V) / (Var(R) + 1e-5) with Bessel-corrected variances.
fn value_statistics(t: &CriticTargets) -> CriticStats {
    let mut v = Vec::new();
    let mut r = Vec::new();
    for i in 0..t.masks.len() {
        for (j, &m) in t.masks[i].iter().enumerate() {
            if m {
                v.push(t.values[i][j] as f64);
                r.push(t.returns[i][j] as f64);
            }
        }
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len().max(1) as f64;
    let var = |x: &[f64]| {
        let m = mean(x);
        x.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / (x.len().max(2) - 1) as f64
    };
    let diff: Vec<f64> = r.iter().zip(&v).map(|(a, b)| a - b).collect();
    CriticStats {
        explained_var: 1.0 - var(&diff) / (var(&r) + 1e-5),
        values_mean: mean(&v),
        returns_mean: mean(&r),
        kl_in_reward: t.kl_in_reward,
        ..CriticStats::default()
    }
}
