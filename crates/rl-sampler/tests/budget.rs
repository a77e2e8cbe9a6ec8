//! Difficulty-adaptive rollout budgets ([`RolloutBudget`]): hand computations, errors, the
//! tracker, the budget invariants as properties (each checked against a statement written in
//! the test, not by the allocator), and groups of the resulting sizes through the batcher and
//! the advantage estimators.
//!
//! DARS (arXiv 2508.13755, authors' code `schedule_ET`/`schedule_HW`) with N = 8, mean-centred
//! (`std = false`): a = max(p, 0.5/N), S = 2a(1 − a), peak N/2 = 4, current N·S;
//! ET ΔN = ⌈(4 − 8S)/S⌉, HW ΔN = ⌈(2(1 − a)·4 − 8S)/S⌉, target N + min(ΔN, N_max − N); a ≥ ½:
//! ΔN = 0.
//!
//! | p | a | S | ET ΔN | HW ΔN |
//! |---|---|---|---|---|
//! | 0 | 1/16 | 15/128 = 0.1171875 | (4 − 0.9375)/S = 26.13 → 27 | (7.5 − 0.9375)/S = 56 |
//! | 1/8 | 1/8 | 7/32 = 0.21875 | (4 − 1.75)/S = 10.29 → 11 | (7 − 1.75)/S = 24 |
//! | 1/4 | 1/4 | 3/8 = 0.375 | (4 − 3)/S = 2.67 → 3 | (6 − 3)/S = 8 |
//! | 3/8 | 3/8 | 15/32 = 0.46875 | (4 − 3.75)/S = 0.53 → 1 | (5 − 3.75)/S = 2.67 → 3 |
//! | ≥ 1/2 | | | 0 | 0 |
//!
//! Targets: ET with N_max = 32: [32 (27 capped at 24), 19, 11, 9, 8]; HW with N_max = 64:
//! [64, 32, 16, 11, 8] (closed forms N/(4a(1 − a)) and N/(2a) agree before the ceiling).

use proptest::prelude::*;
use rl_advantage::{EstimatorConfig, GroupId, LambdaRule, PromptWeight, Sample, compute_batch};
use rl_sampler::{
    BatcherConfig, BudgetSchedule, DifficultyTracker, DynamicBatcher, FilterConfig, RolloutBudget,
    RolloutGroup, SamplerError, UNSEEN_PASS_RATE, dars_target,
};

fn et(base: Option<usize>) -> BudgetSchedule {
    BudgetSchedule::DarsEt { std: false, base }
}
fn hw(base: Option<usize>) -> BudgetSchedule {
    BudgetSchedule::DarsHw { std: false, base }
}

#[test]
fn dars_targets_match_the_authors_schedules() {
    for (p, e, h) in [
        (0.0, 32, 64),
        (0.125, 19, 32),
        (0.25, 11, 16),
        (0.375, 9, 11),
        (0.5, 8, 8),
        (0.9, 8, 8),
        (1.0, 8, 8),
    ] {
        assert_eq!(dars_target(p, 8, 32, false, false), e, "ET p={p}");
        assert_eq!(dars_target(p, 8, 64, true, false), h, "HW p={p}");
    }
    // A running estimate below 0.5/N counts as 0.5/N (the code's value for accuracy 0).
    assert_eq!(dars_target(0.01, 8, 64, true, false), 64);
    // The cap: HW at p = 0 with N_max = 32.
    assert_eq!(dars_target(0.0, 8, 32, true, false), 32);
    // std = true, p = 1/8: S = 2√(7/64) = √7/4 = 0.661438, peak N = 8.
    // ET: ΔN = (8 − 8S)/S = 8/S − 8 = 32/√7 − 8 = 4.095 → 5 → 13.
    // HW: ΔN = (2·(7/8)·8 − 8S)/S = 14/S − 8 = 56/√7 − 8 = 13.166 → 14 → 22.
    assert_eq!(dars_target(0.125, 8, 64, false, true), 13);
    assert_eq!(dars_target(0.125, 8, 64, true, true), 22);
}

/// `uniform`, P = 3, total 10, min 2, max 8, p̂ = [0.9, 0.2, unseen (= 0.5)]: every prompt
/// starts at 2 (6), the 4 remaining units go by 1/(n + ½), ties to the harder prompt: 0.2 → 3,
/// then 0.5 → 3, then 0.9 → 3, then (all at 3) 0.2 → 4. Sizes [3, 4, 3].
#[test]
fn uniform_gives_the_extra_responses_to_the_hardest() {
    let b = RolloutBudget::new(BudgetSchedule::Uniform {}, 2, 8).unwrap();
    assert_eq!(
        b.allocate(10, &[Some(0.9), Some(0.2), None]).unwrap(),
        [3, 4, 3]
    );
    assert_eq!(
        b.allocate(9, &[Some(0.9), Some(0.2), None]).unwrap(),
        [3, 3, 3]
    );
}

/// DARS with N = 8 and p̂ = [0, 1/8, 1/4, 1/2]:
/// * ET, N_max = 32: targets [32, 19, 11, 8], Σ = 70. With total = 70 the sizes are the targets.
///   With total = 32 (8 per prompt): Sainte-Laguë, sizes = round(d/D) for a common D. At
///   D = 2.22: 32/D = 14.41 → 14, 19/D = 8.56 → 9, 11/D = 4.95 → 5, 8/D = 3.60 → 4; Σ = 32.
///   Sizes [14, 9, 5, 4] (cumulative advantage n·2p(1 − p), p clamped to 1/16: 14·0.117 = 1.64,
///   9·0.219 = 1.97, 5·0.375 = 1.88: nearly equal, as ET intends; the p = ½ prompt gets
///   4·0.5 = 2).
/// * HW, N_max = 64: targets [64, 32, 16, 8], Σ = 120. Total 120 → the targets; total 32 →
///   D = 3.75: 17.07 → 17, 8.53 → 9, 4.27 → 4, 2.13 → 2. Sizes [17, 9, 4, 2].
#[test]
fn dars_scales_its_targets_to_the_budget() {
    let p = [Some(0.0), Some(0.125), Some(0.25), Some(0.5)];
    let b = RolloutBudget::new(et(Some(8)), 2, 32).unwrap();
    assert_eq!(b.allocate(70, &p).unwrap(), [32, 19, 11, 8]);
    assert_eq!(b.allocate(32, &p).unwrap(), [14, 9, 5, 4]);
    // Without `base`, N is the uniform share 32/4 = 8: the same sizes.
    let b = RolloutBudget::new(et(None), 2, 32).unwrap();
    assert_eq!(b.allocate(32, &p).unwrap(), [14, 9, 5, 4]);
    let b = RolloutBudget::new(hw(Some(8)), 2, 64).unwrap();
    assert_eq!(b.allocate(120, &p).unwrap(), [64, 32, 16, 8]);
    assert_eq!(b.allocate(32, &p).unwrap(), [17, 9, 4, 2]);
    // The order of the prompts does not matter.
    let rev: Vec<Option<f64>> = p.iter().rev().copied().collect();
    assert_eq!(b.allocate(32, &rev).unwrap(), [2, 4, 9, 17]);
}

/// Knapsack RL, V(n, p) = (1 − pⁿ − (1 − p)ⁿ)·p(1 − p)², marginal gain
/// g(n) = V(n + 1) − V(n) = p(1 − p)²·(pⁿ(1 − p) + (1 − p)ⁿp):
/// * p = 0.5: p(1 − p)² = 0.125, g(n) = 0.125·0.5ⁿ: g(2) = 0.03125, g(3) = 0.015625.
/// * p = 0.2: 0.2·0.64 = 0.128, g(2) = 0.128·(0.04·0.8 + 0.64·0.2) = 0.128·0.16 = 0.02048,
///   g(3) = 0.128·(0.008·0.8 + 0.512·0.2) = 0.128·0.1088 = 0.0139264.
/// * p = 0 or 1: g = 0.
///
/// min 2, max 4, p̂ = [0.5, 0.2, 0]: start [2, 2, 2]; unit 1 → 0.5 (0.03125), unit 2 → 0.2
/// (0.02048 > 0.015625), unit 3 → 0.5 (0.015625 > 0.0139264, reaches max 4), unit 4 → 0.2
/// (max 4), then only the unsolved prompt is left. Totals 9, 10, 11, 12 give [4, 3, 2],
/// [4, 4, 2], [4, 4, 3], [4, 4, 4]; total 7 gives [3, 2, 2].
/// Zero-value prompts share what is left, unsolved (p = 0) before solved (p = 1).
#[test]
fn knapsack_follows_the_marginal_values() {
    let b = RolloutBudget::new(BudgetSchedule::Knapsack {}, 2, 4).unwrap();
    let p = [Some(0.5), Some(0.2), Some(0.0)];
    for (total, want) in [
        (6, [2, 2, 2]),
        (7, [3, 2, 2]),
        (8, [3, 3, 2]),
        (9, [4, 3, 2]),
        (10, [4, 4, 2]),
        (11, [4, 4, 3]),
        (12, [4, 4, 4]),
    ] {
        assert_eq!(b.allocate(total, &p).unwrap(), want, "total {total}");
    }
    assert_eq!(b.allocate(6, &[Some(1.0), Some(0.0)]).unwrap(), [2, 4]);
    assert_eq!(b.allocate(7, &[Some(1.0), Some(0.0)]).unwrap(), [3, 4]);
    assert!(!BudgetSchedule::Knapsack {}.is_monotone());
}

/// The tracker's EMA is the estimate. Decay 0.5; prompt 1: 0 of 8 correct (EMA 0); prompt 2:
/// 4 of 8 (EMA ½); prompt 3 unseen (½). DARS HW, N = 24/3 = 8, N_max = 64: targets
/// [64, 8, 8], Σ = 80. Total 24: Sainte-Laguë, D = 3.25: 64/D = 19.69 → 20, 8/D = 2.46 → 2,
/// 2. Sizes [20, 2, 2].
#[test]
fn allocation_reads_the_difficulty_tracker() {
    let mut t = DifficultyTracker::new(0.5).unwrap();
    t.observe(1, 0, 8);
    t.observe(2, 4, 8);
    let b = RolloutBudget::new(hw(None), 2, 64).unwrap();
    assert_eq!(b.allocate_tracked(24, &t, &[1, 2, 3]).unwrap(), [20, 2, 2]);
    assert_eq!(
        b.allocate(24, &[Some(0.0), Some(0.5), Some(UNSEEN_PASS_RATE)])
            .unwrap(),
        [20, 2, 2]
    );
}

#[test]
fn budget_errors_name_the_field() {
    let field = |e: SamplerError| match e {
        SamplerError::InvalidConfig(rl_sampler::InvalidValue { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        field(RolloutBudget::new(BudgetSchedule::Uniform {}, 1, 8).unwrap_err()),
        "min"
    );
    assert_eq!(
        field(RolloutBudget::new(BudgetSchedule::Uniform {}, 4, 3).unwrap_err()),
        "max"
    );
    assert_eq!(
        field(RolloutBudget::new(et(Some(0)), 2, 8).unwrap_err()),
        "base"
    );
    let b = RolloutBudget::new(BudgetSchedule::Uniform {}, 2, 8).unwrap();
    let msg = b.allocate(5, &[None, None, None]).unwrap_err().to_string();
    assert!(
        msg.contains("`total`") && msg.contains("feasible: 6..=24"),
        "{msg}"
    );
    assert_eq!(
        field(b.allocate(25, &[None, None, None]).unwrap_err()),
        "total"
    );
    assert_eq!(field(b.allocate(1, &[]).unwrap_err()), "total");
    assert_eq!(b.allocate(0, &[]).unwrap(), Vec::<usize>::new());
    for bad in [1.5, -0.1, f64::NAN] {
        assert_eq!(
            field(b.allocate(6, &[Some(bad), None, None]).unwrap_err()),
            "pass_rate"
        );
    }
    // Schedules: typed parser and serde both name the valid values.
    let msg = BudgetSchedule::from_name("dars").unwrap_err().to_string();
    assert!(
        msg.contains("`schedule`") && msg.contains("uniform, dars_et, dars_hw, knapsack"),
        "{msg}"
    );
    let msg = serde_json::from_str::<RolloutBudget>(r#"{"max":8,"schedule":{"name":"dars"}}"#)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("dars_et") && msg.contains("knapsack"), "{msg}");
    assert!(
        serde_json::from_str::<RolloutBudget>(
            r#"{"max":8,"schedule":{"name":"knapsack","std":true}}"#
        )
        .is_err()
    );
    assert!(serde_json::from_str::<RolloutBudget>(r#"{"max":8,"typo":1}"#).is_err());
}

#[test]
fn budget_config_round_trips() {
    let b: RolloutBudget =
        serde_json::from_str(r#"{"max":64,"schedule":{"name":"dars_hw"}}"#).unwrap();
    assert_eq!(b, RolloutBudget::new(hw(None), 2, 64).unwrap());
    for name in rl_sampler::BUDGET_SCHEDULE_NAMES {
        let s = BudgetSchedule::from_name(name).unwrap();
        assert_eq!(s.name(), name);
        let b = RolloutBudget::new(s, 2, 16).unwrap();
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<RolloutBudget>(&json).unwrap(), b);
    }
    let b: RolloutBudget = serde_json::from_str(
        r#"{"min":4,"max":32,"schedule":{"name":"dars_et","std":true,"base":8}}"#,
    )
    .unwrap();
    assert_eq!(
        b.schedule,
        BudgetSchedule::DarsEt {
            std: true,
            base: Some(8)
        }
    );
    assert_eq!(
        serde_json::from_str::<RolloutBudget>(r#"{"max":8}"#)
            .unwrap()
            .schedule,
        BudgetSchedule::Uniform {}
    );
}

/// A small deterministic generator for the end-to-end test.
fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// Sizes from the allocator → groups of those sizes → dynamic sampling → advantages: every
/// group keeps its own G (the same advantages as computed alone), the batch has exactly the
/// budgeted number of responses, and the tracker sees each group's own size.
#[test]
fn groups_of_budgeted_sizes_flow_through_the_batcher_and_the_estimators() {
    let true_p = [0.05, 0.2, 0.5, 0.8, 0.35, 0.1];
    let mut tracker = DifficultyTracker::new(0.0).unwrap();
    for (prompt, &p) in true_p.iter().enumerate() {
        // One earlier round of 8 responses at the true rate (rounded), for the estimates.
        tracker.observe(prompt as u64, (p * 8.0f64).round() as usize, 8);
    }
    let budget = RolloutBudget::new(hw(None), 2, 32).unwrap();
    let prompts: Vec<u64> = (0..true_p.len() as u64).collect();
    let sizes = budget.allocate_tracked(48, &tracker, &prompts).unwrap();
    assert_eq!(sizes.iter().sum::<usize>(), 48);
    let mut state = 7u64;
    let groups: Vec<RolloutGroup<(f64, bool)>> = sizes
        .iter()
        .zip(&true_p)
        .enumerate()
        .map(|(i, (&n, &p))| {
            // Force at least one correct and one wrong response so every group is kept.
            let mut correct: Vec<bool> = (0..n).map(|_| lcg(&mut state) < p).collect();
            correct[0] = true;
            correct[n - 1] = false;
            RolloutGroup {
                group: GroupId(100 + i as u64),
                prompt: i as u64,
                items: correct
                    .iter()
                    .map(|&c| (if c { 1.0 } else { -1.0 }, c))
                    .collect(),
            }
        })
        .collect();
    let filter = FilterConfig::from_name("dynamic_sampling")
        .unwrap()
        .build()
        .unwrap();
    let mut batcher = DynamicBatcher::new(
        BatcherConfig {
            groups_per_step: groups.len(),
            max_gen_rounds: 1,
            on_exhausted: Default::default(),
            round_sizing: Default::default(),
        },
        filter,
    )
    .unwrap();
    let batch = batcher.push_round(groups.clone()).unwrap().unwrap();
    assert_eq!(batch.report.responses_seen, 48);
    assert_eq!(batch.groups.len(), groups.len());
    let samples: Vec<Sample> = batch
        .groups
        .iter()
        .flat_map(|g| g.items.iter().map(|&(r, c)| Sample::new(g.group, r, c)))
        .collect();
    let cfg = EstimatorConfig::from_name("da3po")
        .unwrap()
        .with_lambda_rule(LambdaRule::Theory, None, None)
        .unwrap()
        .with_prompt_weight(PromptWeight::LinearR);
    let est = cfg.build(8).unwrap();
    let all = compute_batch(&est, &samples, None).unwrap();
    let mut offset = 0;
    for g in &batch.groups {
        let alone: Vec<Sample> = samples[offset..offset + g.items.len()].to_vec();
        let a = compute_batch(&est, &alone, None).unwrap();
        assert_eq!(a.advantages, all.advantages[offset..offset + g.items.len()]);
        offset += g.items.len();
        tracker.observe(g.prompt, g.correct_count(), g.items.len());
    }
    assert_eq!(offset, 48);
    for (prompt, &n) in sizes.iter().enumerate() {
        assert_eq!(tracker.stats(prompt as u64).unwrap().attempts, 8 + n as u64);
    }
}

/// A pass-rate estimate: unseen, exactly 0 or 1, on the grid k/8, or anywhere in [0, 1].
fn estimate() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(0.0)),
        1 => Just(Some(1.0)),
        2 => (0usize..=8).prop_map(|k| Some(k as f64 / 8.0)),
        3 => (0.0f64..=1.0).prop_map(Some),
    ]
}

fn schedule() -> impl Strategy<Value = BudgetSchedule> {
    prop_oneof![
        Just(BudgetSchedule::Uniform {}),
        Just(BudgetSchedule::Knapsack {}),
        (any::<bool>(), prop::option::of(1usize..20))
            .prop_map(|(std, base)| BudgetSchedule::DarsEt { std, base }),
        (any::<bool>(), prop::option::of(1usize..20))
            .prop_map(|(std, base)| BudgetSchedule::DarsHw { std, base }),
    ]
}

/// (budget, total, estimates) with a feasible total.
fn instance() -> impl Strategy<Value = (RolloutBudget, usize, Vec<Option<f64>>)> {
    (
        schedule(),
        2usize..6,
        0usize..40,
        prop::collection::vec(estimate(), 1..30),
    )
        .prop_flat_map(|(schedule, min, span, rates)| {
            let max = min + span;
            let p = rates.len();
            (
                Just(RolloutBudget { schedule, min, max }),
                p * min..=p * max,
                Just(rates),
            )
        })
}

fn effective(p: Option<f64>) -> f64 {
    p.unwrap_or(0.5)
}

/// DARS demand of each prompt as the allocator defines it (base: configured or total/P).
fn demands(b: &RolloutBudget, total: usize, rates: &[Option<f64>]) -> Option<Vec<f64>> {
    let (hwt, std, base) = match b.schedule {
        BudgetSchedule::DarsEt { std, base } => (false, std, base),
        BudgetSchedule::DarsHw { std, base } => (true, std, base),
        _ => return None,
    };
    let n = base.unwrap_or(total / rates.len());
    Some(
        rates
            .iter()
            .map(|&p| dars_target(effective(p), n, b.max, hwt, std) as f64)
            .collect(),
    )
}

/// V(n, p) = (1 − pⁿ − (1 − p)ⁿ)·p(1 − p)², written out (not the library's marginal form).
fn knapsack_value(p: f64, n: usize) -> f64 {
    if p <= 0.0 || p >= 1.0 {
        return 0.0;
    }
    let n = n as i32;
    (1.0 - p.powi(n) - (1.0 - p).powi(n)) * p * (1.0 - p) * (1.0 - p)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The total-budget invariant: Σ n = total and min ≤ n ≤ max, for every schedule; the
    /// allocation is a function of its inputs (same call, same answer).
    #[test]
    fn sizes_sum_to_the_budget_within_bounds((b, total, rates) in instance()) {
        let n = b.allocate(total, &rates).unwrap();
        prop_assert_eq!(n.len(), rates.len());
        prop_assert_eq!(n.iter().sum::<usize>(), total);
        prop_assert!(n.iter().all(|&x| b.min <= x && x <= b.max), "{:?}", n);
        prop_assert_eq!(b.allocate(total, &rates).unwrap(), n);
    }

    /// Monotone in difficulty where the schedule says so (uniform, DARS): a prompt with a
    /// strictly lower estimate never gets fewer responses.
    #[test]
    fn harder_prompts_never_get_fewer((b, total, rates) in instance()) {
        prop_assume!(b.schedule.is_monotone());
        let n = b.allocate(total, &rates).unwrap();
        for i in 0..n.len() {
            for j in 0..n.len() {
                if effective(rates[i]) < effective(rates[j]) {
                    prop_assert!(n[i] >= n[j], "{:?} {:?}", rates, n);
                }
            }
        }
    }

    /// Uniform: every size is ⌊total/P⌋ or ⌈total/P⌉.
    #[test]
    fn uniform_sizes_differ_by_at_most_one((b, total, rates) in instance()) {
        let b = RolloutBudget { schedule: BudgetSchedule::Uniform {}, ..b };
        let n = b.allocate(total, &rates).unwrap();
        let q = total / rates.len();
        prop_assert!(n.iter().all(|&x| x == q || x == q + 1), "{:?}", n);
    }

    /// DARS is Sainte-Laguë apportionment of the DARS targets d: no response could move from
    /// prompt i to prompt j and raise j's claim above i's, i.e.
    /// d_i/(n_i − ½) ≥ d_j/(n_j + ½) whenever n_i > min and n_j < max.
    #[test]
    fn dars_is_a_divisor_apportionment_of_its_targets((b, total, rates) in instance()) {
        let Some(d) = demands(&b, total, &rates) else { return Ok(()); };
        let n = b.allocate(total, &rates).unwrap();
        for i in 0..n.len() {
            for j in 0..n.len() {
                if i != j && n[i] > b.min && n[j] < b.max {
                    let give = d[i] / (n[i] as f64 - 0.5);
                    let take = d[j] / (n[j] as f64 + 0.5);
                    prop_assert!(give >= take * (1.0 - 1e-12), "i={} j={} d={:?} n={:?}", i, j, d, n);
                }
            }
        }
    }

    /// With total = Σ targets (base N set), DARS gives every prompt exactly its target.
    #[test]
    fn dars_with_its_own_total_reproduces_its_targets(
        rates in prop::collection::vec(estimate(), 1..20),
        hard in any::<bool>(),
        std in any::<bool>(),
        n in 2usize..12,
        extra in 0usize..60,
    ) {
        let max = n + extra;
        let schedule = if hard {
            BudgetSchedule::DarsHw { std, base: Some(n) }
        } else {
            BudgetSchedule::DarsEt { std, base: Some(n) }
        };
        let d: Vec<usize> = rates
            .iter()
            .map(|&p| dars_target(effective(p), n, max, hard, std))
            .collect();
        let b = RolloutBudget { schedule, min: 2, max };
        prop_assert_eq!(b.allocate(d.iter().sum(), &rates).unwrap(), d);
    }

    /// DARS's target against its closed forms (written here, from the paper's cumulative
    /// advantage: mean-centred ET N/(4a(1 − a)), HW N/(2a); std ET N/(2√(a(1 − a))), HW
    /// N·√((1 − a)/a)), a = max(p, 0.5/N), capped at N_max, N for a ≥ ½. Where the closed form
    /// is within 1e-9 of an integer the two float evaluations may round the ceiling apart, so
    /// those draws are skipped.
    #[test]
    fn dars_target_matches_the_closed_form(
        p in 0.0f64..=1.0,
        n in 1usize..64,
        extra in 0usize..200,
        hard in any::<bool>(),
        std in any::<bool>(),
    ) {
        let max = n + extra;
        let nf = n as f64;
        let a = p.max(0.5 / nf);
        let want = if a >= 0.5 {
            n
        } else {
            let total = match (hard, std) {
                (false, false) => nf / (4.0 * a * (1.0 - a)),
                (true, false) => nf / (2.0 * a),
                (false, true) => nf / (2.0 * (a * (1.0 - a)).sqrt()),
                (true, true) => nf * ((1.0 - a) / a).sqrt(),
            };
            let extra_f = total - nf;
            prop_assume!((extra_f - extra_f.round()).abs() > 1e-9);
            n + (extra_f.ceil().max(0.0) as usize).min(max - n)
        };
        prop_assert_eq!(dars_target(p, n, max, hard, std), want);
    }

    /// Knapsack: no single response can move between two prompts and raise Σ V (concavity makes
    /// this the optimum); V is written out in the test.
    #[test]
    fn knapsack_admits_no_improving_move((b, total, rates) in instance()) {
        let b = RolloutBudget { schedule: BudgetSchedule::Knapsack {}, ..b };
        let n = b.allocate(total, &rates).unwrap();
        let p: Vec<f64> = rates.iter().map(|&r| effective(r)).collect();
        for i in 0..n.len() {
            for j in 0..n.len() {
                if i != j && n[i] > b.min && n[j] < b.max {
                    let lose = knapsack_value(p[i], n[i]) - knapsack_value(p[i], n[i] - 1);
                    let gain = knapsack_value(p[j], n[j] + 1) - knapsack_value(p[j], n[j]);
                    prop_assert!(gain <= lose + 1e-15, "i={} j={} p={:?} n={:?}", i, j, p, n);
                }
            }
        }
    }

    /// Knapsack on small instances: no allocation found by exhaustive search has a larger Σ V.
    #[test]
    fn knapsack_is_optimal_by_exhaustive_search(
        rates in prop::collection::vec(estimate(), 1..4),
        min in 2usize..4,
        span in 0usize..6,
        pick in 0.0f64..1.0,
    ) {
        let max = min + span;
        let np = rates.len();
        let total = np * min + ((np * span) as f64 * pick).round() as usize;
        let b = RolloutBudget { schedule: BudgetSchedule::Knapsack {}, min, max };
        let n = b.allocate(total, &rates).unwrap();
        let p: Vec<f64> = rates.iter().map(|&r| effective(r)).collect();
        let value = |n: &[usize]| n.iter().zip(&p).map(|(&k, &q)| knapsack_value(q, k)).sum::<f64>();
        let ours = value(&n);
        let mut best = f64::NEG_INFINITY;
        let mut cur = vec![min; np];
        loop {
            if cur.iter().sum::<usize>() == total {
                best = best.max(value(&cur));
            }
            // Next allocation in [min, max]^P (odometer).
            let mut k = 0;
            while k < np && cur[k] == max {
                cur[k] = min;
                k += 1;
            }
            if k == np {
                break;
            }
            cur[k] += 1;
        }
        prop_assert!(ours >= best - 1e-15, "ours {} best {} n={:?} p={:?}", ours, best, n, p);
    }
}
