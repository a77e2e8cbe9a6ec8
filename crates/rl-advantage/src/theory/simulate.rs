//! The Monte Carlo check of Theorem 3.1.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::formulas::*;
use crate::{AdvantageError, AdvantageEstimator, Grpo, StdMode};
use rl_core::GroupId;

/// Settings of the Monte Carlo check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulationConfig {
    /// Number of groups sampled.
    pub groups: usize,
    /// RNG seed (ChaCha8).
    pub seed: u64,
    /// Std of the z-score.
    pub std: StdMode,
}

impl Default for SimulationConfig {
    fn default() -> Self {
        Self {
            groups: 100_000,
            seed: 0,
            std: StdMode::Sample,
        }
    }
}

/// Monte Carlo estimates with their standard errors.
///
/// The estimator of α+ is (mean advantage of correct responses in kept groups) / (mean
/// advantage of correct responses in all groups); likewise α− with incorrect responses.
/// Standard errors use the delta method with groups as independent clusters (responses of one
/// group share the filter decision): with c_j correct responses in group j and k_j its keep
/// indicator, q̂+ = Σ c_j k_j / Σ c_j, α̂+ = 1/q̂+, and the influence of group j on q̂+ is
/// (c_j k_j − q̂+ c_j)/mean(c).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Simulation {
    /// Groups sampled.
    pub groups: usize,
    /// Groups kept by the filter (mixed groups).
    pub kept_groups: usize,
    /// Mean advantage of correct responses over all groups (unfiltered).
    pub mean_adv_correct_unfiltered: f64,
    /// Mean advantage of correct responses in kept groups.
    pub mean_adv_correct_filtered: f64,
    /// Mean advantage of incorrect responses over all groups.
    pub mean_adv_incorrect_unfiltered: f64,
    /// Mean advantage of incorrect responses in kept groups.
    pub mean_adv_incorrect_filtered: f64,
    /// Empirical α+.
    pub alpha_plus: f64,
    /// Its standard error.
    pub alpha_plus_se: f64,
    /// Empirical α−.
    pub alpha_minus: f64,
    /// Its standard error.
    pub alpha_minus_se: f64,
    /// Empirical γ.
    pub gamma: f64,
    /// Its standard error.
    pub gamma_se: f64,
}

/// Samples `config.groups` groups of G Bernoulli(p) outcomes with ±1 rewards, computes GRPO
/// advantages, applies DAPO's filter and measures the amplification per outcome.
pub fn simulate(
    p: f64,
    group_size: usize,
    config: &SimulationConfig,
) -> Result<Simulation, AdvantageError> {
    check(p, group_size)?;
    if config.groups == 0 {
        return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field: "simulate",
            value: "0".into(),
            expected: "a number of groups >= 1",
        }));
    }
    let grpo = Grpo {
        std: config.std,
        ..Grpo::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let g = group_size;
    let mut rewards = vec![0.0; g];
    let mut correct = vec![false; g];
    let mut adv = vec![0.0; g];
    // Per-group counts for the cluster delta method.
    let mut counts: Vec<(f64, f64, bool)> = Vec::with_capacity(config.groups);
    let (mut sum_pos, mut sum_neg) = (0.0, 0.0);
    let (mut n_pos, mut n_neg, mut n_pos_kept, mut n_neg_kept) = (0.0, 0.0, 0.0, 0.0);
    let mut kept_groups = 0;
    for j in 0..config.groups {
        for i in 0..g {
            correct[i] = rng.random::<f64>() < p;
            rewards[i] = if correct[i] { 1.0 } else { -1.0 };
        }
        grpo.group_advantages(GroupId(j as u64), &rewards, &correct, &mut adv)?;
        let c = correct.iter().filter(|&&x| x).count() as f64;
        let w = g as f64 - c;
        let kept = c > 0.0 && w > 0.0;
        for i in 0..g {
            if correct[i] {
                sum_pos += adv[i];
            } else {
                sum_neg += adv[i];
            }
        }
        n_pos += c;
        n_neg += w;
        if kept {
            kept_groups += 1;
            n_pos_kept += c;
            n_neg_kept += w;
        }
        counts.push((c, w, kept));
    }
    if n_pos_kept == 0.0 || n_neg_kept == 0.0 {
        return Err(AdvantageError::InvalidConfig(rl_core::InvalidValue {
            field: "simulate",
            value: config.groups.to_string(),
            expected: "enough groups that some kept group has correct and incorrect responses",
        }));
    }
    // Uniform groups have zero advantages, so the sums over kept groups equal the sums over all.
    let mean_pos_all = sum_pos / n_pos;
    let mean_pos_kept = sum_pos / n_pos_kept;
    let mean_neg_all = sum_neg / n_neg;
    let mean_neg_kept = sum_neg / n_neg_kept;
    let a_plus = mean_pos_kept / mean_pos_all;
    let a_minus = mean_neg_kept / mean_neg_all;
    let q_plus = n_pos_kept / n_pos;
    let q_minus = n_neg_kept / n_neg;
    let n = config.groups as f64;
    let (mc, mw) = (n_pos / n, n_neg / n);
    let (mut v_plus, mut v_minus, mut v_gamma) = (0.0, 0.0, 0.0);
    for &(c, w, kept) in &counts {
        let k = if kept { 1.0 } else { 0.0 };
        let if_plus = (c * k - q_plus * c) / mc;
        let if_minus = (w * k - q_minus * w) / mw;
        v_plus += if_plus * if_plus;
        v_minus += if_minus * if_minus;
        let if_gamma = if_minus / q_minus - if_plus / q_plus;
        v_gamma += if_gamma * if_gamma;
    }
    let se_q_plus = v_plus.sqrt() / n;
    let se_q_minus = v_minus.sqrt() / n;
    let gamma_hat = a_plus / a_minus;
    Ok(Simulation {
        groups: config.groups,
        kept_groups,
        mean_adv_correct_unfiltered: mean_pos_all,
        mean_adv_correct_filtered: mean_pos_kept,
        mean_adv_incorrect_unfiltered: mean_neg_all,
        mean_adv_incorrect_filtered: mean_neg_kept,
        alpha_plus: a_plus,
        alpha_plus_se: se_q_plus / (q_plus * q_plus),
        alpha_minus: a_minus,
        alpha_minus_se: se_q_minus / (q_minus * q_minus),
        gamma: gamma_hat,
        gamma_se: gamma_hat * v_gamma.sqrt() / n,
    })
}
