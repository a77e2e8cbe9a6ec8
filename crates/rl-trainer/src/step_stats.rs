//! What a step's phases count: [`GenerationStats`] (every response the generation rounds
//! produced, kept or not) and [`UpdateStats`] (what the optimizer updates did). The trainer's
//! phases fill them ([`crate::trainer`]); [`crate::metrics`] turns them into a `metrics.jsonl` row.

use std::collections::BTreeMap;

use rl_loss::{IsStats, LossMetrics};
use rl_rollout::FinishReason;
use rl_sampler::{BatchReport, RolloutGroup};
use rl_verifier::OutcomeCounts;

use crate::parallel::DroppedGroups;
use crate::scoring::{EpisodeSummary, ScoredResponse};

/// Bins a pass rate into [`crate::metrics::StepMetrics::pass_rate_hist`]'s 5 bins.
pub fn pass_rate_bin(p: f64) -> usize {
    ((p * 5.0) as usize).min(4)
}

/// Sums over every response generated in a step's rounds (all of them, kept or not).
#[derive(Clone, Debug, Default)]
pub struct GenerationStats {
    /// Responses generated.
    pub generated: usize,
    /// Correct responses.
    pub correct: usize,
    /// Sum of shaped rewards.
    pub reward_sum: f64,
    /// Responses that hit `max_new_tokens`.
    pub truncated: usize,
    /// Generated tokens.
    pub gen_tokens: usize,
    /// Per tier: (correct, responses).
    pub tiers: BTreeMap<String, (usize, usize)>,
    /// Pass-rate histogram of every generated group.
    pub pass_rate_hist: [usize; 5],
    /// Verifier outcomes.
    pub outcomes: OutcomeCounts,
    /// The batcher's counters for the emitted batch.
    pub report: BatchReport,
    /// Groups dropped before scoring: staler than `rollout.max_staleness`, or aborted.
    pub dropped: DroppedGroups,
    /// Turns and tool use of the generated episodes (multi-turn runs).
    pub episodes: EpisodeStats,
    /// Smallest and largest group generated (they differ with `[rollout.budget]`).
    pub group_size_range: Option<(usize, usize)>,
    /// With `[reward.model]` or `[reward.judge]`: the parts of the generated responses' rewards.
    pub reward_parts: RewardPartSums,
}

/// Sums of the parts of the rewards (`[reward.model]`, `[reward.judge]`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RewardPartSums {
    /// Σ verifier reward (shaped, before weighting).
    pub verifier_sum: f64,
    /// Σ raw reward-model score.
    pub model_sum: f64,
    /// Σ judge reward.
    pub judge_sum: f64,
    /// Judge replies its rule could not read (reward 0).
    pub judge_unparsed: usize,
    /// Responses rewarded.
    pub responses: usize,
}

impl RewardPartSums {
    /// Adds another round's sums.
    pub fn add(&mut self, other: &Self) {
        self.verifier_sum += other.verifier_sum;
        self.model_sum += other.model_sum;
        self.judge_sum += other.judge_sum;
        self.judge_unparsed += other.judge_unparsed;
        self.responses += other.responses;
    }
}

/// Sums over generated multi-turn episodes.
#[derive(Clone, Debug, Default)]
pub struct EpisodeStats {
    /// Episodes.
    pub episodes: usize,
    /// Assistant turns.
    pub turns: usize,
    /// Tool calls.
    pub tool_calls: usize,
    /// Episodes with at least one tool call.
    pub with_tool_calls: usize,
    /// Tool calls answered with an error.
    pub tool_errors: usize,
    /// Observation tokens appended.
    pub observation_tokens: usize,
    /// Episodes by how they ended.
    pub ends: BTreeMap<String, usize>,
}

impl EpisodeStats {
    /// Adds one episode with `observation_tokens` observation tokens.
    pub fn observe(&mut self, e: &EpisodeSummary, observation_tokens: usize) {
        self.episodes += 1;
        self.turns += e.turns;
        self.tool_calls += e.tool_calls;
        self.with_tool_calls += (e.tool_calls > 0) as usize;
        self.tool_errors += e.tool_errors;
        self.observation_tokens += observation_tokens;
        *self.ends.entry(e.end.name().to_string()).or_default() += 1;
    }
}

impl GenerationStats {
    /// Adds a scored round.
    pub fn observe_round(&mut self, groups: &[RolloutGroup<ScoredResponse>]) {
        for g in groups {
            let n = g.items.len();
            self.group_size_range = Some(match self.group_size_range {
                None => (n, n),
                Some((lo, hi)) => (lo.min(n), hi.max(n)),
            });
            self.pass_rate_hist[pass_rate_bin(g.pass_rate())] += 1;
            for it in &g.items {
                self.generated += 1;
                self.reward_sum += it.reward;
                self.correct += it.correct as usize;
                self.truncated += (it.finish == FinishReason::Length) as usize;
                self.gen_tokens += it.sampled_len();
                if let Some(e) = &it.episode {
                    self.episodes
                        .observe(e, it.response.len() - it.sampled_len());
                }
                if let Some(t) = &it.tier {
                    let e = self.tiers.entry(t.clone()).or_default();
                    e.0 += it.correct as usize;
                    e.1 += 1;
                }
            }
        }
    }

    /// Responses the step charges to the rollout budget: generated and dropped ones.
    pub fn responses_charged(&self) -> u64 {
        (self.generated + self.dropped.responses) as u64
    }
}

/// What a step's updates did.
#[derive(Clone, Debug, Default)]
pub struct UpdateStats {
    /// Loss metrics merged over the applied updates.
    pub loss: LossMetrics,
    /// Sum of the applied updates' pre-clip gradient norms.
    pub grad_norm_sum: f64,
    /// Updates applied.
    pub applied: usize,
    /// Updates skipped (non-finite loss or gradient).
    pub skipped: usize,
    /// Prompt + response tokens forwarded, summed over the workers.
    pub trained_tokens: usize,
    /// The importance-sampling statistics when π_old came from the update's forward
    /// ([`Behaviour::old_from_update`](crate::trainer::Behaviour::old_from_update)), summed over the workers.
    pub is_stats: Option<IsStats>,
    /// With full-vocabulary distillation: the divergence summed over the trained tokens of the
    /// applied and skipped updates, and their count.
    pub divergence: Option<(f64, usize)>,
}

/// What a step did with PPO's critic: its updates (sums) and the batch's values and returns
/// as generated (verl's `critic/*` metrics).
#[derive(Clone, Debug, Default)]
pub struct CriticStats {
    /// Sum of the applied updates' value losses.
    pub loss_sum: f64,
    /// Critic updates applied.
    pub applied: usize,
    /// Critic updates skipped (non-finite loss or gradient).
    pub skipped: usize,
    /// Sum of the applied updates' pre-clip gradient norms.
    pub grad_norm_sum: f64,
    /// Loss tokens where the clipped value term was the larger, over the applied updates.
    pub clipped: usize,
    /// Loss tokens of the applied updates.
    pub tokens: usize,
    /// 1 − Var(R − V) / (Var(R) + 1e-5) over the batch's loss tokens (Bessel-corrected).
    pub explained_var: f64,
    /// Mean V_old over the batch's loss tokens.
    pub values_mean: f64,
    /// Mean return over the batch's loss tokens.
    pub returns_mean: f64,
    /// With the KL penalty in the reward: the β this batch used and the batch's KL.
    pub kl_in_reward: Option<(f64, f64)>,
    /// False during the critic's warm-up steps (the policy was not updated).
    pub policy_updated: bool,
}
