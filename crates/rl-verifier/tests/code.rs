//! The `code` verifier end to end: programs run in the sandbox against test cases.
//!
//! `tests/data/code_problems.jsonl` holds small problems, each with a response, its tests and a
//! verdict, `passed` and `total` **labelled by hand** from reading the program (each row's `why`
//! says how); the verifier must agree with every label. Rows run with per-test limits of 2 s
//! wall-clock, 1 s CPU and 512 MiB of address space (`limits()` below; the Python tests use the
//! same), all-or-nothing unless the row says `"reward": "fraction"`.
//!
//! The sandbox needs kernel facilities (see docs/sandbox.md). Where it cannot be created these
//! tests print why and pass without running anything, except under CI (`CI=true`), where that is
//! a failure.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rl_verifier::code::TestSuite;
use rl_verifier::*;
use serde_json::Value;

/// The rows, each with `gold`: the `tests` field's text — a string as it is, an object or array
/// as its original JSON text (numbers keep every digit: 25! + 1 is not an f64).
fn fixture() -> Vec<Value> {
    #[derive(serde::Deserialize)]
    struct Tests<'a> {
        #[serde(borrow)]
        tests: &'a serde_json::value::RawValue,
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    let path = format!("{dir}/tests/data/code_problems.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let at = format!("code_problems.jsonl line {}", i + 1);
            let mut row: Value = serde_json::from_str(l).expect(&at);
            let raw = serde_json::from_str::<Tests<'_>>(l).expect(&at).tests.get();
            let gold = match &row["tests"] {
                Value::String(s) => s.clone(),
                _ => raw.to_string(),
            };
            row["gold"] = Value::String(gold);
            row
        })
        .collect()
}

fn gold(row: &Value) -> String {
    row["gold"].as_str().unwrap().to_string()
}

fn config(reward: CodeReward) -> CodeConfig {
    let mut c = CodeConfig {
        reward,
        ..CodeConfig::default()
    };
    c.sandbox.limits.wall_time = Duration::from_secs(2);
    c.sandbox.limits.cpu_time = Duration::from_secs(1);
    c.sandbox.limits.memory_bytes = 512 << 20;
    c
}

/// The verifier, or `None` (with the reason on stderr) where the sandbox is unavailable.
fn verifier(reward: CodeReward) -> Option<CodeVerifier> {
    match config(reward).build() {
        Ok(v) => Some(v),
        Err(ConfigError::Sandbox { reason }) if std::env::var("CI").as_deref() != Ok("true") => {
            eprintln!("skipping: the sandbox is unavailable here: {reason}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

fn reward_of(row: &Value) -> CodeReward {
    match row["reward"].as_str() {
        None => CodeReward::AllOrNothing,
        Some(name) => CodeReward::from_name(name).unwrap(),
    }
}

#[test]
fn the_fixture_covers_every_kind_of_verdict() {
    let rows = fixture();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    for kind in [
        "passed",
        "wrong_answer",
        "runtime_error",
        "timeout",
        "memory",
        "syntax_error",
        "no_code",
        "bad_tests",
    ] {
        assert!(
            rows.iter().any(|r| r["verdict"] == kind),
            "no row with verdict {kind}"
        );
    }
    let fraction = rows.iter().filter(|r| r["reward"] == "fraction").count();
    assert!(fraction >= 2);
    // Every gold parses or is labelled unusable, without a sandbox.
    for row in &rows {
        let parsed = TestSuite::parse(&gold(row));
        assert_eq!(
            parsed.is_err(),
            row["verdict"] == "bad_tests",
            "{}",
            row["id"]
        );
        if let Ok(suite) = parsed {
            assert_eq!(
                suite.cases.len() as u64,
                row["total"].as_u64().unwrap(),
                "{}",
                row["id"]
            );
        }
    }
}

#[test]
fn every_labelled_problem_gets_its_verdict() {
    let (Some(all), Some(frac)) = (
        verifier(CodeReward::AllOrNothing),
        verifier(CodeReward::Fraction),
    ) else {
        return;
    };
    let mut wrong = Vec::new();
    for row in fixture() {
        let id = row["id"].as_str().unwrap();
        let reward = reward_of(&row);
        let v = if reward == CodeReward::Fraction {
            &frac
        } else {
            &all
        };
        let want = row["verdict"].as_str().unwrap();
        let (passed, total) = (
            row["passed"].as_u64().unwrap(),
            row["total"].as_u64().unwrap(),
        );
        let start = Instant::now();
        match v.check(row["response"].as_str().unwrap(), &gold(&row)) {
            Err(e) => {
                if want != "bad_tests" {
                    wrong.push(format!("{id}: want {want}, got unusable tests: {e}"));
                }
            }
            Ok(report) => {
                let got = (
                    report.verdict.name(),
                    report.passed as u64,
                    report.total as u64,
                );
                if got != (want, passed, total) {
                    wrong.push(format!(
                        "{id}: want {want} {passed}/{total}, got {} {}/{} ({})",
                        got.0, got.1, got.2, report.detail
                    ));
                }
                // Time is bounded by (1 + tests) runs of the wall-clock limit (plus start-up).
                let bound =
                    Duration::from_secs(2) * (1 + report.total as u32) + Duration::from_secs(5);
                assert!(start.elapsed() < bound, "{id}: {:?}", start.elapsed());
            }
        }
        // The Verifier view of the same response agrees with the report.
        let ver = v.verify(row["response"].as_str().unwrap(), &gold(&row));
        let kind = match want {
            "passed" => OutcomeKind::Correct,
            "no_code" => OutcomeKind::UnparseableResponse,
            "bad_tests" => OutcomeKind::UnparseableGold,
            _ => OutcomeKind::Incorrect,
        };
        if ver.outcome.kind() != kind {
            wrong.push(format!("{id}: verify() gave {:?}", ver.outcome));
        }
        if reward == CodeReward::Fraction {
            // The graded reward is passed/total between the incorrect (0) and correct (1) rewards.
            let r = RewardMap::binary().reward_for(&ver);
            assert_eq!(r, passed as f64 / total as f64, "{id}");
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn fraction_rewards_interpolate_by_hand() {
    let Some(v) = verifier(CodeReward::Fraction) else {
        return;
    };
    // n*n for n < 10, 2n otherwise: tests 0, 1 and 3 of 5 pass (3/5).
    let response = "```python\nn = int(input())\nprint(n * n if n < 10 else n * 2)\n```";
    let gold =
        r#"{"inputs": ["2", "3", "12", "5", "20"], "outputs": ["4", "9", "144", "25", "400"]}"#;
    let ver = v.verify(response, gold);
    assert_eq!(ver.outcome, Outcome::Incorrect);
    assert_eq!(ver.score, Some(0.6));
    // Signed map: -1 + 0.6 * (1 - (-1)) = 0.2; custom 0.5 / -0.5: -0.5 + 0.6 * 1 = 0.1.
    let signed = RewardMap::signed().reward_for(&ver);
    assert!((signed - 0.2).abs() < 1e-12, "{signed}");
    let custom = RewardMap::two_valued(0.5, -0.5).reward_for(&ver);
    assert!((custom - 0.1).abs() < 1e-12, "{custom}");
    // All-or-nothing on the same response: no score, the incorrect reward.
    let all = verifier(CodeReward::AllOrNothing).unwrap();
    let ver = all.verify(response, gold);
    assert_eq!(ver.score, None);
    assert_eq!(RewardMap::signed().reward_for(&ver), -1.0);
}

#[test]
fn threads_share_one_verifier_and_agree_with_a_serial_run() {
    let Some(v) = verifier(CodeReward::Fraction) else {
        return;
    };
    let v = Arc::new(v);
    // The quick rows (no timeouts): each thread checks all of them, in a different order.
    let rows: Vec<(String, String)> = fixture()
        .iter()
        .filter(|r| r["verdict"] != "timeout")
        .map(|r| (r["response"].as_str().unwrap().to_string(), gold(r)))
        .collect();
    let key = |r: Result<CodeReport, BadTests>| {
        r.map(|r| (r.verdict, r.passed, r.total))
            .map_err(|e| e.reason)
    };
    let serial: Vec<_> = rows.iter().map(|(resp, g)| key(v.check(resp, g))).collect();
    let rows = Arc::new(rows);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (v, rows) = (Arc::clone(&v), Arc::clone(&rows));
            std::thread::spawn(move || {
                let n = rows.len();
                let mut out = vec![None; n];
                for k in 0..n {
                    let i = (k + t * 7) % n;
                    out[i] = Some(key(v.check(&rows[i].0, &rows[i].1)));
                }
                out
            })
        })
        .collect();
    for h in handles {
        let got: Vec<_> = h.join().unwrap().into_iter().map(Option::unwrap).collect();
        assert_eq!(got, serial);
    }
}

#[test]
fn registry_limits_and_oversized_code() {
    assert!(VERIFIER_NAMES.contains(&"code"));
    let cfg = VerifierConfig::from_name("code").unwrap();
    assert_eq!(cfg.name(), "code");
    assert_eq!(cfg.default_rewards(), RewardMap::binary());
    let VerifierConfig::Code(c) = &cfg else {
        panic!("{cfg:?}")
    };
    assert_eq!(c.sandbox.limits.wall_time, Duration::from_secs(4));
    assert_eq!(c.sandbox.limits.cpu_time, Duration::from_secs(2));
    assert_eq!(c.sandbox.limits.memory_bytes, 512 << 20);
    // From a training config's TOML.
    let c: VerifierConfig = toml::from_str(
        "name = \"code\"\nreward = \"fraction\"\nmax_tests = 8\n[sandbox.limits]\nwall_time = 2.5\n",
    )
    .unwrap();
    let VerifierConfig::Code(c) = c else { panic!() };
    assert_eq!(c.reward, CodeReward::Fraction);
    assert_eq!(c.sandbox.limits.wall_time, Duration::from_millis(2500));
    assert_eq!(c.sandbox.limits.memory_bytes, 512 << 20);

    let Some(mut v) = verifier(CodeReward::AllOrNothing) else {
        return;
    };
    // Oversized code is not run.
    let big = format!("```python\n{}print(1)\n```", "# pad\n".repeat(20_000));
    let report = v.check(&big, r#"[{"input": "", "output": "1"}]"#).unwrap();
    assert_eq!(report.verdict, CodeVerdict::TooLarge);
    assert!(report.tests.is_empty());
    let ver = v.verify(&big, r#"[{"input": "", "output": "1"}]"#);
    assert!(
        matches!(ver.outcome, Outcome::OverBudget { ref what } if what.contains("max_code_bytes"))
    );
    // max_tests cuts the tests; `available` keeps the gold's count.
    let mut cfg = config(CodeReward::Fraction);
    cfg.max_tests = 2;
    v = cfg.build().unwrap();
    let report = v
        .check(
            "```python\nprint(input())\n```",
            r#"{"inputs": ["1", "2", "3"], "outputs": ["1", "2", "3"]}"#,
        )
        .unwrap();
    assert_eq!(
        (
            report.verdict,
            report.passed,
            report.total,
            report.available
        ),
        (CodeVerdict::Passed, 2, 2, 3)
    );
    // Unusable tests through the registry's verifier.
    let boxed = VerifierConfig::Code(config(CodeReward::AllOrNothing))
        .build()
        .unwrap();
    assert_eq!(boxed.name(), "code");
    let ver = boxed.verify("```python\nprint(1)\n```", "not json");
    assert_eq!(ver.outcome.kind(), OutcomeKind::UnparseableGold);
}
