//! What every family shares: its refusals and the `config.json` fields all write.

use serde_json::{Value, json};

use crate::decoder::ModelConfig;
use crate::decoder::config::{Fields, invalid};
use crate::error::ModelError;

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
        "hidden_act": c.family.activation().hf_name(),
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
