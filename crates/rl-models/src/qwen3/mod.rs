//! Qwen3 dense causal LM, computed exactly as HF transformers `modeling_qwen3.py` does (see the
//! crate docs for the formulas), generic over the burn backend.
//!
//! Module and parameter layout mirror the checkpoint: `embed_tokens`, `layers[i].{input_layernorm,
//! self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm, post_attention_layernorm,
//! mlp.{gate,up,down}_proj}`, `norm`, `lm_head`, and every weight has the HF shape (linear
//! weights `[out, in]`, see [`Qwen3Linear`]), so checkpoint tensors and gradients map one to one.
//!
//! Submodules by concern, their public items re-exported here: `config` ([`Qwen3Config`], HF
//! `config.json`), `dtype` ([`ComputeDtype`]: f32, or bf16 with f32 masters), `mask`
//! ([`AttentionMask`]), `rope` (rotary tables), `kv_cache` ([`KvCache`]), `layers` (linear,
//! norm, attention, MLP, decoder block, GEMM orientation), `weights` (init, load, save), `model` ([`Qwen3`]: forward, hidden states), `head` (LM head, chunked
//! log-probs) and `train_pass` ([`WindowPass`]: the training pass under a [`MemoryPlan`], chunked
//! head backward and per-layer checkpointing).

mod config;
mod dtype;
mod head;
mod kv_cache;
mod layers;
mod lora;
mod mask;
mod model;
mod rope;
mod train_pass;
mod weights;

pub use config::Qwen3Config;
pub use dtype::{ComputeDtype, backend_supports};
pub use kv_cache::KvCache;
pub use layers::{Qwen3Attention, Qwen3DecoderLayer, Qwen3Linear, Qwen3Mlp, Qwen3RmsNorm};
pub use lora::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, LORA_TARGETS, LoraAdapter, LoraConfig};
pub use mask::AttentionMask;
pub use model::Qwen3;
pub use train_pass::{Checkpointing, MemoryPlan, WindowPass};
pub use weights::HfTensor;
pub(crate) use weights::expected_tensors;
