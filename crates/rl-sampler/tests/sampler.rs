//! Filter decisions, batcher bookkeeping and the difficulty tracker.

use rl_advantage::GroupId;
use rl_sampler::{
    BatcherConfig, DifficultyTracker, DynamicBatcher, FilterConfig, FilterMetric, OnExhausted,
    RolloutGroup, SamplerError, Scored,
};

/// A response with an id (to follow it through the batcher), its reward and its verdict.
#[derive(Clone, Debug, PartialEq)]
struct Resp {
    id: u64,
    reward: f64,
    correct: bool,
}

impl Scored for Resp {
    fn reward(&self) -> f64 {
        self.reward
    }

    fn correct(&self) -> bool {
        self.correct
    }
}

fn g(id: u64, correct: &[bool]) -> RolloutGroup<Resp> {
    RolloutGroup {
        group: GroupId(id),
        prompt: id % 100,
        items: (0..correct.len() as u64)
            .zip(correct)
            .map(|(i, &c)| Resp {
                id: id * 100 + i,
                reward: if c { 1.0 } else { -1.0 },
                correct: c,
            })
            .collect(),
    }
}

const MIXED: [bool; 4] = [true, false, false, false];
const ALL_T: [bool; 4] = [true; 4];
const ALL_F: [bool; 4] = [false; 4];

#[test]
fn dynamic_sampling_keeps_exactly_mixed_groups() {
    let f = FilterConfig::from_name("dynamic_sampling")
        .unwrap()
        .build()
        .unwrap();
    assert!(f.keep(&[1.0, -1.0], &[true, false]));
    assert!(!f.keep(&[1.0, 1.0], &[true, true]));
    assert!(!f.keep(&[-1.0, -1.0], &[false, false]));
    // Correctness is the default metric: shaped rewards that differ do not rescue a uniform group.
    assert!(!f.keep(&[1.0, 0.5], &[true, true]));
    let by_reward = FilterConfig::DynamicSampling {
        metric: FilterMetric::Reward,
        reward_tol: 0.0,
    }
    .build()
    .unwrap();
    assert!(by_reward.keep(&[1.0, 0.5], &[true, true]));
    assert!(!by_reward.keep(&[0.5, 0.5], &[true, false]));
}

#[test]
fn band_filter_is_exclusive() {
    let f = FilterConfig::PassRateBand { min: 0.0, max: 0.5 }
        .build()
        .unwrap();
    assert!(f.keep(&[], &[true, false, false, false])); // 0.25
    assert!(!f.keep(&[], &[true, true, false, false])); // 0.5 is not < 0.5
    assert!(!f.keep(&[], &[false; 4])); // 0 is not > 0
    assert!(
        FilterConfig::PassRateBand { min: 0.6, max: 0.5 }
            .build()
            .is_err()
    );
    let err = FilterConfig::from_name("topk").unwrap_err().to_string();
    assert!(
        err.contains("dynamic_sampling") && err.contains("none"),
        "{err}"
    );
    let none = FilterConfig::from_name("none").unwrap().build().unwrap();
    assert!(none.keep(&[1.0; 3], &[true; 3]));
}

#[test]
fn batcher_fills_truncates_and_reports() {
    let f = FilterConfig::from_name("dynamic_sampling")
        .unwrap()
        .build()
        .unwrap();
    let cfg = BatcherConfig {
        groups_per_step: 3,
        max_gen_rounds: 0,
        on_exhausted: OnExhausted::Error,
        round_sizing: Default::default(),
    };
    let mut b = DynamicBatcher::new(cfg, f).unwrap();
    assert!(
        b.push_round(vec![g(1, &MIXED), g(2, &ALL_T), g(3, &ALL_F)])
            .unwrap()
            .is_none()
    );
    assert_eq!(b.pending(), 1);
    let batch = b
        .push_round(vec![g(4, &ALL_F), g(5, &MIXED), g(6, &MIXED), g(7, &MIXED)])
        .unwrap()
        .unwrap();
    let ids: Vec<u64> = batch.groups.iter().map(|g| g.group.0).collect();
    assert_eq!(
        ids,
        vec![1, 5, 6],
        "first kept, first used; surplus 7 dropped"
    );
    let r = batch.report;
    assert_eq!(
        (r.rounds, r.groups_seen, r.groups_kept, r.groups_used),
        (2, 7, 4, 3)
    );
    assert_eq!(
        (
            r.surplus_dropped,
            r.zero_spread_all_correct,
            r.zero_spread_all_wrong
        ),
        (1, 1, 2)
    );
    assert_eq!(r.responses_seen, 28);
    assert!((r.kept_fraction() - 4.0 / 7.0).abs() < 1e-12);
    assert!(!batch.partial);
    // Items travel with their group.
    let ids: Vec<u64> = batch.groups[1].items.iter().map(|r| r.id).collect();
    assert_eq!(ids, vec![500, 501, 502, 503]);
    // Counters reset for the next batch.
    assert_eq!(b.report().rounds, 0);
}

#[test]
fn batcher_round_limit_errors_or_trains_on_kept() {
    let mk = |on_exhausted| {
        let f = FilterConfig::from_name("dynamic_sampling")
            .unwrap()
            .build()
            .unwrap();
        DynamicBatcher::new(
            BatcherConfig {
                groups_per_step: 4,
                max_gen_rounds: 2,
                on_exhausted,
                round_sizing: Default::default(),
            },
            f,
        )
        .unwrap()
    };
    let mut b = mk(OnExhausted::Error);
    assert!(
        b.push_round(vec![g(1, &ALL_T), g(2, &MIXED)])
            .unwrap()
            .is_none()
    );
    match b.push_round(vec![g(3, &ALL_F)]) {
        Err(SamplerError::Exhausted {
            rounds: 2,
            kept: 1,
            needed: 4,
            seen: 3,
            all_correct: 1,
            all_wrong: 1,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    let mut b = mk(OnExhausted::TrainOnKept);
    assert!(
        b.push_round(vec![g(1, &ALL_T), g(2, &MIXED)])
            .unwrap()
            .is_none()
    );
    let batch = b.push_round(vec![g(3, &MIXED)]).unwrap().unwrap();
    assert!(batch.partial);
    assert_eq!(batch.groups.len(), 2);
}

#[test]
fn invalid_configs_are_errors() {
    let f = FilterConfig::from_name("none").unwrap().build().unwrap();
    assert!(
        DynamicBatcher::<Resp>::new(
            BatcherConfig {
                groups_per_step: 0,
                max_gen_rounds: 0,
                on_exhausted: OnExhausted::Error,
                round_sizing: Default::default(),
            },
            f
        )
        .is_err()
    );
    let cfg: Result<BatcherConfig, _> =
        serde_json::from_str(r#"{"groups_per_step":2,"max_gen_rounds":1,"typo":1}"#);
    assert!(cfg.is_err());
}

/// EMA with decay 0.5: rounds with p̂ = 1/4 then 3/4 → 0.5·0.75 + 0.5·0.25 = 0.5; lifetime
/// pass rate (1 + 3)/8 = 0.5 as well; a third round p̂ = 0 → 0.25.
#[test]
fn difficulty_tracker_ema_and_histogram() {
    let mut t = DifficultyTracker::new(0.5).unwrap();
    t.observe(7, 1, 4);
    assert_eq!(t.pass_rate(7), Some(0.25));
    t.observe(7, 3, 4);
    assert_eq!(t.pass_rate(7), Some(0.5));
    assert_eq!(t.stats(7).unwrap().pass_rate(), Some(0.5));
    t.observe(7, 0, 4);
    assert_eq!(t.pass_rate(7), Some(0.25));
    t.observe(9, 4, 4);
    assert_eq!(t.histogram(4), vec![0, 1, 0, 1]);
    assert_eq!(t.pass_rate(1), None);
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(serde_json::from_str::<DifficultyTracker>(&json).unwrap(), t);
    assert!(DifficultyTracker::new(1.0).is_err());
}

/// The error's advice fits the configuration: with `on_exhausted = "train_on_kept"` and no group
/// kept at all (two rounds of uniform groups), it does not tell the user to set
/// `train_on_kept`; with `error` and one group kept, it does.
#[test]
fn exhausted_advice_fits_the_configuration() {
    let batcher = |on_exhausted| {
        let f = FilterConfig::from_name("dynamic_sampling")
            .unwrap()
            .build()
            .unwrap();
        let cfg = BatcherConfig {
            groups_per_step: 4,
            max_gen_rounds: 2,
            on_exhausted,
            round_sizing: Default::default(),
        };
        DynamicBatcher::new(cfg, f).unwrap()
    };
    // train_on_kept with nothing kept: an empty partial batch, the step trains on nothing
    let mut b = batcher(OnExhausted::TrainOnKept);
    assert!(b.push_round(vec![g(1, &ALL_F)]).unwrap().is_none());
    let empty = b.push_round(vec![g(2, &ALL_T)]).unwrap().unwrap();
    assert!(empty.partial && empty.groups.is_empty());
    assert_eq!((empty.report.groups_seen, empty.report.groups_kept), (2, 0));
    let mut b = batcher(OnExhausted::Error);
    assert!(b.push_round(vec![g(1, &MIXED)]).unwrap().is_none());
    let e = b.push_round(vec![g(2, &ALL_T)]).unwrap_err().to_string();
    assert!(e.contains("on_exhausted = \"train_on_kept\""), "{e}");
}
