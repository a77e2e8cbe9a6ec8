//! The policy abstraction the trainer drives, and its implementation for Qwen3.
//!
//! Generation sits behind [`Policy::generate`]: the built-in implementation samples with the
//! model's own KV-cache generator; a policy backed by a vLLM/SGLang server would implement the
//! same call over the OpenAI-compatible API (returning sampler log-probs and finish reasons) and
//! keep [`Policy::logprobs`] local.

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

    /// `logprobs[b, t] = log p(ids[b][t+1] | ids[b][..=t])` for right-padded sequences (`[batch,
    /// max_len − 1]`), differentiable, plus the next-token entropy when asked. Positions past a
    /// sequence's length hold unspecified finite values: mask them.
    fn logprobs(
        &self,
        ids: &[Vec<u32>],
        entropy: EntropyMode,
    ) -> Result<TokenLogProbs<B>, TrainerError>;

    /// The same log-probs without gradient, on the host, one vector of length `len − 1` per
    /// sequence.
    fn logprobs_detached(&self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, TrainerError>;

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

fn split_rows(t: Tensor<impl Backend, 2>, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, TrainerError> {
    let [n, w] = t.dims();
    let flat: Vec<f32> =
        t.into_data()
            .convert::<f32>()
            .into_vec()
            .map_err(|e| TrainerError::Diverged {
                step: 0,
                message: format!("unreadable log-probs: {e:?}"),
            })?;
    Ok((0..n)
        .map(|i| flat[i * w..i * w + ids[i].len().saturating_sub(1)].to_vec())
        .collect())
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
        entropy: EntropyMode,
    ) -> Result<TokenLogProbs<B>, TrainerError> {
        let (t, mask) = right_pad::<B>(ids, &self.device())?;
        Ok(self.token_logprobs(t, Some(&mask), entropy)?)
    }

    fn logprobs_detached(&self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, TrainerError> {
        let model = self.valid();
        let (t, mask) = right_pad::<B::InnerBackend>(ids, &model.device())?;
        let lp = model.token_logprobs(t, Some(&mask), EntropyMode::None)?;
        split_rows(lp.logprobs, ids)
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
