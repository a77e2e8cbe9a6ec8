//! Score models (reward and value models) against HF transformers: `ScoreModel` on the five
//! checkpoints of `tests/fixtures/score/` (written by `tools/gen_score_fixtures.py`,
//! transformers 5.25, float32, eager attention): `LlamaForSequenceClassification` with untied
//! embeddings, `Qwen3ForSequenceClassification` with two labels,
//! `Gemma3TextForSequenceClassification` with a sliding window shorter than the sequences,
//! `Qwen2ForTokenClassification` (verl's critic shape: one label, a bias) and
//! `LlamaForTokenClassification` without a bias. A right-padded batch of three sequences.
//!
//! Tolerance 2e-5 on scores of order 1 (f32 on both sides, sums in another order); each fixture
//! records how far a wrong implementation would be (final norm skipped, pooled one token early:
//! ≥ 1.2 on every fixture), asserted far above the tolerance.

use std::path::PathBuf;

use burn::backend::Flex;
use burn::tensor::{Int, Tensor, TensorData};
use rl_models::{ModelError, ScoreKind, ScoreModel};
use serde_json::Value;

type B = Flex;

const TOL: f32 = 2e-5;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/score")
        .join(name)
}

fn reference(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(name).join("reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ids_of(r: &Value) -> (Tensor<B, 2, Int>, Vec<usize>) {
    let rows: Vec<Vec<i64>> = serde_json::from_value(r["ids"].clone()).unwrap();
    let lengths: Vec<usize> = serde_json::from_value(r["lengths"].clone()).unwrap();
    let (b, t) = (rows.len(), rows[0].len());
    let flat: Vec<i64> = rows.into_iter().flatten().collect();
    let ids = Tensor::from_data(TensorData::new(flat, [b, t]), &Default::default());
    (ids, lengths)
}

fn check_sensitivity(name: &str, r: &Value) {
    for (what, v) in r["sensitivity"].as_object().unwrap() {
        let v = v.as_f64().unwrap() as f32;
        assert!(
            v > 1000.0 * TOL,
            "{name}: {what} moves the scores by only {v}"
        );
    }
}

#[test]
fn reward_models_equal_transformers() {
    for name in ["rm_llama_untied", "rm_qwen3", "rm_gemma3"] {
        let r = reference(name);
        check_sensitivity(name, &r);
        let model = ScoreModel::<B>::load(fixture(name), &Default::default()).unwrap();
        assert_eq!(model.kind(), ScoreKind::Sequence, "{name}");
        let labels = r["num_labels"].as_u64().unwrap() as usize;
        assert_eq!(model.num_labels(), labels, "{name}");
        let (ids, lengths) = ids_of(&r);
        let got: Vec<f32> = model
            .sequence_scores(ids, &lengths)
            .unwrap()
            .into_data()
            .into_vec()
            .unwrap();
        let want: Vec<Vec<f32>> = serde_json::from_value(r["scores"].clone()).unwrap();
        let want: Vec<f32> = want.into_iter().flatten().collect();
        assert_eq!(got.len(), want.len(), "{name}");
        for (k, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!(
                (a - b).abs() <= TOL,
                "{name} [{k}]: {a} vs transformers {b}"
            );
        }
    }
}

#[test]
fn value_models_equal_transformers() {
    for name in ["vm_qwen2", "vm_llama_nobias"] {
        let r = reference(name);
        check_sensitivity(name, &r);
        let model = ScoreModel::<B>::load(fixture(name), &Default::default()).unwrap();
        assert_eq!(model.kind(), ScoreKind::Token, "{name}");
        assert_eq!(model.score.bias.is_some(), name == "vm_qwen2", "{name}");
        let labels = model.num_labels();
        let (ids, lengths) = ids_of(&r);
        let t = ids.dims()[1];
        let mask = rl_models::AttentionMask::right_padded(&lengths, t).unwrap();
        let got: Vec<f32> = model
            .token_scores(ids, Some(&mask))
            .unwrap()
            .into_data()
            .into_vec()
            .unwrap();
        let want: Vec<Vec<Vec<f32>>> = serde_json::from_value(r["scores"].clone()).unwrap();
        let mut compared = 0;
        for (row, seq) in want.iter().enumerate() {
            assert_eq!(seq.len(), lengths[row]);
            for (pos, scores) in seq.iter().enumerate() {
                for (l, b) in scores.iter().enumerate() {
                    let a = got[(row * t + pos) * labels + l];
                    assert!(
                        (a - b).abs() <= TOL,
                        "{name} [{row}, {pos}, {l}]: {a} vs {b}"
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, lengths.iter().sum::<usize>() * labels, "{name}");
    }
}

/// A causal LM is not a score model, a score head of the wrong shape is named with its file, and
/// a batch with an empty row or the wrong number of lengths is refused.
#[test]
fn bad_score_models_and_inputs_are_typed_errors() {
    let dir = tempfile::Builder::new()
        .prefix("rl-models-score-")
        .tempdir()
        .unwrap();
    let src = fixture("rm_qwen3");
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let config_path = dir.path().join("config.json");
    let text = std::fs::read_to_string(&config_path).unwrap();

    let causal = text.replace("Qwen3ForSequenceClassification", "Qwen3ForCausalLM");
    std::fs::write(&config_path, &causal).unwrap();
    let e = ScoreModel::<B>::load(dir.path(), &Default::default()).unwrap_err();
    let msg = e.to_string();
    // The file and the line of the field (`"architectures"` opens line 2 of the fixture).
    assert!(
        msg.contains("config.json:2:") && msg.contains("architectures"),
        "{msg}"
    );
    assert!(msg.contains("ForSequenceClassification"), "{msg}");

    // Three labels declared, two stored (the fixture's config has no `id2label`: two labels
    // are transformers' default, which it does not write).
    assert!(!text.contains("id2label"));
    let three = text.replacen('{', "{\n  \"num_labels\": 3,", 1);
    std::fs::write(&config_path, &three).unwrap();
    let e = ScoreModel::<B>::load(dir.path(), &Default::default()).unwrap_err();
    assert!(
        matches!(&e, ModelError::ShapeMismatch { tensor, .. } if tensor == "score.weight"),
        "{e}"
    );

    std::fs::write(&config_path, &text).unwrap();
    let model = ScoreModel::<B>::load(dir.path(), &Default::default()).unwrap();
    let ids = Tensor::<B, 2, Int>::from_data(
        TensorData::new(vec![5i64, 6, 7, 8], [2, 2]),
        &Default::default(),
    );
    assert!(model.sequence_scores(ids.clone(), &[2, 0]).is_err());
    assert!(model.sequence_scores(ids, &[2]).is_err());
}

fn scores_of(model: &ScoreModel<B>, r: &Value) -> Vec<f32> {
    let (ids, lengths) = ids_of(r);
    let t = ids.dims()[1];
    let mask = rl_models::AttentionMask::right_padded(&lengths, t).unwrap();
    model
        .token_scores(ids, Some(&mask))
        .unwrap()
        .into_data()
        .into_vec()
        .unwrap()
}

/// Every fixture saved and loaded back computes the same scores bit for bit and keeps its
/// classifier class, label count, head bias and pad id. With `RLVR_SCORE_SAVES=DIR` the folders
/// are also written to `DIR/<fixture>`, for `python tools/gen_score_fixtures.py --check DIR/NAME
/// NAME`, which loads one in transformers against the fixture's reference scores.
#[test]
fn saved_score_models_load_back_unchanged() {
    for name in [
        "rm_llama_untied",
        "rm_qwen3",
        "rm_gemma3",
        "vm_qwen2",
        "vm_llama_nobias",
    ] {
        let r = reference(name);
        let model = ScoreModel::<B>::load(fixture(name), &Default::default()).unwrap();
        let dir = tempfile::Builder::new()
            .prefix("rl-models-score-save-")
            .tempdir()
            .unwrap();
        model.save(dir.path()).unwrap();
        if let Some(keep) = std::env::var_os("RLVR_SCORE_SAVES") {
            model.save(PathBuf::from(keep).join(name)).unwrap();
        }
        let back = ScoreModel::<B>::load(dir.path(), &Default::default()).unwrap();
        assert_eq!(scores_of(&model, &r), scores_of(&back, &r), "{name}");
        let read = |p: PathBuf| -> Value {
            serde_json::from_str(&std::fs::read_to_string(p.join("config.json")).unwrap()).unwrap()
        };
        let (ours, hf) = (read(dir.path().to_path_buf()), read(fixture(name)));
        for key in ["architectures", "model_type", "pad_token_id"] {
            assert_eq!(ours[key], hf[key], "{name}: {key}");
        }
        assert_eq!(back.num_labels(), model.num_labels(), "{name}");
        assert_eq!(
            back.score.bias.is_some(),
            model.score.bias.is_some(),
            "{name}"
        );
    }
}

/// A reward model made from a causal LM: its decoder's hidden states, a seeded normal(0, 0.02)
/// head (the same for the same seed, another for another), and a folder that loads back.
#[test]
fn a_score_model_starts_from_a_causal_lm() {
    let lm_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama_tied_gqa");
    let lm = rl_models::CausalLm::<B>::load(&lm_dir, &Default::default()).unwrap();
    let make = |seed| {
        ScoreModel::from_causal_lm(lm.clone(), ScoreKind::Sequence, 1, Some(0), seed).unwrap()
    };
    let (a, b, c) = (make(5), make(5), make(6));
    let w =
        |m: &ScoreModel<B>| -> Vec<f32> { m.score.weight.val().into_data().into_vec().unwrap() };
    assert_eq!(w(&a), w(&b));
    assert_ne!(w(&a), w(&c));
    let std = (w(&a).iter().map(|x| x * x).sum::<f32>() / w(&a).len() as f32).sqrt();
    assert!((0.01..0.03).contains(&std), "{std}");
    assert!(a.score.bias.is_none());
    let ids = Tensor::<B, 2, Int>::from_data(
        TensorData::new(vec![5i64, 9, 3, 7, 11, 0], [2, 3]),
        &Default::default(),
    );
    let s: Vec<f32> = a
        .sequence_scores(ids.clone(), &[3, 2])
        .unwrap()
        .into_data()
        .into_vec()
        .unwrap();
    assert!(s.iter().all(|x| x.is_finite()) && s.len() == 2, "{s:?}");
    let dir = tempfile::Builder::new()
        .prefix("rl-models-score-new-")
        .tempdir()
        .unwrap();
    a.save(dir.path()).unwrap();
    let back = ScoreModel::<B>::load(dir.path(), &Default::default()).unwrap();
    let s2: Vec<f32> = back
        .sequence_scores(ids, &[3, 2])
        .unwrap()
        .into_data()
        .into_vec()
        .unwrap();
    assert_eq!(s, s2);
    let v = ScoreModel::from_causal_lm(lm, ScoreKind::Token, 1, None, 5).unwrap();
    assert_eq!(v.score.bias.as_ref().map(|b| b.val().dims()), Some([1]));
}
