//! A `tokenizers` tokenizer built from the vocabulary metadata of a GGUF file
//! (`tokenizer.ggml.*`), giving the same token ids as HF transformers' tokenizer loaded from the
//! same file (`AutoTokenizer.from_pretrained(dir, gguf_file=name)`).
//!
//! The metadata is read and validated in `metadata.rs` ([`GgufVocab`]); llama.cpp's `gpt2`
//! model (byte-level BPE: SmolLM2, Qwen2/3, Llama 3) is built in `byte_level.rs`, its `llama`
//! model (SentencePiece: Gemma, Llama 2, Mistral, TinyLlama …) in `sentencepiece.rs`.
//!
//! The vocabulary is validated first (token and type counts, type values, duplicate and empty
//! tokens, special ids in range, merges made of two vocabulary tokens whose concatenation is in
//! the vocabulary); every failure is a [`GgufVocabError`] naming the field and index.

use serde_json::Value;

mod byte_level;
mod metadata;
mod sentencepiece;

pub use byte_level::pre_of_tokenizer_json;
pub use metadata::{GgufVocab, GgufVocabError, SUPPORTED_MODELS, SUPPORTED_PRE, token_type};

/// The `tokenizer.json` (as JSON) of the tokenizer transformers builds from `vocab`: the
/// vocabulary is validated, then built by its `tokenizer.ggml.model`.
pub fn tokenizer_json(vocab: &GgufVocab) -> Result<Value, GgufVocabError> {
    vocab.validate()?;
    match vocab.model.as_str() {
        "llama" => sentencepiece::tokenizer_json(vocab),
        _ => byte_level::tokenizer_json(vocab),
    }
}

/// The tokenizer transformers builds from `vocab` (see the module documentation), loaded by the
/// `tokenizers` crate from the JSON of [`tokenizer_json`].
pub fn build_tokenizer(vocab: &GgufVocab) -> Result<tokenizers::Tokenizer, GgufVocabError> {
    let spec = tokenizer_json(vocab)?;
    let bytes = serde_json::to_vec(&spec).map_err(|e| GgufVocabError::Tokenizers {
        message: e.to_string(),
    })?;
    tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| GgufVocabError::Tokenizers {
        message: e.to_string(),
    })
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod smollm2_tests;
