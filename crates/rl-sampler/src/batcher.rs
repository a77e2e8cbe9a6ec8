use rl_core::GroupId;
use serde::{Deserialize, Serialize};

use crate::{BatchReport, GroupFilter, OnExhausted, RoundSizing, SamplerError};

/// What the batcher reads of a response: its reward and the verifier's verdict. A group holds
/// its responses once, and its rewards and verdicts are read from them.
pub trait Scored {
    /// The response's reward (after any shaping).
    fn reward(&self) -> f64;
    /// Whether the verifier judged the response correct.
    fn correct(&self) -> bool;
}

/// A bare (reward, verdict) pair, for callers whose responses carry nothing else.
impl Scored for (f64, bool) {
    fn reward(&self) -> f64 {
        self.0
    }

    fn correct(&self) -> bool {
        self.1
    }
}

/// One prompt's G scored responses from one generation round, each with whatever the caller
/// keeps per response (token ids, log-probs, ...) beside its reward and verdict ([`Scored`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RolloutGroup<T> {
    /// Explicit group id (unique per round and prompt).
    pub group: GroupId,
    /// The prompt's stable id (for difficulty tracking across rounds).
    pub prompt: u64,
    /// The scored responses.
    pub items: Vec<T>,
}

impl<T: Scored> RolloutGroup<T> {
    /// Fraction of correct responses (0 for an empty group).
    pub fn pass_rate(&self) -> f64 {
        if self.items.is_empty() {
            return 0.0;
        }
        self.correct_count() as f64 / self.items.len() as f64
    }

    /// Correct responses.
    pub fn correct_count(&self) -> usize {
        self.items.iter().filter(|it| it.correct()).count()
    }

    /// Each response's reward, in order.
    pub fn rewards(&self) -> Vec<f64> {
        self.items.iter().map(Scored::reward).collect()
    }

    /// Each response's verdict, in order.
    pub fn verdicts(&self) -> Vec<bool> {
        self.items.iter().map(Scored::correct).collect()
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
/// use rl_sampler::GroupId;
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
/// // (reward, verdict) pairs: any type that is `Scored` can be a group's response
/// let g = |id, c: [bool; 2]| RolloutGroup { group: GroupId(id), prompt: id, items: c.map(|c| (0.0, c)).to_vec() };
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

impl<T: Scored> DynamicBatcher<T> {
    /// Validates the configuration.
    pub fn new(config: BatcherConfig, filter: Box<dyn GroupFilter>) -> Result<Self, SamplerError> {
        if config.groups_per_step == 0 {
            return Err(SamplerError::InvalidConfig(rl_core::InvalidValue {
                field: "groups_per_step",
                value: "0".into(),
                expected: "an integer >= 1",
            }));
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
        self.report.rounds += 1;
        for g in groups {
            self.report.groups_seen += 1;
            self.report.responses_seen += g.items.len();
            let correct = g.correct_count();
            if self.filter.keep(&g.rewards(), &g.verdicts()) {
                self.report.groups_kept += 1;
                if self.kept.len() < self.config.groups_per_step {
                    self.kept.push(g);
                } else {
                    self.report.surplus_dropped += 1;
                }
            } else if !g.items.is_empty() && correct == g.items.len() {
                self.report.zero_spread_all_correct += 1;
            } else if correct == 0 {
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
