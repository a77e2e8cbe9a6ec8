//! Asymmetric prompt weighting (`prompt_weight`, arXiv 2602.11128) and groups of different
//! sizes in one batch (what difficulty-adaptive rollout budgets produce).
//!
//! Every expected number is derived in the comment next to it. The source's notation: binary
//! rewards r ∈ {0, 1}, ρ̂ = p̂ the group's success rate, A_i = ω(ρ̂)·(r_i − ρ̂); Linear-R is
//! ω = 1/ρ̂, so A = −1 for a wrong response and 1/ρ̂ − 1 for a correct one.

use proptest::prelude::*;
use rl_advantage::{
    AdvantageError, Daa, EstimatorConfig, GroupId, LambdaRule, NegativeAdvantage,
    PROMPT_WEIGHT_NAMES, PromptWeight, Sample, StdMode, compute_batch,
};

fn samples(id: u64, rewards: &[f64], correct: &[bool]) -> Vec<Sample> {
    rewards
        .iter()
        .zip(correct)
        .map(|(&r, &c)| Sample::new(GroupId(id), r, c))
        .collect()
}

/// Binary group: the first `k` of `g` responses correct, rewards `hi`/`lo`.
fn binary(id: u64, g: usize, k: usize, hi: f64, lo: f64) -> Vec<Sample> {
    let correct: Vec<bool> = (0..g).map(|i| i < k).collect();
    let rewards: Vec<f64> = correct.iter().map(|&c| if c { hi } else { lo }).collect();
    samples(id, &rewards, &correct)
}

/// The estimator `name` with ε = 0 and population std where it has a std (exact hand values),
/// weighted by `w`.
fn cfg(name: &str, w: PromptWeight) -> EstimatorConfig {
    let none = PromptWeight::None;
    let c = match EstimatorConfig::from_name(name).unwrap() {
        EstimatorConfig::Grpo { equal_tol, .. } => EstimatorConfig::Grpo {
            std: StdMode::Population,
            eps: 0.0,
            equal_tol,
            prompt_weight: none,
        },
        EstimatorConfig::Dapo { equal_tol, .. } => EstimatorConfig::Dapo {
            std: StdMode::Population,
            eps: 0.0,
            equal_tol,
            prompt_weight: none,
        },
        EstimatorConfig::Da3po {
            equal_tol,
            lambda,
            tau,
            negative_advantage,
            lambda_rule,
            lambda_min,
            lambda_max,
            ..
        } => EstimatorConfig::Da3po {
            std: StdMode::Population,
            eps: 0.0,
            equal_tol,
            lambda,
            tau,
            negative_advantage,
            lambda_rule,
            lambda_min,
            lambda_max,
            prompt_weight: none,
        },
        other => other,
    };
    c.with_prompt_weight(w)
}

fn run(c: &EstimatorConfig, s: &[Sample]) -> Vec<f64> {
    let est = c.build(s.len().max(2)).unwrap();
    compute_batch(&est, s, None).unwrap().advantages
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{got:?} vs {want:?}");
    }
}

/// `dr_grpo` + `linear_r` with 0/1 rewards is the paper's estimator A_i = (r_i − p̂)/p̂:
/// * G = 8, 2 correct: p̂ = 1/4; Dr. GRPO gives r − 1/4 = +3/4 / −1/4; × 1/p̂ = 4 → +3 / −1
///   (= 1/p̂ − 1 = 3 and −1, the source's values).
/// * G = 4, 1 correct: p̂ = 1/4 again → +3 / −1 (the weight depends on p̂, not on G).
/// * G = 5, 3 correct: p̂ = 3/5; r − 3/5 = +2/5 / −3/5; × 5/3 → +2/3 / −1.
/// * G = 2, 1 correct: p̂ = 1/2; ±1/2 × 2 → +1 / −1.
#[test]
fn linear_r_on_dr_grpo_is_the_papers_estimator() {
    let c = cfg("dr_grpo", PromptWeight::LinearR);
    let cases: [(usize, usize, f64, f64); 4] = [
        (8, 2, 3.0, -1.0),
        (4, 1, 3.0, -1.0),
        (5, 3, 2.0 / 3.0, -1.0),
        (2, 1, 1.0, -1.0),
    ];
    for (g, k, plus, minus) in cases {
        let a = run(&c, &binary(1, g, k, 1.0, 0.0));
        let want: Vec<f64> = (0..g).map(|i| if i < k { plus } else { minus }).collect();
        close(&a, &want, 1e-12);
    }
}

/// The weight multiplies whatever the estimator produced:
/// * `dr_grpo`, ±1 rewards, G = 8, 2 correct: mean = (2 − 6)/8 = −1/2 → +3/2 / −1/2; × 4 →
///   +6 / −2 (twice the paper's values: the ±1 reward spread is 2).
/// * `grpo`, population std, ε = 0, ±1 rewards, G = 8, 1 correct: p̂ = 1/8, A+ = √((1−p̂)/p̂) =
///   √7 = 2.645751, A− = −√(p̂/(1−p̂)) = −1/√7 = −0.377964; × 8 → 8√7 = 21.166010 and
///   −8/√7 = −3.023716.
/// * `rloo`, 0/1 rewards, G = 4, 1 correct: A+ = 1 − 0 = 1, A− = 0 − 1/3; × 4 → 4 and −4/3
///   (= G/(G−1) times the paper's 3 and −1).
#[test]
fn linear_r_scales_every_estimator_by_one_over_the_pass_rate() {
    let a = run(
        &cfg("dr_grpo", PromptWeight::LinearR),
        &binary(1, 8, 2, 1.0, -1.0),
    );
    close(&a[..3], &[6.0, 6.0, -2.0], 1e-12);
    let s7 = 7f64.sqrt();
    for name in ["grpo", "dapo"] {
        let a = run(
            &cfg(name, PromptWeight::LinearR),
            &binary(1, 8, 1, 1.0, -1.0),
        );
        close(&a[..2], &[8.0 * s7, -8.0 / s7], 1e-12);
        assert!((a[0] - 21.166010).abs() < 1e-6 && (a[1] + 3.023716).abs() < 1e-6);
    }
    let a = run(
        &cfg("rloo", PromptWeight::LinearR),
        &binary(1, 4, 1, 1.0, 0.0),
    );
    close(&a, &[4.0, -4.0 / 3.0, -4.0 / 3.0, -4.0 / 3.0], 1e-12);
}

/// p̂ = 0: 1/p̂ is undefined and the group is left as the estimator gave it. `dr_grpo`, G = 4,
/// all wrong, shaped rewards [0, −0.5, 0, 0]: mean −1/8 → [1/8, −3/8, 1/8, 1/8], unchanged.
/// p̂ = 1: w = 1 → all-correct group with rewards [1, 0.5, 1, 1] (mean 7/8) keeps
/// [1/8, −3/8, 1/8, 1/8]. Uniform groups stay exactly zero.
#[test]
fn groups_without_a_correct_response_are_left_unchanged() {
    let c = cfg("dr_grpo", PromptWeight::LinearR);
    let a = run(&c, &samples(1, &[0.0, -0.5, 0.0, 0.0], &[false; 4]));
    close(&a, &[0.125, -0.375, 0.125, 0.125], 1e-12);
    let a = run(&c, &samples(1, &[1.0, 0.5, 1.0, 1.0], &[true; 4]));
    close(&a, &[0.125, -0.375, 0.125, 0.125], 1e-12);
    for name in rl_advantage::ESTIMATOR_NAMES {
        let c = EstimatorConfig::from_name(name)
            .unwrap()
            .with_prompt_weight(PromptWeight::LinearR);
        for k in [0, 4] {
            assert!(
                run(&c, &binary(1, 4, k, 1.0, 0.0))
                    .iter()
                    .all(|&x| x == 0.0)
            );
        }
    }
    assert_eq!(PromptWeight::LinearR.weight(0.0), 1.0);
    assert_eq!(PromptWeight::LinearR.weight(0.25), 4.0);
    assert_eq!(PromptWeight::None.weight(0.25), 1.0);
}

/// Composition with DAA (`da3po`, population std, ε = 0, λ = 2, τ = 0.5), G = 8, 1 correct,
/// ±1 rewards: DAPO gives √7 / −1/√7; DAA doubles the correct one → 2√7; the weight 1/p̂ = 8
/// multiplies both → 16√7 = 42.332 and −8/√7. The order does not matter (both factors are
/// positive; DAA's gate reads p̂ and the sign of Â), and the amplified flags are DAA's alone.
/// With `lambda_rule = "theory"`, DAA's factor is 1/γ(1/8, 8) = 2097151/1273609 (see
/// `theory_lambda_is_one_over_gamma`), so A+ = 8·√7·2097151/1273609.
#[test]
fn weight_composes_with_daa_after_it() {
    let s7 = 7f64.sqrt();
    let s = binary(3, 8, 1, 1.0, -1.0);
    let plain = cfg("da3po", PromptWeight::None);
    let weighted = cfg("da3po", PromptWeight::LinearR);
    let est_p = plain.build(8).unwrap();
    let est_w = weighted.build(8).unwrap();
    assert_eq!(est_w.name(), "da3po");
    assert_eq!(est_w.prompt_weight(), PromptWeight::LinearR);
    assert_eq!(est_w.daa(), est_p.daa());
    let bp = compute_batch(&est_p, &s, None).unwrap();
    let bw = compute_batch(&est_w, &s, None).unwrap();
    close(&bp.advantages[..2], &[2.0 * s7, -1.0 / s7], 1e-12);
    close(&bw.advantages[..2], &[16.0 * s7, -8.0 / s7], 1e-12);
    assert!((bw.advantages[0] - 42.332021).abs() < 1e-6);
    assert_eq!(bw.amplified, bp.amplified);
    assert_eq!(bw.stats.amplified, 1);
    // Weight first, then DAA, by hand on the DAPO advantages: the same numbers.
    let mut dapo = run(&cfg("dapo", PromptWeight::None), &s);
    let correct: Vec<bool> = s.iter().map(|x| x.correct).collect();
    PromptWeight::LinearR.apply(&mut dapo, &correct);
    Daa::new(2.0, 0.5).unwrap().apply(&mut dapo, &correct);
    close(&dapo, &bw.advantages, 1e-12);
    // Theory factor.
    let theory = weighted
        .with_lambda_rule(LambdaRule::Theory, None, None)
        .unwrap();
    let a = run(&theory, &s);
    assert!(
        (a[0] - 8.0 * s7 * 2097151.0 / 1273609.0).abs() < 1e-9,
        "{a:?}"
    );
    close(&a[1..2], &[-8.0 / s7], 1e-12);
}

/// Groups of different sizes in one batch, interleaved: each group's statistics are its own
/// (for the per-group estimators; the REINFORCE++ pair whitens over the batch by design).
/// * G = 2, [T, F], ±1, `grpo` sample std (the default): mean 0, sample std √2, ε = 1e-6 →
///   ±1/√2 = ±0.707106.
/// * G = 3, [T, F, F], ±1: mean −1/3; deviations 4/3, −2/3, −2/3; Σdev² = 24/9; sample variance
///   (24/9)/2 = 4/3 → std 2/√3; A+ = (4/3)/(2/√3) = 2/√3 = 1.154701, A− = −1/√3 = −0.577350
///   (ε = 1e-6 in the denominator moves them by about 1e-6).
/// * G = 5 and G = 8 groups: compared with the same groups computed alone.
/// * DAA's theory factor uses each group's own G: G = 4 with 1 correct gets 63/37, G = 8 with
///   1 correct gets 2097151/1273609, in the same batch.
#[test]
fn groups_of_different_sizes_keep_their_own_statistics() {
    let groups = [
        binary(10, 2, 1, 1.0, -1.0),
        binary(11, 3, 1, 1.0, -1.0),
        binary(12, 5, 2, 1.0, 0.0),
        binary(13, 8, 3, 1.0, -1.0),
    ];
    // Interleave: round-robin over the groups until all are used.
    let mut batch = Vec::new();
    for i in 0..8 {
        for g in &groups {
            if let Some(s) = g.get(i) {
                batch.push(*s);
            }
        }
    }
    for name in rl_advantage::ESTIMATOR_NAMES {
        for w in [PromptWeight::None, PromptWeight::LinearR] {
            let c = EstimatorConfig::from_name(name)
                .unwrap()
                .with_prompt_weight(w);
            let est = c.build(8).unwrap();
            let out = compute_batch(&est, &batch, None).unwrap();
            assert_eq!(out.stats.groups, 4);
            if est.batch_level() {
                // REINFORCE++ normalises over the whole batch (tests/reinforce_pp.rs).
                continue;
            }
            for g in &groups {
                let alone = compute_batch(&est, g, None).unwrap().advantages;
                let mixed: Vec<f64> = batch
                    .iter()
                    .zip(&out.advantages)
                    .filter(|(s, _)| s.group == g[0].group)
                    .map(|(_, a)| *a)
                    .collect();
                assert_eq!(mixed, alone, "{name} {w:?} group {}", g[0].group);
            }
        }
    }
    let grpo = EstimatorConfig::from_name("grpo")
        .unwrap()
        .build(2)
        .unwrap();
    let a = compute_batch(&grpo, &groups[0], None).unwrap().advantages;
    let r2 = 2f64.sqrt();
    close(&a, &[1.0 / r2, -1.0 / r2], 2e-6);
    let a = compute_batch(&grpo, &groups[1], None).unwrap().advantages;
    let r3 = 3f64.sqrt();
    close(&a, &[2.0 / r3, -1.0 / r3, -1.0 / r3], 2e-6);
    // DAA theory: each group's own G.
    let theory = cfg("da3po", PromptWeight::None)
        .with_lambda_rule(LambdaRule::Theory, None, None)
        .unwrap();
    let dapo = cfg("dapo", PromptWeight::None);
    let mixed: Vec<Sample> = binary(20, 4, 1, 1.0, 0.0)
        .into_iter()
        .chain(binary(21, 8, 1, 1.0, 0.0))
        .collect();
    let t = run(&theory, &mixed);
    let d = run(&dapo, &mixed);
    assert!((t[0] / d[0] - 63.0 / 37.0).abs() < 1e-12);
    assert!((t[4] / d[4] - 2097151.0 / 1273609.0).abs() < 1e-12);
}

#[test]
fn prompt_weight_configuration() {
    // Default: absent from the serialized form (existing configs and outputs unchanged).
    for name in rl_advantage::ESTIMATOR_NAMES {
        let c = EstimatorConfig::from_name(name).unwrap();
        assert_eq!(c.prompt_weight(), PromptWeight::None);
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("prompt_weight"), "{json}");
        let w = c.with_prompt_weight(PromptWeight::LinearR);
        let json = serde_json::to_string(&w).unwrap();
        assert!(json.contains(r#""prompt_weight":"linear_r""#), "{json}");
        assert_eq!(serde_json::from_str::<EstimatorConfig>(&json).unwrap(), w);
    }
    let c: EstimatorConfig =
        serde_json::from_str(r#"{"name":"dr_grpo","prompt_weight":"linear_r"}"#).unwrap();
    assert_eq!(c.prompt_weight(), PromptWeight::LinearR);
    assert_eq!(c.build(4).unwrap().prompt_weight(), PromptWeight::LinearR);
    assert_eq!(
        EstimatorConfig::from_name("grpo")
            .unwrap()
            .build(4)
            .unwrap()
            .prompt_weight(),
        PromptWeight::None
    );
    // Bad values name the field and the valid values, through serde and the typed parser.
    let msg =
        serde_json::from_str::<EstimatorConfig>(r#"{"name":"grpo","prompt_weight":"sqrt_r"}"#)
            .unwrap_err()
            .to_string();
    assert!(
        msg.contains("`prompt_weight`") && msg.contains("none, linear_r"),
        "{msg}"
    );
    match PromptWeight::from_name("Linear-R") {
        Err(AdvantageError::UnknownName(e)) => {
            assert_eq!(e.name, "Linear-R");
            assert!(e.to_string().contains("`prompt_weight`"), "{e}");
            assert!(e.to_string().contains("none, linear_r"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    for name in PROMPT_WEIGHT_NAMES {
        assert_eq!(PromptWeight::from_name(name).unwrap().name(), name);
    }
    // Other settings are unaffected by the weight.
    let c = EstimatorConfig::from_name("da3po")
        .unwrap()
        .with_prompt_weight(PromptWeight::LinearR)
        .with_negative_advantage(NegativeAdvantage::Amplify)
        .unwrap();
    assert_eq!(c.prompt_weight(), PromptWeight::LinearR);
}

fn std_mode() -> impl Strategy<Value = StdMode> {
    prop_oneof![Just(StdMode::Sample), Just(StdMode::Population)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Against the source's closed form, written from counts (not from the library's p̂):
    /// `dr_grpo` + `linear_r` with 0/1 rewards gives (G − k)/k to a correct response and −1 to a
    /// wrong one (k correct of G, 0 < k); k = 0 or k = G gives zeros.
    #[test]
    fn dr_grpo_linear_r_matches_the_closed_form(correct in prop::collection::vec(any::<bool>(), 2..40)) {
        let g = correct.len();
        let k = correct.iter().filter(|&&c| c).count();
        let rewards: Vec<f64> = correct.iter().map(|&c| if c { 1.0 } else { 0.0 }).collect();
        let a = run(&cfg("dr_grpo", PromptWeight::LinearR), &samples(0, &rewards, &correct));
        for (ai, &c) in a.iter().zip(&correct) {
            let want = if k == 0 || k == g {
                0.0
            } else if c {
                (g - k) as f64 / k as f64
            } else {
                -1.0
            };
            prop_assert!((ai - want).abs() < 1e-12, "G={} k={}: {:?}", g, k, a);
        }
    }

    /// For every estimator (the std mode where it has one), binary or shaped rewards: weighted =
    /// unweighted × G/k (k > 0) or × 1 (k = 0), each group with its own G and k; DAA's flags are
    /// unchanged.
    #[test]
    fn weighted_is_unweighted_times_g_over_k(
        name in prop::sample::select(rl_advantage::ESTIMATOR_NAMES.to_vec()),
        std in std_mode(),
        groups in prop::collection::vec(
            prop::collection::vec((any::<bool>(), -2.0f64..2.0, any::<bool>()), 2..20),
            1..5,
        ),
    ) {
        let mut batch = Vec::new();
        for (gi, g) in groups.iter().enumerate() {
            for &(c, shaped, binary) in g {
                let r = if binary { if c { 1.0 } else { 0.0 } } else { shaped };
                batch.push(Sample::new(GroupId(gi as u64), r, c));
            }
        }
        let mut base = EstimatorConfig::from_name(name).unwrap();
        if matches!(
            base,
            EstimatorConfig::Grpo { .. } | EstimatorConfig::Dapo { .. } | EstimatorConfig::Da3po { .. }
        ) {
            base = base.with_std(std).unwrap();
        }
        let plain = compute_batch(&base.build(2).unwrap(), &batch, None).unwrap();
        let weighted_cfg = base.with_prompt_weight(PromptWeight::LinearR);
        let weighted = compute_batch(&weighted_cfg.build(2).unwrap(), &batch, None).unwrap();
        for (i, s) in batch.iter().enumerate() {
            let members: Vec<&Sample> = batch.iter().filter(|x| x.group == s.group).collect();
            let g = members.len() as f64;
            let k = members.iter().filter(|x| x.correct).count() as f64;
            let w = if k > 0.0 { g / k } else { 1.0 };
            let want = plain.advantages[i] * w;
            prop_assert!(
                (weighted.advantages[i] - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{} i={} {} vs {}", name, i, weighted.advantages[i], want
            );
        }
        prop_assert_eq!(weighted.amplified, plain.amplified);
        prop_assert_eq!(weighted.stats.zero_spread_groups, plain.stats.zero_spread_groups);
    }
}
