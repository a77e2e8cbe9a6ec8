//! avg@k and pass@k on held-out prompts, overall and by difficulty tier, with their standard
//! errors over prompts: the trainer's summary of [`super::benchmark`]'s verified samples.

use std::collections::BTreeMap;

use rl_verifier::{Bootstrap, Noise, Scores};
use serde::{Deserialize, Serialize};

use super::benchmark::{SampleRecord, summarize};
use crate::TrainerError;

/// Accuracy of one set of prompts with k samples each.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TierEval {
    /// Prompts evaluated.
    pub prompts: usize,
    /// Samples per prompt.
    pub k: usize,
    /// avg@k: mean over prompts of the fraction of the k samples that are correct.
    pub avg_at_k: f64,
    /// pass@k: fraction of prompts with at least one correct sample among k.
    pub pass_at_k: f64,
    /// avg@k's standard error over prompts.
    #[serde(default)]
    pub avg_std_error: f64,
    /// pass@k's standard error over prompts.
    #[serde(default)]
    pub pass_std_error: f64,
    /// avg@k's variance split between prompts and samples (how many samples per prompt a
    /// target standard error needs: [`Noise::samples_for`]).
    #[serde(default)]
    pub noise: Option<Noise>,
}

impl TierEval {
    /// avg@k and pass@k (k = every sample) of `scores`.
    fn of(s: &Scores) -> Self {
        let pass = s.pass_at.get(&s.samples).copied().unwrap_or_default();
        Self {
            prompts: s.avg.prompts,
            k: s.samples,
            avg_at_k: s.avg.mean,
            pass_at_k: pass.mean,
            avg_std_error: s.avg.std_error,
            pass_std_error: pass.std_error,
            noise: s.noise,
        }
    }
}

/// An evaluation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// All prompts.
    pub overall: TierEval,
    /// Per tier (prompts without a tier are only in `overall`).
    pub tiers: BTreeMap<String, TierEval>,
    /// Multi-turn evaluations: the fraction of samples with at least one tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_rate: Option<f64>,
}

impl EvalReport {
    /// The report of verified samples, k per prompt, the tier being the record's group.
    /// Errors: no records, prompts with different sample counts.
    pub fn from_samples(records: &[SampleRecord]) -> Result<Self, TrainerError> {
        let mut per_prompt: BTreeMap<u64, usize> = BTreeMap::new();
        for r in records {
            *per_prompt.entry(r.prompt).or_default() += 1;
        }
        let k = per_prompt.values().next().copied().unwrap_or(0);
        let none = Bootstrap {
            resamples: 0,
            seed: 0,
        };
        let s = summarize(records, &[k.max(1)], none)?;
        Ok(Self {
            overall: TierEval::of(&s.overall),
            tiers: s
                .groups
                .iter()
                .map(|(g, s)| (g.clone(), TierEval::of(s)))
                .collect(),
            tool_call_rate: tool_call_rate(records),
        })
    }

    /// One line for the terminal.
    pub fn summary(&self) -> String {
        let mut s = self.scores_line();
        if let Some(r) = self.tool_call_rate {
            s.push_str(&format!(" | tool calls {r:.3}"));
        }
        s
    }

    fn scores_line(&self) -> String {
        let mut s = format!(
            "avg@{k} {:.3} ± {:.3} pass@{k} {:.3}",
            self.overall.avg_at_k,
            self.overall.avg_std_error,
            self.overall.pass_at_k,
            k = self.overall.k
        );
        for (name, t) in &self.tiers {
            s.push_str(&format!(" | {name} {:.3}/{:.3}", t.avg_at_k, t.pass_at_k));
        }
        s
    }
}

/// Fraction of the samples with a tool call, when they are episodes (`None` otherwise).
fn tool_call_rate(records: &[SampleRecord]) -> Option<f64> {
    let calls: Vec<usize> = records.iter().filter_map(|r| r.tool_calls).collect();
    (!calls.is_empty())
        .then(|| calls.iter().filter(|&&c| c > 0).count() as f64 / calls.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rl_rollout::FinishReason;

    /// `correct` as the records of prompt `id` in `tier`.
    fn prompt(id: u64, tier: &str, correct: &[bool]) -> Vec<SampleRecord> {
        correct
            .iter()
            .enumerate()
            .map(|(j, &c)| SampleRecord {
                prompt: id,
                sample: j,
                group: Some(tier.into()),
                text: String::new(),
                answer: None,
                correct: c,
                tokens: 1,
                finish: FinishReason::Stop,
                turns: None,
                tool_calls: None,
                transcript: None,
            })
            .collect()
    }

    /// Two "hard" prompts with k = 4: [1 of 4] and [0 of 4] → avg@4 = (0.25 + 0)/2 = 0.125,
    /// pass@4 = 1/2; one "easy" prompt with 4 of 4 → 1 and 1; overall avg = (0.25+0+1)/3.
    /// Standard errors: hard avg@4 values 0.25, 0 → s² = 0.03125, se = √(0.03125/2) = 0.125;
    /// hard pass@4 values 1, 0 → s² = 0.5, se = 0.5.
    #[test]
    fn avg_and_pass_at_k() {
        let r = [
            prompt(0, "hard", &[true, false, false, false]),
            prompt(1, "hard", &[false; 4]),
            prompt(2, "easy", &[true; 4]),
        ]
        .concat();
        let e = EvalReport::from_samples(&r).unwrap();
        assert_eq!(e.tiers["hard"].avg_at_k, 0.125);
        assert_eq!(e.tiers["hard"].pass_at_k, 0.5);
        assert!((e.tiers["hard"].avg_std_error - 0.125).abs() < 1e-12);
        assert!((e.tiers["hard"].pass_std_error - 0.5).abs() < 1e-12);
        assert_eq!(e.tiers["easy"].pass_at_k, 1.0);
        assert!((e.overall.avg_at_k - 1.25 / 3.0).abs() < 1e-12);
        assert!((e.overall.pass_at_k - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(e.overall.k, 4);
        assert!(e.overall.noise.is_some());
        assert!(EvalReport::from_samples(&[]).is_err());
    }
}
