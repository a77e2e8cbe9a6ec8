//! Where a model's tokenizer comes from: a GGUF file's `tokenizer.ggml.*` vocabulary, or the
//! `tokenizer.json` and `tokenizer_config.json` of an HF folder ([`Tokenizer::for_model`]).

use std::path::Path;

use crate::chat_template::ChatTemplate;
use crate::error::TokenizerError;
use crate::tokenizer::Tokenizer;

impl Tokenizer {
    /// The tokenizer of a model: `explicit` (a `tokenizer.json`) when given, else the
    /// `tokenizer.ggml.*` vocabulary of a GGUF `model` file, else `<model>/tokenizer.json`;
    /// with the model's chat template attached when it has one (the GGUF's
    /// `tokenizer.chat_template`, or `chat_template` in the `tokenizer_config.json` beside the
    /// tokenizer).
    pub fn for_model(model: &Path, explicit: Option<&Path>) -> Result<Self, crate::ModelError> {
        if let Some(path) = explicit {
            let tokenizer = Self::from_file(path)?;
            let config = path.with_file_name("tokenizer_config.json");
            return tokenizer.with_template_of_config(&config);
        }
        if crate::gguf::is_gguf(model) {
            return crate::gguf::GgufModel::open(model)?.tokenizer();
        }
        Self::from_file(model.join("tokenizer.json"))?
            .with_template_of_config(&model.join("tokenizer_config.json"))
    }

    /// Attaches the `chat_template` of an HF `tokenizer_config.json` (a string, or the
    /// `default` entry of a list of named templates) with its `bos_token` / `eos_token`; a
    /// missing file or field leaves the tokenizer as it is.
    fn with_template_of_config(self, path: &Path) -> Result<Self, crate::ModelError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self),
            Err(source) => {
                return Err(TokenizerError::Io {
                    path: path.to_path_buf(),
                    source,
                }
                .into());
            }
        };
        let bad = |message: String| crate::ModelError::ChatTemplate {
            file: path.to_path_buf(),
            message,
        };
        let config: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
        let source = match config.get("chat_template") {
            None | Some(serde_json::Value::Null) => return Ok(self),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(named)) => named
                .iter()
                .find(|t| t.get("name").and_then(|n| n.as_str()) == Some("default"))
                .and_then(|t| t.get("template").and_then(|s| s.as_str()))
                .ok_or_else(|| bad("`chat_template` lists no template named `default`".into()))?
                .to_string(),
            Some(_) => return Err(bad("`chat_template` is neither a string nor a list".into())),
        };
        // transformers passes a special token as its text, whether written as a string or as
        // an AddedToken object (`{"content": ...}`).
        let token = |key: &str| {
            config.get(key).and_then(|v| {
                v.as_str()
                    .or_else(|| v.get("content").and_then(|c| c.as_str()))
                    .map(str::to_string)
            })
        };
        let template = ChatTemplate::new(&source, token("bos_token"), token("eos_token"))
            .map_err(|e| bad(e.to_string()))?;
        Ok(self.with_chat_template(template))
    }
}
