//! Per-step metrics with fixed names, written as JSON lines.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::TrainerError;
use crate::eval::EvalReport;

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
    /// Mean response length in tokens (trained responses).
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
    /// Optimizer updates applied in this step.
    pub updates: usize,
    /// Updates skipped because the loss or the gradient norm was not finite.
    #[serde(default)]
    pub updates_skipped: usize,
    /// Evaluation after this step, if one ran.
    pub eval: Option<EvalReport>,
}

/// Names of the fields that depend on wall-clock time (excluded from determinism checks).
pub const TIMING_FIELDS: [&str; 7] = [
    "rollout_tokens_per_s",
    "train_tokens_per_s",
    "time_rollout_s",
    "time_logprobs_s",
    "time_train_s",
    "time_sync_s",
    "time_step_s",
];

/// Bins a pass rate into [`StepMetrics::pass_rate_hist`]'s 5 bins.
pub fn pass_rate_bin(p: f64) -> usize {
    ((p * 5.0) as usize).min(4)
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
