//! Static mixtures (uniform or given weights).

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::scheduler::{Checkpoint, MixingScheduler, StepStats};
use crate::simplex::check_mixture;

/// A mixture that never changes.
#[derive(Clone, Debug)]
pub struct StaticScheduler {
    weights: Vec<f32>,
    name: &'static str,
}

impl StaticScheduler {
    /// The uniform mixture over `k` domains.
    pub fn uniform(k: usize) -> Self {
        Self {
            weights: vec![1.0 / k as f32; k],
            name: "uniform",
        }
    }

    /// A fixed mixture (checked: non-negative, sums to 1).
    pub fn new(weights: Vec<f32>) -> Result<Self> {
        check_mixture(&weights, weights.len(), "weights")?;
        Ok(Self {
            weights,
            name: "static",
        })
    }
}

impl MixingScheduler for StaticScheduler {
    fn name(&self) -> &str {
        self.name
    }

    fn num_domains(&self) -> usize {
        self.weights.len()
    }

    fn mixture(&self) -> Vec<f32> {
        self.weights.clone()
    }

    fn observe(&mut self, stats: &StepStats) -> Result<()> {
        stats.validate(self.weights.len())
    }

    fn checkpoint(&self) -> Result<Checkpoint> {
        Checkpoint::new("static", &self.weights)
    }

    fn restore(&mut self, checkpoint: &Checkpoint) -> Result<()> {
        let w: Vec<f32> = checkpoint.state("static")?;
        check_mixture(&w, self.weights.len(), "checkpoint weights")?;
        self.weights = w;
        Ok(())
    }
}

/// A static mixture's weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticConfig {
    /// One weight per domain, summing to 1.
    pub weights: Vec<f32>,
}
