//! The theorem probe's records (`probe.jsonl`): for every group of a probed step's generation
//! rounds, the prompt's pass rate estimated from `probe.samples` extra responses, the group's
//! verdicts and advantages, and whether dynamic sampling kept it. The analysis that bins them by
//! pass rate and sets them against Theorem 3.1 is `rlvr compare`'s (docs/theory.md).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::TrainerError;

/// One probed group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// The step whose rollouts these are (1-based).
    pub step: usize,
    /// The prompt's index in the training set.
    pub prompt: u64,
    /// The prompt's tier, if the data set has tiers.
    pub tier: Option<String>,
    /// The verifier's verdict on each of the group's G responses.
    pub correct: Vec<bool>,
    /// The run's estimator's advantage of each response, computed on the group as generated
    /// (before the filter; a uniform group's advantages are 0 under group normalisation).
    pub advantages: Vec<f64>,
    /// Whether the run's filter kept the group (dynamic sampling: it is mixed).
    pub kept: bool,
    /// Extra responses drawn to estimate the pass rate.
    pub probe_samples: usize,
    /// How many of them the verifier accepted.
    pub probe_correct: usize,
}

impl ProbeRecord {
    /// The estimated pass rate of the prompt under the policy of this step.
    pub fn pass_rate(&self) -> f64 {
        if self.probe_samples == 0 {
            return f64::NAN;
        }
        self.probe_correct as f64 / self.probe_samples as f64
    }
}

/// Reads a `probe.jsonl`; a line that does not parse, or a record that cannot come from a
/// probe (fewer than 2 responses, verdicts and advantages of different lengths, more correct
/// extra samples than samples), is an error naming its number.
pub fn read_probe(path: &Path) -> Result<Vec<ProbeRecord>, TrainerError> {
    let records: Vec<ProbeRecord> = crate::metrics::read_jsonl(path)?;
    for (i, r) in records.iter().enumerate() {
        let problem = if r.correct.len() < 2 {
            Some(format!(
                "{} responses (a group has at least 2)",
                r.correct.len()
            ))
        } else if r.advantages.len() != r.correct.len() {
            Some(format!(
                "{} advantages for {} responses",
                r.advantages.len(),
                r.correct.len()
            ))
        } else if r.probe_correct > r.probe_samples {
            Some(format!(
                "{} correct of {} extra samples",
                r.probe_correct, r.probe_samples
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            return Err(TrainerError::Metrics {
                path: path.display().to_string(),
                message: format!("record {}: {message}", i + 1),
            });
        }
    }
    Ok(records)
}
