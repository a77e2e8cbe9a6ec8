//! The [`MixingScheduler`] trait, the statistics an LM step hands to it, and checkpoints.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};

/// One micro-batch drawn from the mixture (not the forced one-per-domain micro-batches).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Draw {
    /// Domain it came from.
    pub domain: usize,
    /// Its mean training cross-entropy (nats per token).
    pub loss: f32,
}

/// What one LM step measured, handed to [`MixingScheduler::observe`].
///
/// The environment fills only the expensive fields a scheduler asks for through
/// [`MixingScheduler::requirements`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    /// 0-based index of the step just taken.
    pub step: usize,
    /// Planned number of steps of the run (for the progress feature).
    pub total_steps: usize,
    /// The distribution the drawn micro-batches were sampled from (the scheduler's mixture after
    /// the environment's uniform floor).
    pub sampling_probs: Vec<f32>,
    /// Mean training cross-entropy per domain in this step (K).
    pub domain_loss: Vec<f32>,
    /// Realised number of sequences per domain in this step (K).
    pub domain_counts: Vec<f32>,
    /// The micro-batches drawn from the mixture, in draw order.
    pub draws: Vec<Draw>,
    /// Per-domain gradients of the domain's mean loss on the monitored late-layer matrices
    /// (K × P), when requested.
    pub domain_grads: Option<Vec<Vec<f32>>>,
    /// Frobenius norms of the L monitored matrices after this step's update.
    pub weight_norms: Vec<f32>,
    /// Frobenius norms of this step's update of those matrices, `‖W^t − W^{t−1}‖`.
    pub weight_update_norms: Vec<f32>,
    /// Token ids of the sequences drawn from the mixture, when requested.
    pub sequences: Vec<Vec<u32>>,
}

impl StepStats {
    /// Training progress `t' = (step + 1) / total_steps ∈ (0, 1]`.
    pub fn progress(&self) -> f64 {
        (self.step + 1) as f64 / self.total_steps.max(1) as f64
    }

    /// Checks shapes against `k` domains and that losses are finite.
    pub fn validate(&self, k: usize) -> Result<()> {
        let bad = |m: String| Err(DatamixError::Stats(m));
        if self.domain_loss.len() != k || self.domain_counts.len() != k {
            return bad(format!(
                "expected {k} per-domain losses and counts, got {} and {}",
                self.domain_loss.len(),
                self.domain_counts.len()
            ));
        }
        if self.sampling_probs.len() != k {
            return bad(format!(
                "expected {k} sampling probabilities, got {}",
                self.sampling_probs.len()
            ));
        }
        if let Some(i) = self.domain_loss.iter().position(|v| !v.is_finite()) {
            return bad(format!(
                "loss of domain {i} is not finite ({})",
                self.domain_loss[i]
            ));
        }
        if let Some(d) = self
            .draws
            .iter()
            .find(|d| d.domain >= k || !d.loss.is_finite())
        {
            return bad(format!("invalid draw {d:?} for {k} domains"));
        }
        if let Some(g) = &self.domain_grads
            && (g.len() != k || g.iter().any(|r| r.len() != g[0].len()))
        {
            return bad(format!(
                "expected {k} per-domain gradients of equal length, got {}",
                g.len()
            ));
        }
        if self.weight_norms.len() != self.weight_update_norms.len() {
            return bad("weight norms and update norms differ in length".into());
        }
        Ok(())
    }
}

/// The expensive statistics a scheduler needs from the environment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Requirements {
    /// Per-domain gradients on the monitored matrices.
    pub domain_grads: bool,
    /// The drawn sequences' token ids.
    pub sequences: bool,
}

/// Serialised scheduler state: `scheduler` names the kind, `state` is its JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Kind of scheduler that wrote it (`static`, `odm`, `hds`).
    pub scheduler: String,
    /// The scheduler's state.
    pub state: serde_json::Value,
}

impl Checkpoint {
    /// Wraps a serialisable state.
    pub fn new<T: Serialize>(scheduler: &str, state: &T) -> Result<Self> {
        Ok(Self {
            scheduler: scheduler.to_string(),
            state: serde_json::to_value(state)
                .map_err(|e| DatamixError::Checkpoint(e.to_string()))?,
        })
    }

    /// The state, checking that it was written by a scheduler of kind `expected`.
    pub fn state<T: DeserializeOwned>(&self, expected: &str) -> Result<T> {
        if self.scheduler != expected {
            return Err(DatamixError::Checkpoint(format!(
                "written by a `{}` scheduler, cannot restore into `{expected}`",
                self.scheduler
            )));
        }
        serde_json::from_value(self.state.clone())
            .map_err(|e| DatamixError::Checkpoint(format!("{expected} state: {e}")))
    }

    /// JSON text of the checkpoint (floats round-trip exactly).
    pub fn to_json(&self) -> String {
        // A `Value` always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses [`Checkpoint::to_json`] output.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| DatamixError::Checkpoint(e.to_string()))
    }
}

/// An online data-mixing policy: it proposes the mixture of the next LM step and learns from
/// the statistics of the step taken.
pub trait MixingScheduler {
    /// Short name (`uniform`, `odm`, `hds`, ...).
    fn name(&self) -> &str;
    /// Number of domains K.
    fn num_domains(&self) -> usize;
    /// Which expensive statistics [`MixingScheduler::observe`] needs.
    fn requirements(&self) -> Requirements {
        Requirements::default()
    }
    /// Mixture for the next step: K non-negative weights summing to 1.
    fn mixture(&self) -> Vec<f32>;
    /// Learns from the step just taken (with the mixture last returned) and chooses the next.
    fn observe(&mut self, stats: &StepStats) -> Result<()>;
    /// Latest internal metrics under fixed names (`reward/align`, `sac/alpha`, ...).
    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// Full state, such that [`MixingScheduler::restore`] on a scheduler built from the same
    /// config continues identically.
    fn checkpoint(&self) -> Result<Checkpoint>;
    /// Restores a state written by [`MixingScheduler::checkpoint`].
    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()>;
}
