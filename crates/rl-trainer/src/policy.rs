//! The policy abstraction the trainer drives, and its implementation for Qwen3.
//!
//! A policy computes log-probs (only at the positions the loss reads: [`Policy::logprobs`] with
//! per-sequence start positions), saves and loads itself, and hands a copy of its weights to
//! the in-process rollout engine ([`Policy::inference`]); generation itself belongs to the
//! rollout engine (`crate::engine`).

use std::path::Path;

use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use rl_models::{
    CausalLm, ComputeDtype, EntropyMode, LoraConfig, MemoryPlan, ScoreKind, ScoreModel,
    TokenLogProbs, WindowPass,
};

/// The folder of a checkpoint's `model/` that holds a LoRA policy's adapters (PEFT's files) and,
/// in `base/`, its frozen base unmerged ([`Policy::save_checkpoint`]).
pub const LORA_DIR: &str = "lora";

use crate::TrainerError;
use crate::engine::LocalModel;

/// A trainable language-model policy.
pub trait Policy<B: AutodiffBackend>: AutodiffModule<B> + Clone + Send + 'static {
    /// The model the in-process engine ([`crate::LocalEngine`]) samples with.
    type Inference: LocalModel;

    /// A copy of the current weights for inference (no autodiff graph).
    fn inference(&self) -> Self::Inference;

    /// Log-probs of the tokens after `starts[b]`: `logprobs[b, j] = log p(ids[b][s+j+1] |
    /// ids[b][..=s+j])` with s = `starts[b]`, for right-padded sequences, shape `[batch,
    /// width]`, differentiable, plus the next-token entropy at the same positions when asked.
    /// The trainer passes s = prompt length − 1, so column j is response token j; only those
    /// positions go through the LM head. Columns past a sequence's end hold unspecified finite
    /// values: mask them. Log-probs (and entropies) are of softmax(logits / `temperature`), the
    /// distribution the rollouts were sampled from.
    fn logprobs(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
    ) -> Result<TokenLogProbs<B>, TrainerError>;

    /// [`Policy::logprobs`] for an update under a memory plan (chunked head backward, layer
    /// checkpointing): back-propagate a loss of [`WindowPass::out`] with
    /// [`WindowPass::backward`]. The default supports only the plain plan.
    fn train_logprobs(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
        plan: MemoryPlan,
    ) -> Result<WindowPass<B>, TrainerError> {
        if !plan.is_plain() {
            return Err(TrainerError::Config {
                field: "model.logprob_chunk / model.checkpointing".into(),
                message: format!(
                    "this policy supports only the plain pass (0 and \"none\"), not {} and {:?}",
                    plan.logprob_chunk, plan.checkpointing
                ),
            });
        }
        Ok(WindowPass::from(self.logprobs(
            ids,
            starts,
            width,
            entropy,
            temperature,
        )?))
    }

    /// The same log-probs without gradient, on the host: for sequence b, the
    /// min(width, len − 1 − `starts[b]`) values that exist.
    fn logprobs_detached(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        temperature: f32,
    ) -> Result<Vec<Vec<f32>>, TrainerError>;

    /// The raw next-token logits at the same window positions, `[batch * width, vocab]` (row
    /// `b * width + j` is column j of row b), differentiable: for a full-vocabulary loss. By
    /// default an error: the policy exposes log-probs only.
    fn window_logits(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
    ) -> Result<burn::Tensor<B, 2>, TrainerError> {
        let _ = (ids, starts, width);
        Err(TrainerError::Config {
            field: "distill.form".into(),
            message: "\"full\" needs a policy that gives its logits; this one gives log-probs only"
                .into(),
        })
    }

    /// Writes the weights as the policy computes with them, for engines and users (for Qwen3:
    /// HF `config.json` + `model.safetensors`, LoRA adapters merged).
    fn save(&self, dir: &Path) -> Result<(), TrainerError>;

    /// Writes what [`Policy::load`] needs to continue training exactly (a checkpoint's
    /// `model/`); by default [`Policy::save`]. Qwen3 with LoRA adds `lora/`: the adapters in
    /// PEFT's format and the frozen base unmerged in `lora/base/`.
    fn save_checkpoint(&self, dir: &Path) -> Result<(), TrainerError> {
        self.save(dir)
    }

    /// Reads weights written by [`Policy::save`] or [`Policy::save_checkpoint`].
    fn load(dir: &Path, device: &B::Device) -> Result<Self, TrainerError>;

    /// This policy frozen, with fresh LoRA adapters that are all an update trains
    /// (`[model.lora]`); by default an error: the policy has no LoRA support.
    fn with_lora(self, config: &LoraConfig, seed: u64) -> Result<Self, TrainerError> {
        let _ = (config, seed);
        Err(TrainerError::Config {
            field: "model.lora".into(),
            message: "this policy does not support LoRA adapters".into(),
        })
    }

    /// This policy computing in `dtype` (`model.dtype`); by default only f32 is supported.
    fn with_compute_dtype(self, dtype: ComputeDtype) -> Result<Self, TrainerError> {
        match dtype {
            ComputeDtype::F32 => Ok(self),
            d => Err(TrainerError::Config {
                field: "model.dtype".into(),
                message: format!("this policy computes in f32 only, not {d}"),
            }),
        }
    }

    /// Rows of the output distribution.
    fn vocab_size(&self) -> usize;

    /// A value model on this policy's decoder with a new one-output head at every position,
    /// seeded: PPO's critic when `critic.model` names none. The default refuses.
    fn critic(&self, seed: u64) -> Result<ScoreModel<B>, TrainerError> {
        let _ = seed;
        Err(TrainerError::Config {
            field: "critic.model".into(),
            message: "this policy type cannot start a critic from its own weights: set \
                      critic.model (an HF *ForTokenClassification folder with one label)"
                .into(),
        })
    }
}

impl<B: AutodiffBackend> Policy<B> for CausalLm<B> {
    type Inference = CausalLm<B::InnerBackend>;

    /// With bf16 compute the copy holds bf16 weights, cast once per weight sync.
    fn inference(&self) -> Self::Inference {
        self.valid().with_weights_in_compute_dtype()
    }

    fn logprobs(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
    ) -> Result<TokenLogProbs<B>, TrainerError> {
        // The same padding as `token_logprobs_from_host`, so that π_θ and π_old see one batch.
        let (t, mask) = self.window_batch(ids, starts, width)?;
        Ok(self.token_logprobs_from_tempered(
            t,
            Some(&mask),
            starts,
            width,
            entropy,
            temperature,
        )?)
    }

    fn train_logprobs(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        entropy: EntropyMode,
        temperature: f32,
        plan: MemoryPlan,
    ) -> Result<WindowPass<B>, TrainerError> {
        Ok(self.train_window(ids, starts, width, entropy, temperature, plan)?)
    }

    fn logprobs_detached(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
        temperature: f32,
    ) -> Result<Vec<Vec<f32>>, TrainerError> {
        let mut rows = self
            .valid()
            .token_logprobs_from_host_tempered(ids, starts, temperature)?;
        for r in &mut rows {
            r.truncate(width);
        }
        Ok(rows)
    }

    fn window_logits(
        &self,
        ids: &[Vec<u32>],
        starts: &[usize],
        width: usize,
    ) -> Result<burn::Tensor<B, 2>, TrainerError> {
        let (t, mask) = self.window_batch(ids, starts, width)?;
        Ok(CausalLm::window_logits(
            self,
            t,
            Some(&mask),
            starts,
            width,
        )?)
    }

    fn save(&self, dir: &Path) -> Result<(), TrainerError> {
        Ok(CausalLm::save(self, dir)?)
    }

    fn save_checkpoint(&self, dir: &Path) -> Result<(), TrainerError> {
        CausalLm::save(self, dir)?;
        if self.lora_config().is_some() {
            let lora = dir.join(LORA_DIR);
            self.save_adapter(&lora, None)?;
            self.without_adapters().save(lora.join("base"))?;
        }
        Ok(())
    }

    fn load(dir: &Path, device: &B::Device) -> Result<Self, TrainerError> {
        let lora = dir.join(LORA_DIR);
        if lora.join(rl_models::decoder::ADAPTER_CONFIG).is_file() {
            return Ok(CausalLm::load(lora.join("base"), device)?.load_adapter(&lora)?);
        }
        Ok(CausalLm::load(dir, device)?)
    }

    fn with_lora(self, config: &LoraConfig, seed: u64) -> Result<Self, TrainerError> {
        Ok(CausalLm::with_lora(self, config, seed)?)
    }

    fn with_compute_dtype(self, dtype: ComputeDtype) -> Result<Self, TrainerError> {
        CausalLm::with_compute_dtype(self, dtype).map_err(|e| TrainerError::Config {
            field: "model.dtype".into(),
            message: e.to_string(),
        })
    }

    fn vocab_size(&self) -> usize {
        self.config().vocab_size
    }

    /// [`ScoreModel::from_causal_lm`] of a copy (adapters merged), as verl starts its critic
    /// from the actor's weights.
    fn critic(&self, seed: u64) -> Result<ScoreModel<B>, TrainerError> {
        Ok(ScoreModel::from_causal_lm(
            self.clone(),
            ScoreKind::Token,
            1,
            None,
            seed,
        )?)
    }
}
