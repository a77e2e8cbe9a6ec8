//! JSON files of a checkpoint (`config.json`, `adapter_config.json`, `tokenizer_config.json`):
//! read with their text kept for error lines, written pretty-printed; every failure names the
//! file.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::error::ModelError;

/// The file's text and its parsed value.
pub(crate) fn read(path: &Path) -> Result<(String, Value), ModelError> {
    let text = std::fs::read_to_string(path).map_err(|source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let value = serde_json::from_str(&text).map_err(|source| ModelError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    Ok((text, value))
}

/// Writes `value` pretty-printed to `path`.
pub(crate) fn write_pretty(path: &Path, value: &impl Serialize) -> Result<(), ModelError> {
    let text = serde_json::to_string_pretty(value).map_err(|source| ModelError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    std::fs::write(path, text).map_err(|source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    })
}
