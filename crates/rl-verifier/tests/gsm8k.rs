//! The `gsm8k` verifier against verl 0.9.1's own GSM8K scorer
//! (`verl/utils/reward_score/gsm8k.py`): `extract_solution` and `compute_score` (score 1,
//! format_score 0) of 631 responses under both methods, from
//! `tools/verifier/gen_gsm8k_parity.py` (`tests/data/gsm8k_parity.json`).

use rl_verifier::gsm8k::{Gsm8kConfig, Gsm8kMethod, extract_solution};
use rl_verifier::{OutcomeKind, Verifier, VerifierConfig};
use serde_json::Value;

#[test]
fn extraction_and_scores_equal_verls() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gsm8k_parity.json");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = data["cases"].as_array().unwrap();
    assert!(cases.len() > 600);
    let mut correct = 0;
    for (method, name) in [
        (Gsm8kMethod::Strict, "strict"),
        (Gsm8kMethod::Flexible, "flexible"),
    ] {
        let v = Gsm8kConfig { method }.build().unwrap();
        let rewards = VerifierConfig::Gsm8k(Gsm8kConfig { method }).default_rewards();
        for (i, c) in cases.iter().enumerate() {
            let (response, gold) = (c["response"].as_str().unwrap(), c["gold"].as_str().unwrap());
            let want = &c[name];
            assert_eq!(
                extract_solution(response, method).as_deref(),
                want["extracted"].as_str(),
                "{name} case {i}: {response:?}"
            );
            let verification = v.verify(response, gold);
            let score = rewards.reward(&verification.outcome);
            assert_eq!(
                score,
                want["score"].as_f64().unwrap(),
                "{name} case {i}: {response:?} vs {gold:?}"
            );
            if verification.outcome.kind() == OutcomeKind::Correct {
                correct += 1;
            }
            if want["extracted"].is_null() {
                assert_eq!(
                    verification.outcome.kind(),
                    OutcomeKind::UnparseableResponse
                );
            }
        }
    }
    assert!(
        correct > 100,
        "only {correct} correct verdicts: the cases test little"
    );
}

#[test]
fn the_verifier_is_registered_by_name_with_strict_default() {
    let cfg = VerifierConfig::from_name("gsm8k").unwrap();
    assert_eq!(cfg, VerifierConfig::Gsm8k(Gsm8kConfig::default()));
    let toml_cfg: VerifierConfig =
        toml::from_str("name = \"gsm8k\"\nmethod = \"flexible\"").unwrap();
    assert_eq!(
        toml_cfg,
        VerifierConfig::Gsm8k(Gsm8kConfig {
            method: Gsm8kMethod::Flexible
        })
    );
    let v = cfg.build().unwrap();
    assert!(v.verify("Half of 24 is 12.\n#### 12", "12").is_correct());
    assert!(!v.verify("Half of 24 is 12.", "12").is_correct());
}
