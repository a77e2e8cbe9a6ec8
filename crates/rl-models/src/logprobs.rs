//! Per-token log-probs and entropies from logits, differentiable, without a second
//! full-vocabulary log-softmax tensor.
//!
//! With `m = max_v x_v` (detached: `ln Σ exp` is invariant to the shift, so its gradient does not
//! flow through `m`), `e = exp(x - m)` and `s = Σ_v e_v`:
//!
//! ```text
//! log p(y) = (x_y - m) - ln s
//! H        = -Σ_v p_v log p_v = ln s - Σ_v e_v (x_v - m) / s
//! ```
//!
//! Only `x - m` and `e` are `[rows, vocab]`; under autodiff the graph keeps `e` (for `exp`'s
//! backward) and, with [`EntropyMode::Differentiable`], `x - m` (for the product).
//!
//! The sums over the vocabulary are taken in blocks of `VOCAB_SUM_BLOCK` entries, then over
//! the block sums (`vocab_sum`). One f32 running sum over a vocabulary of 262,144 entries
//! (Gemma 3) drops the many tiny `e_v` that fall below half an ulp of the sum: measured on the
//! real Gemma-3-270M, `s` came out up to 5.0e-4 too small (log-probs 4.7e-4 too high) against
//! f64, and 7e-7 with blocks of 512 (`tools/gemma3_vocab_sum.py`).

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};

use crate::error::ModelError;

/// Whether and how to compute the entropy of the next-token distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntropyMode {
    /// Log-probs only.
    #[default]
    None,
    /// Entropy as a value without gradient (for logging): the graph keeps nothing extra.
    Detached,
    /// Entropy with gradient (for an entropy bonus in the loss).
    Differentiable,
}

/// Output of [`crate::CausalLm::token_logprobs`] / [`logprobs_from_logits`] (every position) and of
/// [`crate::CausalLm::token_logprobs_from`] (a window of `width` positions from `starts[b]`).
#[derive(Clone, Debug)]
pub struct TokenLogProbs<B: Backend> {
    /// `logprobs[b, t] = log p(ids[b, t+1] | ids[b, ..=t])`, `[batch, seq-1]`; for a window,
    /// `logprobs[b, j] = log p(ids[b, s_b+j+1] | ids[b, ..=s_b+j])`, `[batch, width]`.
    pub logprobs: Tensor<B, 2>,
    /// Entropy of the same next-token distribution, same shape, when asked for.
    pub entropy: Option<Tensor<B, 2>>,
}

/// Where the vocabulary axis of a 2-D logits block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VocabAxis {
    /// `[n, vocab]`, one row per position (the usual layout).
    Columns,
    /// `[vocab, n]`, one column per position: what `W_head · hᵀ` produces without a transpose.
    Rows,
}

impl VocabAxis {
    fn dim(self) -> usize {
        match self {
            VocabAxis::Columns => 1,
            VocabAxis::Rows => 0,
        }
    }
}

/// Entries of the vocabulary summed together before their sums are added ([`vocab_sum`]).
pub(crate) const VOCAB_SUM_BLOCK: usize = 512;

/// `t.sum_dim(d)` over the vocabulary axis `d` of a 2-D block, in two levels: every
/// [`VOCAB_SUM_BLOCK`] consecutive entries are summed, then the block sums (and the sum of the
/// entries after the last whole block). Each partial sum stays within a block's magnitude, so no
/// f32 accumulation swallows a vocabulary's worth of small terms. The same shape as `sum_dim`.
pub(crate) fn vocab_sum<B: Backend>(t: Tensor<B, 2>, d: usize) -> Tensor<B, 2> {
    let dims = t.dims();
    let (v, n) = (dims[d], dims[1 - d]);
    let blocks = v / VOCAB_SUM_BLOCK;
    if blocks < 2 {
        return t.sum_dim(d);
    }
    let whole = blocks * VOCAB_SUM_BLOCK;
    let head = if whole == v {
        t.clone()
    } else {
        t.clone().narrow(d, 0, whole)
    };
    let sum = match d {
        0 => head
            .reshape([blocks, VOCAB_SUM_BLOCK, n])
            .sum_dim(1)
            .sum_dim(0)
            .reshape([1, n]),
        _ => head
            .reshape([n, blocks, VOCAB_SUM_BLOCK])
            .sum_dim(2)
            .sum_dim(1)
            .reshape([n, 1]),
    };
    if whole == v {
        sum
    } else {
        sum + t.narrow(d, whole, v - whole).sum_dim(d)
    }
}

/// Log-probs of `targets` (`[n]`) under a logits block laid out as `axis` says, and optionally
/// the entropies; both `[n]`.
pub(crate) fn logprobs_from_logits_2d<B: Backend>(
    logits: Tensor<B, 2>,
    targets: Tensor<B, 1, Int>,
    entropy: EntropyMode,
    axis: VocabAxis,
) -> (Tensor<B, 1>, Option<Tensor<B, 1>>) {
    let d = axis.dim();
    let n = logits.dims()[1 - d];
    let m = logits.clone().detach().max_dim(d); // one max per position
    let z = logits - m;
    let e = z.clone().exp();
    let s = vocab_sum(e.clone(), d);
    let log_s = s.clone().log();
    let index = match axis {
        VocabAxis::Columns => targets.reshape([n, 1]),
        VocabAxis::Rows => targets.reshape([1, n]),
    };
    let picked = z.clone().gather(d, index);
    let lp = (picked - log_s.clone()).reshape([n]);
    let ent = match entropy {
        EntropyMode::None => None,
        EntropyMode::Detached => {
            let ez = vocab_sum(e.detach() * z.detach(), d);
            Some((log_s.detach() - ez / s.detach()).reshape([n]))
        }
        EntropyMode::Differentiable => {
            let ez = vocab_sum(e * z, d);
            Some((log_s - ez / s).reshape([n]))
        }
    };
    (lp, ent)
}

/// Next-token log-probs from full logits: `logits [batch, seq, vocab]` (position `t` predicts
/// token `t+1`) and `input_ids [batch, seq]` give `[batch, seq-1]` log-probs of `input_ids[:, 1:]`
/// (and entropies). The last position's logits are not used.
pub fn logprobs_from_logits<B: Backend>(
    logits: Tensor<B, 3>,
    input_ids: Tensor<B, 2, Int>,
    entropy: EntropyMode,
) -> Result<TokenLogProbs<B>, ModelError> {
    let [b, l, v] = logits.dims();
    let [bi, li] = input_ids.dims();
    if l < 2 || b != bi || l != li {
        return Err(ModelError::InvalidInput(format!(
            "logits [{b}, {l}, {v}] and input_ids [{bi}, {li}] must agree, with seq >= 2"
        )));
    }
    let logits = logits
        .slice([0..b, 0..l - 1, 0..v])
        .reshape([b * (l - 1), v]);
    let targets = input_ids.slice([0..b, 1..l]).reshape([b * (l - 1)]);
    let (lp, ent) = logprobs_from_logits_2d(logits, targets, entropy, VocabAxis::Columns);
    Ok(TokenLogProbs {
        logprobs: lp.reshape([b, l - 1]),
        entropy: ent.map(|e| e.reshape([b, l - 1])),
    })
}
