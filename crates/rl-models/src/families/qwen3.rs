//! Qwen3 (`Qwen3ForCausalLM`, HF `modeling_qwen3.py`): per-head RMSNorm on q and k before RoPE,
//! no projection biases.
//!
//! `config.json` defaults are those of transformers' `Qwen3Config`:
//!
//! | field | when absent |
//! |---|---|
//! | `head_dim` | 128 |
//! | `num_key_value_heads` | 32 (`null` means `num_attention_heads`) |
//! | `rope_theta` | 10000 |
//! | `rms_norm_eps` | 1e-6 |
//! | `max_position_embeddings` | 32768 |
//! | `tie_word_embeddings` | false |
//!
//! `vocab_size`, `hidden_size`, `intermediate_size`, `num_hidden_layers` and
//! `num_attention_heads` are required. Refused by name: `use_sliding_window: true`,
//! `layer_types` other than `full_attention`, rope scaling other than `default`, `hidden_act`
//! other than `silu`, `attention_bias: true`, a non-zero `attention_dropout`. Fields this
//! implementation does not use (`use_cache`, `max_window_layers`, …) are ignored.

use serde_json::{Map, Value, json};

use super::common::check_common;
use crate::decoder::config::Fields;
use crate::decoder::{Family, ModelConfig};
use crate::error::ModelError;

pub(crate) fn parse_hf(f: &Fields) -> Result<ModelConfig, ModelError> {
    check_common(f)?;
    f.only(
        "attention_bias",
        &json!(false),
        "false (Qwen3 projections have no bias)",
    )?;
    let num_attention_heads = f.required("num_attention_heads")?;
    let max_position_embeddings = f.positive_or("max_position_embeddings", 32_768)?;
    let (rope_theta, rope_scaling) = f.rope(10_000.0, false, max_position_embeddings)?;
    Ok(ModelConfig {
        family: Family::Qwen3,
        vocab_size: f.required("vocab_size")?,
        hidden_size: f.required("hidden_size")?,
        intermediate_size: f.required("intermediate_size")?,
        num_hidden_layers: f.required("num_hidden_layers")?,
        num_attention_heads,
        num_key_value_heads: f.kv_heads(32, num_attention_heads)?,
        head_dim: f.positive_or("head_dim", 128)?,
        max_position_embeddings,
        rms_norm_eps: f.number_or("rms_norm_eps", 1e-6)?,
        rope_theta,
        rope_scaling,
        qkv_bias: false,
        o_bias: false,
        tie_word_embeddings: f.bool_or("tie_word_embeddings", false)?,
        bos_token_id: f.bos()?,
        eos_token_id: f.eos()?,
        torch_dtype: f.dtype()?,
        initializer_range: f.number_or("initializer_range", 0.02)?,
        sliding_window: None,
        query_pre_attn_scalar: None,
    })
}

pub(crate) fn extend_hf(c: &ModelConfig, map: &mut Map<String, Value>) {
    map.insert("attention_bias".into(), json!(false));
    map.insert("max_window_layers".into(), json!(c.num_hidden_layers));
    map.insert("sliding_window".into(), Value::Null);
    map.insert("use_sliding_window".into(), json!(false));
}
