//! REINFORCE++ (and its group-baseline form): advantages whitened over the whole batch, as verl
//! computes them.

use super::{AdvantageEstimator, DEFAULT_EQUAL_TOL, mean};
use crate::AdvantageError;
use crate::group::{GroupedBatch, all_equal, check_group};
use rl_core::GroupId;

/// verl's `masked_whiten` constants: the ε added to the token count in each masked mean and the
/// ε added to the variance under the square root.
pub const REINFORCE_PP_WHITEN_EPS: f64 = 1e-8;

/// verl's `masked_whiten` (shift_mean = True) over a batch of per-response values, each repeated
/// over `weights[i]` tokens: with N = Σ w,
/// mean = Σ w·v / (N + 1e-8), var = Σ w·(v − mean)² / (N + 1e-8) · N/(N − 1) (Bessel over
/// tokens), v ← (v − mean)/√(var + 1e-8); the mean is not added back. Responses without tokens
/// get 0 (verl multiplies by the mask). Fewer than 2 tokens, or values equal within `equal_tol`
/// over the responses with tokens, give exactly 0 everywhere (verl raises on fewer than 2
/// tokens, and turns an all-equal batch into values of order 1e-4·|v|/N).
pub(crate) fn verl_masked_whiten(values: &mut [f64], weights: &[f64], equal_tol: f64) {
    let n: f64 = weights.iter().sum();
    let (lo, hi) = values
        .iter()
        .zip(weights)
        .filter(|(_, w)| **w > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (&v, _)| {
            (lo.min(v), hi.max(v))
        });
    if n < 2.0 || hi - lo <= equal_tol {
        values.fill(0.0);
        return;
    }
    let eps = REINFORCE_PP_WHITEN_EPS;
    let mean = values.iter().zip(weights).map(|(v, w)| w * v).sum::<f64>() / (n + eps);
    let var = values
        .iter()
        .zip(weights)
        .map(|(v, w)| w * (v - mean) * (v - mean))
        .sum::<f64>()
        / (n + eps)
        * (n / (n - 1.0));
    let inv_std = 1.0 / (var + eps).sqrt();
    for (v, &w) in values.iter_mut().zip(weights) {
        *v = if w > 0.0 { (*v - mean) * inv_std } else { 0.0 };
    }
}

/// The token weights of a batch (1 per response without token counts).
pub(super) fn token_weights(batch: &GroupedBatch<'_>) -> Vec<f64> {
    (0..batch.len()).map(|i| batch.tokens(i) as f64).collect()
}

/// REINFORCE++ (arXiv 2501.03262) for outcome rewards: every token of response i has the value
/// v_i, and the values are whitened over all tokens of the batch (verl's `masked_whiten`, see
/// [`REINFORCE_PP_WHITEN_EPS`]). DAA, when configured, is a modifier applied per group after the
/// whitening ([`crate::Estimator`]).
/// `baseline = false` (verl `reinforce_plus_plus`): v_i = R_i, no group baseline; with a
/// discount γ < 1 the k-th of response i's n_i loss tokens has the return γ^(n_i − 1 − k)·R_i
/// (the reward sits on the last token and is discounted over the loss tokens after k;
/// observation tokens between them neither count nor discount, as in verl), and those returns
/// are whitened token by token ([`AdvantageEstimator::token_advantages`]).
/// `baseline = true` (verl `reinforce_plus_plus_baseline`): v_i = R_i minus its group's mean, a
/// group whose rewards are equal within `equal_tol` centred to exactly 0; verl's baseline
/// variant has no discount, and neither has this one (`gamma` is ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReinforcePlusPlus {
    /// Subtract each group's mean reward before the whitening.
    pub baseline: bool,
    /// Equal-value tolerance: of a group's rewards (baseline), and of the batch's values
    /// before the whitening (equal ⇒ all advantages exactly 0).
    pub equal_tol: f64,
    /// Discount γ ∈ (0, 1] of the returns over a response's loss tokens (verl's
    /// `algorithm.gamma`, default 1); without the baseline only.
    pub gamma: f64,
}

impl ReinforcePlusPlus {
    /// Without (`reinforce_plus_plus`) or with (`reinforce_plus_plus_baseline`) the group
    /// baseline, default tolerance.
    pub fn new(baseline: bool) -> Self {
        Self {
            baseline,
            equal_tol: DEFAULT_EQUAL_TOL,
            gamma: 1.0,
        }
    }

    /// The same with discount `gamma` (no effect with the baseline).
    pub fn discounted(self, gamma: f64) -> Self {
        Self { gamma, ..self }
    }

    /// Whether the advantages differ token by token: γ < 1 without the baseline.
    fn discounts(&self) -> bool {
        !self.baseline && self.gamma != 1.0
    }

    /// The discounted returns γ^(n_i − 1 − k)·R_i of every loss token, whitened over the
    /// batch's tokens; one vector of n_i values per response.
    fn discounted_advantages(&self, batch: &GroupedBatch<'_>) -> Vec<Vec<f64>> {
        let lengths: Vec<usize> = (0..batch.len()).map(|i| batch.tokens(i)).collect();
        let mut flat: Vec<f64> = Vec::with_capacity(lengths.iter().sum());
        for (s, &n) in batch.samples().iter().zip(&lengths) {
            // Backwards from the last token, as verl accumulates: G_k = γ·G_{k+1}, G_{n−1} = R.
            let mut g = s.reward;
            let start = flat.len();
            for _ in 0..n {
                flat.push(g);
                g *= self.gamma;
            }
            flat[start..].reverse();
        }
        let ones = vec![1.0; flat.len()];
        verl_masked_whiten(&mut flat, &ones, self.equal_tol);
        let mut rest = flat.as_slice();
        lengths
            .iter()
            .map(|&n| {
                let (head, tail) = rest.split_at(n);
                rest = tail;
                head.to_vec()
            })
            .collect()
    }

    /// One group's values before the whitening: its rewards, centred when `baseline`.
    fn values(&self, rewards: &[f64], out: &mut [f64]) {
        if !self.baseline {
            out.copy_from_slice(rewards);
        } else if all_equal(rewards, self.equal_tol) {
            out.fill(0.0);
        } else {
            let m = mean(rewards);
            for (o, r) in out.iter_mut().zip(rewards) {
                *o = r - m;
            }
        }
    }
}

impl AdvantageEstimator for ReinforcePlusPlus {
    fn name(&self) -> &'static str {
        if self.baseline {
            "reinforce_plus_plus_baseline"
        } else {
            "reinforce_plus_plus"
        }
    }

    /// The group seen as a batch of one-token responses.
    fn group_advantages(
        &self,
        group: GroupId,
        rewards: &[f64],
        correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        check_group(group, rewards, correct)?;
        self.values(rewards, out);
        verl_masked_whiten(out, &vec![1.0; out.len()], self.equal_tol);
        Ok(())
    }

    /// The groups' values, whitened over the batch's tokens; with a discount, each response's
    /// mean token advantage (what its tokens average to in the loss).
    fn batch_advantages(
        &self,
        batch: &GroupedBatch<'_>,
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        batch.per_group(out, |_, rewards, _, values| {
            self.values(rewards, values);
            Ok(())
        })?;
        if self.discounts() {
            for (o, tokens) in out.iter_mut().zip(self.discounted_advantages(batch)) {
                *o = if tokens.is_empty() {
                    0.0
                } else {
                    tokens.iter().sum::<f64>() / tokens.len() as f64
                };
            }
            return Ok(());
        }
        verl_masked_whiten(out, &token_weights(batch), self.equal_tol);
        Ok(())
    }

    fn batch_level(&self) -> bool {
        true
    }

    /// With a discount (γ < 1, no baseline): the whitened discounted returns, token by token.
    fn token_advantages(
        &self,
        batch: &GroupedBatch<'_>,
    ) -> Option<Result<Vec<Vec<f64>>, AdvantageError>> {
        // The groups were checked when the batch was built (`GroupedBatch::new`).
        self.discounts()
            .then(|| Ok(self.discounted_advantages(batch)))
    }
}
