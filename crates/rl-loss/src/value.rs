//! PPO's clipped value loss: the critic regresses on the GAE returns, each prediction kept
//! within `cliprange` of the value it predicted when the batch was generated, as verl 0.9.1's
//! `core_algos.compute_value_loss` (from TRL's PPO trainer) computes it:
//!
//! ```text
//! v_clip = clip(v, v_old − ε, v_old + ε)
//! ℓ_t    = ½·max((v − R)², (v_clip − R)²)
//! ```
//!
//! aggregated like a policy loss ([`Aggregation`], global [`GlobalCounts`]). The clip fraction is
//! the share of tokens where the clipped term is strictly the larger (verl's `vf_clipfrac`).
//! Tested against verl's function and its autograd gradient (`tests/suite/loss.rs`,
//! `value_loss_matches_verl`; fixtures by `tools/verl/gen_verl_fixtures.py`).

use burn::prelude::*;

use crate::loss::check_shape;
use crate::{Aggregation, GlobalCounts, LossError, aggregate};

/// verl's default `critic.cliprange_value`.
pub const DEFAULT_CLIPRANGE_VALUE: f64 = 0.5;

/// One micro-batch's value loss and how often the clip bound.
#[derive(Debug)]
pub struct ValueLossOutput<B: Backend> {
    /// The aggregated loss (differentiable in the predictions).
    pub loss: Tensor<B, 1>,
    /// Valid tokens where the clipped term was the larger.
    pub clipped: usize,
    /// Valid tokens in this micro-batch.
    pub tokens: usize,
}

/// The clipped value loss of `values` (the critic's predictions now, `[sequences, tokens]`)
/// against `returns` with `old_values` the predictions made at generation time, over the valid
/// positions of `mask`. `cliprange` must be finite and > 0; shapes must agree; `counts` must
/// cover this micro-batch.
pub fn value_loss<B: Backend>(
    values: Tensor<B, 2>,
    old_values: Tensor<B, 2>,
    returns: Tensor<B, 2>,
    mask: Tensor<B, 2, Bool>,
    cliprange: f64,
    aggregation: Aggregation,
    counts: GlobalCounts,
) -> Result<ValueLossOutput<B>, LossError> {
    if !(cliprange.is_finite() && cliprange > 0.0) {
        return Err(LossError::InvalidConfig(rl_core::InvalidValue {
            field: "cliprange_value",
            value: cliprange.to_string(),
            expected: "a finite number > 0",
        }));
    }
    aggregation.validate()?;
    let shape = mask.dims();
    check_shape("values", &values, shape)?;
    check_shape("old_values", &old_values, shape)?;
    check_shape("returns", &returns, shape)?;
    let pad = mask.clone().bool_not();
    // Padded positions may hold anything (NaN included): neutralised before any arithmetic.
    let values = values.mask_fill(pad.clone(), 0.0);
    let old = old_values.detach().mask_fill(pad.clone(), 0.0);
    let returns = returns.detach().mask_fill(pad.clone(), 0.0);
    let lo = old.clone().sub_scalar(cliprange);
    let hi = old.add_scalar(cliprange);
    let clipped_values = values.clone().max_pair(lo).min_pair(hi);
    let unclipped = (values - returns.clone()).square();
    let clipped = (clipped_values - returns).square();
    let use_clipped = clipped
        .clone()
        .greater(unclipped.clone())
        .bool_and(mask.clone());
    let per_token = unclipped
        .mask_where(use_clipped.clone(), clipped)
        .mul_scalar(0.5);
    // The three counts in one read from the device.
    let counts_now: Vec<i64> = Tensor::cat(
        vec![
            use_clipped.int().sum(),
            mask.clone().int().sum(),
            mask.clone().int().sum_dim(1).greater_elem(0).int().sum(),
        ],
        0,
    )
    .into_data()
    .convert::<i64>()
    .into_vec::<i64>()
    .map_err(|e| LossError::Data(format!("{e:?}")))?;
    let [n_clipped, tokens, sequences] = [0, 1, 2].map(|i| counts_now[i] as usize);
    if tokens > counts.tokens || sequences > counts.sequences {
        return Err(LossError::Counts {
            tokens: counts.tokens,
            sequences: counts.sequences,
            local_tokens: tokens,
            local_sequences: sequences,
        });
    }
    Ok(ValueLossOutput {
        loss: aggregate(per_token, mask, aggregation, counts),
        clipped: n_clipped,
        tokens,
    })
}
