//! The policy abstraction the trainer drives, and its implementation for Qwen3.
//!
//! Generation sits behind [`Policy::generate`]: the built-in implementation samples with the
//! model's own KV-cache generator. Log-probs are computed only at the positions the loss reads
//! ([`Policy::logprobs`] with per-sequence start positions).

use std::path::Path;

use burn::module::AutodiffModule;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rl_models::{AttentionMask, EntropyMode, Generation, GenerationConfig, Qwen3, TokenLogProbs};

use crate::TrainerError;

/// A trainable language-model policy.
pub trait Policy<B: AutodiffBackend>: AutodiffModule<B> + Clone + Send + 'static {
    /// Samples one continuation per prompt (token ids) without building an autodiff graph.
    /// Each [`Generation`] carries the sampler's own log-probs and its finish reason.
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        config: &GenerationConfig,
    ) -> Result<Vec<Generation>, TrainerError>;

    /// Log-probs of the tokens after `starts[b]`: `logprobs[b, j] = log p(ids[b][s+j+1] |
    /// ids[b][..=s+j])` with s = `starts[b]`, for right-padded sequences, shape `[batch,
    /// width]`, differentiable, plus the next-token entropy at the same positions when asked.
    /// The trainer passes s = prompt length − 1, so column j is response token j; only those
    /// positions go through the LM head. Columns past a sequence's end hold unspecified finite
    /// values: mask them.
    fn logprobs(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
    ) -> Result<TokenLogProbs<B>, TrainerError>;

    /// The same log-probs without gradient, on the host: for sequence b, the
    /// min(width, len − 1 − starts[b]) values that exist.
    fn logprobs_detached(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
    ) -> Result<Vec<Vec<f32>>, TrainerError>;

    /// Writes the weights (for Qwen3: HF `config.json` + `model.safetensors`).
    fn save(&self, dir: &Path) -> Result<(), TrainerError>;

    /// Reads weights written by [`Policy::save`].
    fn load(dir: &Path, device: &B::Device) -> Result<Self, TrainerError>;

    /// Rows of the output distribution.
    fn vocab_size(&self) -> usize;
}

/// Right-pads `ids` with 0 into an `[n, max_len]` tensor plus the attention mask.
pub fn right_pad<B: Backend>(
    ids: &[Vec<u32>],
    device: &B::Device,
) -> Result<(Tensor<B, 2, Int>, AttentionMask), TrainerError> {
    let max_len = ids.iter().map(Vec::len).max().unwrap_or(0);
    let mut flat = Vec::with_capacity(ids.len() * max_len);
    for s in ids {
        flat.extend(s.iter().map(|&t| t as i64));
        flat.extend(std::iter::repeat_n(0i64, max_len - s.len()));
    }
    let lengths: Vec<usize> = ids.iter().map(Vec::len).collect();
    let mask = AttentionMask::right_padded(&lengths, max_len)?;
    let t = Tensor::from_data(TensorData::new(flat, [ids.len(), max_len]), device);
    Ok((t, mask))
}

/// Host rows of a `[n, width]` log-prob tensor: row b keeps its first
/// min(width, len_b − 1 − starts[b]) values.
fn split_rows(
    t: Tensor<impl Backend, 2>,
    ids: &[Vec<u32>],
    starts: &[usize],
) -> Result<Vec<Vec<f32>>, TrainerError> {
    let [n, w] = t.dims();
    let flat: Vec<f32> =
        t.into_data()
            .convert::<f32>()
            .into_vec()
            .map_err(|e| TrainerError::Generator {
                message: format!("unreadable log-probs: {e:?}"),
            })?;
    Ok((0..n)
        .map(|i| {
            let valid = ids[i].len().saturating_sub(1 + starts[i]).min(w);
            flat[i * w..i * w + valid].to_vec()
        })
        .collect())
}

// TEMPORARY until rl-models has the response-only head.
fn shim_gather<Bk: Backend>(
    lp: TokenLogProbs<Bk>,
    starts: &[usize],
    width: usize,
) -> TokenLogProbs<Bk> {
    let [n, l] = lp.logprobs.dims();
    let dev = lp.logprobs.device();
    let idx: Vec<i64> = (0..n)
        .flat_map(|b| (0..width).map(move |j| (starts[b] + j).min(l - 1) as i64))
        .collect();
    let idx = Tensor::<Bk, 2, Int>::from_data(TensorData::new(idx, [n, width]), &dev);
    TokenLogProbs {
        logprobs: lp.logprobs.gather(1, idx.clone()),
        entropy: lp.entropy.map(|e| e.gather(1, idx)),
    }
}

impl<B: AutodiffBackend> Policy<B> for Qwen3<B> {
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        config: &GenerationConfig,
    ) -> Result<Vec<Generation>, TrainerError> {
        Ok(rl_models::generate(&self.valid(), prompts, config)?)
    }

    fn logprobs(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
    ) -> Result<TokenLogProbs<B>, TrainerError> {
        let (t, mask) = right_pad::<B>(ids, &self.device())?;
        let lp = self.token_logprobs(t, Some(&mask), entropy)?;
        Ok(shim_gather(lp, starts, width))
    }

    fn logprobs_detached(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
    ) -> Result<Vec<Vec<f32>>, TrainerError> {
        let model = self.valid();
        let (t, mask) = right_pad::<B::InnerBackend>(ids, &model.device())?;
        let lp = model.token_logprobs(t, Some(&mask), EntropyMode::None)?;
        let lp = shim_gather(lp, starts, width);
        split_rows(lp.logprobs, ids, starts)
    }

    fn save(&self, dir: &Path) -> Result<(), TrainerError> {
        Ok(Qwen3::save(self, dir)?)
    }

    fn load(dir: &Path, device: &B::Device) -> Result<Self, TrainerError> {
        Ok(Qwen3::load(dir, device)?)
    }

    fn vocab_size(&self) -> usize {
        self.config().vocab_size
    }
}
