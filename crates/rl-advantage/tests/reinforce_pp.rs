//! REINFORCE++ and REINFORCE++-baseline against verl's own functions.
//!
//! `tests/data/reinforce_pp_verl.json` was written by `tools/verl/gen_verl_fixtures.py`, which
//! calls verl 0.9.1's `compute_reinforce_plus_plus_outcome_advantage` and
//! `compute_reinforce_plus_plus_baseline_outcome_advantage` (AlgoConfig defaults, γ = 1) in
//! float64 on outcome rewards placed on each response's last valid token, response masks (some
//! with observation holes) and group ids: 8 batches of 6 to 96 responses, uneven and interleaved
//! groups. Each response's advantage is the same on all its valid tokens (the script checks it);
//! the fixture stores that value and the number of valid tokens.
//!
//! For five batches it also holds verl's `compute_reinforce_plus_plus_outcome_advantage` with
//! `AlgoConfig(gamma=γ)`, γ ∈ {0.99, 0.9, 0.5}, token by token (discounted returns differ along
//! a response; with observation holes they neither count nor discount).
//!
//! Tolerance: |rlvr − verl| ≤ 1e-9·max(1, |verl|). Both sides compute in float64; the fixture
//! keeps 15 significant digits, and the sums run in a different order.

use rl_advantage::{
    AdvantageError, Daa, DaaConfig, ESTIMATOR_NAMES, EstimatorConfig, GroupId, PromptWeight,
    Sample, StdMode, compute_batch, compute_batch_with_tokens, compute_token_advantages,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    source: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    group: Vec<u64>,
    reward: Vec<f64>,
    correct: Vec<bool>,
    tokens: Vec<usize>,
    reinforce_plus_plus: Vec<f64>,
    reinforce_plus_plus_baseline: Vec<f64>,
    /// verl with γ < 1: the advantage of every valid token, per response.
    #[serde(default)]
    reinforce_plus_plus_discounted: Vec<Discounted>,
}

#[derive(Deserialize)]
struct Discounted {
    gamma: f64,
    advantages: Vec<Vec<f64>>,
}

impl Case {
    fn samples(&self) -> Vec<Sample> {
        (0..self.group.len())
            .map(|i| Sample::new(GroupId(self.group[i]), self.reward[i], self.correct[i]))
            .collect()
    }

    fn verl(&self, name: &str) -> &[f64] {
        match name {
            "reinforce_plus_plus" => &self.reinforce_plus_plus,
            "reinforce_plus_plus_baseline" => &self.reinforce_plus_plus_baseline,
            other => panic!("no verl values for {other}"),
        }
    }
}

const NAMES: [&str; 2] = ["reinforce_plus_plus", "reinforce_plus_plus_baseline"];
const TOL: f64 = 1e-9;

fn fixture() -> Fixture {
    let f: Fixture =
        serde_json::from_str(include_str!("data/reinforce_pp_verl.json")).expect("fixture");
    assert!(f.source.contains("verl 0.9.1"), "{}", f.source);
    f
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= TOL * w.abs().max(1.0),
            "{what} [{i}]: rlvr {g} vs verl {w}"
        );
    }
}

#[test]
fn both_estimators_match_verl_token_weighted() {
    let f = fixture();
    assert_eq!(f.cases.len(), 8);
    for case in &f.cases {
        for name in NAMES {
            let est = EstimatorConfig::from_name(name).unwrap().build(2).unwrap();
            assert!(est.batch_level());
            let out = compute_batch_with_tokens(&est, &case.samples(), &case.tokens, None).unwrap();
            let verl = case.verl(name);
            if case.name == "all_equal_rewards" {
                // Every reward equal: verl's whitening turns the ε-biased mean into values of
                // order 1e-4·R/N (2.8e-6 here); rlvr returns exactly 0, as for every all-equal
                // group of the other estimators.
                assert!(verl.iter().all(|v| v.abs() < 1e-5), "{verl:?}");
                assert!(out.advantages.iter().all(|&a| a == 0.0));
                continue;
            }
            assert_close(&out.advantages, verl, &format!("{} {name}", case.name));
            assert_eq!(out.stats.groups, {
                let mut g = case.group.clone();
                g.sort_unstable();
                g.dedup();
                g.len()
            });
        }
    }
}

fn discounted(gamma: f64, daa: bool) -> rl_advantage::Estimator {
    let mut cfg: EstimatorConfig =
        serde_json::from_value(serde_json::json!({"name": "reinforce_plus_plus", "gamma": gamma}))
            .unwrap();
    if daa {
        cfg = cfg.with_daa(2.0, 0.5).unwrap();
    }
    cfg.build(2).unwrap()
}

/// γ < 1: every token's advantage equals verl's (`AlgoConfig(gamma=γ)`), observation holes
/// included; a response's advantage in the batch output is the mean of its tokens'.
#[test]
fn discounted_reinforce_pp_matches_verl_token_by_token() {
    let f = fixture();
    let mut checked = 0;
    for case in &f.cases {
        for d in &case.reinforce_plus_plus_discounted {
            let est = discounted(d.gamma, false);
            let per = compute_token_advantages(&est, &case.samples(), &case.tokens)
                .unwrap()
                .expect("γ < 1 gives token advantages");
            assert_eq!(per.len(), d.advantages.len());
            for (i, (got, want)) in per.iter().zip(&d.advantages).enumerate() {
                assert_eq!(got.len(), case.tokens[i], "{} response {i}", case.name);
                assert_close(
                    got,
                    want,
                    &format!("{} γ {} response {i}", case.name, d.gamma),
                );
                checked += got.len();
            }
            let out = compute_batch_with_tokens(&est, &case.samples(), &case.tokens, None).unwrap();
            for (a, t) in out.advantages.iter().zip(&per) {
                let mean = t.iter().sum::<f64>() / t.len() as f64;
                assert!((a - mean).abs() <= 1e-12, "{a} vs {mean}");
            }
        }
    }
    assert!(checked > 1000, "{checked} token values checked");
    // γ = 1 and the baseline variant have no token advantages (every token takes its
    // response's); the baseline variant has no γ (verl's has none).
    let case = &f.cases[0];
    for est in [
        discounted(1.0, false),
        EstimatorConfig::from_name("reinforce_plus_plus_baseline")
            .unwrap()
            .build(2)
            .unwrap(),
    ] {
        let t = compute_token_advantages(&est, &case.samples(), &case.tokens).unwrap();
        assert!(t.is_none());
    }
    let e = serde_json::from_value::<EstimatorConfig>(
        serde_json::json!({"name": "reinforce_plus_plus_baseline", "gamma": 0.9}),
    )
    .unwrap_err();
    assert!(e.to_string().contains("gamma"), "{e}");
    for bad in [0.0, -0.5, 1.5] {
        let cfg: EstimatorConfig = serde_json::from_value(
            serde_json::json!({"name": "reinforce_plus_plus", "gamma": bad}),
        )
        .unwrap();
        let e = cfg.build(2).unwrap_err().to_string();
        assert!(e.contains("gamma") && e.contains("(0, 1]"), "{e}");
    }
}

/// DAA on discounted advantages decides token by token: with `keep`, a token of a correct
/// response in a group with p̂ < τ is multiplied by λ when its own advantage is positive.
/// Expected: verl's token values with that rule applied by hand.
#[test]
fn daa_on_discounted_advantages_goes_token_by_token() {
    let f = fixture();
    let daa = Daa::default();
    for case in &f.cases {
        for d in &case.reinforce_plus_plus_discounted {
            let per =
                compute_token_advantages(&discounted(d.gamma, true), &case.samples(), &case.tokens)
                    .unwrap()
                    .unwrap();
            for (i, (got, want)) in per.iter().zip(&d.advantages).enumerate() {
                let group: Vec<bool> = (0..case.group.len())
                    .filter(|&j| case.group[j] == case.group[i])
                    .map(|j| case.correct[j])
                    .collect();
                let p = Daa::pass_rate(&group);
                let want: Vec<f64> = want
                    .iter()
                    .map(|&v| {
                        if case.correct[i] && p < 0.5 && v > 0.0 {
                            v * daa.factor(p, group.len())
                        } else {
                            v
                        }
                    })
                    .collect();
                assert_close(
                    got,
                    &want,
                    &format!("{} γ {} + DAA [{i}]", case.name, d.gamma),
                );
            }
        }
    }
}

/// Without token counts every response counts as one token: on the batch whose responses have
/// one token each, `compute_batch` gives verl's values; on the others it does not (the whitening
/// is token-weighted in verl).
#[test]
fn without_token_counts_each_response_is_one_token() {
    let f = fixture();
    for case in &f.cases {
        for name in NAMES {
            let est = EstimatorConfig::from_name(name).unwrap().build(2).unwrap();
            let out = compute_batch(&est, &case.samples(), None).unwrap();
            let ones = vec![1; case.group.len()];
            let with_ones = compute_batch_with_tokens(&est, &case.samples(), &ones, None).unwrap();
            assert_eq!(out.advantages, with_ones.advantages);
            if case.name == "one_token_each" {
                assert_close(&out.advantages, case.verl(name), name);
            }
        }
    }
    let uneven = f.cases.iter().find(|c| c.name == "g8x4_pm1").unwrap();
    let est = EstimatorConfig::from_name("reinforce_plus_plus")
        .unwrap()
        .build(2)
        .unwrap();
    let out = compute_batch(&est, &uneven.samples(), None).unwrap();
    let max_diff = out
        .advantages
        .iter()
        .zip(&uneven.reinforce_plus_plus)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(max_diff > 1e-3, "{max_diff}");
}

/// A response with no valid token (masked out of the loss) gets 0, as verl's `* response_mask`
/// gives, and does not enter the statistics: appending one to a verl batch leaves the others'
/// values unchanged.
#[test]
fn responses_without_tokens_get_zero_and_leave_the_statistics() {
    let f = fixture();
    let case = f.cases.iter().find(|c| c.name == "uneven_shaped").unwrap();
    let mut samples = case.samples();
    let mut tokens = case.tokens.clone();
    // A third member of group 2 (sizes 3, 7, 2, 5), with a reward far from the others.
    samples.push(Sample::new(GroupId(2), 0.0, false));
    tokens.push(0);
    let est = EstimatorConfig::from_name("reinforce_plus_plus")
        .unwrap()
        .build(2)
        .unwrap();
    let out = compute_batch_with_tokens(&est, &samples, &tokens, None).unwrap();
    assert_eq!(*out.advantages.last().unwrap(), 0.0);
    let n = case.group.len();
    assert_close(
        &out.advantages[..n],
        &case.reinforce_plus_plus,
        "no-token response",
    );
}

/// DAA composes on top as on DAPO (`da3po`): the whitened advantages of correct responses in
/// groups with p̂ < τ and Â > 0 are multiplied by λ. Expected: verl's values with DAA applied
/// per group by hand (`Daa::apply`); then `linear_r` multiplies every group by 1/p̂.
#[test]
fn daa_and_prompt_weight_compose_on_top() {
    let f = fixture();
    for case in &f.cases {
        if case.name == "all_equal_rewards" {
            continue;
        }
        for name in NAMES {
            let cfg = EstimatorConfig::from_name(name)
                .unwrap()
                .with_daa(2.0, 0.5)
                .unwrap();
            let est = cfg.build(2).unwrap();
            assert_eq!(est.daa(), Some(Daa::new(2.0, 0.5).unwrap()));
            let samples = case.samples();
            let out = compute_batch_with_tokens(&est, &samples, &case.tokens, None).unwrap();
            let mut want = case.verl(name).to_vec();
            let mut amplified = 0;
            let mut ids = case.group.clone();
            ids.sort_unstable();
            ids.dedup();
            for g in &ids {
                let idx: Vec<usize> = (0..samples.len())
                    .filter(|&i| case.group[i] == *g)
                    .collect();
                let mut vals: Vec<f64> = idx.iter().map(|&i| want[i]).collect();
                let correct: Vec<bool> = idx.iter().map(|&i| case.correct[i]).collect();
                amplified += Daa::default().apply(&mut vals, &correct).amplified;
                for (k, &i) in idx.iter().enumerate() {
                    want[i] = vals[k];
                }
            }
            assert_close(
                &out.advantages,
                &want,
                &format!("{} {name} + DAA", case.name),
            );
            assert_eq!(out.stats.amplified, amplified, "{} {name}", case.name);
            // Then the prompt weight, per group, after DAA.
            let weighted = cfg
                .with_prompt_weight(PromptWeight::LinearR)
                .build(2)
                .unwrap();
            let w_out = compute_batch_with_tokens(&weighted, &samples, &case.tokens, None).unwrap();
            for (i, s) in samples.iter().enumerate() {
                let members: Vec<&Sample> = samples.iter().filter(|x| x.group == s.group).collect();
                let k = members.iter().filter(|x| x.correct).count() as f64;
                let w = if k > 0.0 {
                    members.len() as f64 / k
                } else {
                    1.0
                };
                let expect = want[i] * w;
                assert!(
                    (w_out.advantages[i] - expect).abs() <= TOL * expect.abs().max(1.0),
                    "{} {name} weighted [{i}]",
                    case.name
                );
            }
            assert_eq!(w_out.amplified, out.amplified);
        }
    }
}

#[test]
fn configuration_and_errors() {
    assert!(ESTIMATOR_NAMES.contains(&"reinforce_plus_plus"));
    assert!(ESTIMATOR_NAMES.contains(&"reinforce_plus_plus_baseline"));
    for name in NAMES {
        let c = EstimatorConfig::from_name(name).unwrap();
        assert_eq!(c.name(), name);
        // Defaults serialize without the optional DAA layer.
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, format!(r#"{{"name":"{name}","equal_tol":1e-6}}"#));
        assert!(c.build(2).unwrap().daa().is_none());
        // No group std to choose.
        assert!(c.with_std(StdMode::Population).is_err());
        // DAA settings other than λ, τ need the layer first.
        assert!(
            c.with_negative_advantage(rl_advantage::NegativeAdvantage::Amplify)
                .is_err()
        );
        let with = c.with_daa(3.0, 0.25).unwrap();
        let back: EstimatorConfig =
            serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back, with);
        let d = with.build(2).unwrap().daa().unwrap();
        assert_eq!((d.lambda, d.tau), (3.0, 0.25));
    }
    let c: EstimatorConfig = serde_json::from_str(
        r#"{"name":"reinforce_plus_plus","daa":{"tau":0.75,"lambda_rule":"theory"}}"#,
    )
    .unwrap();
    match c {
        EstimatorConfig::ReinforcePlusPlus { daa: Some(d), .. } => {
            assert_eq!(
                d,
                DaaConfig {
                    tau: 0.75,
                    lambda_rule: rl_advantage::LambdaRule::Theory,
                    ..DaaConfig::default()
                }
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        serde_json::from_str::<EstimatorConfig>(
            r#"{"name":"reinforce_plus_plus","daa":{"lamda":2.0}}"#
        )
        .is_err()
    );
    let bad = EstimatorConfig::from_name("reinforce_plus_plus_baseline")
        .unwrap()
        .with_daa(0.0, 0.5)
        .unwrap()
        .build(2)
        .unwrap_err();
    assert!(matches!(
        bad,
        AdvantageError::InvalidConfig(rl_advantage::InvalidValue {
            field: "lambda",
            ..
        })
    ));
    // One token count per sample.
    let est = EstimatorConfig::from_name("reinforce_plus_plus")
        .unwrap()
        .build(2)
        .unwrap();
    let s = vec![
        Sample::new(GroupId(0), 1.0, true),
        Sample::new(GroupId(0), 0.0, false),
    ];
    assert_eq!(
        compute_batch_with_tokens(&est, &s, &[3], None).unwrap_err(),
        AdvantageError::TokenCountMismatch {
            samples: 2,
            tokens: 1
        }
    );
    // Groups are still checked (a group of one has no baseline).
    let one = vec![Sample::new(GroupId(0), 1.0, true)];
    assert!(matches!(
        compute_batch_with_tokens(&est, &one, &[3], None),
        Err(AdvantageError::GroupTooSmall { .. })
    ));
}
