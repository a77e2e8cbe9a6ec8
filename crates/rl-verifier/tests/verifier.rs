//! Integration tests of rl-verifier: verl `math_dapo` parity, the `math` corpus, robustness
//! (proptest and adversarial inputs), configs and combinators.
//!
//! Expected values come from independent sources: `tests/data/dapo_parity.jsonl` was produced by
//! running verl's `math_dapo.py` (tools/verifier/gen_dapo_parity.py); every case of
//! `tests/data/math_corpus.jsonl` carries its mathematical justification (`why`) and the verdict
//! of math-verify 0.9.0 (tools/verifier/build_math_corpus.py).

use rl_verifier::dapo::{compute_score, normalize_final_answer};
use rl_verifier::*;
use serde_json::Value;

fn fixture(name: &str) -> Vec<Value> {
    // The checkout this test runs from (cargo sets CARGO_MANIFEST_DIR when it runs a test); the
    // compile-time value can name another checkout when a build cache is shared between clones.
    let dir = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    let path = format!("{dir}/tests/data/{name}");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1)))
        .collect()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("field {k} in {v}"))
}

// ---------------------------------------------------------------------------------------------
// dapo: parity with verl's math_dapo.py
// ---------------------------------------------------------------------------------------------

#[test]
fn dapo_parity_with_verl() {
    let rows = fixture("dapo_parity.jsonl");
    let minerva = DapoConfig::default().build().unwrap();
    let strict = DapoConfig {
        strict_box: true,
        ..DapoConfig::default()
    }
    .build()
    .unwrap();
    let boxed_gold = DapoConfig {
        gold_in_box: true,
        ..DapoConfig::default()
    }
    .build()
    .unwrap();
    let rewards = VerifierConfig::from_name("dapo").unwrap().default_rewards();
    let (mut scores, mut normals, mut boxed) = (0, 0, 0);
    for (i, row) in rows.iter().enumerate() {
        let line = i + 1;
        match s(row, "kind") {
            "score" => {
                scores += 1;
                let (sol, gt) = (s(row, "solution"), s(row, "gt"));
                let is_strict = row["strict_box"].as_bool().unwrap();
                let want_acc = row["acc"].as_bool().unwrap();
                let want_pred = s(row, "pred");
                let want_score = row["score"].as_f64().unwrap();
                let (score, acc, pred) = compute_score(sol, gt, is_strict);
                assert_eq!(
                    (score, acc, pred.as_str()),
                    (want_score, want_acc, want_pred),
                    "line {line}: {row}"
                );
                let v = if is_strict { &strict } else { &minerva }.verify(sol, gt);
                assert_eq!(v.is_correct(), want_acc, "line {line}: {row} -> {v:?}");
                assert_eq!(rewards.reward(&v.outcome), want_score, "line {line}");
                match &v.extracted {
                    Some(p) => assert_eq!(p, want_pred, "line {line}"),
                    None => assert_eq!(want_pred, "[INVALID]", "line {line}"),
                }
            }
            "gold_in_box" => {
                boxed += 1;
                let v = boxed_gold.verify(s(row, "solution"), s(row, "gt"));
                if row.get("error").is_some() {
                    assert!(
                        matches!(
                            v.outcome,
                            Outcome::Unparseable {
                                side: Side::Gold,
                                ..
                            }
                        ),
                        "line {line}: {v:?}"
                    );
                } else {
                    assert_eq!(v.is_correct(), row["acc"].as_bool().unwrap(), "line {line}");
                    assert_eq!(v.extracted.as_deref(), Some(s(row, "pred")), "line {line}");
                }
            }
            "normalize" => {
                normals += 1;
                assert_eq!(
                    normalize_final_answer(s(row, "input")),
                    s(row, "output"),
                    "line {line}: {row}"
                );
            }
            other => panic!("line {line}: unknown kind {other}"),
        }
    }
    assert!(
        scores >= 480 && normals >= 100 && boxed >= 5,
        "{scores} {normals} {boxed}"
    );
}

#[test]
fn dapo_issue_vectors() {
    // Issue 3's parity vectors (also in the fixture; spelled out here for readability).
    let v = VerifierConfig::from_name("dapo").unwrap().build().unwrap();
    let cases = [
        ("Let me think.\nAnswer: 42", "42", true),
        ("answer : 1,000", "1000", true),
        ("Answer: x = 5", "5", true),
        ("Answer: \\frac12", "\\frac{1}{2}", true),
        ("Answer: \\dfrac{1}{2}", "\\frac{1}{2}", false),
        ("The answer is \\boxed{7}", "7", false),
        ("Answer: 3\nAnswer: 4", "4", true),
        ("Answer: 3.", "3", false),
        ("Answer: 12^\\circ", "12", true),
    ];
    for (sol, gold, want) in cases {
        assert_eq!(
            v.verify(sol, gold).is_correct(),
            want,
            "{sol:?} vs {gold:?}"
        );
    }
    // No answer line is reported as such, not as a plain wrong answer.
    assert!(matches!(
        v.verify("The answer is \\boxed{7}", "7").outcome,
        Outcome::Unparseable {
            side: Side::Response,
            ..
        }
    ));
}

// ---------------------------------------------------------------------------------------------
// math: the labelled corpus
// ---------------------------------------------------------------------------------------------

#[test]
fn math_corpus() {
    let rows = fixture("math_corpus.jsonl");
    assert!(rows.len() >= 300, "{} cases", rows.len());
    let v = VerifierConfig::from_name("math").unwrap().build().unwrap();
    let mut wrong = Vec::new();
    let mut mv_wrong = Vec::new();
    let mut counts = OutcomeCounts::default();
    for row in &rows {
        let (gold, resp) = (s(row, "gold"), s(row, "response"));
        let expected = row["expected"].as_bool().unwrap();
        let got = v.verify(resp, gold);
        counts.record(&got.outcome);
        if got.is_correct() != expected {
            wrong.push(format!(
                "#{} [{}] gold {gold:?} response {resp:?}: expected {expected}, got {:?} (extracted {:?}); why: {}",
                row["id"],
                s(row, "category"),
                got.outcome,
                got.extracted,
                s(row, "why")
            ));
        }
        if row["mv"].as_bool() != Some(expected) {
            mv_wrong.push(format!(
                "#{} {gold:?} vs {resp:?}: mv {}",
                row["id"], row["mv"]
            ));
        }
    }
    println!(
        "math-verify differs from the label on {} cases:",
        mv_wrong.len()
    );
    for line in &mv_wrong {
        println!("  {line}");
    }
    println!("outcomes: {counts}");
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    // Gold answers in the corpus are all well formed.
    assert_eq!(counts.unparseable_gold + counts.over_budget, 0, "{counts}");
}

// ---------------------------------------------------------------------------------------------
// Robustness: adversarial inputs finish with a verdict or OverBudget, never a panic or a hang
// ---------------------------------------------------------------------------------------------

/// The answer verifiers (`code` runs programs and has its own tests in tests/code.rs).
fn both() -> Vec<Box<dyn Verifier>> {
    assert!(VERIFIER_NAMES.contains(&"dapo") && VERIFIER_NAMES.contains(&"math"));
    ["dapo", "math"]
        .iter()
        .map(|n| VerifierConfig::from_name(n).unwrap().build().unwrap())
        .collect()
}

fn is_over_budget(v: &Verification) -> bool {
    matches!(v.outcome, Outcome::OverBudget { .. })
}

#[test]
fn deep_nesting_is_over_budget_not_a_stack_overflow() {
    let n = 10_000;
    let inputs = [
        format!("\\boxed{{{}1{}}}", "{".repeat(n), "}".repeat(n)),
        format!("\\boxed{{{}1{}}}", "(".repeat(n), ")".repeat(n)),
        format!("\\boxed{{{}2{}}}", "\\sqrt{".repeat(n), "}".repeat(n)),
        format!("\\boxed{{{}1}}", "-".repeat(n)),
        format!("\\boxed{{2{}}}", "^2".repeat(n)),
        format!("\\boxed{{3{}}}", "!".repeat(n)),
        format!("\\boxed{{{}1}}", "\\frac1".repeat(n)),
        format!("\\boxed{{{}x{}}}", "\\sin(".repeat(n), ")".repeat(n)),
        format!("\\boxed{{{}1{}}}", "\\{".repeat(n), "\\}".repeat(n)),
        format!("\\boxed{{{}1{}}}", "|".repeat(n), "|".repeat(n)),
        format!("\\boxed{{{}}}", "\\text{".repeat(n)),
        format!("\\boxed{{1{}}}", "\\pm 1".repeat(n)),
        format!("\\boxed{{x{}}}", "^2!".repeat(n)),
    ];
    let math = MathConfig::default().build().unwrap();
    for input in &inputs {
        // As the response and as the gold; on a thread with a modest stack.
        let r = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn({
                let (input, math) = (input.clone(), math.clone());
                move || (math.verify(&input, "1"), math.verify("1", &input))
            })
            .unwrap()
            .join()
            .expect("no stack overflow or panic");
        for v in [&r.0, &r.1] {
            assert!(
                is_over_budget(v) || matches!(v.outcome, Outcome::Unparseable { .. }),
                "{}…: {:?}",
                &input[..40],
                v.outcome
            );
        }
    }
    // Nested `\text{}` is text (words), not depth: any verdict, but no panic or overflow.
    let text = format!("\\boxed{{{}1{}}}", "\\text{(".repeat(n), ")}".repeat(n));
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || {
            let m = MathConfig::default().build().unwrap();
            (m.verify(&text, "1"), m.verify("1", &text))
        })
        .unwrap()
        .join()
        .expect("no stack overflow or panic");
    // The deepest nesting the budget allows parses fine on the same small stack.
    let ok = format!("{}1{}", "(".repeat(40), ")".repeat(40));
    let v = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || MathConfig::default().build().unwrap().verify(&ok, "1"))
        .unwrap()
        .join()
        .unwrap();
    assert!(v.is_correct(), "{v:?}");
}

#[test]
fn deepest_allowed_budget_fits_a_small_stack() {
    // max_depth at its upper limit (200) on a 2 MiB thread (Rust's default for spawned threads).
    let cfg = MathConfig {
        budget: Budget {
            max_depth: Budget::MAX_DEPTH_LIMIT,
            ..Budget::default()
        },
        ..MathConfig::default()
    };
    let v = cfg.build().unwrap();
    for input in [
        format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000)),
        format!("{}2{}", "\\sqrt{".repeat(10_000), "}".repeat(10_000)),
        format!("{}1{}", "{".repeat(10_000), "}".repeat(10_000)),
        format!("{}1", "-".repeat(10_000)),
    ] {
        let v = v.clone();
        let r = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || v.verify(&format!("\\boxed{{{input}}}"), "1"))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(is_over_budget(&r), "{r:?}");
    }
}

#[test]
fn huge_numbers_are_over_budget() {
    let math = MathConfig::default().build().unwrap();
    let literal = format!("1{}", "0".repeat(100_000));
    for pred in [
        literal.as_str(),
        "10^{100000}",
        "1e100000",
        "1e-100000",
        "2^{2^{2^{2^{2}}}}",
        "100000!",
        "(10^{5000})^{5000}",
        "\\binom{10^{9}}{10^{6}}",
        "2^{10^{18}}",
        "0.5^{99999999999}",
    ] {
        let v = math.verify(&format!("\\boxed{{{pred}}}"), "7");
        assert!(
            is_over_budget(&v),
            "{}: {:?}",
            &pred[..pred.len().min(30)],
            v.outcome
        );
        let g = math.verify("\\boxed{7}", pred);
        assert!(
            is_over_budget(&g),
            "gold {}: {:?}",
            &pred[..pred.len().min(30)],
            g.outcome
        );
    }
    // Within the budget, large exact values are compared exactly.
    assert!(math.verify("\\boxed{2^{1000}}", "4^{500}").is_correct());
    assert!(!math.verify("\\boxed{2^{1000}+1}", "4^{500}").is_correct());
}

#[test]
fn one_megabyte_responses() {
    let filler = "We consider the cases {a, b} and (c, d) with $x_1$ and \\( y \\) in turn. ";
    let mut big = filler.repeat(1_000_000 / filler.len());
    big.push_str("Therefore the answer is $\\boxed{42}$.\nAnswer: 42");
    assert!(big.len() > 999_000);
    for v in both() {
        let r = v.verify(&big, "42");
        assert!(r.is_correct(), "{}: {:?}", v.name(), r.outcome);
    }
    // Adversarial megabytes: unclosed boxes, dollars, delimiters, digits.
    for unit in [
        "\\boxed{", "$", "\\(", "\\[", "{", "9,", "Answer: ", "\\frac",
    ] {
        let s = unit.repeat(1_000_000 / unit.len());
        for v in both() {
            let _ = v.verify(&s, "1");
            let _ = v.verify("1", &s);
        }
    }
    // Over max_input_bytes.
    let huge = "1".repeat((1 << 20) + 1);
    let math = MathConfig::default().build().unwrap();
    assert!(is_over_budget(&math.verify(&huge, "1")));
    assert!(is_over_budget(&math.verify("1", &huge)));
}

#[test]
fn tiny_step_budget_stops_work() {
    let cfg = MathConfig {
        budget: Budget {
            max_steps: 5,
            ..Budget::default()
        },
        ..MathConfig::default()
    };
    let v = cfg
        .build()
        .unwrap()
        .verify("\\boxed{\\frac{1}{2} + \\frac{1}{3}}", "\\frac56");
    assert!(is_over_budget(&v), "{v:?}");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const PIECES: &[&str] = &[
        "\\frac",
        "\\dfrac",
        "\\sqrt",
        "\\sqrt[3]",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        "\\{",
        "\\}",
        "^",
        "_",
        "!",
        "%",
        "\\%",
        ",",
        "=",
        "<",
        "\\le",
        "\\pm",
        "x",
        "y",
        "e",
        "\\pi",
        "1",
        "2",
        "0",
        "9",
        ".",
        "-",
        "+",
        "*",
        "/",
        "\\cdot",
        "\\times",
        "\\boxed{",
        "$",
        "\\text{",
        " cm",
        "\\left(",
        "\\right)",
        "\\infty",
        "\\cup",
        "|",
        "\\ln",
        "\\sin",
        "\\log_",
        "&",
        "\\\\",
        "\\begin{pmatrix}",
        "\\end{pmatrix}",
        "1000!",
        "10^{",
        "e5",
        "\\binom",
        ":",
        "Answer:",
        "\n",
        "°",
        "²",
        "−",
        "and",
    ];

    fn latexish() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

        #[test]
        fn arbitrary_unicode_never_panics(resp in "\\PC{0,200}", gold in "\\PC{0,40}") {
            for v in both() {
                let r = v.verify(&resp, &gold);
                // The outcome is internally consistent.
                if r.is_correct() {
                    prop_assert!(r.extracted.is_some());
                }
            }
        }

        #[test]
        fn latex_soup_never_panics(resp in latexish(), gold in latexish()) {
            for v in both() {
                let _ = v.verify(&resp, &gold);
                let _ = v.verify(&format!("\\boxed{{{resp}}}"), &gold);
            }
        }

        #[test]
        fn identical_well_formed_answers_are_correct(a in 1u32..5000, b in 1u32..5000) {
            let gold = format!("\\frac{{{a}}}{{{b}}}");
            let math = MathConfig::default().build().unwrap();
            let boxed = format!("\\boxed{{{}}}", gold);
            prop_assert!(math.verify(&boxed, &gold).is_correct());
            // a/b = (2a)/(2b) by exact arithmetic; a/b ≠ (a+1)/b.
            let twice = format!("\\boxed{{\\frac{{{}}}{{{}}}}}", 2 * a, 2 * b);
            prop_assert!(math.verify(&twice, &gold).is_correct());
            let other = format!("\\boxed{{\\frac{{{}}}{{{b}}}}}", a + 1);
            prop_assert!(!math.verify(&other, &gold).is_correct());
        }

        #[test]
        fn gold_is_never_correct_when_unparseable(resp in latexish()) {
            let math = MathConfig::default().build().unwrap();
            for gold in ["\\frac{1}{", "\\foo{2}", "1/0", "", "\\sqrt{-1}"] {
                let r = math.verify(&resp, gold);
                prop_assert!(!r.is_correct(), "{:?}: {:?}", gold, r);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration, rewards, counts, combinators, shaping
// ---------------------------------------------------------------------------------------------

#[test]
fn configs_round_trip_through_json_and_toml() {
    let mut math = MathConfig::default();
    math.budget.max_steps = 12_345;
    math.extraction.final_number = false;
    let dapo = DapoConfig {
        strict_box: true,
        ..DapoConfig::default()
    };
    let mut code = CodeConfig {
        reward: CodeReward::Fraction,
        max_tests: 7,
        ..CodeConfig::default()
    };
    code.sandbox.limits.wall_time = std::time::Duration::from_millis(1500);
    for cfg in [
        VerifierConfig::Math(math),
        VerifierConfig::Dapo(dapo),
        VerifierConfig::Code(code),
    ] {
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(
            serde_json::from_str::<VerifierConfig>(&json).unwrap(),
            cfg,
            "{json}"
        );
        let toml_text = toml::to_string(&cfg).unwrap();
        assert_eq!(
            toml::from_str::<VerifierConfig>(&toml_text).unwrap(),
            cfg,
            "{toml_text}"
        );
    }
    // Defaults fill missing fields; the tag selects the verifier.
    let c: VerifierConfig =
        serde_json::from_str(r#"{"name": "math", "budget": {"max_depth": 20}}"#).unwrap();
    assert_eq!(c.budget().unwrap().max_depth, 20);
    assert_eq!(c.budget().unwrap().max_steps, Budget::default().max_steps);
    assert_eq!(VerifierConfig::from_name("code").unwrap().budget(), None);
    // Unknown names and fields are errors that say what is valid.
    let err = VerifierConfig::from_name("sympy").unwrap_err().to_string();
    assert!(
        err.contains("sympy") && err.contains("dapo, gsm8k, last_number, math"),
        "{err}"
    );
    assert!(serde_json::from_str::<VerifierConfig>(r#"{"name": "math", "budgett": {}}"#).is_err());
    let mut b = Budget::default();
    let err = b.set("max_stepz", "10").unwrap_err().to_string();
    assert!(
        err.contains("max_steps") && err.contains("max_depth"),
        "{err}"
    );
    let err = b.set("max_depth", "1000").unwrap_err().to_string();
    assert!(err.contains("budget.max_depth"), "{err}");
    let err = MathConfig {
        eval_points: 0,
        ..MathConfig::default()
    }
    .build()
    .unwrap_err()
    .to_string();
    assert!(err.contains("eval_points"), "{err}");

    let policy = OverlongPolicy::dapo();
    let json = serde_json::to_string(&policy).unwrap();
    assert_eq!(
        json,
        r#"{"kind":"soft_punish","max_len":20480,"cache_len":4096,"penalty_factor":1.0,"mask_truncated":false}"#
    );
    assert_eq!(
        serde_json::from_str::<OverlongPolicy>(&json).unwrap(),
        policy
    );
    let masked: OverlongPolicy = serde_json::from_str(r#"{"kind":"mask_truncated"}"#).unwrap();
    assert_eq!(masked, OverlongPolicy::MaskTruncated);
    let short: OverlongPolicy =
        toml::from_str("kind = \"soft_punish\"\nmax_len = 100\ncache_len = 20\n").unwrap();
    // TRL's example: (100, 20) at 90 → (80 − 90)/20 = −0.5.
    assert_eq!(short.penalty(ResponseLength::finished(90)), -0.5);
}

#[test]
fn reward_maps_and_counts() {
    let unparseable = Outcome::Unparseable {
        side: Side::Response,
        reason: "none".into(),
    };
    let gold_bad = Outcome::Unparseable {
        side: Side::Gold,
        reason: "bad".into(),
    };
    let over = Outcome::OverBudget { what: "x".into() };
    let outcomes = [
        Outcome::Correct,
        Outcome::Incorrect,
        unparseable,
        gold_bad,
        over,
    ];
    let signed: Vec<f64> = outcomes
        .iter()
        .map(|o| RewardMap::signed().reward(o))
        .collect();
    assert_eq!(signed, vec![1.0, -1.0, -1.0, -1.0, -1.0]);
    let binary: Vec<f64> = outcomes
        .iter()
        .map(|o| RewardMap::binary().reward(o))
        .collect();
    assert_eq!(binary, vec![1.0, 0.0, 0.0, 0.0, 0.0]);
    let custom = RewardMap {
        unparseable_response: -0.5,
        ..RewardMap::binary()
    };
    assert_eq!(custom.reward(&outcomes[2]), -0.5);
    assert!(RewardMap::two_valued(1.0, f64::NAN).validate().is_err());

    let mut a: OutcomeCounts = outcomes.iter().collect();
    let b: OutcomeCounts = outcomes[..2].iter().collect();
    a.merge(&b);
    assert_eq!(
        (a.correct, a.incorrect, a.failed(), a.total()),
        (2, 2, 3, 7)
    );
    assert_eq!(a.accuracy(), Some(2.0 / 7.0));
    assert_eq!(OutcomeCounts::default().accuracy(), None);
    let json = serde_json::to_string(&a).unwrap();
    assert_eq!(serde_json::from_str::<OutcomeCounts>(&json).unwrap(), a);
    assert_eq!(
        a.to_string(),
        "correct 2, incorrect 2, unparseable_gold 1, unparseable_response 1, over_budget 1"
    );
}

#[test]
fn weighted_sum_keeps_components() {
    let cfg: RewardConfig = serde_json::from_str(
        r#"{"components": [
            {"name": "accuracy", "weight": 1.0,
             "reward": {"kind": "correctness", "verifier": {"name": "math"}}},
            {"name": "boxed", "weight": 0.1,
             "reward": {"kind": "format", "check": "boxed"}},
            {"name": "think", "weight": 0.2,
             "reward": {"kind": "format", "check": {"regex": "(?s)<think>.*</think>"}, "absent": -1.0}}
        ]}"#,
    )
    .unwrap();
    let toml_text = toml::to_string(&cfg).unwrap();
    assert_eq!(toml::from_str::<RewardConfig>(&toml_text).unwrap(), cfg);
    let sum = cfg.build().unwrap();
    let r = sum.evaluate("<think>2+2</think> The answer is $\\boxed{4}$.", "4");
    let values: Vec<(&str, f64)> = r
        .components
        .iter()
        .map(|c| (c.name.as_str(), c.value))
        .collect();
    assert_eq!(
        values,
        vec![("accuracy", 1.0), ("boxed", 1.0), ("think", 1.0)]
    );
    assert!((r.total - 1.3).abs() < 1e-12);
    assert!(r.verification.unwrap().is_correct());
    // Wrong, unboxed and without thinking: 0 + 0 + 0.2·(−1).
    let r = sum.evaluate("Answer: 5", "4");
    assert!((r.total + 0.2).abs() < 1e-12, "{r:?}");
    // The dapo correctness term defaults to verl's ±1.
    let dapo = RewardConfig::correctness(VerifierConfig::from_name("dapo").unwrap())
        .build()
        .unwrap();
    assert_eq!(dapo.evaluate("Answer: 5", "4").total, -1.0);
    // Bad configs name the field.
    let bad = RewardConfig { components: vec![] }
        .build()
        .unwrap_err()
        .to_string();
    assert!(bad.contains("components"), "{bad}");
    let bad = FormatReward::new(&FormatCheck::Regex("(".into()), 1.0, 0.0)
        .unwrap_err()
        .to_string();
    assert!(bad.contains("format.pattern"), "{bad}");
    let f = FormatReward::new(&FormatCheck::AnswerLine, 1.0, 0.0).unwrap();
    assert!(f.passes("so\nAnswer: 3") && !f.passes("\\boxed{3}"));
}
