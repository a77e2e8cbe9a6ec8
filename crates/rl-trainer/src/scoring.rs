//! The generation and scoring phases of a round: prompts → engine requests
//! ([`round_requests`]) → G completions per prompt ([`group_completions`]) → decoded, verified
//! and shaped rollouts grouped by prompt ([`Scorer::score_round`]).

use std::sync::Arc;

use rl_advantage::GroupId;
use rl_models::Tokenizer;
use rl_rollout::{Completion, FinishReason, GenerateRequest, SamplingParams, WeightVersion};
use rl_sampler::RolloutGroup;
use rl_verifier::{OutcomeCounts, OverlongPolicy, ResponseLength, RewardMap, Verifier};
use serde::{Deserialize, Serialize};

use crate::TrainerError;

/// One scored response with everything the update needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScoredResponse {
    /// Index of the prompt in the data set.
    pub prompt_index: usize,
    /// The rendered prompt (shared by the group).
    pub prompt_ids: Arc<Vec<u32>>,
    /// Generated tokens (a final end token included).
    pub response: Vec<u32>,
    /// The engine's log-prob of each generated token (π_rollout, at the sampling temperature).
    pub rollout_logp: Vec<f32>,
    /// Why generation stopped.
    pub finish: FinishReason,
    /// The weight version that generated it.
    pub version: WeightVersion,
    /// Decoded response (end tokens removed) as given to the verifier.
    pub text: String,
    /// Verifier verdict.
    pub correct: bool,
    /// Reward after shaping.
    pub reward: f64,
    /// Overlong penalty included in `reward`.
    pub penalty: f64,
    /// False when overlong handling masks the sample out of the loss.
    pub train: bool,
    /// Difficulty tier of the prompt.
    pub tier: Option<String>,
}

/// What a round needs to score responses.
pub struct Scorer<'a> {
    /// The verifier.
    pub verifier: &'a dyn Verifier,
    /// Outcome → reward.
    pub rewards: RewardMap,
    /// Length shaping.
    pub overlong: OverlongPolicy,
    /// Tokenizer for decoding.
    pub tokenizer: &'a Tokenizer,
    /// Ids removed from the end of a response before decoding.
    pub end_ids: &'a [u32],
}

/// A prompt of a round.
pub struct RoundPrompt<'a> {
    /// Data-set index.
    pub index: usize,
    /// Rendered ids.
    pub ids: Arc<Vec<u32>>,
    /// Ground truth.
    pub answer: &'a str,
    /// Tier.
    pub tier: Option<String>,
}

/// The response without its trailing end tokens (`<|im_end|>`, `<|endoftext|>`): what the
/// verifier reads. The one place where end tokens are stripped.
pub fn strip_end_tokens<'a>(tokens: &'a [u32], end_ids: &[u32]) -> &'a [u32] {
    let mut body = tokens;
    while let Some((last, rest)) = body.split_last() {
        if end_ids.contains(last) {
            body = rest;
        } else {
            break;
        }
    }
    body
}

/// The requests of a round: `group_size` samples of each prompt, in chunks of `chunk` sequences
/// (0 = the whole round) that each take one seed from `seeds`. A prompt whose samples straddle
/// a chunk boundary becomes two requests. With the local engine each chunk is one batch drawing
/// streams 0, 1, … of its seed.
pub fn round_requests(
    prompts: &[RoundPrompt<'_>],
    group_size: usize,
    params: &SamplingParams,
    chunk: usize,
    seeds: &mut dyn FnMut() -> u64,
) -> Vec<GenerateRequest> {
    let total = prompts.len() * group_size;
    let chunk = if chunk == 0 { total.max(1) } else { chunk };
    let mut requests: Vec<GenerateRequest> = Vec::new();
    let mut seed = 0;
    for (row, p) in prompts
        .iter()
        .flat_map(|p| std::iter::repeat_n(p, group_size))
        .enumerate()
    {
        if row % chunk == 0 {
            seed = seeds();
        }
        match requests.last_mut() {
            Some(last) if row % chunk != 0 && row % group_size != 0 => last.n += 1,
            _ => requests.push(GenerateRequest {
                prompt_ids: p.ids.as_ref().clone(),
                n: 1,
                params: SamplingParams {
                    seed,
                    ..params.clone()
                },
            }),
        }
    }
    requests
}

/// The replies to [`round_requests`] regrouped: `group_size` completions per prompt, in prompt
/// order.
pub fn group_completions(
    replies: Vec<Vec<Completion>>,
    prompts: usize,
    group_size: usize,
) -> Result<Vec<Vec<Completion>>, TrainerError> {
    let all: Vec<Completion> = replies.into_iter().flatten().collect();
    if all.len() != prompts * group_size {
        return Err(TrainerError::EngineReply {
            message: format!(
                "{} completions for {prompts} prompts x {group_size} samples",
                all.len()
            ),
        });
    }
    let mut it = all.into_iter();
    Ok((0..prompts)
        .map(|_| it.by_ref().take(group_size).collect())
        .collect())
}

impl Scorer<'_> {
    /// Scoring phase for one response: decode without end tokens, verify, map the outcome to a
    /// reward and apply length shaping.
    pub fn score(
        &self,
        prompt: &RoundPrompt<'_>,
        g: Completion,
        outcomes: &mut OutcomeCounts,
    ) -> Result<ScoredResponse, TrainerError> {
        let text = self
            .tokenizer
            .decode(strip_end_tokens(&g.tokens, self.end_ids), false)?;
        let v = self.verifier.verify(&text, prompt.answer);
        outcomes.record(&v.outcome);
        let length = ResponseLength {
            tokens: g.tokens.len(),
            truncated: g.finish == FinishReason::Length,
        };
        let shaped = self.overlong.shape(self.rewards.reward(&v.outcome), length);
        Ok(ScoredResponse {
            prompt_index: prompt.index,
            prompt_ids: prompt.ids.clone(),
            response: g.tokens,
            rollout_logp: g.logprobs,
            finish: g.finish,
            version: g.version,
            text,
            correct: v.outcome.is_correct(),
            reward: shaped.reward,
            penalty: shaped.penalty,
            train: shaped.keep,
            tier: prompt.tier.clone(),
        })
    }

    /// Scoring phase for a round: one [`RolloutGroup`] per prompt, its group id the prompt's
    /// position in `prompts` (the trainer numbers groups across rounds and workers once they
    /// are merged: [`crate::Trainer::collect_batch`]).
    pub fn score_round(
        &self,
        prompts: &[RoundPrompt<'_>],
        generations: Vec<Vec<Completion>>,
        outcomes: &mut OutcomeCounts,
    ) -> Result<Vec<RolloutGroup<ScoredResponse>>, TrainerError> {
        let mut groups = Vec::with_capacity(prompts.len());
        for (i, (p, gens)) in prompts.iter().zip(generations).enumerate() {
            let items = gens
                .into_iter()
                .map(|g| self.score(p, g, outcomes))
                .collect::<Result<Vec<_>, _>>()?;
            groups.push(RolloutGroup {
                group: GroupId(i as u64),
                prompt: p.index as u64,
                rewards: items.iter().map(|r| r.reward).collect(),
                correct: items.iter().map(|r| r.correct).collect(),
                items,
            });
        }
        Ok(groups)
    }
}
