//! Advantages of a whole batch: grouping by explicit id, optional whitening, statistics.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::estimator::check_group;
use crate::{AdvantageError, AdvantageEstimator, Daa, GroupId, Sample};

/// Optional batch whitening after group normalisation: A ← (A − mean A)/(std A + eps) over the
/// whole batch (population std). It is a separate, explicit step — never applied silently.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Whitening {
    /// Added to the batch std.
    pub eps: f64,
}

impl Default for Whitening {
    fn default() -> Self {
        Self { eps: 1e-8 }
    }
}

/// Summary of one batch, all counts explicit so that workers can sum them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchStats {
    /// Number of groups.
    pub groups: usize,
    /// Number of samples.
    pub samples: usize,
    /// Groups whose advantages are all exactly 0 before whitening (rewards equal within the
    /// estimator's tolerance).
    pub zero_spread_groups: usize,
    /// Samples whose advantage DAA multiplied by λ.
    pub amplified: usize,
    /// Samples with a non-zero advantage.
    pub nonzero: usize,
    /// Mean advantage.
    pub mean: f64,
    /// Population std of the advantages.
    pub std: f64,
    /// Smallest advantage.
    pub min: f64,
    /// Largest advantage.
    pub max: f64,
}

/// Advantages aligned with the input samples.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchAdvantages {
    /// One advantage per input sample, in input order.
    pub advantages: Vec<f64>,
    /// Whether DAA amplified each sample.
    pub amplified: Vec<bool>,
    /// Summary.
    pub stats: BatchStats,
}

/// Groups in order of first appearance, each with the indices of its samples in input order.
pub fn group_indices(samples: &[Sample]) -> Vec<(GroupId, Vec<usize>)> {
    let mut order: Vec<(GroupId, Vec<usize>)> = Vec::new();
    let mut index: HashMap<GroupId, usize> = HashMap::new();
    for (i, s) in samples.iter().enumerate() {
        let slot = *index.entry(s.group).or_insert_with(|| {
            order.push((s.group, Vec::new()));
            order.len() - 1
        });
        order[slot].1.push(i);
    }
    order
}

/// Computes advantages for every sample, grouping by [`Sample::group`] (any layout: groups may
/// be interleaved), then optionally whitens the batch.
pub fn compute_batch(
    estimator: &dyn AdvantageEstimator,
    samples: &[Sample],
    whitening: Option<Whitening>,
) -> Result<BatchAdvantages, AdvantageError> {
    let mut advantages = vec![0.0; samples.len()];
    let mut amplified = vec![false; samples.len()];
    let mut stats = BatchStats {
        samples: samples.len(),
        ..BatchStats::default()
    };
    let daa = estimator.daa();
    let mut rewards = Vec::new();
    let mut correct = Vec::new();
    let mut out = Vec::new();
    for (group, idx) in group_indices(samples) {
        rewards.clear();
        correct.clear();
        rewards.extend(idx.iter().map(|&i| samples[i].reward));
        correct.extend(idx.iter().map(|&i| samples[i].correct));
        check_group(group, &rewards, &correct)?;
        out.clear();
        out.resize(idx.len(), 0.0);
        estimator.group_advantages(group, &rewards, &correct, &mut out)?;
        stats.groups += 1;
        if out.iter().all(|&a| a == 0.0) {
            stats.zero_spread_groups += 1;
        }
        let pass_rate = Daa::pass_rate(&correct);
        for (k, &i) in idx.iter().enumerate() {
            advantages[i] = out[k];
            // λ > 0 keeps the sign, so the amplified value decides like the original.
            amplified[i] = daa.is_some_and(|d| d.amplifies(pass_rate, correct[k], out[k]));
        }
    }
    if let Some(w) = whitening {
        if !(w.eps.is_finite() && w.eps >= 0.0) {
            return Err(AdvantageError::InvalidConfig {
                field: "whitening.eps",
                value: w.eps.to_string(),
                expected: "a finite number >= 0",
            });
        }
        let (m, s) = batch_mean_population_std(&advantages);
        for a in &mut advantages {
            *a = (*a - m) / (s + w.eps);
        }
    }
    stats.amplified = amplified.iter().filter(|&&a| a).count();
    stats.nonzero = advantages.iter().filter(|&&a| a != 0.0).count();
    let (m, s) = batch_mean_population_std(&advantages);
    stats.mean = m;
    stats.std = s;
    stats.min = advantages.iter().copied().fold(f64::INFINITY, f64::min);
    stats.max = advantages.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if advantages.is_empty() {
        stats.min = 0.0;
        stats.max = 0.0;
    }
    Ok(BatchAdvantages {
        advantages,
        amplified,
        stats,
    })
}

/// Mean and population standard deviation of a batch's advantages; (0, 0) for an empty batch
/// (a step's metrics stay finite).
fn batch_mean_population_std(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, v.sqrt())
}
