//! The study's pieces (`rlvr::study`, `rlvr::compare::Variant`) against hand derivations.

use rl_trainer::probe::ProbeRecord;
use rlvr::compare::Variant;
use rlvr::stats::Paired;
use rlvr::study::{
    StudySpec, THEOREM_EDGES, ablation_algorithm, theorem_bins, unfiltered_advantage, verdict,
};

/// Mean-centred advantages with 1/0 rewards (Dr. GRPO without the std): in a group with k
/// correct of G, a correct response has 1 − k/G and a wrong one −k/G.
fn centred(g: usize) -> impl Fn(usize) -> (f64, f64) {
    move |k| (1.0 - k as f64 / g as f64, -(k as f64) / g as f64)
}

/// With k − 1 ~ Bin(G−1, p) correct among the others, E[Â | correct] = 1 − (1 + (G−1)p)/G =
/// (G−1)(1−p)/G; with k ~ Bin(G−1, p), E[Â | wrong] = −(G−1)p/G.
#[test]
fn unfiltered_advantage_matches_the_closed_form() {
    for g in [2usize, 4, 8, 16] {
        for p in [0.0, 0.1, 0.37, 0.5, 0.9, 1.0] {
            let (c, w) = unfiltered_advantage(g, p, &centred(g));
            let gf = g as f64;
            assert!(
                (c - (gf - 1.0) * (1.0 - p) / gf).abs() < 1e-12,
                "G={g} p={p}"
            );
            assert!((w + (gf - 1.0) * p / gf).abs() < 1e-12, "G={g} p={p}");
        }
    }
}

fn rec(probe_correct: usize, correct: &[bool], kept: bool, adv: &[f64]) -> ProbeRecord {
    ProbeRecord {
        step: 1,
        prompt: 0,
        tier: None,
        correct: correct.to_vec(),
        advantages: adv.to_vec(),
        kept,
        probe_samples: 64,
        probe_correct,
    }
}

/// G = 4, two prompts with p = 16/64 = 0.25: one mixed group (1 correct, kept, advantages
/// 0.75 / −0.25), one all-wrong group (dropped, advantages 0). By hand:
/// group survival 1/2 vs 1 − 0.25⁴ − 0.75⁴ = 0.6796875; correct survival 1/1 vs 1 − 0.25³ =
/// 0.984375; wrong survival 3/7 vs 1 − 0.75³ = 0.578125; kept correct Â 0.75 vs unfiltered
/// 3·0.75/4 = 0.5625; kept wrong Â −0.25 vs −3·0.25/4 = −0.1875. A third prompt with 64/64
/// lands in the closed last bin [0.95, 1].
#[test]
fn theorem_bins_by_hand() {
    let records = vec![
        rec(
            16,
            &[true, false, false, false],
            true,
            &[0.75, -0.25, -0.25, -0.25],
        ),
        rec(16, &[false; 4], false, &[0.0; 4]),
        rec(64, &[true; 4], false, &[0.0; 4]),
    ];
    let bins = theorem_bins(&records, &THEOREM_EDGES, &centred(4));
    assert_eq!(bins.len(), 2);
    let b = &bins[0];
    assert_eq!((b.range, b.groups), ((0.15, 0.3), 2));
    let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
    assert!(close(b.p_mean, 0.25));
    assert!(close(b.group_survival.0, 0.5) && close(b.group_survival.1, 0.6796875));
    assert!(close(b.correct_survival.0, 1.0) && close(b.correct_survival.1, 0.984375));
    assert!(close(b.wrong_survival.0, 3.0 / 7.0) && close(b.wrong_survival.1, 0.578125));
    assert!(close(b.correct_adv.0, 0.75) && close(b.correct_adv.1, 0.5625));
    assert!(close(b.wrong_adv.0, -0.25) && close(b.wrong_adv.1, -0.1875));
    assert!(close(b.alpha_plus(), 0.75 / 0.5625));
    assert!(close(b.alpha_plus_theory(), 1.0 / 0.984375));
    assert!(close(b.alpha_minus_theory(), 1.0 / 0.578125));
    let top = &bins[1];
    assert_eq!((top.range, top.groups), ((0.95, 1.0), 1));
    assert!(close(top.group_survival.0, 0.0) && close(top.group_survival.1, 0.0));
}

#[test]
fn variants_parse_and_bad_ones_name_the_algorithm() {
    let v = Variant::parse("da3po:lambda=1.5:tau=0.3").unwrap();
    assert_eq!(
        (v.preset.as_str(), v.lambda, v.tau, v.probe),
        ("da3po", Some(1.5), Some(0.3), false)
    );
    assert!(Variant::parse("dapo:probe").unwrap().probe);
    let e = Variant::parse("da3po:lamda=2").unwrap_err().to_string();
    assert!(
        e.contains("da3po:lamda=2") && e.contains("lambda=<number>"),
        "{e}"
    );
    let e = Variant::parse("da3po:tau=x").unwrap_err().to_string();
    assert!(e.contains("`x` is not a number"), "{e}");
    assert_eq!(ablation_algorithm(1.0, 0.3), "dapo");
    assert_eq!(ablation_algorithm(2.0, 0.5), "da3po");
    assert_eq!(ablation_algorithm(3.0, 0.7), "da3po:lambda=3:tau=0.7");
}

/// DAA's λ and τ overrides reach the run's estimator; they are refused for DAPO.
#[test]
fn variant_overrides_reach_the_config() {
    use rlvr::compare::{CompareSpec, run_config};
    let demo = rlvr::demo::ArithmeticDemo::default();
    let spec = CompareSpec {
        algorithms: vec![],
        seeds: vec![0],
        rollout_budget: None,
        budget_steps: 2,
        eval_every: 0,
        target: 1.0,
        out: std::env::temp_dir().join("rlvr-study-variant"),
        steps: Some(7),
        probe: rl_trainer::config::ProbeSection {
            steps: vec![1, 5],
            samples: 32,
        },
        deadline: None,
    };
    let cfg = run_config(&spec, &demo, "da3po:lambda=3:tau=0.7:probe", 0).unwrap();
    let toml = cfg.to_toml();
    assert!(
        toml.contains("lambda = 3.0") && toml.contains("tau = 0.7"),
        "{toml}"
    );
    assert_eq!((cfg.steps, cfg.rollout_budget), (7, 0));
    assert_eq!(cfg.probe.steps, vec![1, 5]);
    assert!(run_config(&spec, &demo, "dapo:lambda=3", 0).is_err());
    // Without `:probe` the probe stays off and the config text does not mention it.
    let plain = run_config(&spec, &demo, "dapo", 0).unwrap();
    assert!(plain.probe.is_off() && !plain.to_toml().contains("[probe]"));
}

#[test]
fn study_files_name_unknown_settings() {
    let text = r#"
        out = "runs/x"
        steps = 5
        delta = 0.02
        tier = "hard"
        primary = "hard"
        [[settings]]
        name = "mixed"
        seeds = [0]
        description = "d"
    "#;
    let e = StudySpec::from_toml_str(text).unwrap_err().to_string();
    assert!(e.contains("primary") && e.contains("valid: mixed"), "{e}");
    let e = StudySpec::from_toml_str("out = 1").unwrap_err().to_string();
    assert!(e.contains("<study toml>"), "{e}");
}

/// The verdict follows the interval: incomplete studies draw no conclusion.
#[test]
fn verdicts() {
    let p = |lo: f64, hi: f64| Paired {
        n: 10,
        mean: (lo + hi) / 2.0,
        sd: 0.01,
        lo,
        hi,
    };
    assert!(verdict(&p(0.001, 0.03), 11, 0.02).starts_with("**Incomplete: 10 of 11"));
    assert!(verdict(&p(0.001, 0.03), 10, 0.02).starts_with("**Confirmed"));
    assert!(!verdict(&p(0.001, 0.03), 10, 0.02).contains("smaller than the one"));
    assert!(verdict(&p(0.001, 0.012), 10, 0.02).contains("excludes gains of 0.02 or more"));
    assert!(verdict(&p(-0.03, -0.001), 10, 0.02).starts_with("**Refuted"));
    assert!(verdict(&p(-0.01, 0.015), 10, 0.02).starts_with("**No effect of ±0.02"));
    assert!(verdict(&p(-0.01, 0.025), 10, 0.02).starts_with("**Not detectable"));
}

/// A probe file with a record no probe writes is an error naming the record, not a panic in
/// the binning (which needs G ≥ 2).
#[test]
fn bad_probe_records_are_errors_naming_the_record() {
    let dir = std::env::temp_dir().join(format!("rlvr-study-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = serde_json::to_string(&rec(3, &[true, false], true, &[1.0, -1.0])).unwrap();
    for (bad, why) in [
        (rec(3, &[], false, &[]), "0 responses"),
        (
            rec(3, &[true, false], true, &[1.0]),
            "1 advantages for 2 responses",
        ),
        (
            rec(65, &[true, false], true, &[1.0, -1.0]),
            "65 correct of 64",
        ),
    ] {
        let path = dir.join("probe.jsonl");
        let text = format!("{good}\n{}\n", serde_json::to_string(&bad).unwrap());
        std::fs::write(&path, text).unwrap();
        let e = rl_trainer::probe::read_probe(&path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("record 2") && e.contains(why), "{e}");
    }
    let path = dir.join("probe.jsonl");
    std::fs::write(&path, format!("{good}\nnot json\n")).unwrap();
    let e = rl_trainer::probe::read_probe(&path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2"), "{e}");
}
