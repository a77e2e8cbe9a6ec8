//! rl-advantage as a trainer on another stack uses it: only the public API, by name, with the
//! errors it matches on. If this file needs a change, the crate's public API changed and
//! CHANGELOG.md needs a migration note.

use rl_advantage::{
    AdvantageError, AdvantageEstimator, Daa, ESTIMATOR_NAMES, Estimator, EstimatorConfig, GroupId,
    InvalidValue, Sample, compute_batch,
};

/// One group of 8 with 3 correct (reward +1) and 5 wrong (−1). Derivation: mean R = (3 − 5)/8 =
/// −0.25; Σ(R − mean)² = 3·1.25² + 5·0.75² = 4.6875 + 2.8125 = 7.5; sample std =
/// √(7.5/7) = 1.035098; GRPO Â = (R − mean)/(std + 1e-6): correct 1.25/1.035099 = 1.207614,
/// wrong −0.75/1.035099 = −0.724568. DA3PO (λ = 2, τ = 0.5): p̂ = 3/8 < τ, so each correct
/// response gets 2·1.207614 = 2.415228 and the wrong ones keep −0.724568.
fn group() -> Vec<Sample> {
    (0..8)
        .map(|i| Sample::new(GroupId(7), if i < 3 { 1.0 } else { -1.0 }, i < 3))
        .collect()
}

#[test]
fn estimators_by_name_give_the_derived_advantages() {
    let samples = group();
    for (name, correct, wrong) in [
        ("grpo", 1.207614, -0.724568),
        ("dapo", 1.207614, -0.724568),
        ("da3po", 2.415228, -0.724568),
    ] {
        let est = EstimatorConfig::from_name(name).unwrap().build(8).unwrap();
        let out = compute_batch(&est, &samples, None).unwrap();
        for (i, a) in out.advantages.iter().enumerate() {
            let want = if i < 3 { correct } else { wrong };
            assert!((a - want).abs() < 1e-5, "{name} #{i}: {a} vs {want}");
        }
    }
}

#[test]
fn errors_are_matched_by_their_shape() {
    match EstimatorConfig::from_name("ppo") {
        Err(AdvantageError::UnknownName(e)) => {
            assert_eq!(e.name, "ppo");
            assert_eq!(e.valid, ESTIMATOR_NAMES);
            assert_eq!(e.kind, "advantage estimator");
        }
        other => panic!("{other:?}"),
    }
    let err = EstimatorConfig::from_name("grpo")
        .unwrap()
        .build(1)
        .unwrap_err();
    assert!(matches!(
        err,
        AdvantageError::InvalidConfig(InvalidValue {
            field: "group_size",
            ..
        })
    ));
}

/// A baseline of the user's own: the raw reward, no centring.
#[derive(Debug)]
struct RawReward;

impl AdvantageEstimator for RawReward {
    fn name(&self) -> &'static str {
        "raw_reward"
    }

    fn group_advantages(
        &self,
        _group: GroupId,
        rewards: &[f64],
        _correct: &[bool],
        out: &mut [f64],
    ) -> Result<(), AdvantageError> {
        out.copy_from_slice(rewards);
        Ok(())
    }
}

/// The same group with the user's baseline and DAA on top (λ = 2, τ = 0.5). Derivation: the
/// baseline gives the rewards, +1 and −1; p̂ = 3/8 < τ, so the correct responses (advantage +1 >
/// 0) become 2·1 = 2, and the wrong ones stay −1. Three responses are amplified.
#[test]
fn a_baseline_of_ones_own_takes_the_modifiers() {
    let est = Estimator::new(RawReward).with_daa(Daa::new(2.0, 0.5).unwrap());
    assert_eq!(est.name(), "raw_reward");
    let out = compute_batch(&est, &group(), None).unwrap();
    let want = [2.0, 2.0, 2.0, -1.0, -1.0, -1.0, -1.0, -1.0];
    assert_eq!(out.advantages, want);
    assert_eq!(out.stats.amplified, 3);
}
