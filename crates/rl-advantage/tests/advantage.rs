//! Golden values and DAA properties (Theorem 3.1's α±, γ: `tests/theory.rs`).
//!
//! Every expected number is derived in the comment next to it (or comes from the reference
//! table in algorithms.md §10.1, which the derivations reproduce).

use proptest::prelude::*;
use rl_advantage::{
    AdvantageError, EstimatorConfig, GroupId, NegativeAdvantage, Sample, StdMode, Whitening,
    compute_batch,
};

fn group(id: u64, correct: &[bool], r_pos: f64, r_neg: f64) -> Vec<Sample> {
    correct
        .iter()
        .map(|&c| Sample::new(GroupId(id), if c { r_pos } else { r_neg }, c))
        .collect()
}

fn three_of_eight() -> Vec<bool> {
    (0..8).map(|i| i < 3).collect()
}

fn advantages(name: &str, std: Option<StdMode>, samples: &[Sample]) -> Vec<f64> {
    let mut cfg = EstimatorConfig::from_name(name).unwrap();
    if let Some(s) = std {
        cfg = cfg.with_std(s).unwrap();
    }
    let est = cfg.build(samples.len()).unwrap();
    compute_batch(&est, samples, None).unwrap().advantages
}

/// G = 8, 3 correct, rewards ±1: mean = (3 − 5)/8 = −0.25; deviations +1.25 / −0.75;
/// Σ dev² = 3·1.5625 + 5·0.5625 = 7.5.
/// Sample std = √(7.5/7) = 1.035098 → A+ = 1.25/1.035098 = 1.207615, A− = −0.724569.
/// Population std = √(7.5/8) = 0.968246 → A+ = 1.290994, A− = −0.774597.
/// (ε = 1e-6 moves these by < 2e-6.)
#[test]
fn grpo_golden_sample_and_population_std() {
    let s = group(1, &three_of_eight(), 1.0, -1.0);
    let a = advantages("grpo", Some(StdMode::Sample), &s);
    assert!((a[0] - 1.2076).abs() < 1e-4, "{a:?}");
    assert!((a[7] + 0.7246).abs() < 1e-4, "{a:?}");
    let a = advantages("grpo", Some(StdMode::Population), &s);
    assert!((a[0] - 1.2910).abs() < 1e-4, "{a:?}");
    assert!((a[7] + 0.7746).abs() < 1e-4, "{a:?}");
}

/// Dr. GRPO with 0/1 rewards, 3 of 8 correct: mean 3/8 = 0.375 → +0.625 / −0.375.
#[test]
fn dr_grpo_golden() {
    let a = advantages("dr_grpo", None, &group(1, &three_of_eight(), 1.0, 0.0));
    assert!((a[0] - 0.625).abs() < 1e-12);
    assert!((a[5] + 0.375).abs() < 1e-12);
}

/// RLOO with 0/1 rewards, 3 of 8 correct: a correct response's baseline is 2/7 (2 other
/// correct among 7 others) → 1 − 2/7 = 5/7 = 0.714286; a wrong one's is 3/7 → −0.428571.
#[test]
fn rloo_golden() {
    let a = advantages("rloo", None, &group(1, &three_of_eight(), 1.0, 0.0));
    assert!((a[0] - 5.0 / 7.0).abs() < 1e-12);
    assert!((a[0] - 0.7143).abs() < 1e-4);
    assert!((a[6] + 0.4286).abs() < 1e-4);
}

/// algorithms.md §10.1 rows for population std, ε ignored: with binary rewards and pass rate
/// p̂ = k/G, A+ = √((1−p̂)/p̂), A− = −√(p̂/(1−p̂)); the sample-std values are these times
/// √((G−1)/G). DA3PO doubles A+ when p̂ < 0.5.
#[test]
fn da3po_table_of_reference_values() {
    // (G, k, A+ pop, A+ unbiased, DAA A+ pop, DAA A+ unbiased or None when unchanged)
    type Row = (usize, usize, f64, f64, Option<(f64, f64)>);
    let rows: [Row; 6] = [
        (8, 1, 2.6458, 2.4749, Some((5.2915, 4.9497))),
        (8, 2, 1.7321, 1.6202, Some((3.4641, 3.2404))),
        (8, 4, 1.0000, 0.9354, None),
        (16, 1, 3.8730, 3.7500, Some((7.7460, 7.5000))),
        (16, 8, 1.0000, 0.9682, None),
        (16, 15, 0.2582, 0.2500, None),
    ];
    for (g, k, pop, unb, daa) in rows {
        let correct: Vec<bool> = (0..g).map(|i| i < k).collect();
        let s = group(0, &correct, 1.0, -1.0);
        // Closed form derivation.
        let p = k as f64 / g as f64;
        let closed = ((1.0 - p) / p).sqrt();
        assert!((closed - pop).abs() < 1e-4);
        let grpo_pop = advantages("grpo", Some(StdMode::Population), &s);
        let grpo_unb = advantages("grpo", Some(StdMode::Sample), &s);
        assert!((grpo_pop[0] - pop).abs() < 1e-4, "G={g} k={k}");
        assert!((grpo_unb[0] - unb).abs() < 1e-4, "G={g} k={k}");
        let d_pop = advantages("da3po", Some(StdMode::Population), &s);
        let d_unb = advantages("da3po", Some(StdMode::Sample), &s);
        match daa {
            Some((dp, du)) => {
                assert!((d_pop[0] - dp).abs() < 1e-4, "G={g} k={k}");
                assert!((d_unb[0] - du).abs() < 1e-4, "G={g} k={k}");
            }
            None => {
                assert_eq!(d_pop, grpo_pop);
                assert_eq!(d_unb, grpo_unb);
            }
        }
        // Negative advantages are never amplified.
        assert_eq!(d_unb[g - 1], grpo_unb[g - 1]);
    }
}

fn da3po(rule: NegativeAdvantage) -> EstimatorConfig {
    EstimatorConfig::Da3po {
        std: StdMode::Population,
        eps: 0.0,
        equal_tol: 1e-6,
        lambda: 2.0,
        tau: 0.5,
        negative_advantage: rule,
        lambda_rule: Default::default(),
        lambda_min: None,
        lambda_max: None,
        prompt_weight: Default::default(),
    }
}

/// A correct response below its group's mean (1/0 rewards with an overlong penalty).
///
/// G = 5, correct = [T, T, F, F, F], rewards = [1, 0, 0, 0, 0]: response 1 is correct but fully
/// length-penalised (1 − 1 = 0). p̂ = 2/5 = 0.4 < τ = 0.5, so the group is hard.
/// mean = 1/5 = 0.2; deviations 0.8, −0.2 (×4); Σ dev² = 0.64 + 4·0.04 = 0.8;
/// population std = √(0.8/5) = 0.4; with ε = 0: Â = [2, −0.5, −0.5, −0.5, −0.5].
/// DAA, λ = 2:
/// * `keep` (default): only the positive Â of a correct response is doubled →
///   [4, −0.5, −0.5, −0.5, −0.5]; one amplified sample.
/// * `amplify` (the formula read literally): response 1's −0.5 is doubled as well →
///   [4, −1, −0.5, −0.5, −0.5]; two amplified samples.
#[test]
fn daa_on_a_correct_response_with_negative_advantage() {
    let correct = [true, true, false, false, false];
    let s: Vec<Sample> = [1.0, 0.0, 0.0, 0.0, 0.0]
        .iter()
        .zip(correct)
        .map(|(&r, c)| Sample::new(GroupId(5), r, c))
        .collect();
    let cases = [
        (NegativeAdvantage::Keep, [4.0, -0.5, -0.5, -0.5, -0.5], 1),
        (NegativeAdvantage::Amplify, [4.0, -1.0, -0.5, -0.5, -0.5], 2),
    ];
    for (rule, expect, n_amplified) in cases {
        let est = da3po(rule).build(5).unwrap();
        let out = compute_batch(&est, &s, None).unwrap();
        for (got, want) in out.advantages.iter().zip(expect) {
            assert!((got - want).abs() < 1e-12, "{rule:?}: {:?}", out.advantages);
        }
        assert_eq!(out.stats.amplified, n_amplified, "{rule:?}");
        assert_eq!(out.amplified[1], rule == NegativeAdvantage::Amplify);
    }
    // The default of both the registry and serde is `keep`.
    let from_json: EstimatorConfig = serde_json::from_str(r#"{"name":"da3po"}"#).unwrap();
    for cfg in [EstimatorConfig::from_name("da3po").unwrap(), from_json] {
        assert!(matches!(
            cfg,
            EstimatorConfig::Da3po {
                negative_advantage: NegativeAdvantage::Keep,
                ..
            }
        ));
    }
    let literal: EstimatorConfig =
        serde_json::from_str(r#"{"name":"da3po","negative_advantage":"amplify"}"#).unwrap();
    assert!(matches!(
        literal,
        EstimatorConfig::Da3po {
            negative_advantage: NegativeAdvantage::Amplify,
            ..
        }
    ));
}

#[test]
fn equal_rewards_give_exact_zeros_for_every_estimator() {
    for name in rl_advantage::ESTIMATOR_NAMES {
        for r in [0.0, 1.0, -1.0, 0.1, 123.456] {
            let s: Vec<Sample> = (0..5)
                .map(|i| Sample::new(GroupId(3), r, i % 2 == 0))
                .collect();
            let a = advantages(name, None, &s);
            assert!(a.iter().all(|&x| x == 0.0), "{name} r={r}: {a:?}");
        }
        // Within tolerance (partial-credit float noise) is also exactly zero, not reward/ε.
        let s: Vec<Sample> = [0.3, 0.3 + 1e-9, 0.3 - 1e-9, 0.3]
            .iter()
            .map(|&r| Sample::new(GroupId(1), r, false))
            .collect();
        assert!(
            advantages(name, None, &s).iter().all(|&x| x == 0.0),
            "{name}"
        );
    }
}

#[test]
fn configuration_errors_name_the_problem() {
    let err = EstimatorConfig::from_name("ppo").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("ppo") && msg.contains("grpo") && msg.contains("da3po"),
        "{msg}"
    );
    let err = EstimatorConfig::from_name("grpo")
        .unwrap()
        .build(1)
        .unwrap_err();
    assert!(matches!(
        err,
        AdvantageError::InvalidConfig(rl_advantage::InvalidValue {
            field: "group_size",
            ..
        })
    ));
    let err = EstimatorConfig::from_name("da3po")
        .unwrap()
        .with_daa(2.0, 1.5)
        .unwrap()
        .build(8);
    assert!(matches!(
        err,
        Err(AdvantageError::InvalidConfig(rl_advantage::InvalidValue {
            field: "tau",
            ..
        }))
    ));
    let err = EstimatorConfig::from_name("rloo")
        .unwrap()
        .with_std(StdMode::Population);
    assert!(matches!(
        err,
        Err(AdvantageError::InvalidConfig(rl_advantage::InvalidValue {
            field: "std",
            ..
        }))
    ));
    let bad: Result<EstimatorConfig, _> = serde_json::from_str(r#"{"name":"grpo","lambda":2}"#);
    assert!(bad.is_err(), "unknown keys must be rejected");
    // DAA's rule for negative advantages: a bad value names the field and the valid values,
    // through serde (configs) as through the typed constructor (command line).
    let msg = serde_json::from_str::<EstimatorConfig>(
        r#"{"name":"da3po","negative_advantage":"double"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        msg.contains("`negative_advantage`") && msg.contains("keep, amplify"),
        "{msg}"
    );
    match NegativeAdvantage::from_name("double") {
        Err(AdvantageError::UnknownName(e)) => {
            assert_eq!(e.name, "double");
            assert_eq!(e.valid, ["keep", "amplify"]);
            assert!(e.to_string().contains("`negative_advantage`"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        EstimatorConfig::from_name("dapo")
            .unwrap()
            .with_negative_advantage(NegativeAdvantage::Amplify),
        Err(AdvantageError::InvalidConfig(rl_advantage::InvalidValue {
            field: "negative_advantage",
            ..
        }))
    ));
}

#[test]
fn bad_batches_are_errors_naming_the_group() {
    let est = EstimatorConfig::from_name("grpo")
        .unwrap()
        .build(4)
        .unwrap();
    let mut s = group(9, &[true, false, true, false], 1.0, 0.0);
    s[2].reward = f64::NAN;
    match compute_batch(&est, &s, None) {
        Err(AdvantageError::NonFiniteReward { group, index, .. }) => {
            assert_eq!((group, index), (GroupId(9), 2));
        }
        other => panic!("{other:?}"),
    }
    let s = vec![Sample::new(GroupId(4), 1.0, true)];
    assert!(matches!(
        compute_batch(&est, &s, None),
        Err(AdvantageError::GroupTooSmall { size: 1, .. })
    ));
}

#[test]
fn config_round_trips_through_json_and_toml() {
    for name in rl_advantage::ESTIMATOR_NAMES {
        let cfg = EstimatorConfig::from_name(name).unwrap();
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<EstimatorConfig>(&json).unwrap(), cfg);
    }
}

#[test]
fn interleaved_layout_gives_the_same_advantages() {
    // Groups are identified by id, not position: interleave two groups and compare.
    let a = group(1, &[true, false, false, true], 1.0, -1.0);
    let b = group(2, &[false, false, true, false], 1.0, -1.0);
    let est = EstimatorConfig::from_name("da3po")
        .unwrap()
        .build(4)
        .unwrap();
    let contiguous: Vec<Sample> = a.iter().chain(&b).copied().collect();
    let interleaved: Vec<Sample> = a.iter().zip(&b).flat_map(|(x, y)| [*x, *y]).collect();
    let ca = compute_batch(&est, &contiguous, None).unwrap();
    let ia = compute_batch(&est, &interleaved, None).unwrap();
    for i in 0..4 {
        assert_eq!(ca.advantages[i], ia.advantages[2 * i]);
        assert_eq!(ca.advantages[4 + i], ia.advantages[2 * i + 1]);
    }
    // Group 2 has p̂ = 1/4 < 0.5: its correct sample is amplified; group 1 has p̂ = 0.5: not.
    assert_eq!(ia.stats.amplified, 1);
    assert!(ia.amplified[5]);
}

#[test]
fn whitening_is_explicit_and_normalises_the_batch() {
    let s: Vec<Sample> = group(1, &[true, false, false, false], 1.0, 0.0)
        .into_iter()
        .chain(group(2, &[true, true, true, false], 1.0, 0.0))
        .collect();
    let est = EstimatorConfig::from_name("dr_grpo")
        .unwrap()
        .build(4)
        .unwrap();
    let plain = compute_batch(&est, &s, None).unwrap();
    let w = compute_batch(&est, &s, Some(Whitening { eps: 0.0 })).unwrap();
    assert!(w.stats.mean.abs() < 1e-12);
    assert!((w.stats.std - 1.0).abs() < 1e-12);
    assert_ne!(plain.advantages, w.advantages);
}

fn correctness_group() -> impl Strategy<Value = Vec<bool>> {
    prop::collection::vec(any::<bool>(), 2..24)
}

proptest! {
    #[test]
    fn daa_with_lambda_one_is_dapo(correct in correctness_group(), std in prop_oneof![Just(StdMode::Sample), Just(StdMode::Population)]) {
        let s = group(5, &correct, 1.0, -1.0);
        let dapo = EstimatorConfig::from_name("dapo").unwrap().with_std(std).unwrap().build(s.len()).unwrap();
        let da3po = EstimatorConfig::from_name("da3po").unwrap().with_std(std).unwrap()
            .with_daa(1.0, 0.5).unwrap().build(s.len()).unwrap();
        let a = compute_batch(&dapo, &s, None).unwrap().advantages;
        let b = compute_batch(&da3po, &s, None).unwrap().advantages;
        prop_assert_eq!(a, b);
    }

    #[test]
    fn daa_touches_exactly_the_correct_responses_of_hard_groups(
        correct in correctness_group(), lambda in 0.1f64..10.0, tau in 0.01f64..1.0,
        shaped in prop::collection::vec(-0.5f64..0.0, 24),
        literal in any::<bool>(), zero_one in any::<bool>(),
    ) {
        // Shaped rewards: ±1 or 1/0 plus an overlong-style penalty in [−1, 0], so a correct
        // response's reward can be ≤ 0 and (often with 1/0) sit below its group's mean;
        // amplification follows the correctness flag, and with `keep` only positive advantages
        // are multiplied.
        let wrong = if zero_one { 0.0 } else { -1.0 };
        let s: Vec<Sample> = correct.iter().enumerate()
            .map(|(i, &c)| Sample::new(GroupId(1), if c { 1.0 } else { wrong } + 2.0 * shaped[i], c))
            .collect();
        let rule = if literal { NegativeAdvantage::Amplify } else { NegativeAdvantage::Keep };
        let base = EstimatorConfig::from_name("dapo").unwrap().build(s.len()).unwrap();
        let amp = EstimatorConfig::from_name("da3po").unwrap().with_daa(lambda, tau).unwrap()
            .with_negative_advantage(rule).unwrap().build(s.len()).unwrap();
        let a = compute_batch(&base, &s, None).unwrap();
        let b = compute_batch(&amp, &s, None).unwrap();
        let p_hat = correct.iter().filter(|&&c| c).count() as f64 / correct.len() as f64;
        for (i, &c) in correct.iter().enumerate() {
            if c && p_hat < tau && (literal || a.advantages[i] > 0.0) {
                prop_assert!(b.amplified[i]);
                prop_assert_eq!(b.advantages[i], lambda * a.advantages[i]);
            } else {
                prop_assert!(!b.amplified[i]);
                prop_assert_eq!(b.advantages[i], a.advantages[i]);
            }
        }
        if p_hat >= tau {
            let sum: f64 = b.advantages.iter().sum();
            prop_assert!(sum.abs() < 1e-9, "unchanged groups still sum to zero: {}", sum);
        }
    }

    #[test]
    fn permuting_a_batch_permutes_the_output(
        groups in prop::collection::vec(correctness_group(), 1..6), seed in any::<u64>()
    ) {
        let mut s = Vec::new();
        for (j, c) in groups.iter().enumerate() {
            s.extend(group(j as u64, c, 1.0, 0.0));
        }
        // A deterministic pseudo-random permutation.
        let mut perm: Vec<usize> = (0..s.len()).collect();
        let mut x = seed | 1;
        for i in (1..perm.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            perm.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let shuffled: Vec<Sample> = perm.iter().map(|&i| s[i]).collect();
        for name in rl_advantage::ESTIMATOR_NAMES {
            let est = EstimatorConfig::from_name(name).unwrap().build(2).unwrap();
            let a = compute_batch(&est, &s, None).unwrap();
            let b = compute_batch(&est, &shuffled, None).unwrap();
            for (k, &i) in perm.iter().enumerate() {
                prop_assert!((b.advantages[k] - a.advantages[i]).abs() < 1e-12);
                prop_assert_eq!(b.amplified[k], a.amplified[i]);
            }
        }
    }
}

/// DA3PO with `lambda_rule = "theory"`, population std and ε = 0, gate `tau`, bounds as given.
fn da3po_theory(tau: f64, lambda_min: Option<f64>, lambda_max: Option<f64>) -> EstimatorConfig {
    EstimatorConfig::Da3po {
        std: StdMode::Population,
        eps: 0.0,
        equal_tol: 1e-6,
        lambda: 2.0,
        tau,
        negative_advantage: NegativeAdvantage::Keep,
        lambda_rule: rl_advantage::LambdaRule::Theory,
        lambda_min,
        lambda_max,
        prompt_weight: Default::default(),
    }
}

/// The factor a correct response's advantage received: amplified over unamplified (DAPO).
fn theory_factor(cfg: &EstimatorConfig, group_size: usize, n_correct: usize) -> f64 {
    let s: Vec<Sample> = (0..group_size)
        .map(|i| {
            Sample::new(
                GroupId(1),
                if i < n_correct { 1.0 } else { 0.0 },
                i < n_correct,
            )
        })
        .collect();
    let amplified = compute_batch(&cfg.build(group_size).unwrap(), &s, None).unwrap();
    let dapo = EstimatorConfig::Dapo {
        std: StdMode::Population,
        eps: 0.0,
        equal_tol: 1e-6,
        prompt_weight: Default::default(),
    };
    let plain = compute_batch(&dapo.build(group_size).unwrap(), &s, None).unwrap();
    amplified.advantages[0] / plain.advantages[0]
}

/// λ(p̂, G) = 1/γ = (1 − p̂^(G−1)) / (1 − (1 − p̂)^(G−1)), by hand as exact fractions:
/// * G = 8, p̂ = 1/8: (1 − 1/8⁷)/(1 − 7⁷/8⁷) = (2097152 − 1)/(2097152 − 823543) = 2097151/1273609
///   ≈ 1.6466;
/// * G = 8, p̂ = 3/8: (8⁷ − 3⁷)/(8⁷ − 5⁷) = (2097152 − 2187)/(2097152 − 78125) = 2094965/2019027
///   ≈ 1.0376;
/// * G = 4, p̂ = 1/4: (4³ − 1)/(4³ − 3³) = 63/37 ≈ 1.7027;
/// * G = 8, p̂ = 1/2: 1 (γ = 1 by symmetry);
/// * G = 8, p̂ = 5/8 (gate off, τ = 1): 2019027/2094965 ≈ 0.9638 < 1, raised to 1 by
///   `lambda_min = 1`;
/// * `lambda_max = 1.5` caps the first case at 1.5.
///
/// With the paper's τ = 0.5, a group with p̂ = 5/8 is not amplified at all (factor 1).
#[test]
fn theory_lambda_is_one_over_gamma() {
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    let open = da3po_theory(1.0, None, None);
    close(theory_factor(&open, 8, 1), 2097151.0 / 1273609.0);
    close(theory_factor(&open, 8, 3), 2094965.0 / 2019027.0);
    close(theory_factor(&open, 4, 1), 63.0 / 37.0);
    close(theory_factor(&open, 8, 4), 1.0);
    close(theory_factor(&open, 8, 5), 2019027.0 / 2094965.0);
    close(
        theory_factor(&da3po_theory(1.0, Some(1.0), None), 8, 5),
        1.0,
    );
    close(
        theory_factor(&da3po_theory(1.0, None, Some(1.5)), 8, 1),
        1.5,
    );
    close(theory_factor(&da3po_theory(0.5, None, None), 8, 5), 1.0);
    // The TOML/JSON form, and bad bounds.
    let cfg: EstimatorConfig = serde_json::from_str(
        r#"{"name":"da3po","std":"population","eps":0.0,"lambda_rule":"theory","lambda_max":1.5}"#,
    )
    .unwrap();
    close(theory_factor(&cfg, 8, 1), 1.5);
    assert!(
        serde_json::from_str::<EstimatorConfig>(r#"{"name":"da3po","lambda_rule":"gamma"}"#)
            .is_err()
    );
    let e = da3po_theory(1.0, Some(2.0), Some(1.5))
        .build(8)
        .err()
        .unwrap();
    assert!(e.to_string().contains("lambda_min"), "{e}");
    assert!(da3po_theory(1.0, Some(0.0), None).build(8).is_err());
}

proptest! {
    /// For every group size 2..=64 and every mixed group (1 ≤ c < G), the theory factor equals
    /// the closed form (1 − p^(G−1))/(1 − (1−p)^(G−1)) with p = c/G evaluated here by `powi`.
    #[test]
    fn theory_lambda_matches_the_closed_form(g in 2usize..=64, c_frac in 0.0f64..1.0) {
        let c = 1 + ((g - 1) as f64 * c_frac) as usize % (g - 1);
        let p = c as f64 / g as f64;
        let n = (g - 1) as i32;
        let closed = (1.0 - p.powi(n)) / (1.0 - (1.0 - p).powi(n));
        let daa = rl_advantage::Daa::new(2.0, 1.0)
            .unwrap()
            .with_lambda_rule(rl_advantage::LambdaRule::Theory, None, None)
            .unwrap();
        let f = daa.factor(p, g);
        prop_assert!((f - closed).abs() <= 1e-9 * closed, "G={} c={}: {} vs {}", g, c, f, closed);
    }
}
