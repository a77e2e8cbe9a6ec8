//! The decoder-only transformer every family shares (Qwen3, Llama, Qwen2, Gemma 3), computed exactly as
//! HF transformers computes each family, generic over the burn backend.
//!
//! Module and parameter layout mirror the checkpoint: `embed_tokens`, `layers[i].{input_layernorm,
//! self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm, post_attention_layernorm,
//! mlp.{gate,up,down}_proj}`, `norm`, `lm_head`, and every weight has the HF shape (linear
//! weights `[out, in]`, see [`Linear`]), so checkpoint tensors and gradients map one to one.
//! What exists depends on the family (`crate::families`): q/k norms in Qwen3, biases in Qwen2
//! and in Llama with `attention_bias`.
//!
//! Submodules by concern, their public items re-exported here: `config` ([`ModelConfig`], HF
//! `config.json`, and the bounds on its sizes), `dtype` ([`ComputeDtype`]: f32, or bf16 with
//! f32 masters), `mask` ([`AttentionMask`]), `rope` (rotary tables, `llama3` scaling),
//! `kv_cache` ([`KvCache`]), `layers` (linear, norm, attention, MLP, decoder block), `matmul`
//! (GEMM orientation), `checkpoint_layout` (a config's tensor names and shapes), `weights`
//! (init, load, save), `model` ([`CausalLm`]: forward, hidden states, compute dtype), `head` (LM
//! head, chunked log-probs), `lora` (the adapter), `lora_model` (adapters on a model, PEFT
//! files), `train_pass` ([`WindowPass`]: the training pass under a [`MemoryPlan`], chunked head
//! backward and per-layer checkpointing), `shared_prompt` (a group's prompt computed once) and
//! `packing` ([`PackedLayout`]: sequences end to end in packed rows).

mod checkpoint_layout;
pub(crate) mod config;
mod dtype;
pub(crate) mod family;
mod head;
mod kv_cache;
mod layers;
mod lora;
mod lora_model;
mod mask;
mod matmul;
mod model;
mod packing;
mod rope;
mod score_model;
mod shared_prompt;
mod train_pass;
mod weights;

pub(crate) use checkpoint_layout::expected_tensors;
pub use config::{LIMITS, Limits, ModelConfig, RopeScaling, SlidingWindow};
pub use dtype::{ComputeDtype, backend_supports};
pub use family::{Activation, FAMILIES, Family};
pub use kv_cache::KvCache;
pub use layers::{Attention, DecoderLayer, Linear, Mlp, RmsNorm};
pub use lora::{ADAPTER_CONFIG, ADAPTER_WEIGHTS, LORA_TARGETS, LoraAdapter, LoraConfig};
pub use mask::AttentionMask;
pub use model::CausalLm;
pub use packing::PackedLayout;
pub use score_model::{ScoreKind, ScoreModel};
pub use shared_prompt::PromptGroups;
pub use train_pass::{Checkpointing, MemoryPlan, WindowPass};
pub use weights::HfTensor;
