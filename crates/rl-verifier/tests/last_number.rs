//! The `last_number` verifier against the cases of `tests/data/last_number_cases.json`, whose
//! expected outcomes were written by the Python reference of the documented rule
//! (`tools/verifier/last_number_ref.py`, regexes and `decimal.Decimal`); the registry entry;
//! and random inputs that must never panic.

use proptest::prelude::*;
use rl_verifier::last_number::WINDOW_CHARS;
use rl_verifier::{
    AnswerSource, LastNumberConfig, OutcomeKind, RewardMap, VERIFIER_NAMES, Verifier,
    VerifierConfig,
};
use serde_json::Value;

const CASES: &str = include_str!("data/last_number_cases.json");

/// A fixture string: a literal, or `prefix + repeat × times + suffix`.
fn build(spec: &Value) -> String {
    match spec {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("");
            let times = o["times"].as_u64().expect("times") as usize;
            format!(
                "{}{}{}",
                text("prefix"),
                text("repeat").repeat(times),
                text("suffix")
            )
        }
        other => panic!("bad case field {other}"),
    }
}

fn verifier() -> Box<dyn Verifier> {
    VerifierConfig::from_name("last_number")
        .unwrap()
        .build()
        .unwrap()
}

#[test]
fn matches_the_python_reference() {
    let cases: Vec<Value> = serde_json::from_str(CASES).unwrap();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    let v = verifier();
    let mut kinds = std::collections::BTreeMap::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let response = build(&case["response"]);
        let gold = build(&case["gold"]);
        let expected = case["expected"].as_str().unwrap();
        let got = v.verify(&response, &gold);
        assert_eq!(got.outcome.kind().name(), expected, "{name}: {got:?}");
        assert_eq!(
            got.extracted.as_deref(),
            case["extracted"].as_str(),
            "{name}"
        );
        let source = got.extracted.as_ref().map(|_| AnswerSource::FinalNumber);
        assert_eq!(got.source, source, "{name}");
        *kinds.entry(expected).or_insert(0) += 1;
    }
    // Every outcome kind but over_budget is exercised.
    for kind in [
        OutcomeKind::Correct,
        OutcomeKind::Incorrect,
        OutcomeKind::UnparseableGold,
        OutcomeKind::UnparseableResponse,
    ] {
        assert!(
            kinds.get(kind.name()).copied().unwrap_or(0) >= 3,
            "{kinds:?}"
        );
    }
}

#[test]
fn registered_with_binary_rewards_and_no_budget() {
    assert!(VERIFIER_NAMES.contains(&"last_number"));
    let mut sorted = VERIFIER_NAMES;
    sorted.sort_unstable();
    assert_eq!(sorted, VERIFIER_NAMES, "registry order is alphabetical");
    let mut cfg = VerifierConfig::from_name("last_number").unwrap();
    assert_eq!(cfg, VerifierConfig::LastNumber(LastNumberConfig::default()));
    assert_eq!(cfg.name(), "last_number");
    assert_eq!(cfg.budget(), None);
    assert!(cfg.budget_mut().is_none());
    assert_eq!(cfg.default_rewards(), RewardMap::binary());
    assert_eq!(cfg.build().unwrap().name(), "last_number");
    // Round trips; unknown fields are errors.
    let json = serde_json::to_string(&cfg).unwrap();
    assert_eq!(json, r#"{"name":"last_number"}"#);
    assert_eq!(serde_json::from_str::<VerifierConfig>(&json).unwrap(), cfg);
    let toml_text = toml::to_string(&cfg).unwrap();
    assert_eq!(toml::from_str::<VerifierConfig>(&toml_text).unwrap(), cfg);
    assert!(serde_json::from_str::<VerifierConfig>(r#"{"name":"last_number","x":1}"#).is_err());
    let err = VerifierConfig::from_name("last-number")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("code, dapo, gsm8k, last_number, math"),
        "{err}"
    );
}

/// Inputs made of the characters the rule cares about, plus a few others.
fn tricky() -> impl Strategy<Value = String> {
    let chars = prop::sample::select(vec![
        '0', '1', '7', '9', '-', ',', '.', '!', '*', '$', ')', '(', ' ', '\n', '\u{a0}', 'a', '=',
        '１', '٣', '²', '\u{2212}', 'é', '🙂',
    ]);
    prop::collection::vec(chars, 0..200).prop_map(|v| v.into_iter().collect())
}

/// Well-formed numbers of the documented grammar.
fn number() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop_oneof!["[0-9]{1,60}", "[0-9]{1,3}(,[0-9]{3}){1,5}"],
        prop::option::of("[0-9]{1,20}"),
    )
        .prop_map(|(neg, int, frac)| {
            let mut s = if neg { "-".to_string() } else { String::new() };
            s.push_str(&int);
            if let Some(f) = frac {
                s.push('.');
                s.push_str(&f);
            }
            s
        })
        .prop_filter("fits the window with its dress", |s| {
            s.len() <= WINDOW_CHARS - 6
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics(response in tricky(), gold in tricky(), any_text in ".{0,100}") {
        let v = verifier();
        let _ = v.verify(&response, &gold);
        let _ = v.verify(&any_text, &response);
        let _ = v.verify(&response, &any_text);
        // An answer, when there is one, is a suffix of the response's last 64 characters.
        if let Some(answer) = v.verify(&response, "1").extracted {
            prop_assert!(answer.len() <= WINDOW_CHARS);
            prop_assert!(response.contains(&answer));
        }
    }

    #[test]
    fn a_number_equals_itself_in_every_accepted_dress(n in number()) {
        let v = verifier();
        let dressed = [
            n.clone(),
            format!("The answer is {n}."),
            format!("x = {n}!"),
            format!("**{n}**"),
            format!("${n}$\n"),
            format!("({n})."),
        ];
        for response in dressed {
            let got = v.verify(&response, &n);
            prop_assert!(got.is_correct(), "{response:?}: {got:?}");
            prop_assert_eq!(got.extracted.as_deref(), Some(n.as_str()));
        }
        // Trailing text always takes the answer away.
        let got = v.verify(&format!("{n} apples"), &n);
        prop_assert_eq!(got.outcome.kind(), OutcomeKind::UnparseableResponse);
        // Padding the decimal part with zeros keeps the value.
        let padded = if n.contains('.') { format!("{n}00") } else { format!("{n}.000") };
        if padded.len() <= WINDOW_CHARS {
            prop_assert!(v.verify(&padded, &n).is_correct());
        }
    }
}
