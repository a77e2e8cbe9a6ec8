//! The token-advantage phase and on-policy distillation (`[distill]`,
//! docs/algorithms/distill.md): the teacher's (`teacher.rs`) log-probs of the student's
//! responses and the per-token advantages they give; without `[distill]`, the estimator's own
//! token advantages where it has them (REINFORCE++ with γ < 1).
//!
//! - `sampled`: the behaviour phase adds the teacher's log-probs of every response token
//!   ([`crate::trainer::BehaviourLogprobs::teacher`]) beside π_old; [`Trainer::token_advantages`]
//!   turns them into A_t = w·Â + c·(log π_T − log π_old) ([`rl_advantage::distill::DistillSignal`]).
//! - `full`: the token advantages are w·Â, and the update adds c · GKD's generalized JSD over
//!   the vocabulary ([`crate::policy_update::policy_update_with_teacher`]).

use burn::tensor::backend::AutodiffBackend;
use rl_advantage::distill::reverse_kl_sum;
use rl_rollout::ScoreRequest;
use rl_sampler::RolloutGroup;

use super::logprobs::Behaviour;
use super::state::Trainer;
use super::teacher::Teacher;
use crate::TrainerError;
use crate::config::DistillForm;
use crate::policy::Policy;
use crate::scoring::ScoredResponse;

/// The per-token advantages of a batch with distillation, one vector per response in group
/// order (empty for another worker's responses), and the sampled-token reverse-KL estimate
/// summed over the trained tokens with its count (summed over workers; `sampled` form only).
#[derive(Clone, Debug, Default)]
pub struct TokenAdvantages {
    /// Per response, one advantage per response token.
    pub per_response: Vec<Vec<f32>>,
    /// Σ (log π_old − log π_T) over trained tokens, and their number.
    pub reverse_kl: Option<(f64, usize)>,
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// Whether the behaviour phase computes the teacher's log-probs (the `sampled` form).
    pub(super) fn distills_sampled(&self) -> bool {
        self.teacher.is_some()
            && self
                .config
                .distill
                .as_ref()
                .is_some_and(|d| d.form == DistillForm::Sampled)
    }

    /// The teacher's log-probs of every response token of `items` (the `sampled` form; `None`
    /// otherwise): a model's in the behaviour phase's micro-batches and temperature, a
    /// server's at T = 1 (the only temperature validation lets through with a server).
    pub(super) fn teacher_logprobs(
        &self,
        items: &[&ScoredResponse],
    ) -> Result<Option<Vec<Vec<f32>>>, TrainerError> {
        if !self.distills_sampled() {
            return Ok(None);
        }
        match self.teacher.as_ref().expect("distills_sampled checks it") {
            Teacher::Model(teacher) => super::logprobs::response_logprobs(
                teacher,
                items,
                self.micro_batching(),
                self.logprob_temperature(),
            )
            .map(Some),
            Teacher::Server(server) => {
                let requests: Vec<ScoreRequest> = items
                    .iter()
                    .map(|r| ScoreRequest {
                        prompt_ids: r.prompt_ids.to_vec(),
                        response_ids: r.response.clone(),
                    })
                    .collect();
                Ok(Some(server.score(&requests)?))
            }
        }
    }

    /// Token-advantage phase: one advantage per response token where they differ along a
    /// response — the estimator's (REINFORCE++ with γ < 1,
    /// `Trainer::estimator_token_advantages`), or with `[distill]` (which validation keeps
    /// apart from γ < 1) the distillation signal from the responses' outcome advantages
    /// `advantages` (group order) and, for `sampled`, the behaviour phase's π_old and teacher
    /// log-probs; `None` otherwise (each token takes its response's advantage).
    pub fn token_advantages(
        &self,
        groups: &[RolloutGroup<ScoredResponse>],
        advantages: &[f64],
        behaviour: &Behaviour,
    ) -> Result<Option<TokenAdvantages>, TrainerError> {
        let Some(signal) = self.config.distill_signal()? else {
            return Ok(self
                .estimator_token_advantages(groups)?
                .map(|per_response| TokenAdvantages {
                    per_response,
                    reverse_kl: None,
                }));
        };
        let items: Vec<&ScoredResponse> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let owned: Vec<bool> = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| std::iter::repeat_n(self.parallel.owns(gi), g.items.len()))
            .collect();
        if !self.distills_sampled() {
            let per_response = items
                .iter()
                .zip(advantages)
                .zip(&owned)
                .map(|((r, &a), &mine)| {
                    let value = (signal.reward_weight * a) as f32;
                    if mine {
                        vec![value; r.response.len()]
                    } else {
                        Vec::new()
                    }
                })
                .collect();
            return Ok(Some(TokenAdvantages {
                per_response,
                reverse_kl: None,
            }));
        }
        let (old, teacher) = (
            &behaviour.logprobs.old,
            behaviour
                .logprobs
                .teacher
                .as_ref()
                .ok_or_else(|| TrainerError::Batch {
                    sequence: 0,
                    message: "the behaviour phase computed no teacher log-probs".into(),
                })?,
        );
        let mut per_response = Vec::with_capacity(items.len());
        let (mut kl, mut tokens) = (0.0, 0);
        for (i, r) in items.iter().enumerate() {
            if !owned[i] {
                per_response.push(Vec::new());
                continue;
            }
            let adv = signal
                .token_advantages(advantages[i], &old[i], &teacher[i])
                .map_err(|e| TrainerError::Batch {
                    sequence: i,
                    message: format!("distillation: {e}"),
                })?;
            if r.train {
                let keep = |v: &[f32]| -> Vec<f32> {
                    v.iter()
                        .enumerate()
                        .filter(|(j, _)| r.is_sampled(*j))
                        .map(|(_, x)| *x)
                        .collect()
                };
                let (s, n) = reverse_kl_sum(&keep(&old[i]), &keep(&teacher[i]));
                kl += s;
                tokens += n;
            }
            per_response.push(adv);
        }
        let sum = self
            .parallel
            .sum("summing the distillation reverse KL", &[kl, tokens as f64])?;
        Ok(Some(TokenAdvantages {
            per_response,
            reverse_kl: Some((sum[0], sum[1] as usize)),
        }))
    }
}
