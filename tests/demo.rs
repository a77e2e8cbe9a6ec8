//! The embedded run's data split (`rlvr::demo::ArithmeticDemo::data`): the default is the task's
//! own split; `train_mix` and `disjoint_pool` shape the RL pool without touching the held-out set.

use std::collections::{BTreeMap, HashSet};

use rlvr::demo::ArithmeticDemo;

fn texts(d: &rl_trainer::data::Dataset) -> Vec<String> {
    d.prompts.iter().map(|p| format!("{:?}", p.text)).collect()
}

fn per_tier(d: &rl_trainer::data::Dataset) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for p in &d.prompts {
        *m.entry(p.tier.clone().unwrap_or_default()).or_insert(0) += 1;
    }
    m
}

#[test]
fn the_default_split_is_the_tasks_and_the_warm_start_reads_the_pool() {
    let demo = ArithmeticDemo::default();
    let data = demo.data().unwrap();
    let (train, eval) = demo
        .task
        .split(demo.data_seed, demo.train_per_tier, demo.eval_per_tier)
        .unwrap();
    assert_eq!(data.train, train);
    assert_eq!(data.eval, eval);
    assert_eq!(data.sft, train);
}

/// The lab's crates/rl-lab/configs/demo_hard.toml: warm-start 600 per tier; RL pool
/// 100 / 200 / 900 drawn after them; 300 held-out per tier. The three sets are disjoint, ids
/// are 0..n, and the held-out set is the default split's first 300 per tier.
#[test]
fn a_disjoint_hard_pool_has_the_mix_and_shares_nothing() {
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let text =
        std::fs::read_to_string(format!("{root}/crates/rl-lab/configs/demo_hard.toml")).unwrap();
    let demo = ArithmeticDemo::from_toml_str(&text).unwrap();
    let data = demo.data().unwrap();
    let counts = |v: [usize; 3]| -> BTreeMap<String, usize> {
        ["easy", "medium", "hard"]
            .iter()
            .map(|s| s.to_string())
            .zip(v)
            .collect()
    };
    assert_eq!(per_tier(&data.train), counts([100, 200, 900]));
    assert_eq!(per_tier(&data.sft), counts([600, 600, 600]));
    assert_eq!(per_tier(&data.eval), counts([300, 300, 300]));
    let (sft, rl, ev): (HashSet<_>, HashSet<_>, HashSet<_>) = (
        texts(&data.sft).into_iter().collect(),
        texts(&data.train).into_iter().collect(),
        texts(&data.eval).into_iter().collect(),
    );
    assert!(sft.is_disjoint(&rl) && sft.is_disjoint(&ev) && rl.is_disjoint(&ev));
    for d in [&data.sft, &data.train] {
        assert!(d.prompts.iter().enumerate().all(|(i, p)| p.id == i as u64));
    }
    let (_, eval300) = demo.task.split(demo.data_seed, 0, 300).unwrap();
    assert_eq!(data.eval, eval300);
}

#[test]
fn a_mix_with_the_wrong_length_names_the_field() {
    let demo = ArithmeticDemo::from_toml_str("train_mix = [1, 2]").unwrap();
    let e = demo.data().err().unwrap().to_string();
    assert!(e.contains("train_mix") && e.contains("3 tiers"), "{e}");
}
