//! Generation rounds: prompts → G responses each → verification → reward shaping.

use std::sync::Arc;

use burn::tensor::backend::AutodiffBackend;
use rl_advantage::GroupId;
use rl_models::{FinishReason, GenerationConfig, Tokenizer};
use rl_sampler::RolloutGroup;
use rl_verifier::{OutcomeCounts, OverlongPolicy, ResponseLength, RewardMap, Verifier};
use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::policy::Policy;

/// One scored response with everything the update needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    /// Index of the prompt in the data set.
    pub prompt_index: usize,
    /// The rendered prompt (shared by the group).
    pub prompt_ids: Arc<Vec<u32>>,
    /// Generated tokens (a final end token included).
    pub response: Vec<u32>,
    /// The sampler's raw (temperature-1) log-prob of each generated token.
    pub sampler_logp: Vec<f32>,
    /// Why generation stopped.
    pub finish: FinishReason,
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

/// Generates `group_size` responses for each prompt (in chunks of `chunk` sequences, 0 = all at
/// once, each chunk with its own seed from `seeds`), verifies and shapes them, and returns one
/// group per prompt. `next_group` numbers the groups.
#[allow(clippy::too_many_arguments)]
pub fn generate_round<B: AutodiffBackend, P: Policy<B>>(
    policy: &P,
    prompts: &[RoundPrompt<'_>],
    group_size: usize,
    gen_cfg: &GenerationConfig,
    chunk: usize,
    seeds: &mut dyn FnMut() -> u64,
    scorer: &Scorer<'_>,
    next_group: &mut u64,
    outcomes: &mut OutcomeCounts,
) -> Result<Vec<RolloutGroup<Rollout>>, TrainerError> {
    let inputs: Vec<Vec<u32>> = prompts
        .iter()
        .flat_map(|p| std::iter::repeat_n(p.ids.as_ref().clone(), group_size))
        .collect();
    let chunk = if chunk == 0 { inputs.len() } else { chunk };
    let mut gens = Vec::with_capacity(inputs.len());
    for part in inputs.chunks(chunk.max(1)) {
        let cfg = GenerationConfig {
            seed: seeds(),
            ..gen_cfg.clone()
        };
        gens.extend(policy.generate(part, &cfg)?);
    }
    let mut groups = Vec::with_capacity(prompts.len());
    let mut it = gens.into_iter();
    for p in prompts {
        let mut items = Vec::with_capacity(group_size);
        for _ in 0..group_size {
            let g = it.next().ok_or_else(|| TrainerError::Diverged {
                step: 0,
                message: "the generator returned fewer sequences than asked for".into(),
            })?;
            let mut body = g.tokens.as_slice();
            while let Some((last, rest)) = body.split_last() {
                if scorer.end_ids.contains(last) {
                    body = rest;
                } else {
                    break;
                }
            }
            let text = scorer.tokenizer.decode(body, false)?;
            let v = scorer.verifier.verify(&text, p.answer);
            outcomes.record(&v.outcome);
            let length = ResponseLength {
                tokens: g.tokens.len(),
                truncated: g.finish_reason == FinishReason::Length,
            };
            let shaped = scorer
                .overlong
                .shape(scorer.rewards.reward(&v.outcome), length);
            items.push(Rollout {
                prompt_index: p.index,
                prompt_ids: p.ids.clone(),
                response: g.tokens,
                sampler_logp: g.logprobs,
                finish: g.finish_reason,
                text,
                correct: v.outcome.is_correct(),
                reward: shaped.reward,
                penalty: shaped.penalty,
                train: shaped.keep,
                tier: p.tier.clone(),
            });
        }
        groups.push(RolloutGroup {
            group: GroupId(*next_group),
            prompt: p.index as u64,
            rewards: items.iter().map(|r| r.reward).collect(),
            correct: items.iter().map(|r| r.correct).collect(),
            items,
        });
        *next_group += 1;
    }
    Ok(groups)
}
