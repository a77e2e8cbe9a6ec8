use rl_advantage::GroupId;
use serde::{Deserialize, Serialize};

use crate::{BatchReport, GroupFilter, OnExhausted, RoundSizing, SamplerError};

/// One prompt's G scored responses from one generation round, with any payload per response
/// (token ids, log-probs, ...).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RolloutGroup<T> {
    /// Explicit group id (unique per round and prompt).
    pub group: GroupId,
    /// The prompt's stable id (for difficulty tracking across rounds).
    pub prompt: u64,
    /// Reward of each response.
    pub rewards: Vec<f64>,
    /// Verifier verdict of each response.
    pub correct: Vec<bool>,
    /// Payload of each response.
    pub items: Vec<T>,
}

impl<T> RolloutGroup<T> {
    /// Fraction of correct responses.
    pub fn pass_rate(&self) -> f64 {
        if self.correct.is_empty() {
            return 0.0;
        }
        self.correct.iter().filter(|&&c| c).count() as f64 / self.correct.len() as f64
    }

    fn check(&self) -> Result<(), SamplerError> {
        if self.rewards.len() != self.correct.len() || self.items.len() != self.correct.len() {
            return Err(SamplerError::MalformedGroup {
                group: self.group.0,
                rewards: self.rewards.len(),
                correct: self.correct.len(),
                items: self.items.len(),
            });
        }
        Ok(())
    }
}

/// Dynamic batching settings: the trainer's `[batch]` section, used as is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatcherConfig {
    /// N: groups per training step (batch).
    pub groups_per_step: usize,
    /// Generation rounds allowed per step (0 = unlimited).
    pub max_gen_rounds: usize,
    /// What to do when the rounds run out.
    #[serde(default)]
    pub on_exhausted: OnExhausted,
    /// Prompts per generation round: `"adaptive"` (default) samples ⌈(N − kept)/q̂⌉ with q̂ the
    /// run's keep rate, at most `rollout.prompts_per_round`; `"fixed"` always samples
    /// `rollout.prompts_per_round` and drops the surplus kept groups (verl). The batcher does
    /// not size rounds itself: the caller asks [`crate::RoundSizing::prompts`] before each one.
    #[serde(default)]
    pub round_sizing: RoundSizing,
}

/// A training batch of kept groups.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch<T> {
    /// Kept groups in arrival order.
    pub groups: Vec<RolloutGroup<T>>,
    /// Counters.
    pub report: BatchReport,
    /// True when the batch has fewer than N groups (rounds exhausted, `train_on_kept`).
    pub partial: bool,
}

/// DAPO's dynamic sampling buffer.
///
/// ```
/// use rl_sampler::{BatcherConfig, DynamicBatcher, FilterConfig, RolloutGroup};
/// use rl_advantage::GroupId;
/// let filter = FilterConfig::from_name("dynamic_sampling").unwrap().build().unwrap();
/// let mut b = DynamicBatcher::new(
///     BatcherConfig {
///         groups_per_step: 1,
///         max_gen_rounds: 3,
///         on_exhausted: Default::default(),
///         round_sizing: Default::default(),
///     },
///     filter,
/// ).unwrap();
/// let g = |id, c: [bool; 2]| RolloutGroup { group: GroupId(id), prompt: id, rewards: vec![0.0; 2], correct: c.to_vec(), items: vec![(); 2] };
/// assert!(b.push_round(vec![g(0, [true, true])]).unwrap().is_none());
/// let batch = b.push_round(vec![g(1, [true, false])]).unwrap().unwrap();
/// assert_eq!(batch.report.rounds, 2);
/// ```
#[derive(Debug)]
pub struct DynamicBatcher<T> {
    config: BatcherConfig,
    filter: Box<dyn GroupFilter>,
    kept: Vec<RolloutGroup<T>>,
    report: BatchReport,
}

impl<T> DynamicBatcher<T> {
    /// Validates the configuration.
    pub fn new(config: BatcherConfig, filter: Box<dyn GroupFilter>) -> Result<Self, SamplerError> {
        if config.groups_per_step == 0 {
            return Err(SamplerError::InvalidConfig {
                field: "groups_per_step",
                value: "0".into(),
                expected: "an integer >= 1",
            });
        }
        Ok(Self {
            config,
            filter,
            kept: Vec::new(),
            report: BatchReport::default(),
        })
    }

    /// The filter in use.
    pub fn filter(&self) -> &dyn GroupFilter {
        self.filter.as_ref()
    }

    /// Groups kept so far for the batch being filled.
    pub fn pending(&self) -> usize {
        self.kept.len()
    }

    /// Counters of the batch being filled.
    pub fn report(&self) -> BatchReport {
        self.report
    }

    /// Adds one generation round. Returns a batch once N groups are kept; `Ok(None)` when more
    /// rounds are needed; an error (or a partial batch, per [`OnExhausted`]) when the round limit
    /// is reached.
    pub fn push_round(
        &mut self,
        groups: Vec<RolloutGroup<T>>,
    ) -> Result<Option<Batch<T>>, SamplerError> {
        for g in &groups {
            g.check()?;
        }
        self.report.rounds += 1;
        for g in groups {
            self.report.groups_seen += 1;
            self.report.responses_seen += g.correct.len();
            if self.filter.keep(&g.rewards, &g.correct) {
                self.report.groups_kept += 1;
                if self.kept.len() < self.config.groups_per_step {
                    self.kept.push(g);
                } else {
                    self.report.surplus_dropped += 1;
                }
            } else if !g.correct.is_empty() && g.correct.iter().all(|&c| c) {
                self.report.zero_spread_all_correct += 1;
            } else if g.correct.iter().all(|&c| !c) {
                self.report.zero_spread_all_wrong += 1;
            } else {
                self.report.filtered_other += 1;
            }
        }
        if self.kept.len() >= self.config.groups_per_step {
            return Ok(Some(self.emit(false)));
        }
        if self.config.max_gen_rounds > 0 && self.report.rounds >= self.config.max_gen_rounds {
            return match self.config.on_exhausted {
                OnExhausted::TrainOnKept => Ok(Some(self.emit(true))),
                _ => {
                    let r = self.report;
                    let err = SamplerError::Exhausted {
                        rounds: r.rounds,
                        kept: self.kept.len(),
                        needed: self.config.groups_per_step,
                        seen: r.groups_seen,
                        all_correct: r.zero_spread_all_correct,
                        all_wrong: r.zero_spread_all_wrong,
                        on_exhausted: self.config.on_exhausted,
                    };
                    self.reset();
                    Err(err)
                }
            };
        }
        Ok(None)
    }

    fn emit(&mut self, partial: bool) -> Batch<T> {
        let mut report = self.report;
        report.groups_used = self.kept.len();
        let groups = std::mem::take(&mut self.kept);
        self.report = BatchReport::default();
        Batch {
            groups,
            report,
            partial,
        }
    }

    /// Drops pending groups and counters (e.g. after an error).
    pub fn reset(&mut self) {
        self.kept.clear();
        self.report = BatchReport::default();
    }
}
