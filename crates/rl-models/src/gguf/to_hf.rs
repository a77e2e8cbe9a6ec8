//! A GGUF model file as an HF folder: the dequantized weights in safetensors with their
//! `config.json` ([`crate::CausalLm::save_with`]), and the tokenizer built from the file's
//! vocabulary as `tokenizer.json` with a `tokenizer_config.json` holding its special tokens and
//! chat template, which transformers, PEFT and vLLM load like any Hub checkpoint.

use std::path::Path;

use burn::tensor::backend::Backend;
use serde_json::{Map, Value, json};

use super::model::GgufModel;
use super::vocab::GgufVocab;
use crate::error::ModelError;
use crate::{CausalLm, SaveDtype};

/// Writes the HF folder of the GGUF model `gguf` into `out` (created if needed): weights in
/// `dtype`, `config.json`, `tokenizer.json` and `tokenizer_config.json`.
pub fn export_hf<B: Backend>(
    gguf: &Path,
    out: &Path,
    dtype: SaveDtype,
    device: &B::Device,
) -> Result<(), ModelError> {
    let source = GgufModel::open(gguf)?;
    let tokenizer = source.tokenizer()?;
    let config = tokenizer_config(&source)?;
    let model = CausalLm::<B>::load(gguf, device)?;
    model.save_with(out, dtype, None)?;
    tokenizer.save(out.join("tokenizer.json"))?;
    crate::json_file::write_pretty(&out.join("tokenizer_config.json"), &config)
}

/// `tokenizer_config.json` of a GGUF model: the bos, eos, unknown and padding tokens by name,
/// whether bos/eos are added, the context length and the chat template, as transformers'
/// `PreTrainedTokenizerFast` reads them.
fn tokenizer_config(source: &GgufModel) -> Result<Value, ModelError> {
    let vocab = GgufVocab::read(source.file())?;
    let mut c = Map::new();
    c.insert("tokenizer_class".into(), json!("PreTrainedTokenizerFast"));
    c.insert("clean_up_tokenization_spaces".into(), json!(false));
    let token = |id: Option<u32>| id.and_then(|i| vocab.tokens.get(i as usize)).cloned();
    for (key, id) in [
        ("bos_token", vocab.bos_token_id),
        ("eos_token", vocab.eos_token_id),
        ("unk_token", vocab.unknown_token_id),
        ("pad_token", vocab.padding_token_id),
    ] {
        if let Some(t) = token(id) {
            c.insert(key.into(), json!(t));
        }
    }
    c.insert(
        "add_bos_token".into(),
        json!(vocab.add_bos_token.unwrap_or(false)),
    );
    c.insert(
        "add_eos_token".into(),
        json!(vocab.add_eos_token.unwrap_or(false)),
    );
    c.insert(
        "model_max_length".into(),
        json!(source.config().max_position_embeddings),
    );
    if let Some(t) = source.chat_template()? {
        c.insert("chat_template".into(), json!(t));
    }
    Ok(Value::Object(c))
}
