//! The model families: what distinguishes Qwen3, Llama and Qwen2, one file each.
//!
//! The three share every layer (`crate::decoder`): Llama is Qwen3 without the per-head q/k
//! RMSNorm, with optional `llama3` RoPE scaling and optional attention biases; Qwen2 is Llama
//! with a bias on the q, k and v projections. A family's file holds how HF `config.json` spells
//! it (defaults, refusals) and how it is written back.

pub mod llama;
pub mod qwen2;
pub mod qwen3;

use serde_json::{Value, json};

use crate::decoder::ModelConfig;
use crate::decoder::config::{Fields, invalid};
use crate::error::ModelError;

/// A supported architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// `Qwen3ForCausalLM`: per-head q/k RMSNorm, no biases.
    Qwen3,
    /// `LlamaForCausalLM` (Llama 2/3, SmolLM, TinyLlama …).
    Llama,
    /// `Qwen2ForCausalLM` (Qwen2, Qwen2.5): Llama with q/k/v biases.
    Qwen2,
}

/// Every family, in the order error messages list them.
pub const FAMILIES: [Family; 3] = [Family::Qwen3, Family::Llama, Family::Qwen2];

impl Family {
    /// HF `model_type` (also the GGUF `general.architecture`).
    pub fn model_type(self) -> &'static str {
        match self {
            Family::Qwen3 => "qwen3",
            Family::Llama => "llama",
            Family::Qwen2 => "qwen2",
        }
    }

    /// HF `architectures[0]`.
    pub fn architecture(self) -> &'static str {
        match self {
            Family::Qwen3 => "Qwen3ForCausalLM",
            Family::Llama => "LlamaForCausalLM",
            Family::Qwen2 => "Qwen2ForCausalLM",
        }
    }

    /// Whether the attention normalises each q and k head (Qwen3's `q_norm` / `k_norm`).
    pub fn qk_norm(self) -> bool {
        self == Family::Qwen3
    }

    /// The family of an HF `model_type` or `architectures` entry.
    pub fn from_hf_name(name: &str) -> Option<Self> {
        FAMILIES
            .into_iter()
            .find(|f| f.model_type() == name || f.architecture() == name)
    }

    fn names() -> String {
        FAMILIES
            .iter()
            .map(|f| format!("\"{}\"", f.model_type()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.model_type())
    }
}

/// Parses a `config.json` object: the family from `model_type` (or `architectures[0]`; Qwen3
/// when neither is given), then that family's fields.
pub(crate) fn parse_hf(fields: &Fields) -> Result<ModelConfig, ModelError> {
    let family = match fields.get("model_type") {
        Some(v) => v
            .as_str()
            .and_then(Family::from_hf_name)
            .ok_or_else(|| invalid("model_type", v, &format!("one of {}", Family::names())))?,
        None => match fields.get("architectures") {
            Some(v) => v
                .as_array()
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .and_then(Family::from_hf_name)
                .ok_or_else(|| {
                    invalid(
                        "architectures",
                        v,
                        "a list starting with Qwen3ForCausalLM, LlamaForCausalLM or Qwen2ForCausalLM",
                    )
                })?,
            None => Family::Qwen3,
        },
    };
    match family {
        Family::Qwen3 => qwen3::parse_hf(fields),
        Family::Llama => llama::parse_hf(fields),
        Family::Qwen2 => qwen2::parse_hf(fields),
    }
}

/// Refusals every family shares: an activation other than SiLU, attention dropout, and
/// sliding-window attention.
pub(crate) fn check_common(fields: &Fields) -> Result<(), ModelError> {
    fields.only("hidden_act", &json!("silu"), "\"silu\"")?;
    fields.only(
        "attention_dropout",
        &json!(0.0),
        "0.0 (attention dropout is not implemented)",
    )?;
    fields.only(
        "use_sliding_window",
        &json!(false),
        "false (sliding-window attention is not supported)",
    )?;
    if let Some(v) = fields.get("layer_types") {
        let ok = v
            .as_array()
            .is_some_and(|a| a.iter().all(|t| t.as_str() == Some("full_attention")));
        if !ok {
            return Err(invalid(
                "layer_types",
                v,
                "a list of \"full_attention\" (sliding-window layers are not supported)",
            ));
        }
    }
    Ok(())
}

/// The `config.json` fields every family writes; each family's `to_hf` adds its own.
pub(crate) fn common_hf(c: &ModelConfig) -> serde_json::Map<String, Value> {
    let eos = match c.eos_token_id.as_slice() {
        [] => Value::Null,
        [one] => json!(one),
        many => json!(many),
    };
    let mut rope = json!({ "rope_theta": c.rope_theta, "rope_type": "default" });
    if let Some(s) = &c.rope_scaling
        && let (Some(r), Some(extra)) = (rope.as_object_mut(), s.to_json().as_object())
    {
        r.extend(extra.clone());
    }
    let value = json!({
        "architectures": [c.family.architecture()],
        "model_type": c.family.model_type(),
        "attention_dropout": 0.0,
        "bos_token_id": c.bos_token_id,
        "eos_token_id": eos,
        "head_dim": c.head_dim,
        "hidden_act": "silu",
        "hidden_size": c.hidden_size,
        "initializer_range": c.initializer_range,
        "intermediate_size": c.intermediate_size,
        "max_position_embeddings": c.max_position_embeddings,
        "num_attention_heads": c.num_attention_heads,
        "num_hidden_layers": c.num_hidden_layers,
        "num_key_value_heads": c.num_key_value_heads,
        "rms_norm_eps": c.rms_norm_eps,
        "rope_theta": c.rope_theta,
        "rope_scaling": c.rope_scaling.as_ref().map(|s| s.to_json()),
        "rope_parameters": rope,
        "tie_word_embeddings": c.tie_word_embeddings,
        "torch_dtype": c.torch_dtype,
        "dtype": c.torch_dtype,
        "use_cache": true,
        "vocab_size": c.vocab_size,
    });
    match value {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// The config as its family's HF `config.json`.
pub(crate) fn to_hf(c: &ModelConfig) -> Value {
    let mut map = common_hf(c);
    match c.family {
        Family::Qwen3 => qwen3::extend_hf(c, &mut map),
        Family::Llama => llama::extend_hf(c, &mut map),
        Family::Qwen2 => qwen2::extend_hf(c, &mut map),
    }
    Value::Object(map)
}
