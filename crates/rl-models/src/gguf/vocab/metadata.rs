//! The vocabulary metadata of a GGUF file (`tokenizer.ggml.*`), read and validated, and why
//! it can fail to become a tokenizer.

use serde_json::{Value, json};

use super::super::read::{GgufError, GgufFile};

/// `tokenizer.ggml.token_type` values (llama.cpp's `llama_token_type`).
pub mod token_type {
    /// Undefined.
    pub const UNDEFINED: i32 = 0;
    /// A normal token.
    pub const NORMAL: i32 = 1;
    /// The unknown token.
    pub const UNKNOWN: i32 = 2;
    /// A control token (`<|im_start|>`): a special added token.
    pub const CONTROL: i32 = 3;
    /// A user-defined token (`<think>`): matched whole in the text, not special.
    pub const USER_DEFINED: i32 = 4;
    /// An unused id (`[PAD151669]`).
    pub const UNUSED: i32 = 5;
    /// A byte token (`<0x0A>`, sentencepiece models).
    pub const BYTE: i32 = 6;
}

/// The tokenizer models (`tokenizer.ggml.model`) [`build_tokenizer`](super::build_tokenizer) supports.
pub const SUPPORTED_MODELS: &[&str] = &["gpt2", "llama"];

/// The pre-tokenizers (`tokenizer.ggml.pre`) [`build_tokenizer`](super::build_tokenizer) supports.
pub const SUPPORTED_PRE: &[&str] = &["smollm", "qwen2", "llama-bpe"];

/// The tokenizer metadata of a GGUF file: what llama.cpp's `tokenizer.ggml.*` keys hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GgufVocab {
    /// `general.architecture` (`gemma3`, `llama`, …): which of transformers' SentencePiece
    /// builders a `llama` vocabulary takes (`sentencepiece.rs`).
    pub architecture: String,
    /// `tokenizer.ggml.model`: `gpt2` (byte-level BPE), `llama` (sentencepiece), ….
    pub model: String,
    /// `tokenizer.ggml.pre`: the pre-tokenizer (`smollm`, `qwen2`, `llama-bpe`, …); `None` when
    /// the key is absent.
    pub pre: Option<String>,
    /// `tokenizer.ggml.tokens`: the token of each id.
    pub tokens: Vec<String>,
    /// `tokenizer.ggml.token_type`: the [`token_type`] of each id; empty when the key is absent
    /// (every token normal).
    pub token_type: Vec<i32>,
    /// `tokenizer.ggml.merges`: BPE merges as `"a b"`, highest priority first.
    pub merges: Vec<String>,
    /// `tokenizer.ggml.scores`: one score per token (sentencepiece); empty when the key is
    /// absent.
    pub scores: Vec<f32>,
    /// `tokenizer.ggml.bos_token_id`.
    pub bos_token_id: Option<u32>,
    /// `tokenizer.ggml.eos_token_id`.
    pub eos_token_id: Option<u32>,
    /// `tokenizer.ggml.unknown_token_id`.
    pub unknown_token_id: Option<u32>,
    /// `tokenizer.ggml.padding_token_id`.
    pub padding_token_id: Option<u32>,
    /// `tokenizer.ggml.add_bos_token`.
    pub add_bos_token: Option<bool>,
    /// `tokenizer.ggml.add_eos_token`.
    pub add_eos_token: Option<bool>,
    /// `tokenizer.ggml.add_space_prefix` (no effect on byte-level BPE).
    pub add_space_prefix: Option<bool>,
}

/// Why a GGUF vocabulary cannot be turned into a tokenizer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GgufVocabError {
    /// `tokenizer.ggml.model` names a model other than byte-level BPE.
    #[error("tokenizer.ggml.model = {model:?} is not supported (supported: {supported:?})")]
    UnsupportedModel {
        /// The value found.
        model: String,
        /// The supported values.
        supported: &'static [&'static str],
    },
    /// `tokenizer.ggml.pre` is absent or names a pre-tokenizer this module does not know.
    #[error("tokenizer.ggml.pre = {pre:?} is not supported (supported: {supported:?})")]
    UnsupportedPre {
        /// The value found (`None`: the key is absent).
        pre: Option<String>,
        /// The supported values.
        supported: &'static [&'static str],
    },
    /// `tokenizer.ggml.tokens` is empty.
    #[error("tokenizer.ggml.tokens is empty")]
    NoTokens,
    /// More tokens than 32-bit ids can number.
    #[error("tokenizer.ggml.tokens holds {count} tokens, more than 32-bit ids can number")]
    TooManyTokens {
        /// The number of tokens.
        count: usize,
    },
    /// `tokenizer.ggml.scores` does not have one entry per token.
    #[error("tokenizer.ggml.scores has {scores} entries for {tokens} tokens")]
    ScoreCount {
        /// Number of tokens.
        tokens: usize,
        /// Number of scores.
        scores: usize,
    },
    /// A sentencepiece vocabulary without merges and without scores to derive them from.
    #[error("a sentencepiece vocabulary needs tokenizer.ggml.merges or tokenizer.ggml.scores")]
    NoScores,
    /// A sentencepiece vocabulary of an architecture whose tokenizer transformers builds
    /// differently (Phi-3's prefix-space normalizer).
    #[error("the sentencepiece vocabulary of architecture {architecture:?} is not supported")]
    UnsupportedArchitecture {
        /// `general.architecture`.
        architecture: String,
    },
    /// `tokenizer.ggml.token_type` does not have one entry per token.
    #[error("tokenizer.ggml.token_type has {token_types} entries for {tokens} tokens")]
    TokenTypeCount {
        /// Number of tokens.
        tokens: usize,
        /// Number of token types.
        token_types: usize,
    },
    /// A token type outside llama.cpp's 0..=6.
    #[error("tokenizer.ggml.token_type[{index}] = {value} is not a token type (0..=6)")]
    InvalidTokenType {
        /// The token id.
        index: usize,
        /// The value found.
        value: i32,
    },
    /// An empty token string.
    #[error("tokenizer.ggml.tokens[{index}] is empty")]
    EmptyToken {
        /// The token id.
        index: usize,
    },
    /// Two ids spell the same token (after the byte-level respelling).
    #[error("tokenizer.ggml.tokens[{second}] = {token:?} repeats tokenizer.ggml.tokens[{first}]")]
    DuplicateToken {
        /// The token (byte-level spelling).
        token: String,
        /// The first id.
        first: usize,
        /// The later id.
        second: usize,
    },
    /// A special token id is not below the number of tokens.
    #[error("tokenizer.ggml.{field} = {id} is out of range ({n_tokens} tokens)")]
    SpecialIdOutOfRange {
        /// The key (`bos_token_id`, …).
        field: &'static str,
        /// The id found.
        id: u32,
        /// Number of tokens.
        n_tokens: usize,
    },
    /// Byte-level BPE without merges.
    #[error("tokenizer.ggml.merges is empty: a gpt2 vocabulary needs its merges")]
    NoMerges,
    /// A merge that is not two vocabulary tokens whose concatenation is a vocabulary token.
    #[error("tokenizer.ggml.merges[{index}] = {merge:?}: {reason}")]
    InvalidMerge {
        /// The merge's index.
        index: usize,
        /// The merge string.
        merge: String,
        /// What is wrong.
        reason: String,
    },
    /// The `tokenizers` crate rejected the built `tokenizer.json`.
    #[error("the tokenizer built from the GGUF vocabulary does not load: {message}")]
    Tokenizers {
        /// The `tokenizers` error.
        message: String,
    },
}

impl GgufVocab {
    /// The `tokenizer.ggml.*` metadata of an opened GGUF file. A key of the wrong type is an
    /// error naming it; absent optional keys are `None` (or empty for the token types).
    pub fn read(file: &GgufFile) -> Result<Self, GgufError> {
        let strings = |key: &str| -> Result<Vec<String>, GgufError> {
            Ok(file
                .get_str_array(key)?
                .map(<[String]>::to_vec)
                .unwrap_or_default())
        };
        Ok(Self {
            architecture: file
                .get_str("general.architecture")?
                .unwrap_or_default()
                .to_string(),
            model: file
                .get_str("tokenizer.ggml.model")?
                .unwrap_or_default()
                .to_string(),
            pre: file.get_str("tokenizer.ggml.pre")?.map(str::to_string),
            tokens: strings("tokenizer.ggml.tokens")?,
            token_type: file
                .get_i32_array("tokenizer.ggml.token_type")?
                .unwrap_or_default(),
            merges: strings("tokenizer.ggml.merges")?,
            scores: file
                .get_f32_array("tokenizer.ggml.scores")?
                .map(<[f32]>::to_vec)
                .unwrap_or_default(),
            bos_token_id: file.get_u32("tokenizer.ggml.bos_token_id")?,
            eos_token_id: file.get_u32("tokenizer.ggml.eos_token_id")?,
            unknown_token_id: file.get_u32("tokenizer.ggml.unknown_token_id")?,
            padding_token_id: file.get_u32("tokenizer.ggml.padding_token_id")?,
            add_bos_token: file.get_bool("tokenizer.ggml.add_bos_token")?,
            add_eos_token: file.get_bool("tokenizer.ggml.add_eos_token")?,
            add_space_prefix: file.get_bool("tokenizer.ggml.add_space_prefix")?,
        })
    }

    /// Checks the vocabulary without building anything: the model and pre-tokenizer are
    /// supported, token types match the tokens in number and range, no token is empty, special
    /// ids are in range, and there are merges. Duplicates and merges are checked by
    /// [`build_tokenizer`](super::build_tokenizer), which needs the respelled vocabulary for that.
    pub fn validate(&self) -> Result<(), GgufVocabError> {
        if !SUPPORTED_MODELS.contains(&self.model.as_str()) {
            return Err(GgufVocabError::UnsupportedModel {
                model: self.model.clone(),
                supported: SUPPORTED_MODELS,
            });
        }
        let byte_level = self.model == "gpt2";
        match self.pre.as_deref() {
            Some(p) if SUPPORTED_PRE.contains(&p) => {}
            _ if !byte_level => {}
            other => {
                return Err(GgufVocabError::UnsupportedPre {
                    pre: other.map(str::to_string),
                    supported: SUPPORTED_PRE,
                });
            }
        }
        let n = self.tokens.len();
        if n == 0 {
            return Err(GgufVocabError::NoTokens);
        }
        if u32::try_from(n).is_err() {
            return Err(GgufVocabError::TooManyTokens { count: n });
        }
        if !self.token_type.is_empty() && self.token_type.len() != n {
            return Err(GgufVocabError::TokenTypeCount {
                tokens: n,
                token_types: self.token_type.len(),
            });
        }
        if !self.scores.is_empty() && self.scores.len() != n {
            return Err(GgufVocabError::ScoreCount {
                tokens: n,
                scores: self.scores.len(),
            });
        }
        if let Some((index, &value)) = self
            .token_type
            .iter()
            .enumerate()
            .find(|(_, t)| !(token_type::UNDEFINED..=token_type::BYTE).contains(*t))
        {
            return Err(GgufVocabError::InvalidTokenType { index, value });
        }
        if let Some(index) = self.tokens.iter().position(String::is_empty) {
            return Err(GgufVocabError::EmptyToken { index });
        }
        for (field, id) in self.special_ids() {
            if let Some(id) = id
                && id as usize >= n
            {
                return Err(GgufVocabError::SpecialIdOutOfRange {
                    field,
                    id,
                    n_tokens: n,
                });
            }
        }
        if byte_level && self.merges.is_empty() {
            return Err(GgufVocabError::NoMerges);
        }
        if !byte_level && self.merges.is_empty() && self.scores.is_empty() {
            return Err(GgufVocabError::NoScores);
        }
        Ok(())
    }

    /// The `tokenizer.json` post-processor transformers builds: the bos token before the text
    /// when `add_bos_token` is true and the eos token after it when `add_eos_token` is true (a
    /// flag without its token id is ignored), for single texts and pairs.
    pub(super) fn post_processor(&self) -> Value {
        let bos = self
            .bos_token_id
            .filter(|_| self.add_bos_token == Some(true));
        let eos = self
            .eos_token_id
            .filter(|_| self.add_eos_token == Some(true));
        let special = |id: u32, type_id: u32| json!({ "SpecialToken": { "id": self.tokens[id as usize], "type_id": type_id } });
        let mut single = Vec::new();
        let mut pair = Vec::new();
        for (name, type_id, out) in [("A", 0, &mut single), ("B", 1, &mut pair)] {
            if let Some(b) = bos {
                out.push(special(b, type_id));
            }
            out.push(json!({ "Sequence": { "id": name, "type_id": type_id } }));
            if let Some(e) = eos {
                out.push(special(e, type_id));
            }
        }
        let pair: Vec<Value> = single.iter().cloned().chain(pair).collect();
        let mut special_tokens = serde_json::Map::new();
        for id in [bos, eos].into_iter().flatten() {
            let token = &self.tokens[id as usize];
            special_tokens.insert(
                token.clone(),
                json!({ "id": token, "ids": [id], "tokens": [token] }),
            );
        }
        json!({
            "type": "TemplateProcessing",
            "single": single,
            "pair": pair,
            "special_tokens": special_tokens,
        })
    }

    /// The `added_tokens` of the `tokenizer.json`, in id order: control tokens (special), then
    /// user-defined tokens (not special), then the bos / eos / unknown / padding tokens
    /// (special) that are not added yet; each only when `admit(id, token_type)` holds (the
    /// specials are asked with [`token_type::CONTROL`]).
    pub(super) fn added_tokens(&self, admit: impl Fn(usize, i32) -> bool) -> Vec<Value> {
        let n = self.tokens.len();
        let mut added: Vec<(usize, bool)> = Vec::new();
        let mut is_added = vec![false; n];
        let mut add = |id: usize, kind: i32, special: bool| {
            if !is_added[id] && admit(id, kind) {
                is_added[id] = true;
                added.push((id, special));
            }
        };
        for id in 0..n {
            if self.type_of(id) == token_type::CONTROL {
                add(id, token_type::CONTROL, true);
            }
        }
        for id in 0..n {
            if self.type_of(id) == token_type::USER_DEFINED {
                add(id, token_type::USER_DEFINED, false);
            }
        }
        for id in self.special_ids().into_iter().filter_map(|(_, id)| id) {
            add(id as usize, token_type::CONTROL, true);
        }
        added.sort_unstable();
        added
            .iter()
            .map(|&(id, special)| {
                json!({
                    "id": id,
                    "content": self.tokens[id],
                    "single_word": false,
                    "lstrip": false,
                    "rstrip": false,
                    "normalized": false,
                    "special": special,
                })
            })
            .collect()
    }

    pub(super) fn special_ids(&self) -> [(&'static str, Option<u32>); 4] {
        [
            ("bos_token_id", self.bos_token_id),
            ("eos_token_id", self.eos_token_id),
            ("unknown_token_id", self.unknown_token_id),
            ("padding_token_id", self.padding_token_id),
        ]
    }

    pub(super) fn type_of(&self, id: usize) -> i32 {
        self.token_type
            .get(id)
            .copied()
            .unwrap_or(token_type::NORMAL)
    }
}
