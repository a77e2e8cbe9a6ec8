#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! The policy model of the rlvr trainers: Qwen3 dense causal LMs computed exactly as HF
//! transformers `modeling_qwen3.py` computes them, generic over burn's [`Backend`] (CPU `flex`,
//! wgpu, CUDA), with HF safetensors I/O, per-token log-probs and entropies for training, batched
//! KV-cache generation with seeded sampling, and the Qwen tokenizer and chat template.
//!
//! [`Backend`]: burn::tensor::backend::Backend
//!
//! ## Architecture
//!
//! `H` = `hidden_size`, `nh` = `num_attention_heads`, `nkv` = `num_key_value_heads`,
//! `hd` = `head_dim` (`nh·hd` may differ from `H`: 2048 vs 1024 in Qwen3-0.6B), `I` =
//! `intermediate_size`, `ε` = `rms_norm_eps`, `θ` = `rope_theta`. Every projection is bias-free.
//!
//! ```text
//! RMSNorm(x; w)   = w ⊙ x / sqrt(mean(x²) + ε)                     (statistics in f32)
//! h⁰              = E[ids]                                           E: [vocab, H]
//! per layer ℓ:
//!   x             = RMSNorm(h; input_layernorm)
//!   q, k, v       = x W_q, x W_k, x W_v   as [nh | nkv | nkv heads, hd]
//!   q, k          = RMSNorm_hd(q; q_norm), RMSNorm_hd(k; k_norm)   one [hd] weight shared by heads
//!   q, k          = RoPE(q, p), RoPE(k, p)                           after the norm
//!   a_j           = softmax(q_j k_gᵀ / sqrt(hd) + M) v_g,  g = j / (nh/nkv)   (GQA, f32 softmax)
//!   h             = h + concat_j(a_j) W_o
//!   x             = RMSNorm(h; post_attention_layernorm)
//!   h             = h + (silu(x W_gate) ⊙ (x W_up)) W_down            SwiGLU
//! logits          = RMSNorm(h; norm) W_headᵀ                         W_head = E when tied
//! ```
//!
//! RoPE is the non-interleaved ("rotate half") layout: with `ω_i = θ^(−2i/hd)` (f32) and the
//! position `p` of the token,
//!
//! ```text
//! RoPE(x, p)_i        = x_i cos(p ω_i) − x_{i+hd/2} sin(p ω_i)        i < hd/2
//! RoPE(x, p)_{i+hd/2} = x_{i+hd/2} cos(p ω_i) + x_i sin(p ω_i)
//! ```
//!
//! (burn's own `RotaryEncoding` rotates interleaved pairs `(2i, 2i+1)` and does not fit HF
//! weights). `M` is an additive mask: 0 where key `j` is a real token at or before query `i`,
//! −10³⁰ otherwise (finite, so a fully masked padding row stays finite). Position ids count real
//! tokens only (`p = cumsum(mask) − 1`), so right- and left-padded rows compute the same function
//! as the unpadded row.
//!
//! Log-probs and entropies of the next token (see [`logprobs`]):
//! `log p(y) = x_y − m − ln Σ_v e^{x_v − m}` and `H = ln s − Σ_v e^{x_v−m}(x_v − m)/s` with
//! `m = max_v x_v`, `s = Σ_v e^{x_v − m}`.
//!
//! ## Using it
//!
//! ```no_run
//! use burn::backend::Flex;
//! use rl_models::{EntropyMode, GenerationConfig, CausalLm, ModelConfig, Tokenizer, generate};
//!
//! let device = Default::default();
//! // a random tiny model (seeded), or CausalLm::<Flex>::load("path/to/Qwen3-0.6B", &device)
//! let model = ModelConfig::tiny(16).init_seeded::<Flex>(42, &device)?;
//! let out = generate(&model, &[vec![1, 2, 3]], &GenerationConfig::greedy(8))?;
//! println!("{:?} {:?}", out[0].tokens, out[0].finish_reason);
//! # Ok::<(), rl_models::ModelError>(())
//! ```
//!
//! Correctness is tested against HF transformers fixtures produced by
//! `tools/gen_qwen3_fixtures.py` (see `docs/models.md`).

#[cfg(feature = "mimalloc")]
pub mod allocator;
pub mod chat_template;
pub mod decoder;
pub mod error;
pub mod families;
pub mod generation;
pub mod gguf;
mod json_file;
pub mod logprobs;
pub mod patches;
pub mod safetensors_io;
pub mod threads;
pub mod tokenizer;
mod tokenizer_source;

pub use decoder::{
    AttentionMask, CausalLm, Checkpointing, ComputeDtype, KvCache, LoraConfig, MemoryPlan,
    ModelConfig, PackedLayout, PromptGroups, RopeScaling, ScoreKind, ScoreModel, SlidingWindow,
    WindowPass,
};
pub use error::{ModelError, TokenizerError};
pub use families::Family;
pub use generation::{
    FinishReason, Generation, GenerationConfig, RowSeed, generate, generate_seeded,
};
pub use gguf::{GgufDtype, export_gguf};
pub use logprobs::{EntropyMode, TokenLogProbs, logprobs_from_logits};
pub use safetensors_io::SaveDtype;
pub use tokenizer::{ChatMessage, Tokenizer, render_chat, render_chat_with_tools};

// The patched burn-flex's changed paths (`patches`); the published crate has none of them.
#[cfg(all(test, rlvr_patched_burn_flex))]
mod flex_patch_tests;

/// This crate's folder, for unit tests that read its fixtures: the one cargo names when it runs
/// the test, so that a test binary built from another checkout reads this checkout's files
/// (the folder it was compiled in when run without cargo).
#[cfg(test)]
pub(crate) fn crate_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
}
