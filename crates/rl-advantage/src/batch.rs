//! Advantages of a whole batch: grouping by explicit id, optional whitening, statistics.

use serde::{Deserialize, Serialize};

use crate::group::GroupedBatch;
use crate::{AdvantageError, AdvantageEstimator, Daa, Estimator, Sample};

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
    /// Groups whose advantages are all exactly 0 before the optional [`Whitening`] (rewards
    /// equal within the estimator's tolerance, for the estimators with a group baseline).
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

/// Computes advantages for every sample, grouping by [`Sample::group`] (any layout: groups may
/// be interleaved), then optionally whitens the batch. Every response counts as one token; see
/// [`compute_batch_with_tokens`] for estimators that weigh responses by their length.
pub fn compute_batch(
    estimator: &Estimator,
    samples: &[Sample],
    whitening: Option<Whitening>,
) -> Result<BatchAdvantages, AdvantageError> {
    compute(estimator, GroupedBatch::new(samples, None)?, whitening)
}

/// [`compute_batch`] with each response's token count (`tokens[i]` for `samples[i]`): the
/// number of tokens its advantage multiplies in the loss. REINFORCE++'s whitening weighs each
/// response by it, as verl's token-level `masked_whiten` does; the other estimators ignore it.
pub fn compute_batch_with_tokens(
    estimator: &Estimator,
    samples: &[Sample],
    tokens: &[usize],
    whitening: Option<Whitening>,
) -> Result<BatchAdvantages, AdvantageError> {
    compute(
        estimator,
        GroupedBatch::new(samples, Some(tokens))?,
        whitening,
    )
}

/// Advantages that differ token by token, for an estimator that has them (REINFORCE++ with a
/// discount γ < 1; [`AdvantageEstimator::token_advantages`]): one vector of `tokens[i]` values
/// per sample, its loss tokens in order, with the estimator's modifiers applied. `None` for
/// every other estimator: each token takes its sample's advantage of
/// [`compute_batch_with_tokens`].
pub fn compute_token_advantages(
    estimator: &Estimator,
    samples: &[Sample],
    tokens: &[usize],
) -> Result<Option<Vec<Vec<f64>>>, AdvantageError> {
    estimator
        .token_advantages(&GroupedBatch::new(samples, Some(tokens))?)
        .transpose()
}

fn compute(
    estimator: &Estimator,
    batch: GroupedBatch<'_>,
    whitening: Option<Whitening>,
) -> Result<BatchAdvantages, AdvantageError> {
    let samples = batch.samples();
    let mut advantages = vec![0.0; samples.len()];
    let mut amplified = vec![false; samples.len()];
    let mut stats = BatchStats {
        samples: samples.len(),
        groups: batch.groups().len(),
        ..BatchStats::default()
    };
    estimator.batch_advantages(&batch, &mut advantages)?;
    let daa = estimator.daa();
    for (_, idx) in batch.groups() {
        if idx.iter().all(|&i| advantages[i] == 0.0) {
            stats.zero_spread_groups += 1;
        }
        let pass_rate =
            Daa::pass_rate(&idx.iter().map(|&i| samples[i].correct).collect::<Vec<_>>());
        for &i in idx {
            // λ > 0 keeps the sign, so the amplified value decides like the original.
            amplified[i] =
                daa.is_some_and(|d| d.amplifies(pass_rate, samples[i].correct, advantages[i]));
        }
    }
    if let Some(w) = whitening {
        if !(w.eps.is_finite() && w.eps >= 0.0) {
            return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
                field: "whitening.eps",
                value: w.eps.to_string(),
                expected: "a finite number >= 0",
            }));
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
