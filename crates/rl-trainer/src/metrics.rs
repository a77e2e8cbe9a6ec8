//! Per-step metrics with fixed names, written as JSON lines.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use rl_advantage::BatchAdvantages;
use rl_loss::IsStats;
use rl_rollout::staleness;
use rl_sampler::RolloutGroup;

use crate::TrainerError;
use crate::eval::EvalReport;
use crate::scoring::ScoredResponse;
pub use crate::step_stats::pass_rate_bin;
use crate::step_stats::{CriticStats, GenerationStats, UpdateStats};

/// Metrics of one training step. Field names are stable: dashboards and `rlvr compare` read
/// them. Means are over the responses (or tokens) of the step's training batch unless the name
/// says otherwise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepMetrics {
    /// 1-based step.
    pub step: usize,
    /// Learning rate used.
    pub lr: f64,
    /// Mean shaped reward of every response generated this step (all rounds).
    pub reward_mean: f64,
    /// Accuracy of every response generated this step.
    pub acc: f64,
    /// Accuracy per difficulty tier (responses generated this step).
    pub acc_by_tier: BTreeMap<String, f64>,
    /// Histogram of per-group pass rates p̂ over 5 bins [0,.2),[.2,.4),[.4,.6),[.6,.8),[.8,1].
    pub pass_rate_hist: [usize; 5],
    /// Histogram of pass rates of the groups kept for training.
    pub kept_pass_rate_hist: [usize; 5],
    /// Trained groups whose responses were all correct (only without a filter).
    #[serde(default)]
    pub kept_all_correct: usize,
    /// Trained groups whose responses were all wrong (only without a filter).
    #[serde(default)]
    pub kept_all_wrong: usize,
    /// Generation rounds used to fill the batch.
    pub gen_rounds: usize,
    /// Groups generated.
    pub groups_seen: usize,
    /// Groups that passed the filter.
    pub groups_kept: usize,
    /// Groups trained on.
    pub groups_used: usize,
    /// Kept groups generated but dropped because the batch was already full.
    #[serde(default)]
    pub surplus_dropped: usize,
    /// Fraction of generated groups that were all correct.
    pub frac_all_correct: f64,
    /// Fraction of generated groups that were all wrong.
    pub frac_all_wrong: f64,
    /// Responses generated this step.
    pub responses_generated: usize,
    /// Responses generated since the start of the run.
    pub rollouts_total: u64,
    /// Fraction of trained responses whose advantage DAA amplified.
    pub frac_amplified: f64,
    /// Mean advantage of trained responses.
    pub adv_mean: f64,
    /// Std of advantages.
    pub adv_std: f64,
    /// Smallest advantage.
    pub adv_min: f64,
    /// Largest advantage.
    pub adv_max: f64,
    /// Total loss, mean over optimizer updates.
    pub loss: f64,
    /// Policy-gradient loss, mean over updates.
    pub pg_loss: f64,
    /// KL term (before β), mean over updates.
    pub kl_loss: f64,
    /// Mean token entropy of the policy on the trained responses.
    pub entropy: f64,
    /// Fraction of tokens clipped at 1 + ε_high.
    pub clip_frac_upper: f64,
    /// Fraction of tokens clipped at 1 − ε_low.
    pub clip_frac_lower: f64,
    /// Fraction of tokens capped by dual-clip.
    pub dual_clip_frac: f64,
    /// Mean importance ratio.
    pub ratio_mean: f64,
    /// Largest importance ratio.
    pub ratio_max: f64,
    /// Approximate KL to the behaviour policy (mean logp_old − logp).
    pub approx_kl: f64,
    /// Mean per-token KL estimate to the reference policy (0 without KL).
    pub kl_ref: f64,
    /// Mean pre-clip global gradient norm over updates.
    pub grad_norm: f64,
    /// Mean response length in tokens (trained responses; for episodes, sampled and observation
    /// tokens after the prompt).
    pub response_len_mean: f64,
    /// Longest response.
    pub response_len_max: usize,
    /// Fraction of generated responses that hit max_new_tokens.
    pub truncation_rate: f64,
    /// Mean |log π_old − log π_rollout| over trained tokens (engine/trainer mismatch).
    pub logprob_mismatch: f64,
    /// Largest such difference.
    pub logprob_mismatch_max: f64,
    /// Fraction of trained tokens whose importance weight was truncated (`token_tis`).
    #[serde(default)]
    pub is_frac_truncated: f64,
    /// Fraction of trained tokens masked by the importance-sampling correction.
    #[serde(default)]
    pub is_frac_masked: f64,
    /// The weight version trained in this step (optimizer steps before it).
    #[serde(default)]
    pub weight_version: u64,
    /// Largest staleness (versions behind) of a trained rollout.
    #[serde(default)]
    pub staleness_max: u64,
    /// Mean staleness of trained rollouts.
    #[serde(default)]
    pub staleness_mean: f64,
    /// Groups generated but dropped: staler than `rollout.max_staleness`, or aborted by the
    /// engine.
    #[serde(default)]
    pub stale_groups_dropped: usize,
    /// Verifier outcome counts of every generated response.
    pub outcomes: BTreeMap<String, u64>,
    /// Generated tokens per second during rollouts.
    pub rollout_tokens_per_s: f64,
    /// Trained tokens (prompt + response) per second during updates.
    pub train_tokens_per_s: f64,
    /// Seconds generating and verifying.
    pub time_rollout_s: f64,
    /// Seconds computing old/reference log-probs.
    pub time_logprobs_s: f64,
    /// Seconds in forward/backward/optimizer.
    pub time_train_s: f64,
    /// Seconds handing the new weights to the rollout engine.
    #[serde(default)]
    pub time_sync_s: f64,
    /// Seconds for the whole step.
    pub time_step_s: f64,
    /// Peak resident memory of the process while generating, scoring and filtering, in MiB
    /// ([`crate::memory::PhasePeak`]; `null` where the OS does not report it).
    #[serde(default)]
    pub peak_rss_rollout_mb: Option<f64>,
    /// Peak resident memory while computing old/reference log-probs, in MiB.
    #[serde(default)]
    pub peak_rss_logprobs_mb: Option<f64>,
    /// Peak resident memory during the updates, in MiB.
    #[serde(default)]
    pub peak_rss_train_mb: Option<f64>,
    /// Optimizer updates applied in this step.
    pub updates: usize,
    /// Updates skipped because the loss or the gradient norm was not finite.
    #[serde(default)]
    pub updates_skipped: usize,
    /// Smallest and largest group generated this step (`[rollout.budget]` runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_sizes: Option<[usize; 2]>,
    /// Mean over the trained tokens of log π_old − log π_teacher at the sampled token: the
    /// sampled-token estimate of the reverse KL to the teacher (`[distill]`, `sampled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distill_reverse_kl: Option<f64>,
    /// Mean over the trained tokens of the full-vocabulary generalized JSD to the teacher
    /// (`[distill]`, `full`; the reverse KL when β = 1), over the step's updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distill_divergence: Option<f64>,
    /// Turns and tool use of the step's generated episodes (multi-turn runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub episodes: Option<EpisodeMetrics>,
    /// With `[reward.model]` or `[reward.judge]`: the parts of the generated responses' rewards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_parts: Option<RewardParts>,
    /// PPO's critic (`algorithm = "ppo"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<CriticMetrics>,
    /// Evaluation after this step, if one ran.
    pub eval: Option<EvalReport>,
}

/// The parts of a step's rewards, means over its generated responses, before weighting.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RewardParts {
    /// The verifier's shaped reward.
    pub verifier: f64,
    /// The reward model's raw score (`[reward.model]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<f64>,
    /// The judge's reward (`[reward.judge]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<f64>,
    /// Judge replies its rule could not read (each a reward of 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_unparsed: Option<usize>,
}

/// PPO's critic in a step (verl's `critic/*` metrics).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CriticMetrics {
    /// Mean value loss over the critic's applied updates.
    pub value_loss: f64,
    /// Fraction of loss tokens where the clipped value term was the larger.
    pub vf_clipfrac: f64,
    /// 1 − Var(R − V) / (Var(R) + 1e-5) over the batch's loss tokens, V as generated.
    pub vf_explained_var: f64,
    /// Mean value over the batch's loss tokens.
    pub values_mean: f64,
    /// Mean GAE return over the batch's loss tokens.
    pub returns_mean: f64,
    /// Mean pre-clip gradient norm of the critic's applied updates.
    pub grad_norm: f64,
    /// Critic updates applied.
    pub updates: usize,
    /// Critic updates skipped (non-finite loss or gradient).
    pub updates_skipped: usize,
    /// False during `critic.warmup_steps`: only the critic trained.
    pub policy_updated: bool,
    /// The KL penalty's β this step (`[critic.kl_in_reward]` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kl_coef: Option<f64>,
    /// The batch's mean KL(π_old ‖ π_ref) in the reward (`[critic.kl_in_reward]` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kl: Option<f64>,
}

impl CriticMetrics {
    /// From a step's critic sums.
    pub fn from_stats(c: &CriticStats) -> Self {
        let u = c.applied.max(1) as f64;
        CriticMetrics {
            value_loss: c.loss_sum / u,
            vf_clipfrac: c.clipped as f64 / c.tokens.max(1) as f64,
            vf_explained_var: c.explained_var,
            values_mean: c.values_mean,
            returns_mean: c.returns_mean,
            grad_norm: c.grad_norm_sum / u,
            updates: c.applied,
            updates_skipped: c.skipped,
            policy_updated: c.policy_updated,
            kl_coef: c.kl_in_reward.map(|k| k.0),
            kl: c.kl_in_reward.map(|k| k.1),
        }
    }
}

/// Turns and tool use of the episodes generated in a step (`[rollout.env]` runs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EpisodeMetrics {
    /// Mean assistant turns per episode.
    pub turns_mean: f64,
    /// Fraction of episodes with at least one tool call.
    pub tool_call_rate: f64,
    /// Mean tool calls per episode.
    pub tool_calls_mean: f64,
    /// Fraction of tool calls answered with an error (malformed, unknown tool, tool failed).
    pub tool_error_rate: f64,
    /// Mean observation tokens per episode (not trained on).
    pub observation_tokens_mean: f64,
    /// Episodes by how they ended (`done`, `max_turns`, `token_budget`, `turn_length`).
    pub ends: BTreeMap<String, usize>,
}

impl EpisodeMetrics {
    /// From a step's sums; `None` when no episode was generated.
    pub fn from_stats(e: &crate::trainer::EpisodeStats) -> Option<Self> {
        (e.episodes > 0).then(|| {
            let n = e.episodes as f64;
            EpisodeMetrics {
                turns_mean: e.turns as f64 / n,
                tool_call_rate: e.with_tool_calls as f64 / n,
                tool_calls_mean: e.tool_calls as f64 / n,
                tool_error_rate: e.tool_errors as f64 / e.tool_calls.max(1) as f64,
                observation_tokens_mean: e.observation_tokens as f64 / n,
                ends: e.ends.clone(),
            }
        })
    }
}

/// Names of the fields that depend on wall-clock time or on the machine's memory accounting
/// (excluded from determinism checks).
pub const TIMING_FIELDS: [&str; 10] = [
    "rollout_tokens_per_s",
    "train_tokens_per_s",
    "time_rollout_s",
    "time_logprobs_s",
    "time_train_s",
    "time_sync_s",
    "time_step_s",
    "peak_rss_rollout_mb",
    "peak_rss_logprobs_mb",
    "peak_rss_train_mb",
];

/// Seconds spent in each phase of a step.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    /// Generating, scoring and filtering.
    pub rollout_s: f64,
    /// π_old and reference log-probs.
    pub logprobs_s: f64,
    /// The updates.
    pub train_s: f64,
    /// The weight sync.
    pub sync_s: f64,
    /// The whole step.
    pub step_s: f64,
}

/// Peak resident memory of each phase of a step, in MiB ([`crate::memory::PhasePeak`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct PhasePeaks {
    /// Generating, scoring and filtering.
    pub rollout_mb: Option<f64>,
    /// π_old and reference log-probs.
    pub logprobs_mb: Option<f64>,
    /// The updates.
    pub train_mb: Option<f64>,
}

/// Everything a step's phases produced that its [`StepMetrics`] are computed from.
pub struct StepRecord<'a> {
    /// 1-based step.
    pub step: usize,
    /// Learning rate used.
    pub lr: f64,
    /// The weight version trained (optimizer steps before this one).
    pub weight_version: u64,
    /// Responses generated since the start of the run, this step's included.
    pub rollouts_total: u64,
    /// Sums over every response the step generated.
    pub generation: &'a GenerationStats,
    /// The kept groups trained on.
    pub groups: &'a [RolloutGroup<ScoredResponse>],
    /// Their advantages and advantage statistics.
    pub advantages: &'a BatchAdvantages,
    /// Importance-sampling statistics over the trained tokens.
    pub is: &'a IsStats,
    /// What the updates did.
    pub update: &'a UpdateStats,
    /// Seconds per phase.
    pub times: PhaseTimes,
    /// Peak resident memory per phase.
    pub peaks: PhasePeaks,
    /// Group sizes come from `[rollout.budget]` (report them).
    pub adaptive_sizes: bool,
    /// Sampled-token distillation: Σ (log π_old − log π_T) over the trained tokens and their
    /// count.
    pub distill_reverse_kl: Option<(f64, usize)>,
    /// PPO's critic.
    pub critic: Option<&'a CriticStats>,
    /// Which parts besides the verifier's the rewards have: (reward model, judge); `None`:
    /// the verifier's alone.
    pub reward_parts: Option<(bool, bool)>,
}

/// The metrics phase: every field of a step's [`StepMetrics`] from the outputs of the other
/// phases (the evaluation, when one runs, is added by [`crate::Trainer::run`]).
pub fn step_metrics(r: &StepRecord<'_>) -> StepMetrics {
    let rollout = r.generation;
    let per_response = |x: usize| x as f64 / rollout.generated.max(1) as f64;
    let rep = rollout.report;
    let items: Vec<&ScoredResponse> = r.groups.iter().flat_map(|g| g.items.iter()).collect();
    let mut kept_hist = [0usize; 5];
    for g in r.groups {
        kept_hist[pass_rate_bin(g.pass_rate())] += 1;
    }
    let lags: Vec<u64> = items
        .iter()
        .map(|it| staleness(r.weight_version, it.version))
        .collect();
    let (adv, is, update, t) = (&r.advantages.stats, r.is, r.update, r.times);
    let l = &update.loss;
    let u = update.applied.max(1) as f64;
    StepMetrics {
        step: r.step,
        lr: r.lr,
        reward_mean: rollout.reward_sum / rollout.generated.max(1) as f64,
        acc: per_response(rollout.correct),
        acc_by_tier: rollout
            .tiers
            .iter()
            .map(|(k, &(c, n))| (k.clone(), c as f64 / n.max(1) as f64))
            .collect(),
        pass_rate_hist: rollout.pass_rate_hist,
        kept_pass_rate_hist: kept_hist,
        kept_all_correct: r.groups.iter().filter(|g| g.pass_rate() == 1.0).count(),
        kept_all_wrong: r.groups.iter().filter(|g| g.pass_rate() == 0.0).count(),
        gen_rounds: rep.rounds,
        groups_seen: rep.groups_seen,
        groups_kept: rep.groups_kept,
        groups_used: rep.groups_used,
        surplus_dropped: rep.surplus_dropped,
        frac_all_correct: rep.frac_all_correct(),
        frac_all_wrong: rep.frac_all_wrong(),
        responses_generated: rollout.generated,
        rollouts_total: r.rollouts_total,
        frac_amplified: adv.amplified as f64 / items.len().max(1) as f64,
        adv_mean: adv.mean,
        adv_std: adv.std,
        adv_min: adv.min,
        adv_max: adv.max,
        loss: l.loss / u,
        pg_loss: l.policy_loss / u,
        kl_loss: l.kl_loss / u,
        entropy: l.entropy(),
        clip_frac_upper: l.clip_frac_upper(),
        clip_frac_lower: l.clip_frac_lower(),
        dual_clip_frac: l.dual_clip_frac(),
        ratio_mean: l.ratio_mean(),
        ratio_max: l.ratio_max,
        approx_kl: l.approx_kl(),
        kl_ref: l.kl(),
        grad_norm: update.grad_norm_sum / u,
        response_len_mean: items.iter().map(|it| it.response.len()).sum::<usize>() as f64
            / items.len().max(1) as f64,
        response_len_max: items.iter().map(|it| it.response.len()).max().unwrap_or(0),
        truncation_rate: per_response(rollout.truncated),
        logprob_mismatch: is.abs_diff_mean(),
        logprob_mismatch_max: is.abs_diff_max,
        is_frac_truncated: is.frac_truncated(),
        is_frac_masked: is.frac_masked(),
        weight_version: r.weight_version,
        staleness_max: lags.iter().copied().max().unwrap_or(0),
        staleness_mean: lags.iter().sum::<u64>() as f64 / lags.len().max(1) as f64,
        stale_groups_dropped: rollout.dropped.groups,
        outcomes: rollout
            .outcomes
            .as_pairs()
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        rollout_tokens_per_s: rollout.gen_tokens as f64 / t.rollout_s.max(1e-9),
        train_tokens_per_s: update.trained_tokens as f64 / t.train_s.max(1e-9),
        time_rollout_s: t.rollout_s,
        time_logprobs_s: t.logprobs_s,
        time_train_s: t.train_s,
        time_sync_s: t.sync_s,
        time_step_s: t.step_s,
        peak_rss_rollout_mb: r.peaks.rollout_mb,
        peak_rss_logprobs_mb: r.peaks.logprobs_mb,
        peak_rss_train_mb: r.peaks.train_mb,
        updates: update.applied,
        updates_skipped: update.skipped,
        group_sizes: r
            .adaptive_sizes
            .then_some(rollout.group_size_range)
            .flatten()
            .map(|(lo, hi)| [lo, hi]),
        distill_reverse_kl: r.distill_reverse_kl.map(|(s, n)| s / n.max(1) as f64),
        distill_divergence: update.divergence.map(|(s, n)| s / n.max(1) as f64),
        episodes: EpisodeMetrics::from_stats(&rollout.episodes),
        critic: r.critic.map(CriticMetrics::from_stats),
        reward_parts: r.reward_parts.map(|(model, judge)| {
            let p = &rollout.reward_parts;
            let n = p.responses.max(1) as f64;
            RewardParts {
                verifier: p.verifier_sum / n,
                model: model.then_some(p.model_sum / n),
                judge: judge.then_some(p.judge_sum / n),
                judge_unparsed: judge.then_some(p.judge_unparsed),
            }
        }),
        eval: None,
    }
}

/// Appends metrics to `metrics.jsonl`.
pub struct MetricsWriter {
    path: PathBuf,
    file: File,
}

impl MetricsWriter {
    /// Opens (creates) `path` for appending; with `keep_until = Some(s)`, first drops every line
    /// whose `step` is greater than `s` (a resumed run rewrites what the killed run wrote after
    /// its last checkpoint).
    pub fn open(path: &Path, keep_until: Option<usize>) -> Result<Self, TrainerError> {
        if let Some(last) = keep_until
            && path.exists()
        {
            let f = File::open(path).map_err(|e| TrainerError::io(path, e))?;
            let mut kept = String::new();
            for line in BufReader::new(f).lines() {
                let line = line.map_err(|e| TrainerError::io(path, e))?;
                let step = serde_json::from_str::<serde_json::Value>(&line)
                    .ok()
                    .and_then(|v| v.get("step").and_then(|s| s.as_u64()));
                if matches!(step, Some(s) if s as usize <= last) {
                    kept.push_str(&line);
                    kept.push('\n');
                }
            }
            std::fs::write(path, kept).map_err(|e| TrainerError::io(path, e))?;
        } else if keep_until.is_none() && path.exists() {
            std::fs::remove_file(path).map_err(|e| TrainerError::io(path, e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| TrainerError::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Writes one line and flushes it.
    pub fn write(&mut self, m: &StepMetrics) -> Result<(), TrainerError> {
        self.write_record(m)
    }

    /// Appends any record with a `step` field as one JSON line (e.g. the theorem probe's).
    pub fn write_record<T: Serialize>(&mut self, m: &T) -> Result<(), TrainerError> {
        let line = serde_json::to_string(m).map_err(|e| TrainerError::Metrics {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        writeln!(self.file, "{line}").map_err(|e| TrainerError::io(&self.path, e))?;
        self.file
            .flush()
            .map_err(|e| TrainerError::io(&self.path, e))
    }
}

/// Reads a metrics file.
pub fn read_metrics(path: &Path) -> Result<Vec<StepMetrics>, TrainerError> {
    read_jsonl(path)
}

/// Reads a JSON-lines file of records (metrics, probe records, or `serde_json::Value`); blank
/// lines are skipped and a bad line is an error naming its number.
pub fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, TrainerError> {
    let text = std::fs::read_to_string(path).map_err(|e| TrainerError::io(path, e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| TrainerError::Metrics {
                path: path.display().to_string(),
                message: format!("line {}: {e}", i + 1),
            })
        })
        .collect()
}
