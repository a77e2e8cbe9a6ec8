//! Rotary position embeddings in HF's rotate-half layout: [`inv_freq`] and the per-call tables.

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};

use super::ModelConfig;
use super::config::SlidingWindow;
use super::dtype::ComputeDtype;

/// Inverse RoPE frequencies as HF computes them in f32: `1 / theta^(2i/hd)`.
fn inv_freq(theta: f64, head_dim: usize) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| {
            let exponent = (2 * i) as f32 / head_dim as f32;
            1.0f32 / (theta as f32).powf(exponent)
        })
        .collect()
}

/// The frequencies of a config: [`inv_freq`], rescaled by its `llama3` RoPE scaling if any,
/// in the order and precision of HF's `_compute_llama3_parameters` (f32 tensors; Python scalars
/// rounded to f32 where they meet one).
pub(super) fn frequencies(config: &ModelConfig) -> Vec<f32> {
    let base = inv_freq(config.rope_theta, config.head_dim);
    let Some(s) = &config.rope_scaling else {
        return base;
    };
    let factor = s.factor as f32;
    let low = s.low_freq_factor as f32;
    let old_len = s.original_max_position_embeddings as f64;
    let low_wavelen = (old_len / s.low_freq_factor) as f32;
    let high_wavelen = (old_len / s.high_freq_factor) as f32;
    let band = (s.high_freq_factor - s.low_freq_factor) as f32;
    let two_pi = (2.0 * std::f64::consts::PI) as f32;
    base.into_iter()
        .map(|f| {
            let wavelen = two_pi / f;
            let scaled = if wavelen > low_wavelen { f / factor } else { f };
            let medium = wavelen >= high_wavelen && wavelen <= low_wavelen;
            if medium {
                let smooth = (old_len as f32 / wavelen - low) / band;
                (1.0 - smooth) * scaled / factor + smooth * scaled
            } else {
                scaled
            }
        })
        .collect()
}

/// The frequencies of the local (sliding-window) layers: [`inv_freq`] of their own base, without
/// scaling (HF's Gemma 3: the `sliding_attention` RoPE parameters, of type `default`).
pub(super) fn local_frequencies(config: &ModelConfig, window: &SlidingWindow) -> Vec<f32> {
    inv_freq(window.rope_theta, config.head_dim)
}

impl ModelConfig {
    /// The RoPE inverse frequencies `ω_i` the model computes with (`head_dim / 2` of them):
    /// `θ^(−2i/hd)` in f32, rescaled by the `llama3` scaling when the config has one.
    pub fn rope_frequencies(&self) -> Vec<f32> {
        frequencies(self)
    }
}

/// cos/sin tables for the given positions, materialised at the full head-major `[b, heads, L, hd]`
/// shape of the query and of the key heads: burn-flex's element-wise kernels are SIMD only for
/// same-shape operands or row/scalar broadcasts, and a `[b, 1, L, hd]` table broadcast over the
/// heads took a scalar strided path (about 5 % of a Qwen3-0.6B forward pass on the CPU).
pub(super) struct Rope<B: Backend> {
    pub(super) q: RopeTables<B>,
    pub(super) k: RopeTables<B>,
}

/// `cos` and the sign-folded `sin` of one head count (see [`RopeTables::apply`]).
pub(super) struct RopeTables<B: Backend> {
    cos: Tensor<B, 4>,
    sin: Tensor<B, 4>,
}

impl<B: Backend> Rope<B> {
    /// The tables of the inverse frequencies `freqs` (`head_dim / 2` of them) at `positions`
    /// (`batch · len`, row-major).
    pub(super) fn new(
        positions: &[f32],
        batch: usize,
        len: usize,
        freqs: Vec<f32>,
        config: &ModelConfig,
        dtype: ComputeDtype,
        device: &B::Device,
    ) -> Self {
        let half = config.head_dim / 2;
        let pos = Tensor::<B, 2>::from_data(
            TensorData::new(positions.to_vec(), [batch * len, 1]),
            device,
        );
        let inv = Tensor::<B, 2>::from_data(TensorData::new(freqs, [1, half]), device);
        let freqs = pos.mul(inv); // [b*L, hd/2], one f32 product each, as HF
        // computed in f32, then in the activations' dtype (HF: `cos.to(dtype=x.dtype)`)
        let cos = freqs.clone().cos().cast(dtype.float());
        let sin = freqs.sin().cast(dtype.float());
        let shape = [batch, 1, len, config.head_dim];
        // rotate_half(x) * sin = [x2, x1] * [-sin, sin]: the sign goes into the table.
        let cos = Tensor::cat(vec![cos.clone(), cos], 1).reshape(shape);
        let sin = Tensor::cat(vec![sin.clone().neg(), sin], 1).reshape(shape);
        let tables = |heads: usize| RopeTables {
            cos: cos.clone().repeat_dim(1, heads),
            sin: sin.clone().repeat_dim(1, heads),
        };
        Self {
            q: tables(config.num_attention_heads),
            k: tables(config.num_key_value_heads),
        }
    }
}

impl<B: Backend> RopeTables<B> {
    /// HF's `x * cos + rotate_half(x) * sin` on `[b, heads, L, hd]` (these tables' head count),
    /// where `rotate_half(x) = [-x2, x1]` for the halves `x1`, `x2` of the last dimension.
    pub(super) fn apply(&self, x: Tensor<B, 4>) -> Tensor<B, 4> {
        let [b, h, l, hd] = x.dims();
        let half = hd / 2;
        let x1 = x.clone().slice([0..b, 0..h, 0..l, 0..half]);
        let x2 = x.clone().slice([0..b, 0..h, 0..l, half..hd]);
        let swapped = Tensor::cat(vec![x2, x1], 3);
        x * self.cos.clone() + swapped * self.sin.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three bands of llama3 scaling, by the formula written out in f64 (HF's docstring
    /// of `_compute_llama3_parameters`): long wavelengths divided by the factor, short ones
    /// kept, the ones between interpolated.
    #[test]
    fn llama3_scaling_follows_its_three_bands() {
        let mut config = ModelConfig::tiny(8);
        config.family = crate::Family::Llama;
        config.rope_theta = 10_000.0;
        config.head_dim = 32;
        config.rope_scaling = Some(crate::decoder::RopeScaling {
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 64,
        });
        let got = frequencies(&config);
        let (mut kept, mut divided, mut smoothed) = (0, 0, 0);
        for (i, g) in got.iter().enumerate() {
            let f = 10_000f64.powf(-(2.0 * i as f64) / 32.0);
            let wavelen = 2.0 * std::f64::consts::PI / f;
            let want = if wavelen < 64.0 / 4.0 {
                kept += 1;
                f
            } else if wavelen > 64.0 {
                divided += 1;
                f / 8.0
            } else {
                smoothed += 1;
                let s = (64.0 / wavelen - 1.0) / 3.0;
                (1.0 - s) * f / 8.0 + s * f
            };
            assert!(
                (f64::from(*g) - want).abs() <= 1e-6 * want,
                "{i}: {g} vs {want}"
            );
        }
        assert!(
            kept > 0 && divided > 0 && smoothed > 0,
            "{kept} {divided} {smoothed}"
        );
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
