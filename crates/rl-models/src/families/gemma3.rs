//! Gemma 3 (`Gemma3ForCausalLM`, HF `modeling_gemma3.py`, `model_type` `gemma3_text`): the text
//! model of Gemma 3. What it computes differently from Llama is in [`Family::Gemma3`]'s switches
//! (q/k norms, `(1 + w)` norms, four norms per layer, GeGLU, the scaled embedding) and in the
//! config's [`SlidingWindow`] and `query_pre_attn_scalar`.
//!
//! `config.json` defaults are those of transformers' `Gemma3TextConfig` (5.25):
//!
//! | field | when absent |
//! |---|---|
//! | `head_dim` | 256 |
//! | `num_key_value_heads` | 4 (`null` means `num_attention_heads`) |
//! | `rms_norm_eps` | 1e-6 |
//! | `max_position_embeddings` | 131072 |
//! | `tie_word_embeddings` | true |
//! | `query_pre_attn_scalar` | 256 |
//! | `sliding_window` | 4096 |
//! | `layer_types` | from `sliding_window_pattern` (default 6): layer `i` global when `(i + 1) % pattern == 0` |
//! | RoPE base of the global layers | `rope_parameters.full_attention.rope_theta`, else `rope_theta`, else 1e6 |
//! | RoPE base of the local layers | `rope_parameters.sliding_attention.rope_theta`, else `rope_local_base_freq`, else 1e4 |
//! | `bos_token_id`, `eos_token_id` | 2, 1 |
//!
//! `vocab_size`, `hidden_size`, `intermediate_size`, `num_hidden_layers` and
//! `num_attention_heads` are required, as for the other families. Refused by name: an activation
//! other than `gelu_pytorch_tanh` (`hidden_activation`, or `hidden_act`), logit soft-capping
//! (`final_logit_softcapping`, `attn_logit_softcapping`: Gemma 2's, null in Gemma 3),
//! `use_bidirectional_attention`, attention biases and dropout, RoPE scaling of any type but
//! `default` (Gemma 3 4B and larger scale the global layers' RoPE linearly), a `layer_types`
//! entry other than `sliding_attention` / `full_attention`, and a null `sliding_window` with
//! local layers.

use serde_json::{Map, Value, json};

use crate::decoder::config::{Fields, invalid};
use crate::decoder::{Family, ModelConfig, SlidingWindow};
use crate::error::ModelError;

/// transformers' `Gemma3TextConfig.default_theta`.
const GLOBAL_THETA: f64 = 1_000_000.0;
const LOCAL_THETA: f64 = 10_000.0;

pub(crate) fn parse_hf(f: &Fields) -> Result<ModelConfig, ModelError> {
    for key in ["hidden_activation", "hidden_act"] {
        f.only(key, &json!("gelu_pytorch_tanh"), "\"gelu_pytorch_tanh\"")?;
    }
    for key in ["final_logit_softcapping", "attn_logit_softcapping"] {
        if let Some(v) = f.get(key) {
            return Err(invalid(
                key,
                v,
                "null (logit soft-capping is Gemma 2's, not Gemma 3's)",
            ));
        }
    }
    f.only(
        "use_bidirectional_attention",
        &json!(false),
        "false (the decoder is causal)",
    )?;
    f.only(
        "attention_bias",
        &json!(false),
        "false (Gemma 3 projections have no bias)",
    )?;
    f.only(
        "attention_dropout",
        &json!(0.0),
        "0.0 (attention dropout is not implemented)",
    )?;
    let num_hidden_layers = f.required("num_hidden_layers")?;
    let num_attention_heads = f.required("num_attention_heads")?;
    let (global_theta, local_theta) = rope_bases(f)?;
    let local_layers = local_layers(f, num_hidden_layers)?;
    let sliding_window = if local_layers.iter().any(|&l| l) {
        let size = match f.0.get("sliding_window") {
            None => 4096,
            Some(Value::Null) => {
                return Err(invalid(
                    "sliding_window",
                    &Value::Null,
                    "a positive integer (the config has sliding_attention layers)",
                ));
            }
            Some(_) => f.required("sliding_window")?,
        };
        Some(SlidingWindow {
            size,
            local_layers,
            rope_theta: local_theta,
        })
    } else {
        None
    };
    Ok(ModelConfig {
        family: Family::Gemma3,
        vocab_size: f.required("vocab_size")?,
        hidden_size: f.required("hidden_size")?,
        intermediate_size: f.required("intermediate_size")?,
        num_hidden_layers,
        num_attention_heads,
        num_key_value_heads: f.kv_heads(4, num_attention_heads)?,
        head_dim: f.positive_or("head_dim", 256)?,
        max_position_embeddings: f.positive_or("max_position_embeddings", 131_072)?,
        rms_norm_eps: f.number_or("rms_norm_eps", 1e-6)?,
        rope_theta: global_theta,
        rope_scaling: None,
        qkv_bias: false,
        o_bias: false,
        tie_word_embeddings: f.bool_or("tie_word_embeddings", true)?,
        bos_token_id: f.bos_or(Some(2))?,
        eos_token_id: f.eos_or(Some(1))?,
        torch_dtype: f.dtype()?,
        initializer_range: f.number_or("initializer_range", 0.02)?,
        sliding_window,
        query_pre_attn_scalar: Some(f.number_or("query_pre_attn_scalar", 256.0)?),
    })
}

/// The RoPE bases of the global and the local layers, from transformers 5's per-layer-type
/// `rope_parameters` or the Hub's `rope_theta` / `rope_local_base_freq` (+ `rope_scaling`).
fn rope_bases(f: &Fields) -> Result<(f64, f64), ModelError> {
    let mut global = f.number_or("rope_theta", GLOBAL_THETA)?;
    let mut local = f.number_or("rope_local_base_freq", LOCAL_THETA)?;
    let default_type = |field: &'static str, v: &Value| -> Result<(), ModelError> {
        let obj = v
            .as_object()
            .ok_or_else(|| invalid(field, v, "null or an object with a rope_type"))?;
        match obj.get("rope_type").or_else(|| obj.get("type")) {
            None | Some(Value::Null) => Ok(()),
            Some(t) if t == "default" => Ok(()),
            Some(_) => Err(invalid(
                field,
                v,
                "rope_type \"default\" (Gemma 3's linear or other RoPE scaling is not supported)",
            )),
        }
    };
    if let Some(v) = f.get("rope_scaling") {
        default_type("rope_scaling", v)?;
    }
    if let Some(v) = f.get("rope_parameters") {
        let obj = v.as_object().ok_or_else(|| {
            invalid(
                "rope_parameters",
                v,
                "an object with `full_attention` and `sliding_attention` entries",
            )
        })?;
        for (kind, theta) in [
            ("full_attention", &mut global),
            ("sliding_attention", &mut local),
        ] {
            let Some(p) = obj.get(kind).filter(|p| !p.is_null()) else {
                continue;
            };
            default_type("rope_parameters", p)?;
            if let Some(t) = p.get("rope_theta").filter(|t| !t.is_null()) {
                *theta = t
                    .as_f64()
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| invalid("rope_parameters", v, "a positive finite rope_theta"))?;
            }
        }
    }
    Ok((global, local))
}

/// Per layer, whether it is local: `layer_types`, else `sliding_window_pattern` (the Hub's
/// `_sliding_window_pattern` too; default 6).
fn local_layers(f: &Fields, layers: usize) -> Result<Vec<bool>, ModelError> {
    if let Some(v) = f.get("layer_types") {
        let kinds = v.as_array().filter(|a| a.len() == layers).ok_or_else(|| {
            invalid(
                "layer_types",
                v,
                &format!("a list of num_hidden_layers = {layers} layer types"),
            )
        })?;
        return kinds
            .iter()
            .map(|k| match k.as_str() {
                Some("sliding_attention") => Ok(true),
                Some("full_attention") => Ok(false),
                _ => Err(invalid(
                    "layer_types",
                    v,
                    "a list of \"sliding_attention\" and \"full_attention\"",
                )),
            })
            .collect();
    }
    let pattern = match f.get("sliding_window_pattern") {
        Some(_) => f.required("sliding_window_pattern")?,
        None if f.get("_sliding_window_pattern").is_some() => {
            f.required("_sliding_window_pattern")?
        }
        None => 6,
    };
    Ok(SlidingWindow::every(pattern, layers, 1, LOCAL_THETA).local_layers)
}

pub(crate) fn extend_hf(c: &ModelConfig, map: &mut Map<String, Value>) {
    let local_theta = c
        .sliding_window
        .as_ref()
        .map_or(LOCAL_THETA, |w| w.rope_theta);
    let layer_types: Vec<&str> = (0..c.num_hidden_layers)
        .map(|i| match &c.sliding_window {
            Some(w) if w.is_local(i) => "sliding_attention",
            _ => "full_attention",
        })
        .collect();
    map.insert("hidden_activation".into(), json!("gelu_pytorch_tanh"));
    // An integer where it is one: transformers 5's strict Gemma3TextConfig types the field `int`.
    let scalar = c.query_pre_attn_scalar.unwrap_or(c.head_dim as f64);
    map.insert(
        "query_pre_attn_scalar".into(),
        if scalar.fract() == 0.0 && scalar <= u32::MAX as f64 {
            json!(scalar as u64)
        } else {
            json!(scalar)
        },
    );
    map.insert(
        "sliding_window".into(),
        json!(c.sliding_window.as_ref().map_or(4096, |w| w.size)),
    );
    map.insert("layer_types".into(), json!(layer_types));
    map.insert("rope_local_base_freq".into(), json!(local_theta));
    map.insert(
        "rope_parameters".into(),
        json!({
            "full_attention": { "rope_type": "default", "rope_theta": c.rope_theta },
            "sliding_attention": { "rope_type": "default", "rope_theta": local_theta },
        }),
    );
    map.insert("final_logit_softcapping".into(), Value::Null);
    map.insert("attn_logit_softcapping".into(), Value::Null);
    map.insert("attention_bias".into(), json!(false));
    map.insert("use_bidirectional_attention".into(), json!(false));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What transformers 5.25's strict `Gemma3TextConfig` needs of a written config: an integer
    /// `query_pre_attn_scalar` (a float was refused: "expected int, got float"), both RoPE
    /// spellings, and the layer types; read back, the same config.
    #[test]
    fn the_written_config_reads_back_and_types_the_scalar_as_an_integer() {
        let mut c = ModelConfig::tiny(32);
        c.family = Family::Gemma3;
        c.num_hidden_layers = 3;
        c.sliding_window = Some(SlidingWindow::every(3, 3, 4, 100.0));
        c.query_pre_attn_scalar = Some(24.0);
        let v = c.to_json_value();
        assert!(
            v["query_pre_attn_scalar"].is_u64(),
            "{}",
            v["query_pre_attn_scalar"]
        );
        assert_eq!(
            v["layer_types"],
            json!(["sliding_attention", "sliding_attention", "full_attention"])
        );
        assert_eq!(
            v["rope_parameters"]["sliding_attention"]["rope_theta"],
            json!(100.0)
        );
        assert_eq!(v["hidden_activation"], json!("gelu_pytorch_tanh"));
        assert_eq!(ModelConfig::from_json_value(&v).unwrap(), c);
    }
}
