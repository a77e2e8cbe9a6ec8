//! Qwen3 dense causal LM, computed exactly as HF transformers `modeling_qwen3.py` does (see the
//! crate docs for the formulas), generic over the burn backend.
//!
//! Module and parameter layout mirror the checkpoint: `embed_tokens`, `layers[i].{input_layernorm,
//! self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm, post_attention_layernorm,
//! mlp.{gate,up,down}_proj}`, `norm`, `lm_head`, and every weight has the HF shape (linear
//! weights `[out, in]`, see [`Qwen3Linear`]), so checkpoint tensors and gradients map one to one.

mod config;

use std::path::Path;

use burn::module::{Module, Param};
use burn::nn::Embedding;
use burn::tensor::activation::{silu, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Int, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub use config::Qwen3Config;

use crate::error::ModelError;
use crate::logprobs::{EntropyMode, TokenLogProbs, VocabAxis, logprobs_from_logits_2d};
use crate::safetensors_io::{SaveDtype, WeightFiles, write_checkpoint};

/// An HF tensor: name, shape, row-major f32 values.
pub type HfTensor = (String, Vec<usize>, Vec<f32>);

/// Additive attention bias of masked positions. Finite (HF uses the dtype minimum) so that a
/// fully masked query row (a left-pad position) yields finite values rather than NaN; two masks
/// added stay finite too.
pub(crate) const MASK_BIAS: f32 = -1.0e30;

/// Rows of the LM head computed at once by [`Qwen3::token_logprobs`], as a budget in elements of
/// the `[rows, vocab]` logits block (128 Mi elements = 512 MiB in f32; 883 rows of Qwen3's
/// 151,936-token vocabulary). Under autodiff every chunk's LM-head GEMM has its own full
/// `[vocab, hidden]` weight gradient (622 MB at 0.6B), so few large chunks are much faster than
/// many small ones; rows are spread evenly over the chunks.
const LOGPROB_CHUNK_ELEMS: usize = 128 << 20;

/// Rows per LM-head chunk for `n` rows of `vocab` logits within a budget of `chunk_elems` logits
/// per chunk: the fewest chunks that fit, with the rows spread evenly over them.
fn chunk_rows(n: usize, vocab: usize, chunk_elems: usize) -> usize {
    let chunks = (n * vocab).div_ceil(chunk_elems.max(1)).max(1);
    n.div_ceil(chunks).max(1)
}

/// A bias-free linear layer `y = x W^T` with the weight in HF layout `[out, in]` (burn's `Linear`
/// stores `[in, out]`); Qwen3 has no projection biases.
#[derive(Module, Debug)]
pub struct Qwen3Linear<B: Backend> {
    /// `[out, in]`, as in the checkpoint.
    pub weight: Param<Tensor<B, 2>>,
}

impl<B: Backend> Qwen3Linear<B> {
    /// `x W^T` for `x: [m, in]`.
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        matmul_hf(x, self.weight.val())
    }
}

/// RMSNorm as HF `Qwen3RMSNorm`: `y = weight * (x * rsqrt(mean(x²) + eps))`, statistics in f32.
#[derive(Module, Debug)]
pub struct Qwen3RmsNorm<B: Backend> {
    /// Scale, initialised to 1 (HF name `weight`).
    pub weight: Param<Tensor<B, 1>>,
    /// Epsilon (`rms_norm_eps`).
    pub eps: f64,
}

impl<B: Backend> Qwen3RmsNorm<B> {
    /// Normalises over the last dimension.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let inv = (x.clone().square().mean_dim(D - 1) + self.eps)
            .sqrt()
            .recip();
        (x * inv) * self.weight.val().unsqueeze::<D>()
    }
}

/// Self-attention with grouped-query heads, per-head q/k RMSNorm and rotate-half RoPE.
#[derive(Module, Debug)]
pub struct Qwen3Attention<B: Backend> {
    /// `[nh*hd, H]`.
    pub q_proj: Qwen3Linear<B>,
    /// `[nkv*hd, H]`.
    pub k_proj: Qwen3Linear<B>,
    /// `[nkv*hd, H]`.
    pub v_proj: Qwen3Linear<B>,
    /// `[H, nh*hd]`.
    pub o_proj: Qwen3Linear<B>,
    /// RMSNorm over `hd`, one weight shared by all query heads.
    pub q_norm: Qwen3RmsNorm<B>,
    /// RMSNorm over `hd`, one weight shared by all key heads.
    pub k_norm: Qwen3RmsNorm<B>,
    /// `nh`.
    pub num_heads: usize,
    /// `nkv`.
    pub num_kv_heads: usize,
    /// `hd`.
    pub head_dim: usize,
}

/// SwiGLU MLP: `down(silu(gate(x)) * up(x))`.
#[derive(Module, Debug)]
pub struct Qwen3Mlp<B: Backend> {
    /// `[I, H]`.
    pub gate_proj: Qwen3Linear<B>,
    /// `[I, H]`.
    pub up_proj: Qwen3Linear<B>,
    /// `[H, I]`.
    pub down_proj: Qwen3Linear<B>,
}

/// One pre-norm decoder block.
#[derive(Module, Debug)]
pub struct Qwen3DecoderLayer<B: Backend> {
    /// Norm before attention.
    pub input_layernorm: Qwen3RmsNorm<B>,
    /// Attention.
    pub self_attn: Qwen3Attention<B>,
    /// Norm before the MLP.
    pub post_attention_layernorm: Qwen3RmsNorm<B>,
    /// MLP.
    pub mlp: Qwen3Mlp<B>,
}

/// The Qwen3 causal LM (`Qwen3ForCausalLM`).
#[derive(Module, Debug)]
pub struct Qwen3<B: Backend> {
    /// Token embedding `[vocab, H]` (HF `model.embed_tokens.weight`).
    pub embed_tokens: Embedding<B>,
    /// Decoder layers (HF `model.layers.N`).
    pub layers: Vec<Qwen3DecoderLayer<B>>,
    /// Final norm (HF `model.norm`).
    pub norm: Qwen3RmsNorm<B>,
    /// `[vocab, H]` when untied; `None` when tied (the embedding is the head's weight).
    pub lm_head: Option<Qwen3Linear<B>>,
    #[module(skip)]
    config: Qwen3Config,
}

/// Which tokens of a `[batch, seq]` input are real (`true`) and which are padding (`false`),
/// in the sense of HF's `attention_mask` (1 = attend). Padding can be on either side (or
/// anywhere): padded keys are masked out and position ids count only real tokens
/// (`position = cumsum(mask) - 1`, as HF `generate` does), so a padded row computes the same
/// function as the row alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttentionMask {
    batch: usize,
    seq_len: usize,
    valid: Vec<bool>,
}

impl AttentionMask {
    /// A mask from row-major flags (`valid[b * seq_len + t]`).
    pub fn new(batch: usize, seq_len: usize, valid: Vec<bool>) -> Result<Self, ModelError> {
        if valid.len() != batch * seq_len {
            return Err(ModelError::InvalidInput(format!(
                "attention mask has {} flags, expected batch {batch} x seq_len {seq_len}",
                valid.len()
            )));
        }
        Ok(Self {
            batch,
            seq_len,
            valid,
        })
    }

    /// No padding.
    pub fn full(batch: usize, seq_len: usize) -> Self {
        Self {
            batch,
            seq_len,
            valid: vec![true; batch * seq_len],
        }
    }

    /// Row `b` holds `lengths[b]` real tokens at the start, then padding.
    pub fn right_padded(lengths: &[usize], seq_len: usize) -> Result<Self, ModelError> {
        Self::padded(lengths, seq_len, false)
    }

    /// Row `b` holds padding, then `lengths[b]` real tokens at the end.
    pub fn left_padded(lengths: &[usize], seq_len: usize) -> Result<Self, ModelError> {
        Self::padded(lengths, seq_len, true)
    }

    fn padded(lengths: &[usize], seq_len: usize, left: bool) -> Result<Self, ModelError> {
        let mut valid = Vec::with_capacity(lengths.len() * seq_len);
        for (b, &len) in lengths.iter().enumerate() {
            if len > seq_len {
                return Err(ModelError::InvalidInput(format!(
                    "row {b}: length {len} exceeds seq_len {seq_len}"
                )));
            }
            let pad = seq_len - len;
            valid.extend((0..seq_len).map(|t| if left { t >= pad } else { t < len }));
        }
        Ok(Self {
            batch: lengths.len(),
            seq_len,
            valid,
        })
    }

    /// From HF-style rows of 0/1.
    pub fn from_rows<R: AsRef<[bool]>>(rows: &[R]) -> Result<Self, ModelError> {
        let seq_len = rows.first().map(|r| r.as_ref().len()).unwrap_or(0);
        let mut valid = Vec::with_capacity(rows.len() * seq_len);
        for (b, r) in rows.iter().enumerate() {
            if r.as_ref().len() != seq_len {
                return Err(ModelError::InvalidInput(format!(
                    "attention mask row {b} has {} entries, row 0 has {seq_len}",
                    r.as_ref().len()
                )));
            }
            valid.extend_from_slice(r.as_ref());
        }
        Ok(Self {
            batch: rows.len(),
            seq_len,
            valid,
        })
    }

    /// Batch size.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Sequence length.
    pub fn seq_len(&self) -> usize {
        self.seq_len
    }

    /// Whether token `t` of row `b` is real (`false` outside the mask).
    pub fn is_valid(&self, b: usize, t: usize) -> bool {
        b < self.batch && t < self.seq_len && self.valid[b * self.seq_len + t]
    }

    /// Number of real tokens of each row.
    pub fn lengths(&self) -> Vec<usize> {
        (0..self.batch)
            .map(|b| {
                self.valid[b * self.seq_len..(b + 1) * self.seq_len]
                    .iter()
                    .filter(|&&v| v)
                    .count()
            })
            .collect()
    }

    /// Row-major flags.
    pub fn as_slice(&self) -> &[bool] {
        &self.valid
    }
}

/// Positions of the per-layer tail buffer of [`KvCache`] (see there).
const CACHE_TAIL: usize = 64;

/// Keys and values of one layer: a contiguous body plus a small tail buffer.
#[derive(Debug)]
struct LayerCache<B: Backend> {
    /// `[batch, nkv, body_len, hd]` keys and values.
    body: Option<(Tensor<B, 4>, Tensor<B, 4>)>,
    /// `[batch, nkv, CACHE_TAIL, hd]` keys and values, the first `tail_len` positions filled.
    tail: Option<(Tensor<B, 4>, Tensor<B, 4>)>,
}

/// Per-layer key/value cache for incremental decoding, for at most `capacity` positions (prompt +
/// new tokens, never `max_position_embeddings`).
///
/// Each layer keeps its keys and values `[batch, nkv, positions, hd]` as a contiguous *body* plus
/// a *tail* buffer of 64 positions: a decoding step writes its token into the tail (a copy of 64
/// positions at most, whatever the length), and a full tail is appended to the body (one copy of
/// the body every 64 steps). Attention reads both through views, without copying them. (Writing
/// into one preallocated `[.., capacity, ..]` tensor would copy the whole tensor on every step on
/// the CPU backend, whose `slice_assign` is not in place.) Memory grows with the positions
/// actually cached.
///
/// Besides the tensors the cache tracks, per row, which cached positions are real tokens and how
/// many real tokens precede the next one (its position id).
#[derive(Debug)]
pub struct KvCache<B: Backend> {
    layers: Vec<LayerCache<B>>,
    batch: usize,
    capacity: usize,
    len: usize,
    body_len: usize,
    tail_len: usize,
    key_valid: Vec<bool>,
    valid_count: Vec<usize>,
}

/// Where a forward call writes its new keys and values.
#[derive(Clone, Copy, Debug)]
enum CacheWrite {
    /// Into the tail, at this offset.
    Tail(usize),
    /// Append the tail's `tail_len` positions, then the new ones, to the body.
    Body { tail_len: usize },
}

impl<B: Backend> KvCache<B> {
    /// An empty cache for `batch` rows and at most `capacity` positions.
    pub fn new(config: &Qwen3Config, batch: usize, capacity: usize) -> Self {
        Self {
            layers: (0..config.num_hidden_layers)
                .map(|_| LayerCache {
                    body: None,
                    tail: None,
                })
                .collect(),
            batch,
            capacity,
            len: 0,
            body_len: 0,
            tail_len: 0,
            key_valid: vec![false; batch * capacity],
            valid_count: vec![0; batch],
        }
    }

    /// Positions filled so far (the same for every row; padding counts).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing has been cached yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most positions the cache accepts.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Rows.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// Where `l` new positions go, and the body/tail lengths afterwards.
    fn plan(&self, l: usize) -> (CacheWrite, usize, usize) {
        if self.tail_len + l <= CACHE_TAIL && self.len > 0 {
            (
                CacheWrite::Tail(self.tail_len),
                self.body_len,
                self.tail_len + l,
            )
        } else {
            (
                CacheWrite::Body {
                    tail_len: self.tail_len,
                },
                self.body_len + self.tail_len + l,
                0,
            )
        }
    }

    /// Keeps only the given rows (in that order), e.g. to drop finished samples during
    /// generation. Costs one copy of the cache.
    pub fn retain_rows(&mut self, rows: &[usize]) -> Result<(), ModelError> {
        if let Some(&bad) = rows.iter().find(|&&r| r >= self.batch) {
            return Err(ModelError::InvalidInput(format!(
                "row {bad} out of range for a cache of {} rows",
                self.batch
            )));
        }
        if rows.is_empty() {
            return Err(ModelError::InvalidInput(
                "retain_rows needs at least one row".to_string(),
            ));
        }
        let mut key_valid = Vec::with_capacity(rows.len() * self.capacity);
        for &r in rows {
            key_valid
                .extend_from_slice(&self.key_valid[r * self.capacity..(r + 1) * self.capacity]);
        }
        let valid_count = rows.iter().map(|&r| self.valid_count[r]).collect();
        let select = |pair: Option<(Tensor<B, 4>, Tensor<B, 4>)>| {
            pair.map(|(k, v)| {
                let idx = Tensor::<B, 1, Int>::from_data(
                    TensorData::new(rows.iter().map(|&r| r as i64).collect(), [rows.len()]),
                    &k.device(),
                );
                (k.select(0, idx.clone()), v.select(0, idx))
            })
        };
        for layer in self.layers.iter_mut() {
            layer.body = select(layer.body.take());
            layer.tail = select(layer.tail.take());
        }
        self.key_valid = key_valid;
        self.valid_count = valid_count;
        self.batch = rows.len();
        Ok(())
    }
}

/// Inverse RoPE frequencies as HF computes them in f32: `1 / theta^(2i/hd)`.
fn inv_freq(theta: f64, head_dim: usize) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| {
            let exponent = (2 * i) as f32 / head_dim as f32;
            1.0f32 / (theta as f32).powf(exponent)
        })
        .collect()
}

/// `x W^T` for `x: [m, in]` and an HF-layout weight `W: [out, in]`, as one 2-D GEMM.
///
/// burn-flex's GEMM runs the same product at very different speeds depending on which side is
/// long, so the orientation is chosen by shape ([`transposed_product`]): either `x W^T` directly,
/// or `(W x^T)^T` with the long `out` side as the GEMM's `m` dimension.
fn matmul_hf<B: Backend>(x: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    let m = x.dims()[0];
    let out = w.dims()[0];
    if transposed_product(m, out, w.is_require_grad()) {
        w.matmul(x.transpose()).transpose()
    } else {
        x.matmul(w.transpose())
    }
}

/// Whether [`matmul_hf`] computes `x W^T` as `(W x^T)^T` for `m` rows and `out` output features;
/// `tracked` = the weight is tracked by autodiff (training: the choice also fixes the shapes of
/// the two backward GEMMs).
///
/// Measured with burn-flex 0.21 on the 2-core AVX-512 EPYC build machine
/// (`examples/matmul_probe.rs`, table in docs/performance.md). Without autodiff, `(W x^T)^T` is
/// 1.4-2.6x faster at 8-32 rows (and at 64 rows of a 3072 → 1024 layer) and 1.1-2.8x slower from
/// 128 rows on, where its transposed result costs a strided copy. With autodiff, forward + both
/// backward GEMMs of a layer-sized weight are 1.2-2.9x faster as `(W x^T)^T` at 64-256 rows (the
/// weight gradient `dy^T x` comes out in the weight's own layout) and 5-15 % slower at 1024.
fn transposed_product(m: usize, out: usize, tracked: bool) -> bool {
    const LAYER_SIZED: usize = 16_384;
    if tracked && out <= LAYER_SIZED {
        m <= 512
    } else {
        m <= 32 || (m <= 64 && out <= LAYER_SIZED)
    }
}

/// cos/sin tables for the given positions, materialised at the full `[b, L, heads, hd]` shape of
/// the query and of the key heads: burn-flex's element-wise kernels are SIMD only for same-shape
/// operands or row/scalar broadcasts, and a `[b, L, 1, hd]` table broadcast over the heads took
/// a scalar strided path (about 5 % of a Qwen3-0.6B forward pass on the CPU).
struct Rope<B: Backend> {
    q: RopeTables<B>,
    k: RopeTables<B>,
}

/// `cos` and the sign-folded `sin` of one head count (see [`RopeTables::apply`]).
struct RopeTables<B: Backend> {
    cos: Tensor<B, 4>,
    sin: Tensor<B, 4>,
}

impl<B: Backend> Rope<B> {
    fn new(
        positions: Vec<f32>,
        batch: usize,
        len: usize,
        config: &Qwen3Config,
        device: &B::Device,
    ) -> Self {
        let half = config.head_dim / 2;
        let pos = Tensor::<B, 2>::from_data(TensorData::new(positions, [batch * len, 1]), device);
        let inv = Tensor::<B, 2>::from_data(
            TensorData::new(inv_freq(config.rope_theta, config.head_dim), [1, half]),
            device,
        );
        let freqs = pos.mul(inv); // [b*L, hd/2], one f32 product each, as HF
        let cos = freqs.clone().cos();
        let sin = freqs.sin();
        let shape = [batch, len, 1, config.head_dim];
        // rotate_half(x) * sin = [x2, x1] * [-sin, sin]: the sign goes into the table.
        let cos = Tensor::cat(vec![cos.clone(), cos], 1).reshape(shape);
        let sin = Tensor::cat(vec![sin.clone().neg(), sin], 1).reshape(shape);
        let tables = |heads: usize| RopeTables {
            cos: cos.clone().repeat_dim(2, heads),
            sin: sin.clone().repeat_dim(2, heads),
        };
        Self {
            q: tables(config.num_attention_heads),
            k: tables(config.num_key_value_heads),
        }
    }
}

impl<B: Backend> RopeTables<B> {
    /// HF's `x * cos + rotate_half(x) * sin` on `[b, L, heads, hd]` (these tables' head count),
    /// where `rotate_half(x) = [-x2, x1]` for the halves `x1`, `x2` of the last dimension.
    fn apply(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [b, l, h, hd] = x.dims();
        let half = hd / 2;
        let x1 = x.clone().slice([0..b, 0..l, 0..h, 0..half]);
        let x2 = x.clone().slice([0..b, 0..l, 0..h, half..hd]);
        let swapped = Tensor::cat(vec![x2, x1], 3);
        x * self.cos.clone() + swapped * self.sin.clone()
    }
}

/// What one forward call attends to, prepared on the host.
struct Step<B: Backend> {
    rope: Rope<B>,
    /// `[1 or b, 1, n_rep * L, K]` additive bias, `K = start + L`.
    bias: Tensor<B, 4>,
    /// With a cache: where the new keys/values go.
    write: Option<CacheWrite>,
}

/// `softmax(q kᵀ · scale + bias) v` over keys/values given in consecutive parts (the cache's body
/// and tail), each read through a view; the scores of the parts are concatenated.
fn attend_parts<B: Backend>(
    q: Tensor<B, 4>,
    parts: Vec<(Tensor<B, 4>, Tensor<B, 4>)>,
    bias: Tensor<B, 4>,
    scale: f64,
) -> Tensor<B, 4> {
    let scores: Vec<Tensor<B, 4>> = parts
        .iter()
        .map(|(k, _)| q.clone().matmul(k.clone().swap_dims(2, 3)))
        .collect();
    let scores = if scores.len() == 1 {
        scores.into_iter().next().expect("one part")
    } else {
        Tensor::cat(scores, 3)
    };
    let probs = softmax(scores.mul_scalar(scale) + bias, 3);
    let [b, h, r, _] = probs.dims();
    let mut out: Option<Tensor<B, 4>> = None;
    let mut offset = 0;
    for (k, v) in parts {
        let n = k.dims()[2];
        let p = probs.clone().slice([0..b, 0..h, 0..r, offset..offset + n]);
        let o = p.matmul(v);
        out = Some(match out {
            Some(acc) => acc + o,
            None => o,
        });
        offset += n;
    }
    out.expect("at least one part")
}

impl<B: Backend> Qwen3Attention<B> {
    fn forward(
        &self,
        x: Tensor<B, 2>,
        batch: usize,
        len: usize,
        step: &Step<B>,
        cache: Option<&mut LayerCache<B>>,
    ) -> Tensor<B, 2> {
        let (nh, nkv, hd) = (self.num_heads, self.num_kv_heads, self.head_dim);
        let n_rep = nh / nkv;
        let q = self.q_proj.forward(x.clone()).reshape([batch, len, nh, hd]);
        let k = self
            .k_proj
            .forward(x.clone())
            .reshape([batch, len, nkv, hd]);
        let v = self.v_proj.forward(x).reshape([batch, len, nkv, hd]);
        let q = step.rope.q.apply(self.q_norm.forward(q)).swap_dims(1, 2); // [b, nh, L, hd]
        let k = step.rope.k.apply(self.k_norm.forward(k)).swap_dims(1, 2); // [b, nkv, L, hd]
        let v = v.swap_dims(1, 2);

        // Grouped-query attention without repeating K/V: query head j = g * n_rep + r uses KV
        // head g, so [b, nh, L, hd] viewed as [b, nkv, n_rep * L, hd] lines each group's queries
        // up against its own KV head (the bias is repeated n_rep times along the query axis).
        let q = q.reshape([batch, nkv, n_rep * len, hd]);
        let scale = 1.0 / (hd as f64).sqrt();
        let fused = |q, k, v| {
            let options = AttentionModuleOptions {
                scale: Some(scale),
                softcap: None,
                is_causal: false,
            };
            attention(q, k, v, None, Some(step.bias.clone()), options)
        };
        let out = match (cache, step.write) {
            (Some(layer), Some(write)) => {
                let mut parts = Vec::with_capacity(2);
                match write {
                    CacheWrite::Tail(at) => {
                        let (tk, tv) = layer.tail.take().unwrap_or_else(|| {
                            let shape = [batch, nkv, CACHE_TAIL, hd];
                            (
                                Tensor::zeros(shape, &k.device()),
                                Tensor::zeros(shape, &k.device()),
                            )
                        });
                        let range = [0..batch, 0..nkv, at..at + len, 0..hd];
                        let tk = tk.slice_assign(range.clone(), k);
                        let tv = tv.slice_assign(range, v);
                        layer.tail = Some((tk.clone(), tv.clone()));
                        if let Some(body) = layer.body.clone() {
                            parts.push(body);
                        }
                        let filled = [0..batch, 0..nkv, 0..at + len, 0..hd];
                        parts.push((tk.slice(filled.clone()), tv.slice(filled)));
                    }
                    CacheWrite::Body { tail_len } => {
                        let mut ks = Vec::with_capacity(3);
                        let mut vs = Vec::with_capacity(3);
                        if let Some((bk, bv)) = layer.body.take() {
                            ks.push(bk);
                            vs.push(bv);
                        }
                        if tail_len > 0
                            && let Some((tk, tv)) = layer.tail.clone()
                        {
                            let filled = [0..batch, 0..nkv, 0..tail_len, 0..hd];
                            ks.push(tk.slice(filled.clone()));
                            vs.push(tv.slice(filled));
                        }
                        let prefill = ks.is_empty();
                        ks.push(k.clone());
                        vs.push(v.clone());
                        let (bk, bv) = if prefill {
                            (k.clone(), v.clone())
                        } else {
                            (Tensor::cat(ks, 2), Tensor::cat(vs, 2))
                        };
                        layer.body = Some((bk.clone(), bv.clone()));
                        if prefill {
                            // Nothing cached before: the new keys are all there is.
                            return self.o_proj.forward(Self::merge_heads(
                                fused(q, k, v),
                                batch,
                                nh,
                                len,
                                hd,
                            ));
                        }
                        parts.push((bk, bv));
                    }
                }
                attend_parts(q, parts, step.bias.clone(), scale)
            }
            _ => fused(q, k, v),
        };
        self.o_proj
            .forward(Self::merge_heads(out, batch, nh, len, hd))
    }

    /// `[b, nkv, n_rep * L, hd]` attention output back to `[b * L, nh * hd]`.
    fn merge_heads(
        out: Tensor<B, 4>,
        batch: usize,
        nh: usize,
        len: usize,
        hd: usize,
    ) -> Tensor<B, 2> {
        out.reshape([batch, nh, len, hd])
            .swap_dims(1, 2)
            .reshape([batch * len, nh * hd])
    }
}

impl<B: Backend> Qwen3Mlp<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let gate = silu(self.gate_proj.forward(x.clone()));
        let up = self.up_proj.forward(x);
        self.down_proj.forward(gate * up)
    }
}

impl<B: Backend> Qwen3DecoderLayer<B> {
    fn forward(
        &self,
        h: Tensor<B, 2>,
        batch: usize,
        len: usize,
        step: &Step<B>,
        cache: Option<&mut LayerCache<B>>,
    ) -> Tensor<B, 2> {
        let a = self.self_attn.forward(
            self.input_layernorm.forward(h.clone()),
            batch,
            len,
            step,
            cache,
        );
        let h = h + a;
        let m = self
            .mlp
            .forward(self.post_attention_layernorm.forward(h.clone()));
        h + m
    }
}

/// HF tensor names and shapes (`[out, in]` for linears) of a config, in checkpoint order.
pub(crate) fn expected_tensors(config: &Qwen3Config) -> Vec<(String, Vec<usize>)> {
    let h = config.hidden_size;
    let q = config.num_attention_heads * config.head_dim;
    let kv = config.num_key_value_heads * config.head_dim;
    let hd = config.head_dim;
    let i = config.intermediate_size;
    let mut out = vec![(
        "model.embed_tokens.weight".to_string(),
        vec![config.vocab_size, h],
    )];
    for n in 0..config.num_hidden_layers {
        let p = format!("model.layers.{n}");
        out.extend([
            (format!("{p}.input_layernorm.weight"), vec![h]),
            (format!("{p}.self_attn.q_proj.weight"), vec![q, h]),
            (format!("{p}.self_attn.k_proj.weight"), vec![kv, h]),
            (format!("{p}.self_attn.v_proj.weight"), vec![kv, h]),
            (format!("{p}.self_attn.o_proj.weight"), vec![h, q]),
            (format!("{p}.self_attn.q_norm.weight"), vec![hd]),
            (format!("{p}.self_attn.k_norm.weight"), vec![hd]),
            (format!("{p}.post_attention_layernorm.weight"), vec![h]),
            (format!("{p}.mlp.gate_proj.weight"), vec![i, h]),
            (format!("{p}.mlp.up_proj.weight"), vec![i, h]),
            (format!("{p}.mlp.down_proj.weight"), vec![h, i]),
        ]);
    }
    out.push(("model.norm.weight".to_string(), vec![h]));
    if !config.tie_word_embeddings {
        out.push(("lm_head.weight".to_string(), vec![config.vocab_size, h]));
    }
    out
}

/// Where the parameter values come from when building a model.
trait WeightSource {
    /// Values of HF tensor `name` (HF layout, row-major) with the given shape.
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError>;
}

struct FileSource<'a>(&'a WeightFiles);

impl WeightSource for FileSource<'_> {
    fn take(&mut self, name: &str, _shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        self.0.read_f32(name)
    }
}

/// HF init: normal(0, initializer_range) for linears and the embedding, ones for norms; drawn on
/// the host from ChaCha8 so that the same seed gives the same model on every backend.
struct RandomSource {
    rng: ChaCha8Rng,
    std: f64,
}

impl RandomSource {
    fn normal(&mut self) -> f64 {
        // Box-Muller; u1 in (0, 1].
        let u1: f64 = 1.0 - self.rng.random::<f64>();
        let u2: f64 = self.rng.random::<f64>();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

impl WeightSource for RandomSource {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let n: usize = shape.iter().product();
        if name.ends_with("norm.weight") {
            return Ok(vec![1.0; n]);
        }
        Ok((0..n).map(|_| (self.normal() * self.std) as f32).collect())
    }
}

impl Qwen3Config {
    /// A randomly initialised model with seed 0; see [`Qwen3Config::init_seeded`].
    pub fn init<B: Backend>(&self, device: &B::Device) -> Result<Qwen3<B>, ModelError> {
        self.init_seeded(0, device)
    }

    /// A randomly initialised model as HF initialises one: every linear weight and the embedding
    /// drawn from normal(0, `initializer_range`), every norm weight 1. Values are drawn on the host
    /// from `ChaCha8Rng::seed_from_u64(seed)`, tensor by tensor in checkpoint order, so a seed
    /// gives the same model on every backend (burn's backend RNG is not used).
    pub fn init_seeded<B: Backend>(
        &self,
        seed: u64,
        device: &B::Device,
    ) -> Result<Qwen3<B>, ModelError> {
        self.validate()?;
        let mut source = RandomSource {
            rng: ChaCha8Rng::seed_from_u64(seed),
            std: self.initializer_range,
        };
        Qwen3::build(self.clone(), &mut source, device)
    }
}

/// Builds parameters from a [`WeightSource`], converting HF layouts to burn's.
struct Builder<'a, B: Backend> {
    source: &'a mut dyn WeightSource,
    shapes: std::collections::HashMap<String, Vec<usize>>,
    device: &'a B::Device,
    eps: f64,
}

impl<B: Backend> Builder<'_, B> {
    fn raw(&mut self, name: &str) -> Result<(Vec<f32>, Vec<usize>), ModelError> {
        let shape = self
            .shapes
            .get(name)
            .cloned()
            .ok_or_else(|| ModelError::MissingTensor {
                tensor: name.to_string(),
                searched: "the config's tensor list".to_string(),
            })?;
        let values = self.source.take(name, &shape)?;
        let n: usize = shape.iter().product();
        if values.len() != n {
            return Err(ModelError::ShapeMismatch {
                tensor: name.to_string(),
                expected: shape,
                found: vec![values.len()],
            });
        }
        Ok((values, shape))
    }

    /// A linear layer, weight `[out, in]` as in the checkpoint.
    fn linear(&mut self, name: &str) -> Result<Qwen3Linear<B>, ModelError> {
        let (values, shape) = self.raw(name)?;
        let t =
            Tensor::<B, 2>::from_data(TensorData::new(values, [shape[0], shape[1]]), self.device);
        Ok(Qwen3Linear {
            weight: Param::from_tensor(t),
        })
    }

    fn norm(&mut self, name: &str) -> Result<Qwen3RmsNorm<B>, ModelError> {
        let (values, shape) = self.raw(name)?;
        Ok(Qwen3RmsNorm {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [shape[0]]),
                self.device,
            )),
            eps: self.eps,
        })
    }

    fn embedding(&mut self, name: &str) -> Result<Embedding<B>, ModelError> {
        let (values, shape) = self.raw(name)?;
        Ok(Embedding {
            weight: Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [shape[0], shape[1]]),
                self.device,
            )),
        })
    }
}

impl<B: Backend> Qwen3<B> {
    fn build(
        config: Qwen3Config,
        source: &mut dyn WeightSource,
        device: &B::Device,
    ) -> Result<Self, ModelError> {
        let mut bld = Builder::<B> {
            source,
            shapes: expected_tensors(&config).into_iter().collect(),
            device,
            eps: config.rms_norm_eps,
        };
        let embed_tokens = bld.embedding("model.embed_tokens.weight")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for n in 0..config.num_hidden_layers {
            let p = format!("model.layers.{n}");
            layers.push(Qwen3DecoderLayer {
                input_layernorm: bld.norm(&format!("{p}.input_layernorm.weight"))?,
                self_attn: Qwen3Attention {
                    q_proj: bld.linear(&format!("{p}.self_attn.q_proj.weight"))?,
                    k_proj: bld.linear(&format!("{p}.self_attn.k_proj.weight"))?,
                    v_proj: bld.linear(&format!("{p}.self_attn.v_proj.weight"))?,
                    o_proj: bld.linear(&format!("{p}.self_attn.o_proj.weight"))?,
                    q_norm: bld.norm(&format!("{p}.self_attn.q_norm.weight"))?,
                    k_norm: bld.norm(&format!("{p}.self_attn.k_norm.weight"))?,
                    num_heads: config.num_attention_heads,
                    num_kv_heads: config.num_key_value_heads,
                    head_dim: config.head_dim,
                },
                post_attention_layernorm: bld
                    .norm(&format!("{p}.post_attention_layernorm.weight"))?,
                mlp: Qwen3Mlp {
                    gate_proj: bld.linear(&format!("{p}.mlp.gate_proj.weight"))?,
                    up_proj: bld.linear(&format!("{p}.mlp.up_proj.weight"))?,
                    down_proj: bld.linear(&format!("{p}.mlp.down_proj.weight"))?,
                },
            });
        }
        let norm = bld.norm("model.norm.weight")?;
        let lm_head = if config.tie_word_embeddings {
            None
        } else {
            Some(bld.linear("lm_head.weight")?)
        };
        Ok(Self {
            embed_tokens,
            layers,
            norm,
            lm_head,
            config,
        })
    }

    /// Loads an HF checkpoint. `path` is a model directory (with `config.json` and
    /// `model.safetensors` or `model.safetensors.index.json` + shards), a `.safetensors` file or
    /// an index file (with `config.json` next to it). Tensors may be bf16, f16 or f32; they are
    /// converted to f32. When the embeddings are tied a stored `lm_head.weight` is accepted (its
    /// shape and dtype are checked) and ignored, as HF does.
    ///
    /// Every mismatch is a typed error naming the tensor: missing, unexpected, wrong shape,
    /// unsupported dtype, truncated file, inconsistent shard index.
    pub fn load(path: impl AsRef<Path>, device: &B::Device) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let config_path = if path.is_dir() {
            path.join("config.json")
        } else {
            path.parent().unwrap_or(Path::new(".")).join("config.json")
        };
        let config = Qwen3Config::from_file(&config_path)?;
        let files = WeightFiles::open(path)?;
        Self::check_tensors(&config, &files)?;
        Self::build(config, &mut FileSource(&files), device)
    }

    fn check_tensors(config: &Qwen3Config, files: &WeightFiles) -> Result<(), ModelError> {
        let expected = expected_tensors(config);
        let mut allowed: std::collections::HashMap<&str, &[usize]> = expected
            .iter()
            .map(|(n, s)| (n.as_str(), s.as_slice()))
            .collect();
        let tied_head = [config.vocab_size, config.hidden_size];
        if config.tie_word_embeddings {
            allowed.insert("lm_head.weight", &tied_head);
        }
        for (name, entry) in &files.entries {
            let Some(shape) = allowed.get(name.as_str()) else {
                return Err(ModelError::UnexpectedTensor {
                    file: files.files[entry.file].clone(),
                    tensor: name.clone(),
                });
            };
            if entry.shape.as_slice() != *shape {
                return Err(ModelError::ShapeMismatch {
                    tensor: name.clone(),
                    expected: shape.to_vec(),
                    found: entry.shape.clone(),
                });
            }
            use safetensors::Dtype;
            if !matches!(entry.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16) {
                return Err(ModelError::UnsupportedDtype {
                    tensor: name.clone(),
                    dtype: format!("{:?}", entry.dtype),
                });
            }
        }
        for (name, _) in &expected {
            if !files.entries.contains_key(name) {
                return Err(ModelError::MissingTensor {
                    tensor: name.clone(),
                    searched: files.describe(),
                });
            }
        }
        Ok(())
    }

    /// The parameters as HF tensors: `(name, shape, row-major f32 values)` in checkpoint order
    /// (linear weights transposed back to `[out, in]`; no `lm_head.weight` when tied).
    pub fn hf_tensors(&self) -> Result<Vec<HfTensor>, ModelError> {
        let read = |t: Tensor<B, 2>| -> Result<Vec<f32>, ModelError> {
            t.into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .map_err(|e| ModelError::Data(format!("{e:?}")))
        };
        let read1 = |t: Tensor<B, 1>| -> Result<Vec<f32>, ModelError> {
            t.into_data()
                .convert::<f32>()
                .into_vec::<f32>()
                .map_err(|e| ModelError::Data(format!("{e:?}")))
        };
        let lin = |name: String, l: &Qwen3Linear<B>| -> Result<HfTensor, ModelError> {
            let shape = l.weight.val().dims().to_vec();
            Ok((name, shape, read(l.weight.val())?))
        };
        let mut out = Vec::new();
        let [vocab, h] = self.embed_tokens.weight.val().dims();
        out.push((
            "model.embed_tokens.weight".to_string(),
            vec![vocab, h],
            read(self.embed_tokens.weight.val())?,
        ));
        for (n, layer) in self.layers.iter().enumerate() {
            let p = format!("model.layers.{n}");
            let norm = |name: String, w: &Qwen3RmsNorm<B>| -> Result<_, ModelError> {
                let v = read1(w.weight.val())?;
                Ok((name, vec![v.len()], v))
            };
            let a = &layer.self_attn;
            out.push(norm(
                format!("{p}.input_layernorm.weight"),
                &layer.input_layernorm,
            )?);
            out.push(lin(format!("{p}.self_attn.q_proj.weight"), &a.q_proj)?);
            out.push(lin(format!("{p}.self_attn.k_proj.weight"), &a.k_proj)?);
            out.push(lin(format!("{p}.self_attn.v_proj.weight"), &a.v_proj)?);
            out.push(lin(format!("{p}.self_attn.o_proj.weight"), &a.o_proj)?);
            out.push(norm(format!("{p}.self_attn.q_norm.weight"), &a.q_norm)?);
            out.push(norm(format!("{p}.self_attn.k_norm.weight"), &a.k_norm)?);
            out.push(norm(
                format!("{p}.post_attention_layernorm.weight"),
                &layer.post_attention_layernorm,
            )?);
            out.push(lin(
                format!("{p}.mlp.gate_proj.weight"),
                &layer.mlp.gate_proj,
            )?);
            out.push(lin(format!("{p}.mlp.up_proj.weight"), &layer.mlp.up_proj)?);
            out.push(lin(
                format!("{p}.mlp.down_proj.weight"),
                &layer.mlp.down_proj,
            )?);
        }
        let v = read1(self.norm.weight.val())?;
        out.push(("model.norm.weight".to_string(), vec![v.len()], v));
        if let Some(head) = &self.lm_head {
            out.push(lin("lm_head.weight".to_string(), head)?);
        }
        Ok(out)
    }

    /// Saves `config.json` + `model.safetensors` (f32) in HF layout into `dir` (created if
    /// needed); `lm_head.weight` is omitted when tied, as transformers 5 does. Loading the result
    /// gives back the same parameters bit for bit.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), ModelError> {
        self.save_with(dir, SaveDtype::F32, None)
    }

    /// [`Qwen3::save`] with a choice of on-disk dtype and optional sharding into files of at most
    /// `max_shard_bytes` (with `model.safetensors.index.json`).
    pub fn save_with(
        &self,
        dir: impl AsRef<Path>,
        dtype: SaveDtype,
        max_shard_bytes: Option<u64>,
    ) -> Result<(), ModelError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|source| ModelError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut config = self.config.clone();
        config.torch_dtype = Some(dtype.hf_name().to_string());
        let config_path = dir.join("config.json");
        let text = serde_json::to_string_pretty(&config.to_json_value()).map_err(|source| {
            ModelError::Json {
                path: config_path.clone(),
                source,
            }
        })?;
        std::fs::write(&config_path, text).map_err(|source| ModelError::Io {
            path: config_path.clone(),
            source,
        })?;
        write_checkpoint(dir, self.hf_tensors()?, dtype, max_shard_bytes)
    }

    /// The configuration.
    pub fn config(&self) -> &Qwen3Config {
        &self.config
    }

    /// The device holding the parameters.
    pub fn device(&self) -> B::Device {
        self.embed_tokens.weight.val().device()
    }

    /// A KV cache for `batch` rows and at most `capacity` positions.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> KvCache<B> {
        KvCache::new(&self.config, batch, capacity)
    }

    /// Logits for every position: `[batch, seq, vocab]`.
    ///
    /// `mask` marks real tokens (HF `attention_mask`); `None` means no padding. With a `cache`,
    /// `input_ids` are the tokens that follow those already cached (their keys/values are
    /// appended); `mask` then covers the new tokens only.
    ///
    /// Token ids must be below `vocab_size` (use [`Qwen3::check_ids`] on untrusted input).
    pub fn forward(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        cache: Option<&mut KvCache<B>>,
    ) -> Result<Tensor<B, 3>, ModelError> {
        let [b, l] = input_ids.dims();
        let h = self.hidden_states(input_ids, mask, cache)?;
        let logits = self.lm_head_2d(h.reshape([b * l, self.config.hidden_size]));
        Ok(logits.reshape([b, l, self.config.vocab_size]))
    }

    /// Checks that every id is a valid row of the embedding.
    pub fn check_ids(&self, ids: &[u32]) -> Result<(), ModelError> {
        match ids
            .iter()
            .position(|&id| id as usize >= self.config.vocab_size)
        {
            Some(i) => Err(ModelError::InvalidInput(format!(
                "token id {} at index {i} is not below vocab_size {}",
                ids[i], self.config.vocab_size
            ))),
            None => Ok(()),
        }
    }

    /// `logits = norm(h) @ W_head^T` for `[n, H]` hidden states (before the final norm).
    fn lm_head_2d(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        matmul_hf(self.norm.forward(h), self.head_weight())
    }

    /// The LM head's `[vocab, H]` weight: `lm_head.weight`, or the embedding when tied.
    fn head_weight(&self) -> Tensor<B, 2> {
        match &self.lm_head {
            Some(head) => head.weight.val(),
            None => self.embed_tokens.weight.val(),
        }
    }

    /// Transposed logits `W_head · norm(h)ᵀ`, `[vocab, n]`, for `[n, H]` hidden states: the GEMM
    /// reads the head weight in its own `[vocab, H]` layout and writes no transposed result, and
    /// under autodiff the weight gradient `dL/dlogitsᵀ · h` comes out contiguous in the weight's
    /// layout (for a tied head it is added straight onto the embedding's gradient, where a
    /// transposed one took a scalar strided path).
    fn lm_head_t(&self, h: Tensor<B, 2>) -> Tensor<B, 2> {
        self.head_weight().matmul(self.norm.forward(h).transpose())
    }

    /// Final-layer hidden states before the final norm, `[batch, seq, H]`.
    pub(crate) fn hidden_states(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        mut cache: Option<&mut KvCache<B>>,
    ) -> Result<Tensor<B, 3>, ModelError> {
        let [b, l] = input_ids.dims();
        if b == 0 || l == 0 {
            return Err(ModelError::InvalidInput(format!(
                "input_ids has shape [{b}, {l}]; both dimensions must be positive"
            )));
        }
        if let Some(m) = mask
            && (m.batch != b || m.seq_len != l)
        {
            return Err(ModelError::InvalidInput(format!(
                "attention mask is [{}, {}], input_ids is [{b}, {l}]",
                m.batch, m.seq_len
            )));
        }
        if let Some(c) = cache.as_deref() {
            if c.batch != b {
                return Err(ModelError::InvalidInput(format!(
                    "KV cache has {} rows, input_ids has {b}",
                    c.batch
                )));
            }
            if c.len + l > c.capacity {
                return Err(ModelError::CacheOverflow {
                    capacity: c.capacity,
                    needed: c.len + l,
                });
            }
        }
        let device = input_ids.device();
        let step = self.prepare_step(b, l, mask, cache.as_deref(), &device);

        let h = self
            .embed_tokens
            .weight
            .val()
            .select(0, input_ids.reshape([b * l]));
        let mut h = h;
        for (i, layer) in self.layers.iter().enumerate() {
            let slot = cache.as_deref_mut().map(|c| &mut c.layers[i]);
            h = layer.forward(h, b, l, &step, slot);
        }
        if let Some(c) = cache {
            for row in 0..b {
                for t in 0..l {
                    let valid = mask.is_none_or(|m| m.is_valid(row, t));
                    c.key_valid[row * c.capacity + c.len + t] = valid;
                    c.valid_count[row] += usize::from(valid);
                }
            }
            let (_, body_len, tail_len) = c.plan(l);
            c.body_len = body_len;
            c.tail_len = tail_len;
            c.len += l;
        }
        Ok(h.reshape([b, l, self.config.hidden_size]))
    }

    /// Position ids, RoPE tables and the attention bias of one call.
    fn prepare_step(
        &self,
        b: usize,
        l: usize,
        mask: Option<&AttentionMask>,
        cache: Option<&KvCache<B>>,
        device: &B::Device,
    ) -> Step<B> {
        let valid = |row: usize, t: usize| mask.is_none_or(|m| m.is_valid(row, t));
        let start = cache.map(|c| c.len).unwrap_or(0);
        let k_len = start + l;

        // position = (real tokens before, including this one) - 1, clamped at 0 for padding.
        let mut positions = Vec::with_capacity(b * l);
        for row in 0..b {
            let mut count = cache.map(|c| c.valid_count[row]).unwrap_or(0);
            for t in 0..l {
                count += usize::from(valid(row, t));
                positions.push(count.saturating_sub(1) as f32);
            }
        }
        let rope = Rope::new(positions, b, l, &self.config, device);

        // Key j of row `row` is attendable from new token t iff it is a real token and j <= start + t.
        let key_valid = |row: usize, j: usize| -> bool {
            if j < start {
                cache.is_some_and(|c| c.key_valid[row * c.capacity + j])
            } else if j < start + l {
                valid(row, j - start)
            } else {
                false
            }
        };
        let all_valid = mask.is_none_or(|m| m.valid.iter().all(|&v| v))
            && cache.is_none_or(|c| {
                (0..c.batch).all(|row| {
                    c.key_valid[row * c.capacity..row * c.capacity + start]
                        .iter()
                        .all(|&v| v)
                })
            });
        let rows = if all_valid { 1 } else { b };
        let mut bias = vec![0.0f32; rows * l * k_len];
        for row in 0..rows {
            for t in 0..l {
                let base = (row * l + t) * k_len;
                for j in 0..k_len {
                    if j > start + t || !key_valid(row, j) {
                        bias[base + j] = MASK_BIAS;
                    }
                }
            }
        }
        let n_rep = self.config.num_key_value_groups();
        let bias = Tensor::<B, 4>::from_data(TensorData::new(bias, [rows, 1, l, k_len]), device);
        let bias = if n_rep > 1 {
            bias.repeat_dim(2, n_rep)
        } else {
            bias
        };
        Step {
            rope,
            bias,
            write: cache.map(|c| c.plan(l).0),
        }
    }

    /// Logits of the last position of every row, `[batch, vocab]` (only that position goes
    /// through the LM head). Used by generation.
    pub(crate) fn last_logits(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        cache: Option<&mut KvCache<B>>,
    ) -> Result<Tensor<B, 2>, ModelError> {
        let [b, l] = input_ids.dims();
        let h = self.hidden_states(input_ids, mask, cache)?;
        let last = h.slice([0..b, l - 1..l, 0..self.config.hidden_size]);
        Ok(self.lm_head_2d(last.reshape([b, self.config.hidden_size])))
    }

    /// Per-token log-probs of the next token, for training and scoring:
    /// `logprobs[b, t] = log p(ids[b, t+1] | ids[b, ..=t])`, `[batch, seq-1]`, plus the entropy of
    /// the same next-token distribution when `entropy` asks for it.
    ///
    /// Differentiable under an autodiff backend. `mask` marks real tokens (right or left padding,
    /// or `None`); positions whose token or next token is padding are set to 0 (mask them out of
    /// the loss with the same lengths). The LM head is applied in row chunks and the log-softmax
    /// is not materialised as a second `[.., vocab]` tensor: `log p = x_y - m - ln Σ exp(x - m)`
    /// with `m` the (detached) row max, `H = ln Σ e - Σ e (x - m) / Σ e` with `e = exp(x - m)`.
    pub fn token_logprobs(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        entropy: EntropyMode,
    ) -> Result<TokenLogProbs<B>, ModelError> {
        self.token_logprobs_chunked(input_ids, mask, entropy, LOGPROB_CHUNK_ELEMS)
    }

    /// [`Self::token_logprobs`] with the LM head's chunk budget (logits per chunk) as a parameter.
    fn token_logprobs_chunked(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
        entropy: EntropyMode,
        chunk_elems: usize,
    ) -> Result<TokenLogProbs<B>, ModelError> {
        let [b, l] = input_ids.dims();
        if l < 2 {
            return Err(ModelError::InvalidInput(format!(
                "token_logprobs needs sequences of at least 2 tokens, got {l}"
            )));
        }
        let hidden = self.config.hidden_size;
        let h = self.hidden_states(input_ids.clone(), mask, None)?;
        let n = b * (l - 1);
        let h = h.slice([0..b, 0..l - 1, 0..hidden]).reshape([n, hidden]);
        let targets = input_ids.slice([0..b, 1..l]).reshape([n]);
        let chunk = chunk_rows(n, self.config.vocab_size, chunk_elems);
        let mut lps = Vec::new();
        let mut ents = Vec::new();
        let mut r0 = 0;
        while r0 < n {
            let r1 = (r0 + chunk).min(n);
            let logits_t = self.lm_head_t(h.clone().slice([r0..r1, 0..hidden]));
            let (lp, ent) = logprobs_from_logits_2d(
                logits_t,
                targets.clone().narrow(0, r0, r1 - r0),
                entropy,
                VocabAxis::Rows,
            );
            lps.push(lp);
            if let Some(e) = ent {
                ents.push(e);
            }
            r0 = r1;
        }
        let cat = |v: Vec<Tensor<B, 1>>| {
            if v.len() == 1 {
                v.into_iter().next().expect("one element")
            } else {
                Tensor::cat(v, 0)
            }
        };
        let mut logprobs = cat(lps).reshape([b, l - 1]);
        let mut entropy_t = if ents.is_empty() {
            None
        } else {
            Some(cat(ents).reshape([b, l - 1]))
        };
        if let Some(m) = mask {
            let invalid: Vec<bool> = (0..b)
                .flat_map(|row| (0..l - 1).map(move |t| (row, t)))
                .map(|(row, t)| !(m.is_valid(row, t) && m.is_valid(row, t + 1)))
                .collect();
            if invalid.iter().any(|&x| x) {
                let device = logprobs.device();
                let invalid = Tensor::<B, 2, burn::tensor::Bool>::from_data(
                    TensorData::new(invalid, [b, l - 1]),
                    &device,
                );
                logprobs = logprobs.mask_fill(invalid.clone(), 0.0);
                entropy_t = entropy_t.map(|e| e.mask_fill(invalid, 0.0));
            }
        }
        Ok(TokenLogProbs {
            logprobs,
            entropy: entropy_t,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};

    #[test]
    fn lm_head_chunks_are_few_and_even() {
        // 256 rows of Qwen3's vocabulary fit the 128 Mi budget: one chunk (was 220 + 36 rows).
        assert_eq!(chunk_rows(256, 151_936, LOGPROB_CHUNK_ELEMS), 256);
        // 1000 rows need ceil(1000 * 151936 / 2^27) = 2 chunks of 500 rows, not 883 + 117.
        assert_eq!(chunk_rows(1000, 151_936, LOGPROB_CHUNK_ELEMS), 500);
        // 10 rows of 7 logits in budgets of 20: ceil(70 / 20) = 4 chunks of ceil(10 / 4) = 3 rows.
        assert_eq!(chunk_rows(10, 7, 20), 3);
        // a budget below one row still makes progress, one row at a time
        assert_eq!(chunk_rows(5, 100, 10), 1);
    }

    #[test]
    fn chunked_log_probs_do_not_depend_on_the_chunking() {
        // Each row's log-softmax only reads its own logits, so any chunking gives the same
        // log-probs and entropies as one chunk (only the GEMM's row blocking differs).
        type AD = Autodiff<Flex>;
        let device = Default::default();
        let model = Qwen3Config::tiny(32).init_seeded::<AD>(3, &device).unwrap();
        let ids: Vec<i64> = (0..3 * 9).map(|i| (i * 5 % 32) as i64).collect();
        let ids = Tensor::<AD, 2, Int>::from_data(TensorData::new(ids, [3, 9]), &device);
        let mask = AttentionMask::right_padded(&[9, 6, 8], 9).unwrap();
        let run = |budget| {
            let out = model
                .token_logprobs_chunked(ids.clone(), Some(&mask), EntropyMode::Detached, budget)
                .unwrap();
            let lp: Vec<f32> = out.logprobs.into_data().to_vec().unwrap();
            let ent: Vec<f32> = out.entropy.unwrap().into_data().to_vec().unwrap();
            (lp, ent)
        };
        let (lp1, ent1) = run(LOGPROB_CHUNK_ELEMS); // 24 rows x 32 logits: one chunk
        for budget in [32 * 5, 32 * 7 + 3, 1] {
            let (lp, ent) = run(budget); // 5, 4 (of 7, 7, 7, 3 rows) and 24 chunks
            for (a, b) in lp1.iter().zip(&lp).chain(ent1.iter().zip(&ent)) {
                assert!((a - b).abs() <= 1e-5, "budget {budget}: {a} vs {b}");
            }
        }
    }

    /// `x Wᵀ` in f64 by the definition, for `x: [m, k]`, `W: [out, k]` (row-major).
    fn plain_product(x: &[f32], w: &[f32], m: usize, k: usize, out: usize) -> Vec<f64> {
        let mut y = vec![0.0f64; m * out];
        for i in 0..m {
            for j in 0..out {
                y[i * out + j] = (0..k)
                    .map(|t| f64::from(x[i * k + t]) * f64::from(w[j * k + t]))
                    .sum();
            }
        }
        y
    }

    fn check_matmul_hf<B: Backend>(m: usize, k: usize, out: usize, tracked: bool) {
        let device = Default::default();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let w: Vec<f32> = (0..out * k)
            .map(|i| ((i * 53 % 89) as f32 - 44.0) / 44.0)
            .collect();
        let xt = Tensor::<B, 2>::from_data(TensorData::new(x.clone(), [m, k]), &device);
        let mut wt = Tensor::<B, 2>::from_data(TensorData::new(w.clone(), [out, k]), &device);
        if tracked {
            wt = wt.require_grad();
        }
        let got: Vec<f32> = matmul_hf(xt, wt).into_data().to_vec().unwrap();
        assert_eq!(got.len(), m * out);
        for (g, r) in got.iter().zip(plain_product(&x, &w, m, k, out)) {
            assert!(
                (f64::from(*g) - r).abs() <= 1e-4 * (1.0 + r.abs()),
                "m {m}, out {out}, tracked {tracked}: {g} vs {r}"
            );
        }
    }

    #[test]
    fn both_gemm_orientations_compute_x_w_transposed() {
        // Each (rows, out, tracked) below takes the branch named beside it.
        let cases = [
            (8, 24, false, true),
            (100, 24, false, false),
            (40, 20_000, false, false),
            (16, 20_000, false, true),
            (100, 24, true, true),
            (600, 24, true, false),
            (100, 20_000, true, false),
        ];
        for (m, out, tracked, transposed) in cases {
            assert_eq!(
                transposed_product(m, out, tracked),
                transposed,
                "{m} {out} {tracked}"
            );
            if tracked {
                check_matmul_hf::<Autodiff<Flex>>(m, 3, out, true);
            } else {
                check_matmul_hf::<Flex>(m, 3, out, false);
            }
        }
    }

    #[test]
    fn masks_from_lengths() {
        let r = AttentionMask::right_padded(&[2, 3, 0], 3).unwrap();
        assert_eq!(
            r.as_slice(),
            &[true, true, false, true, true, true, false, false, false]
        );
        let l = AttentionMask::left_padded(&[2, 3, 0], 3).unwrap();
        assert_eq!(
            l.as_slice(),
            &[false, true, true, true, true, true, false, false, false]
        );
        assert_eq!(l.lengths(), vec![2, 3, 0]);
        assert!(!l.is_valid(0, 0) && l.is_valid(0, 1) && !l.is_valid(5, 0));
        assert!(AttentionMask::right_padded(&[4], 3).is_err());
        assert!(AttentionMask::new(2, 3, vec![true; 5]).is_err());
        assert!(AttentionMask::from_rows(&[vec![true], vec![true, false]]).is_err());
        let m = AttentionMask::from_rows(&[[true, false], [false, true]]).unwrap();
        assert_eq!((m.batch(), m.seq_len()), (2, 2));
    }

    #[test]
    fn inv_freq_matches_the_rope_formula() {
        let f = inv_freq(10_000.0, 8);
        let want: Vec<f32> = (0..4)
            .map(|i| 10_000f64.powf(-(2.0 * i as f64) / 8.0) as f32)
            .collect();
        for (a, b) in f.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-6 * b.abs());
        }
    }
}
