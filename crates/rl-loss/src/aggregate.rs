use burn::prelude::*;
use serde::{Deserialize, Serialize};

use crate::Aggregation;

/// Normalisers of the whole mini-batch (all micro-batches, all data-parallel workers).
///
/// Passing the same `GlobalCounts` to every micro-batch makes the accumulated losses and
/// gradients equal to those of the full batch; summing them across workers makes the loss
/// invariant to the degree of parallelism.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlobalCounts {
    /// Valid (response) tokens.
    pub tokens: usize,
    /// Sequences with at least one valid token.
    pub sequences: usize,
}

impl GlobalCounts {
    /// Counts from per-sequence valid lengths.
    pub fn from_lengths(lengths: &[usize]) -> Self {
        Self {
            tokens: lengths.iter().sum(),
            sequences: lengths.iter().filter(|&&l| l > 0).count(),
        }
    }

    /// Sum of two counts (e.g. across workers).
    pub fn merge(self, other: Self) -> Self {
        Self {
            tokens: self.tokens + other.tokens,
            sequences: self.sequences + other.sequences,
        }
    }
}

/// Aggregates a per-token loss `[sequences, tokens]` over the valid positions of `mask` with
/// the global normalisers `counts`. Padded positions are ignored whatever their value.
pub fn aggregate<B: Backend>(
    loss: Tensor<B, 2>,
    mask: Tensor<B, 2, Bool>,
    aggregation: Aggregation,
    counts: GlobalCounts,
) -> Tensor<B, 1> {
    let loss = loss.mask_fill(mask.clone().bool_not(), 0.0);
    let tokens = counts.tokens.max(1) as f64;
    let seqs = counts.sequences.max(1) as f64;
    match aggregation {
        Aggregation::TokenMean => loss.sum().div_scalar(tokens),
        Aggregation::SeqMeanTokenSum => loss.sum().div_scalar(seqs),
        Aggregation::SeqMeanTokenSumNorm { constant } => loss.sum().div_scalar(seqs * constant),
        Aggregation::SeqMeanTokenMean => {
            let lengths = mask.float().sum_dim(1).clamp_min(1.0); // [n, 1]
            let per_seq = loss.sum_dim(1).div(lengths); // [n, 1]
            per_seq.sum().div_scalar(seqs)
        }
    }
}
