//! The update phase: μ epochs × `optim.mini_batches` optimizer updates over mini-batches of
//! whole groups ([`plan_minibatches`]), each one [`crate::policy_update::policy_update_sharded`] over
//! this worker's groups.

use burn::tensor::backend::AutodiffBackend;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rl_loss::IsStats;
use rl_sampler::RolloutGroup;

use super::logprobs::Behaviour;
use super::state::Trainer;
use super::teacher::Teacher;
use crate::TrainerError;
use crate::config::OptimSection;
use crate::config::{DistillForm, TrainConfig};
use crate::policy::Policy;
use crate::policy_update::{
    FullDistill, OldLogprobs, TrainSeq, UpdateSettings, policy_update_with_teacher,
};
use crate::scoring::ScoredResponse;
use crate::step_stats::UpdateStats;

/// What the update phase trains on: the kept groups, one advantage per response (in group
/// order), the behaviour phase's log-probs and importance weights, and the mini-batches
/// ([`plan_minibatches`]).
#[derive(Clone, Copy)]
pub struct TrainBatch<'a> {
    /// The kept groups.
    pub groups: &'a [RolloutGroup<ScoredResponse>],
    /// One advantage per response, in group order.
    pub advantages: &'a [f64],
    /// With `[distill]`: one advantage per response token, replacing `advantages`
    /// ([`super::Trainer::token_advantages`]).
    pub token_advantages: Option<&'a [Vec<f32>]>,
    /// π_old, π_ref and the importance-sampling correction, one entry per response.
    pub behaviour: &'a Behaviour,
    /// The optimizer updates in order, each the indices of its groups in `groups`.
    pub minibatches: &'a [Vec<usize>],
}

/// The step's optimizer updates: μ = `optim.epochs` passes, each split into
/// `optim.mini_batches` mini-batches of whole groups, as lists of group indices in update
/// order. With more than one update, each pass shuffles the groups with `rng` (the trainer's
/// RNG, drawn from here and nowhere else in the update).
pub fn plan_minibatches(
    groups: usize,
    optim: &OptimSection,
    rng: &mut ChaCha8Rng,
) -> Vec<Vec<usize>> {
    let mb = optim.mini_batches;
    let mut plan = Vec::with_capacity(optim.epochs * mb);
    for _ in 0..optim.epochs {
        let mut order: Vec<usize> = (0..groups).collect();
        if optim.epochs > 1 || mb > 1 {
            order.shuffle(rng);
        }
        for part in 0..mb {
            plan.push(order[part * groups / mb..(part + 1) * groups / mb].to_vec());
        }
    }
    plan
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// This step's mini-batches ([`plan_minibatches`] over `groups` kept groups), drawn from the
    /// run's RNG: the one draw of the update phase on the RNG that also seeds generation rounds.
    pub fn minibatches(&mut self, groups: usize) -> Vec<Vec<usize>> {
        plan_minibatches(groups, &self.config.optim, &mut self.state.rng)
    }

    /// One optimizer update per entry of `batch.minibatches` ([`Self::minibatches`]), each over
    /// this worker's groups of it. An update whose loss or gradient norm is not finite is
    /// skipped and counted; `optim.max_consecutive_skips` skips in a row (across steps: the
    /// count is the update phase's own state, saved in checkpoints) stop training with
    /// [`TrainerError::Diverged`].
    pub fn update(
        &mut self,
        step: usize,
        lr: f64,
        batch: &TrainBatch<'_>,
    ) -> Result<UpdateStats, TrainerError> {
        let TrainBatch {
            groups,
            advantages,
            token_advantages,
            behaviour,
            minibatches,
        } = *batch;
        let (old, reference, is) = (
            &behaviour.logprobs.old,
            behaviour.logprobs.reference.as_deref(),
            &behaviour.is,
        );
        let items: Vec<&ScoredResponse> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let starts = group_starts(groups);
        let settings = UpdateSettings {
            lr,
            loss: &self.config.loss,
            micro_batch: self.config.optim.micro_batch,
            micro_batch_tokens: self.config.optim.micro_batch_tokens,
            memory: self.config.model.memory_plan(),
            temperature: self.logprob_temperature(),
            old: if behaviour.old_from_update {
                OldLogprobs::ThisForward(self.is_correction)
            } else {
                OldLogprobs::Given
            },
        };
        // Weights computed by the behaviour phase (else the update computes them itself).
        let weighted = is.active && !behaviour.old_from_update;
        let mut stats = UpdateStats::default();
        for minibatch in minibatches {
            let mut seqs = Vec::new();
            for &gi in minibatch {
                if !self.parallel.owns(gi) {
                    continue;
                }
                for i in starts[gi]..starts[gi] + groups[gi].items.len() {
                    let r = items[i];
                    seqs.push(TrainSeq {
                        prompt: &r.prompt_ids,
                        response: &r.response,
                        old_logp: &old[i],
                        rollout_logp: &r.rollout_logp,
                        ref_logp: reference.map(|v| v[i].as_slice()),
                        advantage: advantages[i] as f32,
                        token_advantages: token_advantages.map(|t| t[i].as_slice()),
                        train: r.train,
                        is_weights: weighted.then(|| is.weights[i].as_slice()),
                        keep: weighted.then(|| is.keep[i].as_slice()),
                        sampled: r.sampled.as_deref(),
                    });
                    stats.trained_tokens += r.prompt_ids.len() + r.response.len();
                }
            }
            let policy = self.policy.take().expect("policy present");
            let out = policy_update_with_teacher(
                policy,
                &mut self.optim,
                settings,
                &seqs,
                &self.device,
                &self.parallel,
                full_distill(&self.config, self.teacher.as_ref().and_then(Teacher::model)),
            )?;
            if let Some((sum, n)) = out.divergence {
                let d = stats.divergence.get_or_insert((0.0, 0));
                d.0 += sum;
                d.1 += n;
            }
            self.policy = Some(out.policy);
            if let Some(st) = &out.is_stats {
                stats
                    .is_stats
                    .get_or_insert_with(IsStats::default)
                    .merge(st);
            }
            if out.applied {
                self.state.consecutive_skips = 0;
                stats.loss.merge(&out.metrics);
                stats.grad_norm_sum += out.grad_norm;
                stats.applied += 1;
            } else {
                self.state.consecutive_skips += 1;
                stats.skipped += 1;
                let limit = self.config.optim.max_consecutive_skips;
                if self.state.consecutive_skips >= limit {
                    return Err(TrainerError::Diverged {
                        step,
                        message: format!(
                            "{} consecutive updates skipped (optim.max_consecutive_skips = \
                             {limit}); the last had loss {} and gradient norm {}",
                            self.state.consecutive_skips, out.metrics.loss, out.grad_norm
                        ),
                    });
                }
            }
        }
        stats.trained_tokens = self
            .parallel
            .sum("summing trained tokens", &[stats.trained_tokens as f64])?[0]
            as usize;
        Ok(stats)
    }
}

/// The index of each group's first response among all the groups' responses in order.
pub(super) fn group_starts(groups: &[RolloutGroup<ScoredResponse>]) -> Vec<usize> {
    groups
        .iter()
        .scan(0, |k, g| {
            let start = *k;
            *k += g.items.len();
            Some(start)
        })
        .collect()
}

/// The full-vocabulary distillation term of `[distill]` with `form = "full"` and its teacher.
fn full_distill<'a, P>(config: &TrainConfig, teacher: Option<&'a P>) -> Option<FullDistill<'a, P>> {
    let d = config.distill.as_ref()?;
    (d.form == DistillForm::Full).then_some(FullDistill {
        teacher: teacher?,
        coef: d.coef,
        beta: d.beta,
        vocab_chunk: d.vocab_chunk,
    })
}
