//! Rewards from models (`[reward.model]`, `[reward.judge]`), part of the scoring phase: once a
//! round is verified and shared between the workers (so that every worker scores the same
//! responses alike), each response gets
//!
//! ```text
//! reward = verifier_weight · verifier reward + weight · reward-model score + judge_weight · judge reward
//! ```
//!
//! The reward model scores prompt + response at its last token
//! ([`crate::reward_model::score_sequences`]), normalised over the round when configured; the
//! judge ([`rl_rollout::Judge`]) reads the problem, the reference answer and the decoded
//! response, and a reply its rule cannot read is a reward of 0, counted. Correctness stays the
//! verifier's.

use burn::tensor::backend::AutodiffBackend;
use rl_rollout::{JudgeItem, Verdict};
use rl_sampler::RolloutGroup;

use super::state::Trainer;
use crate::TrainerError;
use crate::config::ScoreNormalization;
use crate::data::PromptText;
use crate::policy::Policy;
use crate::reward_model::score_sequences;
use crate::scoring::ScoredResponse;
use crate::step_stats::RewardPartSums;

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// Adds the reward model's and the judge's weighted rewards to every response of `groups`
    /// (a round); `None` when neither is configured.
    pub(super) fn add_model_rewards(
        &self,
        groups: &mut [RolloutGroup<ScoredResponse>],
    ) -> Result<Option<RewardPartSums>, TrainerError> {
        if self.reward_model.is_none() && self.judge.is_none() {
            return Ok(None);
        }
        let reward = &self.config.reward;
        let mut parts = RewardPartSums::default();
        let items: Vec<&ScoredResponse> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let mut total: Vec<f64> = items
            .iter()
            .map(|r| {
                parts.verifier_sum += r.reward;
                parts.responses += 1;
                reward.verifier_weight * r.reward
            })
            .collect();
        let raw = self.reward_model_scores(&items)?;
        if let (Some(raw), Some(section)) = (&raw, &reward.model) {
            let n = raw.len().max(1) as f64;
            let (shift, scale) = match section.normalize {
                ScoreNormalization::None => (0.0, 1.0),
                ScoreNormalization::Round => {
                    let mean = raw.iter().sum::<f64>() / n;
                    let var = raw.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n;
                    (mean, 1.0 / (var.sqrt() + 1e-6))
                }
            };
            for (t, &s) in total.iter_mut().zip(raw) {
                parts.model_sum += s;
                *t += section.weight * (s - shift) * scale;
            }
        }
        if let Some(judge) = &self.judge {
            let questions: Vec<String> = items.iter().map(|r| self.question(r)).collect();
            let answers: Vec<&str> = items
                .iter()
                .map(|r| {
                    self.prompts
                        .train
                        .prompts
                        .get(r.prompt_index)
                        .map_or("", |p| p.answer.as_str())
                })
                .collect();
            let requests: Vec<JudgeItem<'_>> = items
                .iter()
                .enumerate()
                .map(|(i, r)| JudgeItem {
                    question: &questions[i],
                    reference: answers[i],
                    response: &r.text,
                })
                .collect();
            for (t, j) in total.iter_mut().zip(judge.judge(&requests)?) {
                parts.judge_sum += j.reward;
                parts.judge_unparsed += usize::from(j.verdict == Verdict::Unparsed);
                *t += reward.judge_weight * j.reward;
            }
        }
        let items = groups.iter_mut().flat_map(|g| g.items.iter_mut());
        for (i, r) in items.enumerate() {
            r.reward = total[i];
            r.model_score = raw.as_ref().map(|s| s[i]);
        }
        Ok(Some(parts))
    }

    /// The reward model's raw score of every response (`None` without `[reward.model]`).
    fn reward_model_scores(
        &self,
        items: &[&ScoredResponse],
    ) -> Result<Option<Vec<f64>>, TrainerError> {
        let (Some(model), Some(section)) = (&self.reward_model, &self.config.reward.model) else {
            return Ok(None);
        };
        let ids: Vec<Vec<u32>> = items
            .iter()
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
        Ok(Some(raw))
    }

    /// The problem a response answers, as the judge's `{question}`: the prompt's text, or the
    /// last user message of a chat prompt.
    fn question(&self, r: &ScoredResponse) -> String {
        match self
            .prompts
            .train
            .prompts
            .get(r.prompt_index)
            .map(|p| &p.text)
        {
            Some(PromptText::Text(t)) => t.clone(),
            Some(PromptText::Chat(m)) => m
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .map(|m| m.content.clone())
                .unwrap_or_default(),
            None => String::new(),
        }
    }
}
