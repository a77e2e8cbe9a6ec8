use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::SamplerError;

/// Running statistics of one prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptStats {
    /// Responses scored.
    pub attempts: u64,
    /// Correct responses.
    pub correct: u64,
    /// Exponential moving average of the per-round pass rate (None before the first round).
    pub ema: Option<f64>,
    /// Rounds observed.
    pub rounds: u64,
}

impl PromptStats {
    /// Lifetime pass rate correct / attempts.
    pub fn pass_rate(&self) -> Option<f64> {
        (self.attempts > 0).then(|| self.correct as f64 / self.attempts as f64)
    }
}

/// Per-prompt running pass-rate estimate. Serializable, so it goes into checkpoints.
///
/// Each observed round updates the lifetime counts and an EMA of the round's pass rate:
/// ema ← (1 − decay)·p̂ + decay·ema (the first round sets ema = p̂).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DifficultyTracker {
    decay: f64,
    prompts: BTreeMap<u64, PromptStats>,
}

impl DifficultyTracker {
    /// `decay` in [0, 1): weight of the previous estimate.
    pub fn new(decay: f64) -> Result<Self, SamplerError> {
        if !(decay.is_finite() && (0.0..1.0).contains(&decay)) {
            return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                field: "decay",
                value: decay.to_string(),
                expected: "a number in [0, 1)",
            }));
        }
        Ok(Self {
            decay,
            prompts: BTreeMap::new(),
        })
    }

    /// Records one round of `total` responses of which `correct` were correct.
    pub fn observe(&mut self, prompt: u64, correct: usize, total: usize) {
        if total == 0 {
            return;
        }
        let p = correct.min(total) as f64 / total as f64;
        let s = self.prompts.entry(prompt).or_default();
        s.attempts += total as u64;
        s.correct += correct.min(total) as u64;
        s.rounds += 1;
        s.ema = Some(match s.ema {
            None => p,
            Some(prev) => (1.0 - self.decay) * p + self.decay * prev,
        });
    }

    /// The EMA pass rate of a prompt, if it has been seen.
    pub fn pass_rate(&self, prompt: u64) -> Option<f64> {
        self.prompts.get(&prompt).and_then(|s| s.ema)
    }

    /// Statistics of a prompt.
    pub fn stats(&self, prompt: u64) -> Option<&PromptStats> {
        self.prompts.get(&prompt)
    }

    /// Number of prompts seen.
    pub fn len(&self) -> usize {
        self.prompts.len()
    }

    /// True when no prompt has been seen.
    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    /// Histogram of EMA pass rates over `bins` equal-width bins on [0, 1].
    pub fn histogram(&self, bins: usize) -> Vec<usize> {
        let mut h = vec![0; bins.max(1)];
        let n = h.len();
        for s in self.prompts.values() {
            if let Some(p) = s.ema {
                h[((p * n as f64) as usize).min(n - 1)] += 1;
            }
        }
        h
    }
}
