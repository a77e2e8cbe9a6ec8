//! The generation and scoring phases of a round: prompts → engine requests
//! ([`round_requests`]) → G completions per prompt ([`group_completions`]) → decoded, verified
//! and shaped rollouts grouped by prompt ([`Scorer::score_round`]).

use std::sync::Arc;

use rl_advantage::GroupId;
use rl_env::{EpisodeEnd, Trajectory};
use rl_models::Tokenizer;
use rl_rollout::{FinishReason, GenerateRequest, SamplingParams, WeightVersion};
use rl_sampler::{RolloutGroup, Scored};
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
    /// The loss mask of a multi-turn episode: false on observation tokens (tool results, turn
    /// boundaries), which are context, not actions. `None` when every response token was
    /// sampled (one turn), as for every single-turn rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<Vec<bool>>,
    /// What happened in a multi-turn episode (`None` for single-turn rollouts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episode: Option<EpisodeSummary>,
    /// With `[reward.model]`: the reward model's raw score, whose weighted (normalised) value
    /// `reward` includes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_score: Option<f64>,
}

impl Scored for ScoredResponse {
    fn reward(&self) -> f64 {
        self.reward
    }

    fn correct(&self) -> bool {
        self.correct
    }
}

/// A multi-turn episode's turns and tool use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeSummary {
    /// Assistant turns.
    pub turns: usize,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Tool calls answered with an error observation.
    pub tool_errors: usize,
    /// Why it ended.
    pub end: EpisodeEnd,
    /// The environment's reward contributions (included in `reward`).
    pub env_reward: f64,
}

impl ScoredResponse {
    /// Whether response token `j` was sampled (in the loss) rather than observed.
    pub fn is_sampled(&self, j: usize) -> bool {
        self.sampled
            .as_ref()
            .is_none_or(|m| m.get(j).copied().unwrap_or(false))
    }

    /// Sampled (generated) tokens of the response.
    pub fn sampled_len(&self) -> usize {
        match &self.sampled {
            None => self.response.len(),
            Some(m) => m.iter().filter(|&&s| s).count(),
        }
    }
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
    /// Rollouts are multi-turn episodes (`[rollout.env]`): each response records its
    /// [`EpisodeSummary`].
    pub multi_turn: bool,
    /// Responses verified at once (threads): 1 for the rule-based verifiers, the sandbox's
    /// concurrency for `code`.
    pub parallelism: usize,
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

/// The requests of a round: `sizes[i]` samples of prompt i (the group size, the same for every
/// prompt unless `[rollout.budget]` sizes groups by difficulty), in chunks of `chunk` sequences
/// (0 = the whole round) that each take one seed from `seeds`. A prompt whose samples straddle
/// a chunk boundary becomes two requests. With the local engine each chunk is one batch drawing
/// streams 0, 1, … of its seed.
pub fn round_requests(
    prompts: &[RoundPrompt<'_>],
    sizes: &[usize],
    params: &SamplingParams,
    chunk: usize,
    seeds: &mut dyn FnMut() -> u64,
) -> Vec<GenerateRequest> {
    let total: usize = sizes.iter().sum();
    let chunk = if chunk == 0 { total.max(1) } else { chunk };
    let mut requests: Vec<GenerateRequest> = Vec::new();
    let mut seed = 0;
    let rows = prompts
        .iter()
        .zip(sizes)
        .flat_map(|(p, &n)| (0..n).map(move |j| (p, j == 0)));
    for (row, (p, first_of_prompt)) in rows.enumerate() {
        if row % chunk == 0 {
            seed = seeds();
        }
        match requests.last_mut() {
            Some(last) if row % chunk != 0 && !first_of_prompt => last.n += 1,
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

/// The replies to [`round_requests`] (completions, or episodes) regrouped: `sizes[i]` for
/// prompt i, in prompt order.
pub fn group_completions<T>(
    replies: Vec<Vec<T>>,
    sizes: &[usize],
) -> Result<Vec<Vec<T>>, TrainerError> {
    let all: Vec<T> = replies.into_iter().flatten().collect();
    let expected: usize = sizes.iter().sum();
    if all.len() != expected {
        return Err(TrainerError::EngineReply {
            message: format!(
                "{} completions for {} prompts with {expected} samples in all",
                all.len(),
                sizes.len()
            ),
        });
    }
    let mut it = all.into_iter();
    Ok(sizes
        .iter()
        .map(|&n| it.by_ref().take(n).collect())
        .collect())
}

impl Scorer<'_> {
    /// Scoring phase for one rollout: decode its final assistant turn without end tokens
    /// (for one turn, the whole response), verify it, map the outcome to a reward, add the
    /// environment's reward contributions and apply length shaping to the sampled tokens.
    pub fn score(
        &self,
        prompt: &RoundPrompt<'_>,
        t: Trajectory,
        outcomes: &mut OutcomeCounts,
    ) -> Result<ScoredResponse, TrainerError> {
        let text = self
            .tokenizer
            .decode(strip_end_tokens(t.last_turn(), self.end_ids), false)?;
        let v = self.verifier.verify(&text, prompt.answer);
        outcomes.record(&v.outcome);
        let finish = t.finish();
        let length = ResponseLength {
            tokens: t.sampled_len(),
            truncated: finish == FinishReason::Length,
        };
        let base = self.rewards.reward_for(&v) + t.env_reward;
        let shaped = self.overlong.shape(base, length);
        let episode = self.multi_turn.then_some(EpisodeSummary {
            turns: t.turns.len(),
            tool_calls: t.tool_calls,
            tool_errors: t.tool_errors,
            end: t.end,
            env_reward: t.env_reward,
        });
        let version = t.version();
        let sampled = (!t.all_sampled()).then_some(t.sampled);
        Ok(ScoredResponse {
            prompt_index: prompt.index,
            prompt_ids: prompt.ids.clone(),
            response: t.tokens,
            rollout_logp: t.logprobs,
            finish,
            version,
            text,
            correct: v.outcome.is_correct(),
            reward: shaped.reward,
            penalty: shaped.penalty,
            train: shaped.keep,
            tier: prompt.tier.clone(),
            sampled,
            episode,
            model_score: None,
        })
    }

    /// Scoring phase for a round: one [`RolloutGroup`] per prompt, its group id the prompt's
    /// position in `prompts` (the trainer numbers groups across rounds and workers once they
    /// are merged: [`crate::Trainer::collect_batch`]). With `parallelism` > 1 the responses are
    /// verified on that many threads (for verifiers that run programs); the result is the
    /// same as in order.
    pub fn score_round(
        &self,
        prompts: &[RoundPrompt<'_>],
        generations: Vec<Vec<Trajectory>>,
        outcomes: &mut OutcomeCounts,
    ) -> Result<Vec<RolloutGroup<ScoredResponse>>, TrainerError> {
        let sizes: Vec<usize> = generations.iter().map(Vec::len).collect();
        let jobs: Vec<(usize, Trajectory)> = generations
            .into_iter()
            .enumerate()
            .flat_map(|(i, g)| g.into_iter().map(move |t| (i, t)))
            .collect();
        let mut scored = self.score_all(prompts, jobs, outcomes)?.into_iter();
        let mut groups = Vec::with_capacity(prompts.len());
        for (i, (p, n)) in prompts.iter().zip(sizes).enumerate() {
            let items: Vec<ScoredResponse> = scored.by_ref().take(n).collect();
            groups.push(RolloutGroup {
                group: GroupId(i as u64),
                prompt: p.index as u64,
                items,
            });
        }
        Ok(groups)
    }

    /// Scores (prompt position, rollout) jobs in order, on `parallelism` threads of contiguous
    /// chunks.
    fn score_all(
        &self,
        prompts: &[RoundPrompt<'_>],
        jobs: Vec<(usize, Trajectory)>,
        outcomes: &mut OutcomeCounts,
    ) -> Result<Vec<ScoredResponse>, TrainerError> {
        let threads = self.parallelism.clamp(1, jobs.len().max(1));
        if threads == 1 {
            return jobs
                .into_iter()
                .map(|(i, t)| self.score(&prompts[i], t, outcomes))
                .collect();
        }
        let per = jobs.len().div_ceil(threads);
        let mut chunks: Vec<Vec<(usize, Trajectory)>> = Vec::new();
        let mut it = jobs.into_iter().peekable();
        while it.peek().is_some() {
            chunks.push(it.by_ref().take(per).collect());
        }
        type Chunk = Result<(Vec<ScoredResponse>, OutcomeCounts), TrainerError>;
        let results: Vec<Chunk> = std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|chunk| {
                    s.spawn(move || {
                        let mut counts = OutcomeCounts::default();
                        let items = chunk
                            .into_iter()
                            .map(|(i, t)| self.score(&prompts[i], t, &mut counts))
                            .collect::<Result<Vec<_>, _>>()?;
                        Ok((items, counts))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(TrainerError::EngineReply {
                            message: "a scoring thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let mut out = Vec::new();
        for r in results {
            let (items, counts) = r?;
            out.extend(items);
            outcomes.merge(&counts);
        }
        Ok(out)
    }
}
