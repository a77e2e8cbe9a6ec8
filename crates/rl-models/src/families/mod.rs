//! The model families' HF `config.json` dialects: how each spells its config (defaults,
//! refusals) and how it is written back, one file each.
//!
//! What each family computes is in [`crate::decoder::Family`] (the registry: its names and the
//! switches of its layers) and the config's fields; every family shares the decoder's layers.
//! Llama is Qwen3 without the per-head q/k RMSNorm, with optional `llama3` RoPE scaling and
//! optional attention biases; Qwen2 is Llama with a bias on the q, k and v projections; Gemma 3
//! adds `(1 + w)` norms after attention and around the MLP, GeGLU, a scaled embedding and
//! sliding-window layers. This module depends on the decoder, never the other way round.

mod common;
pub mod gemma3;
pub mod llama;
pub mod qwen2;
pub mod qwen3;

use std::path::Path;

use serde_json::Value;

use crate::decoder::ModelConfig;
use crate::decoder::config::{Fields, invalid, line_of};
pub use crate::decoder::{FAMILIES, Family};
use crate::error::ModelError;
use common::common_hf;

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
                        "a list starting with Qwen3ForCausalLM, LlamaForCausalLM, Qwen2ForCausalLM or Gemma3ForCausalLM",
                    )
                })?,
            None => Family::Qwen3,
        },
    };
    match family {
        Family::Qwen3 => qwen3::parse_hf(fields),
        Family::Llama => llama::parse_hf(fields),
        Family::Qwen2 => qwen2::parse_hf(fields),
        Family::Gemma3 => gemma3::parse_hf(fields),
    }
}

/// The config as its family's HF `config.json`.
pub(crate) fn to_hf(c: &ModelConfig) -> Value {
    let mut map = common_hf(c);
    match c.family {
        Family::Qwen3 => qwen3::extend_hf(c, &mut map),
        Family::Llama => llama::extend_hf(c, &mut map),
        Family::Qwen2 => qwen2::extend_hf(c, &mut map),
        Family::Gemma3 => gemma3::extend_hf(c, &mut map),
    }
    Value::Object(map)
}

impl ModelConfig {
    /// Parses an HF `config.json` object of any supported family (see the type docs).
    pub fn from_json_value(value: &Value) -> Result<Self, ModelError> {
        let map = value
            .as_object()
            .ok_or_else(|| invalid("(root)", value, "a JSON object"))?;
        let config = parse_hf(&Fields(map))?;
        config.validate()?;
        Ok(config)
    }

    /// Parses `config.json` text.
    pub fn from_json_str(text: &str) -> Result<Self, ModelError> {
        let value: Value = serde_json::from_str(text).map_err(|source| ModelError::Json {
            path: "<string>".into(),
            source,
        })?;
        Self::from_json_value(&value)
    }

    /// Reads `config.json` (a file, or a directory holding one). A bad field is reported with
    /// the file and the line it is on.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let path = if path.is_dir() {
            path.join("config.json")
        } else {
            path.to_path_buf()
        };
        let (text, value) = crate::json_file::read(&path)?;
        Self::from_json_value(&value).map_err(|e| e.in_file(&path, |f| line_of(&text, f)))
    }

    /// The config as HF `config.json` of its family (both rope and dtype spellings, so that
    /// transformers 4 and 5 read it).
    pub fn to_json_value(&self) -> Value {
        to_hf(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_of_a_field_is_found() {
        let text = "{\n  \"a\": 1,\n  \"head_dim\": 15\n}";
        assert_eq!(line_of(text, "head_dim"), Some(3));
        assert_eq!(line_of(text, "absent"), None);
    }
}
