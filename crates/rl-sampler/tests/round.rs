//! Round sizing: fixed (verl) vs adaptive (just enough prompts for the remaining need).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_advantage::GroupId;
use rl_sampler::{
    BatchReport, BatcherConfig, DynamicBatcher, FilterConfig, KeepRate, RolloutGroup, RoundSizing,
};

#[test]
fn adaptive_rounds_ask_for_the_need_over_the_observed_keep_rate() {
    let none = KeepRate::default();
    // Nothing seen: q̂ = (0 + 1)/(0 + 1) = 1, so the first round asks for exactly N.
    assert_eq!(none.estimate(), 1.0);
    assert_eq!(RoundSizing::Adaptive.prompts(&none, 32, 64), 32);
    // The main example's measured rate, 51 of 64 groups kept: q̂ = 52/65 = 0.8, and
    // ⌈32 / 0.8⌉ = 40 prompts instead of 64.
    let k = KeepRate { seen: 64, kept: 51 };
    assert!((k.estimate() - 0.8).abs() < 1e-15);
    assert_eq!(k.prompts_for(32, 64), 40);
    // 5 groups still needed: ⌈5 / 0.8⌉ = ⌈6.25⌉ = 7.
    assert_eq!(k.prompts_for(5, 64), 7);
    // A hopeless run: q̂ = 1/11, ⌈32 · 11⌉ = 352 → capped at 64; never fewer than 1 prompt.
    let hopeless = KeepRate { seen: 10, kept: 0 };
    assert_eq!(hopeless.prompts_for(32, 64), 64);
    assert_eq!(k.prompts_for(0, 64), 1);
    assert_eq!(k.prompts_for(3, 0), 1);
    // Fixed rounds always take the cap.
    assert_eq!(RoundSizing::Fixed.prompts(&k, 5, 64), 64);
    // Pending rounds of the batch being filled count too.
    let pending = BatchReport {
        groups_seen: 6,
        groups_kept: 1,
        ..Default::default()
    };
    assert_eq!(k.with(&pending), KeepRate { seen: 70, kept: 52 });
    let serialized = serde_json::to_string(&RoundSizing::Adaptive).unwrap();
    assert_eq!(serialized, "\"adaptive\"");
}

/// Simulated steps with a per-group keep probability q = 0.8, N = 32 groups per step and a cap
/// of 64 prompts per round. Fixed rounds of 64 keep Binomial(64, 0.8) groups (mean 51.2), so
/// about 51.2 − 32 = 19.2 kept groups are dropped per step. Adaptive rounds ask for ⌈32/q̂⌉ ≈ 40
/// with q̂ → 0.8, keeping Binomial(40, 0.8) (mean 32, sd √(40·0.8·0.2) = 2.53); the expected
/// surplus E[max(K − 32, 0)] ≈ sd·φ(0) = 2.53 · 0.399 ≈ 1.0 per step (normal approximation),
/// and the shortfall is made up by small follow-up rounds.
#[test]
fn adaptive_rounds_drop_far_less_surplus_than_fixed_rounds() {
    let (n, cap, q, steps) = (32usize, 64usize, 0.8f64, 400usize);
    let filter = || {
        FilterConfig::from_name("dynamic_sampling")
            .unwrap()
            .build()
            .unwrap()
    };
    let run = |sizing: RoundSizing| {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut b = DynamicBatcher::new(
            BatcherConfig {
                groups_per_step: n,
                max_gen_rounds: 0,
                on_exhausted: Default::default(),
                round_sizing: Default::default(),
            },
            filter(),
        )
        .unwrap();
        let mut keep = KeepRate::default();
        let (mut surplus, mut prompts, mut id) = (0usize, 0usize, 0u64);
        for _ in 0..steps {
            loop {
                let needed = n - b.pending();
                let r = sizing.prompts(&keep.with(&b.report()), needed, cap);
                prompts += r;
                let groups: Vec<RolloutGroup<(f64, bool)>> = (0..r)
                    .map(|_| {
                        id += 1;
                        // Kept: one correct of two; dropped: both wrong.
                        let kept = rng.random::<f64>() < q;
                        RolloutGroup {
                            group: GroupId(id),
                            prompt: id,
                            items: vec![(0.0, kept), (0.0, false)],
                        }
                    })
                    .collect();
                if let Some(batch) = b.push_round(groups).unwrap() {
                    assert_eq!(batch.groups.len(), n);
                    surplus += batch.report.surplus_dropped;
                    keep.observe(&batch.report);
                    break;
                }
            }
        }
        (surplus as f64 / steps as f64, prompts as f64 / steps as f64)
    };
    let (fixed_surplus, fixed_prompts) = run(RoundSizing::Fixed);
    let (adaptive_surplus, adaptive_prompts) = run(RoundSizing::Adaptive);
    assert!((fixed_surplus - 19.2).abs() < 1.0, "fixed {fixed_surplus}");
    assert_eq!(
        fixed_prompts, 64.0,
        "one round of 64 always fills 32 at q = 0.8 here"
    );
    assert!(adaptive_surplus < 2.0, "adaptive {adaptive_surplus}");
    // N/q = 40 prompts per step are needed on average; adaptive stays close to that.
    assert!(
        (39.0..44.0).contains(&adaptive_prompts),
        "adaptive prompts {adaptive_prompts}"
    );
}
