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

/// Reads a `probe.jsonl`; a bad line is an error naming its number.
pub fn read_probe(path: &Path) -> Result<Vec<ProbeRecord>, TrainerError> {
    crate::metrics::read_jsonl(path)
}
