//! SentencePiece vocabularies of GGUF files (`tokenizer.ggml.model = "llama"`: Gemma, Llama 2,
//! Mistral, TinyLlama …) as the `tokenizer.json` transformers 5.25 builds from the same file
//! (`integrations/gguf/gguf_tokenizer_mapping.py`), so that the ids are transformers'.
//!
//! Both builders make a BPE model with byte fallback (an unknown character becomes its UTF-8
//! bytes `<0xNN>`), `<unk>`-style unknown token fused, and merges that the file rarely has: they
//! are then derived from the vocabulary as transformers' `generate_merges` does. Every token of
//! two or more characters is cut at every character boundary; each cut whose two sides are both
//! tokens is a merge with the token's score; a token's merges are ordered by the ids of (left,
//! right); all merges are then sorted, stably, by score, then left length, then right length,
//! each from high to low.
//!
//! - **Gemma** (`general.architecture` `gemma`, `gemma2`, `gemma3`; transformers'
//!   `gemma_tokenizer`): a token made only of whitespace that contains a space is respelled as
//!   as many `▁` as it has characters (the file writes `"  "` where the model's vocabulary has
//!   `"▁▁"`); the score of a token is minus its id (Gemma's file scores do not follow its merge
//!   order, its token order does). Normalizer: every space becomes `▁`; pre-tokenizer: a split on
//!   spaces (of which none are left); decoder: `▁` → space, byte fallback, fuse.
//! - **Llama** (any other architecture; transformers' `LlamaTokenizer`): scores from
//!   `tokenizer.ggml.scores` (or the file's merges); no normalizer; pre-tokenizer Metaspace with
//!   `▁` prepended to the first word only (`prepend_scheme = "first"`: transformers'
//!   `LlamaTokenizer` default, whatever the file's `add_space_prefix` says); decoder `▁` → space,
//!   byte fallback, fuse, and one leading space stripped.
//!
//! Added tokens, as for byte-level vocabularies: control tokens (type 3) special, user-defined
//! tokens (type 4) that are in the vocabulary not special, and the bos / eos / unknown / padding
//! tokens special; all matched whole in the raw text. The post-processor adds bos and eos as the
//! file's `add_bos_token` / `add_eos_token` say.
//!
//! Phi-3's vocabulary (a prefix-space normalizer in transformers) is refused by name.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::metadata::{GgufVocab, GgufVocabError, token_type};

/// The `tokenizer.json` of a SentencePiece vocabulary (see the module documentation); `vocab`
/// is validated.
pub(super) fn tokenizer_json(vocab: &GgufVocab) -> Result<Value, GgufVocabError> {
    let gemma = matches!(vocab.architecture.as_str(), "gemma" | "gemma2" | "gemma3");
    if vocab.architecture == "phi3" {
        return Err(GgufVocabError::UnsupportedArchitecture {
            architecture: vocab.architecture.clone(),
        });
    }
    // The vocabulary as transformers' dict holds it: a repeated token keeps its last id.
    let tokens: Vec<String> = if gemma {
        vocab.tokens.iter().map(|t| respell_blank(t)).collect()
    } else {
        vocab.tokens.clone()
    };
    let mut ids: HashMap<&str, usize> = HashMap::with_capacity(tokens.len());
    let mut order: Vec<&str> = Vec::with_capacity(tokens.len());
    for (i, t) in tokens.iter().enumerate() {
        if ids.insert(t.as_str(), i).is_none() {
            order.push(t.as_str());
        }
    }

    let merges: Vec<Value> = if !vocab.merges.is_empty() {
        vocab
            .merges
            .iter()
            .enumerate()
            .map(|(index, m)| match m.split_once(' ') {
                Some((a, b)) if !a.is_empty() && !b.is_empty() => Ok(json!([a, b])),
                _ => Err(GgufVocabError::InvalidMerge {
                    index,
                    merge: m.clone(),
                    reason: "not two tokens separated by a space".into(),
                }),
            })
            .collect::<Result<_, _>>()?
    } else {
        let score = |t: &str| -> f64 {
            let id = ids[t];
            if gemma {
                -(id as f64)
            } else {
                f64::from(vocab.scores[id])
            }
        };
        derive_merges(&order, &ids, score)
            .into_iter()
            .map(|(a, b)| json!([a, b]))
            .collect()
    };

    // Added tokens: user-defined ones only when the vocabulary spells them.
    let added = vocab.added_tokens(|id, kind| {
        kind != token_type::USER_DEFINED || ids.contains_key(vocab.tokens[id].as_str())
    });

    let mut vocab_map = serde_json::Map::with_capacity(ids.len());
    for t in &order {
        vocab_map.insert(t.to_string(), json!(ids[t]));
    }
    let unk = vocab
        .unknown_token_id
        .map(|id| vocab.tokens[id as usize].clone())
        .unwrap_or_else(|| "<unk>".to_string());
    let (normalizer, pre_tokenizer, decoder) = if gemma {
        (
            json!({ "type": "Replace", "pattern": { "String": " " }, "content": "▁" }),
            json!({
                "type": "Split",
                "pattern": { "String": " " },
                "behavior": "MergedWithPrevious",
                "invert": false,
            }),
            json!({
                "type": "Sequence",
                "decoders": [
                    { "type": "Replace", "pattern": { "String": "▁" }, "content": " " },
                    { "type": "ByteFallback" },
                    { "type": "Fuse" },
                ],
            }),
        )
    } else {
        (
            Value::Null,
            json!({
                "type": "Metaspace",
                "replacement": "▁",
                "prepend_scheme": "first",
                "split": false,
            }),
            json!({
                "type": "Sequence",
                "decoders": [
                    { "type": "Replace", "pattern": { "String": "▁" }, "content": " " },
                    { "type": "ByteFallback" },
                    { "type": "Fuse" },
                    { "type": "Strip", "content": " ", "start": 1, "stop": 0 },
                ],
            }),
        )
    };
    Ok(json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": vocab.post_processor(),
        "decoder": decoder,
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": unk,
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": true,
            "byte_fallback": true,
            "ignore_merges": false,
            "vocab": vocab_map,
            "merges": merges,
        },
    }))
}

/// Python's `str.isspace` for one character: Unicode White_Space, plus the information
/// separators U+001C..U+001F, which Python counts and Rust's `char::is_whitespace` does not.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// transformers' `gemma_tokenizer` respelling: a token that contains a space and is nothing but
/// whitespace becomes one `▁` per character.
fn respell_blank(token: &str) -> String {
    if token.contains(' ') && token.chars().all(python_space) {
        "▁".repeat(token.chars().count())
    } else {
        token.to_string()
    }
}

/// transformers' `generate_merges(vocab, vocab_scores)`: every cut of a token (in `order`, the
/// order of first appearance) into two vocabulary tokens, a token's cuts ordered by the ids of
/// their sides, then all of them sorted stably by (score, left length, right length) from high
/// to low; lengths in characters.
fn derive_merges<'a>(
    order: &[&'a str],
    ids: &HashMap<&str, usize>,
    score: impl Fn(&str) -> f64,
) -> Vec<(&'a str, &'a str)> {
    struct Cut<'a> {
        left: &'a str,
        right: &'a str,
        score: f64,
        left_len: usize,
        right_len: usize,
    }
    let mut cuts: Vec<Cut<'a>> = Vec::new();
    for &token in order {
        let s = score(token);
        let mut local: Vec<(usize, usize, Cut<'a>)> = Vec::new();
        let bounds: Vec<usize> = token.char_indices().map(|(i, _)| i).skip(1).collect();
        for (k, &at) in bounds.iter().enumerate() {
            let (left, right) = token.split_at(at);
            if let (Some(&l), Some(&r)) = (ids.get(left), ids.get(right)) {
                local.push((
                    l,
                    r,
                    Cut {
                        left,
                        right,
                        score: s,
                        left_len: k + 1,
                        right_len: bounds.len() - k,
                    },
                ));
            }
        }
        local.sort_by_key(|(l, r, _)| (*l, *r));
        cuts.extend(local.into_iter().map(|(_, _, c)| c));
    }
    cuts.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.left_len.cmp(&a.left_len))
            .then(b.right_len.cmp(&a.right_len))
    });
    cuts.into_iter().map(|c| (c.left, c.right)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `generate_merges` on a vocabulary small enough to derive by hand: tokens a(0) b(1) c(2)
    /// ab(3) bc(4) abc(5), scores minus the id. abc's cuts a|bc (ids 0, 4) and ab|c (3, 2);
    /// all cuts by score, high first: ab (-3) > bc (-4) > abc's two (-5), which the left length
    /// then orders ab|c (2) before a|bc (1). transformers 5.25's
    /// `generate_merges({t: i}, {t: -i})` gives the same list.
    #[test]
    fn merges_follow_generate_merges() {
        let order = ["a", "b", "c", "ab", "bc", "abc"];
        let ids: HashMap<&str, usize> = order.iter().enumerate().map(|(i, t)| (*t, i)).collect();
        let got = derive_merges(&order, &ids, |t| -(ids[t] as f64));
        assert_eq!(got, vec![("a", "b"), ("b", "c"), ("ab", "c"), ("a", "bc")]);
    }

    #[test]
    fn blank_tokens_are_respelled_like_transformers() {
        assert_eq!(respell_blank("  "), "▁▁");
        assert_eq!(respell_blank(" \n"), "▁▁");
        assert_eq!(respell_blank("\n\n"), "\n\n");
        assert_eq!(respell_blank(" a"), " a");
        assert_eq!(respell_blank("\u{1c} "), "▁▁");
    }
}
