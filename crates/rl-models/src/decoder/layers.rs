//! The layers of a decoder block: bias-free linear (HF layout), RMSNorm (`x̂ · w`, or Gemma's
//! `x̂ · (1 + w)`), grouped-query attention (fused, or over the KV cache's parts; global or
//! sliding-window), the gated MLP (SwiGLU or GeGLU) and the block itself (pre-norm, or Gemma's
//! four norms). Every linear product goes through `matmul.rs`'s GEMM orientation rule.

use burn::module::{Module, Param};
use burn::tensor::activation::{silu, softmax};
use burn::tensor::backend::Backend;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{DType, FloatDType, Tensor, TensorData};

use super::family::Activation;
use super::kv_cache::{CACHE_TAIL, CacheWrite, LayerCache};
use super::lora::LoraAdapter;
use super::matmul::matmul_hf;
use super::rope::Rope;

/// A linear layer `y = x W^T (+ b)` with the weight in HF layout `[out, in]` (burn's `Linear`
/// stores `[in, out]`); the bias exists where the family has one (Qwen2's q/k/v, Llama's
/// `attention_bias`).
#[derive(Module, Debug)]
pub struct Linear<B: Backend> {
    /// `[out, in]`, as in the checkpoint.
    pub weight: Param<Tensor<B, 2>>,
    /// `[out]`, or `None` for a bias-free projection.
    pub bias: Option<Param<Tensor<B, 1>>>,
    /// A LoRA adapter (`CausalLm::with_lora`, `CausalLm::load_adapter`); `None` for a plain layer.
    pub lora: Option<LoraAdapter<B>>,
}

impl<B: Backend> Linear<B> {
    /// A plain layer from row-major `[out, in]` weight values and an optional `[out]` bias.
    pub(crate) fn from_values(
        weight: Vec<f32>,
        shape: [usize; 2],
        bias: Option<Vec<f32>>,
        device: &B::Device,
    ) -> Self {
        let out = shape[0];
        Self {
            weight: Param::from_tensor(Tensor::from_data(TensorData::new(weight, shape), device)),
            bias: bias
                .map(|b| Param::from_tensor(Tensor::from_data(TensorData::new(b, [out]), device))),
            lora: None,
        }
    }

    /// `x W^T` for `x: [m, in]`, plus the adapter's `s · (x Aᵀ) Bᵀ` when there is one, plus the
    /// bias when there is one (added last, as PyTorch's `F.linear` + PEFT's `lora.Linear` do).
    /// The weight is used in `x`'s dtype (cast from the f32 master under bf16 compute).
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let dtype = x.dtype();
        let w = self.weight.val().cast(dtype);
        let y = match &self.bias {
            // PyTorch's addmm adds the bias before its one rounding to the output dtype: under
            // bf16 compute the product is taken in f32 (exact for bf16 inputs, f32
            // accumulation), the bias added, and the sum rounded once. A no-op cast in f32.
            Some(b) if dtype != DType::F32 => {
                let f32 = FloatDType::F32;
                (matmul_hf(x.clone().cast(f32), w.cast(f32))
                    + b.val().cast(dtype).cast(f32).unsqueeze::<2>())
                .cast(dtype)
            }
            Some(b) => matmul_hf(x.clone(), w) + b.val().unsqueeze::<2>(),
            None => matmul_hf(x.clone(), w),
        };
        match &self.lora {
            Some(l) => y + l.delta(x),
            None => y,
        }
    }
}

/// RMSNorm as HF `Qwen3RMSNorm`: `y = weight * (x * rsqrt(mean(x²) + eps))`, statistics in f32;
/// with `unit_offset`, as HF `Gemma3RMSNorm`: `y = (x * rsqrt(mean(x²) + eps)) * (1 + weight)`.
#[derive(Module, Debug)]
pub struct RmsNorm<B: Backend> {
    /// Scale, initialised to 1 (HF name `weight`); with `unit_offset` the offset of the scale
    /// from 1, initialised to 0.
    pub weight: Param<Tensor<B, 1>>,
    /// Epsilon (`rms_norm_eps`).
    pub eps: f64,
    /// The scale is `1 + weight` (Gemma).
    pub unit_offset: bool,
}

impl<B: Backend> RmsNorm<B> {
    /// Normalises over the last dimension. A bf16 `x` is normalised in f32 and cast back before
    /// the weight (in bf16) multiplies it, as HF's Llama and Qwen do; with `unit_offset` the
    /// product with `1 + weight` is taken in f32 and rounded once, as HF's Gemma does
    /// (`(x * w).to(dtype)`).
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        let dtype = x.dtype();
        let x = x.cast(FloatDType::F32);
        let inv = (x.clone().square().mean_dim(D - 1) + self.eps)
            .sqrt()
            .recip();
        if self.unit_offset {
            let scale = self.weight.val().cast(FloatDType::F32) + 1.0;
            return (x * inv * scale.unsqueeze::<D>()).cast(dtype);
        }
        (x * inv).cast(dtype) * self.weight.val().cast(dtype).unsqueeze::<D>()
    }
}

/// Self-attention with grouped-query heads, per-head q/k RMSNorm (Qwen3) and rotate-half RoPE.
#[derive(Module, Debug)]
pub struct Attention<B: Backend> {
    /// `[nh*hd, H]`.
    pub q_proj: Linear<B>,
    /// `[nkv*hd, H]`.
    pub k_proj: Linear<B>,
    /// `[nkv*hd, H]`.
    pub v_proj: Linear<B>,
    /// `[H, nh*hd]`.
    pub o_proj: Linear<B>,
    /// RMSNorm over `hd`, one weight shared by all query heads (Qwen3; `None` in the other
    /// families).
    pub q_norm: Option<RmsNorm<B>>,
    /// RMSNorm over `hd`, one weight shared by all key heads (Qwen3).
    pub k_norm: Option<RmsNorm<B>>,
    /// `nh`.
    pub num_heads: usize,
    /// `nkv`.
    pub num_kv_heads: usize,
    /// `hd`.
    pub head_dim: usize,
    /// The scores' scale: `hd^(-1/2)`, or `query_pre_attn_scalar^(-1/2)` (Gemma 3).
    pub scale: f64,
    /// A local (sliding-window) layer: it attends through the step's local bias and RoPE tables.
    pub local: bool,
}

/// Gated MLP: `down(act(gate(x)) * up(x))`, SwiGLU (SiLU) or GeGLU (tanh-GELU, Gemma).
#[derive(Module, Debug)]
pub struct Mlp<B: Backend> {
    /// `[I, H]`.
    pub gate_proj: Linear<B>,
    /// `[I, H]`.
    pub up_proj: Linear<B>,
    /// `[H, I]`.
    pub down_proj: Linear<B>,
    /// The gate's activation.
    #[module(skip)]
    pub activation: Activation,
}

/// One decoder block: pre-norm (Llama, Qwen), or with Gemma's norms after attention and around
/// the MLP too.
#[derive(Module, Debug)]
pub struct DecoderLayer<B: Backend> {
    /// Norm before attention.
    pub input_layernorm: RmsNorm<B>,
    /// Attention.
    pub self_attn: Attention<B>,
    /// Llama and Qwen: the norm before the MLP. Gemma: the norm of the attention's output.
    pub post_attention_layernorm: RmsNorm<B>,
    /// Gemma: the norm before the MLP (`None` in the pre-norm families).
    pub pre_feedforward_layernorm: Option<RmsNorm<B>>,
    /// Gemma: the norm of the MLP's output (`None` in the pre-norm families).
    pub post_feedforward_layernorm: Option<RmsNorm<B>>,
    /// MLP.
    pub mlp: Mlp<B>,
}

/// `[b * L, heads * hd]` projections to head-major `[b, heads, L, hd]`, materialised.
///
/// The head split is a transpose. Done once here as a copy (a reshape that no view can express),
/// every later operation — the q/k norms, RoPE, the attention products — and its backward runs on
/// contiguous tensors. Left as a strided view, the norms' and RoPE's backward passes received
/// strided gradients, which burn-flex's element-wise kernels walk one index at a time (about a
/// third of the embedded update's main-thread time, docs/performance.md).
fn split_heads<B: Backend>(
    x: Tensor<B, 2>,
    batch: usize,
    len: usize,
    heads: usize,
    hd: usize,
) -> Tensor<B, 4> {
    x.reshape([batch, len, heads, hd])
        .swap_dims(1, 2)
        .reshape([batch, heads, len * hd])
        .reshape([batch, heads, len, hd])
}

/// What one forward call attends to, prepared on the host.
pub(super) struct Step<B: Backend> {
    /// The global layers' RoPE tables and bias.
    pub(super) global: Tables<B>,
    /// The local (sliding-window) layers' RoPE tables and bias, when the model has local
    /// layers.
    pub(super) local: Option<Tables<B>>,
    /// With a cache: where the new keys/values go.
    pub(super) write: Option<CacheWrite>,
}

/// The RoPE tables and the attention bias of one kind of layer.
pub(super) struct Tables<B: Backend> {
    pub(super) rope: Rope<B>,
    /// `[1 or b, 1, n_rep * L, K]` additive bias, `K = start + L`.
    pub(super) bias: Tensor<B, 4>,
}

impl<B: Backend> Step<B> {
    /// The tables of a local (sliding-window) or a global layer.
    fn tables(&self, local: bool) -> &Tables<B> {
        match (&self.local, local) {
            (Some(t), true) => t,
            _ => &self.global,
        }
    }
}

/// `softmax(scores · scale + bias)` over the last axis, as HF's eager attention rounds it: the
/// scaled scores in the scores' dtype (the product computed in f32 and rounded once, as
/// PyTorch's scalar multiply does), the softmax in f32, the probabilities back in the scores'
/// dtype (`softmax(..., dtype=torch.float32).to(query.dtype)`). All casts are no-ops in f32.
fn attention_probs<B: Backend>(
    scores: Tensor<B, 4>,
    bias: Tensor<B, 4>,
    scale: f64,
) -> Tensor<B, 4> {
    let dtype = scores.dtype();
    let f32 = FloatDType::F32;
    let scaled = scores.cast(f32).mul_scalar(scale).cast(dtype).cast(f32);
    softmax(scaled + bias, 3).cast(dtype)
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
    let probs = attention_probs(scores, bias, scale);
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

impl<B: Backend> Attention<B> {
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
        let tables = step.tables(self.local);
        let q = split_heads(self.q_proj.forward(x.clone()), batch, len, nh, hd);
        let k = split_heads(self.k_proj.forward(x.clone()), batch, len, nkv, hd);
        let v = split_heads(self.v_proj.forward(x), batch, len, nkv, hd);
        let norm = |n: &Option<RmsNorm<B>>, x: Tensor<B, 4>| match n {
            Some(n) => n.forward(x),
            None => x,
        };
        let q = tables.rope.q.apply(norm(&self.q_norm, q)); // [b, nh, L, hd]
        let k = tables.rope.k.apply(norm(&self.k_norm, k)); // [b, nkv, L, hd]

        // Grouped-query attention without repeating K/V: query head j = g * n_rep + r uses KV
        // head g, so [b, nh, L, hd] viewed as [b, nkv, n_rep * L, hd] lines each group's queries
        // up against its own KV head (the bias is repeated n_rep times along the query axis).
        let q = q.reshape([batch, nkv, n_rep * len, hd]);
        let scale = self.scale;
        let fused = |q: Tensor<B, 4>, k, v| {
            if q.dtype() != DType::F32 {
                // burn's attention (and its autodiff fallback) would softmax in bf16
                return attend_parts(q, vec![(k, v)], tables.bias.clone(), scale);
            }
            let options = AttentionModuleOptions {
                scale: Some(scale),
                softcap: None,
                is_causal: false,
            };
            attention(q, k, v, None, Some(tables.bias.clone()), options)
        };
        let out = match (cache, step.write) {
            (Some(layer), Some(write)) => {
                let mut parts = Vec::with_capacity(2);
                match write {
                    CacheWrite::Tail(at) => {
                        let (tk, tv) = layer.tail.take().unwrap_or_else(|| {
                            let shape = [batch, nkv, CACHE_TAIL, hd];
                            let device = k.device();
                            (
                                Tensor::zeros(shape, (&device, k.dtype())),
                                Tensor::zeros(shape, (&device, k.dtype())),
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
                attend_parts(q, parts, tables.bias.clone(), scale)
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

impl<B: Backend> Mlp<B> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        // The activation in f32, rounded once, as PyTorch's fused kernels do for bf16 (burn's
        // silu is x · sigmoid(x), two roundings in bf16); a no-op cast in f32.
        let gate = self.gate_proj.forward(x.clone());
        let dtype = gate.dtype();
        let gate = gate.cast(FloatDType::F32);
        let gate = match self.activation {
            Activation::Silu => silu(gate),
            Activation::GeluTanh => gelu_tanh(gate),
        };
        let up = self.up_proj.forward(x);
        self.down_proj.forward(gate.cast(dtype) * up)
    }
}

/// GELU's tanh approximation, PyTorch's `gelu(x, approximate="tanh")`:
/// `0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))`.
fn gelu_tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    let k = (2.0 / std::f64::consts::PI).sqrt();
    let cube = x.clone() * x.clone() * x.clone();
    let inner = (x.clone() + cube.mul_scalar(0.044_715)).mul_scalar(k);
    x.mul_scalar(0.5) * (inner.tanh() + 1.0)
}

impl<B: Backend> DecoderLayer<B> {
    pub(super) fn forward(
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
        if let (Some(pre), Some(post)) = (
            &self.pre_feedforward_layernorm,
            &self.post_feedforward_layernorm,
        ) {
            // Gemma: h + norm(attn(norm(h))), then the same around the MLP.
            let h = h + self.post_attention_layernorm.forward(a);
            let m = self.mlp.forward(pre.forward(h.clone()));
            return h + post.forward(m);
        }
        let h = h + a;
        let m = self
            .mlp
            .forward(self.post_attention_layernorm.forward(h.clone()));
        h + m
    }
}
