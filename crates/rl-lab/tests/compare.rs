//! The comparison report (`rl_lab::compare`) from hand-written metrics files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rl_lab::compare::{CompareSpec, report, run_config, run_dir};
use rl_trainer::tasks::demo::ArithmeticDemo;
use rl_trainer::{EvalReport, StepMetrics, TierEval};

fn spec(out: PathBuf, algorithms: &[&str]) -> CompareSpec {
    CompareSpec {
        algorithms: algorithms.iter().map(|s| s.to_string()).collect(),
        seeds: vec![0],
        rollout_budget: None,
        budget_steps: 2,
        eval_every: 1,
        target: 0.5,
        out,
        steps: None,
        probe: Default::default(),
        deadline: None,
    }
}

fn eval(hard: f64) -> EvalReport {
    let t = |avg| TierEval {
        prompts: 10,
        k: 8,
        avg_at_k: avg,
        pass_at_k: avg,
        ..TierEval::default()
    };
    let mut tiers = BTreeMap::new();
    for name in ["easy", "medium", "hard"] {
        tiers.insert(name.to_string(), t(hard));
    }
    EvalReport {
        overall: t(hard),
        tiers,
        tool_call_rate: None,
    }
}

/// One seed: values are shown without "±" (a spread over one seed does not exist). The last
/// column counts only mixed groups (0 < p̂ < 1). GRPO (no filter) trains 4 groups: 2 all wrong
/// (p̂ = 0, bin 0), one mixed in bin 0 and one in bin 2, so 1 of its 2 mixed groups has p̂ < 0.4
/// → 0.500 (counting the all-wrong groups would give 3/4). DAPO's 4 mixed groups have 1 + 1
/// below 0.4 → 0.500. DAPO dropped 3 surplus kept groups in its one step → 3.000 per step.
#[test]
fn the_report_counts_mixed_groups_and_shows_no_spread_for_one_seed() {
    let out = std::env::temp_dir().join(format!("rlvr-compare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let s = spec(out.clone(), &["grpo", "dapo"]);
    let demo = ArithmeticDemo::default();
    for (algo, hist, wrong, surplus) in [
        ("grpo", [3, 0, 1, 0, 0], 2, 0),
        ("dapo", [1, 1, 2, 0, 0], 0, 3),
    ] {
        let dir = run_dir(&s, 0, algo);
        std::fs::create_dir_all(&dir).unwrap();
        let lines = [
            StepMetrics {
                step: 0,
                eval: Some(eval(0.25)),
                ..Default::default()
            },
            StepMetrics {
                step: 1,
                responses_generated: 32,
                groups_used: 4,
                gen_rounds: 1,
                kept_pass_rate_hist: hist,
                kept_all_wrong: wrong,
                surplus_dropped: surplus,
                rollouts_total: 32,
                eval: Some(eval(0.5)),
                ..Default::default()
            },
        ];
        let text: String = lines
            .iter()
            .map(|m| serde_json::to_string(m).unwrap() + "\n")
            .collect();
        std::fs::write(dir.join("metrics.jsonl"), text).unwrap();
    }
    let rep = report(&s, &demo, None).unwrap();
    let md = &rep.markdown;
    assert!(!md.contains('±'), "{md}");
    let row = |algo: &str| {
        md.lines()
            .rfind(|l| l.starts_with(&format!("| {algo} |")))
            .unwrap()
            .to_string()
    };
    // steps to target | rollouts | responses per group | rounds | surplus | amplified | p̂ < 0.4
    for (algo, tail) in [
        ("grpo", "| 32.000 | 8.000 | 1.000 | 0.000 | 0.000 | 0.500 |"),
        ("dapo", "| 32.000 | 8.000 | 1.000 | 3.000 | 0.000 | 0.500 |"),
    ] {
        let r = row(algo);
        assert!(
            r.contains("| 1.000 (1/1 seeds) |") && r.ends_with(tail),
            "{r}"
        );
    }
    assert!(rep.plot.exists());
    std::fs::remove_dir_all(&out).unwrap();
}

/// Runs of the comparison size their generation rounds to the keep rate, with room for 2N
/// prompts, and share one budget of generated responses (GRPO's N·G per step × budget_steps).
#[test]
fn comparison_runs_size_rounds_adaptively_on_a_shared_budget() {
    let demo = ArithmeticDemo::default();
    let s = spec(PathBuf::from("runs/unused"), &["dapo"]);
    let c = run_config(&s, &demo, "da3po", 3).unwrap();
    assert_eq!(c.batch.round_sizing, rl_sampler::RoundSizing::Adaptive);
    assert_eq!(c.rollout.prompts_per_round, 2 * c.batch.groups_per_step);
    assert_eq!(c.rollout_budget, 2 * 32 * 8);
    assert_eq!(c.seed, 3);
    assert_eq!(c.algorithm, "da3po");
}
