//! The study's pieces (`rl_lab::study`, `rl_lab::compare::Variant`) against hand derivations.

use rl_lab::compare::Variant;
use rl_lab::stats::Paired;
use rl_lab::study::{
    StudySpec, THEOREM_EDGES, ablation_algorithm, theorem_bins, unfiltered_advantage, verdict,
};
use rl_trainer::probe_records::ProbeRecord;

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
    use rl_lab::compare::{CompareSpec, run_config};
    let demo = rl_trainer::tasks::demo::ArithmeticDemo::default();
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
    // λ alone on REINFORCE++ (DAA a layer there): τ is DAA's default 0.5 (the paper's τ).
    let rpp = run_config(&spec, &demo, "reinforce_pp:lambda=3", 0).unwrap();
    let daa = rpp.advantage.daa_config().map(|d| (d.lambda, d.tau));
    assert_eq!(daa, Some((3.0, 0.5)));
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
    let tmpdir = tempfile::Builder::new()
        .prefix("rlvr-study-probe-")
        .tempdir()
        .unwrap();
    let dir = tmpdir.path();
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
        let e = rl_trainer::probe_records::read_probe(&path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("record 2") && e.contains(why), "{e}");
    }
    let path = dir.join("probe.jsonl");
    std::fs::write(&path, format!("{good}\nnot json\n")).unwrap();
    let e = rl_trainer::probe_records::read_probe(&path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 2"), "{e}");
}

/// The hard-prompt methods' parts (issue 29): each reaches the run's config; the old names keep
/// their folders.
#[test]
fn hard_prompt_variants_reach_the_config() {
    use rl_advantage::{EstimatorConfig, LambdaRule, PromptWeight};
    use rl_lab::compare::{CompareSpec, run_config, run_dir};
    use rl_sampler::BudgetSchedule;
    let demo = rl_trainer::tasks::demo::ArithmeticDemo::default();
    let spec = CompareSpec {
        algorithms: vec![],
        seeds: vec![0],
        rollout_budget: Some(20480),
        budget_steps: 0,
        eval_every: 0,
        target: 1.0,
        out: std::env::temp_dir().join("rlvr-study-hard-variants"),
        steps: None,
        probe: Default::default(),
        deadline: None,
    };
    // Folders: `:` becomes `_`, nothing else changes (the committed runs' folder names).
    assert!(
        run_dir(&spec, 0, "da3po:lambda=1.5:tau=0.3").ends_with("seed-0/da3po_lambda=1.5_tau=0.3")
    );
    assert!(run_dir(&spec, 3, "dapo:budget=dars_hw@32").ends_with("seed-3/dapo_budget=dars_hw@32"));

    // λ = 1/γ, bounded, with the paper's τ kept.
    let v = Variant::parse("da3po:lambda=theory:lambda_min=1:lambda_max=1.5").unwrap();
    assert!(v.lambda_theory && v.lambda.is_none());
    assert_eq!((v.lambda_min, v.lambda_max), (Some(1.0), Some(1.5)));
    let cfg = run_config(
        &spec,
        &demo,
        "da3po:lambda=theory:lambda_min=1:lambda_max=1.5",
        0,
    )
    .unwrap();
    match cfg.advantage {
        EstimatorConfig::Da3po {
            lambda_rule,
            lambda_min,
            lambda_max,
            tau,
            ..
        } => {
            assert_eq!(lambda_rule, LambdaRule::Theory);
            assert_eq!((lambda_min, lambda_max, tau), (Some(1.0), Some(1.5), 0.5));
        }
        other => panic!("{other:?}"),
    }
    // The budget is the responses of the spec, the run stops on it.
    assert_eq!(cfg.rollout_budget, 20480);

    // The prompt weight on DAPO: only the weight differs from the `dapo` run.
    let w = run_config(&spec, &demo, "dapo:weight=linear_r", 0).unwrap();
    assert_eq!(w.advantage.prompt_weight(), PromptWeight::LinearR);
    let plain = run_config(&spec, &demo, "dapo", 0).unwrap();
    assert_eq!(
        w.advantage.with_prompt_weight(PromptWeight::None),
        plain.advantage
    );
    assert_eq!(w.rollout, plain.rollout);

    // Adaptive group sizes: DARS-HW with the authors' cap 64 by default, std-normalised like the
    // DAPO estimator; `@16` sets the cap; on a mean-centred estimator the schedule is too.
    let b = run_config(&spec, &demo, "dapo:budget=dars_hw", 0).unwrap();
    let section = b.rollout.budget.clone().unwrap();
    assert_eq!(
        section.schedule,
        BudgetSchedule::DarsHw {
            std: true,
            base: None
        }
    );
    assert_eq!((section.min, section.max, section.decay), (2, 64, 0.5));
    assert_eq!(b.rollout.group_size, plain.rollout.group_size);
    let et = run_config(&spec, &demo, "dapo:budget=dars_et@16", 0).unwrap();
    assert_eq!(et.rollout.budget.unwrap().max, 16);
    let dr = run_config(&spec, &demo, "dr_grpo:budget=dars_hw", 0).unwrap();
    assert!(matches!(
        dr.rollout.budget.unwrap().schedule,
        BudgetSchedule::DarsHw { std: false, .. }
    ));
    let k = run_config(&spec, &demo, "dapo:budget=knapsack", 0).unwrap();
    assert_eq!(k.rollout.budget.unwrap().max, 128);
    // Everything at once, in any order.
    let all = run_config(
        &spec,
        &demo,
        "da3po:budget=uniform:weight=linear_r:lambda=theory",
        0,
    )
    .unwrap();
    assert_eq!(all.rollout.budget.unwrap().max, all.rollout.group_size);

    // The theory rule is DAA's: refused on DAPO when the config is built.
    let e = run_config(&spec, &demo, "dapo:lambda=theory", 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("lambda_rule") && e.contains("da3po"), "{e}");
}

/// Unknown or malformed parts are errors that name the run and list the valid forms.
#[test]
fn malformed_variants_list_the_valid_forms() {
    let err = |name: &str| Variant::parse(name).unwrap_err().to_string();
    for (name, expected) in [
        ("da3po:lamda=2", "budget=<schedule>[@<max>]"),
        ("da3po:lamda=2", "lambda=theory"),
        ("da3po:lambda=1e", "`1e` is not a number"),
        ("da3po:lambda_min=1", "with lambda=theory"),
        ("dapo:weight=sqrt_r", "none, linear_r"),
        ("dapo:budget=fifo", "uniform, dars_et, dars_hw, knapsack"),
        ("dapo:budget=dars_hw@0", "`0` is not a group size"),
        ("dapo:budget=dars_hw@x", "`x` is not a group size"),
        ("dapo:budget=dars_hw/32", "write a budget's max after `@`"),
        ("dapo:probe:probe", "`probe` is given twice"),
        ("da3po:tau=0.3:tau=0.4", "`tau` is given twice"),
        ("dapo weight", "cannot be part of a run name"),
        (":probe", "no preset"),
    ] {
        let e = err(name);
        assert!(e.contains(name) && e.contains(expected), "{name}: {e}");
    }
}

fn study_toml(extra: &str) -> String {
    format!(
        r#"
        out = "runs/x"
        delta = 0.02
        tier = "hard"
        primary = "hard"
        {extra}
        [[settings]]
        name = "hard"
        seeds = [0]
        description = "d"
        "#
    )
}

#[test]
fn study_files_need_one_budget_and_valid_methods() {
    let err = |extra: &str| {
        StudySpec::from_toml_str(&study_toml(extra))
            .unwrap_err()
            .to_string()
    };
    assert!(err("").contains("exactly one budget"));
    assert!(err("steps = 3\nresponses = 100").contains("exactly one budget"));
    assert!(err("responses = 0").contains("responses"));
    assert!(err("steps = 3\neval_k = 0").contains("eval_k"));
    assert!(err("steps = 3\nsection = \"a b\"").contains("section"));
    assert!(err("steps = 3\ncorrection = \"bonferroni\"").contains("needs `methods`"));
    let methods = |runs: &[&str]| {
        let mut t = String::from("steps = 3\n");
        for r in runs {
            t.push_str(&format!("[[methods]]\nrun = \"{r}\"\nlabel = \"{r}\"\n"));
        }
        t
    };
    assert!(err(&methods(&["da3po", "da3po"])).contains("listed twice"));
    assert!(err(&methods(&["dapo"])).contains("listed twice (or is the baseline)"));
    assert!(err(&methods(&["dapo:budget=dars"])).contains("dars_hw"));
    assert!(err("steps = 3\ncorrection = \"holm\"").contains("<study toml>"));
    let ok = StudySpec::from_toml_str(&study_toml(&format!(
        "responses = 100\ncorrection = \"bonferroni\"\n{}",
        methods(&["da3po", "dapo:weight=linear_r"]).replace("steps = 3\n", "")
    )))
    .unwrap();
    assert_eq!(ok.arms(), ["dapo", "da3po", "dapo:weight=linear_r"]);
    assert_eq!(ok.decision_alpha(), 0.025);
    assert_eq!(ok.budget_words(), "100 generated responses per run");
}

/// The study shipped in configs/ resolves: every run's config builds, and its methods are the
/// pre-registered ones.
#[test]
fn the_hard_prompt_study_config_resolves() {
    at_repo_root();
    let text = std::fs::read_to_string("crates/rl-lab/configs/study_hard_prompts.toml").unwrap();
    let spec = StudySpec::from_toml_str(&text).unwrap();
    spec.check().unwrap();
    assert_eq!(
        spec.arms(),
        [
            "dapo",
            "da3po",
            "da3po:lambda=theory",
            "dapo:weight=linear_r",
            "dapo:budget=dars_hw"
        ]
    );
    assert_eq!(spec.decision_alpha(), 0.0125);
    let cfg = spec.resolve("hard", "dapo:budget=dars_hw", 0).unwrap();
    assert_eq!(
        (cfg.rollout_budget, cfg.eval.k, cfg.eval.every),
        (20480, 32, 0)
    );
    assert!(
        cfg.out_dir
            .starts_with("crates/rl-lab/data/study_hard_prompts/hard/seed-0")
    );
}

/// A study's committed runs are still found, and its report regenerates byte for byte: the
/// section of docs/results.md between its markers (config keys added since the runs take their
/// defaults when a marker is read back), and its plots those in docs/img.
fn assert_committed_report(config: &str, (begin, end): (&str, &str), pngs: &[&str]) {
    at_repo_root();
    let text = std::fs::read_to_string(config).unwrap();
    let spec = StudySpec::from_toml_str(&text).unwrap();
    let img = std::env::temp_dir().join(format!(
        "rlvr-study-img-{}-{}",
        spec.section.as_deref().unwrap_or("da3po"),
        std::process::id()
    ));
    let md = rl_lab::study::report(&spec, std::path::Path::new(config), &img).unwrap();
    let doc = std::fs::read_to_string("docs/results.md").unwrap();
    let committed = &doc[doc.find(begin).unwrap()..doc.find(end).unwrap() + end.len()];
    assert_eq!(md.trim_end(), committed);
    for png in pngs {
        assert_eq!(
            std::fs::read(img.join(png)).unwrap(),
            std::fs::read(std::path::Path::new("docs/img").join(png)).unwrap(),
            "{png}"
        );
    }
    if img.exists() {
        std::fs::remove_dir_all(&img).unwrap();
    }
}

#[test]
fn the_committed_da3po_study_reports_identically() {
    assert_committed_report(
        "crates/rl-lab/configs/study_da3po.toml",
        ("<!-- rlvr study: begin -->", "<!-- rlvr study: end -->"),
        &["study_ablation.png", "study_theorem.png"],
    );
}

#[test]
fn the_committed_hard_prompt_study_reports_identically() {
    assert_committed_report(
        "crates/rl-lab/configs/study_hard_prompts.toml",
        (
            "<!-- rlvr study hard_prompts: begin -->",
            "<!-- rlvr study hard_prompts: end -->",
        ),
        &[],
    );
}

mod methods_report {
    use std::collections::BTreeMap;

    use rl_lab::study::StudySpec;
    use rl_trainer::{EvalReport, StepMetrics, TierEval};
    use rl_verifier::Noise;

    /// A final evaluation with hard-tier avg@k `hard` (the same overall), k = 32 on 300 prompts,
    /// the noise split of docs/trainer.md's worked example (within 0.0938) and an s.e. of 0.0096.
    fn eval(hard: f64) -> EvalReport {
        let t = TierEval {
            prompts: 300,
            k: 32,
            avg_at_k: hard,
            pass_at_k: hard,
            avg_std_error: 0.0096,
            pass_std_error: 0.0,
            noise: Some(Noise {
                prompts: 300,
                samples: 32,
                within: 0.0938,
                between: 0.0247,
            }),
        };
        let mut tiers = BTreeMap::new();
        for name in ["easy", "medium", "hard"] {
            tiers.insert(name.to_string(), t.clone());
        }
        EvalReport {
            overall: t,
            tiers,
            tool_call_rate: None,
        }
    }

    /// Writes a finished run: step 0 (start 0.1), one training step that ends at `hard` after
    /// `responses` responses, and the COMPLETE marker with the run's resolved config.
    fn write_run(
        spec: &StudySpec,
        run: &str,
        seed: u64,
        hard: f64,
        responses: u64,
        amplified: f64,
        sizes: Option<[usize; 2]>,
    ) {
        let cfg = spec.resolve("hard", run, seed).unwrap();
        std::fs::create_dir_all(&cfg.out_dir).unwrap();
        let lines = [
            StepMetrics {
                step: 0,
                eval: Some(eval(0.1)),
                ..Default::default()
            },
            StepMetrics {
                step: 1,
                rollouts_total: responses,
                frac_amplified: amplified,
                group_sizes: sizes,
                eval: Some(eval(hard)),
                ..Default::default()
            },
        ];
        let text: String = lines
            .iter()
            .map(|m| serde_json::to_string(m).unwrap() + "\n")
            .collect();
        std::fs::write(cfg.out_dir.join("metrics.jsonl"), text).unwrap();
        std::fs::write(cfg.out_dir.join(rl_lab::compare::COMPLETE), cfg.to_toml()).unwrap();
    }

    /// Three methods against DAPO over seeds 0–2, DAPO ending at 0.20, 0.10, 0.30. The paired
    /// differences (method − DAPO) are, by construction:
    ///
    /// * A (`da3po`): +0.05, +0.06, +0.07 — mean 0.06, s.d. 0.01;
    /// * B (`da3po:lambda=theory`): −0.001, 0, +0.002 — mean 0.000333, squared deviations
    ///   (1.7778 + 0.1111 + 2.7778)·10⁻⁶, s.d. √(4.6667·10⁻⁶/2) = 0.0015275, s.d./√3 = 0.00088192;
    /// * C (`dapo:budget=dars_hw`): +0.02, +0.03, +0.04 — mean 0.03, s.d. 0.01.
    ///
    /// With 2 degrees of freedom Student's t has the closed form F(t) = ½ + t/(2√(2 + t²)), so
    /// the two-sided level-α quantile is t = (1 − α)·√(2/(1 − (1 − α)²)):
    ///
    /// * α = 0.05: 0.95·√(2/0.0975) = 4.302653; half-width for s.d. 0.01: 4.302653·0.01/√3 =
    ///   0.024841;
    /// * Bonferroni over 3 methods, α = 0.05/3: (59/60)·√(2/(1 − (59/60)²)) = 7.648804;
    ///   half-width 7.648804·0.01/√3 = 0.044160 (B: 7.648804·0.00088192 = 0.0067456; its 95 %
    ///   half-width 4.302653·0.00088192 = 0.0037946).
    ///
    /// So the decision (98.33 %) intervals are A [+0.0158, +0.1042] (above 0: better), B
    /// [−0.0064, +0.0071] (inside ±δ = 0.01: no effect), C [−0.0142, +0.0742] (contains 0, reaches
    /// δ: not detectable), while C's 95 % interval [+0.0052, +0.0548] excludes 0: the correction
    /// decides C. p (two-sided, 2 d.f.) = 1 − t/√(2 + t²) with t = mean/(s.d./√3): A t = 10.3923,
    /// p = 1 − 10.3923/√110 = 0.0091; B t = 0.37796, p = 1 − 0.37796/√2.142857 = 0.742; C
    /// t = 5.1962, p = 1 − 5.1962/√29 = 0.0351.
    #[test]
    fn the_methods_report_pairs_each_method_with_dapo() {
        let out = std::env::temp_dir().join(format!("rlvr-study-methods-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let text = format!(
            r#"
            out = "{}"
            section = "t"
            title = "Methods: results"
            responses = 1000
            eval_k = 32
            delta = 0.01
            tier = "hard"
            primary = "hard"
            correction = "bonferroni"
            [[methods]]
            run = "da3po"
            label = "A"
            [[methods]]
            run = "da3po:lambda=theory"
            label = "B"
            [[methods]]
            run = "dapo:budget=dars_hw"
            label = "C"
            [[settings]]
            name = "hard"
            seeds = [0, 1, 2]
            description = "synthetic"
            "#,
            out.display()
        );
        let spec = StudySpec::from_toml_str(&text).unwrap();
        let dapo = [0.20, 0.10, 0.30];
        let a = [0.25, 0.16, 0.37];
        let b = [0.199, 0.100, 0.302];
        let c = [0.22, 0.13, 0.34];
        for seed in 0..3 {
            let s = seed as u64;
            write_run(&spec, "dapo", s, dapo[seed], 1000 + 10 * s, 0.0, None);
            write_run(&spec, "da3po", s, a[seed], 1010, 0.12, None);
            write_run(&spec, "da3po:lambda=theory", s, b[seed], 1020, 0.09, None);
            let sizes = Some([2, 10 + 5 * seed]);
            write_run(&spec, "dapo:budget=dars_hw", s, c[seed], 1030, 0.0, sizes);
        }
        let img = out.join("img");
        let md = rl_lab::study::report(&spec, std::path::Path::new("study.toml"), &img).unwrap();
        let lines: Vec<&str> = md.lines().collect();
        // The markers of the named section, the title, then the scale first.
        assert_eq!(lines[0], "<!-- rlvr study t: begin -->");
        assert_eq!(lines[1], "## Methods: results");
        assert!(
            lines[3].starts_with("**Scale:**")
                && lines[3].contains("1000 generated responses per run")
                && lines[3].contains("held-out avg@32"),
            "{}",
            lines[3]
        );
        assert_eq!(*lines.last().unwrap(), "<!-- rlvr study t: end -->");
        let row = |start: &str| {
            lines
                .iter()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no `{start}` in\n{md}"))
                .to_string()
        };
        // method | run | pairs | DAPO | method | Δ (s.d.) | 95 % CI | 98.33 % CI | p | overall | verdict
        // DAPO's mean is (0.20 + 0.10 + 0.30)/3 = 0.200; A's 0.260; B's 0.601/3 = 0.200; C's 0.230.
        assert_eq!(
            row("| A |"),
            "| A | `da3po` | 3/3 | 0.200 | 0.260 | +0.0600 (0.010) | [+0.0352, +0.0848] | [+0.0158, +0.1042] | 0.009 | +0.0600 [+0.0352, +0.0848] | **better** |"
        );
        assert!(
            row("| B |").ends_with(
                "| 3/3 | 0.200 | 0.200 | +0.0003 (0.002) | [-0.0035, +0.0041] | [-0.0064, +0.0071] | 0.742 | +0.0003 [-0.0035, +0.0041] | no effect of ±δ |"
            ),
            "{}",
            row("| B |")
        );
        assert!(
            row("| C |").contains(
                "| 0.200 | 0.230 | +0.0300 (0.010) | [+0.0052, +0.0548] | [-0.0142, +0.0742] | 0.035 |"
            ) && row("| C |").ends_with("| not detectable |"),
            "{}",
            row("| C |")
        );
        assert!(
            md.contains("Bonferroni over 3 methods: each decision uses the 98.33 % interval (level 0.05/3 = 0.0167)"),
            "{md}"
        );
        assert!(row("- A (`da3po`):").contains(
            "**Confirmed:** A beats DAPO (mean +0.0600, 98.33 % CI [+0.0158, +0.1042] excludes 0)."
        ));
        assert!(row("- C (").contains("**Not detectable at this scale:** the 98.33 % CI"));
        // Cost and dynamics: DAPO's responses (1000 + 1010 + 1020)/3 = 1010, one step each;
        // A amplified 0.12 of its responses; C's groups ranged from 2 to 20 (seed 2: 10 + 10);
        // the sampling part of the evaluation's s.e. is √(0.0938/(32·300)) = 0.0031.
        assert_eq!(
            row("| `dapo` |"),
            "| `dapo` | 3 | 1010 | 1.0 | 0.000 | 0.000 | — | 0.0096 / 0.0031 |"
        );
        assert!(row("| `da3po` |").contains("| 0.120 |"));
        // C's one training step per seed has unequal groups: 1.000 of steps.
        assert!(row("| `dapo:budget=dars_hw` |").contains("| 2–20, 1.000 of steps |"));
        // Per seed: seed 1 starts at 0.1, DAPO ends at 0.1, Δs +0.06, 0, +0.03.
        assert_eq!(
            row("| 1 |"),
            "| 1 | 0.100 | 0.100 | +0.0600 | +0.0000 | +0.0300 |"
        );
        let conclusion = row("**Conclusion at this scale**");
        assert!(
            conclusion.contains("1000 generated responses per run")
                && conclusion.contains("3 seeds")
                && conclusion
                    .contains("A is better than DAPO (+0.0600, 98.33 % CI [+0.0158, +0.1042])")
                && conclusion.contains("B has no effect of ±0.01 or more")
                && conclusion.contains("C: a difference is not detectable at this scale"),
            "{conclusion}"
        );
        assert!(row("| hard | `dapo` |").ends_with("| [0, 1, 2] | [] |"));

        // One missing run: no conclusion, B's pairs 2/3, its interval an interim look.
        let b2 = spec.resolve("hard", "da3po:lambda=theory", 2).unwrap();
        std::fs::remove_file(b2.out_dir.join(rl_lab::compare::COMPLETE)).unwrap();
        let md = rl_lab::study::report(&spec, std::path::Path::new("study.toml"), &img).unwrap();
        assert!(md.contains("**No conclusion yet**"), "{md}");
        assert!(md.contains("| B | `da3po:lambda=theory` | 2/3 |"), "{md}");
        assert!(
            md.contains("**Incomplete: 2 of 3 pre-registered pairs.**"),
            "{md}"
        );
        assert!(
            md.contains("| 2 | 0.100 | 0.300 | +0.0700 | not run | +0.0400 |"),
            "{md}"
        );
        assert!(
            md.contains("| hard | `da3po:lambda=theory` | [0, 1] | [2] |"),
            "{md}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// The studies' configs and committed runs are named relative to the repository root, where
/// `rlvr study` runs: every test of this file that reads them works from there.
fn at_repo_root() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    std::env::set_current_dir(std::path::Path::new(&manifest).join("../..")).unwrap();
}
