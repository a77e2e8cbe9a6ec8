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

/// Right-pads `ids` with 0 into an `[n, L]` tensor plus the attention mask, with L the longest
/// sequence or `min_len`, whichever is larger.
pub fn right_pad<B: Backend>(
    ids: &[Vec<u32>],
    min_len: usize,
    device: &B::Device,
) -> Result<(Tensor<B, 2, Int>, AttentionMask), TrainerError> {
    let max_len = ids.iter().map(Vec::len).max().unwrap_or(0).max(min_len);
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
        // Every row's window must fit: a row with a long prompt and a short response still gets
        // `width` columns (past its end, masked), as in `token_logprobs_from_host`.
        let need = ids
            .iter()
            .zip(starts)
            .map(|(q, &s)| q.len().max(s + width + 1))
            .max()
            .unwrap_or(0);
        let (t, mask) = right_pad::<B>(ids, need, &self.device())?;
        Ok(self.token_logprobs_from(t, Some(&mask), starts, width, entropy)?)
    }

    fn logprobs_detached(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
    ) -> Result<Vec<Vec<f32>>, TrainerError> {
        let mut rows = self.valid().token_logprobs_from_host(ids, starts)?;
        for r in &mut rows {
            r.truncate(width);
        }
        Ok(rows)
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
