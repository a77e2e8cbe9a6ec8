//! A `tokenizers` tokenizer built from the vocabulary metadata of a GGUF file
//! (`tokenizer.ggml.*`), giving the same token ids as HF transformers' tokenizer loaded from the
//! same file (`AutoTokenizer.from_pretrained(dir, gguf_file=name)`).
//!
//! llama.cpp's `gpt2` model (byte-level BPE) with the `smollm`, `qwen2` and `llama-bpe`
//! pre-tokenizers is built here; its `llama` model (SentencePiece: Gemma, Llama 2, Mistral,
//! TinyLlama …) in [`sentencepiece`]. What transformers' GGUF conversion builds for `gpt2`, and
//! so what [`build_tokenizer`] builds as a `tokenizer.json`:
//!
//! - **Vocabulary.** Token `i` gets id `i`. A token written with characters outside the byte-level
//!   alphabet (GPT-2's `bytes_to_unicode` map, e.g. a raw space) is respelled: each byte of its
//!   UTF-8 form becomes its alphabet character. Merges are the `"a b"` strings of the file, in
//!   order.
//! - **Added tokens.** Control tokens (type 3) become special added tokens and user-defined tokens
//!   (type 4) plain added tokens, both matched whole in the text, never normalized; then the bos,
//!   eos, unknown and padding tokens become special added tokens when they are not added yet.
//!   Tokens with characters outside the byte-level alphabet are never added (transformers skips
//!   them as mislabelled).
//! - **Pre-tokenizer** by `tokenizer.ggml.pre`: `qwen2` and `llama-bpe` split with their regex
//!   (transformers' spelling of the pattern llama.cpp's `llama-vocab.cpp` uses) and then map to
//!   the byte-level alphabet. transformers has no entry for `smollm` and uses GPT-2's byte-level
//!   pre-tokenizer, whose regex is llama.cpp's `smollm` pattern without its first step, a split
//!   before and after every digit: the two differ on a whitespace run that ends in a digit
//!   (`"\n\n42"`: transformers `["\n", "\n", "4", "2"]`, llama.cpp and SmolLM2's own
//!   `tokenizer.json` `["\n\n", "4", "2"]`). This module follows transformers.
//! - **Model**: BPE without unknown token, dropout or byte fallback (a character the vocabulary
//!   cannot spell is dropped, as in transformers); **decoder**: byte-level; **no normalizer**.
//! - **Post-processor**: the bos token before the text when `add_bos_token` is true and the eos
//!   token after it when `add_eos_token` is true (a flag without its token id is ignored).
//!   `add_space_prefix` does not apply to byte-level BPE and is ignored, as in transformers and
//!   llama.cpp.
//!
//! One deliberate difference: transformers' `GPT2Tokenizer` also registers `<|endoftext|>` as a
//! special token when the vocabulary has no such token (Llama 3), with the id `n_tokens`, beyond
//! the model's embeddings. This module does not add it: such text is tokenized as plain text, as
//! by transformers' tokenizer with that added token removed.
//!
//! The vocabulary is validated first (token and type counts, type values, duplicate and empty
//! tokens, special ids in range, merges made of two vocabulary tokens whose concatenation is in
//! the vocabulary); every failure is a [`GgufVocabError`] naming the field and index.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::read::{GgufError, GgufFile};

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

/// The tokenizer models (`tokenizer.ggml.model`) [`build_tokenizer`] supports.
pub const SUPPORTED_MODELS: &[&str] = &["gpt2", "llama"];

/// The pre-tokenizers (`tokenizer.ggml.pre`) [`build_tokenizer`] supports.
pub const SUPPORTED_PRE: &[&str] = &["smollm", "qwen2", "llama-bpe"];

/// transformers' split pattern for `qwen2` (`Qwen2Tokenizer`'s `PRETOKENIZE_REGEX`): digits one
/// by one.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// transformers' split pattern for `llama-bpe` (Llama 3's `tokenizer.json`): up to three digits
/// together.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The tokenizer metadata of a GGUF file: what llama.cpp's `tokenizer.ggml.*` keys hold.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GgufVocab {
    /// `general.architecture` (`gemma3`, `llama`, …): which of transformers' SentencePiece
    /// builders a `llama` vocabulary takes ([`sentencepiece`]).
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

/// GPT-2's `bytes_to_unicode`: the character each byte is written as in a byte-level vocabulary.
/// Printable bytes (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) stand for themselves; the other 68 bytes
/// take the characters from U+0100 on, in byte order.
fn byte_alphabet() -> [char; 256] {
    let mut out = ['\0'; 256];
    let mut next = 256u32;
    for (b, slot) in out.iter_mut().enumerate() {
        let printable =
            (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
        let code = if printable {
            b as u32
        } else {
            let c = next;
            next += 1;
            c
        };
        // Every code here is below 0x144, a valid scalar value.
        *slot = char::from_u32(code).unwrap_or('\0');
    }
    out
}

/// Whether every character of `token` is a byte-level alphabet character.
fn in_alphabet(token: &str, alphabet: &[char; 256]) -> bool {
    token.chars().all(|c| {
        let code = c as u32;
        (code < 256 && alphabet[code as usize] == c) || (256..256 + 68).contains(&code)
    })
}

/// `token` as a byte-level vocabulary writes it: unchanged when it is written in the alphabet,
/// otherwise each UTF-8 byte as its alphabet character.
fn byte_level_spelling(token: &str, alphabet: &[char; 256]) -> String {
    if in_alphabet(token, alphabet) {
        token.to_string()
    } else {
        token.bytes().map(|b| alphabet[b as usize]).collect()
    }
}

fn pre_tokenizer(pre: &str) -> Option<Value> {
    let split = |pattern: &str| {
        json!({
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": { "Regex": pattern },
                    "behavior": "Isolated",
                    "invert": false,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": false,
                    "trim_offsets": true,
                    "use_regex": false,
                },
            ],
        })
    };
    match pre {
        "smollm" => Some(json!({
            "type": "ByteLevel",
            "add_prefix_space": false,
            "trim_offsets": true,
            "use_regex": true,
        })),
        "qwen2" => Some(split(QWEN2_SPLIT)),
        "llama-bpe" => Some(split(LLAMA3_SPLIT)),
        _ => None,
    }
}

/// The `tokenizer.ggml.pre` name of a `tokenizer.json`'s pre-tokenizer, for export: a regex
/// split with Qwen2's or Llama 3's pattern (`qwen2`, `llama-bpe`), or GPT-2's byte-level regex
/// alone or after a digit split (`smollm`: SmolLM2's own `tokenizer.json` and the one
/// [`tokenizer_json`] builds). `None` for any other pre-tokenizer. A tokenizer without one
/// (`null`, the char-level demo tokenizers, whose tokens are single characters without merges,
/// so no split changes their ids) is exported as `qwen2`.
pub fn pre_of_tokenizer_json(tokenizer: &Value) -> Option<&'static str> {
    fn walk<'a>(v: &'a Value, splits: &mut Vec<&'a str>, byte_level_regex: &mut bool) {
        match v["type"].as_str() {
            Some("Sequence") => {
                for p in v["pretokenizers"].as_array().into_iter().flatten() {
                    walk(p, splits, byte_level_regex);
                }
            }
            Some("Split") => splits.push(v["pattern"]["Regex"].as_str().unwrap_or("")),
            Some("ByteLevel") => *byte_level_regex |= v["use_regex"].as_bool().unwrap_or(true),
            _ => {}
        }
    }
    let pre = &tokenizer["pre_tokenizer"];
    if pre.is_null() {
        return Some("qwen2");
    }
    let (mut splits, mut byte_level_regex) = (Vec::new(), false);
    walk(pre, &mut splits, &mut byte_level_regex);
    match (splits.as_slice(), byte_level_regex) {
        ([p], false) if *p == QWEN2_SPLIT => Some("qwen2"),
        ([p], false) if *p == LLAMA3_SPLIT => Some("llama-bpe"),
        ([], true) => Some("smollm"),
        _ => None,
    }
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
    /// [`build_tokenizer`], which needs the respelled vocabulary for that.
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

    fn special_ids(&self) -> [(&'static str, Option<u32>); 4] {
        [
            ("bos_token_id", self.bos_token_id),
            ("eos_token_id", self.eos_token_id),
            ("unknown_token_id", self.unknown_token_id),
            ("padding_token_id", self.padding_token_id),
        ]
    }

    fn type_of(&self, id: usize) -> i32 {
        self.token_type
            .get(id)
            .copied()
            .unwrap_or(token_type::NORMAL)
    }
}

/// The `tokenizer.json` (as JSON) of the tokenizer transformers builds from `vocab`; see the
/// module documentation for what it holds.
pub fn tokenizer_json(vocab: &GgufVocab) -> Result<Value, GgufVocabError> {
    vocab.validate()?;
    if vocab.model == "llama" {
        return sentencepiece::tokenizer_json(vocab);
    }
    let alphabet = byte_alphabet();
    let n = vocab.tokens.len();

    let mut ids: HashMap<String, usize> = HashMap::with_capacity(n);
    let mut spelled: Vec<String> = Vec::with_capacity(n);
    for (i, token) in vocab.tokens.iter().enumerate() {
        let s = byte_level_spelling(token, &alphabet);
        if let Some(&first) = ids.get(&s) {
            return Err(GgufVocabError::DuplicateToken {
                token: s,
                first,
                second: i,
            });
        }
        ids.insert(s.clone(), i);
        spelled.push(s);
    }

    let mut merges = Vec::with_capacity(vocab.merges.len());
    for (index, merge) in vocab.merges.iter().enumerate() {
        let invalid = |reason: String| GgufVocabError::InvalidMerge {
            index,
            merge: merge.clone(),
            reason,
        };
        let mut parts = merge.split(' ');
        let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(invalid("not two tokens separated by one space".to_string()));
        };
        if a.is_empty() || b.is_empty() {
            return Err(invalid("a side is empty".to_string()));
        }
        for side in [a, b] {
            if !ids.contains_key(side) {
                return Err(invalid(format!("{side:?} is not a token")));
            }
        }
        let joined = format!("{a}{b}");
        if !ids.contains_key(&joined) {
            return Err(invalid(format!(
                "the merged token {joined:?} is not a token"
            )));
        }
        merges.push(json!([a, b]));
    }

    // Added tokens: control (special), then user-defined (not special), then the bos / eos /
    // unknown / padding tokens (special) that are not added yet; written in id order.
    let mut added: Vec<(usize, bool)> = Vec::new();
    let mut is_added = vec![false; n];
    let mut add = |id: usize, special: bool, added: &mut Vec<(usize, bool)>| {
        if !is_added[id] && in_alphabet(&vocab.tokens[id], &alphabet) {
            is_added[id] = true;
            added.push((id, special));
        }
    };
    for id in 0..n {
        if vocab.type_of(id) == token_type::CONTROL {
            add(id, true, &mut added);
        }
    }
    for id in 0..n {
        if vocab.type_of(id) == token_type::USER_DEFINED {
            add(id, false, &mut added);
        }
    }
    for (_, id) in vocab.special_ids() {
        if let Some(id) = id {
            add(id as usize, true, &mut added);
        }
    }
    added.sort_unstable();
    let added_tokens: Vec<Value> = added
        .iter()
        .map(|&(id, special)| {
            json!({
                "id": id,
                "content": vocab.tokens[id],
                "single_word": false,
                "lstrip": false,
                "rstrip": false,
                "normalized": false,
                "special": special,
            })
        })
        .collect();

    let bos = vocab
        .bos_token_id
        .filter(|_| vocab.add_bos_token == Some(true));
    let eos = vocab
        .eos_token_id
        .filter(|_| vocab.add_eos_token == Some(true));
    let special = |id: u32, type_id: u32| json!({ "SpecialToken": { "id": vocab.tokens[id as usize], "type_id": type_id } });
    let sequence =
        |name: &str, type_id: u32| json!({ "Sequence": { "id": name, "type_id": type_id } });
    let mut single = Vec::new();
    let mut pair = Vec::new();
    for (name, type_id, out) in [("A", 0, &mut single), ("B", 1, &mut pair)] {
        if let Some(b) = bos {
            out.push(special(b, type_id));
        }
        out.push(sequence(name, type_id));
        if let Some(e) = eos {
            out.push(special(e, type_id));
        }
    }
    let pair: Vec<Value> = single.iter().cloned().chain(pair).collect();
    let mut special_tokens = serde_json::Map::new();
    for id in [bos, eos].into_iter().flatten() {
        let token = &vocab.tokens[id as usize];
        special_tokens.insert(
            token.clone(),
            json!({ "id": token, "ids": [id], "tokens": [token] }),
        );
    }

    let mut vocab_map = serde_json::Map::new();
    for (i, s) in spelled.into_iter().enumerate() {
        vocab_map.insert(s, json!(i));
    }
    let pre = vocab
        .pre
        .as_deref()
        .and_then(pre_tokenizer)
        .ok_or_else(|| GgufVocabError::UnsupportedPre {
            pre: vocab.pre.clone(),
            supported: SUPPORTED_PRE,
        })?;
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added_tokens,
        "normalizer": null,
        "pre_tokenizer": pre,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": single,
            "pair": pair,
            "special_tokens": special_tokens,
        },
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": true,
            "trim_offsets": true,
            "use_regex": true,
        },
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": null,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": false,
            "byte_fallback": false,
            "ignore_merges": false,
            "vocab": vocab_map,
            "merges": merges,
        },
    }))
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

mod sentencepiece;

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod smollm2_tests;
