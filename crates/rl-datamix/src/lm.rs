//! A small decoder-only character LM (the environment's model): learned token and position
//! embeddings, pre-LN blocks `x + Attn(LN(x))`, `x + W_out GELU(W_in LN(x))` with causal
//! multi-head attention, a final LayerNorm and an untied output head.
//!
//! [`TinyLm::forward`] can add a zero "probe" tensor to the output of chosen blocks' FF output
//! projections: after backward, the probe's gradient is `δ = ∂L/∂y` for `y = h W_out + b`, so the
//! gradient of any sub-batch's loss on `W_out` is `hᵀδ` restricted to that sub-batch
//! ([`per_domain_weight_grads`]). This gives every domain's gradient from one backward pass.

use burn::module::{Module, Param};
use burn::nn::{Embedding, LayerNorm, LayerNormConfig, Linear};
use burn::tensor::activation::{gelu, log_softmax, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor, TensorData};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};
use crate::params::tensor_to_vec;
use crate::stats::standard_normal;

/// Model size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LmConfig {
    /// Residual width (64).
    pub d_model: usize,
    /// Number of blocks (2).
    pub n_layers: usize,
    /// Attention heads (4).
    pub n_heads: usize,
    /// FF hidden width (128).
    pub d_ff: usize,
    /// Sequence length (64).
    pub seq_len: usize,
}

impl Default for LmConfig {
    fn default() -> Self {
        Self {
            d_model: 64,
            n_layers: 2,
            n_heads: 4,
            d_ff: 128,
            seq_len: 64,
        }
    }
}

impl LmConfig {
    /// Checks sizes.
    pub fn validate(&self, prefix: &str) -> Result<()> {
        if self.d_model == 0 || self.n_layers == 0 || self.d_ff == 0 || self.seq_len < 2 {
            return Err(DatamixError::config(
                prefix,
                "d_model, n_layers, d_ff must be >= 1 and seq_len >= 2",
            ));
        }
        if self.n_heads == 0 || !self.d_model.is_multiple_of(self.n_heads) {
            return Err(DatamixError::config(
                format!("{prefix}.n_heads"),
                format!("must divide d_model ({})", self.d_model),
            ));
        }
        Ok(())
    }
}

fn normal_param<B: Backend, const D: usize>(
    shape: [usize; D],
    std: f32,
    rng: &mut ChaCha8Rng,
    device: &B::Device,
) -> Param<Tensor<B, D>> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| standard_normal(rng) as f32 * std).collect();
    Param::from_tensor(Tensor::from_data(TensorData::new(v, shape), device))
}

fn linear<B: Backend>(
    d_in: usize,
    d_out: usize,
    std: f32,
    rng: &mut ChaCha8Rng,
    device: &B::Device,
) -> Linear<B> {
    Linear {
        weight: normal_param([d_in, d_out], std, rng, device),
        bias: Some(Param::from_tensor(Tensor::zeros([d_out], device))),
    }
}

/// One pre-LN transformer block.
#[derive(Module, Debug)]
pub struct Block<B: Backend> {
    ln1: LayerNorm<B>,
    qkv: Linear<B>,
    attn_out: Linear<B>,
    ln2: LayerNorm<B>,
    ff_in: Linear<B>,
    ff_out: Linear<B>,
    n_heads: usize,
}

impl<B: Backend> Block<B> {
    fn forward(
        &self,
        x: Tensor<B, 3>,
        mask: Tensor<B, 4, Bool>,
        probe: Option<Tensor<B, 3>>,
    ) -> (Tensor<B, 3>, Tensor<B, 3>) {
        let [b, s, d] = x.dims();
        let h = self.n_heads;
        let hd = d / h;
        let qkv = self.qkv.forward(self.ln1.forward(x.clone()));
        let split = |i: usize| {
            qkv.clone()
                .narrow(2, i * d, d)
                .reshape([b, s, h, hd])
                .swap_dims(1, 2)
        };
        let (q, k, v) = (split(0), split(1), split(2));
        let scores = q
            .matmul(k.swap_dims(2, 3))
            .div_scalar((hd as f64).sqrt())
            .mask_fill(mask, -1e9);
        let att = softmax(scores, 3)
            .matmul(v)
            .swap_dims(1, 2)
            .reshape([b, s, d]);
        let x = x + self.attn_out.forward(att);
        let hidden = gelu(self.ff_in.forward(self.ln2.forward(x.clone())));
        let mut y = self.ff_out.forward(hidden.clone());
        if let Some(p) = probe {
            y = y + p;
        }
        (x + y, hidden)
    }
}

/// The LM.
#[derive(Module, Debug)]
pub struct TinyLm<B: Backend> {
    tok: Embedding<B>,
    pos: Embedding<B>,
    blocks: Vec<Block<B>>,
    ln_f: LayerNorm<B>,
    head: Linear<B>,
}

impl<B: Backend> TinyLm<B> {
    /// A model for `vocab` symbols, initialised from `rng`: weights `N(0, 0.02²)` (output
    /// projections `N(0, (0.02/√(2L))²)`), zero biases, unit LayerNorms.
    pub fn new(cfg: &LmConfig, vocab: usize, rng: &mut ChaCha8Rng, device: &B::Device) -> Self {
        let d = cfg.d_model;
        let out_std = 0.02 / (2.0 * cfg.n_layers as f32).sqrt();
        let blocks = (0..cfg.n_layers)
            .map(|_| Block {
                ln1: LayerNormConfig::new(d).init(device),
                qkv: linear(d, 3 * d, 0.02, rng, device),
                attn_out: linear(d, d, out_std, rng, device),
                ln2: LayerNormConfig::new(d).init(device),
                ff_in: linear(d, cfg.d_ff, 0.02, rng, device),
                ff_out: linear(cfg.d_ff, d, out_std, rng, device),
                n_heads: cfg.n_heads,
            })
            .collect();
        Self {
            tok: Embedding {
                weight: normal_param([vocab, d], 0.02, rng, device),
            },
            pos: Embedding {
                weight: normal_param([cfg.seq_len, d], 0.02, rng, device),
            },
            blocks,
            ln_f: LayerNormConfig::new(d).init(device),
            head: linear(d, vocab, 0.02, rng, device),
        }
    }

    /// Number of blocks.
    pub fn num_layers(&self) -> usize {
        self.blocks.len()
    }

    /// Logits `[b, s, vocab]` of token ids `[b, s]`, and each block's FF hidden activation
    /// `h` (`[b, s, d_ff]`). `probes[l]`, if given, is added to block `l`'s FF output.
    pub fn forward(
        &self,
        tokens: Tensor<B, 2, Int>,
        probes: &[Option<Tensor<B, 3>>],
    ) -> (Tensor<B, 3>, Vec<Tensor<B, 3>>) {
        let [b, s] = tokens.dims();
        let device = tokens.device();
        let positions = Tensor::<B, 1, Int>::arange(0..s as i64, &device)
            .reshape([1, s])
            .repeat_dim(0, b);
        let mut x = self.tok.forward(tokens) + self.pos.forward(positions);
        // `tril_mask` is true strictly above the diagonal: the future positions to hide.
        let mask = Tensor::<B, 2, Bool>::tril_mask([s, s], 0, &device).unsqueeze::<4>();
        let mut hidden = Vec::with_capacity(self.blocks.len());
        for (l, blk) in self.blocks.iter().enumerate() {
            let probe = probes.get(l).cloned().flatten();
            let (nx, h) = blk.forward(x, mask.clone(), probe);
            x = nx;
            hidden.push(h);
        }
        (self.head.forward(self.ln_f.forward(x)), hidden)
    }

    /// The FF output projection weight of block `l` (`[d_ff, d_model]`).
    pub fn ff_out_weight(&self, l: usize) -> Tensor<B, 2> {
        self.blocks[l].ff_out.weight.val()
    }
}

/// Mean next-token cross-entropy of each sequence: `logits [b, s, V]`, `targets [b, s]` → `[b]`.
pub fn sequence_cross_entropy<B: Backend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
) -> Tensor<B, 1> {
    let [b, s, _] = logits.dims();
    log_softmax(logits, 2)
        .gather(2, targets.unsqueeze_dim::<3>(2))
        .reshape([b, s])
        .mean_dim(1)
        .neg()
        .reshape([b])
}

/// Per-domain gradients of the domains' mean losses on a linear layer's weight, from its input
/// `h` (`[N, S, d_in]`) and the gradient `δ` of the batch-mean loss with respect to its output
/// (`[N, S, d_out]`). `seq_domain[n]` is sequence `n`'s domain; the batch loss is the mean over
/// all N sequences of equal length, so domain `i` with `n_i` sequences has gradient
/// `(N / n_i) Σ_{n ∈ i} h_nᵀ δ_n`. Domains without sequences get zeros.
pub fn per_domain_weight_grads<B: Backend>(
    h: Tensor<B, 3>,
    delta: Tensor<B, 3>,
    seq_domain: &[usize],
    k: usize,
) -> Vec<Vec<f32>> {
    let [n, s, d_in] = h.dims();
    let d_out = delta.dims()[2];
    let device = h.device();
    (0..k)
        .map(|i| {
            let idx: Vec<i64> = seq_domain
                .iter()
                .enumerate()
                .filter(|(_, d)| **d == i)
                .map(|(j, _)| j as i64)
                .collect();
            if idx.is_empty() {
                return vec![0.0; d_in * d_out];
            }
            let ni = idx.len();
            let idx = Tensor::<B, 1, Int>::from_data(TensorData::new(idx, [ni]), &device);
            let hi = h.clone().select(0, idx.clone()).reshape([ni * s, d_in]);
            let di = delta.clone().select(0, idx).reshape([ni * s, d_out]);
            tensor_to_vec(hi.transpose().matmul(di).mul_scalar(n as f64 / ni as f64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use rand::SeedableRng;

    type AB = Autodiff<Flex>;

    fn tiny() -> (LmConfig, TinyLm<AB>) {
        let cfg = LmConfig {
            d_model: 16,
            n_layers: 2,
            n_heads: 2,
            d_ff: 24,
            seq_len: 8,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let m = TinyLm::new(&cfg, 11, &mut rng, &Default::default());
        (cfg, m)
    }

    fn ids(v: Vec<i64>, b: usize, s: usize) -> Tensor<AB, 2, Int> {
        Tensor::from_data(TensorData::new(v, [b, s]), &Default::default())
    }

    /// Causality: changing the last token changes no logit at earlier positions.
    #[test]
    fn attention_is_causal() {
        let (_, m) = tiny();
        let a: Vec<i64> = vec![1, 2, 3, 4, 5, 6, 7, 8];
        let mut b = a.clone();
        b[7] = 0;
        let la = tensor_to_vec(m.forward(ids(a, 1, 8), &[]).0);
        let lb = tensor_to_vec(m.forward(ids(b, 1, 8), &[]).0);
        let v = 11;
        assert_eq!(la[..7 * v], lb[..7 * v]);
        assert_ne!(la[7 * v..], lb[7 * v..]);
    }

    /// At initialisation the logits are near zero, so the loss is near ln V.
    #[test]
    fn initial_loss_is_near_uniform() {
        let (_, m) = tiny();
        let t: Vec<i64> = (0..16).map(|i| i % 11).collect();
        let x = ids(t.clone(), 2, 8);
        let ce = sequence_cross_entropy(m.forward(x.clone(), &[]).0, x);
        let ce = tensor_to_vec(ce);
        for c in ce {
            assert!((c - 11f32.ln()).abs() < 0.05, "{c}");
        }
    }

    /// The probe trick gives, from one backward pass, each domain's gradient on the probed
    /// layer's weight: equal to burn's autodiff gradient of that domain's own mean loss.
    #[test]
    fn probe_gradients_match_per_domain_backward() {
        let (cfg, m) = tiny();
        let dev = Default::default();
        let (n, s) = (5, 8);
        let toks: Vec<i64> = (0..n * (s + 1))
            .map(|i| ((i * 7 + 3) % 11) as i64)
            .collect();
        let mut inp = Vec::new();
        let mut tgt = Vec::new();
        for r in 0..n {
            inp.extend_from_slice(&toks[r * (s + 1)..r * (s + 1) + s]);
            tgt.extend_from_slice(&toks[r * (s + 1) + 1..(r + 1) * (s + 1)]);
        }
        let seq_domain = [0usize, 2, 0, 1, 2];
        let probe = Tensor::<AB, 3>::zeros([n, s, cfg.d_model], &dev).require_grad();
        let (logits, hidden) = m.forward(ids(inp.clone(), n, s), &[None, Some(probe.clone())]);
        let loss = sequence_cross_entropy(logits, ids(tgt.clone(), n, s)).mean();
        let grads = loss.backward();
        let delta = probe.grad(&grads).unwrap();
        let per = per_domain_weight_grads(hidden[1].clone().inner(), delta, &seq_domain, 4);
        for (i, per_i) in per.iter().enumerate().take(3) {
            let rows: Vec<usize> = (0..n).filter(|&r| seq_domain[r] == i).collect();
            let pick = |v: &Vec<i64>| -> Vec<i64> {
                rows.iter()
                    .flat_map(|&r| v[r * s..(r + 1) * s].to_vec())
                    .collect()
            };
            let (lg, _) = m.forward(ids(pick(&inp), rows.len(), s), &[]);
            let li = sequence_cross_entropy(lg, ids(pick(&tgt), rows.len(), s)).mean();
            let g = tensor_to_vec(m.ff_out_weight(1).grad(&li.backward()).unwrap());
            let err = g
                .iter()
                .zip(per_i)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            let scale = g.iter().map(|v| v.abs()).fold(0.0, f32::max);
            assert!(
                err < 1e-4 * scale.max(1e-3),
                "domain {i}: {err} vs scale {scale}"
            );
        }
        assert!(per[3].iter().all(|&v| v == 0.0));
    }
}
