//! Rewards from a reward model (`[reward.model]`), part of the scoring phase: once a round is
//! verified and shared between the workers (so that every worker scores the same responses
//! alike), each response's prompt + response is scored by the model at its last token
//! ([`crate::reward_model::score_sequences`]); the score, normalised over the round when
//! configured, is weighted and added to the verifier's weighted reward. Correctness stays the
//! verifier's.

use burn::tensor::backend::AutodiffBackend;
use rl_sampler::RolloutGroup;

use super::state::Trainer;
use crate::TrainerError;
use crate::config::ScoreNormalization;
use crate::policy::Policy;
use crate::reward_model::score_sequences;
use crate::scoring::ScoredResponse;
use crate::step_stats::RewardPartSums;

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// Adds the reward model's weighted score to every response of `groups` (a round) and
    /// records the raw score; `None` without `[reward.model]`.
    pub(super) fn add_model_rewards(
        &self,
        groups: &mut [RolloutGroup<ScoredResponse>],
    ) -> Result<Option<RewardPartSums>, TrainerError> {
        let (Some(model), Some(section)) = (&self.reward_model, &self.config.reward.model) else {
            return Ok(None);
        };
        let ids: Vec<Vec<u32>> = groups
            .iter()
            .flat_map(|g| g.items.iter())
            .map(|r| [r.prompt_ids.as_slice(), &r.response].concat())
            .collect();
        let seqs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let raw: Vec<f64> = score_sequences(model, &seqs, section.micro_batch)?
            .into_iter()
            .map(f64::from)
            .collect();
        if let Some(i) = raw.iter().position(|s| !s.is_finite()) {
            return Err(TrainerError::Batch {
                sequence: i,
                message: format!("the reward model scored {}", raw[i]),
            });
        }
        let n = raw.len().max(1) as f64;
        let (shift, scale) = match section.normalize {
            ScoreNormalization::None => (0.0, 1.0),
            ScoreNormalization::Round => {
                let mean = raw.iter().sum::<f64>() / n;
                let var = raw.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n;
                (mean, 1.0 / (var.sqrt() + 1e-6))
            }
        };
        let mut parts = RewardPartSums::default();
        let items = groups.iter_mut().flat_map(|g| g.items.iter_mut());
        for (r, &s) in items.zip(&raw) {
            parts.verifier_sum += r.reward;
            parts.model_sum += s;
            parts.responses += 1;
            r.reward = self.config.reward.verifier_weight * r.reward
                + section.weight * (s - shift) * scale;
            r.model_score = Some(s);
        }
        Ok(Some(parts))
    }
}
