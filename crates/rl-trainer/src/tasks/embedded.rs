//! What the embedded runs share: their settings files (defaults with TOML overrides) and their
//! tiny Qwen3.

use rl_models::Tokenizer;
use serde::Serialize;

use crate::TrainerError;

/// `default` with the keys of a TOML document on top (any field, nested tables merged key by
/// key); unknown keys are errors. The embedded runs' `--demo FILE`.
pub(crate) fn with_toml_overrides<T: Serialize + serde::de::DeserializeOwned>(
    default: T,
    text: &str,
) -> Result<T, TrainerError> {
    let bad = |message: String| TrainerError::Config {
        field: "<demo toml>".into(),
        message,
    };
    let user: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    let mut merged = toml::Table::try_from(default).map_err(|e| bad(e.to_string()))?;
    crate::config::merge_toml(&mut merged, user);
    toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| bad(e.to_string()))
}

/// The default demo, or with `path` the default with that file's overrides (`parse`).
pub(crate) fn load_demo<T: Default>(
    path: Option<&std::path::Path>,
    parse: impl FnOnce(&str) -> Result<T, TrainerError>,
) -> Result<T, TrainerError> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| TrainerError::io(p, e))?;
            parse(&text)
        }
        None => Ok(T::default()),
    }
}

/// The tiny Qwen3 of the embedded runs over `tokenizer`'s ids: `hidden` wide, `layers` decoder
/// layers of `heads` query heads (half as many key/value heads) and a SwiGLU of `intermediate`,
/// ending at the tokenizer's end tokens.
pub fn tiny_qwen3(
    tokenizer: &Tokenizer,
    hidden: usize,
    layers: usize,
    heads: usize,
    intermediate: usize,
) -> rl_models::ModelConfig {
    let mut model = rl_models::ModelConfig::tiny(tokenizer.num_defined_ids());
    model.hidden_size = hidden;
    model.num_hidden_layers = layers;
    model.num_attention_heads = heads;
    model.num_key_value_heads = (heads / 2).max(1);
    model.head_dim = hidden / heads;
    model.intermediate_size = intermediate;
    model.eos_token_id = crate::end_token_ids(tokenizer);
    model
}
