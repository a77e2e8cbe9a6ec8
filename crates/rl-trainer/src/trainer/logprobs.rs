//! The behaviour phase: π_old (the policy before this step's updates) and, with KL, reference
//! log-probs (with sampled-token distillation, the teacher's too) of every response token,
//! fixed at the start of the step, and the
//! importance-sampling correction of the engine/trainer gap against the engine's log-probs
//! (`rl-loss`'s [`IsCorrection`]).

use burn::tensor::backend::AutodiffBackend;
use rl_loss::IsStats;
use rl_sampler::RolloutGroup;

use super::state::Trainer;
use crate::TrainerError;
use crate::parallel::scatter;
use crate::policy::Policy;
use crate::policy_update::{OldLogprobs, importance_of, micro_batch_plan};
use crate::scoring::ScoredResponse;

/// Per-token log-probs of every rollout's response under the policy before the step's updates
/// (π_old) and, with KL, under the reference policy.
#[derive(Clone, Debug, Default)]
pub struct BehaviourLogprobs {
    /// π_old, one vector per rollout.
    pub old: Vec<Vec<f32>>,
    /// π_ref, one vector per rollout (KL only).
    pub reference: Option<Vec<Vec<f32>>>,
    /// The distillation teacher's, one vector per rollout (`[distill]` with `form =
    /// "sampled"` only).
    pub teacher: Option<Vec<Vec<f32>>>,
}

/// The importance-sampling correction of a step's rollouts (see [`rl_loss::IsCorrection`]).
#[derive(Clone, Debug, Default)]
pub struct ImportanceWeights {
    /// False for `none`: the loss takes no weights and no masks.
    pub active: bool,
    /// Per rollout, one weight per response token.
    pub weights: Vec<Vec<f32>>,
    /// Per rollout, false where a response token is masked.
    pub keep: Vec<Vec<bool>>,
    /// |log π_old − log π_rollout|, truncation and mask counts over the trained tokens.
    pub stats: IsStats,
}

/// What the behaviour phase returns for a batch: log-probs and importance weights of the
/// rollouts this worker trains on, laid out at every rollout's place in the batch (the other
/// workers' entries are empty), with the importance-sampling statistics summed over workers.
///
/// When the batch gets a single optimizer update whose correction masks nothing
/// ([`Trainer::old_from_update`]), π_old is the policy that update starts from: the phase
/// computes only π_ref, leaves `logprobs.old` and the weights empty, and the update takes π_old,
/// the weights and their statistics from its own forward pass
/// ([`crate::policy_update::OldLogprobs::ThisForward`]), which saves one forward pass over the batch.
#[derive(Clone, Debug, Default)]
pub struct Behaviour {
    /// π_old and π_ref.
    pub logprobs: BehaviourLogprobs,
    /// The importance-sampling correction.
    pub is: ImportanceWeights,
    /// π_old, the importance weights and their statistics come from the update's forward.
    pub old_from_update: bool,
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// π_old and, with KL, reference log-probs of every response token of `items`, computed in
    /// micro-batches of `optim.micro_batch` sequences and `optim.micro_batch_tokens` tokens.
    pub fn behaviour_logprobs(
        &self,
        items: &[&ScoredResponse],
    ) -> Result<BehaviourLogprobs, TrainerError> {
        let old = response_logprobs(
            self.policy(),
            items,
            self.micro_batching(),
            self.logprob_temperature(),
        )?;
        let reference = self.reference_logprobs(items)?;
        let teacher = self.teacher_logprobs(items)?;
        Ok(BehaviourLogprobs {
            old,
            reference,
            teacher,
        })
    }

    /// `optim.micro_batch` and `optim.micro_batch_tokens`.
    pub(super) fn micro_batching(&self) -> (usize, usize) {
        (
            self.config.optim.micro_batch,
            self.config.optim.micro_batch_tokens,
        )
    }

    /// π_ref log-probs of every response token of `items` (with KL; `None` without).
    fn reference_logprobs(
        &self,
        items: &[&ScoredResponse],
    ) -> Result<Option<Vec<Vec<f32>>>, TrainerError> {
        self.reference
            .as_ref()
            .map(|rp| {
                response_logprobs(rp, items, self.micro_batching(), self.logprob_temperature())
            })
            .transpose()
    }

    /// Importance-sampling phase: per-token weights and masks from π_old (`old`) and each
    /// rollout's engine log-probs under `loss.is_correction` (resolved), with the mismatch
    /// statistics of the trained rollouts.
    pub fn importance_weights(
        &self,
        items: &[&ScoredResponse],
        old: &[Vec<f32>],
    ) -> Result<ImportanceWeights, TrainerError> {
        let mut out = ImportanceWeights {
            active: self.is_correction.reweights(),
            ..ImportanceWeights::default()
        };
        for (i, (r, o)) in items.iter().zip(old).enumerate() {
            let w = importance_of(
                &self.is_correction,
                i,
                o,
                &r.rollout_logp,
                r.sampled.as_deref(),
            )?;
            if r.train {
                out.stats.merge(&w.stats);
            }
            out.weights.push(w.weights);
            out.keep.push(w.keep);
        }
        Ok(out)
    }

    /// Whether the step's update takes π_old from its own forward pass: one epoch of one
    /// mini-batch (one optimizer update per batch, so π_old is exactly the policy being
    /// updated) and an importance-sampling correction that masks nothing; not with sampled-token
    /// distillation, whose advantages need π_old before the update, nor with a KL penalty in the
    /// critic's rewards, which reads π_old before the update too.
    pub fn old_from_update(&self) -> bool {
        !self.distills_sampled()
            && self
                .config
                .critic
                .as_ref()
                .is_none_or(|c| c.kl_in_reward.is_none())
            && self.config.optim.epochs == 1
            && self.config.optim.mini_batches == 1
            && OldLogprobs::this_forward_allows(&self.is_correction)
    }

    /// The behaviour phase of a batch: π_ref and, unless [`Trainer::old_from_update`], π_old
    /// and the importance weights ([`Trainer::behaviour_logprobs`],
    /// [`Trainer::importance_weights`]) of this worker's groups, scattered to their places.
    pub fn behaviour(
        &self,
        groups: &[RolloutGroup<ScoredResponse>],
    ) -> Result<Behaviour, TrainerError> {
        if self.old_from_update() {
            self.behaviour_reference_only(groups)
        } else {
            self.behaviour_two_pass(groups)
        }
    }

    /// The behaviour phase with π_old computed here, by its own forward pass, whatever the
    /// update schedule (what [`Trainer::behaviour`] does for several updates per batch).
    pub fn behaviour_two_pass(
        &self,
        groups: &[RolloutGroup<ScoredResponse>],
    ) -> Result<Behaviour, TrainerError> {
        let (mine, at, i) = self.owned_items(groups);
        let BehaviourLogprobs {
            old,
            reference,
            teacher,
        } = self.behaviour_logprobs(&mine)?;
        let local = self.importance_weights(&mine, &old)?;
        let is = ImportanceWeights {
            active: local.active,
            weights: scatter(&at, i, local.weights),
            keep: scatter(&at, i, local.keep),
            stats: self.parallel.sum_is_stats(&local.stats)?,
        };
        Ok(Behaviour {
            logprobs: BehaviourLogprobs {
                old: scatter(&at, i, old),
                reference: reference.map(|r| scatter(&at, i, r)),
                teacher: teacher.map(|t| scatter(&at, i, t)),
            },
            is,
            old_from_update: false,
        })
    }

    /// The behaviour phase when the update supplies π_old: π_ref only (with KL).
    fn behaviour_reference_only(
        &self,
        groups: &[RolloutGroup<ScoredResponse>],
    ) -> Result<Behaviour, TrainerError> {
        let (mine, at, n) = self.owned_items(groups);
        let reference = self.reference_logprobs(&mine)?.map(|r| scatter(&at, n, r));
        Ok(Behaviour {
            logprobs: BehaviourLogprobs {
                old: vec![Vec::new(); n],
                reference,
                teacher: None,
            },
            is: ImportanceWeights {
                active: self.is_correction.reweights(),
                weights: vec![Vec::new(); n],
                keep: vec![Vec::new(); n],
                stats: IsStats::default(),
            },
            old_from_update: true,
        })
    }

    /// This worker's responses of `groups`, their places in the batch, and the batch's size.
    fn owned_items<'g>(
        &self,
        groups: &'g [RolloutGroup<ScoredResponse>],
    ) -> (Vec<&'g ScoredResponse>, Vec<usize>, usize) {
        let mut mine = Vec::new();
        let mut at = Vec::new();
        let mut i = 0;
        for (gi, g) in groups.iter().enumerate() {
            for it in &g.items {
                if self.parallel.owns(gi) {
                    mine.push(it);
                    at.push(i);
                }
                i += 1;
            }
        }
        (mine, at, i)
    }
}

/// Detached log-probs of each rollout's response tokens under `policy`, one vector of
/// `response.len()` values per rollout, in micro-batches ([`micro_batch_plan`]) of at most
/// `micro` sequences and `micro_tokens` padded tokens (0: no token budget).
pub(super) fn response_logprobs<B: AutodiffBackend, P: Policy<B>>(
    policy: &P,
    items: &[&ScoredResponse],
    (micro, micro_tokens): (usize, usize),
    temperature: f32,
) -> Result<Vec<Vec<f32>>, TrainerError> {
    if let Some(i) = items.iter().position(|r| r.prompt_ids.is_empty()) {
        return Err(TrainerError::Batch {
            sequence: i,
            message: "empty prompt: the first response token has no context".into(),
        });
    }
    let mut out = vec![Vec::new(); items.len()];
    let lengths: Vec<usize> = items
        .iter()
        .map(|r| r.prompt_ids.len() + r.response.len())
        .collect();
    for part in micro_batch_plan(&lengths, micro, micro_tokens) {
        let chunk: Vec<&ScoredResponse> = part.iter().map(|&i| items[i]).collect();
        let ids: Vec<Vec<u32>> = chunk
            .iter()
            .map(|r| [r.prompt_ids.as_slice(), &r.response].concat())
            .collect();
        let starts: Vec<usize> = chunk.iter().map(|r| r.prompt_ids.len() - 1).collect();
        let width = chunk
            .iter()
            .map(|r| r.response.len())
            .max()
            .unwrap_or(1)
            .max(1);
        let lps = policy.logprobs_detached(&ids, &starts, width, temperature)?;
        if lps.len() != part.len() {
            return Err(TrainerError::Batch {
                sequence: part[0],
                message: format!(
                    "the policy returned {} log-prob rows for a micro-batch of {}",
                    lps.len(),
                    part.len()
                ),
            });
        }
        for (i, lp) in part.into_iter().zip(lps) {
            out[i] = lp;
        }
    }
    Ok(out)
}
