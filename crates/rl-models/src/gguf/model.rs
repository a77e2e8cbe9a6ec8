//! A GGUF file as a model source: the [`ModelConfig`] from its metadata, the weights
//! dequantized to f32 under HF names (Llama's q/k rows returned to HF's order), checked against
//! the config before anything is read.
//!
//! What is read (llama.cpp's keys, `{arch}` = `general.architecture` = `llama`, `qwen2`,
//! `qwen3` or `gemma3`):
//!
//! | config field | GGUF |
//! |---|---|
//! | `hidden_size` | `{arch}.embedding_length` |
//! | `num_hidden_layers` | `{arch}.block_count` |
//! | `intermediate_size` | `{arch}.feed_forward_length` |
//! | `num_attention_heads`, `num_key_value_heads` | `{arch}.attention.head_count`, `…head_count_kv` (default: head_count) |
//! | `head_dim` | `{arch}.attention.key_length` (default: `embedding_length / head_count`); `value_length` and `rope.dimension_count` must equal it |
//! | `rms_norm_eps` | `{arch}.attention.layer_norm_rms_epsilon` |
//! | `rope_theta` | `{arch}.rope.freq_base` (default 10000) |
//! | `max_position_embeddings` | `{arch}.context_length` |
//! | `vocab_size` | the rows of `token_embd.weight` (`{arch}.vocab_size` and the token list must agree) |
//! | `tie_word_embeddings` | no `output.weight` |
//! | biases | `blk.0.attn_q.bias` / `blk.0.attn_output.bias` present (Llama, Qwen2) |
//! | `bos_token_id`, `eos_token_id` | `tokenizer.ggml.bos_token_id`, `…eos_token_id` |
//! | Gemma 3's `sliding_window` | `gemma3.attention.sliding_window` (required); as llama.cpp's loader: every sixth layer global, the local RoPE base 10000, `query_pre_attn_scalar` = `head_dim` (62 blocks, Gemma 3 27B: `hidden / heads`) |
//!
//! Gemma's norm weights are stored as `1 + w` by llama.cpp's converter; 1 is subtracted on
//! reading (as transformers' GGUF loader does), and Gemma's norm names are its own
//! (`super::names`).
//!
//! Refused by name: other architectures, mixtures of experts (`{arch}.expert_count` > 0), rope
//! scaling keys other than `none` (`{arch}.rope.scaling.type`), llama.cpp's `rope_freqs.weight`
//! (Llama 3.1's frequency factors), a rotary dimension other than the head size, and any tensor
//! outside the config's layout.

use std::collections::HashMap;
use std::path::Path;

use super::names::{gguf_name, hf_name};
use super::read::{GgufError, GgufFile};
use crate::decoder::{ModelConfig, SlidingWindow, expected_tensors};
use crate::error::ModelError;
use crate::families::{Family, llama};

/// A GGUF model file, opened and checked.
#[derive(Debug)]
pub struct GgufModel {
    file: GgufFile,
    config: ModelConfig,
}

/// A metadata key that is missing or out of range.
fn bad_key(path: &Path, key: &str, message: impl Into<String>) -> ModelError {
    ModelError::GgufModel {
        file: path.to_path_buf(),
        field: key.to_string(),
        message: message.into(),
    }
}

impl GgufModel {
    /// Opens `path`, reads its metadata and tensor infos (every count, size and offset checked
    /// against the file, `gguf::read`), builds the config and checks every tensor's name, shape
    /// and type against it. No tensor data is read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let file = GgufFile::open(path.as_ref())?;
        let config = config_of(&file)?;
        let model = Self { file, config };
        model.check_tensors()?;
        Ok(model)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// The config its metadata describes.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The parsed file (metadata, tensor infos).
    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    /// The chat template (`tokenizer.chat_template`), if the file has one.
    pub fn chat_template(&self) -> Result<Option<&str>, ModelError> {
        Ok(self.file.get_str("tokenizer.chat_template")?)
    }

    /// The tokenizer of the file's `tokenizer.ggml.*` metadata, as transformers builds it
    /// ([`super::vocab`]), with the file's chat template attached when it has one (its bos and
    /// eos tokens those of the vocabulary).
    pub fn tokenizer(&self) -> Result<crate::Tokenizer, ModelError> {
        let vocab = super::vocab::GgufVocab::read(&self.file)?;
        let inner =
            super::vocab::build_tokenizer(&vocab).map_err(|source| ModelError::GgufVocab {
                file: self.path().to_path_buf(),
                source,
            })?;
        let tokenizer = crate::Tokenizer::from_inner(inner);
        let Some(source) = self.chat_template()? else {
            return Ok(tokenizer);
        };
        let token = |id: Option<u32>| id.and_then(|i| vocab.tokens.get(i as usize)).cloned();
        let template = crate::chat_template::ChatTemplate::new(
            source,
            token(vocab.bos_token_id),
            token(vocab.eos_token_id),
        )
        .map_err(|e| ModelError::ChatTemplate {
            file: self.path().to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(tokenizer.with_chat_template(template))
    }

    /// HF tensor `name` as f32 in HF layout: dequantized, and for Llama's q and k projections
    /// with the rows in HF's rotate-half order again (`families::llama::rows_from_gguf`).
    pub fn read_hf(&self, name: &str) -> Result<Vec<f32>, ModelError> {
        let family = self.config.family;
        let g = gguf_name(family, name).ok_or_else(|| ModelError::MissingTensor {
            tensor: name.to_string(),
            searched: self.path().display().to_string(),
        })?;
        let (mut values, _) = self.file.read_f32(&g)?;
        if values.iter().any(|v| !v.is_finite()) {
            return Err(bad_key(
                self.path(),
                &g,
                format!("tensor (HF `{name}`) holds a non-finite value"),
            ));
        }
        let c = &self.config;
        if family.norm_unit_offset() && name.ends_with("norm.weight") {
            // llama.cpp's converter stores Gemma's norm scales `1 + w`; HF's weights are `w`
            // (transformers' GGUF loader subtracts 1 in f32, as here).
            for v in &mut values {
                *v -= 1.0;
            }
        }
        let heads = if name.contains(".self_attn.q_proj.") {
            Some(c.num_attention_heads)
        } else if name.contains(".self_attn.k_proj.") {
            Some(c.num_key_value_heads)
        } else {
            None
        };
        Ok(match (c.family, heads) {
            (Family::Llama, Some(heads)) => {
                let cols = if name.ends_with(".bias") {
                    1
                } else {
                    c.hidden_size
                };
                llama::rows_from_gguf(&values, heads, cols)
            }
            _ => values,
        })
    }

    /// Every GGUF tensor against the config's HF layout: each expected tensor present with the
    /// HF shape (ggml dims reversed), nothing else, and a type this crate dequantizes.
    fn check_tensors(&self) -> Result<(), ModelError> {
        let path = self.path();
        let c = &self.config;
        self.check_block_count()?;
        let expected: HashMap<String, Vec<usize>> = expected_tensors(c).into_iter().collect();
        let mut seen = 0usize;
        for info in self.file.tensors() {
            let Some(hf) = hf_name(c.family, &info.name).filter(|h| expected.contains_key(h))
            else {
                return Err(ModelError::UnexpectedTensor {
                    file: path.to_path_buf(),
                    tensor: info.name.clone(),
                });
            };
            seen += 1;
            let want = &expected[&hf];
            let found = info.shape();
            if &found != want {
                return Err(ModelError::ShapeMismatch {
                    file: path.to_path_buf(),
                    config: None,
                    tensor: info.name.clone(),
                    expected: want.clone(),
                    found,
                });
            }
            if !info.ggml_type.can_dequantize() {
                return Err(GgufError::UnsupportedType {
                    path: path.to_path_buf(),
                    tensor: info.name.clone(),
                    ggml_type: info.ggml_type,
                }
                .into());
            }
        }
        if seen != expected.len() {
            let missing = expected_tensors(c)
                .into_iter()
                .map(|(h, _)| h)
                .find(|h| gguf_name(c.family, h).is_none_or(|g| self.file.tensor(&g).is_none()))
                .unwrap_or_default();
            return Err(ModelError::MissingTensor {
                tensor: gguf_name(c.family, &missing).unwrap_or(missing),
                searched: path.display().to_string(),
            });
        }
        Ok(())
    }
}

impl GgufModel {
    /// `{arch}.block_count` against the blocks the tensor infos hold (`blk.N.*`), before the
    /// expected tensor list (which grows with the block count) is built: a count above the
    /// blocks present is a [`ModelError::ConfigMismatch`] naming the key, where one missing
    /// tensor name would hide how far the two disagree.
    fn check_block_count(&self) -> Result<(), ModelError> {
        let blocks: std::collections::BTreeSet<usize> = self
            .file
            .tensors()
            .iter()
            .filter_map(|t| t.name.strip_prefix("blk.")?.split('.').next()?.parse().ok())
            .collect();
        let declared = self.config.num_hidden_layers;
        if blocks.len() >= declared {
            return Ok(());
        }
        let arch = self
            .file
            .get_str("general.architecture")?
            .unwrap_or("llama");
        let held = match (blocks.first(), blocks.last()) {
            (Some(first), Some(last)) => format!(
                "the tensors of {} blocks (blk.{first} to blk.{last})",
                blocks.len()
            ),
            _ => "no block tensors (blk.N.*)".to_string(),
        };
        Err(ModelError::ConfigMismatch {
            config: self.path().to_path_buf(),
            field: "num_hidden_layers",
            message: format!("`{arch}.block_count` = {declared}, but the file holds {held}"),
        })
    }
}

/// The GGUF key (after `{arch}.`) a config field is read from, where it is one key.
fn gguf_key_of(field: &str) -> Option<&'static str> {
    Some(match field {
        "hidden_size" => "embedding_length",
        "num_hidden_layers" => "block_count",
        "intermediate_size" => "feed_forward_length",
        "num_attention_heads" => "attention.head_count",
        "num_key_value_heads" => "attention.head_count_kv",
        "head_dim" => "attention.key_length",
        "rms_norm_eps" => "attention.layer_norm_rms_epsilon",
        "rope_theta" => "rope.freq_base",
        "max_position_embeddings" => "context_length",
        _ => return None,
    })
}

/// A [`ModelError::InvalidConfig`] from validating a GGUF file's config, with the file and the
/// GGUF key the field was read from added (the field stays the HF name).
fn in_gguf(e: ModelError, path: &Path, arch: &str) -> ModelError {
    match e.in_file(path, |_| None) {
        ModelError::InvalidConfig {
            file,
            line,
            field,
            value,
            expected,
        } => {
            let expected = match gguf_key_of(field) {
                Some(k) => format!("{expected} (read from the GGUF key `{arch}.{k}`)"),
                None if field == "vocab_size" => {
                    format!("{expected} (the rows of `token_embd.weight`)")
                }
                None => expected,
            };
            ModelError::InvalidConfig {
                file,
                line,
                field,
                value,
                expected,
            }
        }
        other => other,
    }
}

/// The config a GGUF file's metadata and tensor infos describe (see the module docs).
fn config_of(file: &GgufFile) -> Result<ModelConfig, ModelError> {
    let path = file.path();
    let arch = file
        .get_str("general.architecture")?
        .ok_or_else(|| bad_key(path, "general.architecture", "missing"))?;
    let family = Family::from_hf_name(arch).ok_or_else(|| {
        bad_key(
            path,
            "general.architecture",
            format!("`{arch}`: supported are llama, qwen2, qwen3 and gemma3"),
        )
    })?;
    let key = |k: &str| format!("{arch}.{k}");
    let size = |k: &str| -> Result<Option<usize>, ModelError> { Ok(file.get_usize(&key(k))?) };
    let required = |k: &str| -> Result<usize, ModelError> {
        match size(k)? {
            Some(v) if v > 0 => Ok(v),
            Some(v) => Err(bad_key(path, &key(k), format!("{v}: must be positive"))),
            None => Err(bad_key(path, &key(k), "missing")),
        }
    };
    if let Some(n) = size("expert_count")?
        && n > 0
    {
        return Err(bad_key(
            path,
            &key("expert_count"),
            format!("{n}: mixtures of experts are not supported"),
        ));
    }
    if let Some(t) = file.get_str(&key("rope.scaling.type"))?
        && t != "none"
    {
        return Err(bad_key(
            path,
            &key("rope.scaling.type"),
            format!("`{t}`: rope scaling is not supported in GGUF files"),
        ));
    }
    if file.tensor("rope_freqs.weight").is_some() {
        return Err(bad_key(
            path,
            "rope_freqs.weight",
            "llama.cpp's RoPE frequency factors (Llama 3.1+ rope scaling) are not supported",
        ));
    }
    let hidden_size = required("embedding_length")?;
    let heads = required("attention.head_count")?;
    let kv_heads = size("attention.head_count_kv")?.unwrap_or(heads);
    let head_dim = size("attention.key_length")?.unwrap_or(hidden_size / heads.max(1));
    for k in ["attention.value_length", "rope.dimension_count"] {
        if let Some(v) = size(k)?
            && v != head_dim
        {
            return Err(bad_key(
                path,
                &key(k),
                format!(
                    "{v}: must equal the head size {head_dim} (partial rotary embeddings are not supported)"
                ),
            ));
        }
    }
    let embd = file
        .tensor("token_embd.weight")
        .ok_or_else(|| bad_key(path, "token_embd.weight", "missing"))?;
    let vocab_size = match embd.shape().as_slice() {
        [v, h] if *h == hidden_size => *v,
        other => {
            return Err(ModelError::ShapeMismatch {
                file: path.to_path_buf(),
                config: None,
                tensor: "token_embd.weight".into(),
                expected: vec![0, hidden_size],
                found: other.to_vec(),
            });
        }
    };
    if let Some(v) = size("vocab_size")?
        && v != vocab_size
    {
        return Err(bad_key(
            path,
            &key("vocab_size"),
            format!("{v}, but token_embd.weight has {vocab_size} rows"),
        ));
    }
    let id = |k: &str| -> Result<Option<u32>, ModelError> { Ok(file.get_u32(k)?) };
    let eps = file
        .get_f32(&key("attention.layer_norm_rms_epsilon"))?
        .ok_or_else(|| bad_key(path, &key("attention.layer_norm_rms_epsilon"), "missing"))?;
    let qkv_bias = file.tensor("blk.0.attn_q.bias").is_some();
    let o_bias = file.tensor("blk.0.attn_output.bias").is_some();
    let num_hidden_layers = required("block_count")?;
    let (sliding_window, query_pre_attn_scalar) = match family {
        Family::Gemma3 => {
            // llama.cpp's gemma3 loader: every sixth layer global, the local layers' RoPE base
            // 10000 (neither is in the file), the score scale 1/√head_dim except for the 27B
            // model (62 blocks), whose is 1/√(hidden / heads).
            let window = required("attention.sliding_window")?;
            let scalar = if num_hidden_layers == 62 {
                hidden_size as f64 / heads as f64
            } else {
                head_dim as f64
            };
            (
                Some(SlidingWindow::every(6, num_hidden_layers, window, 10_000.0)),
                Some(scalar),
            )
        }
        _ => (None, None),
    };
    let config = ModelConfig {
        family,
        vocab_size,
        hidden_size,
        intermediate_size: required("feed_forward_length")?,
        num_hidden_layers,
        num_attention_heads: heads,
        num_key_value_heads: kv_heads,
        head_dim,
        max_position_embeddings: size("context_length")?.unwrap_or(2048),
        rms_norm_eps: f64::from(eps),
        rope_theta: f64::from(file.get_f32(&key("rope.freq_base"))?.unwrap_or(10_000.0)),
        rope_scaling: None,
        qkv_bias: match family {
            Family::Qwen2 => true,
            _ => qkv_bias,
        },
        o_bias,
        tie_word_embeddings: file.tensor("output.weight").is_none(),
        bos_token_id: id("tokenizer.ggml.bos_token_id")?,
        eos_token_id: id("tokenizer.ggml.eos_token_id")?.into_iter().collect(),
        torch_dtype: None,
        initializer_range: 0.02,
        sliding_window,
        query_pre_attn_scalar,
    };
    config.validate().map_err(|e| in_gguf(e, path, arch))?;
    Ok(config)
}

impl From<GgufError> for ModelError {
    fn from(e: GgufError) -> Self {
        ModelError::Gguf(Box::new(e))
    }
}

/// Whether `path` names a GGUF file (a file ending in `.gguf`).
pub fn is_gguf(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        && !path.is_dir()
}
