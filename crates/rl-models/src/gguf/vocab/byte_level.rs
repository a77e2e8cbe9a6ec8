//! The `tokenizer.json` transformers builds for llama.cpp's `gpt2` tokenizer model
//! (byte-level BPE) with the `smollm`, `qwen2` and `llama-bpe` pre-tokenizers:
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

use std::collections::HashMap;

use serde_json::{Value, json};

use super::metadata::{GgufVocab, GgufVocabError, SUPPORTED_PRE};

/// transformers' split pattern for `qwen2` (`Qwen2Tokenizer`'s `PRETOKENIZE_REGEX`): digits one
/// by one.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// transformers' split pattern for `llama-bpe` (Llama 3's `tokenizer.json`): up to three digits
/// together.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GPT-2's `bytes_to_unicode`: the character each byte is written as in a byte-level vocabulary.
/// Printable bytes (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) stand for themselves; the other 68 bytes
/// take the characters from U+0100 on, in byte order.
pub(super) fn byte_alphabet() -> [char; 256] {
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
pub(super) fn byte_level_spelling(token: &str, alphabet: &[char; 256]) -> String {
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
/// `tokenizer_json` builds). `None` for any other pre-tokenizer. A tokenizer without one
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

/// The `tokenizer.json` (as JSON) of the tokenizer transformers builds from a validated `gpt2`
/// vocabulary; see the module documentation for what it holds.
pub(super) fn tokenizer_json(vocab: &GgufVocab) -> Result<Value, GgufVocabError> {
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

    // Added tokens: those written in the byte-level alphabet (transformers skips the others as
    // mislabelled).
    let added_tokens = vocab.added_tokens(|id, _| in_alphabet(&vocab.tokens[id], &alphabet));

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
        "post_processor": vocab.post_processor(),
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
