use super::byte_level::{byte_alphabet, byte_level_spelling};
use super::*;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A tiny byte-level vocabulary, `pre` = `qwen2`:
///
/// | id | token | type |
/// |----|-------|------|
/// | 0 | `a` | normal |
/// | 1 | `b` | normal |
/// | 2 | `Ġ` (a space) | normal |
/// | 3 | `ab` | normal |
/// | 4 | `Ġab` | normal |
/// | 5 | `<|x|>` | control |
/// | 6 | `<t>` | user-defined |
/// | 7 | `1` | normal |
/// | 8 | `Ċ` (a newline) | normal |
/// | 9 | `ĊĊ` | normal |
///
/// merges `a b` (→ `ab`), `Ġ ab` (→ `Ġab`), `Ċ Ċ` (→ `ĊĊ`); eos 5.
fn tiny() -> GgufVocab {
    GgufVocab {
        model: "gpt2".into(),
        pre: Some("qwen2".into()),
        tokens: ["a", "b", "Ġ", "ab", "Ġab", "<|x|>", "<t>", "1", "Ċ", "ĊĊ"]
            .map(String::from)
            .to_vec(),
        token_type: vec![1, 1, 1, 1, 1, 3, 4, 1, 1, 1],
        merges: ["a b", "Ġ ab", "Ċ Ċ"].map(String::from).to_vec(),
        eos_token_id: Some(5),
        ..GgufVocab::default()
    }
}

fn ids(tok: &tokenizers::Tokenizer, text: &str, special: bool) -> Vec<u32> {
    tok.encode(text, special).unwrap().get_ids().to_vec()
}

#[test]
fn tiny_vocabulary_encodes_as_derived_by_hand() {
    let tok = build_tokenizer(&tiny()).unwrap();
    // "ab ab": the qwen2 regex gives "ab" and " ab"; byte-level: "ab", "Ġab"; merges a+b → ab
    // and Ġ+ab → Ġab: [3, 4].
    assert_eq!(ids(&tok, "ab ab", false), vec![3, 4]);
    // "ba": one piece "ba"; no merge b+a: [1, 0].
    assert_eq!(ids(&tok, "ba", false), vec![1, 0]);
    // "<|x|>" is a control token and "<t>" a user-defined one, both matched whole; the rest
    // splits as "ab" and " " (a lone space at the end is its own piece): [3, 5, 6, 3, 2].
    assert_eq!(ids(&tok, "ab<|x|><t>ab ", false), vec![3, 5, 6, 3, 2]);
    // "a\n\n11": "a", "\n\n" (one piece: \s*[\r\n]+), "1", "1" (qwen2 splits digits);
    // Ċ+Ċ → ĊĊ: [0, 9, 7, 7].
    assert_eq!(ids(&tok, "a\n\n11", false), vec![0, 9, 7, 7]);
    // "c" is not in the vocabulary and there is no unknown token: the `tokenizers` BPE
    // leaves it out of the word before merging, so "a" and "b" meet and merge: [3].
    assert_eq!(ids(&tok, "acb", false), vec![3]);
    // add_bos_token / add_eos_token are unset: nothing added.
    assert_eq!(ids(&tok, "ab", true), vec![3]);
    // Decoding maps the byte-level characters back; skip_special_tokens drops <|x|> only.
    assert_eq!(
        tok.decode(&[3, 5, 6, 4, 9], false).unwrap(),
        "ab<|x|><t> ab\n\n"
    );
    assert_eq!(tok.decode(&[3, 5, 6, 4], true).unwrap(), "ab<t> ab");
}

#[test]
fn smollm_and_llama_pre_tokenizers_differ_as_documented() {
    let mut v = tiny();
    v.tokens[7] = "12".into();
    v.tokens.push("1".into());
    v.tokens.push("2".into());
    v.token_type.extend([1, 1]);
    v.merges.push("1 2".into());
    // ids: 7 = "12", 10 = "1", 11 = "2"; merge 1+2 → 12.
    v.pre = Some("qwen2".into());
    let qwen = build_tokenizer(&v).unwrap();
    // qwen2 splits every digit: "1", "2", "1", "2" → [10, 11, 10, 11].
    assert_eq!(ids(&qwen, "1212", false), vec![10, 11, 10, 11]);
    v.pre = Some("llama-bpe".into());
    let llama = build_tokenizer(&v).unwrap();
    // llama-bpe keeps up to three digits: "121", "2" → 1+2 → 12, then 1: [7, 10, 11].
    assert_eq!(ids(&llama, "1212", false), vec![7, 10, 11]);
    v.pre = Some("smollm".into());
    let smol = build_tokenizer(&v).unwrap();
    // GPT-2's regex keeps the digits together: "1212" → 12, 12: [7, 7].
    assert_eq!(ids(&smol, "1212", false), vec![7, 7]);
}

#[test]
fn bos_and_eos_are_added_when_the_flags_say_so() {
    let mut v = tiny();
    v.bos_token_id = Some(6);
    v.add_bos_token = Some(true);
    v.add_eos_token = Some(true);
    let tok = build_tokenizer(&v).unwrap();
    assert_eq!(ids(&tok, "ab", true), vec![6, 3, 5]);
    assert_eq!(ids(&tok, "ab", false), vec![3]);
    let pair = tok.encode(("ab", "b"), true).unwrap();
    assert_eq!(pair.get_ids(), &[6, 3, 5, 6, 1, 5]);
    // A flag without its id is ignored.
    v.bos_token_id = None;
    let tok = build_tokenizer(&v).unwrap();
    assert_eq!(ids(&tok, "ab", true), vec![3, 5]);
}

#[test]
fn special_ids_become_special_added_tokens_unless_added_already() {
    let mut v = tiny();
    // The padding token is the normal token "b": it becomes special (skipped when decoding
    // with skip_special_tokens); the user-defined "<t>" as eos stays not special.
    v.padding_token_id = Some(1);
    v.eos_token_id = Some(6);
    let tok = build_tokenizer(&v).unwrap();
    assert_eq!(tok.decode(&[0, 1, 6], true).unwrap(), "a<t>");
    let spec = tokenizer_json(&v).unwrap();
    let added: Vec<(u64, bool)> = spec["added_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["id"].as_u64().unwrap(), a["special"].as_bool().unwrap()))
        .collect();
    assert_eq!(added, vec![(1, true), (5, true), (6, false)]);
}

#[test]
fn tokens_outside_the_byte_alphabet_are_respelled_and_never_added() {
    let mut v = tiny();
    // A raw space token: respelled "Ġ", a duplicate of id 2.
    v.tokens.push(" ".into());
    v.token_type.push(1);
    assert_eq!(
        tokenizer_json(&v).unwrap_err(),
        GgufVocabError::DuplicateToken {
            token: "Ġ".into(),
            first: 2,
            second: 10
        }
    );
    // "x y" as a control token: respelled "xĠy" in the vocabulary, not an added token.
    v.tokens[10] = "x y".into();
    v.token_type[10] = 3;
    let spec = tokenizer_json(&v).unwrap();
    assert_eq!(spec["model"]["vocab"]["xĠy"], json!(10));
    assert!(
        spec["added_tokens"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["id"] != json!(10))
    );
}

#[test]
fn unsupported_models_and_pre_tokenizers_are_named() {
    let mut v = tiny();
    v.model = "t5".into();
    let e = build_tokenizer(&v).unwrap_err();
    assert!(matches!(&e, GgufVocabError::UnsupportedModel { model, .. } if model == "t5"));
    assert!(e.to_string().contains("\"gpt2\", \"llama\""), "{e}");
    let mut v = tiny();
    v.model = "llama".into();
    v.architecture = "phi3".into();
    assert_eq!(
        build_tokenizer(&v).unwrap_err(),
        GgufVocabError::UnsupportedArchitecture {
            architecture: "phi3".into()
        }
    );
    let mut v = tiny();
    v.pre = Some("deepseek-llm".into());
    let e = build_tokenizer(&v).unwrap_err();
    assert_eq!(
        e,
        GgufVocabError::UnsupportedPre {
            pre: Some("deepseek-llm".into()),
            supported: SUPPORTED_PRE
        }
    );
    let msg = e.to_string();
    assert!(
        msg.contains("deepseek-llm") && msg.contains("smollm") && msg.contains("llama-bpe"),
        "{msg}"
    );
    v.pre = None;
    assert!(matches!(
        build_tokenizer(&v),
        Err(GgufVocabError::UnsupportedPre { pre: None, .. })
    ));
}

#[test]
fn invalid_vocabularies_are_typed_errors() {
    let check = |f: &dyn Fn(&mut GgufVocab), want: GgufVocabError| {
        let mut v = tiny();
        f(&mut v);
        assert_eq!(build_tokenizer(&v).unwrap_err(), want);
    };
    check(
        &|v| {
            v.tokens.clear();
            v.token_type.clear();
        },
        GgufVocabError::NoTokens,
    );
    check(
        &|v| {
            v.token_type.pop();
        },
        GgufVocabError::TokenTypeCount {
            tokens: 10,
            token_types: 9,
        },
    );
    check(
        &|v| v.scores = vec![0.0; 9],
        GgufVocabError::ScoreCount {
            tokens: 10,
            scores: 9,
        },
    );
    check(
        &|v| {
            v.model = "llama".into();
            v.merges.clear();
        },
        GgufVocabError::NoScores,
    );
    check(
        &|v| v.token_type[4] = 7,
        GgufVocabError::InvalidTokenType { index: 4, value: 7 },
    );
    check(
        &|v| v.token_type[4] = -1,
        GgufVocabError::InvalidTokenType {
            index: 4,
            value: -1,
        },
    );
    check(
        &|v| v.tokens[3] = String::new(),
        GgufVocabError::EmptyToken { index: 3 },
    );
    check(
        &|v| v.tokens[9] = "ab".into(),
        GgufVocabError::DuplicateToken {
            token: "ab".into(),
            first: 3,
            second: 9,
        },
    );
    check(
        &|v| v.bos_token_id = Some(10),
        GgufVocabError::SpecialIdOutOfRange {
            field: "bos_token_id",
            id: 10,
            n_tokens: 10,
        },
    );
    check(
        &|v| v.padding_token_id = Some(u32::MAX),
        GgufVocabError::SpecialIdOutOfRange {
            field: "padding_token_id",
            id: u32::MAX,
            n_tokens: 10,
        },
    );
    check(&|v| v.merges.clear(), GgufVocabError::NoMerges);
    let merge = |index: usize, merge: &str, reason: &str| GgufVocabError::InvalidMerge {
        index,
        merge: merge.into(),
        reason: reason.into(),
    };
    check(
        &|v| v.merges[1] = "Ġab".into(),
        merge(1, "Ġab", "not two tokens separated by one space"),
    );
    check(
        &|v| v.merges[1] = "Ġ a b".into(),
        merge(1, "Ġ a b", "not two tokens separated by one space"),
    );
    check(
        &|v| v.merges[2] = "Ċ ".into(),
        merge(2, "Ċ ", "a side is empty"),
    );
    check(
        &|v| v.merges[0] = "a c".into(),
        merge(0, "a c", "\"c\" is not a token"),
    );
    check(
        &|v| v.merges[0] = "b a".into(),
        merge(0, "b a", "the merged token \"ba\" is not a token"),
    );
    // Every check above is a typed error; none panics. A type of 0 (undefined) is accepted.
    let mut v = tiny();
    v.token_type[0] = 0;
    assert!(build_tokenizer(&v).is_ok());
    // No token types at all: every token is normal, so the user-defined "<t>" is plain text
    // (its characters are not tokens); "<|x|>" stays whole as the eos token.
    let mut v = tiny();
    v.token_type.clear();
    let tok = build_tokenizer(&v).unwrap();
    assert!(!ids(&tok, "<t>", false).contains(&6));
    assert_eq!(ids(&tok, "<|x|>", false), vec![5]);
}

#[test]
fn byte_alphabet_is_gpt2s() {
    let a = byte_alphabet();
    assert_eq!(a[b' ' as usize], 'Ġ');
    assert_eq!(a[b'\n' as usize], 'Ċ');
    assert_eq!(a[b'\t' as usize], 'ĉ');
    assert_eq!(a[0], 'Ā');
    assert_eq!(a[b'!' as usize], '!');
    assert_eq!(a[0xAD], 'Ń');
    assert_eq!(a[0xFF], 'ÿ');
    let mut all: Vec<char> = a.to_vec();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 256);
    assert_eq!(byte_level_spelling("é x", &a), "Ã©Ġx");
    assert_eq!(byte_level_spelling("Ġx", &a), "Ġx");
}

// ---- fixtures of HF transformers' ids (tools/gguf/gen_tokenizer_fixture.py) ----

/// FNV-1a 64 over each item as its UTF-8 length (u64, little endian) then its bytes; the
/// fixture script computes the same.
pub(crate) fn fnv1a64<I: IntoIterator<Item = S>, S: ToString>(items: I) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for item in items {
        let s = item.to_string();
        for &b in (s.len() as u64).to_le_bytes().iter().chain(s.as_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

pub(crate) fn fixture_path(name: &str) -> PathBuf {
    crate::crate_dir().join("tests/fixtures/gguf").join(name)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture's special ids and flags on a vocabulary.
fn apply_fixture_specials(v: &mut GgufVocab, f: &Value) {
    let id = |k: &str| f[k].as_u64().map(|x| x as u32);
    v.bos_token_id = id("bos_token_id");
    v.eos_token_id = id("eos_token_id");
    v.unknown_token_id = id("unknown_token_id");
    v.padding_token_id = id("padding_token_id");
    v.add_bos_token = f["add_bos_token"].as_bool();
    v.add_eos_token = f["add_eos_token"].as_bool();
    v.add_space_prefix = f["add_space_prefix"].as_bool();
}

/// Checks that `vocab` is the fixture's (sizes, FNV digests, special ids).
pub(crate) fn assert_vocab_matches(vocab: &GgufVocab, fixture: &Value) {
    let f = &fixture["vocab"];
    assert_eq!(Some(vocab.model.as_str()), f["model"].as_str());
    assert_eq!(vocab.pre.as_deref(), f["pre"].as_str());
    assert_eq!(Some(vocab.tokens.len() as u64), f["n_tokens"].as_u64());
    assert_eq!(Some(vocab.merges.len() as u64), f["n_merges"].as_u64());
    assert_eq!(
        Some(fnv1a64(&vocab.tokens).as_str()),
        f["tokens_fnv1a64"].as_str()
    );
    assert_eq!(
        Some(fnv1a64(&vocab.token_type).as_str()),
        f["token_types_fnv1a64"].as_str()
    );
    assert_eq!(
        Some(fnv1a64(&vocab.merges).as_str()),
        f["merges_fnv1a64"].as_str()
    );
    let mut expected = vocab.clone();
    apply_fixture_specials(&mut expected, f);
    assert_eq!(
        vocab, &expected,
        "special ids / flags differ from the fixture"
    );
}

/// Encodes every case of a fixture with `tok` and compares with transformers: ids without
/// special tokens (`ids_without_phantom` where present), ids with them (`special_prefix` +
/// ids + `special_suffix`) and the decoded text. Returns the number of cases (all equal) and
/// the number of them that are phantom-token cases; panics listing the first mismatches.
pub(crate) fn assert_cases_match(tok: &tokenizers::Tokenizer, fixture: &Value) -> (usize, usize) {
    let as_ids = |v: &Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    let prefix = as_ids(&fixture["special_prefix"]);
    let suffix = as_ids(&fixture["special_suffix"]);
    let n_tokens = fixture["vocab"]["n_tokens"].as_u64().unwrap() as u32;
    let cases = fixture["cases"].as_array().unwrap();
    let texts: Vec<&str> = cases.iter().map(|c| c["text"].as_str().unwrap()).collect();
    let plain = tok.encode_batch(texts.clone(), false).unwrap();
    let with_special = tok.encode_batch(texts.clone(), true).unwrap();
    let mut failures = Vec::new();
    let mut phantom = 0;
    for (i, c) in cases.iter().enumerate() {
        let expected = match c.get("ids_without_phantom") {
            Some(v) => {
                phantom += 1;
                as_ids(v)
            }
            None => as_ids(&c["ids"]),
        };
        let got = plain[i].get_ids();
        if got != expected.as_slice() {
            failures.push(format!(
                "case {i} {:?}: got {got:?}, transformers {expected:?}",
                texts[i]
            ));
            continue;
        }
        assert!(got.iter().all(|&id| id < n_tokens));
        let full: Vec<u32> = prefix
            .iter()
            .chain(&expected)
            .chain(&suffix)
            .copied()
            .collect();
        if with_special[i].get_ids() != full.as_slice() {
            failures.push(format!(
                "case {i} {:?} with special tokens: got {:?}, transformers {full:?}",
                texts[i],
                with_special[i].get_ids()
            ));
            continue;
        }
        if c.get("ids_without_phantom").is_none() {
            let want = c["decoded"].as_str().unwrap_or(texts[i]);
            let decoded = tok.decode(&expected, false).unwrap();
            if decoded != want {
                failures.push(format!(
                    "case {i} decode: got {decoded:?}, transformers {want:?}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from transformers:\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    (cases.len(), phantom)
}

/// llama.cpp's `TextModel.does_token_look_special`.
fn looks_special(t: &str) -> bool {
    matches!(t, "<pad>" | "<mask>" | "<2mass>" | "[@BOS@]")
        || (t.starts_with("<|") && t.ends_with("|>"))
        || (t.starts_with("<｜") && t.ends_with("｜>"))
        || (t.starts_with("<unused") && t.ends_with('>'))
}

/// The vocabulary llama.cpp's converter writes for a HF `tokenizer.json`
/// (`TextModel.get_vocab_base`): `n_tokens` ids, `[PAD<id>]` (unused) where the tokenizer has
/// no token, added tokens control when special or special-looking and user-defined otherwise,
/// the rest normal; merges as `"a b"`. Special ids and flags come from the fixture.
fn vocab_from_tokenizer_json(path: &Path, fixture: &Value) -> GgufVocab {
    let tj = read_json(path);
    let f = &fixture["vocab"];
    let n = f["n_tokens"].as_u64().unwrap() as usize;
    let mut tokens: Vec<Option<String>> = vec![None; n];
    let mut types = vec![token_type::UNUSED; n];
    for (t, id) in tj["model"]["vocab"].as_object().unwrap() {
        let id = id.as_u64().unwrap() as usize;
        tokens[id] = Some(t.clone());
        types[id] = token_type::NORMAL;
    }
    for a in tj["added_tokens"].as_array().unwrap() {
        let id = a["id"].as_u64().unwrap() as usize;
        let content = a["content"].as_str().unwrap();
        tokens[id] = Some(content.to_string());
        types[id] = if a["special"].as_bool().unwrap() || looks_special(content) {
            token_type::CONTROL
        } else {
            token_type::USER_DEFINED
        };
    }
    let merges = tj["model"]["merges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match m {
            Value::String(s) => s.clone(),
            Value::Array(p) => format!("{} {}", p[0].as_str().unwrap(), p[1].as_str().unwrap()),
            other => panic!("merge {other}"),
        })
        .collect();
    let mut v = GgufVocab {
        model: "gpt2".into(),
        pre: f["pre"].as_str().map(str::to_string),
        tokens: tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| t.unwrap_or_else(|| format!("[PAD{i}]")))
            .collect(),
        token_type: types,
        merges,
        ..GgufVocab::default()
    };
    apply_fixture_specials(&mut v, f);
    v
}

fn fetched_tokenizer(env: &str, folder: &str, script: &str) -> PathBuf {
    let path = std::env::var_os(env).map(PathBuf::from).unwrap_or_else(|| {
        crate::crate_dir()
            .join("../../.cache")
            .join(folder)
            .join("tokenizer.json")
    });
    assert!(
        path.is_file(),
        "{} is missing: run bash {script} (or set {env} to its tokenizer.json)",
        path.display()
    );
    path
}

fn check_fetched(fixture: &str, env: &str, folder: &str, script: &str) -> (usize, usize) {
    let fixture = read_json(&fixture_path(fixture));
    let vocab = vocab_from_tokenizer_json(&fetched_tokenizer(env, folder, script), &fixture);
    assert_vocab_matches(&vocab, &fixture);
    let tok = build_tokenizer(&vocab).unwrap();
    assert_cases_match(&tok, &fixture)
}

#[test]
fn qwen2_cases_match_transformers() {
    let (n, phantom) = check_fetched(
        "qwen2_tokenizer_cases.json",
        "RLVR_QWEN3_TOKENIZER",
        "qwen3-tokenizer",
        "scripts/fetch-qwen3-tokenizer.sh",
    );
    assert!(n >= 1000);
    assert_eq!(phantom, 0);
}

#[test]
fn llama_bpe_cases_match_transformers() {
    let (n, phantom) = check_fetched(
        "llama_bpe_tokenizer_cases.json",
        "RLVR_LLAMA3_TOKENIZER",
        "llama3-tokenizer",
        "scripts/fetch-llama3-tokenizer.sh",
    );
    assert!(n >= 1000);
    // Llama 3 has no <|endoftext|>: the cases that write it are compared with transformers'
    // ids without its phantom token (module documentation).
    assert!(phantom > 0);
}

/// llama.cpp's Llama 2 SentencePiece vocabulary (`ggml-vocab-llama-spm.gguf` from PyPI's
/// llama-cpp-python source archive, scripts/fetch-llama-spm-vocab.sh: 32,000 tokens with scores,
/// no merges) gives transformers' ids on 1,200 strings (tools/gen_spm_tokenizer_fixture.py), BOS
/// added as the file says, and the same text decoded back.
#[test]
fn llama_spm_cases_match_transformers() {
    let path = std::env::var_os("RLVR_LLAMA_SPM_VOCAB")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/rlvr-llama/vocab/ggml-vocab-llama-spm.gguf"))
        })
        .unwrap_or_default();
    assert!(
        path.is_file(),
        "{} is missing: run bash scripts/fetch-llama-spm-vocab.sh (or set RLVR_LLAMA_SPM_VOCAB)",
        path.display()
    );
    let file = crate::gguf::GgufFile::open(&path).unwrap();
    let vocab = GgufVocab::read(&file).unwrap();
    assert_eq!(
        (vocab.model.as_str(), vocab.tokens.len()),
        ("llama", 32_000)
    );
    assert!(vocab.merges.is_empty() && vocab.scores.len() == 32_000);
    let tok = build_tokenizer(&vocab).unwrap();
    let fixture = read_json(&fixture_path("llama_spm_tokenizer_cases.json"));
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 1000);
    for (i, case) in cases.iter().enumerate() {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(ids(&tok, text, true), want, "case {i}: {text:?}");
        assert_eq!(
            tok.decode(&want, false).unwrap(),
            case["decoded"].as_str().unwrap(),
            "case {i}: {text:?}"
        );
    }
}
